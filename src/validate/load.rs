//! The one way every caller (the CLI, the inspector, the tests) reads a Program file: parse it
//! and validate it, turning a parse error into a `V000` diagnostic so that a broken file and
//! an invalid Program are reported in the same shape.
//!
//! A vyre wire or text file (see [`crate::ir::foreign`]) goes through the converter that the
//! `vyre` feature installs with [`install_importer`]: its findings (constructs without an
//! equivalent, semantic notes) come first, then the validator's on the converted Program.
//! Without that converter, such a file is a `V000` error saying how to enable the feature.

use std::path::Path;
use std::sync::OnceLock;

use crate::finding::{Diagnostic, Severity};
use crate::ir::foreign::ForeignFormat;
use crate::ir::{load_source, parse_program, NodeId, ParseError, Program, Source};

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

/// Converts a foreign Program file into a Program plus the conversion's own findings. Unlike
/// [`crate::ir::foreign::Importer`] it returns a Program even when some constructs had no
/// equivalent (they are error diagnostics then), so that the inspector can show the rest.
pub type CheckedImporter =
    fn(&Path, &[u8], ForeignFormat) -> Result<(Program, Vec<Diagnostic>), ParseError>;

static CHECKED_IMPORTER: OnceLock<CheckedImporter> = OnceLock::new();

/// Installs the converter [`load`] uses for foreign files (the `vyre` module's, at start-up).
/// The first installation wins.
pub fn install_importer(importer: CheckedImporter) {
    let _ = CHECKED_IMPORTER.set(importer);
}

/// Reads, parses and validates the Program file at `path`. A parse error becomes one `V000`
/// error diagnostic whose node is the JSON path of the offending value (none for the file as a
/// whole) and whose message starts with `file:line:col`, or `file` for an error about the whole file.
pub fn load(path: &Path) -> Loaded {
    let parsed = load_source(path).and_then(|source| match source {
        Source::Json(text) => {
            parse_program(&text, &path.display().to_string()).map(|p| (p, Vec::new()))
        }
        Source::Foreign(bytes, format) => match CHECKED_IMPORTER.get() {
            Some(f) => f(path, &bytes, format),
            None => crate::ir::foreign::import(path, &bytes, format).map(|p| (p, Vec::new())),
        },
    });
    match parsed {
        Ok((program, mut diagnostics)) => {
            diagnostics.extend(super::validate(&program));
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
