//! Sizes of converted code: when a guard may copy an expression, and the bound on a whole
//! imported Program.

use crate::ir::{Expr, Stmt, StmtKind};

/// Expressions of at most this many nodes are copied into a guard (`select(i < len(b), i,
/// 0)`); larger ones are bound once with `let`. Copying a small index keeps the common
/// `x[select(i < len(x), i, 0)]` readable, and the bound keeps the copy from growing: a
/// nested index (`a[a[a[i]]]`) copied at every level would double at every level.
pub const MAX_COPIED_NODES: usize = 8;

/// Nodes of one expression.
pub fn expr_nodes(e: &Expr) -> usize {
    let mut n = 0usize;
    e.visit(&mut |_| n += 1);
    n
}

/// Statement and expression nodes of a statement list.
pub fn program_nodes(body: &[Stmt]) -> usize {
    body.iter().map(stmt_nodes).sum()
}

fn stmt_nodes(s: &Stmt) -> usize {
    1 + match &s.kind {
        StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => expr_nodes(value),
        StmtKind::Store { index, value, .. } => expr_nodes(index) + expr_nodes(value),
        StmtKind::If {
            cond,
            then,
            otherwise,
            ..
        } => expr_nodes(cond) + program_nodes(then) + program_nodes(otherwise),
        StmtKind::Loop { from, to, body, .. } => {
            expr_nodes(from) + expr_nodes(to) + program_nodes(body)
        }
        StmtKind::Block(b) => program_nodes(b),
        StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => 0,
    }
}
