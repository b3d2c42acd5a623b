//! Mixed workgroup sizes in one launch: when the steps of a group run different workgroup
//! sizes, the fused kernel's block is the largest of them. A smaller step either **packs**
//! several of its workgroups side by side into the block, or **masks** the block's extra
//! threads. [`step_layouts`] decides which, per step; the plan shows it (`packed 4 x 256 in
//! 1024`, `masked (reason)`), fused emission (`fuse::rewrite::VirtualLoop`) builds it and the
//! cost model counts a packed step's resident workgroups as `P` per block.
//!
//! # Packing
//! A step of `s` threads in a block of `B` threads with `B % s == 0` runs `P = B / s`
//! sub-tasks per block: thread `lid.x` is local id `lid.x % s` of sub-task `lid.x / s`, and
//! trip `t` of the block's loop over virtual workgroups runs virtual workgroup
//! `(t * blocks + wgid.x) * P + lid.x / s`. The trip count is a literal, so the loop is
//! uniform across the block; a sub-task whose virtual workgroup is past the step's count
//! does nothing in that trip. `gid`, `wgid`, `nwg` and `lid` mean what they meant in the
//! step's own launch. A step packs only when it has no subgroup operation (`shuffle`,
//! `subgroup_reduce`, `ballot`) and does not read the `lane` or `subgroup_size` builtins
//! (a subgroup could span two sub-tasks). Its workgroup barriers become sub-task barriers
//! and its workgroup buffers one copy per sub-task (`fuse::pack`), so its sub-tasks never
//! share anything a neighbour could disturb; that rewrite has limits of its own (a barrier
//! counts whole warps and there are 15 named barriers, the copies must fit 48 KiB, a
//! workgroup-buffer index is evaluated twice): [`packing_needs`] and
//! [`PackNeeds::obstacle`] name the first obstacle.
//!
//! Packing runs in both sync forms. In a dataflow group (`fuse::sync`) the block's `P`
//! sub-tasks of one trip wait together, before the trip: thread 0 polls the union of their
//! producer sets (a window `lo..=hi` of each becomes `lo..=hi + P - 1` from the trip's first
//! sub-task, `SyncOp::Wait::span`) and the whole block passes one `bar.sync`; a packed step
//! publishes its flags once per block after its last trip (`BlockTasks::pack`), since a
//! per-task `bar.sync` cannot sit under the per-sub-task `v < G` test. A one-workgroup step
//! masks there ([`ONE_WORKGROUP`]): it is a fold run by the last arriver or a broadcast,
//! with nothing to put side by side.
//!
//! Steps of one size that are not separated by a grid barrier must map their virtual
//! workgroups onto the blocks' threads the same way (an `invocation` or `workgroup`
//! separation assumes the same invocation runs on the same thread, the same workgroup on
//! the same block): when one of them masks, all of them mask. In a dataflow group the rule
//! spans the whole group: a window wait skips the task's own producer because it ran on the
//! same block, which holds only when both steps map alike.
//!
//! # Masking: what stays exact
//! A masked step of `s` threads in a block of `B > s` threads runs over its own virtual
//! workgroups (the loop of `fuse::rewrite::VirtualLoop`, with its own grid and its own `s`
//! for `gid`), so `lid`, `gid`, `wgid`, `nwg` and its workgroup buffers mean what they meant
//! in its own launch. Threads `lid.x >= s` are masked:
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

use serde::{Deserialize, Serialize};

use crate::ir::{BarrierScope, Builtin, Expr, Program, Stmt, StmtKind};

/// Subgroup width the masking rules assume (a CUDA warp).
pub const SUBGROUP: u32 = 32;

/// The block of a group whose steps run `sizes`: the largest (by thread count); `[1, 1, 1]`
/// for none.
pub fn block_size(sizes: impl Iterator<Item = [u32; 3]>) -> [u32; 3] {
    sizes
        .max_by_key(|w| u64::from(w[0]) * u64::from(w[1]) * u64::from(w[2]))
        .unwrap_or([1, 1, 1])
}

/// Why the workgroup sizes of a set of steps cannot share one block: the fusion break reason
/// the planner records, and what `fuse` reports for a spec that asks for it anyway.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeMismatch {
    /// The sizes differ and one of them is not `[n, 1, 1]`.
    #[error(
        "workgroup sizes differ and step {step}'s {size:?} is multi-dimensional (mixed sizes share \
         a block only when every size is one-dimensional, [n, 1, 1])"
    )]
    MultiDimensional {
        /// The step.
        step: usize,
        /// Its workgroup size.
        size: [u32; 3],
    },
    /// A step smaller than the block uses subgroup operations and would leave masked threads
    /// in its last subgroup.
    #[error(
        "step {step} runs {threads} threads, not a multiple of the {sub}-thread subgroup, and \
         uses subgroup operations, so in a block of {block} threads its last subgroup would \
         hold masked threads",
        sub = SUBGROUP
    )]
    PartialSubgroup {
        /// The step.
        step: usize,
        /// Its threads per workgroup.
        threads: u32,
        /// Threads per block of the group.
        block: u32,
    },
}

/// Whether steps `(index, workgroup size, uses subgroup ops)` can share one block; the fusion
/// break reason when not.
pub fn check_sizes(sizes: &[(usize, [u32; 3], bool)]) -> Result<(), SizeMismatch> {
    let Some(&(_, first, _)) = sizes.first() else {
        return Ok(());
    };
    if sizes.iter().all(|(_, w, _)| *w == first) {
        return Ok(());
    }
    if let Some(&(step, size, _)) = sizes.iter().find(|(_, w, _)| w[1] != 1 || w[2] != 1) {
        return Err(SizeMismatch::MultiDimensional { step, size });
    }
    let block = block_size(sizes.iter().map(|(_, w, _)| *w));
    for &(step, w, sub) in sizes {
        if w[0] < block[0] && sub && w[0] % SUBGROUP != 0 {
            return Err(SizeMismatch::PartialSubgroup {
                step,
                threads: w[0],
                block: block[0],
            });
        }
    }
    Ok(())
}

/// How one step of a fused group uses the group's block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "layout", rename_all = "snake_case")]
pub enum StepLayout {
    /// The step's workgroup size is the block.
    Whole,
    /// `tasks` workgroups of `threads` threads side by side in each block.
    Packed {
        /// Sub-tasks per block (`P = B / s`).
        tasks: u32,
        /// The step's threads per workgroup (`s`).
        threads: u32,
    },
    /// One workgroup of `threads` threads per block; the block's other threads are masked.
    Masked {
        /// The step's threads per workgroup.
        threads: u32,
        /// Why it does not pack.
        reason: String,
    },
}

impl StepLayout {
    /// The step's workgroups resident in one block at once.
    pub fn tasks(&self) -> u32 {
        match self {
            StepLayout::Packed { tasks, .. } => *tasks,
            _ => 1,
        }
    }

    /// Sub-tasks per block when packed (`None`: whole or masked).
    pub fn packed(&self) -> Option<u32> {
        match self {
            StepLayout::Packed { tasks, .. } => Some(*tasks),
            _ => None,
        }
    }

    /// `packed 4 x 256 in 1024`, `masked (reason)` or `whole block` (`block`: the block's
    /// threads).
    pub fn describe(&self, block: u32) -> String {
        match self {
            StepLayout::Whole => "whole block".to_string(),
            StepLayout::Packed { tasks, threads } => {
                format!("packed {tasks} x {threads} in {block}")
            }
            StepLayout::Masked { threads, reason } => {
                format!("masked {threads} of {block} ({reason})")
            }
        }
    }
}

/// What packing `program`'s workgroups side by side in a larger block takes: the obstacles
/// no sub-task count lifts, and what each sub-task needs its own of (see [`packing_needs`]
/// and [`PackNeeds::obstacle`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PackNeeds {
    /// What keeps the step from packing at any size: a subgroup operation or the `lane` /
    /// `subgroup_size` builtins (a subgroup could span two sub-tasks), a sub-task barrier of
    /// its own (a sub-task is not split again), or an index into workgroup memory that the
    /// per-sub-task rewrite could not evaluate twice alike (it holds an atomic, or a load of
    /// memory the step writes).
    pub fixed: Option<&'static str>,
    /// It has workgroup barriers: packed, each becomes a sub-task barrier
    /// (`fuse::pack`), one hardware barrier per sub-task.
    pub barriers: bool,
    /// Bytes of its workgroup buffers: packed, each sub-task gets its own copy.
    pub shared_bytes: u64,
}

/// Most sub-tasks of a packed step with barriers: one hardware named barrier each
/// (`crate::validate::divergence::MAX_SUBTASKS`).
pub const MAX_BARRIER_TASKS: u32 = crate::validate::divergence::MAX_SUBTASKS;

impl PackNeeds {
    /// Why a step of `threads` threads does not pack `block / threads` to a block of `block`
    /// threads, if anything. `None` too when `threads` does not divide `block`
    /// ([`step_layouts`] names that case).
    pub fn obstacle(&self, threads: u32, block: u32) -> Option<String> {
        if let Some(f) = self.fixed {
            return Some(f.to_string());
        }
        if threads == 0 || !block.is_multiple_of(threads) {
            return None;
        }
        let tasks = block / threads;
        if self.barriers && !threads.is_multiple_of(SUBGROUP) {
            return Some(format!(
                "it has workgroup barriers and its {threads} threads are not a multiple of the \
                 {SUBGROUP}-thread subgroup (a sub-task barrier counts whole warps)"
            ));
        }
        if self.barriers && tasks > MAX_BARRIER_TASKS {
            return Some(format!(
                "it has workgroup barriers and {tasks} sub-tasks would need {tasks} hardware \
                 barriers (at most {MAX_BARRIER_TASKS})"
            ));
        }
        let copies = self.shared_bytes.saturating_mul(u64::from(tasks));
        if copies > crate::validate::MAX_SHARED_BYTES {
            return Some(format!(
                "its {tasks} copies of {} B of workgroup (shared) memory need {copies} B, more \
                 than the {} KiB of static shared memory",
                self.shared_bytes,
                crate::validate::MAX_SHARED_BYTES / 1024
            ));
        }
        None
    }

    /// Copies of the step's workgroup buffers in a block of `block` threads: `P = block /
    /// threads` when it can pack (no [`PackNeeds::obstacle`]), else 1. An upper bound for
    /// the planner's shared memory: a step may still mask for its group's sake.
    pub fn copies(&self, threads: u32, block: u32) -> u32 {
        if threads == 0 || threads >= block || !block.is_multiple_of(threads) {
            return 1;
        }
        if self.obstacle(threads, block).is_some() {
            1
        } else {
            block / threads
        }
    }
}

/// What packing `program`'s workgroups side by side takes ([`PackNeeds`]): a workgroup
/// barrier becomes a sub-task barrier and a workgroup buffer one copy per sub-task, so those
/// only count; a subgroup operation, the `lane` or `subgroup_size` builtins, a sub-task
/// barrier or a workgroup-buffer index the rewrite cannot repeat safely keep it from packing.
pub fn packing_needs(program: &Program) -> PackNeeds {
    let mut barrier = false;
    let mut subtask = false;
    let mut subgroup = false;
    let mut lane = false;
    let mut unsafe_index = false;
    let shared = |b: &str| {
        program
            .buffer(b)
            .is_some_and(|d| d.access == crate::ir::Access::Workgroup)
    };
    // An index the rewrite repeats (`select(i < n, sub * n + i, ..)`) must give the same
    // value twice: no atomic, and no load of memory the step (or a neighbour sub-task)
    // may write in between.
    let repeats_unsafely = |i: &Expr| {
        let mut bad = false;
        i.visit(&mut |x| match x {
            Expr::Atomic { .. } => bad = true,
            Expr::Load { buffer, .. } => {
                bad |= program
                    .buffer(buffer)
                    .is_none_or(|d| d.access.is_writable())
            }
            _ => {}
        });
        bad
    };
    program.walk_stmts(&mut |s| {
        match s.kind {
            StmtKind::Barrier(BarrierScope::Workgroup) => barrier = true,
            StmtKind::Barrier(BarrierScope::Subtask { .. }) => subtask = true,
            _ => {}
        }
        if let StmtKind::Store { buffer, index, .. } = &s.kind {
            unsafe_index |= shared(buffer) && repeats_unsafely(index);
        }
        for e in stmt_exprs(s) {
            e.visit(&mut |x| {
                subgroup |= matches!(
                    x,
                    Expr::Shuffle { .. } | Expr::SubgroupReduce(..) | Expr::Ballot(_)
                );
                lane |= matches!(x, Expr::Builtin(Builtin::Lane | Builtin::SubgroupSize));
                if let Expr::Load { buffer, index } | Expr::Atomic { buffer, index, .. } = x {
                    unsafe_index |= shared(buffer) && repeats_unsafely(index);
                }
            });
        }
    });
    let fixed = if subtask {
        Some("it already has sub-task barriers (a sub-task is not split again)")
    } else if subgroup {
        Some("it uses subgroup operations")
    } else if lane {
        Some("it reads the subgroup lane or size")
    } else if unsafe_index {
        Some(
            "an index into its workgroup (shared) memory holds an atomic or a load of memory \
             it writes, which the per-sub-task index would evaluate twice",
        )
    } else {
        None
    };
    PackNeeds {
        fixed,
        barriers: barrier,
        shared_bytes: crate::diagnostics::launch::workgroup_bytes(program),
    }
}

/// Reason a smaller one-workgroup step masks in a dataflow group (see the module docs).
pub const ONE_WORKGROUP: &str =
    "one workgroup in the dataflow form (a fold or a broadcast): nothing to pack";

/// What keeps a step of `workgroups` workgroups from packing in its group, given its
/// Program's own obstacle ([`PackNeeds::obstacle`]; `dataflow`: the group runs the dataflow
/// sync form).
pub fn group_obstacle(program: Option<String>, workgroups: u64, dataflow: bool) -> Option<String> {
    if dataflow && workgroups <= 1 {
        Some(ONE_WORKGROUP.to_string())
    } else {
        program
    }
}

/// The packing obstacle of every step of one group, in order: `steps[i]` is (workgroup size,
/// [`packing_needs`] of the step's Program, its workgroup count); `dataflow` as in
/// [`group_obstacle`]. Beyond each step's own [`PackNeeds::obstacle`], the fused kernel's
/// workgroup memory stays within the 48 KiB a Program may declare (V008): starting from
/// every step's buffers once, a step whose `P` copies would take the total past it masks
/// (steps are granted their copies in order; a step that masks later for its group's sake
/// keeps its share, which only errs on the safe side).
pub fn group_obstacles(
    steps: &[([u32; 3], PackNeeds, u64)],
    dataflow: bool,
) -> Vec<Option<String>> {
    let block = block_size(steps.iter().map(|s| s.0));
    let limit = crate::validate::MAX_SHARED_BYTES;
    let mut total: u64 = steps
        .iter()
        .fold(0u64, |t, s| t.saturating_add(s.1.shared_bytes));
    steps
        .iter()
        .map(|(wg, needs, workgroups)| {
            let own = needs.obstacle(wg[0], block[0]);
            let own = own.or_else(|| {
                let copies = u64::from(needs.copies(wg[0], block[0]));
                let extra = needs.shared_bytes.saturating_mul(copies.saturating_sub(1));
                if extra == 0 || (dataflow && *workgroups <= 1) {
                    return None;
                }
                let with = total.saturating_add(extra);
                if with > limit {
                    return Some(format!(
                        "its {copies} copies of {} B of workgroup (shared) memory would take the \
                         fused kernel's to {with} B, more than the {} KiB a kernel may declare",
                        needs.shared_bytes,
                        limit / 1024
                    ));
                }
                total = with;
                None
            });
            group_obstacle(own, *workgroups, dataflow)
        })
        .collect()
}

/// The layout of every step of one group: `steps[i]` is (pipeline step index, workgroup
/// size, [`group_obstacle`] of the step); `grid_after[i]` is true when a grid barrier
/// separates position `i` from `i + 1`; `dataflow` when the group runs the dataflow sync
/// form (one mapping per size over the whole group). The block is [`block_size`] of the
/// steps.
pub fn step_layouts(
    steps: &[(usize, [u32; 3], Option<&str>)],
    grid_after: &[bool],
    dataflow: bool,
) -> Vec<StepLayout> {
    let block = block_size(steps.iter().map(|s| s.1));
    let mut out: Vec<StepLayout> = steps
        .iter()
        .map(|&(_, w, obstacle)| {
            let threads = w[0];
            let masked = |reason: String| StepLayout::Masked { threads, reason };
            if w == block {
                StepLayout::Whole
            } else if let Some(o) = obstacle {
                masked(o.to_string())
            } else if w[1] != 1 || w[2] != 1 || block[1] != 1 || block[2] != 1 {
                masked("multi-dimensional".to_string())
            } else if threads == 0 || block[0] % threads != 0 {
                masked(format!(
                    "{threads} does not divide the block's {}",
                    block[0]
                ))
            } else {
                StepLayout::Packed {
                    tasks: block[0] / threads,
                    threads,
                }
            }
        })
        .collect();
    // Within a run of steps without a grid barrier, one mapping per size.
    let mut start = 0;
    for end in 1..=steps.len() {
        let barrier = !dataflow && grid_after.get(end - 1).copied().unwrap_or(true);
        if end < steps.len() && !barrier {
            continue;
        }
        for i in start..end {
            if out[i].packed().is_none() {
                continue;
            }
            let masked = (start..end)
                .find(|&j| steps[j].1 == steps[i].1 && matches!(out[j], StepLayout::Masked { .. }));
            if let Some(j) = masked {
                out[i] = StepLayout::Masked {
                    threads: steps[i].1[0],
                    reason: if dataflow {
                        format!(
                            "step {} of the same size masks (a dataflow group maps each size \
                             one way)",
                            steps[j].0
                        )
                    } else {
                        format!(
                            "step {} of the same size masks and no grid barrier separates them",
                            steps[j].0
                        )
                    },
                };
            }
        }
        start = end;
    }
    out
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
        let e = check_sizes(&[(0, [16, 16, 1], false), (3, [64, 1, 1], false)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("step 0") && e.contains("multi-dimensional"),
            "{e}"
        );
    }

    #[test]
    fn partial_subgroups_with_subgroup_ops_break() {
        let e = check_sizes(&[(0, [256, 1, 1], false), (1, [48, 1, 1], true)]).unwrap_err();
        assert_eq!(
            e,
            SizeMismatch::PartialSubgroup {
                step: 1,
                threads: 48,
                block: 256
            }
        );
        assert_eq!(
            e.to_string(),
            "step 1 runs 48 threads, not a multiple of the 32-thread subgroup, and uses subgroup \
             operations, so in a block of 256 threads its last subgroup would hold masked threads"
        );
        // The same size without subgroup operations, or the largest step itself, is fine.
        assert!(check_sizes(&[(0, [256, 1, 1], false), (1, [48, 1, 1], false)]).is_ok());
        assert!(check_sizes(&[(0, [48, 1, 1], true), (1, [16, 1, 1], false)]).is_ok());
    }

    fn layouts(steps: &[(usize, u32, Option<&str>)], grid_after: &[bool], df: bool) -> Vec<String> {
        let steps: Vec<_> = steps.iter().map(|&(k, s, o)| (k, [s, 1, 1], o)).collect();
        step_layouts(&steps, grid_after, df)
            .iter()
            .map(|l| l.describe(1024))
            .collect()
    }

    #[test]
    fn smaller_steps_without_obstacles_pack_others_mask() {
        let got = layouts(
            &[
                (0, 256, None),
                (1, 1024, None),
                (2, 256, Some("it uses subgroup operations")),
                (3, 96, None),
                (4, 128, None),
            ],
            &[true, true, true, true],
            false,
        );
        assert_eq!(got[0], "packed 4 x 256 in 1024");
        assert_eq!(got[1], "whole block");
        assert_eq!(got[2], "masked 256 of 1024 (it uses subgroup operations)");
        assert!(got[3].starts_with("masked 96 of 1024") && got[3].contains("divide"));
        assert_eq!(got[4], "packed 8 x 128 in 1024");
        assert_eq!(
            step_layouts(
                &[(0, [256, 1, 1], None), (1, [1024, 1, 1], None)],
                &[true],
                false
            )[0]
            .tasks(),
            4
        );
    }

    #[test]
    fn dataflow_groups_pack_but_one_workgroup_steps_and_one_mapping_per_size() {
        let got = layouts(&[(0, 256, None), (1, 1024, None)], &[true], true);
        assert_eq!(got[0], "packed 4 x 256 in 1024");
        // A fold (one workgroup) masks.
        let fold = group_obstacle(None, 1, true);
        assert_eq!(fold.as_deref(), Some(ONE_WORKGROUP));
        assert_eq!(group_obstacle(None, 1, false), None);
        assert_eq!(group_obstacle(None, 7, true), None);
        let got = layouts(&[(0, 1024, None), (1, 256, fold.as_deref())], &[true], true);
        assert!(got[1].contains(ONE_WORKGROUP), "{got:?}");
        // Grid separations do not split the mapping rule in a dataflow group: step 4 (256)
        // masks because step 2 (256, subgroup operations) does, though grid barriers lie between.
        let steps = [
            (0, 1024, None),
            (2, 256, Some("it uses subgroup operations")),
            (4, 256, None),
        ];
        let got = layouts(&steps, &[true, true], true);
        assert!(got[2].contains("step 2 of the same size masks"), "{got:?}");
        let got = layouts(&steps, &[true, true], false);
        assert_eq!(got[2], "packed 4 x 256 in 1024");
    }

    #[test]
    fn one_mapping_per_size_between_grid_barriers() {
        // Steps 1 and 2 (same size, no grid barrier between them) must map alike: 2 masks, so
        // 1 masks too. Step 4 is behind a grid barrier and packs.
        let steps = [
            (0, 1024, None),
            (1, 256, None),
            (2, 256, Some("it uses subgroup operations")),
            (3, 1024, None),
            (4, 256, None),
        ];
        let got = layouts(&steps, &[true, false, true, true], false);
        assert!(got[1].contains("step 2 of the same size masks"), "{got:?}");
        assert!(got[2].contains("subgroup"), "{got:?}");
        assert_eq!(got[4], "packed 4 x 256 in 1024");
        // With a grid barrier between 1 and 2, step 1 packs.
        let got = layouts(&steps, &[true, true, true, true], false);
        assert_eq!(got[1], "packed 4 x 256 in 1024");
    }

    #[test]
    fn packed_copies_keep_the_group_within_48_kib() {
        let tile = |bytes: u64| PackNeeds {
            shared_bytes: bytes,
            ..PackNeeds::default()
        };
        // 4 copies of 8 KiB (32 KiB) and the 1024-thread step's 8 KiB: 40 KiB, fine.
        let steps = [
            ([256, 1, 1], tile(8 * 1024), 64),
            ([1024, 1, 1], tile(8 * 1024), 16),
        ];
        assert_eq!(group_obstacles(&steps, false), [None, None]);
        // A second 8 KiB tile step would need 32 KiB more: it masks, named; the first packs.
        let steps = [
            ([256, 1, 1], tile(8 * 1024), 64),
            ([1024, 1, 1], tile(8 * 1024), 16),
            ([256, 1, 1], tile(8 * 1024), 64),
        ];
        let got = group_obstacles(&steps, false);
        assert_eq!(got[..2], [None, None]);
        let r = got[2].clone().unwrap_or_default();
        assert!(r.contains("4 copies") && r.contains("48 KiB"), "{r}");
        // A one-workgroup step of a dataflow group masks for that reason, and takes no share.
        let got = group_obstacles(
            &[
                ([256, 1, 1], tile(16 * 1024), 1),
                ([1024, 1, 1], tile(0), 4),
            ],
            true,
        );
        assert_eq!(got[0].as_deref(), Some(ONE_WORKGROUP));
    }

    #[test]
    fn obstacles_are_named() {
        let p = |body: &str, extra: &str| {
            let text = format!(
                r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1], "buffers": [
                    {{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}}{extra}],
                    "body": [{body}]}}"#
            );
            crate::ir::parse::parse_program(&text, "t.json").expect("parses")
        };
        let store = r#"{"store": "a", "index": {"gid": "x"}, "value": 1}"#;
        let obstacle = |body: &str, extra: &str, block: u32| {
            packing_needs(&p(body, extra)).obstacle(64, block)
        };
        assert_eq!(obstacle(store, "", 256), None);
        // Workgroup barriers and shared memory pack (as sub-task barriers and copies).
        let barrier = format!(r#"{store}, {{"barrier": "workgroup"}}"#);
        assert_eq!(obstacle(&barrier, "", 256), None);
        assert!(packing_needs(&p(&barrier, "")).barriers);
        let shared = r#", {"name": "t", "access": "workgroup", "type": "u32", "count": 64}"#;
        assert_eq!(obstacle(store, shared, 256), None);
        assert_eq!(packing_needs(&p(store, shared)).shared_bytes, 256);
        assert_eq!(packing_needs(&p(store, shared)).copies(64, 256), 4);
        // ... but not beyond 15 hardware barriers, nor beyond 48 KiB of copies.
        assert!(obstacle(&barrier, "", 1024).is_some_and(|r| r.contains("16 sub-tasks")));
        let partial = packing_needs(&p(&barrier, "")).obstacle(48, 96);
        assert!(partial.is_some_and(|r| r.contains("not a multiple of the 32")));
        let big = r#", {"name": "t", "access": "workgroup", "type": "u32", "count": 4096}"#;
        let r = obstacle(store, big, 1024).unwrap_or_default();
        assert!(r.contains("16 copies") && r.contains("48 KiB"), "{r}");
        assert_eq!(packing_needs(&p(store, big)).copies(64, 1024), 1);
        let lane = r#"{"store": "a", "index": {"gid": "x"}, "value": {"lane": {}}}"#;
        assert!(obstacle(lane, "", 256).is_some_and(|r| r.contains("lane")));
        let own = r#"{"barrier": "subtask", "threads": 32}"#;
        assert!(obstacle(own, "", 256).is_some_and(|r| r.contains("sub-task barriers")));
        // A workgroup-buffer index the rewrite would evaluate twice: an atomic in it, or a
        // load of memory the step writes; a load of a read-only buffer is fine.
        let racy = r#"{"store": "t", "index": {"load": "a", "index": 0}, "value": 1}"#;
        assert!(obstacle(racy, shared, 256).is_some_and(|r| r.contains("twice")));
        let ro = r#", {"name": "r", "binding": 1, "access": "read", "type": "u32"},
            {"name": "t", "access": "workgroup", "type": "u32", "count": 64}"#;
        let fine = r#"{"store": "t", "index": {"load": "r", "index": 0}, "value": 1}"#;
        assert_eq!(obstacle(fine, ro, 256), None);
    }
}
