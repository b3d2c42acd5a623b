//! Size limits: statement nesting, expression nesting and node count.
//!
//! This pass runs before every other one and walks the tree with explicit stacks, so a
//! Program built in memory with any depth cannot overflow the stack here; the recursive
//! passes (and the interpreter and emitter) only run when it passes.

use crate::ir::{Expr, Program, Stmt, StmtKind};

use super::Sink;

/// Deepest statement nesting accepted (top-level statements are at depth 1).
pub const MAX_STMT_DEPTH: usize = 64;

/// Deepest expression nesting accepted (a literal alone has depth 1).
pub const MAX_EXPR_DEPTH: usize = 64;

/// Most statements plus expression nodes accepted in one Program.
pub const MAX_NODES: usize = 100_000;

/// Largest number of per-statement depth errors reported (the rest would only repeat them).
const MAX_DEPTH_REPORTS: usize = 16;

/// Every statement in program order (pre-order), without recursion.
pub fn preorder(program: &Program) -> Vec<&Stmt> {
    preorder_with_depth(program)
        .into_iter()
        .map(|(s, _)| s)
        .collect()
}

/// Every statement in program order with its nesting depth (top level = 1).
fn preorder_with_depth(program: &Program) -> Vec<(&Stmt, usize)> {
    let mut out = Vec::new();
    // A stack of statement lists still to visit; the front of each list is the next one.
    let mut stack: Vec<(&[Stmt], usize)> = vec![(&program.body, 1)];
    while let Some((list, depth)) = stack.pop() {
        let Some((first, rest)) = list.split_first() else {
            continue;
        };
        out.push((first, depth));
        stack.push((rest, depth));
        // Pushed in reverse so that `then` is visited before `else`.
        for child in child_lists(first).into_iter().rev() {
            stack.push((child, depth + 1));
        }
    }
    out
}

/// The statement lists directly inside `s`.
pub fn child_lists(s: &Stmt) -> Vec<&[Stmt]> {
    match &s.kind {
        StmtKind::If {
            then, otherwise, ..
        } => vec![then, otherwise],
        StmtKind::Loop { body, .. } => vec![body],
        StmtKind::Block(b) => vec![b],
        _ => Vec::new(),
    }
}

/// The expressions of `s` itself (not of nested statements), with their JSON keys.
pub fn stmt_exprs(s: &Stmt) -> Vec<(&'static str, &Expr)> {
    match &s.kind {
        StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => vec![("value", value)],
        StmtKind::Store { index, value, .. } => vec![("index", index), ("value", value)],
        StmtKind::If { cond, .. } => vec![("if", cond)],
        StmtKind::Loop { from, to, .. } => vec![("from", from), ("to", to)],
        StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Block(_) | StmtKind::Sync(_) => {
            Vec::new()
        }
    }
}

/// The direct sub-expressions of `e`, in evaluation order.
pub fn expr_children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Builtin(_) | Expr::Len(_) | Expr::Clock => Vec::new(),
        Expr::Load { index, .. } => vec![index],
        Expr::Binary(_, a, b) => vec![a, b],
        Expr::Unary(_, a)
        | Expr::Cast(_, a)
        | Expr::Bitcast(_, a)
        | Expr::SubgroupReduce(_, a)
        | Expr::Ballot(a) => vec![a],
        Expr::Select(a, b, c) | Expr::Fma(a, b, c) => vec![a, b, c],
        Expr::Atomic {
            index,
            value,
            expected,
            ..
        } => {
            let mut v: Vec<&Expr> = vec![index, value];
            if let Some(x) = expected {
                v.push(x);
            }
            v
        }
        Expr::Shuffle { value, lane } => vec![value, lane],
    }
}

/// Nesting depth and node count of an expression, without recursion.
fn expr_depth_and_size(e: &Expr) -> (usize, usize) {
    let mut stack = vec![(e, 1usize)];
    let (mut depth, mut size) = (0, 0);
    while let Some((x, d)) = stack.pop() {
        depth = depth.max(d);
        size += 1;
        for c in expr_children(x) {
            stack.push((c, d + 1));
        }
    }
    (depth, size)
}

/// Checks the limits; returns true when the Program is within all of them.
pub fn check(program: &Program, sink: &mut Sink) -> bool {
    let mut ok = true;
    let mut nodes = 0usize;
    let mut reports = 0usize;
    let mut stmt_depth_reported = false;
    for (s, depth) in preorder_with_depth(program) {
        nodes += 1;
        if depth > MAX_STMT_DEPTH {
            ok = false;
            if !stmt_depth_reported {
                stmt_depth_reported = true;
                sink.error(
                    "V070",
                    Some(&s.id),
                    format!("statements are nested {depth} deep here; the limit is {MAX_STMT_DEPTH}"),
                    "flatten the nesting: combine conditions with `land`, or move inner work into separate statements",
                );
            }
        }
        for (key, e) in stmt_exprs(s) {
            let (d, n) = expr_depth_and_size(e);
            nodes += n;
            if d > MAX_EXPR_DEPTH {
                ok = false;
                if reports < MAX_DEPTH_REPORTS {
                    reports += 1;
                    sink.error(
                        "V071",
                        Some(&s.id),
                        format!("in `{key}`: expression is nested {d} deep; the limit is {MAX_EXPR_DEPTH}"),
                        "split the expression into several `let` statements",
                    );
                }
            }
        }
    }
    if nodes > MAX_NODES {
        ok = false;
        sink.error(
            "V072",
            None,
            format!("the Program has {nodes} statements and expressions; the limit is {MAX_NODES}"),
            "split the work into several kernels, or use loops instead of unrolled statements",
        );
    }
    ok
}
