//! Fused emission by IR-level fusion: one group of pipeline steps becomes one ordinary
//! vyrescope Program that the existing validator, interpreter, emitter and runtime take as is.
//!
//! [`fuse_group`] builds that Program:
//! - host buffers: the pipeline buffers the group touches, in pipeline order, named as in the
//!   pipeline, bindings `0..`; access `uniform` if every step binds it `uniform`, `read` if no
//!   step writes it, else `read_write`;
//! - workgroup buffers: each step's own, renamed `s{k}_{name}` (`k` the pipeline step index;
//!   a trailing `_` is added while the name is taken), `P` times as long for a step packed
//!   `P` to a block (one copy per sub-task, see [`pack`]), except that a step reuses an
//!   earlier step's array of the same element type and count when a barrier separates that
//!   array's last use from the step (shared memory is then sized by the largest step, not the
//!   sum);
//! - loads of pipeline buffers the same thread just stored are forwarded in variables, and
//!   transient buffers nobody else reads are not stored (see [`forward`]);
//! - variables: renamed `s{k}_{name}`; the variables made up here start with `f{k}_`, so they
//!   can never meet a renamed one;
//! - each step's body becomes one statement (a block, or the loop over virtual workgroups)
//!   and between two steps sits the separation: nothing for `none`/`invocation`,
//!   `barrier(workgroup)` or `barrier(grid)`;
//! - `return` ends only the step: it clears the step's `f{k}_alive` flag and what follows it is
//!   guarded, so every thread still reaches the separations (see [`rewrite::lower_returns`]);
//! - a step whose grid differs from the launch grid (a persistent grid, or steps of different
//!   grids) runs in a loop over virtual workgroups with `gid`, `wgid`, `nwg` replaced by the
//!   virtual ones (see [`rewrite::VirtualLoop`]);
//! - the block is the largest workgroup size of the group; a smaller step runs on virtual
//!   workgroups of its own size, packed several to a block where it can (see
//!   `super::mixed::step_layouts` and [`rewrite::VirtualLoop`]; a packed step's workgroup
//!   barriers and buffers become its sub-task's, see [`pack`]), else masking the extra
//!   threads (see [`mask`]).
//!
//! The fused Program is validated; a Program the validator rejects is a [`FuseError`] naming
//! the step and its own node.

mod forward;
mod halo;
mod mask;
mod pack;
mod prefetch;
mod rewrite;
mod spec;
mod steps;
mod sync;

/// Statement and expression builders, shared with the recomputed form's probe.
pub(crate) use rewrite::{bin, bool_lit, if_, let_, synth, u32_lit};
pub use sync::{FOLD_SPREAD, FOLD_SPREAD_FROM_BLOCKS};

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::launch::PipelineLaunch;
use crate::inputs::LaunchShape;
use crate::ir::parse::assign_ids;
use crate::ir::{
    Access, BarrierScope, BufferDecl, NodeId, Pipeline, Program, RunSpec, ScalarType, Stmt,
    StmtKind,
};
use crate::shape::MAX_GRID_DIMS;
use crate::validate::ProgramInfo;

use super::mixed::StepLayout;
use super::{DepKind, FusedGroupSpec};
pub use forward::ForwardReport;
use prefetch::ValueTypes;
use rewrite::{Renamer, VirtualLoop, SYNTHETIC};
use spec::*;
use steps::*;

/// One fused kernel: an ordinary Program plus how it maps back onto the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct FusedKernel {
    /// The fused Program (valid: the validator reports no error on it).
    pub program: Program,
    /// What the validator proved about `program` when the group was fused: the kernel is
    /// emitted from it (see [`FusedKernel::info`]).
    info: ProgramInfo,
    /// Its launch: the group's largest workgroup size; the grid is `[persistent_blocks, 1, 1]`, or the
    /// steps' common grid (one workgroup size), or `[most workgroups of any step, 1, 1]` when the grids
    /// or workgroup sizes differ.
    pub shape: LaunchShape,
    /// `buffers[i]` is the pipeline buffer behind the fused Program's host buffer `i` (binding
    /// `i`; the buffer has the same name).
    pub buffers: Vec<String>,
    /// For every statement of the fused Program that comes from a step: the step index and the
    /// statement's node id in that step's Program. Statements made up by the fusion (barriers
    /// between steps, flags, guards, virtual-workgroup loops) are absent.
    pub node_origin: BTreeMap<NodeId, (usize, NodeId)>,
    /// What register forwarding did: loads replaced by the stored value, transient buffers
    /// no longer stored.
    pub forwarding: ForwardReport,
    /// How each step (in group order) uses the block: whole, packed or masked.
    pub layouts: Vec<StepLayout>,
    /// The group's pipeline steps in order: `layouts[i]` is step `steps[i]`'s.
    pub steps: Vec<usize>,
}

/// Why a group could not be fused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FuseError {
    /// What is wrong (names the group, the step and the node where relevant).
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl FusedKernel {
    /// The validator's facts about the fused Program, proved once when the group was fused;
    /// emission reads them instead of validating the kernel again.
    pub fn info(&self) -> &ProgramInfo {
        &self.info
    }

    /// This kernel as one launch of `Runtime::run_pipeline` (runtime), whose buffers
    /// are `pipeline.buffers` in pipeline order.
    pub fn launch(&self, pipeline: &Pipeline) -> Result<PipelineLaunch, FuseError> {
        let buffers = self
            .buffers
            .iter()
            .map(|b| {
                pipeline
                    .buffers
                    .iter()
                    .position(|x| &x.name == b)
                    .ok_or_else(|| {
                        err(
                            format!("fused kernel `{}` uses buffer `{b}` that pipeline `{}` does not have", self.program.name, pipeline.name),
                            "launch a fused kernel only with the pipeline it was fused from",
                        )
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PipelineLaunch {
            program: self.program.clone(),
            shape: self.shape,
            buffers,
        })
    }
}

impl FusedKernel {
    /// Speaks of `kernel` (this fused Program's emission) in the steps' own terms: every
    /// source-map entry and every statement comment of the PTX (`// body[0].block[1].then[4]:
    /// s0_tile[s0_l] = ...`) of a statement that comes from a step is renamed to that step's
    /// node and text (`// steps[0].body[2]: tile[l] = ...`), as the IR pane shows the step.
    /// Statements the fusion made up keep their fused ids and text. Line numbers do not
    /// change, so the source map stays valid.
    pub fn label_for_steps(&self, pipeline: &Pipeline, kernel: &mut crate::emit::EmittedKernel) {
        let step_node = |fused: &str| self.node_origin.get(fused).map(|(k, id)| (*k, id.clone()));
        for e in &mut kernel.source_map.entries {
            if let Some((k, id)) = step_node(&e.node) {
                e.node = format!("steps[{k}].{id}");
            }
        }
        // Each step's printed statements, by node id (the text the IR pane shows).
        let mut texts: Vec<Option<std::collections::HashMap<String, String>>> =
            vec![None; pipeline.steps.len()];
        let mut out = String::with_capacity(kernel.ptx.len());
        for line in kernel.ptx.split_inclusive('\n') {
            let relabelled = (|| {
                let body = line.trim_start();
                let indent = &line[..line.len() - body.len()];
                let rest = body.strip_prefix("// ")?;
                let (node, _) = rest.split_once(": ")?;
                let (k, id) = step_node(node)?;
                let table = texts.get_mut(k)?.get_or_insert_with(|| {
                    crate::ir::print::print_program(&pipeline.steps[k].program)
                        .lines
                        .into_iter()
                        .filter_map(|l| Some((l.node?.to_string(), l.code.trim().to_string())))
                        .rev()
                        .collect()
                });
                let text = table.get(id.as_ref() as &str)?;
                let end = if line.ends_with('\n') { "\n" } else { "" };
                Some(format!("{indent}// steps[{k}].{id}: {text}{end}"))
            })();
            match relabelled {
                Some(l) => out.push_str(&l),
                None => out.push_str(line),
            }
        }
        kernel.ptx = out;
    }
}

fn err(message: impl Into<String>, fix: impl Into<String>) -> FuseError {
    FuseError {
        message: message.into(),
        fix: fix.into(),
    }
}

/// Builds the fused Program of the group `spec` of `pipeline`; `shapes[i]` is the launch of
/// `pipeline.steps[i]` (one per pipeline step).
pub fn fuse_group(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    spec: &FusedGroupSpec,
) -> Result<FusedKernel, FuseError> {
    let group = format!(
        "group of steps {:?} of pipeline `{}`",
        spec.steps, pipeline.name
    );
    if let Some(h) = &spec.halo {
        return halo::fuse_halo(pipeline, shapes, spec, h, &group);
    }
    check_spec(pipeline, shapes, spec, &group)?;
    let shape = launch_shape(shapes, spec, &group)?;
    // The pipeline's buffers by name, built once for the group.
    let by_name: BufIndex = pipeline
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| (b.name.as_str(), (i, b)))
        .collect();
    let (buffers, host_decls) = host_buffers(pipeline, &by_name, spec, &group)?;
    // Buffers no step of the group writes: their loads may be issued ahead of a task.
    let read_only: ValueTypes = host_decls
        .iter()
        .filter(|d| d.access == Access::Read)
        .map(|d| (d.name.clone(), d.elem.value_type()))
        .collect();
    let (mut settled, mut settle_at) = settle_points(pipeline, spec, &host_decls);
    let barriers_before = barriers_before(spec);
    let layouts = step_layouts(pipeline, shapes, spec, spec.dataflow.is_some());
    let layout = sync_layout(spec, shapes, &layouts, &group)?;

    let mut decls = Declarations::new(&buffers, host_decls);
    let mut body = Vec::new();
    // Sub-task barrier sizes used since the last block-wide barrier of the fused body.
    let mut in_flight = BTreeSet::new();
    for (i, &k) in spec.steps.iter().enumerate() {
        let step = &pipeline.steps[k];
        let names = decls.add_step(i, k, step, &layouts[i], &barriers_before);
        settled.extend(std::mem::take(&mut settle_at[i]));
        let stmt = step_stmt(
            k,
            &step.program,
            &names,
            (shapes[k], shape, layouts[i].packed()),
            layout.as_ref(),
            (!spec.no_prefetch).then_some((&read_only, &settled)),
            &group,
        )?;
        // Sub-task barriers of another size than those still in flight reuse the same
        // hardware named barriers with another thread count: the block's threads must all
        // be past the earlier ones first (V074; a packed 8 x 32 step followed by a packed
        // 4 x 64 one faulted with CUDA_ERROR_ILLEGAL_INSTRUCTION without this barrier).
        let sizes = rewrite::subtask_sizes(std::slice::from_ref(&stmt));
        if !in_flight.is_empty() && !sizes.is_empty() && in_flight.union(&sizes).count() > 1 {
            body.push(rewrite::synth(StmtKind::Barrier(BarrierScope::Workgroup)));
            in_flight.clear();
        }
        in_flight.extend(sizes);
        body.push(stmt);
        let after = spec.separations.get(i);
        if let Some(scope) = after.and_then(|sep| separation_barrier(sep.kind, layout.is_some())) {
            body.push(rewrite::synth(StmtKind::Barrier(scope)));
            in_flight.clear();
        }
    }
    let decls = decls.decls;

    if let Some(l) = &layout {
        body.splice(0..0, l.declarations());
    }
    let forwarding = forward::forward(&mut body, &forward_input(pipeline, &by_name, spec, &decls));
    let node_origin = renumber(&mut body);
    let program = fused_program(pipeline, spec, &shape, (decls, body), &buffers);
    let info = check_valid(&program, &node_origin, &group)?;
    let kernel = FusedKernel {
        program,
        info,
        shape,
        buffers,
        node_origin,
        forwarding,
        layouts,
        steps: spec.steps.clone(),
    };
    check_schedule(&kernel, spec, shapes, &group)?;
    Ok(kernel)
}

/// The fused Program of `spec`'s steps: named after the first and last, launched at
/// `shape`, with the declarations and body built for it and a `run` section over the
/// pipeline's `buffers`.
fn fused_program(
    pipeline: &Pipeline,
    spec: &FusedGroupSpec,
    shape: &LaunchShape,
    (decls, body): (Vec<BufferDecl>, Vec<Stmt>),
    buffers: &[String],
) -> Program {
    let first = spec.steps.first().copied().unwrap_or(0);
    let last = spec.steps.last().copied().unwrap_or(0);
    Program {
        name: format!("{}_fused_{first}_{last}", pipeline.name),
        doc: Some(format!(
            "steps {:?} of pipeline `{}` fused into one kernel",
            spec.steps, pipeline.name
        )),
        workgroup_size: shape.workgroup_size,
        buffers: decls,
        body,
        run: Some(run_spec(pipeline, buffers, shape)),
    }
}

/// Per position in the group: the host buffers no step from there on writes (their
/// writers, if any, ran before, so after a step's waits their contents are settled), as the
/// set settled before the first step and what joins it at each later position. The set only
/// grows along the group: a buffer joins it after its last writer, so one map is extended
/// step by step (a map per position was quadratic in steps, in time and memory).
fn settle_points(
    pipeline: &Pipeline,
    spec: &FusedGroupSpec,
    host_decls: &[BufferDecl],
) -> (ValueTypes, Vec<Vec<(String, ScalarType)>>) {
    let mut last_writer: HashMap<&str, usize> = HashMap::new();
    for (i, &k) in spec.steps.iter().enumerate() {
        let step = &pipeline.steps[k];
        for b in step.program.buffers.iter() {
            if b.access.is_host() && b.access.is_writable() {
                last_writer.insert(step.bound(&b.name).unwrap_or(&b.name), i);
            }
        }
    }
    let mut settle_at: Vec<Vec<(String, ScalarType)>> = vec![Vec::new(); spec.steps.len()];
    let mut settled = ValueTypes::new();
    for d in host_decls {
        let t = (d.name.clone(), d.elem.value_type());
        match last_writer.get(d.name.as_str()) {
            None => {
                settled.insert(t.0, t.1);
            }
            Some(&i) if i + 1 < spec.steps.len() => settle_at[i + 1].push(t),
            Some(_) => {}
        }
    }
    (settled, settle_at)
}

/// Per position of the group (and one past the end), how many workgroup or grid barriers
/// come before it: whether a barrier separates two positions is one subtraction (see
/// `barrier_between`).
fn barriers_before(spec: &FusedGroupSpec) -> Vec<usize> {
    let mut barriers_before = vec![0usize; spec.steps.len() + 1];
    for (i, s) in spec.separations.iter().enumerate() {
        let b = matches!(s.kind, DepKind::Workgroup | DepKind::Grid);
        barriers_before[i + 1] = barriers_before[i] + usize::from(b);
    }
    for i in spec.separations.len() + 1..barriers_before.len() {
        barriers_before[i] = barriers_before[i - 1];
    }
    barriers_before
}

/// The dataflow form's task layout over the persistent grid, when the group runs it; a
/// dataflow schedule without a persistent grid is refused.
fn sync_layout(
    spec: &FusedGroupSpec,
    shapes: &[LaunchShape],
    layouts: &[StepLayout],
    group: &str,
) -> Result<Option<sync::SyncLayout>, FuseError> {
    match (&spec.dataflow, spec.persistent_blocks) {
        (Some(deps), Some(blocks)) => {
            let wgs: Vec<u64> = spec.steps.iter().map(|&k| shapes[k].workgroups()).collect();
            let packs: Vec<u32> = layouts.iter().map(StepLayout::tasks).collect();
            Ok(Some(sync::SyncLayout::new(
                &spec.steps,
                &wgs,
                &packs,
                deps,
                blocks,
            )))
        }
        (Some(_), None) => Err(err(
            format!("{group}: a dataflow schedule without a persistent grid"),
            "give `persistent_blocks` with `dataflow` (the plan's dataflow grid)",
        )),
        (None, _) => Ok(None),
    }
}

/// The barrier the fused body needs at a separation of kind `kind` (`dataflow`: the group
/// runs the dataflow sync form), if any.
fn separation_barrier(kind: DepKind, dataflow: bool) -> Option<BarrierScope> {
    match kind {
        DepKind::None | DepKind::Invocation => None,
        DepKind::Workgroup => Some(BarrierScope::Workgroup),
        // Dataflow: the cross-workgroup waits sit in the consumer tasks; the block-local
        // dependences across this boundary still need the block's threads in step.
        DepKind::Grid if dataflow => Some(BarrierScope::Workgroup),
        DepKind::Grid => Some(BarrierScope::Grid),
    }
}

/// The fused kernel's buffer declarations as its steps are added: host buffers keep their
/// pipeline names; each step's workgroup arrays get a declaration of their own, or reuse an
/// earlier step's array of the same type and length once a barrier has retired it.
struct Declarations {
    /// Names in use.
    taken: HashSet<String>,
    /// The declarations, host buffers first.
    decls: Vec<BufferDecl>,
    /// Workgroup arrays declared so far: (index in `decls`, position of the last step
    /// using it).
    shared: Vec<(usize, usize)>,
}

impl Declarations {
    fn new(buffers: &[String], host_decls: Vec<BufferDecl>) -> Self {
        Declarations {
            taken: buffers.iter().cloned().collect(),
            decls: host_decls,
            shared: Vec::new(),
        }
    }

    /// Declares what step `k` (at position `i` of the group, laid out as `layout`) needs
    /// and returns its buffers' names in the fused kernel.
    fn add_step(
        &mut self,
        i: usize,
        k: usize,
        step: &crate::ir::Step,
        layout: &StepLayout,
        barriers_before: &[usize],
    ) -> HashMap<String, String> {
        let mut names = HashMap::new();
        let mut mine = HashSet::new();
        // A packed step's sub-tasks each get their own copy of its workgroup buffers.
        let copies = layout.tasks();
        for b in &step.program.buffers {
            let count = b.count.map(|c| c.saturating_mul(copies));
            let decls = &self.decls;
            let reuse = (!b.access.is_host())
                .then(|| {
                    self.shared.iter_mut().find(|(d, last)| {
                        let d = &decls[*d];
                        d.elem == b.elem
                            && d.count == count
                            && !mine.contains(&d.name)
                            && barrier_between(barriers_before, *last, i)
                    })
                })
                .flatten();
            let fused = if b.access.is_host() {
                // Bound and known: checked by `host_buffers`.
                step.bound(&b.name).unwrap_or(&b.name).to_string()
            } else if let Some((d, last)) = reuse {
                // An earlier step's array of the same type and length, whose last use is
                // behind a barrier: every thread of the workgroup is done with it.
                *last = i;
                self.decls[*d].name.clone()
            } else {
                let mut n = format!("s{k}_{}", b.name);
                while self.taken.contains(&n) {
                    n.push('_');
                }
                self.taken.insert(n.clone());
                self.shared.push((self.decls.len(), i));
                self.decls.push(BufferDecl {
                    name: n.clone(),
                    binding: None,
                    count,
                    ..b.clone()
                });
                n
            };
            if !b.access.is_host() {
                mine.insert(fused.clone());
            }
            names.insert(b.name.clone(), fused);
        }
        names
    }
}

/// For a dataflow group: the schedule the kernel really emits, validated before anyone can
/// launch it, against every dependence (those with waits and those the waits imply).
fn check_schedule(
    kernel: &FusedKernel,
    spec: &FusedGroupSpec,
    shapes: &[LaunchShape],
    group: &str,
) -> Result<(), FuseError> {
    let Some(deps) = &spec.dataflow else {
        return Ok(());
    };
    let steps: Vec<(usize, u64)> = spec
        .steps
        .iter()
        .map(|&k| (k, shapes[k].workgroups()))
        .collect();
    let required: Vec<_> = deps.iter().chain(&spec.implied).cloned().collect();
    super::emitted::check_emitted(kernel, &steps, &required).map_err(|e| {
        err(
            format!("{group}: the dataflow schedule is refused: {}", e.message),
            e.fix,
        )
    })?;
    Ok(())
}

/// How each step of the group uses the block (`dataflow`: the group runs the dataflow sync
/// form), as `super::mixed::step_layouts` decides it.
fn step_layouts(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    spec: &FusedGroupSpec,
    dataflow: bool,
) -> Vec<StepLayout> {
    let needs: Vec<_> = spec
        .steps
        .iter()
        .map(|&k| {
            (
                shapes[k].workgroup_size,
                super::mixed::packing_needs(&pipeline.steps[k].program),
                shapes[k].workgroups(),
            )
        })
        .collect();
    let obstacles = super::mixed::group_obstacles(&needs, dataflow);
    let steps: Vec<(usize, [u32; 3], Option<&str>)> = spec
        .steps
        .iter()
        .zip(&obstacles)
        .map(|(&k, o)| (k, shapes[k].workgroup_size, o.as_deref()))
        .collect();
    let grid_after: Vec<bool> = spec
        .separations
        .iter()
        .map(|s| s.kind == DepKind::Grid)
        .collect();
    super::mixed::step_layouts(&steps, &grid_after, dataflow)
}

/// The pipeline's buffers by name, with their place in the pipeline.
type BufIndex<'a> = HashMap<&'a str, (usize, &'a crate::ir::PipelineBuffer)>;

/// True when a workgroup or grid barrier separates the steps at positions `from` and `to`
/// (`from < to`) of the group; `barriers_before[i]`: such separations before position `i`.
fn barrier_between(barriers_before: &[usize], from: usize, to: usize) -> bool {
    match (barriers_before.get(from), barriers_before.get(to)) {
        (Some(a), Some(b)) => b > a,
        _ => false,
    }
}

/// What register forwarding may do with the group's host buffers: forward value-typed ones
/// (their lengths known from the pipeline) and drop the stores of transient ones that no step
/// outside the group binds.
fn forward_input(
    pipeline: &Pipeline,
    by_name: &BufIndex,
    spec: &FusedGroupSpec,
    decls: &[BufferDecl],
) -> forward::ForwardInput {
    use crate::ir::ElemType as E;
    let mut input = forward::ForwardInput {
        elems: HashMap::new(),
        lens: HashMap::new(),
        droppable: HashSet::new(),
    };
    // Searched per declaration, the buffers and the steps binding them made this cubic in
    // steps: the caller indexes the buffers.
    // Only a transient buffer asks whether a step outside the group binds it: one walk over
    // the other steps, and none for a group without transients.
    let in_group: HashSet<usize> = spec.steps.iter().copied().collect();
    let transients: HashSet<&str> = decls
        .iter()
        .filter(|d| {
            d.access.is_host()
                && by_name
                    .get(d.name.as_str())
                    .is_some_and(|(_, b)| b.transient)
        })
        .map(|d| d.name.as_str())
        .collect();
    let bound_outside: HashSet<&str> = if transients.is_empty() {
        HashSet::new()
    } else {
        pipeline
            .steps
            .iter()
            .enumerate()
            .filter(|(k, _)| !in_group.contains(k))
            .flat_map(|(_, s)| s.bind.iter().map(|(_, b)| b.as_str()))
            .filter(|b| transients.contains(b))
            .collect()
    };
    for d in decls.iter().filter(|d| d.access.is_host()) {
        let Some(&(_, pb)) = by_name.get(d.name.as_str()) else {
            continue;
        };
        if matches!(d.elem, E::U32 | E::I32 | E::U64 | E::I64 | E::F32 | E::F64) {
            input.elems.insert(d.name.clone(), d.elem.value_type());
        }
        if let Some(n) = pb.contents.len {
            input.lens.insert(d.name.clone(), n);
        }
        if pb.transient && !bound_outside.contains(d.name.as_str()) {
            input.droppable.insert(d.name.clone());
        }
    }
    input
}

impl crate::util::HasFix for FuseError {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(FuseError);
