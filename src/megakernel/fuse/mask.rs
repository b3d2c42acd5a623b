//! Masking of a step that runs fewer threads than the fused kernel's block (see
//! `super::super::mixed` for why this is exact and where fusion breaks instead).

use crate::ir::{Axis, BarrierScope, BinOp, Builtin, Expr, Stmt, StmtKind};

use super::rewrite::{bin, children_mut, find_barrier, if_, subtask_sizes, u32_lit};

/// The index a masked thread stores to: outside every buffer (buffers hold fewer than 2^32
/// elements), so the store or atomic does nothing.
pub(super) const NOWHERE: u32 = u32::MAX;

fn active(threads: u32) -> Expr {
    bin(
        BinOp::Lt,
        Expr::Builtin(Builtin::LocalId(Axis::X)),
        u32_lit(threads),
    )
}

/// Masks `body` (a step of `threads` threads, already renamed and return-lowered) so that the
/// block's threads `lid.x >= threads` change nothing and still reach every barrier.
pub(super) fn mask(body: Vec<Stmt>, threads: u32) -> Vec<Stmt> {
    if find_barrier(&body, BarrierScope::Workgroup).is_none() {
        // The step's own sub-task barriers (of sizes dividing `threads`, V073) need a guard
        // that is uniform in each sub-task: `lid.x / d < threads / d` with `d` a multiple of
        // every size says the same as `lid.x < threads` and the validator sees it uniform.
        let d = subtask_unit(&body);
        let guard = match d {
            Some(d) if d > 0 && threads.is_multiple_of(d) => bin(
                BinOp::Lt,
                bin(
                    BinOp::Div,
                    Expr::Builtin(Builtin::LocalId(Axis::X)),
                    u32_lit(d),
                ),
                u32_lit(threads / d),
            ),
            _ => active(threads),
        };
        return vec![if_(guard, body)];
    }
    let mut body = body;
    mask_effects(&mut body, threads);
    body
}

/// The least common multiple of the sizes of the sub-task barriers in `list`, if any.
fn subtask_unit(list: &[Stmt]) -> Option<u32> {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    subtask_sizes(list)
        .into_iter()
        .map(|t| u64::from(t).max(1))
        .reduce(|a, t| a / gcd(a, t) * t)
        .and_then(|a| u32::try_from(a).ok())
}

/// Sends every store and atomic of the masked threads out of range.
fn mask_effects(list: &mut [Stmt], threads: u32) {
    for s in list {
        match &mut s.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => {
                mask_expr(value, threads)
            }
            StmtKind::Store { index, value, .. } => {
                mask_expr(index, threads);
                mask_expr(value, threads);
                guard(index, threads);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                mask_expr(cond, threads);
                mask_effects(then, threads);
                mask_effects(otherwise, threads);
            }
            StmtKind::Loop { from, to, body, .. } => {
                mask_expr(from, threads);
                mask_expr(to, threads);
                mask_effects(body, threads);
            }
            StmtKind::Block(b) => mask_effects(b, threads),
            StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {}
        }
    }
}

fn guard(index: &mut Expr, threads: u32) {
    let i = std::mem::replace(index, u32_lit(0));
    *index = Expr::Select(
        Box::new(active(threads)),
        Box::new(i),
        Box::new(u32_lit(NOWHERE)),
    );
}

/// Guards the index of every atomic in `e`. Recursive like the parser that built `e`.
fn mask_expr(e: &mut Expr, threads: u32) {
    for c in children_mut(e) {
        mask_expr(c, threads);
    }
    if let Expr::Atomic { index, .. } = e {
        guard(index, threads);
    }
}
