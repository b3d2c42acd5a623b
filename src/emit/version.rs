//! Versioned fast paths: one run-time test for a group of host-buffer accesses, an unchecked
//! copy of the code where it passes and the checked copy where it does not.
//!
//! A host buffer's length is a run-time value, so `src[idx + w]` keeps its check whenever the
//! facts in scope cannot bound `idx + w` by `len(src)` (a stencil's neighbours: five loads,
//! five compares, five zeroed destinations and five predicated loads). Within a run of
//! straight-line `let`/`store` statements, the accesses of one buffer whose indices are
//! `b`, `b ± c` (`c` constant) or `b ± v` (`v` an unassigned variable or builtin), for one
//! base subject `b`, are covered by one interval test (exact integer arithmetic):
//!
//! ```text
//! L = max(v for every b - v, c for every b - c)       H = max(v for b + v, c for b + c, 0)
//! b >= L   and   s = b + H (u32) >= H   and   s < len
//! ```
//!
//! `s >= H` says `b + H` did not wrap (a wrapped sum is `b + H - 2^32 < H`), so `b + H < len`;
//! then every `b - t` lies in `[0, b]` and every `b + t` in `[b, b + H]`: all indices are in
//! range *and* none wraps. Constant indices (`dims[0]`, `dims[1]`) form a group without a
//! base: `max c < len`. The tests of all groups are combined into one predicate; where it
//! holds the run is emitted with those checks left out (and constant offsets folded into the
//! address operand, which the no-wrap result allows: `[%rd+4]`), elsewhere the ordinary
//! checked code runs, so an out-of-range load still reads 0 and an out-of-range store is
//! still dropped. The test is only sufficient: a thread that fails it may still have every
//! index in range and simply takes the checked copy.
//!
//! A run is versioned when some group has two or more accesses (one check of its own would
//! cost the same as the test). Statements with atomics or subgroup operations end a run, runs
//! inside a predicated short body are left alone, and a run longer than [`MAX_STMTS`]
//! statements or [`MAX_NODES`] expression nodes is versioned in pieces (both copies are
//! emitted, so this bounds the code growth). The variables the run declares and the rest of
//! the block reads live in the fast copy's registers; the checked copy moves its values
//! there.

use std::collections::HashSet;

use super::regs::RegClass;
use super::writer::{mov_suffix, Val, Writer};
use super::EmitError;
use crate::analysis::ranges::{range_of, RangeEnv, Subject};
use crate::ir::{BinOp, Expr, Scalar, ScalarType, Stmt, StmtKind};

type R<T> = Result<T, EmitError>;

/// Most statements a versioned run may have (both copies are emitted; a longer run is
/// versioned in pieces).
const MAX_STMTS: usize = 16;
/// Most PTX instructions of a fast copy (a longer one, expensive math say, is rolled back:
/// the run is emitted once, checked; the checks are then a small part of its cost).
const MAX_FAST_INSTRS: usize = 64;
/// Most expression nodes a versioned run may have.
const MAX_NODES: usize = 160;

/// The non-base part of an affine index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Term {
    /// A constant offset (negative: subtracted).
    Const(i64),
    /// `+ v`.
    Plus(Subject),
    /// `- v`.
    Minus(Subject),
}

/// An access whose bounds the fast path's test proves: buffer, base subject (`None` for a
/// constant index) and term.
pub(super) type AccessKey = (String, Option<Subject>, Term);

/// What the fast copy of a run may rely on.
#[derive(Debug, Clone, Default)]
pub(super) struct FastPath {
    /// Accesses proven in range.
    pub proven: HashSet<AccessKey>,
    /// Per base subject, the constant offsets `[lo, hi]` proven not to wrap.
    pub windows: Vec<(Subject, i64, i64)>,
}

/// One decomposition: base subject with its expression, and the term with its expression.
type Affine = (Option<(Subject, Expr)>, Term, Option<Expr>);

/// True for a statement the fast path may duplicate.
fn versionable(s: &Stmt) -> bool {
    let exprs: Vec<&Expr> = match &s.kind {
        StmtKind::Let { value, .. } => vec![value],
        StmtKind::Store { index, value, .. } => vec![index, value],
        _ => return false,
    };
    let mut ok = true;
    for e in exprs {
        e.visit(&mut |x| {
            ok &= !matches!(
                x,
                Expr::Atomic { .. }
                    | Expr::Shuffle { .. }
                    | Expr::SubgroupReduce(..)
                    | Expr::Ballot(_)
                    | Expr::Clock
            )
        });
    }
    ok
}

/// Expression nodes of a `let` or `store`.
fn stmt_nodes(s: &Stmt) -> usize {
    let mut n = 0;
    let mut count = |e: &Expr| e.visit(&mut |_| n += 1);
    match &s.kind {
        StmtKind::Let { value, .. } => count(value),
        StmtKind::Store { index, value, .. } => {
            count(index);
            count(value);
        }
        _ => {}
    }
    n
}

/// Adds the variable names that `list` reads or assigns (nested bodies included).
fn names_used(list: &[Stmt], out: &mut HashSet<String>) {
    let exprs = |e: &Expr, out: &mut HashSet<String>| {
        e.visit(&mut |x| {
            if let Expr::Var(n) = x {
                out.insert(n.clone());
            }
        })
    };
    for s in list {
        match &s.kind {
            StmtKind::Let { value, .. } => exprs(value, out),
            StmtKind::Assign { name, value } => {
                out.insert(name.clone());
                exprs(value, out);
            }
            StmtKind::Store { index, value, .. } => {
                exprs(index, out);
                exprs(value, out);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                exprs(cond, out);
                names_used(then, out);
                names_used(otherwise, out);
            }
            StmtKind::Loop { from, to, body, .. } => {
                exprs(from, out);
                exprs(to, out);
                names_used(body, out);
            }
            StmtKind::Block(b) => names_used(b, out),
            StmtKind::Sync(op) => {
                let (read, _) = op.vars();
                out.extend(read.map(str::to_string));
            }
            StmtKind::Barrier(_) | StmtKind::Return => {}
        }
    }
}

/// The accesses of a statement: (buffer, index).
fn accesses(s: &Stmt, out: &mut Vec<(String, Expr)>) {
    let mut visit = |e: &Expr| {
        e.visit(&mut |x| {
            if let Expr::Load { buffer, index } = x {
                out.push((buffer.clone(), (**index).clone()));
            }
        })
    };
    match &s.kind {
        StmtKind::Let { value, .. } => visit(value),
        StmtKind::Store {
            buffer,
            index,
            value,
        } => {
            visit(index);
            visit(value);
            out.push((buffer.clone(), index.clone()));
        }
        _ => {}
    }
}

impl Writer<'_> {
    /// The constant value of a `u32` expression, if the ranges pin it.
    fn konst(&self, e: &Expr) -> Option<i64> {
        self.range(e).and_then(|r| r.single()).map(|v| v as i64)
    }

    /// `e` as base + term (candidates: both orders of `a + b` with two subjects); constant
    /// terms stay within +-(2^32 - 1), so that the test's bounds are `u32` values.
    fn affine(&self, e: &Expr) -> Vec<Affine> {
        let fits = |t: &Term| !matches!(t, Term::Const(c) if c.abs() > u32::MAX as i64);
        let mut v = self.affine_any(e);
        v.retain(|a| fits(&a.1));
        v
    }

    fn affine_any(&self, e: &Expr) -> Vec<Affine> {
        let env = self.env(false);
        if let Some(k) = self.konst(e) {
            return vec![(None, Term::Const(k), None)];
        }
        if let Some(s) = env.subject(e) {
            return vec![(Some((s, e.clone())), Term::Const(0), None)];
        }
        // `(b + t) ± k`: the constant joins a constant term.
        if let Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) = e {
            if let Some(k) = self.konst(b) {
                let k = if *op == BinOp::Sub { -k } else { k };
                let inner: Vec<Affine> = self
                    .affine(a)
                    .into_iter()
                    .filter_map(|(base, t, te)| match (base, t) {
                        (Some(base), Term::Const(c)) => Some((Some(base), Term::Const(c + k), te)),
                        _ => None,
                    })
                    .collect();
                if !inner.is_empty() {
                    return inner;
                }
            }
        }
        match e {
            Expr::Binary(op @ (BinOp::Add | BinOp::Sub), a, b) => {
                let (sa, sb) = (env.subject(a), env.subject(b));
                let (ka, kb) = (self.konst(a), self.konst(b));
                let minus = *op == BinOp::Sub;
                let mut v = Vec::new();
                if let Some(sa) = sa.clone() {
                    if let Some(k) = kb {
                        v.push((
                            Some((sa.clone(), (**a).clone())),
                            Term::Const(if minus { -k } else { k }),
                            None,
                        ));
                    } else if let Some(sb) = sb.clone() {
                        let t = if minus {
                            Term::Minus(sb)
                        } else {
                            Term::Plus(sb)
                        };
                        v.push((Some((sa.clone(), (**a).clone())), t, Some((**b).clone())));
                    }
                }
                if !minus {
                    if let Some(sb) = sb {
                        if let Some(k) = ka {
                            v.push((Some((sb, (**b).clone())), Term::Const(k), None));
                        } else if let Some(sa) = sa {
                            v.push((
                                Some((sb, (**b).clone())),
                                Term::Plus(sa),
                                Some((**a).clone()),
                            ));
                        }
                    }
                }
                v
            }
            _ => Vec::new(),
        }
    }

    /// True when the enclosing fast path's test proved `buffer[index]` in range.
    pub(super) fn fast_proven(&self, buffer: &str, index: &Expr) -> bool {
        let Some(fast) = &self.fast else {
            return false;
        };
        self.affine(index).into_iter().any(|(base, term, _)| {
            fast.proven
                .contains(&(buffer.to_string(), base.map(|b| b.0), term))
        })
    }

    /// True when the fast path proved that `base + off` does not wrap.
    pub(super) fn fast_no_wrap(&self, base: &Expr, off: i64) -> bool {
        let Some(fast) = &self.fast else {
            return false;
        };
        let Some(s) = self.env(false).subject(base) else {
            return false;
        };
        fast.windows
            .iter()
            .any(|(b, lo, hi)| *b == s && *lo <= off && off <= *hi)
    }

    /// Lowers `list`, versioning the runs that qualify (see the module docs).
    pub(super) fn stmts_versioned(&mut self, list: &[Stmt]) -> R<()> {
        let mut i = 0;
        while i < list.len() {
            let plan = if self.at.guard.is_none() && self.fast.is_none() {
                self.plan_run(list, i)
            } else {
                None
            };
            match plan {
                Some((start, end, groups)) => {
                    for s in &list[i..start] {
                        self.stmt_then_facts(s)?;
                    }
                    let cp = self.checkpoint();
                    if !self.versioned(&list[start..end], &groups, &list[end..])? {
                        self.rollback(cp);
                        for s in &list[start..end] {
                            self.stmt_then_facts(s)?;
                        }
                    }
                    i = end;
                }
                None => {
                    self.stmt_then_facts(&list[i])?;
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// The run starting at `from` to version, if it qualifies: (start, end, groups).
    fn plan_run(&self, list: &[Stmt], from: usize) -> Option<(usize, usize, Vec<Group>)> {
        if !versionable(&list[from]) {
            return None;
        }
        let mut end = from;
        let mut nodes = 0;
        while end < list.len() && versionable(&list[end]) && end - from < MAX_STMTS {
            nodes += stmt_nodes(&list[end]);
            if nodes > MAX_NODES && end > from {
                break;
            }
            end += 1;
        }
        // Candidate decompositions per access, with the statement holding it.
        let mut found: Vec<(usize, String, Vec<Affine>)> = Vec::new();
        for (k, s) in list[from..end].iter().enumerate() {
            let mut acc = Vec::new();
            accesses(s, &mut acc);
            for (buf, index) in acc {
                let Some(d) = self.prog.buffer(&buf) else {
                    continue;
                };
                if !d.access.is_host() || self.below_len(&index, &buf, false) {
                    continue;
                }
                let c = self.affine(&index);
                if !c.is_empty() {
                    found.push((from + k, buf, c));
                }
            }
        }
        // Bases that an access names unambiguously win the ambiguous `a + b`.
        let mut anchors: HashSet<(String, Option<Subject>)> = HashSet::new();
        for (_, buf, c) in &found {
            if c.len() == 1 {
                anchors.insert((buf.clone(), c[0].0.as_ref().map(|b| b.0.clone())));
            }
        }
        let mut groups: Vec<Group> = Vec::new();
        let (mut first, mut last) = (usize::MAX, 0);
        for (k, buf, c) in found {
            let base_of = |a: &Affine| a.0.as_ref().map(|b| b.0.clone());
            let pick = c
                .iter()
                .find(|a| anchors.contains(&(buf.clone(), base_of(a))))
                .unwrap_or(&c[0])
                .clone();
            let key = base_of(&pick);
            let g = match groups
                .iter()
                .position(|g| g.buffer == buf && g.base.as_ref().map(|b| &b.0) == key.as_ref())
            {
                Some(g) => g,
                None => {
                    groups.push(Group {
                        buffer: buf,
                        base: pick.0.clone(),
                        terms: Vec::new(),
                    });
                    groups.len() - 1
                }
            };
            groups[g].terms.push((pick.1, pick.2));
            first = first.min(k);
            last = last.max(k);
        }
        if !groups.iter().any(|g| g.terms.len() >= 2) {
            return None;
        }
        Some((first, last + 1, groups))
    }

    /// Emits the test, the fast copy and the checked copy of `run`.
    /// Returns false, having emitted a fast copy longer than [`MAX_FAST_INSTRS`], for the
    /// caller to roll back and emit the run once, checked.
    fn versioned(&mut self, run: &[Stmt], groups: &[Group], rest: &[Stmt]) -> R<bool> {
        // The test and the fast copy compute values the checked copy must not reuse.
        self.caches.push(Default::default());
        // The test belongs to the first statement, after its comment line.
        let prev = self.enter_node(&run[0].id);
        let code = self.printed_code(&run[0].id);
        self.comment(format!("{}: {code}", run[0].id));
        self.comment(format!(
            "fast path: one range test for {} accesses of {}",
            groups.iter().map(|g| g.terms.len()).sum::<usize>(),
            groups
                .iter()
                .map(|g| g.buffer.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let mut fast = FastPath::default();
        let mut preds: Vec<String> = Vec::new();
        for g in groups {
            self.group_test(g, &mut fast, &mut preds)?;
        }
        let slow = self.label_name("checked");
        let join = self.label_name("joined");
        let p = match preds.split_first() {
            Some((p0, rest)) => {
                let mut acc = p0.clone();
                for q in rest {
                    let both = self.reg_class(RegClass::Pred);
                    self.ins(format!("and.pred {both}, {acc}, {q}"));
                    acc = both.to_string();
                }
                acc
            }
            None => return Err(EmitError::Internal("a versioned run without a test".into())),
        };
        self.ins(format!("@!{p} bra {slow}"));
        self.out.stats.bounds_checks_versioned +=
            groups.iter().map(|g| g.terms.len() as u32).sum::<u32>();

        // The fast copy: its `let`s are declared in the enclosing scope; its cached values
        // vanish at the join (they are not computed on the checked path).
        self.at.divergent += 1;
        self.fast = Some(fast);
        let start = self.body.len();
        let r = self.stmt_kind(&run[0]);
        self.leave_node(prev);
        let r = r.and_then(|()| run[1..].iter().try_for_each(|s| self.stmt(s)));
        self.fast = None;
        self.caches.pop();
        if let Err(e) = r {
            self.at.divergent -= 1;
            return Err(e);
        }
        let fast_len = self.body[start..]
            .iter()
            .filter(|l| l.kind == super::writer::LineKind::Instr)
            .count();
        if fast_len > MAX_FAST_INSTRS {
            self.at.divergent -= 1;
            return Ok(false);
        }
        // Only the variables the rest of the block uses need their values at the join.
        let mut later = HashSet::new();
        names_used(rest, &mut later);
        let declared: Vec<(String, super::writer::VarInfo)> = run
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Let { name, .. } if later.contains(name) => Some(name.clone()),
                _ => None,
            })
            .collect::<HashSet<_>>()
            .into_iter()
            .filter_map(|n| self.var(&n).ok().cloned().map(|v| (n, v)))
            .collect();
        let prev = self.enter_node(&run[run.len() - 1].id);
        self.ins(format!("bra.uni {join}"));
        self.leave_node(prev);
        let prev = self.enter_node(&run[0].id);
        self.label(&slow);
        self.comment("checked path");
        self.leave_node(prev);

        // The checked copy, moving its values into the fast copy's registers.
        self.scoped(|w| -> R<()> {
            for s in run {
                w.stmt(s)?;
            }
            let prev = w.enter_node(&run[run.len() - 1].id);
            let mut names: Vec<&(String, super::writer::VarInfo)> = declared.iter().collect();
            names.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, fast) in names {
                if fast.konst.is_some() {
                    continue;
                }
                let slow = w.var(name)?.clone();
                let src = match slow.konst {
                    Some(k) => super::writer::imm_text(k),
                    None => slow.reg.to_string(),
                };
                if src != *fast.reg {
                    w.ins(format!("mov{} {}, {src}", mov_suffix(fast.ty), fast.reg));
                }
            }
            w.leave_node(prev);
            Ok(())
        })?;
        self.at.divergent -= 1;
        let prev = self.enter_node(&run[run.len() - 1].id);
        self.label(&join);
        self.leave_node(prev);
        Ok(true)
    }

    /// Emits the range test of one group, records what it proves, and pushes its predicates.
    fn group_test(&mut self, g: &Group, fast: &mut FastPath, preds: &mut Vec<String>) -> R<()> {
        let len = Val::Reg {
            name: self.buffer_len_reg(&g.buffer),
            ty: ScalarType::U32,
            fresh: false,
        };
        for (t, _) in &g.terms {
            fast.proven.insert((
                g.buffer.clone(),
                g.base.as_ref().map(|b| b.0.clone()),
                t.clone(),
            ));
        }
        let consts = || {
            g.terms.iter().filter_map(|(t, _)| match t {
                Term::Const(c) => Some(*c),
                _ => None,
            })
        };
        let Some((base, base_expr)) = &g.base else {
            // Constant indices: the largest one below the length.
            let top = consts().max().unwrap_or(0);
            let p = self.setp(
                "lt",
                ScalarType::U32,
                &Val::Imm(Scalar::U32(top as u32)),
                &len,
            );
            preds.push(p.text());
            return Ok(());
        };
        let cn = consts().filter(|c| *c < 0).map(|c| -c).max().unwrap_or(0);
        let cp = consts().filter(|c| *c > 0).max().unwrap_or(0);
        let b = self.expr(base_expr)?;
        // L and H as values: the largest subtracted and added terms.
        let fold = |w: &mut Self, want_minus: bool, k: i64| -> R<Option<Val>> {
            let mut seen: HashSet<Subject> = HashSet::new();
            let mut acc: Option<Val> = None;
            for (t, e) in &g.terms {
                let (s, minus) = match t {
                    Term::Plus(s) => (s, false),
                    Term::Minus(s) => (s, true),
                    Term::Const(_) => continue,
                };
                if minus != want_minus || !seen.insert(s.clone()) {
                    continue;
                }
                let Some(e) = e else { continue };
                let v = w.expr(e)?;
                acc = Some(match acc {
                    None => v,
                    Some(a) => w.binary_ir(BinOp::Max, a, v)?,
                });
            }
            // The constant last, as the immediate operand.
            let k = (k > 0).then_some(Val::Imm(Scalar::U32(k as u32)));
            Ok(match (acc, k) {
                (Some(a), Some(k)) => Some(w.binary_ir(BinOp::Max, a, k)?),
                (a, k) => a.or(k),
            })
        };
        let lo = fold(self, true, cn)?;
        let hi = fold(self, false, cp)?;
        if let Some(lo) = &lo {
            let p = self.setp("ge", ScalarType::U32, &b, lo);
            preds.push(p.text());
        }
        let no_wrap_known = |w: &Self| {
            let plus_vars = g.terms.iter().any(|(t, _)| matches!(t, Term::Plus(_)));
            !plus_vars
                && range_of(base_expr, &w.env(false))
                    .is_some_and(|r| r.hi as i64 + cp <= u32::MAX as i64)
        };
        let wrap_free = no_wrap_known(self);
        match hi {
            None => {
                let p = self.setp("lt", ScalarType::U32, &b, &len);
                preds.push(p.text());
            }
            Some(h) => {
                let s = self.binary_ir(BinOp::Add, b.clone(), h.clone())?;
                if !wrap_free {
                    let p = self.setp("ge", ScalarType::U32, &s, &h);
                    preds.push(p.text());
                }
                let p = self.setp("lt", ScalarType::U32, &s, &len);
                preds.push(p.text());
            }
        }
        // Address operands carry the offset as a signed 32-bit value: only that part of the
        // window is recorded, so an offset found in it is the term itself.
        fast.windows.push((
            base.clone(),
            (-cn).max(i32::MIN as i64 + 1),
            cp.min(i32::MAX as i64),
        ));
        Ok(())
    }
}

/// The accesses of one buffer with one base in a run.
pub(super) struct Group {
    buffer: String,
    base: Option<(Subject, Expr)>,
    terms: Vec<(Term, Option<Expr>)>,
}
