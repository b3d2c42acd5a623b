//! Walks over the expressions of statements: the one definition of which expressions a
//! statement holds ([`Stmt::exprs`]) and of the order a Program's expressions are visited in
//! ([`Program::walk_exprs`], [`walk_exprs`]), so analyses, emission, generators and fusion
//! cannot disagree about them.

use super::ast::{Expr, Program, Stmt, StmtKind};

/// True when executing `list` always ends in a `return` (a loop may run no iteration, so a
/// `return` inside one does not count): what emission and the index analysis's path facts
/// both rely on.
pub fn always_returns(list: &[Stmt]) -> bool {
    list.iter().any(|s| match &s.kind {
        StmtKind::Return => true,
        StmtKind::Block(b) => always_returns(b),
        StmtKind::If {
            then, otherwise, ..
        } => always_returns(then) && always_returns(otherwise),
        _ => false,
    })
}

impl Stmt {
    /// The statement's own expressions, in source order: a `let`/`assign` value, a store's
    /// index then value, an `if` condition, a loop's `from` then `to`. Not those of nested
    /// statements (an `if` body, a loop body, a block), and none for `barrier`, `return` and
    /// dataflow `sync` (whose operands are names, not expressions).
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        let (a, b) = match &self.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => (Some(value), None),
            StmtKind::Store { index, value, .. } => (Some(index), Some(value)),
            StmtKind::If { cond, .. } => (Some(cond), None),
            StmtKind::Loop { from, to, .. } => (Some(from), Some(to)),
            StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Block(_) | StmtKind::Sync(_) => {
                (None, None)
            }
        };
        a.into_iter().chain(b)
    }

    /// [`Stmt::exprs`], mutable, in the same order.
    pub fn exprs_mut(&mut self) -> impl Iterator<Item = &mut Expr> {
        let (a, b) = match &mut self.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => (Some(value), None),
            StmtKind::Store { index, value, .. } => (Some(index), Some(value)),
            StmtKind::If { cond, .. } => (Some(cond), None),
            StmtKind::Loop { from, to, .. } => (Some(from), Some(to)),
            StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Block(_) | StmtKind::Sync(_) => {
                (None, None)
            }
        };
        a.into_iter().chain(b)
    }
}

impl Program {
    /// Calls `f` on every expression of the body and each of its sub-expressions: statements
    /// in [`Program::walk_stmts`] order, each statement's [`Stmt::exprs`] in order, each
    /// expression pre-order ([`Expr::visit`]).
    pub fn walk_exprs(&self, f: &mut dyn FnMut(&Expr)) {
        walk_exprs(&self.body, f);
    }
}

/// [`Program::walk_exprs`] over a statement list (a fused kernel's part, a step's body).
pub fn walk_exprs(list: &[Stmt], f: &mut dyn FnMut(&Expr)) {
    // The statement order is walk_stmts' own (one traversal for both walks).
    super::ast::walk_list(list, &mut |s| {
        for e in s.exprs() {
            e.visit(f);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order the walks promise: statements pre-order (a statement before its bodies),
    /// each statement's own expressions in source order, each expression pre-order.
    #[test]
    fn walks_visit_own_expressions_then_bodies_in_source_order() {
        let text = r#"{"format": 1, "name": "k", "workgroup_size": [32, 1, 1],
            "buffers": [{"name": "a", "type": "u32", "access": "read_write", "binding": 0}],
            "body": [
              {"let": "x", "value": 1},
              {"if": "x", "then": [{"store": "a", "index": 2, "value": 3}],
               "else": [{"assign": "x", "value": 4}]},
              {"loop": "i", "from": 5, "to": 6, "body": [{"block": [{"let": "y", "value": 7}]}]},
              {"barrier": "workgroup"}
            ]}"#;
        let p = crate::ir::parse_program(text, "k.json").expect("parses");
        let mut seen = Vec::new();
        p.walk_exprs(&mut |e| match e {
            Expr::Lit(crate::ir::Literal::Int(v)) => seen.push(v.to_string()),
            Expr::Var(n) => seen.push(n.clone()),
            _ => {}
        });
        assert_eq!(seen, ["1", "x", "2", "3", "4", "5", "6", "7"]);
        let own: Vec<usize> = p.body.iter().map(|s| s.exprs().count()).collect();
        assert_eq!(own, [1, 1, 2, 0]);
    }
}
