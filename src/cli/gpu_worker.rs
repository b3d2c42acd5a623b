//! `vyrescope gpu-worker` (hidden): serve GPU requests on stdin/stdout, one JSON message per
//! line (see `runtime::worker::protocol`). Started by the inspector and the fault check, so a
//! kernel fault only ever poisons a process that can be replaced.

use std::io::{BufReader, Write};

/// Serve GPU requests on stdin/stdout (started by vyrescope itself).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// GPU ordinal (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
}

/// Runs the worker until end of input (or a sticky fault, after which it exits).
pub fn run(a: &Args) -> super::Outcome {
    let stdin = std::io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let gpu = a.gpu.ordinal()?;
    let code = crate::runtime::worker::server::serve(
        &mut input,
        &mut out,
        gpu,
        &mut crate::harness::worker_jobs::HarnessJobs,
    );
    let _ = out.flush();
    Ok(code)
}
