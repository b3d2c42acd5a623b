//! `vyre-driver-race [--json] [--list] [--capture DIR]`: the dispatch benchmark of
//! `vyrescope selftest --vyre-dispatch --backend cuda` (the same vyre Programs, sizes and
//! seeded inputs, the same code: the `vyrescope-dispatch-bench` crate) on vyre's own CUDA
//! backend, acquired from vyre's registry by its id `cuda`. `benches/gpu/vyre_dispatch_race.sh`
//! runs both and writes them side by side. No copy limit here: the script takes it from
//! vyrescope's run.
//!
//! `--capture DIR` instead records a small application on vyre-driver-cuda through the
//! capture crate alone (`vyrescope-capture`, no vyrescope): the benchmark's cases at host
//! sizes and, where vyre-driver-cuda has the resident API, resident dispatches and a
//! sequence. `vyrescope replay DIR` then replays vyre's own dispatches on vyrescope's
//! backends (`benches/gpu/vyre_driver_capture.sh`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;

use vyre_driver::backend::{acquire, registered_backends, BackendError};
use vyrescope_capture::{capture_boxed, CaptureOptions};
use vyrescope_dispatch_bench::{
    dispatch_table, record_workload, run_dispatch_bench, BenchSizes, DispatchBench,
};

/// vyre-driver-cuda's registry id.
const CUDA_ID: &str = "cuda";

/// Why the race could not run; every message ends in a `Fix:`.
#[derive(Debug, thiserror::Error)]
enum RaceError {
    #[error(
        "unknown argument `{0}`. Fix: run `vyre-driver-race [--json] [--list] [--capture DIR]`"
    )]
    Usage(String),
    #[error("`--capture` takes a folder. Fix: run `vyre-driver-race --capture DIR` (DIR must not exist yet, or be empty)")]
    CaptureDir,
    #[error("the recorded application failed on `{CUDA_ID}`: {0}. Fix: report this with the command line and the card")]
    Workload(Box<BackendError>),
    #[error("vyre's registry could not be read: {0}. Fix: report this bug with the output of `cargo tree` in benches/gpu/vyre-driver-race")]
    Registry(Box<BackendError>),
    #[error("vyre's registry could not acquire `{CUDA_ID}`: {0}. Fix: run on a machine with an NVIDIA GPU and its driver (libcuda.so)")]
    Acquire(String),
    #[error("vyre-driver-cuda panicked {when}: {message}. Fix: run on a machine with an NVIDIA GPU and its driver (libcuda.so); if it has one, report this with the output of `nvidia-smi`")]
    Panicked { when: &'static str, message: String },
    #[error("the benchmark failed on `{CUDA_ID}`: {0}. Fix: report this with the command line and the card")]
    Bench(Box<vyrescope_dispatch_bench::DispatchBenchError>),
    #[error("the report could not be written as JSON: {0}. Fix: report this bug")]
    Json(serde_json::Error),
}

/// Keeps vyre-driver-cuda's object code, and with it its `inventory` registration, in the
/// binary: a crate's registrations link only if the application references the crate.
fn link_vyre_driver_cuda() {
    std::hint::black_box(vyre_driver_cuda::cuda_factory as fn() -> _);
}

/// Runs `f`, turning a panic into [`RaceError::Panicked`] without printing the panic
/// (cudarc's dynamic loader panics when libcuda cannot be opened).
fn guarded<T>(
    when: &'static str,
    f: impl FnOnce() -> Result<T, RaceError>,
) -> Result<T, RaceError> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = catch_unwind(AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    r.unwrap_or_else(|p| {
        let message = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "no message".to_string());
        // One line: the loader's message spans several.
        let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        // cudarc's loader lists every library name it tried: the first clause says it all.
        let message = match message.split_once(" - searched for library names") {
            Some((head, _)) => format!("{head} (no CUDA driver on this machine)"),
            None => message,
        };
        Err(RaceError::Panicked { when, message })
    })
}

/// The ids vyre's registry holds in this binary.
fn list() -> Result<String, RaceError> {
    let regs = registered_backends().map_err(|e| RaceError::Registry(Box::new(e)))?;
    Ok(regs
        .iter()
        .map(|r| format!("{}\n", r.id))
        .collect::<String>())
}

fn bench() -> Result<DispatchBench, RaceError> {
    let be = guarded("while acquiring the backend", || {
        acquire(CUDA_ID).map_err(|e| RaceError::Acquire(e.to_string()))
    })?;
    guarded("during the benchmark", || {
        run_dispatch_bench(be.as_ref(), None, &BenchSizes::GPU)
            .map_err(|e| RaceError::Bench(Box::new(e)))
    })
}

/// Records the workload on vyre-driver-cuda into `dir`; true when every result was right.
fn capture(dir: &str) -> Result<bool, RaceError> {
    let be = guarded("while acquiring the backend", || {
        acquire(CUDA_ID).map_err(|e| RaceError::Acquire(e.to_string()))
    })?;
    let be = capture_boxed(be, dir, CaptureOptions::default());
    let w = guarded("during the recorded application", || {
        record_workload(&be).map_err(|e| RaceError::Workload(Box::new(e)))
    })?;
    be.flush_capture();
    println!(
        "recorded vyre-driver-cuda (`{CUDA_ID}`) into {dir}: {} dispatches, {} resident calls, results {}",
        w.dispatches,
        w.resident_calls,
        if w.verified { "verified" } else { "WRONG" }
    );
    Ok(w.verified)
}

fn run(args: &[String]) -> Result<bool, RaceError> {
    link_vyre_driver_cuda();
    let mut json = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--list" => {
                print!("{}", list()?);
                return Ok(true);
            }
            "--capture" => {
                let dir = it.next().ok_or(RaceError::CaptureDir)?;
                return capture(dir);
            }
            other => return Err(RaceError::Usage(other.to_string())),
        }
    }
    let rep = bench()?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&rep).map_err(RaceError::Json)?
        );
    } else {
        println!(
            "dispatch through vyre's backend contract: `{}` acquired from vyre's registry by id\n",
            rep.backend
        );
        print!("{}", dispatch_table(&rep));
        println!(
            "\nvyre-driver-race {}",
            if rep.passed { "PASSED" } else { "FAILED" }
        );
    }
    Ok(rep.passed)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("vyre-driver-race: {e}");
            ExitCode::from(2)
        }
    }
}
