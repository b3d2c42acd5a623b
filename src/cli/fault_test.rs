//! `vyrescope fault-test` (hidden): the fault-recovery check on the live GPU, through a GPU
//! worker process, with raw PTX kernels that fault on purpose (timeout, illegal address,
//! trap), each followed by a verified dispatch that must be correct.

use crate::runtime::fault::fault_check;
use crate::runtime::GpuWorker;
use crate::util::Problem;

/// Make kernels fault on purpose and check that later dispatches still work.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Steps: baseline dispatch -> 2 s kernel with a 200 ms timeout (recovered inside the worker) -> dispatch -> illegal address (the worker exits) -> dispatch in a fresh worker -> trap -> dispatch in a fresh worker. Every dispatch is verified against the reference interpreter.\n\nExamples:\n  vyrescope fault-test\n  vyrescope fault-test --json"
)]
pub struct Args {
    /// GPU ordinal (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
    /// Print the steps as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `fault-test`; exit 1 when any step did not behave as expected.
pub fn run(a: &Args) -> super::Outcome {
    let mut w = GpuWorker::new();
    w.set_device(a.gpu.ordinal()?);
    // Fails with the one-line no-driver error where there is no GPU.
    let caps = w.probe()?;
    let steps = fault_check(&mut w);
    let passed = steps.iter().all(|s| s.ok);
    if a.json {
        let v = serde_json::json!({
            "device": caps.name,
            "steps": steps,
            "workers_started": w.workers_started(),
            "passed": passed,
        });
        match serde_json::to_string_pretty(&v) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        outln!(
            "fault recovery on {} through GPU worker processes:",
            caps.name
        );
        for (i, s) in steps.iter().enumerate() {
            outln!(
                "{:2}. {:4} {} ({:.1} ms)\n      expected: {}\n      got:      {}",
                i + 1,
                if s.ok { "ok" } else { "FAIL" },
                s.step,
                s.ms,
                s.expected,
                s.got
            );
        }
        outln!(
            "{} ({} worker processes started)",
            if passed {
                "fault-test PASSED"
            } else {
                "fault-test FAILED"
            },
            w.workers_started()
        );
    }
    if passed {
        Ok(0)
    } else {
        Ok(1)
    }
}
