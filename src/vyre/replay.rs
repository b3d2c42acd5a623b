//! The vyre side of `vyrescope replay` (issue 46): backends a captured dispatch can be
//! replayed on, and what a captured Program's outputs are.
//!
//! Replay dispatches through vyre's own backend trait (`vyre_driver::VyreBackend`), so any
//! backend replays a capture: the harness (`harness::replay`) is handed one. `replay
//! --backend reference` and `--backend cuda` acquire `vyrescope-reference` and
//! `vyrescope-cuda` from vyre's registry (`super::backend`), with [`VyreReference`] (vyre's
//! own reference interpreter, `vyre_reference`) as the fallback for a Program our import
//! refuses; `--backend vyre-reference` replays on it alone.

pub mod dispatches;
pub mod export;
mod vyre_reference;

pub use vyre_reference::VyreReference;

use vyre_foundation::ir::BufferAccess;
pub use vyre_foundation::ir::Program as VyreProgram;

use crate::ir::ElemType;
use crate::util::Problem;

/// One output of a vyre dispatch, in vyre's output order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSlot {
    /// The buffer's name.
    pub name: String,
    /// Its element type, when ours has it (otherwise compared byte by byte).
    pub elem: Option<ElemType>,
}

/// The outputs a dispatch of `vp` returns, in order: the backend-allocated outputs and the
/// `ReadWrite` buffers in declaration order (vyre-driver's and vyre-reference's order).
pub fn output_slots(vp: &VyreProgram) -> Vec<OutputSlot> {
    vp.buffers()
        .iter()
        .filter(|d| {
            d.access() != BufferAccess::Workgroup
                && (d.is_backend_allocated_output() || d.access() == BufferAccess::ReadWrite)
        })
        .map(|d| OutputSlot {
            name: d.name().to_string(),
            elem: super::import::elem_type(&d.element()),
        })
        .collect()
}

/// Why a captured Program's wire bytes do not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// vyre's decoder returned an error (its message says which check failed).
    #[error("vyre's decoder refused the Program: {0}")]
    Refused(Box<vyre_foundation::IrError>),
    /// vyre's decoder panicked on the bytes.
    #[error("vyre's decoder panicked")]
    Panicked,
}

/// vyre's Program decoded from wire bytes (a panic in vyre's decoder is an error).
pub fn decode(wire: &[u8]) -> Result<VyreProgram, DecodeError> {
    match std::panic::catch_unwind(|| VyreProgram::from_wire(wire)) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(DecodeError::Refused(Box::new(e))),
        Err(_) => Err(DecodeError::Panicked),
    }
}

/// A short name for a captured Program: its op id, else the first buffer names.
pub fn program_label(vp: &VyreProgram) -> String {
    if let Some(id) = vp.entry_op_id() {
        return id.to_string();
    }
    let names: Vec<&str> = vp.buffers().iter().take(3).map(|d| d.name()).collect();
    format!("({})", names.join(", "))
}

/// Why our import refuses `vp` (its codes and first reason), or `None` when it takes it.
pub fn import_refusal(vp: &VyreProgram) -> Option<String> {
    super::catalog::import_for_reference(vp, "replay")
        .err()
        .map(|r| format!("{}: {}", r.codes.join(","), r.message))
}

/// A capture reader's error as a problem: its message and its `Fix:` apart.
pub fn read_problem(e: &vyrescope_capture::ReadError) -> Problem {
    let text = e.to_string();
    match text.split_once("\n  Fix: ") {
        Some((m, f)) => Problem::new(m, f),
        None => Problem::new(text, "record the application again"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::Rng;

    #[test]
    fn decode_takes_vyre_wire_and_refuses_other_bytes_with_vyre_reason() {
        let mut rng = Rng::new(0xdec0);
        for _ in 0..16 {
            let n = 1 + (rng.next_u64() % 100_000) as u32;
            let vp = crate::vyre::backend::samples::vadd_f32(n);
            let wire = vp.to_wire().unwrap();
            let back = decode(&wire).unwrap();
            assert_eq!(back.buffers()[2].count(), n);
            // Bytes without vyre's header: the decoder's own refusal, not a panic.
            let len = 1 + (rng.next_u64() % 256) as usize;
            let mut junk: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            junk[0] = b'X';
            let e = decode(&junk).unwrap_err();
            assert!(matches!(e, DecodeError::Refused(_)), "{e:?}");
            assert!(e
                .to_string()
                .starts_with("vyre's decoder refused the Program: "));
        }
    }
}
