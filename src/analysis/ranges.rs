//! Value ranges of `u32` expressions and the facts that conditions imply.
//!
//! [`range_of`] gives an inclusive interval `[lo, hi]` that contains every value a `u32`
//! expression can take, from the ranges of its leaves: literals, builtins (`lid.a <
//! workgroup_size.a`, `lane < 32`), `len` of a workgroup buffer (its `count`), narrow loads
//! (`u8` < 256), and variables (the range proven when they were bound, narrowed by the facts
//! in scope, both supplied by a [`RangeEnv`]). Interval arithmetic follows the spec's
//! semantics: an operation whose result could wrap gives the full range.
//!
//! [`implied`] turns a condition into facts about its *subjects* (unassigned `u32`
//! variables, named by their register, and builtin ids): `l < C` gives `l` in `[0, C-1]`,
//! `l == 0` gives `[0, 0]`, `i < len(B)` additionally gives the symbolic fact `i < len(B)`;
//! conjunctions (and negated disjunctions) give the facts of both sides. The other side of
//! a comparison may be any expression: its range bounds the subject (`l < s` with `s` in
//! `[0, 63]` gives `l <= 62`). Only unsigned comparisons (`u32` operands) give facts.

use crate::ir::{BinOp, Builtin, ElemType, Expr, Literal, Scalar, ScalarType, UnOp};

const MAX: u64 = u32::MAX as u64;

/// An inclusive interval of `u32` values (`lo <= hi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    /// Smallest possible value.
    pub lo: u64,
    /// Largest possible value.
    pub hi: u64,
}

impl Range {
    /// Every `u32`.
    pub const FULL: Range = Range { lo: 0, hi: MAX };

    /// `[lo, hi]` (clamped to `u32`; an empty interval becomes `[lo, lo]`, which only
    /// arises in unreachable code where any answer is sound).
    pub fn new(lo: u64, hi: u64) -> Range {
        let lo = lo.min(MAX);
        Range {
            lo,
            hi: hi.clamp(lo, MAX),
        }
    }

    /// The single value `v`.
    pub fn point(v: u64) -> Range {
        Range::new(v, v)
    }

    /// Both constraints at once.
    pub fn meet(self, o: Range) -> Range {
        Range::new(self.lo.max(o.lo), self.hi.min(o.hi))
    }

    /// Either value.
    pub fn join(self, o: Range) -> Range {
        Range::new(self.lo.min(o.lo), self.hi.max(o.hi))
    }

    /// The constant, when the range holds one value.
    pub fn single(self) -> Option<u64> {
        (self.lo == self.hi).then_some(self.lo)
    }
}

/// What a fact is about: a value that cannot change while the fact is in scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An unassigned variable, named by its (never reused) PTX register, so that facts
    /// cannot leak onto another variable of the same name.
    Reg(String),
    /// A builtin id (constant for the whole invocation).
    Builtin(Builtin),
}

/// A fact about a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fact {
    /// The subject lies in the range.
    In(Subject, Range),
    /// The subject is below the run-time length of the named host buffer.
    BelowLen(Subject, String),
}

/// What the analysis needs to know about names in scope.
pub trait RangeEnv {
    /// The subject an expression denotes, if it is one (an unassigned `u32` variable or a
    /// `u32` builtin).
    fn subject(&self, e: &Expr) -> Option<Subject>;
    /// The type of variable `name`.
    fn var_type(&self, name: &str) -> Option<ScalarType>;
    /// The range of `u32` variable `name` (its binding range narrowed by the facts in scope).
    fn var_range(&self, name: &str) -> Range;
    /// The range of a builtin (narrowed by the facts in scope).
    fn builtin_range(&self, b: Builtin) -> Range;
    /// A buffer's element type and, for workgroup buffers, its `count` (or a host buffer's
    /// length, where the caller knows it for every run).
    fn buffer(&self, name: &str) -> Option<(ElemType, Option<u32>)>;
    /// True when the facts in scope say `s < len(buffer)` (see [`Fact::BelowLen`]).
    fn below_len(&self, _s: &Subject, _buffer: &str) -> bool {
        false
    }
}

/// The static range of a builtin for a kernel emitted for workgroup size `wg`.
pub fn builtin_base(b: Builtin, wg: [u32; 3]) -> Range {
    match b {
        Builtin::LocalId(a) => Range::new(0, wg[a.index()].max(1) as u64 - 1),
        Builtin::Lane => Range::new(0, 31),
        Builtin::SubgroupSize => Range::point(32),
        // CUDA grids have at least one block per axis.
        Builtin::NumWorkgroups(_) => Range::new(1, MAX),
        Builtin::WorkgroupId(_) | Builtin::GlobalId(_) => Range::FULL,
    }
}

/// The range of `e` when it is a `u32` expression; `None` for other types.
pub fn range_of(e: &Expr, env: &dyn RangeEnv) -> Option<Range> {
    let r = |x: &Expr| range_of(x, env);
    Some(match e {
        Expr::Lit(Literal::Typed(Scalar::U32(v))) => Range::point(*v as u64),
        Expr::Lit(Literal::Int(v)) if *v >= 0 && *v <= MAX as i128 => Range::point(*v as u64),
        Expr::Lit(_) => return None,
        Expr::Var(n) => {
            if env.var_type(n)? != ScalarType::U32 {
                return None;
            }
            env.var_range(n)
        }
        Expr::Builtin(b) => env.builtin_range(*b),
        Expr::Clock => return None,
        Expr::Len(b) => match env.buffer(b)? {
            (_, Some(count)) => Range::point(count as u64),
            (_, None) => Range::FULL,
        },
        Expr::Load { buffer, .. } | Expr::Atomic { buffer, .. } => {
            let (elem, _) = env.buffer(buffer)?;
            if elem.value_type() != ScalarType::U32 {
                return None;
            }
            match (e, elem) {
                (Expr::Load { .. }, ElemType::U8) => Range::new(0, u8::MAX as u64),
                (Expr::Load { .. }, ElemType::U16) => Range::new(0, u16::MAX as u64),
                _ => Range::FULL,
            }
        }
        Expr::Binary(op, a, b) => binary(*op, r(a)?, r(b))?,
        Expr::Unary(op, a) => {
            let x = r(a)?;
            match op {
                UnOp::Popcount | UnOp::Clz | UnOp::Ctz => Range::new(0, 32),
                UnOp::Abs => x,
                UnOp::Sign => Range::new(x.lo.min(1), x.hi.min(1)),
                _ => Range::FULL,
            }
        }
        Expr::Select(_, a, b) => r(a)?.join(r(b)?),
        Expr::Cast(ScalarType::U32, x) => match r(x) {
            Some(v) => v,
            None if is_bool(x, env) => Range::new(0, 1),
            None => Range::FULL,
        },
        Expr::Cast(..) | Expr::Bitcast(..) => {
            let t = match e {
                Expr::Cast(t, _) | Expr::Bitcast(t, _) => *t,
                _ => return None,
            };
            if t != ScalarType::U32 {
                return None;
            }
            Range::FULL
        }
        Expr::Fma(a, _, _) => {
            r(a)?;
            Range::FULL
        }
        Expr::Shuffle { value, .. } | Expr::SubgroupReduce(_, value) => {
            r(value)?;
            Range::FULL
        }
        Expr::Ballot(_) => Range::FULL,
    })
}

/// True for expressions that are certainly `bool` (comparisons and logical operators).
fn is_bool(e: &Expr, env: &dyn RangeEnv) -> bool {
    match e {
        Expr::Binary(op, ..) => op.yields_bool(),
        Expr::Unary(UnOp::LNot | UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite, _) => true,
        Expr::Var(n) => env.var_type(n) == Some(ScalarType::Bool),
        Expr::Lit(Literal::Typed(Scalar::Bool(_))) => true,
        _ => false,
    }
}

/// Interval arithmetic of a `u32` binary operator (`None` for comparisons, whose result is
/// `bool`); `b` is `None` when the right operand is not `u32`.
fn binary(op: BinOp, a: Range, b: Option<Range>) -> Option<Range> {
    let b = b?;
    Some(match op {
        BinOp::Add if a.hi + b.hi <= MAX => Range::new(a.lo + b.lo, a.hi + b.hi),
        BinOp::Sub if a.lo >= b.hi => Range::new(a.lo - b.hi, a.hi - b.lo),
        BinOp::Mul if a.hi.checked_mul(b.hi).is_some_and(|p| p <= MAX) => {
            Range::new(a.lo * b.lo, a.hi * b.hi)
        }
        // x / 0 = 0 and x / y <= x otherwise.
        BinOp::Div if b.lo >= 1 => Range::new(a.lo / b.hi, a.hi / b.lo),
        BinOp::Div => Range::new(0, a.hi),
        // x % 0 = 0 and x % y <= min(x, y - 1) otherwise.
        BinOp::Rem if a.hi < b.lo => a,
        BinOp::Rem => Range::new(0, a.hi.min(b.hi.saturating_sub(1))),
        BinOp::Min => Range::new(a.lo.min(b.lo), a.hi.min(b.hi)),
        BinOp::Max => Range::new(a.lo.max(b.lo), a.hi.max(b.hi)),
        BinOp::And => Range::new(0, a.hi.min(b.hi)),
        BinOp::Or | BinOp::Xor => {
            let top = a.hi.max(b.hi);
            let ones = if top == 0 {
                0
            } else {
                (1u64 << (64 - top.leading_zeros())) - 1
            };
            let lo = if op == BinOp::Or { a.lo.max(b.lo) } else { 0 };
            Range::new(lo, ones.min(MAX))
        }
        // Amounts >= 32 give 0 (docs/semantics.md).
        BinOp::Shr => {
            let hi = if b.lo >= 32 { 0 } else { a.hi >> b.lo };
            let lo = if b.hi >= 32 { 0 } else { a.lo >> b.hi };
            Range::new(lo, hi)
        }
        BinOp::Shl if b.lo >= 32 => Range::point(0),
        BinOp::Shl if b.hi < 32 && (a.hi << b.hi) <= MAX => Range::new(a.lo << b.lo, a.hi << b.hi),
        BinOp::AbsDiff => {
            let hi = a.hi.saturating_sub(b.lo).max(b.hi.saturating_sub(a.lo));
            Range::new(0, hi)
        }
        BinOp::MulHi => {
            let p = a.hi.saturating_mul(b.hi);
            Range::new(0, p >> 32)
        }
        // Monotone in both operands (sub: increasing in a, decreasing in b), clamped.
        BinOp::AddSat => Range::new((a.lo + b.lo).min(MAX), (a.hi + b.hi).min(MAX)),
        BinOp::SubSat => Range::new(a.lo.saturating_sub(b.hi), a.hi.saturating_sub(b.lo)),
        BinOp::MulSat => Range::new(
            a.lo.saturating_mul(b.lo).min(MAX),
            a.hi.saturating_mul(b.hi).min(MAX),
        ),
        _ if op.yields_bool() => return None,
        _ => Range::FULL,
    })
}

/// The facts that hold whenever `cond` evaluates to `truth`.
pub fn implied(cond: &Expr, truth: bool, env: &dyn RangeEnv) -> Vec<Fact> {
    match cond {
        Expr::Unary(UnOp::LNot, a) => implied(a, !truth, env),
        Expr::Binary(BinOp::LAnd, a, b) if truth => {
            let mut v = implied(a, true, env);
            v.extend(implied(b, true, env));
            v
        }
        Expr::Binary(BinOp::LOr, a, b) if !truth => {
            let mut v = implied(a, false, env);
            v.extend(implied(b, false, env));
            v
        }
        Expr::Binary(op, a, b) if is_order(*op) => {
            // For integers the negation of a comparison is the opposite comparison.
            let op = if truth { *op } else { negate(*op) };
            let mut v = side(a, op, b, env);
            v.extend(side(b, mirror(op), a, env));
            v
        }
        _ => Vec::new(),
    }
}

fn is_order(op: BinOp) -> bool {
    matches!(
        op,
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne
    )
}

/// `!(a OP b)` as `a OP' b` (integers: no NaN).
fn negate(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Ge,
        BinOp::Ge => BinOp::Lt,
        BinOp::Le => BinOp::Gt,
        BinOp::Gt => BinOp::Le,
        BinOp::Eq => BinOp::Ne,
        _ => BinOp::Eq,
    }
}

/// `a OP b` as `b OP' a`.
fn mirror(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::Gt => BinOp::Lt,
        BinOp::Le => BinOp::Ge,
        BinOp::Ge => BinOp::Le,
        o => o,
    }
}

/// Facts about `subject` from `subject OP other` (both `u32`).
fn side(subject: &Expr, op: BinOp, other: &Expr, env: &dyn RangeEnv) -> Vec<Fact> {
    let Some(s) = env.subject(subject) else {
        return Vec::new();
    };
    let Some(o) = range_of(other, env) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    if op == BinOp::Lt {
        if let Expr::Len(buf) = other {
            if matches!(env.buffer(buf), Some((_, None))) {
                v.push(Fact::BelowLen(s.clone(), buf.clone()));
            }
        }
    }
    let r = match op {
        // s < o <= o.hi; with o.hi == 0 the condition never holds (dead code).
        BinOp::Lt => Range::new(0, o.hi.saturating_sub(1)),
        BinOp::Le => Range::new(0, o.hi),
        BinOp::Gt => Range::new(o.lo + 1, MAX),
        BinOp::Ge => Range::new(o.lo, MAX),
        BinOp::Eq => o,
        _ => return v,
    };
    if r != Range::FULL {
        v.push(Fact::In(s, r));
    }
    v
}

/// Whether `cond` is known to be true (`Some(true)`) or false where `env`'s facts hold: a
/// comparison of two `u32` expressions whose ranges do not overlap the other way, or
/// `s < len(B)` with that fact in scope (any of `lt le gt ge eq ne`, either side), and
/// `land`/`lor`/`lnot` of such conditions. `None` when unknown; never a guess: only `u32`
/// operands (where the comparison is unsigned, as the ranges are) are decided.
pub fn decide(cond: &Expr, env: &dyn RangeEnv) -> Option<bool> {
    match cond {
        Expr::Lit(Literal::Typed(Scalar::Bool(b))) => Some(*b),
        Expr::Unary(UnOp::LNot, a) => decide(a, env).map(|t| !t),
        Expr::Binary(BinOp::LAnd, a, b) => match (decide(a, env), decide(b, env)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Expr::Binary(BinOp::LOr, a, b) => match (decide(a, env), decide(b, env)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Expr::Binary(op, a, b) => match op {
            BinOp::Lt => below(a, b, true, env),
            BinOp::Le => below(a, b, false, env),
            BinOp::Gt => below(b, a, true, env),
            BinOp::Ge => below(b, a, false, env),
            BinOp::Eq | BinOp::Ne => {
                let (x, y) = (range_of(a, env)?, range_of(b, env)?);
                let eq = if x.single().is_some() && x.single() == y.single() {
                    Some(true)
                } else if x.hi < y.lo
                    || y.hi < x.lo
                    || below(a, b, true, env) == Some(true)
                    || below(b, a, true, env) == Some(true)
                {
                    Some(false)
                } else {
                    None
                };
                eq.map(|t| t == (*op == BinOp::Eq))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether `a < b` (`strict`) or `a <= b` is known, both `u32`.
fn below(a: &Expr, b: &Expr, strict: bool, env: &dyn RangeEnv) -> Option<bool> {
    let (x, y) = (range_of(a, env)?, range_of(b, env)?);
    let known_below = |s: &Expr, l: &Expr| match (env.subject(s), l) {
        (Some(s), Expr::Len(buf)) => env.below_len(&s, buf),
        _ => false,
    };
    if known_below(a, b) {
        // a < len(B): true either way.
        return Some(true);
    }
    if known_below(b, a) {
        // b < len(B) = a: a < b and a <= b are false.
        return Some(false);
    }
    if (strict && x.hi < y.lo) || (!strict && x.hi <= y.lo) {
        Some(true)
    } else if (strict && x.lo >= y.hi) || (!strict && x.lo > y.hi) {
        Some(false)
    } else {
        None
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Axis;
    use proptest::prelude::*;
    use std::collections::HashMap;

    /// Variables with a type and a range; `tile` is a workgroup buffer of 256, `x` a host
    /// buffer, `bytes` a host `u8` buffer.
    struct Env {
        vars: HashMap<String, (ScalarType, Range)>,
        wg: [u32; 3],
    }

    impl RangeEnv for Env {
        fn subject(&self, e: &Expr) -> Option<Subject> {
            match e {
                Expr::Var(n) if self.vars.get(n)?.0 == ScalarType::U32 => {
                    Some(Subject::Reg(format!("%{n}")))
                }
                Expr::Builtin(b) if *b != Builtin::SubgroupSize => Some(Subject::Builtin(*b)),
                _ => None,
            }
        }
        fn var_type(&self, name: &str) -> Option<ScalarType> {
            self.vars.get(name).map(|v| v.0)
        }
        fn var_range(&self, name: &str) -> Range {
            self.vars.get(name).map(|v| v.1).unwrap_or(Range::FULL)
        }
        fn builtin_range(&self, b: Builtin) -> Range {
            builtin_base(b, self.wg)
        }
        fn buffer(&self, name: &str) -> Option<(ElemType, Option<u32>)> {
            match name {
                "tile" => Some((ElemType::F32, Some(256))),
                "x" => Some((ElemType::F32, None)),
                "bytes" => Some((ElemType::U8, None)),
                _ => None,
            }
        }
    }

    fn env(vars: &[(&str, ScalarType, Range)]) -> Env {
        Env {
            vars: vars
                .iter()
                .map(|(n, t, r)| (n.to_string(), (*t, *r)))
                .collect(),
            wg: [256, 1, 1],
        }
    }

    fn v(n: &str) -> Box<Expr> {
        Box::new(Expr::Var(n.into()))
    }
    fn u(x: u32) -> Box<Expr> {
        Box::new(Expr::Lit(Literal::Typed(Scalar::U32(x))))
    }
    fn bin(op: BinOp, a: Box<Expr>, b: Box<Expr>) -> Expr {
        Expr::Binary(op, a, b)
    }
    fn lid() -> Box<Expr> {
        Box::new(Expr::Builtin(Builtin::LocalId(Axis::X)))
    }

    #[test]
    fn leaves_and_arithmetic() {
        let e = env(&[
            ("l", ScalarType::U32, Range::new(0, 255)),
            ("f", ScalarType::F32, Range::FULL),
        ]);
        assert_eq!(range_of(&lid(), &e), Some(Range::new(0, 255)));
        let sum = bin(BinOp::Add, v("l"), u(128));
        assert_eq!(range_of(&sum, &e), Some(Range::new(128, 383)));
        assert_eq!(range_of(&Expr::Var("f".into()), &e), None, "not u32");
        let masked = bin(BinOp::And, Box::new(Expr::Var("g".into())), u(63));
        // `g` is unknown to the env: no type, so no range.
        assert_eq!(range_of(&masked, &e), None);
        let e2 = env(&[("g", ScalarType::U32, Range::FULL)]);
        assert_eq!(range_of(&masked, &e2), Some(Range::new(0, 63)));
        // A sum that may wrap is unknown.
        let wrap = bin(BinOp::Add, v("g"), u(1));
        assert_eq!(range_of(&wrap, &e2), Some(Range::FULL));
        // Subtraction below zero wraps.
        let sub = bin(BinOp::Sub, v("l"), u(1));
        assert_eq!(range_of(&sub, &e), Some(Range::FULL));
        let shr = bin(BinOp::Shr, u(128), u(3));
        assert_eq!(range_of(&shr, &e), Some(Range::point(16)));
        let narrow = Expr::Load {
            buffer: "bytes".into(),
            index: v("l"),
        };
        assert_eq!(range_of(&narrow, &e), Some(Range::new(0, 255)));
        assert_eq!(
            range_of(&Expr::Len("tile".into()), &e),
            Some(Range::point(256))
        );
        assert_eq!(range_of(&Expr::Len("x".into()), &e), Some(Range::FULL));
    }

    #[test]
    fn guards_imply_ranges_and_length_facts() {
        let e = env(&[
            ("l", ScalarType::U32, Range::new(0, 255)),
            ("s", ScalarType::U32, Range::point(64)),
            ("i", ScalarType::U32, Range::FULL),
            ("k", ScalarType::I32, Range::FULL),
        ]);
        let l = Subject::Reg("%l".into());
        // l < s (s = 64): l in [0, 63]; and s > l mirrored.
        let c = bin(BinOp::Lt, v("l"), v("s"));
        assert!(implied(&c, true, &e).contains(&Fact::In(l.clone(), Range::new(0, 63))));
        // The negation: l >= 64.
        assert!(implied(&c, false, &e).contains(&Fact::In(l.clone(), Range::new(64, MAX))));
        // l == 0 pins it.
        let z = bin(BinOp::Eq, v("l"), u(0));
        assert_eq!(
            implied(&z, true, &e),
            vec![Fact::In(l.clone(), Range::point(0))]
        );
        assert!(implied(&z, false, &e).is_empty(), "l != 0 gives no range");
        // i < len(x) (host buffer): the symbolic fact; spelled len(x) > i too.
        let il = bin(BinOp::Lt, v("i"), Box::new(Expr::Len("x".into())));
        // (also i <= u32::MAX - 1, from len(x) <= u32::MAX).
        assert_eq!(
            implied(&il, true, &e),
            vec![
                Fact::BelowLen(Subject::Reg("%i".into()), "x".into()),
                Fact::In(Subject::Reg("%i".into()), Range::new(0, MAX - 1))
            ]
        );
        let li = bin(BinOp::Gt, Box::new(Expr::Len("x".into())), v("i"));
        assert_eq!(implied(&li, true, &e), implied(&il, true, &e));
        // Early-return form: !(i >= len(x)).
        let ge = bin(BinOp::Ge, v("i"), Box::new(Expr::Len("x".into())));
        assert_eq!(implied(&ge, false, &e), implied(&il, true, &e));
        // Conjunction; a disjunction proves nothing when true.
        let both = bin(BinOp::LAnd, Box::new(c.clone()), Box::new(il.clone()));
        assert_eq!(
            implied(&both, true, &e).len(),
            4,
            "l < s, s > l, and two for i"
        );
        let either = bin(BinOp::LOr, Box::new(c.clone()), Box::new(il.clone()));
        assert!(implied(&either, true, &e).is_empty());
        assert_eq!(
            implied(&Expr::Unary(UnOp::LNot, Box::new(either)), true, &e).len(),
            2,
            "l >= 64 and s <= 255; i >= len(x) bounds nothing"
        );
        // Signed comparisons give nothing.
        let signed = bin(
            BinOp::Lt,
            v("k"),
            Box::new(Expr::Lit(Literal::Typed(Scalar::I32(4)))),
        );
        assert!(implied(&signed, true, &e).is_empty());
        // Builtins are subjects too.
        let b = bin(BinOp::Lt, lid(), u(32));
        assert_eq!(
            implied(&b, true, &e),
            vec![Fact::In(
                Subject::Builtin(Builtin::LocalId(Axis::X)),
                Range::new(0, 31)
            )]
        );
    }

    /// Random u32 expression trees over two variables with random ranges: every value the
    /// interpreter's operators compute for inputs drawn from the ranges lies in `range_of`.
    #[derive(Debug, Clone)]
    enum T {
        A,
        B,
        K(u32),
        Op(usize, Box<T>, Box<T>),
    }

    const OPS: [BinOp; 17] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shr,
        BinOp::Shl,
        BinOp::AbsDiff,
        BinOp::MulHi,
        BinOp::AddSat,
        BinOp::SubSat,
        BinOp::MulSat,
    ];

    fn tree() -> impl Strategy<Value = T> {
        let leaf = prop_oneof![
            Just(T::A),
            Just(T::B),
            prop_oneof![0u32..40, any::<u32>()].prop_map(T::K)
        ];
        leaf.prop_recursive(4, 24, 2, |inner| {
            (0..OPS.len(), inner.clone(), inner)
                .prop_map(|(o, a, b)| T::Op(o, Box::new(a), Box::new(b)))
        })
    }

    fn to_expr(t: &T) -> Expr {
        match t {
            T::A => Expr::Var("a".into()),
            T::B => Expr::Var("b".into()),
            T::K(k) => Expr::Lit(Literal::Typed(Scalar::U32(*k))),
            T::Op(o, x, y) => bin(OPS[*o], Box::new(to_expr(x)), Box::new(to_expr(y))),
        }
    }

    fn eval(t: &T, a: u32, b: u32) -> u64 {
        match t {
            T::A => a as u64,
            T::B => b as u64,
            T::K(k) => *k as u64,
            T::Op(o, x, y) => {
                crate::semantics::bin_scalar(OPS[*o], ScalarType::U32, eval(x, a, b), eval(y, a, b))
            }
        }
    }

    proptest! {
        #[test]
        fn ranges_contain_every_computed_value(
            t in tree(),
            (alo, ahi) in (0u32..300, 0u32..300).prop_map(|(x, y)| (x.min(y), x.max(y))),
            (blo, bhi) in prop_oneof![
                (0u32..40, 0u32..40).prop_map(|(x, y)| (x.min(y), x.max(y))),
                Just((0u32, u32::MAX)),
            ],
            pa in any::<u32>(),
            pb in any::<u32>(),
        ) {
            let e = env(&[
                ("a", ScalarType::U32, Range::new(alo as u64, ahi as u64)),
                ("b", ScalarType::U32, Range::new(blo as u64, bhi as u64)),
            ]);
            let r = range_of(&to_expr(&t), &e).expect("a u32 expression has a range");
            let a = alo + pa % (ahi - alo + 1).max(1);
            let b = if bhi == u32::MAX { pb } else { blo + pb % (bhi - blo + 1) };
            let got = eval(&t, a, b);
            prop_assert!(r.lo <= got && got <= r.hi, "{t:?} a={a} b={b}: {got} not in {r:?}");
        }
    }

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
