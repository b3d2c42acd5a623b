//! Host buffer contents for a dispatch, from a Program's `run` section (fills, data, files).
//!
//! CONTRACT (implemented by the interpreter work): `prepare` turns a Program (+ overrides) into
//! a launch shape and host buffers in binding order, as raw little-endian bytes.

use std::path::Path;

use crate::ir::{Access, ElemType, Program};

/// Workgroup size and grid of one dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct LaunchShape {
    /// Threads per workgroup, x/y/z.
    pub workgroup_size: [u32; 3],
    /// Workgroups, x/y/z.
    pub grid: [u32; 3],
}

/// One host buffer's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBuffer {
    /// Buffer name.
    pub name: String,
    /// Element type.
    pub elem: ElemType,
    /// Access mode.
    pub access: Access,
    /// Binding slot.
    pub binding: u32,
    /// Raw little-endian elements.
    pub data: Vec<u8>,
}

impl HostBuffer {
    /// Element count.
    pub fn len(&self) -> usize {
        self.data.len() / self.elem.size_bytes()
    }

    /// True when the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// A dispatch ready to run on any backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedRun {
    /// Launch shape.
    pub shape: LaunchShape,
    /// Host buffers in binding order.
    pub buffers: Vec<HostBuffer>,
}

/// Why inputs could not be prepared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}\n  Fix: {fix}")]
pub struct InputError {
    /// What is wrong (names the buffer / file).
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// Builds the launch shape and host buffers for `program`; `base_dir` resolves `file` inputs.
pub fn prepare(
    program: &Program,
    base_dir: &Path,
    workgroup: Option<[u32; 3]>,
    grid: Option<[u32; 3]>,
) -> Result<PreparedRun, InputError> {
    let _ = (program, base_dir, workgroup, grid);
    Err(InputError {
        message: "inputs are not implemented yet".into(),
        fix: "wait for the interpreter work".into(),
    })
}
