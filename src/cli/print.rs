//! `vyrescope print FILE` (Program or pipeline file)

use crate::util::terminal_safe;
use std::path::PathBuf;

use crate::ir::{load_program, print::print_program};

/// Print a Program's IR text (a pipeline: its buffers, then every step's Program with node ids
/// `steps[i].body[..]`).
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  vyrescope print fixtures/programs/vadd_f32.json")]
pub struct Args {
    /// Program or pipeline file.
    pub file: PathBuf,
    /// Leave out the node-id gutter.
    #[arg(long)]
    pub no_gutter: bool,
}

/// Runs `print`.
pub fn run(a: &Args) -> super::Outcome {
    let printed = if crate::ir::is_pipeline_file(&a.file) {
        crate::ir::pipeline_print::print_pipeline(&crate::ir::load_pipeline(&a.file)?)
    } else {
        print_program(&load_program(&a.file)?)
    };
    // `doc` and names come from the file: escape any terminal control characters in them.
    if a.no_gutter {
        super::write_stdout(&terminal_safe(&printed.text()));
    } else {
        super::write_stdout(&terminal_safe(&printed.text_with_gutter()));
    }
    Ok(0)
}
