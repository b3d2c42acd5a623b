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

use crate::analysis::affine::{accesses_exact, Index, IDS};
use crate::ir::{Access as BufAccess, Pipeline};
use crate::shape::LaunchShape;

use super::deps::{describe, DepError};

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
    /// Every producer workgroup (unproven, or really all of them).
    All,
}

impl ProducerSet {
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
            _ => All,
        }
    }

    /// The producer workgroups consumer workgroup `q` needs, for a producer grid of
    /// `producers` workgroups (empty when none).
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

    /// The set as text: `w-1..w+1`, `0..=15`, `all`, `none`.
    pub fn describe(self) -> String {
        match self {
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
}

fn touches(pipeline: &Pipeline, step: usize) -> Result<Vec<Touch>, DepError> {
    let s = &pipeline.steps[step];
    let mut out = Vec::new();
    for acc in accesses_exact(&s.program) {
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
        });
    }
    Ok(out)
}

/// `index` of a step launched as `shape`, as an interval over its linear workgroup id; the
/// reason when it cannot be read as one.
/// `len` is the buffer's length when known: an index below 0 wraps to 2^32 minus a little,
/// out of bounds of any buffer shorter than that, where loads give 0 and stores are dropped
/// (the format's bounds semantics), so it touches nothing.
fn span(index: &Index, shape: LaunchShape, len: Option<u64>) -> Result<Span, String> {
    let (coef, wgid, c, lo, hi) = index
        .known_parts()
        .ok_or_else(|| format!("{} is not a known affine form", describe(index)))?;
    if shape.grid[1] > 1 || shape.grid[2] > 1 {
        return Err(format!("the grid {:?} is not one-dimensional", shape.grid));
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
    if tile < 0 {
        return Err("it moves backwards with the workgroup id".to_string());
    }
    let top = tile * (i128::from(shape.grid[0]) - 1) + b;
    let wraps_out = len.is_some_and(|n| i128::from(n) <= INDEX_SPAN + a);
    if (a < 0 && !wraps_out) || top >= INDEX_SPAN {
        return Err(format!("its elements [{a}, {top}] may wrap at 2^32"));
    }
    Ok(Span { tile, lo: a, hi: b })
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
fn pair_set(a: Span, ga: u64, b: Span, gb: u64) -> Result<ProducerSet, String> {
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
        return Err("every producer workgroup writes the same elements".to_string());
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
    Err(format!(
        "tiles of {} and {} elements per workgroup differ",
        a.tile, b.tile
    ))
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
    let mut reason = "no access of the two steps touches a common buffer element".to_string();
    'pairs: for x in &ta {
        for y in tb
            .iter()
            .filter(|y| y.buffer == x.buffer && (x.write || y.write))
        {
            let at = format!(
                "`{}`: step {from} {} it at {} (node `{}`), step {to} {} it at {} (node `{}`)",
                x.buffer,
                if x.write { "writes" } else { "reads" },
                describe(&x.index),
                x.node,
                if y.write { "writes" } else { "reads" },
                describe(&y.index),
                y.node
            );
            let len = pipeline.buffer(&x.buffer).and_then(|b| b.contents.len);
            let one = span(&x.index, sa, len)
                .map_err(|e| format!("step {from}'s index: {e}"))
                .and_then(|a| {
                    span(&y.index, sb, len)
                        .map_err(|e| format!("step {to}'s index: {e}"))
                        .and_then(|b| pair_set(a, ga, b, gb))
                });
            match one {
                Ok(s) => {
                    let before = set;
                    set = set.union(s);
                    if set != before {
                        reason = format!("{at}: producers {}", set.describe());
                    }
                }
                Err(why) => {
                    set = ProducerSet::All;
                    reason = format!("{at}: unproven ({why}), so all of them");
                    break 'pairs;
                }
            }
            if set == ProducerSet::All {
                reason = format!("{at}: producers all");
                break 'pairs;
            }
        }
    }
    Ok(TileDep {
        from,
        to,
        producers: set,
        label: label_of(set, ga, gb),
        reason,
    })
}

/// The cheapest synchronisation for a producer set (`ga`, `gb`: the producer's and the
/// consumer's workgroups).
pub fn label_of(set: ProducerSet, ga: u64, gb: u64) -> SyncLabel {
    let width = |s: ProducerSet| {
        let r = s.producers_of(0, ga);
        if r.is_empty() {
            0
        } else {
            r.end() - r.start() + 1
        }
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
        ProducerSet::Range { .. } | ProducerSet::Window { .. } => SyncLabel::Counter,
    }
}

#[cfg(test)]
#[path = "tiles_tests.rs"]
mod tests;
