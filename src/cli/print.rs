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
    let width = printed
        .lines
        .iter()
        .filter_map(|l| l.node.as_ref().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    for l in &printed.lines {
        if a.no_gutter {
            println!("{}", l.code);
        } else {
            println!("{:>width$} | {}", l.node.as_deref().unwrap_or(""), l.code);
        }
    }
    0
}
