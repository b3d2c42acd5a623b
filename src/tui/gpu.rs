//! The inspector's GPU seam: the [`Gpu`] trait (probe, live kernel resources, dispatch with
//! verification, tune sweeps, cache statistics, telemetry), its real implementation
//! [`WorkerGpu`] over the runtime's GPU worker process, and the view models the panels show
//! (plain rows and numbers), plus the offline device profiles (`occupancy`). Wiring a newer
//! runtime API changes this file only; tests drive the inspector with a fake [`Gpu`].
//!
//! When the runtime is absent (not in this build, or no CUDA driver on this machine) every
//! method returns `Err(reason)`: one line the panels show as is.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::emit::{ptxas, EmitOptions, EmittedKernel};
use crate::harness::executor::{Execution, Executor};
use crate::harness::preserve::Preservation;
use crate::ir::Program;
use crate::occupancy::{profiles, DeviceCaps, KernelResources};
use crate::runtime::execute::RunRequest;
use crate::runtime::{parity, GpuWorker, SweepRequest};

use super::analysis::{Resources, Unavailable};
use super::pipeline::{PipelineFile, PipelineRun, GPU_REPEAT};
use crate::harness::profile_run::{InstrumentedRun, PROFILE_REPEAT};
use crate::harness::replay_record::RecordReplay;
use crate::harness::worker_messages::{
    JobsClient, PipelineJob, ProfileJob, ReplayJob, TimelineJob,
};
use crate::megakernel::plan::SyncMode;
use crate::util::Problem;

/// Why the live panels are empty before the first probe.
pub const NO_RUNTIME: &str = "no dispatch yet - press r to run on the GPU";

/// Per-launch timeout of inspector dispatches and tune candidates: a kernel stuck in a loop
/// becomes a timeout error instead of a frozen Run tab.
pub const KERNEL_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a Program's `file` inputs come from: paths resolve against `base` (the Program's
/// folder) and must stay inside `root` (`--root DIR`), or inside `base` when there is none.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputFolder {
    /// Folder relative paths resolve against.
    pub base: PathBuf,
    /// Folder every input must lie inside; `None`: `base`.
    pub root: Option<PathBuf>,
}

impl InputFolder {
    /// The inputs' confinement rule in the form `inputs` takes.
    pub fn file_root(&self) -> crate::inputs::FileRoot<'_> {
        crate::inputs::FileRoot {
            base: &self.base,
            root: self.root.as_deref().unwrap_or(&self.base),
        }
    }
}

/// Everything the inspector asks of a GPU. The shell owns one instance (the worker thread,
/// or a headless replay) and runs jobs against it; `update` never sees it.
pub trait Gpu: Send {
    /// Probes the live device.
    fn probe(&mut self) -> Result<DeviceCaps, Problem>;
    /// Resources of `kernel` from the live driver; `None` when no device was probed (the
    /// caller then asks `ptxas`).
    fn live_resources(
        &mut self,
        kernel: &EmittedKernel,
    ) -> Option<Result<KernelResources, Problem>>;
    /// Emits `program` for `opts`' target sm and workgroup, dispatches it and verifies it
    /// against the reference interpreter; `files` resolves `file` inputs.
    fn dispatch(
        &mut self,
        program: &Program,
        files: &InputFolder,
        opts: &EmitOptions,
    ) -> Result<RunRecord, Problem>;
    /// Times every workgroup-size candidate for `opts`' target sm; `progress(done, total)`
    /// is called after each.
    fn tune(
        &mut self,
        program: &Program,
        files: &InputFolder,
        opts: &EmitOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<TuneRow>, Problem>;
    /// PTX and module cache statistics.
    fn cache_stats(&mut self) -> Result<Counters, Problem>;
    /// Runtime telemetry counters.
    fn telemetry(&mut self) -> Result<Counters, Problem>;
    /// Runs a pipeline as separate launches and as its compiled plan's fused kernels, both
    /// verified against the reference interpreter by the one runner `run --backend cuda
    /// --both` uses, then records both forms' timelines from the same compiled kernels. The
    /// default has no GPU (test fakes).
    fn run_pipeline(
        &mut self,
        file: &PipelineFile,
        sync: SyncMode,
    ) -> Result<PipelineRan, Problem> {
        let _ = (file, sync);
        Err(Problem::new("this GPU seam runs no pipelines", ""))
    }
    /// Replays dispatch `index` of the capture in `dir` on `vyrescope-cuda` (in the GPU
    /// worker process, as `replay --only N --backend cuda`): the record's line of `replay
    /// --json`'s report. The default replays nothing (test fakes).
    fn replay_capture(&mut self, dir: &Path, index: u64) -> Result<RecordReplay, Problem> {
        let _ = (dir, index);
        Err(Problem::new("this GPU seam replays no captures", ""))
    }
    /// Profiles a Program or pipeline file with its instrumented build (in the GPU worker
    /// process, as `vyrescope profile` measures): one run per kernel. The default has no
    /// GPU (test fakes).
    fn profile(&mut self, file: &Path) -> Result<Vec<InstrumentedRun>, Problem> {
        let _ = file;
        Err(Problem::new("this GPU seam profiles nothing", ""))
    }
    /// Records one instrumented round of a Program for the Timeline tab (after a
    /// dispatch). The default records nothing (test fakes).
    fn timeline(
        &mut self,
        what: &super::timeline::Recording,
    ) -> Result<Vec<std::sync::Arc<super::timeline::TimelineData>>, Problem> {
        let _ = what;
        Err(Problem::new("this GPU seam records no timelines", ""))
    }
}

/// A pipeline run on the GPU as the Run tab shows it, and its recorded timelines (or why
/// they could not be recorded or read).
pub type PipelineRan = (
    PipelineRun,
    Option<Result<Vec<std::sync::Arc<super::timeline::TimelineData>>, Problem>>,
);

/// The [`Gpu`] of the CPU analysis thread, which never gets GPU jobs: every request says
/// so (a routing mistake shows as an error line, not a hang).
pub struct CpuOnly;

const CPU_ONLY: &str = "internal: a GPU job reached the CPU analysis thread";

fn cpu_only() -> Problem {
    Problem::new(CPU_ONLY, "")
}

impl Gpu for CpuOnly {
    fn probe(&mut self) -> Result<DeviceCaps, Problem> {
        Err(cpu_only())
    }
    fn live_resources(&mut self, _: &EmittedKernel) -> Option<Result<KernelResources, Problem>> {
        None
    }
    fn dispatch(
        &mut self,
        _: &Program,
        _: &InputFolder,
        _: &EmitOptions,
    ) -> Result<RunRecord, Problem> {
        Err(cpu_only())
    }
    fn tune(
        &mut self,
        _: &Program,
        _: &InputFolder,
        _: &EmitOptions,
        _: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<TuneRow>, Problem> {
        Err(cpu_only())
    }
    fn cache_stats(&mut self) -> Result<Counters, Problem> {
        Err(cpu_only())
    }
    fn telemetry(&mut self) -> Result<Counters, Problem> {
        Err(cpu_only())
    }
}

/// The real [`Gpu`]: all live work goes to a GPU worker process, so a kernel fault ends that
/// process only and the next request starts a fresh one (the inspector can always dispatch
/// again).
#[derive(Default)]
pub struct WorkerGpu {
    worker: GpuWorker,
}

impl WorkerGpu {
    /// A client; no worker process starts until the first request.
    pub fn new() -> Self {
        WorkerGpu {
            worker: GpuWorker::new(),
        }
    }
}

/// Kernel resources of `kernel`: from the live driver when `gpu` has probed a device (and
/// the PTX loads for it), else from `ptxas -v` for `sm`.
pub fn kernel_resources(gpu: &mut dyn Gpu, kernel: &EmittedKernel, sm: u32) -> Resources {
    let mut why = String::from("no GPU probed");
    match gpu.live_resources(kernel) {
        Some(Ok(r)) => return Ok((r, "live driver".into())),
        Some(Err(e)) => why = format!("live driver: {}", e.message.lines().next().unwrap_or("")),
        None => {}
    }
    match ptxas::offline_resources(&kernel.ptx, sm) {
        Ok(o) => Ok((
            crate::diagnostics::compile::resources_from_ptxas(&o),
            format!("ptxas -v for {}", o.arch),
        )),
        Err(ptxas::PtxasError::NotFound) => match estimate_from_ptx(kernel) {
            Some(r) => Ok((
                r,
                "estimated, ptxas not found (exact figures: export VYRESCOPE_PTXAS=$(scripts/install-ptxas.sh))".into(),
            )),
            None => Err(Unavailable::Missing {
                what: format!("kernel resources unknown: {why} and ptxas not found"),
                fix: "run on a GPU machine, or export VYRESCOPE_PTXAS=$(scripts/install-ptxas.sh)"
                    .into(),
            }),
        },
        // Only the first line of ptxas's message: the Occupancy tab shows it in a sentence.
        Err(e) => Err(Unavailable::Failed(Problem::new(
            format!(
                "kernel resources unknown: {why}; {}",
                e.to_string().lines().next().unwrap_or("")
            ),
            "",
        ))),
    }
}

/// Kernel resources estimated from the emitted PTX alone (`emit::reg_estimate`, the same
/// estimate `vyrescope occupancy` prints), for when neither a driver nor ptxas can measure
/// them: the Occupancy and Resources tabs then show it labelled "estimated, ptxas not found".
fn estimate_from_ptx(kernel: &EmittedKernel) -> Option<KernelResources> {
    Some(crate::emit::reg_estimate::estimate_resources(&kernel.ptx))
}

/// Result of verifying a GPU dispatch against the reference interpreter.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Parity {
    /// True when every element matched (within the documented ULP bound).
    pub ok: bool,
    /// Elements that differ.
    pub mismatches: u64,
    /// First mismatches, as `buffer[index]: gpu=.. ref=..`.
    pub first: Vec<String>,
}

/// One dispatch, as the Run tab lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// Program name.
    pub program: String,
    /// Workgroups.
    pub grid: [u32; 3],
    /// Threads per workgroup.
    pub workgroup: [u32; 3],
    /// Target sm the PTX was emitted for (the one chosen with `T`).
    pub sm: u32,
    /// Kernel time from CUDA events (median over the launches).
    pub device_ms: f64,
    /// JIT time (0 when the module came from the cache).
    pub jit_ms: f64,
    /// Verification against the reference interpreter.
    pub parity: Option<Parity>,
    /// What ran it: [`GPU_BACKEND`], or [`REFERENCE_BACKEND`] when there is no GPU (then
    /// `device_ms` is the interpreter's wall time and nothing is compared).
    pub backend: String,
}

/// [`RunRecord::backend`] of a GPU dispatch.
pub const GPU_BACKEND: &str = "gpu";
/// [`RunRecord::backend`] of an offline run on the reference interpreter.
pub const REFERENCE_BACKEND: &str = "reference interpreter";

/// Runs `program` on the reference interpreter with its `run` section's inputs at `opts`'
/// workgroup size (what `r` does without a GPU). Pure CPU work for the analysis thread.
pub fn reference_dispatch(
    program: &Program,
    files: &InputFolder,
    opts: &EmitOptions,
) -> Result<RunRecord, Problem> {
    let req = RunRequest {
        root: files.root.clone(),
        workgroup: Some(opts.workgroup_size),
        ..RunRequest::default()
    };
    run_record(Executor::Reference, program, files, opts, &req)
}

/// One run of `program` through `exec` as `req` asks, as the Run tab lists it: the one place
/// the inspector turns any executor's result into a [`RunRecord`].
fn run_record(
    mut exec: Executor<'_>,
    program: &Program,
    files: &InputFolder,
    opts: &EmitOptions,
    req: &RunRequest,
) -> Result<RunRecord, Problem> {
    let gpu_ms = |d: &Option<crate::runtime::TimingStats>| d.as_ref().map_or(0.0, |d| d.median_ms);
    let jit_ms = |info: &crate::runtime::KernelInfo| if info.cached { 0.0 } else { info.jit_ms };
    let run = exec.run_program(program, &files.base, req)?;
    Ok(match run {
        Execution::Reference(run) => RunRecord {
            program: program.name.clone(),
            grid: run.shape.grid,
            workgroup: run.shape.workgroup_size,
            sm: opts.sm,
            device_ms: run.elapsed_ms,
            jit_ms: 0.0,
            parity: None,
            backend: REFERENCE_BACKEND.into(),
        },
        Execution::InProcess(run) => RunRecord {
            program: program.name.clone(),
            grid: run.shape.grid,
            workgroup: run.shape.workgroup_size,
            sm: opts.sm,
            device_ms: gpu_ms(&run.report.device_ms),
            jit_ms: jit_ms(&run.compiled.info),
            parity: run.parity.as_ref().map(parity_of),
            backend: GPU_BACKEND.into(),
        },
        Execution::Worker(run) => RunRecord {
            program: run.program,
            grid: run.shape.grid,
            workgroup: run.shape.workgroup_size,
            sm: run.sm,
            device_ms: gpu_ms(&run.dispatch.device_ms),
            jit_ms: jit_ms(&run.info),
            parity: run.parity.as_ref().map(parity_of),
            backend: GPU_BACKEND.into(),
        },
    })
}

/// One tune candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuneRow {
    /// Workgroup size tried.
    pub workgroup: [u32; 3],
    /// Median device time; `None` when it could not launch.
    pub median_ms: Option<f64>,
    /// Estimated occupancy.
    pub occupancy_pct: Option<f64>,
    /// Speedup against the program's default size.
    pub speedup: Option<f64>,
    /// Why it could not launch, "mismatch", "best" or empty.
    pub note: String,
}

/// Named counters (cache statistics, telemetry), in display order.
pub type Counters = Vec<(String, String)>;

fn parity_of(rep: &parity::ParityReport) -> Parity {
    Parity {
        ok: rep.passed,
        mismatches: rep.mismatches,
        first: rep
            .first
            .iter()
            .map(|m| {
                format!(
                    "{}[{}]: gpu={} ref={}",
                    m.buffer, m.index, m.gpu, m.reference
                )
            })
            .collect(),
    }
}

/// Candidate workgroups of a tune sweep: powers of two and multiples of 128 from 32 up to
/// the device limit, keeping the program's y and z.
pub fn candidates(program: &Program, max_threads: u32) -> Vec<[u32; 3]> {
    let [_, y, z] = program.workgroup_size;
    let yz = (y * z).max(1);
    let mut xs: Vec<u32> = vec![32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 896, 1024];
    xs.retain(|x| x * yz <= max_threads.max(32));
    if !xs.contains(&program.workgroup_size[0]) && program.workgroup_size[0] * yz <= max_threads {
        xs.push(program.workgroup_size[0]);
        xs.sort_unstable();
    }
    xs.into_iter().map(|x| [x, y, z]).collect()
}

/// Turns the worker's sweep outcomes into table rows: speedups against the program's own
/// workgroup size, and the fastest verified candidate marked "best".
fn tune_rows(program: &Program, rows: Vec<TuneRow>) -> Vec<TuneRow> {
    let mut rows = rows;
    let base = rows
        .iter()
        .find(|r| r.workgroup == program.workgroup_size && r.note.is_empty())
        .and_then(|r| r.median_ms);
    for r in &mut rows {
        r.speedup = match (base, r.median_ms) {
            (Some(b), Some(m)) if m > 0.0 && r.note.is_empty() => Some(b / m),
            _ => None,
        };
    }
    let best = rows
        .iter()
        .enumerate()
        .filter(|(_, r)| r.note.is_empty())
        .filter_map(|(i, r)| r.median_ms.map(|m| (i, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    if let Some(i) = best {
        rows[i].note = "best".into();
    }
    rows
}

impl Gpu for WorkerGpu {
    fn probe(&mut self) -> Result<DeviceCaps, Problem> {
        self.worker.probe().map_err(Problem::from)
    }

    fn live_resources(
        &mut self,
        kernel: &EmittedKernel,
    ) -> Option<Result<KernelResources, Problem>> {
        self.worker.caps()?;
        Some(
            self.worker
                .kernel_resources(&kernel.ptx, &kernel.kernel_name)
                .map(|info| info.resources)
                .map_err(Problem::from),
        )
    }

    /// 5 launches with a [`KERNEL_TIMEOUT`] each, in the GPU worker. A target sm newer than
    /// the device's is refused with the device's sm in the message.
    fn dispatch(
        &mut self,
        program: &Program,
        files: &InputFolder,
        opts: &EmitOptions,
    ) -> Result<RunRecord, Problem> {
        let req = RunRequest {
            root: files.root.clone(),
            workgroup: Some(opts.workgroup_size),
            sm: Some(opts.sm),
            repeat: 5,
            verify: true,
            timeout: Some(KERNEL_TIMEOUT),
            ..RunRequest::default()
        };
        run_record(
            Executor::Worker(&mut self.worker),
            program,
            files,
            opts,
            &req,
        )
    }

    /// Each candidate verified, 10 timed launches, in the GPU worker.
    fn tune(
        &mut self,
        program: &Program,
        files: &InputFolder,
        opts: &EmitOptions,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<Vec<TuneRow>, Problem> {
        let caps = self.worker.probe()?;
        // Sizes that change the Program's results are refused before the GPU times them.
        let inputs = crate::harness::preserve::Inputs {
            base: files.base.clone(),
            root: files.root.clone(),
        };
        let mut refused = Vec::new();
        let mut noted = Vec::new();
        let mut kept = Vec::new();
        for wg in candidates(program, caps.max_threads_per_block) {
            match crate::harness::preserve::preserves(program, &inputs, wg) {
                p @ Preservation::Changed { .. } => refused.push(TuneRow {
                    workgroup: wg,
                    median_ms: None,
                    occupancy_pct: None,
                    speedup: None,
                    note: p.text(),
                }),
                p @ Preservation::NotChecked { .. } => {
                    noted.push((wg, p.text()));
                    kept.push(wg);
                }
                Preservation::Preserved => kept.push(wg),
            }
        }
        let req = SweepRequest {
            sm: Some(opts.sm),
            candidates: kept,
            repeat: 10,
            timeout: Some(KERNEL_TIMEOUT),
            root: files.root.clone(),
        };
        let outcomes = self
            .worker
            .tune_program(program, &files.base, &req, &mut |p| {
                if p.total > 0 && !p.device && p.done > 0 {
                    progress(p.done as usize, p.total as usize);
                }
            })?;
        let rows = outcomes
            .into_iter()
            .map(|o| match o.result {
                Ok(p) => TuneRow {
                    workgroup: o.workgroup,
                    median_ms: p.median_ms,
                    occupancy_pct: Some(p.occupancy_pct),
                    speedup: None,
                    note: if p.parity_ok {
                        String::new()
                    } else {
                        "mismatch".into()
                    },
                },
                Err(e) => TuneRow {
                    workgroup: o.workgroup,
                    median_ms: None,
                    occupancy_pct: None,
                    speedup: None,
                    // The table has one line per candidate: the message's first.
                    note: e.message.lines().next().unwrap_or("failed").to_string(),
                },
            })
            .collect::<Vec<TuneRow>>();
        let mut rows: Vec<TuneRow> = rows
            .into_iter()
            .map(|mut r| {
                // Ran, but its results were not compared with the own size's: never "best".
                if let Some((_, why)) = noted.iter().find(|(w, _)| *w == r.workgroup) {
                    if r.note.is_empty() && r.workgroup != program.workgroup_size {
                        r.note = why.clone();
                    }
                }
                r
            })
            .chain(refused)
            .collect();
        rows.sort_by_key(|r| (r.workgroup[0], r.workgroup[1], r.workgroup[2]));
        Ok(tune_rows(program, rows))
    }

    fn cache_stats(&mut self) -> Result<Counters, Problem> {
        let s = self.worker.stats()?;
        Ok(counters_of(&s.cache))
    }

    /// In the GPU worker process: a faulting fused kernel ends the worker (the next request
    /// starts a fresh one), never the inspector.
    fn run_pipeline(
        &mut self,
        file: &PipelineFile,
        sync: SyncMode,
    ) -> Result<PipelineRan, Problem> {
        let job = pipeline_job(file, sync);
        let (report, timeline) = self.worker.run_pipeline(&job, &mut |_| {})?;
        let timeline = timeline.map(|t| super::timeline::from_recorded(&t));
        Ok((PipelineRun::from_report(&report), timeline))
    }

    /// In the GPU worker process, like a dispatch.
    fn replay_capture(&mut self, dir: &Path, index: u64) -> Result<RecordReplay, Problem> {
        let job = ReplayJob {
            capture: dir.to_path_buf(),
            index,
        };
        Ok(self.worker.replay_capture(&job)?)
    }

    /// In the GPU worker process, like a dispatch: the job `vyrescope profile` runs, each
    /// launch bounded by [`KERNEL_TIMEOUT`].
    fn profile(&mut self, file: &Path) -> Result<Vec<InstrumentedRun>, Problem> {
        let job = ProfileJob {
            file: file.to_path_buf(),
            repeat: PROFILE_REPEAT,
            timeout_ms: Some(KERNEL_TIMEOUT.as_millis() as u64),
        };
        Ok(self.worker.profile(&job)?)
    }

    fn timeline(
        &mut self,
        what: &super::timeline::Recording,
    ) -> Result<Vec<std::sync::Arc<super::timeline::TimelineData>>, Problem> {
        let program = crate::ir::program_to_json(what.program)?;
        let job = TimelineJob {
            program,
            file: format!("{}.json", what.program.name),
            base_dir: what.files.base.clone(),
            root: what.files.root.clone(),
            workgroup: what.opts.workgroup_size,
            timeout_ms: Some(KERNEL_TIMEOUT.as_millis() as u64),
        };
        let text = self.worker.record_timeline(&job)?;
        super::timeline::from_recorded(&text)
    }

    /// Plus which worker process it is and how many were started (each sticky fault
    /// replaces the worker).
    fn telemetry(&mut self) -> Result<Counters, Problem> {
        let w = &mut self.worker;
        let s = w.stats()?;
        let mut rows = counters_of(&s.telemetry);
        rows.push((
            "worker.pid".into(),
            w.pid().map_or_else(|| "-".into(), |p| p.to_string()),
        ));
        rows.push((
            "worker.processes_started".into(),
            w.workers_started().to_string(),
        ));
        if let Some(end) = w.last_end() {
            rows.push((
                "worker.previous".into(),
                format!("pid {} {}", end.pid, end.why),
            ));
        }
        Ok(rows)
    }
}

/// The worker job of the inspector's `r` on a pipeline: both forms, [`GPU_REPEAT`] times each
/// with a [`KERNEL_TIMEOUT`] per sequence, then their timelines. `selftest` sends the same job
/// to check that the inspector's verdict is `run`'s.
pub fn pipeline_job(file: &PipelineFile, sync: SyncMode) -> PipelineJob {
    PipelineJob {
        file: file.path.clone(),
        root: file.root().map(Path::to_path_buf),
        sync,
        repeat: GPU_REPEAT,
        timeout_ms: Some(KERNEL_TIMEOUT.as_millis() as u64),
        timeline: true,
        fault_after: false,
    }
}

/// A GPU error in a few words for a table row or an empty tab: `no CUDA driver found
/// (libcuda.so.1)` without the loader's own message repeated after it (the status bar and the
/// probe keep the whole text), and any `- press r ...` advice kept. Other errors unchanged.
pub fn short_gpu_error(e: &str) -> String {
    let Some(start) = e.find("no CUDA driver found (") else {
        return e.to_string();
    };
    let Some(close) = e[start..].find(')') else {
        return e.to_string();
    };
    let head = &e[..start + close + 1];
    match e.find(" - press ") {
        Some(i) if i > start + close => format!("{head}{}", &e[i..]),
        _ => head.to_string(),
    }
}

/// Bundled device profiles (name, caps) for `d`, in display order.
pub fn device_profiles() -> Vec<(String, DeviceCaps)> {
    profiles::names()
        .into_iter()
        .filter_map(|n| {
            profiles::bundled(n).and_then(Result::ok).map(|mut c| {
                // Shown as the device's origin: a profile, not a probed GPU.
                c.source = profiles::label(n, &c);
                (n.to_string(), c)
            })
        })
        .collect()
}

/// Index of the default offline profile in [`device_profiles`].
pub fn default_profile(list: &[(String, DeviceCaps)]) -> usize {
    list.iter()
        .position(|(n, _)| n == profiles::DEFAULT_PROFILE)
        .unwrap_or(0)
}

/// Loads a device profile from a JSON file (`--device FILE`).
pub fn load_device_file(path: &Path) -> Result<DeviceCaps, Problem> {
    let name = path.display().to_string();
    let mut c = profiles::load(&name)?;
    c.source = profiles::label(&name, &c);
    Ok(c)
}

/// Flattens any serializable statistics struct into display rows (`a.b = 3`), so the panels
/// follow whatever fields the runtime reports.
pub fn counters_of<T: Serialize>(value: &T) -> Counters {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Counters) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(value) {
        walk("", &v, &mut out);
    }
    out
}

#[cfg(test)]
mod short_error_tests {
    #[test]
    fn the_loader_message_is_dropped_and_the_advice_kept() {
        let e = "no CUDA driver found (libcuda.so.1): libcuda.so.1: cannot open shared object file: No such file or directory - press r on a machine with a GPU";
        assert_eq!(
            super::short_gpu_error(e),
            "no CUDA driver found (libcuda.so.1) - press r on a machine with a GPU"
        );
        assert_eq!(super::short_gpu_error("worker died"), "worker died");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_flatten_nested_objects_in_order() {
        #[derive(Serialize)]
        struct Inner {
            hits: u32,
            bytes: u64,
        }
        #[derive(Serialize)]
        struct Outer {
            ptx: Inner,
            name: &'static str,
        }
        let rows = counters_of(&Outer {
            ptx: Inner {
                hits: 3,
                bytes: 4096,
            },
            name: "x",
        });
        let keys: Vec<_> = rows.iter().map(|r| r.0.as_str()).collect();
        assert!(
            keys.contains(&"ptx.hits") && keys.contains(&"ptx.bytes") && keys.contains(&"name")
        );
        assert!(rows.contains(&("ptx.bytes".into(), "4096".into())));
    }
}
