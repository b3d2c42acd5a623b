//! NVIDIA's `ptxas` as the external judge of our PTX, and its `-v` resource report.
//!
//! The binary comes from the `nvidia-cuda-nvcc` wheel (`scripts/install-ptxas.sh` installs
//! it and prints its path); it is found through `VYRESCOPE_PTXAS`, else on `PATH`.
//! ptxas 13 no longer assembles for sm_70: PTX for `.target sm_70` is assembled with
//! `-arch=sm_75` instead (valid: PTX for sm_XY may be compiled for any later target).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
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
    #[error("ptxas not found (VYRESCOPE_PTXAS unset and no ptxas on PATH)\n  Fix: run scripts/install-ptxas.sh and export VYRESCOPE_PTXAS=<the path it prints>")]
    NotFound,
    /// Running it failed.
    #[error(
        "could not run ptxas: {0}\n  Fix: check that VYRESCOPE_PTXAS points at an executable ptxas"
    )]
    Io(String),
    /// ptxas rejected the PTX.
    #[error("ptxas rejected the PTX for {arch}:\n{log}\n  Fix: this is an emitter bug; report it with the Program file")]
    Rejected {
        /// Architecture.
        arch: String,
        /// ptxas output.
        log: String,
    },
    /// The `-v` report had no resource line.
    #[error("could not read ptxas -v output: {0}\n  Fix: use ptxas 12 or 13 (its report format is parsed)")]
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

/// Runs `ptxas -v -arch=.. [-lineinfo]` on `ptx`; returns its log on success.
///
/// The PTX, cubin and log live in a fresh private folder under `$TMPDIR` (`tempfile`: an
/// unpredictable name created exclusively with mode 0700, so a link planted in `$TMPDIR` is
/// never followed and no other user can swap the files); the folder is removed when this
/// function returns, on every path: errors, a ptxas killed after [`PTXAS_TIMEOUT`], unwinding.
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

fn assemble_full(
    parent: &Path,
    ptxas: &Path,
    ptx: &str,
    sm: u32,
    lineinfo: bool,
    limit: Duration,
) -> Result<(String, Vec<u8>), PtxasError> {
    let arch = ptxas_arch(sm);
    let dir = tempfile::Builder::new()
        .prefix("vyrescope-ptxas-")
        .tempdir_in(parent)
        .map_err(|e| PtxasError::Io(format!("cannot create a temp folder: {e}")))?;
    let res = run_in(dir.path(), ptxas, ptx, &arch, lineinfo, limit).and_then(|(ok, log)| {
        if !ok {
            return Ok((false, log, Vec::new()));
        }
        let cubin = std::fs::read(dir.path().join("kernel.cubin"))
            .map_err(|e| PtxasError::Io(format!("ptxas wrote no cubin: {e}")))?;
        Ok((true, log, cubin))
    });
    // Dropping `dir` would remove it too; closing says so explicitly (errors are moot here).
    let _ = dir.close();
    let (ok, log, cubin) = res?;
    if !ok {
        return Err(PtxasError::Rejected { arch, log });
    }
    Ok((log, cubin))
}

/// Runs ptxas on `ptx` inside `dir`; returns (success, log). Its output goes to a file in
/// `dir` rather than a pipe, so waiting with a deadline cannot deadlock on a full pipe.
fn run_in(
    dir: &Path,
    ptxas: &Path,
    ptx: &str,
    arch: &str,
    lineinfo: bool,
    limit: Duration,
) -> Result<(bool, String), PtxasError> {
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
    run_limited(&mut cmd, &dir.join("ptxas.log"), limit, "ptxas").map_err(PtxasError::Io)
}

/// Runs `cmd` with no stdin and its stdout and stderr both written to the file `log`,
/// killing it after `limit`; returns (success, the log). Waiting on a file rather than a
/// pipe cannot deadlock on a full pipe. `tool` names the program in errors. Shared by every
/// NVIDIA tool vyrescope runs (ptxas here, nvdisasm in `sass`).
pub fn run_limited(
    cmd: &mut Command,
    log: &Path,
    limit: Duration,
    tool: &str,
) -> Result<(bool, String), String> {
    let io = |e: std::io::Error| e.to_string();
    let log_file = std::fs::File::create(log).map_err(io)?;
    cmd.stdin(Stdio::null())
        .stdout(log_file.try_clone().map_err(io)?)
        .stderr(log_file);
    let mut child = cmd.spawn().map_err(io)?;
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().map_err(io)? {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{tool} ran longer than {} s and was stopped",
                limit.as_secs_f64()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let text = std::fs::read(log).map_err(io)?;
    Ok((
        status.success(),
        String::from_utf8_lossy(&text).into_owned(),
    ))
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

crate::util::problem::into_problem!(PtxasError);

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_hung_ptxas_is_stopped_and_its_files_removed() {
        use std::os::unix::fs::PermissionsExt;
        let d = std::env::temp_dir().join(format!("vyrescope-ptxas-hang-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let parent = d.join("tmp");
        std::fs::create_dir_all(&parent).unwrap();
        let fake = d.join("ptxas");
        std::fs::write(&fake, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
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
