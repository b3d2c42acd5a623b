//! The dataflow schedule a fused kernel actually runs, read back from its statements, and
//! the check that runs before every dataflow launch: [`check_emitted`] rebuilds the
//! [`Schedule`] from the kernel's [`SyncOp`]s (not from the plan) and hands it to
//! [`validate`], so a wait lost or mis-sized by emission is refused like a planner bug.
//!
//! Besides what the validator checks, reading back checks that every wait has a publisher:
//! a wait on flags needs its producer step to set exactly those flags, a wait on a count
//! needs the producer step to count every task, and no two steps share scratch words.

use std::collections::BTreeMap;

use crate::ir::{Stmt, StmtKind, SyncOp, WaitOn, SYNC_FIRST_WORD};

use super::fuse::FusedKernel;
use super::tiles::{ProducerSet, TileDep};
use super::validate::{validate, CounterReset, Fold, Schedule, ScheduleError, Wait};

fn refuse<T>(message: String) -> Result<T, ScheduleError> {
    Err(ScheduleError {
        message,
        fix: "this is a fusion bug: run the pipeline with `--sync barrier` and report the \
              pipeline file"
            .to_string(),
    })
}

fn collect<'a>(list: &'a [Stmt], out: &mut Vec<&'a SyncOp>) {
    for s in list {
        match &s.kind {
            StmtKind::Sync(op) => out.push(op),
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect(then, out);
                collect(otherwise, out);
            }
            StmtKind::Loop { body, .. } | StmtKind::Block(body) => collect(body, out),
            _ => {}
        }
    }
}

/// Every dataflow statement of `kernel`, in program order.
pub fn sync_ops(kernel: &FusedKernel) -> Vec<&SyncOp> {
    let mut out = Vec::new();
    collect(&kernel.program.body, &mut out);
    out
}

/// What one step publishes: (flag words, counter word, arrivals (fold, total)).
#[derive(Default)]
struct Published {
    flags: Option<u32>,
    counter: Option<u32>,
    total: Option<u32>,
}

/// The schedule `kernel` runs (`steps`: `(step, workgroups)` in execution order; the blocks
/// are the kernel's persistent grid, virtual workgroup `g` on block `g mod blocks`).
pub fn emitted_schedule(
    kernel: &FusedKernel,
    steps: &[(usize, u64)],
) -> Result<Schedule, ScheduleError> {
    let wgs = |s: usize| steps.iter().find(|x| x.0 == s).map(|x| x.1);
    let mut published: BTreeMap<usize, Published> = BTreeMap::new();
    let mut waits = Vec::new();
    let mut folds = Vec::new();
    let ops = sync_ops(kernel);
    for op in &ops {
        match op {
            SyncOp::Signal {
                step,
                flags,
                counter,
                ..
            } => {
                let p = published.entry(*step as usize).or_default();
                p.flags = p.flags.or(*flags);
                if counter.is_some() {
                    p.counter = *counter;
                }
            }
            SyncOp::Arrive {
                step,
                fold,
                counter,
                total,
                ..
            } => {
                let p = published.entry(*step as usize).or_default();
                p.counter = Some(*counter);
                p.total = Some(*total);
                folds.push(Fold {
                    step: *fold as usize,
                    after: *step as usize,
                });
            }
            SyncOp::Wait { .. } => {}
        }
    }
    // Words: inside the zeroed scratch past the grid barrier's, no two steps sharing one.
    let mut words: Vec<(u32, u32, usize)> = Vec::new();
    for (&s, p) in &published {
        let n = wgs(s).unwrap_or(0);
        if let Some(f) = p.flags {
            words.push((f, u32::try_from(n).unwrap_or(u32::MAX), s));
        }
        if let Some(c) = p.counter {
            words.push((c, 1, s));
        }
        if let Some(t) = p.total {
            if u64::from(t) != n {
                return refuse(format!(
                    "step {s}'s tasks arrive expecting {t} arrivals, but it has {n} workgroups"
                ));
            }
        }
    }
    words.sort();
    for w in &words {
        if w.0 < SYNC_FIRST_WORD {
            return refuse(format!(
                "step {} publishes in scratch word {}, which the grid barrier uses",
                w.2, w.0
            ));
        }
    }
    for pair in words.windows(2) {
        if u64::from(pair[0].0) + u64::from(pair[0].1) > u64::from(pair[1].0) {
            return refuse(format!(
                "steps {} and {} publish in overlapping scratch words",
                pair[0].2, pair[1].2
            ));
        }
    }
    for op in &ops {
        let SyncOp::Wait {
            consumer,
            producer,
            on,
            ..
        } = op
        else {
            continue;
        };
        let (c, p) = (*consumer as usize, *producer as usize);
        let n = wgs(p).unwrap_or(0);
        let pub_ = published.get(&p);
        let producers = match *on {
            WaitOn::Window {
                flags,
                producers,
                lo,
                hi,
            } => {
                if pub_.and_then(|x| x.flags) != Some(flags) || u64::from(producers) != n {
                    return refuse(format!(
                        "step {c} waits on flags of step {p} that step {p} does not set"
                    ));
                }
                ProducerSet::Window {
                    lo: i64::from(lo),
                    hi: i64::from(hi),
                }
            }
            WaitOn::Range {
                flags,
                producers,
                first,
                last,
            } => {
                if pub_.and_then(|x| x.flags) != Some(flags) || u64::from(producers) != n {
                    return refuse(format!(
                        "step {c} waits on flags of step {p} that step {p} does not set"
                    ));
                }
                ProducerSet::Range {
                    first: u64::from(first),
                    last: u64::from(last),
                }
            }
            WaitOn::Count { counter, total } => {
                if pub_.and_then(|x| x.counter) != Some(counter) || u64::from(total) != n {
                    return refuse(format!(
                        "step {c} waits for step {p}'s counter to reach {total}, but step {p} does not count its {n} tasks there"
                    ));
                }
                ProducerSet::All
            }
        };
        waits.push(Wait {
            consumer: c,
            producer: p,
            producers,
        });
    }
    let blocks = kernel.shape.grid[0];
    let mut s = Schedule::round_robin_with_folds(steps, blocks, &[], CounterReset::Zeroed, &folds);
    s.waits = waits;
    Ok(s)
}

/// Refuses `kernel` unless the schedule it emits is valid for the producer sets `required`
/// (run by fusion on every dataflow kernel, so nothing unchecked is ever launched).
/// Counters and flags are [`CounterReset::Zeroed`]: they live in the grid-sync scratch,
/// which the runtime zeroes before every cooperative launch.
pub fn check_emitted(
    kernel: &FusedKernel,
    steps: &[(usize, u64)],
    required: &[TileDep],
) -> Result<Schedule, ScheduleError> {
    let s = emitted_schedule(kernel, steps)?;
    validate(&s, required)?;
    Ok(s)
}
