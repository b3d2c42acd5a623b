//! The one way every caller (the CLI, the inspector, the tests) reads a Program file: parse it
//! and validate it, turning a parse error into a `V000` diagnostic so that a broken file and
//! an invalid Program are reported in the same shape.

use std::path::Path;

use crate::diagnostic::{Diagnostic, Severity};
use crate::ir::{load_program, NodeId, Program};

/// A Program file after parsing and validation.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The parsed Program; `None` when the file did not parse.
    pub program: Option<Program>,
    /// Every finding: one `V000` error for a parse failure, else the validator's diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// True when the Program parsed and has no validation error.
    pub fn is_valid(&self) -> bool {
        self.program.is_some() && super::is_valid(&self.diagnostics)
    }

    /// The first error, for callers that report one line.
    pub fn first_error(&self) -> Option<&Diagnostic> {
        self.diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
    }
}

/// Reads, parses and validates the Program file at `path`. A parse error becomes one `V000`
/// error diagnostic whose node is the JSON path of the offending value (none for the file as a
/// whole) and whose message starts with `file:line:col`, or `file` for an error about the whole file.
pub fn load(path: &Path) -> Loaded {
    match load_program(path) {
        Ok(program) => {
            let diagnostics = super::validate(&program);
            Loaded {
                program: Some(program),
                diagnostics,
            }
        }
        Err(e) => Loaded {
            program: None,
            diagnostics: vec![Diagnostic {
                severity: Severity::Error,
                code: "V000",
                node: (!e.path.is_empty()).then(|| NodeId::from(&e.path)),
                message: format!("{}: {}", e.place(), e.message),
                fix: e.fix,
            }],
        },
    }
}
