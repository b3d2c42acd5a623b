//! `selftest --fuzz-pipelines`: generated pipelines ([`crate::gen::random_pipeline`]: chains
//! and DAGs of race-free steps with mixed workgroup sizes, neighbour reads, clamped and
//! periodic stencils, ping-pong stencil runs, reductions, folds and histograms) planned, fused and run on the GPU in both forms (separate launches
//! and the megakernel plan), each compared with the reference interpreter running the steps
//! one by one.
//!
//! The watchdog: every launch sequence runs under the per-sequence timeout of the runtime
//! (which, like `selftest --fuzz`, turns a kernel that does not finish into a `timeout`
//! error and stops fuzzing when the context cannot be used any more). Every failing pipeline
//! is written to the out folder with its plan, so `vyrescope run FILE --backend cuda --both`
//! and `vyrescope plan FILE` replay it.
//!
//! [`fused_on_interpreter`] is the same comparison without a GPU: every fused kernel of the
//! plan runs on the interpreter; the tests run it over a few hundred seeds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::pipeline::{
    host_buffers, launches_on_reference, run_pipeline_forms, Forms, PipelineGpuOptions,
};
use super::target::{target, CacheUse, DeviceChoice, Fit, TargetSpec};
use crate::gen::{random_pipeline, random_window_chain};
use crate::inputs::pipeline::{prepare_pipeline, PreparedPipeline};
use crate::inputs::LaunchShape;
use crate::interp;
use crate::ir::Pipeline;
use crate::megakernel::compiled::CompiledPipeline;
use crate::megakernel::dataflow::SyncMode;
use crate::megakernel::plan::{Decide, Plan};
use crate::occupancy::DeviceCaps;
use crate::runtime::Runtime;
use crate::util::Problem;

/// What to fuzz.
#[derive(Debug, Clone)]
pub struct PipelineFuzzOptions {
    /// Pipelines to generate.
    pub count: u64,
    /// Seed of the first pipeline; pipeline `k` uses `seed + k`.
    pub seed: u64,
    /// Folder the failing pipelines and their plans are written to.
    pub out: PathBuf,
    /// Per-sequence timeout (the watchdog).
    pub timeout: Duration,
    /// How the fused kernels synchronise.
    pub sync: crate::megakernel::dataflow::SyncMode,
}

/// One pipeline that failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineFinding {
    /// The pipeline's seed.
    pub seed: u64,
    /// "mismatch", "timeout", "fault" or "error".
    pub kind: String,
    /// What failed.
    pub detail: String,
    /// The pipeline file written for replay.
    pub file: Option<PathBuf>,
    /// The command that runs `file` the way it failed (the fuzzer fuses as far as legal, so
    /// the line carries `--decide fuse`, and the sync form it ran).
    #[serde(default)]
    pub replay: Option<String>,
}

impl PipelineFinding {
    /// A finding of `kind` for `seed`, with its replay line when `file` was written.
    pub fn new(
        seed: u64,
        kind: &str,
        detail: String,
        file: Option<PathBuf>,
        sync: SyncMode,
    ) -> Self {
        let replay = file.as_deref().map(|f| replay_line(f, sync));
        PipelineFinding {
            seed,
            kind: kind.into(),
            detail,
            file,
            replay,
        }
    }
}

/// The `run` line that reproduces a fuzz pipeline's run: both forms on the GPU, fused as far
/// as legal (the fuzzer's decision, not the cost model's) in the form it ran.
pub fn replay_line(file: &Path, sync: SyncMode) -> String {
    replay_line_as(file, sync, "fuse")
}

/// [`replay_line`] with `--decide DECIDE` (`recompute` for a chain of window steps).
pub fn replay_line_as(file: &Path, sync: SyncMode, decide: &str) -> String {
    format!(
        "vyrescope run {} --backend cuda --both --decide {decide} --sync {}",
        file.display(),
        sync.name()
    )
}

/// The outcome of a pipeline fuzz run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineFuzzReport {
    /// Pipelines generated.
    pub pipelines: u64,
    /// Pipelines whose both forms equalled the interpreter.
    pub agreed: u64,
    /// Launches over all agreeing pipelines run separately / fused.
    pub separate_launches: u64,
    /// See `separate_launches`.
    pub fused_launches: u64,
    /// Fused groups that mixed workgroup sizes.
    pub mixed_groups: u64,
    /// Every failure.
    pub findings: Vec<PipelineFinding>,
    /// Where failing pipelines are written.
    pub out: PathBuf,
    /// True when there is no finding.
    pub passed: bool,
}

impl PipelineFuzzReport {
    /// A report of no pipelines yet, writing its findings under `out`.
    pub fn empty(out: PathBuf) -> Self {
        PipelineFuzzReport {
            pipelines: 0,
            agreed: 0,
            separate_launches: 0,
            fused_launches: 0,
            mixed_groups: 0,
            findings: Vec::new(),
            out,
            passed: true,
        }
    }
}

/// The default out folder: `~/.cache/vyrescope/fuzz-pipelines`, else the temp folder.
pub fn default_pipeline_out_dir() -> PathBuf {
    dirs::cache_dir()
        .map(|d| d.join("vyrescope").join("fuzz-pipelines"))
        .unwrap_or_else(|| std::env::temp_dir().join("vyrescope-fuzz-pipelines"))
}

fn prepare(p: &Pipeline) -> Result<PreparedPipeline, Problem> {
    // Generated pipelines read no files; the folder only anchors the (unused) file rule.
    Ok(prepare_pipeline(p, &std::env::temp_dir())?)
}

/// Plans `p` for `caps` (its steps' shapes from `prepared`).
pub fn plan_for(
    p: &Pipeline,
    prepared: &PreparedPipeline,
    caps: &DeviceCaps,
) -> Result<Plan, Problem> {
    let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
    plan_of(p, &shapes, caps, Decide::Fuse)
}

fn plan_of(
    p: &Pipeline,
    shapes: &[LaunchShape],
    caps: &DeviceCaps,
    decide: Decide,
) -> Result<Plan, Problem> {
    compile(p, shapes, caps, SyncMode::Barrier, decide).map(|c| c.planned.plan)
}

/// `p` compiled for `caps` in `sync` form, without the plan cache. The fuzzer checks fused
/// forms: `Decide::Fuse` fuses whatever may legally fuse, `Decide::Recompute` runs every
/// chain of window steps recomputed, whatever either costs.
fn compile(
    p: &Pipeline,
    shapes: &[LaunchShape],
    caps: &DeviceCaps,
    sync: SyncMode,
    decide: Decide,
) -> Result<CompiledPipeline, Problem> {
    let spec = TargetSpec {
        device: DeviceChoice::Caps(caps.clone()),
        sync,
        decide,
        cache: CacheUse::Off,
        ..TargetSpec::default()
    };
    let t = target(Arc::new(p.clone()), shapes.to_vec(), &spec)?;
    Ok(super::target::compile(&t, Fit::Plan)?.compiled)
}

/// [`fused_on_interpreter`] with every chain of window steps in the recomputed form
/// (`--decide recompute`, `megakernel::halo`): each pass's kernel, as emitted, on the
/// interpreter against the steps one by one, bit for bit.
pub fn recomputed_on_interpreter(p: &Pipeline, caps: &DeviceCaps) -> Result<Plan, Problem> {
    on_interpreter(p, caps, SyncMode::Dataflow, Decide::Recompute)
}

/// Runs `p` as its plan's fused kernels on the interpreter and as separate steps, and
/// compares every buffer bit for bit; returns the plan. The error names the buffer and the
/// first element that differs.
pub fn fused_on_interpreter(p: &Pipeline, caps: &DeviceCaps) -> Result<Plan, Problem> {
    fused_on_interpreter_in(p, caps, SyncMode::Barrier)
}

/// [`fused_on_interpreter`] with the groups fused in `sync` form (dataflow groups then run
/// their counters, flags and last-arriver folds on the interpreter, which executes the whole
/// grid statement by statement: it checks the rewriting, not the waits' ordering).
pub fn fused_on_interpreter_in(
    p: &Pipeline,
    caps: &DeviceCaps,
    sync: SyncMode,
) -> Result<Plan, Problem> {
    on_interpreter(p, caps, sync, Decide::Fuse)
}

fn on_interpreter(
    p: &Pipeline,
    caps: &DeviceCaps,
    sync: SyncMode,
    decide: Decide,
) -> Result<Plan, Problem> {
    let initial = prepare(p)?;
    let mut reference = initial.clone();
    super::pipeline::reference(p, &mut reference, interp::DEFAULT_FUEL)
        .map_err(|e| e.context("reference"))?;
    let shapes: Vec<_> = initial.steps.iter().map(|s| s.shape).collect();
    let compiled = compile(p, &shapes, caps, sync, decide)?;
    let mut mem = host_buffers(&initial);
    for (gi, g) in compiled.groups.iter().enumerate() {
        let k = g
            .kernel
            .as_ref()
            .map_err(|e| Problem::from(e.clone()).context(format_args!("group {gi} ({sync:?})")))?;
        // The plan says how each step uses the block; the kernel must be built that way.
        if !g.group.step_layouts.is_empty() && k.layouts != g.group.step_layouts {
            return Err(Problem::bug(format!(
                "group {gi} ({sync:?}): the plan lays its steps out as {:?} but the fused kernel \
                 as {:?}",
                g.group.step_layouts, k.layouts
            )));
        }
        // The group's launch on the interpreter, through the same binding the GPU run uses.
        let launch = k
            .launch(p)
            .map_err(|e| Problem::from(e).context(format_args!("group {gi} ({sync:?})")))?;
        launches_on_reference(&[launch], &mut mem, interp::DEFAULT_FUEL)
            .map_err(|e| e.context(format_args!("group {gi} (fused, {sync:?})")))?;
    }
    for (want, got) in reference.buffers.iter().zip(&mem) {
        if want.transient || want.data == got.data {
            continue;
        }
        let size = want.elem.size_bytes();
        let at = (0..want.data.len() / size)
            .find(|&i| want.data[i * size..(i + 1) * size] != got.data[i * size..(i + 1) * size])
            .unwrap_or(0);
        return Err(Problem::new(
            format!(
                "buffer `{}` differs first at element {at} (fused kernels, {sync:?} form, against the steps one by one)",
                want.name
            ),
            "",
        ));
    }
    Ok(compiled.planned.plan)
}

/// `p` as a pipeline file with inline Programs (what `vyrescope run` reads back).
pub fn pipeline_json(p: &Pipeline) -> Result<String, Problem> {
    Ok(crate::ir::pipeline_to_json(p, None)?)
}

/// Writes `<dir>/pipeline_<seed>.json` and, when planned, `<dir>/pipeline_<seed>.plan.json`.
pub fn write_pipeline_case(
    dir: &Path,
    seed: u64,
    p: &Pipeline,
    plan: Option<&Plan>,
) -> Result<PathBuf, Problem> {
    write_case(dir, &format!("pipeline_{seed:016x}"), p, plan)
}

/// Writes `<dir>/<stem>.json` and, when planned, `<dir>/<stem>.plan.json` (a window chain
/// of the fuzzer is `chain_<seed>`).
fn write_case(
    dir: &Path,
    stem: &str,
    p: &Pipeline,
    plan: Option<&Plan>,
) -> Result<PathBuf, Problem> {
    let fix = "pass --out DIR with a writable folder";
    std::fs::create_dir_all(dir)
        .map_err(|e| Problem::new(format!("cannot create {}: {e}", dir.display()), fix))?;
    let path = dir.join(format!("{stem}.json"));
    let text = pipeline_json(p)?;
    crate::util::write_atomic(&path, format!("{text}\n").as_bytes())
        .map_err(|e| Problem::new(format!("cannot write {}: {e}", path.display()), fix))?;
    if let Some(plan) = plan {
        let plan_path = dir.join(format!("{stem}.plan.json"));
        let text = serde_json::to_string_pretty(plan).map_err(Problem::bug)?;
        crate::util::write_atomic(&plan_path, format!("{text}\n").as_bytes())
            .map_err(|e| Problem::new(format!("cannot write {}: {e}", plan_path.display()), fix))?;
    }
    Ok(path)
}

fn kind_of(detail: &str) -> &'static str {
    let d = detail.to_ascii_lowercase();
    if d.contains("timed out") || d.contains("timeout") {
        "timeout"
    } else if d.contains("fault") || d.contains("illegal") {
        "fault"
    } else {
        "error"
    }
}

/// Runs the pipeline fuzz; `each` sees every finding as it happens and the count done.
pub fn fuzz_pipelines(
    rt: &mut Runtime,
    o: &PipelineFuzzOptions,
    each: &mut dyn FnMut(u64, Option<&PipelineFinding>),
) -> PipelineFuzzReport {
    let mut rep = PipelineFuzzReport::empty(o.out.clone());
    let opts = PipelineGpuOptions::new(Forms::Both, 1)
        .with_timeout(Some(o.timeout))
        .with_fuel(interp::Options::default().fuel)
        .with_decide(Decide::Fuse)
        .with_sync(o.sync);
    // Every fourth seed also draws a chain of window steps, run recomputed.
    let recompute = opts.clone().with_decide(Decide::Recompute);
    let caps = rt.caps().clone();
    'seeds: for k in 0..o.count {
        let seed = o.seed.wrapping_add(k);
        let mut cases: Vec<(Result<Pipeline, Problem>, &PipelineGpuOptions, &str)> =
            vec![(random_pipeline(seed), &opts, "pipeline")];
        if seed % 4 == 0 {
            cases.push((random_window_chain(seed), &recompute, "chain"));
        }
        for (generated, opts, stem) in cases {
            // A chain's finding names its own file and replays recomputed.
            let finding = |kind: &str, detail: String, file: Option<PathBuf>| {
                let mut f = PipelineFinding::new(seed, kind, detail, file, o.sync);
                if stem == "chain" {
                    f.replay = f
                        .file
                        .as_deref()
                        .map(|x| replay_line_as(x, o.sync, "recompute"));
                }
                f
            };
            rep.pipelines += 1;
            let p = match generated {
                Ok(p) => p,
                Err(e) => {
                    rep.findings.push(finding("error", e.to_string(), None));
                    each(k + 1, rep.findings.last());
                    continue;
                }
            };
            let mut prepared = match prepare(&p) {
                Ok(x) => x,
                Err(e) => {
                    let file = write_case(&o.out, &format!("{stem}_{seed:016x}"), &p, None).ok();
                    rep.findings.push(finding("error", e.to_string(), file));
                    each(k + 1, rep.findings.last());
                    continue;
                }
            };
            let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
            let outcome = run_pipeline_forms(rt, &p, &mut prepared, opts);
            let found = match outcome {
                Ok(r) if r.verified() => {
                    rep.agreed += 1;
                    rep.separate_launches += r.separate.as_ref().map_or(0, |f| f.launches) as u64;
                    rep.fused_launches += r.megakernel.as_ref().map_or(0, |f| f.launches) as u64;
                    rep.mixed_groups += r.plan.as_ref().map_or(0, |pl| {
                        pl.groups
                            .iter()
                            .filter(|g| g.mixed_workgroup_sizes())
                            .count()
                    }) as u64;
                    None
                }
                Ok(r) => {
                    let which = |f: &Option<super::pipeline::FormReport>| {
                        f.as_ref().is_some_and(|f| !f.parity.passed)
                    };
                    Some((
                        "mismatch",
                        format!(
                            "differs from the interpreter: separate {}, fused {}",
                            if which(&r.separate) { "DIFFERS" } else { "ok" },
                            if which(&r.megakernel) {
                                "DIFFERS"
                            } else {
                                "ok"
                            }
                        ),
                    ))
                }
                Err(e) => {
                    let e = e.to_string();
                    let line = e.lines().next().unwrap_or_default().to_string();
                    Some((kind_of(&e), line))
                }
            };
            match found {
                Some((kind, detail)) => {
                    let (file, detail) = match write_case(
                        &o.out,
                        &format!("{stem}_{seed:016x}"),
                        &p,
                        plan_of(&p, &shapes, &caps, opts.decide).ok().as_ref(),
                    ) {
                        Ok(f) => (Some(f), detail),
                        Err(w) => (None, format!("{detail} (not written: {w})")),
                    };
                    let stop = kind == "timeout" || kind == "fault";
                    rep.findings.push(finding(
                        kind,
                        if stop {
                            format!("{detail} (this process stops: the context may be unusable)")
                        } else {
                            detail
                        },
                        file,
                    ));
                    each(k + 1, rep.findings.last());
                    if stop {
                        break 'seeds;
                    }
                }
                None => each(k + 1, None),
            }
        }
    }
    rep.passed = rep.findings.is_empty();
    rep
}

/// The summary line.
pub fn pipeline_summary(rep: &PipelineFuzzReport) -> String {
    format!(
        "fuzz-pipelines: {} pipelines, {} agreed in both forms ({} separate launches, {} fused launches, {} mixed-size groups), {} mismatches or failures",
        rep.pipelines,
        rep.agreed,
        rep.separate_launches,
        rep.fused_launches,
        rep.mixed_groups,
        rep.findings.len()
    )
}
