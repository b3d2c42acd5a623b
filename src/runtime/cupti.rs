//! Finding libcupti for the `pc` profile source, by path, and checking its version, without
//! ever panicking when it is missing (cudarc's own loader panics unless asked first, and
//! with our `cuda-12080` feature it never tries `libcupti.so.13` nor a path).
//!
//! Where it is looked for, first found wins:
//! 1. `VYRESCOPE_CUPTI`: the library file itself;
//! 2. the CUDA toolkit: `$CUDA_HOME`, `$CUDA_PATH`, `/usr/local/cuda` — its
//!    `targets/x86_64-linux/lib`, `lib64` and `extras/CUPTI/lib64` folders;
//! 3. the pip wheels beside ptxas (`nvidia/cu13/lib`, `nvidia/cuda_cupti/lib`).
//!
//! The library is loaded by that path and asked `cuptiGetVersion`; CUPTI's structures change
//! between major versions, so a library whose API version is not one the PC sampling code
//! was written against is refused, with the version in the message.
//!
//! Collecting PC samples (`cuptiPCSampling*` around a kernel launch) is not built yet: the
//! profile's `pc` source reports that and falls back to the instrumented build. The mapping
//! of samples to statements ([`crate::profile::pc`]) is built and tested.

use std::path::{Path, PathBuf};

/// Environment variable naming the libcupti file to use.
pub const CUPTI_ENV: &str = "VYRESCOPE_CUPTI";

/// What was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CuptiLibrary {
    /// The library file.
    pub path: PathBuf,
    /// `cuptiGetVersion`'s answer (CUPTI's API version number).
    pub api_version: u32,
}

/// The candidate files, in search order (existing files only).
pub fn candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = std::env::var_os(CUPTI_ENV) {
        out.push(PathBuf::from(p));
    }
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    for root in roots {
        for sub in ["targets/x86_64-linux/lib", "lib64", "extras/CUPTI/lib64"] {
            out.extend(libraries_in(&root.join(sub)));
        }
    }
    if let Some(ptxas) = crate::emit::ptxas::find_ptxas() {
        // site-packages/nvidia/cu13/bin/ptxas -> site-packages/nvidia/{cu13,cuda_cupti}/lib
        if let Some(nvidia) = ptxas.parent().and_then(Path::parent).and_then(Path::parent) {
            for sub in ["cu13/lib", "cuda_cupti/lib"] {
                out.extend(libraries_in(&nvidia.join(sub)));
            }
        }
    }
    out.retain(|p| p.is_file());
    out
}

/// `libcupti.so*` files in `dir`, the plain name first, then by name.
fn libraries_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libcupti.so"))
        })
        .collect();
    v.sort_by_key(|p| (p.as_os_str().len(), p.clone()));
    v
}

/// Why no usable libcupti is at hand.
#[derive(Debug, thiserror::Error)]
pub enum CuptiError {
    /// The file does not load as a library, or lacks `cuptiGetVersion`.
    #[error("{0}")]
    Load(libloading::Error),
    /// `cuptiGetVersion` answered an error code.
    #[error("cuptiGetVersion returned error {0}")]
    Version(i32),
    /// No candidate file exists.
    #[error("no libcupti found (set {CUPTI_ENV} to the file, e.g. the CUDA toolkit's targets/x86_64-linux/lib/libcupti.so.13)")]
    NotFound,
    /// Every candidate failed; each path with its reason.
    #[error("no usable libcupti: {}", .0.iter().map(|(p, e)| format!("{}: {e}", p.display())).collect::<Vec<_>>().join("; "))]
    Unusable(Vec<(PathBuf, CuptiError)>),
}

/// Loads `path` and asks it `cuptiGetVersion` (the call itself lives behind the unsafe
/// boundary, `runtime::driver`).
pub fn api_version(path: &Path) -> Result<u32, CuptiError> {
    super::driver::cupti::api_version(path)
}

/// The first candidate that loads and answers its version.
pub fn find() -> Result<CuptiLibrary, CuptiError> {
    let mut tried = Vec::new();
    for path in candidates() {
        match api_version(&path) {
            Ok(api_version) => return Ok(CuptiLibrary { path, api_version }),
            Err(e) => tried.push((path, e)),
        }
    }
    Err(if tried.is_empty() {
        CuptiError::NotFound
    } else {
        CuptiError::Unusable(tried)
    })
}

/// Why the `pc` source cannot run here, for the note printed before falling back.
pub fn pc_sampling_unavailable() -> String {
    let found = match find() {
        Ok(l) => format!(
            "libcupti {} (CUPTI API version {}) was found",
            l.path.display(),
            l.api_version
        ),
        Err(e) => e.to_string(),
    };
    format!("PC sampling (`--source pc`) is not collected by this build yet ({found}); docs/profile.md says what is missing")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_file_that_is_no_library_is_refused_without_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("libcupti.so.13");
        std::fs::write(&f, b"not an ELF file").expect("write");
        assert!(api_version(&f).is_err());
        assert_eq!(libraries_in(dir.path()), vec![f]);
        assert!(api_version(&dir.path().join("missing.so")).is_err());
    }
}
