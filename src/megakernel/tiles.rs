//! Tile-level dependences: for a grid dependence of step B on an earlier step A, the set of
//! A's workgroups that each workgroup of B needs ([`ProducerSet`]), and the cheapest
//! synchronisation that set allows ([`SyncLabel`]).
//!
//! Every access of both steps to a shared buffer (a pair conflicts when one of the two writes:
//! read-after-write, write-after-read and write-after-write all order) is read as
//! `T * w + r` with `w` the linear workgroup id of a one-dimensional grid and `r` the
//! within-workgroup part in a known interval `[lo, hi]` (lid, lane and bounded terms taken
//! independently: a sound over-approximation). Two accesses can only touch a common element
//! when their intervals meet, which bounds the producer workgroups `p` of a consumer
//! workgroup `q`:
//!
//! - equal tiles `T` on both sides: `p - q` in `[ceil((lo_b - hi_a) / T), floor((hi_b - lo_a) / T)]`,
//!   a [`ProducerSet::Window`] (a neighbour read or a stencil halo is `w-k ..= w+k`);
//! - a consumer whose index does not move with its workgroup (a one-workgroup step, or a
//!   scalar read by everyone): a fixed [`ProducerSet::Range`] of producers, a single one for a
//!   broadcast of the element one producer wrote;
//! - a producer of one workgroup: that workgroup.
//!
//! Anything else (multi-dimensional grids, indices that are not a known affine form, a
//! producer whose index does not move with its workgroup, different tile sizes, spans that
//! may wrap at 2^32) is [`ProducerSet::All`]: a plan built on these sets is never unsound.

use serde::{Deserialize, Serialize};

use crate::analysis::affine::{accesses_exact, AltSet, Index, Parts, IDS};
use crate::ir::{Access as BufAccess, Pipeline};
use crate::shape::LaunchShape;

use super::deps::{describe, DepError, Unproven};

/// Element indices are 32-bit: an interval argument is exact only while no access wraps.
const INDEX_SPAN: i128 = 1 << 32;

/// The producer workgroups a consumer workgroup must wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ProducerSet {
    /// No access of the two steps can touch a common element.
    Empty,
    /// Consumer workgroup `q` needs producer workgroups `q + lo ..= q + hi` (those inside the
    /// producer's grid).
    Window {
        /// Lowest offset.
        lo: i64,
        /// Highest offset.
        hi: i64,
    },
    /// Every consumer workgroup needs producer workgroups `first ..= last`.
    Range {
        /// First producer workgroup.
        first: u64,
        /// Last producer workgroup.
        last: u64,
    },
    /// Consumer workgroup `q` needs producer workgroups `q + lo ..= q + hi` plus the fixed
    /// boundary workgroups `edges` (each `[first, last]`): what an index clamped at the
    /// ends of a buffer (`select`, `min`, `max`) or wrapped around it (`rem` by its length)
    /// reaches. Labelled `window+boundary`.
    WindowBoundary {
        /// Lowest offset of the window.
        lo: i64,
        /// Highest offset of the window.
        hi: i64,
        /// One or two fixed ranges of producer workgroups, sorted and disjoint (the second
        /// `None` when there is one).
        edges: [Option<[u64; 2]>; 2],
    },
    /// Every producer workgroup (unproven, or really all of them).
    All,
}

impl ProducerSet {
    /// The smallest set containing every one of `sets`, the windows joined first (a fixed
    /// range joined to a window stays a boundary range; two fixed ranges alone join into
    /// their hull).
    pub fn join(mut sets: Vec<ProducerSet>) -> ProducerSet {
        sets.sort_by_key(|s| !s.moves());
        sets.into_iter()
            .fold(ProducerSet::Empty, ProducerSet::union)
    }

    /// The smallest set containing both.
    pub fn union(self, other: ProducerSet) -> ProducerSet {
        use ProducerSet::*;
        match (self, other) {
            (Empty, x) | (x, Empty) => x,
            (Window { lo: a, hi: b }, Window { lo: c, hi: d }) => Window {
                lo: a.min(c),
                hi: b.max(d),
            },
            (Range { first: a, last: b }, Range { first: c, last: d }) => Range {
                first: a.min(c),
                last: b.max(d),
            },
            (All, _) | (_, All) => All,
            (x, y) => {
                // A window with fixed boundary ranges: windows join by hull, ranges are
                // kept apart (at most two: the closest ones merge).
                let (w1, e1) = x.window_parts();
                let (w2, e2) = y.window_parts();
                let w = match (w1, w2) {
                    (Some((a, b)), Some((c, d))) => (a.min(c), b.max(d)),
                    (Some(w), None) | (None, Some(w)) => w,
                    (None, None) => return All,
                };
                let mut edges: Vec<[u64; 2]> = e1.into_iter().chain(e2).collect();
                edges.sort_unstable();
                let mut merged: Vec<[u64; 2]> = Vec::new();
                for e in edges {
                    match merged.last_mut() {
                        Some(m) if e[0] <= m[1].saturating_add(1) => m[1] = m[1].max(e[1]),
                        _ => merged.push(e),
                    }
                }
                while merged.len() > 2 {
                    let k = (0..merged.len() - 1)
                        .min_by_key(|&i| merged[i + 1][0] - merged[i][1])
                        .unwrap_or(0);
                    merged[k][1] = merged[k + 1][1];
                    merged.remove(k + 1);
                }
                if merged.is_empty() {
                    return Window { lo: w.0, hi: w.1 };
                }
                WindowBoundary {
                    lo: w.0,
                    hi: w.1,
                    edges: [merged.first().copied(), merged.get(1).copied()],
                }
            }
        }
    }

    /// The window and the fixed ranges of a set that is one of `Window`, `Range`,
    /// `WindowBoundary`.
    fn window_parts(self) -> (Option<(i64, i64)>, Vec<[u64; 2]>) {
        match self {
            ProducerSet::Window { lo, hi } => (Some((lo, hi)), Vec::new()),
            ProducerSet::Range { first, last } => (None, vec![[first, last]]),
            ProducerSet::WindowBoundary { lo, hi, edges } => {
                (Some((lo, hi)), edges.into_iter().flatten().collect())
            }
            ProducerSet::Empty | ProducerSet::All => (None, Vec::new()),
        }
    }

    /// True for a set that moves with the consumer workgroup (a window, with or without
    /// boundary workgroups); the others are the same for every consumer.
    pub fn moves(self) -> bool {
        matches!(
            self,
            ProducerSet::Window { .. } | ProducerSet::WindowBoundary { .. }
        )
    }

    /// The producer workgroups consumer workgroup `q` needs, exactly, as sorted disjoint
    /// ranges (one for every set but a `WindowBoundary`).
    pub fn ranges(self, q: u64, producers: u64) -> Vec<std::ops::RangeInclusive<u64>> {
        let ProducerSet::WindowBoundary { lo, hi, edges } = self else {
            let r = self.producers_of(q, producers);
            return if r.is_empty() { Vec::new() } else { vec![r] };
        };
        let mut parts: Vec<std::ops::RangeInclusive<u64>> =
            std::iter::once(ProducerSet::Window { lo, hi }.producers_of(q, producers))
                .chain(edges.into_iter().flatten().map(|[first, last]| {
                    ProducerSet::Range { first, last }.producers_of(q, producers)
                }))
                .filter(|r| !r.is_empty())
                .collect();
        parts.sort_by_key(|r| *r.start());
        let mut out: Vec<std::ops::RangeInclusive<u64>> = Vec::new();
        for r in parts {
            match out.last_mut() {
                Some(m) if *r.start() <= m.end().saturating_add(1) => {
                    *m = *m.start()..=(*m.end()).max(*r.end());
                }
                _ => out.push(r),
            }
        }
        out
    }

    /// The producer workgroups consumer workgroup `q` needs, for a producer grid of
    /// `producers` workgroups (empty when none); for a `WindowBoundary`, the smallest range
    /// holding them all ([`ProducerSet::ranges`] gives them exactly).
    pub fn producers_of(self, q: u64, producers: u64) -> std::ops::RangeInclusive<u64> {
        let top = producers.saturating_sub(1);
        // An empty `RangeInclusive`, the return type of every arm.
        #[allow(clippy::reversed_empty_ranges)]
        let none = 1..=0;
        if producers == 0 {
            return none;
        }
        match self {
            ProducerSet::Empty => none,
            ProducerSet::All => 0..=top,
            ProducerSet::Range { first, last } => {
                if first > top {
                    none
                } else {
                    first..=last.min(top)
                }
            }
            ProducerSet::WindowBoundary { lo, hi, edges } => {
                let mut r = ProducerSet::Window { lo, hi }.producers_of(q, producers);
                for [first, last] in edges.into_iter().flatten() {
                    let e = ProducerSet::Range { first, last }.producers_of(q, producers);
                    if e.is_empty() {
                        continue;
                    }
                    r = if r.is_empty() {
                        e
                    } else {
                        (*r.start()).min(*e.start())..=(*r.end()).max(*e.end())
                    };
                }
                r
            }
            ProducerSet::Window { lo, hi } => {
                let q = i128::from(q);
                let a = (q + i128::from(lo)).max(0);
                let b = (q + i128::from(hi)).min(i128::from(top));
                if a > b {
                    none
                } else {
                    // Both within [0, top], so they fit a u64.
                    (a as u64)..=(b as u64)
                }
            }
        }
    }

    /// The set as text: `w-1..w+1`, `0..=15`, `all`, `none`, `w-1..w+1 + 0 + 78`.
    pub fn describe(self) -> String {
        match self {
            ProducerSet::WindowBoundary { lo, hi, edges } => {
                let mut out = ProducerSet::Window { lo, hi }.describe();
                for [first, last] in edges.into_iter().flatten() {
                    out.push_str(" + ");
                    out.push_str(&ProducerSet::Range { first, last }.describe());
                }
                out
            }
            ProducerSet::Empty => "none".to_string(),
            ProducerSet::All => "all".to_string(),
            ProducerSet::Range { first, last } if first == last => format!("{first}"),
            ProducerSet::Range { first, last } => format!("{first}..={last}"),
            ProducerSet::Window { lo, hi } => {
                let off = |k: i64| match k {
                    0 => "w".to_string(),
                    k if k > 0 => format!("w+{k}"),
                    k => format!("w{k}"),
                };
                if lo == hi {
                    off(lo)
                } else {
                    format!("{}..{}", off(lo), off(hi))
                }
            }
        }
    }
}

/// The separation at a boundary, by what it waits for. The names are identical in `plan`,
/// `plan --json` and the Plan tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncLabel {
    /// No dependence.
    None,
    /// Program order of the same invocation.
    Invocation,
    /// A workgroup barrier.
    Workgroup,
    /// Each consumer workgroup waits for one producer workgroup's flag.
    Broadcast,
    /// Each consumer workgroup waits for the completion counters of its producer set.
    Counter,
    /// Each consumer workgroup waits for a window of producer workgroups around its own
    /// plus fixed boundary workgroups (a clamped or periodic index).
    #[serde(rename = "window+boundary")]
    WindowBoundary,
    /// A one-workgroup step after all producers: the last producer to finish runs it.
    LastArriverFold,
    /// Every workgroup waits for every workgroup (a grid barrier).
    AllToAll,
}

impl SyncLabel {
    /// The label's name.
    pub fn name(self) -> &'static str {
        match self {
            SyncLabel::None => "none",
            SyncLabel::Invocation => "invocation",
            SyncLabel::Workgroup => "workgroup",
            SyncLabel::Broadcast => "broadcast",
            SyncLabel::Counter => "counter",
            SyncLabel::WindowBoundary => "window+boundary",
            SyncLabel::LastArriverFold => "last_arriver_fold",
            SyncLabel::AllToAll => "all_to_all",
        }
    }
}

/// What one consumer step needs from one earlier producer step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileDep {
    /// The producer step (index into `Pipeline::steps`).
    pub from: usize,
    /// The consumer step.
    pub to: usize,
    /// The producer workgroups each consumer workgroup needs.
    pub producers: ProducerSet,
    /// The synchronisation that set allows.
    pub label: SyncLabel,
    /// Why: the access that decided the set, or what could not be proven.
    pub reason: String,
    /// For a `window+boundary` set: the statement whose `select`/`min`/`max`/`rem` index
    /// justified the boundary workgroups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

/// One access as an interval: `tile * w + [lo, hi]`, `w` the linear workgroup id.
#[derive(Debug, Clone, Copy)]
struct Span {
    tile: i128,
    lo: i128,
    hi: i128,
}

/// One access of a step to a pipeline buffer.
struct Touch {
    buffer: String,
    write: bool,
    index: Index,
    node: String,
    /// The values of an index that is not one form (see `reach`).
    alts: Option<AltSet>,
}

fn touches(pipeline: &Pipeline, step: usize) -> Result<Vec<Touch>, DepError> {
    let s = &pipeline.steps[step];
    let mut out = Vec::new();
    for acc in accesses_exact(&s.program, &pipeline.bound_lens(step)) {
        let decl = s.program.buffers.iter().find(|b| b.name == acc.buffer);
        if decl.is_some_and(|d| d.access == BufAccess::Workgroup) {
            continue;
        }
        let Some(bound) = s.bound(&acc.buffer) else {
            return Err(DepError::Unbound {
                step,
                buffer: acc.buffer,
            });
        };
        out.push(Touch {
            buffer: bound.to_string(),
            write: acc.write,
            index: acc.index,
            node: acc.node.to_string(),
            alts: acc.alts,
        });
    }
    Ok(out)
}

/// `index` of a step launched as `shape`, as an interval over its linear workgroup id; the
/// reason when it cannot be read as one.
/// `len` is the buffer's length when known: an index below 0 wraps to 2^32 minus a little,
/// out of bounds of any buffer shorter than that, where loads give 0 and stores are dropped
/// (the format's bounds semantics), so it touches nothing.
fn span(index: &Index, shape: LaunchShape, len: Option<u64>) -> Result<Span, Unproven> {
    let parts = index
        .known_parts()
        .ok_or_else(|| format!("{} is not a known affine form", describe(index)))?;
    span_parts(parts, shape, len)
}

/// [`span`] of a known form.
fn span_parts(parts: Parts, shape: LaunchShape, len: Option<u64>) -> Result<Span, Unproven> {
    let (tile, a, b) = linear(parts, shape)?;
    if tile < 0 {
        return Err(Unproven(
            "it moves backwards with the workgroup id".to_string(),
        ));
    }
    let top = tile * (i128::from(shape.grid[0]) - 1) + b;
    let wraps_out = len.is_some_and(|n| i128::from(n) <= INDEX_SPAN + a);
    if (a < 0 && !wraps_out) || top >= INDEX_SPAN {
        return Err(Unproven(format!(
            "its elements [{a}, {top}] may wrap at 2^32"
        )));
    }
    Ok(Span { tile, lo: a, hi: b })
}

/// A known form over a one-dimensional grid as `tile * w + [lo, hi]` (`w` the workgroup id,
/// any sign of `tile`), as integers: no wrap check.
fn linear(parts: Parts, shape: LaunchShape) -> Result<(i128, i128, i128), Unproven> {
    let (coef, wgid, c, lo, hi) = parts;
    if shape.grid[1] > 1 || shape.grid[2] > 1 {
        return Err(Unproven(format!(
            "the grid {:?} is not one-dimensional",
            shape.grid
        )));
    }
    let w = shape.workgroup_size.map(i128::from);
    // gid = wgid * W + lid; with grid y = z = 1 the y and z workgroup ids are 0.
    let tile = if shape.grid[0] > 1 {
        i128::from(wgid[0]) + i128::from(coef[0]) * w[0]
    } else {
        0
    };
    let (mut a, mut b) = (
        i128::from(c) + i128::from(lo),
        i128::from(c) + i128::from(hi),
    );
    let mut add = |k: i128, ext: i128| {
        let far = k * (ext - 1);
        a += far.min(0);
        b += far.max(0);
    };
    for d in 0..3 {
        add(i128::from(coef[d]) + i128::from(coef[3 + d]), w[d]);
    }
    let lanes = shape.threads_per_workgroup().clamp(1, 32) as i128;
    add(i128::from(coef[IDS - 1]), lanes);
    Ok((tile, a, b))
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

/// The producer workgroups of `a` (grid `ga` workgroups) that a consumer access `b` (grid
/// `gb`) may share an element with, or why only "all" is known.
fn pair_set(a: Span, ga: u64, b: Span, gb: u64) -> Result<ProducerSet, Unproven> {
    let top = i128::from(ga) - 1;
    let clip = |lo: i128, hi: i128| -> ProducerSet {
        let (lo, hi) = (lo.max(0), hi.min(top));
        if lo > hi {
            ProducerSet::Empty
        } else {
            // Within [0, top]: fits u64.
            ProducerSet::Range {
                first: lo as u64,
                last: hi as u64,
            }
        }
    };
    if ga <= 1 {
        return Ok(clip(0, 0));
    }
    if a.tile == 0 {
        return Err(Unproven(
            "every producer workgroup writes the same elements".to_string(),
        ));
    }
    if gb <= 1 || b.tile == 0 {
        // The consumer's elements do not move with its workgroup.
        return Ok(clip(
            div_ceil(b.lo - a.hi, a.tile),
            div_floor(b.hi - a.lo, a.tile),
        ));
    }
    if a.tile == b.tile {
        // Offsets no consumer/producer pair of these grids can have are dropped.
        let lo = div_ceil(b.lo - a.hi, a.tile).max(1 - i128::from(gb));
        let hi = div_floor(b.hi - a.lo, a.tile).min(top);
        if lo > hi {
            return Ok(ProducerSet::Empty);
        }
        let fit = |x: i128| i64::try_from(x).map_err(|_| "offset out of range".to_string());
        return Ok(ProducerSet::Window {
            lo: fit(lo)?,
            hi: fit(hi)?,
        });
    }
    Err(Unproven(format!(
        "tiles of {} and {} elements per workgroup differ",
        a.tile, b.tile
    )))
}

/// What step `to` needs from the earlier step `from` (`shapes[i]`: step i's launch shape):
/// the union of the producer sets of every conflicting pair of accesses.
pub fn tile_dep(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    from: usize,
    to: usize,
) -> Result<TileDep, DepError> {
    if shapes.len() != pipeline.steps.len() {
        return Err(DepError::ShapeCount {
            shapes: shapes.len(),
            steps: pipeline.steps.len(),
        });
    }
    let (ta, tb) = (touches(pipeline, from)?, touches(pipeline, to)?);
    let (sa, sb) = (shapes[from], shapes[to]);
    let (ga, gb) = (sa.workgroups(), sb.workgroups());
    let mut set = ProducerSet::Empty;
    let mut node: Option<String> = None;
    let mut reason = "no access of the two steps touches a common buffer element".to_string();
    // Every pair's set, joined at the end with the windows first, so that fixed ranges
    // next to a window stay boundary ranges instead of one hull.
    let mut found: Vec<(ProducerSet, String, Option<String>)> = Vec::new();
    let mut unproven: Option<String> = None;
    'pairs: for x in &ta {
        for y in tb
            .iter()
            .filter(|y| y.buffer == x.buffer && (x.write || y.write))
        {
            let at = format!(
                "`{}`: step {from} {} it at {} (node `{}`), step {to} {} it at {} (node `{}`)",
                x.buffer,
                if x.write { "writes" } else { "reads" },
                reach::index_text(&x.index, x.alts.as_ref()),
                x.node,
                if y.write { "writes" } else { "reads" },
                reach::index_text(&y.index, y.alts.as_ref()),
                y.node
            );
            let len = pipeline.buffer(&x.buffer).and_then(|b| b.contents.len);
            let (ca, cb) = (
                reach::Ctx::new(pipeline, from, sa, len),
                reach::Ctx::new(pipeline, to, sb, len),
            );
            let one = reach::reaches(&x.index, x.alts.as_ref(), &ca)
                .map_err(|e| Unproven(format!("step {from}'s index: {e}")))
                .and_then(|a| {
                    reach::reaches(&y.index, y.alts.as_ref(), &cb)
                        .map_err(|e| Unproven(format!("step {to}'s index: {e}")))
                        .and_then(|b| reach::pairs(&a, ga, &b, gb))
                });
            match one {
                Ok(s) => {
                    // The statement whose alternatives shaped the set.
                    let alt_node = |a: &Option<AltSet>, step: usize| {
                        a.as_ref()
                            .and_then(|a| a.node.as_ref())
                            .map(|n| format!("steps[{step}].{n}"))
                    };
                    let n = alt_node(&y.alts, to).or_else(|| alt_node(&x.alts, from));
                    found.push((s, at, n));
                }
                Err(why) => {
                    unproven = Some(format!("{at}: unproven ({why}), so all of them"));
                    break 'pairs;
                }
            }
        }
    }
    found.sort_by_key(|f| !f.0.moves());
    for (s, at, n) in found {
        let before = set;
        set = set.union(s);
        if set != before {
            reason = format!("{at}: producers {}", set.describe());
            // The node that justified the boundary: the access that added fixed workgroups
            // (a window alone only stands in until one does).
            if !matches!(s, ProducerSet::Window { .. }) || node.is_none() {
                node = n.or(node);
            }
        }
        if set == ProducerSet::All {
            reason = format!("{at}: producers all");
            break;
        }
    }
    if let Some(why) = unproven {
        set = ProducerSet::All;
        reason = why;
    }
    Ok(TileDep {
        from,
        to,
        producers: set,
        label: label_of(set, ga, gb),
        reason,
        node: node.filter(|_| set.moves()),
    })
}

/// The cheapest synchronisation for a producer set (`ga`, `gb`: the producer's and the
/// consumer's workgroups).
pub fn label_of(set: ProducerSet, ga: u64, gb: u64) -> SyncLabel {
    let width = |s: ProducerSet| {
        s.ranges(0, ga)
            .iter()
            .map(|r| r.end() - r.start() + 1)
            .sum::<u64>()
    };
    match set {
        ProducerSet::Empty => SyncLabel::None,
        _ if ga <= 1 => SyncLabel::Broadcast,
        // One consumer workgroup: it needs a fixed set, all of them or some.
        _ if gb <= 1 => match width(set) {
            0 => SyncLabel::None,
            1 => SyncLabel::Broadcast,
            n if n >= ga => SyncLabel::LastArriverFold,
            _ => SyncLabel::Counter,
        },
        ProducerSet::All => SyncLabel::AllToAll,
        ProducerSet::Range { first, last } if first == last => SyncLabel::Broadcast,
        ProducerSet::Range { first, last } if last - first + 1 >= ga => SyncLabel::AllToAll,
        ProducerSet::Window { lo, hi } if i128::from(hi) - i128::from(lo) + 1 >= i128::from(ga) => {
            SyncLabel::AllToAll
        }
        ProducerSet::WindowBoundary { lo, hi, edges } => {
            let fixed: i128 = edges
                .into_iter()
                .flatten()
                .map(|[a, b]| i128::from(b) - i128::from(a) + 1)
                .sum();
            if i128::from(hi) - i128::from(lo) + 1 + fixed >= i128::from(ga) {
                SyncLabel::AllToAll
            } else {
                SyncLabel::WindowBoundary
            }
        }
        ProducerSet::Range { .. } | ProducerSet::Window { .. } => SyncLabel::Counter,
    }
}

mod reach;

#[cfg(test)]
#[path = "tiles_tests.rs"]
mod tests;
