//! Constant folding with the reference interpreter's own operators.
//!
//! A folded constant must be exactly what the interpreter would compute at run time, so there
//! is no second copy of the arithmetic here: folding calls the interpreter's one-lane
//! evaluators (`semantics::{bin,un,cast,fma}_scalar`), which are the same code its
//! vectorised operators run (wrapping integers, the PTX shift-amount rules, div/rem by zero =
//! 0, IEEE floats without flush-to-zero, NaN-ignoring min/max with -0 < +0, saturating
//! casts). The approximate operators (`rsqrt rcp exp exp2 log log2 sin cos tan tanh`) are
//! never folded: the PTX lowering in `math.rs` is what their published bounds describe.
//!
//! Beyond constants, [`identity`] applies the algebraic identities that hold for *every*
//! integer or bool value (`x + 0`, `x * 1`, `x * 0`, `x >> 0`, `x & 0`, ...). None are applied
//! to floats: `x + 0.0` is not `x` for `x = -0.0`, `x * 0.0` is not `0.0` for NaN or inf.

use super::writer::{zero, Val};
use crate::ir::{BinOp, Scalar, ScalarType, UnOp};
use crate::semantics as ops;

/// The result type of `a OP b` for operands of type `ty`.
fn binary_result(op: BinOp, ty: ScalarType) -> ScalarType {
    if op.yields_bool() {
        ScalarType::Bool
    } else {
        ty
    }
}

/// `a OP b` on constants, as the interpreter computes it.
pub(super) fn binary(op: BinOp, a: Scalar, b: Scalar) -> Scalar {
    let ty = a.ty();
    let bits = ops::bin_scalar(op, ty, a.to_bits(), b.to_bits());
    Scalar::from_bits(binary_result(op, ty), bits)
}

/// `OP a` on a constant, or `None` for the approximate operators (never folded).
pub(super) fn unary(op: UnOp, a: Scalar) -> Option<Scalar> {
    if op.is_approximate() {
        return None;
    }
    let ty = a.ty();
    let out = match op {
        UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite | UnOp::LNot => ScalarType::Bool,
        _ => ty,
    };
    Some(Scalar::from_bits(out, ops::un_scalar(op, ty, a.to_bits())))
}

/// `cast<t>(a)` on a constant (Rust `as`, the spec's rule).
pub(super) fn cast(t: ScalarType, a: Scalar) -> Scalar {
    Scalar::from_bits(t, ops::cast_scalar(a.ty(), t, a.to_bits()))
}

/// `fma(a, b, c)` on constants (one rounding for floats, wrapping for integers).
pub(super) fn fma(a: Scalar, b: Scalar, c: Scalar) -> Scalar {
    let ty = a.ty();
    Scalar::from_bits(
        ty,
        ops::fma_scalar(ty, a.to_bits(), b.to_bits(), c.to_bits()),
    )
}

/// True when `v` is the integer/bool constant `k` (for bool: 0 = false, 1 = true).
fn is_const(v: &Val, k: i64) -> bool {
    match v.imm() {
        Some(s) if !s.ty().is_float() => {
            let bits = s.to_bits();
            let want = super::writer::konst(s.ty(), k).to_bits();
            bits == want
        }
        _ => false,
    }
}

/// `x OP y` simplified by an identity that holds for every value of the non-constant
/// operand (integers and bools only), or `None`.
pub(super) fn identity(op: BinOp, x: &Val, y: &Val) -> Option<Val> {
    let ty = x.ty();
    if ty.is_float() || (x.imm().is_none() && y.imm().is_none()) {
        return None;
    }
    let zero_of = || Val::Imm(zero(ty));
    let all_ones = |v: &Val| is_const(v, -1);
    Some(match op {
        BinOp::Add if is_const(y, 0) => x.clone(),
        BinOp::Add if is_const(x, 0) => y.clone(),
        BinOp::Sub if is_const(y, 0) => x.clone(),
        BinOp::Mul if is_const(y, 1) => x.clone(),
        BinOp::Mul if is_const(x, 1) => y.clone(),
        BinOp::Mul if is_const(x, 0) || is_const(y, 0) => zero_of(),
        BinOp::Div if is_const(y, 1) => x.clone(),
        BinOp::Rem if is_const(y, 1) => zero_of(),
        BinOp::And | BinOp::LAnd if is_const(x, 0) || is_const(y, 0) => zero_of(),
        BinOp::And | BinOp::LAnd if all_ones(y) => x.clone(),
        BinOp::And | BinOp::LAnd if all_ones(x) => y.clone(),
        BinOp::Or | BinOp::LOr | BinOp::Xor if is_const(y, 0) => x.clone(),
        BinOp::Or | BinOp::LOr | BinOp::Xor if is_const(x, 0) => y.clone(),
        BinOp::Or | BinOp::LOr if all_ones(x) || all_ones(y) => {
            Val::Imm(super::writer::konst(ty, -1))
        }
        BinOp::Shl | BinOp::Shr | BinOp::Rotl | BinOp::Rotr if is_const(y, 0) => x.clone(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{BinOp as B, ScalarType as T};
    use proptest::prelude::*;

    const INT_OPS: [BinOp; 17] = [
        B::Add,
        B::Sub,
        B::Mul,
        B::Div,
        B::Rem,
        B::Min,
        B::Max,
        B::AbsDiff,
        B::MulHi,
        B::And,
        B::Or,
        B::Xor,
        B::Shl,
        B::Shr,
        B::Rotl,
        B::Rotr,
        B::Lt,
    ];

    fn reg(ty: ScalarType) -> Val {
        Val::Reg {
            name: super::super::regs::RegAlloc::default()
                .fresh(super::super::regs::RegClass::of(ty)),
            ty,
            fresh: false,
        }
    }

    fn scalar(ty: ScalarType, bits: u64) -> Scalar {
        Scalar::from_bits(ty, bits)
    }

    #[test]
    fn folds_the_reduction_strides_and_spec_corner_cases() {
        // shr(128, s) for the unrolled steps of reduce_sum.
        for s in 0..8u32 {
            assert_eq!(
                binary(B::Shr, Scalar::U32(128), Scalar::U32(s)),
                Scalar::U32(128 >> s)
            );
        }
        // Shift amounts >= width: 0, or the sign fill for signed shr.
        assert_eq!(
            binary(B::Shr, Scalar::U32(128), Scalar::U32(40)),
            Scalar::U32(0)
        );
        assert_eq!(
            binary(B::Shr, Scalar::I32(-8), Scalar::U32(40)),
            Scalar::I32(-1)
        );
        assert_eq!(
            binary(B::Shl, Scalar::U32(1), Scalar::U32(32)),
            Scalar::U32(0)
        );
        // Wrapping, div/rem by zero, MIN / -1.
        assert_eq!(
            binary(B::Add, Scalar::U32(u32::MAX), Scalar::U32(2)),
            Scalar::U32(1)
        );
        assert_eq!(
            binary(B::Div, Scalar::I32(7), Scalar::I32(0)),
            Scalar::I32(0)
        );
        assert_eq!(
            binary(B::Div, Scalar::I32(i32::MIN), Scalar::I32(-1)),
            Scalar::I32(i32::MIN)
        );
        assert_eq!(
            binary(B::Lt, Scalar::I32(-1), Scalar::I32(0)),
            Scalar::Bool(true)
        );
        assert_eq!(
            binary(B::Lt, Scalar::U32(u32::MAX), Scalar::U32(0)),
            Scalar::Bool(false)
        );
        // Float min with signed zeros, casts saturate, approximate ops stay unfolded.
        assert_eq!(
            binary(B::Min, Scalar::F32(0.0), Scalar::F32(-0.0)).to_bits(),
            (-0.0f32).to_bits() as u64
        );
        assert_eq!(cast(T::I32, Scalar::F32(1e10)), Scalar::I32(i32::MAX));
        assert_eq!(cast(T::U32, Scalar::F32(f32::NAN)), Scalar::U32(0));
        assert_eq!(unary(UnOp::Exp, Scalar::F32(1.0)), None);
        assert_eq!(
            unary(UnOp::Popcount, Scalar::U64(u64::MAX)),
            Some(Scalar::U64(64))
        );
        assert_eq!(
            unary(UnOp::IsNan, Scalar::F32(f32::NAN)),
            Some(Scalar::Bool(true))
        );
        assert_eq!(
            fma(Scalar::I32(-3), Scalar::I32(4), Scalar::I32(5)),
            Scalar::I32(-7)
        );
    }

    #[test]
    fn identities_hold_only_where_they_are_exact() {
        let r = reg(T::U32);
        let u = |v: u32| Val::Imm(Scalar::U32(v));
        assert_eq!(identity(B::Add, &r, &u(0)), Some(r.clone()));
        assert_eq!(identity(B::Add, &u(0), &r), Some(r.clone()));
        assert_eq!(identity(B::Mul, &u(0), &r), Some(u(0)));
        assert_eq!(identity(B::Shr, &r, &u(0)), Some(r.clone()));
        assert_eq!(identity(B::Sub, &u(0), &r), None, "0 - x is not x");
        assert_eq!(identity(B::Shr, &u(0), &r), None);
        assert_eq!(identity(B::And, &r, &u(u32::MAX)), Some(r.clone()));
        let f = reg(T::F32);
        let fz = Val::Imm(Scalar::F32(0.0));
        assert_eq!(identity(B::Add, &f, &fz), None, "-0.0 + 0.0 is +0.0");
        assert_eq!(identity(B::Mul, &f, &fz), None, "NaN * 0 is NaN");
        let i = reg(T::I32);
        assert_eq!(
            identity(B::Or, &i, &Val::Imm(Scalar::I32(-1))),
            Some(Val::Imm(Scalar::I32(-1)))
        );
        let b = reg(T::Bool);
        let t = Val::Imm(Scalar::Bool(true));
        assert_eq!(identity(B::LAnd, &b, &t), Some(b.clone()));
        assert_eq!(identity(B::LOr, &t, &b), Some(t.clone()));
    }

    /// The value an identity claims, checked against the interpreter's operator on random
    /// data: an identity is only sound if it holds for every value of the register operand.
    fn check_identity(op: BinOp, ty: ScalarType, k: u64, x: u64, reg_left: bool) {
        let kv = Val::Imm(scalar(ty, k));
        let r = reg(ty);
        let (a, b) = if reg_left { (&r, &kv) } else { (&kv, &r) };
        let Some(out) = identity(op, a, b) else {
            return;
        };
        let xs = scalar(ty, x);
        let (sa, sb) = if reg_left {
            (xs, scalar(ty, k))
        } else {
            (scalar(ty, k), xs)
        };
        let want = binary(op, sa, sb);
        let got = match out {
            Val::Imm(s) => s,
            Val::Reg { .. } => xs,
        };
        assert_eq!(
            got, want,
            "{op:?} {ty} k={k:#x} x={x:#x} reg_left={reg_left}"
        );
    }

    proptest! {
        #[test]
        fn identities_agree_with_the_interpreter(
            op in proptest::sample::select(INT_OPS.to_vec()),
            ty in proptest::sample::select(vec![T::U32, T::I32, T::U64, T::I64]),
            k in proptest::sample::select(vec![0u64, 1, u64::MAX, 2]),
            x in any::<u64>(),
            reg_left in any::<bool>(),
        ) {
            let k = if ty.bits() == 32 { k & 0xffff_ffff } else { k };
            let x = if ty.bits() == 32 { x & 0xffff_ffff } else { x };
            // Shift amounts are u32 whatever the left operand's type.
            if matches!(op, B::Shl | B::Shr | B::Rotl | B::Rotr) {
                let kv = Val::Imm(Scalar::U32(k as u32));
                if let Some(out) = identity(op, &reg(ty), &kv) {
                    let want = binary(op, scalar(ty, x), Scalar::U32(k as u32));
                    let got = match out { Val::Imm(s) => s, Val::Reg { .. } => scalar(ty, x) };
                    prop_assert_eq!(got, want);
                }
                return Ok(());
            }
            check_identity(op, ty, k, x, reg_left);
        }

    }
}
