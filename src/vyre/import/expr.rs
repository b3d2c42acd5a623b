//! vyre expressions (`Expr`) -> ours.

use vyre_foundation::ir::{
    AtomicOp as VAtomic, BinOp as VBin, Expr as VExpr, MemoryOrdering, SubgroupReduceOp,
    UnOp as VUn,
};

use super::*;
use crate::ir::{AtomicOp, AtomicOrder, Axis, ReduceOp, UnOp};

/// True when `e` has an atomic or a subgroup operation anywhere: what [`moves`] finds, or
/// the lane id or the subgroup size.
pub(super) fn has_special(e: &VExpr) -> bool {
    moves(e)
        || any_node(e, &mut |x| {
            matches!(x, VExpr::SubgroupLocalId | VExpr::SubgroupSize)
        })
}

/// True when `e` has an atomic or a collective subgroup operation (a shuffle, reduction or
/// ballot): an expression whose evaluation may not be repeated, skipped in some lanes or
/// moved. The lane id and the subgroup size are plain values.
pub(super) fn moves(e: &VExpr) -> bool {
    any_node(e, &mut |x| {
        matches!(
            x,
            VExpr::Atomic { .. }
                | VExpr::SubgroupBallot { .. }
                | VExpr::SubgroupShuffle { .. }
                | VExpr::SubgroupReduce { .. }
        )
    })
}

/// True when `e` has an atomic anywhere.
pub(super) fn has_atomic(e: &VExpr) -> bool {
    any_node(e, &mut |x| matches!(x, VExpr::Atomic { .. }))
}

/// True when `p` holds for `e` or one of its sub-expressions (pre-order, stopping at the
/// first).
pub(super) fn any_node(e: &VExpr, p: &mut dyn FnMut(&VExpr) -> bool) -> bool {
    if p(e) {
        return true;
    }
    match e {
        VExpr::Load { index, .. } => any_node(index, p),
        VExpr::BinOp { left, right, .. } => any_node(left, p) || any_node(right, p),
        VExpr::UnOp { operand, .. } => any_node(operand, p),
        VExpr::Call { args, .. } => args.iter().any(|a| any_node(a, p)),
        VExpr::Select {
            cond,
            true_val,
            false_val,
        } => any_node(cond, p) || any_node(true_val, p) || any_node(false_val, p),
        VExpr::Cast { value, .. } => any_node(value, p),
        VExpr::Fma { a, b, c } => any_node(a, p) || any_node(b, p) || any_node(c, p),
        VExpr::Atomic {
            index,
            expected,
            value,
            ..
        } => {
            any_node(index, p)
                || expected.as_deref().is_some_and(|x| any_node(x, p))
                || any_node(value, p)
        }
        VExpr::SubgroupBallot { cond } => any_node(cond, p),
        VExpr::SubgroupShuffle { value, lane } => any_node(value, p) || any_node(lane, p),
        VExpr::SubgroupReduce { value, .. } => any_node(value, p),
        _ => false,
    }
}

/// True when evaluating `e` twice gives the same value and changes nothing (no atomic).
pub(super) fn pure(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |x| ok &= !matches!(x, Expr::Atomic { .. }));
    ok
}

fn lit(s: Scalar) -> Expr {
    Expr::Lit(Literal::Typed(s))
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

impl Cx {
    fn refuse(&mut self, vp: &str, what: &str, fix: &str) -> Option<Expr> {
        self.error(
            "VY002",
            None,
            format!("vyre {vp}: {what}; its statement is left out"),
            fix,
        );
        None
    }

    /// Converts vyre expression `e` at vyre path `vp`, inside our statement `sid`; the
    /// export's `u32` form of an `i32` operator becomes the operator (see `forms`).
    pub(super) fn expr(&mut self, e: &VExpr, vp: &str, sid: &str) -> Option<Expr> {
        let ours = self.converted(e, vp, sid)?;
        Some(self.i32_form(ours))
    }

    fn converted(&mut self, e: &VExpr, vp: &str, sid: &str) -> Option<Expr> {
        Some(match e {
            VExpr::LitU32(v) => lit(Scalar::U32(*v)),
            VExpr::LitI32(v) => lit(Scalar::I32(*v)),
            VExpr::LitF32(v) => lit(Scalar::F32(*v)),
            VExpr::LitBool(v) => lit(Scalar::Bool(*v)),
            VExpr::Var(name) => Expr::Var(self.var(name.as_str())),
            VExpr::Load { buffer, index } => {
                let index = self.expr(index, &format!("{vp}.index"), sid)?;
                let buffer = self.buffer_name(buffer.as_str());
                let (index, clamped) = self.clamped(&buffer, index, &format!("{vp}.index"))?;
                self.clamped_loads += usize::from(clamped);
                Expr::Load {
                    buffer,
                    index: Box::new(index),
                }
            }
            VExpr::BufLen { buffer } => Expr::Len(self.buffer_name(buffer.as_str())),
            VExpr::InvocationId { axis } => Expr::Builtin(Builtin::GlobalId(self.axis(*axis, vp)?)),
            VExpr::WorkgroupId { axis } => {
                Expr::Builtin(Builtin::WorkgroupId(self.axis(*axis, vp)?))
            }
            VExpr::LocalId { axis } => Expr::Builtin(Builtin::LocalId(self.axis(*axis, vp)?)),
            VExpr::BinOp { op, left, right } => {
                let l = self.expr(left, &format!("{vp}.left"), sid)?;
                let r = self.expr(right, &format!("{vp}.right"), sid)?;
                self.binop(op, l, r, vp)?
            }
            VExpr::UnOp { op, operand } => {
                let a = self.expr(operand, &format!("{vp}.operand"), sid)?;
                let Some(op) = unop(op) else {
                    return self.refuse(
                        vp,
                        &format!("unary operator {op:?} has no vyrescope equivalent"),
                        "write it with the operators docs/program-format.md lists",
                    );
                };
                Expr::Unary(op, Box::new(a))
            }
            VExpr::Select {
                cond,
                true_val,
                false_val,
            } => match self.folded(cond, true_val, false_val) {
                // One of the export's guards: the plain construct it encodes.
                Some(f) => self.unfold(f, vp, sid)?,
                None => Expr::Select(
                    Box::new(self.expr(cond, &format!("{vp}.cond"), sid)?),
                    Box::new(self.expr(true_val, &format!("{vp}.true_val"), sid)?),
                    Box::new(self.expr(false_val, &format!("{vp}.false_val"), sid)?),
                ),
            },
            VExpr::Cast { target, value } => {
                if let Some(b) = self.bitcast(target, value, vp, sid) {
                    return b;
                }
                let v = self.expr(value, &format!("{vp}.value"), sid)?;
                if self.same_type_cast(target, &v) {
                    // The export's cast of a widened narrow load or of a bitwise result
                    // (vyre types those u32): the value already has the type.
                    return Some(v);
                }
                let Some(t) = scalar_type(target) else {
                    return self.refuse(
                        vp,
                        &format!("a cast to `{target}`, which is not a vyrescope value type"),
                        "cast to bool, u32, i32, u64, i64, f32 or f64",
                    );
                };
                Expr::Cast(t, Box::new(v))
            }
            VExpr::Fma { a, b, c } => Expr::Fma(
                Box::new(self.expr(a, &format!("{vp}.a"), sid)?),
                Box::new(self.expr(b, &format!("{vp}.b"), sid)?),
                Box::new(self.expr(c, &format!("{vp}.c"), sid)?),
            ),
            VExpr::Atomic {
                op,
                buffer,
                index,
                expected,
                value,
                ordering,
            } => {
                let index = self.expr(index, &format!("{vp}.index"), sid)?;
                let value = self.expr(value, &format!("{vp}.value"), sid)?;
                let expected = match expected {
                    Some(x) => Some(Box::new(self.expr(x, &format!("{vp}.expected"), sid)?)),
                    None => None,
                };
                let Some(op) = atomic_op(op) else {
                    return self.refuse(
                        vp,
                        &format!("atomic {op:?} has no vyrescope equivalent"),
                        "use add, min, max, and, or, xor, exchange or compare-exchange",
                    );
                };
                let Some(order) = order(*ordering) else {
                    return self.refuse(
                        vp,
                        "an atomic with ordering GridSync, which is a barrier ordering",
                        "give the atomic a memory ordering (Relaxed ... SeqCst)",
                    );
                };
                let buffer = self.buffer_name(buffer.as_str());
                self.unchecked_atomic(&buffer, &index, vp, sid);
                Expr::Atomic {
                    op,
                    buffer,
                    index: Box::new(index),
                    value: Box::new(value),
                    expected,
                    order,
                }
            }
            VExpr::SubgroupBallot { cond } => {
                Expr::Ballot(Box::new(self.expr(cond, &format!("{vp}.cond"), sid)?))
            }
            VExpr::SubgroupShuffle { value, lane } => Expr::Shuffle {
                value: Box::new(self.expr(value, &format!("{vp}.value"), sid)?),
                lane: Box::new(self.expr(lane, &format!("{vp}.lane"), sid)?),
            },
            VExpr::SubgroupReduce { op, value } => {
                let v = self.expr(value, &format!("{vp}.value"), sid)?;
                let Some(op) = reduce_op(op) else {
                    return self.refuse(
                        vp,
                        &format!("subgroup reduction {op:?} has no vyrescope equivalent"),
                        "use add, mul, min, max, and, or or xor",
                    );
                };
                Expr::SubgroupReduce(op, Box::new(v))
            }
            VExpr::SubgroupLocalId => Expr::Builtin(Builtin::Lane),
            VExpr::SubgroupSize => Expr::Builtin(Builtin::SubgroupSize),
            VExpr::Opaque(x) => {
                let payload = x.wire_payload();
                let bytes: Option<[u8; 8]> = payload.as_slice().try_into().ok();
                match (x.extension_kind(), bytes) {
                    ("vyre.literal.u64", Some(b)) => lit(Scalar::U64(u64::from_le_bytes(b))),
                    ("vyre.literal.i64", Some(b)) => lit(Scalar::I64(i64::from_le_bytes(b))),
                    ("vyre.literal.f64", Some(b)) => lit(Scalar::F64(f64::from_le_bytes(b))),
                    (kind, _) => {
                        return self.refuse(
                            vp,
                            &format!(
                                "opaque extension expression `{kind}`, whose meaning vyrescope \
                                 cannot know"
                            ),
                            "lower the extension to core vyre expressions before writing the file",
                        )
                    }
                }
            }
            VExpr::Call { op_id, .. } => {
                return self.refuse(
                    vp,
                    &format!("a call of `{}` (calls must be inlined)", op_id.as_str()),
                    "inline calls in vyre (`inline_calls`) before writing the file",
                )
            }
            VExpr::BufferRef { buffer } => {
                return self.refuse(
                    vp,
                    &format!("a reference to buffer `{}` as a value", buffer.as_str()),
                    "pass buffers by name to load/store/atomics",
                )
            }
            #[allow(unreachable_patterns)]
            _ => {
                return self.refuse(
                    vp,
                    "an expression kind newer than the import",
                    "lower it to core vyre expressions before writing the file",
                )
            }
        })
    }

    fn axis(&mut self, axis: u8, vp: &str) -> Option<Axis> {
        match axis {
            0 => Some(Axis::X),
            1 => Some(Axis::Y),
            2 => Some(Axis::Z),
            _ => {
                self.refuse(
                    vp,
                    &format!("an id of axis {axis} (only 0, 1, 2 exist)"),
                    "use axis 0 (x), 1 (y) or 2 (z)",
                );
                None
            }
        }
    }

    /// A global atomic that vyre's kernel leaves unchecked: a warning where the index is not
    /// proven in range (vyre only predicates atomics in kernels that keep every lane alive).
    fn unchecked_atomic(&mut self, buffer: &str, index: &Expr, vp: &str, sid: &str) {
        let host = self
            .scratch
            .buffer(buffer)
            .is_some_and(|b| b.access.is_host());
        if !host || self.full_workgroup || self.proven(index, buffer) {
            return;
        }
        self.warning(
            "VY010",
            Some(sid),
            format!(
                "vyre {vp}: vyre's kernel does not bounds-check this atomic on `{buffer}`: an \
                 out-of-range index writes outside the buffer there, while here it does nothing \
                 and gives 0"
            ),
            "guard the atomic with `if index < len(buffer)` in the vyre Program",
        );
    }

    pub(super) fn binop(&mut self, op: &VBin, l: Expr, r: Expr, vp: &str) -> Option<Expr> {
        let lt = self.type_of(&l);
        let ours = match op {
            VBin::Add | VBin::WrappingAdd => BinOp::Add,
            VBin::Sub | VBin::WrappingSub => BinOp::Sub,
            VBin::Mul => BinOp::Mul,
            VBin::Div => {
                let nonzero = matches!(r, Expr::Lit(Literal::Typed(Scalar::U32(v))) if v != 0);
                if lt != Some(ScalarType::U32) || nonzero {
                    BinOp::Div
                } else if !pure(&r) {
                    return self.refuse(
                        vp,
                        "a u32 division by an atomic's result cannot keep vyre's division by \
                         zero (the divisor would run twice)",
                        "bind the atomic's result with `let` in the vyre Program",
                    );
                } else {
                    // vyre's kernel gives u32::MAX for x / 0; the format gives 0.
                    self.guarded_divisions += 1;
                    let r = self.bind_once(r);
                    let zero = bin(BinOp::Eq, r.clone(), lit(Scalar::U32(0)));
                    return Some(Expr::Select(
                        Box::new(zero),
                        Box::new(lit(Scalar::U32(u32::MAX))),
                        Box::new(bin(BinOp::Div, l, r)),
                    ));
                }
            }
            VBin::Mod => BinOp::Rem,
            VBin::BitAnd => BinOp::And,
            VBin::BitOr => BinOp::Or,
            VBin::BitXor => BinOp::Xor,
            VBin::Shl | VBin::Shr => {
                let op = if matches!(op, VBin::Shl) {
                    BinOp::Shl
                } else {
                    BinOp::Shr
                };
                let small = below_32(&r);
                if matches!(lt, Some(ScalarType::U32 | ScalarType::I32)) && !small {
                    // vyre's kernel takes a 32-bit shift amount modulo 32 (`and 31`).
                    self.masked_shifts += 1;
                    // Marked, so that `shifts::settle` leaves it out where the amount
                    // is proven below 32 once the whole body is known.
                    let masked = bin(BinOp::And, r, super::shifts::MARK);
                    return Some(bin(op, l, masked));
                }
                op
            }
            VBin::Eq => BinOp::Eq,
            VBin::Ne => BinOp::Ne,
            VBin::Lt => BinOp::Lt,
            VBin::Gt => BinOp::Gt,
            VBin::Le => BinOp::Le,
            VBin::Ge => BinOp::Ge,
            VBin::And if lt == Some(ScalarType::Bool) => BinOp::LAnd,
            VBin::Or if lt == Some(ScalarType::Bool) => BinOp::LOr,
            VBin::And => BinOp::And,
            VBin::Or => BinOp::Or,
            VBin::AbsDiff => BinOp::AbsDiff,
            VBin::Min => BinOp::Min,
            VBin::Max => BinOp::Max,
            VBin::RotateLeft => BinOp::Rotl,
            VBin::RotateRight => BinOp::Rotr,
            VBin::MulHigh => BinOp::MulHi,
            VBin::SaturatingAdd => BinOp::AddSat,
            VBin::SaturatingSub => BinOp::SubSat,
            VBin::SaturatingMul => BinOp::MulSat,
            other => {
                return self.refuse(
                    vp,
                    &format!("binary operator {other:?} has no vyrescope equivalent"),
                    "write it with the operators docs/program-format.md lists",
                )
            }
        };
        Some(bin(ours, l, r))
    }
}

/// True when shift amount `r` is certainly below 32 (a literal, or an `and` with one below
/// 32), so vyre's amount modulo 32 is the amount itself.
fn below_32(r: &Expr) -> bool {
    let small = |e: &Expr| matches!(e, Expr::Lit(Literal::Typed(Scalar::U32(v))) if *v < 32);
    match r {
        Expr::Binary(BinOp::And, a, b) => small(a) || small(b),
        other => small(other),
    }
}

impl Cx {
    /// The export's bitcast between `u32` and `i32`: `cast<T>(cast<S>(x))` with `x` already
    /// of type `S` (a cast that keeps the value, then one that keeps the bits), unless the
    /// inner cast is the export's widening of a narrow load or its cast of a bitwise,
    /// remainder or mulhi result (the one [`Cx::same_type_cast`] takes away). `Some(None)`
    /// when a part is refused.
    fn bitcast(
        &mut self,
        target: &DataType,
        value: &VExpr,
        vp: &str,
        sid: &str,
    ) -> Option<Option<Expr>> {
        let VExpr::Cast {
            target: inner,
            value: x,
        } = value
        else {
            return None;
        };
        let (t, s) = (scalar_type(target)?, scalar_type(inner)?);
        let ints = [ScalarType::U32, ScalarType::I32];
        if t == s || !ints.contains(&t) || !ints.contains(&s) {
            return None;
        }
        let kept = match &**x {
            VExpr::Load { buffer, .. } => self
                .scratch
                .buffer(&self.buffer_name(buffer.as_str()))
                .is_some_and(|d| d.elem.is_narrow()),
            VExpr::BinOp { op, .. } => matches!(
                op,
                VBin::BitAnd | VBin::BitOr | VBin::BitXor | VBin::Mod | VBin::MulHigh
            ),
            _ => false,
        };
        if kept {
            return None;
        }
        // Converting `x` twice would repeat its diagnostics: convert it once, here.
        let Some(e) = self.expr(x, &format!("{vp}.value.value"), sid) else {
            return Some(None);
        };
        Some(Some(if self.type_of(&e) == Some(s) {
            Expr::Bitcast(t, Box::new(e))
        } else {
            Expr::Cast(t, Box::new(self.i32_form(Expr::Cast(s, Box::new(e)))))
        }))
    }

    /// True for a cast to `target` of `v` that is a narrow buffer's load or a bitwise,
    /// remainder or mulhi result whose type is already `target` (a cast that changes nothing).
    fn same_type_cast(&self, target: &DataType, v: &Expr) -> bool {
        let shaped = match v {
            Expr::Load { buffer, .. } => self
                .scratch
                .buffer(buffer)
                .is_some_and(|d| d.elem.is_narrow()),
            Expr::Binary(op, _, _) => matches!(
                op,
                BinOp::And | BinOp::Or | BinOp::Xor | BinOp::Rem | BinOp::MulHi
            ),
            _ => false,
        };
        shaped && self.type_of(v).is_some() && self.type_of(v) == scalar_type(target)
    }
}

fn unop(op: &VUn) -> Option<UnOp> {
    Some(match op {
        VUn::Negate => UnOp::Neg,
        VUn::BitNot => UnOp::Not,
        VUn::LogicalNot => UnOp::LNot,
        VUn::Popcount => UnOp::Popcount,
        VUn::Clz => UnOp::Clz,
        VUn::Ctz => UnOp::Ctz,
        VUn::ReverseBits => UnOp::Brev,
        VUn::Cos => UnOp::Cos,
        VUn::Sin => UnOp::Sin,
        VUn::Abs => UnOp::Abs,
        VUn::Sqrt => UnOp::Sqrt,
        VUn::Floor => UnOp::Floor,
        VUn::Ceil => UnOp::Ceil,
        VUn::Round => UnOp::Round,
        VUn::Trunc => UnOp::Trunc,
        VUn::Sign => UnOp::Sign,
        VUn::IsNan => UnOp::IsNan,
        VUn::IsInf => UnOp::IsInf,
        VUn::IsFinite => UnOp::IsFinite,
        VUn::Exp => UnOp::Exp,
        VUn::Log => UnOp::Log,
        VUn::Log2 => UnOp::Log2,
        VUn::Exp2 => UnOp::Exp2,
        VUn::Tan => UnOp::Tan,
        VUn::Tanh => UnOp::Tanh,
        VUn::InverseSqrt => UnOp::Rsqrt,
        VUn::Reciprocal => UnOp::Rcp,
        _ => return None,
    })
}

fn atomic_op(op: &VAtomic) -> Option<AtomicOp> {
    Some(match op {
        VAtomic::Add => AtomicOp::Add,
        VAtomic::Or => AtomicOp::Or,
        VAtomic::And => AtomicOp::And,
        VAtomic::Xor => AtomicOp::Xor,
        VAtomic::Min => AtomicOp::Min,
        VAtomic::Max => AtomicOp::Max,
        VAtomic::Exchange => AtomicOp::Exchange,
        VAtomic::CompareExchange | VAtomic::CompareExchangeWeak => AtomicOp::Cas,
        // vyre's PTX lowers its LRU update to an atomic max.
        VAtomic::LruUpdate => AtomicOp::Max,
        _ => return None,
    })
}

fn order(o: MemoryOrdering) -> Option<AtomicOrder> {
    Some(match o {
        MemoryOrdering::Relaxed => AtomicOrder::Relaxed,
        MemoryOrdering::Acquire => AtomicOrder::Acquire,
        MemoryOrdering::Release => AtomicOrder::Release,
        MemoryOrdering::AcqRel => AtomicOrder::AcqRel,
        MemoryOrdering::SeqCst => AtomicOrder::SeqCst,
        _ => return None,
    })
}

fn reduce_op(op: &SubgroupReduceOp) -> Option<ReduceOp> {
    Some(match op {
        SubgroupReduceOp::Add => ReduceOp::Add,
        SubgroupReduceOp::Mul => ReduceOp::Mul,
        SubgroupReduceOp::Min => ReduceOp::Min,
        SubgroupReduceOp::Max => ReduceOp::Max,
        SubgroupReduceOp::And => ReduceOp::And,
        SubgroupReduceOp::Or => ReduceOp::Or,
        SubgroupReduceOp::Xor => ReduceOp::Xor,
        _ => return None,
    })
}
