//! `vyrescope selftest`: every fixture on the live GPU with verification, the occupancy
//! estimator against the driver, and the fault-recovery check; exit 1 on any failure.

use std::path::PathBuf;

use crate::runtime::selftest::{fixture_files, fixture_table};
use crate::runtime::Runtime;

/// Run every fixture on the GPU, verify it, and check the occupancy model and fault recovery.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope selftest\n  vyrescope selftest --fixtures fixtures/programs --repeat 20 --json"
)]
pub struct Args {
    /// Directory of Program fixtures (`*.json`).
    #[arg(long, default_value = "fixtures/programs")]
    pub fixtures: PathBuf,
    /// Launches per fixture (the first is verified; the median device time is reported).
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Skip the fault-recovery check.
    #[arg(long)]
    pub no_faults: bool,
    /// Device ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
    /// Print the whole report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `selftest`.
pub fn run(a: &Args) -> i32 {
    let files = fixture_files(&a.fixtures);
    if files.is_empty() {
        return super::fail(format!(
            "no *.json fixtures in {}\n  Fix: pass --fixtures DIR",
            a.fixtures.display()
        ));
    }
    let mut rt = match Runtime::open(a.device) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    let rep = rt.selftest(&files, a.repeat, !a.no_faults);
    if a.json {
        let v = serde_json::json!({"report": rep, "telemetry": rt.telemetry(), "cache": rt.cache_report()});
        match serde_json::to_string_pretty(&v) {
            Ok(s) => outln!("{s}"),
            Err(e) => return super::fail(e),
        }
    } else {
        let d = &rep.device;
        outln!(
            "selftest on {} (sm_{}{}, {} SMs, driver API {}.{})\n",
            d.name,
            d.cc_major,
            d.cc_minor,
            d.sm_count,
            d.driver_version / 1000,
            d.driver_version % 1000 / 10
        );
        out!("{}", fixture_table(&rep));
        let o = &rep.occupancy;
        outln!(
            "\noccupancy estimator vs cuOccupancyMaxActiveBlocksPerMultiprocessor: {} / {} cases agree ({:.2}%)",
            o.agreed,
            o.cases,
            if o.cases > 0 { o.agreed as f64 * 100.0 / o.cases as f64 } else { 0.0 }
        );
        for m in &o.disagreements {
            outln!("  disagree: {m}");
        }
        for e in &o.errors {
            outln!("  error: {e}");
        }
        if !rep.faults.is_empty() {
            outln!("\nfault recovery:");
            for s in &rep.faults {
                outln!(
                    "  {:4}  {:<36} {:>9.1} ms  {}\n        expected: {}",
                    if s.ok { "ok" } else { "FAIL" },
                    s.step,
                    s.ms,
                    s.got,
                    s.expected
                );
            }
        }
        outln!(
            "\nselftest {}",
            if rep.passed { "PASSED" } else { "FAILED" }
        );
    }
    if rep.passed {
        0
    } else {
        1
    }
}
