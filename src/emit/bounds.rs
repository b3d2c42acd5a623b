//! Range proofs that let the emitter drop bounds checks.
//!
//! Two kinds of evidence, both sound for the variables they name because the emitter only
//! uses variables that are never the target of an `assign` (loop counters never are):
//! - **facts** `i < len(B)`, established by control flow: inside the `then` of
//!   `if i < len(B)` / `if len(B) > i` (also under `land`, and in the `else` of the negated
//!   forms), in the body of `loop i from .. to len(B)`, and after an `if` whose taken branch
//!   always returns when `i >= len(B)` (for the rest of the enclosing block). `len(B)` is
//!   constant for the whole run (a kernel parameter or a workgroup buffer's `count`).
//! - **static upper bounds** of index expressions (`lid.x < workgroup_size.x`, `lane < 32`,
//!   literals, `x & c`, `x % c`, `min(x, c)`, sums), compared against a workgroup buffer's
//!   `count`.

use crate::ir::{BinOp, Builtin, Expr, Literal, Scalar, Stmt, StmtKind, UnOp};

/// Facts `var < len(buffer)` per nested scope.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    scopes: Vec<Vec<(String, String)>>,
}

impl Facts {
    /// Opens a scope (facts added later vanish at the matching [`Facts::pop`]).
    pub fn push(&mut self) {
        self.scopes.push(Vec::new());
    }

    /// Closes a scope.
    pub fn pop(&mut self) {
        self.scopes.pop();
    }

    /// Records `var < len(buffer)` in the innermost scope.
    pub fn add(&mut self, var: &str, buffer: &str) {
        if self.scopes.is_empty() {
            self.scopes.push(Vec::new());
        }
        if let Some(top) = self.scopes.last_mut() {
            top.push((var.to_string(), buffer.to_string()));
        }
    }

    /// True when `var < len(buffer)` is known here.
    pub fn holds(&self, var: &str, buffer: &str) -> bool {
        self.scopes
            .iter()
            .flatten()
            .any(|(v, b)| v == var && b == buffer)
    }
}

/// `(var, buffer)` pairs with `var < len(buffer)` whenever `cond` is true.
pub fn facts_if_true(cond: &Expr) -> Vec<(String, String)> {
    match cond {
        Expr::Binary(BinOp::Lt, a, b) => var_len(a, b).into_iter().collect(),
        Expr::Binary(BinOp::Gt, a, b) => var_len(b, a).into_iter().collect(),
        Expr::Binary(BinOp::LAnd, a, b) => {
            let mut v = facts_if_true(a);
            v.extend(facts_if_true(b));
            v
        }
        Expr::Unary(UnOp::LNot, a) => facts_if_false(a),
        _ => Vec::new(),
    }
}

/// `(var, buffer)` pairs with `var < len(buffer)` whenever `cond` is false.
pub fn facts_if_false(cond: &Expr) -> Vec<(String, String)> {
    match cond {
        Expr::Binary(BinOp::Ge, a, b) => var_len(a, b).into_iter().collect(),
        Expr::Binary(BinOp::Le, a, b) => var_len(b, a).into_iter().collect(),
        Expr::Binary(BinOp::LOr, a, b) => {
            let mut v = facts_if_false(a);
            v.extend(facts_if_false(b));
            v
        }
        Expr::Unary(UnOp::LNot, a) => facts_if_true(a),
        _ => Vec::new(),
    }
}

/// `(i, B)` when `a` is the variable `i` and `b` is `len(B)`.
fn var_len(a: &Expr, b: &Expr) -> Option<(String, String)> {
    match (a, b) {
        (Expr::Var(v), Expr::Len(buf)) => Some((v.clone(), buf.clone())),
        _ => None,
    }
}

/// True when executing `list` always ends in a `return`.
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

/// An exclusive static upper bound of a `u32` expression, if one is evident.
///
/// `var_bound` gives the bound proven for a (never assigned) variable; `wg` is the workgroup
/// size the kernel is emitted for.
pub fn upper_bound(e: &Expr, wg: [u32; 3], var_bound: &dyn Fn(&str) -> Option<u64>) -> Option<u64> {
    let ub = |x: &Expr| upper_bound(x, wg, var_bound);
    match e {
        Expr::Lit(Literal::Typed(Scalar::U32(v))) => Some(*v as u64 + 1),
        Expr::Lit(Literal::Int(v)) if *v >= 0 && *v <= u32::MAX as i128 => Some(*v as u64 + 1),
        Expr::Builtin(Builtin::LocalId(a)) => Some(wg[a.index()] as u64),
        Expr::Builtin(Builtin::Lane) => Some(32),
        Expr::Var(v) => var_bound(v),
        Expr::Binary(BinOp::And, a, b) => match (ub(a), ub(b)) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
        Expr::Binary(BinOp::Rem, a, b) => {
            let divisor = match &**b {
                Expr::Lit(Literal::Typed(Scalar::U32(v))) if *v > 0 => Some(*v as u64),
                _ => None,
            };
            match (divisor, ub(a)) {
                (Some(d), Some(x)) => Some(d.min(x)),
                (Some(d), None) => Some(d),
                (None, x) => x,
            }
        }
        Expr::Binary(BinOp::Min, a, b) => match (ub(a), ub(b)) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        },
        Expr::Binary(BinOp::Max, a, b) => Some(ub(a)?.max(ub(b)?)),
        Expr::Binary(BinOp::Add, a, b) => {
            // Only when the sum cannot wrap in u32.
            let s = ub(a)? + ub(b)? - 1;
            (s <= 1 << 32).then_some(s)
        }
        Expr::Binary(BinOp::Mul, a, b) => {
            let (x, y) = (ub(a)?, ub(b)?);
            let s = (x - 1).checked_mul(y - 1)? + 1;
            (s <= 1 << 32).then_some(s)
        }
        Expr::Binary(BinOp::Shr, a, _) | Expr::Binary(BinOp::Div, a, _) => ub(a),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Axis;

    fn var(n: &str) -> Box<Expr> {
        Box::new(Expr::Var(n.into()))
    }
    fn len(n: &str) -> Box<Expr> {
        Box::new(Expr::Len(n.into()))
    }
    fn u(v: u32) -> Box<Expr> {
        Box::new(Expr::Lit(Literal::Typed(Scalar::U32(v))))
    }

    #[test]
    fn guards_give_facts_in_both_spellings() {
        let c = Expr::Binary(BinOp::Lt, var("i"), len("b"));
        assert_eq!(facts_if_true(&c), vec![("i".into(), "b".into())]);
        let c = Expr::Binary(BinOp::Gt, len("b"), var("i"));
        assert_eq!(facts_if_true(&c), vec![("i".into(), "b".into())]);
        let c = Expr::Binary(BinOp::Ge, var("i"), len("b"));
        assert!(facts_if_true(&c).is_empty());
        assert_eq!(facts_if_false(&c), vec![("i".into(), "b".into())]);
        let both = Expr::Binary(
            BinOp::LAnd,
            Box::new(Expr::Binary(BinOp::Lt, var("i"), len("a"))),
            Box::new(Expr::Binary(BinOp::Lt, var("j"), len("b"))),
        );
        assert_eq!(facts_if_true(&both).len(), 2);
        // `i <= len(b)` proves nothing.
        let c = Expr::Binary(BinOp::Le, var("i"), len("b"));
        assert!(facts_if_true(&c).is_empty());
    }

    #[test]
    fn facts_are_scoped() {
        let mut f = Facts::default();
        f.push();
        f.add("i", "b");
        f.push();
        assert!(f.holds("i", "b"));
        f.pop();
        f.pop();
        assert!(!f.holds("i", "b"));
    }

    #[test]
    fn static_bounds() {
        let wg = [256, 1, 1];
        let none = |_: &str| None;
        let lid = Expr::Builtin(Builtin::LocalId(Axis::X));
        assert_eq!(upper_bound(&lid, wg, &none), Some(256));
        let masked = Expr::Binary(BinOp::And, Box::new(Expr::Var("g".into())), u(63));
        assert_eq!(upper_bound(&masked, wg, &none), Some(64));
        let sum = Expr::Binary(BinOp::Add, Box::new(lid.clone()), u(128));
        assert_eq!(upper_bound(&sum, wg, &none), Some(384));
        assert_eq!(upper_bound(&Expr::Var("g".into()), wg, &none), None);
    }
}
