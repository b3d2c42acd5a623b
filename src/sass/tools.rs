//! Finding NVIDIA's `nvdisasm`, reading tool versions (part of the cache key), and the
//! errors of the SASS pipeline.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use crate::emit::ptxas::{find_ptxas, run_limited, PtxasError};

/// The one line shown wherever nvdisasm is missing (CLI and inspector), above its
/// [`NVDISASM_FIX`]: the text of [`SassError::NvdisasmNotFound`].
pub const NVDISASM_MISSING: &str =
    "nvdisasm not found (VYRESCOPE_NVDISASM unset, none next to ptxas, none on PATH)";

/// The fix for [`NVDISASM_MISSING`].
pub const NVDISASM_FIX: &str =
    "run scripts/install-nvdisasm.sh and export VYRESCOPE_NVDISASM=<the path it prints>";

/// Longest one nvdisasm run may take; it disassembles our kernels in milliseconds.
pub const NVDISASM_TIMEOUT: Duration = Duration::from_secs(60);

/// Why no SASS listing could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SassError {
    /// ptxas is missing, failed or rejected the PTX.
    Ptxas(#[from] PtxasError),
    /// No nvdisasm binary.
    NvdisasmNotFound,
    /// nvdisasm could not run or failed on the cubin.
    Nvdisasm(String),
    /// The disassembly had no instructions of the kernel.
    Parse(String),
}

/// The nvdisasm binary: `VYRESCOPE_NVDISASM`, else next to the ptxas in use (the pip wheels
/// put both in the same `bin` folder), else `nvdisasm` on `PATH`.
pub fn find_nvdisasm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("VYRESCOPE_NVDISASM").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    if let Some(beside) = find_ptxas().and_then(|p| p.parent().map(|d| d.join("nvdisasm"))) {
        if beside.is_file() {
            return Some(beside);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvdisasm"))
        .find(|p| p.is_file())
}

/// Versions seen, per tool path, with the modification time they were read at.
type Versions = HashMap<PathBuf, (Option<SystemTime>, String)>;

/// The `release` line of `tool --version` (`Cuda compilation tools, release 13.0,
/// V13.0.88` gives `13.0.88`), remembered per (path, modification time) so a listing's
/// cache key costs one process per tool and session, not one per lookup.
pub fn tool_version(tool: &Path) -> std::io::Result<String> {
    static SEEN: OnceLock<Mutex<Versions>> = OnceLock::new();
    let mtime = std::fs::metadata(tool).and_then(|m| m.modified()).ok();
    let seen = SEEN.get_or_init(Default::default);
    if let Some((t, v)) = seen.lock().ok().and_then(|m| m.get(tool).cloned()) {
        if t == mtime {
            return Ok(v);
        }
    }
    let dir = crate::emit::ptxas::ToolDir::new("vyrescope-version-")?;
    let name = tool
        .file_name()
        .map_or("tool".into(), |n| n.to_string_lossy().into_owned());
    let mut cmd = Command::new(tool);
    cmd.arg("--version");
    let res = run_limited(
        &mut cmd,
        &dir.path().join("version.log"),
        Duration::from_secs(30),
        &name,
    );
    drop(dir);
    let run = res.map_err(std::io::Error::other)?;
    let log = run.log;
    let v = parse_version(&log).filter(|_| run.success).ok_or_else(|| {
        std::io::Error::other(format!(
            "`{} --version` printed no release line: {}",
            tool.display(),
            log.lines().take(3).collect::<Vec<_>>().join(" | ")
        ))
    })?;
    if let Ok(mut m) = seen.lock() {
        m.insert(tool.to_path_buf(), (mtime, v.clone()));
    }
    Ok(v)
}

/// `13.0.88` from a `--version` text with a `..., release 13.0, V13.0.88` line.
pub fn parse_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains(", release "))?;
    let v = line.rsplit(", V").next()?.trim();
    (!v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')).then(|| v.to_string())
}

impl crate::util::HasFix for SassError {
    fn message(&self) -> String {
        match self {
            Self::Ptxas(e) => crate::util::HasFix::message(e),
            Self::NvdisasmNotFound => NVDISASM_MISSING.to_string(),
            Self::Nvdisasm(a0) => format!("nvdisasm failed: {a0}"),
            Self::Parse(a0) => format!("could not read the nvdisasm listing: {a0}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::Ptxas(e) => crate::util::HasFix::fix(e),
            Self::NvdisasmNotFound => NVDISASM_FIX.to_string(),
            Self::Nvdisasm(_) => "check that VYRESCOPE_NVDISASM points at nvdisasm 12.8 or newer (scripts/install-nvdisasm.sh installs a tested one)".to_string(),
            Self::Parse(_) => "use nvdisasm 13.x (scripts/install-nvdisasm.sh); its text format is parsed".to_string(),
        }
    }

    fn problem(&self) -> crate::util::Problem {
        match self {
            Self::Ptxas(e) => crate::util::HasFix::problem(e),
            _ => crate::util::Problem::located(self.message(), self.fix()),
        }
    }
}

crate::util::problem::into_problem!(SassError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_release_line() {
        let t = "nvdisasm: NVIDIA (R) CUDA disassembler\nCuda compilation tools, release 13.2, V13.2.78\nBuild cuda_13.2.r13.2/compiler.37668154_0";
        assert_eq!(parse_version(t).as_deref(), Some("13.2.78"));
        assert_eq!(parse_version("nothing here"), None);
        assert_eq!(parse_version("x, release 1, Vbogus"), None);
    }
}
