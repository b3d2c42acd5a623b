//! `vyrescope import FILE.vyre [-o OUT.json] [--json]` (feature `vyre`)
//!
//! Converts a vyre Program file (wire bytes or the `vyre_ir v0.1` text envelope) into a
//! format-1 Program JSON file (a vyre ProgramGraph, `VGR0`, into a pipeline:
//! [`super::import_graph`]) through [`crate::validate::load`], which runs the conversion the
//! `vyre` feature installs (`docs/vyre.md`). A build without the feature reports how to get it.

use std::path::PathBuf;

use serde::Serialize;

use crate::finding::{Diagnostic, Severity};
use crate::util::Problem;

/// Convert a vyre Program file (wire or `vyre_ir` text) into Program JSON.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope import fixtures/vyre/saxpy_f32.vyre -o saxpy.json\n  vyrescope import fixtures/vyre/saxpy_f32.vyre.txt --json\n  vyrescope import fixtures/vyre/graphs/chain.vgr -o chain\n\nNeeds a build with `--features vyre`. Every other command also opens vyre files directly;\nsee docs/vyre.md for what maps to what."
)]
pub struct Args {
    /// vyre wire file (`VYRE` header), text file (`vyre_ir v0.1`) or ProgramGraph (`VGR0`).
    pub file: PathBuf,
    /// Write the Program JSON here (atomically) instead of to stdout; for a graph, a folder
    /// that gets `<name>.pipeline.json` and `programs/<step>.json`.
    #[arg(short = 'o', long, value_name = "OUT.json|DIR")]
    pub out: Option<PathBuf>,
    /// Print one line `{"file", "out", "valid", "diagnostics", "program"}` (`program` is the
    /// converted Program, or null with -o).
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    file: String,
    out: Option<String>,
    valid: bool,
    diagnostics: &'a [Diagnostic],
}

/// Runs `import`: exit 0 when the Program converted completely and validates, 1 otherwise
/// (the JSON is still written when only the validator objects, so that it can be edited).
pub fn run(a: &Args) -> super::Outcome {
    // A ProgramGraph opens as a pipeline: its own conversion and output folder.
    if let Ok(bytes) =
        crate::util::read_limited(&a.file, crate::ir::parse::MAX_FILE_BYTES, "vyre file")
    {
        if super::import_graph::is_graph(&a.file, &bytes) {
            return super::import_graph::run(a, &bytes);
        }
    }
    match crate::ir::load_source(&a.file) {
        // A build without the converter: say that, not that a valid file is invalid.
        Ok(crate::ir::Source::Foreign(_, format)) if !crate::ir::foreign::importer_installed() => {
            return Err(
                Problem::from(crate::ir::foreign::not_enabled(&a.file, format))
                    .at(a.file.display().to_string()),
            )
        }
        Ok(crate::ir::Source::Foreign(..)) => {}
        Ok(crate::ir::Source::Json(_)) => {
            return Err(Problem::new(
                format!(
                    "{}: not a vyre file (no `VYRE` wire header, no `vyre_ir v0.1` text header)",
                    a.file.display()
                ),
                "pass a file written by vyre's `Program::to_wire` or `Program::to_text`; \
                 Program JSON needs no import",
            )
            .at(a.file.display().to_string()))
        }
        Err(e) => return Err(Problem::from(e)),
    }
    let loaded = crate::validate::load(&a.file);
    let Some(program) = loaded.program.as_ref() else {
        return Err(Problem::invalid_file(
            &a.file,
            "vyre file",
            &loaded.diagnostics,
        ));
    };
    let incomplete = loaded
        .diagnostics
        .iter()
        .any(|d| d.severity == Severity::Error && d.code.starts_with("VY"));
    if incomplete {
        return Err(Problem::invalid_file(
            &a.file,
            "vyre file for import",
            &loaded.diagnostics,
        ));
    }
    let json = crate::ir::program_to_json(program)?;
    if let Some(out) = &a.out {
        crate::util::refuse_overwrite(out, [a.file.as_path()], "-o")?;
        if let Err(e) = crate::util::write_atomic(out, format!("{json}\n").as_bytes()) {
            return Err(Problem::new(
                format!("cannot write {}: {e}", out.display()),
                "check that the folder exists and is writable",
            ));
        }
    }
    let valid = loaded.is_valid();
    if a.json {
        let report = Report {
            file: a.file.display().to_string(),
            out: a.out.as_ref().map(|o| o.display().to_string()),
            valid,
            diagnostics: &loaded.diagnostics,
        };
        let head = serde_json::to_string(&report).map_err(Problem::bug)?;
        // The Program goes in as written (its key order matters to the parser: a statement's
        // first key names its kind), not through a key-sorting `serde_json::Value`.
        let program = if a.out.is_some() {
            "null"
        } else {
            json.as_str()
        };
        outln!("{},\"program\":{program}}}", head.trim_end_matches('}'));
    } else {
        if a.out.is_none() {
            outln!("{json}");
        }
        for d in &loaded.diagnostics {
            let text = d.to_string().replace('\n', "\n  ");
            errln!("{}", crate::util::terminal_safe(&text));
        }
        if let Some(out) = &a.out {
            errln!("wrote {}", out.display());
        }
    }
    if valid {
        Ok(0)
    } else {
        Ok(1)
    }
}
