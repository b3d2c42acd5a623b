//! The dataflow view of a fused group: at each wave boundary, what every consumer step waits
//! for ([`tiles::TileDep`] producer sets on every earlier step of the group it conflicts
//! with), the label of the cheapest synchronisation that covers it, and the persistent grid a
//! dataflow schedule would use.
//!
//! Counters do not compose like grid barriers: a grid barrier orders everything before it
//! for every later step, a counter only what its waiters asked for. So each step waits for
//! every earlier step of the group it has a grid-kind dependence on (not only those since the
//! last barrier), and its waits sit at the boundary before its own wave.

use serde::{Deserialize, Serialize};

use crate::ir::Pipeline;
use crate::occupancy::DeviceCaps;
use crate::shape::LaunchShape;

use super::deps::{DepError, DepTable};
use super::plan::Group;
use super::tiles::{tile_dep, ProducerSet, SyncLabel, TileDep};
use super::validate::{check_coverage_within, CounterReset, Schedule, Wait};
use super::DepKind;

/// How a fused persistent group separates its cross-workgroup dependences (`--sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SyncMode {
    /// Each task waits only for its producers: completion flags, counters, last-arriver
    /// folds. The default: faster than or as fast as grid barriers on every pipeline measured
    /// on an H200 and an H100 (docs/megakernel.md), and the planner's cost model declines
    /// fusion where even this form would lose to separate launches.
    #[default]
    Dataflow,
    /// Every `grid` boundary is an all-to-all grid barrier (`--sync barrier`): the simpler
    /// form, kept to compare against and as a fallback.
    Barrier,
}

impl SyncMode {
    /// The name `--sync` takes.
    pub fn name(self) -> &'static str {
        match self {
            SyncMode::Dataflow => "dataflow",
            SyncMode::Barrier => "barrier",
        }
    }

    /// What the fused form of a pipeline is called when it runs this way (the timeline's
    /// forms, the inspector's Run tab): `fused` with grid barriers, `dataflow` with waits.
    pub fn fused_label(self) -> &'static str {
        match self {
            SyncMode::Dataflow => "dataflow",
            SyncMode::Barrier => "fused",
        }
    }
}

impl std::str::FromStr for SyncMode {
    type Err = crate::util::Problem;
    fn from_str(s: &str) -> Result<Self, crate::util::Problem> {
        match s {
            "dataflow" => Ok(SyncMode::Dataflow),
            "barrier" => Ok(SyncMode::Barrier),
            _ => Err(crate::util::Problem::usage(
                format!("unknown sync form `{s}`"),
                "use `dataflow` (the default) or `barrier`",
            )),
        }
    }
}

/// The synchronisation at one wave boundary of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundarySync {
    /// The step after which the boundary sits (as in the group's `barriers`).
    pub after_step: usize,
    /// The cheapest synchronisation covering every wait (`none`, `invocation`, `workgroup`,
    /// `broadcast`, `counter`, `last_arriver_fold`, `all_to_all`).
    pub label: SyncLabel,
    /// What each step of the next wave waits for.
    pub waits: Vec<TileDep>,
    /// Dependences of the next wave that need no wait of their own: other waits of the same
    /// task imply them through a chain of waits (transitive reduction; the plan validator
    /// checks them against the schedule all the same).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub implied: Vec<TileDep>,
}

impl BoundarySync {
    /// The boundary as one line, as `plan` and the Plan tab show it: the label, then each
    /// wait (`counter: step 1 waits for step 0 workgroups w-1..w+1`).
    pub fn describe(&self) -> String {
        let waits: Vec<String> = self
            .waits
            .iter()
            .map(|t| {
                let node = t
                    .node
                    .as_ref()
                    .filter(|_| t.label == SyncLabel::WindowBoundary)
                    .map_or_else(String::new, |n| format!(", node `{n}`"));
                format!(
                    "step {} waits for step {} workgroups {} ({}{node})",
                    t.to,
                    t.from,
                    t.producers.describe(),
                    t.label.name()
                )
            })
            .collect();
        let implied: Vec<String> = self
            .implied
            .iter()
            .map(|t| format!("step {} on step {}", t.to, t.from))
            .collect();
        let implied = if implied.is_empty() {
            String::new()
        } else {
            format!(" (implied by the other waits: {})", implied.join(", "))
        };
        if waits.is_empty() {
            format!("{}{implied}", self.label.name())
        } else {
            format!("{}: {}{implied}", self.label.name(), waits.join("; "))
        }
    }
}

/// The dataflow view of a group (`plan --json`: `dataflow`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GroupSync {
    /// One per entry of the group's `barriers`, in order.
    pub boundaries: Vec<BoundarySync>,
    /// Blocks of the persistent grid a dataflow schedule runs on (0 for an ordinary launch).
    pub blocks: u32,
    /// Why that many.
    pub blocks_reason: String,
}

fn base_label(kind: DepKind) -> SyncLabel {
    match kind {
        DepKind::None => SyncLabel::None,
        DepKind::Invocation => SyncLabel::Invocation,
        DepKind::Workgroup => SyncLabel::Workgroup,
        DepKind::Grid => SyncLabel::AllToAll,
    }
}

/// Chain-walk work (in (step, workgroup) expansions) one group's transitive reduction may
/// spend; see [`reduce_waits`].
const REDUCE_BUDGET: u64 = 1 << 20;

/// Transitive reduction: moves every wait that the group's other waits imply (through chains
/// of waits, as the plan validator reads them) from `waits` to `implied`. Waits are tried in
/// step order, earliest producer first, each against the waits still kept and every
/// dependence already left out, so what remains orders every dependence.
fn reduce_waits(boundaries: &mut [BoundarySync], g: &Group, shapes: &[LaunchShape]) {
    let steps: Vec<(usize, u64)> = g
        .steps
        .iter()
        .map(|&s| (s, shapes.get(s).map_or(0, |x| x.workgroups())))
        .collect();
    let wait_of = |t: &TileDep| Wait {
        consumer: t.to,
        producer: t.from,
        producers: t.producers,
    };
    let mut kept: Vec<(usize, TileDep)> = boundaries
        .iter()
        .enumerate()
        .flat_map(|(i, b)| b.waits.iter().map(move |t| (i, t.clone())))
        .filter(|(_, t)| t.producers != ProducerSet::Empty)
        .collect();
    kept.sort_by_key(|(_, t)| (t.to, t.from));
    let mut implied: Vec<(usize, TileDep)> = Vec::new();
    // One budget of chain-walk work for the whole group: each try re-checks every wait left
    // out so far through chains over every consumer workgroup, which grew exponentially with
    // the steps of a ping-pong stencil (16 steps 10 s, 24 steps 65 s). Once it is spent the
    // remaining waits are kept - redundant waits cost a little time, never correctness.
    let mut budget = REDUCE_BUDGET;
    let mut k = 0;
    while k < kept.len() && budget > 0 {
        let mut without = Schedule {
            steps: steps.clone(),
            blocks: Vec::new(),
            waits: Vec::new(),
            reset: CounterReset::Zeroed,
            folds: Vec::new(),
        };
        without.waits = kept
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, (_, t))| wait_of(t))
            .collect();
        let need: Vec<TileDep> = implied
            .iter()
            .map(|(_, t)| t.clone())
            .chain(std::iter::once(kept[k].1.clone()))
            .collect();
        if check_coverage_within(&without, &need, &mut budget).is_ok() {
            implied.push(kept.remove(k));
        } else {
            k += 1;
        }
    }
    for (i, t) in implied {
        if let Some(b) = boundaries.get_mut(i) {
            b.waits.retain(|w| !(w.from == t.from && w.to == t.to));
            b.implied.push(t);
        }
    }
}

/// The dataflow view of group `g` of a plan of `pipeline` (`shapes[i]`: step i's launch;
/// `packs[j]`: how many workgroups of `g.steps[j]` its dataflow form packs into one block,
/// 1 where it does not pack or is missing).
pub fn group_sync(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    deps: &DepTable,
    caps: &DeviceCaps,
    g: &Group,
    packs: &[u32],
) -> Result<GroupSync, DepError> {
    let grid_of = |s: usize| shapes.get(s).map(|x| x.grid);
    let mut boundaries = Vec::with_capacity(g.barriers.len());
    // A dependence that needs a wait however the steps are placed.
    let needs_wait = |a: usize, b: usize| {
        let kind = deps.kind(a.min(b), a.max(b));
        kind == DepKind::Grid || (kind == DepKind::Workgroup && grid_of(a) != grid_of(b))
    };
    // Only a group with such a wait runs persistent and can have last-arriver folds.
    let may_fold = g
        .steps
        .iter()
        .any(|&a| g.steps.iter().any(|&b| a < b && needs_wait(a, b)));
    let mut before: Vec<usize> = g.waves.first().cloned().unwrap_or_default();
    for (w, barrier) in g.barriers.iter().enumerate() {
        let next = g.waves.get(w + 1).cloned().unwrap_or_default();
        let mut waits = Vec::new();
        for &b in &next {
            for &a in &before {
                let kind = deps.kind(a.min(b), a.max(b));
                // Same-grid workgroup and invocation dependences stay block-local: the same
                // virtual workgroup of both steps runs on the same block, in program order.
                // Not for a one-workgroup step: it may become a last-arriver fold, which runs
                // on whichever block arrives last instead of on block 0, so a dependence on
                // it or of it must be a real wait (generated pipelines 12, 24, 246, 347, 391
                // and 490 of `selftest --fuzz-pipelines` had a fold followed by a
                // one-workgroup step that read its result on block 0 without waiting).
                let movable =
                    |s: usize| may_fold && shapes.get(s).is_some_and(|x| x.workgroups() == 1);
                let cross =
                    needs_wait(a, b) || (kind != DepKind::None && (movable(a) || movable(b)));
                if a < b && cross {
                    waits.push(tile_dep(pipeline, shapes, a, b)?);
                }
            }
        }
        let label = if waits.is_empty() {
            match barrier.kind {
                // A grid barrier whose dependences are all block-local after all.
                DepKind::Grid => SyncLabel::Workgroup,
                k => base_label(k),
            }
        } else {
            let worst = waits
                .iter()
                .map(|t| t.label)
                .max()
                .unwrap_or(SyncLabel::None);
            // A block-local barrier still needs its `bar.sync` besides any waits.
            worst.max(base_label(barrier.kind.min(DepKind::Workgroup)))
        };
        boundaries.push(BoundarySync {
            after_step: barrier.after_step,
            label,
            waits,
            implied: Vec::new(),
        });
        before.extend(next);
    }
    reduce_waits(&mut boundaries, g, shapes);
    // Block-sized tasks of each step: a packed step runs `P` workgroups per task, so its
    // tasks, not its workgroups, are what a block per task must cover.
    let tasks = |j: usize, s: &LaunchShape| {
        let pack = u64::from(packs.get(j).copied().unwrap_or(1).max(1));
        s.workgroups().div_ceil(pack)
    };
    let most = g
        .steps
        .iter()
        .enumerate()
        .filter_map(|(j, &s)| shapes.get(s).map(|x| tasks(j, x)))
        .max()
        .unwrap_or(1);
    let packed = g
        .steps
        .iter()
        .enumerate()
        .any(|(j, &s)| shapes.get(s).is_some_and(|x| tasks(j, x) < x.workgroups()));
    let persistent = boundaries.iter().any(|b| b.label > SyncLabel::Workgroup);
    let (blocks, blocks_reason) = if !persistent {
        (
            0,
            "no cross-workgroup wait: one ordinary launch".to_string(),
        )
    } else {
        // Cost: every task pays its own waits and its publish, one after another on its
        // block, while a counter costs one atomic per block and a flag wait only involves
        // its producers. So the fewest tasks per block win: every co-resident block, or one
        // block per workgroup of the largest step (measured on an H200, 4-step stencil over
        // 2^20 floats: 0.041 ms on 1056 blocks, 0.094 ms on 264; softmax over 2^18: 0.026 ms
        // on 792, 0.033 ms on 264). Unlike an all-to-all barrier, a wait does not get dearer
        // with more blocks.
        let cap = u64::from(g.coresident_blocks.max(1));
        let blocks = u32::try_from(cap.min(most)).unwrap_or(u32::MAX);
        let why = if u64::from(blocks) == most {
            format!(
                "one block per workgroup of the largest step ({most}{}; {} co-resident): each task pays its own waits, so fewer tasks per block are cheaper",
                if packed { ", packed workgroups counted per block" } else { "" },
                g.coresident_blocks
            )
        } else {
            format!(
                "every co-resident block ({} per SM x {} SMs): each task pays its own waits, so fewer tasks per block are cheaper",
                g.coresident_blocks / caps.sm_count.max(1),
                caps.sm_count
            )
        };
        (blocks, why)
    };
    Ok(GroupSync {
        boundaries,
        blocks,
        blocks_reason,
    })
}
