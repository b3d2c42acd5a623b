//! `vyrescope run PIPELINE.json --backend cuda [--separate | --megakernel | --both]`: the
//! pipeline on the GPU as separate launches and/or as its megakernel plan, each result checked
//! against the reference interpreter, with `--both --repeat N` timing both forms interleaved
//! and the speedup gate's verdict.

use std::path::Path;

use serde::Serialize;

use super::run::Args;
use crate::inputs::pipeline::PreparedPipeline;
use crate::inputs::{HostBuffer, LaunchShape};
use crate::interp;
use crate::ir::{Access, Pipeline};
use crate::megakernel::cache::{plan_cached, PlanCache};
use crate::megakernel::fuse_group;
use crate::megakernel::gate::{evidence_csv, judge, GateResult};
use crate::megakernel::launch::{separate_launches, PipelineLaunch};
use crate::megakernel::plan::{Plan, PlanOptions};
use crate::runtime::dispatch::{DispatchOptions, TimingStats};
use crate::runtime::execute::tolerance_for;
use crate::runtime::parity::{compare, ParityReport, Tolerance};
use crate::runtime::pipeline::PipelineRunReport;
use crate::runtime::Runtime;

/// Repetitions per form and round when both forms are timed (interleaved rounds keep slow
/// drifts of the machine from favouring one form).
const ROUND: u32 = 5;

/// One form's outcome.
#[derive(Serialize)]
struct FormReport {
    launches: usize,
    kernels: Vec<String>,
    device_ms: TimingStats,
    samples_ms: Vec<f64>,
    upload_ms: f64,
    download_ms: f64,
    parity: ParityReport,
}

/// What the persistent grid of a cooperative group became on this GPU.
#[derive(Serialize)]
struct Topology {
    group: usize,
    estimated_blocks: u32,
    driver_blocks: u32,
    used_blocks: u32,
}

#[derive(Serialize)]
struct CudaReport {
    pipeline: String,
    device: String,
    repeat: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    separate: Option<FormReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    megakernel: Option<FormReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plan: Option<Plan>,
    topology: Vec<Topology>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gate: Option<GateResult>,
}

/// The pipeline buffers as the runtime takes them (all read-write, so all read back).
fn host_buffers(p: &PreparedPipeline) -> Vec<HostBuffer> {
    p.buffers
        .iter()
        .enumerate()
        .map(|(i, b)| HostBuffer {
            name: b.name.clone(),
            elem: b.elem,
            access: Access::ReadWrite,
            binding: i as u32,
            data: b.data.clone(),
        })
        .collect()
}

/// Marks transient buffers read-only so the comparison skips them: nobody reads them after
/// the pipeline, and a fused kernel need not write them.
fn comparable(p: &PreparedPipeline, mut v: Vec<HostBuffer>) -> Vec<HostBuffer> {
    for (b, d) in v.iter_mut().zip(&p.buffers) {
        if d.transient {
            b.access = Access::Read;
        }
    }
    v
}

/// Parity tolerance for the whole pipeline: the sum of its steps' (approximate operators
/// compound along a chain); exact when no step uses one.
fn pipeline_tolerance(pipeline: &Pipeline) -> Option<Tolerance> {
    pipeline
        .steps
        .iter()
        .filter_map(|s| tolerance_for(&s.program))
        .reduce(|a, b| Tolerance {
            max_ulps: a.max_ulps + b.max_ulps,
            abs: a.abs.max(b.abs),
        })
}

/// The plan's launches, each cooperative group's persistent grid confirmed by the driver.
fn plan_launches(
    rt: &mut Runtime,
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    plan: &Plan,
) -> Result<(Vec<PipelineLaunch>, Vec<Topology>), String> {
    let mut launches = Vec::new();
    let mut topology = Vec::new();
    for (g, group) in plan.groups.iter().enumerate() {
        let mut spec = group.spec();
        let mut fused = fuse_group(pipeline, shapes, &spec).map_err(|e| e.to_string())?;
        if let Some(estimated) = spec.persistent_blocks {
            let driver = rt
                .coresident_blocks(&fused.program, fused.shape.workgroup_size)
                .map_err(|e| e.to_string())?;
            let used = estimated.min(driver).max(1);
            if used != estimated {
                spec.persistent_blocks = Some(used);
                fused = fuse_group(pipeline, shapes, &spec).map_err(|e| e.to_string())?;
            }
            topology.push(Topology {
                group: g,
                estimated_blocks: estimated,
                driver_blocks: driver,
                used_blocks: used,
            });
        }
        launches.push(fused.launch(pipeline).map_err(|e| e.to_string())?);
    }
    Ok((launches, topology))
}

/// Which forms to run.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Forms {
    Separate,
    Megakernel,
    Both,
}

fn forms(a: &Args) -> Forms {
    match (a.separate, a.megakernel, a.both) {
        (true, false, false) => Forms::Separate,
        (false, true, false) => Forms::Megakernel,
        _ => Forms::Both,
    }
}

fn form_report(
    launches: &[PipelineLaunch],
    samples: Vec<f64>,
    first: &PipelineRunReport,
    parity: ParityReport,
) -> FormReport {
    FormReport {
        launches: launches.len(),
        kernels: launches.iter().map(|l| l.program.name.clone()).collect(),
        device_ms: TimingStats::of(&samples),
        samples_ms: samples,
        upload_ms: first.upload_ms,
        download_ms: first.download_ms,
        parity,
    }
}

/// Runs the pipeline on the GPU; `prepared` holds the initial contents and receives the final
/// contents of the last form run (for `--dump`). Returns the exit code.
pub fn run(a: &Args, pipeline: &Pipeline, prepared: &mut PreparedPipeline) -> i32 {
    let which = forms(a);
    // The oracle first: the steps in order on the reference interpreter.
    let mut reference = prepared.clone();
    let fuel = interp::Options {
        fuel: a.fuel.unwrap_or(interp::DEFAULT_FUEL),
        ..interp::Options::default()
    };
    if let Err(e) = interp::pipeline::run_pipeline(pipeline, &mut reference, &fuel) {
        return super::fail(e);
    }
    let expected = comparable(&reference, host_buffers(&reference));
    let tol = pipeline_tolerance(pipeline);
    let mut rt = match Runtime::open(0) {
        Ok(rt) => rt,
        Err(e) => return super::fail(e),
    };
    let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
    let opts = DispatchOptions {
        timeout: a.timeout_ms.map(std::time::Duration::from_millis),
        ..DispatchOptions::default()
    };
    let separate = match separate_launches(pipeline, &shapes) {
        Ok(l) => l,
        Err(e) => return super::fail(e),
    };
    let mut plan = None;
    let mut topology = Vec::new();
    let mut fused = Vec::new();
    if which != Forms::Separate {
        let plan_opts = PlanOptions::new(rt.caps().clone());
        let cache = PlanCache::user();
        let cached = match plan_cached(pipeline, &shapes, &plan_opts, cache.as_ref()) {
            Ok(c) => c,
            Err(e) => return super::fail(e),
        };
        if let Some(w) = &cached.warning {
            eprintln!("warning: {w}");
        }
        match plan_launches(&mut rt, pipeline, &shapes, &cached.plan) {
            Ok((l, t)) => {
                fused = l;
                topology = t;
            }
            Err(e) => return super::fail(e),
        }
        plan = Some(cached.plan);
    }
    let initial = host_buffers(prepared);
    let total = a.repeat.max(1);
    let mut results: Vec<(Vec<f64>, Option<(PipelineRunReport, Vec<HostBuffer>)>)> =
        vec![(Vec::new(), None), (Vec::new(), None)];
    let mut done = 0;
    while done < total {
        let n = if which == Forms::Both {
            ROUND.min(total - done)
        } else {
            total - done
        };
        for (slot, launches, wanted) in [
            (0, &separate, which != Forms::Megakernel),
            (1, &fused, which != Forms::Separate),
        ] {
            if !wanted {
                continue;
            }
            let mut bufs = initial.clone();
            let rep = match rt.run_pipeline(launches, &mut bufs, n, &opts) {
                Ok(r) => r,
                Err(e) => return super::fail(e),
            };
            let entry = &mut results[slot];
            entry.0.extend_from_slice(&rep.samples_ms);
            if entry.1.is_none() {
                entry.1 = Some((rep, bufs));
            }
        }
        done += n;
    }
    let mut ok = true;
    let mut forms_out: Vec<Option<FormReport>> = Vec::new();
    for (slot, launches) in [(0, &separate), (1, &fused)] {
        let (samples, first) = std::mem::take(&mut results[slot]);
        forms_out.push(first.map(|(rep, bufs)| {
            let parity = compare(&comparable(prepared, bufs.clone()), &expected, tol);
            ok &= parity.passed;
            for (d, b) in prepared.buffers.iter_mut().zip(bufs) {
                d.data = b.data;
            }
            form_report(launches, samples, &rep, parity)
        }));
    }
    let megakernel = forms_out.pop().flatten();
    let separate_rep = forms_out.pop().flatten();
    let gate = match (&separate_rep, &megakernel) {
        (Some(s), Some(m)) => Some(judge(&s.samples_ms, &m.samples_ms)),
        _ => None,
    };
    if let (Some(path), Some(s), Some(m)) = (&a.gate_csv, &separate_rep, &megakernel) {
        if let Err(e) = crate::util::write_atomic(
            Path::new(path),
            evidence_csv(&s.samples_ms, &m.samples_ms).as_bytes(),
        ) {
            return super::fail(format!(
                "cannot write {}: {e}\n  Fix: give --gate-csv a writable file path",
                path.display()
            ));
        }
    }
    let report = CudaReport {
        pipeline: pipeline.name.clone(),
        device: rt.caps().name.clone(),
        repeat: total,
        separate: separate_rep,
        megakernel,
        plan,
        topology,
        gate,
    };
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => return super::fail(e),
        }
    } else {
        print_text(&report);
    }
    if ok {
        0
    } else {
        eprintln!(
            "error: a GPU result differs from the reference interpreter\n  Fix: this is a bug in the fused kernel, the emitter or the interpreter; report it with the pipeline file"
        );
        1
    }
}

fn print_text(r: &CudaReport) {
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
    for t in &r.topology {
        outln!(
            "  group {}: persistent grid {} blocks (estimated {}, driver allows {})",
            t.group,
            t.used_blocks,
            t.estimated_blocks,
            t.driver_blocks
        );
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
