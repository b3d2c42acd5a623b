//! The cost model the planner decides fusion with: predicted device time of a set of steps
//! run as separate launches against the same steps fused into one kernel, so that a plan never
//! chooses a form it predicts slower than separate launches.
//!
//! # What it counts (microseconds of device time)
//! - **A launch boundary** costs [`CostModel::launch_us`]: the GPU-side gap between two
//!   dependent launches. `benches/gpu/launch_costs.cu` measured 3.3-3.5 us for empty kernels on
//!   an H200, but the speedup gate's own separate launches of small steps cost 2.8-3.4 us
//!   *including* about a microsecond of work on an H100 (2026-12-06, `benches/gpu/decide.sh`),
//!   because the next launch is queued while the previous kernel drains; 2.4 us is what makes
//!   the model agree with the gate. Separate launches pay it once per step, a fused kernel once.
//! - **A boundary inside a fused kernel** costs what its synchronisation costs: a grid barrier
//!   about 2 us (last block out of one step to the first block into the next); in the dataflow
//!   form, every wait the boundary keeps (implied ones are free): 1.2 us per polled producer
//!   flag and per counter wait, a window's paid by every consumer task, times the tasks each
//!   block of the persistent grid runs in turn, a fixed set's (a range, a count, the boundary
//!   ranges of a window+boundary set) once per block; a last-arriver fold's arrival and
//!   wake about 1.9 us once (its own work is step work); a workgroup barrier next to
//!   nothing. Calibrated on an
//!   H100's gate timings of the pipeline fixtures: a 4-step window stencil over 79 workgroups
//!   runs 2.7 us per step fused, the same stencil clamped at both ends 4.1 us, and 2^20-element
//!   stencils (4 tasks per block) 2.4 us per boundary more than their work.
//! - **Step work** is the larger of a bandwidth term (the bytes of the pipeline buffers the
//!   step binds, read and written once, at 70% of the device's peak bandwidth: what a
//!   streaming kernel reaches, 3.4 of 4.8 TB/s on an H200) and a latency term (one
//!   [`CostModel::wave_us`] per wave of workgroups over the blocks resident at once). A step
//!   fused with others runs in blocks of the group's largest workgroup size, with the group's
//!   registers and shared memory: fewer of its workgroups are in flight at once (a 256-wide
//!   step masked in 1024-thread blocks runs a quarter as many at a time), so it takes more
//!   waves and, below [`SATURATION_PCT`] of the warp slots, reaches less bandwidth.
//! - **Contended atomics**: an atomic on a small host buffer (at most [`CONTENDED_LEN`]
//!   elements) serialises on its address; they run at [`CostModel::contended_atomics_per_us`]
//!   (a 2^20-element 256-bin histogram takes 0.28 ms on an H200). Fused, such a step is
//!   charged [`FUSED_ATOMIC_PENALTY`] more: histogram equalisation measured 0.89x fused against
//!   separate launches on an H200 (a pipeline the project had not seen) and 0.99-1.00x on ours.
//!
//! - **Accesses in loops**: a step whose invocations loop over memory (a normalisation that
//!   sums every partial sum, a matrix-vector product) moves far more than its buffers' bytes.
//!   Every load, store and atomic inside a loop is counted per invocation, times the trip
//!   counts of its loops (literal bounds or buffer lengths; [`UNKNOWN_TRIPS`] otherwise), in 32-byte
//!   sectors: a warp's distinct sectors from the affine analysis (one per warp for a
//!   uniform index, four for 32 consecutive `f32`), one per thread where the index is
//!   data-dependent or not affine. They run at [`CACHED_SECTOR_FACTOR`] times the streaming
//!   bandwidth: on an H100, reduce_normalize at 2^20 (2^20 invocations summing 4096 partial
//!   sums each, a uniform index) took 820 us, 164 k sectors/us, and vyre's dense gated MLP
//!   (three projections of 512-1024 terms per output, rows strided by 512-1024 elements)
//!   464 us for 218 M lane accesses in loops, each counted as a sector, 470 k sectors/us
//!   (the index `index / 1024 * 512 + k` is not affine, so its broadcast load counts a
//!   sector per thread): 2.5 times the 73 k sectors/us of its 2.35 TB/s streaming figure is
//!   between.
//! - **A margin**: a fused kernel is charged [`FUSED_WORK_MARGIN`] of its steps' loop time
//!   (the term above). The two loop-heavy pipelines above ran 0.98x and 0.78x fused where the
//!   model, without the loop term, predicted a gain of a few microseconds: what fusion
//!   changes in long loops (registers, the scheduling of tasks that wait) grows with their
//!   work and is not modelled, so fusion must save more than that share before it is chosen.
//!   Streaming steps pay no margin: a 3-step chain of 2^26 elements ran 2.9x fused.
//!
//! It is a model: its figures come from measurements on an H200 and an H100 (BENCHMARKS.md),
//! scaled to another device by its bandwidth only. `run --decide measure` times the forms on
//! the live GPU and keeps the faster per group in the plan cache.

use serde::{Deserialize, Serialize};

use super::dataflow::BoundarySync;
use super::plan::SyncMode;
use super::tiles::{ProducerSet, SyncLabel};
use super::DepKind;
use std::collections::HashMap;

use crate::analysis::affine::{accesses, warp_sectors, SECTOR_BYTES};
use crate::ir::{Access, Expr, Literal, NodeId, Pipeline, Program, Scalar, Stmt, StmtKind};
use crate::occupancy::DeviceCaps;
use crate::shape::LaunchShape;

/// Warp-slot occupancy (percent) from which a memory-bound step reaches its bandwidth; below
/// it the bandwidth term grows in proportion.
pub const SATURATION_PCT: f64 = 50.0;

/// Host buffers of at most this many elements are where atomics contend (histogram bins,
/// counters, totals); atomics into larger buffers are counted as memory traffic.
pub const CONTENDED_LEN: u64 = 1 << 16;

/// The share of a step's contended-atomic time a fused kernel adds (see the module docs).
pub const FUSED_ATOMIC_PENALTY: f64 = 0.05;

/// The share of its steps' loop time (accesses inside loops) a fused kernel must save before
/// the planner takes it (see the module docs): fusion's effects that grow with that work are
/// not modelled.
pub const FUSED_WORK_MARGIN: f64 = 0.05;

/// Global-memory sectors per microsecond a loop's accesses reach, as a multiple of the
/// device's streaming bandwidth in 32-byte sectors: their reuse hits L1 and L2 (see the
/// module docs).
pub const CACHED_SECTOR_FACTOR: f64 = 2.5;

/// Trip count assumed for a loop whose bounds are neither literals nor buffer lengths.
pub const UNKNOWN_TRIPS: u64 = 1;

/// The device figures of the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// One launch boundary (us).
    pub launch_us: f64,
    /// One grid barrier (us).
    pub grid_barrier_us: f64,
    /// One workgroup barrier (us).
    pub workgroup_barrier_us: f64,
    /// A flag wait (window, window+boundary, broadcast), per task on the critical path (us).
    pub flag_wait_us: f64,
    /// A counter wait (us).
    pub counter_wait_us: f64,
    /// A last-arriver fold's arrival and wake, without the fold's own work (us).
    pub fold_us: f64,
    /// One wave of workgroups: a dependent global load and store round trip (us).
    pub wave_us: f64,
    /// Bandwidth a streaming step reaches (GB/s).
    pub bandwidth_gb_s: f64,
    /// Atomics on one contended address per microsecond.
    pub contended_atomics_per_us: f64,
}

impl CostModel {
    /// The model for `caps`: the H200's measured boundary costs, the device's bandwidth (70% of
    /// its peak from memory clock and bus width; the H200's 3400 GB/s when the profile has
    /// none).
    pub fn for_device(caps: &DeviceCaps) -> CostModel {
        let peak =
            f64::from(caps.mem_clock_khz) * 1e3 * 2.0 * f64::from(caps.bus_width_bits) / 8.0 / 1e9;
        CostModel {
            launch_us: 2.4,
            grid_barrier_us: 2.0,
            workgroup_barrier_us: 0.05,
            flag_wait_us: 1.2,
            counter_wait_us: 1.2,
            fold_us: 1.9,
            wave_us: 1.0,
            bandwidth_gb_s: if peak > 0.0 { 0.7 * peak } else { 3400.0 },
            contended_atomics_per_us: 3700.0,
        }
    }

    /// What a boundary inside a fused kernel costs: `kind` is the plan's separation, `label`
    /// what the dataflow form runs it as (its strongest wait; see [`Self::dataflow_us`] for
    /// the cost of every wait of a dataflow boundary).
    pub fn boundary_us(&self, sync: SyncMode, kind: DepKind, label: SyncLabel) -> f64 {
        match (sync, kind) {
            (_, DepKind::None | DepKind::Invocation) => 0.0,
            (_, DepKind::Workgroup) => self.workgroup_barrier_us,
            (SyncMode::Barrier, DepKind::Grid) => self.grid_barrier_us,
            (SyncMode::Dataflow, DepKind::Grid) => self.wait_us(label, 1, 1.0),
        }
    }

    /// One wait of a dataflow boundary: `flags` producer flags polled (a window+boundary set
    /// polls its window and each boundary range), paid once per task, `task_waves` times on a
    /// block's critical path (the consumer's tasks over the persistent grid's blocks); a
    /// last-arriver fold's arrival is paid once per block.
    fn wait_us(&self, label: SyncLabel, flags: u32, task_waves: f64) -> f64 {
        match label {
            SyncLabel::None | SyncLabel::Invocation => 0.0,
            SyncLabel::Workgroup => self.workgroup_barrier_us,
            SyncLabel::Broadcast | SyncLabel::WindowBoundary => {
                self.flag_wait_us * f64::from(flags) * task_waves
            }
            SyncLabel::Counter => self.counter_wait_us * task_waves,
            SyncLabel::LastArriverFold => self.fold_us,
            SyncLabel::AllToAll => self.grid_barrier_us,
        }
    }

    /// What a `grid` boundary of a dataflow group costs: every wait it keeps (the implied
    /// ones cost nothing), each paid by every task of the consumer (`task_waves` tasks per
    /// block on the critical path). Waits are polled one after another by a task's first
    /// thread, so their costs add up.
    pub fn dataflow_us(&self, b: &BoundarySync, task_waves: f64) -> f64 {
        b.waits
            .iter()
            .map(|w| {
                // A window moves with the task: each task polls its own. A fixed set (a
                // range, a broadcast, a count, a window+boundary set's boundary ranges) is the
                // same for every task of the step: a block polls it once (fusion hoists it
                // before the task loop or skips it once seen complete).
                let (per_task, once) = match &w.producers {
                    ProducerSet::WindowBoundary { edges, .. } => {
                        (1, edges.iter().flatten().count() as u32)
                    }
                    ProducerSet::Window { .. } => (1, 0),
                    _ => (0, 1),
                };
                let mut us = 0.0;
                if per_task > 0 {
                    us += self.wait_us(w.label, per_task, task_waves);
                }
                if once > 0 {
                    us += self.wait_us(w.label, once, 1.0);
                }
                us
            })
            .sum()
    }

    /// Device time of `w`'s own work when `resident` of its workgroups run at once at
    /// `occupancy_pct` of the warp slots (us).
    pub fn work_us(&self, w: &StepWork, resident: u64, occupancy_pct: f64) -> f64 {
        let waves = w.workgroups.div_ceil(resident.max(1)).max(1) as f64;
        let reach = (occupancy_pct / SATURATION_PCT).clamp(0.01, 1.0);
        let memory = w.bytes as f64 / (self.bandwidth_gb_s * 1e3) / reach;
        let atomics = w.contended_atomics as f64 / self.contended_atomics_per_us;
        (waves * self.wave_us)
            .max(memory)
            .max(self.loop_us(w, occupancy_pct))
            + atomics
    }

    /// The time of `w`'s accesses inside loops at `occupancy_pct` of the warp slots (us).
    pub fn loop_us(&self, w: &StepWork, occupancy_pct: f64) -> f64 {
        let reach = (occupancy_pct / SATURATION_PCT).clamp(0.01, 1.0);
        w.sectors as f64 / self.sectors_per_us() / reach
    }

    /// Sectors per microsecond the accesses of loops reach (see the module docs).
    pub fn sectors_per_us(&self) -> f64 {
        CACHED_SECTOR_FACTOR * self.bandwidth_gb_s * 1e3 / SECTOR_BYTES as f64
    }

    /// What fusing adds to a step's contended atomics (us).
    pub fn fused_atomic_us(&self, w: &StepWork) -> f64 {
        FUSED_ATOMIC_PENALTY * w.contended_atomics as f64 / self.contended_atomics_per_us
    }
}

/// What one step does, for the model.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepWork {
    /// Bytes of the bound pipeline buffers, each read and each written once.
    pub bytes: u64,
    /// Atomic operations on contended buffers (one per invocation per atomic expression).
    pub contended_atomics: u64,
    /// Workgroups of the step.
    pub workgroups: u64,
    /// 32-byte sectors its accesses inside loops touch over all invocations, trip counts
    /// counted (see the module docs; accesses outside loops are in `bytes`).
    pub sectors: u64,
}

/// The work of step `s` of `pipeline` launched as `shape`.
pub fn step_work(pipeline: &Pipeline, s: usize, shape: &LaunchShape) -> StepWork {
    let Some(step) = pipeline.steps.get(s) else {
        return StepWork::default();
    };
    let len_of = |name: &str| {
        step.bound(name).and_then(|b| pipeline.buffer(b)).map(|b| {
            let len = b.contents.len.unwrap_or_else(|| shape.invocations());
            (len, b.elem.size_bytes() as u64)
        })
    };
    let mut bytes = 0u64;
    for d in &step.program.buffers {
        let Some((len, size)) = len_of(&d.name) else {
            continue;
        };
        let passes = match d.access {
            Access::Read | Access::Write | Access::Uniform => 1,
            Access::ReadWrite => 2,
            Access::Workgroup => 0,
        };
        bytes = bytes.saturating_add(len.saturating_mul(size).saturating_mul(passes));
    }
    let mut atomic_exprs = 0u64;
    step.program.walk_exprs(&mut |e| {
        if let Expr::Atomic { buffer, .. } = e {
            if len_of(buffer).is_some_and(|(len, _)| len <= CONTENDED_LEN) {
                atomic_exprs += 1;
            }
        }
    });
    let lens = |name: &str| len_of(name).map(|(len, _)| len);
    StepWork {
        bytes,
        contended_atomics: atomic_exprs.saturating_mul(shape.invocations()),
        workgroups: shape.workgroups(),
        sectors: (sectors_per_invocation(&step.program, shape.workgroup_size, &lens)
            * shape.invocations() as f64) as u64,
    }
}

/// Sectors one invocation's accesses inside loops touch (an average over a warp's threads),
/// each times the trip counts of its enclosing loops; `len_of` gives a bound buffer's length.
fn sectors_per_invocation(
    program: &Program,
    wg: [u32; 3],
    len_of: &dyn Fn(&str) -> Option<u64>,
) -> f64 {
    let mut trips: HashMap<NodeId, u64> = HashMap::new();
    fn walk(
        list: &[Stmt],
        times: u64,
        len_of: &dyn Fn(&str) -> Option<u64>,
        trips: &mut HashMap<NodeId, u64>,
    ) {
        for s in list {
            trips.insert(s.id.clone(), times);
            match &s.kind {
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    walk(then, times, len_of, trips);
                    walk(otherwise, times, len_of, trips);
                }
                StmtKind::Block(body) => walk(body, times, len_of, trips),
                StmtKind::Loop { from, to, body, .. } => {
                    let bound = |e: &Expr| match e {
                        Expr::Lit(Literal::Int(v)) => u64::try_from(*v).ok(),
                        Expr::Lit(Literal::Typed(Scalar::U32(v))) => Some(u64::from(*v)),
                        Expr::Lit(Literal::Typed(Scalar::I32(v))) => u64::try_from(*v).ok(),
                        Expr::Len(b) => len_of(b),
                        _ => None,
                    };
                    let n = match (bound(from), bound(to)) {
                        (Some(a), Some(b)) => b.saturating_sub(a),
                        _ => UNKNOWN_TRIPS,
                    };
                    walk(body, times.saturating_mul(n), len_of, trips);
                }
                _ => {}
            }
        }
    }
    walk(&program.body, 1, len_of, &mut trips);
    let lanes = wg.iter().product::<u32>().clamp(1, 32) as f64;
    accesses(program)
        .iter()
        .filter(|a| {
            program
                .buffer(&a.buffer)
                .is_some_and(|d| d.access.is_host())
        })
        .map(|a| {
            let elem = program
                .buffer(&a.buffer)
                .map_or(4, |d| d.elem.size_bytes() as u64);
            // Distinct sectors per thread of the sampled warps; one per thread when unknown.
            let per_thread = a.index.warp_segments(wg).map_or(1.0, |warps| {
                let (touched, threads) = warps.iter().fold((0u64, 0u64), |(t, n), segs| {
                    let lanes: u64 = segs.iter().map(|s| s.len() as u64).sum();
                    (t + warp_sectors(segs, elem), n + lanes)
                });
                if threads == 0 {
                    1.0 / lanes
                } else {
                    touched as f64 / threads as f64
                }
            });
            // Outside loops an access moves its buffer once: that is `bytes`.
            match trips.get(&a.node).copied().unwrap_or(1) {
                0 | 1 => 0.0,
                n => per_thread * n as f64,
            }
        })
        .sum()
}

/// Where a plan's fusion decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionSource {
    /// The cost model's prediction.
    Model,
    /// Timed on the GPU (`run --decide measure`), kept in the plan cache for that device.
    Measured,
    /// Fusion asked for regardless of cost (`--decide fuse`).
    Forced,
}

/// Device times measured for one fusable run of steps (`run --decide measure`, ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasuredForms {
    /// Median device time of the steps fused as far as legal (one kernel).
    pub fused_ms: f64,
    /// Median device time of the steps as separate launches.
    pub separate_ms: f64,
    /// Median device time of the model's choice, where it was neither of those.
    pub model_ms: Option<f64>,
}

/// The decision for one run of steps that may legally fuse into one kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The steps that could fuse into one kernel (a group of the legal plan).
    pub steps: Vec<usize>,
    /// The groups chosen for them, in order: one group (fuse), several (split at the
    /// boundaries between them) or one per step (separate launches).
    pub chosen: Vec<Vec<usize>>,
    /// Predicted device time of the steps fused into one kernel (us).
    pub fused_us: f64,
    /// Predicted device time of the steps as separate launches (us).
    pub separate_us: f64,
    /// Predicted device time of the chosen groups (us).
    pub chosen_us: f64,
    /// What decided.
    pub source: DecisionSource,
    /// The timings, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<MeasuredForms>,
}

impl Decision {
    /// What was chosen, in words: `fuse`, `separate` or `split`.
    pub fn verdict(&self) -> &'static str {
        if self.chosen.len() == 1 {
            "fuse"
        } else if self.chosen.len() == self.steps.len() {
            "separate"
        } else {
            "split"
        }
    }

    /// One line for `plan` and the Plan tab.
    pub fn describe(&self) -> String {
        let steps = |v: &[usize]| {
            v.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let chosen: Vec<String> = self
            .chosen
            .iter()
            .map(|g| format!("[{}]", steps(g)))
            .collect();
        let why = match (&self.source, &self.measured) {
            (DecisionSource::Measured, Some(m)) => format!(
                "measured: fused {:.4} ms, separate {:.4} ms{}",
                m.fused_ms,
                m.separate_ms,
                m.model_ms
                    .map_or_else(String::new, |t| format!(", the model's split {t:.4} ms"))
            ),
            (DecisionSource::Forced, _) => "fusion forced (--decide fuse)".to_string(),
            _ => format!(
                "predicted: fused {:.1} us, separate {:.1} us{}",
                self.fused_us,
                self.separate_us,
                if self.chosen.len() > 1 && self.chosen.len() < self.steps.len() {
                    format!(", split {:.1} us", self.chosen_us)
                } else {
                    String::new()
                }
            ),
        };
        format!(
            "steps {}: {} {} ({why})",
            steps(&self.steps),
            self.verdict(),
            chosen.join(" ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::megakernel::tiles::TileDep;
    use crate::occupancy::profiles;

    #[test]
    fn bandwidth_comes_from_the_profile() {
        let m = CostModel::for_device(&profiles::load("h200").unwrap());
        // 3.201 GHz x 2 x 6016 bits / 8 = 4.81 TB/s peak; 70% of it.
        assert!((m.bandwidth_gb_s - 3370.0).abs() < 20.0, "{m:?}");
    }

    #[test]
    fn a_masked_step_takes_more_waves() {
        let m = CostModel::for_device(&profiles::load("h200").unwrap());
        let w = StepWork {
            bytes: 1 << 20,
            contended_atomics: 0,
            workgroups: 1024,
            sectors: 0,
        };
        // Alone: 8 blocks of 256 per SM x 132 SMs hold all 1024 workgroups at once.
        let alone = m.work_us(&w, 1056, 100.0);
        // In 1024-thread blocks, 2 per SM: 264 at once, four waves, a quarter of the lanes.
        let masked = m.work_us(&w, 264, 25.0);
        assert!(masked > alone + 2.5, "alone {alone}, masked {masked}");
    }

    /// The loop term against the two H100 measurements it was calibrated on (module docs):
    /// reduce_normalize at 2^20 (820 us, the normalize loop over 4096 partial sums at a
    /// uniform index) within a factor of 1.5; an access outside any loop adds nothing.
    #[test]
    fn loops_count_their_accesses_times_their_trips() {
        let path = std::path::Path::new("fixtures/pipelines/programs/normalize_f32.json");
        let prog = crate::ir::parse::parse_program(
            &std::fs::read_to_string(path).unwrap(),
            "normalize_f32.json",
        )
        .expect("fixture");
        let lens = |b: &str| Some(if b == "partial" { 4096 } else { 1 << 20 });
        let per_invocation = sectors_per_invocation(&prog, [256, 1, 1], &lens);
        // One sector per warp per trip: partial[k] is the same element for every thread.
        assert!(
            (per_invocation - 4096.0 / 32.0).abs() < 1e-9,
            "{per_invocation}"
        );
        let m = CostModel::for_device(&profiles::load("h100-sxm").unwrap());
        let w = StepWork {
            bytes: 12 << 20,
            contended_atomics: 0,
            workgroups: 4096,
            sectors: (per_invocation * f64::from(1 << 20)) as u64,
        };
        let t = m.work_us(&w, 1056, 100.0);
        assert!(t > 820.0 / 1.5 && t < 820.0 * 1.5, "{t} us");
        let none = sectors_per_invocation(&prog, [256, 1, 1], &|_| Some(1));
        assert_eq!(none, 0.0, "a loop of one trip is no loop");
    }

    #[test]
    fn boundaries_cost_by_form() {
        let m = CostModel::for_device(&profiles::load("h200").unwrap());
        let grid = |s, l| m.boundary_us(s, DepKind::Grid, l);
        assert!(grid(SyncMode::Barrier, SyncLabel::Broadcast) > m.flag_wait_us);
        assert!(grid(SyncMode::Dataflow, SyncLabel::Broadcast) < m.grid_barrier_us);
        assert_eq!(
            m.boundary_us(SyncMode::Dataflow, DepKind::Invocation, SyncLabel::None),
            0.0
        );
        // Every boundary inside a kernel is cheaper than a launch, or fusing would never pay.
        for l in [
            SyncLabel::Counter,
            SyncLabel::LastArriverFold,
            SyncLabel::AllToAll,
        ] {
            assert!(grid(SyncMode::Dataflow, l) < m.launch_us, "{l:?}");
        }
    }

    /// A clamped stencil's wait polls its window and both boundary ranges: three flags for a
    /// block's first task, its window again for each later task (the boundary ranges are the
    /// same for every task: polled once); an implied wait costs nothing; a fold once per
    /// block; a fixed range once per block whatever the task waves.
    #[test]
    fn dataflow_boundaries_charge_each_kept_wait_per_task_wave() {
        let m = CostModel::for_device(&profiles::load("h200").unwrap());
        let dep = |producers, label| TileDep {
            from: 0,
            to: 1,
            producers,
            label,
            reason: String::new(),
            node: None,
        };
        let clamped = dep(
            ProducerSet::WindowBoundary {
                lo: -1,
                hi: 1,
                edges: [Some([0, 0]), Some([78, 78])],
            },
            SyncLabel::WindowBoundary,
        );
        let window = dep(ProducerSet::Window { lo: -1, hi: 1 }, SyncLabel::Counter);
        let b = |waits: Vec<TileDep>, implied: Vec<TileDep>| BoundarySync {
            after_step: 0,
            label: SyncLabel::WindowBoundary,
            waits,
            implied,
        };
        let one = m.dataflow_us(&b(vec![clamped.clone()], Vec::new()), 1.0);
        assert!((one - 3.0 * m.flag_wait_us).abs() < 1e-9, "{one}");
        let four = m.dataflow_us(&b(vec![clamped.clone()], Vec::new()), 4.0);
        assert!((four - 6.0 * m.flag_wait_us).abs() < 1e-9, "{four}");
        let plain = m.dataflow_us(&b(vec![window.clone()], vec![clamped]), 1.0);
        assert!((plain - m.counter_wait_us).abs() < 1e-9, "{plain}");
        let fold = dep(ProducerSet::All, SyncLabel::LastArriverFold);
        let folded = m.dataflow_us(&b(vec![fold], Vec::new()), 4.0);
        assert!((folded - m.fold_us).abs() < 1e-9, "{folded}");
        let both = m.dataflow_us(&b(vec![window.clone(), window], Vec::new()), 2.0);
        assert!((both - 4.0 * m.counter_wait_us).abs() < 1e-9, "{both}");
        let range = dep(
            ProducerSet::Range { first: 0, last: 0 },
            SyncLabel::Broadcast,
        );
        let fixed = m.dataflow_us(&b(vec![range], Vec::new()), 248.0);
        assert!((fixed - m.flag_wait_us).abs() < 1e-9, "{fixed}");
    }
}
