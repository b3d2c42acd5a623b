//! `vyrescope selftest`: every fixture on the live GPU with verification, the occupancy
//! estimator against the driver, the fault-recovery check and the timeline check of every
//! pipeline fixture (`selftest_timeline`); exit 1 on any failure.

use std::path::{Path, PathBuf};

use crate::harness::pipeline::{run_pipeline_forms, Forms, PipelineGpuOptions, PipelineGpuReport};
use crate::inputs::pipeline::prepare_pipeline_rooted;
use crate::inputs::FileRoot;
use crate::megakernel::plan::Decide;
use crate::validate::pipeline::load_pipeline;

use crate::harness::fuzz::{default_out_dir, summary as fuzz_summary, FuzzOptions};
use crate::harness::selftest::{fixture_files, fixture_table};
use crate::runtime::Runtime;
use crate::util::Problem;

/// Run every fixture on the GPU, verify it, and check the occupancy model and fault recovery.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope selftest\n  vyrescope selftest --fixtures fixtures/programs --repeat 20 --json\n  vyrescope selftest --fuzz 2000 --seed 1\n  vyrescope selftest --fuzz-pipelines 500 --seed 1\n  vyrescope selftest --vyre-catalog --backend reference\n  vyrescope selftest --vyre-backend --backend reference --json\n  vyrescope selftest --vyre-dispatch --backend cuda"
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
    /// Allow `run.inputs.*.file` data files of the fixtures (Programs and pipelines)
    /// anywhere inside DIR (default: only inside each file's own folder). Files under /proc,
    /// /sys and /dev are refused even so.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Skip the fault-recovery check.
    #[arg(long)]
    pub no_faults: bool,
    /// GPU ordinal (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
    /// Print the whole report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Differential fuzzing instead of the fixtures: run N generated Programs on the GPU and
    /// on the reference interpreter and compare them; every Program that differs or fails
    /// is written to --out for `vyrescope run FILE --backend cuda` to replay.
    #[arg(long, value_name = "N", group = "fuzzing")]
    pub fuzz: Option<u64>,
    /// Pipeline fuzzing instead of the fixtures: N generated pipelines (chains and DAGs of
    /// race-free steps with mixed workgroup sizes, reductions, neighbour reads, clamped and
    /// periodic stencils, ping-pong runs) run as separate launches and as their megakernel
    /// plan on the GPU, both compared with the reference interpreter; a failing pipeline is
    /// written to --out with its plan.
    #[arg(long, value_name = "N", group = "fuzzing")]
    pub fuzz_pipelines: Option<u64>,
    /// Seed of the first fuzz Program (Program k uses SEED + k; a reported seed S
    /// regenerates alone with `--fuzz 1 --seed S`).
    #[arg(long, default_value_t = 1, requires = "fuzzing")]
    pub seed: u64,
    /// Folder for failing fuzz Programs [default: ~/.cache/vyrescope/fuzz, else the temp
    /// folder].
    #[arg(long, value_name = "DIR", requires = "fuzzing")]
    pub out: Option<PathBuf>,
    /// Per-launch timeout of a fuzz Program (per launch sequence of a fuzz pipeline), in
    /// milliseconds.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 10_000,
        requires = "fuzzing"
    )]
    pub timeout: u64,
    /// With --fuzz-pipelines: how the fused kernels synchronise (`dataflow`, the default, or
    /// `barrier`).
    #[arg(
        long,
        value_name = "FORM",
        default_value = "dataflow",
        requires = "fuzz_pipelines"
    )]
    pub sync: crate::megakernel::dataflow::SyncMode,
    /// With --fuzz-pipelines: run them in this process and report each as a JSON line (what
    /// the worker processes of a fuzz run do; a fault ends the process).
    #[arg(long, hide = true, requires = "fuzz_pipelines")]
    pub fuzz_child: bool,
    /// Race our kernels against vyre's own (feature `vyre`): every PROGRAM (default: vadd,
    /// saxpy, a reduction and a global-atomic histogram) exported to vyre, emitted by vyre's
    /// crates, both kernels verified against the reference interpreter and timed side by
    /// side in interleaved rounds.
    #[arg(long, conflicts_with = "fuzzing")]
    pub vyre: bool,
    /// With --vyre: the Programs to race (comma-separated files).
    #[arg(long, value_name = "FILES", value_delimiter = ',', requires = "vyre")]
    pub vyre_programs: Vec<PathBuf>,
    /// With --vyre: invocations per Program (inputs with an explicit length scale along).
    #[arg(long, value_name = "N", default_value_t = 1 << 24, requires = "vyre")]
    pub vyre_elements: u64,
    /// With --vyre: timed rounds (each launches ours once and vyre's once).
    #[arg(long, value_name = "N", default_value_t = 50, requires = "vyre")]
    pub vyre_rounds: u32,
    /// vyre's op catalogue (feature `vyre`): every fixture entry of vyre-libs and
    /// vyre-primitives imported, run and compared with vyre's expected outputs; prints per
    /// entry imported / refused (codes) / matched, then totals. Exit 1 when an imported entry
    /// differs or fails.
    #[arg(long, conflicts_with_all = ["fuzzing", "vyre"])]
    pub vyre_catalog: bool,
    /// vyre's op catalogue (the entries of --vyre-catalog) through vyre's backend contract:
    /// each entry's own vyre Program and fixture inputs dispatched on a `&dyn VyreBackend`
    /// acquired from vyre's registry by id (`vyrescope-cuda` or `vyrescope-reference`, by
    /// --backend), outputs compared with vyre's expected ones. Exit 1 when an imported entry
    /// differs or fails.
    #[arg(long, conflicts_with_all = ["fuzzing", "vyre", "vyre_catalog"])]
    pub vyre_backend: bool,
    /// Dispatch speed through vyre's backend contract: a backend acquired from vyre's
    /// registry by id (--backend) dispatches vyre's vector add (f32; 2^10, 2^20, 2^26
    /// elements) and a u32 sum (2^24) from pageable inputs, each verified, then timed
    /// (median wall time of `dispatch` and of `dispatch_resident_timed` with its device
    /// time) against the copy limit: the bytes moved over the pinned bandwidth measured in
    /// the same run on --gpu. `--backend reference` runs small sizes as a smoke test.
    #[arg(long, conflicts_with_all = ["fuzzing", "vyre", "vyre_catalog", "vyre_backend"])]
    pub vyre_dispatch: bool,
    /// With --vyre-catalog or --vyre-backend: where the entries run (`reference`: the CPU
    /// interpreter, no GPU needed; `cuda`: the live GPU).
    #[arg(long, value_enum, default_value = "cuda")]
    pub backend: super::run::Backend,
    /// With --vyre-catalog or --vyre-backend: only the entries whose id contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub only: Option<String>,
}

#[cfg(not(feature = "vyre"))]
fn run_vyre(_a: &Args) -> super::Outcome {
    Err(super::vyre_emit::feature_off())
}

#[cfg(feature = "vyre")]
fn run_vyre(a: &Args) -> super::Outcome {
    let files: Vec<PathBuf> = if a.vyre_programs.is_empty() {
        crate::harness::vyre_race::VYRE_RACE_PROGRAMS
            .iter()
            .map(PathBuf::from)
            .collect()
    } else {
        a.vyre_programs.clone()
    };
    let mut rt = a.gpu.open()?;
    let rep =
        crate::harness::vyre_race::vyre_race(&mut rt, &files, Some(a.vyre_elements), a.vyre_rounds);
    if a.json {
        let s = serde_json::to_string_pretty(&rep).map_err(Problem::bug)?;
        outln!("{s}");
    } else {
        let d = rt.caps();
        outln!(
            "vyre race on {} (sm_{}{}), {} rounds, medians of CUDA-event device times\n",
            d.name,
            d.cc_major,
            d.cc_minor,
            a.vyre_rounds
        );
        out!("{}", crate::harness::vyre_race::race_table(&rep));
    }
    Ok(i32::from(!rep.passed))
}

#[cfg(not(feature = "vyre"))]
fn run_vyre_catalog(_a: &Args) -> super::Outcome {
    Err(super::vyre_emit::feature_off())
}

/// `selftest --vyre-catalog`: the report as a table or JSON; exit 1 unless it passed.
#[cfg(feature = "vyre")]
fn run_vyre_catalog(a: &Args) -> super::Outcome {
    use crate::harness::vyre_catalog::{run_catalog, CatalogBackend};
    let mut rt;
    let mut backend = match a.backend {
        super::run::Backend::Reference => CatalogBackend::Reference,
        super::run::Backend::Cuda => {
            rt = a.gpu.open()?;
            CatalogBackend::Cuda(&mut rt)
        }
    };
    let rep = run_catalog(&mut backend, a.only.as_deref()).map_err(|e| {
        Problem::new(
            e.to_string(),
            "report this bug (vyre's registry could not be read)",
        )
    })?;
    let header = format!(
        "vyre op catalogue (vyre-libs 0.7.2 default features, vyre-primitives 0.7.2 all lego features) on the {} backend",
        rep.backend
    );
    print_catalog(a, &rep, &header, "--vyre-catalog")
}

/// A catalogue report as JSON, or as its table between `header` and the verdict line of
/// `selftest FLAG`; exit 1 unless it passed.
#[cfg(feature = "vyre")]
fn print_catalog(
    a: &Args,
    rep: &crate::harness::vyre_catalog::CatalogReport,
    header: &str,
    flag: &str,
) -> super::Outcome {
    if a.json {
        let s = serde_json::to_string_pretty(rep).map_err(Problem::bug)?;
        outln!("{s}");
    } else {
        outln!("{header}\n");
        out!("{}", crate::harness::vyre_catalog::catalog_table(rep));
        outln!(
            "selftest {flag} {}",
            if rep.passed { "PASSED" } else { "FAILED" }
        );
    }
    Ok(i32::from(!rep.passed))
}

/// vyrescope's vyre backend for `backend`, acquired from vyre's registry by id as a vyre
/// application acquires it (`vyrescope-reference` or `vyrescope-cuda`).
#[cfg(feature = "vyre")]
pub(super) fn acquire_vyrescope(
    backend: super::run::Backend,
) -> Result<Box<dyn vyre_driver::VyreBackend>, Problem> {
    use crate::vyre::backend::registry::{CUDA_ID, REFERENCE_ID};
    crate::harness::replay::acquire_vyrescope(match backend {
        super::run::Backend::Reference => REFERENCE_ID,
        super::run::Backend::Cuda => CUDA_ID,
    })
}

#[cfg(not(feature = "vyre"))]
fn run_vyre_backend(_a: &Args) -> super::Outcome {
    Err(super::vyre_emit::feature_off())
}

/// `selftest --vyre-backend`: the catalogue through a backend acquired from vyre's registry.
#[cfg(feature = "vyre")]
fn run_vyre_backend(a: &Args) -> super::Outcome {
    use crate::harness::vyre_catalog::{run_catalog, CatalogBackend};
    let be = acquire_vyrescope(a.backend)?;
    let rep =
        run_catalog(&mut CatalogBackend::Vyre(be.as_ref()), a.only.as_deref()).map_err(|e| {
            Problem::new(
                e.to_string(),
                "report this bug (vyre's registry could not be read)",
            )
        })?;
    let header = format!(
        "vyre op catalogue through vyre's backend contract: `{}` acquired from vyre's registry by id",
        rep.backend
    );
    print_catalog(a, &rep, &header, "--vyre-backend")
}

#[cfg(not(feature = "vyre"))]
fn run_vyre_dispatch(_a: &Args) -> super::Outcome {
    Err(super::vyre_emit::feature_off())
}

/// `selftest --vyre-dispatch`: the dispatch benchmark through a registry-acquired backend.
#[cfg(feature = "vyre")]
fn run_vyre_dispatch(a: &Args) -> super::Outcome {
    use vyrescope_dispatch_bench::{dispatch_table, run_dispatch_bench, BenchSizes};
    let sizes = match a.backend {
        super::run::Backend::Reference => BenchSizes::HOST,
        super::run::Backend::Cuda => BenchSizes::GPU,
    };
    let be = acquire_vyrescope(a.backend)?;
    let bandwidth = match a.backend {
        super::run::Backend::Reference => None,
        super::run::Backend::Cuda => Some(a.gpu.open()?.pinned_copy_gbps(32)?),
    };
    let mut rep = run_dispatch_bench(be.as_ref(), bandwidth, &sizes)
        .map_err(|e| Problem::new(e.to_string(), "report this bug with the command line"))?;
    // What recording costs, in a private folder removed afterwards.
    let dir = std::env::temp_dir().join(format!("vyrescope-capture-bench-{}", std::process::id()));
    let (elements, repeats) = match a.backend {
        super::run::Backend::Reference => (1 << 12, 5),
        super::run::Backend::Cuda => (1 << 20, 30),
    };
    let overhead = vyrescope_dispatch_bench::capture_overhead(be, &dir, elements, repeats);
    let _ = std::fs::remove_dir_all(&dir);
    let overhead = overhead.map_err(|e| {
        Problem::new(
            format!("the capture overhead run failed: {e}"),
            "report this bug with the command line",
        )
    })?;
    rep.passed &= overhead.verified && overhead.records >= u64::from(repeats);
    rep.capture = Some(overhead);
    let phases = own_phases(a, &sizes)?;
    rep.passed &= phases.iter().all(|r| r.verified);
    if a.json {
        #[derive(serde::Serialize)]
        struct Report<'a> {
            #[serde(flatten)]
            bench: &'a vyrescope_dispatch_bench::DispatchBench,
            phases: &'a [crate::harness::dispatch_phases::PhaseRow],
        }
        let s = serde_json::to_string_pretty(&Report {
            bench: &rep,
            phases: &phases,
        })
        .map_err(Problem::bug)?;
        outln!("{s}");
    } else {
        outln!(
            "dispatch through vyre's backend contract: `{}` acquired from vyre's registry by id\n",
            rep.backend
        );
        out!("{}", dispatch_table(&rep));
        outln!();
        out!(
            "{}",
            crate::harness::dispatch_phases::phase_table(rep.backend, &phases)
        );
        outln!(
            "\nselftest --vyre-dispatch {}",
            if rep.passed { "PASSED" } else { "FAILED" }
        );
    }
    Ok(i32::from(!rep.passed))
}

/// The benchmark's cases through our own backend type (not the registry's wrapper), phase
/// by phase: where the time of the race's dispatches goes.
#[cfg(feature = "vyre")]
fn own_phases(
    a: &Args,
    sizes: &vyrescope_dispatch_bench::BenchSizes,
) -> Result<Vec<crate::harness::dispatch_phases::PhaseRow>, Problem> {
    use crate::harness::dispatch_phases::phase_rows;
    use crate::vyre::backend::registry::{CUDA_ID, REFERENCE_ID};
    use crate::vyre::backend::VyrescopeBackend;
    use vyre_driver::backend::BackendError;
    let failed = |e: String| Problem::new(e, "report this bug with the command line");
    let refused = |e: BackendError| failed(e.to_string());
    match a.backend {
        super::run::Backend::Reference => {
            let device = crate::vyre::backend::reference::ReferenceDevice::default();
            let be = VyrescopeBackend::new(REFERENCE_ID, device).map_err(refused)?;
            phase_rows(&be, sizes).map_err(|e| failed(e.to_string()))
        }
        super::run::Backend::Cuda => {
            let device = crate::runtime::vyre_device::CudaDevice::open(a.gpu.ordinal()?)?;
            let be = VyrescopeBackend::new(CUDA_ID, device).map_err(refused)?;
            phase_rows(&be, sizes).map_err(|e| failed(e.to_string()))
        }
    }
}

/// Runs `selftest`.
pub fn run(a: &Args) -> super::Outcome {
    if a.vyre_dispatch {
        return run_vyre_dispatch(a);
    }
    if a.vyre_backend {
        return run_vyre_backend(a);
    }
    if a.vyre {
        return run_vyre(a);
    }
    if a.vyre_catalog {
        return run_vyre_catalog(a);
    }
    if let Some(n) = a.fuzz {
        return run_fuzz(a, n);
    }
    if let Some(n) = a.fuzz_pipelines {
        return run_fuzz_pipelines(a, n);
    }
    let files = fixture_files(&a.fixtures);
    if files.is_empty() {
        return Err(Problem::new(
            format!("no *.json fixtures in {}", a.fixtures.display()),
            "pass --fixtures DIR",
        ));
    }
    let mut rt = a.gpu.open()?;
    let rep = crate::harness::selftest::selftest(
        &mut rt,
        &files,
        a.repeat,
        !a.no_faults,
        a.root.as_deref(),
    );
    let pipelines = run_pipelines(&mut rt, &a.pipelines, a.repeat, a.root.as_deref());
    let pipelines_ok = pipelines
        .iter()
        .all(|(_, r)| r.as_ref().is_ok_and(|r| r.verified()));
    let timelines = super::selftest_timeline::run(&mut rt, &a.pipelines, a.root.as_deref());
    let inspector = super::selftest_inspector::run(&mut rt, &a.pipelines, a.root.as_deref());
    let passed = rep.passed
        && pipelines_ok
        && timelines.iter().all(|c| c.ok())
        && inspector.iter().all(|c| c.ok());
    if a.json {
        let pl: Vec<serde_json::Value> = pipelines
            .iter()
            .map(|(f, r)| match r {
                Ok(r) => serde_json::json!({"file": f.display().to_string(), "report": r}),
                Err(e) => {
                    serde_json::json!({"file": f.display().to_string(), "error": e.to_string()})
                }
            })
            .collect();
        let v = serde_json::json!({"report": rep, "pipelines": pl, "timelines": timelines, "inspector": inspector, "passed": passed, "telemetry": rt.telemetry(), "cache": rt.cache_report()});
        match serde_json::to_string_pretty(&v) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
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
                    Ok(r) => super::run_pipeline::print_text(r),
                    Err(e) => outln!("  FAIL {}: {e}", f.display()),
                }
            }
        }
        if !timelines.is_empty() {
            out!("{}", super::selftest_timeline::text(&timelines));
        }
        if !inspector.is_empty() {
            out!("{}", super::selftest_inspector::text(&inspector));
        }
        outln!("\nselftest {}", if passed { "PASSED" } else { "FAILED" });
    }
    if passed {
        Ok(0)
    } else {
        Ok(1)
    }
}

/// `selftest --fuzz N`: the differential fuzz (`harness::fuzz`), findings printed as they
/// come, then the summary line; exit 1 on any finding.
fn run_fuzz(a: &Args, n: u64) -> super::Outcome {
    let mut rt = a.gpu.open()?;
    let opts = FuzzOptions {
        count: n,
        seed: a.seed,
        out: a.out.clone().unwrap_or_else(default_out_dir),
        timeout: std::time::Duration::from_millis(a.timeout.max(1)),
    };
    if !a.json {
        let d = rt.caps();
        outln!(
            "fuzz: {n} generated Programs from seed {} on {} (sm_{}{}) against the reference interpreter",
            a.seed,
            d.name,
            d.cc_major,
            d.cc_minor
        );
    }
    let json = a.json;
    let rep = crate::harness::fuzz::fuzz(&mut rt, &opts, &mut |done, finding| {
        if json {
            return;
        }
        if let Some(f) = finding {
            outln!(
                "{} seed {}: {}",
                f.kind.to_uppercase(),
                f.seed,
                crate::util::terminal_safe(&f.detail)
            );
            if let Some(file) = &f.file {
                outln!(
                    "  replay: vyrescope run {} --backend cuda --verify",
                    file.display()
                );
            }
        }
        if done % 500 == 0 {
            outln!("  {done} / {n} done");
        }
    });
    if json {
        match serde_json::to_string_pretty(&rep) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        outln!("{}", fuzz_summary(&rep));
        if !rep.findings.is_empty() {
            outln!("failing Programs are in {}", rep.out.display());
        }
        outln!(
            "selftest --fuzz {}",
            if rep.passed { "PASSED" } else { "FAILED" }
        );
    }
    if rep.passed {
        Ok(0)
    } else {
        Ok(1)
    }
}

/// `selftest --fuzz-pipelines N`: the pipelines run in child processes
/// (`harness::fuzz_children`) so that a faulting fused kernel is recorded and the run goes
/// on; exit 1 on any finding.
fn run_fuzz_pipelines(a: &Args, n: u64) -> super::Outcome {
    use crate::harness::fuzz_children::{supervise, Progress};
    use crate::harness::fuzz_pipelines::pipeline_summary;
    let opts = fuzz_pipeline_options(a, n);
    if a.fuzz_child {
        return run_fuzz_child(a, &opts);
    }
    let exe = std::env::current_exe().map_err(|e| {
        Problem::new(
            format!("cannot find this program's own path to start fuzz workers: {e}"),
            "run vyrescope by its path",
        )
    })?;
    let json = a.json;
    if !json {
        outln!(
            "fuzz-pipelines: {n} generated pipelines from seed {}, separate and fused (--sync {}), against the reference interpreter; each in a worker process that a fault ends and the next seed restarts",
            a.seed,
            a.sync.name()
        );
    }
    let out = opts.out.clone();
    let child_args = |seed: u64, count: u64| -> Vec<std::ffi::OsString> {
        let mut v: Vec<std::ffi::OsString> = vec!["selftest".into(), "--fuzz-pipelines".into()];
        v.push(count.to_string().into());
        v.extend(["--seed".into(), seed.to_string().into()]);
        v.extend(["--sync".into(), a.sync.name().into()]);
        v.extend(["--timeout".into(), a.timeout.to_string().into()]);
        v.extend(["--gpu".into(), a.gpu.gpu.to_string().into()]);
        v.extend(["--out".into(), out.clone().into_os_string()]);
        v.push("--fuzz-child".into());
        v
    };
    let mut device_said = false;
    let rep = supervise(&exe, &opts, &child_args, &mut |p| {
        if json {
            return;
        }
        match p {
            Progress::Device(d) if !device_said => {
                device_said = true;
                outln!("  on {d}");
            }
            Progress::Device(_) => {}
            Progress::Done(done) if done % 100 == 0 => outln!("  {done} / {n} done"),
            Progress::Done(_) => {}
            Progress::Finding(f) => {
                outln!(
                    "{} seed {}: {}",
                    f.kind.to_uppercase(),
                    f.seed,
                    crate::util::terminal_safe(&f.detail)
                );
                if let Some(r) = &f.replay {
                    outln!("  replay: {r}");
                }
            }
        }
    })?;
    if json {
        match serde_json::to_string_pretty(&rep) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        outln!("{}", pipeline_summary(&rep));
        let listed = |kind: &str| -> Vec<String> {
            rep.findings
                .iter()
                .filter(|f| f.kind == kind)
                .map(|f| f.seed.to_string())
                .collect()
        };
        for kind in ["fault", "timeout", "mismatch", "error"] {
            let seeds = listed(kind);
            if !seeds.is_empty() {
                outln!("  {kind} seeds ({}): {}", seeds.len(), seeds.join(" "));
            }
        }
        if !rep.findings.is_empty() {
            outln!(
                "failing pipelines and their plans are in {}",
                rep.out.display()
            );
        }
        outln!(
            "selftest --fuzz-pipelines {}",
            if rep.passed { "PASSED" } else { "FAILED" }
        );
    }
    Ok(i32::from(!rep.passed))
}

/// The options of a `--fuzz-pipelines N` run from the arguments.
fn fuzz_pipeline_options(a: &Args, n: u64) -> crate::harness::fuzz_pipelines::PipelineFuzzOptions {
    crate::harness::fuzz_pipelines::PipelineFuzzOptions {
        count: n,
        seed: a.seed,
        out: a
            .out
            .clone()
            .unwrap_or_else(crate::harness::fuzz_pipelines::default_pipeline_out_dir),
        timeout: std::time::Duration::from_millis(a.timeout.max(1)),
        sync: a.sync,
    }
}

/// A fuzz worker (`--fuzz-child`): the pipelines in this process, each reported as a JSON
/// line (`harness::fuzz_children::ChildEvent`) on stdout; stops at the first fault.
fn run_fuzz_child(
    a: &Args,
    opts: &crate::harness::fuzz_pipelines::PipelineFuzzOptions,
) -> super::Outcome {
    use crate::harness::fuzz_children::ChildEvent;
    let mut rt = a.gpu.open()?;
    outln!("{}", ChildEvent::Device(rt.caps().name.clone()).line());
    let rep =
        crate::harness::fuzz_pipelines::fuzz_pipelines(&mut rt, opts, &mut |done, finding| {
            if let Some(f) = finding {
                outln!("{}", ChildEvent::Finding(f.clone()).line());
            }
            outln!("{}", ChildEvent::Done(done).line());
        });
    let passed = rep.passed;
    outln!("{}", ChildEvent::Report(rep).line());
    Ok(i32::from(!passed))
}

/// Every pipeline fixture in `dir` in both forms, verified (empty when `dir` is missing).
fn run_pipelines(
    rt: &mut Runtime,
    dir: &Path,
    repeat: u32,
    root: Option<&Path>,
) -> Vec<(PathBuf, Result<PipelineGpuReport, Problem>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let opts = PipelineGpuOptions::new(Forms::Both, repeat)
        .with_timeout(Some(std::time::Duration::from_secs(10)))
        .with_decide(Decide::Fuse);
    // The other sync form: fixtures run the default (dataflow waits) with separate launches,
    // then grid barriers in the fused form alone.
    let barrier_opts = opts
        .clone()
        .with_forms(Forms::Megakernel)
        .with_sync(crate::megakernel::dataflow::SyncMode::Barrier);
    let recompute_opts = opts
        .clone()
        .with_forms(Forms::Megakernel)
        .with_decide(Decide::Recompute);
    let mut out = Vec::new();
    for f in files {
        let (pipeline, prepared) = match load_fixture(&f, root) {
            Ok(l) => l,
            Err(e) => {
                out.push((f, Err(e)));
                continue;
            }
        };
        // The runs write into their buffers: each form starts from the initial contents.
        let r = run_pipeline_forms(rt, &pipeline, &mut prepared.clone(), &opts);
        // Every fixture with a group where the sync form matters runs its fused form again
        // with grid barriers (the default form is dataflow), verified the same way.
        let dataflow = r.as_ref().is_ok_and(|r| {
            r.plan
                .as_ref()
                .is_some_and(|p| p.groups.iter().any(|g| g.runs_dataflow()))
        });
        out.push((f.clone(), r));
        if dataflow {
            let r = run_pipeline_forms(rt, &pipeline, &mut prepared.clone(), &barrier_opts);
            out.push((f.clone(), r));
        }
        // A fixture with a chain of window steps runs its recomputed passes too (halo
        // recomputation), verified the same way.
        if has_recomputed_pass(rt, &pipeline, &prepared) {
            let mut prepared = prepared;
            let r = run_pipeline_forms(rt, &pipeline, &mut prepared, &recompute_opts);
            out.push((f, r));
        }
    }
    out
}

/// Whether `--decide recompute` runs a pass of `pipeline` recomputed on `rt`'s device.
fn has_recomputed_pass(
    rt: &Runtime,
    pipeline: &crate::ir::Pipeline,
    prepared: &crate::inputs::pipeline::PreparedPipeline,
) -> bool {
    use crate::harness::target::{compile, target, CacheUse, DeviceChoice, Fit, TargetSpec};
    let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
    let spec = TargetSpec {
        device: DeviceChoice::Caps(rt.caps().clone()),
        decide: Decide::Recompute,
        cache: CacheUse::Off,
        ..TargetSpec::default()
    };
    target(std::sync::Arc::new(pipeline.clone()), shapes, &spec)
        .and_then(|t| compile(&t, Fit::Plan))
        .is_ok_and(|c| c.compiled.plan().groups.iter().any(|g| g.halo.is_some()))
}

/// A pipeline fixture loaded, validated and with its buffers made (`file` inputs from its
/// folder, or anywhere under `root`): what every pipeline check of selftest starts from.
pub(super) fn load_fixture(
    f: &Path,
    root: Option<&Path>,
) -> Result<
    (
        crate::ir::Pipeline,
        crate::inputs::pipeline::PreparedPipeline,
    ),
    Problem,
> {
    let loaded = load_pipeline(f);
    let valid = loaded.is_valid();
    let pipeline = loaded
        .pipeline
        .filter(|_| valid)
        .ok_or_else(|| Problem::new(format!("{} is not a valid pipeline", f.display()), ""))?;
    let base = f.parent().unwrap_or(Path::new("."));
    let files = FileRoot {
        base,
        root: root.unwrap_or(base),
    };
    let prepared = prepare_pipeline_rooted(&pipeline, files)?;
    Ok((pipeline, prepared))
}
