//! `vyrescope print FILE`

use crate::util::terminal_safe;
use std::path::PathBuf;

use crate::ir::{load_program, print::print_program};

/// Print a Program's IR text.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:\n  vyrescope print fixtures/programs/vadd_f32.json")]
pub struct Args {
    /// Program file.
    pub file: PathBuf,
    /// Leave out the node-id gutter.
    #[arg(long)]
    pub no_gutter: bool,
}

/// Runs `print`.
pub fn run(a: &Args) -> i32 {
    let p = match load_program(&a.file) {
        Ok(p) => p,
        Err(e) => return super::fail(e),
    };
    // `doc` and names come from the file: escape any terminal control characters in them.
    let printed = print_program(&p);
    if a.no_gutter {
        super::write_stdout(&terminal_safe(&printed.text()));
    } else {
        super::write_stdout(&terminal_safe(&printed.text_with_gutter()));
    }
    0
}
