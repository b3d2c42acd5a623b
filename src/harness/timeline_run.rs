//! Timeline runs: instrumented kernels (`emit::emit_timeline`) launched over resident
//! buffers with one zeroed record buffer each, read back into a `timeline::Capture`; with
//! `plain_rounds`, the same launches uninstrumented timed side by side (the overhead).
//!
//! The record buffer of launch `i` rides in the resident set after the data buffers, so
//! upload (cleared on the device, it is all zero), readback and release are the ordinary
//! ones; its pointer is appended after the kernel's other arguments.

use std::time::Instant;

use serde::Serialize;

use crate::emit::timeline::TimelineSpec;
use crate::emit::{EmitOptions, EmittedKernel};
use crate::inputs::pipeline::PreparedPipeline;
use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::{Access, ElemType, Program};
use crate::megakernel::compiled::CompiledPipeline;
use crate::megakernel::timeline::fused_spec;
use crate::runtime::dispatch::{DispatchOptions, LaunchMode};
use crate::runtime::jit::JitOptions;
use crate::runtime::parity::{compare, ParityReport};
use crate::runtime::{Result, Runtime, RuntimeError};
use crate::timeline::{Capture, HostPhase, LaunchRecords};
use crate::util::Problem;

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
        let p = crate::runtime::TimingStats::of(&self.plain_ms).median_ms;
        let i = crate::runtime::TimingStats::of(&self.instrumented_ms).median_ms;
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
) -> std::result::Result<EmittedKernel, crate::emit::EmitError> {
    let opts = EmitOptions {
        workgroup_size: l.shape.workgroup_size,
        ..opts.clone()
    };
    crate::emit::emit_timeline(&l.program, &opts, &l.spec)
}

fn record_buffer(spec: &TimelineSpec, shape: &LaunchShape, i: usize) -> Result<HostBuffer> {
    let blocks: u64 = shape.grid.iter().map(|&g| g as u64).product();
    let bytes = spec.buffer_bytes(blocks);
    if bytes > 1 << 32 {
        return Err(RuntimeError::Launch(crate::util::Problem::new(format!("timeline of launch {i} needs {bytes} bytes of records ({blocks} blocks x {} slots)", spec.slots_per_block), "run fewer workgroups with --timeline")));
    }
    Ok(HostBuffer {
        name: format!("timeline_{i}"),
        elem: ElemType::U32,
        access: Access::ReadWrite,
        binding: u32::MAX,
        data: vec![0; bytes as usize],
    })
}

impl Runtime {
    /// Runs `launches` in order over `buffers` (read back after the first round), records
    /// their timelines, then times `rounds - 1` more instrumented rounds and `plain_rounds`
    /// plain ones, alternating.
    pub fn run_timeline(
        &mut self,
        launches: &[TimelineLaunch],
        buffers: &mut [HostBuffer],
        rounds: u32,
        plain_rounds: u32,
        opts: &DispatchOptions,
        jit: &JitOptions,
    ) -> Result<TimelineRun> {
        let t0 = Instant::now();
        let mut host = Vec::new();
        let mut phase = |name: &str, since: Instant| {
            host.push(HostPhase {
                name: name.to_string(),
                start_ms: since.duration_since(t0).as_secs_f64() * 1e3,
                dur_ms: since.elapsed().as_secs_f64() * 1e3,
            });
        };
        let caps = self.caps();
        let sm = caps.cc_major * 10 + caps.cc_minor;
        let device_sms = caps.sm_count;
        let mut kernels = Vec::new();
        let mut handles = Vec::new();
        let mut plain = Vec::new();
        let t = Instant::now();
        for l in launches {
            let eopts = EmitOptions {
                sm,
                grid_barrier: jit.grid_barrier,
                ..EmitOptions::for_program(&l.program)
            };
            let k = instrumented_kernel(l, &eopts)?;
            let (mut h, _) = self.load_kernel(&k.ptx, &k.kernel_name, jit)?;
            // A cooperative grid was sized from the plain kernel's residency; recording
            // costs registers, and a persistent grid that no longer fits is refused. So the
            // instrumented kernel is built for that many blocks per SM (`.minnctapersm`; it
            // may spill a little: a timeline measures the schedule, not register pressure).
            if k.abi.grid_sync {
                let blocks: u64 = l.shape.grid.iter().map(|&g| u64::from(g)).product();
                let threads = l.shape.workgroup_size.iter().product::<u32>();
                if self.resident_blocks(&h, threads)? < blocks {
                    let per_sm = blocks.div_ceil(u64::from(device_sms.max(1)));
                    let ptx = crate::emit::with_min_blocks_per_sm(
                        &k.ptx,
                        u32::try_from(per_sm).unwrap_or(u32::MAX),
                    );
                    h = self.load_kernel(&ptx, &k.kernel_name, jit)?.0;
                }
            }
            handles.push(h);
            kernels.push(k);
            if plain_rounds > 0 {
                plain.push(self.compile_program_for(
                    &l.program,
                    l.shape.workgroup_size,
                    Some(sm),
                    jit,
                )?);
            }
        }
        phase("JIT", t);
        let n = buffers.len();
        let mut all: Vec<HostBuffer> = buffers.to_vec();
        for (i, l) in launches.iter().enumerate() {
            all.push(record_buffer(&l.spec, &l.shape, i)?);
        }
        let t = Instant::now();
        let set = self.upload(&all)?;
        phase("upload", t);
        let run = (|| -> Result<(Vec<f64>, Vec<f64>, Vec<f64>)> {
            let records: Vec<u64> = {
                let ptrs = self.resident_ptrs(&set)?;
                ptrs[n..].to_vec()
            };
            let mut instrumented = Vec::new();
            let mut plain_ms = Vec::new();
            let mut first = Vec::new();
            let total = rounds.max(1).max(plain_rounds);
            for round in 0..total {
                for instr in [true, false] {
                    let wanted = if instr {
                        round < rounds.max(1)
                    } else {
                        round < plain_rounds
                    };
                    if !wanted {
                        continue;
                    }
                    let t = Instant::now();
                    let mut sum = 0.0;
                    for (i, l) in launches.iter().enumerate() {
                        let (h, abi) = if instr {
                            (&handles[i], &kernels[i].abi)
                        } else {
                            (&plain[i].handle, &plain[i].emitted.abi)
                        };
                        let mut ready =
                            self.prepare_launch(h, abi, &l.shape, &set, &l.buffers, opts)?;
                        if instr {
                            ready.args.push(records[i]);
                        }
                        self.arm_grid_sync(&mut ready)?;
                        let mode = LaunchMode {
                            cooperative: ready.cooperative,
                            timeout: opts.timeout,
                            timed: true,
                        };
                        let lt =
                            self.launch_core(&h.name, ready.f, &ready.geo, &mut ready.args, mode)?;
                        let ms = lt.device_ms.unwrap_or(0.0);
                        if round == 0 && instr {
                            first.push(ms);
                        }
                        sum += ms;
                    }
                    if round == 0 && instr {
                        phase("launch", t);
                        let t = Instant::now();
                        self.download(&set, &mut all)?;
                        phase("readback", t);
                    }
                    if instr {
                        instrumented.push(sum);
                    } else {
                        plain_ms.push(sum);
                    }
                }
            }
            Ok((instrumented, plain_ms, first))
        })();
        self.release(set);
        let (instrumented_ms, plain_ms, first) = run?;
        for (d, s) in buffers.iter_mut().zip(&all) {
            d.data.clone_from(&s.data);
        }
        let capture = Capture {
            launches: launches
                .iter()
                .enumerate()
                .map(|(i, l)| LaunchRecords {
                    kernel: kernels[i].kernel_name.clone(),
                    spec: l.spec.clone(),
                    grid: l.shape.grid,
                    device_ms: first.get(i).copied(),
                    program: Some(l.program.fingerprint()),
                    bytes: std::mem::take(&mut all[n + i].data),
                })
                .collect(),
            host,
            device_sms: Some(device_sms),
        };
        Ok(TimelineRun {
            capture,
            kernels,
            instrumented_ms,
            plain_ms,
        })
    }
}

/// Which form of a pipeline a timeline run records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineForm {
    /// One launch per step.
    Separate,
    /// The compiled plan: one launch per fused group.
    Fused,
}

/// The timeline launches of `compiled` in `form`: each step as a plain kernel (block
/// lifetimes tagged with the step), or each fitted group's fused kernel (steps, virtual
/// workgroups and waits): exactly the kernels a run of the same compiled pipeline launches.
pub fn pipeline_launches(
    compiled: &CompiledPipeline,
    form: PipelineForm,
) -> std::result::Result<Vec<TimelineLaunch>, Problem> {
    if form == PipelineForm::Separate {
        let launches = compiled.separate_launches()?;
        return Ok(launches
            .into_iter()
            .enumerate()
            .map(|(k, l)| TimelineLaunch {
                spec: TimelineSpec::kernel(Some(k as u32)),
                program: l.program,
                shape: l.shape,
                buffers: l.buffers,
            })
            .collect());
    }
    let launches = compiled.fused_launches()?;
    Ok(compiled
        .groups
        .iter()
        .zip(launches)
        .filter_map(|(g, l)| {
            let k = g.kernel.as_ref().ok()?;
            Some(TimelineLaunch {
                spec: fused_spec(k),
                program: l.program,
                shape: l.shape,
                buffers: l.buffers,
            })
        })
        .collect())
}

/// One recorded form of a pipeline.
#[derive(Debug, Clone)]
pub struct RecordedPipelineForm {
    /// `separate`, or the fused form's label (`fused`, `dataflow`: [`crate::megakernel::plan::SyncMode::fused_label`]).
    pub label: &'static str,
    /// The run.
    pub run: TimelineRun,
    /// The instrumented kernels' results against the reference interpreter, under the
    /// pipeline's tolerance (transient buffers skipped).
    pub parity: ParityReport,
}

/// Records `forms` of `compiled` (separate launches and/or its fitted fused kernels) over the
/// pipeline's initial contents `prepared`, each `rounds` instrumented rounds and
/// `plain_rounds` plain ones (the overhead), and checks each form's results against the
/// reference interpreter: the instrumented kernels must compute what the plain ones do.
pub fn record_pipeline(
    rt: &mut Runtime,
    compiled: &CompiledPipeline,
    prepared: &PreparedPipeline,
    forms: &[PipelineForm],
    (rounds, plain_rounds): (u32, u32),
    opts: &DispatchOptions,
    jit: &JitOptions,
) -> std::result::Result<Vec<RecordedPipelineForm>, Problem> {
    let expected =
        super::pipeline::expected(&compiled.pipeline, prepared, crate::interp::DEFAULT_FUEL)?;
    let tol = super::pipeline::pipeline_tolerance(&compiled.pipeline);
    let initial = super::pipeline::host_buffers(prepared);
    let mut out = Vec::new();
    for &form in forms {
        let launches = pipeline_launches(compiled, form)?;
        let mut bufs = initial.clone();
        let run = rt.run_timeline(&launches, &mut bufs, rounds, plain_rounds, opts, jit)?;
        let parity = compare(&super::pipeline::comparable(prepared, bufs), &expected, tol);
        let label = match form {
            PipelineForm::Separate => "separate",
            PipelineForm::Fused => compiled.sync.fused_label(),
        };
        out.push(RecordedPipelineForm { label, run, parity });
    }
    Ok(out)
}
