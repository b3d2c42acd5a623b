//! Building groups: whether a step may join the current group (the fusion-break reason when
//! not), and each group's waves, barriers and fused resources.

use super::*;

/// Whether step `s` may join the group `group` (its steps and their [`Agg`]); the reason
/// when not.
pub(super) fn can_join(
    caps: &DeviceCaps,
    opts: &PlanOptions,
    deps: &DepTable,
    res: &[StepRes],
    (group, agg): (&[usize], &Agg),
    s: usize,
) -> Result<(), String> {
    let me = res[s];
    if me.grid_barrier {
        return Err(format!(
            "step {s} has its own grid barrier, so it stays its own cooperative launch"
        ));
    }
    if let Some(g) = agg.grid_barrier {
        return Err(format!(
            "step {g} has its own grid barrier, so it stays its own cooperative launch"
        ));
    }
    if agg.steps >= MAX_GROUP_STEPS {
        return Err(format!(
            "the group has {} steps, the most one fused kernel takes (larger kernels need gigabytes of memory in ptxas)",
            agg.steps
        ));
    }
    if agg.nodes.saturating_add(me.nodes) > MAX_GROUP_NODES {
        return Err(format!(
            "the fused kernel would hold {} IR nodes (the group's {} + step {s}'s {}), more than the {MAX_GROUP_NODES} one fused kernel takes",
            agg.nodes.saturating_add(me.nodes),
            agg.nodes,
            me.nodes
        ));
    }
    let mut with = agg.clone();
    with.add(s, &me);
    crate::megakernel::mixed::check_sizes(&with.sizes)?;
    let together = fused_agg(caps, &with);
    let max_smem = u64::from(caps.smem_per_block_optin.max(caps.smem_per_block));
    if together.smem > max_smem {
        return Err(format!(
            "shared memory of the fused kernel ({} B: the group's {} B + step {s}'s {} B) exceeds the {max_smem} B per block of {}",
            together.smem,
            together.smem - me.smem,
            me.smem,
            caps.name
        ));
    }
    if let Some(why) = together.why_not {
        return Err(format!(
            "the fused kernel could not launch: {}",
            why.lines().next().unwrap_or("")
        ));
    }
    let before = fused_agg(caps, agg);
    let alone = fused(caps, &[me]);
    let floor = opts.min_occupancy_pct;
    let dragged = before.occupancy_pct >= floor || alone.occupancy_pct >= floor;
    if together.occupancy_pct < floor && dragged {
        return Err(format!(
            "fusing would cut occupancy to {:.1}% ({} registers, {} B shared: {} blocks/SM), below {:.1}% (group alone {:.1}%, step {s} alone {:.1}%)",
            together.occupancy_pct,
            together.regs,
            together.smem,
            together.blocks_per_sm,
            opts.min_occupancy_pct,
            before.occupancy_pct,
            alone.occupancy_pct
        ));
    }
    // Only a device without cooperative launch cares, and building the group is linear in
    // it: asking on every device made planning a long chain cubic.
    if !caps.cooperative_launch && needs_grid_barrier(caps, deps, res, group, s) {
        return Err(format!(
            "step {s} needs a grid barrier and {} has no cooperative launch",
            caps.name
        ));
    }
    Ok(())
}

/// Waves, barriers and resources of one group (`m`: its steps in pipeline order, which is
/// also the execution order: fused emission takes a group's steps in increasing order).
///
/// Walking the steps in order, the separation before step `j` is the weakest that orders
/// every dependence on it: a grid barrier when it depends by `grid` on a step since the last
/// grid barrier, else a workgroup barrier when it depends by `workgroup` on a step since the
/// last barrier, else a new wave without barrier when it depends at all on a step of the
/// current wave. Placing each barrier as late as possible makes the count minimal for this
/// order (interval stabbing by right end). Fused emission only accepts a workgroup barrier
/// between steps of equal grids, so one between steps of different grids becomes a grid
/// barrier.
pub(super) fn build_group(
    caps: &DeviceCaps,
    deps: &DepTable,
    res: &[StepRes],
    m: &[usize],
) -> Group {
    let mut waves: Vec<Vec<usize>> = vec![vec![m[0]]];
    let mut barriers = Vec::new();
    let incoming = incoming(deps, m);
    // Index into `m` where the current grid segment / barrier region / wave starts.
    let (mut seg, mut region, mut wave) = (0usize, 0usize, 0usize);
    for j in 1..m.len() {
        let b = m[j];
        let into: &[&Dependence] = incoming.get(&b).map_or(&[], Vec::as_slice);
        let find = |from: usize, kind: DepKind| first_from(into, m[from], |k| k == kind);
        let any_in_wave = first_from(into, m[wave], |k| k != DepKind::None);
        let prev = m[j - 1];
        let (kind, reason) = if let Some(d) = find(seg, DepKind::Grid) {
            (DepKind::Grid, explain(Some(d)))
        } else if let Some(d) = find(region, DepKind::Workgroup) {
            if res[prev].grid == res[b].grid && res[prev].wg == res[b].wg {
                (DepKind::Workgroup, explain(Some(d)))
            } else {
                (
                    DepKind::Grid,
                    format!(
                        "{} (a workgroup barrier, but between steps {prev} and {b} of different grids or workgroup sizes, which fused emission separates by a grid barrier)",
                        explain(Some(d))
                    ),
                )
            }
        } else if let Some(d) = any_in_wave {
            (DepKind::Invocation, explain(Some(d)))
        } else {
            if let Some(w) = waves.last_mut() {
                w.push(b);
            }
            continue;
        };
        match kind {
            DepKind::Grid => (seg, region) = (j, j),
            DepKind::Workgroup => region = j,
            _ => {}
        }
        wave = j;
        barriers.push(Separation {
            after_step: prev,
            kind,
            reason,
        });
        waves.push(vec![b]);
    }

    let parts = fused_parts(res, m);
    let f = fused(caps, &parts);
    let has_grid = barriers.iter().any(|b| b.kind == DepKind::Grid);
    Group {
        kind: if has_grid {
            GroupKind::Megakernel
        } else {
            GroupKind::Launch
        },
        steps: m.to_vec(),
        waves,
        barriers,
        workgroup_size: crate::megakernel::mixed::block_size(parts.iter().map(|p| p.wg)),
        step_grids: parts.iter().map(|p| p.grid).collect(),
        step_workgroup_sizes: parts.iter().map(|p| p.wg).collect(),
        step_layouts: Vec::new(),
        registers: f.regs,
        registers_source: None,
        shared_bytes: f.smem,
        coresident_blocks: f.blocks_per_sm.saturating_mul(caps.sm_count),
        occupancy_pct: f.occupancy_pct,
        dataflow: GroupSync::default(),
        halo: None,
    }
}

/// Whether the group `group` with step `s` added needs a grid barrier.
pub(super) fn needs_grid_barrier(
    caps: &DeviceCaps,
    deps: &DepTable,
    res: &[StepRes],
    group: &[usize],
    s: usize,
) -> bool {
    let mut with = group.to_vec();
    with.push(s);
    build_group(caps, deps, res, &with).grid_barriers() > 0
}

/// The dependences of each step of `m` (steps in increasing order) on earlier steps of `m`,
/// by the later step, each list in increasing `from`: what a group's waves are built from,
/// without asking the table about every pair of the group.
pub(super) fn incoming<'d>(
    deps: &'d DepTable,
    m: &[usize],
) -> std::collections::HashMap<usize, Vec<&'d Dependence>> {
    let members: std::collections::HashSet<usize> = m.iter().copied().collect();
    let mut by_to: std::collections::HashMap<usize, Vec<&Dependence>> =
        std::collections::HashMap::new();
    // The table is ordered by (from, to), so each list comes out ordered by `from`, and the
    // pairs from the group's steps are one slice of it (groups are runs of steps).
    let (Some(&lo), Some(&hi)) = (m.iter().min(), m.iter().max()) else {
        return by_to;
    };
    let start = deps.pairs.partition_point(|d| d.from < lo);
    let end = deps.pairs.partition_point(|d| d.from <= hi);
    for d in deps.pairs.get(start..end).unwrap_or(&[]) {
        if d.kind != DepKind::None && members.contains(&d.from) && members.contains(&d.to) {
            by_to.entry(d.to).or_default().push(d);
        }
    }
    by_to
}

/// The dependence of smallest `from` at or after step `start` whose kind `ok` accepts.
pub(super) fn first_from<'d>(
    into: &[&'d Dependence],
    start: usize,
    ok: impl Fn(DepKind) -> bool,
) -> Option<&'d Dependence> {
    into.iter().find(|d| d.from >= start && ok(d.kind)).copied()
}

pub(super) fn explain(d: Option<&Dependence>) -> String {
    match d {
        Some(d) => format!("step {} after step {}: {}", d.to, d.from, d.reason),
        None => "ordering across waves".to_string(),
    }
}
