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
use crate::analysis::ranges::{builtin_base, range_of, Range, RangeEnv, Subject};
use crate::ir::{Builtin, ElemType, Expr, ScalarType};

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

    fn below_len(&self, s: &Subject, buffer: &str) -> bool {
        self.w.facts.below_len(s, buffer, self.conditional)
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
        env.subject(index)
            .is_some_and(|s| env.below_len(&s, buffer))
    }
}
