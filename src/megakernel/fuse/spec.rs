//! Checks of a fused group's spec before fusing: the steps it names, their separations and
//! whether their workgroup sizes share one block; and the fused launch and the host
//! buffers the fused kernel binds.

use super::*;

/// The spec must name existing steps with one separation between each pair, and the steps'
/// workgroup sizes must be able to share one block (`crate::megakernel::mixed`).
pub(super) fn check_spec(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
    spec: &FusedGroupSpec,
    group: &str,
) -> Result<(), FuseError> {
    if shapes.len() != pipeline.steps.len() {
        return Err(err(
            format!(
                "{group}: {} launch shapes for {} steps",
                shapes.len(),
                pipeline.steps.len()
            ),
            "pass one launch shape per pipeline step, indexed like `Pipeline::steps`",
        ));
    }
    if spec.steps.is_empty() {
        return Err(err(
            format!("{group}: the group has no steps"),
            "give every group at least one step",
        ));
    }
    if let Some(&k) = spec.steps.iter().find(|&&k| k >= pipeline.steps.len()) {
        return Err(err(
            format!(
                "{group}: step {k} does not exist (the pipeline has {})",
                pipeline.steps.len()
            ),
            "group only steps of this pipeline",
        ));
    }
    if spec.steps.windows(2).any(|w| w[0] >= w[1]) {
        return Err(err(
            format!("{group}: the steps are not in increasing order"),
            "list a group's steps in execution order, each once",
        ));
    }
    let seps_ok = spec.separations.len() + 1 == spec.steps.len()
        && spec
            .separations
            .iter()
            .zip(&spec.steps)
            .all(|(s, &k)| s.after_step == k);
    if !seps_ok {
        return Err(err(
            format!(
                "{group}: the separations {:?} do not sit after each step but the last",
                spec.separations
                    .iter()
                    .map(|s| s.after_step)
                    .collect::<Vec<_>>()
            ),
            "give `separations[i].after_step == steps[i]` for every step but the last",
        ));
    }
    // No barrier between two steps is only sound when each invocation (virtual workgroup) of
    // the second is run by the same thread (workgroup) that ran it in the first: equal grids,
    // or two one-dimensional grids (the launch is then one-dimensional too, and virtual
    // workgroup `v` of every step runs on physical workgroup `v mod P`, see
    // `rewrite::VirtualLoop::wrap`, with the same local ids).
    let one_d = |g: [u32; 3]| g[1] == 1 && g[2] == 1;
    for (sep, w) in spec.separations.iter().zip(spec.steps.windows(2)) {
        let weak = matches!(sep.kind, DepKind::Invocation | DepKind::Workgroup);
        let (a, b) = (shapes[w[0]].grid, shapes[w[1]].grid);
        if weak && a != b && !(one_d(a) && one_d(b)) {
            return Err(err(
                format!(
                    "{group}: a `{}` separation between steps {} and {} of different grids \
                     ({:?} and {:?}), not both one-dimensional",
                    sep.kind.name(),
                    w[0],
                    w[1],
                    shapes[w[0]].grid,
                    shapes[w[1]].grid
                ),
                "separate steps of different grids by a grid barrier",
            ));
        }
    }
    let sizes: Vec<(usize, [u32; 3], bool)> = spec
        .steps
        .iter()
        .map(|&k| {
            let sub = crate::megakernel::mixed::uses_subgroup_ops(&pipeline.steps[k].program);
            (k, shapes[k].workgroup_size, sub)
        })
        .collect();
    crate::megakernel::mixed::check_sizes(&sizes).map_err(|why| {
        err(
            format!("{group}: {why}"),
            "fuse only steps whose workgroup sizes can share a block (see `vyrescope plan`)",
        )
    })?;
    for (sep, w) in spec.separations.iter().zip(spec.steps.windows(2)) {
        let weak = matches!(sep.kind, DepKind::Invocation | DepKind::Workgroup);
        let (a, b) = (shapes[w[0]].workgroup_size, shapes[w[1]].workgroup_size);
        if weak && a != b {
            return Err(err(
                format!(
                    "{group}: a `{}` separation between steps {} and {} of different workgroup \
                     sizes ({a:?} and {b:?})",
                    sep.kind.name(),
                    w[0],
                    w[1]
                ),
                "separate steps of different workgroup sizes by a grid barrier",
            ));
        }
    }
    for &k in &spec.steps {
        shapes[k]
            .check()
            .map_err(|e| err(format!("{group}: step {k}: {}", e.message), e.fix))?;
    }
    Ok(())
}

/// The launch of the fused kernel (see [`FusedKernel::shape`]).
pub(super) fn launch_shape(
    shapes: &[LaunchShape],
    spec: &FusedGroupSpec,
    group: &str,
) -> Result<LaunchShape, FuseError> {
    let first = shapes[spec.steps[0]];
    let block =
        crate::megakernel::mixed::block_size(spec.steps.iter().map(|&k| shapes[k].workgroup_size));
    let one_size = spec
        .steps
        .iter()
        .all(|&k| shapes[k].workgroup_size == first.workgroup_size);
    let grid = match spec.persistent_blocks {
        Some(0) => {
            return Err(err(
                format!("{group}: a persistent grid of 0 blocks"),
                "give `persistent_blocks` >= 1 (the co-resident block count)",
            ))
        }
        Some(p) => [p, 1, 1],
        None if one_size && spec.steps.iter().all(|&k| shapes[k].grid == first.grid) => first.grid,
        None => {
            let most = spec
                .steps
                .iter()
                .map(|&k| shapes[k].workgroups())
                .max()
                .unwrap_or(1);
            let most = u32::try_from(most)
                .ok()
                .filter(|&m| m <= MAX_GRID_DIMS[0])
                .ok_or_else(|| {
                    err(
                        format!("{group}: {most} workgroups do not fit one grid axis"),
                        "use a persistent grid (`persistent_blocks`) for steps this large",
                    )
                })?;
            [most, 1, 1]
        }
    };
    if grid[0] > MAX_GRID_DIMS[0] {
        return Err(err(
            format!("{group}: {} blocks exceed CUDA's grid limit", grid[0]),
            "use fewer persistent blocks",
        ));
    }
    let shape = LaunchShape {
        workgroup_size: block,
        grid,
    };
    shape
        .check()
        .map_err(|e| err(format!("{group}: fused launch: {}", e.message), e.fix))?;
    Ok(shape)
}

/// The pipeline buffers the group touches (pipeline order) and their fused declarations.
pub(super) fn host_buffers(
    pipeline: &Pipeline,
    by_name: &BufIndex,
    spec: &FusedGroupSpec,
    group: &str,
) -> Result<(Vec<String>, Vec<BufferDecl>), FuseError> {
    // Per pipeline buffer: (any step writes it, every step binds it uniform).
    let mut uses: HashMap<&str, (bool, bool)> = HashMap::new();
    for &k in &spec.steps {
        let step = &pipeline.steps[k];
        for b in step.program.buffers.iter().filter(|b| b.access.is_host()) {
            let Some(bound) = step.bound(&b.name) else {
                return Err(err(
                    format!("{group}: step {k}: buffer `{}` is not bound", b.name),
                    "bind every host buffer of the step's Program to a pipeline buffer",
                ));
            };
            let Some(&(_, pb)) = by_name.get(bound) else {
                return Err(err(
                    format!(
                        "{group}: step {k}: `{}` is bound to unknown pipeline buffer `{bound}`",
                        b.name
                    ),
                    "bind it to a buffer declared in the pipeline's `buffers`",
                ));
            };
            if pb.elem != b.elem {
                return Err(err(
                    format!(
                        "{group}: step {k}: `{}` holds {} but pipeline buffer `{bound}` holds {}",
                        b.name, b.elem, pb.elem
                    ),
                    "bind buffers of the same element type",
                ));
            }
            let e = uses.entry(bound).or_insert((false, true));
            e.0 |= b.access.is_writable();
            e.1 &= b.access == Access::Uniform;
        }
    }
    let mut names = Vec::new();
    let mut decls = Vec::new();
    // In pipeline order: the group's buffers sorted by their place in the pipeline (a walk
    // over all the pipeline's buffers per group was quadratic in a long chain).
    let mut used: Vec<(usize, &crate::ir::PipelineBuffer)> = uses
        .keys()
        .filter_map(|n| by_name.get(n).copied())
        .collect();
    used.sort_by_key(|(i, _)| *i);
    for (_, pb) in used {
        let Some(&(writes, uniform)) = uses.get(pb.name.as_str()) else {
            continue;
        };
        let access = if writes {
            Access::ReadWrite
        } else if uniform {
            Access::Uniform
        } else {
            Access::Read
        };
        decls.push(BufferDecl {
            name: pb.name.clone(),
            binding: Some(names.len() as u32),
            access,
            elem: pb.elem,
            count: None,
        });
        names.push(pb.name.clone());
    }
    Ok((names, decls))
}
