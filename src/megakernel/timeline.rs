//! Which statements of a fused kernel the timeline records ([`fused_spec`]): each step's
//! top-level statement (or, for a step that runs in a loop over virtual workgroups, the
//! guarded body of each iteration, with the virtual workgroup id) and every wait that
//! `emit::timeline::wait_kind` recognises, at any depth.
//!
//! It reads the structure `fuse` builds (see its module docs): top-level statements are
//! the step bodies and the separations; a step on virtual workgroups is
//! `loop f{k}_t { let f{k}_v = ...; if (f{k}_v < G) {...} }` (or the `let`/`if` pair in a
//! block when one trip suffices), possibly in a block after a prologue (loads issued ahead
//! of a wait, fixed waits moved out of the loop: their waits are recorded once per block)
//! and before the block's own publication (an arrival, its tasks' flags).

use crate::emit::timeline::{wait_kind, TimelineSpec, TimelineUnit, UnitKind};
use crate::ir::{BinOp, Expr, Literal, Scalar, Stmt, StmtKind};

use super::FusedKernel;

/// The timeline spec of `kernel`.
pub fn fused_spec(kernel: &FusedKernel) -> TimelineSpec {
    let mut units = Vec::new();
    let mut records: u64 = 0;
    let mut last_step: Option<u32> = None;
    for s in &kernel.program.body {
        if let Some(w) = wait_kind(&s.kind) {
            units.push(unit(s, UnitKind::Wait(w), last_step, None, None));
            records += 1;
            continue;
        }
        // The fold flags' `let f{k}_last = false` at the top are bookkeeping, not step work.
        if matches!(&s.kind, StmtKind::Let { name, .. } if name.starts_with('f') && name.ends_with("_last"))
        {
            continue;
        }
        let step = step_of(kernel, s);
        // Made-up statements between steps that do not wait (a workgroup barrier) are no unit.
        let Some(k) = step else { continue };
        last_step = Some(k);
        let (marked, trips, wg_var, workgroups, before, head) = match virtual_body(s) {
            Some(v) => v,
            None => (s, 1, None, None, &[][..], &[][..]),
        };
        // Waits of the step's prologue (fixed waits moved out of the task loop): once per
        // block, before its tasks.
        for b in before {
            if let Some(w) = wait_kind(&b.kind) {
                units.push(unit(b, UnitKind::Wait(w), step, None, None));
                records += 1;
            }
            records += waits_inside(b, step, 1, &mut units);
        }
        // A packed step's trip-level waits: once per trip.
        for h in head {
            if let Some(w) = wait_kind(&h.kind) {
                units.push(unit(h, UnitKind::Wait(w), step, None, None));
                records += trips;
            }
        }
        // A packed step: one record per sub-task (see `TimelineUnit::packed`).
        let packed = kernel
            .steps
            .iter()
            .position(|&j| Some(j as u32) == step)
            .and_then(|i| kernel.layouts.get(i)?.packed())
            .filter(|_| wg_var.is_some());
        let mut u = unit(marked, UnitKind::Step, step, wg_var, workgroups);
        u.packed = packed;
        units.push(u);
        records += trips * u64::from(packed.unwrap_or(1));
        // Waits inside a step (counted once per enclosing literal-trip loop iteration).
        records += waits_inside(marked, step, trips, &mut units);
    }
    TimelineSpec {
        units,
        slots_per_block: TimelineSpec::slots_for(records),
    }
}

fn unit(
    s: &Stmt,
    kind: UnitKind,
    step: Option<u32>,
    workgroup_var: Option<String>,
    workgroups: Option<u32>,
) -> TimelineUnit {
    TimelineUnit {
        node: s.id.to_string(),
        kind,
        step,
        workgroup_var,
        workgroups,
        packed: None,
    }
}

/// The pipeline step a top-level statement comes from: the first statement inside it that
/// [`FusedKernel::node_origin`] maps, else the `f{k}_` prefix of a made-up variable.
fn step_of(kernel: &FusedKernel, s: &Stmt) -> Option<u32> {
    let mut found = None;
    visit(s, &mut |x| {
        if found.is_none() {
            found = kernel.node_origin.get(&x.id).map(|(k, _)| *k as u32);
        }
    });
    if found.is_some() {
        return found;
    }
    visit(s, &mut |x| {
        if let (None, StmtKind::Let { name, .. } | StmtKind::Loop { var: name, .. }) =
            (found, &x.kind)
        {
            found = name
                .strip_prefix('f')
                .and_then(|r| r.split_once('_'))
                .and_then(|(k, _)| k.parse().ok());
        }
    });
    found
}

fn visit(s: &Stmt, f: &mut dyn FnMut(&Stmt)) {
    f(s);
    match &s.kind {
        StmtKind::If {
            then, otherwise, ..
        } => then.iter().chain(otherwise).for_each(|c| visit(c, f)),
        StmtKind::Loop { body, .. } | StmtKind::Block(body) => {
            body.iter().for_each(|c| visit(c, f))
        }
        _ => {}
    }
}

/// A step on virtual workgroups: (the guarded `if`, trips per block, the virtual id
/// variable, the step's workgroup count, the statements of the step's block before its
/// task loop, the waits each trip runs before its test). The statements before the loop
/// come from fusion's prologue (loads issued ahead of a wait, and fixed waits moved out of
/// the loop); the statements after the loop (a block's arrival, its tasks' flags) do no
/// task's work. A packed step's waits stand at trip level, between `let f{k}_v` and the
/// test: they serve all the trip's sub-tasks at once.
type Virtual<'a> = (
    &'a Stmt,
    u64,
    Option<String>,
    Option<u32>,
    &'a [Stmt],
    &'a [Stmt],
);

/// One trip of a step's task loop: (guard, trips, id variable, workgroups, trip waits).
type Trip<'a> = (&'a Stmt, u64, Option<String>, Option<u32>, &'a [Stmt]);

fn virtual_body(s: &Stmt) -> Option<Virtual<'_>> {
    match &s.kind {
        StmtKind::Loop { .. } => task_loop(s).map(|(g, t, v, w, h)| (g, t, v, w, &[][..], h)),
        StmtKind::Block(body) => {
            if let Some((g, t, v, w, h)) = task_pair(body, 1) {
                return Some((g, t, v, w, &[], h));
            }
            (0..body.len()).find_map(|i| {
                let found = match &body[i].kind {
                    StmtKind::Loop { .. } => task_loop(&body[i]),
                    _ => task_pair(&body[i..], 1),
                };
                found.map(|(g, t, v, w, h)| (g, t, v, w, &body[..i], h))
            })
        }
        _ => None,
    }
}

/// `loop f{k}_t { [let f{k}_trip = ...;] let f{k}_v = ...; waits...; if (f{k}_v < G) {...} }`.
fn task_loop(s: &Stmt) -> Option<Trip<'_>> {
    match &s.kind {
        StmtKind::Loop { to, body, var, .. } if var.starts_with('f') && var.ends_with("_t") => {
            task_pair(body, u32_of(to)? as u64)
        }
        _ => None,
    }
}

/// `[let f{k}_trip = ...;] let f{k}_v = ...; waits...; if (f{k}_v < G) {...}` at the start
/// of `pair` (the trip id and the waits only in a packed step).
fn task_pair(pair: &[Stmt], trips: u64) -> Option<Trip<'_>> {
    let is_let = |s: &Stmt, suffix: &str| matches!(&s.kind, StmtKind::Let { name, .. } if name.starts_with('f') && name.ends_with(suffix));
    let pair = match pair.first() {
        Some(first) if is_let(first, "_trip") => &pair[1..],
        _ => pair,
    };
    let [let_v, after_v @ ..] = pair else {
        return None;
    };
    let waits = after_v
        .iter()
        .take_while(|s| wait_kind(&s.kind).is_some())
        .count();
    let (head, after_head) = after_v.split_at(waits);
    // A step's block may end with its arrival (`after_step`): no wait, so no unit.
    let [guard, rest @ ..] = after_head else {
        return None;
    };
    if rest.iter().any(|r| wait_kind(&r.kind).is_some()) {
        return None;
    }
    let StmtKind::Let { name, .. } = &let_v.kind else {
        return None;
    };
    if !is_let(let_v, "_v") {
        return None;
    }
    let StmtKind::If { cond, .. } = &guard.kind else {
        return None;
    };
    let workgroups = match cond {
        Expr::Binary(BinOp::Lt, a, b) if matches!(&**a, Expr::Var(v) if v == name) => u32_of(b),
        // A last-arriver fold (`let f{k}_v = select(f{k}_last, 0, 1); if (f{k}_last) {...}`):
        // one workgroup, run by whichever block arrives last.
        Expr::Var(last) if last.starts_with('f') && last.ends_with("_last") => Some(1),
        _ => None,
    };
    Some((guard, trips, Some(name.clone()), workgroups, head))
}

fn u32_of(e: &Expr) -> Option<u32> {
    match e {
        Expr::Lit(Literal::Typed(Scalar::U32(v))) => Some(*v),
        Expr::Lit(Literal::Int(v)) => u32::try_from(*v).ok(),
        _ => None,
    }
}

/// Adds a unit for every wait nested in `s` and returns how many records they write per
/// block: `trips` times the trip count of each enclosing loop (a loop whose trip count is
/// not a literal counts 64 times; the record ring keeps the latest should that be short).
fn waits_inside(s: &Stmt, step: Option<u32>, trips: u64, units: &mut Vec<TimelineUnit>) -> u64 {
    let mut records = 0u64;
    let children: Vec<(&Stmt, u64)> = match &s.kind {
        StmtKind::If {
            then, otherwise, ..
        } => then.iter().chain(otherwise).map(|c| (c, trips)).collect(),
        StmtKind::Block(body) => body.iter().map(|c| (c, trips)).collect(),
        StmtKind::Loop { from, to, body, .. } => {
            let n = match (u32_of(from), u32_of(to)) {
                (Some(a), Some(b)) => b.saturating_sub(a) as u64,
                _ => 64,
            };
            body.iter().map(|c| (c, trips.saturating_mul(n))).collect()
        }
        _ => vec![],
    };
    for (c, t) in children {
        if let Some(w) = wait_kind(&c.kind) {
            units.push(unit(c, UnitKind::Wait(w), step, None, None));
            records = records.saturating_add(t);
        }
        records = records.saturating_add(waits_inside(c, step, t, units));
    }
    records
}
