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
use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::{Access, ElemType, Program};
use crate::runtime::dispatch::{DispatchOptions, LaunchMode};
use crate::runtime::jit::JitOptions;
use crate::runtime::{Result, Runtime, RuntimeError};
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
        let p = crate::runtime::TimingStats::of(&self.plain_ms).median_ms;
        let i = crate::runtime::TimingStats::of(&self.instrumented_ms).median_ms;
        Some(Overhead {
            plain_ms: p,
            instrumented_ms: i,
            ratio: if p > 0.0 { i / p } else { 0.0 },
        })
    }
}

fn record_buffer(spec: &TimelineSpec, shape: &LaunchShape, i: usize) -> Result<HostBuffer> {
    let blocks: u64 = shape.grid.iter().map(|&g| g as u64).product();
    let bytes = spec.buffer_bytes(blocks);
    if bytes > 1 << 32 {
        return Err(RuntimeError::Launch(format!(
            "timeline of launch {i} needs {bytes} bytes of records ({blocks} blocks x {} slots)\n  Fix: run fewer workgroups with --timeline",
            spec.slots_per_block
        )));
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
            let eopts = EmitOptions {
                workgroup_size: l.shape.workgroup_size,
                ..eopts
            };
            let k = crate::emit::emit_timeline(&l.program, &eopts, &l.spec)?;
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
    /// The megakernel plan: one launch per fused group.
    Fused,
}

/// The timeline launches of `pipeline` in `form`: each step as a plain kernel (block
/// lifetimes tagged with the step), or each group of the plan fused (steps, virtual
/// workgroups and waits), with the persistent grids the plan run uses.
pub fn pipeline_launches(
    rt: &mut Runtime,
    pipeline: &crate::ir::Pipeline,
    prepared: &crate::inputs::pipeline::PreparedPipeline,
    form: PipelineForm,
    jit: &JitOptions,
    sync: crate::megakernel::plan::SyncMode,
) -> std::result::Result<Vec<TimelineLaunch>, crate::util::Problem> {
    use crate::megakernel::timeline::fused_spec;
    let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
    if form == PipelineForm::Separate {
        let launches = crate::megakernel::launch::separate_launches(pipeline, &shapes)?;
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
    let plan_opts = crate::megakernel::plan::PlanOptions::new(rt.caps().clone());
    let cache = crate::megakernel::cache::PlanCache::user();
    let cached =
        crate::megakernel::cache::plan_cached(pipeline, &shapes, &plan_opts, cache.as_ref())?;
    let (launches, _) =
        super::pipeline::plan_launches(rt, pipeline, &shapes, &cached.plan, None, jit, sync)?;
    let mut out = Vec::new();
    for (group, launch) in cached.plan.groups.iter().zip(launches) {
        let mut spec = group.spec_for(sync);
        if spec.persistent_blocks.is_some() {
            spec.persistent_blocks = Some(launch.shape.grid[0]);
        }
        let fused = crate::megakernel::fuse_group(pipeline, &shapes, &spec)?;
        out.push(TimelineLaunch {
            spec: fused_spec(&fused),
            program: fused.program,
            shape: fused.shape,
            buffers: launch.buffers,
        });
    }
    Ok(out)
}
