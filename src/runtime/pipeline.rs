//! Pipelines on the GPU: a list of kernel launches over one set of pipeline buffers that stay
//! on the device from launch to launch (uploaded once, read back once), the whole sequence
//! timed with one pair of CUDA events.
//!
//! The same executor runs both executions of a pipeline: separately (one launch per step,
//! [`separate_launches`]) and as a megakernel plan (one launch per fused group, built above
//! this layer by `megakernel::FusedKernel::launch`). Only the list of launches differs.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::dispatch::{DispatchOptions, ReadyLaunch, TimingStats};
use super::driver::{self, Event};
use super::jit::JitOptions;
use super::{profiler_range, GENERIC_FIX};
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
        let mut kernels = Vec::with_capacity(launches.len());
        for l in launches {
            if let Some(&bad) = l.buffers.iter().find(|&&i| i >= buffers.len()) {
                return Err(RuntimeError::Abi(crate::util::Problem::new(
                    format!(
                        "launch of `{}` names pipeline buffer {bad} of {}",
                        l.program.name,
                        buffers.len()
                    ),
                    "index the buffers given to run_pipeline",
                )));
            }
            kernels.push(self.compile_program(&l.program, l.shape.workgroup_size, jit)?);
        }
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
                let mut ready = Vec::with_capacity(launches.len());
                for (l, k) in launches.iter().zip(&kernels) {
                    ready.push(self.prepare_launch(
                        &k.handle,
                        &k.emitted.abi,
                        &l.shape,
                        &set,
                        &l.buffers,
                        opts,
                    )?);
                }
                let names: Vec<&str> = launches.iter().map(|l| l.program.name.as_str()).collect();
                let ms = self.launch_sequence(&names, &mut ready, opts.timeout)?;
                if r == 0 {
                    let t = Instant::now();
                    self.download(&set, buffers)?;
                    download_ms = t.elapsed().as_secs_f64() * 1e3;
                }
                Ok(ms)
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

    /// Enqueues `ready` back to back between the session's two events and waits for the
    /// last one (polling against `timeout`); returns the device time of the whole sequence.
    fn launch_sequence(
        &mut self,
        names: &[&str],
        ready: &mut [ReadyLaunch],
        timeout: Option<Duration>,
    ) -> Result<f64> {
        let _range = profiler_range("vyrescope pipeline sequence");
        {
            let sess = self.sess()?;
            sess.ev_start
                .record(&sess.stream)
                .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        }
        for (k, launch) in ready.iter_mut().enumerate() {
            let name = names.get(k).copied().unwrap_or("kernel");
            let _step = profiler_range(&format!("vyrescope launch {k}: {name}"));
            self.arm_grid_sync(launch)?;
            let sess = self.sess()?;
            if let Err(e) = driver::launch(
                launch.f,
                &launch.geo,
                &sess.stream,
                &mut launch.args,
                launch.cooperative,
            ) {
                return Err(self.launch_error(name, e));
            }
            self.telemetry
                .record_launch(launch.cooperative, launch.slots, launch.slots, None);
        }
        let sess = self.sess()?;
        sess.ev_stop
            .record(&sess.stream)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let t = Instant::now();
        let waited = loop {
            let sess = self.sess()?;
            match sess.ev_stop.query() {
                Ok(true) => break Ok(()),
                Ok(false) if timeout.is_none_or(|l| t.elapsed() < l) => {
                    std::thread::sleep(Duration::from_micros(50))
                }
                Ok(false) => {
                    self.telemetry.faults += 1;
                    let recover_ms = self.recreate()?;
                    return Err(RuntimeError::Timeout {
                        kernel: names.join(" + "),
                        timeout_ms: timeout.map_or(0, |l| l.as_millis() as u64),
                        recover_ms,
                    });
                }
                Err(e) => break Err(e),
            }
        };
        self.telemetry.sync_points += 1;
        if let Err(e) = waited {
            return Err(self.launch_error(&names.join(" + "), e));
        }
        let sess = self.sess()?;
        Event::elapsed_ms(&sess.ev_start, &sess.ev_stop)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))
    }
}
