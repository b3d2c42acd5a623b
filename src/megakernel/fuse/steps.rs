//! Each step's body as one statement of the fused Program, the origin tags that map the
//! fused Program's nodes back to their steps, and the validation of the result reported at
//! those origins.

use super::*;

/// Separator between the step index and the step's own node id in the ids carried until
/// [`renumber`]; parsed node ids are JSON paths and never contain it.
pub(super) const ORIGIN_SEP: char = '|';

/// Step `k`'s body as one statement of the fused Program (`shapes`: the step's launch, the
/// fused launch and the step's sub-tasks per block when packed); with a dataflow `layout`,
/// every task waits for its producers first and publishes its completion last.
pub(super) fn step_stmt(
    k: usize,
    program: &Program,
    names: &HashMap<String, String>,
    (step_shape, launch, pack): (LaunchShape, LaunchShape, Option<u32>),
    layout: Option<&sync::SyncLayout>,
    loadable: Option<(&ValueTypes, &ValueTypes)>,
    group: &str,
) -> Result<Stmt, FuseError> {
    let mut stmts = program.body.clone();
    // A step smaller than the block runs on virtual workgroups of its own size, masked.
    let smaller = step_shape.workgroup_size != launch.workgroup_size;
    // Dataflow tasks are virtual workgroups: every step runs in the loop.
    let wrapped = step_shape.grid != launch.grid || smaller || layout.is_some();
    let prefix = format!("f{k}_");
    let mut virtual_loop = None;
    if wrapped {
        if let Some(node) = rewrite::find_barrier(&stmts, BarrierScope::Grid) {
            return Err(err(
                format!(
                    "{group}: step {k} has a grid barrier at {node} but runs on virtual workgroups \
                     (its grid {:?} differs from the launch grid {:?})",
                    step_shape.grid, launch.grid
                ),
                "split the step at its grid barrier into two steps, or fuse it only into a \
                 launch with its own grid",
            ));
        }
        let workgroups = u32::try_from(step_shape.workgroups()).ok();
        // Sub-tasks in flight over the launch: blocks times sub-tasks per block.
        let p = u64::from(launch.grid[0]) * u64::from(pack.unwrap_or(1));
        let fits = workgroups.is_some_and(|g| u64::from(g).div_ceil(p) * p <= 1 << 32);
        let (Some(workgroups), true, [_, 1, 1]) = (workgroups, fits, launch.grid) else {
            return Err(err(
                format!(
                    "{group}: step {k}'s grid {:?} cannot be covered by virtual workgroups of \
                     the launch grid {:?} (workgroup ids must fit u32)",
                    step_shape.grid, launch.grid
                ),
                "run the step as its own launch",
            ));
        };
        virtual_loop = Some(VirtualLoop {
            prefix: &prefix,
            grid: step_shape.grid,
            workgroups,
            launch_workgroups: launch.grid[0],
            pack: pack.unwrap_or(1),
            workgroup_size: step_shape.workgroup_size,
            used: rewrite::used_ids(&stmts),
            fold: layout.and_then(|l| l.fold_of(k)).map(|_| sync::last_var(k)),
        });
    }
    let renamer = Renamer {
        var_prefix: format!("s{k}_"),
        buffers: names,
        virtual_ids: virtual_loop.as_ref().map(|v| v.ids()),
    };
    renamer.stmts(&mut stmts).map_err(|u| {
        err(
            format!(
                "{group}: step {k} at {}: unknown buffer `{}`",
                u.node, u.buffer
            ),
            "declare every buffer the step's Program uses (run `vyrescope check` on it)",
        )
    })?;
    if pack.is_some() {
        // Its workgroup barriers and buffers become its sub-task's (see pack.rs).
        let shared: HashMap<String, u32> = program
            .buffers
            .iter()
            .filter(|b| !b.access.is_host())
            .filter_map(|b| Some((names.get(&b.name)?.clone(), b.count?)))
            .collect();
        pack::pack(&mut stmts, step_shape.workgroup_size[0], &shared);
    }
    tag_origin(&mut stmts, k);
    if stmts.iter().any(rewrite::has_return) {
        let alive = format!("{prefix}alive");
        stmts = rewrite::lower_returns(stmts, &alive);
        stmts.insert(0, rewrite::let_(&alive, rewrite::bool_lit(true)));
    }
    // Loads that cannot depend on the group's writes go ahead of the block's first task of a
    // step that waits (and fixed waits out of the task loop): see prefetch.rs.
    let mut prologue = Vec::new();
    let mut waits_hoisted = false;
    if let (Some(v), Some(l), Some(buffers)) = (virtual_loop.as_ref(), layout, loadable) {
        if v.fold.is_none() && !smaller {
            (prologue, waits_hoisted) = prefetch::ahead_of_waits(&mut stmts, v, l, k, buffers);
        }
    }
    // A block that runs several virtual workgroups of a step one trip after another reuses
    // its workgroup buffers: a thread starting the next trip must not overwrite an element
    // that a slower thread of the same workgroup (sub-task) still reads after the step's last
    // barrier. One more barrier closes each trip (the sub-task's when packed); a step
    // without barriers only ever reads its own elements, and needs none.
    let reuses_shared = program.buffers.iter().any(|b| !b.access.is_host())
        && rewrite::find_barrier(&program.body, BarrierScope::Workgroup).is_some();
    if reuses_shared && virtual_loop.as_ref().is_some_and(|v| v.trips() > 1) {
        let scope = match pack {
            Some(_) => BarrierScope::Subtask {
                threads: step_shape.workgroup_size[0],
            },
            None => BarrierScope::Workgroup,
        };
        stmts.push(rewrite::synth(StmtKind::Barrier(scope)));
    }
    // A packed step's threads all run a sub-task: nothing to mask.
    if smaller && pack.is_none() {
        stmts = mask::mask(stmts, step_shape.workgroup_size[0]);
    }
    // A packed step's waits open each block trip, for all its sub-tasks together.
    let mut trip_head = Vec::new();
    if let Some(l) = layout {
        // Outside the mask: every thread of the block takes part in the waits' `bar.sync`.
        let mut task = if waits_hoisted {
            Vec::new()
        } else if pack.is_some() {
            trip_head = l.before_task(k);
            Vec::new()
        } else {
            l.before_task(k)
        };
        task.append(&mut stmts);
        task.extend(l.after_task(k));
        stmts = task;
    }
    let mut wrapped = match virtual_loop {
        Some(v) => {
            prologue.extend(v.wrap(trip_head, stmts));
            prologue
        }
        None => return Ok(rewrite::synth(StmtKind::Block(stmts))),
    };
    if let Some(l) = layout {
        // After the block's last task of the step, outside the loop: every block counts once.
        wrapped.extend(l.after_step(k));
    }
    Ok(if wrapped.len() == 1 {
        wrapped.remove(0)
    } else {
        rewrite::synth(StmtKind::Block(wrapped))
    })
}

/// The fused Program's default run: its launch grid and its host buffers' contents as the
/// pipeline declares them.
pub(super) fn run_spec(pipeline: &Pipeline, buffers: &[String], shape: &LaunchShape) -> RunSpec {
    RunSpec {
        grid: Some(shape.grid),
        elements: None,
        inputs: buffers
            .iter()
            .filter_map(|b| {
                pipeline
                    .buffer(b)
                    .map(|pb| (b.clone(), pb.contents.clone()))
            })
            .collect(),
    }
}

/// Marks every statement of step `k` with its origin (`k|node`), read back by [`renumber`].
pub(super) fn tag_origin(list: &mut [Stmt], k: usize) {
    for s in list {
        s.id = NodeId::new(format!("{k}{ORIGIN_SEP}{}", s.id));
        match &mut s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                tag_origin(then, k);
                tag_origin(otherwise, k);
            }
            StmtKind::Loop { body, .. } | StmtKind::Block(body) => tag_origin(body, k),
            _ => {}
        }
    }
}

pub(super) fn preorder_ids(list: &[Stmt], out: &mut Vec<NodeId>) {
    for s in list {
        out.push(s.id.clone());
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                preorder_ids(then, out);
                preorder_ids(otherwise, out);
            }
            StmtKind::Loop { body, .. } | StmtKind::Block(body) => preorder_ids(body, out),
            _ => {}
        }
    }
}

/// Replaces the node ids of `body` with the fused Program's JSON paths and returns where each
/// statement taken over from a step came from.
pub(super) fn renumber(body: &mut [Stmt]) -> BTreeMap<NodeId, (usize, NodeId)> {
    let mut old = Vec::new();
    preorder_ids(body, &mut old);
    assign_ids(body, "body");
    let mut new = Vec::new();
    preorder_ids(body, &mut new);
    let mut origin = BTreeMap::new();
    for (o, n) in old.iter().zip(new) {
        if o.as_ref() == SYNTHETIC {
            continue;
        }
        if let Some((k, id)) = o.split_once(ORIGIN_SEP) {
            if let Ok(k) = k.parse::<usize>() {
                origin.insert(n, (k, NodeId::new(id)));
            }
        }
    }
    origin
}

/// The validator must accept the fused Program; its errors are reported at the steps' nodes
/// (`node_origin`). Its facts are what the kernel is emitted from.
pub(super) fn check_valid(
    program: &Program,
    node_origin: &BTreeMap<NodeId, (usize, NodeId)>,
    group: &str,
) -> Result<ProgramInfo, FuseError> {
    let validation = crate::validate::analyze(program);
    if let Some(info) = validation.info {
        return Ok(info);
    }
    let lines: Vec<String> = validation
        .diagnostics
        .iter()
        .filter(|d| d.severity == crate::finding::Severity::Error)
        .map(|d| {
            let at = match &d.node {
                Some(n) => match node_origin.get(n) {
                    Some((k, id)) => format!("step {k} at {id}"),
                    None => format!("fused node {n}"),
                },
                None => "the fused Program".to_string(),
            };
            format!("{} {at}: {}", d.code, d.message)
        })
        .collect();
    Err(err(
        format!(
            "{group}: the fused Program is invalid:\n    {}",
            lines.join("\n    ")
        ),
        "check each step with `vyrescope check`; a step whose barriers or returns depend on \
         its own grid cannot be fused",
    ))
}
