//! vyre's file formats: the binary wire format (`VYRE` header) and the `vyre_ir v0.1` hex
//! text envelope, read and written through vyre-foundation's own codec (`Program::from_wire`,
//! `from_text`, `to_wire`, `to_text`), with vyre's errors turned into ours (a message naming
//! the file and a `Fix:`). A panic inside the decoder on hostile bytes is caught and reported
//! like any other decode error.
//!
//! [`install`] hooks the import into the one Program loader ([`crate::ir::load_program`] and
//! [`crate::validate::load`]), so every command and the inspector open vyre files directly.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use vyre_foundation::ir::Program as VyreProgram;

use crate::finding::{Diagnostic, Severity};
use crate::ir::foreign::{sniff, ForeignFormat};
use crate::ir::{ParseError, Program};

use super::import::import_program;

/// Why vyre's codec did not decode a file (its message, which may carry vyre's `Fix:`).
#[derive(Debug, thiserror::Error)]
enum DecodeFailure {
    /// The wire decoder refused the bytes.
    #[error(transparent)]
    Wire(Box<vyre_foundation::IrError>),
    /// The text envelope's parser refused the text.
    #[error(transparent)]
    Text(Box<vyre_foundation::serial::text::TextParseError>),
    /// The text envelope is not UTF-8 from this byte on.
    #[error("the text envelope is not UTF-8 (byte {0})")]
    NotUtf8(usize),
    /// The decoder panicked.
    #[error("vyre's decoder panicked on these bytes")]
    Panicked,
}

/// Decodes the bytes of a vyre file in `format`; `path` names it in errors.
pub fn decode(path: &Path, bytes: &[u8], format: ForeignFormat) -> Result<VyreProgram, ParseError> {
    let decoded = catch_unwind(AssertUnwindSafe(|| match format {
        ForeignFormat::VyreWire => {
            VyreProgram::from_wire(bytes).map_err(|e| DecodeFailure::Wire(Box::new(e)))
        }
        ForeignFormat::VyreText => match std::str::from_utf8(bytes) {
            Ok(text) => VyreProgram::from_text(text).map_err(|e| DecodeFailure::Text(Box::new(e))),
            Err(e) => Err(DecodeFailure::NotUtf8(e.valid_up_to())),
        },
    }));
    let failure = match decoded {
        Ok(Ok(program)) => return Ok(program),
        Ok(Err(failure)) => failure,
        Err(_) => DecodeFailure::Panicked,
    };
    Err(decode_error(path, format, &failure.to_string()))
}

/// A vyre decoder failure as our error: vyre's message (its checksum failure said in words)
/// and vyre's first `Fix:` hint, plus how to get a good file.
fn decode_error(path: &Path, format: ForeignFormat, failure: &str) -> ParseError {
    let (message, vyre_fix) = match failure.split_once("Fix:") {
        Some((m, f)) => (m, f.split("Fix:").next().unwrap_or("")),
        None => (failure, ""),
    };
    let message = message.trim().trim_end_matches('.');
    let message = if message.contains("IntegrityMismatch") {
        "the blake3 checksum in the header does not match the body (IntegrityMismatch): the \
         bytes are truncated or damaged"
    } else if message.is_empty() {
        "cannot be decoded"
    } else {
        message
    };
    let vyre_fix = vyre_fix.trim().trim_end_matches('.');
    let ours = "write the file again from vyre (`Program::to_wire` or `Program::to_text`)";
    let fix = if vyre_fix.is_empty() {
        format!("the file is damaged or not a vyre Program: {ours}")
    } else {
        format!("{vyre_fix}; or {ours}")
    };
    ParseError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        path: String::new(),
        message: format!("{} that vyre cannot decode: {message}", format.describe()),
        fix,
    }
}

/// vyre failing to encode a Program it accepted (a bug to report): vyre's reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct EncodeError(pub String);

impl crate::util::HasFix for EncodeError {
    fn message(&self) -> String {
        format!("vyre could not encode the exported Program: {}", self.0)
    }

    fn fix(&self) -> String {
        "report this with the Program file".into()
    }
}

crate::util::problem::into_problem!(EncodeError);

/// vyre wire bytes of `program` (`text`: the `vyre_ir v0.1` envelope instead).
pub fn encode(program: &VyreProgram, text: bool) -> Result<Vec<u8>, EncodeError> {
    let failed = |why: &dyn std::fmt::Display| EncodeError(why.to_string());
    let encoded = catch_unwind(AssertUnwindSafe(|| {
        if text {
            program
                .to_text()
                .map(String::into_bytes)
                .map_err(|e| failed(&e))
        } else {
            program.to_wire().map_err(|e| failed(&e))
        }
    }));
    encoded.unwrap_or_else(|_| Err(failed(&"vyre's encoder panicked")))
}

/// Reads a vyre file (wire or text, told apart by its first bytes) into a vyre Program.
pub fn read(path: &Path) -> Result<VyreProgram, ParseError> {
    match crate::ir::load_source(path)? {
        crate::ir::Source::Foreign(bytes, format) => decode(path, &bytes, format),
        crate::ir::Source::Json(_) => Err(ParseError {
            file: path.display().to_string(),
            line: 0,
            column: 0,
            path: String::new(),
            message: "not a vyre file: it has neither the `VYRE` wire header nor the \
                      `vyre_ir v0.1` text header"
                .into(),
            fix: "pass a file written by vyre's `Program::to_wire` or `Program::to_text`".into(),
        }),
    }
}

/// True when `path` holds a vyre file (by its first bytes or a `.vyre` name).
pub fn is_vyre_file(path: &Path, bytes: &[u8]) -> bool {
    sniff(path, bytes).is_some()
}

/// The kernel name for a Program imported from `path`: vyre's `entry_op_id` when it has one,
/// else the file name without its `.vyre`/`.txt` extensions; made an identifier.
pub fn kernel_name(path: &Path, program: &VyreProgram) -> String {
    if let Some(id) = program.entry_op_id.as_deref().filter(|s| !s.is_empty()) {
        return super::import::identifier(id);
    }
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut stem = file.as_str();
    for ext in [".txt", ".vyre", ".vir"] {
        stem = stem.strip_suffix(ext).unwrap_or(stem);
    }
    if stem.is_empty() {
        "vyre_main".to_string()
    } else {
        super::import::identifier(stem)
    }
}

/// Decodes and converts a vyre file: the Program (constructs without an equivalent left out)
/// and every finding of the conversion. The loader hook of [`crate::validate::load`].
pub fn import_file(
    path: &Path,
    bytes: &[u8],
    format: ForeignFormat,
) -> Result<(Program, Vec<Diagnostic>), ParseError> {
    let vyre = decode(path, bytes, format)?;
    let imported = import_program(&vyre, &kernel_name(path, &vyre));
    Ok((imported.program, imported.diagnostics))
}

/// [`import_file`] for callers that need a complete Program: a conversion with an error
/// finding fails, naming the first and how many there are. The hook of
/// [`crate::ir::load_program`].
pub fn import_file_strict(
    path: &Path,
    bytes: &[u8],
    format: ForeignFormat,
) -> Result<Program, ParseError> {
    let (program, diagnostics) = import_file(path, bytes, format)?;
    let errors: Vec<&Diagnostic> = diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    let Some(first) = errors.first() else {
        return Ok(program);
    };
    Err(ParseError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        path: String::new(),
        message: format!(
            "{} cannot be converted: {} construct(s) have no vyrescope equivalent; first: [{}] {}",
            format.describe(),
            errors.len(),
            first.code,
            first.message
        ),
        fix: format!(
            "{} (`vyrescope check {}` lists every one)",
            first.fix,
            path.display()
        ),
    })
}

/// Makes every Program loader accept vyre files: installs the conversion in
/// [`crate::ir::foreign`] and [`crate::validate::load`]. Called once at start-up by the
/// command line (and by tests); calling it again changes nothing.
pub fn install() {
    crate::ir::foreign::install_importer(import_file_strict);
    crate::ir::foreign::install_graph_importer(super::import::graph::import_graph_file);
    crate::validate::load::install_importer(import_file);
}
