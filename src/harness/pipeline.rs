//! A pipeline on the GPU as separate launches and/or as its megakernel plan, each result
//! checked against the reference interpreter; with both forms, repetitions are interleaved in
//! rounds and the speedup gate judges them. `run PIPELINE --backend cuda` and `selftest` use it.

use serde::Serialize;

use crate::emit::grid_sync::GridBarrier;
use crate::inputs::pipeline::PreparedPipeline;
use crate::inputs::{HostBuffer, LaunchShape};
use crate::interp;
use crate::ir::{Access, Pipeline};
use crate::megakernel::cache::{plan_cached, PlanCache};
use crate::megakernel::fuse_group;
use crate::megakernel::gate::{judge, GateResult};
use crate::megakernel::launch::{separate_launches, PipelineLaunch};
use crate::megakernel::plan::{Plan, PlanOptions, SyncMode};
use crate::runtime::dispatch::{DispatchOptions, TimingStats};
use crate::runtime::execute::tolerance_for;
use crate::runtime::jit::JitOptions;
use crate::runtime::parity::{compare, ParityReport, Tolerance};
use crate::runtime::pipeline::PipelineRunReport;
use crate::runtime::Runtime;

/// Repetitions per form and round when both forms are timed (interleaved rounds keep slow
/// drifts of the machine from favouring one form).
const ROUND: u32 = 5;

/// One form's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct FormReport {
    /// Kernel launches per repetition.
    pub launches: usize,
    /// The kernels, in launch order.
    pub kernels: Vec<String>,
    /// Device time of a whole repetition.
    pub device_ms: TimingStats,
    /// Each repetition's device time (ms).
    pub samples_ms: Vec<f64>,
    /// Host time of the first upload (ms).
    pub upload_ms: f64,
    /// Host time of the readback (ms).
    pub download_ms: f64,
    /// The result against the reference interpreter (transient buffers skipped).
    pub parity: ParityReport,
}

/// What the persistent grid of a cooperative group became on this GPU.
#[derive(Debug, Clone, Serialize)]
pub struct Topology {
    /// Group index in the plan.
    pub group: usize,
    /// Co-resident blocks from the occupancy estimator (the plan's).
    pub estimated_blocks: u32,
    /// Co-resident blocks the driver reports for the fused kernel.
    pub driver_blocks: u32,
    /// The persistent grid used: the smaller of the two, or the fastest measured.
    pub used_blocks: u32,
    /// With `--topology measure`: (blocks, median ms of the group alone) per choice tried.
    pub measured_ms: Vec<(u32, f64)>,
}

/// A pipeline run on the GPU.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineGpuReport {
    /// Pipeline name.
    pub pipeline: String,
    /// The GPU.
    pub device: String,
    /// Repetitions per form.
    pub repeat: u32,
    /// Separate launches, when run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separate: Option<FormReport>,
    /// The megakernel plan, when run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub megakernel: Option<FormReport>,
    /// The plan, when the megakernel form ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<Plan>,
    /// Persistent grids confirmed by the driver.
    pub topology: Vec<Topology>,
    /// How the fused kernels lowered their grid barriers.
    pub grid_barrier: GridBarrier,
    /// How fused persistent groups separated cross-workgroup dependences (`--sync`).
    pub sync: SyncMode,
    /// The runtime's telemetry after the run (plan-cache counters included).
    pub telemetry: crate::runtime::Telemetry,
    /// The speedup gate, when both forms ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<GateResult>,
}

impl PipelineGpuReport {
    /// True when every form that ran equals the reference.
    pub fn verified(&self) -> bool {
        [&self.separate, &self.megakernel]
            .iter()
            .all(|f| f.as_ref().is_none_or(|f| f.parity.passed))
    }
}

/// The pipeline buffers as the runtime takes them (all read-write, so all read back).
pub(crate) fn host_buffers(p: &PreparedPipeline) -> Vec<HostBuffer> {
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
/// With `measure`, each cooperative group's persistent grid is chosen by timing a few
/// blocks-per-SM choices (1, 2, 4 and the most the driver allows, each 5 repetitions of the
/// group alone on `initial`, median kept): fewer blocks make each grid barrier cheaper, more
/// blocks hide memory latency, and which wins depends on the kernel. The inspector's pipeline
/// run uses it too (without `measure`), so both paths launch the same persistent grids.
pub fn plan_launches(
    rt: &mut Runtime,
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    plan: &Plan,
    measure: Option<&[HostBuffer]>,
    jit: &JitOptions,
    sync: SyncMode,
) -> Result<(Vec<PipelineLaunch>, Vec<Topology>), crate::util::Problem> {
    let mut launches = Vec::new();
    let mut topology = Vec::new();
    for (g, group) in plan.groups.iter().enumerate() {
        // A dataflow group's schedule is validated inside `fuse_group`: a refused one is an
        // error here and never launched.
        let mut spec = group.spec_for(sync);
        let mut fused = fuse_group(pipeline, shapes, &spec)?;
        if let Some(estimated) = spec.persistent_blocks {
            let mut driver =
                rt.coresident_blocks(&fused.program, fused.shape.workgroup_size, jit)?;
            // Loads issued ahead of a wait hold registers; where they cost residency, the
            // kernel without them runs on more blocks (softmax over 2^20 floats: 5 blocks
            // per SM with them, 6 without, on an H200).
            if driver < estimated && spec.dataflow.is_some() && !spec.no_prefetch {
                let mut plain = spec.clone();
                plain.no_prefetch = true;
                let k = fuse_group(pipeline, shapes, &plain)?;
                let fits = rt.coresident_blocks(&k.program, k.shape.workgroup_size, jit)?;
                if fits > driver {
                    (spec, fused, driver) = (plain, k, fits);
                }
            }
            let mut used = estimated.min(driver).max(1);
            let mut measured = Vec::new();
            if let Some(initial) = measure {
                let sms = rt.caps().sm_count.max(1);
                // Up to every co-resident block, also where the estimate (a dataflow grid
                // capped by the largest step) is smaller.
                let top = group.coresident_blocks.min(driver).max(used);
                let mut candidates: Vec<u32> = [1, 2, 4]
                    .iter()
                    .map(|k| k * sms)
                    .filter(|&b| b < top)
                    .collect();
                candidates.push(top);
                for blocks in candidates {
                    let mut trial = spec.clone();
                    trial.persistent_blocks = Some(blocks);
                    let k = fuse_group(pipeline, shapes, &trial)?;
                    // Each grid has its own kernel (task loops, prefetched loads): one the
                    // driver cannot keep resident at this size is not a candidate.
                    if rt.coresident_blocks(&k.program, k.shape.workgroup_size, jit)? < blocks {
                        continue;
                    }
                    let launch = k.launch(pipeline)?;
                    let mut bufs = initial.to_vec();
                    let rep =
                        rt.run_pipeline(&[launch], &mut bufs, 5, &DispatchOptions::default(), jit)?;
                    measured.push((blocks, rep.total_ms.median_ms));
                }
                if let Some(&(best, _)) = measured.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
                    used = best;
                }
            }
            if used != estimated {
                spec.persistent_blocks = Some(used);
                fused = fuse_group(pipeline, shapes, &spec)?;
                // Another grid gives other task loops (and prefetched loads), so the kernel
                // may hold more registers: shrink until the driver keeps the grid resident.
                for _ in 0..4 {
                    let fits =
                        rt.coresident_blocks(&fused.program, fused.shape.workgroup_size, jit)?;
                    if fits >= used {
                        break;
                    }
                    used = fits.max(1);
                    spec.persistent_blocks = Some(used);
                    fused = fuse_group(pipeline, shapes, &spec)?;
                }
            }
            topology.push(Topology {
                group: g,
                estimated_blocks: estimated,
                driver_blocks: driver,
                used_blocks: used,
                measured_ms: measured,
            });
        }
        launches.push(fused.launch(pipeline)?);
    }
    Ok((launches, topology))
}

/// One form's timed samples and its first repetition's report and results.
type FormSamples = (Vec<f64>, Option<(PipelineRunReport, Vec<HostBuffer>)>);

/// Which forms to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forms {
    /// One launch per step.
    Separate,
    /// The megakernel plan.
    Megakernel,
    /// Both, interleaved, judged by the gate.
    Both,
}

/// How to run a pipeline on the GPU.
#[derive(Debug, Clone)]
pub struct PipelineGpuOptions {
    /// Which forms.
    pub forms: Forms,
    /// Timed repetitions per form (at least 1).
    pub repeat: u32,
    /// Per-sequence timeout.
    pub timeout: Option<std::time::Duration>,
    /// Reference interpreter step budget.
    pub fuel: u64,
    /// Choose each persistent grid by timing a few choices (`--topology measure`).
    pub measure_topology: bool,
    /// How fused kernels lower their grid barriers (`--grid-barrier`).
    pub grid_barrier: GridBarrier,
    /// Dataflow waits or grid barriers in fused persistent groups (`--sync`).
    pub sync: SyncMode,
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

/// Runs `pipeline` on `rt`; `prepared` holds the initial contents and receives the final
/// contents of the last form run (for `--dump`).
pub fn run_pipeline_forms(
    rt: &mut Runtime,
    pipeline: &Pipeline,
    prepared: &mut PreparedPipeline,
    o: &PipelineGpuOptions,
) -> Result<PipelineGpuReport, crate::util::Problem> {
    let which = o.forms;
    // The oracle first: the steps in order on the reference interpreter.
    let mut reference = prepared.clone();
    let fuel = interp::Options {
        fuel: o.fuel,
        ..interp::Options::default()
    };
    interp::pipeline::run_pipeline(pipeline, &mut reference, &fuel)?;
    let expected = comparable(&reference, host_buffers(&reference));
    let tol = pipeline_tolerance(pipeline);
    let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
    let opts = DispatchOptions {
        timeout: o.timeout,
        ..DispatchOptions::default()
    };
    let jit = JitOptions {
        grid_barrier: o.grid_barrier,
        ..JitOptions::default()
    };
    let separate = separate_launches(pipeline, &shapes)?;
    let mut plan = None;
    let mut topology = Vec::new();
    let mut fused = Vec::new();
    // The initial contents, copied once: every form and topology trial starts from them.
    let initial = host_buffers(prepared);
    if which != Forms::Separate {
        let plan_opts = PlanOptions::new(rt.caps().clone());
        let cache = PlanCache::user();
        let cached = plan_cached(pipeline, &shapes, &plan_opts, cache.as_ref())?;
        if let Some(w) = &cached.warning {
            crate::util::stderr_line(&format!("warning: {w}"));
        }
        rt.telemetry.record_plan(&cached);
        let measure = o.measure_topology.then_some(initial.as_slice());
        (fused, topology) =
            plan_launches(rt, pipeline, &shapes, &cached.plan, measure, &jit, o.sync)?;
        plan = Some(cached.plan);
    }
    let total = o.repeat.max(1);
    let mut results: Vec<FormSamples> = vec![(Vec::new(), None), (Vec::new(), None)];
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
            let rep = rt.run_pipeline(launches, &mut bufs, n, &opts, &jit)?;
            let entry = &mut results[slot];
            entry.0.extend_from_slice(&rep.samples_ms);
            if entry.1.is_none() {
                entry.1 = Some((rep, bufs));
            }
        }
        done += n;
    }
    let mut forms_out: Vec<Option<FormReport>> = Vec::new();
    for (slot, launches) in [(0, &separate), (1, &fused)] {
        let (samples, first) = std::mem::take(&mut results[slot]);
        forms_out.push(first.map(|(rep, bufs)| {
            let parity = compare(&comparable(prepared, bufs.clone()), &expected, tol);
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
    let report = PipelineGpuReport {
        pipeline: pipeline.name.clone(),
        device: rt.caps().name.clone(),
        repeat: total,
        separate: separate_rep,
        megakernel,
        plan,
        topology,
        grid_barrier: o.grid_barrier,
        sync: o.sync,
        telemetry: rt.telemetry().clone(),
        gate,
    };
    Ok(report)
}
