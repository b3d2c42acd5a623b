//! `vyrescope run PIPELINE.json --backend cuda [--separate | --megakernel | --both]`: the
//! pipeline on the GPU as separate launches and/or as its megakernel plan, each checked
//! against the reference interpreter (`runtime::pipeline_gpu`), with `--both --repeat N`
//! timing both forms interleaved and the speedup gate's verdict.

use std::path::Path;

use super::run::Args;
use crate::inputs::pipeline::PreparedPipeline;
use crate::interp;
use crate::ir::Pipeline;
use crate::megakernel::gate::evidence_csv;
use crate::runtime::pipeline_gpu::{
    run_pipeline_forms, Forms, PipelineGpuOptions, PipelineGpuReport,
};
use crate::util::Problem;

fn forms(a: &Args) -> Forms {
    match (a.separate, a.megakernel, a.both) {
        (true, false, false) => Forms::Separate,
        (false, true, false) => Forms::Megakernel,
        _ => Forms::Both,
    }
}

/// Runs the pipeline on the GPU; `prepared` holds the initial contents and receives the final
/// contents of the last form run (for `--dump`). Returns the exit code.
pub fn run(a: &Args, pipeline: &Pipeline, prepared: &mut PreparedPipeline) -> super::Outcome {
    if a.wants_timeline() {
        return super::run_timeline::pipeline(a, pipeline, prepared);
    }
    let mut rt = a.gpu.open()?;
    let opts = PipelineGpuOptions {
        forms: forms(a),
        repeat: a.repeat,
        timeout: a.timeout_ms.map(std::time::Duration::from_millis),
        fuel: a.fuel.unwrap_or(interp::DEFAULT_FUEL),
        measure_topology: a.topology == super::run::Topology::Measure,
        grid_barrier: a.grid_barrier,
        sync: a.sync,
    };
    let report = run_pipeline_forms(&mut rt, pipeline, prepared, &opts)?;
    if let (Some(path), Some(s), Some(m)) = (&a.gate_csv, &report.separate, &report.megakernel) {
        if let Err(e) = crate::util::write_atomic(
            Path::new(path),
            evidence_csv(&s.samples_ms, &m.samples_ms).as_bytes(),
        ) {
            return Err(Problem::new(
                format!("cannot write {}: {e}", path.display()),
                "give --gate-csv a writable file path",
            ));
        }
    }
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
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
        outln!(
            "  {name:<10} {} launch{}: median {:.4} ms (min {:.4}, max {:.4}); {} ({}, {} elements)",
            f.launches,
            if f.launches == 1 { "" } else { "es" },
            f.device_ms.median_ms,
            f.device_ms.min_ms,
            f.device_ms.max_ms,
            if f.parity.passed { "verified" } else { "MISMATCH" },
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
