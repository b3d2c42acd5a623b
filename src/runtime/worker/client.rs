//! The client side of the GPU worker: [`GpuWorker`] starts the `vyrescope gpu-worker` child
//! lazily (through [`super::process`]), sends typed requests, reads replies with a timeout,
//! and replaces a worker that faulted, hung, died or spoke another protocol version.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::process::{describe_status, worker_exe, Line, Live, WORKER_EXE_ENV};
use super::protocol::{
    FaultCase, Message, NoJob, Progress, Request, ResourcesJob, Response, RunJob, RunOutcome,
    StatsSnapshot, TestAction, TuneJob, TuneOutcome, WireError, WorkerJob, PROTOCOL_VERSION,
};

use crate::ir::Program;
use crate::occupancy::DeviceCaps;
use crate::runtime::dispatch::LaunchTiming;
use crate::runtime::execute::RunRequest;
use crate::runtime::jit::KernelInfo;
use crate::runtime::{Result, RuntimeError};

/// Extra time a request may take beyond the kernel time its timeout allows (JIT, copies,
/// context recreation after a timeout) before the worker counts as hung.
pub const DEFAULT_HANG_MARGIN: Duration = Duration::from_secs(20);

/// Time allowed for a request before its first progress message (runtime open: `cuInit`
/// and the context, probe, JIT of a large module).
pub const DEFAULT_REQUEST_LIMIT: Duration = Duration::from_secs(120);

/// Time allowed for a fresh worker to say hello.
const START_LIMIT: Duration = Duration::from_secs(10);

/// Time a worker gets to exit by itself before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A tune sweep as callers of [`GpuWorker::tune_program`] ask for it (the wire's `TuneJob`
/// is built from it, so callers need not know the protocol).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepRequest {
    /// Target sm (None = the device's own).
    pub sm: Option<u32>,
    /// Workgroup sizes to try, in order.
    pub candidates: Vec<[u32; 3]>,
    /// Timed launches per candidate.
    pub repeat: u32,
    /// Per-launch timeout.
    pub timeout: Option<Duration>,
    /// Folder `file` inputs may come from (`--root DIR`); None: the Program's folder only.
    pub root: Option<std::path::PathBuf>,
}

/// How a previous worker ended (for messages and the fault check).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerEnd {
    /// Its pid.
    pub pid: u32,
    /// Why (`exited after a sticky fault`, `died: killed by signal 9 (SIGKILL)`, ...).
    pub why: String,
}

/// Client of a GPU worker process. Not thread-safe by itself; callers share it behind a
/// mutex.
pub struct GpuWorker {
    exe: Option<PathBuf>,
    device: u32,
    hang_margin: Duration,
    request_limit: Duration,
    live: Option<Live>,
    started: u64,
    last_end: Option<WorkerEnd>,
    caps: Option<DeviceCaps>,
}

impl Default for GpuWorker {
    fn default() -> Self {
        GpuWorker::new()
    }
}

impl GpuWorker {
    /// A client for device 0 that finds the worker binary with [`worker_exe`]; nothing is
    /// started until the first request.
    pub fn new() -> GpuWorker {
        GpuWorker {
            exe: None,
            device: 0,
            hang_margin: DEFAULT_HANG_MARGIN,
            request_limit: DEFAULT_REQUEST_LIMIT,
            live: None,
            started: 0,
            last_end: None,
            caps: None,
        }
    }

    /// A client that runs `exe gpu-worker`.
    pub fn with_exe(exe: impl Into<PathBuf>) -> GpuWorker {
        let mut w = GpuWorker::new();
        w.exe = Some(exe.into());
        w
    }

    /// Uses device `ordinal` (takes effect for the next worker started).
    pub fn set_device(&mut self, ordinal: u32) {
        self.device = ordinal;
    }

    /// Extra time beyond a request's kernel budget before the worker counts as hung.
    pub fn set_hang_margin(&mut self, margin: Duration) {
        self.hang_margin = margin;
    }

    /// Time a request may take before its first progress message.
    pub fn set_request_limit(&mut self, limit: Duration) {
        self.request_limit = limit;
    }

    /// Pid of the running worker, if one is running.
    pub fn pid(&self) -> Option<u32> {
        self.live.as_ref().map(|l| l.pid)
    }

    /// Workers started so far (1 + replacements).
    pub fn workers_started(&self) -> u64 {
        self.started
    }

    /// How the previous worker ended, if one did.
    pub fn last_end(&self) -> Option<&WorkerEnd> {
        self.last_end.as_ref()
    }

    /// Capabilities from the last successful probe.
    pub fn caps(&self) -> Option<&DeviceCaps> {
        self.caps.as_ref()
    }

    /// The device's capabilities (probed once per client; later calls are answered from
    /// the first probe, as the device does not change).
    pub fn probe(&mut self) -> Result<DeviceCaps> {
        if let Some(c) = &self.caps {
            return Ok(c.clone());
        }
        match self.core(Request::Probe, &mut |_| {})? {
            Response::Caps(c) => {
                self.caps = Some((*c).clone());
                Ok(*c)
            }
            other => Err(unexpected(&other)),
        }
    }

    /// Runs `job` in the worker; `progress` sees each phase change.
    pub fn run_job(
        &mut self,
        job: &RunJob,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<RunOutcome> {
        match self.core(Request::Run(job.clone()), progress)? {
            Response::Ran(r) => Ok(*r),
            other => Err(unexpected(&other)),
        }
    }

    /// Runs `program` (inputs from its `run` section, `file` inputs relative to `base_dir`)
    /// as `req` asks. The Program travels as its format-1 text.
    pub fn run_program(
        &mut self,
        program: &Program,
        base_dir: &Path,
        req: &RunRequest,
    ) -> Result<RunOutcome> {
        let text =
            crate::ir::program_to_json(program).map_err(|e| RuntimeError::Other(e.into()))?;
        let job = RunJob {
            program: text,
            file: format!("{}.json", program.name),
            base_dir: base_dir.to_path_buf(),
            request: RunRequest {
                repeat: req.repeat.max(1),
                ..req.clone()
            },
        };
        self.run_job(&job, &mut |_| {})
    }

    /// Kernel resources of `ptx`'s kernel `kernel` from the live driver.
    pub fn kernel_resources(&mut self, ptx: &str, kernel: &str) -> Result<KernelInfo> {
        let req = Request::Resources(ResourcesJob {
            ptx: ptx.to_string(),
            kernel: kernel.to_string(),
            lineinfo: false,
        });
        match self.core(req, &mut |_| {})? {
            Response::Resources(info) => Ok(*info),
            other => Err(unexpected(&other)),
        }
    }

    /// A tune sweep; `progress` sees `done` / `total` after each candidate.
    pub fn tune(
        &mut self,
        job: &TuneJob,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Vec<TuneOutcome>> {
        match self.core(Request::Tune(job.clone()), progress)? {
            Response::Tuned(rows) => Ok(rows),
            other => Err(unexpected(&other)),
        }
    }

    /// A tune sweep of `program` (`file` inputs relative to `base_dir`) as `req` asks; the
    /// Program travels as its format-1 text. `progress` sees `done` / `total` after each
    /// candidate.
    pub fn tune_program(
        &mut self,
        program: &Program,
        base_dir: &Path,
        req: &SweepRequest,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Vec<TuneOutcome>> {
        let text =
            crate::ir::program_to_json(program).map_err(|e| RuntimeError::Other(e.into()))?;
        let job = TuneJob {
            program: text,
            file: format!("{}.json", program.name),
            base_dir: base_dir.to_path_buf(),
            root: req.root.clone(),
            sm: req.sm,
            candidates: req.candidates.clone(),
            repeat: req.repeat,
            timeout_ms: req.timeout.map(|t| t.as_millis() as u64),
        };
        self.tune(&job, progress)
    }

    /// Cache and telemetry counters of the current worker (a fresh worker starts at zero).
    pub fn stats(&mut self) -> Result<StatsSnapshot> {
        match self.core(Request::Stats, &mut |_| {})? {
            Response::Stats(s) => Ok(*s),
            other => Err(unexpected(&other)),
        }
    }

    /// Test-only: launches a raw kernel that faults or spins.
    #[doc(hidden)]
    pub fn raw_fault(
        &mut self,
        case: FaultCase,
        timeout: Option<Duration>,
    ) -> Result<LaunchTiming> {
        let req = Request::RawFault {
            case,
            timeout_ms: timeout.map(|t| t.as_millis() as u64),
        };
        match self.core(req, &mut |_| {})? {
            Response::Launched(t) => Ok(t),
            other => Err(unexpected(&other)),
        }
    }

    /// Test-only: makes the worker exit, abort or hang; returns the error the client made
    /// of it.
    #[doc(hidden)]
    pub fn test_action(&mut self, action: TestAction) -> Result<()> {
        self.core(Request::Test { action }, &mut |_| {}).map(|_| ())
    }

    /// Runs `job` of the layers above in the worker ([`Request::Job`]): what it produced, or
    /// the worker's error (an answer of another kind is an error too).
    pub fn job<J, D>(&mut self, job: J, progress: &mut dyn FnMut(&Progress)) -> Result<D>
    where
        J: WorkerJob + Serialize,
        D: DeserializeOwned + std::fmt::Debug,
    {
        match self.call::<J, D>(&Request::Job(job), progress)? {
            Response::Done(d) => Ok(d),
            other => Err(unexpected(&other)),
        }
    }

    /// [`GpuWorker::call`] of one of the runtime's own requests.
    fn core(&mut self, req: Request, progress: &mut dyn FnMut(&Progress)) -> Result<Response> {
        self.call::<NoJob, NoJob>(&req, progress)
    }

    /// Sends `req` and waits for its reply, starting a worker first when none is running.
    /// `J` and `D` are the payloads of [`Request::Job`] and [`Response::Done`] ([`NoJob`] for
    /// the runtime's own requests). A line that is not a message of this protocol stops the
    /// worker and is an error naming the request, never a panic.
    pub fn call<J, D>(
        &mut self,
        req: &Request<J>,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<Response<D>>
    where
        J: WorkerJob + Serialize,
        D: DeserializeOwned,
    {
        if self.live.is_none() {
            self.start()?;
        }
        let what = req.describe();
        let line = serde_json::to_string(req).map_err(|e| {
            RuntimeError::Other(crate::util::Problem::new(
                format!("cannot encode {what}: {e}"),
                "this is a vyrescope bug, please report it",
            ))
        })?;
        let written = match self.live.as_mut().and_then(|l| l.stdin.as_mut()) {
            Some(stdin) => {
                use std::io::Write as _;
                stdin
                    .write_all(line.as_bytes())
                    .and_then(|_| stdin.write_all(b"\n"))
                    .and_then(|_| stdin.flush())
            }
            None => Err(std::io::Error::other("no worker")),
        };
        if written.is_err() {
            // The worker is gone (a broken pipe); its status says why.
            return Err(self.died(&what));
        }
        let mut deadline = Some((Instant::now() + self.request_limit, self.request_limit));
        loop {
            let got = {
                let Some(live) = self.live.as_ref() else {
                    return Err(self.died(&what));
                };
                match deadline {
                    Some((at, _)) => {
                        let left = at.saturating_duration_since(Instant::now());
                        match live.lines.recv_timeout(left) {
                            Ok(l) => Some(l),
                            Err(RecvTimeoutError::Timeout) => None,
                            Err(RecvTimeoutError::Disconnected) => Some(Line::Eof),
                        }
                    }
                    None => Some(live.lines.recv().unwrap_or(Line::Eof)),
                }
            };
            let line = match got {
                None => {
                    let limit = deadline.map_or(Duration::ZERO, |(_, l)| l);
                    return Err(self.hung(&what, limit));
                }
                Some(Line::Text(t)) => t,
                Some(Line::Eof) => return Err(self.died(&what)),
                Some(Line::Broken(e)) => {
                    self.end_worker(true, format!("unreadable output: {e}"));
                    return Err(RuntimeError::Worker(crate::util::Problem::new(format!("the GPU worker's output could not be read while handling {what}: {e}; it was stopped, and the next GPU request starts a fresh worker"), "retry; if it persists, report it")));
                }
            };
            let msg: Message<D> = match serde_json::from_str(&line) {
                Ok(m) => m,
                Err(e) => {
                    self.end_worker(true, "spoke an unknown protocol".into());
                    return Err(RuntimeError::Worker(crate::util::Problem::new(format!("the GPU worker sent a message this vyrescope cannot read ({e}) while handling {what}; it was stopped"), format!("the worker binary must be this vyrescope build (unset {WORKER_EXE_ENV} or point it at this build)"))));
                }
            };
            match msg {
                Message::Hello { .. } => {}
                Message::Progress(p) => {
                    deadline = match (p.device, p.budget_ms) {
                        (true, Some(b)) => {
                            let limit = Duration::from_millis(b) + self.hang_margin;
                            Some((Instant::now() + limit, limit))
                        }
                        // Host work and untimed device work have no limit.
                        _ => None,
                    };
                    progress(&p);
                }
                Message::Reply(reply) => {
                    let pid = self.pid().unwrap_or(0);
                    if reply.exiting {
                        let why = match &reply.result {
                            Err(WireError::Fault { what, .. }) => {
                                format!("exited after a sticky fault ({what})")
                            }
                            _ => "exited".into(),
                        };
                        self.end_worker(false, why);
                    }
                    return reply.result.map_err(|e| into_runtime(e, pid));
                }
            }
        }
    }

    /// Starts a worker and waits for its hello.
    fn start(&mut self) -> Result<()> {
        let exe = match self.exe.clone().map_or_else(worker_exe, Ok) {
            Ok(e) => e,
            Err(looked) => {
                // Without the binary there is no worker; say at least what an in-process
                // runtime would say on a machine without a driver.
                if let Err(crate::runtime::driver::NoLibrary { lib, reason }) =
                    crate::runtime::driver::load_library()
                {
                    return Err(RuntimeError::NoDriver { lib, reason });
                }
                let places: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
                return Err(RuntimeError::Worker(crate::util::Problem::new(format!("cannot find the vyrescope binary to run the GPU worker process (looked at {})", if places.is_empty() { "nothing".into() } else { places.join(", ") }), format!("set {WORKER_EXE_ENV}=/path/to/vyrescope"))));
            }
        };
        self.live = Some(Live::spawn(&exe, self.device)?);
        self.started += 1;
        let hello = self
            .live
            .as_ref()
            .map(|l| l.lines.recv_timeout(START_LIMIT));
        match hello {
            Some(Ok(Line::Text(t))) => match serde_json::from_str::<Message>(&t) {
                Ok(Message::Hello { protocol, .. }) if protocol == PROTOCOL_VERSION => Ok(()),
                Ok(Message::Hello { protocol, .. }) => {
                    self.end_worker(true, format!("spoke protocol {protocol}"));
                    Err(RuntimeError::Worker(crate::util::Problem::new(
                        format!(
                            "the GPU worker `{}` speaks protocol version {protocol}, and this \
                             vyrescope speaks version {PROTOCOL_VERSION}: it is another vyrescope build",
                            exe.display()
                        ),
                        format!(
                            "run a worker of this build: unset {WORKER_EXE_ENV}, or point it at \
                             the vyrescope binary built with this one"
                        ),
                    )))
                }
                _ => {
                    self.end_worker(true, "did not say hello".into());
                    let first: String = t.chars().take(120).collect();
                    Err(RuntimeError::Worker(crate::util::Problem::new(
                        format!(
                            "`{} gpu-worker` did not start as a GPU worker (its first line: {first})",
                            exe.display()
                        ),
                        format!("{WORKER_EXE_ENV} must name a vyrescope binary"),
                    )))
                }
            },
            Some(Err(RecvTimeoutError::Timeout)) => Err(self.hung("start-up", START_LIMIT)),
            _ => Err(self.died("start-up")),
        }
    }

    /// Stops the current worker (kill at once when `kill`), remembering why it ended.
    fn end_worker(&mut self, kill: bool, why: String) -> Option<ExitStatus> {
        let mut live = self.live.take()?;
        let status = if kill {
            live.kill()
        } else {
            live.finish(EXIT_GRACE)
        };
        self.last_end = Some(WorkerEnd { pid: live.pid, why });
        status
    }

    /// The worker stopped answering (end of output or a broken pipe): reap it and say how
    /// it ended.
    fn died(&mut self, what: &str) -> RuntimeError {
        let Some(live) = self.live.as_mut() else {
            return RuntimeError::Worker(crate::util::Problem::new(
                format!("no GPU worker is running for {what}"),
                "retry",
            ));
        };
        let pid = live.pid;
        let words = live.last_words();
        let status = live.finish(EXIT_GRACE);
        let (desc, fix) = describe_status(status);
        self.live = None;
        self.last_end = Some(WorkerEnd {
            pid,
            why: format!("died: {desc}"),
        });
        RuntimeError::WorkerDied {
            pid,
            request: what.to_string(),
            status: desc,
            last_words: words,
            fix,
        }
    }

    /// The worker ran past its limit: kill it.
    fn hung(&mut self, what: &str, limit: Duration) -> RuntimeError {
        let pid = self.pid().unwrap_or(0);
        self.end_worker(
            true,
            format!("killed: no answer within {} ms", limit.as_millis()),
        );
        RuntimeError::WorkerHung {
            pid,
            request: what.to_string(),
            waited_ms: limit.as_millis() as u64,
            margin_ms: self.hang_margin.as_millis() as u64,
        }
    }
}

impl Drop for GpuWorker {
    fn drop(&mut self) {
        // Closing stdin ends an idle worker at once; a busy one is killed after a moment.
        if let Some(mut live) = self.live.take() {
            live.finish(Duration::from_millis(500));
        }
    }
}

fn unexpected<D: std::fmt::Debug>(r: &Response<D>) -> RuntimeError {
    RuntimeError::Worker(crate::util::Problem::new(
        format!("the GPU worker answered with an unexpected {r:?}"),
        format!("the worker binary must be this vyrescope build (unset {WORKER_EXE_ENV})"),
    ))
}

/// A wire error as the runtime error the caller would have had in-process (faults say that
/// the worker exited and the next request starts a fresh one).
fn into_runtime(e: WireError, pid: u32) -> RuntimeError {
    match e {
        WireError::NoDriver { lib, reason } => RuntimeError::NoDriver { lib, reason },
        WireError::NoDevice { ordinal, detail } => RuntimeError::NoDevice { ordinal, detail },
        WireError::Fault {
            kernel,
            what,
            driver,
            fix,
        } => RuntimeError::WorkerFault {
            kernel,
            what,
            driver,
            fix,
            pid,
        },
        WireError::Timeout {
            kernel,
            timeout_ms,
            recover_ms,
        } => RuntimeError::Timeout {
            kernel,
            timeout_ms,
            recover_ms,
        },
        WireError::Other { message, fix } => {
            RuntimeError::Other(crate::util::Problem::located(message, fix))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_errors_become_the_in_process_errors() {
        let e = into_runtime(
            WireError::NoDriver {
                lib: "libcuda.so.1".into(),
                reason: "libcuda.so.1: cannot open shared object file: No such file or directory"
                    .into(),
            },
            7,
        );
        let direct = RuntimeError::NoDriver {
            lib: "libcuda.so.1".into(),
            reason: "libcuda.so.1: cannot open shared object file: No such file or directory"
                .into(),
        };
        assert_eq!(e.to_string(), direct.to_string());
        let f = into_runtime(
            WireError::Fault {
                kernel: "vs_fault_trap".into(),
                what: "launch failure (trap or exception)".into(),
                driver: "cuStreamSynchronize failed: CUDA_ERROR_LAUNCH_FAILED (719)".into(),
                fix: "run it under compute-sanitizer".into(),
            },
            1234,
        )
        .to_string();
        assert!(f.contains("faulted: launch failure"), "{f}");
        assert!(f.contains("pid 1234") && f.contains("fresh worker"), "{f}");
        assert!(f.lines().last().is_some_and(|l| l.contains("Fix:")), "{f}");
    }
}
