//! `vyrescope bench-kernel FILE` (hidden): device time of the emitted kernel at a given size,
//! full-dispatch wall time, and (with --overhead) warm dispatch overhead vs bare cudarc.
//! Used by `benches/gpu/run.sh` and `benches/gpu/kernels.sh`.
//!
//! Sizes: `--elements N` resizes a 1-D fixture (the default, 2^26); `--scale S` multiplies a
//! fixture's grid by S on every axis it spans, with its buffers and sizes (see
//! `harness::bench::with_scale`), so a 2-D fixture computes every element at the new size.

use std::path::{Path, PathBuf};

use crate::harness::bench::{BenchOptions, Verify};
use crate::util::Problem;

/// Benchmark one Program's emitted kernel on the GPU.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Program file.
    pub file: PathBuf,
    /// Invocations along x (buffers get this many elements); default 2^26 without --scale.
    #[arg(long, conflicts_with = "scale")]
    pub elements: Option<u64>,
    /// Scale the fixture's run section S times along every axis of its grid (2-D and 3-D
    /// fixtures: grid, buffer lengths and the sizes in its uniform inputs), or its elements.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub scale: Option<u32>,
    /// Verify against a reference run of every N-th unit of workgroups (and the last) instead
    /// of the whole dispatch; for Programs whose workgroups are independent.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), conflicts_with = "no_verify")]
    pub sample: Option<u64>,
    /// No reference run (with --full-reps 0 also no full dispatches): for repeated rounds of a
    /// size already verified.
    #[arg(long)]
    pub no_verify: bool,
    /// Versioned bounds checks (one range test per group of accesses and an unchecked fast
    /// copy) instead of one check per access, for side-by-side measurement.
    #[arg(long)]
    pub version_bounds: bool,
    /// Workgroup size override, `X,Y,Z`.
    #[arg(long, value_parser = crate::shape::parse_workgroup)]
    pub workgroup: Option<[u32; 3]>,
    /// Timed launches on resident buffers.
    #[arg(long, default_value_t = 20)]
    pub repeat: u32,
    /// Timed full dispatches (upload, launch, readback).
    #[arg(long, default_value_t = 5)]
    pub full_reps: u32,
    /// Also measure warm dispatch overhead vs a bare cudarc launch (at 1024 elements), both
    /// without device timing and with a CUDA event pair on both sides.
    #[arg(long)]
    pub overhead: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The GPU to run on (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
}

/// Runs `bench-kernel`.
pub fn run(a: &Args) -> super::Outcome {
    let program = crate::ir::load_program(&a.file)?;
    let base = a.file.parent().unwrap_or(Path::new("."));
    let program = match a.scale {
        Some(s) => crate::harness::bench::with_scale(&program, s)?,
        None => crate::harness::bench::with_elements(&program, a.elements.unwrap_or(1 << 26)),
    };
    let verify = match (a.no_verify, a.sample) {
        (true, _) => Verify::Off,
        (false, Some(n)) => Verify::Sampled(n),
        (false, None) => Verify::Full,
    };
    if matches!(verify, Verify::Sampled(_)) && !crate::harness::bench::can_sample(&program) {
        return Err(Problem::new(
            format!("`{}` has a grid barrier or atomics on host buffers: its workgroups are not independent, so a sampled reference run would not be comparable", program.name),
            "leave out --sample",
        ));
    }
    let mut rt = a.gpu.open()?;
    let opts = BenchOptions {
        workgroup: a.workgroup,
        repeat: a.repeat,
        full_reps: a.full_reps,
        verify,
        version_bounds: a.version_bounds,
    };
    let bench = crate::harness::bench::bench_program(&mut rt, &program, base, &opts)?;
    let overhead = if a.overhead {
        Some(crate::harness::bench::bench_overhead(
            &mut rt, &program, base, 1024, 2000,
        )?)
    } else {
        None
    };
    // A timed kernel that computes the wrong thing is not a result: exit 1 (after printing).
    let code = if bench.parity.as_ref().is_some_and(|p| !p.passed) {
        1
    } else {
        0
    };
    if a.json {
        let v = serde_json::json!({"kernel": bench, "overhead": overhead, "device": rt.caps().name, "telemetry": rt.telemetry()});
        match serde_json::to_string_pretty(&v) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        outln!(
            "{} x {} elements (wg {:?}, {} regs): device median {:.4} ms (min {:.4}, max {:.4}), {:.0} GB/s over buffer bytes; full dispatch median {:.2} ms",
            bench.program,
            bench.elements,
            bench.workgroup,
            bench.regs,
            bench.device_ms.median_ms,
            bench.device_ms.min_ms,
            bench.device_ms.max_ms,
            bench.buffer_bytes as f64 / bench.device_ms.median_ms / 1e6,
            bench.full_dispatch_ms.median_ms
        );
        match &bench.parity {
            Some(p) => outln!(
                "parity with the reference interpreter ({}): {} ({} of {} elements differ{})",
                bench.reference_run,
                if p.passed { "ok" } else { "FAILED" },
                p.mismatches,
                p.compared,
                if p.order_bounded > 0 {
                    format!(
                        "; {} float atomic sums differ within the order bound",
                        p.order_bounded
                    )
                } else {
                    String::new()
                }
            ),
            None => outln!("parity with the reference interpreter: not checked (--no-verify)"),
        }
        if let Some(o) = overhead {
            outln!(
                "warm dispatch, no device timing: vyrescope {:.2} us vs bare cudarc launch + cuStreamSynchronize {:.2} us (median) = {:.2}x",
                o.vyrescope_untimed_us.median_ms, o.bare_cudarc_us.median_ms, o.ratio_untimed
            );
            outln!(
                "warm dispatch, CUDA-event device timing: vyrescope {:.2} us vs bare cudarc event/launch/event + cuEventSynchronize {:.2} us (median) = {:.2}x",
                o.vyrescope_timed_us.median_ms, o.bare_cudarc_timed_us.median_ms, o.ratio_timed
            );
        }
    }
    Ok(code)
}
