//! The plan validator: a dataflow schedule (tasks on blocks, waits on completion counters) is
//! checked before it may run.
//!
//! A [`Schedule`] is what a dataflow megakernel does: every block of a persistent grid runs
//! its list of tasks (one task = one virtual workgroup of one step) in order; a task first
//! waits until the completion counter of every producer task it needs has reached the
//! launch's target, runs, then adds one to its own counter. [`validate`] refuses a schedule
//! unless:
//! - every task of every step is assigned exactly once;
//! - every wait names a producer step that runs before its consumer step;
//! - the waits cover the required producer sets ([`super::tiles::TileDep`]) of every consumer
//!   workgroup (a dropped wait or a producer set that is too small breaks the semantics),
//!   directly or through a chain of waits (`chains`: a wait that others imply may be left
//!   out);
//! - running it, with every block resident and any interleaving, finishes: the simulation
//!   runs every block as far as its waits allow until no block can move; a block left waiting
//!   is a deadlock (a cycle, a wait that nothing satisfies, or a block waiting on a task
//!   assigned after it to itself), reported with the task and what it waits for;
//! - counters are reset between launches: the simulation runs two launches back to back, and
//!   a wait satisfied by a count left from the previous launch, before its producer ran in
//!   this one, is refused.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tiles::{ProducerSet, TileDep};

/// How completion counters start each launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterReset {
    /// The runtime zeroes the counters before every launch; a wait targets 1.
    Zeroed,
    /// Counters are never zeroed; launch `e` (from 1) waits for the count `e`.
    Epoch,
    /// Neither (a broken schedule the validator must refuse): counters keep their counts
    /// and a wait targets 1.
    Kept,
}

/// One task: virtual workgroup `workgroup` of step `step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Task {
    /// Pipeline step index.
    pub step: usize,
    /// Virtual workgroup of that step.
    pub workgroup: u64,
}

/// Every task of `consumer` waits for the counters of `producers` tasks of `producer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Wait {
    /// The waiting step.
    pub consumer: usize,
    /// The step waited for.
    pub producer: usize,
    /// Which of its workgroups.
    pub producers: ProducerSet,
}

/// A one-workgroup step run by the last arriver of its producer step: the block whose
/// task completes `after` (its arrival is the last) runs workgroup 0 of `step` next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fold {
    /// The fold step (one workgroup).
    pub step: usize,
    /// The producer step whose tasks arrive.
    pub after: usize,
}

/// A dataflow schedule of one fused group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// `(step, workgroups)` of the group's steps in execution order.
    pub steps: Vec<(usize, u64)>,
    /// Each block's tasks in the order it runs them.
    pub blocks: Vec<Vec<Task>>,
    /// Every wait.
    pub waits: Vec<Wait>,
    /// How counters start each launch.
    pub reset: CounterReset,
    /// Steps run by a last arriver instead of a fixed block (not in `blocks`).
    #[serde(default)]
    pub folds: Vec<Fold>,
}

/// Why a schedule may not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ScheduleError {
    /// What is wrong, naming the task, step or wait.
    pub message: String,
    /// What to do.
    pub fix: String,
}

fn fail<T>(message: String, fix: &str) -> Result<T, ScheduleError> {
    Err(ScheduleError {
        message,
        fix: fix.to_string(),
    })
}

const FIX_PLANNER: &str =
    "this is a planner bug: run the pipeline with `--sync barrier` and report the pipeline file";

impl Schedule {
    /// The schedule a dataflow megakernel runs: the group's steps in order, virtual
    /// workgroup `g` of every step on block `g % blocks`, each block taking its tasks step by
    /// step; the waits of `deps` (those with a non-empty producer set).
    pub fn round_robin(
        steps: &[(usize, u64)],
        blocks: u32,
        deps: &[TileDep],
        reset: CounterReset,
    ) -> Schedule {
        Schedule::round_robin_with_folds(steps, blocks, deps, reset, &[])
    }

    /// [`Schedule::round_robin`] where the steps of `folds` are run by their last arriver.
    pub fn round_robin_with_folds(
        steps: &[(usize, u64)],
        blocks: u32,
        deps: &[TileDep],
        reset: CounterReset,
        folds: &[Fold],
    ) -> Schedule {
        let none = BTreeMap::new();
        Schedule::round_robin_packed(steps, blocks, deps, reset, folds, &none)
    }

    /// [`Schedule::round_robin_with_folds`] where step `s` runs `packs[s]` workgroups side
    /// by side in a block (`super::mixed`): its virtual workgroup `g` is on block
    /// `(g / P) % blocks`; each block's tasks keep their order.
    pub fn round_robin_packed(
        steps: &[(usize, u64)],
        blocks: u32,
        deps: &[TileDep],
        reset: CounterReset,
        folds: &[Fold],
        packs: &BTreeMap<usize, u32>,
    ) -> Schedule {
        let n = u64::from(blocks.max(1));
        let mut lists: Vec<Vec<Task>> = vec![Vec::new(); n as usize];
        for &(step, wgs) in steps {
            if folds.iter().any(|f| f.step == step) {
                continue;
            }
            let p = u64::from(packs.get(&step).copied().unwrap_or(1).max(1));
            for g in 0..wgs {
                lists[((g / p) % n) as usize].push(Task { step, workgroup: g });
            }
        }
        Schedule {
            steps: steps.to_vec(),
            blocks: lists,
            waits: deps
                .iter()
                .filter(|d| d.producers != ProducerSet::Empty)
                .map(|d| Wait {
                    consumer: d.to,
                    producer: d.from,
                    producers: d.producers,
                })
                .collect(),
            reset,
            folds: folds.to_vec(),
        }
    }

    fn workgroups(&self, step: usize) -> Option<u64> {
        self.steps.iter().find(|s| s.0 == step).map(|s| s.1)
    }

    fn position(&self, step: usize) -> Option<usize> {
        self.steps.iter().position(|s| s.0 == step)
    }
}

/// Most tasks (virtual workgroups of all steps) a schedule may have: each is simulated
/// twice and kept in memory a few times over, so a group past it is refused rather than
/// checked for minutes (2^24 tasks: a step of 2^32 elements in workgroups of 256).
pub const MAX_TASKS: u64 = 1 << 24;

/// Checks `s` against the producer sets it must honour (see the module docs).
///
/// Time grows with the tasks and the waits' producer ranges, not with their product: a
/// wait on a fixed set (`All`, `Range`) is checked once per launch, however many consumer
/// tasks share it, and coverage is checked per range, not per producer.
pub fn validate(s: &Schedule, required: &[TileDep]) -> Result<(), ScheduleError> {
    check_size(&s.steps)?;
    check_assignment(s)?;
    check_waits(s)?;
    check_coverage(s, required)?;
    simulate(s)
}

/// Refuses a schedule of `steps` (`(step, workgroups)`) with more than [`MAX_TASKS`] tasks,
/// before any is built.
pub fn check_size(steps: &[(usize, u64)]) -> Result<(), ScheduleError> {
    let total = steps.iter().fold(0u64, |a, x| a.saturating_add(x.1));
    if total > MAX_TASKS {
        return fail(
            format!(
                "{total} tasks (virtual workgroups of all steps), more than the {MAX_TASKS} a dataflow schedule is checked for"
            ),
            "run the pipeline with `--sync barrier`, or use larger workgroups (fewer tasks)",
        );
    }
    Ok(())
}

fn check_assignment(s: &Schedule) -> Result<(), ScheduleError> {
    // Per step (by position), the block each workgroup is assigned to: a table of the
    // workgroups, not a map of every task (`validate` bounds their total).
    const NONE: usize = usize::MAX - 1;
    let pos: BTreeMap<usize, usize> = s.steps.iter().enumerate().map(|(i, x)| (x.0, i)).collect();
    let mut seen: Vec<Vec<usize>> = s.steps.iter().map(|x| vec![NONE; x.1 as usize]).collect();
    let mut count = 0u64;
    for (b, list) in s.blocks.iter().enumerate() {
        for &t in list {
            let Some(wgs) = s.workgroups(t.step) else {
                return fail(
                    format!(
                        "block {b} runs a task of step {}, which is not in the group",
                        t.step
                    ),
                    FIX_PLANNER,
                );
            };
            if t.workgroup >= wgs {
                return fail(
                    format!(
                        "block {b} runs workgroup {} of step {}, which has {wgs}",
                        t.workgroup, t.step
                    ),
                    FIX_PLANNER,
                );
            }
            let slot = &mut seen[pos[&t.step]][t.workgroup as usize];
            if *slot != NONE {
                return fail(
                    format!(
                        "workgroup {} of step {} is assigned twice (blocks {} and {b})",
                        t.workgroup, t.step, *slot
                    ),
                    FIX_PLANNER,
                );
            }
            *slot = b;
            count += 1;
        }
    }
    for f in &s.folds {
        match (s.position(f.after), s.position(f.step), s.workgroups(f.step)) {
            (Some(a), Some(b), Some(1)) if a < b => {}
            _ => {
                return fail(
                    format!(
                        "step {} is run by the last arriver of step {}, but it is not a one-workgroup step after it",
                        f.step, f.after
                    ),
                    FIX_PLANNER,
                )
            }
        }
        let slot = &mut seen[pos[&f.step]][0];
        if *slot != NONE {
            if *slot == usize::MAX {
                // A second fold of the same step: its one task would run twice.
                return fail(
                    format!("step {} is run by two last arrivers", f.step),
                    FIX_PLANNER,
                );
            }
            return fail(
                format!(
                    "step {} is both run by a last arriver and assigned to block {}",
                    f.step, *slot
                ),
                FIX_PLANNER,
            );
        }
        *slot = usize::MAX;
        count += 1;
    }
    let total: u64 = s.steps.iter().map(|x| x.1).sum();
    if count != total {
        return fail(
            format!("{count} of {total} tasks are assigned to a block"),
            FIX_PLANNER,
        );
    }
    Ok(())
}

/// The first producer of `need` that none of `have` contains, if any (ranges merged in one
/// sweep, not tested producer by producer).
fn uncovered(
    need: std::ops::RangeInclusive<u64>,
    have: &mut [std::ops::RangeInclusive<u64>],
) -> Option<u64> {
    if need.is_empty() {
        return None;
    }
    have.sort_by_key(|h| *h.start());
    let mut next = *need.start();
    for h in have.iter().filter(|h| !h.is_empty()) {
        if *h.start() > next {
            break;
        }
        if *h.end() >= next {
            match h.end().checked_add(1) {
                Some(n) => next = n,
                None => return None,
            }
            if next > *need.end() {
                return None;
            }
        }
    }
    (next <= *need.end()).then_some(next)
}

fn check_waits(s: &Schedule) -> Result<(), ScheduleError> {
    for w in &s.waits {
        match (s.position(w.producer), s.position(w.consumer)) {
            (Some(p), Some(c)) if p < c => {}
            (Some(_), Some(_)) => {
                return fail(
                    format!(
                        "step {} waits for step {}, which does not run before it",
                        w.consumer, w.producer
                    ),
                    FIX_PLANNER,
                )
            }
            _ => {
                return fail(
                    format!(
                        "a wait of step {} on step {} names a step outside the group",
                        w.consumer, w.producer
                    ),
                    FIX_PLANNER,
                )
            }
        }
    }
    Ok(())
}

/// Checks that the waits of `s` (and its folds) order every consumer task of `required` after
/// each producer task it needs: directly, or through a chain of waits (see `chains`). Only
/// `steps`, `waits` and `folds` of `s` are read, so a planner can ask whether a wait may be
/// left out before any task is placed.
pub fn check_coverage(s: &Schedule, required: &[TileDep]) -> Result<(), ScheduleError> {
    for d in required {
        let mut budget = chains::BUDGET;
        coverage_of(s, d, &mut budget)?;
    }
    Ok(())
}

/// [`check_coverage`] with one work budget for every chain walk of every dependence (in
/// (step, workgroup) expansions, drawn down as they are made). Past it a dependence that only
/// a chain would cover counts as uncovered: the answer may be a false "not covered", never a
/// false "covered". The planner's transitive reduction asks this once per wait it tries to
/// leave out, so one budget bounds the whole reduction of a group.
pub fn check_coverage_within(
    s: &Schedule,
    required: &[TileDep],
    budget: &mut u64,
) -> Result<(), ScheduleError> {
    for d in required {
        coverage_of(s, d, budget)?;
    }
    Ok(())
}

/// Whether `d` is covered by the waits of `s`, directly or through chains (within `budget`).
fn coverage_of(s: &Schedule, d: &TileDep, budget: &mut u64) -> Result<(), ScheduleError> {
    if d.producers == ProducerSet::Empty {
        return Ok(());
    }
    let (Some(ga), Some(gb)) = (s.workgroups(d.from), s.workgroups(d.to)) else {
        return fail(
            format!(
                "step {} depends on step {}, but the schedule lacks one of them",
                d.to, d.from
            ),
            FIX_PLANNER,
        );
    };
    let have: Vec<ProducerSet> = s
        .waits
        .iter()
        .filter(|w| w.consumer == d.to && w.producer == d.from)
        .map(|w| w.producers)
        .chain(
            s.folds
                .iter()
                .filter(|f| f.step == d.to && f.after == d.from)
                .map(|_| ProducerSet::All),
        )
        .collect();
    // Sets that do not move with the consumer workgroup give the same answer for all.
    let fixed = !d.producers.moves() && have.iter().all(|h| !h.moves());
    let mut ranges = Vec::with_capacity(have.len());
    let mut chains: Option<chains::Chains> = None;
    for q in 0..gb {
        ranges.clear();
        ranges.extend(have.iter().flat_map(|h| h.ranges(q, ga)));
        // The first producer workgroup of `need` that no wait covers.
        let mut missing = d
            .producers
            .ranges(q, ga)
            .into_iter()
            .find_map(|need| uncovered(need, &mut ranges));
        if missing.is_none() && fixed {
            // The same need and the same waits for every consumer.
            break;
        }
        if missing.is_some() {
            // Not waited for directly: maybe through a chain of waits.
            let c = chains.get_or_insert_with(|| {
                chains::Chains::new(&s.steps, &s.waits, &s.folds, d.from, *budget)
            });
            let reached = c.reach(d.to, q);
            *budget = c.budget();
            if let Some(mut reach) = reached {
                missing = d
                    .producers
                    .ranges(q, ga)
                    .into_iter()
                    .find_map(|need| uncovered(need, &mut reach));
            }
        }
        if let Some(p) = missing {
            return fail(
                format!(
                    "workgroup {q} of step {} needs workgroup {p} of step {} ({}), but no wait covers it",
                    d.to, d.from, d.reason
                ),
                FIX_PLANNER,
            );
        }
    }
    Ok(())
}

/// Runs two launches of `s` with every block resident (see the module docs).
fn simulate(s: &Schedule) -> Result<(), ScheduleError> {
    let index: BTreeMap<usize, usize> = s.steps.iter().enumerate().map(|(i, x)| (x.0, i)).collect();
    // The waits of each consumer step, found once rather than per task.
    let mut waits_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (wi, w) in s.waits.iter().enumerate() {
        waits_of.entry(w.consumer).or_default().push(wi);
    }
    let mut counters: Vec<Vec<u64>> = s.steps.iter().map(|x| vec![0; x.1 as usize]).collect();
    let mut arrivals: Vec<u64> = vec![0; s.folds.len()];
    for launch in 1..=2u64 {
        if s.reset == CounterReset::Zeroed {
            counters.iter_mut().for_each(|c| c.fill(0));
        }
        let target = if s.reset == CounterReset::Epoch {
            launch
        } else {
            1
        };
        // Tasks that ran in this launch, per step; and how many counters reached the target.
        let mut done: Vec<Vec<bool>> = s.steps.iter().map(|x| vec![false; x.1 as usize]).collect();
        if s.reset == CounterReset::Zeroed {
            arrivals.fill(0);
        }
        // Per wait on a fixed set: its producers checked so far in this launch (counts only
        // grow within a launch, so they stay satisfied).
        let mut checked: Vec<u64> = vec![0; s.waits.len()];
        // Fold tasks join the list of the block that arrives last, so lists grow.
        let mut lists = s.blocks.clone();
        let mut next = vec![0usize; lists.len()];
        loop {
            let mut moved = false;
            for (b, list) in lists.iter_mut().enumerate() {
                while let Some(&t) = list.get(next[b]) {
                    let waits = waits_of.get(&t.step).map_or(&[][..], Vec::as_slice);
                    match ready(
                        s,
                        &index,
                        (&counters, &done),
                        (waits, &mut checked),
                        target,
                        t,
                    )? {
                        true => {}
                        false => break,
                    }
                    let i = index[&t.step];
                    counters[i][t.workgroup as usize] += 1;
                    done[i][t.workgroup as usize] = true;
                    next[b] += 1;
                    moved = true;
                    for (k, f) in s
                        .folds
                        .iter()
                        .enumerate()
                        .filter(|(_, f)| f.after == t.step)
                    {
                        arrivals[k] += 1;
                        // Epoch counters are never cleared: this launch's last arrival
                        // completes `launch` rounds of arrivals.
                        let rounds = if s.reset == CounterReset::Epoch {
                            launch
                        } else {
                            1
                        };
                        if arrivals[k] == s.steps[i].1 * rounds {
                            list.insert(
                                next[b],
                                Task {
                                    step: f.step,
                                    workgroup: 0,
                                },
                            );
                        }
                    }
                }
            }
            if next.iter().zip(&lists).all(|(n, l)| *n == l.len()) {
                break;
            }
            if !moved {
                return fail(
                    deadlock(s, &lists, &index, &counters, target, &next),
                    FIX_PLANNER,
                );
            }
        }
        // A fold whose last arrival never came (its counter was not reset) never ran.
        for f in &s.folds {
            let i = index[&f.step];
            if !done[i][0] {
                return fail(
                    format!(
                        "step {} never runs in launch {launch}: no arrival of step {} was the last one (the arrival counter kept the previous launch's count)",
                        f.step, f.after
                    ),
                    "reset the arrival counters between launches (zero them, or count per launch epoch)",
                );
            }
        }
    }
    Ok(())
}

/// Whether task `t` may run; an error when a wait would pass on a count the producer did
/// not make in this launch.
///
/// A wait on a fixed set (`All`, `Range`: the same producers for every consumer task)
/// resumes where it stopped (`checked[w]`: producers already seen reached and run in this
/// launch), so every consumer task sharing it costs one step, not a scan of all producers.
fn ready(
    s: &Schedule,
    index: &BTreeMap<usize, usize>,
    (counters, done): (&[Vec<u64>], &[Vec<bool>]),
    (waits, checked): (&[usize], &mut [u64]),
    target: u64,
    t: Task,
) -> Result<bool, ScheduleError> {
    for &wi in waits {
        let w = &s.waits[wi];
        let p = index[&w.producer];
        let ga = s.steps[p].1;
        let fixed = !w.producers.moves();
        // One range for every set but a window with boundary workgroups.
        for all in w.producers.ranges(t.workgroup, ga) {
            let from = if fixed {
                (*all.start()).max(checked[wi])
            } else {
                *all.start()
            };
            for x in from..=*all.end() {
                if counters[p][x as usize] < target {
                    if fixed {
                        checked[wi] = x;
                    }
                    return Ok(false);
                }
                if !done[p][x as usize] {
                    return fail(
                    format!(
                        "workgroup {} of step {} would pass its wait on workgroup {x} of step {} with the count of the previous launch, before that workgroup ran again",
                        t.workgroup, t.step, w.producer
                    ),
                    "reset the completion counters between launches (zero them, or wait for the launch's epoch)",
                );
                }
            }
            if fixed {
                checked[wi] = checked[wi].max(all.end().saturating_add(1));
            }
        }
    }
    Ok(true)
}

fn deadlock(
    s: &Schedule,
    lists: &[Vec<Task>],
    index: &BTreeMap<usize, usize>,
    counters: &[Vec<u64>],
    target: u64,
    next: &[usize],
) -> String {
    for (b, list) in lists.iter().enumerate() {
        let Some(&t) = list.get(next[b]) else {
            continue;
        };
        for w in s.waits.iter().filter(|w| w.consumer == t.step) {
            let p = index[&w.producer];
            let ga = s.steps[p].1;
            for x in w.producers.ranges(t.workgroup, ga).into_iter().flatten() {
                if counters[p][x as usize] >= target {
                    continue;
                }
                let producer = Task {
                    step: w.producer,
                    workgroup: x,
                };
                let own_later = list[next[b]..].contains(&producer);
                return format!(
                    "deadlock: block {b} waits at workgroup {} of step {} for workgroup {x} of step {}{}",
                    t.workgroup,
                    t.step,
                    w.producer,
                    if own_later {
                        ", a task assigned after it to the same block"
                    } else {
                        ", which never finishes"
                    }
                );
            }
        }
    }
    "deadlock: no block can move".to_string()
}

mod chains;

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;

impl crate::util::HasFix for ScheduleError {
    fn message(&self) -> String {
        format!("dataflow schedule: {}", self.message)
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(ScheduleError);
