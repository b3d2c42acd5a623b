//! The GPU worker's harness jobs ([`crate::runtime::worker::server::Jobs`], their messages
//! in [`super::worker_messages`]): a pipeline's forms run by the one pipeline runner ([`super::pipeline::run_forms`]) and, when asked, their
//! timelines recorded from the same compiled pipeline; a Program's timeline; a captured
//! dispatch replayed on `vyrescope-cuda` (feature `vyre`); a file's profile, by the function
//! `vyrescope profile` calls ([`super::profile_run::profile_file`]). The inspector's
//! `r` sends them, so a faulting kernel ends the worker process, never the inspector, and the
//! verdict is the one `run --backend cuda --both` gives.

use std::path::Path;
use std::time::Duration;

use super::pipeline::{run_forms, Forms, PipelineGpuOptions, PipelineGpuReport};
use super::profile_run::{profile_file, profile_request};
use super::timeline_run::{record_pipeline, PipelineForm, TimelineLaunch};
use super::worker_messages::{
    HarnessDone, HarnessJob, PipelineJob, ProfileJob, ReplayJob, TimelineJob,
};
use crate::emit::timeline::TimelineSpec;
use crate::inputs::pipeline::prepare_pipeline_rooted;
use crate::inputs::FileRoot;
use crate::runtime::dispatch::DispatchOptions;
use crate::runtime::jit::JitOptions;
use crate::runtime::worker::server::Jobs;
use crate::runtime::Runtime;
use crate::util::Problem;

/// The harness's [`Jobs`], handed to the worker by `vyrescope gpu-worker`.
pub struct HarnessJobs;

impl Jobs for HarnessJobs {
    type Job = HarnessJob;
    type Done = HarnessDone;

    fn uses_runtime(&self, job: &HarnessJob) -> bool {
        // The replay's backend opens a CUDA context of its own.
        !matches!(job, HarnessJob::ReplayCapture(_))
    }

    fn run(&mut self, job: HarnessJob, rt: Option<&mut Runtime>) -> Result<HarnessDone, Problem> {
        let runtime = || rt.ok_or_else(|| Problem::bug("a GPU worker job ran without the runtime"));
        match job {
            HarnessJob::Pipeline(j) => {
                let (report, timeline) = pipeline_job(runtime()?, &j)?;
                Ok(HarnessDone::PipelineRan {
                    report: Box::new(report),
                    timeline,
                })
            }
            HarnessJob::Timeline(j) => timeline_job(runtime()?, &j).map(HarnessDone::Recorded),
            HarnessJob::ReplayCapture(j) => replay(&j).map(|l| HarnessDone::Replayed(Box::new(l))),
            HarnessJob::Profile(j) => profile_job(runtime()?, &j).map(HarnessDone::Profiled),
        }
    }
}

/// Replays a captured dispatch on `vyrescope-cuda` (a backend with its own CUDA context,
/// acquired from vyre's registry): the record's line of `replay --json`'s report.
#[cfg(feature = "vyre")]
fn replay(job: &ReplayJob) -> Result<super::replay_record::RecordReplay, Problem> {
    use crate::vyre::backend::registry::CUDA_ID;
    super::replay::replay_on(&job.capture, CUDA_ID, job.index)
}

#[cfg(not(feature = "vyre"))]
fn replay(_: &ReplayJob) -> Result<super::replay_record::RecordReplay, Problem> {
    Err(Problem::new(
        "replaying a capture needs vyre support, and this vyrescope was built without it",
        "build with `cargo build --features vyre`",
    ))
}

fn pipeline_job(
    rt: &mut Runtime,
    job: &PipelineJob,
) -> Result<(PipelineGpuReport, Option<String>), Problem> {
    let loaded = crate::validate::pipeline::load_pipeline(&job.file);
    let Some(pipeline) = loaded.pipeline.as_ref().filter(|_| loaded.is_valid()) else {
        return Err(Problem::invalid_file(
            &job.file,
            "pipeline",
            &loaded.diagnostics,
        ));
    };
    let base = job.file.parent().unwrap_or(Path::new("."));
    let files = FileRoot {
        base,
        root: job.root.as_deref().unwrap_or(base),
    };
    let initial = prepare_pipeline_rooted(pipeline, files)?;
    let mut prepared = initial.clone();
    let timeout = job.timeout_ms.map(Duration::from_millis);
    let o = PipelineGpuOptions::new(Forms::Both, job.repeat)
        .with_timeout(timeout)
        .with_sync(job.sync);
    let (report, compiled) = run_forms(rt, pipeline, &mut prepared, &o)?;
    if job.fault_after {
        rt.fault_for_test()?;
    }
    let Some(compiled) = compiled.filter(|_| job.timeline) else {
        return Ok((report, None));
    };
    // One instrumented round after the timed ones (which it cannot perturb), of the very
    // kernels they launched.
    let opts = DispatchOptions {
        timeout,
        ..DispatchOptions::default()
    };
    let forms = record_pipeline(
        rt,
        &compiled,
        &initial,
        &[PipelineForm::Separate, PipelineForm::Fused],
        (1, 0),
        &opts,
        &JitOptions::default(),
    )?;
    let parts: Vec<_> = forms.iter().map(|f| (f.label, &f.run.capture)).collect();
    let text = crate::timeline::file::to_json(
        Some(&rt.caps().name),
        &job.file.display().to_string(),
        None,
        &parts,
    )
    .map_err(Problem::bug)?;
    Ok((report, Some(text)))
}

fn profile_job(
    rt: &mut Runtime,
    job: &ProfileJob,
) -> Result<Vec<super::profile_run::InstrumentedRun>, Problem> {
    let req = profile_request(job.repeat, job.timeout_ms.map(Duration::from_millis));
    profile_file(rt, &job.file, &req)
}

fn timeline_job(rt: &mut Runtime, job: &TimelineJob) -> Result<String, Problem> {
    let program = crate::ir::parse_program(&job.program, &job.file)?;
    let files = FileRoot {
        base: &job.base_dir,
        root: job.root.as_deref().unwrap_or(&job.base_dir),
    };
    let prepared = crate::inputs::prepare_rooted(&program, files, Some(job.workgroup), None)?;
    let mut bufs = prepared.buffers.clone();
    let launch = TimelineLaunch {
        program: program.clone(),
        shape: prepared.shape,
        buffers: (0..bufs.len()).collect(),
        spec: TimelineSpec::kernel(None),
    };
    let opts = DispatchOptions {
        timeout: job.timeout_ms.map(Duration::from_millis),
        ..DispatchOptions::default()
    };
    let run = rt.run_timeline(&[launch], &mut bufs, 1, 0, &opts, &JitOptions::default())?;
    crate::timeline::file::to_json(
        Some(&rt.caps().name),
        &program.name,
        None,
        &[("", &run.capture)],
    )
    .map_err(Problem::bug)
}
