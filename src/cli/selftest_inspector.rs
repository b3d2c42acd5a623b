//! `selftest`'s inspector check for pipelines: every pipeline fixture in both sync forms run
//! as `run --backend cuda --both` runs it (in this process) and as the inspector's `r` runs it
//! (the same job the inspector sends to its GPU worker process, read back into the Run tab's
//! row): both verdicts must agree and say verified, and the worker must send the timeline of
//! what it launched. Then the fault check: a pipeline job whose run ends in a faulting kernel
//! ends that worker (the inspector would keep running), and the next job runs verified in a
//! fresh worker.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::harness::pipeline::{run_pipeline_forms, Forms, PipelineGpuOptions};
use crate::harness::worker_messages::JobsClient;
use crate::megakernel::dataflow::SyncMode;
use crate::runtime::{GpuWorker, Runtime, RuntimeError};
use crate::tui::gpu::pipeline_job;
use crate::tui::pipeline::{PipelineFile, PipelineRun, GPU_REPEAT};
use crate::util::Problem;

/// One fixture in one sync form: `run`'s verdict against the inspector's.
#[derive(Debug, Clone, Serialize)]
pub struct InspectorCheck {
    /// Pipeline file (or the fault check's name).
    pub file: PathBuf,
    /// `barrier` or `dataflow`.
    pub sync: &'static str,
    /// `run --backend cuda --both` verified every form.
    pub run_verified: bool,
    /// The inspector's Run tab row says verified.
    pub inspector_verified: bool,
    /// What went wrong, if anything.
    pub problems: Vec<String>,
}

impl InspectorCheck {
    /// Both verified, no problem.
    pub fn ok(&self) -> bool {
        self.problems.is_empty() && self.run_verified && self.inspector_verified
    }
}

/// The checks over every pipeline fixture of `dir`, then the fault check on the first.
pub fn run(rt: &mut Runtime, dir: &Path, root: Option<&Path>) -> Vec<InspectorCheck> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut worker = GpuWorker::new();
    let mut out = Vec::new();
    for f in &files {
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            out.push(one(rt, &mut worker, f, root, sync));
        }
    }
    if let Some(f) = files.first() {
        out.push(fault(&mut worker, f, root));
    }
    out
}

fn check(file: &Path, sync: SyncMode) -> InspectorCheck {
    InspectorCheck {
        file: file.to_path_buf(),
        sync: sync.name(),
        run_verified: false,
        inspector_verified: false,
        problems: Vec::new(),
    }
}

fn one(
    rt: &mut Runtime,
    worker: &mut GpuWorker,
    f: &Path,
    root: Option<&Path>,
    sync: SyncMode,
) -> InspectorCheck {
    let mut c = check(f, sync);
    match super::selftest::load_fixture(f, root) {
        Ok((pipeline, mut prepared)) => {
            let opts = PipelineGpuOptions::new(Forms::Both, GPU_REPEAT)
                .with_timeout(Some(crate::tui::gpu::KERNEL_TIMEOUT))
                .with_sync(sync);
            match run_pipeline_forms(rt, &pipeline, &mut prepared, &opts) {
                Ok(r) => c.run_verified = r.verified(),
                Err(e) => c.problems.push(format!("run: {}", e.message)),
            }
        }
        Err(e) => c.problems.push(e.to_string()),
    }
    match inspector_run(worker, f, root, sync) {
        Ok((row, timeline)) => {
            c.inspector_verified = row.verified;
            if !row.note.is_empty() {
                c.problems.push(format!("inspector: {}", row.note));
            }
            if !timeline {
                c.problems
                    .push("inspector: the worker sent no timeline of the run".into());
            }
        }
        Err(e) => c.problems.push(format!("inspector: {e}")),
    }
    if c.run_verified != c.inspector_verified {
        c.problems.push(format!(
            "verdicts differ: run {}, inspector {}",
            verdict(c.run_verified),
            verdict(c.inspector_verified)
        ));
    }
    c
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "verified"
    } else {
        "MISMATCH"
    }
}

/// The inspector's `r`: the worker job and the Run tab's row made of its report, and whether
/// its timeline came back readable.
fn inspector_run(
    worker: &mut GpuWorker,
    f: &Path,
    root: Option<&Path>,
    sync: SyncMode,
) -> Result<(PipelineRun, bool), Problem> {
    let (file, _) = PipelineFile::load(f, root)?;
    let (report, timeline) = worker.run_pipeline(&pipeline_job(&file, sync), &mut |_| {})?;
    let recorded = timeline.is_some_and(|t| crate::tui::timeline::from_recorded(&t).is_ok());
    Ok((PipelineRun::from_report(&report), recorded))
}

/// A faulting kernel in a pipeline job ends that worker; the next job runs in a fresh one.
fn fault(worker: &mut GpuWorker, f: &Path, root: Option<&Path>) -> InspectorCheck {
    let mut c = check(f, SyncMode::Barrier);
    c.file = PathBuf::from(format!("fault check ({})", f.display()));
    c.sync = "fault";
    let job = PipelineFile::load(f, root).map(|(file, _)| pipeline_job(&file, SyncMode::Barrier));
    let mut job = match job {
        Ok(j) => j,
        Err(e) => {
            c.problems.push(e.to_string());
            return c;
        }
    };
    job.fault_after = true;
    let before = worker.pid();
    match worker.run_pipeline(&job, &mut |_| {}) {
        Err(RuntimeError::WorkerFault { .. }) if worker.pid().is_none() => {
            c.run_verified = true;
        }
        Err(e) => c
            .problems
            .push(format!("expected a fault that ends the worker, got: {e}")),
        Ok(_) => c.problems.push("the faulting job did not fail".into()),
    }
    match inspector_run(worker, f, root, SyncMode::Barrier) {
        Ok((row, _)) => {
            c.inspector_verified = row.verified && worker.pid() != before;
            if worker.pid() == before {
                c.problems
                    .push("the job after the fault ran in the same worker".into());
            }
        }
        Err(e) => c.problems.push(format!("after the fault: {e}")),
    }
    c
}

/// The report's lines (text mode).
pub fn text(checks: &[InspectorCheck]) -> String {
    let mut s = String::from(
        "\ninspector (r on each pipeline fixture through the GPU worker, against run --both; then a faulting pipeline job):\n",
    );
    for c in checks {
        let name = c.file.file_name().map_or_else(
            || c.file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        s.push_str(&format!(
            "  {:4}  {:<28} {:<8} run {:<8} inspector {}\n",
            if c.ok() { "ok" } else { "FAIL" },
            name,
            c.sync,
            verdict(c.run_verified),
            verdict(c.inspector_verified),
        ));
        for p in &c.problems {
            s.push_str(&format!("        {}\n", crate::util::terminal_safe(p)));
        }
    }
    s
}
