//! The worker process itself: finding the binary to run, starting it in a process group of
//! its own with readers on its output, and ending it (politely, then by force) with words for
//! how it ended.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::runtime::{Result, RuntimeError};

/// Environment variable naming the vyrescope binary to run as the worker.
pub const WORKER_EXE_ENV: &str = "VYRESCOPE_WORKER_EXE";

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
pub(super) enum Line {
    Text(String),
    Eof,
    Broken(String),
}

/// A started worker process.
pub(super) struct Live {
    pub(super) child: Child,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) lines: Receiver<Line>,
    pub(super) stderr: Arc<Mutex<String>>,
    pub(super) pid: u32,
    pub(super) reaped: bool,
}

impl Live {
    /// Starts `exe gpu-worker` on device `device` with readers of its stdout (one line per
    /// message, sent to [`Live::lines`]) and stderr (its tail kept for error messages).
    pub(super) fn spawn(exe: &Path, device: u32) -> Result<Live> {
        let mut cmd = Command::new(exe);
        cmd.arg("gpu-worker").arg("--gpu").arg(device.to_string());
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
        Ok(Live {
            child,
            stdin,
            lines: rx,
            stderr,
            pid,
            reaped: false,
        })
    }

    /// Closes stdin (a healthy worker then exits), waits up to `grace`, then kills; reaps.
    pub(super) fn finish(&mut self, grace: Duration) -> Option<ExitStatus> {
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
    pub(super) fn kill(&mut self) -> Option<ExitStatus> {
        self.finish(Duration::ZERO)
    }

    /// The last lines the worker wrote to stderr, on one line.
    pub(super) fn last_words(&self) -> String {
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

/// Words for an exit status, and a fix hint.
pub(super) fn describe_status(status: Option<ExitStatus>) -> (String, String) {
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
