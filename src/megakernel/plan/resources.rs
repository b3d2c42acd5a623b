//! Per-step resources and what steps fused into one block use: registers, shared memory,
//! threads, and the occupancy and launchability that follow.

use super::*;

/// Per-step resources.
#[derive(Debug, Clone, Copy)]
pub(super) struct StepRes {
    pub(super) wg: [u32; 3],
    pub(super) grid: [u32; 3],
    pub(super) threads: u32,
    pub(super) regs: u32,
    pub(super) smem: u64,
    pub(super) grid_barrier: bool,
    /// Uses `shuffle`, `subgroup_reduce` or `ballot` (see `mixed::subgroup_exact`).
    pub(super) subgroup_ops: bool,
    /// What sharing a block side by side takes (`mixed::packing_needs`).
    pub(super) pack: crate::megakernel::mixed::PackNeeds,
    /// Statements and expression nodes of the step's Program.
    pub(super) nodes: usize,
}

/// Statements and expression nodes of `p`.
pub(super) fn program_nodes(p: &crate::ir::Program) -> usize {
    let mut n = 0usize;
    p.walk_stmts(&mut |_| n += 1);
    p.walk_exprs(&mut |_| n += 1);
    n
}

/// The fused resources of a set of steps.
#[derive(Debug, Clone)]
pub(super) struct Fused {
    pub(super) regs: u32,
    pub(super) smem: u64,
    pub(super) blocks_per_sm: u32,
    pub(super) occupancy_pct: f64,
    pub(super) why_not: Option<String>,
}

/// The resources of the steps `run` fused into one block: a step that can pack holds one
/// copy of its workgroup buffers per sub-task (`fuse::pack`). Counted for every step that
/// may pack, an upper bound (a step can still mask for its group's sake), so a persistent
/// grid never counts on more resident blocks than fit.
pub(super) fn fused_parts(res: &[StepRes], run: &[usize]) -> Vec<StepRes> {
    let block = crate::megakernel::mixed::block_size(run.iter().map(|&s| res[s].wg));
    run.iter()
        .map(|&s| StepRes {
            smem: res[s]
                .smem
                .saturating_mul(u64::from(res[s].pack.copies(res[s].wg[0], block[0]))),
            ..res[s]
        })
        .collect()
}

pub(super) fn fused(caps: &DeviceCaps, steps: &[StepRes]) -> Fused {
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
pub(super) struct Agg {
    /// Steps added.
    pub(super) steps: usize,
    /// Their Programs' nodes.
    pub(super) nodes: usize,
    pub(super) regs: Option<u32>,
    pub(super) smem: u64,
    pub(super) threads: Option<u32>,
    /// The first step of each distinct (workgroup size, subgroup ops), in order: the size
    /// check gives the same answer on them as on every step.
    pub(super) sizes: Vec<(usize, [u32; 3], bool)>,
    /// The first step with a grid barrier of its own.
    pub(super) grid_barrier: Option<usize>,
}

impl Agg {
    pub(super) fn add(&mut self, k: usize, s: &StepRes) {
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

pub(super) fn fused_agg(caps: &DeviceCaps, agg: &Agg) -> Fused {
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
