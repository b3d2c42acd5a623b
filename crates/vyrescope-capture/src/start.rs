//! Starting a capture: options, the folder and its manifest.

use std::path::{Path, PathBuf};

use vyre_driver::backend::VyreBackend;

use crate::backend::CapturingBackend;
use crate::format::{
    parse_limit, BackendInfo, CaptureState, Manifest, BLOBS_DIR, CAPTURE_ENV, DEFAULT_LIMIT_BYTES,
    FORMAT_NAME, FORMAT_VERSION, LIMIT_ENV, PROGRAMS_DIR, RECORDS_DIR,
};
use crate::recorder::Recorder;
use crate::writer::{write_manifest, Writer};

/// How a capture records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureOptions {
    /// Programs plus buffer contents to store, in bytes; past it records carry sizes only.
    pub limit_bytes: u64,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            limit_bytes: DEFAULT_LIMIT_BYTES,
        }
    }
}

impl CaptureOptions {
    /// The defaults, with the limit from `VYRESCOPE_CAPTURE_LIMIT` when it is set (a bad value
    /// is reported on stderr and the default kept).
    pub fn from_env() -> Self {
        let mut o = CaptureOptions::default();
        if let Ok(text) = std::env::var(LIMIT_ENV) {
            match parse_limit(&text) {
                Some(n) => o.limit_bytes = n,
                None => eprintln!(
                    "vyrescope-capture: {LIMIT_ENV}={text:?} is not a size; using {DEFAULT_LIMIT_BYTES} bytes.\n  Fix: give bytes, optionally with k, m or g (e.g. 512m)"
                ),
            }
        }
        o
    }
}

/// Why a capture could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The folder holds files already.
    #[error("{dir} is not empty; a capture needs a folder of its own.\n  Fix: choose a new or empty folder, or delete the old capture in {dir}")]
    NotEmpty {
        /// The folder.
        dir: String,
    },
    /// Creating the folder or writing the manifest failed.
    #[error("cannot create the capture in {path}: {source}.\n  Fix: choose a folder you can write to (and check free disk space)")]
    Io {
        /// The file or folder.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
}

/// Wraps `backend` in a recording backend writing to `dir`, with the limit from
/// `VYRESCOPE_CAPTURE_LIMIT`. When the capture cannot start (see [`try_capture`]) the reason
/// is printed once on stderr and the returned backend only forwards.
pub fn capture<B: VyreBackend + 'static>(backend: B, dir: impl AsRef<Path>) -> CapturingBackend {
    capture_boxed(Box::new(backend), dir, CaptureOptions::from_env())
}

/// [`capture`] for a boxed backend, with explicit options.
pub fn capture_boxed(
    backend: Box<dyn VyreBackend>,
    dir: impl AsRef<Path>,
    options: CaptureOptions,
) -> CapturingBackend {
    let recorder = start(backend.as_ref(), dir.as_ref(), options).map_err(|e| {
        eprintln!("vyrescope-capture: {e}\n  (capture off; the application runs as before)");
        e.to_string()
    });
    CapturingBackend::new(backend, recorder)
}

/// As [`capture_boxed`], but a capture that cannot start is an error instead of a message.
pub fn try_capture(
    backend: Box<dyn VyreBackend>,
    dir: impl AsRef<Path>,
    options: CaptureOptions,
) -> Result<CapturingBackend, StartError> {
    let recorder = start(backend.as_ref(), dir.as_ref(), options)?;
    Ok(CapturingBackend::new(backend, Ok(recorder)))
}

/// `backend` wrapped in a capture to the folder named by `VYRESCOPE_CAPTURE`, or `backend`
/// itself when the variable is unset or empty (then nothing records and nothing is paid).
pub fn capture_from_env(backend: Box<dyn VyreBackend>) -> Box<dyn VyreBackend> {
    match std::env::var_os(CAPTURE_ENV) {
        Some(dir) if !dir.is_empty() => Box::new(capture_boxed(
            backend,
            PathBuf::from(dir),
            CaptureOptions::from_env(),
        )),
        _ => backend,
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StartError + '_ {
    move |source| StartError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Creates the folder layout and the manifest, then the writer thread.
fn start(
    backend: &dyn VyreBackend,
    dir: &Path,
    options: CaptureOptions,
) -> Result<Recorder, StartError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    if std::fs::read_dir(dir).map_err(io(dir))?.next().is_some() {
        return Err(StartError::NotEmpty {
            dir: dir.display().to_string(),
        });
    }
    for sub in [RECORDS_DIR, PROGRAMS_DIR, BLOBS_DIR] {
        let p = dir.join(sub);
        std::fs::create_dir(&p).map_err(io(&p))?;
    }
    let manifest = Manifest {
        format: FORMAT_NAME.to_string(),
        version: FORMAT_VERSION,
        writer: format!("{} {}", env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")),
        backend: BackendInfo {
            id: backend.id().to_string(),
            version: backend.version().to_string(),
        },
        limit_bytes: options.limit_bytes,
        started_unix_ms: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0),
        state: CaptureState::Full,
    };
    let manifest_path = dir.join(crate::format::MANIFEST_FILE);
    write_manifest(dir, &manifest).map_err(io(&manifest_path))?;
    let writer = Writer::start(dir.to_path_buf(), manifest).map_err(io(dir))?;
    Ok(Recorder::new(writer, dir.to_path_buf()))
}
