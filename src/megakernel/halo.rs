//! Halo recomputation (temporal blocking): the fused form for chains of window-dependent
//! steps, where each step reads the previous step's output only near its own element.
//!
//! A recomputed pass fuses `k` such steps over a tile: every block computes its tile for all
//! `k` steps from the tile plus a halo, in shared memory, recomputing the halo cells its
//! neighbours also compute, so no block waits for another and the pass is one ordinary
//! launch. Step `i` of the pass computes the tile grown by `H_i` on each side, where `H_i` is
//! the sum of the radii of the steps after it (the last step computes the tile alone); the
//! first step reads global memory, every later step reads the previous step's cells in shared
//! memory. Each step's body runs unchanged on each cell with `gid` set to the cell's element,
//! so a step's own clamp, wrap or zero padding at the global boundary is kept: the shared
//! window is periodic (cell `j` of the window holds element `(base + j) mod n`), and a read of
//! element `e` becomes a read of the cell `(e - base) mod n`; an index past the buffer still
//! reads 0.
//!
//! What a step must be ([`window_step`]): one-dimensional (the domain is its output buffer)
//! or two-dimensional (its grid covers a `W x H` output exactly, element `y * W + x`); it
//! stores only to its one output, at its own element, and stores every element; it reads its
//! output nowhere; its control flow and indices do not depend on loaded data (so where it
//! reads does not depend on the data, and the [`probe`] that finds it holds for every input);
//! it uses `gid` only (no local or workgroup ids, barriers, atomics, subgroup operations or
//! workgroup memory).
//!
//! [`check`] is the validator of a pass: every read of every fused step lies within the halo
//! the pass gives it (found by running the step's index arithmetic on the interpreter for
//! every invocation), no step reads from global memory a buffer the pass writes, and the
//! window fits the domain and shared memory. The planner's choice ([`choose`]) and fused
//! emission (`super::fuse`) both go through it.

pub mod choose;
pub mod probe;

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::ir::{Builtin, ElemType, Expr, NodeId, Pipeline, Stmt, StmtKind};
use crate::shape::LaunchShape;

pub use choose::{choose, HaloPlan};

/// Most elements of any buffer of a window step: the probe that proves where a step reads
/// runs the step on the interpreter over buffers of their declared lengths, so a larger step
/// is not recomputed (the 2048 x 2048 target has 2^22).
pub const MAX_PROBE_ELEMENTS: u64 = 1 << 23;

/// Most shared memory a pass may use per block (bytes): the static shared-memory limit, so
/// the kernel needs no opt-in.
pub const MAX_SHARED_BYTES: u64 = 48 * 1024;

/// The recomputed form of one group: what fused emission builds (`FusedGroupSpec::halo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HaloSpec {
    /// Elements of the domain per axis: `[W, H]` (`H = 1` for a one-dimensional chain).
    pub domain: [u32; 2],
    /// Elements of the tile each block writes, per axis.
    pub tile: [u32; 2],
    /// Threads per block.
    pub threads: u32,
    /// Per step of the pass (group order): how far, per axis, it reads the previous step's
    /// output from its own element (`[0, 0]` for the first step, which reads global memory).
    pub radius: Vec<[u32; 2]>,
}

impl HaloSpec {
    /// Cells beyond the tile, per side and axis, that step `i` of the pass computes: the
    /// radii of the steps after it, summed.
    pub fn halo_of(&self, i: usize) -> [u32; 2] {
        let mut h = [0u32; 2];
        for r in self.radius.iter().skip(i + 1) {
            h[0] = h[0].saturating_add(r[0]);
            h[1] = h[1].saturating_add(r[1]);
        }
        h
    }

    /// The shared window: the tile and the first step's halo on both sides, per axis.
    pub fn window(&self) -> [u32; 2] {
        let h = self.halo_of(0);
        [
            self.tile[0].saturating_add(h[0].saturating_mul(2)),
            self.tile[1].saturating_add(h[1].saturating_mul(2)),
        ]
    }

    /// Cells step `i` computes per block.
    pub fn cells(&self, i: usize) -> u64 {
        let h = self.halo_of(i);
        (u64::from(self.tile[0]) + 2 * u64::from(h[0]))
            * (u64::from(self.tile[1]) + 2 * u64::from(h[1]))
    }

    /// The share of the computed cells that lie outside the tile (recomputed by a neighbour
    /// too), from 0 to 1.
    pub fn recomputed_fraction(&self) -> f64 {
        let total: u64 = (0..self.radius.len()).map(|i| self.cells(i)).sum();
        let useful = u64::from(self.tile[0]) * u64::from(self.tile[1]) * self.radius.len() as u64;
        if total == 0 {
            0.0
        } else {
            (total - useful.min(total)) as f64 / total as f64
        }
    }

    /// Blocks of the launch per axis (tiles over the domain).
    pub fn grid(&self) -> [u32; 2] {
        [
            self.domain[0].div_ceil(self.tile[0].max(1)),
            self.domain[1].div_ceil(self.tile[1].max(1)),
        ]
    }
}

/// Why a chain cannot run recomputed, or why a pass is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HaloError {
    /// What is wrong, naming the step and buffer.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl crate::util::HasFix for HaloError {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

fn refuse(message: impl Into<String>, fix: impl Into<String>) -> HaloError {
    HaloError {
        message: message.into(),
        fix: fix.into(),
    }
}

const NOT_A_WINDOW_FIX: &str =
    "only steps that store their own element and read neighbours of it can be recomputed; plan \
     without the recomputed form (`--decide model` keeps the other forms)";

/// One step as a recomputed pass sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepWindow {
    /// Pipeline step index.
    pub step: usize,
    /// The pipeline buffer it writes.
    pub out: String,
    /// The Program buffer bound to it.
    pub out_prog: String,
    /// Every Program buffer it loads from, with the pipeline buffer bound to it.
    pub reads: Vec<(String, String)>,
    /// `[W, H]`: the output's elements per axis.
    pub domain: [u32; 2],
    /// The output's element type.
    pub elem: ElemType,
    /// Load expressions in its body (for the cost model).
    pub loads: usize,
}

impl StepWindow {
    /// The Program buffer bound to pipeline buffer `b` that the step reads, if any.
    pub fn reads_buffer(&self, b: &str) -> Option<&str> {
        self.reads
            .iter()
            .find(|(_, p)| p == b)
            .map(|(p, _)| p.as_str())
    }
}

/// Step `s` as a window step, or why it is not one (see the module docs).
pub fn window_step(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    s: usize,
) -> Result<StepWindow, HaloError> {
    let step = pipeline
        .steps
        .get(s)
        .ok_or_else(|| refuse(format!("the pipeline has no step {s}"), NOT_A_WINDOW_FIX))?;
    let shape = shapes
        .get(s)
        .ok_or_else(|| refuse(format!("step {s} has no launch shape"), NOT_A_WINDOW_FIX))?;
    let p = &step.program;
    let not = |why: String| refuse(format!("step {s} ({}): {why}", p.name), NOT_A_WINDOW_FIX);
    if p.buffers.iter().any(|b| !b.access.is_host()) {
        return Err(not("it uses workgroup memory".into()));
    }
    // Checked before anything is probed: the probe allocates every buffer of the step.
    for b in p.buffers.iter() {
        let len = pipeline.bound_len(s, &b.name).unwrap_or(u64::MAX);
        if len > MAX_PROBE_ELEMENTS {
            return Err(not(format!(
                "its buffer `{}` has {len} elements, more than the {MAX_PROBE_ELEMENTS} a \
                 recomputed step may have (or no declared length)",
                b.name
            )));
        }
    }
    let invocations = shape.invocations();
    if invocations > MAX_PROBE_ELEMENTS.saturating_mul(2) {
        return Err(not(format!(
            "its {invocations} invocations are too many to probe"
        )));
    }
    let stored = stored_buffers(&p.body);
    let [out_prog] = stored.as_slice() else {
        return Err(not(format!(
            "it stores to {} buffers; a window step stores to exactly one",
            stored.len()
        )));
    };
    let mut reads: Vec<(String, String)> = Vec::new();
    let mut loads = 0usize;
    let mut bad: Option<String> = None;
    crate::ir::walk_exprs(&p.body, &mut |e| match e {
        Expr::Load { buffer, .. } => {
            loads += 1;
            if !reads.iter().any(|(b, _)| b == buffer) {
                let bound = step.bound(buffer).unwrap_or(buffer).to_string();
                reads.push((buffer.clone(), bound));
            }
        }
        Expr::Atomic { .. } => bad = Some("it uses atomics".into()),
        Expr::Shuffle { .. } | Expr::SubgroupReduce(..) | Expr::Ballot(_) => {
            bad = Some("it uses subgroup operations".into())
        }
        Expr::Builtin(b) if !matches!(b, Builtin::GlobalId(a) if a.index() < 2) => {
            bad = Some(format!(
                "it reads the builtin {b:?}; a recomputed cell knows only its element \
                 (`gid.x`, `gid.y`)"
            ))
        }
        _ => {}
    });
    if let Some(why) = bad {
        return Err(not(why));
    }
    if let Some(node) = first_barrier(&p.body) {
        return Err(not(format!("it synchronises at {node}")));
    }
    if reads.iter().any(|(b, _)| b == out_prog) {
        return Err(not(format!("it reads its own output `{out_prog}`")));
    }
    if let Some((node, why)) = data_dependent(&p.body) {
        return Err(not(format!(
            "at {node} {why} depends on loaded data, so where it reads is not fixed"
        )));
    }
    let out = step.bound(out_prog).unwrap_or(out_prog).to_string();
    let buf = pipeline.buffer(&out).ok_or_else(|| {
        not(format!(
            "its output `{out_prog}` is bound to no pipeline buffer"
        ))
    })?;
    let len = buf
        .contents
        .len
        .ok_or_else(|| not(format!("buffer `{out}` has no declared length")))?;
    if !matches!(
        buf.elem,
        ElemType::F32
            | ElemType::U32
            | ElemType::I32
            | ElemType::F64
            | ElemType::U64
            | ElemType::I64
    ) {
        return Err(not(format!(
            "buffer `{out}` is {}; recomputed cells are 32- or 64-bit values",
            buf.elem.name()
        )));
    }
    let inv = [
        u64::from(shape.workgroup_size[0]) * u64::from(shape.grid[0]),
        u64::from(shape.workgroup_size[1]) * u64::from(shape.grid[1]),
    ];
    if shape.workgroup_size[2] != 1 || shape.grid[2] != 1 {
        return Err(not("its launch is three-dimensional".into()));
    }
    let domain = if inv[1] == 1 {
        if inv[0] < len {
            return Err(not(format!(
                "its {} invocations do not cover the {len} elements of `{out}`",
                inv[0]
            )));
        }
        [len, 1]
    } else {
        if inv[0] * inv[1] != len {
            return Err(not(format!(
                "its {}x{} invocations do not cover the {len} elements of `{out}` exactly",
                inv[0], inv[1]
            )));
        }
        inv
    };
    // Offsets are computed in u32 as `e + n - base`: the domain stays below 2^30.
    let small = |v: u64| u32::try_from(v).ok().filter(|&v| v < (1 << 30));
    let (Some(w), Some(h)) = (small(domain[0]), small(domain[1])) else {
        return Err(not(format!("its domain of {len} elements is too large")));
    };
    Ok(StepWindow {
        step: s,
        out,
        out_prog: out_prog.clone(),
        reads,
        domain: [w, h],
        elem: buf.elem,
        loads,
    })
}

/// The host buffers `list` stores to, in order of first store.
fn stored_buffers(list: &[Stmt]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    crate::ir::walk_list(list, &mut |s| {
        if let StmtKind::Store { buffer, .. } = &s.kind {
            if !out.contains(buffer) {
                out.push(buffer.clone());
            }
        }
    });
    out
}

fn first_barrier(list: &[Stmt]) -> Option<NodeId> {
    let mut found = None;
    crate::ir::walk_list(list, &mut |s| {
        if found.is_none() && matches!(s.kind, StmtKind::Barrier(_) | StmtKind::Sync(_)) {
            found = Some(s.id.clone());
        }
    });
    found
}

fn has_load(e: &Expr, tainted: &HashSet<String>) -> bool {
    let mut hit = false;
    e.visit(&mut |x| match x {
        Expr::Load { .. } | Expr::Atomic { .. } => hit = true,
        Expr::Var(v) if tainted.contains(v) => hit = true,
        _ => {}
    });
    hit
}

/// The first statement whose control flow or index depends on loaded data, and what.
/// Variables assigned anything loaded (directly or through other such variables) are
/// data; a condition, a loop bound or an index must use none of them.
fn data_dependent(list: &[Stmt]) -> Option<(NodeId, &'static str)> {
    let mut tainted: HashSet<String> = HashSet::new();
    loop {
        let before = tainted.len();
        crate::ir::walk_list(list, &mut |s| {
            if let StmtKind::Let { name, value } | StmtKind::Assign { name, value } = &s.kind {
                if has_load(value, &tainted) {
                    tainted.insert(name.clone());
                }
            }
        });
        if tainted.len() == before {
            break;
        }
    }
    let mut found = None;
    crate::ir::walk_list(list, &mut |s| {
        if found.is_some() {
            return;
        }
        let why = match &s.kind {
            StmtKind::If { cond, .. } if has_load(cond, &tainted) => Some("a condition"),
            StmtKind::Loop { from, to, .. }
                if has_load(from, &tainted) || has_load(to, &tainted) =>
            {
                Some("a loop bound")
            }
            StmtKind::Store { index, .. } if has_load(index, &tainted) => Some("a store index"),
            _ => None,
        };
        let why = why.or_else(|| {
            let mut idx = false;
            for e in s.exprs() {
                e.visit(&mut |x| {
                    if let Expr::Load { index, .. } = x {
                        idx |= has_load(index, &tainted);
                    }
                });
            }
            idx.then_some("a load index")
        });
        if let Some(why) = why {
            found = Some((s.id.clone(), why));
        }
    });
    found
}

/// A pass checked by [`check`]: each step's window and which steps store their output to
/// global memory.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// The steps' windows, in group order.
    pub windows: Vec<StepWindow>,
    /// Per step (group order): its output goes to global memory (it is the pass's last
    /// writer of a buffer that is read after the pass).
    pub writes_global: Vec<bool>,
    /// Per step: how far it reads the previous step's output, as measured.
    pub measured: Vec<[u32; 2]>,
}

/// The validator of a recomputed pass of `steps` (consecutive pipeline steps) with `spec`:
/// every read of every step lies within the halo `spec` gives it, the pass reads from global
/// memory no buffer it writes, and the window fits the domain and shared memory. Every
/// refusal names the step and says how to fix it.
pub fn check(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    steps: &[usize],
    spec: &HaloSpec,
) -> Result<Pass, HaloError> {
    let fix_plan = "plan the pipeline again (`vyrescope plan`): the planner takes each step's \
                    radius from the steps themselves";
    if steps.is_empty() || spec.radius.len() != steps.len() {
        return Err(refuse(
            format!(
                "a recomputed pass of {} steps gives {} radii",
                steps.len(),
                spec.radius.len()
            ),
            fix_plan,
        ));
    }
    if steps.windows(2).any(|w| w[1] != w[0] + 1) {
        return Err(refuse(
            format!("recomputed steps {steps:?} are not consecutive"),
            fix_plan,
        ));
    }
    if spec.tile.contains(&0) || spec.threads == 0 || spec.threads > 1024 {
        return Err(refuse(
            format!(
                "a recomputed pass with tile {:?} and {} threads",
                spec.tile, spec.threads
            ),
            "give a tile of at least one element per axis and 1..=1024 threads",
        ));
    }
    let windows = steps
        .iter()
        .map(|&s| window_step(pipeline, shapes, s))
        .collect::<Result<Vec<_>, _>>()?;
    let mut stores =
        |w: &StepWindow| probe::probe(pipeline, shapes, w, None).is_ok_and(|r| r.stores_every);
    let writes_global = check_layout(pipeline, shapes, &windows, spec, &mut stores)?;
    let mut measured = vec![[0u32; 2]; windows.len()];
    for (i, w) in windows.iter().enumerate() {
        let carried = (i > 0)
            .then(|| w.reads_buffer(&windows[i - 1].out))
            .flatten();
        if i > 0 && carried.is_none() {
            return Err(refuse(
                format!(
                    "step {} does not read `{}`, the output of step {}: not a chain",
                    w.step,
                    windows[i - 1].out,
                    windows[i - 1].step
                ),
                fix_plan,
            ));
        }
        let reach = probe::probe(pipeline, shapes, w, carried)?;
        if !reach.stores_every {
            return Err(refuse(
                format!(
                    "step {} does not store every element of `{}`: a recomputed cell it skips \
                     would hold another step's value",
                    w.step, w.out
                ),
                NOT_A_WINDOW_FIX,
            ));
        }
        let have = spec.radius[i];
        if reach.radius[0] > have[0] || reach.radius[1] > have[1] {
            return Err(refuse(
                format!(
                    "step {} reads `{}` up to {} element(s) along x and {} along y from its own, \
                     but the recomputed pass gives it a halo of {} and {}: cells next to the \
                     tile would read outside the computed window",
                    w.step,
                    carried.unwrap_or_default(),
                    reach.radius[0],
                    reach.radius[1],
                    have[0],
                    have[1]
                ),
                format!(
                    "give step {} a radius of at least [{}, {}] ({fix_plan})",
                    w.step, reach.radius[0], reach.radius[1]
                ),
            ));
        }
        measured[i] = reach.radius;
    }
    Ok(Pass {
        windows,
        writes_global,
        measured,
    })
}

/// The checks of a pass that need no probe of its own reads: one domain, the window within
/// it and within shared memory, and no step reading from global memory a buffer the pass
/// writes. `stores(w)` says whether a later window step stores every element (whether an
/// output is dead after the pass). Returns per step whether its output goes to global memory.
pub fn check_layout(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    windows: &[StepWindow],
    spec: &HaloSpec,
    stores: &mut dyn FnMut(&StepWindow) -> bool,
) -> Result<Vec<bool>, HaloError> {
    let fix_plan = "plan the pipeline again (`vyrescope plan`): the planner takes each step's \
                    radius from the steps themselves";
    let steps: Vec<usize> = windows.iter().map(|w| w.step).collect();
    for w in windows {
        if w.domain != spec.domain {
            return Err(refuse(
                format!(
                    "step {} covers {}x{} elements but the pass {}x{}",
                    w.step, w.domain[0], w.domain[1], spec.domain[0], spec.domain[1]
                ),
                fix_plan,
            ));
        }
    }
    let window = spec.window();
    if window[0] > spec.domain[0] || window[1] > spec.domain[1] {
        return Err(refuse(
            format!(
                "steps {steps:?}: the window of {}x{} cells (tile {}x{} and halo) is larger than \
                 the {}x{} domain",
                window[0], window[1], spec.tile[0], spec.tile[1], spec.domain[0], spec.domain[1]
            ),
            "fuse fewer steps per pass or use a smaller tile",
        ));
    }
    let cells = u64::from(window[0]) * u64::from(window[1]);
    let bytes: u64 = shared_bytes(windows, cells);
    if bytes > MAX_SHARED_BYTES {
        return Err(refuse(
            format!(
                "steps {steps:?}: the recomputed window needs {bytes} B of shared memory, over \
                 the {MAX_SHARED_BYTES} B a block may use"
            ),
            "fuse fewer steps per pass or use a smaller tile",
        ));
    }
    let writes_global = global_writes(pipeline, shapes, windows, stores);
    // Reads from global memory: the first step's, and a later step's of anything but the
    // previous step's output.
    for (i, w) in windows.iter().enumerate() {
        for (prog, b) in &w.reads {
            if i > 0 && *b == windows[i - 1].out {
                continue;
            }
            let written_before = windows[..i].iter().any(|x| x.out == *b);
            let written_out = windows
                .iter()
                .zip(&writes_global)
                .any(|(x, g)| *g && x.out == *b);
            if written_before || written_out {
                return Err(refuse(
                    format!(
                        "step {} reads `{prog}` (buffer `{b}`) from global memory, which the \
                         recomputed pass of steps {steps:?} writes: blocks would read each \
                         other's new values",
                        w.step
                    ),
                    "end the pass before the step that writes the buffer (in a ping-pong chain \
                     a pass has an odd number of steps and the last step of the chain runs on \
                     its own), or mark the buffer `transient` if nothing reads it afterwards",
                ));
            }
        }
    }
    Ok(writes_global)
}

/// Shared memory of a pass whose window holds `cells` cells: two alternating arrays per
/// element type (a step reads one and writes the other).
pub fn shared_bytes(windows: &[StepWindow], cells: u64) -> u64 {
    let mut arrays: BTreeMap<(usize, &'static str), u64> = BTreeMap::new();
    for (i, w) in windows.iter().enumerate() {
        arrays.insert((i % 2, w.elem.name()), w.elem.size_bytes() as u64);
    }
    arrays.values().map(|b| b * cells).sum()
}

/// Per step of the pass: whether its output must reach global memory. A step whose buffer a
/// later step of the pass writes again does not; nor the pass's last writer of a buffer that,
/// after the pass, is transient and unread or written whole by a window step before anyone
/// reads it.
fn global_writes(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    windows: &[StepWindow],
    stores: &mut dyn FnMut(&StepWindow) -> bool,
) -> Vec<bool> {
    let after = windows.last().map_or(0, |w| w.step + 1);
    let mut out = Vec::with_capacity(windows.len());
    for (i, w) in windows.iter().enumerate() {
        if windows[i + 1..].iter().any(|x| x.out == w.out) {
            out.push(false);
            continue;
        }
        out.push(live_after(pipeline, shapes, &w.out, after, stores));
    }
    out
}

/// Whether buffer `b`'s contents at the start of step `from` may be read: by a later step
/// before a window step overwrites every element, or after the pipeline (unless transient).
fn live_after(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    b: &str,
    from: usize,
    stores: &mut dyn FnMut(&StepWindow) -> bool,
) -> bool {
    for s in from..pipeline.steps.len() {
        let step = &pipeline.steps[s];
        let bound: Vec<&str> = step.bind.iter().map(|(_, x)| x.as_str()).collect();
        if !bound.contains(&b) {
            continue;
        }
        // A window step stores every element of its output and reads none of it; its probe
        // proves both, so only the shape is asked here and `check` probes the pass's steps.
        return match window_step(pipeline, shapes, s) {
            Ok(w) if w.out == b && w.reads_buffer(b).is_none() => !stores(&w),
            _ => true,
        };
    }
    !pipeline.buffer(b).is_some_and(|x| x.transient)
}
