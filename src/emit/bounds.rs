//! Bounds proofs: the facts in scope, the range environment built on them, and the decision
//! whether an access keeps its run-time check.
//!
//! Facts (see [`super::ranges`]) come from control flow and are scoped like variables:
//! - inside the `then` of `if c` the facts `c` implies, inside the `else` those `!c` implies;
//! - after an `if` whose one branch always returns, for the rest of the enclosing block, the
//!   facts of the condition that lets a thread continue;
//! - in the body of `loop i from a to b`: `i` in `[range(a).lo, range(b).hi - 1]`, and
//!   `i < len(B)` when `b` is `len(B)`;
//! - *conditionally*, while the arm of `select(c, a, b)` is lowered: the facts of `c` (or of
//!   `!c` for `b`). The arm is evaluated whatever `c` is (no short-circuit), so an access
//!   proven only by such facts is not unchecked: it runs under `c`'s predicate instead of a
//!   compare of its own (its value only matters where `c` holds). This is only done for arms
//!   without atomics or subgroup operations, whose values could otherwise leak to other
//!   threads or memory.
//!
//! Soundness: facts only name subjects that cannot change in their scope (unassigned
//! variables by register, builtins). Inside a predicated `if` body the pure instructions run
//! on every thread, but every memory access there runs under the guard predicate, so facts
//! from the guard only ever justify accesses of threads for which they hold.

use super::writer::Writer;
use crate::analysis::ranges::{builtin_base, range_of, Fact, Range, RangeEnv, Subject};
use crate::ir::{Builtin, ElemType, Expr, ScalarType, Stmt, StmtKind};

/// One fact in scope.
#[derive(Debug, Clone)]
struct Held {
    fact: Fact,
    /// Holds only under the predicates of the enclosing `select` arms.
    conditional: bool,
}

/// Facts per nested scope.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    scopes: Vec<Vec<Held>>,
}

impl Facts {
    /// Opens a scope (facts added later vanish at the matching [`Facts::pop`]).
    pub fn push(&mut self) {
        self.scopes.push(Vec::new());
    }

    /// Closes a scope.
    pub fn pop(&mut self) {
        self.scopes.pop();
    }

    /// Records `fact` in the innermost scope.
    pub fn add(&mut self, fact: Fact, conditional: bool) {
        if self.scopes.is_empty() {
            self.scopes.push(Vec::new());
        }
        if let Some(top) = self.scopes.last_mut() {
            top.push(Held { fact, conditional });
        }
    }

    fn held(&self, with_conditional: bool) -> impl Iterator<Item = &Fact> {
        self.scopes
            .iter()
            .flatten()
            .filter(move |h| with_conditional || !h.conditional)
            .map(|h| &h.fact)
    }

    /// The range the facts give `s` (full when none).
    pub fn range(&self, s: &Subject, with_conditional: bool) -> Range {
        self.held(with_conditional)
            .filter_map(|f| match f {
                Fact::In(x, r) if x == s => Some(*r),
                _ => None,
            })
            .fold(Range::FULL, Range::meet)
    }

    /// True when `s < len(buffer)` is known.
    pub fn below_len(&self, s: &Subject, buffer: &str, with_conditional: bool) -> bool {
        self.held(with_conditional)
            .any(|f| matches!(f, Fact::BelowLen(x, b) if x == s && b == buffer))
    }
}

/// True when executing `list` always ends in a `return`.
pub fn always_returns(list: &[Stmt]) -> bool {
    list.iter().any(|s| match &s.kind {
        StmtKind::Return => true,
        StmtKind::Block(b) => always_returns(b),
        StmtKind::If {
            then, otherwise, ..
        } => always_returns(then) && always_returns(otherwise),
        _ => false,
    })
}

/// The writer's names seen by the range analysis, with or without the conditional facts.
pub(super) struct Env<'w, 'p> {
    w: &'w Writer<'p>,
    conditional: bool,
}

impl RangeEnv for Env<'_, '_> {
    fn subject(&self, e: &Expr) -> Option<Subject> {
        match e {
            Expr::Var(n) => {
                let v = self.w.var(n).ok()?;
                let stable = !self.w.assigned.contains(n) && v.konst.is_none();
                (stable && v.ty == ScalarType::U32).then(|| Subject::Reg(v.reg.to_string()))
            }
            Expr::Builtin(b) if *b != Builtin::SubgroupSize => Some(Subject::Builtin(*b)),
            _ => None,
        }
    }

    fn var_type(&self, name: &str) -> Option<ScalarType> {
        self.w.var(name).ok().map(|v| v.ty)
    }

    fn var_range(&self, name: &str) -> Range {
        let Ok(v) = self.w.var(name) else {
            return Range::FULL;
        };
        if let Some(k) = v.konst {
            return Range::point(k.to_bits());
        }
        if self.w.assigned.contains(name) {
            return Range::FULL;
        }
        v.range.unwrap_or(Range::FULL).meet(
            self.w
                .facts
                .range(&Subject::Reg(v.reg.to_string()), self.conditional),
        )
    }

    fn builtin_range(&self, b: Builtin) -> Range {
        builtin_base(b, self.w.opts.workgroup_size)
            .meet(self.w.facts.range(&Subject::Builtin(b), self.conditional))
    }

    fn buffer(&self, name: &str) -> Option<(ElemType, Option<u32>)> {
        let d = self.w.prog.buffer(name)?;
        Some((d.elem, if d.access.is_host() { None } else { d.count }))
    }
}

impl<'p> Writer<'p> {
    /// The range environment; `conditional` includes the facts of enclosing `select` arms.
    pub(super) fn env(&self, conditional: bool) -> Env<'_, 'p> {
        Env {
            w: self,
            conditional,
        }
    }

    /// The range of a `u32` expression from the unconditional facts.
    pub(super) fn range(&self, e: &Expr) -> Option<Range> {
        range_of(e, &self.env(false))
    }

    /// Adds the facts that hold when `cond` is `truth` to the innermost scope.
    pub(super) fn assume(&mut self, cond: &Expr, truth: bool) {
        let facts = crate::analysis::ranges::implied(cond, truth, &self.env(false));
        for f in facts {
            self.facts.add(f, false);
        }
    }

    /// True when `index < len(buffer)` is proven (`index` must be a subject); with
    /// `conditional`, the facts of enclosing `select` arms count too.
    pub(super) fn below_len(&self, index: &Expr, buffer: &str, conditional: bool) -> bool {
        let env = self.env(conditional);
        match env.subject(index) {
            Some(s) => self.facts.below_len(&s, buffer, conditional),
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Axis;

    #[test]
    fn facts_are_scoped_and_conditional_ones_are_separate() {
        let l = Subject::Builtin(Builtin::LocalId(Axis::X));
        let mut f = Facts::default();
        f.push();
        f.add(Fact::In(l.clone(), Range::new(0, 63)), false);
        f.push();
        f.add(Fact::In(l.clone(), Range::new(10, 200)), true);
        f.add(Fact::BelowLen(l.clone(), "x".into()), true);
        assert_eq!(f.range(&l, false), Range::new(0, 63));
        assert_eq!(f.range(&l, true), Range::new(10, 63));
        assert!(!f.below_len(&l, "x", false));
        assert!(f.below_len(&l, "x", true));
        f.pop();
        assert_eq!(f.range(&l, true), Range::new(0, 63));
        f.pop();
        assert_eq!(f.range(&l, false), Range::FULL);
    }
}
