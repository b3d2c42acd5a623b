//! The check a cached plan must pass before it is used: a cache file is input like any other
//! (it may be edited, damaged or written by another build), so its plan is compared with the
//! dependences computed afresh for the pipeline, and its structure with the launch shapes.
//! A plan that fails is never run; the planner plans afresh.

use crate::ir::Pipeline;
use crate::shape::LaunchShape;

use super::deps::DepTable;
use super::plan::{GroupKind, Plan};
use super::DepKind;

/// The first way a cached plan disagrees with the pipeline it claims to plan (the sentence
/// the cache's refusal shows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct PlanMismatch(pub String);

/// `Ok` when `plan` is a plan of a pipeline with dependences `deps` and launch shapes
/// `shapes`: its groups cover the steps in order, each group's waves are its steps, its
/// dependences are the fresh ones, and between the two steps of every dependence inside a
/// group there is a separation at least as strong as the dependence. The error says the
/// first disagreement.
pub fn check_plan(
    plan: &Plan,
    pipeline: &Pipeline,
    deps: &DepTable,
    shapes: &[LaunchShape],
) -> Result<(), PlanMismatch> {
    let fresh: Vec<_> = deps
        .pairs
        .iter()
        .filter(|d| d.kind != DepKind::None)
        .collect();
    if plan.dependences.len() != fresh.len()
        || plan.dependences.iter().zip(&fresh).any(|(a, b)| a != *b)
    {
        return Err(PlanMismatch(format!(
            "its {} dependences are not the {} the analysis finds",
            plan.dependences.len(),
            fresh.len()
        )));
    }
    // Where each step runs: (group, wave).
    let mut place: Vec<Option<(usize, usize)>> = vec![None; shapes.len()];
    let mut next = 0usize;
    for (g, group) in plan.groups.iter().enumerate() {
        // A recomputed pass runs on its own launch shape, one block per tile; its claim is
        // its validator's (every read of every step within the halo), run again here.
        if let Some(h) = &group.halo {
            super::halo::check(pipeline, shapes, &group.steps, &h.spec)
                .map_err(|e| PlanMismatch(format!("group {g}: {}", e.message)))?;
            for (w, &s) in group.steps.iter().enumerate() {
                if s != next {
                    return Err(PlanMismatch(format!(
                        "group {g} runs step {s} where step {next} comes next"
                    )));
                }
                place[s] = Some((g, w));
                next += 1;
            }
            continue;
        }
        let flat: Vec<usize> = group.waves.iter().flatten().copied().collect();
        if flat != group.steps || group.steps.is_empty() {
            return Err(PlanMismatch(format!("group {g}'s waves are not its steps")));
        }
        if group.barriers.len() + 1 != group.waves.len() {
            return Err(PlanMismatch(format!(
                "group {g} has {} waves and {} separations",
                group.waves.len(),
                group.barriers.len()
            )));
        }
        if group.step_grids.len() != group.steps.len() {
            return Err(PlanMismatch(format!(
                "group {g} lists {} grids for {} steps",
                group.step_grids.len(),
                group.steps.len()
            )));
        }
        if !group.step_workgroup_sizes.is_empty()
            && group.step_workgroup_sizes.len() != group.steps.len()
        {
            return Err(PlanMismatch(format!(
                "group {g} lists {} workgroup sizes for {} steps",
                group.step_workgroup_sizes.len(),
                group.steps.len()
            )));
        }
        for (w, wave) in group.waves.iter().enumerate() {
            for &s in wave {
                if s != next {
                    return Err(PlanMismatch(format!(
                        "group {g} runs step {s} where step {next} comes next"
                    )));
                }
                let shape = shapes.get(s).ok_or_else(|| {
                    PlanMismatch(format!(
                        "group {g} names step {s}, which the pipeline lacks"
                    ))
                })?;
                // A mixed-size group's block is its largest step's workgroup; each step keeps
                // its own size (`step_workgroup_sizes`; empty in entries that predate it).
                let i = s - group.steps[0];
                let wg = group
                    .step_workgroup_sizes
                    .get(i)
                    .unwrap_or(&group.workgroup_size);
                if group.step_grids[i] != shape.grid || *wg != shape.workgroup_size {
                    return Err(PlanMismatch(format!(
                        "step {s}'s launch shape differs from the plan's"
                    )));
                }
                place[s] = Some((g, w));
                next += 1;
            }
        }
        let grid = group.barriers.iter().any(|b| b.kind == DepKind::Grid);
        if grid != (group.kind == GroupKind::Megakernel) || (grid && group.coresident_blocks == 0) {
            return Err(PlanMismatch(format!(
                "group {g}'s kind does not match its barriers"
            )));
        }
        for (w, b) in group.barriers.iter().enumerate() {
            let last = group.waves[w].last().copied();
            let first = group.waves.get(w + 1).and_then(|n| n.first()).copied();
            if b.after_step != last.unwrap_or(usize::MAX) {
                return Err(PlanMismatch(format!(
                    "group {g}'s separation {w} is not after its wave"
                )));
            }
            let grids = |s: Option<usize>| s.and_then(|s| shapes.get(s)).map(|x| x.grid);
            if b.kind == DepKind::Workgroup && grids(last) != grids(first) {
                return Err(PlanMismatch(format!(
                    "group {g} has a workgroup barrier between steps of different grids"
                )));
            }
            if b.kind == DepKind::None {
                return Err(PlanMismatch(format!(
                    "group {g} has a wave boundary without a separation"
                )));
            }
        }
    }
    if next != shapes.len() {
        return Err(PlanMismatch(format!(
            "its groups cover {next} of the {} steps",
            shapes.len()
        )));
    }
    for d in fresh {
        let (Some((ga, wa)), Some((gb, wb))) = (place[d.from], place[d.to]) else {
            return Err(PlanMismatch(format!(
                "step {} or {} is in no group",
                d.from, d.to
            )));
        };
        if ga != gb || plan.groups[ga].halo.is_some() {
            // Separate launches: the launch boundary orders everything; a recomputed pass:
            // its validator passed above.
            continue;
        }
        let strongest = plan.groups[ga]
            .barriers
            .get(wa..wb)
            .and_then(|bs| bs.iter().map(|b| b.kind).max());
        if wa >= wb || strongest.is_none_or(|k| k < d.kind) {
            return Err(PlanMismatch(format!(
                "step {} needs a {} separation after step {}, which the plan lacks",
                d.to,
                d.kind.name(),
                d.from
            )));
        }
    }
    let barriers: usize = plan.groups.iter().map(|g| g.grid_barriers()).sum();
    if barriers != plan.grid_barriers || plan.launches != plan.groups.len() {
        return Err(PlanMismatch(
            "its totals do not match its groups".to_string(),
        ));
    }
    Ok(())
}
