//! Statement rewrites that turn one step's body into a piece of a fused Program: renaming
//! (variables, buffers, builtins), `return` lowering into an `alive` flag, and the loop over
//! virtual workgroups that lets a smaller (persistent) grid cover a step's grid.
//!
//! Every statement taken over from a step keeps its original node id until the fused Program
//! is renumbered; statements made up here get [`SYNTHETIC`] so that renumbering can tell them
//! apart.

use std::collections::HashMap;

use crate::ir::{
    Axis, BarrierScope, BinOp, Builtin, Expr, Literal, NodeId, Scalar, Stmt, StmtKind,
};

/// Node id given to statements that no step wrote (flag updates, guards, the virtual loop).
pub(super) const SYNTHETIC: &str = "#synthetic";

/// How one step's names map into the fused Program.
pub(super) struct Renamer<'a> {
    /// Prefix of the step's variables (`s3_`).
    pub var_prefix: String,
    /// Program buffer name -> fused buffer name (host: the pipeline buffer; workgroup: renamed).
    pub buffers: &'a HashMap<String, String>,
    /// When the step runs in a loop over virtual workgroups: the variables that replace
    /// `gid`/`wgid` (per axis) and the step's workgroup counts that replace `nwg`.
    pub virtual_ids: Option<VirtualIds>,
}

/// Names of the per-virtual-workgroup variables of one step.
pub(super) struct VirtualIds {
    /// Variable holding `wgid` of the virtual workgroup, per axis.
    pub wgid: [String; 3],
    /// Variable holding `gid` of this invocation in the virtual workgroup, per axis.
    pub gid: [String; 3],
    /// The step's own grid (its `nwg`).
    pub grid: [u32; 3],
    /// When the step is packed several workgroups to a block: the variable holding its
    /// `lid.x` (the block's `lid.x` modulo the step's size).
    pub lid: Option<String>,
}

/// A name the step uses that its Program does not declare.
#[derive(Debug)]
pub(super) struct UnknownBuffer {
    pub node: NodeId,
    pub buffer: String,
}

pub(crate) fn u32_lit(v: u32) -> Expr {
    Expr::Lit(Literal::Typed(Scalar::U32(v)))
}

pub(crate) fn bool_lit(v: bool) -> Expr {
    Expr::Lit(Literal::Typed(Scalar::Bool(v)))
}

pub(crate) fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

pub(crate) fn synth(kind: StmtKind) -> Stmt {
    Stmt {
        id: NodeId::new(SYNTHETIC),
        kind,
    }
}

pub(crate) fn let_(name: &str, value: Expr) -> Stmt {
    synth(StmtKind::Let {
        name: name.to_string(),
        value,
    })
}

pub(crate) fn if_(cond: Expr, then: Vec<Stmt>) -> Stmt {
    synth(StmtKind::If {
        cond,
        then,
        otherwise: Vec::new(),
        has_else: false,
    })
}

/// The direct sub-expressions of `e`, mutably.
pub(super) fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::Lit(_) | Expr::Var(_) | Expr::Builtin(_) | Expr::Len(_) | Expr::Clock => Vec::new(),
        Expr::Load { index, .. } => vec![index.as_mut()],
        Expr::Binary(_, a, b) => vec![a.as_mut(), b.as_mut()],
        Expr::Unary(_, a)
        | Expr::Cast(_, a)
        | Expr::Bitcast(_, a)
        | Expr::SubgroupReduce(_, a)
        | Expr::Ballot(a) => vec![a.as_mut()],
        Expr::Select(a, b, c) | Expr::Fma(a, b, c) => vec![a.as_mut(), b.as_mut(), c.as_mut()],
        Expr::Atomic {
            index,
            value,
            expected,
            ..
        } => {
            let mut v = vec![index.as_mut(), value.as_mut()];
            if let Some(x) = expected {
                v.push(x.as_mut());
            }
            v
        }
        Expr::Shuffle { value, lane } => vec![value.as_mut(), lane.as_mut()],
    }
}

impl Renamer<'_> {
    fn var(&self, n: &str) -> String {
        format!("{}{n}", self.var_prefix)
    }

    fn buffer(&self, node: &NodeId, b: &str) -> Result<String, UnknownBuffer> {
        self.buffers.get(b).cloned().ok_or_else(|| UnknownBuffer {
            node: node.clone(),
            buffer: b.to_string(),
        })
    }

    /// Renames everything in `e`. Recursive, like the parser that built `e`: the nesting is
    /// the step's own, which the parser already bounded.
    fn expr(&self, node: &NodeId, e: &mut Expr) -> Result<(), UnknownBuffer> {
        match e {
            Expr::Var(n) => *n = self.var(n),
            Expr::Load { buffer, .. } | Expr::Atomic { buffer, .. } => {
                *buffer = self.buffer(node, buffer)?
            }
            Expr::Len(buffer) => *buffer = self.buffer(node, buffer)?,
            Expr::Builtin(b) => {
                if let Some(v) = &self.virtual_ids {
                    match *b {
                        Builtin::GlobalId(a) => *e = Expr::Var(v.gid[a.index()].clone()),
                        Builtin::WorkgroupId(a) => *e = Expr::Var(v.wgid[a.index()].clone()),
                        Builtin::NumWorkgroups(a) => *e = u32_lit(v.grid[a.index()]),
                        Builtin::LocalId(Axis::X) if v.lid.is_some() => {
                            *e = Expr::Var(v.lid.clone().unwrap_or_default())
                        }
                        Builtin::LocalId(_) | Builtin::Lane | Builtin::SubgroupSize => {}
                    }
                }
            }
            _ => {}
        }
        for c in children_mut(e) {
            self.expr(node, c)?;
        }
        Ok(())
    }

    /// Renames a statement list in place.
    pub fn stmts(&self, list: &mut [Stmt]) -> Result<(), UnknownBuffer> {
        for s in list {
            let id = s.id.clone();
            match &mut s.kind {
                StmtKind::Let { name, value } | StmtKind::Assign { name, value } => {
                    *name = self.var(name);
                    self.expr(&id, value)?;
                }
                StmtKind::Store {
                    buffer,
                    index,
                    value,
                } => {
                    *buffer = self.buffer(&id, buffer)?;
                    self.expr(&id, index)?;
                    self.expr(&id, value)?;
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                    ..
                } => {
                    self.expr(&id, cond)?;
                    self.stmts(then)?;
                    self.stmts(otherwise)?;
                }
                StmtKind::Loop {
                    var,
                    from,
                    to,
                    body,
                } => {
                    *var = self.var(var);
                    self.expr(&id, from)?;
                    self.expr(&id, to)?;
                    self.stmts(body)?;
                }
                StmtKind::Block(b) => self.stmts(b)?,
                StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {}
            }
        }
        Ok(())
    }
}

/// True when `s` is or contains a `return`.
pub(super) fn has_return(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return => true,
        StmtKind::If {
            then, otherwise, ..
        } => then.iter().chain(otherwise).any(has_return),
        StmtKind::Loop { body, .. } | StmtKind::Block(body) => body.iter().any(has_return),
        _ => false,
    }
}

/// The first `barrier(scope)` in `list` (depth first), if any.
pub(super) fn find_barrier(list: &[Stmt], scope: BarrierScope) -> Option<&NodeId> {
    list.iter().find_map(|s| match &s.kind {
        StmtKind::Barrier(b) if *b == scope => Some(&s.id),
        StmtKind::If {
            then, otherwise, ..
        } => find_barrier(then, scope).or_else(|| find_barrier(otherwise, scope)),
        StmtKind::Loop { body, .. } | StmtKind::Block(body) => find_barrier(body, scope),
        _ => None,
    })
}

/// The thread counts of the sub-task barriers in `list` (each size once, ascending).
pub(super) fn subtask_sizes(list: &[Stmt]) -> std::collections::BTreeSet<u32> {
    fn walk(list: &[Stmt], out: &mut std::collections::BTreeSet<u32>) {
        for s in list {
            match &s.kind {
                StmtKind::Barrier(BarrierScope::Subtask { threads }) => {
                    out.insert(*threads);
                }
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    walk(then, out);
                    walk(otherwise, out);
                }
                StmtKind::Loop { body, .. } | StmtKind::Block(body) => walk(body, out),
                _ => {}
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(list, &mut out);
    out
}

/// Rewrites every `return` in `list` into `assign alive = false` and guards what could run
/// after it with `if alive`, so the invocation skips the rest of its step but still reaches
/// the separations (barriers) and the later steps of the fused Program.
///
/// A `return` at the top of a list makes the rest of that list dead: it is dropped. A
/// statement that only may return (an `if`, a loop or a block containing one) is rewritten
/// inside and the statements after it are wrapped in `if alive`; a loop whose body may
/// return runs its whole body under `if alive`, so later iterations of a returned
/// invocation do nothing (the counter still runs to its end, which has no effect).
pub(super) fn lower_returns(list: Vec<Stmt>, alive: &str) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(list.len());
    let mut rest = list.into_iter();
    while let Some(s) = rest.next() {
        if !has_return(&s) {
            out.push(s);
            continue;
        }
        if matches!(s.kind, StmtKind::Return) {
            // Keeps the return's node id: the inspector shows the flag update as the return.
            out.push(Stmt {
                id: s.id,
                kind: StmtKind::Assign {
                    name: alive.to_string(),
                    value: bool_lit(false),
                },
            });
            return out;
        }
        out.push(lower_stmt(s, alive));
        let tail: Vec<Stmt> = rest.collect();
        if !tail.is_empty() {
            out.push(if_(
                Expr::Var(alive.to_string()),
                lower_returns(tail, alive),
            ));
        }
        return out;
    }
    out
}

fn lower_stmt(s: Stmt, alive: &str) -> Stmt {
    // A loop's body runs again after a `return` in it: each iteration is guarded by `alive`.
    let is_loop = matches!(s.kind, StmtKind::Loop { .. });
    let kind = s.kind.map_lists(&mut |list| {
        let lowered = lower_returns(list, alive);
        if is_loop {
            vec![if_(Expr::Var(alive.to_string()), lowered)]
        } else {
            lowered
        }
    });
    Stmt { id: s.id, kind }
}

/// Builtins of the step body that the virtual-workgroup rewrite must provide, per kind and
/// axis: (`gid` used, `wgid` used).
pub(super) fn used_ids(list: &[Stmt]) -> ([bool; 3], [bool; 3]) {
    let mut gid = [false; 3];
    let mut wgid = [false; 3];
    let mut note = |e: &Expr| {
        e.visit(&mut |x| match x {
            Expr::Builtin(Builtin::GlobalId(a)) => gid[a.index()] = true,
            Expr::Builtin(Builtin::WorkgroupId(a)) => wgid[a.index()] = true,
            _ => {}
        })
    };
    fn walk(list: &[Stmt], note: &mut dyn FnMut(&Expr)) {
        for s in list {
            match &s.kind {
                StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => note(value),
                StmtKind::Store { index, value, .. } => {
                    note(index);
                    note(value);
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                    ..
                } => {
                    note(cond);
                    walk(then, note);
                    walk(otherwise, note);
                }
                StmtKind::Loop { from, to, body, .. } => {
                    note(from);
                    note(to);
                    walk(body, note);
                }
                StmtKind::Block(b) => walk(b, note),
                StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {}
            }
        }
    }
    walk(list, &mut note);
    // gid needs wgid of the same axis.
    for a in 0..3 {
        wgid[a] |= gid[a];
    }
    (gid, wgid)
}

/// Shape of the loop over virtual workgroups of one step.
pub(super) struct VirtualLoop<'a> {
    /// Prefix of the made-up variables (`f3_`); disjoint from every renamed step variable.
    pub prefix: &'a str,
    /// The step's grid.
    pub grid: [u32; 3],
    /// The step's workgroup count (product of `grid`).
    pub workgroups: u32,
    /// Workgroups of the launch (the launch grid is one-dimensional along x here).
    pub launch_workgroups: u32,
    /// The step's workgroups side by side in one block (`P`; 1: one per block, masked or
    /// whole): sub-task `lid.x / s` of the block runs its own virtual workgroup with local
    /// id `lid.x % s` (`s` the step's size), see `super::super::mixed`.
    pub pack: u32,
    /// The common workgroup size.
    pub workgroup_size: [u32; 3],
    /// `(gid, wgid)` axes the body uses, from [`used_ids`].
    pub used: ([bool; 3], [bool; 3]),
    /// A one-workgroup fold run by the last arriver: its only virtual workgroup is 0 and
    /// it runs where this bool variable is true instead of on the workgroup `0 mod P`.
    pub fold: Option<String>,
}

impl VirtualLoop<'_> {
    /// Names of the `wgid`/`gid` replacement variables.
    pub fn ids(&self) -> VirtualIds {
        let name = |k: &str, a: usize| format!("{}{k}_{}", self.prefix, ["x", "y", "z"][a]);
        VirtualIds {
            wgid: [0, 1, 2].map(|a| name("wgid", a)),
            gid: [0, 1, 2].map(|a| name("gid", a)),
            grid: self.grid,
            lid: (self.pack > 1).then(|| name("lid", 0)),
        }
    }

    /// Virtual workgroups in flight over the launch at once: blocks times sub-tasks.
    fn lanes(&self) -> u64 {
        u64::from(self.launch_workgroups) * u64::from(self.pack.max(1))
    }

    /// Trips of the loop over virtual workgroups (a literal: uniform across the block).
    pub fn trips(&self) -> u32 {
        u32::try_from(u64::from(self.workgroups).div_ceil(self.lanes().max(1))).unwrap_or(1)
    }

    /// `base * P + lid.x / s` when packed (the block's sub-task), else `base`.
    fn packed_id(&self, base: Expr) -> Expr {
        if self.pack <= 1 {
            return base;
        }
        let sub = bin(
            BinOp::Div,
            Expr::Builtin(Builtin::LocalId(Axis::X)),
            u32_lit(self.workgroup_size[0]),
        );
        bin(BinOp::Add, bin(BinOp::Mul, base, u32_lit(self.pack)), sub)
    }

    /// The virtual workgroup of task copy `t` (counting from 0) on this block, as the loop
    /// computes it: `t * blocks + wgid.x` (times `P` plus the sub-task when packed).
    pub fn virtual_id(&self, t: u32) -> Expr {
        let phys = Expr::Builtin(Builtin::WorkgroupId(Axis::X));
        let base = if self.trips() == 1 {
            phys
        } else {
            bin(
                BinOp::Add,
                u32_lit(t.wrapping_mul(self.launch_workgroups)),
                phys,
            )
        };
        self.packed_id(base)
    }

    /// The step's `wgid` and `gid` per axis for the linear virtual workgroup `v`.
    pub fn id_exprs(&self, v: &Expr) -> ([Expr; 3], [Expr; 3]) {
        let [gx, gy, gz] = self.grid;
        // Linear virtual id -> x/y/z in the step's grid (x fastest, like CUDA's blocks).
        let wgid = [
            if gy == 1 && gz == 1 {
                v.clone()
            } else {
                bin(BinOp::Rem, v.clone(), u32_lit(gx))
            },
            bin(
                BinOp::Rem,
                bin(BinOp::Div, v.clone(), u32_lit(gx)),
                u32_lit(gy),
            ),
            bin(BinOp::Div, v.clone(), u32_lit(gx.saturating_mul(gy))),
        ];
        let gid = [0, 1, 2].map(|a| self.gid_expr(a, &wgid[a]));
        (wgid, gid)
    }

    /// `gid` along axis `a` from the workgroup id `wgid` along it.
    fn gid_expr(&self, a: usize, wgid: &Expr) -> Expr {
        let axes = [Axis::X, Axis::Y, Axis::Z];
        let lid = match (a, self.ids().lid) {
            (0, Some(v)) => Expr::Var(v),
            _ => Expr::Builtin(Builtin::LocalId(axes[a])),
        };
        bin(
            BinOp::Add,
            bin(BinOp::Mul, wgid.clone(), u32_lit(self.workgroup_size[a])),
            lid,
        )
    }

    /// Wraps `body` (already renamed) in the loop: every physical workgroup `w` of the launch
    /// (of `L`) runs virtual workgroups `v = t * L + w` for `t` in `0..ceil(G / L)` while
    /// `v < G`. The trip count is a literal and `v` derives from `wgid` only, so the loop and
    /// the `v < G` test are uniform within a workgroup and the body's workgroup barriers stay
    /// valid. With a single trip the loop is left out.
    ///
    /// Packed (`pack = P > 1`): sub-task `lid.x / s` of block `w` runs `v = (t * L + w) * P +
    /// lid.x / s` for `t` in `0..ceil(G / (L * P))`, with `lid.x % s` for its local id
    /// (`let f{k}_lid_x` before the loop). The trip count stays a literal, so the loop is
    /// uniform; the `v < G` test is not, which a packed step (no workgroup barrier) allows.
    /// The trip's first virtual workgroup `(t * L + w) * P` is `let f{k}_trip`, and `head`
    /// (a dataflow step's waits for all the trip's sub-tasks) runs after it, before the
    /// test, in every thread of the block. Unpacked, `head` opens the body instead.
    pub fn wrap(&self, head: Vec<Stmt>, body: Vec<Stmt>) -> Vec<Stmt> {
        let p = self.prefix;
        let ids = self.ids();
        let v = format!("{p}v");
        let t = format!("{p}t");
        let trip = format!("{p}trip");
        let trips = self.trips();
        let phys = Expr::Builtin(Builtin::WorkgroupId(Axis::X));
        let base = if trips == 1 {
            phys
        } else {
            bin(
                BinOp::Add,
                bin(
                    BinOp::Mul,
                    Expr::Var(t.clone()),
                    u32_lit(self.launch_workgroups),
                ),
                phys,
            )
        };
        let (trip_let, v_value) = if self.pack > 1 {
            let first = bin(BinOp::Mul, base, u32_lit(self.pack));
            let sub = bin(
                BinOp::Div,
                Expr::Builtin(Builtin::LocalId(Axis::X)),
                u32_lit(self.workgroup_size[0]),
            );
            (
                Some(let_(&trip, first)),
                bin(BinOp::Add, Expr::Var(trip.clone()), sub),
            )
        } else {
            (None, base)
        };
        let (head, body) = if self.pack > 1 {
            (head, body)
        } else {
            (Vec::new(), head.into_iter().chain(body).collect())
        };
        // The packed local id, once for all trips (the fold below is never packed: folds are
        // dataflow, which masks).
        let lid = ids.lid.as_ref().map(|l| {
            let_(
                l,
                bin(
                    BinOp::Rem,
                    Expr::Builtin(Builtin::LocalId(Axis::X)),
                    u32_lit(self.workgroup_size[0]),
                ),
            )
        });
        let (gid_used, wgid_used) = self.used;
        let (wgid_of, _) = self.id_exprs(&Expr::Var(v.clone()));
        let mut inner = Vec::new();
        for (a, _) in wgid_used.iter().enumerate().filter(|(_, &u)| u) {
            inner.push(let_(&ids.wgid[a], wgid_of[a].clone()));
        }
        let wgid_vars = ids.wgid.clone().map(Expr::Var);
        for a in 0..3 {
            if gid_used[a] {
                inner.push(let_(&ids.gid[a], self.gid_expr(a, &wgid_vars[a])));
            }
        }
        inner.extend(body);
        if let Some(last) = &self.fold {
            // Only the last arriver runs the fold as virtual workgroup 0; the others get the
            // out-of-range id 1, so the timeline drops their (empty) slice like any guarded
            // trip past a step's workgroups.
            let id = Expr::Select(
                Box::new(Expr::Var(last.clone())),
                Box::new(u32_lit(0)),
                Box::new(u32_lit(1)),
            );
            return vec![let_(&v, id), if_(Expr::Var(last.clone()), inner)];
        }
        let mut guarded: Vec<Stmt> = trip_let.into_iter().collect();
        guarded.push(let_(&v, v_value));
        guarded.extend(head);
        guarded.push(if_(
            bin(BinOp::Lt, Expr::Var(v.clone()), u32_lit(self.workgroups)),
            inner,
        ));
        let mut out: Vec<Stmt> = lid.into_iter().collect();
        if trips == 1 {
            out.extend(guarded);
        } else {
            out.push(synth(StmtKind::Loop {
                var: t,
                from: u32_lit(0),
                to: u32_lit(trips),
                body: guarded,
            }));
        }
        out
    }
}
