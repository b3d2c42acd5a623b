//! Published accuracy of the emitted math, for the runtime's GPU-vs-interpreter parity check.
//!
//! Everything not listed here is exact: `add sub mul div sqrt fma rcp` round correctly
//! (`.rn`), `rsqrt` is `rcp.rn(sqrt.rn(x))` (the same two roundings as the reference's
//! `1/sqrt(x)`), min/max/abs/neg/sign/floor/ceil/round/trunc/casts are bit-exact.
//! The transcendental functions are computed in f64 (see [`super::math`]); the bounds below
//! compare a GPU result with the reference interpreter's, which evaluates an `f32` operation
//! with Rust's `std` `f64` function and rounds once (the same method, so the two nearly always
//! agree bit for bit); the bounds still cover the error of both sides.
//!
//! A value passes when it is within `max_ulp` units in the last place of the reference, or
//! within `max_abs` of it (for results near zero, where ulps are tiny), or both are NaN.

use serde::Serialize;

use crate::ir::{ScalarType, UnOp};

/// An accepted error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Tolerance {
    /// Largest accepted distance in ulps (0 = bit-exact).
    pub max_ulp: u32,
    /// Absolute error accepted regardless of ulps (0 = none).
    pub max_abs: f64,
    /// Operand range the bound is promised for (`|x| <= domain`); `f64::INFINITY` = all.
    pub domain: f64,
}

impl Tolerance {
    /// Bit-exact.
    pub const EXACT: Tolerance = Tolerance {
        max_ulp: 0,
        max_abs: 0.0,
        domain: f64::INFINITY,
    };

    /// True when `got` is acceptable for the reference value `want` (both of type `ty`,
    /// given widened to f64; for f32 the ulps are f32 ulps).
    pub fn accepts(&self, ty: ScalarType, want: f64, got: f64) -> bool {
        if want.is_nan() || got.is_nan() {
            return want.is_nan() && got.is_nan();
        }
        if want == got {
            return true;
        }
        if (want - got).abs() <= self.max_abs {
            return true;
        }
        ulp_distance(ty, want, got) <= self.max_ulp as u64
    }
}

/// Distance in ulps between two finite-or-infinite values of type `ty`.
pub fn ulp_distance(ty: ScalarType, a: f64, b: f64) -> u64 {
    fn ordered32(x: f32) -> i64 {
        let b = x.to_bits() as i32 as i64;
        if b < 0 {
            i32::MIN as i64 - b
        } else {
            b
        }
    }
    fn ordered64(x: f64) -> i128 {
        let b = x.to_bits() as i64 as i128;
        if b < 0 {
            i64::MIN as i128 - b
        } else {
            b
        }
    }
    if ty == ScalarType::F32 {
        (ordered32(a as f32) - ordered32(b as f32)).unsigned_abs()
    } else {
        let d = (ordered64(a) - ordered64(b)).unsigned_abs();
        d.min(u64::MAX as u128) as u64
    }
}

/// The accuracy of unary op `op` on `ty` as emitted.
pub fn tolerance(op: UnOp, ty: ScalarType) -> Tolerance {
    let f32 = ty == ScalarType::F32;
    let (max_ulp, domain) = match op {
        // f32: computed in f64, rounded once (<= 1 ulp), vs. the reference's own <= 1 ulp.
        UnOp::Exp | UnOp::Exp2 | UnOp::Log | UnOp::Log2 if f32 => (2, f64::INFINITY),
        UnOp::Sin | UnOp::Cos if f32 => (2, 1048576.0),
        UnOp::Tan if f32 => (2, 1048576.0),
        UnOp::Tanh if f32 => (2, f64::INFINITY),
        UnOp::Exp | UnOp::Exp2 | UnOp::Log | UnOp::Log2 => (3, f64::INFINITY),
        UnOp::Sin | UnOp::Cos => (3, 1048576.0),
        UnOp::Tan | UnOp::Tanh => (
            4,
            if op == UnOp::Tan {
                1048576.0
            } else {
                f64::INFINITY
            },
        ),
        // rcp.rn is exact; rsqrt = rcp.rn(sqrt.rn(x)) matches 1/sqrt(x) but allow 1 ulp in
        // case the reference computes it differently.
        UnOp::Rsqrt => (1, f64::INFINITY),
        _ => return Tolerance::EXACT,
    };
    let max_abs = match op {
        UnOp::Sin | UnOp::Cos | UnOp::Tan if f32 => 1e-12,
        UnOp::Sin | UnOp::Cos | UnOp::Tan => 1e-30,
        _ => 0.0,
    };
    Tolerance {
        max_ulp,
        max_abs,
        domain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_ops_are_exact_and_approximate_ones_are_bounded() {
        assert_eq!(tolerance(UnOp::Sqrt, ScalarType::F32), Tolerance::EXACT);
        assert_eq!(tolerance(UnOp::Rcp, ScalarType::F64), Tolerance::EXACT);
        for op in [UnOp::Exp, UnOp::Log2, UnOp::Sin, UnOp::Tanh] {
            let t = tolerance(op, ScalarType::F32);
            assert!(t.max_ulp >= 1 && t.max_ulp <= 4);
        }
    }

    #[test]
    fn ulp_distance_counts_representable_steps_across_zero() {
        let one = 1.0f32;
        let next = f32::from_bits(one.to_bits() + 3);
        assert_eq!(ulp_distance(ScalarType::F32, one as f64, next as f64), 3);
        let tiny = f32::from_bits(1);
        assert_eq!(
            ulp_distance(ScalarType::F32, -(tiny as f64), tiny as f64),
            2
        );
        let t = tolerance(UnOp::Exp, ScalarType::F32);
        assert!(t.accepts(ScalarType::F32, 1.0, next as f64 - 0.0) == (3 <= t.max_ulp));
        assert!(t.accepts(ScalarType::F32, f64::NAN, f64::NAN));
        assert!(!t.accepts(ScalarType::F32, 1.0, f64::NAN));
    }
}
