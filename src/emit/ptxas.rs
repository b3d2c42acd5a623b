//! NVIDIA's `ptxas` as the external judge of our PTX, and its `-v` resource report.
//!
//! The binary comes from the `nvidia-cuda-nvcc` wheel (`scripts/install-ptxas.sh` installs
//! it and prints its path); it is found through `VYRESCOPE_PTXAS`, else on `PATH`.
//! ptxas 13 no longer assembles for sm_70: PTX for `.target sm_70` is assembled with
//! `-arch=sm_75` instead (valid: PTX for sm_XY may be compiled for any later target).

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// Runs `ptxas -v -arch=.. [-lineinfo]` on `ptx`; returns its log on success.
///
/// The PTX and cubin live in a fresh private folder (`tempfile`: an unpredictable name
/// created exclusively with mode 0700, so a link planted in `$TMPDIR` is never followed and
/// no other user can swap the files); the folder is removed when this function returns, on
/// every path, errors and unwinding included.
pub fn assemble(ptxas: &Path, ptx: &str, sm: u32, lineinfo: bool) -> Result<String, PtxasError> {
    let arch = ptxas_arch(sm);
    let dir = tempfile::Builder::new()
        .prefix("vyrescope-ptxas-")
        .tempdir()
        .map_err(|e| PtxasError::Io(format!("cannot create a temp folder: {e}")))?;
    let src = dir.path().join("kernel.ptx");
    let out = dir.path().join("kernel.cubin");
    std::fs::write(&src, ptx).map_err(|e| PtxasError::Io(e.to_string()))?;
    let mut cmd = Command::new(ptxas);
    cmd.arg(format!("-arch={arch}")).arg("-v");
    if lineinfo {
        cmd.arg("-lineinfo");
    }
    cmd.arg(&src).arg("-o").arg(&out);
    let res = cmd.output();
    // Removing explicitly reports nothing useful on failure; dropping `dir` would also do it.
    let _ = dir.close();
    let o = res.map_err(|e| PtxasError::Io(e.to_string()))?;
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if !o.status.success() {
        return Err(PtxasError::Rejected { arch, log });
    }
    Ok(log)
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

#[cfg(test)]
mod tests {
    use super::*;

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
