//! Deciding runs of steps that may legally fuse: fused, separate or recomputed (by the cost
//! model, `--decide` or measured timings), and the layouts of the groups that result.

use super::*;

/// Runs chains of window steps recomputed where the model (or `--decide recompute`) says so
/// (`crate::megakernel::halo::choose`), except chains holding a step of `lost` (a
/// recomputed pass measured no faster than its steps apart); every other group stays as
/// planned.
pub(super) fn recompute_chains(
    ctx: &DecideCtx,
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    deps: &DepTable,
    groups: Vec<Group>,
    decisions: &[Decision],
    lost: &[usize],
) -> Result<Vec<Group>, PlanError> {
    let single = |s: usize| {
        let mut g = build_group(ctx.caps, deps, ctx.res, &[s]);
        g.dataflow = group_sync(pipeline, shapes, deps, ctx.caps, &g, &[1]).unwrap_or_default();
        set_layouts(&mut g, ctx.res, ctx.opts.sync);
        g
    };
    // A group's predicted time as planned: one step alone, or its share of the decision
    // that chose it.
    let group_us = |g: &Group| -> f64 {
        if let [s] = g.steps.as_slice() {
            return ctx.separate_us(*s);
        }
        decisions
            .iter()
            .find(|d| d.chosen.contains(&g.steps))
            .map(|d| d.chosen_us * g.steps.len() as f64 / d.steps.len().max(1) as f64)
            .unwrap_or_else(|| g.steps.iter().map(|&s| ctx.separate_us(s)).sum())
    };
    Ok(crate::megakernel::halo::choose(
        &crate::megakernel::halo::choose::ChooseCtx {
            pipeline,
            shapes,
            caps: ctx.caps,
            model: ctx.model,
            force: ctx.opts.decide == Decide::Recompute,
            group_us: &group_us,
            single: &single,
            lost,
        },
        groups,
    ))
}

/// Fills `g.step_layouts` for the sync form `sync`: what fused emission builds from
/// `g.spec_for(sync)` (`crate::megakernel::fuse`).
pub(super) fn set_layouts(g: &mut Group, res: &[StepRes], sync: SyncMode) {
    let spec = g.spec_for(sync);
    let grid_after: Vec<bool> = spec
        .separations
        .iter()
        .map(|s| s.kind == DepKind::Grid)
        .collect();
    g.step_layouts = layouts_of(res, &g.steps, &grid_after, spec.dataflow.is_some());
}

/// How many workgroups of each step of `run` the dataflow form packs into one block (it
/// maps each size one way for the whole group, so no grid barrier matters).
pub(super) fn dataflow_packs(res: &[StepRes], run: &[usize]) -> Vec<u32> {
    layouts_of(res, run, &[], true)
        .iter()
        .map(crate::megakernel::mixed::StepLayout::tasks)
        .collect()
}

/// [`crate::megakernel::mixed::step_layouts`] of the steps `run` (`grid_after[i]`: a grid barrier
/// after position `i`).
pub(super) fn layouts_of(
    res: &[StepRes],
    run: &[usize],
    grid_after: &[bool],
    dataflow: bool,
) -> Vec<crate::megakernel::mixed::StepLayout> {
    let needs: Vec<_> = run
        .iter()
        .map(|&s| {
            let wgs = res[s].grid.iter().map(|&g| u64::from(g)).product();
            (res[s].wg, res[s].pack, wgs)
        })
        .collect();
    let obstacles = crate::megakernel::mixed::group_obstacles(&needs, dataflow);
    let steps: Vec<(usize, [u32; 3], Option<&str>)> = run
        .iter()
        .zip(&obstacles)
        .map(|(&s, o)| (s, res[s].wg, o.as_deref()))
        .collect();
    crate::megakernel::mixed::step_layouts(&steps, grid_after, dataflow)
}

/// The fusion break recorded where a decision splits a run of steps.
pub(super) fn split_reason(d: &Decision) -> String {
    match (&d.source, &d.measured) {
        (DecisionSource::Measured, Some(m)) => format!(
            "measured on the GPU: fused {:.4} ms against {:.4} ms separate (run --decide measure)",
            m.fused_ms, m.separate_ms
        ),
        _ => format!(
            "cost model: fusing is predicted slower ({:.1} us fused, {:.1} us separate, {:.1} us as planned)",
            d.fused_us, d.separate_us, d.chosen_us
        ),
    }
}

/// The boundaries of a run of steps being decided, from the whole run's group.
#[derive(Default)]
pub(super) struct Boundaries {
    /// Cost of the separation after each step (us).
    pub(super) cost: std::collections::HashMap<usize, f64>,
    /// Steps followed by a grid barrier.
    pub(super) grid: std::collections::HashSet<usize>,
    /// The whole run runs the dataflow sync form (one mapping per workgroup size over it).
    pub(super) dataflow: bool,
}

/// What deciding a run of steps needs.
pub(super) struct DecideCtx<'a> {
    pub(super) caps: &'a DeviceCaps,
    pub(super) opts: &'a PlanOptions,
    pub(super) res: &'a [StepRes],
    pub(super) work: &'a [StepWork],
    pub(super) model: &'a CostModel,
}

impl DecideCtx<'_> {
    /// Predicted device time of step `s` launched alone (us).
    pub(super) fn separate_us(&self, s: usize) -> f64 {
        let alone = fused(self.caps, &[self.res[s]]);
        let resident = u64::from(alone.blocks_per_sm) * u64::from(self.caps.sm_count);
        self.model.launch_us
            + self
                .model
                .work_us(&self.work[s], resident, alone.occupancy_pct)
    }

    /// Predicted device time of `run` (consecutive steps of `whole`) as one kernel, with
    /// `whole`'s separations between its steps (the strongest any part of it needs: a part
    /// never needs more than the whole run did) (us). A packed step runs `P` workgroups per
    /// resident block on all the block's threads; a masked one, one workgroup on a share of
    /// them.
    pub(super) fn fused_us(&self, run: &[usize], boundary: &Boundaries) -> f64 {
        if let [s] = run {
            return self.separate_us(*s);
        }
        let parts = fused_parts(self.res, run);
        let f = fused(self.caps, &parts);
        let block = parts.iter().map(|p| p.threads).max().unwrap_or(1).max(1);
        let resident = u64::from(f.blocks_per_sm) * u64::from(self.caps.sm_count);
        let grid_after: Vec<bool> = run.iter().map(|s| boundary.grid.contains(s)).collect();
        let layouts = layouts_of(self.res, run, &grid_after, boundary.dataflow);
        let mut t = self.model.launch_us;
        for (k, &s) in run.iter().enumerate() {
            let tasks = layouts.get(k).map_or(1, |l| l.tasks());
            let busy = (u64::from(self.res[s].threads) * u64::from(tasks)).min(u64::from(block));
            let active = f.occupancy_pct * busy as f64 / f64::from(block);
            let in_flight = resident.saturating_mul(u64::from(tasks));
            t += self.model.work_us(&self.work[s], in_flight, active);
            // The margin fusion must beat (cost module docs): a share of the loop time.
            t += FUSED_WORK_MARGIN * self.model.loop_us(&self.work[s], active);
            t += self.model.fused_atomic_us(&self.work[s]);
            if k + 1 < run.len() {
                t += boundary.cost.get(&s).copied().unwrap_or(0.0);
            }
        }
        t
    }

    /// Fuse, split or separate the run `m` (a legal group, built as `whole`): the cheapest
    /// partition into consecutive groups by the model (or by `measured` timings; or one group
    /// under `--decide fuse`).
    pub(super) fn decide(
        &self,
        m: &[usize],
        whole: &Group,
        measured: Option<&MeasuredForms>,
    ) -> Decision {
        let sync = self.opts.sync;
        let mut boundary = Boundaries {
            dataflow: sync == SyncMode::Dataflow && whole.runs_dataflow(),
            ..Boundaries::default()
        };
        let blocks = f64::from(whole.dataflow.blocks.max(1));
        // A packed consumer's sub-tasks wait once per block trip, together.
        let packed: std::collections::HashMap<usize, u32> = whole
            .steps
            .iter()
            .zip(&whole.step_layouts)
            .map(|(&s, l)| (s, l.tasks()))
            .collect();
        for (w, b) in whole.barriers.iter().enumerate() {
            let cost = match (sync, whole.dataflow.boundaries.get(w)) {
                // Each kept wait, paid by every consumer task (trip, when packed): a block
                // runs `waves` of them.
                (SyncMode::Dataflow, Some(d)) if b.kind == super::DepKind::Grid => {
                    let waves = d
                        .waits
                        .iter()
                        .map(|t| {
                            let lanes = blocks * f64::from(packed.get(&t.to).copied().unwrap_or(1));
                            (self.work[t.to].workgroups as f64 / lanes).ceil()
                        })
                        .fold(1.0, f64::max);
                    self.model.dataflow_us(d, waves)
                }
                (_, d) => self.model.boundary_us(
                    sync,
                    b.kind,
                    d.map_or(crate::megakernel::tiles::SyncLabel::AllToAll, |d| d.label),
                ),
            };
            boundary.cost.insert(b.after_step, cost);
            if b.kind == DepKind::Grid {
                boundary.grid.insert(b.after_step);
            }
        }
        let n = m.len();
        // best[i]: cheapest partition of m[..i]; ties keep the fewer, longer groups.
        let mut best: Vec<(f64, Vec<Vec<usize>>)> = vec![(0.0, Vec::new())];
        for i in 1..=n {
            let mut pick: Option<(f64, Vec<Vec<usize>>)> = None;
            for j in 0..i {
                let t = best[j].0 + self.fused_us(&m[j..i], &boundary);
                if pick.as_ref().is_none_or(|p| t < p.0) {
                    let mut parts = best[j].1.clone();
                    parts.push(m[j..i].to_vec());
                    pick = Some((t, parts));
                }
            }
            best.push(pick.unwrap_or_default());
        }
        let fused_us = self.fused_us(m, &boundary);
        let separate_us: f64 = m.iter().map(|&s| self.separate_us(s)).sum();
        let (_, model_parts) = best.pop().unwrap_or_default();
        let singles: Vec<Vec<usize>> = m.iter().map(|&s| vec![s]).collect();
        let (chosen, source) = match (measured, self.opts.decide) {
            (Some(x), _) => {
                let mut options = vec![(x.fused_ms, vec![m.to_vec()]), (x.separate_ms, singles)];
                if let Some(t) = x.model_ms {
                    options.push((t, model_parts));
                }
                let fastest = options
                    .into_iter()
                    .min_by(|a, b| a.0.total_cmp(&b.0))
                    .map(|o| o.1)
                    .unwrap_or_else(|| vec![m.to_vec()]);
                (fastest, DecisionSource::Measured)
            }
            (None, Decide::Fuse) => (vec![m.to_vec()], DecisionSource::Forced),
            (None, Decide::Auto | Decide::Model | Decide::Measure | Decide::Recompute) => {
                (model_parts, DecisionSource::Model)
            }
        };
        let chosen_us = chosen.iter().map(|r| self.fused_us(r, &boundary)).sum();
        Decision {
            steps: m.to_vec(),
            chosen,
            fused_us,
            separate_us,
            chosen_us,
            source,
            measured: measured.cloned(),
        }
    }
}
