//! Timeline runs: the timeline mode of a launch list ([`LaunchList::timeline`]). Each launch's
//! kernel is emitted instrumented (`emit::emit_timeline`) and writes into a zeroed record
//! buffer of its own, which rides in the resident set after the data buffers, so upload
//! (cleared on the device), readback and release are the ordinary ones. The records of the
//! first round are read back into a `timeline::Capture`; with `plain_rounds`, the same list
//! uninstrumented is timed beside it (the overhead).

use std::time::Instant;

use serde::Serialize;

use super::dispatch::{DispatchOptions, TimingStats};
use super::jit::JitOptions;
use super::launch_list::{LaunchList, ListTiming};
use super::{Result, Runtime};
use crate::emit::timeline::TimelineSpec;
use crate::emit::{EmitError, EmitOptions, EmittedKernel};
use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::Program;
use crate::timeline::{Capture, HostPhase, LaunchRecords};

/// One launch of a timeline run.
#[derive(Debug, Clone)]
pub struct TimelineLaunch {
    /// The Program (a plain one, a pipeline step or a fused kernel).
    pub program: Program,
    /// Its launch.
    pub shape: LaunchShape,
    /// Kernel buffer `i` is run buffer `buffers[i]`.
    pub buffers: Vec<usize>,
    /// What to record.
    pub spec: TimelineSpec,
}

/// What a timeline run produced.
#[derive(Debug, Clone)]
pub struct TimelineRun {
    /// Records of the first round, and the host phases.
    pub capture: Capture,
    /// Emitted kernels (instrumented), per launch.
    pub kernels: Vec<EmittedKernel>,
    /// Device time of the instrumented sequence per round (sum of its launches, ms).
    pub instrumented_ms: Vec<f64>,
    /// Device time of the plain sequence per round (ms), when asked for.
    pub plain_ms: Vec<f64>,
}

/// Instrumented vs plain device time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overhead {
    /// Median plain (ms).
    pub plain_ms: f64,
    /// Median instrumented (ms).
    pub instrumented_ms: f64,
    /// `instrumented / plain`.
    pub ratio: f64,
}

impl TimelineRun {
    /// The overhead, when plain rounds ran.
    pub fn overhead(&self) -> Option<Overhead> {
        if self.plain_ms.is_empty() || self.instrumented_ms.is_empty() {
            return None;
        }
        let p = TimingStats::of(&self.plain_ms).median_ms;
        let i = TimingStats::of(&self.instrumented_ms).median_ms;
        Some(Overhead {
            plain_ms: p,
            instrumented_ms: i,
            ratio: if p > 0.0 { i / p } else { 0.0 },
        })
    }
}

/// The instrumented kernel of launch `l`: its Program emitted with `opts` at the launch's
/// own workgroup size, recording the units of its spec. `run --timeline` JITs exactly this
/// (`opts`: the device's sm, the run's grid barrier lowering, the emitter's defaults
/// otherwise), and `emit --timeline` prints it, so both show the same PTX.
pub fn instrumented_kernel(
    l: &TimelineLaunch,
    opts: &EmitOptions,
) -> std::result::Result<EmittedKernel, EmitError> {
    emit_instrumented(&l.program, l.shape.workgroup_size, &l.spec, opts)
}

/// `program` emitted with `opts` at `workgroup`, recording `spec`'s units.
pub(super) fn emit_instrumented(
    program: &Program,
    workgroup: [u32; 3],
    spec: &TimelineSpec,
    opts: &EmitOptions,
) -> std::result::Result<EmittedKernel, EmitError> {
    let opts = EmitOptions {
        workgroup_size: workgroup,
        ..opts.clone()
    };
    crate::emit::emit_timeline(program, &opts, spec)
}

/// Host phases of a run, as offsets from its start.
struct Phases {
    t0: Instant,
    list: Vec<HostPhase>,
}

impl Phases {
    fn mark(&mut self, name: &str, since: Instant) {
        self.list.push(HostPhase {
            name: name.to_string(),
            start_ms: since.duration_since(self.t0).as_secs_f64() * 1e3,
            dur_ms: since.elapsed().as_secs_f64() * 1e3,
        });
    }
}

/// Per-round device times of a timeline run, and the first round's per-launch times.
struct Rounds {
    instrumented_ms: Vec<f64>,
    plain_ms: Vec<f64>,
    first: Vec<f64>,
}

impl Runtime {
    /// Runs `launches` in order over `buffers` (read back after the first round), records
    /// their timelines, then times `rounds - 1` more instrumented rounds and `plain_rounds`
    /// plain ones, alternating. Each round is one pass of the list with per-launch events.
    pub fn run_timeline(
        &mut self,
        launches: &[TimelineLaunch],
        buffers: &mut [HostBuffer],
        rounds: u32,
        plain_rounds: u32,
        opts: &DispatchOptions,
        jit: &JitOptions,
    ) -> Result<TimelineRun> {
        let mut phases = Phases {
            t0: Instant::now(),
            list: Vec::new(),
        };
        let list = LaunchList::timeline(launches, buffers.len())?;
        let plain_list = list.uninstrumented();
        let t = Instant::now();
        let kernels = self.compile_list(&list, jit)?;
        let plain = if plain_rounds > 0 {
            self.compile_list(&plain_list, jit)?
        } else {
            Vec::new()
        };
        phases.mark("JIT", t);
        let n = buffers.len();
        let mut all: Vec<HostBuffer> = buffers.to_vec();
        all.extend(list.record_buffers()?);
        let t = Instant::now();
        let set = self.upload(&all)?;
        phases.mark("upload", t);
        let run = (|| -> Result<Rounds> {
            let mut r = Rounds {
                instrumented_ms: Vec::new(),
                plain_ms: Vec::new(),
                first: Vec::new(),
            };
            for round in 0..rounds.max(1).max(plain_rounds) {
                if round < rounds.max(1) {
                    let t = Instant::now();
                    let pass =
                        self.launch_list(&list, &kernels, &set, ListTiming::PerLaunch, opts)?;
                    if round == 0 {
                        phases.mark("launch", t);
                        let t = Instant::now();
                        self.download(&set, &mut all)?;
                        phases.mark("readback", t);
                        r.first.clone_from(&pass.launch_ms);
                    }
                    r.instrumented_ms.push(pass.total_ms);
                }
                if round < plain_rounds {
                    let pass =
                        self.launch_list(&plain_list, &plain, &set, ListTiming::PerLaunch, opts)?;
                    r.plain_ms.push(pass.total_ms);
                }
            }
            Ok(r)
        })();
        self.release(set);
        let Rounds {
            instrumented_ms,
            plain_ms,
            first,
        } = run?;
        for (d, s) in buffers.iter_mut().zip(&all) {
            d.data.clone_from(&s.data);
        }
        let capture = Capture {
            launches: launches
                .iter()
                .enumerate()
                .map(|(i, l)| LaunchRecords {
                    kernel: kernels[i].emitted.kernel_name.clone(),
                    spec: l.spec.clone(),
                    grid: l.shape.grid,
                    device_ms: first.get(i).copied(),
                    program: Some(l.program.fingerprint()),
                    bytes: std::mem::take(&mut all[n + i].data),
                })
                .collect(),
            host: phases.list,
            device_sms: Some(self.caps().sm_count),
        };
        Ok(TimelineRun {
            capture,
            kernels: kernels.into_iter().map(|k| k.emitted).collect(),
            instrumented_ms,
            plain_ms,
        })
    }
}
