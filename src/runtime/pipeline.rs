//! Pipelines on the GPU: a list of kernel launches over one set of pipeline buffers that stay
//! on the device from launch to launch (uploaded once, read back once), each launch timed with
//! CUDA events like a dispatch.
//!
//! The same executor runs both executions of a pipeline: separately (one launch per step,
//! [`separate_launches`]) and as a megakernel plan (one launch per fused group, built above
//! this layer by `megakernel::FusedKernel::launch`). Only the list of launches differs.

use std::time::Instant;

use serde::Serialize;

use super::dispatch::{DispatchOptions, TimingStats};
use super::jit::JitOptions;
use super::{Result, Runtime, RuntimeError};
use crate::inputs::HostBuffer;
pub use crate::megakernel::launch::{separate_launches, PipelineLaunch};

/// How one launch went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineLaunchReport {
    /// Kernel (Program) name.
    pub kernel: String,
    /// Device time of the launch in the first repetition (ms), from CUDA events.
    pub device_ms: f64,
    /// Each repetition's device time of this launch (ms).
    pub samples_ms: Vec<f64>,
}

/// What a pipeline execution did and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineRunReport {
    /// Per launch, in order.
    pub launches: Vec<PipelineLaunchReport>,
    /// Device time of the whole execution (sum over its launches), over the repetitions.
    pub total_ms: TimingStats,
    /// Host time to upload the buffers before the first repetition (ms).
    pub upload_ms: f64,
    /// Host time to read the buffers back after the first repetition (ms).
    pub download_ms: f64,
}

impl Runtime {
    /// Runs `launches` in order over `buffers` (the pipeline buffers, which stay on the device
    /// between launches), `repeat` times (at least once); after the first repetition every
    /// buffer marked writable in `buffers` is read back into it. Later repetitions start
    /// again from the original contents (uploaded anew, outside the timed launches), so
    /// every repetition computes the same thing.
    pub fn run_pipeline(
        &mut self,
        launches: &[PipelineLaunch],
        buffers: &mut [HostBuffer],
        repeat: u32,
        opts: &DispatchOptions,
    ) -> Result<PipelineRunReport> {
        let mut kernels = Vec::with_capacity(launches.len());
        for l in launches {
            if let Some(&bad) = l.buffers.iter().find(|&&i| i >= buffers.len()) {
                return Err(RuntimeError::Abi(format!(
                    "launch of `{}` names pipeline buffer {bad} of {}\n  Fix: index the buffers given to run_pipeline",
                    l.program.name,
                    buffers.len()
                )));
            }
            kernels.push(self.compile_program(
                &l.program,
                l.shape.workgroup_size,
                &JitOptions::default(),
            )?);
        }
        let initial: Vec<HostBuffer> = buffers.to_vec();
        let launch_opts = DispatchOptions {
            repeat: 1,
            device_timing: true,
            ..opts.clone()
        };
        let mut samples = vec![Vec::new(); launches.len()];
        let mut totals = Vec::new();
        let (mut upload_ms, mut download_ms) = (0.0, 0.0);
        for r in 0..repeat.max(1) {
            let t = Instant::now();
            let set = self.upload(&initial)?;
            if r == 0 {
                upload_ms = t.elapsed().as_secs_f64() * 1e3;
            }
            let mut total = 0.0;
            let mut run = || -> Result<()> {
                for (i, (l, k)) in launches.iter().zip(&kernels).enumerate() {
                    let times = self.launch_resident_mapped(
                        &k.handle,
                        &k.emitted.abi,
                        &l.shape,
                        &set,
                        Some(&l.buffers),
                        1,
                        &launch_opts,
                    )?;
                    let ms: f64 = times.iter().filter_map(|t| t.device_ms).sum();
                    samples[i].push(ms);
                    total += ms;
                }
                if r == 0 {
                    let t = Instant::now();
                    self.download(&set, buffers)?;
                    download_ms = t.elapsed().as_secs_f64() * 1e3;
                }
                Ok(())
            };
            let outcome = run();
            self.release(set);
            outcome?;
            totals.push(total);
        }
        Ok(PipelineRunReport {
            launches: launches
                .iter()
                .zip(samples)
                .map(|(l, s)| PipelineLaunchReport {
                    kernel: l.program.name.clone(),
                    device_ms: s.first().copied().unwrap_or(0.0),
                    samples_ms: s,
                })
                .collect(),
            total_ms: TimingStats::of(&totals),
            upload_ms,
            download_ms,
        })
    }
}
