//! Statements. Each statement owns the lines it writes (its comment, its own instructions
//! and its labels); nested statements own theirs.
//!
//! `if` without `else` whose body is short and straight-line (lets, assigns, stores, a final
//! return; no atomics or subgroup ops) is *predicated* instead of branched: pure instructions
//! run unconditionally and only side effects (stores, assigns, loads, return) carry the guard
//! predicate, so threads with a false guard issue no memory operation. When an access in
//! such a body keeps a bounds check, the body is emitted again as a branch (its predicate
//! would otherwise need an `and.pred` with the guard per access). Everything else uses
//! `@!p bra` to named labels.

use super::writer::{mov_suffix, Val, VarInfo, Writer};
use super::EmitError;
use crate::analysis::ranges::{Fact, Range, Subject};
use crate::ir::walk::always_returns;
use crate::ir::{BarrierScope, Expr, ScalarType, Stmt, StmtKind};

type R<T> = Result<T, EmitError>;

/// Most statements a predicated short body may have.
const SHORT_STMTS: usize = 4;
/// Most expression nodes a predicated short body may have.
const SHORT_EXPR_NODES: usize = 24;

impl Writer<'_> {
    /// Lowers a statement list in order.
    pub fn stmts(&mut self, list: &[Stmt]) -> R<()> {
        if self.opts.version_bounds {
            return self.stmts_versioned(list);
        }
        for s in list {
            self.stmt_then_facts(s)?;
        }
        Ok(())
    }

    /// Lowers one statement of a list and adds the facts it establishes for the rest.
    pub(super) fn stmt_then_facts(&mut self, s: &Stmt) -> R<()> {
        self.stmt(s)?;
        // An `if` whose one branch always returns proves the other branch's condition
        // for the rest of this block.
        if let StmtKind::If {
            cond,
            then,
            otherwise,
            ..
        } = &s.kind
        {
            match (always_returns(then), always_returns(otherwise)) {
                (true, false) => self.assume(cond, false),
                (false, true) => self.assume(cond, true),
                _ => {}
            }
        }
        Ok(())
    }

    /// The IR printer's text of a statement's first line, for the per-statement comment.
    pub(super) fn printed_code(&self, id: &str) -> String {
        self.printed
            .line_of(id)
            .and_then(|l| self.printed.lines.get(l - 1))
            .map(|l| l.code.trim().to_string())
            .unwrap_or_default()
    }

    /// Lowers one statement.
    pub fn stmt(&mut self, s: &Stmt) -> R<()> {
        let prev = self.enter_node(&s.id);
        let code = self.printed_code(&s.id);
        self.comment(format!("{}: {code}", s.id));
        let open = self.timeline_open(s.id.as_ref());
        let r = self.stmt_kind(s);
        self.timeline_close(open);
        self.leave_node(prev);
        r
    }

    pub(super) fn stmt_kind(&mut self, s: &Stmt) -> R<()> {
        match &s.kind {
            StmtKind::Let { name, value } => self.let_stmt(name, value),
            StmtKind::Assign { name, value } => {
                let v = self.expr(value)?;
                let info = self.var(name)?.clone();
                let g = self.at.guard.clone();
                self.ins_pred(
                    g.as_deref(),
                    format!("mov{} {}, {}", mov_suffix(info.ty), info.reg, v.text()),
                );
                Ok(())
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => self.store(buffer, index, value),
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                self.at.divergent += 1;
                let r = self.if_stmt(cond, then, otherwise);
                self.at.divergent -= 1;
                r
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => self.loop_stmt(var, from, to, body),
            StmtKind::Barrier(BarrierScope::Workgroup) => {
                self.ins("bar.sync 0");
                Ok(())
            }
            StmtKind::Barrier(BarrierScope::Grid) => {
                self.grid_barrier();
                Ok(())
            }
            StmtKind::Barrier(BarrierScope::Subtask { threads }) => {
                // One hardware named barrier per sub-task: id `1 + lid.x / threads` (0 is the
                // workgroup's), counting `threads` threads. The validator keeps the ids below
                // 16 and `threads` a multiple of the warp (V073).
                let tid = self.builtin(crate::ir::Builtin::LocalId(crate::ir::Axis::X));
                let id = self.reg(ScalarType::U32);
                self.ins(format!("div.u32 {id}, {tid}, {threads}"));
                self.ins(format!("add.u32 {id}, {id}, 1"));
                self.ins(format!("bar.sync {id}, {threads}"));
                Ok(())
            }
            StmtKind::Return => {
                let g = self.at.guard.clone();
                self.timeline_kernel_end(g.as_deref());
                self.ins_pred(g.as_deref(), "ret");
                self.at.returned = true;
                Ok(())
            }
            StmtKind::Block(b) => self.scoped(|w| w.stmts(b)),
            StmtKind::Sync(op) => self.sync_op(op),
        }
    }

    fn let_stmt(&mut self, name: &str, value: &Expr) -> R<()> {
        // Nobody reads this variable: an atomic's old value is not needed.
        self.discard_result =
            matches!(value, Expr::Atomic { .. }) && !self.read_vars.contains(name);
        let v = self.expr(value);
        self.discard_result = false;
        let v = v?;
        let ty = v.ty();
        let never_assigned = !self.assigned.contains(name);
        if let (Val::Imm(k), true) = (&v, never_assigned) {
            self.declare(name, VarInfo::constant(*k));
            return Ok(());
        }
        let range = if ty == ScalarType::U32 && never_assigned {
            self.range(value)
        } else {
            None
        };
        // Adopt the value's register when nothing else can change it: a fresh temporary, or
        // a builtin / length / unassigned variable when this variable is never assigned.
        let shareable = match value {
            Expr::Builtin(_) | Expr::Len(_) => true,
            Expr::Var(src) => !self.assigned.contains(src),
            _ => false,
        };
        let reg = match &v {
            Val::Reg { name: r, fresh, .. } if *fresh || (shareable && never_assigned) => r.clone(),
            _ => {
                let r = self.reg(ty);
                self.ins(format!("mov{} {r}, {}", mov_suffix(ty), v.text()));
                r
            }
        };
        if !never_assigned {
            self.out.mutable.insert(reg.clone());
        }
        self.declare(name, VarInfo::reg(reg, ty, range));
        Ok(())
    }

    fn if_stmt(&mut self, cond: &Expr, then: &[Stmt], otherwise: &[Stmt]) -> R<()> {
        let c = self.expr(cond)?;
        if let Some(k) = c.imm() {
            // A constant condition: only the taken branch is emitted; the other one's
            // statements still own a comment line each (the source map covers them).
            let (taken, dead) = if k.to_bits() != 0 {
                (then, otherwise)
            } else {
                (otherwise, then)
            };
            self.comment(format!(
                "condition is always {}",
                if k.to_bits() != 0 { "true" } else { "false" }
            ));
            self.not_emitted(dead, "branch never taken");
            return self.scoped(|w| w.stmts(taken));
        }
        let p = self.in_reg(&c);
        if otherwise.is_empty() && self.at.guard.is_none() && is_short(then) {
            // Predicate the body, unless an access in it keeps a bounds check: its predicate
            // would need combining with the guard, so branch around the body instead (as
            // nvcc does; ptxas if-converts short bodies itself).
            let cp = self.checkpoint();
            let old = self.at.guard.replace(p.to_string());
            let r = self.scoped(|w| {
                w.assume(cond, true);
                w.stmts(then)
            });
            self.at.guard = old;
            r?;
            if self.out.guard_checks == cp.guard_checks() {
                return Ok(());
            }
            self.rollback(cp);
        }
        let end = self.label_name("end");
        if otherwise.is_empty() {
            self.ins(format!("@!{p} bra {end}"));
            self.scoped(|w| {
                w.assume(cond, true);
                w.stmts(then)
            })?;
        } else {
            let els = self.label_name("else");
            self.ins(format!("@!{p} bra {els}"));
            self.scoped(|w| {
                w.assume(cond, true);
                w.stmts(then)
            })?;
            self.ins(format!("bra.uni {end}"));
            self.label(&els);
            self.scoped(|w| {
                w.assume(cond, false);
                w.stmts(otherwise)
            })?;
        }
        self.label(&end);
        Ok(())
    }

    /// Writes one comment line per statement of `list` (recursively) for code that is
    /// provably never executed, so that every statement still appears in the source map.
    pub(super) fn not_emitted(&mut self, list: &[Stmt], why: &str) {
        for s in list {
            let prev = self.enter_node(&s.id);
            let code = self.printed_code(&s.id);
            self.comment(format!("{}: {code} (not emitted: {why})", s.id));
            match &s.kind {
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    self.not_emitted(then, why);
                    self.not_emitted(otherwise, why);
                }
                StmtKind::Loop { body, .. } | StmtKind::Block(body) => self.not_emitted(body, why),
                _ => {}
            }
            self.leave_node(prev);
        }
    }

    fn loop_stmt(&mut self, var: &str, from: &Expr, to: &Expr, body: &[Stmt]) -> R<()> {
        let f = self.expr(from)?;
        let t = self.expr(to)?;
        if let (Some(a), Some(b)) = (f.imm(), t.imm()) {
            let (a, b) = (a.to_bits() as u32, b.to_bits() as u32);
            if self.opts.unroll && super::unroll::should_unroll(a, b, body, self.at.unroll_factor) {
                return self.unrolled(var, a, b, body);
            }
        }
        let k = self.reg(ScalarType::U32);
        self.out.mutable.insert(k.clone());
        self.ins(format!("mov.b32 {k}, {}", f.text()));
        // `to` is evaluated once: freeze it unless it is a constant or a fresh temporary.
        let end = match &t {
            Val::Reg { fresh: false, .. } => {
                let r = self.reg(ScalarType::U32);
                self.ins(format!("mov.b32 {r}, {}", t.text()));
                r.to_string()
            }
            v => v.text(),
        };
        // from <= k < to <= range(to).hi; k never wraps (it stops at `to`).
        let range = match (self.range(from), self.range(to)) {
            (Some(rf), Some(rt)) => Some(Range::new(rf.lo, rt.hi.saturating_sub(1))),
            _ => None,
        };
        let head = self.label_name("head");
        let exit = self.label_name("exit");
        // Constant bounds with at least one iteration need no entry test.
        let enters = matches!((f.imm(), t.imm()), (Some(a), Some(b)) if a.to_bits() < b.to_bits());
        if !enters {
            let skip = self.reg_class(super::regs::RegClass::Pred);
            self.ins(format!("setp.ge.u32 {skip}, {k}, {end}"));
            self.ins(format!("@{skip} bra {exit}"));
        }
        self.label(&head);
        // Lanes may run different trip counts (or return in one iteration and not reach the
        // next): the body is not full-warp code.
        self.at.divergent += 1;
        let len_fact = match to {
            Expr::Len(b) => Some(b.clone()),
            _ => None,
        };
        let r = self.scoped(|w| {
            w.declare(var, VarInfo::reg(k.clone(), ScalarType::U32, range));
            if let Some(b) = &len_fact {
                w.facts.add(
                    Fact::BelowLen(Subject::Reg(k.to_string()), b.clone()),
                    false,
                );
            }
            w.stmts(body)
        });
        self.at.divergent -= 1;
        r?;
        self.ins(format!("add.s32 {k}, {k}, 1"));
        let again = self.reg_class(super::regs::RegClass::Pred);
        self.ins(format!("setp.lt.u32 {again}, {k}, {end}"));
        self.ins(format!("@{again} bra {head}"));
        self.label(&exit);
        Ok(())
    }
}

/// A short, straight-line body that is cheaper predicated than branched around.
fn is_short(list: &[Stmt]) -> bool {
    if list.is_empty() || list.len() > SHORT_STMTS {
        return false;
    }
    let mut nodes = 0usize;
    let mut ok = true;
    for (i, s) in list.iter().enumerate() {
        let exprs: Vec<&Expr> = match &s.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => vec![value],
            StmtKind::Store { index, value, .. } => vec![index, value],
            StmtKind::Return => {
                ok &= i + 1 == list.len();
                vec![]
            }
            _ => return false,
        };
        for e in exprs {
            e.visit(&mut |x| {
                nodes += 1;
                ok &= match x {
                    Expr::Atomic { .. }
                    | Expr::Shuffle { .. }
                    | Expr::SubgroupReduce(..)
                    | Expr::Ballot(_)
                    | Expr::Clock => false,
                    Expr::Unary(op, _) => !op.is_approximate(),
                    _ => true,
                };
            });
        }
    }
    ok && nodes <= SHORT_EXPR_NODES
}
