//! Every operator's edge cases, hand-computed (docs/semantics.md).

use crate::interp::exec::{atomic_op, reduce_op};
use crate::interp::memory::{decode, encode};
use crate::ir::{AtomicOp, BinOp as B, ElemType, ReduceOp, ScalarType as T, UnOp as U};
use crate::semantics::{bin_scalar, cast_scalar, fma_scalar, un_scalar};

fn u(v: u32) -> u64 {
    v as u64
}
fn i(v: i32) -> u64 {
    v as u32 as u64
}
fn l(v: i64) -> u64 {
    v as u64
}
fn f(v: f32) -> u64 {
    v.to_bits() as u64
}
fn d(v: f64) -> u64 {
    v.to_bits()
}
fn as_f(x: u64) -> f32 {
    f32::from_bits(x as u32)
}

#[test]
fn integer_arithmetic_wraps() {
    assert_eq!(bin_scalar(B::Add, T::U32, u(u32::MAX), u(1)), 0);
    assert_eq!(bin_scalar(B::Add, T::I32, i(i32::MAX), i(1)), i(i32::MIN));
    assert_eq!(bin_scalar(B::Sub, T::U32, u(0), u(1)), u(u32::MAX));
    assert_eq!(bin_scalar(B::Sub, T::I64, l(i64::MIN), l(1)), l(i64::MAX));
    assert_eq!(bin_scalar(B::Mul, T::I32, i(0x10000), i(0x10000)), 0);
    assert_eq!(bin_scalar(B::Mul, T::U64, u64::MAX, 2), u64::MAX - 1);
    // Results stay zero-extended 32-bit words.
    assert_eq!(bin_scalar(B::Sub, T::I32, i(0), i(1)), 0xffff_ffff);
}

#[test]
fn division_by_zero_and_overflow() {
    for t in [T::U32, T::I32, T::U64, T::I64] {
        assert_eq!(bin_scalar(B::Div, t, 7, 0), 0, "{t} div 0");
        assert_eq!(bin_scalar(B::Rem, t, 7, 0), 0, "{t} rem 0");
    }
    assert_eq!(bin_scalar(B::Div, T::I32, i(i32::MIN), i(-1)), i(i32::MIN));
    assert_eq!(bin_scalar(B::Rem, T::I32, i(i32::MIN), i(-1)), 0);
    assert_eq!(bin_scalar(B::Div, T::I64, l(i64::MIN), l(-1)), l(i64::MIN));
    assert_eq!(bin_scalar(B::Rem, T::I64, l(i64::MIN), l(-1)), 0);
    // Truncated division: the remainder has the dividend's sign.
    assert_eq!(bin_scalar(B::Div, T::I32, i(-7), i(2)), i(-3));
    assert_eq!(bin_scalar(B::Rem, T::I32, i(-7), i(2)), i(-1));
    assert_eq!(bin_scalar(B::Rem, T::I32, i(7), i(-2)), i(1));
    assert_eq!(
        bin_scalar(B::Div, T::U32, u(u32::MAX), u(2)),
        u(0x7fff_ffff)
    );
}

#[test]
fn shifts_follow_ptx() {
    assert_eq!(bin_scalar(B::Shl, T::U32, u(1), u(31)), u(0x8000_0000));
    assert_eq!(bin_scalar(B::Shl, T::U32, u(1), u(32)), 0);
    assert_eq!(bin_scalar(B::Shl, T::I32, i(-1), u(u32::MAX)), 0);
    assert_eq!(bin_scalar(B::Shr, T::U32, u(0x8000_0000), u(31)), 1);
    assert_eq!(bin_scalar(B::Shr, T::U32, u(u32::MAX), u(32)), 0);
    assert_eq!(bin_scalar(B::Shr, T::I32, i(-8), u(1)), i(-4));
    assert_eq!(bin_scalar(B::Shr, T::I32, i(-8), u(40)), i(-1));
    assert_eq!(bin_scalar(B::Shr, T::I32, i(8), u(40)), 0);
    assert_eq!(bin_scalar(B::Shl, T::U64, 1, u(63)), 1 << 63);
    assert_eq!(bin_scalar(B::Shl, T::U64, 1, u(64)), 0);
    assert_eq!(bin_scalar(B::Shr, T::I64, l(-5), u(64)), l(-1));
    assert_eq!(bin_scalar(B::Shr, T::I64, l(-5), u(63)), l(-1));
    assert_eq!(
        bin_scalar(B::Rotl, T::U32, u(0x8000_0001), u(33)),
        u(0x0000_0003)
    );
    assert_eq!(bin_scalar(B::Rotr, T::U32, u(1), u(1)), u(0x8000_0000));
    assert_eq!(bin_scalar(B::Rotl, T::U64, 1 << 63, u(65)), 1);
    assert_eq!(bin_scalar(B::Rotl, T::U64, 1, u(65)), 2);
    assert_eq!(bin_scalar(B::Rotr, T::I32, i(1), u(32)), i(1));
}

#[test]
fn mulhi_is_the_high_half() {
    assert_eq!(
        bin_scalar(B::MulHi, T::U32, u(u32::MAX), u(u32::MAX)),
        u(0xffff_fffe)
    );
    assert_eq!(bin_scalar(B::MulHi, T::I32, i(-1), i(1)), i(-1));
    assert_eq!(
        bin_scalar(B::MulHi, T::I32, i(i32::MIN), i(i32::MIN)),
        i(0x4000_0000)
    );
    assert_eq!(
        bin_scalar(B::MulHi, T::U64, u64::MAX, u64::MAX),
        u64::MAX - 1
    );
    assert_eq!(bin_scalar(B::MulHi, T::I64, l(i64::MIN), l(2)), l(-1));
    assert_eq!(bin_scalar(B::MulHi, T::U64, 1 << 32, 1 << 32), 1);
}

#[test]
fn absdiff_min_max_integers() {
    assert_eq!(bin_scalar(B::AbsDiff, T::U32, u(3), u(10)), u(7));
    assert_eq!(
        bin_scalar(B::AbsDiff, T::U32, u(0), u(u32::MAX)),
        u(u32::MAX)
    );
    assert_eq!(bin_scalar(B::AbsDiff, T::I32, i(-3), i(4)), i(7));
    // MAX - MIN wraps for signed.
    assert_eq!(
        bin_scalar(B::AbsDiff, T::I32, i(i32::MIN), i(i32::MAX)),
        i(-1)
    );
    assert_eq!(bin_scalar(B::Min, T::I32, i(-1), i(1)), i(-1));
    assert_eq!(bin_scalar(B::Min, T::U32, u(u32::MAX), u(1)), u(1));
    assert_eq!(bin_scalar(B::Max, T::I64, l(i64::MIN), l(-1)), l(-1));
    assert_eq!(bin_scalar(B::Lt, T::I32, i(-1), i(0)), 1);
    assert_eq!(bin_scalar(B::Lt, T::U32, u(u32::MAX), u(0)), 0);
    assert_eq!(bin_scalar(B::Ge, T::U64, u64::MAX, 0), 1);
}

#[test]
fn saturating_ops_clamp() {
    // Inside the range: the plain result.
    assert_eq!(bin_scalar(B::AddSat, T::U32, u(3), u(10)), u(13));
    assert_eq!(bin_scalar(B::SubSat, T::I32, i(-3), i(4)), i(-7));
    assert_eq!(bin_scalar(B::MulSat, T::I64, l(-6), l(7)), l(-42));
    // Clamped at both ends, for every integer type.
    assert_eq!(
        bin_scalar(B::AddSat, T::U32, u(u32::MAX - 1), u(5)),
        u(u32::MAX)
    );
    assert_eq!(bin_scalar(B::SubSat, T::U32, u(3), u(10)), u(0));
    assert_eq!(
        bin_scalar(B::MulSat, T::U32, u(1 << 20), u(1 << 12)),
        u(u32::MAX)
    );
    assert_eq!(
        bin_scalar(B::AddSat, T::I32, i(i32::MAX), i(1)),
        i(i32::MAX)
    );
    assert_eq!(
        bin_scalar(B::SubSat, T::I32, i(i32::MIN), i(1)),
        i(i32::MIN)
    );
    assert_eq!(
        bin_scalar(B::MulSat, T::I32, i(-65536), i(65536)),
        i(i32::MIN)
    );
    assert_eq!(
        bin_scalar(B::MulSat, T::I32, i(-65536), i(-65536)),
        i(i32::MAX)
    );
    assert_eq!(bin_scalar(B::AddSat, T::U64, u64::MAX, 1), u64::MAX);
    assert_eq!(bin_scalar(B::SubSat, T::U64, 1, 2), 0);
    assert_eq!(bin_scalar(B::MulSat, T::U64, 1 << 40, 1 << 40), u64::MAX);
    assert_eq!(
        bin_scalar(B::AddSat, T::I64, l(i64::MIN), l(-1)),
        l(i64::MIN)
    );
    assert_eq!(
        bin_scalar(B::SubSat, T::I64, l(i64::MAX), l(-1)),
        l(i64::MAX)
    );
    assert_eq!(
        bin_scalar(B::MulSat, T::I64, l(i64::MIN), l(-1)),
        l(i64::MAX)
    );
    assert_eq!(bin_scalar(B::MulSat, T::I64, l(0), l(i64::MIN)), l(0));
}

#[test]
fn float_min_max_nan_and_signed_zero() {
    let nan = f32::NAN;
    assert_eq!(bin_scalar(B::Min, T::F32, f(nan), f(2.0)), f(2.0));
    assert_eq!(bin_scalar(B::Min, T::F32, f(2.0), f(nan)), f(2.0));
    assert_eq!(bin_scalar(B::Max, T::F32, f(nan), f(-2.0)), f(-2.0));
    assert!(as_f(bin_scalar(B::Min, T::F32, f(nan), f(nan))).is_nan());
    assert_eq!(bin_scalar(B::Min, T::F32, f(0.0), f(-0.0)), f(-0.0));
    assert_eq!(bin_scalar(B::Min, T::F32, f(-0.0), f(0.0)), f(-0.0));
    assert_eq!(bin_scalar(B::Max, T::F32, f(-0.0), f(0.0)), f(0.0));
    assert_eq!(bin_scalar(B::Max, T::F32, f(0.0), f(-0.0)), f(0.0));
    assert_eq!(
        bin_scalar(B::Min, T::F32, f(f32::NEG_INFINITY), f(1.0)),
        f(f32::NEG_INFINITY)
    );
    assert_eq!(bin_scalar(B::Max, T::F64, d(f64::NAN), d(-0.0)), d(-0.0));
    assert_eq!(bin_scalar(B::Min, T::F64, d(-0.0), d(0.0)), d(-0.0));
    assert!(f64::from_bits(bin_scalar(B::Max, T::F64, d(f64::NAN), d(f64::NAN))).is_nan());
}

#[test]
fn float_arithmetic_is_ieee_without_ftz() {
    // Subnormal results survive (no flush to zero).
    let tiny = f32::from_bits(1);
    assert_eq!(
        bin_scalar(B::Add, T::F32, f(tiny), f(tiny)),
        f(f32::from_bits(2))
    );
    assert_eq!(
        bin_scalar(B::Mul, T::F32, f(f32::MIN_POSITIVE), f(0.5)),
        0x0040_0000
    );
    assert_eq!(bin_scalar(B::Div, T::F32, f(1.0), f(0.0)), f(f32::INFINITY));
    assert!(as_f(bin_scalar(B::Div, T::F32, f(0.0), f(0.0))).is_nan());
    assert_eq!(bin_scalar(B::Div, T::F32, f(1.0), f(3.0)), f(1.0 / 3.0));
    assert_eq!(bin_scalar(B::AbsDiff, T::F32, f(1.0), f(3.5)), f(2.5));
    assert_eq!(bin_scalar(B::AbsDiff, T::F32, f(3.5), f(1.0)), f(2.5));
    assert_eq!(bin_scalar(B::Eq, T::F32, f(0.0), f(-0.0)), 1);
    assert_eq!(bin_scalar(B::Eq, T::F32, f(f32::NAN), f(f32::NAN)), 0);
    assert_eq!(bin_scalar(B::Ne, T::F32, f(f32::NAN), f(f32::NAN)), 1);
    assert_eq!(bin_scalar(B::Lt, T::F64, d(f64::NAN), d(1.0)), 0);
    // fma rounds once: (1 + 2^-23)(1 - 2^-23) - 1 = -2^-46 exactly, mul+add gives 0.
    let a = 1.0 + f32::EPSILON;
    let b = 1.0 - f32::EPSILON;
    assert_eq!(
        fma_scalar(T::F32, f(a), f(b), f(-1.0)),
        f(-(2f32.powi(-46)))
    );
    let mul = bin_scalar(B::Mul, T::F32, f(a), f(b));
    assert_eq!(bin_scalar(B::Add, T::F32, mul, f(-1.0)), f(0.0));
    assert_eq!(fma_scalar(T::I32, i(-3), i(4), i(5)), i(-7));
}

#[test]
fn integer_unary_edges() {
    assert_eq!(un_scalar(U::Abs, T::I32, i(i32::MIN)), i(i32::MIN));
    assert_eq!(un_scalar(U::Abs, T::I32, i(-5)), i(5));
    assert_eq!(un_scalar(U::Abs, T::U32, u(u32::MAX)), u(u32::MAX));
    assert_eq!(un_scalar(U::Neg, T::U32, u(1)), u(u32::MAX));
    assert_eq!(un_scalar(U::Neg, T::I64, l(i64::MIN)), l(i64::MIN));
    assert_eq!(un_scalar(U::Sign, T::I32, i(-9)), i(-1));
    assert_eq!(un_scalar(U::Sign, T::I32, i(0)), 0);
    assert_eq!(un_scalar(U::Sign, T::U32, u(9)), 1);
    assert_eq!(un_scalar(U::Sign, T::I64, l(7)), 1);
    assert_eq!(un_scalar(U::Not, T::U32, 0), u(u32::MAX));
    assert_eq!(un_scalar(U::Not, T::I32, i(0)), i(-1));
    assert_eq!(un_scalar(U::Popcount, T::U32, u(u32::MAX)), 32);
    assert_eq!(un_scalar(U::Popcount, T::I64, l(-1)), 64);
    assert_eq!(un_scalar(U::Clz, T::U32, 0), 32);
    assert_eq!(un_scalar(U::Clz, T::U32, 1), 31);
    assert_eq!(un_scalar(U::Clz, T::U64, 0), 64);
    assert_eq!(un_scalar(U::Clz, T::I32, i(-1)), 0);
    assert_eq!(un_scalar(U::Ctz, T::U32, 0), 32);
    assert_eq!(un_scalar(U::Ctz, T::U64, 1 << 40), 40);
    assert_eq!(un_scalar(U::Brev, T::U32, 1), u(0x8000_0000));
    assert_eq!(un_scalar(U::Brev, T::U64, 1), 1 << 63);
    assert_eq!(un_scalar(U::LNot, T::Bool, 0), 1);
    assert_eq!(un_scalar(U::LNot, T::Bool, 1), 0);
}

#[test]
fn float_unary_edges() {
    let nan_bits = 0x7fc0_0001u32 as u64;
    // abs/neg only touch the sign bit, also for NaN.
    assert_eq!(un_scalar(U::Abs, T::F32, nan_bits | 0x8000_0000), nan_bits);
    assert_eq!(un_scalar(U::Neg, T::F32, nan_bits), nan_bits | 0x8000_0000);
    assert_eq!(un_scalar(U::Neg, T::F32, f(0.0)), f(-0.0));
    assert_eq!(un_scalar(U::Abs, T::F64, d(-0.0)), d(0.0));
    // sign: NaN -> NaN, +-0 unchanged, else +-1.
    assert_eq!(un_scalar(U::Sign, T::F32, nan_bits), nan_bits);
    assert_eq!(un_scalar(U::Sign, T::F32, f(-0.0)), f(-0.0));
    assert_eq!(un_scalar(U::Sign, T::F32, f(-3.5)), f(-1.0));
    assert_eq!(un_scalar(U::Sign, T::F64, d(f64::INFINITY)), d(1.0));
    // round: ties to even.
    assert_eq!(un_scalar(U::Round, T::F32, f(2.5)), f(2.0));
    assert_eq!(un_scalar(U::Round, T::F32, f(3.5)), f(4.0));
    assert_eq!(un_scalar(U::Round, T::F32, f(-2.5)), f(-2.0));
    assert_eq!(un_scalar(U::Round, T::F64, d(-0.4)), d(-0.0));
    assert_eq!(un_scalar(U::Floor, T::F32, f(-1.5)), f(-2.0));
    assert_eq!(un_scalar(U::Ceil, T::F32, f(-1.5)), f(-1.0));
    assert_eq!(un_scalar(U::Trunc, T::F32, f(-1.7)), f(-1.0));
    assert_eq!(
        un_scalar(U::Sqrt, T::F32, f(2.0)),
        f(std::f32::consts::SQRT_2)
    );
    assert_eq!(un_scalar(U::Sqrt, T::F32, f(-0.0)), f(-0.0));
    assert!(as_f(un_scalar(U::Sqrt, T::F32, f(-1.0))).is_nan());
    assert_eq!(un_scalar(U::Rcp, T::F32, f(0.0)), f(f32::INFINITY));
    assert_eq!(un_scalar(U::Rcp, T::F32, f(-0.0)), f(f32::NEG_INFINITY));
    assert_eq!(un_scalar(U::Rcp, T::F64, d(4.0)), d(0.25));
    assert_eq!(un_scalar(U::Rsqrt, T::F32, f(4.0)), f(0.5));
    assert_eq!(un_scalar(U::Exp2, T::F32, f(10.0)), f(1024.0));
    assert_eq!(un_scalar(U::Log2, T::F64, d(1024.0)), d(10.0));
    assert_eq!(un_scalar(U::Log, T::F32, f(0.0)), f(f32::NEG_INFINITY));
    assert_eq!(un_scalar(U::IsNan, T::F32, nan_bits), 1);
    assert_eq!(un_scalar(U::IsInf, T::F32, f(f32::NEG_INFINITY)), 1);
    assert_eq!(un_scalar(U::IsFinite, T::F32, f(f32::INFINITY)), 0);
    assert_eq!(
        un_scalar(U::IsFinite, T::F64, d(f64::MIN_POSITIVE / 4.0)),
        1
    );
}

#[test]
fn casts_saturate_and_round() {
    assert_eq!(cast_scalar(T::F32, T::I32, f(1e10)), i(i32::MAX));
    assert_eq!(cast_scalar(T::F32, T::I32, f(-1e10)), i(i32::MIN));
    assert_eq!(cast_scalar(T::F32, T::I32, f(f32::NAN)), 0);
    assert_eq!(cast_scalar(T::F32, T::I32, f(-2.9)), i(-2));
    assert_eq!(cast_scalar(T::F32, T::U32, f(-1.0)), 0);
    assert_eq!(cast_scalar(T::F32, T::U32, f(f32::INFINITY)), u(u32::MAX));
    assert_eq!(cast_scalar(T::F64, T::U64, d(1e30)), u64::MAX);
    assert_eq!(
        cast_scalar(T::F64, T::I64, d(f64::NEG_INFINITY)),
        l(i64::MIN)
    );
    // int -> int by the source's signedness.
    assert_eq!(cast_scalar(T::I32, T::U64, i(-1)), u64::MAX);
    assert_eq!(cast_scalar(T::U32, T::I64, u(u32::MAX)), u(u32::MAX));
    assert_eq!(cast_scalar(T::I64, T::I32, l(0x1_8000_0000)), i(i32::MIN));
    assert_eq!(cast_scalar(T::I32, T::U32, i(-1)), u(u32::MAX));
    // to float: nearest even.
    assert_eq!(cast_scalar(T::U32, T::F32, u(16_777_217)), f(16_777_216.0));
    assert_eq!(cast_scalar(T::U32, T::F32, u(16_777_219)), f(16_777_220.0));
    assert_eq!(
        cast_scalar(T::I64, T::F64, l(i64::MIN)),
        d(-9.223372036854776e18)
    );
    assert_eq!(cast_scalar(T::F64, T::F32, d(1.0 + 2f64.powi(-24))), f(1.0));
    assert_eq!(cast_scalar(T::F64, T::F32, d(1e300)), f(f32::INFINITY));
    assert_eq!(cast_scalar(T::F32, T::F64, f(0.1)), d(0.1f32 as f64));
    // bool.
    assert_eq!(cast_scalar(T::Bool, T::F32, 1), f(1.0));
    assert_eq!(cast_scalar(T::Bool, T::I64, 1), 1);
    assert_eq!(cast_scalar(T::F32, T::Bool, f(f32::NAN)), 1);
    assert_eq!(cast_scalar(T::F32, T::Bool, f(-0.0)), 0);
    assert_eq!(cast_scalar(T::I32, T::Bool, i(-4)), 1);
    assert_eq!(cast_scalar(T::U64, T::Bool, 1 << 40), 1);
}

#[test]
fn narrow_and_f16_storage() {
    assert_eq!(encode(ElemType::U8, u(300)), 44);
    assert_eq!(decode(ElemType::I8, 0xff), i(-1));
    assert_eq!(decode(ElemType::U8, 0xff), 255);
    assert_eq!(encode(ElemType::I16, i(-1)), 0xffff);
    assert_eq!(decode(ElemType::I16, 0x8000), i(-32768));
    assert_eq!(decode(ElemType::U16, 0x8000), 0x8000);
    assert_eq!(encode(ElemType::Bool, 1), 1);
    assert_eq!(decode(ElemType::Bool, 0x100), 1);
    let h = |v: f32| encode(ElemType::F16, f(v));
    assert_eq!(h(1.0), 0x3c00);
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to the even mantissa (1.0).
    assert_eq!(h(1.0 + 2f32.powi(-11)), 0x3c00);
    // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
    assert_eq!(h(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
    // Just above the tie rounds up.
    assert_eq!(h(1.0 + 2f32.powi(-11) + 2f32.powi(-20)), 0x3c01);
    assert_eq!(h(65504.0), 0x7bff);
    assert_eq!(h(65519.0), 0x7bff);
    assert_eq!(h(65520.0), 0x7c00);
    assert_eq!(h(-1e6), 0xfc00);
    assert_eq!(h(2f32.powi(-24)), 0x0001);
    assert_eq!(h(2f32.powi(-25)), 0x0000);
    assert_eq!(h(1.5 * 2f32.powi(-25)), 0x0001);
    assert_eq!(h(-0.0), 0x8000);
    let nan = h(f32::NAN);
    assert!(
        nan & 0x7c00 == 0x7c00 && nan & 0x3ff != 0,
        "NaN stays NaN: {nan:#x}"
    );
    // Loads widen exactly.
    assert_eq!(decode(ElemType::F16, 0x0001), f(2f32.powi(-24)));
    assert_eq!(decode(ElemType::F16, 0x7bff), f(65504.0));
    assert_eq!(decode(ElemType::F16, 0xfc00), f(f32::NEG_INFINITY));
}

#[test]
fn atomic_and_reduce_helpers() {
    assert_eq!(atomic_op(AtomicOp::Add, T::U32, u(u32::MAX), u(2), 0), 1);
    assert_eq!(atomic_op(AtomicOp::Min, T::I32, i(-1), i(5), 0), i(-1));
    assert_eq!(
        atomic_op(AtomicOp::Max, T::U32, u(u32::MAX), u(5), 0),
        u(u32::MAX)
    );
    assert_eq!(atomic_op(AtomicOp::Exchange, T::U64, 1, 9, 0), 9);
    assert_eq!(atomic_op(AtomicOp::Cas, T::U32, 3, 9, 3), 9);
    assert_eq!(atomic_op(AtomicOp::Cas, T::U32, 3, 9, 4), 3);
    assert_eq!(
        atomic_op(AtomicOp::Add, T::F32, f(1.5), f(2.25), 0),
        f(3.75)
    );
    // f32 atomic add flushes subnormal operands and results to a zero of their sign, as
    // PTX's `atom.add.f32` does (seen on an H200: 0 where the IEEE sum is 1e-44).
    let sub = f32::from_bits(7);
    assert_eq!(atomic_op(AtomicOp::Add, T::F32, f(0.0), f(sub), 0), f(0.0));
    assert_eq!(
        atomic_op(AtomicOp::Add, T::F32, f(-sub), f(-0.0), 0),
        f(-0.0)
    );
    assert_eq!(atomic_op(AtomicOp::Add, T::F32, f(sub), f(1.5), 0), f(1.5));
    // A normal sum whose result is subnormal is flushed too; normal results are untouched.
    let min = f32::MIN_POSITIVE;
    assert_eq!(
        atomic_op(AtomicOp::Add, T::F32, f(min * 1.5), f(-min), 0),
        f(0.0)
    );
    assert_eq!(
        atomic_op(AtomicOp::Add, T::F32, f(min * 3.0), f(-min), 0),
        f(min * 2.0)
    );
    assert!(
        f32::from_bits(atomic_op(AtomicOp::Add, T::F32, f(f32::NAN), f(sub), 0) as u32).is_nan()
    );
    assert_eq!(reduce_op(ReduceOp::Add, T::F32).1, f(-0.0));
    assert_eq!(reduce_op(ReduceOp::Min, T::I32).1, i(i32::MAX));
    assert_eq!(reduce_op(ReduceOp::Max, T::I64).1, l(i64::MIN));
    assert_eq!(reduce_op(ReduceOp::And, T::U32).1, u(u32::MAX));
}
