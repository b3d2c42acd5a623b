//! Slow work off the UI thread (not the GPU worker process, which the GPU thread's
//! [`super::gpu::WorkerGpu`] talks to): loading and planning, emission of large programs,
//! device probe, dispatch, tune sweeps. Jobs go in through a channel; progress and results
//! come back as [`Reply`]s that the event loop turns into
//! [`crate::tui::action::Action::Worker`]. [`execute`] is the same code the headless replay
//! runs inline, so replays see exactly what the UI sees.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::emit::EmitOptions;
use crate::ir::Program;
use crate::occupancy::DeviceCaps;

use super::analysis::{
    analyze, emission_of, estimate_emission, Document, Emission, Estimated, PtxView, Resources,
    Unavailable,
};
use super::app::programs::LoadKind;
use super::app::EntryStatus;
use super::gpu::{kernel_resources, Counters, Gpu, InputFolder, RunRecord, TuneRow};
use super::pipeline::{reference_run, PipelineFile, PipelineRun, PipelineView};
use super::timeline::Recording;
use crate::megakernel::cache::{Cached, PlanCache};
use crate::util::Problem;

/// Key of measured kernel resources: document id and emit options.
pub type ResKey = (u64, EmitOptions);

/// Work for the worker thread.
#[derive(Debug, Clone)]
pub enum Job {
    /// Emit and estimate (large programs).
    Analyze {
        /// Generation this result belongs to (stale results are dropped).
        generation: u64,
        /// Program.
        program: Arc<Program>,
        /// Options.
        opts: EmitOptions,
    },
    /// A pipeline step selected: (re)plan when the device changed, fuse the step's group and
    /// emit the fused kernel with the steps' node ids (a long pipeline takes seconds).
    Plan {
        /// Generation this result belongs to (stale results are dropped).
        generation: u64,
        /// The pipeline view with the step selected and the plan or kernel pending.
        view: Box<PipelineView>,
        /// Device to plan for.
        device: Option<Box<DeviceCaps>>,
        /// The user's plan cache (none in replays).
        cache: Option<PlanCache>,
        /// Emit options.
        opts: EmitOptions,
    },
    /// Measure a kernel's resources (live driver, else ptxas).
    Resources {
        /// Cache key.
        key: ResKey,
        /// The emitted kernel.
        ptx: Arc<PtxView>,
    },
    /// Assemble and disassemble a kernel: the SASS pane (ptxas + nvdisasm, no GPU).
    Sass {
        /// Cache key (document id, emit options).
        key: ResKey,
        /// The emitted kernel.
        ptx: Arc<PtxView>,
    },
    /// vyre's PTX for the Program and its comparison with ours (feature `vyre`; no GPU).
    Vyre {
        /// Cache key (document id, emit options).
        key: ResKey,
        /// The Program.
        program: Arc<Program>,
        /// Our emitted kernel.
        ptx: Arc<PtxView>,
    },
    /// Load a Program or pipeline file for the panes, to open it or reload it: reading and
    /// checking a long pipeline takes seconds, which the UI thread must never wait for
    /// (quitting keeps working meanwhile).
    Load {
        /// Request number (a newer open or reload makes this one's result stale).
        id: u64,
        /// Index of the file in the program list.
        index: usize,
        /// The file.
        path: PathBuf,
        /// Folder `file` inputs must stay inside (`--root`).
        root: Option<PathBuf>,
        /// An open or a reload (they differ in what a failure leaves open).
        kind: LoadKind,
    },
    /// Find the files a typed path names (`o`): the file, or a folder's Program files.
    Expand {
        /// The path as typed.
        typed: String,
    },
    /// Validate listed files (index in the program list, path) in the background.
    Validate {
        /// Entries to check.
        files: Vec<(usize, PathBuf)>,
        /// Folder `file` inputs must stay inside (`--root`), as opening them would check.
        root: Option<PathBuf>,
    },
    /// Occupancy, resource rows and launch/performance diagnostics of an emission.
    Estimate {
        /// Request number (stale estimates are dropped).
        id: u64,
        /// The emitted kernel, or why there is none.
        ptx: Result<Arc<PtxView>, Unavailable>,
        /// Options it was emitted with.
        opts: EmitOptions,
        /// Program.
        program: Arc<Program>,
        /// Device to estimate for (boxed: jobs stay small).
        device: Option<Box<DeviceCaps>>,
        /// Kernel resources, when known.
        res: Option<Box<Resources>>,
        /// The Program's `run` inputs (its folder), for comparing other workgroup sizes
        /// with its own; `None` for a pipeline's fused kernel.
        inputs: Option<Box<crate::harness::preserve::Inputs>>,
    },
    /// Probe the live device.
    Probe,
    /// Dispatch with verification.
    Dispatch {
        /// Program.
        program: Arc<Program>,
        /// Where `file` inputs come from.
        files: InputFolder,
        /// Options (workgroup, sm).
        opts: EmitOptions,
    },
    /// No GPU: run the Program on the reference interpreter instead of dispatching.
    Reference {
        /// Program.
        program: Arc<Program>,
        /// Where `file` inputs come from.
        files: InputFolder,
        /// Options (workgroup).
        opts: EmitOptions,
    },
    /// A pipeline run: on the GPU (separate and fused forms) when `gpu`, else on the
    /// reference interpreter.
    Pipeline {
        /// The pipeline file.
        file: Arc<PipelineFile>,
        /// A live GPU was probed.
        gpu: bool,
        /// Grid barriers or dataflow waits in the fused kernels (`--sync`).
        sync: crate::megakernel::plan::SyncMode,
    },
    /// No GPU: the offline tune sweep (registers, occupancy on the device profile,
    /// instruction mix, result preservation; nothing timed).
    TuneOffline {
        /// Program.
        program: Arc<Program>,
        /// Where `file` inputs come from.
        files: InputFolder,
        /// Device profile to estimate for (boxed: jobs stay small).
        device: Option<Box<DeviceCaps>>,
    },
    /// Tune sweep.
    Tune {
        /// Program.
        program: Arc<Program>,
        /// Where `file` inputs come from.
        files: InputFolder,
        /// Options (sm; the workgroup is swept).
        opts: EmitOptions,
    },
    /// Profile the open file per IR statement (`p`): on the GPU in the GPU worker process
    /// when `gpu`, else the reference interpreter's instruction-count estimate.
    Profile {
        /// What to profile.
        key: Box<super::profile::ProfileKey>,
        /// A live GPU was probed.
        gpu: bool,
    },
    /// Replay a captured dispatch and compare its outputs with the captured ones: on
    /// `vyrescope-cuda` in the GPU worker process when `gpu`, else on `vyrescope-reference`.
    ReplayCapture {
        /// The capture folder.
        dir: PathBuf,
        /// The record.
        index: u64,
        /// A live GPU was probed.
        gpu: bool,
    },
}

impl Job {
    /// What the status bar says while it runs.
    pub fn label(&self) -> &'static str {
        match self {
            Job::Analyze { .. } => "emitting",
            Job::Plan { .. } => "planning",
            Job::Load { .. } => "loading",
            Job::Expand { .. } => "finding files",
            Job::Validate { .. } => "checking files",
            Job::Estimate { .. } => "estimating",
            Job::Resources { .. } => "measuring resources",
            Job::Sass { .. } => "assembling SASS",
            Job::Vyre { .. } => "making vyre's PTX",
            Job::Probe => "probing device",
            Job::Dispatch { .. } => "dispatching",
            Job::Reference { .. } => "running the reference interpreter",
            Job::Tune { .. } => "tuning",
            Job::TuneOffline { .. } => "estimating a tune sweep (no GPU)",
            Job::Pipeline { gpu: true, .. } => "running pipeline on the GPU",
            Job::ReplayCapture { gpu: true, .. } => "replaying the dispatch on the GPU",
            Job::Profile { gpu, .. } => super::profile::job_label(*gpu),
            Job::ReplayCapture { .. } => "replaying the dispatch on the reference interpreter",
            Job::Pipeline { .. } => "running reference pipeline",
        }
    }
}

/// What the worker reports.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A job started (label, total steps; 0 = unknown).
    Started(&'static str, usize),
    /// Progress of the running job.
    Progress(usize, usize),
    /// One file checked (list index, path, status, is a pipeline); more may follow.
    Validated(usize, PathBuf, EntryStatus, bool),
    /// An estimate for request `id`.
    Estimated(u64, Box<Estimated>),
    /// The files a [`Job::Expand`] found (or why there are none).
    Expanded(Result<Vec<PathBuf>, Problem>),
    /// A file of a [`Job::Load`] read (or why it could not be).
    Loaded(Box<LoadedFile>),
    /// Every file of a [`Job::Validate`] is checked.
    ValidationDone,
    /// Emission finished.
    Analyzed(u64, Box<Emission>),
    /// A pipeline step planned, fused and emitted.
    Planned(u64, Box<Planned>),
    /// Resources measured.
    Resources(ResKey, Resources),
    /// SASS listing made (or why not).
    Sass(ResKey, Result<Box<crate::sass::SassListing>, Problem>),
    /// vyre's view made (or why not).
    Vyre(ResKey, Result<Box<super::vyre_view::VyreText>, Problem>),
    /// Probe finished.
    Probed(Result<DeviceCaps, Problem>),
    /// Reference run finished (no GPU).
    Referenced(Result<RunRecord, Problem>),
    /// Dispatch finished, with the runtime's statistics afterwards.
    Dispatched(Result<RunRecord, Problem>, Box<Stats>),
    /// Pipeline run finished.
    PipelineRan(Result<PipelineRun, Problem>),
    /// The timeline recorded after a GPU dispatch or pipeline run (its forms), or why not;
    /// the job's own reply follows.
    Timeline(Result<Vec<Arc<super::timeline::TimelineData>>, Problem>),
    /// The offline tune sweep finished (rows of estimates: no median times).
    TunedOffline(Result<Vec<TuneRow>, Problem>),
    /// Tune finished.
    Tuned(Result<Vec<TuneRow>, Problem>, Box<Stats>),
    /// A captured dispatch replayed (record index, verdict).
    Replayed(u64, Result<super::capture::Verdict, Problem>),
    /// A profile made (what was profiled; one profile per kernel, or why not).
    Profiled(
        Box<super::profile::ProfileKey>,
        Result<Vec<crate::profile::Profile>, Problem>,
    ),
}

/// What a [`Job::Load`] read: the request it answers and the document or the error.
#[derive(Debug, Clone)]
pub struct LoadedFile {
    /// The request number.
    pub id: u64,
    /// Index of the file in the program list.
    pub index: usize,
    /// An open or a reload.
    pub kind: LoadKind,
    /// The document, or why it could not be loaded.
    pub doc: Result<Document, Problem>,
}

/// A pipeline step as the worker made it: the view with its plan and fused kernel, the plan
/// cache's outcome when it planned, and the emission of the kernel the PTX pane shows.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The view (plan, group, fused kernel).
    pub view: PipelineView,
    /// The plan cache's outcome, when it planned.
    pub cached: Option<Cached>,
    /// The fused kernel's emission (or the step's own, when there is no plan).
    pub emission: Emission,
}

/// Plans (when needed) and fuses `view`'s step for `device`, and emits the kernel the PTX
/// pane shows: the step's group's fused kernel as the emitter makes it for `vyrescope emit`
/// (at the fused kernel's own workgroup size, its source map renamed to the steps' node ids),
/// or the step's own Program when there is no fused kernel.
fn plan_step(
    mut view: PipelineView,
    device: Option<&DeviceCaps>,
    cache: Option<&PlanCache>,
    opts: &EmitOptions,
) -> Planned {
    let cached = view.refresh(device, cache);
    let emission = match (&view.compiled, view.group, &view.fused) {
        (Ok(compiled), Some(g), Ok(fused)) => {
            let opts = EmitOptions {
                workgroup_size: fused.program.workgroup_size,
                ..opts.clone()
            };
            emission_of(compiled.emit_group(g, &opts), &opts)
        }
        _ => match view.file.pipeline.steps.get(view.step) {
            Some(s) => analyze(&s.program, opts),
            None => emission_of(
                Err(Problem::new(
                    format!("the pipeline has no step {}", view.step),
                    "",
                )),
                opts,
            ),
        },
    };
    Planned {
        view,
        cached,
        emission,
    }
}

/// The files a typed path names: the file itself, or a folder's Program files; an error
/// says why there are none.
fn expand_typed(typed: &str) -> Result<Vec<PathBuf>, Problem> {
    let path = PathBuf::from(typed);
    if !path.exists() {
        return Err(Problem::new(
            format!("{typed}: no such file or directory"),
            "",
        ));
    }
    let found = super::app::expand_paths(&[path]);
    if found.is_empty() {
        return Err(Problem::new(format!("{typed}: no *.json files there"), ""));
    }
    Ok(found)
}

/// Cache and telemetry snapshots taken after GPU work.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// Cache statistics.
    pub cache: Result<Counters, Problem>,
    /// Telemetry.
    pub telemetry: Result<Counters, Problem>,
}

impl Stats {
    /// Reads both from `gpu`.
    pub fn now(gpu: &mut dyn Gpu) -> Self {
        Stats {
            cache: gpu.cache_stats(),
            telemetry: gpu.telemetry(),
        }
    }
}

/// The offline sweep ([`crate::harness::offline`]) over the inspector's candidates, as the
/// Run tab's tune rows: no median, the estimated occupancy, and a note with the registers,
/// the instruction count and the results check; the suggestion is marked "best".
fn offline_tune_rows(
    program: &Program,
    files: &InputFolder,
    device: Option<&DeviceCaps>,
) -> Result<Vec<TuneRow>, Problem> {
    let Some(caps) = device else {
        return Err(Problem::new(
            "no device profile to estimate for: press d to pick one, or start with --device NAME|FILE",
            "",
        ));
    };
    let inputs = crate::harness::preserve::Inputs {
        base: files.base.clone(),
        root: files.root.clone(),
    };
    let candidates = super::gpu::candidates(program, caps.max_threads_per_block);
    let device = format!("{} ({})", caps.name, caps.source);
    let t =
        crate::harness::offline::tune_offline(program, &inputs, &candidates, caps, &device, None);
    let mut rows: Vec<TuneRow> = t
        .rows
        .iter()
        .map(|r| {
            let regs = r.registers.map_or("-".to_string(), |x| x.to_string());
            let instr = r.mix.map_or("-".to_string(), |m| m.total().to_string());
            let note = if Some(r.workgroup) == t.suggested {
                "best".to_string()
            } else if let Some(why) = &r.cannot_launch {
                format!("cannot launch: {why}")
            } else if !r.results.is_preserved() {
                r.results.text()
            } else {
                format!("estimate: {regs} regs, {instr} instr")
            };
            TuneRow {
                workgroup: r.workgroup,
                median_ms: None,
                occupancy_pct: Some(r.occupancy_pct),
                speedup: None,
                note,
            }
        })
        .collect();
    rows.sort_by_key(|r| (r.workgroup[0], r.workgroup[1], r.workgroup[2]));
    Ok(rows)
}

/// Runs one job to completion on `gpu`, reporting through `report`.
pub fn execute(job: Job, gpu: &mut dyn Gpu, report: &mut dyn FnMut(Reply)) {
    match job {
        Job::Analyze {
            generation,
            program,
            opts,
        } => {
            report(Reply::Started("emitting", 0));
            let e = analyze(&program, &opts);
            report(Reply::Analyzed(generation, Box::new(e)));
        }
        Job::Plan {
            generation,
            view,
            device,
            cache,
            opts,
        } => {
            report(Reply::Started("planning", 0));
            let planned = plan_step(*view, device.as_deref(), cache.as_ref(), &opts);
            report(Reply::Planned(generation, Box::new(planned)));
        }
        Job::Resources { key, ptx } => {
            report(Reply::Started("measuring resources", 0));
            let r = kernel_resources(gpu, &ptx.kernel, key.1.sm);
            report(Reply::Resources(key, r));
        }
        Job::Sass { key, ptx } => {
            report(Reply::Started("assembling SASS", 0));
            let r = crate::sass::disassemble(&ptx.kernel, key.1.sm)
                .map(Box::new)
                .map_err(Problem::from);
            report(Reply::Sass(key, r));
        }
        Job::Vyre { key, program, ptx } => {
            report(Reply::Started("making vyre's PTX", 0));
            // vyre's kernel for the same workgroup size as ours (the tuned one).
            let mut p = (*program).clone();
            p.workgroup_size = key.1.workgroup_size;
            let r = super::vyre_view::make(&p, &ptx.kernel.ptx, key.1.sm).map(Box::new);
            report(Reply::Vyre(key, r));
        }
        Job::Load {
            id,
            index,
            path,
            root,
            kind,
        } => {
            report(Reply::Started("loading", 0));
            let doc = Document::load(&path, root.as_deref());
            report(Reply::Loaded(Box::new(LoadedFile {
                id,
                index,
                kind,
                doc,
            })));
        }
        Job::Expand { typed } => {
            report(Reply::Started("finding files", 0));
            report(Reply::Expanded(expand_typed(&typed)));
        }
        Job::Validate { files, root } => validate_files(files, root.as_deref(), report),
        Job::Estimate {
            id,
            ptx,
            opts,
            program,
            device,
            res,
            inputs,
        } => {
            report(Reply::Started("estimating", 0));
            let est = estimate_emission(
                ptx,
                &opts,
                &program,
                device.as_deref(),
                res.as_deref(),
                inputs.as_deref(),
            );
            report(Reply::Estimated(id, Box::new(est)));
        }
        Job::Probe => {
            report(Reply::Started("probing device", 0));
            report(Reply::Probed(gpu.probe()));
        }
        Job::Dispatch {
            program,
            files,
            opts,
        } => {
            let what = Recording {
                program: &program,
                files: &files,
                opts: &opts,
            };
            dispatch(&what, gpu, report);
        }
        Job::Reference {
            program,
            files,
            opts,
        } => {
            report(Reply::Started("running the reference interpreter", 0));
            let r = super::gpu::reference_dispatch(&program, &files, &opts);
            report(Reply::Referenced(r));
        }
        Job::Pipeline { file, gpu: g, sync } => run_pipeline(&file, g.then_some(gpu), sync, report),
        Job::TuneOffline {
            program,
            files,
            device,
        } => {
            report(Reply::Started("estimating a tune sweep (no GPU)", 0));
            report(Reply::TunedOffline(offline_tune_rows(
                &program,
                &files,
                device.as_deref(),
            )));
        }
        Job::Tune {
            program,
            files,
            opts,
        } => {
            report(Reply::Started("tuning", 0));
            let r = gpu.tune(&program, &files, &opts, &mut |d, t| {
                report(Reply::Progress(d, t))
            });
            report(Reply::Tuned(r, Box::new(Stats::now(gpu))));
        }
        Job::ReplayCapture { dir, index, gpu: g } => {
            replay_capture(&dir, index, g.then_some(gpu), report)
        }
        Job::Profile { key, gpu: g } => {
            report(Reply::Started(super::profile::job_label(g), 0));
            let r = super::profile::run(&key, g.then_some(gpu));
            report(Reply::Profiled(key, r));
        }
    }
}

/// Checks the listed files (index in the program list, path), reporting each and the
/// progress.
fn validate_files(
    files: Vec<(usize, PathBuf)>,
    root: Option<&Path>,
    report: &mut dyn FnMut(Reply),
) {
    report(Reply::Started("checking files", files.len()));
    let total = files.len();
    for (n, (i, path)) in files.into_iter().enumerate() {
        let (status, pipeline) = EntryStatus::check(&path, root);
        report(Reply::Validated(i, path, status, pipeline));
        report(Reply::Progress(n + 1, total));
    }
    report(Reply::ValidationDone);
}

/// A verified dispatch on `gpu`; on a GPU, one more, instrumented round after the timed one
/// (which it cannot perturb) records the timeline.
fn dispatch(what: &Recording, gpu: &mut dyn Gpu, report: &mut dyn FnMut(Reply)) {
    report(Reply::Started("dispatching", 0));
    let r = gpu.dispatch(what.program, what.files, what.opts);
    if r.as_ref()
        .is_ok_and(|run| run.backend == super::gpu::GPU_BACKEND)
    {
        report(Reply::Started("recording the timeline", 0));
        report(Reply::Timeline(gpu.timeline(what)));
    }
    report(Reply::Dispatched(r, Box::new(Stats::now(gpu))));
}

/// A pipeline's run: both forms and their timelines in the GPU worker by the one runner
/// when there is a `gpu`, else the reference interpreter.
fn run_pipeline(
    file: &PipelineFile,
    gpu: Option<&mut dyn Gpu>,
    sync: crate::megakernel::plan::SyncMode,
    report: &mut dyn FnMut(Reply),
) {
    report(Reply::Started(job_label(gpu.is_some()), 0));
    let r = match gpu {
        Some(gpu) => gpu.run_pipeline(file, sync).map(|(run, timeline)| {
            if let Some(t) = timeline {
                report(Reply::Timeline(t));
            }
            run
        }),
        None => file
            .prepare()
            .and_then(|prepared| reference_run(&file.pipeline, &prepared))
            .map(|mut run| {
                run.note = "no GPU: ran the reference interpreter".into();
                run
            }),
    };
    report(Reply::PipelineRan(r));
}

/// Replays captured dispatch `index` of `dir` on `vyrescope-cuda` in the GPU worker when
/// there is a `gpu`, else on the reference interpreter, and compares its outputs.
fn replay_capture(
    dir: &Path,
    index: u64,
    gpu: Option<&mut dyn Gpu>,
    report: &mut dyn FnMut(Reply),
) {
    report(Reply::Started(
        if gpu.is_some() {
            "replaying the dispatch on the GPU"
        } else {
            "replaying the dispatch on the reference interpreter"
        },
        0,
    ));
    let r = match gpu {
        Some(gpu) => gpu
            .replay_capture(dir, index)
            .map(|line| super::capture::read::verdict(&line)),
        None => super::capture::read::replay_reference(dir, index),
    };
    report(Reply::Replayed(index, r));
}

impl Job {
    /// True for pure CPU work (checking files, emission and estimates), which runs on its
    /// own thread so that a long GPU job never delays it.
    pub fn is_cpu(&self) -> bool {
        matches!(
            self,
            Job::Load { .. }
                | Job::Expand { .. }
                | Job::Validate { .. }
                | Job::Analyze { .. }
                | Job::Plan { .. }
                | Job::Estimate { .. }
                | Job::TuneOffline { .. }
                | Job::Reference { .. }
                | Job::Sass { .. }
                | Job::Vyre { .. }
                | Job::ReplayCapture { gpu: false, .. }
                | Job::Profile { gpu: false, .. }
        )
    }
}

/// One worker thread and the sending end of its job queue.
struct Lane {
    jobs: Option<Sender<Job>>,
    handle: Option<JoinHandle<()>>,
}

impl Lane {
    fn spawn(name: &str, mut gpu: Box<dyn Gpu>, replies: Sender<Reply>) -> Self {
        let (jtx, jrx) = channel::<Job>();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for job in jrx {
                    execute(job, gpu.as_mut(), &mut |r| {
                        let _ = replies.send(r);
                    });
                }
            })
            .ok();
        Lane {
            jobs: Some(jtx),
            handle,
        }
    }

    fn submit(&self, job: Job) -> bool {
        self.jobs.as_ref().is_some_and(|j| j.send(job).is_ok())
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        // Closing the job channel ends the thread's loop; a GPU job in flight is not waited
        // for, so quitting stays instant.
        self.jobs.take();
        if let Some(h) = self.handle.take() {
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }
}

/// The worker threads: one owns the GPU (probe, resources, dispatch, tune, pipelines), one
/// does CPU analysis ([`Job::is_cpu`]); both report through one channel.
pub struct Background {
    gpu: Lane,
    cpu: Lane,
    /// Replies to drain each loop iteration.
    pub replies: Receiver<Reply>,
}

impl Background {
    /// Starts the threads; the GPU thread owns `gpu`.
    pub fn spawn(gpu: Box<dyn Gpu>) -> Self {
        let (rtx, rrx) = channel::<Reply>();
        Background {
            gpu: Lane::spawn("vyrescope-gpu", gpu, rtx.clone()),
            cpu: Lane::spawn("vyrescope-cpu", Box::new(super::gpu::CpuOnly), rtx),
            replies: rrx,
        }
    }

    /// Queues a job on its thread; false when that thread is gone.
    pub fn submit(&self, job: Job) -> bool {
        if job.is_cpu() {
            self.cpu.submit(job)
        } else {
            self.gpu.submit(job)
        }
    }
}

fn job_label(gpu: bool) -> &'static str {
    if gpu {
        "running pipeline on the GPU"
    } else {
        "running reference pipeline"
    }
}
