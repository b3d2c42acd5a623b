//! The walk behind [`super::accesses`] and [`super::accesses_exact`]: it follows a Program's
//! statements in order, binds each `let` to its [`Index`] (and, on the exact walk, to the
//! alternatives it may take), narrows ranges under branch conditions and loop counters, and
//! records every buffer access with its analysed index.

use std::collections::HashMap;

use super::{Access, Alt, AltSet, Index, Lin, Piece};
use crate::analysis::ranges::{
    builtin_base, decide, implied, range_of, Facts, Range, RangeEnv, Subject,
};
use crate::ir::walk::always_returns;
use crate::ir::{
    BinOp, Builtin, ElemType, Expr, Literal, NodeId, Program, Scalar, ScalarType, Stmt, StmtKind,
    UnOp,
};

/// Workgroup sizes the ids are bounded by when the launch is not known (CUDA's limits).
const ANY_WORKGROUP: [u32; 3] = [1024, 1024, 64];

pub(super) fn walk(program: &Program, exact: bool, lens: &HashMap<String, u64>) -> Vec<Access> {
    let mut w = Walker {
        program,
        lens,
        env: vec![HashMap::new()],
        facts: Facts::default(),
        out: Vec::new(),
        assigned: HashMap::new(),
        exact,
    };
    collect_assigned(&program.body, &mut w.assigned);
    w.list(&program.body);
    w.out
}

/// Variables written by `assign` anywhere (their value depends on control flow).
fn collect_assigned(list: &[Stmt], out: &mut HashMap<String, ()>) {
    for s in list {
        match &s.kind {
            StmtKind::Assign { name, .. } => {
                out.insert(name.clone(), ());
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_assigned(then, out);
                collect_assigned(otherwise, out);
            }
            StmtKind::Loop { body, .. } => collect_assigned(body, out),
            StmtKind::Block(b) => collect_assigned(b, out),
            // The last-arriver flag of a dataflow `sync` is written by the statement.
            StmtKind::Sync(op) => {
                if let (_, Some(name)) = op.vars() {
                    out.insert(name.to_string(), ());
                }
            }
            _ => {}
        }
    }
}

/// What the walk knows about one `let` variable or loop counter.
#[derive(Debug, Clone)]
struct Binding {
    index: Index,
    /// Its alternatives (exact walk, see [`alts`]), when it is not one known form.
    alts: Option<AltSet>,
    /// Its type, for the range analysis of conditions.
    ty: Option<ScalarType>,
    /// The range of a `u32` variable proven where it was bound (full when assigned).
    range: Range,
    /// What the path facts about it are about: the builtin it copies (`let index = gid.x`),
    /// else itself (named by its statement, never reused); `None` for an assigned variable,
    /// whose value may change while a fact is in scope, and for other types than `u32`.
    subject: Option<Subject>,
}

/// Walks a Program in order, keeping the variables in scope and the *path facts*: what
/// control flow proves on the way to each statement (the conditions of the enclosing `if`s,
/// and after `if c { return }` the negation of `c` for the rest of the enclosing list; see
/// [`crate::analysis::ranges`]). A `select`, `min` or `max` whose choice those facts decide is
/// the chosen operand: vyre's clamp `select(i < len(out), i, 0)` after its early exit
/// `if gid.x >= len(out) { return }` is `i`, one form instead of two alternatives.
///
/// Facts are scoped like variables (a fact from a loop body or a branch ends with it; a
/// `return` inside a loop gives nothing after the loop, since the loop may not run) and only
/// name values that cannot change in their scope: builtins and unassigned `u32` variables.
pub(super) struct Walker<'p> {
    program: &'p Program,
    /// Known host buffer lengths (see [`accesses_exact`]).
    lens: &'p HashMap<String, u64>,
    env: Vec<HashMap<String, Binding>>,
    facts: Facts,
    out: Vec<Access>,
    assigned: HashMap<String, ()>,
    /// Only forms that are exact modulo 2^32 (see [`accesses_exact`]).
    exact: bool,
}

impl RangeEnv for Walker<'_> {
    fn subject(&self, e: &Expr) -> Option<Subject> {
        match e {
            Expr::Var(n) => self.binding(n)?.subject.clone(),
            Expr::Builtin(b) if *b != Builtin::SubgroupSize => Some(Subject::Builtin(*b)),
            _ => None,
        }
    }

    fn var_type(&self, name: &str) -> Option<ScalarType> {
        self.binding(name)?.ty
    }

    fn var_range(&self, name: &str) -> Range {
        let Some(b) = self.binding(name) else {
            return Range::FULL;
        };
        match &b.subject {
            Some(s) => b.range.meet(self.facts.range(s, false)),
            None => b.range,
        }
    }

    fn builtin_range(&self, b: Builtin) -> Range {
        builtin_base(b, ANY_WORKGROUP).meet(self.facts.range(&Subject::Builtin(b), false))
    }

    fn buffer(&self, name: &str) -> Option<(ElemType, Option<u32>)> {
        let d = self.program.buffer(name)?;
        let count = if d.access.is_host() {
            self.lens.get(name).and_then(|n| u32::try_from(*n).ok())
        } else {
            d.count
        };
        Some((d.elem, count))
    }

    fn below_len(&self, s: &Subject, buffer: &str) -> bool {
        self.facts.below_len(s, buffer, false)
    }
}

impl Walker<'_> {
    fn binding(&self, name: &str) -> Option<&Binding> {
        self.env.iter().rev().find_map(|scope| scope.get(name))
    }

    fn binding_mut(&mut self, name: &str) -> Option<&mut Binding> {
        self.env
            .iter_mut()
            .rev()
            .find_map(|scope| scope.get_mut(name))
    }

    fn lookup(&self, name: &str) -> Index {
        self.binding(name).map_or(Index::Varying, |b| b.index)
    }

    /// The alternatives of variable `name`: its own, or its form when that is known.
    pub(super) fn lookup_alts(&self, name: &str) -> Option<AltSet> {
        let b = self.binding(name)?;
        if let Some(a) = &b.alts {
            return Some(a.clone());
        }
        b.index.known_parts().map(|p| AltSet {
            alts: vec![Alt {
                value: Piece::Value(Lin {
                    parts: p,
                    len: None,
                }),
                when: Vec::new(),
            }],
            node: None,
        })
    }

    /// The alternatives of `let name = value` (statement `node`) when the exact walk finds
    /// some and the form alone is not known.
    fn let_alts(&self, name: &str, value: &Expr, v: Index, node: &NodeId) -> Option<AltSet> {
        (self.exact && !self.assigned.contains_key(name) && v.known_parts().is_none())
            .then(|| self.alts(value))
            .flatten()
            .map(|mut a| {
                if a.is_rich() && a.node.is_none() {
                    a.node = Some(node.clone());
                }
                a
            })
    }

    /// The alternatives of an access's index `e` (statement `node`) when its form is unknown.
    fn access_alts(&self, e: &Expr, index: &Index, node: &NodeId) -> Option<AltSet> {
        if !self.exact || index.known_parts().is_some() {
            return None;
        }
        self.alts(e).map(|mut a| {
            if a.node.is_none() {
                a.node = Some(node.clone());
            }
            a
        })
    }

    /// Binds `let name = value` (statement `node`).
    fn bind(&mut self, name: &str, value: &Expr, node: &NodeId) {
        let v = self.eval(value);
        let alts = self.let_alts(name, value, v, node);
        let assigned = self.assigned.contains_key(name);
        // An assigned variable may hold any of its values: keep it only when uniform.
        let index = if assigned && !v.is_uniform() {
            Index::Varying
        } else if assigned {
            Index::uniform(None)
        } else {
            v
        };
        let ty = crate::ir::expr_type(self.program, value, &|n| self.var_type(n));
        let u32_stable = !assigned && ty == Some(ScalarType::U32);
        let range = if u32_stable {
            range_of(value, self).unwrap_or(Range::FULL)
        } else {
            Range::FULL
        };
        let subject = u32_stable.then(|| match value {
            Expr::Var(_) | Expr::Builtin(_) => self.subject(value),
            _ => None,
        });
        let subject = subject.map(|s| s.unwrap_or_else(|| Subject::Reg(node.to_string())));
        let b = Binding {
            index,
            alts,
            ty,
            range,
            subject,
        };
        if let Some(scope) = self.env.last_mut() {
            scope.insert(name.to_string(), b);
        }
    }

    /// Adds the facts that hold when `cond` is `truth` to the innermost scope.
    fn assume(&mut self, cond: &Expr, truth: bool) {
        for f in implied(cond, truth, self) {
            self.facts.add(f, false);
        }
    }

    /// Walks one branch of an `if` on `cond`, taken when it is `truth`.
    fn branch(&mut self, cond: &Expr, truth: bool, list: &[Stmt]) {
        self.facts.push();
        self.assume(cond, truth);
        self.list(list);
        self.facts.pop();
    }

    /// The operand a `select`, `min` or `max` takes on every path reaching here, when the
    /// path facts decide it (see [`decide`]): the other one is dead.
    pub(super) fn chosen<'e>(&self, e: &'e Expr) -> Option<&'e Expr> {
        match e {
            Expr::Select(c, a, b) => decide(c, self).map(|t| if t { &**a } else { &**b }),
            Expr::Binary(op @ (BinOp::Min | BinOp::Max), a, b) => {
                let le = Expr::Binary(BinOp::Le, a.clone(), b.clone());
                let min = *op == BinOp::Min;
                decide(&le, self).map(|le| if le == min { &**a } else { &**b })
            }
            _ => None,
        }
    }

    fn list(&mut self, list: &[Stmt]) {
        self.env.push(HashMap::new());
        self.facts.push();
        for s in list {
            self.stmt(s);
        }
        self.facts.pop();
        self.env.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { name, value } => {
                self.scan(&s.id, value);
                self.bind(name, value, &s.id);
            }
            StmtKind::Assign { name, value } => {
                self.scan(&s.id, value);
                let v = self.eval(value);
                // A uniform reassignment keeps the variable uniform; otherwise it varies.
                if !v.is_uniform() {
                    if let Some(slot) = self.binding_mut(name) {
                        slot.index = Index::Varying;
                    }
                }
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                self.scan(&s.id, index);
                self.scan(&s.id, value);
                let i = self.eval(index);
                let alts = self.access_alts(index, &i, &s.id);
                self.out.push(Access {
                    node: s.id.clone(),
                    buffer: buffer.clone(),
                    write: true,
                    index: i,
                    alts,
                });
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                self.scan(&s.id, cond);
                self.branch(cond, true, then);
                self.branch(cond, false, otherwise);
                // A branch that always returns proves the other one's condition for the rest
                // of this list (as the emitter's bounds proofs read it).
                match (always_returns(then), always_returns(otherwise)) {
                    (true, false) => self.assume(cond, false),
                    (false, true) => self.assume(cond, true),
                    _ => {}
                }
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                self.scan(&s.id, from);
                self.scan(&s.id, to);
                let uniform = self.eval(from).is_uniform() && self.eval(to).is_uniform();
                self.env.push(HashMap::new());
                self.facts.push();
                let index = if uniform {
                    Index::uniform(None)
                } else {
                    Index::Varying
                };
                let b = self.counter(var, from, to, &s.id, index);
                if let Some(scope) = self.env.last_mut() {
                    scope.insert(var.clone(), b);
                }
                self.list(body);
                self.facts.pop();
                self.env.pop();
            }
            StmtKind::Block(b) => self.list(b),
            StmtKind::Sync(op) => {
                // The last-arriver flag differs between workgroups.
                if let (_, Some(name)) = op.vars() {
                    if let Some(slot) = self.binding_mut(name) {
                        slot.index = Index::Varying;
                        slot.range = Range::FULL;
                        slot.subject = None;
                    }
                }
            }
            StmtKind::Barrier(_) | StmtKind::Return => {}
        }
    }

    /// The binding of loop counter `var` running over `[from, to)` (statement `node`): in
    /// `[range(from).lo, range(to).hi - 1]`, and below `len(B)` when `to` is `len(B)`.
    fn counter(
        &mut self,
        var: &str,
        from: &Expr,
        to: &Expr,
        node: &NodeId,
        index: Index,
    ) -> Binding {
        let stable = !self.assigned.contains_key(var);
        let subject = stable.then(|| Subject::Reg(format!("{node}:{var}")));
        let range = match (range_of(from, self), range_of(to, self)) {
            (Some(a), Some(b)) if stable => Range::new(a.lo, b.hi.saturating_sub(1)),
            _ => Range::FULL,
        };
        if let (Some(s), Expr::Len(buf)) = (&subject, to) {
            if matches!(self.buffer(buf), Some((_, None))) {
                self.facts.add(
                    crate::analysis::ranges::Fact::BelowLen(s.clone(), buf.clone()),
                    false,
                );
            }
        }
        Binding {
            index,
            alts: None,
            ty: Some(ScalarType::U32),
            range,
            subject,
        }
    }

    /// Records the loads and atomics inside `e`.
    fn scan(&mut self, node: &str, e: &Expr) {
        let mut found = Vec::new();
        e.visit(&mut |x| match x {
            Expr::Load { buffer, index } => found.push((buffer.clone(), (**index).clone(), false)),
            Expr::Atomic { buffer, index, .. } => {
                found.push((buffer.clone(), (**index).clone(), true))
            }
            _ => {}
        });
        for (buffer, index, write) in found {
            let i = self.eval(&index);
            let node = NodeId::from(node);
            let alts = self.access_alts(&index, &i, &node);
            self.out.push(Access {
                node,
                buffer,
                write,
                index: i,
                alts,
            });
        }
    }

    pub(super) fn eval(&self, e: &Expr) -> Index {
        if let Some(chosen) = self.chosen(e) {
            return self.eval(chosen);
        }
        match e {
            Expr::Lit(l) => Index::uniform(lit_int(l)),
            Expr::Var(v) => self.lookup(v),
            Expr::Builtin(b) => match b {
                Builtin::GlobalId(a) => Index::id(a.index()),
                Builtin::LocalId(a) => Index::id(3 + a.index()),
                Builtin::Lane => Index::id(6),
                Builtin::WorkgroupId(a) => Index::wgid_axis(a.index()),
                Builtin::NumWorkgroups(_) => Index::uniform(None),
                Builtin::SubgroupSize => Index::uniform(Some(32)),
            },
            Expr::Len(_) => Index::uniform(None),
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.eval(a), self.eval(b));
                match op {
                    BinOp::Add => x.add(y, 1),
                    BinOp::Sub => x.add(y, -1),
                    BinOp::Mul => match (x.constant(), y.constant()) {
                        (Some(k), _) => y.scale(k),
                        (_, Some(k)) => x.scale(k),
                        _ if x.is_uniform() => y.scale_unknown(),
                        _ if y.is_uniform() => x.scale_unknown(),
                        _ => Index::Varying,
                    },
                    BinOp::Shl => match y.constant() {
                        Some(k) if (0..32).contains(&k) => x.scale(1i64 << k),
                        _ if y.is_uniform() => x.scale_unknown(),
                        _ => Index::Varying,
                    },
                    BinOp::Rem if !x.is_uniform() => match y.constant() {
                        Some(k) if k > 0 => {
                            // Non-negative without wrapping: the remainder is in [0, k) whatever
                            // the signedness; otherwise a signed one may be negative.
                            let nonneg = x
                                .value_range()
                                .is_some_and(|(lo, hi)| lo >= 0 && hi <= i128::from(i32::MAX));
                            Index::bounded_term(if nonneg { 0 } else { 1 - k }, k - 1)
                        }
                        _ => Index::Varying,
                    },
                    BinOp::And if !(x.is_uniform() && y.is_uniform()) => {
                        let mask = y.constant().or(x.constant());
                        match mask {
                            Some(m) if (0..=i64::from(i32::MAX)).contains(&m) => {
                                Index::bounded_term(0, m)
                            }
                            _ => Index::Varying,
                        }
                    }
                    _ if x.is_uniform() && y.is_uniform() => {
                        let c = x
                            .constant()
                            .zip(y.constant())
                            .and_then(|(p, q)| fold(*op, p, q));
                        Index::uniform(c)
                    }
                    _ => Index::Varying,
                }
            }
            Expr::Cast(t, a) | Expr::Bitcast(t, a) => {
                let x = self.eval(a);
                // Truncating or reinterpreting to 32 bits keeps the value modulo 2^32; a float
                // or a widening does not (rounding, sign or zero extension of a wrapped value).
                if !self.exact || matches!(t, ScalarType::U32 | ScalarType::I32) {
                    x
                } else if x.is_uniform() {
                    Index::uniform(None)
                } else {
                    Index::Varying
                }
            }
            Expr::Unary(op, a) => {
                let x = self.eval(a);
                match op {
                    UnOp::Neg => x.scale(-1),
                    _ if x.is_uniform() => Index::uniform(None),
                    _ => Index::Varying,
                }
            }
            Expr::Select(c, a, b) => {
                let (c, a, b) = (self.eval(c), self.eval(a), self.eval(b));
                if c.is_uniform() && a == b {
                    a
                } else if c.is_uniform() && a.is_uniform() && b.is_uniform() {
                    Index::uniform(None)
                } else {
                    Index::Varying
                }
            }
            Expr::Fma(a, b, c) => {
                let prod = Expr::Binary(BinOp::Mul, a.clone(), b.clone());
                self.eval(&prod).add(self.eval(c), 1)
            }
            Expr::SubgroupReduce(..) => Index::uniform(None),
            Expr::Ballot(_) => Index::uniform(None),
            // Every thread reading the same element gets the same value.
            Expr::Load { index, .. } if self.eval(index).is_uniform() => Index::uniform(None),
            Expr::Load { .. } | Expr::Atomic { .. } | Expr::Shuffle { .. } | Expr::Clock => {
                Index::Varying
            }
        }
    }
}

fn lit_int(l: &Literal) -> Option<i64> {
    match l {
        Literal::Int(v) => i64::try_from(*v).ok(),
        Literal::Typed(s) => match s {
            Scalar::U32(v) => Some(i64::from(*v)),
            Scalar::I32(v) => Some(i64::from(*v)),
            Scalar::U64(v) => i64::try_from(*v).ok(),
            Scalar::I64(v) => Some(*v),
            _ => None,
        },
        Literal::Float(_) => None,
    }
}

fn fold(op: BinOp, a: i64, b: i64) -> Option<i64> {
    match op {
        BinOp::Div if b != 0 => Some(a / b),
        BinOp::Rem if b != 0 => Some(a % b),
        BinOp::Min => Some(a.min(b)),
        BinOp::Max => Some(a.max(b)),
        BinOp::And => Some(a & b),
        BinOp::Or => Some(a | b),
        BinOp::Xor => Some(a ^ b),
        BinOp::Shr if (0..63).contains(&b) => Some(a >> b),
        _ => None,
    }
}
