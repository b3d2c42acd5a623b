//! `vyrescope run GRAPH --both` (feature `vyre`; a `.vgr` graph or `.vmk` artifact): the graph's
//! pipeline run three ways, each checked against the reference interpreter running the steps
//! one by one: separate launches (one per node), our megakernel plan, and vyre-megakernel's
//! plan (one launch per vyre fusion group, the Program vyre's merge forms, imported and run
//! through our emitter and runtime: [`crate::vyre::fused`]). With `--backend cuda` the three
//! run in the same interleaved rounds and are timed as `run --both` times a pipeline
//! ([`crate::harness::pipeline::run_forms_with`]); on the reference backend they are checked
//! on the interpreter ([`crate::harness::pipeline::check_on_reference`]) and no time is
//! measured. vyre's own CUDA target compile of the same artifact is reported beside them: ok,
//! or vyre's code and message.

use std::path::Path;
use std::sync::Arc;

use serde::Serialize;

use super::run_args::{Args, Backend};
use crate::harness::pipeline::{
    check_on_reference, expected, pipeline_tolerance, run_forms_with, FormReport, Forms,
};
use crate::harness::target::{compile, target, DeviceChoice, Fit, TargetSpec};
use crate::inputs::pipeline::{pipeline_shapes, PreparedPipeline};
use crate::ir::Pipeline;
use crate::megakernel::gate::GateResult;
use crate::megakernel::launch::{separate_launches, PipelineLaunch};
use crate::runtime::dispatch::TimingStats;
use crate::runtime::parity::ParityReport;
use crate::util::Problem;
use crate::vyre::fused::{self, TargetVerdict, VyreForm};
use crate::vyre::plan::Budget;

/// One form's row.
#[derive(Debug, Serialize)]
struct Row {
    /// `separate`, `vyrescope` or `vyre`.
    form: &'static str,
    /// Launches per repetition (0 when the form did not run).
    launches: usize,
    /// The kernels, in launch order.
    kernels: Vec<String>,
    /// True when the form ran and equals the reference.
    verified: bool,
    /// The comparison with the reference (absent when the form did not run).
    parity: Option<ParityReport>,
    /// Device time of a repetition (absent when not measured).
    device_ms: Option<TimingStats>,
    /// Why the form did not run.
    refused: Option<String>,
}

impl Row {
    fn checked(form: &'static str, launches: &[PipelineLaunch], parity: ParityReport) -> Row {
        Row {
            form,
            launches: launches.len(),
            kernels: launches.iter().map(|l| l.program.name.clone()).collect(),
            verified: parity.passed,
            parity: Some(parity),
            device_ms: None,
            refused: None,
        }
    }

    fn timed(form: &'static str, f: &FormReport) -> Row {
        Row {
            form,
            launches: f.launches,
            kernels: f.kernels.clone(),
            verified: f.parity.passed,
            parity: Some(f.parity.clone()),
            device_ms: Some(f.device_ms.clone()),
            refused: None,
        }
    }

    fn refused(form: &'static str, why: String) -> Row {
        Row {
            form,
            launches: 0,
            kernels: Vec::new(),
            verified: false,
            parity: None,
            device_ms: None,
            refused: Some(why),
        }
    }
}

/// `run GRAPH --both --json`.
#[derive(Debug, Serialize)]
struct BothReport<'a> {
    pipeline: &'a str,
    file: String,
    backend: &'static str,
    /// The GPU, or the device profile our plan was made for on the reference backend.
    device: String,
    /// False on the reference backend: no time was measured.
    times_measured: bool,
    /// Why times are absent, when they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    times_note: Option<&'static str>,
    repeat: u32,
    /// separate, vyrescope, vyre.
    forms: Vec<Row>,
    /// Our plan's speedup gate against separate launches (cuda).
    gate: Option<GateResult>,
    /// vyre's plan's speedup gate against separate launches (cuda).
    vyre_gate: Option<GateResult>,
    /// vyre's plan, group by group, as run.
    vyre_plan: &'a VyreForm,
    /// vyre's own CUDA target compile of the artifact.
    vyre_target: &'a TargetVerdict,
}

const NOT_MEASURED: &str =
    "not measured: the reference backend runs the CPU interpreter; add --backend cuda on a GPU";

/// True when `path` is a vyre graph or artifact (by its first bytes or its name).
pub fn is_graph_file(path: &Path) -> bool {
    let head = std::fs::read(path)
        .map(|b| b.into_iter().take(4).collect::<Vec<u8>>())
        .unwrap_or_default();
    crate::ir::foreign::is_vyre_graph(path, &head)
}

/// Runs the three forms of the graph file's `pipeline` (prepared in `prepared`).
pub fn run(a: &Args, pipeline: &Pipeline, prepared: &mut PreparedPipeline) -> super::Outcome {
    if a.wants_timeline() {
        return Err(Problem::new(
            "--timeline and --trace record one form; `--both` on a graph runs three",
            "drop --both to record our plan's timeline, or drop --timeline",
        ));
    }
    if a.dump.is_some() || a.gate_csv.is_some() {
        return Err(Problem::new(
            "--dump and --gate-csv keep one form's contents or samples; `--both` on a graph runs three",
            "drop --both to dump or record the gate's samples of our plan against separate launches",
        ));
    }
    let bytes = std::fs::read(&a.file).map_err(|e| {
        Problem::new(
            format!("cannot read {}: {e}", a.file.display()),
            "check the path and its permissions",
        )
    })?;
    // The GPU first: without one, `--backend cuda` fails here, before any work.
    let mut rt = match a.backend {
        Backend::Cuda => Some(a.gpu.open()?),
        Backend::Reference => None,
    };
    let (caps, device) = match &rt {
        Some(rt) => (rt.caps().clone(), rt.caps().name.clone()),
        None => {
            let (caps, _) = super::occupancy::resolve_device(None)?;
            let name = format!("{} (profile; our plan only)", caps.name);
            (caps, name)
        }
    };
    // vyre's PTX for the GPU's sm, or the profile's (sm_90) on the reference backend.
    let sm = a.sm.unwrap_or(caps.cc_major * 10 + caps.cc_minor);
    let (imported, form) = fused::open(&a.file, &bytes, Budget::default(), sm)?;
    let names = |p: &Pipeline| p.buffers.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
    if names(&imported.pipeline) != names(pipeline) {
        return Err(Problem::bug(format!(
            "{}: the vyre form's buffers differ from the pipeline's",
            a.file.display()
        )));
    }
    let base = a.file.parent().unwrap_or(Path::new("."));
    let vyre_launches = match &form.pipeline {
        Some(p) => Some(separate_launches(p, &pipeline_shapes(p, base)?)?),
        None => None,
    };
    let fuel = a.fuel.unwrap_or(crate::interp::DEFAULT_FUEL);
    let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
    let (rows, gate, vyre_gate) = match rt.as_mut() {
        None => {
            let want = expected(pipeline, prepared, fuel)?;
            let tol = pipeline_tolerance(pipeline);
            let separate = separate_launches(pipeline, &shapes)?;
            let spec = TargetSpec {
                device: DeviceChoice::Caps(caps.clone()),
                sync: a.sync,
                decide: a.decide,
                ..TargetSpec::default()
            };
            let t = target(Arc::new(pipeline.clone()), shapes.clone(), &spec)?;
            let ours = compile(&t, Fit::Plan)?.compiled.fused_launches()?;
            let mut rows = Vec::new();
            for (form, launches) in [("separate", &separate), ("vyrescope", &ours)] {
                let parity = check_on_reference(launches, prepared, &want, tol, fuel)?;
                rows.push(Row::checked(form, launches, parity));
            }
            rows.push(match (&vyre_launches, &form.refused) {
                (Some(l), _) => Row::checked(
                    "vyre",
                    l,
                    check_on_reference(l, prepared, &want, tol, fuel)?,
                ),
                (None, why) => Row::refused("vyre", why.clone().unwrap_or_default()),
            });
            (rows, None, None)
        }
        Some(rt) => {
            let mut o = super::run_pipeline::options(a);
            o.forms = Forms::Both;
            // vyre's fused kernels may be unable to run where ours can (a `GridSync` that
            // vyre's merge put into a kernel whose workgroups cannot all be resident): that
            // is a finding about vyre's plan, reported on its row, and the other two forms
            // run again without it. A failure of our own forms fails the command.
            let (r, vyre_failed) =
                match run_forms_with(rt, pipeline, prepared, &o, vyre_launches.as_deref()) {
                    Ok((r, _)) => (r, None),
                    Err(e) if vyre_launches.is_some() => {
                        let (r, _) = run_forms_with(rt, pipeline, prepared, &o, None)?;
                        (
                            r,
                            Some(format!("vyre's fused kernels did not run on the GPU: {e}")),
                        )
                    }
                    Err(e) => return Err(e),
                };
            let mut rows = Vec::new();
            for (form, f) in [("separate", &r.separate), ("vyrescope", &r.megakernel)] {
                if let Some(f) = f {
                    rows.push(Row::timed(form, f));
                }
            }
            rows.push(
                match (&r.alternative, vyre_failed.or(form.refused.clone())) {
                    (Some(f), _) => Row::timed("vyre", f),
                    (None, why) => Row::refused("vyre", why.unwrap_or_default()),
                },
            );
            (rows, r.gate, r.alternative_gate)
        }
    };
    let measured = a.backend == Backend::Cuda;
    let report = BothReport {
        pipeline: &pipeline.name,
        file: a.file.display().to_string(),
        backend: a.backend.name(),
        device,
        times_measured: measured,
        times_note: (!measured).then_some(NOT_MEASURED),
        repeat: if measured { a.repeat.max(1) } else { 0 },
        forms: rows,
        gate,
        vyre_gate,
        vyre_plan: &form,
        vyre_target: &form.target,
    };
    if a.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&report).map_err(Problem::bug)?
        );
    } else {
        print_text(&report);
    }
    // vyre's refusals are facts about vyre; a form that ran and differs is a failure.
    let failed = report
        .forms
        .iter()
        .any(|r| r.refused.is_none() && !r.verified);
    if failed {
        errln!(
            "error: a form's result differs from the reference interpreter\n  Fix: for `separate` or `vyrescope` this is a bug in vyrescope; for `vyre` it is what vyre's plan computes (see the group's barriers and bindings); report it with the graph file"
        );
        return Ok(1);
    }
    Ok(0)
}

fn print_text(r: &BothReport<'_>) {
    let on = if r.times_measured {
        format!(
            "on {} ({} repetition{} per form)",
            r.device,
            r.repeat,
            if r.repeat == 1 { "" } else { "s" }
        )
    } else {
        "on the reference interpreter (times not measured: add --backend cuda on a GPU)".into()
    };
    outln!("{} ({}) {on}", r.pipeline, r.file);
    for row in &r.forms {
        let Some(parity) = &row.parity else {
            outln!(
                "  {:<10} not run: {}",
                row.form,
                row.refused.as_deref().unwrap_or("")
            );
            continue;
        };
        let time = match &row.device_ms {
            Some(t) => format!(
                "median {:.4} ms (min {:.4}, max {:.4})",
                t.median_ms, t.min_ms, t.max_ms
            ),
            None => "time not measured".into(),
        };
        outln!(
            "  {:<10} {} launch{:<3} {} ({}, {} elements); {time}",
            row.form,
            row.launches,
            if row.launches == 1 { "" } else { "es" },
            if row.verified { "verified" } else { "MISMATCH" },
            parity.mode,
            parity.compared
        );
        for m in &parity.first {
            outln!(
                "    {}[{}]: got {} reference {}",
                m.buffer,
                m.index,
                m.gpu,
                m.reference
            );
        }
    }
    for (name, g) in [("vyrescope", &r.gate), ("vyre", &r.vyre_gate)] {
        if let Some(g) = g {
            outln!(
                "  {name} speedup over separate {:.2}x (interval {:.2}..{:.2}): {}",
                g.speedup,
                g.speedup_low,
                g.speedup_high,
                g.verdict.text()
            );
        }
    }
    let f = r.vyre_plan;
    outln!(
        "  vyre plan ({}): {} group{}",
        match f.source {
            crate::vyre::plan::PlanSource::Computed => "computed by vyre-megakernel 0.7.2",
            crate::vyre::plan::PlanSource::Artifact => "recorded in the artifact",
        },
        f.groups.len(),
        if f.groups.len() == 1 { "" } else { "s" }
    );
    for g in &f.groups {
        let barriers = if g.barriers.is_empty() {
            String::new()
        } else {
            format!("; barriers {}", g.barriers.join(", "))
        };
        let ptx = match (&g.ptx_lines, &g.ptx_error) {
            (Some(n), _) => format!("; vyre's PTX {n} lines"),
            (None, Some(e)) => format!("; vyre's PTX: {e}"),
            _ => String::new(),
        };
        let dispatch = if g.refused.is_some() {
            String::new()
        } else {
            format!(
                ", {} elements ({})",
                g.elements,
                if g.dispatch == "vyre_target" {
                    "vyre's logical element count"
                } else {
                    "the import's dispatch rule"
                }
            )
        };
        outln!(
            "    group {} (stage {}): {} -> {} {}x{}x{}{dispatch}{barriers}{ptx}",
            g.id,
            g.stage,
            g.member_names.join(", "),
            g.kernel,
            g.workgroup_size[0],
            g.workgroup_size[1],
            g.workgroup_size[2],
        );
        if let Some(why) = &g.refused {
            outln!("      refused: {why}");
        }
    }
    outln!(
        "  vyre target compile ({}, compile_selected_modules): {}",
        r.vyre_target.target,
        r.vyre_target.text()
    );
}
