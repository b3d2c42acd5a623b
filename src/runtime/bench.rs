//! Benchmarks behind `vyrescope bench-kernel` (hidden): the emitted kernel's device time at
//! a given size, full-dispatch wall time (upload, launch, readback), and warm dispatch host
//! overhead against a bare cudarc launch of the same PTX on the same resident buffers.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::dispatch::TimingStats;
use super::driver::{self, Geometry};
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
}

/// Warm dispatch host overhead vs a bare cudarc launch (both: launch + wait, microseconds).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverheadBench {
    /// Kernel name.
    pub kernel: String,
    /// Elements (small, so the kernel itself is negligible).
    pub elements: u64,
    /// vyrescope `launch_resident` (cached module, resident buffers, CUDA-event device
    /// timing, telemetry).
    pub vyrescope_us: TimingStats,
    /// The same without device timing (`DispatchOptions::device_timing = false`).
    pub vyrescope_untimed_us: TimingStats,
    /// cudarc `result::launch_kernel` + `cuStreamSynchronize`.
    pub bare_cudarc_us: TimingStats,
    /// vyrescope (timed) median / bare median.
    pub ratio: f64,
    /// vyrescope (untimed) median / bare median.
    pub ratio_untimed: f64,
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
        let samples: Vec<f64> = timed?.iter().map(|t| t.device_ms).collect();
        let mut full = Vec::new();
        let mut h2d = 0;
        let mut d2h = 0;
        for i in 0..=full_reps.max(1) {
            let mut bufs = buffers.clone();
            let r = self.dispatch(&c.handle, &c.emitted.abi, &shape, &mut bufs, &opts)?;
            if i > 0 {
                full.push(r.full_ms);
            }
            h2d = r.h2d_bytes;
            d2h = r.d2h_bytes;
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
        let opts = DispatchOptions::default();
        let set = self.upload(&buffers)?;
        let result = (|| {
            self.launch_resident(&c.handle, &c.emitted.abi, &shape, &set, 200, &opts)?;
            let mut ours = Vec::with_capacity(iters as usize);
            for _ in 0..iters {
                let t = Instant::now();
                self.launch_resident(&c.handle, &c.emitted.abi, &shape, &set, 1, &opts)?;
                ours.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let untimed_opts = DispatchOptions {
                device_timing: false,
                ..opts.clone()
            };
            let mut untimed = Vec::with_capacity(iters as usize);
            for _ in 0..iters {
                let t = Instant::now();
                self.launch_resident(&c.handle, &c.emitted.abi, &shape, &set, 1, &untimed_opts)?;
                untimed.push(t.elapsed().as_secs_f64() * 1e6);
            }
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
            driver::bare_cudarc_launch_loop(
                &c.emitted.ptx,
                &c.emitted.kernel_name,
                &geo,
                &sess.stream,
                &mut args,
                200,
            )
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
            let bare = driver::bare_cudarc_launch_loop(
                &c.emitted.ptx,
                &c.emitted.kernel_name,
                &geo,
                &sess.stream,
                &mut args,
                iters,
            )
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
            Ok::<_, RuntimeError>((ours, untimed, bare))
        })();
        self.release(set);
        let (ours, untimed, bare) = result?;
        let (o, u, b) = (
            TimingStats::of(&ours),
            TimingStats::of(&untimed),
            TimingStats::of(&bare),
        );
        let over = |x: f64| {
            if b.median_ms > 0.0 {
                x / b.median_ms
            } else {
                0.0
            }
        };
        Ok(OverheadBench {
            kernel: c.emitted.kernel_name,
            elements,
            ratio: over(o.median_ms),
            ratio_untimed: over(u.median_ms),
            vyrescope_us: o,
            vyrescope_untimed_us: u,
            bare_cudarc_us: b,
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
