//! The client side of the GPU worker: [`GpuWorker`] starts the `vyrescope gpu-worker` child
//! lazily, sends requests, reads replies with a timeout, and replaces a worker that faulted,
//! hung or died.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::protocol::{
    FaultCase, Message, PipelineJob, Progress, Request, ResourcesJob, Response, RunJob, RunOutcome,
    StatsSnapshot, TestAction, TimelineJob, TuneJob, TuneOutcome, WireError, PROTOCOL_VERSION,
};

use crate::ir::Program;
use crate::occupancy::DeviceCaps;
use crate::runtime::dispatch::LaunchTiming;
use crate::runtime::execute::RunRequest;
use crate::runtime::jit::KernelInfo;
use crate::runtime::{Result, RuntimeError};

/// Environment variable naming the vyrescope binary to run as the worker.
pub const WORKER_EXE_ENV: &str = "VYRESCOPE_WORKER_EXE";

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

/// Bytes of a worker's stderr kept for error messages.
const STDERR_TAIL: usize = 4096;

static IS_VYRESCOPE_BINARY: AtomicBool = AtomicBool::new(false);

/// Called by the `vyrescope` binary's `main`: this process's executable can serve as the
/// worker. (Library users and test binaries find the binary next to theirs, or through
/// [`WORKER_EXE_ENV`].)
pub fn mark_this_binary() {
    IS_VYRESCOPE_BINARY.store(true, Ordering::Relaxed);
}

/// The executable to run as the worker: [`WORKER_EXE_ENV`], this binary, or a `vyrescope`
/// next to this executable or one directory up (cargo puts test binaries in `deps/`).
/// Err lists the places looked at.
pub fn worker_exe() -> std::result::Result<PathBuf, Vec<PathBuf>> {
    if let Some(p) = std::env::var_os(WORKER_EXE_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let me = std::env::current_exe().ok();
    if IS_VYRESCOPE_BINARY.load(Ordering::Relaxed) {
        if let Some(me) = me {
            return Ok(me);
        }
    }
    let name = format!("vyrescope{}", std::env::consts::EXE_SUFFIX);
    let mut looked = Vec::new();
    if let Some(dir) = me.as_deref().and_then(Path::parent) {
        for d in [Some(dir), dir.parent()].into_iter().flatten() {
            let p = d.join(&name);
            if p.is_file() {
                return Ok(p);
            }
            looked.push(p);
        }
    }
    Err(looked)
}

/// One line from the worker's stdout, or why there are no more.
enum Line {
    Text(String),
    Eof,
    Broken(String),
}

/// A started worker process.
struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<String>>,
    pid: u32,
    reaped: bool,
}

impl Live {
    /// Closes stdin (a healthy worker then exits), waits up to `grace`, then kills; reaps.
    fn finish(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.stdin.take();
        let t = Instant::now();
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if t.elapsed() < grace => std::thread::sleep(Duration::from_millis(5)),
                Ok(None) | Err(_) => {
                    // The whole group: whatever the worker started goes with it.
                    crate::util::os::kill_group(self.pid);
                    let _ = self.child.kill();
                    break self.child.wait().ok();
                }
            }
        };
        self.reaped = true;
        status
    }

    /// Kills at once and reaps.
    fn kill(&mut self) -> Option<ExitStatus> {
        self.finish(Duration::ZERO)
    }

    /// The last lines the worker wrote to stderr, on one line.
    fn last_words(&self) -> String {
        // Give the stderr reader a moment to drain what the worker wrote before dying.
        std::thread::sleep(Duration::from_millis(20));
        let text = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let tail = &lines[lines.len().saturating_sub(3)..];
        tail.join(" | ")
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if !self.reaped {
            self.finish(Duration::from_millis(500));
        }
    }
}

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
        match self.call(&Request::Probe, &mut |_| {})? {
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
        match self.call(&Request::Run(job.clone()), progress)? {
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
        match self.call(&req, &mut |_| {})? {
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
        match self.call(&Request::Tune(job.clone()), progress)? {
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

    /// Runs a pipeline job (its forms, verified; optionally their timelines): the report as
    /// JSON and the timeline record file's text.
    pub fn run_pipeline_job(
        &mut self,
        job: &PipelineJob,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<(serde_json::Value, Option<String>)> {
        match self.call(&Request::Pipeline(job.clone()), progress)? {
            Response::PipelineRan { report, timeline } => Ok((*report, timeline)),
            other => Err(unexpected(&other)),
        }
    }

    /// Records a Program's timeline: the record file's text.
    pub fn record_timeline(&mut self, job: &TimelineJob) -> Result<String> {
        match self.call(&Request::Timeline(job.clone()), &mut |_| {})? {
            Response::Recorded(text) => Ok(text),
            other => Err(unexpected(&other)),
        }
    }

    /// Cache and telemetry counters of the current worker (a fresh worker starts at zero).
    pub fn stats(&mut self) -> Result<StatsSnapshot> {
        match self.call(&Request::Stats, &mut |_| {})? {
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
        match self.call(&req, &mut |_| {})? {
            Response::Launched(t) => Ok(t),
            other => Err(unexpected(&other)),
        }
    }

    /// Test-only: makes the worker exit, abort or hang; returns the error the client made
    /// of it.
    #[doc(hidden)]
    pub fn test_action(&mut self, action: TestAction) -> Result<()> {
        self.call(&Request::Test { action }, &mut |_| {})
            .map(|_| ())
    }

    /// Sends `req` and waits for its reply, starting a worker first when none is running.
    pub fn call(&mut self, req: &Request, progress: &mut dyn FnMut(&Progress)) -> Result<Response> {
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
            let msg: Message = match serde_json::from_str(&line) {
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
                if let Err((lib, reason)) = crate::runtime::driver::load_library() {
                    return Err(RuntimeError::NoDriver { lib, reason });
                }
                let places: Vec<String> = looked.iter().map(|p| p.display().to_string()).collect();
                return Err(RuntimeError::Worker(crate::util::Problem::new(format!("cannot find the vyrescope binary to run the GPU worker process (looked at {})", if places.is_empty() { "nothing".into() } else { places.join(", ") }), format!("set {WORKER_EXE_ENV}=/path/to/vyrescope"))));
            }
        };
        let mut cmd = Command::new(&exe);
        cmd.arg("gpu-worker")
            .arg("--gpu")
            .arg(self.device.to_string());
        // The worker opens pipeline files itself: it needs the same graph symbol values.
        for (symbol, n) in crate::ir::foreign::graph_bindings() {
            cmd.arg("--bind").arg(format!("{symbol}={n}"));
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // A worker busy in a kernel does not read its stdin, so it would not notice its
        // parent's end by the closed pipe: the kernel ends it with the parent instead (the
        // inspector killed by a closed terminal or a signal must not leave a GPU context
        // behind). Tied to the spawning thread, which is the one that uses the worker.
        crate::util::os::die_with_parent(&mut cmd);
        // A group of its own, so that killing a hung worker ends what it started too.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().map_err(|e| {
            RuntimeError::Worker(crate::util::Problem::new(
                format!(
                    "cannot start the GPU worker process `{} gpu-worker`: {e}",
                    exe.display()
                ),
                format!("check that the file exists and is executable, or set {WORKER_EXE_ENV}"),
            ))
        })?;
        let pid = child.id();
        let (tx, rx) = mpsc::channel();
        if let Some(out) = child.stdout.take() {
            let spawned = std::thread::Builder::new()
                .name(format!("gpu-worker-{pid}-out"))
                .spawn(move || {
                    let mut r = BufReader::new(out);
                    loop {
                        let msg = match super::protocol::read_line(&mut r) {
                            Ok(Some(l)) => Line::Text(l),
                            Ok(None) => Line::Eof,
                            Err(e) => Line::Broken(e.to_string()),
                        };
                        let last = !matches!(msg, Line::Text(_));
                        if tx.send(msg).is_err() || last {
                            break;
                        }
                    }
                });
            if spawned.is_err() {
                let _ = child.kill();
                let _ = child.wait();
                return Err(RuntimeError::Worker(crate::util::Problem::new(
                    "cannot start a thread to read the GPU worker",
                    "the system is out of threads; close other programs",
                )));
            }
        }
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(mut err) = child.stderr.take() {
            let sink = Arc::clone(&stderr);
            // Without this reader a chatty worker would block on a full pipe.
            let _ = std::thread::Builder::new()
                .name(format!("gpu-worker-{pid}-err"))
                .spawn(move || {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = err.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        if let Ok(mut s) = sink.lock() {
                            s.push_str(&String::from_utf8_lossy(&buf[..n]));
                            if s.len() > 2 * STDERR_TAIL {
                                let cut = s.len() - STDERR_TAIL;
                                let cut = (cut..s.len()).find(|&i| s.is_char_boundary(i));
                                if let Some(c) = cut {
                                    s.drain(..c);
                                }
                            }
                        }
                    }
                });
        }
        let stdin = child.stdin.take();
        self.live = Some(Live {
            child,
            stdin,
            lines: rx,
            stderr,
            pid,
            reaped: false,
        });
        self.started += 1;
        let hello = self
            .live
            .as_ref()
            .map(|l| l.lines.recv_timeout(START_LIMIT));
        match hello {
            Some(Ok(Line::Text(t))) => {
                match serde_json::from_str::<Message>(&t) {
                    Ok(Message::Hello { protocol, .. }) if protocol == PROTOCOL_VERSION => Ok(()),
                    Ok(Message::Hello { protocol, .. }) => {
                        self.end_worker(true, "spoke another protocol".into());
                        Err(RuntimeError::Worker(crate::util::Problem::new(format!("the GPU worker `{}` speaks protocol {protocol}, this vyrescope {PROTOCOL_VERSION}", exe.display()), format!("use the same vyrescope build for both (unset {WORKER_EXE_ENV} or point it at this build)"))))
                    }
                    _ => {
                        self.end_worker(true, "did not say hello".into());
                        Err(RuntimeError::Worker(crate::util::Problem::new(format!("`{} gpu-worker` did not start as a GPU worker (its first line: {})", exe.display(), t.chars().take(120).collect::<String>()), format!("{WORKER_EXE_ENV} must name a vyrescope binary"))))
                    }
                }
            }
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

fn unexpected(r: &Response) -> RuntimeError {
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

/// Words for an exit status, and a fix hint.
fn describe_status(status: Option<ExitStatus>) -> (String, String) {
    let bug = "retry; if it happens again, run the same work with `vyrescope run FILE --backend cuda` to see it in-process, and report it with the worker's last words".to_string();
    let Some(s) = status else {
        return ("exit status unknown".into(), bug);
    };
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = s.signal() {
            let name = match sig {
                1 => "SIGHUP",
                2 => "SIGINT",
                4 => "SIGILL",
                6 => "SIGABRT",
                7 => "SIGBUS",
                8 => "SIGFPE",
                9 => "SIGKILL",
                11 => "SIGSEGV",
                13 => "SIGPIPE",
                15 => "SIGTERM",
                _ => "signal",
            };
            let fix = match sig {
                9 => "the system may have run out of memory (see `dmesg`), or something killed the worker; retry with smaller buffers".to_string(),
                2 | 15 | 1 => "something stopped the worker from outside; retry".to_string(),
                _ => bug,
            };
            return (format!("killed by signal {sig} ({name})"), fix);
        }
    }
    match s.code() {
        Some(101) => ("exit code 101 (a panic)".into(), bug),
        Some(c) => (format!("exit code {c}"), bug),
        None => ("exit status unknown".into(), bug),
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

    #[cfg(unix)]
    #[test]
    fn statuses_are_described_with_signal_names() {
        use std::os::unix::process::ExitStatusExt;
        let (d, f) = describe_status(Some(ExitStatus::from_raw(9)));
        assert_eq!(d, "killed by signal 9 (SIGKILL)");
        assert!(f.contains("memory"));
        let (d, _) = describe_status(Some(ExitStatus::from_raw(3 << 8)));
        assert_eq!(d, "exit code 3");
        let (d, _) = describe_status(None);
        assert!(d.contains("unknown"));
    }
}
