//! Benchmarks behind `vyrescope bench-kernel` (hidden): the emitted kernel's device time at
//! a given size, full-dispatch wall time (upload, launch, readback), and warm dispatch host
//! overhead against a bare cudarc launch of the same PTX on the same resident buffers.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::inputs::HostBuffer;
use crate::inputs::{self, PreparedRun};
use crate::ir::{Access, BarrierScope, Expr, InputSource, Literal, Program, StmtKind};
use crate::runtime::dispatch::TimingStats;
use crate::runtime::execute::tolerance_for;
use crate::runtime::parity::{self, ParityReport};
use crate::runtime::{DispatchOptions, JitOptions, Result, Runtime, RuntimeError};
use crate::util::Problem;

/// Device and full-dispatch times of one Program at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelBench {
    /// Program name.
    pub program: String,
    /// Invocations of the dispatch (all axes).
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
    /// How the reference interpreter ran: `full`, `sampled: ...` or `off`.
    pub reference_run: String,
    /// The last full dispatch's results compared with the reference interpreter at the same
    /// size, so a timed kernel is also a correct one (`None` with verification off).
    pub parity: Option<ParityReport>,
}

/// How [`bench_program`] checks the GPU's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Interpret the whole dispatch and compare every output element.
    Full,
    /// Interpret every n-th unit of workgroups and the last ([`crate::interp::run_sampled`])
    /// and compare the elements those wrote.
    Sampled(u64),
    /// No reference run (repeated rounds of a size verified once).
    Off,
}

/// Options of [`bench_program`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchOptions {
    /// Workgroup size override.
    pub workgroup: Option<[u32; 3]>,
    /// Timed launches on resident buffers.
    pub repeat: u32,
    /// Timed full dispatches (upload, launch, readback); 0 with [`Verify::Off`] skips them.
    pub full_reps: u32,
    /// The reference check.
    pub verify: Verify,
    /// Emit with versioned bounds checks instead of one check per access (for comparison).
    pub version_bounds: bool,
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

/// `program` scaled `scale` times along every axis of its grid: the way to time a 2-D or 3-D
/// fixture at a size where the kernel dominates. A run section with a `grid` gets `scale`
/// times the workgroups on every axis whose grid is larger than 1; every input with an
/// explicit `len` grows by the same area (or volume) factor; and every integer of a `uniform`
/// input's `data` that equals the invocation count of a scaled axis (the fixture's sizes,
/// such as `dims = [512, 512]` on a 32 x 32 grid of 16 x 16 workgroups) is scaled with it.
/// A run section without a `grid` scales its `elements` (see [`with_elements`]).
pub fn with_scale(program: &Program, scale: u32) -> std::result::Result<Program, Problem> {
    let fix = "use a smaller --scale";
    let run = program.run.clone().unwrap_or_default();
    let Some(grid) = run.grid else {
        let elements = run.elements.unwrap_or(1).saturating_mul(scale as u64);
        if elements > u32::MAX as u64 {
            return Err(Problem::new(
                format!("--scale {scale} gives {elements} elements, more than u32 indices reach"),
                fix,
            ));
        }
        return Ok(with_elements(program, elements));
    };
    let mut p = program.clone();
    let mut run = run;
    let mut new_grid = grid;
    let mut factor = 1u64;
    let mut extents = Vec::new();
    for a in 0..3 {
        if grid[a] > 1 {
            new_grid[a] = grid[a]
                .checked_mul(scale)
                .filter(|&g| g <= crate::shape::MAX_GRID_DIMS[a])
                .ok_or_else(|| {
                    Problem::new(
                        format!("--scale {scale} makes grid axis {a} too large"),
                        fix,
                    )
                })?;
            factor *= scale as u64;
            extents.push(grid[a] as i128 * program.workgroup_size[a] as i128);
        }
    }
    for (name, input) in run.inputs.iter_mut() {
        if let Some(len) = input.len.as_mut() {
            *len = len
                .checked_mul(factor)
                .filter(|&l| l <= u32::MAX as u64)
                .ok_or_else(|| {
                    Problem::new(format!("--scale {scale} makes `{name}` too long"), fix)
                })?;
        }
        let uniform = program
            .buffer(name)
            .is_some_and(|b| b.access == Access::Uniform);
        if let (true, InputSource::Data(values)) = (uniform, &mut input.source) {
            *values = values
                .iter()
                .map(|v| match v {
                    Literal::Int(x) if extents.contains(&x) => Literal::Int(x * scale as i128),
                    v => v,
                })
                .collect();
        }
    }
    run.grid = Some(new_grid);
    p.run = Some(run);
    Ok(p)
}

/// Whether a sampled reference run ([`crate::interp::run_sampled`]) is valid for `program`:
/// its workgroups must be independent (no grid barrier, no atomics on host buffers).
pub fn can_sample(program: &Program) -> bool {
    let mut grid_barrier = false;
    program.walk_stmts(&mut |s| {
        grid_barrier |= matches!(s.kind, StmtKind::Barrier(BarrierScope::Grid));
    });
    let mut host_atomic = false;
    program.walk_exprs(&mut |e| {
        if let Expr::Atomic { buffer, .. } = e {
            host_atomic |= program.buffer(buffer).is_some_and(|b| b.access.is_host());
        }
    });
    !grid_barrier && !host_atomic
}

/// `gpu` with only the elements that the sampled `reference` run changed from `before` (the
/// others as in `before`), and how many elements that is: the comparison then checks exactly
/// the sampled workgroups' outputs.
fn sampled_view(
    gpu: &[HostBuffer],
    reference: &[HostBuffer],
    before: &[HostBuffer],
) -> (Vec<HostBuffer>, u64) {
    let mut out = before.to_vec();
    let mut changed = 0;
    for ((o, g), (r, b)) in out.iter_mut().zip(gpu).zip(reference.iter().zip(before)) {
        if !r.access.is_writable() || g.data.len() != r.data.len() {
            *o = g.clone();
            continue;
        }
        let w = r.elem.size_bytes().max(1);
        for i in (0..r.data.len()).step_by(w) {
            let end = (i + w).min(r.data.len());
            if r.data[i..end] != b.data[i..end] {
                o.data[i..end].copy_from_slice(&g.data[i..end]);
                changed += 1;
            }
        }
    }
    (out, changed)
}

fn prepare(program: &Program, base: &Path, workgroup: Option<[u32; 3]>) -> Result<PreparedRun> {
    Ok(inputs::prepare(program, base, workgroup, None)?)
}

/// Times `program` at the size its run section gives (see [`with_elements`] and
/// [`with_scale`]): `repeat` resident launches, then `full_reps` full dispatches whose last
/// result is compared with the reference interpreter as `verify` says.
pub fn bench_program(
    rt: &mut Runtime,
    p: &Program,
    base: &Path,
    o: &BenchOptions,
) -> Result<KernelBench> {
    if let Verify::Sampled(_) = o.verify {
        if !can_sample(p) {
            return Err(RuntimeError::Other(crate::util::Problem::new(format!("`{}` has a grid barrier or atomics on host buffers, so its workgroups are not independent and a sampled reference run would not be comparable", p.name), "leave out --sample (verify the whole dispatch) or use --no-verify")));
        }
    }
    let PreparedRun { shape, buffers } = prepare(p, base, o.workgroup)?;
    let jit = JitOptions {
        version_bounds: o.version_bounds,
        ..JitOptions::default()
    };
    let c = rt.compile_program(p, shape.workgroup_size, &jit)?;
    let opts = DispatchOptions {
        useful_invocations: Some(shape.invocations()),
        ..DispatchOptions::default()
    };
    let set = rt.upload(&buffers)?;
    let timed = (|| {
        rt.launch_resident(&c.handle, &c.emitted.abi, &shape, &set, 3, &opts)?;
        rt.launch_resident(
            &c.handle,
            &c.emitted.abi,
            &shape,
            &set,
            o.repeat.max(1),
            &opts,
        )
    })();
    rt.release(set);
    let samples: Vec<f64> = timed?.iter().filter_map(|t| t.device_ms).collect();
    let mut full = Vec::new();
    let mut h2d = 0;
    let mut d2h = 0;
    let mut gpu = Vec::new();
    let dispatches = match (o.verify, o.full_reps) {
        (Verify::Off, 0) => 0,
        (_, n) => n.max(1) + 1,
    };
    for i in 0..dispatches {
        let mut bufs = buffers.clone();
        let r = rt.dispatch(&c.handle, &c.emitted.abi, &shape, &mut bufs, &opts)?;
        if i > 0 {
            full.push(r.full_ms);
        }
        h2d = r.h2d_bytes;
        d2h = r.d2h_bytes;
        gpu = bufs;
    }
    // The bench sizes are far beyond the interactive default budget.
    let interp_opts = crate::interp::Options {
        fuel: 1 << 44,
        parallel: true,
    };
    let (parity, reference_run) = match o.verify {
        Verify::Off => (None, "off".to_string()),
        Verify::Full => {
            let mut reference = buffers.clone();
            let (_, sums) = crate::interp::run_with_sums(p, &shape, &mut reference, &interp_opts)?;
            let parity = parity::compare_with(&gpu, &reference, tolerance_for(p), Some(&sums));
            (Some(parity), "full".to_string())
        }
        Verify::Sampled(every) => {
            let mut reference = buffers.clone();
            crate::interp::run_sampled(p, &shape, &mut reference, &interp_opts, every)?;
            let (view, changed) = sampled_view(&gpu, &reference, &buffers);
            let mut parity = parity::compare(&view, &reference, tolerance_for(p));
            parity.compared = changed;
            if changed == 0 {
                // A sample that wrote nothing checked nothing.
                parity.passed = false;
            }
            let text = format!(
                "sampled: every {every}th unit of workgroups and the last, {changed} output elements compared"
            );
            (Some(parity), text)
        }
    };
    if let Some(r) = &parity {
        rt.record_parity(r.passed);
    }
    Ok(KernelBench {
        program: p.name.clone(),
        elements: shape.invocations(),
        workgroup: shape.workgroup_size,
        grid: shape.grid,
        regs: c.info.resources.regs_per_thread,
        buffer_bytes: buffers.iter().map(|b| b.data.len() as u64).sum(),
        device_ms: TimingStats::of(&samples),
        full_dispatch_ms: TimingStats::of(&full),
        full_h2d_bytes: h2d,
        full_d2h_bytes: d2h,
        reference_run,
        parity,
    })
}

/// Warm dispatch overhead of `program` at a small size vs a bare cudarc launch loop of
/// the same PTX with the same arguments, `iters` each after warm-up.
pub fn bench_overhead(
    rt: &mut Runtime,
    program: &Program,
    base: &Path,
    elements: u64,
    iters: u32,
) -> Result<OverheadBench> {
    let p = with_elements(program, elements);
    let PreparedRun { shape, buffers } = prepare(&p, base, None)?;
    let c = rt.compile_program(&p, shape.workgroup_size, &JitOptions::default())?;
    if c.emitted.abi.grid_sync {
        return Err(RuntimeError::Other(crate::util::Problem::new(
            "overhead bench needs a kernel without a grid barrier",
            "use the elementwise fixture",
        )));
    }
    let set = rt.upload(&buffers)?;
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
        let untimed = ours(rt, false)?;
        let timed = ours(rt, true)?;
        let (ptx, name) = (&c.emitted.ptx, &c.emitted.kernel_name);
        let mut bare =
            |events: bool| rt.bare_launch_loop(ptx, name, &shape, &set, 200, iters, events);
        let bare_untimed = bare(false)?;
        let bare_timed = bare(true)?;
        Ok::<_, RuntimeError>((untimed, bare_untimed, timed, bare_timed))
    })();
    rt.release(set);
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

    fn fixture(stem: &str) -> Program {
        crate::ir::load_program(Path::new(&format!("fixtures/programs/{stem}.json")))
            .expect("fixture")
    }

    fn data_of(p: &Program, name: &str) -> Vec<Literal> {
        let run = p.run.as_ref().expect("run");
        match &run
            .inputs
            .iter()
            .find(|(n, _)| n == name)
            .expect(name)
            .1
            .source
        {
            InputSource::Data(v) => v.iter().collect(),
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn scale_sizes_two_d_fixtures_on_every_axis() {
        let m = with_scale(&fixture("matmul_tiled_f32"), 8).expect("scale");
        assert_eq!(m.run.as_ref().and_then(|r| r.grid), Some([128, 128, 1]));
        assert_eq!(data_of(&m, "dims"), vec![Literal::Int(2048)]);
        let prepared =
            inputs::prepare(&m, Path::new("fixtures/programs"), None, None).expect("prepare");
        for b in &prepared.buffers[1..] {
            assert_eq!(b.len(), 2048 * 2048, "{}", b.name);
        }
        let s = with_scale(&fixture("stencil5_f32"), 16).expect("scale");
        assert_eq!(s.run.as_ref().and_then(|r| r.grid), Some([512, 512, 1]));
        assert_eq!(
            data_of(&s, "dims"),
            vec![Literal::Int(8192), Literal::Int(8192)]
        );
        // 1-D fixtures scale their elements; a grid past CUDA's limit is refused.
        let v = with_scale(&fixture("vadd_f32"), 4).expect("scale");
        let old = fixture("vadd_f32")
            .run
            .and_then(|r| r.elements)
            .expect("elements");
        assert_eq!(v.run.and_then(|r| r.elements), Some(old * 4));
        let e = with_scale(&fixture("stencil5_f32"), 1 << 12)
            .expect_err("too large")
            .to_string();
        assert!(e.contains("Fix:"), "{e}");
    }

    #[test]
    fn sampled_reference_runs_check_exactly_the_sampled_workgroups() {
        // The stencil at 4x: 128 x 128 workgroups of 256 threads, units of 4 workgroups.
        let p = with_scale(&fixture("stencil5_f32"), 4).expect("scale");
        assert!(can_sample(&p));
        assert!(!can_sample(&fixture("histogram_u8")), "global atomics");
        assert!(!can_sample(&fixture("grid_two_phase_u32")), "grid barrier");
        let prepared =
            inputs::prepare(&p, Path::new("fixtures/programs"), None, None).expect("prepare");
        let before = prepared.buffers.clone();
        let mut full = before.clone();
        crate::interp::run(&p, &prepared.shape, &mut full).expect("full");
        let mut sampled = before.clone();
        let o = crate::interp::Options::default();
        crate::interp::run_sampled(&p, &prepared.shape, &mut sampled, &o, 16).expect("sampled");
        // The full run stands in for the GPU: the sampled elements all agree.
        let (view, changed) = sampled_view(&full, &sampled, &before);
        let total = (2048 * 2048) as u64;
        assert!(changed > total / 20 && changed < total / 10, "{changed}");
        let rep = parity::compare(&view, &sampled, None);
        assert!(rep.passed && rep.mismatches == 0, "{rep:?}");
        // A wrong element inside a sampled workgroup is caught (workgroup 0 is sampled);
        // one outside every sampled workgroup is not looked at.
        let out = full.iter().position(|b| b.name == "out").expect("out");
        let mut wrong = full.clone();
        let at = (3 * 2048 + 5) * 4;
        wrong[out].data[at] ^= 1;
        let (view, _) = sampled_view(&wrong, &sampled, &before);
        assert_eq!(parity::compare(&view, &sampled, None).mismatches, 1);
    }
}
