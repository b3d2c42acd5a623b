//! Sweeps of the occupancy model over block size, registers per thread and dynamic shared
//! memory, and the suggested block sizes (these feed the CLI table and the TUI charts).

use serde::Serialize;

use super::estimate::{core, max_threads_for_regs, FuncConfig, Limiter};
use super::{estimate_with, DeviceCaps, KernelResources};

/// One point of a sweep (the CLI's JSON row shape, plus the swept input).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    /// Threads per block.
    pub block_size: u32,
    /// Registers per thread.
    pub regs_per_thread: u32,
    /// Dynamic shared memory per block (bytes).
    pub dynamic_smem_bytes: u32,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// Resident warps per SM.
    pub active_warps_per_sm: u32,
    /// Occupancy, percent.
    pub occupancy_pct: f64,
    /// Limiting resource.
    pub limiter: Limiter,
}

fn row(
    caps: &DeviceCaps,
    res: &KernelResources,
    block: u32,
    dynamic: u32,
    cfg: &FuncConfig,
) -> SweepRow {
    let e = estimate_with(caps, res, block, dynamic, cfg);
    SweepRow {
        block_size: block,
        regs_per_thread: res.regs_per_thread,
        dynamic_smem_bytes: dynamic,
        blocks_per_sm: e.blocks_per_sm,
        active_warps_per_sm: e.active_warps_per_sm,
        occupancy_pct: e.occupancy_pct,
        limiter: e.limiter,
    }
}

/// The largest block size worth sweeping: the device limit, the kernel's own limit when known,
/// and the register-limited one.
pub fn max_block_size(caps: &DeviceCaps, res: &KernelResources) -> u32 {
    let mut m = max_threads_for_regs(caps, res.regs_per_thread);
    if res.max_threads_per_block > 0 {
        m = m.min(res.max_threads_per_block);
    }
    m
}

/// Occupancy for every multiple of the warp size up to the kernel's max threads per block.
pub fn sweep_block_sizes(
    caps: &DeviceCaps,
    res: &KernelResources,
    dynamic: u32,
    cfg: &FuncConfig,
) -> Vec<SweepRow> {
    let ws = caps.warp_size.max(1);
    // Sized by what it prints: never more rows than valid block sizes, whatever the profile.
    let max = max_block_size(caps, res).min(crate::shape::MAX_WORKGROUP_THREADS as u32);
    (1..=max / ws)
        .map(|k| row(caps, res, k * ws, dynamic, cfg))
        .collect()
}

/// Occupancy for every register count 1..=255 at one block size.
pub fn sweep_registers(
    caps: &DeviceCaps,
    res: &KernelResources,
    block: u32,
    dynamic: u32,
    cfg: &FuncConfig,
) -> Vec<SweepRow> {
    (1..=255)
        .map(|r| {
            let k = KernelResources {
                regs_per_thread: r,
                ..res.clone()
            };
            row(caps, &k, block, dynamic, cfg)
        })
        .collect()
}

/// Most rows of a dynamic shared memory sweep (the step grows to keep below it).
pub const MAX_SWEEP_ROWS: u32 = 1024;

/// Occupancy for dynamic shared memory from 0 in steps of `step` bytes (raised so that there
/// are at most [`MAX_SWEEP_ROWS`] rows) while a block still fits.
pub fn sweep_dynamic_smem(
    caps: &DeviceCaps,
    res: &KernelResources,
    block: u32,
    step: u32,
    cfg: &FuncConfig,
) -> Vec<SweepRow> {
    // Sized by what it prints: at most MAX_SWEEP_ROWS steps up to the largest shared memory a
    // block can ask for, however small the requested step or large the profile's figure.
    let top = caps.smem_per_block_optin.max(caps.smem_per_block);
    let step = step.max(1).max(top.div_ceil(MAX_SWEEP_ROWS));
    let mut out = Vec::new();
    let mut d: u32 = 0;
    loop {
        if core(caps, res, block, d, cfg).blocks == 0 {
            break;
        }
        out.push(row(caps, res, block, d, cfg));
        match d.checked_add(step) {
            Some(n) => d = n,
            None => break,
        }
    }
    out
}

/// The suggested block sizes of a block-size sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    /// The one to use.
    pub block_size: u32,
    /// Its occupancy, percent.
    pub occupancy_pct: f64,
    /// Every block size reaching the same (highest) occupancy, ascending.
    pub tied: Vec<u32>,
    /// What `cuOccupancyMaxPotentialBlockSize` would pick (the largest tied size).
    pub driver_pick: u32,
    /// Why this one.
    pub explanation: String,
    /// Block sizes passed over because the check refused them (they change the Program's
    /// results, or could not be compared), in the order they were considered.
    pub refused: Vec<Refused>,
}

/// A block size the suggestion passed over, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Refused {
    /// Threads per block.
    pub block_size: u32,
    /// Why (`changes results: out[3] 12.0 vs 9.5`).
    pub why: String,
}

/// Most block sizes [`suggest_block_sizes`] asks its check about before it settles for the
/// Program's own size (each answer may run the reference interpreter twice).
pub const MAX_CHECKED: usize = 8;

/// The highest-occupancy block size that `check` accepts: among the sizes of equal
/// occupancy the smallest of at least 128 threads (more, smaller blocks per SM: a finer last
/// wave and cheaper barriers while still giving the scheduler 4+ warps per block), else the
/// largest; when `check` refuses every size of the best occupancy, the next occupancy down,
/// and so on. `check(block)` returns why a size must not be suggested (it changes the
/// Program's results, or they could not be compared), or `None`; `own` is the Program's own
/// block size, accepted without asking (`None` in calculator mode, where every size is
/// accepted). After [`MAX_CHECKED`] refusals the own size is suggested. `None` when nothing
/// launches.
pub fn suggest_block_sizes(
    rows: &[SweepRow],
    own: Option<u32>,
    check: &mut dyn FnMut(u32) -> Option<String>,
) -> Option<Suggestion> {
    let best = rows
        .iter()
        .filter(|r| r.blocks_per_sm > 0)
        .map(|r| r.active_warps_per_sm)
        .max()?;
    let tied: Vec<u32> = rows
        .iter()
        .filter(|r| r.blocks_per_sm > 0 && r.active_warps_per_sm == best)
        .map(|r| r.block_size)
        .collect();
    let driver_pick = *tied.last()?;
    // Occupancy tiers, best first; within a tier the preferred order.
    let mut tiers: Vec<u32> = rows
        .iter()
        .filter(|r| r.blocks_per_sm > 0)
        .map(|r| r.active_warps_per_sm)
        .collect();
    tiers.sort_unstable_by(|a, b| b.cmp(a));
    tiers.dedup();
    let mut refused: Vec<Refused> = Vec::new();
    let mut pick = None;
    'tiers: for warps in tiers {
        let sizes: Vec<u32> = rows
            .iter()
            .filter(|r| r.blocks_per_sm > 0 && r.active_warps_per_sm == warps)
            .map(|r| r.block_size)
            .collect();
        let order = sizes
            .iter()
            .copied()
            .filter(|&b| b >= 128)
            .chain(sizes.iter().rev().copied().filter(|&b| b < 128));
        for b in order {
            if own == Some(b) || own.is_none() {
                pick = Some(b);
                break 'tiers;
            }
            if refused.len() >= MAX_CHECKED {
                pick = own.filter(|o| {
                    rows.iter()
                        .any(|r| r.block_size == *o && r.blocks_per_sm > 0)
                });
                break 'tiers;
            }
            match check(b) {
                None => {
                    pick = Some(b);
                    break 'tiers;
                }
                Some(why) => refused.push(Refused { block_size: b, why }),
            }
        }
    }
    let pick = pick.or(own)?;
    let pct = rows
        .iter()
        .find(|r| r.block_size == pick)
        .map_or(0.0, |r| r.occupancy_pct);
    let mut explanation = if !tied.contains(&pick) {
        format!("{pick} threads reaches {pct:.1}% occupancy: every size of higher occupancy was refused")
    } else if tied.len() == 1 {
        format!("{pick} threads is the only block size reaching {pct:.1}% occupancy")
    } else {
        let list: Vec<String> = tied.iter().map(u32::to_string).collect();
        let why = if refused.iter().any(|r| tied.contains(&r.block_size)) {
            "the first of them that keeps the Program's results"
        } else if pick >= 128 {
            "the smallest of at least 128 threads, so more blocks share each SM (a finer last wave, cheaper barriers)"
        } else {
            "the largest, as none has 128 threads or more"
        };
        format!(
            "{} block sizes reach {pct:.1}% occupancy ({}); {pick} is suggested: {why}; cuOccupancyMaxPotentialBlockSize would pick {driver_pick}",
            tied.len(),
            list.join(", ")
        )
    };
    if own == Some(pick) && !refused.is_empty() {
        explanation.push_str("; it is the Program's own size");
    }
    Some(Suggestion {
        block_size: pick,
        occupancy_pct: pct,
        tied,
        driver_pick,
        explanation,
        refused,
    })
}

/// The workgroup size a block size stands for, keeping the Program's own `y` and `z`
/// (`own`): `None` when the block is not a whole number of `y * z` rows.
pub fn block_workgroup(block: u32, own: [u32; 3]) -> Option<[u32; 3]> {
    let rows = own[1].max(1).saturating_mul(own[2].max(1));
    (block.is_multiple_of(rows) && block >= rows).then(|| [block / rows, own[1], own[2]])
}
