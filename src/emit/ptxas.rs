//! NVIDIA's `ptxas` as the external judge of our PTX, and its `-v` resource report.
//!
//! The binary comes from the `nvidia-cuda-nvcc` wheel (`scripts/install-ptxas.sh` installs
//! it and prints its path); it is found through `VYRESCOPE_PTXAS`, else on `PATH`.
//! ptxas 13 no longer assembles for sm_70: PTX for `.target sm_70` is assembled with
//! `-arch=sm_75` instead (valid: PTX for sm_XY may be compiled for any later target).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;

/// What `ptxas -v` reports for one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct OfflineResources {
    /// Registers per thread.
    pub registers: u32,
    /// Named barriers used.
    pub barriers: u32,
    /// Bytes spilled to local memory (stores).
    pub spill_stores: u32,
    /// Bytes reloaded from spills.
    pub spill_loads: u32,
    /// Stack frame bytes per thread.
    pub stack_frame: u32,
    /// Static shared memory bytes per block.
    pub shared_bytes: u32,
    /// Constant bank 0 bytes (kernel parameters and driver data).
    pub constant_bytes: u32,
    /// The architecture ptxas assembled for (`sm_90`).
    pub arch: String,
}

/// Why ptxas could not judge or rejected the PTX.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PtxasError {
    /// No ptxas binary.
    NotFound,
    /// Running it failed.
    Io(String),
    /// ptxas rejected the PTX.
    Rejected {
        /// Architecture.
        arch: String,
        /// ptxas output.
        log: String,
    },
    /// ptxas ran out of the memory it is allowed ([`tool_memory_limit`]).
    OutOfMemory {
        /// Architecture.
        arch: String,
        /// Lines of the PTX.
        lines: usize,
        /// The limit it ran under.
        limit_mib: u64,
        /// The first lines of its output.
        log: String,
    },
    /// ptxas died of a signal (a crash, or an allocation under the memory limit that it did
    /// not check).
    Killed {
        /// Architecture.
        arch: String,
        /// The signal.
        signal: i32,
        /// Lines of the PTX.
        lines: usize,
        /// The limit it ran under.
        limit_mib: u64,
    },
    /// The `-v` report had no resource line.
    Parse(String),
}

/// The ptxas binary: `VYRESCOPE_PTXAS`, else `ptxas` on `PATH`.
pub fn find_ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("VYRESCOPE_PTXAS").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("ptxas"))
        .find(|p| p.is_file())
}

/// The `-arch` ptxas 13 is run with for PTX targeting `sm` (sm_70 -> sm_75, see module docs).
pub fn ptxas_arch(sm: u32) -> String {
    format!("sm_{}", sm.max(75))
}

/// When SASS for target `sm` is not SASS for `sm` (the pinned ptxas has no sm_70 target, so
/// sm_70 PTX is assembled as sm_75): the sentence that says so wherever SASS for such a target
/// is shown (`sass`, the inspector's `T`, `diff @sm=70`); `None` for every other target.
pub fn arch_note(sm: u32) -> Option<String> {
    let arch = ptxas_arch(sm);
    (arch != format!("sm_{sm}"))
        .then(|| format!("the pinned ptxas (13) has no sm_{sm} target: its SASS is for {arch}"))
}

/// Longest one ptxas run may take: large kernels assemble in seconds, so minutes mean a hung
/// or hostile binary; it is killed and its files removed.
pub const PTXAS_TIMEOUT: Duration = Duration::from_secs(300);

/// Most output one tool run may write (its log file): a ptxas `-v` log is a few lines and an
/// nvdisasm listing of a large kernel a few dozen MiB, so more means a broken or hostile
/// binary; it is stopped when its output passes this, and no more than this is read back.
pub const TOOL_OUTPUT_LIMIT: u64 = 256 << 20;

/// Address space each tool run may use unless `VYRESCOPE_TOOL_MEMORY_MB` says otherwise:
/// ptxas needs a few hundred MiB for ordinary kernels and tens of GiB for the largest fused
/// ones, which must fail on their own rather than take the machine's memory.
pub const TOOL_MEMORY_LIMIT: u64 = 8 << 30;

/// The address-space limit of a tool run: `VYRESCOPE_TOOL_MEMORY_MB` (a positive number of
/// MiB) when set, else [`TOOL_MEMORY_LIMIT`].
pub fn tool_memory_limit() -> u64 {
    std::env::var("VYRESCOPE_TOOL_MEMORY_MB")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&mb| mb > 0)
        .map_or(TOOL_MEMORY_LIMIT, |mb| mb.saturating_mul(1 << 20))
}

/// Runs `ptxas -v -arch=.. [-lineinfo]` on `ptx`; returns its log on success.
///
/// The PTX, cubin and log live in a fresh private folder under `$TMPDIR` ([`ToolDir`]: an
/// unpredictable name created exclusively with mode 0700, so a link planted in `$TMPDIR` is
/// never followed and no other user can read the kernel or swap the files); the folder is
/// removed when this function returns, on every path: errors, a ptxas killed after
/// [`PTXAS_TIMEOUT`] or for its output, unwinding, and [`stop_all`] when the program quits.
pub fn assemble(ptxas: &Path, ptx: &str, sm: u32, lineinfo: bool) -> Result<String, PtxasError> {
    assemble_in(
        &std::env::temp_dir(),
        ptxas,
        ptx,
        sm,
        lineinfo,
        PTXAS_TIMEOUT,
    )
}

/// [`assemble`] with the temp folder created under `parent` and a given time limit.
pub fn assemble_in(
    parent: &Path,
    ptxas: &Path,
    ptx: &str,
    sm: u32,
    lineinfo: bool,
    limit: Duration,
) -> Result<String, PtxasError> {
    assemble_full(parent, ptxas, ptx, sm, lineinfo, limit).map(|(log, _)| log)
}

/// Like [`assemble`], and also returns the cubin ptxas wrote (for disassembly: the
/// `sass` module). Same private temp folder, time limit and clean-up.
pub fn assemble_cubin(
    ptxas: &Path,
    ptx: &str,
    sm: u32,
    lineinfo: bool,
) -> Result<(String, Vec<u8>), PtxasError> {
    assemble_full(
        &std::env::temp_dir(),
        ptxas,
        ptx,
        sm,
        lineinfo,
        PTXAS_TIMEOUT,
    )
}

/// Whether a failed tool's output says an allocation failed.
fn says_out_of_memory(log: &str) -> bool {
    let l = log.to_ascii_lowercase();
    [
        "out of memory",
        "memory allocation",
        "bad_alloc",
        "cannot allocate memory",
    ]
    .iter()
    .any(|m| l.contains(m))
}

fn assemble_full(
    parent: &Path,
    ptxas: &Path,
    ptx: &str,
    sm: u32,
    lineinfo: bool,
    limit: Duration,
) -> Result<(String, Vec<u8>), PtxasError> {
    let arch = ptxas_arch(sm);
    let dir =
        ToolDir::new_in(parent, "vyrescope-ptxas-").map_err(|e| PtxasError::Io(e.to_string()))?;
    let res = run_in(dir.path(), ptxas, ptx, &arch, lineinfo, limit).and_then(|run| {
        if !run.success {
            return Ok((run, Vec::new()));
        }
        let cubin = std::fs::read(dir.path().join("kernel.cubin"))
            .map_err(|e| PtxasError::Io(format!("ptxas wrote no cubin: {e}")))?;
        Ok((run, cubin))
    });
    drop(dir);
    let (run, cubin) = res?;
    if !run.success {
        let (lines, limit_mib) = (ptx.lines().count(), tool_memory_limit() >> 20);
        if says_out_of_memory(&run.log) {
            return Err(PtxasError::OutOfMemory {
                arch,
                lines,
                limit_mib,
                log: run.log.lines().take(3).collect::<Vec<_>>().join(" | "),
            });
        }
        if let Some(signal) = run.signal {
            return Err(PtxasError::Killed {
                arch,
                signal,
                lines,
                limit_mib,
            });
        }
        return Err(PtxasError::Rejected { arch, log: run.log });
    }
    Ok((run.log, cubin))
}

/// Runs ptxas on `ptx` inside `dir`. Its output goes to a file in `dir` rather than a pipe,
/// so waiting with a deadline cannot deadlock on a full pipe.
fn run_in(
    dir: &Path,
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    lineinfo: bool,
    limit: Duration,
) -> Result<ToolRun, PtxasError> {
    let io = |e: std::io::Error| PtxasError::Io(e.to_string());
    let src = dir.join("kernel.ptx");
    let out = dir.join("kernel.cubin");
    std::fs::write(&src, ptx).map_err(io)?;
    let mut cmd = Command::new(ptxas);
    cmd.arg(format!("-arch={arch}")).arg("-v");
    if lineinfo {
        cmd.arg("-lineinfo");
    }
    cmd.arg(&src).arg("-o").arg(&out);
    run_limited(&mut cmd, &dir.join("ptxas.log"), limit, "ptxas")
        .map_err(|e| PtxasError::Io(e.to_string()))
}

/// How one tool run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    /// It exited with status 0.
    pub success: bool,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Its output (stdout and stderr), at most [`TOOL_OUTPUT_LIMIT`] bytes.
    pub log: String,
}

/// The tool runs and temp folders alive now, so that [`stop_all`] can end them when the
/// program quits while a worker thread still waits on a tool.
#[derive(Default)]
struct Live {
    next: u64,
    stopped: bool,
    dirs: BTreeMap<u64, PathBuf>,
    groups: BTreeMap<u64, u32>,
}

fn live() -> std::sync::MutexGuard<'static, Live> {
    static LIVE: Mutex<Live> = Mutex::new(Live {
        next: 0,
        stopped: false,
        dirs: BTreeMap::new(),
        groups: BTreeMap::new(),
    });
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills every tool run still going (its whole process group) and removes every tool temp
/// folder still there; tool runs started afterwards fail at once. Called when the inspector
/// quits: its worker threads end with the process, which would leave ptxas running and its
/// folder (with the kernel's PTX) behind.
pub fn stop_all() {
    let mut l = live();
    l.stopped = true;
    for &g in l.groups.values() {
        crate::util::os::kill_group(g);
    }
    for d in l.dirs.values() {
        let _ = std::fs::remove_dir_all(d);
    }
    l.dirs.clear();
}

/// A private temp folder for one tool run: an unpredictable name created exclusively with
/// mode 0700, registered for [`stop_all`], removed when dropped.
pub struct ToolDir {
    dir: Option<tempfile::TempDir>,
    id: u64,
}

impl ToolDir {
    /// A new folder `prefix...` under `parent`.
    pub fn new_in(parent: &Path, prefix: &str) -> std::io::Result<ToolDir> {
        let mut l = live();
        if l.stopped {
            return Err(std::io::Error::other("the program is quitting"));
        }
        let mut b = tempfile::Builder::new();
        b.prefix(prefix);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            b.permissions(std::fs::Permissions::from_mode(0o700));
        }
        let dir = b.tempdir_in(parent).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot create a temp folder in {}: {e}", parent.display()),
            )
        })?;
        l.next += 1;
        let id = l.next;
        l.dirs.insert(id, dir.path().to_path_buf());
        Ok(ToolDir { dir: Some(dir), id })
    }

    /// A new folder under `$TMPDIR`.
    pub fn new(prefix: &str) -> std::io::Result<ToolDir> {
        Self::new_in(&std::env::temp_dir(), prefix)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }
}

impl Drop for ToolDir {
    fn drop(&mut self) {
        live().dirs.remove(&self.id);
        if let Some(d) = self.dir.take() {
            let _ = d.close();
        }
    }
}

/// Why [`run_limited`] has no result from a tool.
#[derive(Debug, thiserror::Error)]
pub enum ToolRunError {
    /// Creating its log, starting it, waiting for it or reading its log failed.
    #[error("{0}")]
    Io(std::io::Error),
    /// [`stop_all`] was called: the program is quitting and starts no tool.
    #[error("the program is quitting")]
    Quitting,
    /// It ran past its time limit and was stopped.
    #[error("{tool} ran longer than {seconds} s and was stopped")]
    TooLong {
        /// The tool's name.
        tool: String,
        /// The limit.
        seconds: f64,
    },
    /// Its output passed [`TOOL_OUTPUT_LIMIT`] and it was stopped.
    #[error("{tool} wrote more than {mib} MiB of output and was stopped")]
    TooMuchOutput {
        /// The tool's name.
        tool: String,
        /// The limit in MiB.
        mib: u64,
    },
}

/// Runs `cmd` with no stdin and its stdout and stderr both written to the file `log`, in a
/// process group of its own under [`tool_memory_limit`], and waits for it; returns how it
/// ended. The whole group is killed after `limit`, when its output passes
/// [`TOOL_OUTPUT_LIMIT`], or by [`stop_all`]. Waiting on a file rather than a pipe cannot
/// deadlock on a full pipe. `tool` names the program in errors. Shared by every NVIDIA tool
/// vyrescope runs (ptxas here, nvdisasm in `sass`).
pub fn run_limited(
    cmd: &mut Command,
    log: &Path,
    limit: Duration,
    tool: &str,
) -> Result<ToolRun, ToolRunError> {
    let io = ToolRunError::Io;
    let log_file = std::fs::File::create(log).map_err(io)?;
    let size = log_file.try_clone().map_err(io)?;
    cmd.stdin(Stdio::null())
        .stdout(log_file.try_clone().map_err(io)?)
        .stderr(log_file);
    crate::util::os::tool_child(cmd, tool_memory_limit());
    crate::util::os::die_with_parent(cmd);
    let id = {
        let mut l = live();
        if l.stopped {
            return Err(ToolRunError::Quitting);
        }
        l.next += 1;
        l.next
    };
    let mut child = cmd.spawn().map_err(io)?;
    live().groups.insert(id, child.id());
    let start = Instant::now();
    let stop = |child: &mut std::process::Child| {
        crate::util::os::kill_group(child.id());
        let _ = child.kill();
        let _ = child.wait();
        live().groups.remove(&id);
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => {}
            Err(e) => {
                stop(&mut child);
                return Err(ToolRunError::Io(e));
            }
        }
        if start.elapsed() > limit {
            stop(&mut child);
            return Err(ToolRunError::TooLong {
                tool: tool.to_string(),
                seconds: limit.as_secs_f64(),
            });
        }
        if size.metadata().is_ok_and(|m| m.len() > TOOL_OUTPUT_LIMIT) {
            stop(&mut child);
            return Err(ToolRunError::TooMuchOutput {
                tool: tool.to_string(),
                mib: TOOL_OUTPUT_LIMIT >> 20,
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Not killed as a group now: the leader is reaped, so its id may name another group.
    live().groups.remove(&id);
    let mut text = Vec::new();
    std::fs::File::open(log)
        .and_then(|f| f.take(TOOL_OUTPUT_LIMIT).read_to_end(&mut text))
        .map_err(io)?;
    #[cfg(unix)]
    let signal = std::os::unix::process::ExitStatusExt::signal(&status);
    #[cfg(not(unix))]
    let signal = None;
    Ok(ToolRun {
        success: status.success(),
        signal,
        log: String::from_utf8_lossy(&text).into_owned(),
    })
}

/// Assembles `ptx` for `sm` with the ptxas found by [`find_ptxas`] and parses `-v`.
pub fn offline_resources(ptx: &str, sm: u32) -> Result<OfflineResources, PtxasError> {
    let ptxas = find_ptxas().ok_or(PtxasError::NotFound)?;
    let log = assemble(&ptxas, ptx, sm, false)?;
    let mut r = parse_verbose(&log)?;
    r.arch = ptxas_arch(sm);
    Ok(r)
}

/// Parses the figures of a `ptxas -v` log (one kernel).
pub fn parse_verbose(log: &str) -> Result<OfflineResources, PtxasError> {
    let mut r = OfflineResources::default();
    let mut saw_used = false;
    for line in log.lines() {
        for part in line.split(',') {
            let words: Vec<&str> = part.split_whitespace().collect();
            let num = |i: usize| words.get(i).and_then(|w| w.parse::<u32>().ok());
            let pos = |w: &str| words.iter().position(|x| *x == w);
            if let Some(i) = pos("registers") {
                if let Some(n) = i.checked_sub(1).and_then(num) {
                    r.registers = n;
                    saw_used = true;
                }
            } else if let Some(i) = pos("barriers") {
                if let Some(n) = i.checked_sub(1).and_then(num) {
                    r.barriers = n;
                }
            } else if part.contains("stack frame") {
                r.stack_frame = num(0).unwrap_or(0);
            } else if part.contains("spill stores") {
                r.spill_stores = num(0).unwrap_or(0);
            } else if part.contains("spill loads") {
                r.spill_loads = num(0).unwrap_or(0);
            } else if part.contains("smem") {
                r.shared_bytes = num(0).unwrap_or(0);
            } else if part.contains("cmem[0]") {
                r.constant_bytes = num(0).unwrap_or(0);
            }
        }
    }
    if !saw_used {
        return Err(PtxasError::Parse(
            log.lines().take(5).collect::<Vec<_>>().join(" | "),
        ));
    }
    Ok(r)
}

impl crate::util::HasFix for PtxasError {
    fn message(&self) -> String {
        match self {
            Self::NotFound => "ptxas not found (VYRESCOPE_PTXAS unset and no ptxas on PATH)".to_string(),
            Self::Io(a0) => format!("could not run ptxas: {a0}"),
            Self::Rejected { arch, log, .. } => format!("ptxas rejected the PTX for {arch}:\n{log}"),
            Self::OutOfMemory { arch, lines, limit_mib, log, .. } => format!("ptxas ran out of memory assembling {lines} PTX lines for {arch} (limit {limit_mib} MiB of address space): {log}"),
            Self::Killed { arch, signal, lines, limit_mib, .. } => format!("ptxas was killed by signal {signal} assembling {lines} PTX lines for {arch} (limit {limit_mib} MiB of address space: it may have run out of memory)"),
            Self::Parse(a0) => format!("could not read ptxas -v output: {a0}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::NotFound => "run scripts/install-ptxas.sh and export VYRESCOPE_PTXAS=<the path it prints>".to_string(),
            Self::Io(_) => "check that VYRESCOPE_PTXAS points at an executable ptxas".to_string(),
            Self::Rejected { .. } => "this is an emitter bug; report it with the Program file".to_string(),
            Self::OutOfMemory { .. } => "assemble a smaller kernel (for a pipeline: `--sync barrier`, or fewer steps per fused group), or raise the limit with VYRESCOPE_TOOL_MEMORY_MB".to_string(),
            Self::Killed { .. } => "assemble a smaller kernel, or raise the limit with VYRESCOPE_TOOL_MEMORY_MB; if it still crashes, report it with the Program file".to_string(),
            Self::Parse(_) => "use ptxas 12 or 13 (its report format is parsed)".to_string(),
        }
    }
}

crate::util::problem::into_problem!(PtxasError);

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_hung_ptxas_is_stopped_and_its_files_removed() {
        let d = std::env::temp_dir().join(format!("vyrescope-ptxas-hang-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let parent = d.join("tmp");
        std::fs::create_dir_all(&parent).unwrap();
        let fake = d.join("ptxas");
        write_script(&fake, "exec sleep 30");
        let t = Instant::now();
        let e = assemble_in(
            &parent,
            &fake,
            ".version 8.0",
            90,
            false,
            Duration::from_millis(300),
        )
        .unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        assert!(e.to_string().contains("longer than"), "{e}");
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 0);
        let _ = std::fs::remove_dir_all(&d);
    }

    /// A fake ptxas in a fresh folder running `script` (sh); returns (folder, tool, temp
    /// parent for its runs).
    #[cfg(unix)]
    fn fake(script: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let parent = t.path().join("tmp");
        std::fs::create_dir_all(&parent).unwrap();
        let tool = t.path().join("ptxas");
        write_script(&tool, script);
        (t, tool, parent)
    }

    /// Writes an executable `sh` script through a short-lived `sh`, so that the write
    /// descriptor never lives in this (many-threaded) test process: a child forked by another
    /// test in that moment would inherit it, and exec'ing the script would then fail with
    /// "Text file busy".
    #[cfg(unix)]
    fn write_script(path: &Path, body: &str) {
        use std::io::Write;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg("cat > \"$1\" && chmod 755 \"$1\"")
            .arg("sh")
            .arg(path)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
            .unwrap();
        drop(stdin);
        assert!(child.wait().unwrap().success());
    }

    #[cfg(unix)]
    #[test]
    fn a_ptxas_that_prints_without_end_is_stopped_and_its_files_removed() {
        // Before: the log was read whole (3 GB of output aborted `occupancy`) and the temp
        // folder stayed behind.
        let (_t, tool, parent) = fake("exec yes 0123456789abcdef0123456789abcdef");
        let t = Instant::now();
        let e = assemble_in(&parent, &tool, ".version 8.0", 90, false, PTXAS_TIMEOUT)
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 256 MiB of output"), "{e}");
        assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_timed_out_ptxas_is_killed_with_everything_it_started() {
        // Before: only the direct child was killed; the `sleep` it started ran on.
        let (t, tool, parent) = fake("sleep 30 &\necho $! > \"$(dirname \"$0\")/child.pid\"\nwait");
        let e = assemble_in(
            &parent,
            &tool,
            ".version 8.0",
            90,
            false,
            Duration::from_millis(500),
        )
        .unwrap_err();
        assert!(e.to_string().contains("longer than"), "{e}");
        let pid = std::fs::read_to_string(t.path().join("child.pid")).unwrap();
        let stat = format!("/proc/{}/stat", pid.trim());
        let start = Instant::now();
        // Gone, or a zombie waiting for init to reap it.
        while std::fs::read_to_string(&stat)
            .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
        {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "pid {pid} still runs"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(std::fs::read_dir(&parent).unwrap().count(), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn tool_folders_are_private_and_tools_run_under_a_memory_limit() {
        // Before: the folders were 0755 (the kernel's PTX readable by every user).
        let (_t, tool, parent) =
            fake("stat -c 'mode %a' \"$(dirname \"$3\")\"\necho \"limit $(ulimit -v)\"\nexit 1");
        let e = assemble_in(&parent, &tool, ".version 8.0", 90, false, PTXAS_TIMEOUT).unwrap_err();
        let PtxasError::Rejected { log, .. } = &e else {
            panic!("{e}")
        };
        assert!(log.contains("mode 700"), "{log}");
        // The limit, or this process's own when that is lower (`ulimit -v`).
        let kib: u64 = log
            .lines()
            .find_map(|l| l.strip_prefix("limit "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no numeric limit: {log}"));
        assert!(kib > 0 && kib <= tool_memory_limit() >> 10, "{log}");
    }

    #[cfg(unix)]
    #[test]
    fn a_ptxas_out_of_memory_says_so() {
        let (_t, tool, parent) = fake("echo 'ptxas fatal   : Memory allocation failure'\nexit 1");
        let e =
            assemble_in(&parent, &tool, ".version 8.0\n", 90, false, PTXAS_TIMEOUT).unwrap_err();
        assert!(matches!(e, PtxasError::OutOfMemory { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("ran out of memory") && text.contains("Fix:"),
            "{text}"
        );
        let (_t, tool, parent) = fake("kill -SEGV $$");
        let e =
            assemble_in(&parent, &tool, ".version 8.0\n", 90, false, PTXAS_TIMEOUT).unwrap_err();
        assert!(matches!(e, PtxasError::Killed { signal: 11, .. }), "{e}");
    }

    #[test]
    fn parses_a_ptxas_13_report() {
        let log = "ptxas info    : 0 bytes gmem\n\
ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
ptxas info    : Function properties for k\n\
    16 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n\
ptxas info    : Used 31 registers, used 1 barriers, 1024 bytes smem, 380 bytes cmem[0]\n\
ptxas info    : Compile time = 2.484 ms\n";
        let r = parse_verbose(log).unwrap();
        assert_eq!(
            (
                r.registers,
                r.barriers,
                r.stack_frame,
                r.spill_stores,
                r.spill_loads
            ),
            (31, 1, 16, 8, 4)
        );
        assert_eq!((r.shared_bytes, r.constant_bytes), (1024, 380));
        assert!(parse_verbose("nothing").is_err());
    }
}
