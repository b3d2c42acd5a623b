//! `vyrescope check FILE...` (Program or pipeline files)

use std::path::PathBuf;

use serde::Serialize;

use crate::diagnostic::Diagnostic;

/// Parse and validate Program and pipeline files; exit 0 when all are valid.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope check fixtures/programs/*.json\n  vyrescope check --json fixtures/invalid/*.json"
)]
pub struct Args {
    /// Program or pipeline files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print `[{"file", "valid", "diagnostics": [{"severity", "node", "message", "fix"}]}]`.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct FileReport {
    file: String,
    valid: bool,
    diagnostics: Vec<Diagnostic>,
}

/// Runs `check`.
pub fn run(a: &Args) -> i32 {
    let mut reports = Vec::new();
    for f in &a.files {
        // A pipeline file (top-level `steps`/`pipeline`) is checked as a whole: its own rules
        // plus every step's Program.
        let diagnostics = if crate::ir::is_pipeline_file(f) {
            crate::validate::pipeline::load_pipeline(f).diagnostics
        } else {
            crate::validate::load(f).diagnostics
        };
        let valid = crate::validate::is_valid(&diagnostics);
        reports.push(FileReport {
            file: f.display().to_string(),
            valid,
            diagnostics,
        });
    }
    if a.json {
        match serde_json::to_string_pretty(&reports) {
            Ok(s) => outln!("{s}"),
            Err(e) => return super::fail(e),
        }
    } else {
        for r in &reports {
            outln!("{}: {}", r.file, if r.valid { "ok" } else { "INVALID" });
            for d in &r.diagnostics {
                // Diagnostics quote names from the file: no raw terminal controls.
                let text = d.to_string().replace('\n', "\n  ");
                outln!("  {}", crate::util::terminal_safe(&text));
            }
        }
    }
    if reports.iter().all(|r| r.valid) {
        0
    } else {
        1
    }
}
