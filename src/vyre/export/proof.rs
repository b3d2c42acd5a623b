//! Bounds proofs for the export: which accesses are certainly in range, so that the exported
//! vyre Program can leave out the guard that gives our format's out-of-range result.
//!
//! It reuses the interval analysis the emitter uses ([`crate::analysis::ranges`]) with a simpler,
//! scoped environment: facts come from `if` conditions (their `then` and `else` arms) and
//! from loop bounds; a variable is a fact subject only when the Program never assigns it
//! (its value is fixed once bound), and names are scoped like the Program's own scopes.

use std::collections::{HashMap, HashSet};

use crate::analysis::ranges::{builtin_base, implied, range_of, Fact, Range, RangeEnv, Subject};
use crate::ir::{Builtin, ElemType, Expr, Program, ScalarType, Stmt, StmtKind};

/// Scoped facts and variable types while the export walks a Program.
pub struct Env<'p> {
    program: &'p Program,
    wg: [u32; 3],
    /// Variables assigned somewhere in the Program: never fact subjects.
    assigned: HashSet<String>,
    /// Per scope: variable types and the range each unassigned `u32` variable was bound to.
    scopes: Vec<HashMap<String, (ScalarType, Range)>>,
    /// Per scope: facts.
    facts: Vec<Vec<Fact>>,
}

impl<'p> Env<'p> {
    /// An environment for `program` (elaborated and valid).
    pub fn new(program: &'p Program) -> Self {
        // Assigned names, and names bound more than once (in sibling or nested scopes), are
        // never subjects: a fact about one binding must not describe another.
        let mut assigned = HashSet::new();
        let mut bound = HashSet::new();
        program.walk_stmts(&mut |s| match &s.kind {
            StmtKind::Assign { name, .. } => {
                assigned.insert(name.clone());
            }
            StmtKind::Let { name, .. } | StmtKind::Loop { var: name, .. }
                if !bound.insert(name.clone()) =>
            {
                assigned.insert(name.clone());
            }
            _ => {}
        });
        Env {
            program,
            wg: program.workgroup_size,
            assigned,
            scopes: vec![HashMap::new()],
            facts: vec![Vec::new()],
        }
    }

    /// The Program being exported.
    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// Opens a scope.
    pub fn push(&mut self) {
        self.scopes.push(HashMap::new());
        self.facts.push(Vec::new());
    }

    /// Closes the innermost scope.
    pub fn pop(&mut self) {
        self.scopes.pop();
        self.facts.pop();
    }

    /// Declares variable `name` of type `ty` bound to `value` in the innermost scope.
    pub fn declare(&mut self, name: &str, ty: ScalarType, value: Option<&Expr>) {
        let range = match value {
            Some(v) if ty == ScalarType::U32 => range_of(v, self).unwrap_or(Range::FULL),
            _ => Range::FULL,
        };
        if let Some(top) = self.scopes.last_mut() {
            top.insert(name.to_string(), (ty, range));
        }
    }

    /// Adds the facts that hold when `cond` is `truth` to the innermost scope.
    pub fn assume(&mut self, cond: &Expr, truth: bool) {
        let facts = implied(cond, truth, self);
        if let Some(top) = self.facts.last_mut() {
            top.extend(facts);
        }
    }

    /// Adds the facts of a loop counter `var` running over `[from, to)`.
    pub fn assume_loop(&mut self, var: &str, from: &Expr, to: &Expr) {
        let lo = range_of(from, self).map_or(0, |r| r.lo);
        let hi = range_of(to, self).map_or(Range::FULL.hi, |r| r.hi);
        let subject = Subject::Reg(var.to_string());
        let mut facts = vec![Fact::In(
            subject.clone(),
            Range::new(lo, hi.saturating_sub(1)),
        )];
        if let Expr::Len(b) = to {
            if self.program.buffer(b).is_some_and(|d| d.count.is_none()) {
                facts.push(Fact::BelowLen(subject, b.clone()));
            }
        }
        if let Some(top) = self.facts.last_mut() {
            top.extend(facts);
        }
    }

    /// The type of variable `name` in scope.
    pub fn var_ty(&self, name: &str) -> Option<ScalarType> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .map(|(t, _)| *t)
    }

    /// The type of `e` in the current scope.
    pub fn ty(&self, e: &Expr) -> Option<ScalarType> {
        crate::ir::expr_type(self.program, e, &|n| self.var_ty(n))
    }

    /// True when `index` is certainly below the length of `buffer` (the run-time length of a
    /// host buffer, the `count` of a workgroup one).
    pub fn in_range(&self, buffer: &str, index: &Expr) -> bool {
        let Some(decl) = self.program.buffer(buffer) else {
            return false;
        };
        let Some(r) = range_of(index, self) else {
            return false;
        };
        if let Some(count) = decl.count {
            return r.hi < count as u64;
        }
        match self.subject(index) {
            Some(s) => self
                .facts
                .iter()
                .flatten()
                .any(|f| matches!(f, Fact::BelowLen(x, b) if *x == s && b == buffer)),
            None => false,
        }
    }

    fn facts_range(&self, s: &Subject) -> Range {
        self.facts
            .iter()
            .flatten()
            .filter_map(|f| match f {
                Fact::In(x, r) if x == s => Some(*r),
                _ => None,
            })
            .fold(Range::FULL, Range::meet)
    }
}

impl RangeEnv for Env<'_> {
    fn subject(&self, e: &Expr) -> Option<Subject> {
        match e {
            Expr::Var(n) if !self.assigned.contains(n) => {
                (self.var_ty(n)? == ScalarType::U32).then(|| Subject::Reg(n.clone()))
            }
            Expr::Builtin(b) => Some(Subject::Builtin(*b)),
            _ => None,
        }
    }

    fn var_type(&self, name: &str) -> Option<ScalarType> {
        self.var_ty(name)
    }

    fn var_range(&self, name: &str) -> Range {
        let bound = self
            .scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .map_or(Range::FULL, |(_, r)| *r);
        if self.assigned.contains(name) {
            return Range::FULL;
        }
        bound.meet(self.facts_range(&Subject::Reg(name.to_string())))
    }

    fn builtin_range(&self, b: Builtin) -> Range {
        builtin_base(b, self.wg).meet(self.facts_range(&Subject::Builtin(b)))
    }

    fn buffer(&self, name: &str) -> Option<(ElemType, Option<u32>)> {
        self.program.buffer(name).map(|d| (d.elem, d.count))
    }
}

/// True when `list` has a statement that ends the invocation on every path (used by the
/// early-return rewrite).
pub fn is_bare_return(then: &[Stmt]) -> bool {
    matches!(
        then,
        [Stmt {
            kind: StmtKind::Return,
            ..
        }]
    )
}
