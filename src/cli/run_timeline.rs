//! `run FILE --backend cuda --timeline [--trace OUT.json] [--timeline-out REC.json]
//! [--timeline-rounds N]`: the Program (or each form of the pipeline) run instrumented
//! (`harness::timeline_run`); prints the timeline summary and the consistency check, writes
//! the Chrome trace and the record file (`timeline::file`), and with `--timeline-rounds N`
//! times N instrumented and N plain rounds side by side (the overhead). Exits 1 when the
//! check finds a problem or a result differs from the reference interpreter.

use std::path::Path;

use serde_json::{json, Value};

use super::run_args::Args;
use crate::emit::timeline::TimelineSpec;
use crate::harness::pipeline::compile_on;
use crate::harness::timeline_run::{record_pipeline, PipelineForm, TimelineLaunch, TimelineRun};
use crate::inputs::pipeline::PreparedPipeline;
use crate::ir::{Pipeline, Program};
use crate::runtime::dispatch::DispatchOptions;
use crate::runtime::jit::JitOptions;
use crate::runtime::Runtime;
use crate::timeline::{self, Decoded};
use crate::util::Problem;

/// Refuses a `--trace` or `--timeline-out` path that names the input file (it would be
/// overwritten) or both name one file.
fn check_trace_path(a: &Args) -> Result<(), Problem> {
    let same = |x: &Path, y: &Path| match (std::fs::canonicalize(x), std::fs::canonicalize(y)) {
        (Ok(o), Ok(i)) => o == i,
        _ => x == y,
    };
    for (opt, out) in [("--trace", &a.trace), ("--timeline-out", &a.timeline_out)] {
        let Some(out) = out else { continue };
        if same(out, &a.file) {
            return Err(Problem::new(
                format!("{opt} {} names the input file", out.display()),
                "give it its own file, e.g. trace.json",
            ));
        }
    }
    if let (Some(t), Some(r)) = (&a.trace, &a.timeline_out) {
        if same(t, r) {
            return Err(Problem::new(
                format!("--trace and --timeline-out both name {}", t.display()),
                "give each its own file, e.g. --trace t.json --timeline-out rec.json",
            ));
        }
    }
    Ok(())
}

/// One recorded form: its label, the run, the decoded records, the summary, the problems.
struct Form {
    label: &'static str,
    run: TimelineRun,
    decoded: Decoded,
    summary: timeline::Summary,
    problems: Vec<String>,
}

fn record(
    rt: &mut Runtime,
    label: &'static str,
    launches: &[TimelineLaunch],
    buffers: &mut [crate::inputs::HostBuffer],
    a: &Args,
    jit: &JitOptions,
) -> Result<Form, Problem> {
    let opts = DispatchOptions {
        timeout: a.timeout_ms.map(std::time::Duration::from_millis),
        ..DispatchOptions::default()
    };
    let rounds = a.timeline_rounds.max(1);
    let plain = if a.timeline_rounds > 0 { rounds } else { 0 };
    let run = rt.run_timeline(launches, buffers, rounds, plain, &opts, jit)?;
    checked(label, run)
}

/// Decodes, summarises and checks a recorded form.
fn checked(label: &'static str, run: TimelineRun) -> Result<Form, Problem> {
    let decoded = timeline::decode(&run.capture)?;
    let summary = timeline::summarize(&run.capture, &decoded);
    let problems = timeline::check(&run.capture, &decoded);
    Ok(Form {
        label,
        run,
        decoded,
        summary,
        problems,
    })
}

fn finish(
    a: &Args,
    rt: &Runtime,
    forms: &[Form],
    mut extra: Value,
    parity_ok: bool,
) -> super::Outcome {
    if let Some(out) = &a.trace {
        let parts: Vec<_> = forms
            .iter()
            .map(|f| (f.label, &f.run.capture, &f.decoded))
            .collect();
        let trace = timeline::trace::chrome_trace_parts(&parts);
        let text = serde_json::to_string(&trace).map_err(Problem::bug)?;
        if let Err(e) = crate::util::write_atomic(out, text.as_bytes()) {
            return Err(Problem::new(
                format!("cannot write {}: {e}", out.display()),
                "give --trace a writable file path",
            ));
        }
    }
    let caps = rt.caps();
    if let Some(out) = &a.timeline_out {
        let parts: Vec<_> = forms.iter().map(|f| (f.label, &f.run.capture)).collect();
        let source = a.file.display().to_string();
        let bytes = std::fs::read(&a.file).ok();
        let text = timeline::file::to_json(Some(&caps.name), &source, bytes.as_deref(), &parts)
            .map_err(Problem::bug)?;
        if let Err(e) = crate::util::write_atomic(out, text.as_bytes()) {
            return Err(Problem::new(
                format!("cannot write {}: {e}", out.display()),
                "give --timeline-out a writable file path",
            ));
        }
    }
    let ok = parity_ok && forms.iter().all(|f| f.problems.is_empty());
    if a.json {
        let fj: Vec<Value> = forms
            .iter()
            .map(|f| {
                json!({
                    "form": f.label,
                    "kernels": f.run.kernels.iter().map(|k| k.kernel_name.clone()).collect::<Vec<_>>(),
                    "timeline": f.summary,
                    "check": {"passed": f.problems.is_empty(), "problems": f.problems},
                    "overhead": f.run.overhead(),
                })
            })
            .collect();
        if let Some(o) = extra.as_object_mut() {
            o.insert("device".into(), json!({"name": caps.name, "sm_count": caps.sm_count, "driver_version": caps.driver_version}));
            if forms.len() == 1 {
                o.insert("timeline".into(), json!(forms[0].summary));
                o.insert("check".into(), fj[0]["check"].clone());
                o.insert("overhead".into(), fj[0]["overhead"].clone());
            } else {
                o.insert("forms".into(), json!(fj));
            }
        }
        match serde_json::to_string_pretty(&extra) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        outln!("device: {} ({} SMs)", caps.name, caps.sm_count);
        for f in forms {
            if !f.label.is_empty() {
                outln!("{}:", f.label);
            }
            out!("{}", f.summary.to_text());
            match f.problems.is_empty() {
                true => outln!(
                    "  check: ok ({} slices, every (step, workgroup) once, waits inside their kernel)",
                    f.decoded.slices.len()
                ),
                false => {
                    for p in &f.problems {
                        outln!("  check FAILED: {p}");
                    }
                }
            }
            if let Some(o) = f.run.overhead() {
                outln!(
                    "  overhead: instrumented {:.4} ms vs plain {:.4} ms (median of {}): {:.3}x",
                    o.instrumented_ms,
                    o.plain_ms,
                    f.run.plain_ms.len(),
                    o.ratio
                );
            }
        }
        if let Some(out) = &a.trace {
            outln!(
                "trace: {} (open in ui.perfetto.dev or chrome://tracing)",
                out.display()
            );
        }
        if let Some(out) = &a.timeline_out {
            outln!(
                "records: {} (open with `vyrescope {} --timeline {}`)",
                out.display(),
                a.file.display(),
                out.display()
            );
        }
    }
    if ok {
        Ok(0)
    } else {
        Ok(1)
    }
}

/// `run PROGRAM --backend cuda --timeline`.
pub fn program(a: &Args, program: &Program) -> super::Outcome {
    check_trace_path(a)?;
    let base = a.file.parent().unwrap_or(Path::new("."));
    let prepared = crate::inputs::prepare_rooted(
        program,
        super::run_args::file_root(a, base),
        a.workgroup,
        a.grid,
    )?;
    let mut rt = a.gpu.open()?;
    let mut buffers = prepared.buffers.clone();
    let launch = TimelineLaunch {
        program: program.clone(),
        shape: prepared.shape,
        buffers: (0..buffers.len()).collect(),
        spec: TimelineSpec::kernel(None),
    };
    let jit = JitOptions {
        grid_barrier: a.grid_barrier,
        ..JitOptions::default()
    };
    let form = record(&mut rt, "", &[launch], &mut buffers, a, &jit)?;
    // The instrumented kernel must compute what the plain one does.
    let mut parity = Value::Null;
    let mut parity_ok = true;
    if a.verify {
        let mut r = prepared.buffers.clone();
        let opts = crate::interp::Options::default();
        match crate::interp::run_with_sums(program, &prepared.shape, &mut r, &opts) {
            Ok((_, sums)) => {
                let p = crate::runtime::parity::compare_with(
                    &buffers,
                    &r,
                    crate::runtime::execute::tolerance_for(program),
                    Some(&sums),
                );
                parity_ok = p.passed;
                if !a.json {
                    outln!(
                        "parity: {} ({}, {} elements)",
                        if p.passed { "ok" } else { "FAILED" },
                        p.mode,
                        p.compared
                    );
                }
                parity = json!(p);
            }
            Err(e) => return Err(Problem::from(e)),
        }
    }
    let extra = json!({"program": program.name, "backend": "cuda", "parity": parity});
    finish(a, &rt, &[form], extra, parity_ok)
}

/// `run PIPELINE --backend cuda --timeline [--separate | --megakernel | --both]`: the
/// pipeline compiled and fitted once, as `run` compiles it, and each form recorded from it;
/// exit 1 when an instrumented form's results differ from the reference interpreter.
pub fn pipeline(a: &Args, pipeline: &Pipeline, prepared: &mut PreparedPipeline) -> super::Outcome {
    check_trace_path(a)?;
    let mut rt = a.gpu.open()?;
    let jit = JitOptions {
        grid_barrier: a.grid_barrier,
        ..JitOptions::default()
    };
    let mut which = Vec::new();
    if !a.megakernel {
        which.push(PipelineForm::Separate);
    }
    if !a.separate {
        which.push(PipelineForm::Fused);
    }
    let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
    let how = crate::harness::pipeline::CompileHow {
        sync: a.sync,
        decide: a.decide,
        measure_topology: false,
    };
    let initial = crate::harness::pipeline::host_buffers(prepared);
    let compiled = compile_on(&mut rt, pipeline, &shapes, &how, &initial, &jit)?;
    let decision = compiled.decision;
    let compiled = compiled.compiled;
    if !a.json {
        for l in decision.lines() {
            outln!("{l}");
        }
    }
    let opts = DispatchOptions {
        timeout: a.timeout_ms.map(std::time::Duration::from_millis),
        ..DispatchOptions::default()
    };
    let rounds = a.timeline_rounds.max(1);
    let plain = if a.timeline_rounds > 0 { rounds } else { 0 };
    let recorded = record_pipeline(
        &mut rt,
        &compiled,
        prepared,
        &which,
        (rounds, plain),
        &opts,
        &jit,
    )?;
    let parity_ok = recorded.iter().all(|f| f.parity.passed);
    let parity: serde_json::Map<String, Value> = recorded
        .iter()
        .map(|f| (f.label.to_string(), json!(f.parity)))
        .collect();
    let mut forms = Vec::new();
    for f in recorded {
        if !a.json {
            outln!(
                "parity ({}): {} ({}, {} elements)",
                f.label,
                if f.parity.passed { "ok" } else { "FAILED" },
                f.parity.mode,
                f.parity.compared
            );
        }
        forms.push(checked(f.label, f.run)?);
    }
    let extra = json!({"pipeline": pipeline.name, "backend": "cuda", "parity": parity, "decision": decision});
    finish(a, &rt, &forms, extra, parity_ok)
}
