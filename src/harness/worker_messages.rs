//! The harness's jobs as messages of the GPU worker protocol: what the inspector and
//! `selftest` ask the `gpu-worker` process to run beyond the runtime's own requests (a
//! pipeline's forms, a Program's timeline, a captured dispatch's replay, a file's profile)
//! and what each
//! answers, as the typed payloads of [`Request::Job`] and [`Response::Done`]. The worker
//! runs them through [`super::worker_jobs::HarnessJobs`]; [`JobsClient`] asks for them
//! through a [`GpuWorker`] and hands back the typed answer.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::pipeline::PipelineGpuReport;
use super::profile_run::InstrumentedRun;
use super::replay_record::RecordReplay;
use crate::megakernel::plan::SyncMode;
use crate::runtime::worker::protocol::{Message, Progress, Request, Response, WorkerJob};
use crate::runtime::worker::WORKER_EXE_ENV;
use crate::runtime::{GpuWorker, RuntimeError};
use crate::util::Problem;

/// A request of the `vyrescope gpu-worker` binary: the runtime's requests and the harness's.
pub type WorkerRequest = Request<HarnessJob>;
/// A message of the `vyrescope gpu-worker` binary.
pub type WorkerMessage = Message<HarnessDone>;
/// A successful answer of the `vyrescope gpu-worker` binary.
pub type WorkerResponse = Response<HarnessDone>;

/// A job of the harness, run in the worker ([`Request::Job`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "snake_case")]
pub enum HarnessJob {
    /// Run a pipeline file's forms (separate launches and the compiled plan), each verified,
    /// optionally recording their timelines from the same compiled kernels (the inspector's
    /// `r` on a pipeline); answered with [`HarnessDone::PipelineRan`].
    Pipeline(PipelineJob),
    /// Record one instrumented round of a Program (the Timeline tab after `r`); answered
    /// with [`HarnessDone::Recorded`].
    Timeline(TimelineJob),
    /// Replay one dispatch of a capture on `vyrescope-cuda` (the inspector's `r` on a
    /// captured dispatch; feature `vyre`); answered with [`HarnessDone::Replayed`].
    ReplayCapture(ReplayJob),
    /// Profile a Program or pipeline file with its instrumented build, as `vyrescope
    /// profile` does (both call [`super::profile_run::profile_file`]); answered with
    /// [`HarnessDone::Profiled`].
    Profile(ProfileJob),
}

impl WorkerJob for HarnessJob {
    fn describe(&self) -> String {
        match self {
            HarnessJob::Pipeline(j) => format!("a run of pipeline `{}`", j.file.display()),
            HarnessJob::Timeline(j) => format!("a timeline recording of `{}`", j.file),
            HarnessJob::ReplayCapture(j) => format!(
                "the replay of record {} of capture {}",
                j.index,
                j.capture.display()
            ),
            HarnessJob::Profile(j) => format!("the profile of `{}`", j.file.display()),
        }
    }
}

/// What a [`HarnessJob`] produced ([`Response::Done`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HarnessDone {
    /// [`HarnessJob::Pipeline`]: the run's report (`run PIPELINE --backend cuda --json`'s)
    /// and, when asked for, the timeline record file of its forms.
    PipelineRan {
        /// The report.
        report: Box<PipelineGpuReport>,
        /// The record file's text (`timeline::file`, a JSON document read by the Timeline
        /// tab), when recorded.
        timeline: Option<String>,
    },
    /// [`HarnessJob::Timeline`]: the record file's text (`timeline::file`).
    Recorded(String),
    /// [`HarnessJob::ReplayCapture`]: the record's line of `replay --json`'s report.
    Replayed(Box<RecordReplay>),
    /// [`HarnessJob::Profile`]: one instrumented run per kernel (a pipeline's in step
    /// order), what `vyrescope profile` turns into its per-statement table.
    Profiled(Vec<InstrumentedRun>),
}

impl HarnessDone {
    /// The variant's name, for messages about an answer of the wrong kind.
    fn kind(&self) -> &'static str {
        match self {
            HarnessDone::PipelineRan { .. } => "a pipeline run",
            HarnessDone::Recorded(_) => "a timeline recording",
            HarnessDone::Replayed(_) => "a replay",
            HarnessDone::Profiled(_) => "a profile",
        }
    }
}

/// A pipeline run in the worker: the file (read and prepared there, as `run` does) and what
/// to run. The worker plans it for its own device, as `run --backend cuda` does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineJob {
    /// The pipeline file.
    pub file: PathBuf,
    /// Folder `file` inputs may come from (`--root DIR`); None: the pipeline's folder.
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// Grid barriers or dataflow waits in the fused kernels.
    pub sync: SyncMode,
    /// Timed repetitions per form.
    pub repeat: u32,
    /// Per-sequence timeout (ms).
    pub timeout_ms: Option<u64>,
    /// After the timed run, record one instrumented round of each form.
    pub timeline: bool,
    /// Test-only (`selftest`'s fault check for pipelines): after the run, launch a kernel
    /// that stores through an illegal address, as a faulting fused kernel would.
    #[doc(hidden)]
    #[serde(default)]
    pub fault_after: bool,
}

/// A Program's timeline recording in the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineJob {
    /// The Program as format-1 JSON text.
    pub program: String,
    /// File name for messages.
    pub file: String,
    /// Directory that `file` inputs are relative to.
    pub base_dir: PathBuf,
    /// Folder `file` inputs may come from; None: `base_dir` only.
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// Workgroup size to run at.
    pub workgroup: [u32; 3],
    /// Per-launch timeout (ms).
    pub timeout_ms: Option<u64>,
}

/// One captured dispatch to replay in the worker, as `replay CAPTURE --only INDEX --backend
/// cuda` does (the capture is read there; nothing large crosses the pipe).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayJob {
    /// The capture folder.
    pub capture: PathBuf,
    /// The record to replay.
    pub index: u64,
}

/// A profile in the worker: the file (a Program or a pipeline, read there as `profile` reads
/// it) and the run settings. The instrumented build is the source: PC sampling is not
/// available on this build (`profile --source pc` falls back to it too), and which
/// workgroups are timed follows from the launch size
/// ([`crate::profile::instrument::stride_for`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileJob {
    /// The Program or pipeline file.
    pub file: PathBuf,
    /// Timed rounds of the plain and the instrumented kernel (at least 3 are run).
    pub repeat: u32,
    /// Per-launch timeout (ms).
    pub timeout_ms: Option<u64>,
}

/// The harness's jobs asked of a [`GpuWorker`], each answered with its typed result.
pub trait JobsClient {
    /// Runs a pipeline job (its forms, verified; optionally their timelines): the report
    /// and the timeline record file's text.
    fn run_pipeline(
        &mut self,
        job: &PipelineJob,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(PipelineGpuReport, Option<String>), RuntimeError>;
    /// Records a Program's timeline: the record file's text.
    fn record_timeline(&mut self, job: &TimelineJob) -> Result<String, RuntimeError>;
    /// Replays a captured dispatch on `vyrescope-cuda`: the record's line of the report.
    fn replay_capture(&mut self, job: &ReplayJob) -> Result<RecordReplay, RuntimeError>;
    /// Profiles a file with its instrumented build: one run per kernel.
    fn profile(&mut self, job: &ProfileJob) -> Result<Vec<InstrumentedRun>, RuntimeError>;
}

impl JobsClient for GpuWorker {
    fn run_pipeline(
        &mut self,
        job: &PipelineJob,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(PipelineGpuReport, Option<String>), RuntimeError> {
        let ask = HarnessJob::Pipeline(job.clone());
        match self.job(ask.clone(), progress)? {
            HarnessDone::PipelineRan { report, timeline } => Ok((*report, timeline)),
            other => Err(wrong_answer(&ask, &other)),
        }
    }

    fn record_timeline(&mut self, job: &TimelineJob) -> Result<String, RuntimeError> {
        let ask = HarnessJob::Timeline(job.clone());
        match self.job(ask.clone(), &mut |_| {})? {
            HarnessDone::Recorded(text) => Ok(text),
            other => Err(wrong_answer(&ask, &other)),
        }
    }

    fn replay_capture(&mut self, job: &ReplayJob) -> Result<RecordReplay, RuntimeError> {
        let ask = HarnessJob::ReplayCapture(job.clone());
        match self.job(ask.clone(), &mut |_| {})? {
            HarnessDone::Replayed(line) => Ok(*line),
            other => Err(wrong_answer(&ask, &other)),
        }
    }

    fn profile(&mut self, job: &ProfileJob) -> Result<Vec<InstrumentedRun>, RuntimeError> {
        let ask = HarnessJob::Profile(job.clone());
        match self.job(ask.clone(), &mut |_| {})? {
            HarnessDone::Profiled(runs) => Ok(runs),
            other => Err(wrong_answer(&ask, &other)),
        }
    }
}

/// A worker that answered `ask` with another job's result speaks another protocol.
fn wrong_answer(ask: &HarnessJob, got: &HarnessDone) -> RuntimeError {
    RuntimeError::Worker(Problem::new(
        format!(
            "the GPU worker answered {} with {}",
            ask.describe(),
            got.kind()
        ),
        format!("the worker binary must be this vyrescope build (unset {WORKER_EXE_ENV})"),
    ))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::{any, prop_assert_eq, proptest, ProptestConfig};

    use super::*;
    use crate::harness::pipeline::FormReport;
    use crate::harness::replay_record::{Divergence, Verdict};
    use crate::runtime::parity::ParityReport;
    use crate::runtime::worker::protocol::{read_line, write_line, Reply};
    use crate::runtime::TimingStats;

    /// One line that parses back to the same line (the report has no `PartialEq`: its text
    /// is compared, which covers every field that travels).
    fn same_after_round_trip<T: Serialize + serde::de::DeserializeOwned>(
        v: &T,
    ) -> (String, String) {
        let mut buf = Vec::new();
        write_line(&mut buf, v).expect("writes");
        let line = read_line(&mut &buf[..]).expect("reads").expect("a line");
        let back: T = serde_json::from_str(&line).expect("parses");
        (line, serde_json::to_string(&back).expect("encodes"))
    }

    fn form(n: u64, ms: f64, text: &str) -> FormReport {
        FormReport {
            launches: (n % 50) as usize,
            kernels: vec![text.to_string(); (n % 3) as usize],
            fingerprints: vec![n, n / 3],
            device_ms: TimingStats::of(&[ms, ms * 1.5, ms / 2.0]),
            first_ms: Some(ms * 3.0),
            samples_ms: vec![ms, ms * 1.5, ms / 2.0],
            upload_ms: ms / 7.0,
            download_ms: ms / 9.0,
            parity: ParityReport {
                mode: text.to_string(),
                compared: n,
                mismatches: n % 5,
                first: Vec::new(),
                max_ulps_seen: n % 11,
                order_bounded: n % 13,
                passed: n.is_multiple_of(2),
            },
        }
    }

    fn jobs(text: &str, n: u64) -> Vec<HarnessJob> {
        vec![
            HarnessJob::Pipeline(PipelineJob {
                file: PathBuf::from(text),
                root: (n.is_multiple_of(2)).then(|| PathBuf::from(text)),
                sync: SyncMode::default(),
                repeat: (n % 1000) as u32,
                timeout_ms: Some(n),
                timeline: n.is_multiple_of(3),
                fault_after: n.is_multiple_of(5),
            }),
            HarnessJob::Timeline(TimelineJob {
                program: text.to_string(),
                file: text.to_string(),
                base_dir: PathBuf::from(text),
                root: None,
                workgroup: [(n % 1024) as u32 + 1, 2, 1],
                timeout_ms: (n % 2 == 1).then_some(n),
            }),
            HarnessJob::ReplayCapture(ReplayJob {
                capture: PathBuf::from(text),
                index: n,
            }),
            HarnessJob::Profile(ProfileJob {
                file: PathBuf::from(text),
                repeat: (n % 100) as u32,
                timeout_ms: (n.is_multiple_of(2)).then_some(n / 2),
            }),
        ]
    }

    fn answers(text: &str, n: u64, ms: f64) -> Vec<HarnessDone> {
        let report = PipelineGpuReport {
            pipeline: text.to_string(),
            device: text.to_string(),
            repeat: (n % 100) as u32,
            separate: Some(form(n, ms, text)),
            megakernel: Some(form(n / 2, ms / 2.0, text)),
            plan: None,
            topology: Vec::new(),
            grid_barrier: Default::default(),
            sync: SyncMode::default(),
            telemetry: Default::default(),
            gate: None,
            alternative: (n.is_multiple_of(2)).then(|| form(n / 3, ms * 2.0, text)),
            alternative_gate: None,
            decision: None,
        };
        vec![
            HarnessDone::PipelineRan {
                report: Box::new(report),
                timeline: Some(text.to_string()),
            },
            HarnessDone::Recorded(text.to_string()),
            HarnessDone::Replayed(Box::new(RecordReplay {
                index: n,
                call: text.to_string(),
                kind: "dispatch".into(),
                program: text.to_string(),
                replayed_on: Some(text.to_string()),
                verdict: Verdict::Diverged,
                detail: text.to_string(),
                divergence: Some(Divergence {
                    output: (n % 4) as usize,
                    buffer: text.to_string(),
                    element: n / 3,
                    elem_type: "f32".into(),
                    captured: format!("{ms}"),
                    replayed: format!("{}", ms * 2.0),
                    ulps: Some(n % 1000),
                }),
                captured_host_ns: n,
                captured_device_ns: Some(n / 2),
                replay_ns: None,
            })),
            HarnessDone::Profiled(
                (0..n % 4)
                    .map(|k| InstrumentedRun {
                        table: (0..(n + k) % 9)
                            .map(|i| n.wrapping_mul(i + k + 1))
                            .collect(),
                        stride: (n % 64) as u32 + 1,
                        plain_ms: ms,
                        instrumented_ms: ms * 1.25 + k as f64,
                        device: text.to_string(),
                    })
                    .collect(),
            ),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Every harness job, as a request of the worker binary, and every answer, as its
        /// reply, is one line that parses back to itself.
        #[test]
        fn every_job_and_answer_round_trips(
            text in "[ -~\u{e9}\u{4e16}\n\"\\\\]{0,24}",
            n in any::<u64>(),
            ms in 0.0f64..1e7,
        ) {
            for job in jobs(&text, n) {
                let req: WorkerRequest = Request::Job(job);
                let (line, back) = same_after_round_trip(&req);
                prop_assert_eq!(&line, &back);
                let parsed: WorkerRequest = serde_json::from_str(&line).expect("parses");
                prop_assert_eq!(parsed, req);
            }
            let kinds: std::collections::BTreeSet<&str> =
                answers(&text, n, ms).iter().map(HarnessDone::kind).collect();
            prop_assert_eq!(kinds.len(), 4, "every answer variant is made");
            for done in answers(&text, n, ms) {
                let msg: WorkerMessage = Message::Reply(Reply {
                    result: Ok(Response::Done(done)),
                    exiting: false,
                });
                let (line, back) = same_after_round_trip(&msg);
                prop_assert_eq!(line, back);
            }
        }
    }

    /// A reply to one job with another job's answer is an error that names the request.
    #[test]
    fn an_answer_of_another_job_is_an_error() {
        let ask = HarnessJob::ReplayCapture(ReplayJob {
            capture: PathBuf::from("cap"),
            index: 3,
        });
        let e = wrong_answer(&ask, &HarnessDone::Recorded("{}".into())).to_string();
        assert!(
            e.contains("record 3 of capture cap") && e.contains("a timeline recording"),
            "{e}"
        );
        assert!(e.contains("Fix:"), "{e}");
    }
}
