//! Mutations: a valid Program with one change likely to break a rule.

use super::wild::wild_expr;
use super::{bx, st, Rng, VALUE_TYPES};
use crate::ir::parse::assign_ids;
use crate::ir::*;

/// Applies `f` to the `k`-th expression node (pre-order) of a statement list; returns the
/// number of nodes seen when fewer than `k + 1` exist.
fn with_nth_expr(list: &mut [Stmt], k: &mut usize, f: &mut dyn FnMut(&mut Expr)) -> bool {
    fn walk(e: &mut Expr, k: &mut usize, f: &mut dyn FnMut(&mut Expr)) -> bool {
        if *k == 0 {
            f(e);
            return true;
        }
        *k -= 1;
        match e {
            Expr::Lit(_) | Expr::Var(_) | Expr::Builtin(_) | Expr::Len(_) | Expr::Clock => false,
            Expr::Load { index, .. } => walk(index, k, f),
            Expr::Binary(_, a, b) | Expr::Shuffle { value: a, lane: b } => {
                walk(a, k, f) || walk(b, k, f)
            }
            Expr::Unary(_, a)
            | Expr::Cast(_, a)
            | Expr::Bitcast(_, a)
            | Expr::SubgroupReduce(_, a)
            | Expr::Ballot(a) => walk(a, k, f),
            Expr::Select(a, b, c) | Expr::Fma(a, b, c) => {
                walk(a, k, f) || walk(b, k, f) || walk(c, k, f)
            }
            Expr::Atomic {
                index,
                value,
                expected,
                ..
            } => {
                walk(index, k, f)
                    || walk(value, k, f)
                    || expected.as_mut().is_some_and(|x| walk(x, k, f))
            }
        }
    }
    for s in list {
        // The statement's own expressions first, then its nested statements: the order
        // `Program::walk_exprs` counts them in.
        if s.exprs_mut().any(|e| walk(e, k, f)) {
            return true;
        }
        let done = match &mut s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => with_nth_expr(then, k, f) || with_nth_expr(otherwise, k, f),
            StmtKind::Loop { body, .. } => with_nth_expr(body, k, f),
            StmtKind::Block(b) => with_nth_expr(b, k, f),
            _ => false,
        };
        if done {
            return true;
        }
    }
    false
}

fn count_exprs(p: &Program) -> usize {
    let mut n = 0;
    p.walk_exprs(&mut |_| n += 1);
    n
}

/// `p` with one random change (an expression replaced by a random one, a buffer's access or
/// type changed, a statement duplicated so that its `let` shadows, a barrier inserted, ...).
pub fn mutate(p: &Program, seed: u64) -> Program {
    mutate_with(p, Rng::new(seed))
}

/// [`mutate`] drawing from `r` (e.g. [`Rng::from_bytes`]).
pub fn mutate_with(p: &Program, mut r: Rng) -> Program {
    let mut out = p.clone();
    match r.below(6) {
        0 | 1 => {
            let mut k = r.below(count_exprs(&out).max(1));
            let new = wild_expr(&mut r, 2);
            let mut new = Some(new);
            with_nth_expr(&mut out.body, &mut k, &mut |e| {
                if let Some(n) = new.take() {
                    *e = n;
                }
            });
        }
        2 => {
            if !out.buffers.is_empty() {
                let k = r.below(out.buffers.len());
                let b = &mut out.buffers[k];
                match r.below(4) {
                    0 => b.access = Access::Read,
                    1 => b.elem = r.pick(&ElemType::ALL),
                    2 => b.binding = Some(0),
                    _ => b.count = Some(r.next_u64() as u32),
                }
            }
        }
        3 => {
            if let Some(s) = out.body.get(r.below(out.body.len().max(1))).cloned() {
                out.body.insert(r.below(out.body.len() + 1), s);
            }
        }
        4 => {
            let at = r.below(out.body.len() + 1);
            let mut inner = vec![st(StmtKind::Barrier(BarrierScope::Workgroup))];
            if r.chance(1, 2) {
                inner.insert(0, st(StmtKind::Return));
            }
            out.body.insert(
                at,
                st(StmtKind::If {
                    cond: Expr::Binary(
                        BinOp::Lt,
                        bx(Expr::Builtin(Builtin::LocalId(Axis::X))),
                        bx(Expr::Lit(Literal::Int(3))),
                    ),
                    then: inner,
                    otherwise: Vec::new(),
                    has_else: false,
                }),
            );
        }
        _ => {
            let mut k = r.below(count_exprs(&out).max(1));
            let t = r.pick(&VALUE_TYPES);
            with_nth_expr(&mut out.body, &mut k, &mut |e| {
                let new = match &*e {
                    Expr::Lit(Literal::Typed(s)) => {
                        Expr::Lit(Literal::Typed(Scalar::from_bits(t, s.to_bits())))
                    }
                    other => Expr::Cast(t, bx(other.clone())),
                };
                *e = new;
            });
        }
    }
    assign_ids(&mut out.body, "body");
    out
}
