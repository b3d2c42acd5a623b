//! `vyrescope check FILE...` (Program or pipeline files)
//!
//! A Program is parsed and validated (at `--workgroup` when given), its `run` section is
//! checked as `run` checks it (`inputs::check_run`, `V011`), and its workgroup-buffer writes
//! are checked against the workgroup size (`L012`, `diagnostics::wg_overrun`). The statements
//! that tie it to its own workgroup size are named (`L013`), and under `--workgroup` another
//! size's outputs are compared with the own size's on the reference interpreter (`L014`,
//! `harness::preserve`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::finding::Diagnostic;
use crate::util::Problem;

/// Parse and validate Program and pipeline files; exit 0 when all are valid.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope check fixtures/programs/*.json\n  vyrescope check --json fixtures/invalid/*.json\n  vyrescope check fixtures/programs/reduce_sum_f32.json --workgroup 512"
)]
pub struct Args {
    /// Program or pipeline files.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print `[{"file", "valid", "diagnostics": [{"severity", "node", "message", "fix"}]}]`.
    #[arg(long)]
    pub json: bool,
    /// Check Programs at this workgroup size `X,Y,Z` instead of their own (limits, and
    /// workgroup-buffer indices that the size pushes past a buffer's count).
    #[arg(long, value_name = "X,Y,Z", value_parser = crate::shape::parse_workgroup)]
    pub workgroup: Option<[u32; 3]>,
    /// Also print the informational notes of a vyre import (`VY...` info, e.g. VY011 and
    /// VY012: where the conversion follows vyre's own backend); without it they are counted
    /// on one line. `--json` always has them.
    #[arg(long)]
    pub verbose: bool,
}

/// An informational note of a vyre import: printed in text only under `--verbose`.
fn quiet_note(d: &Diagnostic) -> bool {
    d.severity == crate::finding::Severity::Info && d.code.starts_with("VY")
}

#[derive(Serialize)]
struct FileReport {
    file: String,
    valid: bool,
    /// False when the file could not be checked at all (a vyre file in a build without the
    /// `vyre` feature): `valid` is then false too, but the file is not known to be invalid.
    checked: bool,
    diagnostics: Vec<Diagnostic>,
}

/// True for a vyre file this build cannot read (no `vyre` feature): nothing about it is
/// known, so it is "not checked", not "INVALID".
fn unreadable_here(file: &Path) -> bool {
    !crate::ir::foreign::importer_installed()
        && matches!(
            crate::ir::load_source(file),
            Ok(crate::ir::Source::Foreign(..))
        )
}

/// Runs `check`.
pub fn run(a: &Args) -> super::Outcome {
    let mut reports = Vec::new();
    for f in &a.files {
        // A pipeline file (top-level `steps`/`pipeline`) is checked as a whole: its own rules
        // plus every step's Program.
        let diagnostics = if crate::ir::is_pipeline_file(f) {
            crate::validate::pipeline::load_pipeline(f).diagnostics
        } else {
            check_program(f, a.workgroup)
        };
        let valid = crate::validate::is_valid(&diagnostics);
        reports.push(FileReport {
            file: f.display().to_string(),
            valid,
            checked: valid || !unreadable_here(f),
            diagnostics,
        });
    }
    if a.json {
        match serde_json::to_string_pretty(&reports) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        for r in &reports {
            let verdict = match (r.valid, r.checked) {
                (true, _) => "ok",
                (false, true) => "INVALID",
                (false, false) => "NOT CHECKED (this build cannot read vyre files)",
            };
            outln!("{}: {verdict}", r.file);
            for d in r.diagnostics.iter().filter(|d| a.verbose || !quiet_note(d)) {
                // Diagnostics quote names from the file: no raw terminal controls.
                let text = d.to_string().replace('\n', "\n  ");
                outln!("  {}", crate::util::terminal_safe(&text));
            }
            let hidden = r.diagnostics.iter().filter(|d| quiet_note(d)).count();
            if hidden > 0 && !a.verbose {
                outln!("  ({hidden} vyre import note(s) not shown: --verbose shows them)");
            }
        }
    }
    if reports.iter().all(|r| r.valid) {
        Ok(0)
    } else {
        Ok(1)
    }
}

/// Every finding of a Program file: parse and validation (at `workgroup` when given), then,
/// once valid, the workgroup-buffer bounds at that size and the `run` section.
fn check_program(file: &Path, workgroup: Option<[u32; 3]>) -> Vec<Diagnostic> {
    let loaded = crate::validate::load(file);
    let Some(mut program) = loaded.program else {
        return loaded.diagnostics;
    };
    let mut diagnostics = loaded.diagnostics;
    // The Program as written: what its own workgroup size is, for the dependence rules.
    let own = program.clone();
    if let Some(wg) = workgroup {
        program.workgroup_size = wg;
        // Keep the findings of a vyre import (`VY...`); revalidate the rest at this size.
        diagnostics.retain(|d| d.code.starts_with("VY"));
        diagnostics.extend(crate::validate::validate(&program));
    }
    if !crate::validate::is_valid(&diagnostics) {
        return diagnostics;
    }
    diagnostics.extend(crate::diagnostics::wg_overrun::workgroup_overruns(
        &program,
        program.workgroup_size,
    ));
    diagnostics.extend(crate::diagnostics::wg_dependence::dependence(&own));
    if program.workgroup_size != own.workgroup_size
        && crate::validate::is_valid(&diagnostics)
        && own.run.is_some()
    {
        // A size the Program was not written for: do its outputs stay the same?
        let inputs = crate::harness::preserve::Inputs::of_file(file, None);
        let p = crate::harness::preserve::preserves(&own, &inputs, program.workgroup_size);
        diagnostics.extend(crate::diagnostics::wg_dependence::size_verdict(
            &own,
            program.workgroup_size,
            &p,
        ));
    }
    if program.run.is_some() {
        let base = file.parent().unwrap_or(Path::new("."));
        let files = crate::inputs::FileRoot::program_folder(base);
        if let Err(e) = crate::inputs::check_run(&program, &files) {
            diagnostics.push(Diagnostic::error(
                "V011",
                Some(crate::ir::NodeId::new("run".to_string())),
                e.message,
                e.fix,
            ));
        }
    }
    diagnostics
}
