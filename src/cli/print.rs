//! `vyrescope print FILE`

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
    let printed = print_program(&p);
    if a.no_gutter {
        print!("{}", printed.text());
    } else {
        print!("{}", printed.text_with_gutter());
    }
    0
}
