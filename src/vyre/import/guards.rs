//! The guards the export writes (see `crate::vyre::export`), recognised on the way back so
//! that `import(export(p))` is `p` again rather than `p` wrapped in both sides' semantics.
//!
//! Each shape here is folded into the plain construct only because its vyre semantics are
//! exactly the plain construct's in the format: the guard tests the very condition under
//! which the format's construct differs from vyre's, and gives the format's result there.
//! Operands a shape evaluates twice must be free of atomics and subgroup operations (their
//! second evaluation is not the first's).

use vyre_foundation::ir::{BinOp as VBin, DataType, Expr as VExpr, UnOp as VUn};

use super::expr::{any_node, has_atomic, has_special, moves};
use super::*;

/// True when `a` and `b` are the same vyre expression, node for node (`f32` literals by
/// their bits). Kinds a guard never holds (calls, opaque nodes, atomics) are never the same.
pub(super) fn same(a: &VExpr, b: &VExpr) -> bool {
    use VExpr as E;
    match (a, b) {
        (E::LitU32(x), E::LitU32(y)) => x == y,
        (E::LitI32(x), E::LitI32(y)) => x == y,
        (E::LitF32(x), E::LitF32(y)) => x.to_bits() == y.to_bits(),
        (E::LitBool(x), E::LitBool(y)) => x == y,
        (E::Var(x), E::Var(y)) => x == y,
        (E::BufLen { buffer: x }, E::BufLen { buffer: y }) => x == y,
        (E::InvocationId { axis: x }, E::InvocationId { axis: y })
        | (E::WorkgroupId { axis: x }, E::WorkgroupId { axis: y })
        | (E::LocalId { axis: x }, E::LocalId { axis: y }) => x == y,
        (
            E::Load {
                buffer: x,
                index: i,
            },
            E::Load {
                buffer: y,
                index: j,
            },
        ) => x == y && same(i, j),
        (
            E::BinOp {
                op: o,
                left: l,
                right: r,
            },
            E::BinOp {
                op: p,
                left: m,
                right: s,
            },
        ) => o == p && same(l, m) && same(r, s),
        (E::UnOp { op: o, operand: x }, E::UnOp { op: p, operand: y }) => o == p && same(x, y),
        (
            E::Select {
                cond: c,
                true_val: t,
                false_val: f,
            },
            E::Select {
                cond: d,
                true_val: u,
                false_val: g,
            },
        ) => same(c, d) && same(t, u) && same(f, g),
        (
            E::Cast {
                target: s,
                value: x,
            },
            E::Cast {
                target: t,
                value: y,
            },
        ) => s == t && same(x, y),
        (E::Fma { a, b, c }, E::Fma { a: x, b: y, c: z }) => same(a, x) && same(b, y) && same(c, z),
        _ => false,
    }
}

/// The operands of `op(l, r)`.
pub(super) fn binop(e: &VExpr, op: VBin) -> Option<(&VExpr, &VExpr)> {
    match e {
        VExpr::BinOp { op: o, left, right } if *o == op => Some((left, right)),
        _ => None,
    }
}

/// The zero of a value type, as the export writes it.
fn is_zero(e: &VExpr, t: ScalarType) -> bool {
    match (e, t) {
        (VExpr::LitU32(0), ScalarType::U32) | (VExpr::LitI32(0), ScalarType::I32) => true,
        (VExpr::LitBool(false), ScalarType::Bool) => true,
        (VExpr::LitF32(x), ScalarType::F32) => x.to_bits() == 0,
        _ => false,
    }
}

/// vyre's data type of a value type (32-bit and `bool` only).
fn data_type(t: ScalarType) -> Option<DataType> {
    Some(match t {
        ScalarType::Bool => DataType::Bool,
        ScalarType::U32 => DataType::U32,
        ScalarType::I32 => DataType::I32,
        ScalarType::F32 => DataType::F32,
        _ => return None,
    })
}

/// One of the export's guarded forms of an expression.
pub(super) enum Folded<'a> {
    /// `select(i < len(b), load(b, i), 0)` (a workgroup one also clamps its index): the
    /// format's load `b[i]`, which gives 0 out of range.
    Load { buffer: &'a str, index: &'a VExpr },
    /// `select(d == 0, 0, a / d)` on `u32`: the format's `a / d`, which gives 0 for `d == 0`.
    Div { a: &'a VExpr, d: &'a VExpr },
    /// `select(y < 32, x OP y, 0)` on `u32`: the format's shift, which gives 0 for an amount
    /// of 32 or more.
    Shift {
        op: BinOp,
        x: &'a VExpr,
        y: &'a VExpr,
    },
}

impl Cx {
    /// Our buffer named by vyre name `b`.
    fn decl(&self, b: &str) -> Option<&BufferDecl> {
        self.scratch.buffer(&self.buffer_name(b))
    }

    /// `c` as `i < len(b)` (host buffer `b`) or `i < count` (workgroup buffer `b` of that
    /// count): the bound the export writes for `b`.
    fn below<'a>(&self, c: &'a VExpr, b: &str) -> Option<&'a VExpr> {
        let (i, len) = binop(c, VBin::Lt)?;
        self.is_len(len, b).then_some(i)
    }

    /// True when `len` is the length the export writes for vyre buffer `b`.
    pub(super) fn is_len(&self, len: &VExpr, b: &str) -> bool {
        let Some(d) = self.decl(b) else {
            return false;
        };
        match (len, d.count) {
            (VExpr::BufLen { buffer }, None) => buffer.as_str() == b,
            (VExpr::LitU32(n), Some(c)) => *n == c,
            _ => false,
        }
    }

    /// The export's guarded form `select(c, t, f)`, if it is one.
    pub(super) fn folded<'a>(
        &self,
        c: &'a VExpr,
        t: &'a VExpr,
        f: &'a VExpr,
    ) -> Option<Folded<'a>> {
        // A bounds-checked load, maybe widened from a narrow element type.
        let (load, widened) = match t {
            VExpr::Cast { target, value } => (&**value, Some(target)),
            other => (other, None),
        };
        if let VExpr::Load { buffer, index } = load {
            let b = buffer.as_str();
            let d = self.decl(b)?;
            let ty = d.elem.value_type();
            let widen_ok = match widened {
                Some(target) => d.elem.is_narrow() && data_type(ty).as_ref() == Some(target),
                None => !d.elem.is_narrow(),
            };
            let i = self.below(c, b)?;
            let at_ok = if d.access == Access::Workgroup {
                // The export clamps a workgroup index too: `select(i < count, i, 0)`.
                matches!(&**index, VExpr::Select { cond, true_val, false_val }
                    if same(cond, c) && same(true_val, i) && matches!(**false_val, VExpr::LitU32(0)))
            } else {
                same(index, i)
            };
            return (widen_ok && at_ok && is_zero(f, ty) && !has_special(i)).then_some(
                Folded::Load {
                    buffer: b,
                    index: i,
                },
            );
        }
        if let Some((d, zero)) = binop(c, VBin::Eq) {
            let (a, d2) = binop(f, VBin::Div)?;
            let ok = matches!(zero, VExpr::LitU32(0))
                && matches!(t, VExpr::LitU32(0))
                && same(d, d2)
                && !has_special(d);
            return ok.then_some(Folded::Div { a, d });
        }
        let (y, n) = binop(c, VBin::Lt)?;
        let (op, x, y2) = match t {
            VExpr::BinOp {
                op: VBin::Shl,
                left,
                right,
            } => (BinOp::Shl, &**left, &**right),
            VExpr::BinOp {
                op: VBin::Shr,
                left,
                right,
            } => (BinOp::Shr, &**left, &**right),
            _ => return None,
        };
        let ok = matches!(n, VExpr::LitU32(32))
            && matches!(f, VExpr::LitU32(0))
            && same(y, y2)
            && !has_special(y);
        ok.then_some(Folded::Shift { op, x, y })
    }

    /// Our expression for a folded guard (`None` with an error when a part is refused). A
    /// division or shift folds only on `u32`; on another type it is what the import writes
    /// without the fold.
    pub(super) fn unfold(&mut self, f: Folded<'_>, vp: &str, sid: &str) -> Option<Expr> {
        let lit = |v: u32| Expr::Lit(Literal::Typed(Scalar::U32(v)));
        let bin = |op, a, b| Expr::Binary(op, Box::new(a), Box::new(b));
        Some(match f {
            Folded::Load { buffer, index } => {
                let index = self.expr(index, &format!("{vp}.cond.left"), sid)?;
                Expr::Load {
                    buffer: self.buffer_name(buffer),
                    index: Box::new(index),
                }
            }
            Folded::Div { a, d } => {
                let a = self.expr(a, &format!("{vp}.false_val.left"), sid)?;
                let d = self.expr(d, &format!("{vp}.cond.left"), sid)?;
                if self.type_of(&a) == Some(ScalarType::U32) {
                    bin(BinOp::Div, a, d)
                } else {
                    let q = self.binop(&VBin::Div, a, d.clone(), vp)?;
                    Expr::Select(
                        Box::new(bin(BinOp::Eq, d, lit(0))),
                        Box::new(lit(0)),
                        Box::new(q),
                    )
                }
            }
            Folded::Shift { op, x, y } => {
                let x = self.expr(x, &format!("{vp}.true_val.left"), sid)?;
                let y = self.expr(y, &format!("{vp}.cond.left"), sid)?;
                if self.type_of(&x) == Some(ScalarType::U32) {
                    bin(op, x, y)
                } else {
                    let vop = if op == BinOp::Shl {
                        VBin::Shl
                    } else {
                        VBin::Shr
                    };
                    let s = self.binop(&vop, x, y.clone(), vp)?;
                    Expr::Select(
                        Box::new(bin(BinOp::Lt, y, lit(32))),
                        Box::new(s),
                        Box::new(lit(0)),
                    )
                }
            }
        })
    }
}

/// `!c`: the condition of the export's early-return wrapper `if !c { rest }`.
pub(super) fn negated(e: &VExpr) -> Option<&VExpr> {
    match e {
        VExpr::UnOp {
            op: VUn::LogicalNot,
            operand,
        } => Some(operand),
        _ => None,
    }
}

/// The export's guarded atomic: `if len(b) > i { x = atomic(b, i, ..) }` (with `else { x = 0
/// }` when `zero_else`): the variable and the atomic. The format's atomic out of range does
/// nothing and gives 0, which is what the guard and the `0` give.
pub(super) fn guarded_atomic<'a>(
    cx: &Cx,
    n: &'a VNode,
    zero_else: bool,
) -> Option<(&'a str, &'a VExpr)> {
    let VNode::If {
        cond,
        then,
        otherwise,
    } = n
    else {
        return None;
    };
    let (len, i) = binop(cond, VBin::Gt)?;
    let [VNode::Assign { name, value }] = then.as_slice() else {
        return None;
    };
    let else_ok = match otherwise.as_slice() {
        [] => !zero_else,
        [VNode::Assign { name: n2, value: z }] => {
            zero_else && n2 == name && matches!(z, VExpr::LitU32(0))
        }
        _ => false,
    };
    let VExpr::Atomic {
        buffer,
        index,
        expected,
        value: w,
        ..
    } = value
    else {
        return None;
    };
    let ok = else_ok
        && cx.is_len(len, buffer.as_str())
        && same(i, index)
        && !has_special(i)
        && !has_special(w)
        && !expected.as_deref().is_some_and(has_special);
    ok.then_some((name.as_str(), value))
}

/// The export's guarded store `if len(b) > i { store(b, i, v) }`: the store's parts. The
/// format's store out of range does nothing, which is what the guard gives.
pub(super) fn guarded_store<'a>(
    cx: &Cx,
    cond: &'a VExpr,
    then: &'a [VNode],
    otherwise: &'a [VNode],
) -> Option<(&'a str, &'a VExpr, &'a VExpr)> {
    let (len, i) = binop(cond, VBin::Gt)?;
    let [VNode::Store {
        buffer,
        index,
        value,
    }] = then
    else {
        return None;
    };
    // The index runs twice (guard and store), the value in fewer lanes than ours: neither
    // may hold an atomic or a collective operation (the lane id is a plain value).
    let ok = otherwise.is_empty()
        && cx.is_len(len, buffer.as_str())
        && same(i, index)
        && !moves(i)
        && !moves(value);
    ok.then_some((buffer.as_str(), index, value))
}

/// The export's guarded store of a bound value, `let vs_value_<node> = v; if len(b) > i {
/// store(b, i, vs_value_<node>) }` (`let_node` and `guard`): the store's buffer and index.
/// The export binds a value with a collective subgroup operation (or an atomic) before the
/// guard because the format evaluates a store's value in every lane; `store(b, i, v)` in the
/// format does just that. Folded only for a value without atomics (so that evaluating it
/// after the index, as the format's store does, changes nothing; the index has neither
/// atomics nor collective operations) and a name used by that store alone, never assigned.
pub(super) fn bound_store<'a>(
    cx: &Cx,
    let_node: &'a VNode,
    guard: &'a VNode,
) -> Option<(&'a str, &'a VExpr, &'a VExpr)> {
    let VNode::Let { name, value: v } = let_node else {
        return None;
    };
    let VNode::If {
        cond,
        then,
        otherwise,
    } = guard
    else {
        return None;
    };
    let (b, i, stored) = guarded_store(cx, cond, then, otherwise)?;
    let n = name.as_str();
    let ok = n.starts_with("vs_value_")
        && matches!(stored, VExpr::Var(x) if x.as_str() == n)
        && cx.var_uses.get(n) == Some(&1)
        && !cx.assigned.contains(n)
        && !has_atomic(v);
    ok.then_some((b, i, v))
}

/// How often each variable is read in `nodes` (declarations and assignments aside).
pub(super) fn var_uses(nodes: &[VNode], out: &mut HashMap<String, usize>) {
    let mut count = |e: &VExpr| {
        any_node(e, &mut |x| {
            if let VExpr::Var(n) = x {
                *out.entry(n.as_str().to_string()).or_insert(0) += 1;
            }
            false
        });
    };
    let mut nested: Vec<&[VNode]> = Vec::new();
    for n in nodes {
        match n {
            VNode::Let { value, .. } | VNode::Assign { value, .. } => count(value),
            VNode::Store { index, value, .. } => {
                count(index);
                count(value);
            }
            VNode::If {
                cond,
                then,
                otherwise,
            } => {
                count(cond);
                nested.push(then);
                nested.push(otherwise);
            }
            VNode::Loop { from, to, body, .. } => {
                count(from);
                count(to);
                nested.push(body);
            }
            VNode::Block(body) => nested.push(body),
            VNode::Region { body, .. } => nested.push(body),
            _ => {}
        }
    }
    for list in nested {
        var_uses(list, out);
    }
}
