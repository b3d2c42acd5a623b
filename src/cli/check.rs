//! `vyrescope check FILE...`

use std::path::PathBuf;

use serde::Serialize;

use crate::diagnostics::{Diagnostic, Severity};
use crate::ir::load_program;

/// Parse and validate Program files; exit 0 when all are valid.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope check fixtures/programs/*.json\n  vyrescope check --json fixtures/invalid/*.json"
)]
pub struct Args {
    /// Program files.
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

/// Parses and validates one file: a parse error becomes one `V000` error diagnostic whose node
/// is the JSON path of the offending value and whose message starts with `file:line:col`.
pub fn check_file(path: &std::path::Path) -> Vec<Diagnostic> {
    match load_program(path) {
        Ok(p) => crate::validate::validate(&p),
        Err(e) => vec![Diagnostic {
            severity: Severity::Error,
            code: "V000",
            node: if e.path.is_empty() {
                None
            } else {
                Some(e.path.clone())
            },
            message: format!("{}:{}:{}: {}", e.file, e.line, e.column, e.message),
            fix: e.fix,
        }],
    }
}

/// Runs `check`.
pub fn run(a: &Args) -> i32 {
    let mut reports = Vec::new();
    for f in &a.files {
        let diagnostics = check_file(f);
        let valid = crate::validate::is_valid(&diagnostics);
        reports.push(FileReport {
            file: f.display().to_string(),
            valid,
            diagnostics,
        });
    }
    if a.json {
        match serde_json::to_string_pretty(&reports) {
            Ok(s) => println!("{s}"),
            Err(e) => return super::fail(e),
        }
    } else {
        for r in &reports {
            println!("{}: {}", r.file, if r.valid { "ok" } else { "INVALID" });
            for d in &r.diagnostics {
                println!("  {}", d.to_string().replace('\n', "\n  "));
            }
        }
    }
    if reports.iter().all(|r| r.valid) {
        0
    } else {
        1
    }
}
