//! A compiled pipeline's figures without a GPU: every group's fused kernel emitted and
//! assembled (`ptxas -v`, else the PTX estimate, labelled; `--regs` when given), and every
//! persistent grid fitted to what that register figure keeps resident.
//!
//! The planner decides fusion with an assumed register count per step (`DEFAULT_REGISTERS`
//! unless `--regs`), because assembling every candidate group would make planning cost a
//! ptxas call per step tried. Its figures are a model: a fused kernel that holds 35
//! registers keeps 6 blocks per SM resident on an H100 where 32 registers keep 8, and a
//! persistent grid sized for 8 would wait forever on blocks that never start. A GPU run fits
//! the grid to the driver's answer (`CompiledPipeline::fit`); this does the same offline with
//! the occupancy estimator standing in for the driver, and writes the kernel's own figures
//! into the plan so that `plan`, the inspector's Plan tab and `occupancy` report one register
//! figure and a grid that fits it.

use crate::emit::{emit_valid, EmitOptions};
use crate::harness::offline::{kernel_resources, ResourceSource};
use crate::megakernel::compiled::{CompiledPipeline, Residency};
use crate::megakernel::fuse::FusedKernel;
use crate::megakernel::launch::PipelineLaunch;
use crate::megakernel::plan::{GroupKind, SyncMode};
use crate::occupancy::{estimate, DeviceCaps, Estimate, KernelResources};
use crate::util::Problem;

/// Past this many groups the plan keeps the planner's assumed figures: assembling each
/// kernel costs a ptxas run (tens of milliseconds), and a pipeline that splits into this
/// many launches is planned for its structure, not its occupancy.
pub const MAX_FITTED_GROUPS: usize = 64;

/// What fitting did, for the reports that print it.
#[derive(Debug, Clone, PartialEq)]
pub struct OfflineFit {
    /// One line on where the register figures come from (`each group's kernel: ptxas -v for
    /// sm_90`), or why the planner's assumption was kept.
    pub note: String,
    /// True when at least one group's registers are the PTX estimate (no ptxas).
    pub estimated: bool,
}

/// The occupancy estimator standing in for the driver's residency query.
struct Offline<'a> {
    caps: &'a DeviceCaps,
    sm: u32,
    /// `--regs` for the group being fitted (the largest of its steps'), when given.
    regs: Option<u32>,
}

impl Offline<'_> {
    /// The kernel's resources (emitted as the runtime JITs it) and their estimate.
    fn assess(
        &self,
        k: &FusedKernel,
    ) -> Result<(KernelResources, ResourceSource, Estimate), Problem> {
        let wg = k.shape.workgroup_size;
        let opts = EmitOptions {
            sm: self.sm,
            workgroup_size: wg,
            lineinfo: false,
            unroll: true,
            grid_barrier: Default::default(),
            version_bounds: false,
        };
        let kernel = emit_valid(k.info(), &opts)?;
        let (res, source) = kernel_resources(&kernel, self.sm, self.regs)?;
        let threads = wg[0].saturating_mul(wg[1]).saturating_mul(wg[2]);
        // Workgroup buffers are static shared memory in a fused kernel; the runtime asks
        // the driver with no dynamic shared memory, and so does this.
        let e = estimate(self.caps, &res, threads, 0);
        Ok((res, source, e))
    }
}

impl Residency for Offline<'_> {
    fn resident_blocks(&mut self, k: &FusedKernel) -> Result<u32, Problem> {
        let (_, _, e) = self.assess(k)?;
        Ok(e.blocks_per_sm.saturating_mul(self.caps.sm_count))
    }

    fn time_launches(&mut self, _: &[PipelineLaunch]) -> Result<f64, Problem> {
        Err(Problem::new(
            "measuring fused forms needs a GPU: an offline fit has only the estimate",
            "run `vyrescope run PIPELINE --backend cuda --decide measure` on a GPU machine",
        ))
    }

    fn sm_count(&self) -> u32 {
        self.caps.sm_count
    }
}

/// Fits `c` (compiled for `caps`, emitted for `sm`) without a GPU and writes each group's
/// kernel figures into its plan: registers (with their source), shared memory, co-resident blocks,
/// occupancy and, for persistent groups, the grid the kernel keeps resident. `regs`: per
/// step, `--regs` (a group takes the largest of its steps'; a group with a step not given
/// is assembled). A group whose kernel cannot be fused or assembled keeps the planner's
/// figures.
pub fn fit_offline(
    c: &mut CompiledPipeline,
    caps: &DeviceCaps,
    sm: u32,
    regs: &[Option<u32>],
) -> Result<OfflineFit, Problem> {
    let groups = c.groups.len();
    if groups > MAX_FITTED_GROUPS {
        return Ok(OfflineFit {
            note: format!(
                "registers assumed by the planner: {groups} kernels, more than the {MAX_FITTED_GROUPS} assembled for a plan"
            ),
            estimated: false,
        });
    }
    let group_regs = |steps: &[usize]| -> Option<u32> {
        steps
            .iter()
            .map(|&s| regs.get(s).copied().flatten())
            .try_fold(0u32, |m, r| r.map(|r| m.max(r)))
    };
    // Fit the persistent grids one group at a time, each with its own `--regs`.
    let mut fitted = c.clone();
    let mut topology = Vec::new();
    for gi in 0..groups {
        let Some(g) = c.groups.get(gi) else { break };
        if g.spec.persistent_blocks.is_none() || g.kernel.is_err() {
            continue;
        }
        let mut one = c.clone();
        // Only group `gi` is fitted in `one`: the others have no persistent grid to fit.
        for (j, other) in one.groups.iter_mut().enumerate() {
            if j != gi {
                other.spec.persistent_blocks = None;
            }
        }
        let mut dev = Offline {
            caps,
            sm,
            regs: group_regs(&g.group.steps),
        };
        one.fit(&mut dev, false)?;
        if let (Some(done), Some(t)) = (one.groups.get(gi), one.topology.first()) {
            fitted.groups[gi].spec = done.spec.clone();
            fitted.groups[gi].kernel = done.kernel.clone();
            topology.push(t.clone());
        }
    }
    fitted.topology = topology;
    let mut sources: Vec<String> = Vec::new();
    let mut estimated = false;
    let sync = fitted.sync;
    for gi in 0..groups {
        let cg = &fitted.groups[gi];
        let Ok(kernel) = cg.kernel.as_ref() else {
            continue;
        };
        let dev = Offline {
            caps,
            sm,
            regs: group_regs(&cg.group.steps),
        };
        let Ok((res, source, e)) = dev.assess(kernel) else {
            continue;
        };
        let grid = cg.spec.persistent_blocks;
        let g = &mut fitted.planned.plan.groups[gi];
        let r = res.regs_per_thread;
        g.registers = r;
        g.shared_bytes = u64::from(res.static_smem_bytes);
        g.coresident_blocks = e.blocks_per_sm.saturating_mul(caps.sm_count);
        g.occupancy_pct = e.occupancy_pct;
        g.registers_source = Some(source.text.clone());
        if let Some(blocks) = grid {
            if sync == SyncMode::Dataflow && g.runs_dataflow() && g.dataflow.blocks != blocks {
                g.dataflow.blocks_reason = format!(
                    "{} blocks planned ({}), {blocks} kept: at {r} registers {} blocks per SM stay resident",
                    g.dataflow.blocks, g.dataflow.blocks_reason, e.blocks_per_sm
                );
                g.dataflow.blocks = blocks;
            }
        }
        // The compiled group keeps its own copy of the plan's group.
        fitted.groups[gi].group = g.clone();
        estimated |= source.estimated;
        if !sources.contains(&source.text) {
            sources.push(source.text);
        }
    }
    let plan = &mut fitted.planned.plan;
    plan.shared_bytes = plan
        .groups
        .iter()
        .map(|g| g.shared_bytes)
        .max()
        .unwrap_or(0);
    let persistent = plan
        .groups
        .iter()
        .filter(|g| g.kind == GroupKind::Megakernel)
        .map(|g| g.coresident_blocks)
        .min();
    if let Some(b) = persistent.or_else(|| plan.groups.iter().map(|g| g.coresident_blocks).min()) {
        plan.coresident_blocks = b;
    }
    *c = fitted;
    let note = match sources.as_slice() {
        [] => "registers assumed by the planner: no group's kernel could be assembled".into(),
        [one] => format!("registers: each group's kernel, {one}"),
        many => format!("registers: each group's kernel, {}", many.join("; ")),
    };
    Ok(OfflineFit { note, estimated })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::pipeline::pipeline_shapes;
    use std::path::Path;
    use std::sync::Arc;

    fn softmax(sync: SyncMode) -> (CompiledPipeline, DeviceCaps) {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/softmax.json");
        let p = crate::ir::load_pipeline(&file).unwrap();
        let shapes = pipeline_shapes(&p, file.parent().unwrap()).unwrap();
        let caps = crate::occupancy::profiles::load("h100-sxm").unwrap();
        let spec = crate::harness::target::TargetSpec {
            device: crate::harness::target::DeviceChoice::Caps(caps.clone()),
            sync,
            cache: crate::harness::target::CacheUse::Off,
            ..Default::default()
        };
        let t = crate::harness::target::target(Arc::new(p), shapes, &spec).unwrap();
        let c = crate::harness::target::compile(&t, crate::harness::target::Fit::Plan).unwrap();
        (c.compiled, caps)
    }

    #[test]
    fn every_figure_of_a_group_follows_its_kernels_registers_and_the_grid_fits() {
        for sync in [SyncMode::Dataflow, SyncMode::Barrier] {
            // Registers given for every step: the figure is known without ptxas, so the
            // test checks the same thing on every machine. 40 registers keep 6 blocks of
            // 256 threads per SM where the planner's 32 keep 8.
            let (mut c, caps) = softmax(sync);
            let steps = c.pipeline.steps.len();
            let planned = c.groups[0].spec.persistent_blocks;
            assert!(planned.is_some_and(|b| b > 792), "{planned:?}");
            let fit = fit_offline(&mut c, &caps, 90, &vec![Some(40); steps]).unwrap();
            assert!(fit.note.contains("--regs 40"), "{}", fit.note);
            // 132 SMs x 6 blocks of 256 threads at 40 registers.
            assert_eq!(c.groups[0].spec.persistent_blocks, Some(792), "{sync:?}");
            assert_eq!(c.plan().coresident_blocks, 792);
            for (gi, g) in c.plan().groups.iter().enumerate() {
                assert_eq!(g.registers, 40, "group {gi}");
                let res = crate::occupancy::KernelResources {
                    regs_per_thread: 40,
                    ..Default::default()
                };
                let wg = g.workgroup_size;
                let e = estimate(&caps, &res, wg[0] * wg[1] * wg[2], 0);
                assert!(g.coresident_blocks <= e.blocks_per_sm * caps.sm_count);
                if let Some(grid) = c.groups[gi].spec.persistent_blocks {
                    assert!(grid <= g.coresident_blocks, "group {gi}: grid {grid}");
                    assert!(grid >= 1);
                }
            }
            assert!(c
                .plan()
                .groups
                .iter()
                .any(|g| g.kind == GroupKind::Megakernel));
        }
    }
}
