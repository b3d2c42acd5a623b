//! Divergence analysis: which values and which control flow can differ between the threads
//! of a barrier's scope.
//!
//! The analysis runs once per scope. A value is uniform when it is a literal, `len`, `nwg`,
//! `subgroup_size`, a load of a `uniform` buffer at a uniform index, a variable whose every
//! definition is uniform, or an operation on uniform values; `wgid` is uniform within a
//! workgroup but not across the grid. `gid`, `lid`, `lane`, other loads, atomics and
//! subgroup results are not. Control flow is non-uniform inside an `if` with a non-uniform
//! condition, inside a loop with non-uniform bounds, and everywhere after a `return` taken
//! under non-uniform control (threads that returned are missing from later barriers).
//!
//! A sub-task barrier (`barrier(subtask)`, `threads` per sub-task) is checked in its own
//! scope, once per `threads` the Program uses: there `lid.x / d` with `d` a literal multiple
//! of `threads` is uniform as well (every thread of the sub-task `lid.x / threads` computes
//! the same quotient), which is how a packed step of a fused kernel picks its virtual
//! workgroup. A sub-task barrier's shape is checked by [`check_subtask_barriers`] (V073).
//!
//! One workgroup (V064): when the Program's `run` section pins its dispatch to a single
//! workgroup (`grid` of one workgroup, or `elements` within one), a load of a host buffer at
//! a uniform index is uniform too: every thread of the (only) workgroup reads the same element
//! in the same interval between barriers, and nothing outside the workgroup can write it
//! then (a write by a thread of the workgroup in that interval would be a data race, undefined
//! behaviour). The analysis runs strictly first; only when the relaxed run clears barrier
//! errors (V060/V061) of the strict one are its findings kept, with a V064 note naming the
//! barriers that rely on it (`launch_diagnostics` refuses such a Program on a larger grid,
//! L015). vyre's `persistent_fixpoint` loops (a `return` on a flag read between barriers)
//! are sound this way.
//!
//! Variables are tracked per declaration. A definition (`let`, `assign`, loop counter) made
//! under non-uniform control makes the variable non-uniform too, since only some threads
//! performed it. Facts only ever go from uniform to non-uniform, so iterating the walk until
//! nothing changes reaches a fixpoint (assignments inside loops can feed values back to
//! earlier statements); the final walk reports.

use std::collections::HashMap;

use crate::finding::Severity;
use crate::ir::{Access, BarrierScope, Builtin, Expr, NodeId, Program, Stmt, StmtKind};

use super::limits::{expr_children, stmt_exprs};
use super::scope::Scopes;
use super::Sink;

/// Runs the analysis for both barrier scopes (see the module docs for the one-workgroup
/// relaxation).
pub fn check(p: &Program, sink: &mut Sink) {
    let mut strict = Sink::default();
    run(p, false, &mut strict);
    let barrier_errors = |s: &Sink| -> Vec<Option<NodeId>> {
        s.diagnostics()
            .iter()
            .filter(|d| matches!(d.code, "V060" | "V061"))
            .map(|d| d.node.clone())
            .collect()
    };
    let before = barrier_errors(&strict);
    if before.is_empty() || !one_workgroup(p) {
        sink.extend(strict);
        return;
    }
    let mut relaxed = Sink::default();
    run(p, true, &mut relaxed);
    let after = barrier_errors(&relaxed);
    if after.len() >= before.len() {
        sink.extend(strict);
        return;
    }
    sink.extend(relaxed);
    let mut cleared: Vec<String> = before
        .into_iter()
        .filter(|n| !after.contains(n))
        .flatten()
        .map(|n| n.to_string())
        .collect();
    cleared.dedup();
    sink.push(
        Severity::Info,
        "V064",
        None,
        format!(
            "the barrier(s) at {} are reached by every thread only because the `run` section \
             dispatches one workgroup: a condition or `return` there depends on a host-buffer \
             load at a uniform index, which all threads of a single workgroup read alike",
            cleared.join(", ")
        ),
        "launch it as one workgroup only (a larger grid is refused, L015), or make the \
         condition depend on `len`, literals or uniform-buffer loads",
    );
}

/// True when `p`'s `run` section dispatches exactly one workgroup.
pub fn one_workgroup(p: &Program) -> bool {
    let Some(run) = &p.run else {
        return false;
    };
    match (run.grid, run.elements) {
        (Some(g), _) => g == [1, 1, 1],
        (None, Some(e)) => e >= 1 && e <= u64::from(p.workgroup_size[0].max(1)),
        (None, None) => false,
    }
}

/// Most sub-tasks one workgroup may hold under sub-task barriers: each takes a hardware named
/// barrier `1 + lid.x / threads`, and CUDA has 16 (0 is the workgroup's own `bar.sync 0`).
pub const MAX_SUBTASKS: u32 = 15;

/// Checks the shape of every `barrier(subtask)` (V073): `threads` a nonzero multiple of the
/// 32-thread subgroup (`bar.sync` counts whole warps) dividing a one-dimensional workgroup
/// into at most [`MAX_SUBTASKS`] sub-tasks.
pub fn check_subtask_barriers(p: &Program, sink: &mut Sink) {
    let [x, y, z] = p.workgroup_size;
    p.walk_stmts(&mut |s| {
        let StmtKind::Barrier(BarrierScope::Subtask { threads }) = s.kind else {
            return;
        };
        let problem = if threads == 0 {
            Some((
                "`threads` is 0".to_string(),
                "give the sub-task's thread count, e.g. \"threads\": 256".to_string(),
            ))
        } else if !threads.is_multiple_of(32) {
            Some((
                format!(
                    "`threads` {threads} is not a multiple of 32 (`bar.sync` counts whole warps)"
                ),
                "make every sub-task a whole number of 32-thread warps".to_string(),
            ))
        } else if y != 1 || z != 1 {
            Some((
                format!(
                    "the workgroup {:?} is multi-dimensional; sub-tasks split `lid.x` only",
                    p.workgroup_size
                ),
                "use a one-dimensional workgroup ([n, 1, 1]) or a workgroup barrier".to_string(),
            ))
        } else if !x.is_multiple_of(threads) {
            Some((
                format!("`threads` {threads} does not divide the workgroup's {x} threads"),
                format!("use a `threads` that divides {x}, or a workgroup barrier"),
            ))
        } else if x / threads > MAX_SUBTASKS {
            Some((
                format!(
                    "{} sub-tasks of {threads} threads in a workgroup of {x}: each needs its own \
                     hardware barrier and there are {MAX_SUBTASKS}",
                    x / threads
                ),
                format!(
                    "use at least {} threads per sub-task",
                    x.div_ceil(MAX_SUBTASKS).next_multiple_of(32)
                ),
            ))
        } else {
            None
        };
        if let Some((what, fix)) = problem {
            sink.error(
                "V073",
                Some(&s.id),
                format!("sub-task barrier: {what}"),
                fix,
            );
        }
    });
}

/// The scopes the analysis runs for: workgroup, grid and every sub-task size `p` uses.
fn scopes(p: &Program) -> Vec<BarrierScope> {
    let mut out = vec![BarrierScope::Workgroup, BarrierScope::Grid];
    p.walk_stmts(&mut |s| {
        if let StmtKind::Barrier(b @ BarrierScope::Subtask { threads }) = s.kind {
            if threads > 0 && !out.contains(&b) {
                out.push(b);
            }
        }
    });
    out
}

fn run(p: &Program, one_workgroup: bool, sink: &mut Sink) {
    for scope in scopes(p) {
        let mut a = Analysis {
            p,
            scope,
            one_workgroup,
            facts: HashMap::new(),
            changed: false,
            walk: Walk::default(),
        };
        // Each round that changes something marks at least one more declaration
        // non-uniform, so the number of declarations bounds the rounds.
        let decls = super::limits::preorder(p).len() + 2;
        for _ in 0..decls {
            a.changed = false;
            a.walk = Walk::default();
            a.list(&p.body, None);
            if !a.changed {
                break;
            }
        }
        a.walk = Walk::default();
        a.list(&p.body, Some(sink));
    }
}

/// Why something is not uniform.
#[derive(Debug, Clone, PartialEq)]
struct Why {
    /// As shown for this use (`i`, which depends on `gid.x`).
    shown: String,
    /// The source it comes from (`gid.x`), kept for variables defined from it.
    root: String,
}

impl Why {
    fn source(s: String) -> Self {
        Why {
            shown: s.clone(),
            root: s,
        }
    }
}

/// A non-uniform `if`/loop around the current statement.
#[derive(Debug, Clone)]
struct Ctrl {
    /// Node id of the `if` or loop.
    node: NodeId,
    /// `if` or `loop`.
    kind: &'static str,
    why: Why,
}

/// A `return` taken under non-uniform control.
#[derive(Debug, Clone)]
struct Diverged {
    ret: NodeId,
    ctrl: Ctrl,
}

#[derive(Debug, Default)]
struct Walk<'a> {
    scopes: Scopes<'a, ()>,
    ctrl: Vec<Ctrl>,
    diverged: Option<Diverged>,
}

struct Analysis<'a> {
    p: &'a Program,
    scope: BarrierScope,
    /// The dispatch is one workgroup: host-buffer loads at uniform indices are uniform.
    one_workgroup: bool,
    /// Non-uniform declarations (by node id of the `let`/loop) and why.
    facts: HashMap<&'a str, Why>,
    changed: bool,
    walk: Walk<'a>,
}

fn scope_name(s: BarrierScope) -> &'static str {
    match s {
        BarrierScope::Subtask { .. } => "sub-task",
        other => other.name(),
    }
}

/// True when `e` is `lid.x / d` with `d` a literal multiple of `threads`: the same in every
/// thread of a sub-task of `threads` threads (the sub-task is `lid.x / threads`).
fn subtask_uniform(e: &Expr, threads: u32) -> bool {
    use crate::ir::{Axis, BinOp, Literal, Scalar};
    let Expr::Binary(BinOp::Div, a, d) = e else {
        return false;
    };
    let d = match **d {
        Expr::Lit(Literal::Typed(Scalar::U32(d))) => u64::from(d),
        Expr::Lit(Literal::Int(d)) => u64::try_from(d).unwrap_or(0),
        _ => 0,
    };
    matches!(**a, Expr::Builtin(Builtin::LocalId(Axis::X)))
        && threads > 0
        && d > 0
        && d.is_multiple_of(u64::from(threads))
}

impl<'a> Analysis<'a> {
    /// Why `e` may differ between threads of the scope; `None` when uniform.
    fn value(&self, e: &Expr) -> Option<Why> {
        if let BarrierScope::Subtask { threads } = self.scope {
            if subtask_uniform(e, threads) {
                return None;
            }
        }
        match e {
            Expr::Lit(_) | Expr::Len(_) => None,
            Expr::Builtin(b) => match b {
                Builtin::NumWorkgroups(_) | Builtin::SubgroupSize => None,
                Builtin::WorkgroupId(a) => (self.scope == BarrierScope::Grid).then(|| {
                    Why::source(format!(
                        "`wgid.{}` (it differs between workgroups)",
                        a.name()
                    ))
                }),
                Builtin::GlobalId(a) => Some(Why::source(format!("`gid.{}`", a.name()))),
                Builtin::LocalId(a) => Some(Why::source(format!("`lid.{}`", a.name()))),
                Builtin::Lane => Some(Why::source("`lane`".into())),
            },
            Expr::Var(n) => {
                let decl = self.walk.scopes.lookup(n)?.decl;
                let why = self.facts.get(decl)?;
                Some(Why {
                    shown: format!("`{n}`, which depends on {}", why.root),
                    root: why.root.clone(),
                })
            }
            Expr::Load { buffer, index } => {
                let uniform_buf = self.p.buffer(buffer).is_some_and(|b| {
                    b.access == Access::Uniform
                        || (self.one_workgroup && b.access != Access::Workgroup)
                });
                if uniform_buf {
                    self.value(index)
                } else {
                    Some(Why::source(format!("a load of `{buffer}`")))
                }
            }
            Expr::Atomic { buffer, .. } => Some(Why::source(format!("an atomic on `{buffer}`"))),
            Expr::Clock => Some(Why::source("a `clock()` read".into())),
            Expr::Shuffle { .. } => Some(Why::source("a `shuffle` result".into())),
            Expr::SubgroupReduce(..) => Some(Why::source("a `subgroup_reduce` result".into())),
            Expr::Ballot(_) => Some(Why::source("a `ballot` result".into())),
            _ => expr_children(e).into_iter().find_map(|c| self.value(c)),
        }
    }

    /// Why control at this point may differ between threads; `None` when uniform.
    fn control(&self) -> Option<Why> {
        if let Some(c) = self.walk.ctrl.last() {
            return Some(Why::source(format!(
                "the `{}` at {} (on {})",
                c.kind, c.node, c.why.root
            )));
        }
        self.walk
            .diverged
            .as_ref()
            .map(|d| Why::source(format!("the `return` at {} (under {})", d.ret, d.ctrl.node)))
    }

    /// Records a definition of the variable declared at `decl`.
    fn define(&mut self, decl: &'a str, why: Option<Why>) {
        if let Some(why) = why {
            if !self.facts.contains_key(decl) {
                self.facts.insert(decl, why);
                self.changed = true;
            }
        }
    }

    fn list(&mut self, list: &'a [Stmt], mut sink: Option<&mut Sink>) {
        for s in list {
            self.stmt(s, sink.as_deref_mut());
        }
    }

    fn nested(&mut self, list: &'a [Stmt], sink: Option<&mut Sink>) {
        self.walk.scopes.push();
        self.list(list, sink);
        self.walk.scopes.pop();
    }

    fn stmt(&mut self, s: &'a Stmt, mut sink: Option<&mut Sink>) {
        if let Some(sink) = sink.as_deref_mut() {
            self.subgroup_warnings(s, sink);
        }
        match &s.kind {
            StmtKind::Let { name, value } => {
                let why = self.value(value).or_else(|| self.control());
                self.walk.scopes.declare(name, &s.id, false, ());
                self.define(&s.id, why);
            }
            StmtKind::Assign { name, value } => {
                let why = self.value(value).or_else(|| self.control());
                if let Some(decl) = self.walk.scopes.lookup(name).map(|v| v.decl) {
                    self.define(decl, why);
                }
            }
            StmtKind::Return => {
                if self.walk.diverged.is_none() {
                    if let Some(c) = self.walk.ctrl.last() {
                        self.walk.diverged = Some(Diverged {
                            ret: s.id.clone(),
                            ctrl: c.clone(),
                        });
                    }
                }
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                let why = self.value(cond);
                let pushed = self.push_ctrl(s, "if", why);
                self.nested(then, sink.as_deref_mut());
                self.nested(otherwise, sink);
                if pushed {
                    self.walk.ctrl.pop();
                }
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                let why = self.value(from).or_else(|| self.value(to));
                let counter = why.clone().or_else(|| self.control());
                let pushed = self.push_ctrl(s, "loop", why);
                let entry_diverged = self.walk.diverged.is_some();
                self.walk.scopes.push();
                self.walk.scopes.declare(var, &s.id, true, ());
                self.define(&s.id, counter);
                self.list(body, sink.as_deref_mut());
                if !entry_diverged && self.walk.diverged.is_some() {
                    // A thread returned in this iteration: the next iterations (the whole
                    // body again) run with some threads missing.
                    self.list(body, sink.as_deref_mut());
                }
                self.walk.scopes.pop();
                if pushed {
                    self.walk.ctrl.pop();
                }
            }
            StmtKind::Barrier(scope) => {
                if let Some(sink) = sink {
                    if *scope == self.scope {
                        self.barrier(s, sink);
                    }
                }
            }
            StmtKind::Block(b) => self.nested(b, sink),
            StmtKind::Store { .. } => {}
            StmtKind::Sync(op) => {
                // The last-arriver flag is the same in every thread of a workgroup (all get
                // thread 0's verdict) but true in one workgroup only.
                if let (_, Some(name)) = op.vars() {
                    let why = match self.scope {
                        BarrierScope::Grid => Some(Why {
                            shown: format!("`{name}`, true only in the last arriving workgroup"),
                            root: "the last arriver".to_string(),
                        }),
                        BarrierScope::Workgroup | BarrierScope::Subtask { .. } => self.control(),
                    };
                    if let Some(decl) = self.walk.scopes.lookup(name).map(|v| v.decl) {
                        self.define(decl, why);
                    }
                }
                // Every dataflow statement contains a `bar.sync`.
                if let Some(sink) = sink {
                    if self.scope == BarrierScope::Workgroup {
                        self.barrier(s, sink);
                    }
                }
            }
        }
    }

    fn push_ctrl(&mut self, s: &Stmt, kind: &'static str, why: Option<Why>) -> bool {
        match why {
            Some(why) => {
                self.walk.ctrl.push(Ctrl {
                    node: s.id.clone(),
                    kind,
                    why,
                });
                true
            }
            None => false,
        }
    }

    fn barrier(&self, s: &Stmt, sink: &mut Sink) {
        let sc = scope_name(self.scope);
        let uniform_hint = match self.scope {
            BarrierScope::Workgroup => "`wgid`, `nwg`, `len`, literals or uniform-buffer loads",
            BarrierScope::Subtask { .. } => {
                "`wgid`, `lid.x / threads`, `nwg`, `len`, literals or uniform-buffer loads"
            }
            BarrierScope::Grid => "`nwg`, `len`, literals or uniform-buffer loads",
        };
        if let Some(c) = self.walk.ctrl.first() {
            let what = if c.kind == "if" {
                "condition"
            } else {
                "bounds"
            };
            sink.error(
                "V060",
                Some(&s.id),
                format!(
                    "{sc} barrier inside the `{}` at {}, whose {what} can differ between threads of the {sc}: it depends on {}",
                    c.kind, c.node, c.why.shown
                ),
                format!("move the barrier out of the `{}` so every thread reaches it, or make the {what} depend only on {uniform_hint}", c.kind),
            );
        } else if let Some(d) = &self.walk.diverged {
            sink.error(
                "V061",
                Some(&s.id),
                format!(
                    "{sc} barrier after the `return` at {}, which only some threads take (the `{}` at {} depends on {}); the others would wait forever",
                    d.ret, d.ctrl.kind, d.ctrl.node, d.ctrl.why.shown
                ),
                "do not return early before a barrier: wrap the work in an `if` instead and let every thread reach the barrier",
            );
        }
        if self.scope == BarrierScope::Grid {
            sink.push(
                Severity::Info,
                "V063",
                Some(&s.id),
                "grid barrier: the kernel needs a cooperative launch, so all workgroups must be resident on the GPU at once",
                "keep the grid within what fits on the device at once (occupancy x SMs), or split the kernel at the barrier",
            );
        }
    }

    /// Warns about subgroup operations in `s`'s own expressions under non-uniform control.
    fn subgroup_warnings(&self, s: &Stmt, sink: &mut Sink) {
        if self.scope != BarrierScope::Workgroup {
            return;
        }
        let Some(why) = self.control() else {
            return;
        };
        for (key, e) in stmt_exprs(s) {
            let mut found = None;
            e.visit(&mut |x| {
                if found.is_none() {
                    found = match x {
                        Expr::Shuffle { .. } => Some("shuffle"),
                        Expr::SubgroupReduce(..) => Some("subgroup_reduce"),
                        Expr::Ballot(_) => Some("ballot"),
                        _ => None,
                    };
                }
            });
            if let Some(op) = found {
                sink.push(
                    Severity::Warning,
                    "V062",
                    Some(&s.id),
                    format!(
                        "in `{key}`: `{op}` under non-uniform control flow ({}): lanes of the warp that are inactive here give undefined values",
                        why.shown
                    ),
                    "move the subgroup operation before the branch, so that all lanes of the warp take part",
                );
            }
        }
    }
}
