//! Dependence typing between the steps of a pipeline: for steps A before B that share a
//! pipeline buffer one of them writes, the weakest sufficient [`DepKind`], proven by the
//! affine index analysis of `crate::analysis::affine` (its exact mode) over every load,
//! store and atomic. Anything not proven is [`DepKind::Grid`], with a reason saying what could
//! not be proven.
//!
//! The two proofs, both only for steps with the same workgroup size and grid:
//! - `invocation`: every access of both steps to the buffer is at one and the same index form,
//!   and that form is injective over the grid (no two invocations touch the same element), so
//!   each element is only ever touched by one invocation, in program order.
//! - `workgroup`: every access's form is `T * wgid_linear + r(lid, lane) + c` with one tile
//!   size `T` for all of them, and all `r + c` lie in one window `[c0, c0 + T)`: the element
//!   sets of different workgroups are disjoint, so a `barrier(workgroup)` orders everything.
//!   A grid of one workgroup is trivially such a case.
//!
//! Guards (`if gid < len(x)`) never weaken a proof: the accessed sets are over-approximated by
//! all launched invocations, so only the index forms and the launch shape matter. They can
//! sharpen one: the index analysis reads a clamp such as `select(i < len(x), i, 0)` that the
//! path's facts decide (vyre's early exit `if gid.x >= len(x) { return }`) as the operand it
//! takes, with the pipeline's declared buffer lengths ([`Pipeline::bound_lens`]) as `len`.

use std::collections::BTreeMap;

use crate::analysis::affine::{accesses_exact, Index, IDS};
use crate::ir::{Access as BufAccess, NodeId, Pipeline};
use crate::shape::LaunchShape;

use super::DepKind;

/// Element indices are 32-bit: forms are exact modulo 2^32, so every proof also needs the
/// span of the touched indices below this.
const INDEX_SPAN: i128 = 1 << 32;

/// The dependence of step `to` on the earlier step `from`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Dependence {
    /// The earlier step (index into `Pipeline::steps`).
    pub from: usize,
    /// The later step.
    pub to: usize,
    /// The weakest sufficient separation.
    pub kind: DepKind,
    /// The pipeline buffer that forces `kind` (`None` when there is no dependence).
    pub buffer: Option<String>,
    /// Why: what was proven, or what could not be.
    pub reason: String,
}

/// Why a dependence proof did not go through, as the sentence the plan's explanation shows
/// (the step, node and index where it stopped). Not a failure of planning: the pair keeps the
/// conservative dependence the proof would have relaxed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unproven(pub String);

impl From<String> for Unproven {
    fn from(why: String) -> Self {
        Unproven(why)
    }
}

/// A pipeline that the dependence analysis cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DepError {
    /// Launch shapes and steps do not pair up.
    ShapeCount {
        /// Shapes given.
        shapes: usize,
        /// Steps in the pipeline.
        steps: usize,
    },
    /// More steps than [`MAX_STEPS`].
    TooManySteps {
        /// Steps in the pipeline.
        steps: usize,
    },
    /// More step pairs to compare than [`MAX_PAIR_ANALYSES`].
    TooManyPairs {
        /// The buffer with the most pairs when the limit was reached.
        buffer: String,
        /// Steps writing it.
        writers: usize,
        /// Steps using it.
        steps: usize,
    },
    /// A Program accesses a host buffer that the step does not bind.
    Unbound {
        /// Step index.
        step: usize,
        /// The Program's buffer name.
        buffer: String,
    },
}

/// One access of a step to a pipeline buffer.
#[derive(Debug, Clone)]
struct Touch {
    node: NodeId,
    write: bool,
    index: Index,
}

/// Every access of every step, grouped by pipeline buffer.
struct StepTouches {
    by_buffer: BTreeMap<String, Vec<Touch>>,
}

/// Most steps a pipeline may have for the dependence analysis (and so for a plan): far
/// beyond real pipelines, and what keeps the per-step tables of a hostile file small.
pub const MAX_STEPS: usize = 65_536;

/// Most step pairs the analysis compares (pairs that share a buffer one of them writes): a
/// chain of steps each reading the one before needs about one per step; only many steps
/// writing one buffer in place need more (every such pair is compared, since a barrier
/// between two of them does not order the others across workgroups).
pub const MAX_PAIR_ANALYSES: usize = 500_000;

/// The dependences between the steps of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DepTable {
    /// Steps in the pipeline.
    pub steps: usize,
    /// One entry per pair `from < to` that shares a pipeline buffer one of them writes (the
    /// only pairs that can depend), ordered by `(from, to)`; every other pair has no
    /// dependence and no entry.
    pub pairs: Vec<Dependence>,
}

impl DepTable {
    /// The dependence of `to` on `from` (`from < to`) when the pair shares a written buffer;
    /// `None` for any other pair (which has no dependence).
    pub fn get(&self, from: usize, to: usize) -> Option<&Dependence> {
        if from >= to || to >= self.steps {
            return None;
        }
        self.pairs
            .binary_search_by(|d| (d.from, d.to).cmp(&(from, to)))
            .ok()
            .and_then(|i| self.pairs.get(i))
    }

    /// The kind of the dependence of `to` on `from` (`None` kind for pairs out of order).
    pub fn kind(&self, from: usize, to: usize) -> DepKind {
        self.get(from, to).map_or(DepKind::None, |d| d.kind)
    }
}

/// The dependences between every pair of steps of `pipeline`, `shapes[i]` being step i's
/// launch shape.
pub fn analyse(pipeline: &Pipeline, shapes: &[LaunchShape]) -> Result<DepTable, DepError> {
    if shapes.len() != pipeline.steps.len() {
        return Err(DepError::ShapeCount {
            shapes: shapes.len(),
            steps: pipeline.steps.len(),
        });
    }
    if pipeline.steps.len() > MAX_STEPS {
        return Err(DepError::TooManySteps {
            steps: pipeline.steps.len(),
        });
    }
    let touches = pipeline
        .steps
        .iter()
        .enumerate()
        .map(|(i, _)| step_touches(pipeline, i))
        .collect::<Result<Vec<_>, _>>()?;
    let n = pipeline.steps.len();
    let pairs = candidate_pairs(&touches)?
        .into_iter()
        .map(|(a, b)| pair(a, b, &touches[a], &touches[b], shapes[a], shapes[b]))
        .collect();
    Ok(DepTable { steps: n, pairs })
}

/// The pairs `a < b` that share a pipeline buffer one of them writes, sorted: per buffer,
/// each writer with every other step touching it. Linear in the steps for chains; a pipeline
/// that needs more than [`MAX_PAIR_ANALYSES`] is refused.
fn candidate_pairs(touches: &[StepTouches]) -> Result<Vec<(usize, usize)>, DepError> {
    // Per buffer: (step, writes) of every step touching it, in step order.
    let mut users: BTreeMap<&str, Vec<(usize, bool)>> = BTreeMap::new();
    for (i, t) in touches.iter().enumerate() {
        for (buf, xs) in &t.by_buffer {
            users
                .entry(buf.as_str())
                .or_default()
                .push((i, xs.iter().any(|x| x.write)));
        }
    }
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    for (buf, list) in &users {
        let writers = list.iter().filter(|(_, w)| *w).count();
        // Pairs with a writer: writers x others, minus writer pairs counted twice.
        let count = writers * (list.len() - 1) - writers * writers.saturating_sub(1) / 2;
        if pairs.len().saturating_add(count) > MAX_PAIR_ANALYSES {
            return Err(DepError::TooManyPairs {
                buffer: (*buf).to_string(),
                writers,
                steps: list.len(),
            });
        }
        for (k, &(a, wa)) in list.iter().enumerate() {
            for &(b, wb) in &list[k + 1..] {
                if wa || wb {
                    pairs.push((a, b));
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    Ok(pairs)
}

fn step_touches(pipeline: &Pipeline, i: usize) -> Result<StepTouches, DepError> {
    let step = &pipeline.steps[i];
    let mut by_buffer: BTreeMap<String, Vec<Touch>> = BTreeMap::new();
    for acc in accesses_exact(&step.program, &pipeline.bound_lens(i)) {
        // Workgroup buffers are the step's own: no other step can see them.
        let decl = step.program.buffers.iter().find(|b| b.name == acc.buffer);
        if decl.is_some_and(|d| d.access == BufAccess::Workgroup) {
            continue;
        }
        let Some(bound) = step.bound(&acc.buffer) else {
            return Err(DepError::Unbound {
                step: i,
                buffer: acc.buffer,
            });
        };
        by_buffer.entry(bound.to_string()).or_default().push(Touch {
            node: acc.node,
            write: acc.write,
            index: acc.index,
        });
    }
    Ok(StepTouches { by_buffer })
}

fn pair(
    a: usize,
    b: usize,
    ta: &StepTouches,
    tb: &StepTouches,
    sa: LaunchShape,
    sb: LaunchShape,
) -> Dependence {
    let mut best = Dependence {
        from: a,
        to: b,
        kind: DepKind::None,
        buffer: None,
        reason: "no shared buffer with a write".to_string(),
    };
    for (buf, xa) in &ta.by_buffer {
        let Some(xb) = tb.by_buffer.get(buf) else {
            continue;
        };
        if !xa.iter().chain(xb).any(|t| t.write) {
            continue;
        }
        let (kind, why) = buffer_kind(a, b, xa, xb, sa, sb);
        if kind > best.kind {
            best = Dependence {
                from: a,
                to: b,
                kind,
                buffer: Some(buf.clone()),
                reason: format!("`{buf}`: {why}"),
            };
        }
    }
    best
}

/// An index form in the coordinates of one launch: workgroup ids, local ids, lane, constant,
/// plus a per-thread term known only to lie in `[lo, hi]` (zero for an exact form).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Form {
    wg: [i128; 3],
    lid: [i128; 3],
    lane: i128,
    c: i128,
    lo: i128,
    hi: i128,
    exact: bool,
}

/// The exact form of `index` for `shape` (`gid = wgid * W + lid` substituted; terms of axes
/// with extent 1 dropped, as their id is always 0).
fn form(index: &Index, shape: LaunchShape) -> Option<Form> {
    let (coef, wgid, c, lo, hi) = index.known_parts()?;
    let mut f = Form {
        wg: [0; 3],
        lid: [0; 3],
        lane: i128::from(coef[IDS - 1]),
        c: i128::from(c),
        lo: i128::from(lo),
        hi: i128::from(hi),
        exact: matches!(index, Index::Affine { .. }),
    };
    for d in 0..3 {
        let w = i128::from(shape.workgroup_size[d]);
        if shape.grid[d] > 1 {
            f.wg[d] = i128::from(wgid[d]) + i128::from(coef[d]) * w;
        }
        if shape.workgroup_size[d] > 1 {
            f.lid[d] = i128::from(coef[d]) + i128::from(coef[3 + d]);
        }
    }
    Some(f)
}

fn what(t: &Touch) -> &'static str {
    if t.write {
        "writes"
    } else {
        "reads"
    }
}

/// The kind for one shared buffer and the reason.
fn buffer_kind(
    a: usize,
    b: usize,
    xa: &[Touch],
    xb: &[Touch],
    sa: LaunchShape,
    sb: LaunchShape,
) -> (DepKind, String) {
    if sa != sb {
        return (
            DepKind::Grid,
            format!(
                "steps {a} and {b} have different launch shapes (workgroup {:?} grid {:?} vs workgroup {:?} grid {:?}), so an element may be touched by different workgroups",
                sa.workgroup_size, sa.grid, sb.workgroup_size, sb.grid
            ),
        );
    }
    let shape = sa;
    let all: Vec<(usize, &Touch)> = xa
        .iter()
        .map(|t| (a, t))
        .chain(xb.iter().map(|t| (b, t)))
        .collect();
    let forms: Vec<Option<Form>> = all.iter().map(|(_, t)| form(&t.index, shape)).collect();
    let inv = invocation(&all, &forms, shape);
    let inv_why = match inv {
        Ok(why) => return (DepKind::Invocation, why),
        Err(why) => why,
    };
    if shape.workgroups() == 1 {
        return (
            DepKind::Workgroup,
            "the grid is one workgroup, so every access is inside it".to_string(),
        );
    }
    match workgroup(&all, &forms, shape) {
        Ok(why) => (DepKind::Workgroup, why),
        Err(wg_why) => (
            DepKind::Grid,
            format!("not one invocation per element ({inv_why}); not workgroup-local ({wg_why})"),
        ),
    }
}

/// Proves that every element is touched by one invocation only, at the same index in both
/// steps.
fn invocation(
    all: &[(usize, &Touch)],
    forms: &[Option<Form>],
    shape: LaunchShape,
) -> Result<String, Unproven> {
    let (s0, t0) = all[0];
    let Some(f0) = forms[0].filter(|f| f.exact) else {
        return Err(Unproven(format!(
            "step {s0} {} it at {} (node `steps[{s0}].{}`)",
            what(t0),
            describe(&t0.index),
            t0.node
        )));
    };
    for (i, (s, t)) in all.iter().enumerate() {
        if forms[i] != Some(f0) {
            // Name both accesses with their steps and verbs; one statement of one step
            // touching two elements is said as such (it used to read "step 0 reads it at
            // gid.x (node X) but step 0 at gid.x - 1 (node X)").
            let (a, b) = (describe(&t.index), describe(&t0.index));
            return Err(if *s == s0 && t.node == t0.node {
                format!(
                    "step {s} {} it at both {b} and {a} in one statement (node `steps[{s}].{}`)",
                    what(t),
                    t.node
                )
                .into()
            } else if *s == s0 {
                format!(
                    "step {s} {} it at {b} (node `steps[{s}].{}`) and {} it at {a} (node `steps[{s}].{}`)",
                    what(t0),
                    t0.node,
                    what(t),
                    t.node
                ).into()
            } else {
                format!(
                    "step {s} {} it at {a} (node `steps[{s}].{}`) but step {s0} {} it at {b} (node `steps[{s0}].{}`)",
                    what(t),
                    t.node,
                    what(t0),
                    t0.node
                ).into()
            });
        }
    }
    injective(&f0, shape).map_err(|why| format!("index {}: {why}", describe(&t0.index)))?;
    Ok(format!(
        "every access of both steps is at {}, one element per invocation",
        describe(&t0.index)
    ))
}

/// A sufficient condition for `f` to map distinct invocations of `shape` to distinct
/// elements: sorted by size, each coefficient exceeds the largest sum the smaller terms reach
/// (mixed radix), and the whole span stays below 2^32.
fn injective(f: &Form, shape: LaunchShape) -> Result<(), Unproven> {
    if f.lane != 0 && shape.threads_per_workgroup() > 1 {
        return Err(Unproven(
            "it depends on `lane`, which repeats across warps".to_string(),
        ));
    }
    let mut terms: Vec<(i128, i128, String)> = Vec::new();
    for d in 0..3 {
        let axis = ["x", "y", "z"][d];
        let g = i128::from(shape.grid[d]);
        let w = i128::from(shape.workgroup_size[d]);
        if g > 1 {
            terms.push((f.wg[d].abs(), g - 1, format!("wgid.{axis}")));
        }
        if w > 1 {
            terms.push((f.lid[d].abs(), w - 1, format!("lid.{axis}")));
        }
    }
    terms.sort();
    let mut reach: i128 = 0;
    for (c, ext, name) in &terms {
        if *c == 0 {
            return Err(Unproven(format!(
                "invocations differing only in {name} share an element"
            )));
        }
        if *c <= reach {
            return Err(Unproven(format!(
                "its terms may overlap (the step along {name} is {c}, smaller terms reach {reach})"
            )));
        }
        reach += c * ext;
    }
    if reach >= INDEX_SPAN {
        return Err(Unproven(format!(
            "it spans {reach} elements, beyond 32-bit indices"
        )));
    }
    Ok(())
}

/// Proves that every access of a workgroup lies in its own tile `[T*L + c0, T*L + c0 + T)`,
/// `L` the linear workgroup id.
fn workgroup(
    all: &[(usize, &Touch)],
    forms: &[Option<Form>],
    shape: LaunchShape,
) -> Result<String, Unproven> {
    let g = shape.grid.map(i128::from);
    let stride = [1, g[0], g[0] * g[1]];
    let mut tile: Option<i128> = None;
    let mut ranges = Vec::with_capacity(all.len());
    for (i, (s, t)) in all.iter().enumerate() {
        let at = || {
            format!(
                "step {s} {} it at {} (node `steps[{s}].{}`)",
                what(t),
                describe(&t.index),
                t.node
            )
        };
        let Some(f) = forms[i] else {
            return Err(Unproven(format!("{}, not a known affine index", at())));
        };
        // The form's workgroup part must be T * L with one T for every access.
        let mut t_here: Option<i128> = None;
        for d in 0..3 {
            if g[d] > 1 {
                if f.wg[d] % stride[d] != 0 {
                    return Err(Unproven(format!(
                        "{}: its workgroup term is not a whole tile",
                        at()
                    )));
                }
                let q = f.wg[d] / stride[d];
                match t_here {
                    None => t_here = Some(q),
                    Some(p) if p == q => {}
                    Some(_) => {
                        return Err(Unproven(format!(
                            "{}: its workgroup axes do not form one linear tile index",
                            at()
                        )))
                    }
                }
            }
        }
        let t_here = t_here.unwrap_or(0);
        if t_here <= 0 {
            return Err(Unproven(format!(
                "{}: it does not advance by a positive tile from one workgroup to the next",
                at()
            )));
        }
        match tile {
            None => tile = Some(t_here),
            Some(p) if p == t_here => {}
            Some(p) => {
                return Err(Unproven(format!(
                    "{}: tile of {t_here} elements, another access uses {p}",
                    at()
                )))
            }
        }
        ranges.push((local_range(&f, shape), at()));
    }
    let t = tile.unwrap_or(0);
    let lo = ranges.iter().map(|((l, _), _)| *l).min().unwrap_or(0);
    for ((_, hi), at) in &ranges {
        if *hi >= lo + t {
            return Err(Unproven(format!(
                "{at}, which reaches {} past the start of its workgroup's tile of {t} elements",
                hi - lo
            )));
        }
    }
    let span = t * i128::from(shape.workgroups());
    if span >= INDEX_SPAN {
        return Err(Unproven(format!(
            "the tiles span {span} elements, beyond 32-bit indices"
        )));
    }
    Ok(format!(
        "every access stays in its workgroup's tile [{t}*wgid + {lo}, {t}*wgid + {})",
        lo + t
    ))
}

/// Smallest and largest value of the within-workgroup part `r(lid, lane) + c` over the
/// threads of one workgroup (lane taken independently of lid: a sound over-approximation).
fn local_range(f: &Form, shape: LaunchShape) -> (i128, i128) {
    let lanes = shape.threads_per_workgroup().min(32) as i128;
    let mut lo = f.c + f.lo;
    let mut hi = f.c + f.hi;
    let mut add = |coef: i128, ext: i128| {
        let far = coef * (ext - 1);
        lo += far.min(0);
        hi += far.max(0);
    };
    for d in 0..3 {
        add(f.lid[d], i128::from(shape.workgroup_size[d]));
    }
    add(f.lane, lanes);
    (lo, hi)
}

/// An index as text: the known form over gid/lid/lane/wgid, or what kind of index it is.
pub fn describe(index: &Index) -> String {
    let Some((coef, wgid, c, lo, hi)) = index.known_parts() else {
        return match index {
            Index::Affine { .. } => "an index with a run-time term".to_string(),
            _ => "a data-dependent index".to_string(),
        };
    };
    const NAMES: [&str; IDS] = ["gid.x", "gid.y", "gid.z", "lid.x", "lid.y", "lid.z", "lane"];
    let mut terms: Vec<(i64, &str)> = coef.iter().copied().zip(NAMES).collect();
    terms.extend(wgid.iter().copied().zip(["wgid.x", "wgid.y", "wgid.z"]));
    let mut out = String::new();
    for (k, name) in terms.into_iter().filter(|(k, _)| *k != 0) {
        let sign = if k < 0 { "-" } else { "+" };
        let mag = k.unsigned_abs();
        let term = if mag == 1 {
            name.to_string()
        } else {
            format!("{mag}*{name}")
        };
        if out.is_empty() {
            out = if k < 0 { format!("-{term}") } else { term };
        } else {
            out.push_str(&format!(" {sign} {term}"));
        }
    }
    if out.is_empty() {
        out = c.to_string();
    } else if c != 0 {
        out.push_str(&format!(
            " {} {}",
            if c < 0 { "-" } else { "+" },
            c.unsigned_abs()
        ));
    }
    if matches!(index, Index::Bounded { .. }) {
        out = if out == "0" {
            format!("a value in [{lo}, {hi}]")
        } else {
            format!("{out} + a value in [{lo}, {hi}]")
        };
    }
    out
}

#[cfg(test)]
#[path = "deps_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "deps_props.rs"]
mod props;

impl crate::util::HasFix for DepError {
    fn message(&self) -> String {
        match self {
            Self::ShapeCount { shapes, steps, .. } => format!("dependence analysis: {shapes} launch shapes for {steps} steps"),
            Self::TooManySteps { steps, .. } => format!("dependence analysis: the pipeline has {steps} steps, more than the {max} a plan accepts", max = MAX_STEPS),
            Self::TooManyPairs { buffer, writers, steps, .. } => format!("dependence analysis: pipeline buffer `{buffer}` is written by {writers} of the {steps} steps that use it, more step pairs to compare than the {max} a plan accepts", max = MAX_PAIR_ANALYSES),
            Self::Unbound { step, buffer, .. } => format!("steps[{step}].bind: the Program's buffer `{buffer}` is accessed but not bound to a pipeline buffer"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::ShapeCount { .. } => "pass one launch shape per step (inputs::pipeline::prepare_pipeline computes them)".to_string(),
            Self::TooManySteps { .. } => format!("split the pipeline into several of at most {max} steps", max = MAX_STEPS),
            Self::TooManyPairs { buffer, .. } => format!("let fewer steps write `{buffer}` in place (write each step's result to its own buffer), or split the pipeline"),
            Self::Unbound { buffer, .. } => format!("add \"{buffer}\": \"<pipeline buffer>\" to the step's `bind`"),
        }
    }
}

crate::util::problem::into_problem!(DepError);
