//! Building groups: whether a step may join the current group (the fusion-break reason when
//! not), and each group's waves, barriers and fused resources.

use super::*;

/// Why a step may not join the current group: the fusion break the plan records (its text is
/// [`FusionBreak::reason`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(super) enum JoinRefused {
    /// The step, or one of the group, has a grid barrier of its own.
    #[error("step {step} has its own grid barrier, so it stays its own cooperative launch")]
    OwnGridBarrier {
        /// The step with the grid barrier.
        step: usize,
    },
    /// The group already holds [`MAX_GROUP_STEPS`] steps.
    #[error(
        "the group has {steps} steps, the most one fused kernel takes (larger kernels need \
         gigabytes of memory in ptxas)"
    )]
    TooManySteps {
        /// Steps in the group.
        steps: usize,
    },
    /// The fused Program would hold more than [`MAX_GROUP_NODES`] nodes.
    #[error(
        "the fused kernel would hold {total} IR nodes (the group's {group} + step {step}'s \
         {nodes}), more than the {max} one fused kernel takes",
        total = group.saturating_add(*nodes),
        max = MAX_GROUP_NODES
    )]
    TooManyNodes {
        /// The step.
        step: usize,
        /// Nodes of the group.
        group: usize,
        /// Nodes of the step.
        nodes: usize,
    },
    /// The workgroup sizes cannot share one block.
    #[error(transparent)]
    Sizes(#[from] crate::megakernel::mixed::SizeMismatch),
    /// The fused workgroup buffers exceed the device's shared memory per block.
    #[error(
        "shared memory of the fused kernel ({total} B: the group's {group} B + step {step}'s \
         {own} B) exceeds the {max} B per block of {device}",
        group = total - own
    )]
    SharedMemory {
        /// The step.
        step: usize,
        /// Fused bytes.
        total: u64,
        /// The step's bytes.
        own: u64,
        /// Bytes per block the device allows.
        max: u64,
        /// The device.
        device: String,
    },
    /// The fused kernel's launch check failed (its first line).
    #[error("the fused kernel could not launch: {0}")]
    Unlaunchable(String),
    /// Fusing would drag occupancy below the floor.
    #[error(
        "fusing would cut occupancy to {pct:.1}% ({regs} registers, {smem} B shared: {blocks} \
         blocks/SM), below {floor:.1}% (group alone {group_pct:.1}%, step {step} alone \
         {alone_pct:.1}%)"
    )]
    Occupancy {
        /// The step.
        step: usize,
        /// Occupancy of the fused kernel (%).
        pct: f64,
        /// Its registers per thread.
        regs: u32,
        /// Its shared memory (bytes).
        smem: u64,
        /// Its resident blocks per SM.
        blocks: u32,
        /// [`PlanOptions::min_occupancy_pct`].
        floor: f64,
        /// The group's occupancy without the step (%).
        group_pct: f64,
        /// The step's occupancy alone (%).
        alone_pct: f64,
    },
    /// The step needs a grid barrier on a device without cooperative launch.
    #[error("step {step} needs a grid barrier and {device} has no cooperative launch")]
    NoCooperativeLaunch {
        /// The step.
        step: usize,
        /// The device.
        device: String,
    },
}

/// Whether step `s` may join the group `group` (its steps and their [`Agg`]); the reason
/// when not.
pub(super) fn can_join(
    caps: &DeviceCaps,
    opts: &PlanOptions,
    deps: &DepTable,
    res: &[StepRes],
    (group, agg): (&[usize], &Agg),
    s: usize,
) -> Result<(), JoinRefused> {
    let me = res[s];
    if me.grid_barrier {
        return Err(JoinRefused::OwnGridBarrier { step: s });
    }
    if let Some(g) = agg.grid_barrier {
        return Err(JoinRefused::OwnGridBarrier { step: g });
    }
    if agg.steps >= MAX_GROUP_STEPS {
        return Err(JoinRefused::TooManySteps { steps: agg.steps });
    }
    if agg.nodes.saturating_add(me.nodes) > MAX_GROUP_NODES {
        return Err(JoinRefused::TooManyNodes {
            step: s,
            group: agg.nodes,
            nodes: me.nodes,
        });
    }
    let mut with = agg.clone();
    with.add(s, &me);
    crate::megakernel::mixed::check_sizes(&with.sizes)?;
    let together = fused_agg(caps, &with);
    let max_smem = u64::from(caps.smem_per_block_optin.max(caps.smem_per_block));
    if together.smem > max_smem {
        return Err(JoinRefused::SharedMemory {
            step: s,
            total: together.smem,
            own: me.smem,
            max: max_smem,
            device: caps.name.clone(),
        });
    }
    if let Some(why) = together.why_not {
        return Err(JoinRefused::Unlaunchable(
            why.lines().next().unwrap_or("").to_string(),
        ));
    }
    let before = fused_agg(caps, agg);
    let alone = fused(caps, &[me]);
    let floor = opts.min_occupancy_pct;
    let dragged = before.occupancy_pct >= floor || alone.occupancy_pct >= floor;
    if together.occupancy_pct < floor && dragged {
        return Err(JoinRefused::Occupancy {
            step: s,
            pct: together.occupancy_pct,
            regs: together.regs,
            smem: together.smem,
            blocks: together.blocks_per_sm,
            floor: opts.min_occupancy_pct,
            group_pct: before.occupancy_pct,
            alone_pct: alone.occupancy_pct,
        });
    }
    // Only a device without cooperative launch cares, and building the group is linear in
    // it: asking on every device made planning a long chain cubic.
    if !caps.cooperative_launch && needs_grid_barrier(caps, deps, res, group, s) {
        return Err(JoinRefused::NoCooperativeLaunch {
            step: s,
            device: caps.name.clone(),
        });
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
