//! Validator: every static check of a Program; never fails, returns all diagnostics.
//!
//! CONTRACT: `validate(&Program) -> Vec<Diagnostic>` (errors and warnings, in program order).

use crate::diagnostics::Diagnostic;
use crate::ir::Program;

/// Checks `program`; an empty result (or warnings only) means it is valid.
pub fn validate(program: &Program) -> Vec<Diagnostic> {
    let _ = program;
    Vec::new()
}
