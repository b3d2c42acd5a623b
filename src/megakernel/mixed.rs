//! Mixed workgroup sizes in one launch: when the steps of a group run different workgroup
//! sizes, the fused kernel's block is the largest of them and a smaller step masks the
//! block's extra threads.
//!
//! # What stays exact
//! A step of `s` threads in a block of `B > s` threads runs over its own virtual workgroups
//! (the loop of `fuse::rewrite::VirtualLoop`, with its own grid and its own `s` for `gid`),
//! so `lid`, `gid`, `wgid`, `nwg` and its workgroup buffers mean what they meant in its own
//! launch. Threads `lid.x >= s` are masked:
//! - a step without `barrier(workgroup)` runs its whole body under `if lid.x < s`;
//! - a step with workgroup barriers is run by every thread of the block, so the masked
//!   threads reach every barrier (the validator already requires barriers to sit under
//!   workgroup-uniform control, which does not depend on `lid`), and every `store` and
//!   `atomic` index becomes `select(lid.x < s, index, 0xffffffff)`: the format makes a store
//!   or atomic outside a buffer do nothing, so the masked threads change no memory. What they
//!   compute otherwise (loads, arithmetic) is thrown away.
//!
//! # Where fusion breaks instead (the planner's reason names the case)
//! - Workgroup sizes that differ and are not all one-dimensional (`[n, 1, 1]`): a
//!   multi-dimensional local id cannot be laid onto a block of another shape.
//! - A smaller step whose size is not a multiple of the 32-thread subgroup and that uses
//!   `shuffle`, `subgroup_reduce` or `ballot`: its last subgroup would hold masked threads,
//!   which those operations would see.
//!
//! Dependences between steps of different workgroup sizes are always `grid` (the dependence
//! analysis only proves weaker ones between equal launch shapes), so two steps of different
//! sizes are never separated by less than a grid barrier unless nothing depends across them.

use crate::ir::{Expr, Program, Stmt, StmtKind};

/// Subgroup width the masking rules assume (a CUDA warp).
pub const SUBGROUP: u32 = 32;

/// The block of a group whose steps run `sizes`: the largest (by thread count); `[1, 1, 1]`
/// for none.
pub fn block_size(sizes: impl Iterator<Item = [u32; 3]>) -> [u32; 3] {
    sizes
        .max_by_key(|w| u64::from(w[0]) * u64::from(w[1]) * u64::from(w[2]))
        .unwrap_or([1, 1, 1])
}

/// Whether steps `(index, workgroup size, uses subgroup ops)` can share one block; the fusion
/// break reason when not.
pub fn check_sizes(sizes: &[(usize, [u32; 3], bool)]) -> Result<(), String> {
    let Some(&(_, first, _)) = sizes.first() else {
        return Ok(());
    };
    if sizes.iter().all(|(_, w, _)| *w == first) {
        return Ok(());
    }
    if let Some((k, w, _)) = sizes.iter().find(|(_, w, _)| w[1] != 1 || w[2] != 1) {
        return Err(format!(
            "workgroup sizes differ and step {k}'s {w:?} is multi-dimensional (mixed sizes share \
             a block only when every size is one-dimensional, [n, 1, 1])"
        ));
    }
    let block = block_size(sizes.iter().map(|(_, w, _)| *w));
    for &(k, w, sub) in sizes {
        if w[0] < block[0] && sub && w[0] % SUBGROUP != 0 {
            return Err(format!(
                "step {k} runs {} threads, not a multiple of the {SUBGROUP}-thread subgroup, and \
                 uses subgroup operations, so in a block of {} threads its last subgroup would \
                 hold masked threads",
                w[0], block[0]
            ));
        }
    }
    Ok(())
}

fn stmt_exprs(s: &Stmt) -> Vec<&Expr> {
    match &s.kind {
        StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => vec![value],
        StmtKind::Store { index, value, .. } => vec![index, value],
        StmtKind::If { cond, .. } => vec![cond],
        StmtKind::Loop { from, to, .. } => vec![from, to],
        StmtKind::Block(_) | StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {
            Vec::new()
        }
    }
}

/// True when `program` uses `shuffle`, `subgroup_reduce` or `ballot`.
pub fn uses_subgroup_ops(program: &Program) -> bool {
    let mut found = false;
    program.walk_stmts(&mut |s| {
        for e in stmt_exprs(s) {
            e.visit(&mut |x| {
                found |= matches!(
                    x,
                    Expr::Shuffle { .. } | Expr::SubgroupReduce(..) | Expr::Ballot(_)
                );
            });
        }
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_sizes_always_share_a_block() {
        assert!(check_sizes(&[(0, [8, 8, 1], true), (1, [8, 8, 1], true)]).is_ok());
    }

    #[test]
    fn one_dimensional_sizes_share_the_largest_block() {
        let s = [
            (0, [256, 1, 1], true),
            (1, [32, 1, 1], true),
            (2, [1, 1, 1], false),
        ];
        assert!(check_sizes(&s).is_ok());
        assert_eq!(block_size(s.iter().map(|x| x.1)), [256, 1, 1]);
    }

    #[test]
    fn multi_dimensional_mixed_sizes_break() {
        let e = check_sizes(&[(0, [16, 16, 1], false), (3, [64, 1, 1], false)]).unwrap_err();
        assert!(
            e.contains("step 0") && e.contains("multi-dimensional"),
            "{e}"
        );
    }

    #[test]
    fn partial_subgroups_with_subgroup_ops_break() {
        let e = check_sizes(&[(0, [256, 1, 1], false), (1, [48, 1, 1], true)]).unwrap_err();
        assert!(e.contains("step 1") && e.contains("subgroup"), "{e}");
        // The same size without subgroup operations, or the largest step itself, is fine.
        assert!(check_sizes(&[(0, [256, 1, 1], false), (1, [48, 1, 1], false)]).is_ok());
        assert!(check_sizes(&[(0, [48, 1, 1], true), (1, [16, 1, 1], false)]).is_ok());
    }
}
