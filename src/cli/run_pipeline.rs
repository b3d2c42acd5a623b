//! `vyrescope run PIPELINE.json`: validate the pipeline, prepare its buffers and run it
//! through the executor `--backend` names. On the reference interpreter every step runs in
//! order; the report lists each step and the final non-transient buffers (text or `--json`).
//! With `--backend cuda [--separate | --megakernel | --both]` the pipeline runs on the GPU as
//! separate launches and/or as its megakernel plan, each checked against the reference
//! interpreter (`harness::pipeline`), with `--both --repeat N` timing both forms interleaved
//! and the speedup gate's verdict. Either may dump initial and final contents.

use std::path::Path;

use serde::Serialize;

use super::run_args::{dump_named, Args, Backend};
use crate::harness::executor::{Executor, PipelineExecution};
use crate::harness::pipeline::{Forms, PipelineGpuOptions, PipelineGpuReport};
use crate::harness::target::{compile, target, Fit, TargetSpec};
use crate::inputs::pipeline::{prepare_pipeline_rooted, PreparedPipeline};
use crate::interp::{self, pipeline::StepRun};
use crate::ir::Pipeline;
use crate::megakernel::decision::DecisionReport;
use crate::megakernel::gate::evidence_csv;
use crate::megakernel::plan::Decide;
use crate::report::{element_text, OutputSummary, FIRST_ELEMENTS};
use crate::util::Problem;
use crate::validate::pipeline::load_pipeline;

/// `run --json` for a pipeline.
#[derive(Serialize)]
struct PipelineReport<'a> {
    pipeline: &'a str,
    backend: &'static str,
    steps: &'a [StepRun],
    /// Final contents of every non-transient pipeline buffer, by name (file order).
    #[serde(serialize_with = "ser_outputs")]
    outputs: Vec<(String, OutputSummary)>,
    elapsed_ms: f64,
    node_evals: u64,
    /// What decides the pipeline's fusion when it runs on a GPU (the plan `plan` shows).
    decision: Option<DecisionReport>,
}

fn ser_outputs<S: serde::Serializer>(
    v: &[(String, OutputSummary)],
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for (k, o) in v {
        m.serialize_entry(k, o)?;
    }
    m.end()
}

fn dump_buffers(dir: &Path, p: &PreparedPipeline, suffix: &str, all: bool) -> Result<(), Problem> {
    let named: Vec<(&str, &[u8])> = p
        .buffers
        .iter()
        .filter(|b| all || !b.transient)
        .map(|b| (b.name.as_str(), b.data.as_slice()))
        .collect();
    dump_named(dir, &named, suffix)
}

/// Runs `run` on a pipeline file.
pub fn run(a: &Args) -> super::Outcome {
    if a.workgroup.is_some() || a.grid.is_some() {
        return Err(Problem::new(
            "--workgroup/--grid do not apply to a pipeline",
            "set `workgroup_size`, `grid` or `elements` on the steps in the pipeline file",
        ));
    }
    let loaded = load_pipeline(&a.file);
    let Some(pipeline) = loaded.pipeline.as_ref().filter(|_| loaded.is_valid()) else {
        return Err(Problem::invalid_file(
            &a.file,
            "pipeline",
            &loaded.diagnostics,
        ));
    };
    for d in &loaded.diagnostics {
        errln!("{d}");
    }
    let base = a.file.parent().unwrap_or(Path::new("."));
    // `file` contents may come from `--root DIR`, as for a Program.
    let mut prepared = prepare_pipeline_rooted(pipeline, super::run_args::file_root(a, base))?;
    // A vyre graph or artifact with `--both`: vyre's plan runs as a third form.
    #[cfg(feature = "vyre")]
    if a.both && super::run_both::is_graph_file(&a.file) {
        return super::run_both::run(a, pipeline, &mut prepared);
    }
    if let Some(dir) = &a.dump {
        dump_buffers(dir, &prepared, ".in.bin", true)?;
    }
    if a.backend == Backend::Cuda {
        let code = run_cuda(a, pipeline, &mut prepared)?;
        if code == 0 {
            if let Some(dir) = &a.dump {
                dump_buffers(dir, &prepared, ".bin", false)?;
            }
        }
        return Ok(code);
    }
    if a.wants_timeline() {
        return Err(Problem::new(
            "--timeline and --trace record GPU time",
            "add --backend cuda",
        ));
    }
    let decision = reference_decision(a, pipeline, &prepared)?;
    let (steps, elapsed_ms) =
        match Executor::Reference.run_pipeline(pipeline, &mut prepared, &options(a)) {
            Ok(PipelineExecution::Reference { steps, elapsed_ms }) => (steps, elapsed_ms),
            Ok(_) => {
                return Err(crate::util::Problem::bug(
                    "internal: the reference executor ran elsewhere",
                ))
            }
            Err(e) => return Err(e),
        };
    if let Some(dir) = &a.dump {
        // Transient buffers have no meaningful final contents: nobody may read them.
        dump_buffers(dir, &prepared, ".bin", false)?;
    }
    let report = PipelineReport {
        pipeline: &pipeline.name,
        backend: a.backend.name(),
        steps: &steps,
        outputs: prepared
            .buffers
            .iter()
            .filter(|b| !b.transient)
            .map(|b| (b.name.clone(), OutputSummary::of_bytes(b.elem, &b.data)))
            .collect(),
        elapsed_ms,
        node_evals: steps.iter().map(|s| s.stats.node_evals).sum(),
        decision,
    };
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        outln!(
            "{} on {}: {} steps, {:.3} ms, {} node evaluations",
            report.pipeline,
            report.backend,
            steps.len(),
            elapsed_ms,
            report.node_evals
        );
        for s in &steps {
            outln!(
                "  steps[{}] {}: grid {:?}, workgroup {:?}, {:.3} ms",
                s.step,
                s.program,
                s.grid,
                s.workgroup_size,
                s.elapsed_ms
            );
        }
        for l in report.decision.iter().flat_map(DecisionReport::lines) {
            outln!("  {l}");
        }
        for ((name, o), b) in report
            .outputs
            .iter()
            .zip(prepared.buffers.iter().filter(|b| !b.transient))
        {
            // Text shows floats in their own shortest form (f32 as f32), like a Program run.
            let first: Vec<String> = (0..FIRST_ELEMENTS.min(o.len))
                .filter_map(|i| element_text(b.elem, &b.data, i))
                .collect();
            let more = if o.len > first.len() { ", ..." } else { "" };
            outln!(
                "  {name}: {}[{}] checksum {} first [{}{more}]",
                o.elem.name(),
                o.len,
                o.checksum,
                first.join(", ")
            );
        }
    }
    Ok(0)
}

/// The decision a GPU run of `pipeline` would follow (the default device profile, the plan
/// cache looked up only), for the reference run to report as every front end does. A
/// pipeline the planner cannot plan still runs on the interpreter (said on stderr); only
/// `--decide measure`, which needs a GPU, is refused.
fn reference_decision(
    a: &Args,
    pipeline: &Pipeline,
    prepared: &PreparedPipeline,
) -> Result<Option<DecisionReport>, Problem> {
    let spec = TargetSpec {
        sync: a.sync,
        decide: a.decide,
        ..TargetSpec::default()
    };
    let shapes = prepared.steps.iter().map(|s| s.shape).collect();
    let compiled = target(std::sync::Arc::new(pipeline.clone()), shapes, &spec)
        .and_then(|t| compile(&t, Fit::Plan));
    match compiled {
        Ok(c) => Ok(Some(c.decision)),
        Err(e) if a.decide == Decide::Measure => Err(e),
        Err(e) => {
            errln!("note: no fusion decision: {}", e.message);
            Ok(None)
        }
    }
}

fn forms(a: &Args) -> Forms {
    match (a.separate, a.megakernel, a.both) {
        (true, false, false) => Forms::Separate,
        (false, true, false) => Forms::Megakernel,
        _ => Forms::Both,
    }
}

/// What `a` asks of a pipeline run (the reference interpreter uses only the fuel).
pub(super) fn options(a: &Args) -> PipelineGpuOptions {
    PipelineGpuOptions::new(forms(a), a.repeat)
        .with_timeout(a.timeout_ms.map(std::time::Duration::from_millis))
        .with_fuel(a.fuel.unwrap_or(interp::DEFAULT_FUEL))
        .with_measure_topology(a.topology == super::run_args::Topology::Measure)
        .with_decide(a.decide)
        .with_grid_barrier(a.grid_barrier)
        .with_sync(a.sync)
}

/// Runs the pipeline on the GPU; `prepared` holds the initial contents and receives the final
/// contents of the last form run (for `--dump`). Returns the exit code.
fn run_cuda(a: &Args, pipeline: &Pipeline, prepared: &mut PreparedPipeline) -> super::Outcome {
    if a.wants_timeline() {
        return super::run_timeline::pipeline(a, pipeline, prepared);
    }
    let mut rt = a.gpu.open()?;
    let report = match Executor::InProcess(&mut rt).run_pipeline(pipeline, prepared, &options(a)) {
        Ok(PipelineExecution::Gpu(r)) => r,
        Ok(_) => {
            return Err(crate::util::Problem::bug(
                "internal: the in-process executor ran elsewhere",
            ))
        }
        Err(e) => return Err(e),
    };
    if let (Some(path), Some(s), Some(m)) = (&a.gate_csv, &report.separate, &report.megakernel) {
        if let Err(e) = crate::util::write_atomic(
            Path::new(path),
            evidence_csv(&s.samples_ms, &m.samples_ms).as_bytes(),
        ) {
            return Err(crate::util::Problem::new(
                format!("cannot write {}: {e}", path.display()),
                "give --gate-csv a writable file path",
            ));
        }
    }
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(crate::util::Problem::bug(e)),
        }
    } else {
        print_text(&report);
    }
    if report.verified() {
        Ok(0)
    } else {
        errln!(
            "error: a GPU result differs from the reference interpreter\n  Fix: this is a bug in the fused kernel, the emitter or the interpreter; report it with the pipeline file"
        );
        Ok(1)
    }
}

/// The report as text (also used by `selftest`).
pub fn print_text(r: &PipelineGpuReport) {
    outln!(
        "{} on {} ({} repetition{} per form)",
        r.pipeline,
        r.device,
        r.repeat,
        if r.repeat == 1 { "" } else { "s" }
    );
    for (name, f) in [("separate", &r.separate), ("megakernel", &r.megakernel)] {
        let Some(f) = f else { continue };
        let time = if f.samples_ms.len() > 1 {
            format!(
                "warm median {:.4} ms (min {:.4}, max {:.4}), first {:.4} ms (cold)",
                f.device_ms.median_ms,
                f.device_ms.min_ms,
                f.device_ms.max_ms,
                f.first_ms.unwrap_or_default()
            )
        } else {
            format!(
                "{:.4} ms (one repetition: a cold figure)",
                f.device_ms.median_ms
            )
        };
        outln!(
            "  {name:<10} {} launch{}: {time}; {} ({}, {} elements)",
            f.launches,
            if f.launches == 1 { "" } else { "es" },
            if f.parity.passed {
                "verified"
            } else {
                "MISMATCH"
            },
            f.parity.mode,
            f.parity.compared
        );
        for m in &f.parity.first {
            outln!(
                "    {}[{}]: gpu {} reference {}",
                m.buffer,
                m.index,
                m.gpu,
                m.reference
            );
        }
    }
    for l in r.decision.iter().flat_map(DecisionReport::lines) {
        outln!("  {l}");
    }
    if let Some(p) = &r.plan {
        outln!(
            "  plan: {} group{}, {} grid barrier{}, {} fusion break{} (plan cache: {})",
            p.groups.len(),
            if p.groups.len() == 1 { "" } else { "s" },
            p.grid_barriers,
            if p.grid_barriers == 1 { "" } else { "s" },
            p.fusion_breaks.len(),
            if p.fusion_breaks.len() == 1 { "" } else { "s" },
            if p.cache == crate::megakernel::plan::CacheStatus::Hit {
                "hit"
            } else {
                "miss"
            }
        );
    }
    if r.plan
        .as_ref()
        .is_some_and(|p| p.groups.iter().any(|g| g.runs_dataflow()))
    {
        outln!("  sync: {}", r.sync.name());
    }
    for t in &r.topology {
        outln!(
            "  group {}: persistent grid {} blocks (estimated {}, driver allows {})",
            t.group,
            t.used_blocks,
            t.estimated_blocks,
            t.driver_blocks
        );
        if !t.measured_ms.is_empty() {
            let tried: Vec<String> = t
                .measured_ms
                .iter()
                .map(|(b, ms)| format!("{b} blocks {ms:.4} ms"))
                .collect();
            outln!("    measured: {}", tried.join(", "));
        }
    }
    if let Some(g) = &r.gate {
        outln!(
            "  speedup {:.2}x (interval {:.2}..{:.2}, {} + {} samples): {}",
            g.speedup,
            g.speedup_low,
            g.speedup_high,
            g.separate_samples,
            g.fused_samples,
            g.verdict.text()
        );
    }
}
