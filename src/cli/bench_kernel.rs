//! `vyrescope bench-kernel FILE` (hidden): device time of the emitted kernel at a given size,
//! full-dispatch wall time, and (with --overhead) warm dispatch overhead vs bare cudarc.
//! Used by `benches/gpu/run.sh`.

use std::path::{Path, PathBuf};

use crate::runtime::Runtime;

/// Benchmark one Program's emitted kernel on the GPU.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Program file.
    pub file: PathBuf,
    /// Invocations along x (buffers get this many elements).
    #[arg(long, default_value_t = 1 << 26)]
    pub elements: u64,
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
pub fn run(a: &Args) -> i32 {
    let program = match crate::ir::load_program(&a.file) {
        Ok(p) => p,
        Err(e) => return super::fail(e),
    };
    let base = a.file.parent().unwrap_or(Path::new("."));
    let gpu = match a.gpu.ordinal() {
        Ok(n) => n,
        Err(e) => return super::fail(e),
    };
    let mut rt = match Runtime::open(gpu) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    let bench = match rt.bench_program(
        &program,
        base,
        a.elements,
        a.workgroup,
        a.repeat,
        a.full_reps,
    ) {
        Ok(b) => b,
        Err(e) => return super::fail(e),
    };
    let overhead = if a.overhead {
        match rt.bench_overhead(&program, base, 1024, 2000) {
            Ok(o) => Some(o),
            Err(e) => return super::fail(e),
        }
    } else {
        None
    };
    // A timed kernel that computes the wrong thing is not a result: exit 1 (after printing).
    let code = if bench.parity.passed { 0 } else { 1 };
    if a.json {
        let v = serde_json::json!({"kernel": bench, "overhead": overhead, "device": rt.caps().name, "telemetry": rt.telemetry()});
        match serde_json::to_string_pretty(&v) {
            Ok(s) => outln!("{s}"),
            Err(e) => return super::fail(e),
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
        outln!(
            "parity with the reference interpreter: {} ({} of {} elements differ)",
            if bench.parity.passed { "ok" } else { "FAILED" },
            bench.parity.mismatches,
            bench.parity.compared
        );
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
    code
}
