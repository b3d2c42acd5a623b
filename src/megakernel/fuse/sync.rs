//! Dataflow synchronisation of a fused persistent group (`--sync dataflow`): which step
//! publishes what, which task waits for what, and which one-workgroup fold the last arriver
//! runs. [`SyncLayout::new`] decides it from the group's producer sets; `super::step_stmt`
//! puts the statements around each task.
//!
//! Per dependence of step B on an earlier step A (a [`TileDep`] with producers):
//! - B has one workgroup, A runs just before it and covers all of A: **last-arriver fold**.
//!   Every block arrives on A's counter after its last task of A; the block whose arrival
//!   completes it runs B.
//! - A has one workgroup (and is not a fold run just before B): B waits for its one **flag**
//!   (a broadcast).
//! - every workgroup of A (`all`, or a range or window as wide as A): B waits for **A's
//!   counter** to reach the launch's block count: every block adds one after its last task
//!   of A (so a counter takes one atomic per block, not per task).
//! - otherwise B waits for the **flags** of its producer window or range (A's tasks each set
//!   their own flag).
//!
//! Scratch words (never cleared between launches: `emit::dataflow`) are laid out as
//! [`ScratchLayout`] says, from [`ScratchLayout::FIRST_COUNTER`]: each counted step's counter
//! (or a spread fold's counters), in step order; then, from [`ScratchLayout::FIRST_FLAG`] (or
//! after the counters, if there are more), the flags (one per workgroup) of each step someone
//! waits on by flags.

use std::collections::BTreeMap;

use crate::ir::{BlockTasks, ScratchLayout, Stmt, StmtKind, SyncOp, WaitOn};

/// Sub-counters of a spread last-arriver fold (`SyncOp::Arrive::spread`): with 2112 blocks,
/// 132 arrivals on each and 16 on the top counter, instead of 2112 on one word.
pub const FOLD_SPREAD: u32 = 16;

/// Persistent grids from this many blocks on arrive through [`FOLD_SPREAD`] sub-counters.
/// On an H200 (`benches/gpu/fold_arrival.cu`, every block arriving at once) the last
/// arrival reached the fold after 0.70 / 0.83 / 1.15 / 1.98 / 3.49 us on one counter with
/// 264 / 528 / 1024 / 2112 / 4224 blocks, and after 1.28 / 1.28 / 1.34 / 1.57 / 1.89 us
/// spread (two acquire-release round trips), so one counter wins up to about 1500 blocks.
/// The fused kernels agreed: at 1024-1056 blocks one counter shortened the kernel span of
/// softmax by 1.0 us, reduce + normalise by 0.6 us and hist_equalize_shared by 0.5 us.
pub const FOLD_SPREAD_FROM_BLOCKS: u32 = 1536;

use super::super::tiles::{ProducerSet, SyncLabel, TileDep};
use super::rewrite;

/// Where one step's completion goes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Publish {
    flags: Option<u32>,
    counter: Option<u32>,
    /// The one-workgroup step the last arriver runs after this step.
    fold: Option<usize>,
    /// Sub-counters of the fold's arrival (0: one counter).
    spread: u32,
    /// The step's workgroups, when its flags are set once per block after the block's last
    /// task (more tasks than blocks) instead of after each task.
    batched: Option<u32>,
}

/// The dataflow statements of one group.
#[derive(Debug, Clone, Default)]
pub(super) struct SyncLayout {
    publish: BTreeMap<usize, Publish>,
    /// Waits of each consumer step: (producer step, what).
    waits: BTreeMap<usize, Vec<(usize, WaitOn)>>,
    /// Fold step -> the producer step whose last arriver runs it.
    folds: BTreeMap<usize, usize>,
    /// Blocks of the launch: every one adds to a counter once per step.
    blocks: u32,
    /// Sub-tasks per block of each packed step (`super::super::mixed`; absent: one).
    packs: BTreeMap<usize, u32>,
}

/// Variable that is true in the block that runs fold step `k`.
/// True for a wait statement whose producers do not depend on the task (a counter, or a
/// fixed range of flags such as a broadcast), as opposed to a window around the task's own
/// workgroup.
pub(super) fn is_fixed_wait(s: &Stmt) -> bool {
    matches!(
        &s.kind,
        StmtKind::Sync(SyncOp::Wait {
            on: WaitOn::Count { .. } | WaitOn::Range { .. },
            ..
        })
    )
}

pub(super) fn last_var(k: usize) -> String {
    format!("f{k}_last")
}

/// Variable of step `k`'s virtual workgroup id (as `rewrite::VirtualLoop` names it).
pub(super) fn workgroup_var(k: usize) -> String {
    format!("f{k}_v")
}

/// Variable of the first virtual workgroup of a packed step `k`'s block trip (as
/// `rewrite::VirtualLoop` names it): its sub-tasks run that one and the next `P - 1`.
pub(super) fn trip_var(k: usize) -> String {
    format!("f{k}_trip")
}

impl SyncLayout {
    /// The layout for steps `steps` (in execution order) with `workgroups[i]` workgroups,
    /// `packs[i]` of them side by side in a block, and the required producer sets `deps`.
    pub(super) fn new(
        steps: &[usize],
        workgroups: &[u64],
        packs: &[u32],
        deps: &[TileDep],
        blocks: u32,
    ) -> SyncLayout {
        let pos = |s: usize| steps.iter().position(|&x| x == s);
        let wgs = |s: usize| pos(s).and_then(|i| workgroups.get(i)).copied().unwrap_or(0);
        let mut l = SyncLayout {
            packs: steps
                .iter()
                .zip(packs)
                .filter(|(_, &p)| p > 1)
                .map(|(&s, &p)| (s, p))
                .collect(),
            ..SyncLayout::default()
        };
        // What each dependence needs, before words are given out.
        #[derive(Clone, Copy)]
        enum Need {
            Flags(ProducerSet),
            Count,
        }
        let mut needs: Vec<(usize, usize, Need)> = Vec::new();
        for d in deps.iter().filter(|d| d.producers != ProducerSet::Empty) {
            let (ga, gb) = (wgs(d.from), wgs(d.to));
            let covers_all = {
                let r = d.producers.producers_of(0, ga);
                d.producers == ProducerSet::All
                    || (gb <= 1 && !r.is_empty() && *r.start() == 0 && *r.end() + 1 >= ga)
            };
            let adjacent = matches!((pos(d.from), pos(d.to)), (Some(a), Some(b)) if a + 1 == b);
            let fold_taken = l.publish.get(&d.from).is_some_and(|p| p.fold.is_some());
            if gb == 1 && covers_all && adjacent && !fold_taken && !l.folds.contains_key(&d.to) {
                l.folds.insert(d.to, d.from);
                l.publish.entry(d.from).or_default().fold = Some(d.to);
                continue;
            }
            let window_fits = match d.producers {
                ProducerSet::Window { lo, hi } => {
                    i32::try_from(lo).is_ok() && i32::try_from(hi).is_ok()
                }
                ProducerSet::WindowBoundary { lo, hi, edges } => {
                    i32::try_from(lo).is_ok()
                        && i32::try_from(hi).is_ok()
                        && edges
                            .into_iter()
                            .flatten()
                            .all(|e| u32::try_from(e[1]).is_ok())
                        && d.label != SyncLabel::AllToAll
                }
                ProducerSet::Range { first, last } => {
                    u32::try_from(first).is_ok() && u32::try_from(last).is_ok()
                }
                _ => false,
            };
            let need = if ga == 1 {
                // All of a one-workgroup step is its one flag: a broadcast, set once and
                // polled only by its consumers, instead of a counter every block must add
                // to (1056 atomics on one word cost more than the wait they guard).
                Need::Flags(ProducerSet::Range { first: 0, last: 0 })
            } else if covers_all || !window_fits {
                Need::Count
            } else if let ProducerSet::WindowBoundary { lo, hi, edges } = d.producers {
                // The window's flags, then each boundary range's: separate waits, which the
                // plan validator joins when it checks coverage.
                needs.push((d.from, d.to, Need::Flags(ProducerSet::Window { lo, hi })));
                for [first, last] in edges.into_iter().flatten() {
                    needs.push((
                        d.from,
                        d.to,
                        Need::Flags(ProducerSet::Range { first, last }),
                    ));
                }
                continue;
            } else {
                Need::Flags(d.producers)
            };
            needs.push((d.from, d.to, need));
        }
        // Words: counters first, step by step, then flags (a word keeps one use: a flag
        // holds an epoch, a counter needs its low bits clear; `emit::dataflow`).
        let mut next = ScratchLayout::FIRST_COUNTER;
        for &s in steps {
            let waited = needs.iter().any(|n| n.0 == s && matches!(n.2, Need::Count));
            let folded = l.publish.get(&s).is_some_and(|p| p.fold.is_some());
            if waited || folded {
                let p = l.publish.entry(s).or_default();
                p.counter = Some(next);
                // A counter someone waits on stays one word: each block's wait reads the
                // top bit its own arrival saw, and a spread arrival does not see the top's.
                if folded && !waited && blocks >= FOLD_SPREAD_FROM_BLOCKS {
                    p.spread = FOLD_SPREAD;
                    next = ScratchLayout::spread_word(next, FOLD_SPREAD - 1);
                }
                next = next.saturating_add(1);
            }
        }
        let mut next = next.max(ScratchLayout::FIRST_FLAG);
        for &s in steps {
            let flags = needs
                .iter()
                .any(|n| n.0 == s && matches!(n.2, Need::Flags(_)));
            if flags {
                let p = l.publish.entry(s).or_default();
                p.flags = Some(next);
                // A block with several tasks of the step publishes them together, behind one
                // fence, after its last: its consumers' first tasks need its neighbours' tasks
                // of the same round anyway, and each task's own `bar.sync` + release store
                // cost a memory barrier (on an H200, the 2^20 stencil with four tasks per
                // block: docs/benchmarks-history.md, 2026-12-04, builds e47f5a7-7154200). A
                // packed step always does: its per-sub-task `v < G` test is no place for a
                // `bar.sync`.
                if wgs(s) > u64::from(blocks) || l.packs.contains_key(&s) {
                    p.batched = u32::try_from(wgs(s)).ok();
                }
                next = next.saturating_add(u32::try_from(wgs(s)).unwrap_or(u32::MAX));
            }
        }
        l.blocks = blocks;
        for (from, to, need) in needs {
            let p = l.publish.get(&from).cloned().unwrap_or_default();
            let producers = u32::try_from(wgs(from)).unwrap_or(u32::MAX);
            let on = match need {
                Need::Count => WaitOn::Count {
                    counter: p.counter.unwrap_or(0),
                    total: blocks,
                },
                Need::Flags(ProducerSet::Window { lo, hi }) => WaitOn::Window {
                    flags: p.flags.unwrap_or(0),
                    producers,
                    lo: lo as i32,
                    hi: hi as i32,
                },
                Need::Flags(ProducerSet::Range { first, last }) => WaitOn::Range {
                    flags: p.flags.unwrap_or(0),
                    producers,
                    first: first as u32,
                    last: last as u32,
                },
                // Only windows and ranges get flags.
                Need::Flags(_) => WaitOn::Count {
                    counter: p.counter.unwrap_or(0),
                    total: blocks,
                },
            };
            l.waits.entry(to).or_default().push((from, on));
        }
        l
    }

    /// The producer step whose last arriver runs fold step `k`, if `k` is one.
    pub(super) fn fold_of(&self, k: usize) -> Option<usize> {
        self.folds.get(&k).copied()
    }

    /// Sub-tasks per block of step `k` (1 unless packed).
    pub(super) fn pack(&self, k: usize) -> u32 {
        self.packs.get(&k).copied().unwrap_or(1)
    }

    /// The statements that open task `workgroup_var(k)` of step `k`: its waits. A packed
    /// step's waits open the block's trip instead (outside the per-sub-task test, from
    /// `trip_var(k)`), for all its sub-tasks at once.
    pub(super) fn before_task(&self, k: usize) -> Vec<Stmt> {
        let span = self.pack(k);
        let workgroup = if span > 1 {
            trip_var(k)
        } else {
            workgroup_var(k)
        };
        self.waits
            .get(&k)
            .map(|ws| {
                ws.iter()
                    .map(|&(from, on)| {
                        rewrite::synth(StmtKind::Sync(SyncOp::Wait {
                            consumer: k as u32,
                            producer: from as u32,
                            on,
                            workgroup: workgroup.clone(),
                            span,
                        }))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Step `k`'s waits once for all the block's tasks, before its first (`first`: the
    /// variable holding that task's virtual workgroup). Only for fixed waits
    /// ([`is_fixed_wait`]): they are the same for every task of the step, so waiting before
    /// the first task is waiting before each.
    pub(super) fn before_first_task(&self, k: usize, first: &str) -> Vec<Stmt> {
        let mut waits = self.before_task(k);
        for w in &mut waits {
            if let StmtKind::Sync(SyncOp::Wait { workgroup, .. }) = &mut w.kind {
                *workgroup = first.to_string();
            }
        }
        waits
    }

    /// The statement that closes task `workgroup_var(k)` of step `k`: publish its flag.
    pub(super) fn after_task(&self, k: usize) -> Vec<Stmt> {
        match self.publish.get(&k) {
            Some(Publish {
                flags: Some(flags),
                batched: None,
                ..
            }) => vec![rewrite::synth(StmtKind::Sync(SyncOp::Signal {
                step: k as u32,
                flags: Some(*flags),
                counter: None,
                workgroup: workgroup_var(k),
                tasks: None,
            }))],
            _ => Vec::new(),
        }
    }

    /// The statement after a block's last task of step `k` (after the loop over its virtual
    /// workgroups, reached by every block): count the block on the step's counter, as an
    /// arrival when the last arriver runs a fold.
    pub(super) fn after_step(&self, k: usize) -> Vec<Stmt> {
        let Some(p) = self.publish.get(&k) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let (Some(flags), Some(count)) = (p.flags, p.batched) {
            out.push(rewrite::synth(StmtKind::Sync(SyncOp::Signal {
                step: k as u32,
                flags: Some(flags),
                counter: None,
                workgroup: workgroup_var(k),
                tasks: Some(BlockTasks {
                    stride: self.blocks,
                    count,
                    pack: self.pack(k),
                }),
            })));
        }
        let Some(c) = p.counter else {
            return out;
        };
        out.push(rewrite::synth(StmtKind::Sync(match p.fold {
            Some(f) => SyncOp::Arrive {
                step: k as u32,
                fold: f as u32,
                counter: c,
                total: self.blocks,
                last: last_var(f),
                spread: p.spread,
            },
            None => SyncOp::Signal {
                step: k as u32,
                flags: None,
                counter: Some(c),
                workgroup: workgroup_var(k),
                tasks: None,
            },
        })));
        out
    }

    /// `let f{k}_last = false` for every fold (at the start of the body).
    pub(super) fn declarations(&self) -> Vec<Stmt> {
        self.folds
            .keys()
            .map(|&f| rewrite::let_(&last_var(f), rewrite::bool_lit(false)))
            .collect()
    }
}
