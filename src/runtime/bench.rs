//! Benchmarks behind `vyrescope bench-kernel` (hidden): the emitted kernel's device time at
//! a given size, full-dispatch wall time (upload, launch, readback), and warm dispatch host
//! overhead against a bare cudarc launch of the same PTX on the same resident buffers.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::dispatch::TimingStats;
use super::driver::{self, Geometry};
use super::execute::tolerance_for;
use super::parity::{self, ParityReport};
use super::{DispatchOptions, JitOptions, Result, Runtime, RuntimeError, GENERIC_FIX};
use crate::inputs::{self, PreparedRun};
use crate::ir::Program;

/// Device and full-dispatch times of one Program at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelBench {
    /// Program name.
    pub program: String,
    /// Invocations along x.
    pub elements: u64,
    /// Workgroup size.
    pub workgroup: [u32; 3],
    /// Grid.
    pub grid: [u32; 3],
    /// Registers per thread.
    pub regs: u32,
    /// Sum of host buffer sizes (bytes).
    pub buffer_bytes: u64,
    /// Device time per launch on resident buffers (after 3 warm-up launches).
    pub device_ms: TimingStats,
    /// Full dispatch wall time: upload + launch + readback (after one warm-up dispatch).
    pub full_dispatch_ms: TimingStats,
    /// Bytes uploaded / read back by one full dispatch.
    pub full_h2d_bytes: u64,
    /// Bytes read back by one full dispatch.
    pub full_d2h_bytes: u64,
    /// The last full dispatch's results compared with the reference interpreter at the same
    /// size, so a timed kernel is also a correct one.
    pub parity: ParityReport,
}

/// Warm dispatch host overhead vs a bare cudarc launch, compared like for like: launch +
/// wait without device timing on both sides, and launch + wait with a CUDA event pair around
/// the launch on both sides (wall microseconds per launch).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverheadBench {
    /// Kernel name.
    pub kernel: String,
    /// Elements (small, so the kernel itself is negligible).
    pub elements: u64,
    /// vyrescope `launch_resident` without device timing (cached module, resident buffers,
    /// launch checks, telemetry; waits with `cuStreamSynchronize`).
    pub vyrescope_untimed_us: TimingStats,
    /// cudarc `result::launch_kernel` + `cuStreamSynchronize`.
    pub bare_cudarc_us: TimingStats,
    /// `vyrescope_untimed_us` median / `bare_cudarc_us` median.
    pub ratio_untimed: f64,
    /// vyrescope `launch_resident` with CUDA-event device timing (the default).
    pub vyrescope_timed_us: TimingStats,
    /// cudarc: event record, `result::launch_kernel`, event record, event synchronize,
    /// `cuEventElapsedTime`.
    pub bare_cudarc_timed_us: TimingStats,
    /// `vyrescope_timed_us` median / `bare_cudarc_timed_us` median.
    pub ratio_timed: f64,
}

/// `program` with its `run.elements` set to `elements` (grid derived from it); inputs with an
/// explicit `len` (e.g. one partial sum per workgroup) scale by the same factor.
pub fn with_elements(program: &Program, elements: u64) -> Program {
    let mut p = program.clone();
    let mut run = p.run.clone().unwrap_or_default();
    if let Some(old) = run.elements.filter(|&o| o > 0) {
        for (_, input) in run.inputs.iter_mut() {
            if let Some(len) = input.len.as_mut() {
                *len = (*len as u128 * elements as u128 / old as u128).max(1) as u64;
            }
        }
    }
    run.elements = Some(elements);
    run.grid = None;
    p.run = Some(run);
    p
}

fn prepare(program: &Program, base: &Path, workgroup: Option<[u32; 3]>) -> Result<PreparedRun> {
    Ok(inputs::prepare(program, base, workgroup, None)?)
}

impl Runtime {
    /// Times `program` at `elements`: `repeat` resident launches and `full_reps` full
    /// dispatches.
    pub fn bench_program(
        &mut self,
        program: &Program,
        base: &Path,
        elements: u64,
        workgroup: Option<[u32; 3]>,
        repeat: u32,
        full_reps: u32,
    ) -> Result<KernelBench> {
        let p = with_elements(program, elements);
        let PreparedRun { shape, buffers } = prepare(&p, base, workgroup)?;
        let c = self.compile_program(&p, shape.workgroup_size, &JitOptions::default())?;
        let opts = DispatchOptions {
            useful_invocations: Some(elements),
            ..DispatchOptions::default()
        };
        let set = self.upload(&buffers)?;
        let timed = (|| {
            self.launch_resident(&c.handle, &c.emitted.abi, &shape, &set, 3, &opts)?;
            self.launch_resident(
                &c.handle,
                &c.emitted.abi,
                &shape,
                &set,
                repeat.max(1),
                &opts,
            )
        })();
        self.release(set);
        let samples: Vec<f64> = timed?.iter().filter_map(|t| t.device_ms).collect();
        let mut full = Vec::new();
        let mut h2d = 0;
        let mut d2h = 0;
        let mut gpu = Vec::new();
        for i in 0..=full_reps.max(1) {
            let mut bufs = buffers.clone();
            let r = self.dispatch(&c.handle, &c.emitted.abi, &shape, &mut bufs, &opts)?;
            if i > 0 {
                full.push(r.full_ms);
            }
            h2d = r.h2d_bytes;
            d2h = r.d2h_bytes;
            gpu = bufs;
        }
        let mut reference = buffers.clone();
        crate::interp::run(&p, &shape, &mut reference)?;
        let parity = parity::compare(&gpu, &reference, tolerance_for(&p));
        if parity.passed {
            self.telemetry.parity_passed += 1;
        } else {
            self.telemetry.parity_failed += 1;
        }
        Ok(KernelBench {
            program: p.name.clone(),
            elements,
            workgroup: shape.workgroup_size,
            grid: shape.grid,
            regs: c.info.resources.regs_per_thread,
            buffer_bytes: buffers.iter().map(|b| b.data.len() as u64).sum(),
            device_ms: TimingStats::of(&samples),
            full_dispatch_ms: TimingStats::of(&full),
            full_h2d_bytes: h2d,
            full_d2h_bytes: d2h,
            parity,
        })
    }

    /// Warm dispatch overhead of `program` at a small size vs a bare cudarc launch loop of
    /// the same PTX with the same arguments, `iters` each after warm-up.
    pub fn bench_overhead(
        &mut self,
        program: &Program,
        base: &Path,
        elements: u64,
        iters: u32,
    ) -> Result<OverheadBench> {
        let p = with_elements(program, elements);
        let PreparedRun { shape, buffers } = prepare(&p, base, None)?;
        let c = self.compile_program(&p, shape.workgroup_size, &JitOptions::default())?;
        if c.emitted.abi.grid_sync {
            return Err(RuntimeError::Other(
                "overhead bench needs a kernel without a grid barrier\n  Fix: use the elementwise fixture".into(),
            ));
        }
        let set = self.upload(&buffers)?;
        let result = (|| {
            let ours = |rt: &mut Runtime, device_timing: bool| -> Result<Vec<f64>> {
                let opts = DispatchOptions {
                    device_timing,
                    ..DispatchOptions::default()
                };
                rt.launch_resident(&c.handle, &c.emitted.abi, &shape, &set, 200, &opts)?;
                let mut v = Vec::with_capacity(iters as usize);
                for _ in 0..iters {
                    let t = Instant::now();
                    rt.launch_resident(&c.handle, &c.emitted.abi, &shape, &set, 1, &opts)?;
                    v.push(t.elapsed().as_secs_f64() * 1e6);
                }
                Ok(v)
            };
            let untimed = ours(self, false)?;
            let timed = ours(self, true)?;
            let ptrs = {
                let sess = self.sess()?;
                let bufs = sess
                    .pool
                    .resident
                    .get(&set_id(&set))
                    .ok_or(RuntimeError::StaleResident)?;
                bufs.iter().map(|b| b.ptr()).collect::<Vec<_>>()
            };
            let mut args: Vec<u64> = Vec::new();
            for (p, &n) in ptrs.iter().zip(&set.lens) {
                args.push(*p);
                args.push(n);
            }
            let geo = Geometry {
                grid: shape.grid,
                block: shape.workgroup_size,
                dynamic_smem: 0,
            };
            let sess = self.sess()?;
            let mut bare = |events: bool| {
                let mut run = |n: u32| {
                    driver::bare_cudarc_launch_loop(
                        &c.emitted.ptx,
                        &c.emitted.kernel_name,
                        &geo,
                        &sess.stream,
                        &mut args,
                        n,
                        events,
                    )
                    .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))
                };
                run(200)?;
                run(iters)
            };
            let bare_untimed = bare(false)?;
            let bare_timed = bare(true)?;
            Ok::<_, RuntimeError>((untimed, bare_untimed, timed, bare_timed))
        })();
        self.release(set);
        let (untimed, bare_untimed, timed, bare_timed) = result?;
        let ratio = |a: &TimingStats, b: &TimingStats| {
            if b.median_ms > 0.0 {
                a.median_ms / b.median_ms
            } else {
                0.0
            }
        };
        let (u, bu, t, bt) = (
            TimingStats::of(&untimed),
            TimingStats::of(&bare_untimed),
            TimingStats::of(&timed),
            TimingStats::of(&bare_timed),
        );
        Ok(OverheadBench {
            kernel: c.emitted.kernel_name,
            elements,
            ratio_untimed: ratio(&u, &bu),
            ratio_timed: ratio(&t, &bt),
            vyrescope_untimed_us: u,
            bare_cudarc_us: bu,
            vyrescope_timed_us: t,
            bare_cudarc_timed_us: bt,
        })
    }
}

fn set_id(set: &super::ResidentSet) -> u64 {
    set.id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_lengths_scale_with_elements() {
        let p = crate::ir::load_program(Path::new("fixtures/programs/reduce_sum_f32.json"))
            .expect("fixture");
        let q = with_elements(&p, 1 << 22);
        let run = q.run.clone().expect("run");
        assert_eq!(run.elements, Some(1 << 22));
        let partial = run
            .inputs
            .iter()
            .find(|(n, _)| n == "partial")
            .expect("partial");
        assert_eq!(partial.1.len, Some((1 << 22) / 256));
        let prepared =
            inputs::prepare(&q, Path::new("fixtures/programs"), None, None).expect("prepare");
        assert_eq!(prepared.shape.grid, [(1 << 22) / 256, 1, 1]);
    }
}
