//! Ordering through chains of waits: task `q` of step B is ordered after every task of step
//! A that it waits for, and after every task those waited for, transitively (a wait acquires
//! what its producer's publish released, and the producer published only after its own
//! waits). This is what lets a schedule leave out a wait that others imply: the 8th step of a
//! ping-pong stencil waits for step 6, which waited for step 4, and so on.
//!
//! The walk is concrete (per producer workgroup), memoised per (step, workgroup) and bounded
//! by a work budget; past it nothing counts as implied, so a redundant wait is merely kept.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;

use super::{Fold, ProducerSet, Wait};

/// Most (step, workgroup) expansions one query may make.
const BUDGET: u64 = 1 << 22;

/// The tasks of one producer step that tasks of later steps are ordered after.
pub(super) struct Chains<'a> {
    steps: &'a [(usize, u64)],
    /// Per consumer step: (producer step, producer set), folds as waits on all.
    waits: BTreeMap<usize, Vec<(usize, ProducerSet)>>,
    /// The producer step asked about.
    target: usize,
    memo: HashMap<(usize, u64), Vec<RangeInclusive<u64>>>,
    budget: u64,
}

impl<'a> Chains<'a> {
    pub(super) fn new(
        steps: &'a [(usize, u64)],
        waits: &[Wait],
        folds: &[Fold],
        target: usize,
    ) -> Chains<'a> {
        let mut by: BTreeMap<usize, Vec<(usize, ProducerSet)>> = BTreeMap::new();
        for w in waits {
            by.entry(w.consumer)
                .or_default()
                .push((w.producer, w.producers));
        }
        for f in folds {
            by.entry(f.step)
                .or_default()
                .push((f.after, ProducerSet::All));
        }
        Chains {
            steps,
            waits: by,
            target,
            memo: HashMap::new(),
            budget: BUDGET,
        }
    }

    fn position(&self, step: usize) -> Option<usize> {
        self.steps.iter().position(|s| s.0 == step)
    }

    fn workgroups(&self, step: usize) -> u64 {
        self.steps.iter().find(|s| s.0 == step).map_or(0, |s| s.1)
    }

    /// The workgroups of the target step that task `r` of step `c` is ordered after, as
    /// sorted disjoint ranges; `None` past the budget.
    pub(super) fn reach(&mut self, c: usize, r: u64) -> Option<Vec<RangeInclusive<u64>>> {
        if let Some(v) = self.memo.get(&(c, r)) {
            return Some(v.clone());
        }
        let floor = self.position(self.target)?;
        let waits = self.waits.get(&c).cloned().unwrap_or_default();
        let mut acc: Vec<RangeInclusive<u64>> = Vec::new();
        for (p, set) in waits {
            // A step before the target never waited for it.
            if self.position(p).is_none_or(|x| x < floor) {
                continue;
            }
            for range in set.ranges(r, self.workgroups(p)) {
                if p == self.target {
                    acc.push(range);
                    continue;
                }
                for r2 in range {
                    self.budget = self.budget.checked_sub(1)?;
                    let more = self.reach(p, r2)?;
                    acc.extend(more);
                }
                acc = merge(acc);
            }
        }
        let acc = merge(acc);
        self.memo.insert((c, r), acc.clone());
        Some(acc)
    }
}

/// Sorted, disjoint, adjacent ones joined.
fn merge(mut v: Vec<RangeInclusive<u64>>) -> Vec<RangeInclusive<u64>> {
    v.retain(|r| !r.is_empty());
    v.sort_by_key(|r| *r.start());
    let mut out: Vec<RangeInclusive<u64>> = Vec::with_capacity(v.len());
    for r in v {
        match out.last_mut() {
            Some(m) if *r.start() <= m.end().saturating_add(1) => {
                *m = *m.start()..=(*m.end()).max(*r.end());
            }
            _ => out.push(r),
        }
    }
    out
}
