//! IR printer: a compact, readable, deterministic text form of a Program.
//!
//! CONTRACT (implemented by the printer work): one statement per line, indentation, infix
//! operators, a buffer table at the top; [`Printed::lines`] says which node id each line
//! belongs to (the gutter). The emitter's `.loc` directives and the TUI's IR pane use these
//! line numbers, so they must be stable for a given Program.

use super::ast::{NodeId, Program};

/// One printed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintedLine {
    /// The line's text, without gutter and without a trailing newline.
    pub code: String,
    /// The statement this line belongs to (`None` for headers, buffer table, closing braces).
    pub node: Option<NodeId>,
}

/// A printed Program.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Printed {
    /// Lines in order; line number `n` (1-based) is `lines[n - 1]`.
    pub lines: Vec<PrintedLine>,
}

impl Printed {
    /// 1-based line number of the line that opens statement `node`.
    pub fn line_of(&self, node: &str) -> Option<usize> {
        self.lines
            .iter()
            .position(|l| l.node.as_deref() == Some(node))
            .map(|i| i + 1)
    }

    /// The text without gutter, newline-terminated.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(&l.code);
            s.push('\n');
        }
        s
    }
}

/// Prints `program`.
pub fn print_program(program: &Program) -> Printed {
    // Placeholder until the printer lands: one line per statement id.
    let mut p = Printed::default();
    program.walk_stmts(&mut |s| {
        p.lines.push(PrintedLine {
            code: format!("{:?}", s.kind).chars().take(80).collect(),
            node: Some(s.id.clone()),
        })
    });
    p
}
