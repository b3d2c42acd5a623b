//! The GPU worker protocol: one JSON object per line in each direction, every message a
//! variant of the typed enums below (no loose JSON values: a Program travels as its file
//! text, everything else as typed fields).
//!
//! The client writes one [`Request`] line; the worker answers with any number of
//! [`Message::Progress`] lines and then exactly one [`Message::Reply`]. The worker's first
//! line, before any request, is [`Message::Hello`] with [`PROTOCOL_VERSION`] and its pid; the
//! client refuses a worker of another version (another vyrescope build) before sending it
//! anything. Large data never crosses the pipe: a run request carries the Program text and
//! its base directory, and the worker builds the inputs from the Program's `run` section
//! exactly as an in-process run does; replies carry summaries (shape, timings, resources,
//! parity with the first mismatches, output checksums, cache and telemetry counters).
//!
//! The runtime's own requests (probe, run, resources, tune, stats) are variants here. Work
//! built from the layers above the runtime (a pipeline's forms, timelines, capture replays)
//! travels as [`Request::Job`] and [`Response::Done`], whose payload types those layers
//! define (`harness::worker_messages`): the runtime never names them, and the `gpu-worker`
//! command serves them through [`super::server::Jobs`]. The defaults ([`NoJob`]) are the
//! runtime's requests alone.

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

/// Bumped whenever a message changes shape; client and worker must agree (checked at the
/// handshake). 3: jobs of the layers above as typed [`Request::Job`] / [`Response::Done`];
/// 4: a tune candidate's failure as a typed [`TuneFailure`] (message and fix).
pub const PROTOCOL_VERSION: u32 = 4;

/// Longest line either side accepts (bytes); PTX of the largest Programs is well below.
pub const MAX_LINE: usize = 256 << 20;

/// A job of a layer above the runtime, as [`Request::Job`] carries it.
pub trait WorkerJob {
    /// Short words for messages ("a run of pipeline `p.json`").
    fn describe(&self) -> String;
}

/// No jobs beyond the runtime's own requests: the payload type of a protocol without them
/// (it has no values, so such a request or answer cannot be made or parsed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum NoJob {}

impl WorkerJob for NoJob {
    fn describe(&self) -> String {
        match *self {}
    }
}

/// Client -> worker. `J`: the jobs of the layers above ([`NoJob`] for none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request<J = NoJob> {
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
    /// A job of the layers above (a pipeline's forms, a timeline, a capture replay), run by
    /// the worker's [`super::server::Jobs`]; answered with [`Response::Done`].
    Job(J),
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

impl<J: WorkerJob> Request<J> {
    /// Short words for messages ("run `vadd_f32`").
    pub fn describe(&self) -> String {
        match self {
            Request::Probe => "the device probe".into(),
            Request::Run(j) => format!("a dispatch of `{}`", j.file),
            Request::Resources(j) => format!("the kernel-resources query of `{}`", j.kernel),
            Request::Tune(j) => format!("a tune sweep of `{}`", j.file),
            Request::Stats => "the statistics query".into(),
            Request::Job(j) => j.describe(),
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

/// Worker -> client. `D`: the answers to the jobs of the layers above ([`NoJob`] for none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Message<D = NoJob> {
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
    Reply(Reply<D>),
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
pub struct Reply<D = NoJob> {
    /// What the request produced, or why it failed.
    pub result: Result<Response<D>, WireError>,
    /// True when the worker exits right after this reply (a sticky fault poisoned its CUDA
    /// state); the client then starts a fresh worker for the next request.
    pub exiting: bool,
}

/// Successful answers. `D`: the answers to [`Request::Job`] ([`NoJob`] for none).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response<D = NoJob> {
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
    /// [`Request::Job`]: what the job produced.
    Done(D),
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
    /// Per output buffer, in binding order: its name, type, length and checksum (those of
    /// `run --json`'s `outputs`).
    pub outputs: Vec<OutputDigest>,
    /// Counters after the run.
    pub stats: StatsSnapshot,
}

/// One output buffer after a run in the worker (the elements stay there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputDigest {
    /// Buffer name.
    pub buffer: String,
    /// Element type name (`f32`, `u32`, ...).
    pub elem: String,
    /// Element count.
    pub len: usize,
    /// FNV-1a 64 of the raw bytes, 16 hex digits ([`crate::report::OutputSummary`]'s).
    pub checksum: String,
}

/// One tune candidate's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneOutcome {
    /// Workgroup size tried.
    pub workgroup: [u32; 3],
    /// Its measurement, or why it could not run.
    pub result: Result<TunePoint, TuneFailure>,
}

/// Why one tune candidate could not run (the sweep goes on with the next): the runtime
/// error's message and fix, as they cross the pipe. Its text form is the message alone, as a
/// tune table's note shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message}")]
pub struct TuneFailure {
    /// What went wrong.
    pub message: String,
    /// How to fix it (empty when there is no advice).
    #[serde(default)]
    pub fix: String,
}

impl TuneFailure {
    /// The failure of a candidate whose run ended with `e`.
    pub fn from_runtime(e: &RuntimeError) -> TuneFailure {
        TuneFailure {
            message: crate::util::HasFix::message(e),
            fix: crate::util::HasFix::fix(e),
        }
    }
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
