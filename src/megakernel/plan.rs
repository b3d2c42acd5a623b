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

/// How fusion is decided (`--decide`, spelled the same by every command that takes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decide {
    /// The cost model (`super::cost`), or a decision an earlier `measure` recorded in the
    /// plan cache for this pipeline, device and sync form: never a form predicted (or
    /// measured) slower than separate launches.
    #[default]
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
            Decide::Measure => Decide::Model,
            d => d,
        }
    }

    /// The `--decide` spelling.
    pub fn name(self) -> &'static str {
        match self {
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
                "use `model` (the default), `fuse`, `measure` or `recompute`",
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

/// Per-step resources.
#[derive(Debug, Clone, Copy)]
struct StepRes {
    wg: [u32; 3],
    grid: [u32; 3],
    threads: u32,
    regs: u32,
    smem: u64,
    grid_barrier: bool,
    /// Uses `shuffle`, `subgroup_reduce` or `ballot` (see `mixed::subgroup_exact`).
    subgroup_ops: bool,
    /// What sharing a block side by side takes (`mixed::packing_needs`).
    pack: super::mixed::PackNeeds,
    /// Statements and expression nodes of the step's Program.
    nodes: usize,
}

/// Statements and expression nodes of `p`.
fn program_nodes(p: &crate::ir::Program) -> usize {
    let mut n = 0usize;
    p.walk_stmts(&mut |_| n += 1);
    p.walk_exprs(&mut |_| n += 1);
    n
}

/// The fused resources of a set of steps.
#[derive(Debug, Clone)]
struct Fused {
    regs: u32,
    smem: u64,
    blocks_per_sm: u32,
    occupancy_pct: f64,
    why_not: Option<String>,
}

/// The resources of the steps `run` fused into one block: a step that can pack holds one
/// copy of its workgroup buffers per sub-task (`fuse::pack`). Counted for every step that
/// may pack, an upper bound (a step can still mask for its group's sake), so a persistent
/// grid never counts on more resident blocks than fit.
fn fused_parts(res: &[StepRes], run: &[usize]) -> Vec<StepRes> {
    let block = super::mixed::block_size(run.iter().map(|&s| res[s].wg));
    run.iter()
        .map(|&s| StepRes {
            smem: res[s]
                .smem
                .saturating_mul(u64::from(res[s].pack.copies(res[s].wg[0], block[0]))),
            ..res[s]
        })
        .collect()
}

fn fused(caps: &DeviceCaps, steps: &[StepRes]) -> Fused {
    let mut agg = Agg::default();
    for s in steps {
        agg.add(0, s);
    }
    fused_agg(caps, &agg)
}

/// What the fused resources and the size check of a group depend on, kept up to date as
/// steps join, so that asking whether one more step may join costs the same for the
/// 10,000th step as for the second (recomputed over the group, planning a long chain was
/// quadratic in steps).
#[derive(Debug, Clone, Default)]
struct Agg {
    /// Steps added.
    steps: usize,
    /// Their Programs' nodes.
    nodes: usize,
    regs: Option<u32>,
    smem: u64,
    threads: Option<u32>,
    /// The first step of each distinct (workgroup size, subgroup ops), in order: the size
    /// check gives the same answer on them as on every step.
    sizes: Vec<(usize, [u32; 3], bool)>,
    /// The first step with a grid barrier of its own.
    grid_barrier: Option<usize>,
}

impl Agg {
    fn add(&mut self, k: usize, s: &StepRes) {
        self.steps += 1;
        self.nodes = self.nodes.saturating_add(s.nodes);
        self.regs = Some(self.regs.map_or(s.regs, |r| r.max(s.regs)));
        self.smem = self.smem.saturating_add(s.smem);
        self.threads = Some(self.threads.map_or(s.threads, |t| t.max(s.threads)));
        if !self
            .sizes
            .iter()
            .any(|&(_, w, sub)| w == s.wg && sub == s.subgroup_ops)
        {
            self.sizes.push((k, s.wg, s.subgroup_ops));
        }
        if s.grid_barrier && self.grid_barrier.is_none() {
            self.grid_barrier = Some(k);
        }
    }
}

fn fused_agg(caps: &DeviceCaps, agg: &Agg) -> Fused {
    let regs = agg.regs.unwrap_or(DEFAULT_REGISTERS);
    let smem = agg.smem;
    // Mixed workgroup sizes run as blocks of the largest.
    let threads = agg.threads.unwrap_or(1);
    let res = KernelResources {
        regs_per_thread: regs,
        ..KernelResources::default()
    };
    // The steps' workgroup buffers become one dynamic allocation of the fused kernel, which
    // may use the opt-in limit.
    let dynamic = u32::try_from(smem).unwrap_or(u32::MAX);
    let e = estimate(caps, &res, threads, dynamic);
    Fused {
        regs,
        smem,
        blocks_per_sm: e.blocks_per_sm,
        occupancy_pct: e.occupancy_pct,
        why_not: e.launchable.err().map(|u| u.to_string()),
    }
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
            Err(reason) => {
                fusion_breaks.push(FusionBreak { step: s, reason });
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
        let found = measured.iter().find(|x| x.steps == *m).map(|x| &x.forms);
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
        groups = recompute_chains(&ctx, pipeline, shapes, &deps, groups, &decisions)?;
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
    })
}

/// Runs chains of window steps recomputed where the model (or `--decide recompute`) says so
/// (`super::halo::choose`); every other group stays as planned.
fn recompute_chains(
    ctx: &DecideCtx,
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    deps: &DepTable,
    groups: Vec<Group>,
    decisions: &[Decision],
) -> Result<Vec<Group>, PlanError> {
    let single = |s: usize| {
        let mut g = build_group(ctx.caps, deps, ctx.res, &[s]);
        g.dataflow = group_sync(pipeline, shapes, deps, ctx.caps, &g, &[1]).unwrap_or_default();
        set_layouts(&mut g, ctx.res, ctx.opts.sync);
        g
    };
    // A group's predicted time as planned: one step alone, or its share of the decision
    // that chose it.
    let group_us = |g: &Group| -> f64 {
        if let [s] = g.steps.as_slice() {
            return ctx.separate_us(*s);
        }
        decisions
            .iter()
            .find(|d| d.chosen.contains(&g.steps))
            .map(|d| d.chosen_us * g.steps.len() as f64 / d.steps.len().max(1) as f64)
            .unwrap_or_else(|| g.steps.iter().map(|&s| ctx.separate_us(s)).sum())
    };
    Ok(super::halo::choose(
        &super::halo::choose::ChooseCtx {
            pipeline,
            shapes,
            caps: ctx.caps,
            model: ctx.model,
            force: ctx.opts.decide == Decide::Recompute,
            group_us: &group_us,
            single: &single,
        },
        groups,
    ))
}

/// Fills `g.step_layouts` for the sync form `sync`: what fused emission builds from
/// `g.spec_for(sync)` (`super::fuse`).
fn set_layouts(g: &mut Group, res: &[StepRes], sync: SyncMode) {
    let spec = g.spec_for(sync);
    let grid_after: Vec<bool> = spec
        .separations
        .iter()
        .map(|s| s.kind == DepKind::Grid)
        .collect();
    g.step_layouts = layouts_of(res, &g.steps, &grid_after, spec.dataflow.is_some());
}

/// How many workgroups of each step of `run` the dataflow form packs into one block (it
/// maps each size one way for the whole group, so no grid barrier matters).
fn dataflow_packs(res: &[StepRes], run: &[usize]) -> Vec<u32> {
    layouts_of(res, run, &[], true)
        .iter()
        .map(super::mixed::StepLayout::tasks)
        .collect()
}

/// [`super::mixed::step_layouts`] of the steps `run` (`grid_after[i]`: a grid barrier
/// after position `i`).
fn layouts_of(
    res: &[StepRes],
    run: &[usize],
    grid_after: &[bool],
    dataflow: bool,
) -> Vec<super::mixed::StepLayout> {
    let needs: Vec<_> = run
        .iter()
        .map(|&s| {
            let wgs = res[s].grid.iter().map(|&g| u64::from(g)).product();
            (res[s].wg, res[s].pack, wgs)
        })
        .collect();
    let obstacles = super::mixed::group_obstacles(&needs, dataflow);
    let steps: Vec<(usize, [u32; 3], Option<&str>)> = run
        .iter()
        .zip(&obstacles)
        .map(|(&s, o)| (s, res[s].wg, o.as_deref()))
        .collect();
    super::mixed::step_layouts(&steps, grid_after, dataflow)
}

/// The fusion break recorded where a decision splits a run of steps.
fn split_reason(d: &Decision) -> String {
    match (&d.source, &d.measured) {
        (DecisionSource::Measured, Some(m)) => format!(
            "measured on the GPU: fused {:.4} ms against {:.4} ms separate (run --decide measure)",
            m.fused_ms, m.separate_ms
        ),
        _ => format!(
            "cost model: fusing is predicted slower ({:.1} us fused, {:.1} us separate, {:.1} us as planned)",
            d.fused_us, d.separate_us, d.chosen_us
        ),
    }
}

/// The boundaries of a run of steps being decided, from the whole run's group.
#[derive(Default)]
struct Boundaries {
    /// Cost of the separation after each step (us).
    cost: std::collections::HashMap<usize, f64>,
    /// Steps followed by a grid barrier.
    grid: std::collections::HashSet<usize>,
    /// The whole run runs the dataflow sync form (one mapping per workgroup size over it).
    dataflow: bool,
}

/// What deciding a run of steps needs.
struct DecideCtx<'a> {
    caps: &'a DeviceCaps,
    opts: &'a PlanOptions,
    res: &'a [StepRes],
    work: &'a [StepWork],
    model: &'a CostModel,
}

impl DecideCtx<'_> {
    /// Predicted device time of step `s` launched alone (us).
    fn separate_us(&self, s: usize) -> f64 {
        let alone = fused(self.caps, &[self.res[s]]);
        let resident = u64::from(alone.blocks_per_sm) * u64::from(self.caps.sm_count);
        self.model.launch_us
            + self
                .model
                .work_us(&self.work[s], resident, alone.occupancy_pct)
    }

    /// Predicted device time of `run` (consecutive steps of `whole`) as one kernel, with
    /// `whole`'s separations between its steps (the strongest any part of it needs: a part
    /// never needs more than the whole run did) (us). A packed step runs `P` workgroups per
    /// resident block on all the block's threads; a masked one, one workgroup on a share of
    /// them.
    fn fused_us(&self, run: &[usize], boundary: &Boundaries) -> f64 {
        if let [s] = run {
            return self.separate_us(*s);
        }
        let parts = fused_parts(self.res, run);
        let f = fused(self.caps, &parts);
        let block = parts.iter().map(|p| p.threads).max().unwrap_or(1).max(1);
        let resident = u64::from(f.blocks_per_sm) * u64::from(self.caps.sm_count);
        let grid_after: Vec<bool> = run.iter().map(|s| boundary.grid.contains(s)).collect();
        let layouts = layouts_of(self.res, run, &grid_after, boundary.dataflow);
        let mut t = self.model.launch_us;
        for (k, &s) in run.iter().enumerate() {
            let tasks = layouts.get(k).map_or(1, |l| l.tasks());
            let busy = (u64::from(self.res[s].threads) * u64::from(tasks)).min(u64::from(block));
            let active = f.occupancy_pct * busy as f64 / f64::from(block);
            let in_flight = resident.saturating_mul(u64::from(tasks));
            t += self.model.work_us(&self.work[s], in_flight, active);
            // The margin fusion must beat (cost module docs): a share of the loop time.
            t += FUSED_WORK_MARGIN * self.model.loop_us(&self.work[s], active);
            t += self.model.fused_atomic_us(&self.work[s]);
            if k + 1 < run.len() {
                t += boundary.cost.get(&s).copied().unwrap_or(0.0);
            }
        }
        t
    }

    /// Fuse, split or separate the run `m` (a legal group, built as `whole`): the cheapest
    /// partition into consecutive groups by the model (or by `measured` timings; or one group
    /// under `--decide fuse`).
    fn decide(&self, m: &[usize], whole: &Group, measured: Option<&MeasuredForms>) -> Decision {
        let sync = self.opts.sync;
        let mut boundary = Boundaries {
            dataflow: sync == SyncMode::Dataflow && whole.runs_dataflow(),
            ..Boundaries::default()
        };
        let blocks = f64::from(whole.dataflow.blocks.max(1));
        // A packed consumer's sub-tasks wait once per block trip, together.
        let packed: std::collections::HashMap<usize, u32> = whole
            .steps
            .iter()
            .zip(&whole.step_layouts)
            .map(|(&s, l)| (s, l.tasks()))
            .collect();
        for (w, b) in whole.barriers.iter().enumerate() {
            let cost = match (sync, whole.dataflow.boundaries.get(w)) {
                // Each kept wait, paid by every consumer task (trip, when packed): a block
                // runs `waves` of them.
                (SyncMode::Dataflow, Some(d)) if b.kind == super::DepKind::Grid => {
                    let waves = d
                        .waits
                        .iter()
                        .map(|t| {
                            let lanes = blocks * f64::from(packed.get(&t.to).copied().unwrap_or(1));
                            (self.work[t.to].workgroups as f64 / lanes).ceil()
                        })
                        .fold(1.0, f64::max);
                    self.model.dataflow_us(d, waves)
                }
                (_, d) => self.model.boundary_us(
                    sync,
                    b.kind,
                    d.map_or(super::tiles::SyncLabel::AllToAll, |d| d.label),
                ),
            };
            boundary.cost.insert(b.after_step, cost);
            if b.kind == DepKind::Grid {
                boundary.grid.insert(b.after_step);
            }
        }
        let n = m.len();
        // best[i]: cheapest partition of m[..i]; ties keep the fewer, longer groups.
        let mut best: Vec<(f64, Vec<Vec<usize>>)> = vec![(0.0, Vec::new())];
        for i in 1..=n {
            let mut pick: Option<(f64, Vec<Vec<usize>>)> = None;
            for j in 0..i {
                let t = best[j].0 + self.fused_us(&m[j..i], &boundary);
                if pick.as_ref().is_none_or(|p| t < p.0) {
                    let mut parts = best[j].1.clone();
                    parts.push(m[j..i].to_vec());
                    pick = Some((t, parts));
                }
            }
            best.push(pick.unwrap_or_default());
        }
        let fused_us = self.fused_us(m, &boundary);
        let separate_us: f64 = m.iter().map(|&s| self.separate_us(s)).sum();
        let (_, model_parts) = best.pop().unwrap_or_default();
        let singles: Vec<Vec<usize>> = m.iter().map(|&s| vec![s]).collect();
        let (chosen, source) = match (measured, self.opts.decide) {
            (Some(x), _) => {
                let mut options = vec![(x.fused_ms, vec![m.to_vec()]), (x.separate_ms, singles)];
                if let Some(t) = x.model_ms {
                    options.push((t, model_parts));
                }
                let fastest = options
                    .into_iter()
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|o| o.1)
                    .unwrap_or_else(|| vec![m.to_vec()]);
                (fastest, DecisionSource::Measured)
            }
            (None, Decide::Fuse) => (vec![m.to_vec()], DecisionSource::Forced),
            (None, Decide::Model | Decide::Measure | Decide::Recompute) => {
                (model_parts, DecisionSource::Model)
            }
        };
        let chosen_us = chosen.iter().map(|r| self.fused_us(r, &boundary)).sum();
        Decision {
            steps: m.to_vec(),
            chosen,
            fused_us,
            separate_us,
            chosen_us,
            source,
            measured: measured.cloned(),
        }
    }
}

/// Whether step `s` may join the group `group` (its steps and their [`Agg`]); the reason
/// when not.
fn can_join(
    caps: &DeviceCaps,
    opts: &PlanOptions,
    deps: &DepTable,
    res: &[StepRes],
    (group, agg): (&[usize], &Agg),
    s: usize,
) -> Result<(), String> {
    let me = res[s];
    if me.grid_barrier {
        return Err(format!(
            "step {s} has its own grid barrier, so it stays its own cooperative launch"
        ));
    }
    if let Some(g) = agg.grid_barrier {
        return Err(format!(
            "step {g} has its own grid barrier, so it stays its own cooperative launch"
        ));
    }
    if agg.steps >= MAX_GROUP_STEPS {
        return Err(format!(
            "the group has {} steps, the most one fused kernel takes (larger kernels need gigabytes of memory in ptxas)",
            agg.steps
        ));
    }
    if agg.nodes.saturating_add(me.nodes) > MAX_GROUP_NODES {
        return Err(format!(
            "the fused kernel would hold {} IR nodes (the group's {} + step {s}'s {}), more than the {MAX_GROUP_NODES} one fused kernel takes",
            agg.nodes.saturating_add(me.nodes),
            agg.nodes,
            me.nodes
        ));
    }
    let mut with = agg.clone();
    with.add(s, &me);
    super::mixed::check_sizes(&with.sizes)?;
    let together = fused_agg(caps, &with);
    let max_smem = u64::from(caps.smem_per_block_optin.max(caps.smem_per_block));
    if together.smem > max_smem {
        return Err(format!(
            "shared memory of the fused kernel ({} B: the group's {} B + step {s}'s {} B) exceeds the {max_smem} B per block of {}",
            together.smem,
            together.smem - me.smem,
            me.smem,
            caps.name
        ));
    }
    if let Some(why) = together.why_not {
        return Err(format!(
            "the fused kernel could not launch: {}",
            why.lines().next().unwrap_or("")
        ));
    }
    let before = fused_agg(caps, agg);
    let alone = fused(caps, &[me]);
    let floor = opts.min_occupancy_pct;
    let dragged = before.occupancy_pct >= floor || alone.occupancy_pct >= floor;
    if together.occupancy_pct < floor && dragged {
        return Err(format!(
            "fusing would cut occupancy to {:.1}% ({} registers, {} B shared: {} blocks/SM), below {:.1}% (group alone {:.1}%, step {s} alone {:.1}%)",
            together.occupancy_pct,
            together.regs,
            together.smem,
            together.blocks_per_sm,
            opts.min_occupancy_pct,
            before.occupancy_pct,
            alone.occupancy_pct
        ));
    }
    // Only a device without cooperative launch cares, and building the group is linear in
    // it: asking on every device made planning a long chain cubic.
    if !caps.cooperative_launch && needs_grid_barrier(caps, deps, res, group, s) {
        return Err(format!(
            "step {s} needs a grid barrier and {} has no cooperative launch",
            caps.name
        ));
    }
    Ok(())
}

/// Waves, barriers and resources of one group (`m`: its steps in pipeline order, which is
/// also the execution order: fused emission takes a group's steps in increasing order).
///
/// Walking the steps in order, the separation before step `j` is the weakest that orders
/// every dependence on it: a grid barrier when it depends by `grid` on a step since the last
/// grid barrier, else a workgroup barrier when it depends by `workgroup` on a step since the
/// last barrier, else a new wave without barrier when it depends at all on a step of the
/// current wave. Placing each barrier as late as possible makes the count minimal for this
/// order (interval stabbing by right end). Fused emission only accepts a workgroup barrier
/// between steps of equal grids, so one between steps of different grids becomes a grid
/// barrier.
fn build_group(caps: &DeviceCaps, deps: &DepTable, res: &[StepRes], m: &[usize]) -> Group {
    let mut waves: Vec<Vec<usize>> = vec![vec![m[0]]];
    let mut barriers = Vec::new();
    let incoming = incoming(deps, m);
    // Index into `m` where the current grid segment / barrier region / wave starts.
    let (mut seg, mut region, mut wave) = (0usize, 0usize, 0usize);
    for j in 1..m.len() {
        let b = m[j];
        let into: &[&Dependence] = incoming.get(&b).map_or(&[], Vec::as_slice);
        let find = |from: usize, kind: DepKind| first_from(into, m[from], |k| k == kind);
        let any_in_wave = first_from(into, m[wave], |k| k != DepKind::None);
        let prev = m[j - 1];
        let (kind, reason) = if let Some(d) = find(seg, DepKind::Grid) {
            (DepKind::Grid, explain(Some(d)))
        } else if let Some(d) = find(region, DepKind::Workgroup) {
            if res[prev].grid == res[b].grid && res[prev].wg == res[b].wg {
                (DepKind::Workgroup, explain(Some(d)))
            } else {
                (
                    DepKind::Grid,
                    format!(
                        "{} (a workgroup barrier, but between steps {prev} and {b} of different grids or workgroup sizes, which fused emission separates by a grid barrier)",
                        explain(Some(d))
                    ),
                )
            }
        } else if let Some(d) = any_in_wave {
            (DepKind::Invocation, explain(Some(d)))
        } else {
            if let Some(w) = waves.last_mut() {
                w.push(b);
            }
            continue;
        };
        match kind {
            DepKind::Grid => (seg, region) = (j, j),
            DepKind::Workgroup => region = j,
            _ => {}
        }
        wave = j;
        barriers.push(Separation {
            after_step: prev,
            kind,
            reason,
        });
        waves.push(vec![b]);
    }

    let parts = fused_parts(res, m);
    let f = fused(caps, &parts);
    let has_grid = barriers.iter().any(|b| b.kind == DepKind::Grid);
    Group {
        kind: if has_grid {
            GroupKind::Megakernel
        } else {
            GroupKind::Launch
        },
        steps: m.to_vec(),
        waves,
        barriers,
        workgroup_size: super::mixed::block_size(parts.iter().map(|p| p.wg)),
        step_grids: parts.iter().map(|p| p.grid).collect(),
        step_workgroup_sizes: parts.iter().map(|p| p.wg).collect(),
        step_layouts: Vec::new(),
        registers: f.regs,
        registers_source: None,
        shared_bytes: f.smem,
        coresident_blocks: f.blocks_per_sm.saturating_mul(caps.sm_count),
        occupancy_pct: f.occupancy_pct,
        dataflow: GroupSync::default(),
        halo: None,
    }
}

/// Whether the group `group` with step `s` added needs a grid barrier.
fn needs_grid_barrier(
    caps: &DeviceCaps,
    deps: &DepTable,
    res: &[StepRes],
    group: &[usize],
    s: usize,
) -> bool {
    let mut with = group.to_vec();
    with.push(s);
    build_group(caps, deps, res, &with).grid_barriers() > 0
}

/// The dependences of each step of `m` (steps in increasing order) on earlier steps of `m`,
/// by the later step, each list in increasing `from`: what a group's waves are built from,
/// without asking the table about every pair of the group.
fn incoming<'d>(
    deps: &'d DepTable,
    m: &[usize],
) -> std::collections::HashMap<usize, Vec<&'d Dependence>> {
    let members: std::collections::HashSet<usize> = m.iter().copied().collect();
    let mut by_to: std::collections::HashMap<usize, Vec<&Dependence>> =
        std::collections::HashMap::new();
    // The table is ordered by (from, to), so each list comes out ordered by `from`, and the
    // pairs from the group's steps are one slice of it (groups are runs of steps).
    let (Some(&lo), Some(&hi)) = (m.iter().min(), m.iter().max()) else {
        return by_to;
    };
    let start = deps.pairs.partition_point(|d| d.from < lo);
    let end = deps.pairs.partition_point(|d| d.from <= hi);
    for d in deps.pairs.get(start..end).unwrap_or(&[]) {
        if d.kind != DepKind::None && members.contains(&d.from) && members.contains(&d.to) {
            by_to.entry(d.to).or_default().push(d);
        }
    }
    by_to
}

/// The dependence of smallest `from` at or after step `start` whose kind `ok` accepts.
fn first_from<'d>(
    into: &[&'d Dependence],
    start: usize,
    ok: impl Fn(DepKind) -> bool,
) -> Option<&'d Dependence> {
    into.iter().find(|d| d.from >= start && ok(d.kind)).copied()
}

fn explain(d: Option<&Dependence>) -> String {
    match d {
        Some(d) => format!("step {} after step {}: {}", d.to, d.from, d.reason),
        None => "ordering across waves".to_string(),
    }
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
