//! The planner's choice of the recomputed form: which runs of window steps become passes,
//! how many steps each pass fuses (`k`) and its tile, by the cost model.
//!
//! A chain is a run of consecutive window steps over one domain, each reading the previous
//! step's output. Over the part of a chain the plan's groups cover whole, the planner takes
//! the cheapest partition into passes of two or more steps and single steps (their groups as
//! the plan had them), where a pass costs (microseconds, `CostModel`):
//!
//! - one launch;
//! - the larger of its global traffic (every buffer it reads from global memory, times the
//!   window's cells over the tile's, for the halo each block reads again; every buffer it
//!   writes, once) at the device's bandwidth, its shared-memory work (every computed cell of
//!   every step, recomputed ones included, one shared access per load and one per store, a
//!   warp's access per clock per SM) and one wave of blocks per `wave_us`;
//! - a workgroup barrier between steps, per wave of blocks.
//!
//! Against it the plan's own groups for those steps (separate launches, or the fused group's
//! predicted time). The tile is the cheapest of a few per dimension that fit the domain and
//! the shared-memory limit; a longer pass grows the halo (recomputed cells and shared memory)
//! and saves launches and global round trips, so the partition search is what chooses `k`.
//! `--decide recompute` takes the partition with the fewest launches instead (to study the
//! form); `--decide fuse` keeps the other fused forms and never recomputes.

use std::cell::RefCell;
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{check_layout, probe, window_step, HaloSpec, StepWindow};
use crate::ir::Pipeline;
use crate::megakernel::cost::CostModel;
use crate::megakernel::dataflow::GroupSync;
use crate::megakernel::mixed::StepLayout;
use crate::megakernel::plan::{Group, GroupKind};
use crate::megakernel::{DepKind, Separation};
use crate::occupancy::{estimate, DeviceCaps, KernelResources};
use crate::shape::LaunchShape;

/// Threads per block of a recomputed pass.
pub const THREADS: u32 = 256;

/// Tiles tried for one-dimensional chains (elements).
const TILES_1D: [[u32; 2]; 5] = [[256, 1], [512, 1], [1024, 1], [2048, 1], [4096, 1]];

/// Tiles tried for two-dimensional chains (elements per axis).
const TILES_2D: [[u32; 2]; 6] = [[32, 8], [32, 16], [64, 8], [64, 16], [32, 32], [128, 8]];

/// Most steps one pass fuses: the targets need 7 and 8; a longer pass's halo grows past
/// what a tile can carry, and the partition search stays linear in a chain's length.
pub const MAX_PASS_STEPS: usize = 8;

/// Most steps of a plan whose reads are probed for the recomputed form (each probe runs the
/// step on the interpreter): planning a 10,000-step chain must stay as fast as before.
pub const MAX_PROBED_STEPS: usize = 256;

/// Registers per thread assumed for a pass (as for any step without `--regs`).
const REGISTERS: u32 = 32;

/// The recomputed form of one plan group (`plan --json`: `groups[].halo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HaloPlan {
    /// What fused emission builds.
    pub spec: HaloSpec,
    /// Steps fused per pass.
    pub k: usize,
    /// Per step (group order): cells beyond the tile on each side it computes, per axis.
    pub halo: Vec<[u32; 2]>,
    /// The share of computed cells outside the tile (0..1).
    pub recomputed_fraction: f64,
    /// Predicted device time of the pass (us).
    pub predicted_us: f64,
    /// Predicted device time of the same steps as separate launches (us).
    pub otherwise_us: f64,
    /// Why this `k` and tile, in words.
    pub reason: String,
}

impl HaloPlan {
    /// One line for `plan` and the Plan tab.
    pub fn describe(&self) -> String {
        let s = &self.spec;
        let halos: Vec<String> = self
            .halo
            .iter()
            .map(|h| {
                if s.domain[1] == 1 {
                    h[0].to_string()
                } else {
                    format!("{}x{}", h[0], h[1])
                }
            })
            .collect();
        format!(
            "recomputed: k = {}, tile {}x{}, halo per step [{}], {:.1}% of cells recomputed, {} blocks of {} threads",
            self.k,
            s.tile[0],
            s.tile[1],
            halos.join(", "),
            100.0 * self.recomputed_fraction,
            s.grid()[0] * s.grid()[1],
            s.threads
        )
    }
}

/// What choosing needs from the planner.
pub struct ChooseCtx<'a> {
    /// The pipeline.
    pub pipeline: &'a Pipeline,
    /// Every step's launch.
    pub shapes: &'a [LaunchShape],
    /// The device.
    pub caps: &'a DeviceCaps,
    /// The cost model.
    pub model: &'a CostModel,
    /// `--decide recompute`: the fewest launches, whatever the model predicts.
    pub force: bool,
    /// Predicted time of a plan group as the plan has it (us).
    pub group_us: &'a dyn Fn(&Group) -> f64,
    /// The plan group of one step launched alone.
    pub single: &'a dyn Fn(usize) -> Group,
    /// Steps of recomputed passes measured no faster than their steps apart: a chain holding
    /// one is not recomputed (not even when forced: a measurement outranks the flag).
    pub lost: &'a [usize],
}

/// Facts about one step of a chain, measured once.
struct Link {
    window: StepWindow,
    /// How far it reads the previous step's output (for the first of a chain: unused).
    radius: [u32; 2],
    stores_every: bool,
}

/// Replaces the groups over chains of window steps by recomputed passes where the model
/// predicts a gain (or always, `force`). Groups not over a chain are returned as they were.
pub fn choose(ctx: &ChooseCtx, groups: Vec<Group>) -> Vec<Group> {
    let n = ctx.pipeline.steps.len();
    let windows: Vec<Option<StepWindow>> = (0..n)
        .map(|s| window_step(ctx.pipeline, ctx.shapes, s).ok())
        .collect();
    // chained[s]: step s reads step s-1's output over the same domain.
    let chained = |s: usize| -> bool {
        match (
            s.checked_sub(1).and_then(|p| windows[p].as_ref()),
            windows[s].as_ref(),
        ) {
            (Some(a), Some(b)) => a.domain == b.domain && b.reads_buffer(&a.out).is_some(),
            _ => false,
        }
    };
    let mut out: Vec<Group> = Vec::with_capacity(groups.len());
    let mut probed = 0usize;
    let mut i = 0;
    while i < groups.len() {
        // The longest run of whole groups from i whose steps form one chain.
        let mut j = i;
        while j < groups.len()
            && groups[j].halo.is_none()
            && groups[j].steps.windows(2).all(|w| w[1] == w[0] + 1)
            && groups[j]
                .steps
                .iter()
                .enumerate()
                .all(|(x, &s)| windows[s].is_some() && (x == 0 && j == i || chained(s)))
        {
            j += 1;
        }
        if j == i {
            out.push(groups[i].clone());
            i += 1;
            continue;
        }
        let run: Vec<usize> = groups[i..j].iter().flat_map(|g| g.steps.clone()).collect();
        probed += run.len();
        if run.len() < 2 || probed > MAX_PROBED_STEPS || run.iter().any(|s| ctx.lost.contains(s)) {
            out.extend(groups[i..j].iter().cloned());
            i = j;
            continue;
        }
        let otherwise: f64 = groups[i..j].iter().map(|g| (ctx.group_us)(g)).sum();
        match best_partition(ctx, &run, &windows) {
            Some((us, parts)) if ctx.force || us < otherwise => {
                for p in parts {
                    out.push(match p {
                        Part::Single(s) => (ctx.single)(s),
                        Part::Pass(g) => *g,
                    });
                }
            }
            _ => out.extend(groups[i..j].iter().cloned()),
        }
        i = j;
    }
    out
}

/// A partition of a prefix of a chain: (launches, predicted us, parts as (start, end, the
/// pass's group or `None` for a single step)).
type Partial = (usize, f64, Vec<(usize, usize, Option<Group>)>);

enum Part {
    Single(usize),
    Pass(Box<Group>),
}

/// The cheapest partition of `run` (a chain) into passes and single steps, by the model
/// (or the fewest launches when forced), with its predicted time.
fn best_partition(
    ctx: &ChooseCtx,
    run: &[usize],
    windows: &[Option<StepWindow>],
) -> Option<(f64, Vec<Part>)> {
    let links: Vec<Link> = run
        .iter()
        .enumerate()
        .map(|(x, &s)| {
            let window = windows[s].clone()?;
            let carried = (x > 0)
                .then(|| windows[run[x - 1]].as_ref())
                .flatten()
                .and_then(|p| window.reads_buffer(&p.out).map(str::to_string));
            let reach = probe::probe(ctx.pipeline, ctx.shapes, &window, carried.as_deref()).ok()?;
            Some(Link {
                window,
                radius: reach.radius,
                stores_every: reach.stores_every,
            })
        })
        .collect::<Option<_>>()?;
    let m = run.len();
    let single_us = |x: usize| (ctx.group_us)(&(ctx.single)(run[x]));
    // Whether a step stores every element, probed once per step however many passes ask.
    let memo: RefCell<HashMap<usize, bool>> = RefCell::new(HashMap::new());
    // best[x]: (launches, us, parts) covering run[..x].
    let mut best: Vec<Option<Partial>> = vec![None; m + 1];
    best[0] = Some((0, 0.0, Vec::new()));
    for end in 1..=m {
        let mut cands: Vec<Partial> = Vec::new();
        if let Some((l, us, parts)) = best[end - 1].clone() {
            let mut parts = parts;
            parts.push((end - 1, end, None));
            cands.push((l + 1, us + single_us(end - 1), parts));
        }
        for start in end.saturating_sub(MAX_PASS_STEPS)..end.saturating_sub(1) {
            let Some((l, us, parts)) = best[start].clone() else {
                continue;
            };
            if let Some(mut g) = pass_group(ctx, &run[start..end], &links[start..end], &memo) {
                if let Some(h) = g.halo.as_mut() {
                    h.otherwise_us = (start..end).map(single_us).sum();
                }
                let t = g.halo.as_ref().map_or(f64::INFINITY, |h| h.predicted_us);
                let mut parts = parts;
                parts.push((start, end, Some(g)));
                cands.push((l + 1, us + t, parts));
            }
        }
        best[end] = cands.into_iter().min_by(|a, b| {
            if ctx.force {
                a.0.cmp(&b.0).then(a.1.total_cmp(&b.1))
            } else {
                a.1.total_cmp(&b.1)
            }
        });
    }
    let (_, us, parts) = best[m].clone()?;
    if parts.iter().all(|p| p.2.is_none()) {
        return None;
    }
    Some((
        us,
        parts
            .into_iter()
            .map(|(start, _, g)| match g {
                Some(g) => Part::Pass(Box::new(g)),
                None => Part::Single(run[start]),
            })
            .collect(),
    ))
}

/// The cheapest legal pass over `steps` (a chain of two or more), as a plan group.
fn pass_group(
    ctx: &ChooseCtx,
    steps: &[usize],
    links: &[Link],
    memo: &RefCell<HashMap<usize, bool>>,
) -> Option<Group> {
    // Steps that read only their own element fuse without a halo (the other forms do
    // that); a pass is for steps that read their neighbours.
    if links.iter().any(|l| !l.stores_every) || links[1..].iter().all(|l| l.radius == [0, 0]) {
        return None;
    }
    let windows: Vec<StepWindow> = links.iter().map(|l| l.window.clone()).collect();
    let domain = windows[0].domain;
    let mut radius: Vec<[u32; 2]> = links.iter().map(|l| l.radius).collect();
    radius[0] = [0, 0];
    let tiles: &[[u32; 2]] = if domain[1] == 1 { &TILES_1D } else { &TILES_2D };
    let mut tried = Vec::new();
    let mut best: Option<(f64, HaloSpec, u64, u64)> = None;
    for &tile in tiles {
        let spec = HaloSpec {
            domain,
            tile,
            threads: THREADS,
            radius: radius.clone(),
        };
        let mut stores = |w: &StepWindow| {
            *memo.borrow_mut().entry(w.step).or_insert_with(|| {
                probe::probe(ctx.pipeline, ctx.shapes, w, None).is_ok_and(|r| r.stores_every)
            })
        };
        let Ok(writes) = check_layout(ctx.pipeline, ctx.shapes, &windows, &spec, &mut stores)
        else {
            continue;
        };
        let (us, smem, resident) = pass_us(ctx, &windows, &writes, &spec);
        tried.push(format!("{}x{} {us:.1} us", tile[0], tile[1]));
        // Equal predictions (launch- or bandwidth-bound): the larger tile recomputes less.
        if best.as_ref().is_none_or(|b| us <= b.0) {
            best = Some((us, spec, smem, resident));
        }
    }
    let (us, spec, smem, resident) = best?;
    let k = steps.len();
    let halo: Vec<[u32; 2]> = (0..k).map(|i| spec.halo_of(i)).collect();
    let grid = spec.grid();
    let reason = format!(
        "{k} steps per pass over {}x{} tiles: {:.1}% of the cells recomputed, {smem} B shared, {} \
         blocks ({resident} resident); predicted {us:.1} us (tiles tried: {})",
        spec.tile[0],
        spec.tile[1],
        100.0 * spec.recomputed_fraction(),
        grid[0] * grid[1],
        tried.join(", ")
    );
    let e = resources(ctx.caps, smem);
    let plan = HaloPlan {
        k,
        halo,
        recomputed_fraction: spec.recomputed_fraction(),
        predicted_us: us,
        otherwise_us: 0.0,
        reason,
        spec: spec.clone(),
    };
    Some(Group {
        kind: GroupKind::Launch,
        steps: steps.to_vec(),
        waves: steps.iter().map(|&s| vec![s]).collect(),
        barriers: steps
            .windows(2)
            .map(|w| Separation {
                after_step: w[0],
                kind: DepKind::Workgroup,
                reason: format!(
                    "recomputed: step {} reads step {}'s cells in shared memory",
                    w[1], w[0]
                ),
            })
            .collect(),
        workgroup_size: [THREADS, 1, 1],
        step_grids: vec![[grid[0], grid[1], 1]; k],
        step_workgroup_sizes: vec![[THREADS, 1, 1]; k],
        step_layouts: vec![StepLayout::Whole; k],
        registers: REGISTERS,
        registers_source: None,
        shared_bytes: smem,
        coresident_blocks: e.blocks_per_sm.saturating_mul(ctx.caps.sm_count),
        occupancy_pct: e.occupancy_pct,
        dataflow: GroupSync::default(),
        halo: Some(plan),
    })
}

/// The occupancy estimate of a pass's kernel with `smem` bytes of shared memory.
fn resources(caps: &DeviceCaps, smem: u64) -> crate::occupancy::Estimate {
    estimate(
        caps,
        &KernelResources {
            regs_per_thread: REGISTERS,
            ..KernelResources::default()
        },
        THREADS,
        u32::try_from(smem).unwrap_or(u32::MAX),
    )
}

/// Predicted time of a pass (see the module docs): (us, shared bytes, resident blocks).
fn pass_us(
    ctx: &ChooseCtx,
    windows: &[StepWindow],
    writes: &[bool],
    spec: &HaloSpec,
) -> (f64, u64, u64) {
    let m = ctx.model;
    let window = spec.window();
    let cells = u64::from(window[0]) * u64::from(window[1]);
    let smem = super::shared_bytes(windows, cells);
    let e = resources(ctx.caps, smem);
    let resident = u64::from(e.blocks_per_sm) * u64::from(ctx.caps.sm_count);
    let grid = spec.grid();
    let blocks = u64::from(grid[0]) * u64::from(grid[1]);
    let tile_cells = u64::from(spec.tile[0]) * u64::from(spec.tile[1]);
    let domain = u64::from(spec.domain[0]) * u64::from(spec.domain[1]);
    let elem = |b: &str| {
        ctx.pipeline
            .buffer(b)
            .map_or(4, |x| x.elem.size_bytes() as u64)
    };
    let mut bytes = 0.0;
    let mut read: Vec<&str> = Vec::new();
    for (i, w) in windows.iter().enumerate() {
        for (_, b) in &w.reads {
            if (i == 0 || *b != windows[i - 1].out) && !read.contains(&b.as_str()) {
                read.push(b);
                bytes += (domain * elem(b)) as f64 * cells as f64 / tile_cells as f64;
            }
        }
        if writes[i] {
            bytes += (domain * elem(&w.out)) as f64;
        }
    }
    // Below one block per SM the bandwidth is not reached either.
    let spread = (blocks as f64 / f64::from(ctx.caps.sm_count.max(1))).min(1.0);
    let reach =
        (e.occupancy_pct / crate::megakernel::cost::SATURATION_PCT).clamp(0.01, 1.0) * spread;
    let memory = bytes / (m.bandwidth_gb_s * 1e3) / reach;
    let accesses: f64 = windows
        .iter()
        .enumerate()
        .map(|(i, w)| (spec.cells(i) * blocks) as f64 * (w.loads as f64 + 1.0))
        .sum();
    let per_us =
        f64::from(ctx.caps.sm_count.max(1)) * f64::from(ctx.caps.clock_khz.max(1)) / 1e3 * 32.0;
    let shared = accesses / per_us;
    let waves = blocks.div_ceil(resident.max(1)).max(1) as f64;
    let sync = waves * (windows.len() as f64 - 1.0) * m.workgroup_barrier_us;
    (
        m.launch_us + memory.max(shared).max(waves * m.wave_us) + sync,
        smem,
        resident,
    )
}
