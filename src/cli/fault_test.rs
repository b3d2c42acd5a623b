//! `vyrescope fault-test` (hidden): the fault-recovery check on the live GPU with raw PTX
//! kernels that fault on purpose (illegal address, trap, timeout).

use crate::runtime::Runtime;

/// Make kernels fault on purpose and check that later dispatches still work.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Print the steps as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run one sticky-fault case in this process (`illegal-address` or `trap`); used by the
    /// check itself, which runs these cases in child processes.
    #[arg(long, value_name = "CASE")]
    pub child: Option<String>,
}

/// Runs `fault-test`; exit 1 when any step did not behave as expected.
pub fn run(a: &Args) -> i32 {
    let mut rt = match Runtime::open(a.device) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    if let Some(case) = &a.child {
        return if rt.fault_child(case) { 0 } else { 1 };
    }
    let steps = rt.fault_check();
    if a.json {
        match serde_json::to_string_pretty(
            &serde_json::json!({"steps": steps, "telemetry": rt.telemetry()}),
        ) {
            Ok(s) => println!("{s}"),
            Err(e) => return super::fail(e),
        }
    } else {
        for s in &steps {
            println!(
                "{:4}  {:<40} {:>9.1} ms  {}",
                if s.ok { "ok" } else { "FAIL" },
                s.step,
                s.ms,
                s.got
            );
        }
    }
    if steps.iter().all(|s| s.ok) {
        0
    } else {
        1
    }
}
