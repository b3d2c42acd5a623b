//! vyrescope's failures as vyre's `BackendError`, each message carrying a `Fix:`.

use vyre_driver::backend::BackendError;

use super::device::{DeviceFailure, FailKind};
use crate::vyre::catalog::Refusal;

/// The fix for a Program the conversion or the validator refuses.
const REFUSED_FIX: &str = "docs/vyre.md (\"Refused, and why\") explains each code; express the construct another way in the vyre Program, or run it on a vyre backend that supports it";

/// A Program vyrescope cannot run (import `VY...` or validator `V...` codes).
pub fn refused(backend: &str, r: &Refusal) -> BackendError {
    BackendError::InvalidProgram {
        fix: format!(
            "{backend} cannot run this Program [{}]: {}. Fix: {REFUSED_FIX}.",
            r.codes.join(","),
            r.message
        ),
    }
}

/// Inputs or resources that do not fit the Program.
pub fn bad_inputs(backend: &str, message: impl std::fmt::Display) -> BackendError {
    BackendError::InvalidProgram {
        fix: format!(
            "{backend}: {message}. Fix: pass one byte vector per input buffer (the non-workgroup buffers that are not backend-allocated outputs, in declaration order), each at least its declared count of elements."
        ),
    }
}

/// A caller mistake with its own fix.
pub fn invalid(message: impl std::fmt::Display, fix: impl std::fmt::Display) -> BackendError {
    BackendError::InvalidProgram {
        fix: format!("{message}. Fix: {fix}."),
    }
}

/// A device failure, by kind.
pub fn device(backend: &str, device: &str, generation: u64, f: DeviceFailure) -> BackendError {
    let text = format!("{}. Fix: {}.", f.message.trim_end_matches('.'), f.fix);
    match f.kind {
        FailKind::Invalid | FailKind::Stale => BackendError::InvalidProgram {
            fix: format!("{backend}: {text}"),
        },
        FailKind::Compile => BackendError::KernelCompileFailed {
            backend: backend.to_string(),
            compiler_message: text,
        },
        FailKind::Dispatch => BackendError::DispatchFailed {
            code: None,
            message: format!("{backend}: {text}"),
        },
        FailKind::Lost => BackendError::DeviceLost {
            backend: backend.to_string(),
            device: device.to_string(),
            generation,
            message: text,
        },
    }
}

/// A feature this backend does not have.
pub fn unsupported(backend: &str, name: &str) -> BackendError {
    BackendError::UnsupportedFeature {
        name: name.to_string(),
        backend: backend.to_string(),
    }
}

/// A poisoned lock (a panic while the backend's state was held).
pub fn poisoned(backend: &str) -> BackendError {
    BackendError::PoisonedLock {
        lock_error: format!("{backend}: a panic happened while the backend state was locked"),
    }
}
