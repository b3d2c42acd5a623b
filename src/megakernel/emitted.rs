//! The dataflow schedule a fused kernel actually runs, read back from its statements, and
//! the check that runs before every dataflow launch: [`check_emitted`] rebuilds the
//! [`Schedule`] from the kernel's [`SyncOp`]s (not from the plan) and hands it to
//! [`validate`], so a wait lost or mis-sized by emission is refused like a planner bug.
//!
//! Besides what the validator checks, reading back checks that every wait has a publisher:
//! a wait on flags needs its producer step to set exactly those flags, a wait on a count
//! needs the producer step to count every task, and no two steps share scratch words.

use std::collections::BTreeMap;

use crate::ir::{ScratchLayout, Stmt, StmtKind, SyncOp, WaitOn};

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

/// Collects the dataflow statements of `list`, each with whether it sits inside an `if` or a
/// loop (`nested`): a per-block count must not, or a block would count less or more than once.
fn collect<'a>(list: &'a [Stmt], nested: bool, out: &mut Vec<(&'a SyncOp, bool)>) {
    for s in list {
        match &s.kind {
            StmtKind::Sync(op) => out.push((op, nested)),
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect(then, true, out);
                collect(otherwise, true, out);
            }
            StmtKind::Loop { body, .. } => collect(body, true, out),
            StmtKind::Block(body) => collect(body, nested, out),
            _ => {}
        }
    }
}

/// Every dataflow statement of `kernel`, in program order.
pub fn sync_ops(kernel: &FusedKernel) -> Vec<&SyncOp> {
    let mut out = Vec::new();
    collect(&kernel.program.body, false, &mut out);
    out.into_iter().map(|(op, _)| op).collect()
}

/// What one step publishes: (flag words, counter word, arrivals (fold, total)).
#[derive(Default)]
struct Published {
    flags: Option<u32>,
    counter: Option<u32>,
    /// Words from `counter` on that the step's counting uses (more for a spread arrival).
    counter_words: u32,
    total: Option<u32>,
}

/// The launch a schedule is read back against: the steps' workgroups, the sub-tasks per
/// block of each step as fusion laid them out (`super::mixed`), and the persistent grid.
struct Launch<'a> {
    steps: &'a [(usize, u64)],
    packs: BTreeMap<usize, u32>,
    blocks: u32,
}

impl Launch<'_> {
    /// Workgroups of step `s`, when it is one of the launch's.
    fn wgs(&self, s: usize) -> Option<u64> {
        self.steps.iter().find(|x| x.0 == s).map(|x| x.1)
    }

    /// Sub-tasks per block trip of step `s`.
    fn pack(&self, s: usize) -> u32 {
        self.packs.get(&s).copied().unwrap_or(1)
    }
}

/// The schedule `kernel` runs (`steps`: `(step, workgroups)` in execution order; the blocks
/// are the kernel's persistent grid, virtual workgroup `g` on block `g mod blocks`). A
/// counter that every block adds to once after its tasks of a step (outside the step's loop)
/// reaches the block count only when every task of the step has finished: a wait on it is a
/// wait on all of them, and the block whose arrival is the last has finished its own.
pub fn emitted_schedule(
    kernel: &FusedKernel,
    steps: &[(usize, u64)],
) -> Result<Schedule, ScheduleError> {
    let launch = Launch {
        steps,
        packs: kernel
            .steps
            .iter()
            .zip(&kernel.layouts)
            .map(|(&s, l)| (s, l.tasks()))
            .collect(),
        blocks: kernel.shape.grid[0],
    };
    let mut published: BTreeMap<usize, Published> = BTreeMap::new();
    let mut folds = Vec::new();
    let mut placed = Vec::new();
    collect(&kernel.program.body, false, &mut placed);
    for &(op, nested) in &placed {
        check_placed(&launch, op, nested)?;
        publish(op, &mut published, &mut folds);
    }
    check_words(&launch, &published)?;
    let mut waits = Vec::new();
    for &(op, _) in &placed {
        if let Some(w) = wait_of(&launch, op, &published)? {
            waits.push(w);
        }
    }
    // A packed step's wait covers `workgroup + lo ..= workgroup + span - 1 + hi` from its
    // trip's first sub-task: each of the trip's tasks `v` has at least `v + lo ..= v + hi`,
    // the window read back above.
    let mut s = Schedule::round_robin_packed(
        steps,
        launch.blocks,
        &[],
        CounterReset::Epoch,
        &folds,
        &launch.packs,
    );
    s.waits = waits;
    Ok(s)
}

/// Refuses a dataflow statement placed where it cannot mean what it says: a count inside a
/// loop or an `if`, flags over other tasks than the launch gives a block, or a sub-task
/// count other than the step's packing.
fn check_placed(launch: &Launch, op: &SyncOp, nested: bool) -> Result<(), ScheduleError> {
    let blocks = launch.blocks;
    let counts = matches!(
        op,
        SyncOp::Arrive { .. }
            | SyncOp::Signal {
                counter: Some(_),
                ..
            }
            | SyncOp::Signal { tasks: Some(_), .. }
    );
    if counts && nested {
        return refuse(format!(
            "`{}` sits inside a loop or an `if`: a block would not count exactly once",
            op.describe()
        ));
    }
    // Flags set for all of a block's tasks must name exactly the tasks the loop over
    // virtual workgroups gave that block.
    if let SyncOp::Signal {
        step,
        tasks: Some(t),
        ..
    } = op
    {
        let wgs = launch.wgs(*step as usize);
        if t.stride != blocks || Some(u64::from(t.count)) != wgs {
            return refuse(format!(
                "`{}` names the tasks of {} blocks over {} workgroups, but the launch has {blocks} blocks and step {step} {} workgroups",
                op.describe(),
                t.stride,
                t.count,
                wgs.map_or("no".to_string(), |n| n.to_string())
            ));
        }
        if t.pack != launch.pack(*step as usize) {
            return refuse(format!(
                "`{}` publishes {} sub-tasks per block trip, but step {step} runs {} side by side",
                op.describe(),
                t.pack,
                launch.pack(*step as usize)
            ));
        }
    }
    // A packed step's waits serve its block trip's sub-tasks together; anything else
    // waits for one task.
    if let SyncOp::Wait { consumer, span, .. } = op {
        if *span != launch.pack(*consumer as usize) {
            return refuse(format!(
                "`{}` serves {span} tasks at once, but step {consumer} runs {} side by side",
                op.describe(),
                launch.pack(*consumer as usize)
            ));
        }
    }
    Ok(())
}

/// Records what a signal or an arrival publishes (and an arrival's fold).
fn publish(op: &SyncOp, published: &mut BTreeMap<usize, Published>, folds: &mut Vec<Fold>) {
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
                p.counter_words = 1;
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
            p.counter_words = op.top_word().saturating_sub(*counter).saturating_add(1);
            p.total = Some(*total);
            folds.push(Fold {
                step: *fold as usize,
                after: *step as usize,
            });
        }
        SyncOp::Wait { .. } => {}
    }
}

/// Words: inside the zeroed scratch past the grid barrier's, no two steps sharing one; and
/// every arrival expects the launch's blocks.
fn check_words(
    launch: &Launch,
    published: &BTreeMap<usize, Published>,
) -> Result<(), ScheduleError> {
    let blocks = launch.blocks;
    let mut words: Vec<(u32, u32, usize)> = Vec::new();
    for (&s, p) in published {
        let n = launch.wgs(s).unwrap_or(0);
        if let Some(f) = p.flags {
            words.push((f, u32::try_from(n).unwrap_or(u32::MAX), s));
        }
        if let Some(c) = p.counter {
            words.push((c, p.counter_words.max(1), s));
        }
        if let Some(t) = p.total {
            if t != blocks {
                return refuse(format!(
                    "step {s}'s blocks arrive expecting {t} arrivals, but the launch has {blocks} blocks"
                ));
            }
        }
    }
    words.sort();
    for w in &words {
        if w.0 < ScratchLayout::FIRST_COUNTER {
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
    Ok(())
}

/// The wait `op` is (none for a signal or an arrival), refused unless its producer step
/// publishes what it waits on.
fn wait_of(
    launch: &Launch,
    op: &SyncOp,
    published: &BTreeMap<usize, Published>,
) -> Result<Option<Wait>, ScheduleError> {
    let SyncOp::Wait {
        consumer,
        producer,
        on,
        ..
    } = op
    else {
        return Ok(None);
    };
    let blocks = launch.blocks;
    let (c, p) = (*consumer as usize, *producer as usize);
    let n = launch.wgs(p).unwrap_or(0);
    let pub_ = published.get(&p);
    let unset_flags = || {
        refuse(format!(
            "step {c} waits on flags of step {p} that step {p} does not set"
        ))
    };
    let producers = match *on {
        WaitOn::Window {
            flags,
            producers,
            lo,
            hi,
        } => {
            if pub_.and_then(|x| x.flags) != Some(flags) || u64::from(producers) != n {
                return unset_flags();
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
                return unset_flags();
            }
            ProducerSet::Range {
                first: u64::from(first),
                last: u64::from(last),
            }
        }
        WaitOn::Count { counter, total } => {
            // Every block adds one after its last task of the producer step.
            if pub_.and_then(|x| x.counter) != Some(counter) || total != blocks {
                return refuse(format!(
                    "step {c} waits for step {p}'s counter to reach {total}, but each of the {blocks} blocks counts there once"
                ));
            }
            ProducerSet::All
        }
    };
    Ok(Some(Wait {
        consumer: c,
        producer: p,
        producers,
    }))
}

/// Refuses `kernel` unless the schedule it emits is valid for the producer sets `required`
/// (run by fusion on every dataflow kernel, so nothing unchecked is ever launched).
/// Counters and flags are [`CounterReset::Epoch`]: they live in the grid-sync scratch, which
/// is not cleared between launches; a flag holds its launch's epoch and a counter flips its
/// top bit once per launch (`emit::dataflow`), so no wait sees an earlier launch's value.
pub fn check_emitted(
    kernel: &FusedKernel,
    steps: &[(usize, u64)],
    required: &[TileDep],
) -> Result<Schedule, ScheduleError> {
    super::validate::check_size(steps)?;
    let s = emitted_schedule(kernel, steps)?;
    validate(&s, required)?;
    Ok(s)
}
