//! One compiled pipeline: the plan, and per group the resolved spec and the fused kernel,
//! made once from (pipeline, shapes, device, sync form, plan cache) and consumed by every
//! front end: `plan`, `emit`, `sass` and `occupancy` on a pipeline, `run` in every form,
//! `--timeline`, `selftest`, the pipeline fuzzer and the inspector.
//!
//! Why one place: each front end used to plan and fuse on its own, and the copies drifted (a
//! timeline recorded another kernel than the run launched, because only one copy applied the
//! residency fallback). Nothing outside this module calls [`super::fuse_group`] or
//! [`super::cache::plan_cached`] (`tests/suite/layers.rs` checks it), so a planner change is
//! made once.
//!
//! Fitting to a live device ([`CompiledPipeline::fit`]) asks a [`Residency`] (the runtime, on
//! the layer above) how many blocks of each persistent kernel the driver keeps resident, and
//! re-fuses the group where the answer differs from the plan's estimate: a smaller grid, or
//! the kernel without loads issued ahead of its waits where those cost residency. What a run
//! launches and what its timeline records are then both read from the fitted groups.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::cache::{plan_cached, plan_key, Cached, PlanCache};
use super::cost::MeasuredForms;
use super::fuse::{fuse_group, FuseError, FusedKernel};
use super::launch::{separate_launches, PipelineLaunch};
use super::plan::{
    plan_measured, Decide, Group, Measurement, Plan, PlanError, PlanOptions, SyncMode,
};
use super::FusedGroupSpec;
use crate::emit::{emit_valid, EmitOptions, EmittedKernel};
use crate::inputs::LaunchShape;
use crate::ir::Pipeline;
use crate::util::Problem;

/// One group of a compiled pipeline.
#[derive(Debug, Clone)]
pub struct CompiledGroup {
    /// The plan's group.
    pub group: Group,
    /// The spec the kernel was fused from: the group under the sync form, with the persistent
    /// grid and prefetch choice of the last [`CompiledPipeline::fit`].
    pub spec: FusedGroupSpec,
    /// The fused kernel, or why the group cannot be fused.
    pub kernel: Result<FusedKernel, FuseError>,
}

/// What the persistent grid of a cooperative group became on a live GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Group index in the plan.
    pub group: usize,
    /// Co-resident blocks from the occupancy estimator (the plan's).
    pub estimated_blocks: u32,
    /// Co-resident blocks the driver reports for the fused kernel.
    pub driver_blocks: u32,
    /// The persistent grid used: the smaller of the two, or the fastest measured.
    pub used_blocks: u32,
    /// With `--topology measure`: (blocks, median ms of the group alone) per choice tried.
    pub measured_ms: Vec<(u32, f64)>,
    /// True when the kernel launched keeps every load in its task (no loads issued ahead of
    /// a dataflow wait), because the prefetching kernel kept fewer blocks resident.
    #[serde(default)]
    pub no_prefetch: bool,
}

/// What fitting a compiled pipeline to a GPU asks of the device (the runtime implements it).
pub trait Residency {
    /// Blocks of `kernel` (at its own workgroup size) the driver keeps resident at once.
    fn resident_blocks(&mut self, kernel: &FusedKernel) -> Result<u32, Problem>;
    /// Median device time (ms) of `launches` run in order on their own, for `--topology
    /// measure` (one persistent kernel) and `--decide measure` (a run of steps in each form).
    fn time_launches(&mut self, launches: &[PipelineLaunch]) -> Result<f64, Problem>;
    /// Streaming multiprocessors of the device.
    fn sm_count(&self) -> u32;
}

/// A pipeline planned and fused for one device and sync form.
#[derive(Debug, Clone)]
pub struct CompiledPipeline {
    /// The pipeline.
    pub pipeline: Arc<Pipeline>,
    /// Every step's launch shape.
    pub shapes: Vec<LaunchShape>,
    /// The plan and its cache outcome (`plan.cache`, a warning to show, evictions).
    pub planned: Cached,
    /// How persistent groups separate cross-workgroup dependences.
    pub sync: SyncMode,
    /// One entry per plan group, in plan order.
    pub groups: Vec<CompiledGroup>,
    /// Per cooperative group, what [`CompiledPipeline::fit`] chose (empty before a fit).
    pub topology: Vec<Topology>,
}

impl CompiledPipeline {
    /// Plans `pipeline` (through `cache` when given) and fuses every group under `sync`. A
    /// group that cannot be fused keeps its error ([`CompiledGroup::kernel`]): `plan` shows
    /// it, a run refuses it ([`CompiledPipeline::fused_launches`]).
    pub fn compile(
        pipeline: Arc<Pipeline>,
        shapes: Vec<LaunchShape>,
        opts: &PlanOptions,
        sync: SyncMode,
        cache: Option<&PlanCache>,
    ) -> Result<CompiledPipeline, PlanError> {
        // The plan's fusion decisions depend on what a boundary costs in this sync form.
        let opts = &PlanOptions {
            sync,
            ..opts.clone()
        };
        let planned = plan_cached(&pipeline, &shapes, opts, cache)?;
        Ok(CompiledPipeline::with_plan(pipeline, shapes, planned, sync))
    }

    /// Fuses every group of an existing plan under `sync` (see [`CompiledPipeline::compile`]).
    pub fn with_plan(
        pipeline: Arc<Pipeline>,
        shapes: Vec<LaunchShape>,
        planned: Cached,
        sync: SyncMode,
    ) -> CompiledPipeline {
        let groups = planned
            .plan
            .groups
            .iter()
            .map(|g| {
                let spec = g.spec_for(sync);
                CompiledGroup {
                    kernel: fuse_group(&pipeline, &shapes, &spec),
                    group: g.clone(),
                    spec,
                }
            })
            .collect();
        CompiledPipeline {
            pipeline,
            shapes,
            planned,
            sync,
            groups,
            topology: Vec::new(),
        }
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.planned.plan
    }

    /// Index of the group that runs `step`.
    pub fn group_of_step(&self, step: usize) -> Option<usize> {
        self.groups
            .iter()
            .position(|g| g.group.steps.contains(&step))
    }

    /// One launch per step: the pipeline's meaning, and the separate form of a run.
    pub fn separate_launches(&self) -> Result<Vec<PipelineLaunch>, FuseError> {
        separate_launches(&self.pipeline, &self.shapes)
    }

    /// One launch per group, the fitted kernels; the first group that cannot be fused is the
    /// error (named by its index).
    pub fn fused_launches(&self) -> Result<Vec<PipelineLaunch>, FuseError> {
        self.groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let k = g.kernel.as_ref().map_err(|e| FuseError {
                    message: format!("group {i}: {}", e.message),
                    fix: e.fix.clone(),
                })?;
                k.launch(&self.pipeline)
            })
            .collect()
    }

    /// Group `g`'s kernel emitted with `opts` (its workgroup size is the kernel's own), the
    /// source map renamed to the steps' node ids (`steps[k].<id>`) so the PTX correlates with
    /// each step's IR; statements the fusion made up keep their fused ids.
    pub fn emit_group(&self, g: usize, opts: &EmitOptions) -> Result<EmittedKernel, Problem> {
        let group = self
            .groups
            .get(g)
            .ok_or_else(|| Problem::bug(format!("the plan has no group {g}")))?;
        let fused = group
            .kernel
            .as_ref()
            .map_err(|e| Problem::from(e.clone()))?;
        let opts = EmitOptions {
            workgroup_size: fused.program.workgroup_size,
            ..opts.clone()
        };
        let mut kernel = emit_valid(fused.info(), &opts)?;
        rename_to_steps(&mut kernel, fused, &self.pipeline);
        Ok(kernel)
    }

    /// Fits every cooperative group's persistent grid to the device: the plan's estimate
    /// capped by what the driver keeps resident; where loads issued ahead of a dataflow wait
    /// cost residency, the kernel without them when it keeps more blocks (softmax over 2^20
    /// floats: 5 blocks per SM with them, 6 without, on an H200); with `measure`, the grid
    /// chosen by timing a few blocks-per-SM choices (1, 2, 4 and the most the driver allows,
    /// the group alone): fewer blocks make each grid barrier cheaper, more hide memory
    /// latency, and which wins depends on the kernel. Re-fuses each group whose grid changed
    /// and records the choices in [`CompiledPipeline::topology`].
    pub fn fit(&mut self, device: &mut dyn Residency, measure: bool) -> Result<(), Problem> {
        self.topology.clear();
        for gi in 0..self.groups.len() {
            let Some(estimated) = self.groups[gi].spec.persistent_blocks else {
                continue;
            };
            let mut spec = self.groups[gi].spec.clone();
            let mut fused = self.groups[gi].kernel.clone()?;
            let mut driver = device.resident_blocks(&fused)?;
            if driver < estimated && spec.dataflow.is_some() && !spec.no_prefetch {
                let mut plain = spec.clone();
                plain.no_prefetch = true;
                let k = self.fuse(&plain)?;
                let fits = device.resident_blocks(&k)?;
                if fits > driver {
                    (spec, fused, driver) = (plain, k, fits);
                }
            }
            let mut used = estimated.min(driver).max(1);
            let mut measured = Vec::new();
            if measure {
                let sms = device.sm_count().max(1);
                // Up to every co-resident block, also where the estimate (a dataflow grid
                // capped by the largest step) is smaller.
                let top = self.groups[gi]
                    .group
                    .coresident_blocks
                    .min(driver)
                    .max(used);
                let mut candidates: Vec<u32> = [1, 2, 4]
                    .iter()
                    .map(|k| k * sms)
                    .filter(|&b| b < top)
                    .collect();
                candidates.push(top);
                for blocks in candidates {
                    let mut trial = spec.clone();
                    trial.persistent_blocks = Some(blocks);
                    let k = self.fuse(&trial)?;
                    // Each grid has its own kernel (task loops, prefetched loads): one the
                    // driver cannot keep resident at this size is not a candidate.
                    if device.resident_blocks(&k)? < blocks {
                        continue;
                    }
                    let ms = device.time_launches(&[k.launch(&self.pipeline)?])?;
                    measured.push((blocks, ms));
                }
                if let Some(&(best, _)) = measured.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
                    used = best;
                }
            }
            if used != estimated {
                spec.persistent_blocks = Some(used);
                fused = self.fuse(&spec)?;
                // Another grid gives other task loops (and prefetched loads), so the kernel
                // may hold more registers: shrink until the driver keeps the grid resident.
                for _ in 0..4 {
                    let fits = device.resident_blocks(&fused)?;
                    if fits >= used {
                        break;
                    }
                    used = fits.max(1);
                    spec.persistent_blocks = Some(used);
                    fused = self.fuse(&spec)?;
                }
            }
            self.topology.push(Topology {
                group: gi,
                estimated_blocks: estimated,
                driver_blocks: driver,
                used_blocks: used,
                measured_ms: measured,
                no_prefetch: spec.no_prefetch,
            });
            let g = &mut self.groups[gi];
            g.spec = spec;
            g.kernel = Ok(fused);
        }
        Ok(())
    }

    /// `run --decide measure`: times every run of steps that may legally fuse in each form on
    /// `device` (fused into one kernel, as separate launches, and as the model's split where it
    /// is neither; three interleaved rounds, the median of their medians) and replans each run
    /// with its fastest form, so a plan never keeps a form measured slower than another. The
    /// plan is stored in `cache` under the key a plain run of this pipeline, device and sync
    /// form looks up, so later runs, `plan` and the inspector use it. Fuses and fits afresh.
    pub fn decide_by_timing(
        &mut self,
        opts: &PlanOptions,
        device: &mut dyn Residency,
        cache: Option<&PlanCache>,
        measure_topology: bool,
    ) -> Result<Vec<Measurement>, Problem> {
        let opts = PlanOptions {
            sync: self.sync,
            decide: Decide::Model,
            ..opts.clone()
        };
        let fuse_all = PlanOptions {
            decide: Decide::Fuse,
            ..opts.clone()
        };
        let mut all = CompiledPipeline::compile(
            self.pipeline.clone(),
            self.shapes.clone(),
            &fuse_all,
            self.sync,
            None,
        )?;
        all.fit(device, measure_topology)?;
        let separate = self.separate_launches()?;
        let decisions = self.plan().decisions.clone();
        let mut measured = Vec::new();
        for d in &decisions {
            let Some(whole) = all.groups.iter().find(|g| g.group.steps == d.steps) else {
                continue;
            };
            let fused = vec![whole.kernel.clone()?.launch(&self.pipeline)?];
            let apart: Vec<PipelineLaunch> = d
                .steps
                .iter()
                .filter_map(|&s| separate.get(s).cloned())
                .collect();
            let split = d.chosen.len() > 1 && d.chosen.len() < d.steps.len();
            let mut model = Vec::new();
            if split {
                for g in self
                    .groups
                    .iter()
                    .filter(|g| d.chosen.contains(&g.group.steps))
                {
                    model.push(g.kernel.clone()?.launch(&self.pipeline)?);
                }
            }
            let mut forms = vec![fused.as_slice(), apart.as_slice()];
            if split {
                forms.push(model.as_slice());
            }
            let t = interleaved_medians(device, &forms)?;
            measured.push(Measurement {
                steps: d.steps.clone(),
                forms: MeasuredForms {
                    fused_ms: t[0],
                    separate_ms: t[1],
                    model_ms: t.get(2).copied(),
                },
                recomputed: false,
            });
        }
        // Recomputed passes the model chose: each timed against its steps apart, so a pass
        // that does not win keeps its chain out of recomputation.
        for g in self.groups.iter().filter(|g| g.group.halo.is_some()) {
            let pass = vec![g.kernel.clone()?.launch(&self.pipeline)?];
            let apart: Vec<PipelineLaunch> = g
                .group
                .steps
                .iter()
                .filter_map(|&s| separate.get(s).cloned())
                .collect();
            let t = interleaved_medians(device, &[&pass, &apart])?;
            measured.push(Measurement {
                steps: g.group.steps.clone(),
                forms: MeasuredForms {
                    fused_ms: t[0],
                    separate_ms: t[1],
                    model_ms: None,
                },
                recomputed: true,
            });
        }
        let plan = plan_measured(&self.pipeline, &self.shapes, &opts, &measured)?;
        let mut warning = None;
        if let Some(c) = cache {
            if let Err(w) = c.store(plan_key(&self.pipeline, &self.shapes, &opts), &plan) {
                warning = Some(w.to_string());
            }
        }
        let planned = Cached {
            plan,
            warning,
            evicted: 0,
        };
        *self = CompiledPipeline::with_plan(
            self.pipeline.clone(),
            self.shapes.clone(),
            planned,
            self.sync,
        );
        self.fit(device, measure_topology)?;
        Ok(measured)
    }

    fn fuse(&self, spec: &FusedGroupSpec) -> Result<FusedKernel, FuseError> {
        fuse_group(&self.pipeline, &self.shapes, spec)
    }
}

/// The median of `v` (NaN when empty), by the gate's quantile.
/// Each of `forms` timed on `device` in three interleaved rounds (so drift hits every form
/// alike): the median of each form's rounds, in order.
fn interleaved_medians(
    device: &mut dyn Residency,
    forms: &[&[PipelineLaunch]],
) -> Result<Vec<f64>, Problem> {
    let mut times = vec![Vec::with_capacity(3); forms.len()];
    for _ in 0..3 {
        for (t, launches) in times.iter_mut().zip(forms) {
            t.push(device.time_launches(launches)?);
        }
    }
    Ok(times.iter_mut().map(|t| median(t)).collect())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    super::gate::quantile(v, 0.5)
}

/// Renames the source map of `fused`'s emission to the steps' node ids (`steps[k].<id>`), so
/// the PTX pane and each step's IR share ids, and its statement comments to the steps' own
/// nodes and statements ([`FusedKernel::label_for_steps`]); entries of statements the fusion
/// made up keep their fused ids, which no IR line has.
pub fn rename_to_steps(kernel: &mut EmittedKernel, fused: &FusedKernel, pipeline: &Pipeline) {
    fused.label_for_steps(pipeline, kernel);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::megakernel::test_support::{copy, pipeline, shape};
    use crate::occupancy::profiles;

    const GID: &str = r#"{"gid": "x"}"#;

    fn two_steps() -> (Arc<Pipeline>, Vec<LaunchShape>) {
        let p = pipeline(vec![
            (
                copy("a", [256, 1, 1], GID, GID),
                &[("src", "x"), ("dst", "y")],
            ),
            (
                copy("b", [256, 1, 1], r#"{"add": [{"gid": "x"}, 3]}"#, GID),
                &[("src", "y"), ("dst", "z")],
            ),
        ]);
        let s = shape([256, 1, 1], [16, 1, 1]);
        (Arc::new(p), vec![s, s])
    }

    /// A device that keeps `blocks` resident for every kernel and never times anything.
    struct Fixed(u32);
    impl Residency for Fixed {
        fn resident_blocks(&mut self, _: &FusedKernel) -> Result<u32, Problem> {
            Ok(self.0)
        }
        fn time_launches(&mut self, _: &[PipelineLaunch]) -> Result<f64, Problem> {
            Err(Problem::bug("not timed"))
        }
        fn sm_count(&self) -> u32 {
            4
        }
    }

    #[test]
    fn compile_fuses_every_group_and_launches_match_the_groups() {
        let (p, s) = two_steps();
        let opts = PlanOptions::new(profiles::load("h200").unwrap());
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            let c = CompiledPipeline::compile(p.clone(), s.clone(), &opts, sync, None).unwrap();
            assert_eq!(c.groups.len(), c.plan().groups.len());
            let launches = c.fused_launches().unwrap();
            assert_eq!(launches.len(), c.groups.len());
            for (g, l) in c.groups.iter().zip(&launches) {
                let k = g.kernel.as_ref().unwrap();
                assert_eq!(k.program.fingerprint(), l.program.fingerprint());
            }
            assert_eq!(c.separate_launches().unwrap().len(), 2);
            assert_eq!(c.group_of_step(1), Some(c.groups.len() - 1));
        }
    }

    #[test]
    fn fit_shrinks_a_persistent_grid_to_what_the_device_keeps_resident() {
        let (p, s) = two_steps();
        // Fused as far as legal: the model runs the neighbour read as a recomputed pass.
        let opts = PlanOptions {
            decide: Decide::Fuse,
            ..PlanOptions::new(profiles::load("h200").unwrap())
        };
        let mut c = CompiledPipeline::compile(p, s, &opts, SyncMode::Barrier, None).unwrap();
        let persistent: Vec<usize> = (0..c.groups.len())
            .filter(|&g| c.groups[g].spec.persistent_blocks.is_some())
            .collect();
        assert!(
            !persistent.is_empty(),
            "a neighbour read needs a grid barrier"
        );
        c.fit(&mut Fixed(3), false).unwrap();
        assert_eq!(c.topology.len(), persistent.len());
        for t in &c.topology {
            assert_eq!(t.used_blocks, t.estimated_blocks.min(3));
            let g = &c.groups[t.group];
            assert_eq!(g.spec.persistent_blocks, Some(t.used_blocks));
            assert_eq!(g.kernel.as_ref().unwrap().shape.grid[0], t.used_blocks);
        }
    }
}
