//! Packing of a step that synchronises or shares memory within its workgroup: `P` of its
//! workgroups run side by side in one block (sub-task `lid.x / s`, `s` the step's size, see
//! `super::super::mixed`), so what the step's Program meant for its workgroup must now mean
//! the same for its sub-task:
//! - every `barrier(workgroup)` becomes `barrier(subtask, threads s)`: the sub-task's threads
//!   wait for each other, not for the other sub-tasks (which may have no virtual workgroup
//!   left in the trip and skip the body);
//! - every workgroup buffer of `n` elements is declared `P x n` long (by the caller) and
//!   each access at index `i` becomes `select(i < n, sub * n + i, 0xffffffff)` with `sub =
//!   lid.x / s`: sub-task `sub` reads and writes only its own copy `sub * n ..`, and an index
//!   outside the step's own buffer stays outside the fused one (the format makes such a load
//!   read 0 and such a store or atomic do nothing, as before);
//! - `len` of a workgroup buffer stays `n`.
//!
//! The index is evaluated twice; `mixed::packing_needs` keeps a step whose workgroup-buffer
//! index could give two different values (an atomic, a load of memory the step writes)
//! from packing.

use std::collections::HashMap;

use crate::ir::{Axis, BarrierScope, BinOp, Builtin, Expr, Stmt, StmtKind};

use super::mask::NOWHERE;
use super::rewrite::{bin, children_mut, u32_lit};

/// Rewrites the body of a packed step of `threads` threads per sub-task (already renamed):
/// `shared` maps each of its workgroup buffers (fused name) to the step's own element count.
pub(super) fn pack(list: &mut [Stmt], threads: u32, shared: &HashMap<String, u32>) {
    for s in list {
        match &mut s.kind {
            StmtKind::Barrier(scope @ BarrierScope::Workgroup) => {
                *scope = BarrierScope::Subtask { threads }
            }
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => {
                expr(value, threads, shared)
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                expr(index, threads, shared);
                expr(value, threads, shared);
                if let Some(&n) = shared.get(buffer.as_str()) {
                    own_copy(index, threads, n);
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                expr(cond, threads, shared);
                pack(then, threads, shared);
                pack(otherwise, threads, shared);
            }
            StmtKind::Loop { from, to, body, .. } => {
                expr(from, threads, shared);
                expr(to, threads, shared);
                pack(body, threads, shared);
            }
            StmtKind::Block(b) => pack(b, threads, shared),
            StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {}
        }
    }
}

/// Rewrites the workgroup-buffer accesses in `e`. Recursive like the parser that built `e`.
fn expr(e: &mut Expr, threads: u32, shared: &HashMap<String, u32>) {
    if let Expr::Len(b) = e {
        if let Some(&n) = shared.get(b.as_str()) {
            *e = u32_lit(n);
        }
        return;
    }
    for c in children_mut(e) {
        expr(c, threads, shared);
    }
    if let Expr::Load { buffer, index } | Expr::Atomic { buffer, index, .. } = e {
        if let Some(&n) = shared.get(buffer.as_str()) {
            own_copy(index, threads, n);
        }
    }
}

/// `i` -> `select(i < n, (lid.x / threads) * n + i, NOWHERE)`.
fn own_copy(index: &mut Expr, threads: u32, n: u32) {
    let i = std::mem::replace(index, u32_lit(0));
    let sub = bin(
        BinOp::Div,
        Expr::Builtin(Builtin::LocalId(Axis::X)),
        u32_lit(threads),
    );
    let moved = bin(BinOp::Add, bin(BinOp::Mul, sub, u32_lit(n)), i.clone());
    *index = Expr::Select(
        Box::new(bin(BinOp::Lt, i, u32_lit(n))),
        Box::new(moved),
        Box::new(u32_lit(NOWHERE)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse::parse_program;

    fn body(text: &str) -> Vec<Stmt> {
        let p = format!(
            r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1], "buffers": [
                {{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}},
                {{"name": "t", "access": "workgroup", "type": "u32", "count": 64}}],
                "body": [{text}]}}"#
        );
        parse_program(&p, "t.json").expect("parses").body
    }

    #[test]
    fn barriers_become_subtask_barriers_and_shared_indices_move_to_the_own_copy() {
        let mut b = body(
            r#"{"store": "t", "index": {"lid": "x"}, "value": {"load": "a", "index": {"gid": "x"}}},
               {"barrier": "workgroup"},
               {"store": "a", "index": {"gid": "x"},
                "value": {"add": [{"load": "t", "index": 3}, {"len": "t"}]}}"#,
        );
        let shared = HashMap::from([("t".to_string(), 64)]);
        pack(&mut b, 64, &shared);
        assert_eq!(
            b[1].kind,
            StmtKind::Barrier(BarrierScope::Subtask { threads: 64 })
        );
        let StmtKind::Store { index, .. } = &b[0].kind else {
            panic!("a store: {:?}", b[0]);
        };
        let Expr::Select(cond, moved, out) = index else {
            panic!("a select: {index:?}");
        };
        assert_eq!(
            **cond,
            bin(
                BinOp::Lt,
                Expr::Builtin(Builtin::LocalId(Axis::X)),
                u32_lit(64)
            )
        );
        assert_eq!(**out, u32_lit(NOWHERE));
        let sub = bin(
            BinOp::Div,
            Expr::Builtin(Builtin::LocalId(Axis::X)),
            u32_lit(64),
        );
        let want = bin(
            BinOp::Add,
            bin(BinOp::Mul, sub, u32_lit(64)),
            Expr::Builtin(Builtin::LocalId(Axis::X)),
        );
        assert_eq!(**moved, want);
        // `len` of the workgroup buffer stays the step's own 64; the host store is untouched.
        let StmtKind::Store { index, value, .. } = &b[2].kind else {
            panic!("a store: {:?}", b[2]);
        };
        assert_eq!(*index, Expr::Builtin(Builtin::GlobalId(Axis::X)));
        let Expr::Binary(BinOp::Add, load, len) = value else {
            panic!("an add: {value:?}");
        };
        assert_eq!(**len, u32_lit(64));
        assert!(matches!(&**load, Expr::Load { index, .. } if matches!(**index, Expr::Select(..))));
    }
}
