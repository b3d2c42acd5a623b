//! The megakernel planner: groups consecutive steps into fused kernels, orders each group's
//! steps into waves (steps with no dependence between them share a wave) and puts the weakest
//! sufficient separation between waves, with the fewest grid barriers.
//!
//! # Execution model the plan assumes
//! A group runs as one kernel (`super::fuse`): its steps in increasing order, each over its
//! virtual workgroups, the same virtual workgroup of equal-grid steps on the same block, with
//! the separations between steps. A group with grid barriers is a cooperative persistent
//! kernel of exactly the co-resident blocks (so any step grid fits); a group without is one
//! ordinary launch.
//!
//! # Grouping
//! Steps are taken in pipeline order; a step joins the current group unless (each a recorded
//! fusion break with its reason): it or the group uses its own grid barrier (it must stay its
//! own cooperative launch); its workgroup size cannot share a block with the group's (see
//! `super::mixed`: the block is the largest size and smaller steps pack several workgroups
//! to a block or mask the extra threads; [`Group::step_layouts`] says which);
//! the fused shared memory (the sum of the steps' workgroup buffers) does not fit a block;
//! the fused kernel would not launch; its estimated occupancy (registers: the maximum of the
//! steps', shared memory: the sum) falls below [`PlanOptions::min_occupancy_pct`] while the
//! group or the step reaches it alone (fusion must not drag a step that runs well below the
//! threshold; steps already below it together may fuse); or it needs a grid barrier on a
//! device without cooperative launch.
//!
//! # Waves and barriers
//! Steps run in pipeline order (fused emission takes a group's steps in increasing order); a
//! new wave starts at a step that depends on one of the current wave, and each barrier is
//! placed as late as possible, so the count is minimal for that order (see `build_group`).
//! Reordering independent steps could save grid barriers in some pipelines; it is not done
//! because fused emission does not accept it.

use serde::{Deserialize, Serialize};

use crate::diagnostics::launch::{has_grid_barrier, workgroup_bytes};
use crate::ir::Pipeline;
use crate::occupancy::{estimate, DeviceCaps, KernelResources};
use crate::shape::LaunchShape;

use super::cost::{
    step_work, CostModel, Decision, DecisionSource, MeasuredForms, StepWork, FUSED_WORK_MARGIN,
};
pub use super::dataflow::SyncMode;
use super::dataflow::{group_sync, GroupSync};
use super::deps::{analyse, DepError, DepTable, Dependence};
use super::{DepKind, FusedGroupSpec, Separation};

mod decide;
mod grouping;
mod resources;

use decide::*;
use grouping::*;
use resources::*;

/// Registers per thread assumed for a step whose count is not given: what ptxas reports for
/// the simple element-wise Programs of the fixtures, and a quarter of the register file per
/// thread at full occupancy on every supported GPU (64K registers / 2048 threads = 32).
pub const DEFAULT_REGISTERS: u32 = 32;

/// Occupancy (percent of the SM's warp slots) below which a fusion is refused, unless both
/// parts are already below it on their own. A quarter of
/// the warp slots still hides most memory latency for streaming kernels; below it the saved
/// launches rarely pay for the lost parallelism.
pub const MIN_OCCUPANCY_PCT: f64 = 25.0;

/// Most steps fused into one kernel. A fused kernel's size grows with its steps, and its
/// dataflow form with the waits between them (a ping-pong pipeline's step waits on every
/// earlier one): 200 such steps made 426,000 PTX lines that ptxas needed 23 GB for. Past
/// this the plan starts a new launch, so every kernel it emits stays small enough to
/// assemble, and planning and fusing stay linear in steps.
pub const MAX_GROUP_STEPS: usize = 32;

/// Most IR nodes (statements and expressions of the steps' Programs) fused into one kernel;
/// a quarter of what one Program may hold (`validate::limits::MAX_NODES`), leaving room for
/// what fusion adds (virtual workgroup loops, waits, renamed copies).
pub const MAX_GROUP_NODES: usize = 25_000;

/// Below this predicted gain (separate launches' predicted time over the chosen form's), a
/// fused or split choice of the cost model is unsure: [`Decide::Auto`] measures it on a GPU.
/// The model's predictions were off by up to 1.3x on held-out pipelines (a histogram
/// equalisation it predicted to gain ran 0.88x), so a smaller predicted gain proves nothing.
pub const UNSURE_GAIN: f64 = 1.3;

/// How fusion is decided (`--decide`, spelled the same by every command that takes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decide {
    /// The default: as [`Decide::Model`], and where a GPU runs the pipeline and the model is
    /// unsure of a fused choice (`harness::target::unsure`: a predicted gain under
    /// [`UNSURE_GAIN`]), the candidate forms are timed once, as `measure` times them, and
    /// the winner is recorded in the plan cache. Without a GPU it is the model's prediction,
    /// and says so.
    #[default]
    Auto,
    /// The cost model (`super::cost`), or a decision an earlier `measure` recorded in the
    /// plan cache for this pipeline, device and sync form: never a form predicted (or
    /// measured) slower than separate launches. Never measures.
    Model,
    /// Fuse everything that may legally fuse, whatever it costs (to study a fused form).
    Fuse,
    /// Time each run of fusable steps fused, separate and as the model splits it on the GPU,
    /// keep the fastest and record the choice in the plan cache (`run --backend cuda` only;
    /// the planner itself plans as [`Decide::Model`], see [`Decide::planner`]).
    Measure,
    /// As `model`, but chains of window steps always run recomputed (`super::halo`), in as
    /// few passes as are legal, whatever the model predicts (to study and verify that form).
    Recompute,
}

impl Decide {
    /// The decision the planner itself makes: `measure` plans by the model and then times
    /// (`super::compiled::CompiledPipeline::decide_by_timing`), so its plan, and the cache
    /// key a measured choice is recorded under, are the model's.
    pub fn planner(self) -> Decide {
        match self {
            Decide::Measure | Decide::Auto => Decide::Model,
            d => d,
        }
    }

    /// The `--decide` spelling.
    pub fn name(self) -> &'static str {
        match self {
            Decide::Auto => "auto",
            Decide::Model => "model",
            Decide::Fuse => "fuse",
            Decide::Measure => "measure",
            Decide::Recompute => "recompute",
        }
    }
}

impl std::str::FromStr for Decide {
    type Err = crate::util::Problem;
    fn from_str(s: &str) -> Result<Self, crate::util::Problem> {
        [
            Decide::Auto,
            Decide::Model,
            Decide::Fuse,
            Decide::Measure,
            Decide::Recompute,
        ]
        .into_iter()
        .find(|d| d.name() == s)
        .ok_or_else(|| {
            crate::util::Problem::usage(
                format!("unknown fusion decision `{s}`"),
                "use `auto` (the default), `model`, `fuse`, `measure` or `recompute`",
            )
        })
    }
}

/// What the planner needs besides the pipeline and its launch shapes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanOptions {
    /// The device (a bundled profile or a probe).
    pub device: DeviceCaps,
    /// Registers per thread of each step (e.g. from `emit --resources`); missing entries and
    /// `None` mean [`DEFAULT_REGISTERS`].
    pub registers: Vec<Option<u32>>,
    /// See [`MIN_OCCUPANCY_PCT`].
    pub min_occupancy_pct: f64,
    /// The sync form the plan is for: the cost of a boundary inside a fused kernel depends on
    /// it, so fusion decisions do.
    #[serde(default)]
    pub sync: SyncMode,
    /// How fusion is decided.
    #[serde(default)]
    pub decide: Decide,
}

impl PlanOptions {
    /// Options for `device` with no register counts and the default occupancy threshold.
    pub fn new(device: DeviceCaps) -> PlanOptions {
        PlanOptions {
            device,
            registers: Vec::new(),
            min_occupancy_pct: MIN_OCCUPANCY_PCT,
            sync: SyncMode::default(),
            decide: Decide::default(),
        }
    }
}

/// How a group runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    /// A cooperative persistent kernel (it has grid barriers).
    Megakernel,
    /// One ordinary launch.
    Launch,
}

/// Whether a plan came from the plan cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheStatus {
    /// Read from the cache.
    Hit,
    /// Computed now.
    Miss,
}

/// One fused kernel of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    /// `megakernel` or `launch`.
    pub kind: GroupKind,
    /// Step indices in execution order.
    pub steps: Vec<usize>,
    /// Steps by wave, in execution order.
    pub waves: Vec<Vec<usize>>,
    /// The separation at each wave boundary (`invocation`: none needed).
    pub barriers: Vec<Separation>,
    /// Threads per block: the largest workgroup size of the group's steps.
    pub workgroup_size: [u32; 3],
    /// Each step's grid (workgroups), in `steps` order.
    pub step_grids: Vec<[u32; 3]>,
    /// Each step's own workgroup size, in `steps` order. When they differ the group is a
    /// mixed-size launch: a step smaller than the block packs several of its workgroups into
    /// a block or masks the block's extra threads ([`Group::step_layouts`]).
    #[serde(default)]
    pub step_workgroup_sizes: Vec<[u32; 3]>,
    /// How each step (in `steps` order) uses the block under the plan's sync form: whole,
    /// packed `P x s` or masked with the reason (`super::mixed::step_layouts`; empty in
    /// cached plans from before it).
    #[serde(default)]
    pub step_layouts: Vec<super::mixed::StepLayout>,
    /// Registers per thread of the fused kernel: assumed by the planner (the maximum of its
    /// steps'), or, once fitted without a GPU (`harness::offline_fit`), the assembled
    /// kernel's own figure; [`Group::registers_source`] says which.
    pub registers: u32,
    /// Where [`Group::registers`] and the figures derived from it (co-resident blocks,
    /// occupancy, the persistent grid) come from when they are the kernel's own (`ptxas -v
    /// for sm_90`, the PTX estimate's label, `--regs`); `None`: the planner's assumption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registers_source: Option<String>,
    /// Shared memory per block: the sum of the steps' workgroup buffers as planned, the
    /// kernel's static shared memory once fitted (see [`Group::registers_source`]).
    pub shared_bytes: u64,
    /// Blocks that fit the device at once with these resources.
    pub coresident_blocks: u32,
    /// Estimated occupancy (percent of warp slots).
    pub occupancy_pct: f64,
    /// What each boundary waits for under a dataflow schedule, and its persistent grid
    /// (`super::dataflow`). Required, so a cached plan from before it is a miss.
    pub dataflow: GroupSync,
    /// `Some` when the group runs recomputed (`super::halo`): its tile, halo per step, `k`,
    /// the recomputed fraction and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halo: Option<super::halo::HaloPlan>,
}

impl Group {
    /// True when the group's steps run different workgroup sizes in one launch.
    pub fn mixed_workgroup_sizes(&self) -> bool {
        self.step_workgroup_sizes
            .iter()
            .any(|w| *w != self.workgroup_size)
    }

    /// Grid barriers inside the group.
    pub fn grid_barriers(&self) -> usize {
        self.barriers
            .iter()
            .filter(|b| b.kind == DepKind::Grid)
            .count()
    }

    /// The group as fused emission needs it: the separation after every step but the last
    /// (`none` between steps of one wave). Fused emission treats `none` and `invocation` alike
    /// (no barrier) but refuses `invocation` between steps of different grids unless both are
    /// one-dimensional, so such a boundary (whose dependences are between other steps: the
    /// dependence analysis proves `invocation` only between equal launch shapes) is given as
    /// `none`.
    pub fn spec(&self) -> FusedGroupSpec {
        let grid_of = |s: usize| {
            self.steps
                .iter()
                .position(|&x| x == s)
                .and_then(|i| self.step_grids.get(i))
        };
        let wg_of = |s: usize| {
            self.steps
                .iter()
                .position(|&x| x == s)
                .and_then(|i| self.step_workgroup_sizes.get(i))
        };
        let mut separations: Vec<Separation> = Vec::new();
        for (w, wave) in self.waves.iter().enumerate() {
            for (i, &s) in wave.iter().enumerate() {
                if i + 1 < wave.len() {
                    separations.push(Separation {
                        after_step: s,
                        kind: DepKind::None,
                        reason: "same wave: no dependence".to_string(),
                    });
                } else if let Some(b) = self.barriers.get(w) {
                    let mut b = b.clone();
                    let next = self.waves.get(w + 1).and_then(|n| n.first()).copied();
                    if b.kind == DepKind::Invocation
                        && next.is_some_and(|n| grid_of(n) != grid_of(s) || wg_of(n) != wg_of(s))
                    {
                        b.kind = DepKind::None;
                    }
                    separations.push(b);
                }
            }
        }
        FusedGroupSpec {
            steps: self.steps.clone(),
            separations,
            persistent_blocks: (self.kind == GroupKind::Megakernel)
                .then_some(self.coresident_blocks),
            dataflow: None,
            implied: Vec::new(),
            no_prefetch: false,
            halo: self.halo.as_ref().map(|h| h.spec.clone()),
        }
    }

    /// True when `--sync dataflow` changes how this group runs: a persistent group whose
    /// dataflow view has a cross-workgroup wait.
    pub fn runs_dataflow(&self) -> bool {
        self.kind == GroupKind::Megakernel && self.dataflow.blocks > 0
    }

    /// The group as fused emission needs it under `sync`: [`Group::spec`] for
    /// [`SyncMode::Barrier`] (and for groups without cross-workgroup waits); for
    /// [`SyncMode::Dataflow`] the dataflow persistent grid and every wait of the dataflow
    /// view, which fused emission turns into completion flags and counters.
    pub fn spec_for(&self, sync: SyncMode) -> FusedGroupSpec {
        let mut spec = self.spec();
        if sync == SyncMode::Dataflow && self.runs_dataflow() {
            spec.persistent_blocks = Some(self.dataflow.blocks);
            spec.dataflow = Some(
                self.dataflow
                    .boundaries
                    .iter()
                    .flat_map(|b| b.waits.iter().cloned())
                    .collect(),
            );
            spec.implied = self
                .dataflow
                .boundaries
                .iter()
                .flat_map(|b| b.implied.iter().cloned())
                .collect();
        }
        spec
    }
}

/// Why a step starts a new group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FusionBreak {
    /// The step that could not join the group before it.
    pub step: usize,
    /// Why.
    pub reason: String,
}

/// A megakernel plan (`plan --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Pipeline name.
    pub pipeline: String,
    /// Device the plan is for.
    pub device: String,
    /// Fused kernels in execution order.
    pub groups: Vec<Group>,
    /// Grid barriers over the whole plan.
    pub grid_barriers: usize,
    /// Kernel launches of the planned execution (one per group).
    pub launches: usize,
    /// Where and why fusion stopped.
    pub fusion_breaks: Vec<FusionBreak>,
    /// Co-resident blocks of the persistent grid: the smallest over the megakernel groups
    /// (over all groups when none needs one).
    pub coresident_blocks: u32,
    /// Largest shared memory per block of any group.
    pub shared_bytes: u64,
    /// `hit` when read from the plan cache.
    pub cache: CacheStatus,
    /// Every dependence between two steps (kind other than `none`).
    pub dependences: Vec<Dependence>,
    /// The occupancy threshold used.
    pub min_occupancy_pct: f64,
    /// Per run of steps that may legally fuse (two steps or more), whether the plan fuses
    /// them, splits them or launches them separately, with the predicted (or measured) times.
    #[serde(default)]
    pub decisions: Vec<Decision>,
    /// Recomputed passes timed on the GPU (`--decide measure`, or the default where it
    /// measured): a pass that lost keeps its chain out of recomputation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recompute_measured: Vec<Measurement>,
}

impl Plan {
    /// The fused-emission description of every group.
    pub fn specs(&self) -> Vec<FusedGroupSpec> {
        self.groups.iter().map(Group::spec).collect()
    }

    /// The fused-emission description of every group under `sync`.
    pub fn specs_for(&self, sync: SyncMode) -> Vec<FusedGroupSpec> {
        self.groups.iter().map(|g| g.spec_for(sync)).collect()
    }
}

/// A pipeline the planner cannot plan.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// The dependence analysis failed.
    Deps(#[from] DepError),
    /// A pipeline without steps.
    Empty(String),
}

/// Plans `pipeline` (`shapes[i]`: step i's launch shape) for `opts.device`. The result's
/// `cache` is `miss`; see `super::cache` for the cached entry point.
pub fn plan(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    opts: &PlanOptions,
) -> Result<Plan, PlanError> {
    plan_measured(pipeline, shapes, opts, &[])
}

/// Device times of the forms of one run of steps that may legally fuse (`steps`: a group of
/// the plan with `--decide fuse`), from `run --decide measure`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The steps.
    pub steps: Vec<usize>,
    /// Their timings.
    pub forms: MeasuredForms,
    /// A recomputed pass (`super::halo`) over `steps` was timed: `forms.fused_ms` is the
    /// pass, `forms.separate_ms` the steps launched apart. A pass measured no faster keeps
    /// its whole chain out of recomputation.
    #[serde(default)]
    pub recomputed: bool,
}

impl Measurement {
    /// A recomputed pass measured no faster than its steps apart.
    pub fn recompute_lost(&self) -> bool {
        self.recomputed && self.forms.separate_ms <= self.forms.fused_ms
    }
}

/// [`plan`], with the runs of steps in `measured` decided by their timings instead of the
/// cost model: the fastest of fused, separate and the model's choice.
pub fn plan_measured(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    opts: &PlanOptions,
    measured: &[Measurement],
) -> Result<Plan, PlanError> {
    if pipeline.steps.is_empty() {
        return Err(PlanError::Empty(pipeline.name.clone()));
    }
    let deps = analyse(pipeline, shapes)?;
    let caps = &opts.device;
    let res: Vec<StepRes> = pipeline
        .steps
        .iter()
        .zip(shapes)
        .enumerate()
        .map(|(i, (step, shape))| StepRes {
            wg: shape.workgroup_size,
            grid: shape.grid,
            threads: u32::try_from(shape.threads_per_workgroup()).unwrap_or(u32::MAX),
            regs: opts
                .registers
                .get(i)
                .copied()
                .flatten()
                .unwrap_or(DEFAULT_REGISTERS),
            smem: workgroup_bytes(&step.program),
            grid_barrier: has_grid_barrier(&step.program),
            subgroup_ops: super::mixed::uses_subgroup_ops(&step.program),
            pack: super::mixed::packing_needs(&step.program),
            nodes: program_nodes(&step.program),
        })
        .collect();

    let mut members: Vec<Vec<usize>> = vec![vec![0]];
    let mut agg = Agg::default();
    agg.add(0, &res[0]);
    let mut fusion_breaks = Vec::new();
    for s in 1..res.len() {
        let Some(current) = members.last_mut() else {
            break;
        };
        match can_join(caps, opts, &deps, &res, (current, &agg), s) {
            Ok(()) => {
                current.push(s);
                agg.add(s, &res[s]);
            }
            Err(refused) => {
                fusion_breaks.push(FusionBreak {
                    step: s,
                    reason: refused.to_string(),
                });
                members.push(vec![s]);
                agg = Agg::default();
                agg.add(s, &res[s]);
            }
        }
    }

    let model = CostModel::for_device(caps);
    let work: Vec<StepWork> = shapes
        .iter()
        .enumerate()
        .map(|(i, sh)| step_work(pipeline, i, sh))
        .collect();
    let ctx = DecideCtx {
        caps,
        opts,
        res: &res,
        work: &work,
        model: &model,
    };
    let mut groups: Vec<Group> = Vec::with_capacity(members.len());
    let mut decisions = Vec::new();
    for m in &members {
        let mut whole = build_group(caps, &deps, &res, m);
        whole.dataflow = group_sync(
            pipeline,
            shapes,
            &deps,
            caps,
            &whole,
            &dataflow_packs(&res, &whole.steps),
        )?;
        set_layouts(&mut whole, &res, opts.sync);
        if m.len() < 2 {
            groups.push(whole);
            continue;
        }
        let found = measured
            .iter()
            .find(|x| !x.recomputed && x.steps == *m)
            .map(|x| &x.forms);
        let d = ctx.decide(m, &whole, found);
        if d.chosen.len() == 1 {
            groups.push(whole);
        } else {
            for (k, part) in d.chosen.iter().enumerate() {
                if let (true, Some(&first)) = (k > 0, part.first()) {
                    fusion_breaks.push(FusionBreak {
                        step: first,
                        reason: split_reason(&d),
                    });
                }
                let mut g = build_group(caps, &deps, &res, part);
                g.dataflow = group_sync(
                    pipeline,
                    shapes,
                    &deps,
                    caps,
                    &g,
                    &dataflow_packs(&res, part),
                )?;
                set_layouts(&mut g, &res, opts.sync);
                groups.push(g);
            }
        }
        decisions.push(d);
    }
    if opts.decide != Decide::Fuse {
        let lost: Vec<usize> = measured
            .iter()
            .filter(|x| x.recompute_lost())
            .flat_map(|x| x.steps.iter().copied())
            .collect();
        groups = recompute_chains(&ctx, pipeline, shapes, &deps, groups, &decisions, &lost)?;
    }
    fusion_breaks.sort_by_key(|b| b.step);
    let grid_barriers = groups.iter().map(Group::grid_barriers).sum();
    let persistent: Vec<u32> = groups
        .iter()
        .filter(|g| g.kind == GroupKind::Megakernel)
        .map(|g| g.coresident_blocks)
        .collect();
    let coresident_blocks = if persistent.is_empty() {
        groups.iter().map(|g| g.coresident_blocks).min()
    } else {
        persistent.iter().copied().min()
    }
    .unwrap_or(0);
    Ok(Plan {
        pipeline: pipeline.name.clone(),
        device: caps.name.clone(),
        launches: groups.len(),
        shared_bytes: groups.iter().map(|g| g.shared_bytes).max().unwrap_or(0),
        groups,
        grid_barriers,
        fusion_breaks,
        coresident_blocks,
        cache: CacheStatus::Miss,
        dependences: deps
            .pairs
            .iter()
            .filter(|d| d.kind != DepKind::None)
            .cloned()
            .collect(),
        min_occupancy_pct: opts.min_occupancy_pct,
        decisions,
        recompute_measured: measured.iter().filter(|x| x.recomputed).cloned().collect(),
    })
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

impl crate::util::HasFix for PlanError {
    fn message(&self) -> String {
        match self {
            Self::Deps(e) => crate::util::HasFix::message(e),
            Self::Empty(a0) => format!("pipeline `{a0}` has no steps"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::Deps(e) => crate::util::HasFix::fix(e),
            Self::Empty(_) => "add at least one step to `steps`".to_string(),
        }
    }

    fn problem(&self) -> crate::util::Problem {
        match self {
            Self::Deps(e) => crate::util::HasFix::problem(e),
            _ => crate::util::Problem::located(self.message(), self.fix()),
        }
    }
}

crate::util::problem::into_problem!(PlanError);
