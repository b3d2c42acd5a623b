//! Prefetch of read-only loads ahead of a dataflow step's waits.
//!
//! A block of a persistent grid runs the virtual workgroups `v, v + P, v + 2P, ...` of a step
//! one after another, and a dataflow task first waits for its producers. A task then pays its
//! loads' round trips only after the wait, even for data that never depended on the
//! producer, and the block's later tasks pay theirs in turn (the copies of the task loop are
//! separated by `bar.sync`s). hist_equalize's map step, for instance, loads `x[i]` and then
//! `cdf[x[i] & 255]`: two dependent L2 round trips per task, four tasks per block, all after
//! the cdf's broadcast.
//!
//! This rewrite issues, before the block's first task of a step that waits, every load that
//! cannot depend on anything the group writes, for every task copy of the block: a load of a
//! buffer no step of the group writes (the fused declaration is `read`), at an index computed
//! only from the virtual ids, `lid`, `lane`, literals, `len` and variables bound once at the
//! top of the step to such values. Its value is the same at any point of the launch, so
//! loading it early changes no result (an out-of-range index still reads 0); the loads are in
//! flight while the block waits, and each task reads its prefetched register (`select` on the
//! copy's counter, which folds to one register once the task loop is unrolled). Loads inside
//! loops stay where they are (their index may change per iteration), and so does any load
//! whose index reads a variable that is ever assigned.
//!
//! A second pass (`fuse.rs`) runs where a step's waits are all fixed and move before its task
//! loop: given the buffers no step from this one on writes, it issues right after the waits
//! the loads that needed them, again for every task of the block.
//!
//! Only dataflow steps that wait before their tasks are rewritten, on virtual workgroups of
//! the block's own size (a masked smaller step keeps its loads), holding at most
//! [`MAX_PREFETCHED`] values per thread. On an H200 the kernel span of reduce_normalize_2p20
//! fell from 12.8-12.9 to 11.2-11.4 us and hist_equalize_shared's from 13.2-13.3 to 12.3-12.4
//! us. Prefetching also ahead of steps that do not wait but run several tasks per block was
//! measured and not kept: it lengthened reduce_normalize_2p20's dataflow span back to 12.7-12.9
//! us and raised hist_equalize's kernel from 31 to 48 registers (5 blocks per SM instead of 8).

use std::collections::{HashMap, HashSet};

use crate::ir::{Axis, BinOp, Builtin, Expr, Literal, Scalar, ScalarType, Stmt, StmtKind};

use super::rewrite::{bin, children_mut, if_, let_, u32_lit, VirtualLoop};
use super::sync::{is_fixed_wait, SyncLayout};

/// Most prefetched values per thread (task copies x loads): registers held from the
/// prologue to the task that reads them, kept low so that the block's residency holds.
pub(super) const MAX_PREFETCHED: usize = 8;

/// Fused buffer name -> value type.
pub(super) type ValueTypes = HashMap<String, ScalarType>;

/// The prologue of step `k`'s task loop `vl` in a dataflow group (`stmts`: the step's body,
/// renamed, rewritten in place) and whether its waits moved into it. `buffers`: those no step
/// of the group writes, and those no step from `k` on writes. Nothing for a step without
/// waits. Its loads ahead of the waits come first; where every wait is fixed and the block
/// runs several tasks, the waits follow once (only in blocks with a task of the step), then
/// the loads that needed them.
pub(super) fn ahead_of_waits(
    stmts: &mut [Stmt],
    vl: &VirtualLoop,
    layout: &SyncLayout,
    k: usize,
    (read_only, settled): (&ValueTypes, &ValueTypes),
) -> (Vec<Stmt>, bool) {
    let waits = layout.before_task(k);
    if waits.is_empty() {
        return (Vec::new(), false);
    }
    let ro = Loadable {
        buffers: read_only,
        tag: "pre",
        defined: &[],
    };
    let (mut prologue, names) = prefetch(stmts, &ro, vl);
    if vl.workgroups <= vl.launch_workgroups || !waits.iter().all(is_fixed_wait) {
        return (prologue, false);
    }
    let first = format!("{}first", vl.prefix);
    prologue.push(let_(&first, Expr::Builtin(Builtin::WorkgroupId(Axis::X))));
    prologue.push(if_(
        bin(BinOp::Lt, Expr::Var(first.clone()), u32_lit(vl.workgroups)),
        layout.before_first_task(k, &first),
    ));
    let after = Loadable {
        buffers: settled,
        tag: "post",
        defined: &names,
    };
    prologue.extend(prefetch(stmts, &after, vl).0);
    (prologue, true)
}

/// What one pass of the rewrite may load ahead of the tasks.
pub(super) struct Loadable<'a> {
    /// Fused buffer name -> value type, for every buffer whose loads may move.
    pub buffers: &'a ValueTypes,
    /// Name of the made-up variables (`pre`: `f2_pre0_3`).
    pub tag: &'a str,
    /// Variables defined before the prologue (an earlier pass's) that indices may read.
    pub defined: &'a [String],
}

/// Rewrites `body` (one step, renamed, before the virtual loop wraps it) so that its
/// hoistable loads read prefetched registers, and returns the prologue that loads them (to
/// go before the loop) with the names it defines. Empty when nothing qualifies.
pub(super) fn prefetch(
    body: &mut [Stmt],
    ro: &Loadable,
    vl: &VirtualLoop,
) -> (Vec<Stmt>, Vec<String>) {
    let ids = vl.ids();
    let counter = format!("{}t", vl.prefix);
    let mut known: HashMap<String, Option<Expr>> = HashMap::new();
    for a in 0..3 {
        known.insert(ids.wgid[a].clone(), None);
        known.insert(ids.gid[a].clone(), None);
    }
    known.insert(counter.clone(), None);
    for d in ro.defined {
        known.insert(d.clone(), None);
    }
    let assigned = assigned_or_redeclared(body);
    // Variables bound once at the top level to a hoistable value: substituted by value.
    for s in body.iter() {
        if let StmtKind::Let { name, value } = &s.kind {
            if !assigned.contains(name) && hoistable(value, ro, &known) {
                known.insert(name.clone(), Some(value.clone()));
            }
        }
    }
    let mut found: Vec<(String, Expr)> = Vec::new();
    exprs_outside_loops(body, &mut |e| collect_expr(e, ro, &known, &mut found));
    let trips = vl.trips() as usize;
    found.truncate(MAX_PREFETCHED / trips.max(1));
    if found.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let name = |j: usize, t: usize| format!("{}{}{j}_{t}", vl.prefix, ro.tag);
    let mut prologue = Vec::new();
    let mut names = Vec::new();
    for t in 0..trips {
        let v = vl.virtual_id(t as u32);
        let (wgid, gid) = vl.id_exprs(&v);
        let mut copy_of: HashMap<&str, Expr> = HashMap::new();
        for a in 0..3 {
            copy_of.insert(&ids.wgid[a], wgid[a].clone());
            copy_of.insert(&ids.gid[a], gid[a].clone());
        }
        copy_of.insert(&counter, u32_lit(t as u32));
        for (j, (buffer, index)) in found.iter().enumerate() {
            let load = Expr::Load {
                buffer: buffer.clone(),
                index: Box::new(substitute(index, &known, &copy_of)),
            };
            let ty = ro.buffers[buffer];
            // A block without this copy (v past the step's workgroups) loads nothing.
            let guarded = Expr::Select(
                Box::new(bin(BinOp::Lt, v.clone(), u32_lit(vl.workgroups))),
                Box::new(load),
                Box::new(Expr::Lit(Literal::Typed(Scalar::from_bits(ty, 0)))),
            );
            prologue.push(let_(&name(j, t), guarded));
            names.push(name(j, t));
        }
    }
    let counter = Expr::Var(counter);
    let reads: Vec<Expr> = (0..found.len())
        .map(|j| {
            // Copy t of the task loop reads pre{j}_t: a chain of selects on the counter,
            // each of which folds away in an unrolled copy.
            let mut e = Expr::Var(name(j, trips - 1));
            for t in (0..trips - 1).rev() {
                e = Expr::Select(
                    Box::new(bin(BinOp::Eq, counter.clone(), u32_lit(t as u32))),
                    Box::new(Expr::Var(name(j, t))),
                    Box::new(e),
                );
            }
            e
        })
        .collect();
    exprs_outside_loops(body, &mut |e| replace_expr(e, &found, &reads));
    (prologue, names)
}

/// Names assigned anywhere in `list`, loop counters, and names declared more than once.
fn assigned_or_redeclared(list: &[Stmt]) -> HashSet<String> {
    fn walk(list: &[Stmt], seen: &mut HashSet<String>, out: &mut HashSet<String>) {
        for s in list {
            match &s.kind {
                StmtKind::Let { name, .. } if !seen.insert(name.clone()) => {
                    out.insert(name.clone());
                }
                StmtKind::Assign { name, .. } => {
                    out.insert(name.clone());
                }
                StmtKind::Loop { var, body, .. } => {
                    out.insert(var.clone());
                    walk(body, seen, out);
                }
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    walk(then, seen, out);
                    walk(otherwise, seen, out);
                }
                StmtKind::Block(b) => walk(b, seen, out),
                _ => {}
            }
        }
    }
    let mut seen = HashSet::new();
    let mut out = HashSet::new();
    walk(list, &mut seen, &mut out);
    out
}

/// True when `e` has the same value wherever in the step it is evaluated: built from
/// literals, `len`, the per-invocation ids, known variables and loads of read-only buffers.
fn hoistable(e: &Expr, ro: &Loadable, known: &HashMap<String, Option<Expr>>) -> bool {
    match e {
        Expr::Lit(_) | Expr::Len(_) => true,
        Expr::Clock => false,
        Expr::Var(v) => known.contains_key(v),
        // After renaming, gid/wgid/nwg of a virtual-workgroup step are variables or literals;
        // these are the thread's own and do not change.
        Expr::Builtin(b) => matches!(
            b,
            Builtin::LocalId(_) | Builtin::Lane | Builtin::SubgroupSize
        ),
        Expr::Load { buffer, index } => {
            ro.buffers.contains_key(buffer) && hoistable(index, ro, known)
        }
        Expr::Binary(_, a, b) => hoistable(a, ro, known) && hoistable(b, ro, known),
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Bitcast(_, a) => hoistable(a, ro, known),
        Expr::Select(a, b, c) | Expr::Fma(a, b, c) => {
            hoistable(a, ro, known) && hoistable(b, ro, known) && hoistable(c, ro, known)
        }
        Expr::Atomic { .. } | Expr::Shuffle { .. } | Expr::SubgroupReduce(..) | Expr::Ballot(_) => {
            false
        }
    }
}

/// The outermost hoistable loads of `e`, in evaluation order, without repeats.
fn collect_expr(
    e: &mut Expr,
    ro: &Loadable,
    known: &HashMap<String, Option<Expr>>,
    out: &mut Vec<(String, Expr)>,
) {
    if let Expr::Load { buffer, index } = e {
        if ro.buffers.contains_key(buffer.as_str()) && hoistable(index, ro, known) {
            let key = (buffer.clone(), index.as_ref().clone());
            if !out.contains(&key) {
                out.push(key);
            }
            return;
        }
    }
    for c in children_mut(e) {
        collect_expr(c, ro, known, out);
    }
}

/// Calls `f` on every expression of `list` and of the branches under it, in evaluation
/// order; loop bodies are left alone (an index there may change per iteration).
fn exprs_outside_loops(list: &mut [Stmt], f: &mut dyn FnMut(&mut Expr)) {
    for s in list {
        match &mut s.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => f(value),
            StmtKind::Store { index, value, .. } => {
                f(index);
                f(value);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                f(cond);
                exprs_outside_loops(then, f);
                exprs_outside_loops(otherwise, f);
            }
            StmtKind::Block(b) => exprs_outside_loops(b, f),
            StmtKind::Loop { .. } | StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {
            }
        }
    }
}

/// `e` with the virtual ids of one task copy and the known variables' values in place.
fn substitute(
    e: &Expr,
    known: &HashMap<String, Option<Expr>>,
    copy_of: &HashMap<&str, Expr>,
) -> Expr {
    let mut out = e.clone();
    substitute_in(&mut out, known, copy_of);
    out
}

fn substitute_in(
    e: &mut Expr,
    known: &HashMap<String, Option<Expr>>,
    copy_of: &HashMap<&str, Expr>,
) {
    if let Expr::Var(v) = e {
        if let Some(x) = copy_of.get(v.as_str()) {
            *e = x.clone();
        } else if let Some(Some(value)) = known.get(v.as_str()) {
            *e = substitute(value, known, copy_of);
        }
        return;
    }
    for c in children_mut(e) {
        substitute_in(c, known, copy_of);
    }
}

fn replace_expr(e: &mut Expr, found: &[(String, Expr)], reads: &[Expr]) {
    if let Expr::Load { buffer, index } = e {
        if let Some(j) = found
            .iter()
            .position(|(b, i)| b == buffer && i == index.as_ref())
        {
            *e = reads[j].clone();
            return;
        }
    }
    for c in children_mut(e) {
        replace_expr(c, found, reads);
    }
}
