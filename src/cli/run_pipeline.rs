//! `vyrescope run PIPELINE.json`: validate the pipeline, prepare its buffers and run every
//! step in order on the reference interpreter; report each step and the final non-transient
//! buffers (text or `--json`), optionally dumping initial and final contents.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::run::{dump_named, Args, Backend};
use crate::inputs::pipeline::{prepare_pipeline_rooted, PreparedPipeline};
use crate::interp::{self, pipeline::StepRun};
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
    let mut prepared = prepare_pipeline_rooted(pipeline, super::run::file_root(a, base))?;
    if let Some(dir) = &a.dump {
        dump_buffers(dir, &prepared, ".in.bin", true)?;
    }
    if a.backend == Backend::Cuda {
        let code = super::run_pipeline_cuda::run(a, pipeline, &mut prepared);
        if code == Ok(0) {
            if let Some(dir) = &a.dump {
                dump_buffers(dir, &prepared, ".bin", false)?;
            }
        }
        return code;
    }
    if a.wants_timeline() {
        return Err(Problem::new(
            "--timeline and --trace record GPU time",
            "add --backend cuda",
        ));
    }
    let opts = interp::Options {
        fuel: a.fuel.unwrap_or(interp::DEFAULT_FUEL),
        ..interp::Options::default()
    };
    let t = Instant::now();
    let steps = interp::pipeline::run_pipeline(pipeline, &mut prepared, &opts)?;
    let elapsed_ms = t.elapsed().as_secs_f64() * 1e3;
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
