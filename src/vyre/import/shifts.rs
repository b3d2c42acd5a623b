//! The import's own shift masks, settled once the whole body is converted. vyre's kernel
//! takes a 32-bit shift amount modulo 32, where ours gives 0 for an amount of 32 or more, so
//! the import writes `x << (y & 31)`; where range analysis proves `y < 32` in the imported
//! Program the mask changes nothing and is left out. The proof is the export's own
//! ([`crate::vyre::export::proof::Env`], walked with the export's scopes and facts), so a
//! shift the export wrote plain because it proved the amount small comes back plain, and
//! `import(export(p))` gives `p`'s shift back.
//!
//! While converting, the import writes its mask with the marker [`MARK`] (a bare `31`, which
//! no imported expression has otherwise: the import types every literal), so that only its
//! own masks are settled here, never an `& 31` the vyre Program wrote itself.

use crate::analysis::ranges::range_of;
use crate::ir::{BinOp, Expr, Literal, Program, Scalar, ScalarType, Stmt, StmtKind};
use crate::vyre::export::proof::Env;

/// The mask operand the import writes for a shift amount, until [`settle`] decides it.
pub(super) const MARK: Expr = Expr::Lit(Literal::Int(31));

/// Settles every marked mask in `body` (the Program's buffers in `scratch`, its workgroup
/// size `wg`): left out where the amount is proven below 32, a typed `31` elsewhere. Returns
/// how many were left out.
pub(super) fn settle(scratch: &Program, wg: [u32; 3], body: &mut [Stmt]) -> usize {
    let snapshot = Program {
        body: body.to_vec(),
        workgroup_size: wg,
        ..scratch.clone()
    };
    let mut env = Env::new(&snapshot);
    let mut dropped = 0;
    list(body, &mut env, true, &mut dropped);
    dropped
}

/// The statements of one list, with the export's scoping: a top-level `if c { return }`
/// gives `!c` to the rest of the body (the export's early-return rewrite does the same).
fn list(body: &mut [Stmt], env: &mut Env, top: bool, dropped: &mut usize) {
    for k in 0..body.len() {
        if top {
            if let StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } = &mut body[k].kind
            {
                if crate::vyre::export::proof::is_bare_return(then) && otherwise.is_empty() {
                    expr(cond, env, dropped);
                    let cond = cond.clone();
                    env.push();
                    env.assume(&cond, false);
                    list(&mut body[k + 1..], env, true, dropped);
                    env.pop();
                    return;
                }
            }
        }
        stmt(&mut body[k], env, dropped);
    }
}

fn stmt(s: &mut Stmt, env: &mut Env, dropped: &mut usize) {
    match &mut s.kind {
        StmtKind::Let { name, value } => {
            expr(value, env, dropped);
            if let Some(ty) = env.ty(value) {
                env.declare(name, ty, Some(value));
            }
        }
        StmtKind::Assign { value, .. } => expr(value, env, dropped),
        StmtKind::Store { index, value, .. } => {
            expr(index, env, dropped);
            expr(value, env, dropped);
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
            ..
        } => {
            expr(cond, env, dropped);
            env.push();
            env.assume(cond, true);
            list(then, env, false, dropped);
            env.pop();
            env.push();
            env.assume(cond, false);
            list(otherwise, env, false, dropped);
            env.pop();
        }
        StmtKind::Loop {
            var,
            from,
            to,
            body,
        } => {
            expr(from, env, dropped);
            expr(to, env, dropped);
            env.push();
            env.declare(var, ScalarType::U32, None);
            env.assume_loop(var, from, to);
            list(body, env, false, dropped);
            env.pop();
        }
        StmtKind::Block(b) => {
            env.push();
            list(b, env, false, dropped);
            env.pop();
        }
        StmtKind::Barrier(_) | StmtKind::Sync(_) | StmtKind::Return => {}
    }
}

/// Settles the marks in `e`, innermost first.
fn expr(e: &mut Expr, env: &Env, dropped: &mut usize) {
    match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Builtin(_) | Expr::Len(_) | Expr::Clock => {}
        Expr::Load { index, .. } => expr(index, env, dropped),
        Expr::Binary(op, a, b) => {
            expr(a, env, dropped);
            if let Expr::Binary(BinOp::And, y, m) = &mut **b {
                if **m == MARK && matches!(op, BinOp::Shl | BinOp::Shr) {
                    expr(y, env, dropped);
                    if range_of(y, env).is_some_and(|r| r.hi < 32) {
                        *dropped += 1;
                        let y = std::mem::replace(&mut **y, MARK);
                        **b = y;
                    } else {
                        **m = Expr::Lit(Literal::Typed(Scalar::U32(31)));
                    }
                    return;
                }
            }
            expr(b, env, dropped);
        }
        Expr::Unary(_, a)
        | Expr::Cast(_, a)
        | Expr::Bitcast(_, a)
        | Expr::SubgroupReduce(_, a)
        | Expr::Ballot(a) => expr(a, env, dropped),
        Expr::Select(a, b, c) | Expr::Fma(a, b, c) => {
            expr(a, env, dropped);
            expr(b, env, dropped);
            expr(c, env, dropped);
        }
        Expr::Atomic {
            index,
            value,
            expected,
            ..
        } => {
            expr(index, env, dropped);
            expr(value, env, dropped);
            if let Some(x) = expected {
                expr(x, env, dropped);
            }
        }
        Expr::Shuffle { value, lane } => {
            expr(value, env, dropped);
            expr(lane, env, dropped);
        }
    }
}
