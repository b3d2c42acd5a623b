//! Reference interpreter: the oracle every GPU result is checked against.
//!
//! CONTRACT (implemented by the interpreter work): `run` executes an (unelaborated or
//! elaborated) valid Program over `shape`, reading and writing `buffers` in place.

use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::Program;

/// Counters from one interpreted dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct InterpStats {
    /// IR nodes (statements and expressions) evaluated.
    pub node_evals: u64,
    /// Invocations run.
    pub invocations: u64,
}

/// Why the interpreter stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}\n  Fix: {fix}")]
pub struct InterpError {
    /// What happened (names the node where relevant).
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// Executes `program` over `shape` on the CPU.
pub fn run(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
) -> Result<InterpStats, InterpError> {
    let _ = (program, shape, buffers);
    Err(InterpError {
        message: "the interpreter is not implemented yet".into(),
        fix: "wait for the interpreter work".into(),
    })
}
