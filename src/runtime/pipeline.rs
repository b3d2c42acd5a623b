//! Pipelines on the GPU: a list of kernel launches over one set of pipeline buffers that stay
//! on the device from launch to launch (uploaded once, read back once), the whole sequence
//! timed with one pair of CUDA events.
//!
//! The same launch list runs both executions of a pipeline (see [`super::launch_list`]):
//! separately (one launch per step, [`separate_launches`]) and as a megakernel plan (one
//! launch per fused group, built above this layer by `megakernel::FusedKernel::launch`).
//! Only the list of launches differs.

use std::time::Instant;

use serde::Serialize;

use super::dispatch::{DispatchOptions, TimingStats};
use super::jit::JitOptions;
use super::launch_list::{LaunchList, ListTiming};
use super::GENERIC_FIX;
use super::{Result, Runtime, RuntimeError};
use crate::inputs::HostBuffer;
use crate::ir::Program;
pub use crate::megakernel::launch::{separate_launches, PipelineLaunch};

/// One launch of the execution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineLaunchReport {
    /// Kernel (Program) name.
    pub kernel: String,
    /// Workgroups launched.
    pub grid: [u32; 3],
    /// Threads per workgroup.
    pub workgroup_size: [u32; 3],
}

/// What a pipeline execution did and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineRunReport {
    /// Per launch, in order.
    pub launches: Vec<PipelineLaunchReport>,
    /// Device time of the whole execution (all launches as one sequence), over the
    /// repetitions.
    pub total_ms: TimingStats,
    /// Each repetition's device time (ms), in order.
    pub samples_ms: Vec<f64>,
    /// Host time to upload the buffers before the first repetition (ms).
    pub upload_ms: f64,
    /// Host time to read the buffers back after the first repetition (ms).
    pub download_ms: f64,
}

impl Runtime {
    /// Runs `launches` in order over `buffers` (the pipeline buffers, which stay on the device
    /// between launches), `repeat` times (at least once); after the first repetition every
    /// buffer marked writable in `buffers` is read back into it. Later repetitions start
    /// again from the original contents (uploaded anew, outside the timed region), so every
    /// repetition computes the same thing.
    ///
    /// Each repetition is timed as one sequence: a CUDA event before the first launch and one
    /// after the last, the launches enqueued back to back without host waits in between. So
    /// the figure includes the gaps between kernels on the device, which is exactly what
    /// fusing saves, and compares separate and fused executions like for like.
    pub fn run_pipeline(
        &mut self,
        launches: &[PipelineLaunch],
        buffers: &mut [HostBuffer],
        repeat: u32,
        opts: &DispatchOptions,
        jit: &JitOptions,
    ) -> Result<PipelineRunReport> {
        let list = LaunchList::plain(launches, buffers.len())?;
        let kernels = self.compile_list(&list, jit)?;
        let initial: Vec<HostBuffer> = buffers.to_vec();
        let mut totals = Vec::new();
        let (mut upload_ms, mut download_ms) = (0.0, 0.0);
        for r in 0..repeat.max(1) {
            let t = Instant::now();
            let set = self.upload(&initial)?;
            if r == 0 {
                upload_ms = t.elapsed().as_secs_f64() * 1e3;
            }
            let mut run = || -> Result<f64> {
                let pass = self.launch_list(&list, &kernels, &set, ListTiming::Sequence, opts)?;
                if r == 0 {
                    let t = Instant::now();
                    self.download(&set, buffers)?;
                    download_ms = t.elapsed().as_secs_f64() * 1e3;
                }
                Ok(pass.total_ms)
            };
            let outcome = run();
            self.release(set);
            totals.push(outcome?);
        }
        Ok(PipelineRunReport {
            launches: launches
                .iter()
                .map(|l| PipelineLaunchReport {
                    kernel: l.program.name.clone(),
                    grid: l.shape.grid,
                    workgroup_size: l.shape.workgroup_size,
                })
                .collect(),
            total_ms: TimingStats::of(&totals),
            samples_ms: totals,
            upload_ms,
            download_ms,
        })
    }

    /// Blocks of `program` (launched with `workgroup`) that the driver can keep resident at
    /// once on the whole device: `cuOccupancyMaxActiveBlocksPerMultiprocessor` times the SM
    /// count. The planner's persistent grid comes from the occupancy estimator; this confirms
    /// it on the GPU before a cooperative launch.
    pub fn coresident_blocks(
        &mut self,
        program: &Program,
        workgroup: [u32; 3],
        jit: &JitOptions,
    ) -> Result<u32> {
        let k = self.compile_program(program, workgroup, jit)?;
        let (f, _) = self.kernel_for_launch(&k.handle)?;
        let threads = workgroup.iter().product::<u32>();
        let per_sm = f
            .max_active_blocks(threads, 0)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        Ok(per_sm.saturating_mul(self.caps().sm_count))
    }
}
