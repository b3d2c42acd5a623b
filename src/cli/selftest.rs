//! `vyrescope selftest`: every fixture on the live GPU with verification, the occupancy
//! estimator against the driver, and the fault-recovery check; exit 1 on any failure.

use std::path::{Path, PathBuf};

use crate::inputs::pipeline::prepare_pipeline;
use crate::runtime::pipeline_gpu::{
    run_pipeline_forms, Forms, PipelineGpuOptions, PipelineGpuReport,
};
use crate::validate::pipeline::load_pipeline;

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
    /// Directory of pipeline fixtures: each runs as separate launches and as its megakernel
    /// plan, both verified against the reference interpreter (skipped when it does not exist).
    #[arg(long, default_value = "fixtures/pipelines")]
    pub pipelines: PathBuf,
    /// Skip the fault-recovery check.
    #[arg(long)]
    pub no_faults: bool,
    /// GPU ordinal (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
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
    let gpu = match a.gpu.ordinal() {
        Ok(n) => n,
        Err(e) => return super::fail(e),
    };
    let mut rt = match Runtime::open(gpu) {
        Ok(r) => r,
        Err(e) => return super::fail(e),
    };
    let rep = rt.selftest(&files, a.repeat, !a.no_faults);
    let pipelines = run_pipelines(&mut rt, &a.pipelines, a.repeat);
    let pipelines_ok = pipelines
        .iter()
        .all(|(_, r)| r.as_ref().is_ok_and(|r| r.verified()));
    let passed = rep.passed && pipelines_ok;
    if a.json {
        let pl: Vec<serde_json::Value> = pipelines
            .iter()
            .map(|(f, r)| match r {
                Ok(r) => serde_json::json!({"file": f.display().to_string(), "report": r}),
                Err(e) => serde_json::json!({"file": f.display().to_string(), "error": e}),
            })
            .collect();
        let v = serde_json::json!({"report": rep, "pipelines": pl, "passed": passed, "telemetry": rt.telemetry(), "cache": rt.cache_report()});
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
        if !pipelines.is_empty() {
            outln!("\npipelines (separate launches and megakernel plan, each verified):");
            for (f, r) in &pipelines {
                match r {
                    Ok(r) => super::run_pipeline_cuda::print_text(r),
                    Err(e) => outln!("  FAIL {}: {e}", f.display()),
                }
            }
        }
        outln!("\nselftest {}", if passed { "PASSED" } else { "FAILED" });
    }
    if passed {
        0
    } else {
        1
    }
}

/// Every pipeline fixture in `dir` in both forms, verified (empty when `dir` is missing).
fn run_pipelines(
    rt: &mut Runtime,
    dir: &Path,
    repeat: u32,
) -> Vec<(PathBuf, Result<PipelineGpuReport, String>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let opts = PipelineGpuOptions {
        forms: Forms::Both,
        repeat: repeat.max(1),
        timeout: Some(std::time::Duration::from_secs(10)),
        fuel: crate::interp::DEFAULT_FUEL,
        measure_topology: false,
        grid_barrier: Default::default(),
    };
    files
        .into_iter()
        .map(|f| {
            let r = (|| {
                let loaded = load_pipeline(&f);
                let pipeline = loaded
                    .pipeline
                    .as_ref()
                    .filter(|_| loaded.is_valid())
                    .ok_or_else(|| format!("{} is not a valid pipeline", f.display()))?;
                let base = f.parent().unwrap_or(Path::new("."));
                let mut prepared = prepare_pipeline(pipeline, base).map_err(|e| e.to_string())?;
                run_pipeline_forms(rt, pipeline, &mut prepared, &opts)
            })();
            (f, r)
        })
        .collect()
}
