//! The GPU worker protocol: one JSON object per line in each direction.
//!
//! The client writes one [`Request`] line; the worker answers with any number of
//! [`Message::Progress`] lines and then exactly one [`Message::Reply`]. The worker's first
//! line, before any request, is [`Message::Hello`] (protocol version and pid). Large data
//! never crosses the pipe: a run request carries the Program text and its base directory,
//! and the worker builds the inputs from the Program's `run` section exactly as an
//! in-process run does; replies carry summaries (shape, timings, resources, parity with the
//! first mismatches, output checksums, cache and telemetry counters).

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::inputs::LaunchShape;
use crate::occupancy::DeviceCaps;
use crate::runtime::cache::CacheReport;
use crate::runtime::dispatch::{DispatchReport, LaunchTiming};
use crate::runtime::execute::RunRequest;
use crate::runtime::jit::KernelInfo;
use crate::runtime::parity::ParityReport;
use crate::runtime::{RuntimeError, Telemetry};

/// Bumped whenever a message changes shape; client and worker must agree.
pub const PROTOCOL_VERSION: u32 = 2;

/// Longest line either side accepts (bytes); PTX of the largest Programs is well below.
pub const MAX_LINE: usize = 256 << 20;

/// Client -> worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// The device's capabilities.
    Probe,
    /// Run a Program (emit, JIT, dispatch, optional verification).
    Run(RunJob),
    /// Kernel resources of PTX from the live driver.
    Resources(ResourcesJob),
    /// Time candidate workgroup sizes, each verified.
    Tune(TuneJob),
    /// Cache and telemetry counters.
    Stats,
    /// Run a pipeline file's forms (separate launches and the compiled plan), each verified,
    /// optionally recording their timelines from the same compiled kernels (the inspector's
    /// `r` on a pipeline).
    Pipeline(PipelineJob),
    /// Record one instrumented round of a Program (the Timeline tab after `r`).
    Timeline(TimelineJob),
    /// Replay one dispatch of a capture on `vyrescope-cuda` (the inspector's `r` on a
    /// captured dispatch; feature `vyre`).
    ReplayCapture(ReplayJob),
    /// Test-only: launch a raw PTX kernel that faults or spins (valid Programs cannot fault).
    #[doc(hidden)]
    RawFault {
        /// Which kernel.
        case: FaultCase,
        /// Per-launch timeout (ms).
        timeout_ms: Option<u64>,
    },
    /// Test-only: make the worker misbehave (exit, abort, hang) to test the client.
    #[doc(hidden)]
    Test {
        /// What to do.
        action: TestAction,
    },
    /// Finish: the worker replies [`Response::Bye`] and exits.
    Shutdown,
}

impl Request {
    /// Short words for messages ("run `vadd_f32`").
    pub fn describe(&self) -> String {
        match self {
            Request::Probe => "the device probe".into(),
            Request::Run(j) => format!("a dispatch of `{}`", j.file),
            Request::Resources(j) => format!("the kernel-resources query of `{}`", j.kernel),
            Request::Tune(j) => format!("a tune sweep of `{}`", j.file),
            Request::Stats => "the statistics query".into(),
            Request::Pipeline(j) => format!("a run of pipeline `{}`", j.file.display()),
            Request::Timeline(j) => format!("a timeline recording of `{}`", j.file),
            Request::ReplayCapture(j) => format!(
                "the replay of record {} of capture {}",
                j.index,
                j.capture.display()
            ),
            Request::RawFault { case, .. } => format!("the raw test kernel {case:?}"),
            Request::Test { action } => format!("the test action {action:?}"),
            Request::Shutdown => "shutdown".into(),
        }
    }
}

/// A Program run: the Program, where its `file` inputs live, and the same [`RunRequest`] an
/// in-process run takes (flattened: its fields sit beside `program`, `file` and `base_dir`
/// on the wire, `timeout` as `timeout_ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunJob {
    /// The Program as format-1 JSON text (`ir::program_to_json` or the file's own text).
    pub program: String,
    /// File name for parse errors and messages.
    pub file: String,
    /// Directory that `file` inputs are relative to.
    pub base_dir: PathBuf,
    /// How to run it.
    #[serde(flatten)]
    pub request: RunRequest,
}

impl RunJob {
    /// A verified run of `program_text` with the Program's own shape, one launch, timed.
    pub fn new(program_text: String, file: &str, base_dir: PathBuf) -> RunJob {
        RunJob {
            program: program_text,
            file: file.to_string(),
            base_dir,
            request: RunRequest {
                verify: true,
                ..RunRequest::default()
            },
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
    pub sync: crate::megakernel::plan::SyncMode,
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

/// A kernel-resources query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourcesJob {
    /// PTX text.
    pub ptx: String,
    /// `.entry` name.
    pub kernel: String,
    /// JIT with line info.
    pub lineinfo: bool,
}

/// A tune sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneJob {
    /// The Program as format-1 JSON text.
    pub program: String,
    /// File name for messages.
    pub file: String,
    /// Directory that `file` inputs are relative to.
    pub base_dir: PathBuf,
    /// Folder `file` inputs may come from (`--root DIR`); None: `base_dir` only.
    #[serde(default)]
    pub root: Option<PathBuf>,
    /// Target sm (None = the device's own).
    pub sm: Option<u32>,
    /// Workgroup sizes to try, in order.
    pub candidates: Vec<[u32; 3]>,
    /// Timed launches per candidate.
    pub repeat: u32,
    /// Per-launch timeout (ms).
    pub timeout_ms: Option<u64>,
}

/// Raw test kernels (`runtime::fault::FAULT_PTX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultCase {
    /// A store through an unmapped pointer (CUDA_ERROR_ILLEGAL_ADDRESS).
    IllegalAddress,
    /// `trap;` (CUDA_ERROR_LAUNCH_FAILED).
    Trap,
    /// One warp spinning on `%globaltimer` for `ns` nanoseconds.
    Spin {
        /// How long the kernel runs.
        ns: u64,
    },
}

/// Test-only misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestAction {
    /// Exit at once with this code, without replying.
    Exit {
        /// Exit code.
        code: i32,
    },
    /// Abort (SIGABRT), without replying.
    Abort,
    /// Announce device work allowed to take `budget_ms`, then never answer.
    Hang {
        /// Announced budget (ms).
        budget_ms: u64,
    },
}

/// Worker -> client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Message {
    /// First line of a worker.
    Hello {
        /// [`PROTOCOL_VERSION`] of the worker.
        protocol: u32,
        /// Its process id.
        pid: u32,
    },
    /// The request moved to a new phase.
    Progress(Progress),
    /// The answer to the request.
    Reply(Reply),
}

/// A phase change of the running request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Progress {
    /// Steps finished (tune candidates; 0 for single runs).
    pub done: u32,
    /// Steps in all (0 = one step).
    pub total: u32,
    /// True while the GPU works (JIT, copies, launches); false for host work (inputs,
    /// emission, the reference interpreter), which has no time limit.
    pub device: bool,
    /// Device phases: the longest the launches may take under the request's timeout (ms);
    /// None = no timeout was given.
    pub budget_ms: Option<u64>,
}

/// The outcome of one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// What the request produced, or why it failed.
    pub result: Result<Response, WireError>,
    /// True when the worker exits right after this reply (a sticky fault poisoned its CUDA
    /// state); the client then starts a fresh worker for the next request.
    pub exiting: bool,
}

/// Successful answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// [`Request::Probe`].
    Caps(Box<DeviceCaps>),
    /// [`Request::Run`].
    Ran(Box<RunOutcome>),
    /// [`Request::Resources`].
    Resources(Box<KernelInfo>),
    /// [`Request::Tune`].
    Tuned(Vec<TuneOutcome>),
    /// [`Request::Stats`].
    Stats(Box<StatsSnapshot>),
    /// [`Request::Pipeline`]: the run's report (`run PIPELINE --backend cuda --json`'s
    /// shape) and, when asked for, the timeline record file's text of its forms.
    PipelineRan {
        /// The report.
        report: Box<serde_json::Value>,
        /// The record file (`timeline::file`), when recorded.
        timeline: Option<String>,
    },
    /// [`Request::Timeline`]: the record file's text (`timeline::file`).
    Recorded(String),
    /// [`Request::ReplayCapture`]: the record's line of `replay --json`'s report.
    Replayed(Box<serde_json::Value>),
    /// [`Request::RawFault`] that did not fault.
    Launched(LaunchTiming),
    /// [`Request::Shutdown`].
    Bye,
}

/// Summary of one Program run in the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// Program name.
    pub program: String,
    /// Kernel name.
    pub kernel: String,
    /// Launch shape used.
    pub shape: LaunchShape,
    /// The sm the PTX was emitted for.
    pub sm: u32,
    /// Device name.
    pub device: String,
    /// The device's own sm.
    pub device_sm: u32,
    /// Copies, launches and their times.
    pub dispatch: DispatchReport,
    /// JIT figures and kernel resources.
    pub info: KernelInfo,
    /// True when the PTX came from the PTX cache.
    pub ptx_cached: bool,
    /// Parity with the reference interpreter (when asked for).
    pub parity: Option<ParityReport>,
    /// Per output buffer: type, length, checksum and first elements (the `outputs` object
    /// of `run --json`).
    pub outputs: serde_json::Value,
    /// Counters after the run.
    pub stats: StatsSnapshot,
}

/// One tune candidate's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneOutcome {
    /// Workgroup size tried.
    pub workgroup: [u32; 3],
    /// Its measurement, or why it could not run (first line of the error).
    pub result: Result<TunePoint, String>,
}

/// A measured tune candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunePoint {
    /// Median device time (ms).
    pub median_ms: Option<f64>,
    /// Estimated occupancy with the driver's resource figures.
    pub occupancy_pct: f64,
    /// True when the result matched the reference interpreter.
    pub parity_ok: bool,
}

/// Cache and telemetry counters of one worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    /// Cache statistics.
    pub cache: CacheReport,
    /// Telemetry since the worker's runtime opened.
    pub telemetry: Telemetry,
}

/// An error that crossed the pipe. The variants the client must recognise keep their fields;
/// everything else travels as its full message (which ends with its `Fix:` line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WireError {
    /// [`RuntimeError::NoDriver`].
    NoDriver {
        /// Library tried.
        lib: String,
        /// Loader's message.
        reason: String,
    },
    /// [`RuntimeError::NoDevice`].
    NoDevice {
        /// Ordinal asked for.
        ordinal: u32,
        /// What the driver said.
        detail: String,
    },
    /// A sticky kernel fault; the worker exits after replying.
    Fault {
        /// Kernel name.
        kernel: String,
        /// Plain words (illegal memory address, ...).
        what: String,
        /// The driver error.
        driver: String,
        /// Hint.
        fix: String,
    },
    /// [`RuntimeError::Timeout`] (recovered inside the worker).
    Timeout {
        /// Kernel name.
        kernel: String,
        /// The limit.
        timeout_ms: u64,
        /// Context recreation time.
        recover_ms: f64,
    },
    /// Anything else, as its message and fix.
    Other {
        /// What is wrong.
        message: String,
        /// How to fix it (empty when there is no advice).
        #[serde(default)]
        fix: String,
    },
}

impl WireError {
    /// The wire form of a runtime error.
    pub fn from_runtime(e: &RuntimeError) -> WireError {
        match e {
            RuntimeError::NoDriver { lib, reason } => WireError::NoDriver {
                lib: lib.clone(),
                reason: reason.clone(),
            },
            RuntimeError::NoDevice { ordinal, detail } => WireError::NoDevice {
                ordinal: *ordinal,
                detail: detail.clone(),
            },
            RuntimeError::Fault {
                kernel,
                what,
                err,
                fix,
            } => WireError::Fault {
                kernel: kernel.clone(),
                what: what.clone(),
                driver: err.to_string(),
                fix: fix.clone(),
            },
            RuntimeError::FaultUnrecovered {
                kernel, what, err, ..
            } => {
                let (_, fix) = crate::runtime::fault::describe(err);
                WireError::Fault {
                    kernel: kernel.clone(),
                    what: what.clone(),
                    driver: err.to_string(),
                    fix,
                }
            }
            RuntimeError::Timeout {
                kernel,
                timeout_ms,
                recover_ms,
            } => WireError::Timeout {
                kernel: kernel.clone(),
                timeout_ms: *timeout_ms,
                recover_ms: *recover_ms,
            },
            other => WireError::Other {
                message: crate::util::HasFix::message(other),
                fix: crate::util::HasFix::fix(other),
            },
        }
    }

    /// True for errors after which the worker's CUDA state is unusable.
    pub fn is_sticky(&self) -> bool {
        matches!(self, WireError::Fault { .. })
    }
}

/// Writes one message as a line and flushes.
pub fn write_line<T: Serialize>(out: &mut dyn Write, msg: &T) -> std::io::Result<()> {
    let text = serde_json::to_string(msg).map_err(std::io::Error::other)?;
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Reads one line (without its newline); Ok(None) at end of input. Lines longer than
/// [`MAX_LINE`] are an error.
pub fn read_line(input: &mut dyn BufRead) -> std::io::Result<Option<String>> {
    let mut buf = Vec::new();
    let mut limited = std::io::Read::take(&mut *input, MAX_LINE as u64 + 1);
    let n = limited.read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.len() > MAX_LINE {
        return Err(std::io::Error::other(format!(
            "a protocol line exceeds {MAX_LINE} bytes"
        )));
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|e| std::io::Error::other(format!("a protocol line is not UTF-8: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<T: Serialize + for<'de> Deserialize<'de> + PartialEq + std::fmt::Debug>(v: &T) {
        let mut buf = Vec::new();
        write_line(&mut buf, v).expect("writes");
        assert_eq!(buf.iter().filter(|&&b| b == b'\n').count(), 1, "one line");
        let line = read_line(&mut &buf[..]).expect("reads").expect("a line");
        let back: T = serde_json::from_str(&line).expect("parses");
        assert_eq!(&back, v);
    }

    #[test]
    fn requests_round_trip() {
        let mut job = RunJob::new(
            "{\"format\":1,\n\"name\":\"k\"}".into(),
            "a b.json",
            PathBuf::from("/tmp/x"),
        );
        job.request.workgroup = Some([128, 2, 1]);
        job.request.sm = Some(80);
        job.request.timeout = Some(std::time::Duration::from_millis(250));
        job.request.device_timing = false;
        for r in [
            Request::Probe,
            Request::Run(job.clone()),
            Request::Resources(ResourcesJob {
                ptx: ".version 8.0\n.target sm_90\n".into(),
                kernel: "k".into(),
                lineinfo: true,
            }),
            Request::Tune(TuneJob {
                program: job.program.clone(),
                file: "k.json".into(),
                base_dir: PathBuf::from("."),
                root: Some(PathBuf::from("/data")),
                sm: None,
                candidates: vec![[32, 1, 1], [1024, 1, 1]],
                repeat: 10,
                timeout_ms: None,
            }),
            Request::Stats,
            Request::RawFault {
                case: FaultCase::Spin { ns: 2_000_000_000 },
                timeout_ms: Some(200),
            },
            Request::RawFault {
                case: FaultCase::IllegalAddress,
                timeout_ms: None,
            },
            Request::Test {
                action: TestAction::Hang { budget_ms: 5 },
            },
            Request::Test {
                action: TestAction::Exit { code: 3 },
            },
            Request::Shutdown,
        ] {
            roundtrip(&r);
        }
    }

    #[test]
    fn messages_round_trip() {
        let stats = StatsSnapshot {
            cache: CacheReport {
                ptx: Default::default(),
                module: crate::runtime::CacheStats {
                    hits: 3,
                    saved_ms: 1.25,
                    ..Default::default()
                },
                driver_cache_path: Some("/c".into()),
                driver_cache_user_set: false,
            },
            telemetry: Telemetry {
                launches: 7,
                device_ms_max: 0.5,
                ..Default::default()
            },
        };
        let parity = ParityReport {
            mode: "exact".into(),
            compared: 10,
            mismatches: 1,
            first: vec![crate::runtime::Mismatch {
                buffer: "c".into(),
                index: 4,
                gpu: "1.0".into(),
                reference: "2.0".into(),
            }],
            max_ulps_seen: 0,
            order_bounded: 0,
            passed: false,
        };
        let outcome = RunOutcome {
            program: "k".into(),
            kernel: "k".into(),
            shape: LaunchShape {
                workgroup_size: [256, 1, 1],
                grid: [4, 1, 1],
            },
            sm: 90,
            device: "NVIDIA H200".into(),
            device_sm: 90,
            dispatch: DispatchReport {
                kernel: "k".into(),
                grid: [4, 1, 1],
                block: [256, 1, 1],
                cooperative: false,
                device_ms: None,
                device_samples_ms: vec![],
                upload_ms: 0.1,
                enqueue_ms: 0.01,
                wait_ms: 0.02,
                readback_ms: 0.1,
                full_ms: 0.3,
                h2d_bytes: 8192,
                d2h_bytes: 4096,
            },
            info: KernelInfo {
                resources: Default::default(),
                ptx_version: 80,
                binary_version: 90,
                max_dynamic_smem: 0,
                jit_ms: 3.5,
                driver_jit_ms: 3.0,
                info_log: "ptxas info\n: Used 8 registers".into(),
                cached: false,
            },
            ptx_cached: true,
            parity: Some(parity),
            outputs: serde_json::json!({"c": {"len": 1024}}),
            stats: stats.clone(),
        };
        for m in [
            Message::Hello {
                protocol: PROTOCOL_VERSION,
                pid: 42,
            },
            Message::Progress(Progress {
                done: 1,
                total: 12,
                device: true,
                budget_ms: Some(2000),
            }),
            Message::Reply(Reply {
                result: Ok(Response::Ran(Box::new(outcome))),
                exiting: false,
            }),
            Message::Reply(Reply {
                result: Ok(Response::Stats(Box::new(stats))),
                exiting: false,
            }),
            Message::Reply(Reply {
                result: Ok(Response::Tuned(vec![
                    TuneOutcome {
                        workgroup: [64, 1, 1],
                        result: Ok(TunePoint {
                            median_ms: Some(0.01),
                            occupancy_pct: 100.0,
                            parity_ok: true,
                        }),
                    },
                    TuneOutcome {
                        workgroup: [2048, 1, 1],
                        result: Err("cannot launch".into()),
                    },
                ])),
                exiting: false,
            }),
            Message::Reply(Reply {
                result: Err(WireError::Fault {
                    kernel: "vs_fault_store".into(),
                    what: "illegal memory address".into(),
                    driver: "cuStreamSynchronize failed".into(),
                    fix: "report it".into(),
                }),
                exiting: true,
            }),
            Message::Reply(Reply {
                result: Err(WireError::NoDriver {
                    lib: "libcuda.so.1".into(),
                    reason: "libcuda.so.1: cannot open shared object file".into(),
                }),
                exiting: false,
            }),
        ] {
            roundtrip(&m);
        }
    }

    #[test]
    fn runtime_errors_keep_their_words_across_the_pipe() {
        let e = RuntimeError::NoDriver {
            lib: "libcuda.so.1".into(),
            reason: "nope".into(),
        };
        let w = WireError::from_runtime(&e);
        assert!(!w.is_sticky());
        assert!(matches!(&w, WireError::NoDriver { reason, .. } if reason == "nope"));
        let err = crate::runtime::DriverError {
            call: "cuStreamSynchronize",
            code: 700,
            name: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
            text: "an illegal memory access was encountered".into(),
        };
        let w = WireError::from_runtime(&RuntimeError::FaultUnrecovered {
            kernel: "k".into(),
            what: "illegal memory address".into(),
            err: Box::new(err),
            recovery: "x".into(),
        });
        assert!(w.is_sticky());
        match w {
            WireError::Fault { driver, fix, .. } => {
                assert!(driver.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{driver}");
                assert!(!fix.is_empty());
            }
            other => panic!("{other:?}"),
        }
        let w =
            WireError::from_runtime(&RuntimeError::Other(crate::util::Problem::new("boom", "x")));
        assert_eq!(
            w,
            WireError::Other {
                message: "boom".into(),
                fix: "x".into()
            }
        );
    }

    #[test]
    fn overlong_or_binary_lines_are_errors() {
        let mut bad: &[u8] = b"\xff\xfe\n";
        assert!(read_line(&mut bad).is_err());
        let mut empty: &[u8] = b"";
        assert_eq!(read_line(&mut empty).expect("eof"), None);
    }
}
