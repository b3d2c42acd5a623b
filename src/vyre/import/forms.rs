//! The export's `u32` forms of `i32` operators vyre does not have (see
//! `crate::vyre::export::ops`), recognised on the way back and mapped to the `i32` operator.
//!
//! Each shape is recognised on our expression, after its parts are converted, and only the
//! exact shape the export writes: the rewrite is an identity of the format's semantics
//! (docs/semantics.md), so it holds whatever vyre Program wrote the shape. A shape that uses
//! an operand more than once needs the operand free of atomics, whose second evaluation is
//! not the first's.

use super::expr::pure;
use super::*;
use crate::ir::UnOp;

fn i32_lit(e: &Expr, v: i32) -> bool {
    matches!(e, Expr::Lit(Literal::Typed(Scalar::I32(x))) if *x == v)
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::Binary(op, Box::new(a), Box::new(b))
}

/// `x` when `e` is `u32(x)` with `x` of type `i32`.
fn as_u32<'e>(cx: &Cx, e: &'e Expr) -> Option<&'e Expr> {
    match e {
        Expr::Cast(ScalarType::U32, x) if cx.type_of(x) == Some(ScalarType::I32) => Some(x),
        _ => None,
    }
}

impl Cx {
    /// The `i32` operator whose export's form `e` is, or `e` itself.
    pub(super) fn i32_form(&self, e: Expr) -> Expr {
        self.recognised(&e).unwrap_or(e)
    }

    fn recognised(&self, e: &Expr) -> Option<Expr> {
        let is_i32 = |x: &Expr| self.type_of(x) == Some(ScalarType::I32);
        match e {
            // `0 - x`: negation (both wrap; vyre has no i32 negation).
            Expr::Binary(BinOp::Sub, z, x) if i32_lit(z, 0) && is_i32(x) => {
                Some(Expr::Unary(UnOp::Neg, x.clone()))
            }
            // `i32(u32(x) OP y)`: shifts and rotates act on the bits alike for both signs.
            Expr::Cast(ScalarType::I32, inner) => match &**inner {
                Expr::Binary(op @ (BinOp::Shl | BinOp::Rotl | BinOp::Rotr), u, y) => {
                    let x = as_u32(self, u)?;
                    Some(bin(*op, x.clone(), (**y).clone()))
                }
                // `i32(select(x < 0, ~(~u32(x) >> y), u32(x) >> y))`: the arithmetic shift.
                Expr::Select(c, neg, pos) => {
                    let Expr::Binary(BinOp::Lt, x, z) = &**c else {
                        return None;
                    };
                    let Expr::Unary(UnOp::Not, n) = &**neg else {
                        return None;
                    };
                    let Expr::Binary(BinOp::Shr, nu, y1) = &**n else {
                        return None;
                    };
                    let Expr::Unary(UnOp::Not, u1) = &**nu else {
                        return None;
                    };
                    let Expr::Binary(BinOp::Shr, u2, y2) = &**pos else {
                        return None;
                    };
                    let (x1, x2) = (as_u32(self, u1)?, as_u32(self, u2)?);
                    let ok = i32_lit(z, 0) && x1 == &**x && x2 == &**x && y1 == y2;
                    (ok && pure(x) && pure(y1))
                        .then(|| bin(BinOp::Shr, (**x).clone(), (**y1).clone()))
                }
                _ => None,
            },
            Expr::Select(c, t, f) => {
                let (cop, a, b) = match &**c {
                    Expr::Binary(op @ (BinOp::Lt | BinOp::Gt), a, b) => (*op, &**a, &**b),
                    _ => return None,
                };
                if !is_i32(a) || !pure(a) || !pure(b) {
                    return None;
                }
                match (cop, &**t, &**f) {
                    // `select(x < 0, -x, x)`: abs (abs(MIN) = MIN in both).
                    (BinOp::Lt, Expr::Unary(UnOp::Neg, n), x)
                        if i32_lit(b, 0) && &**n == a && x == a =>
                    {
                        Some(Expr::Unary(UnOp::Abs, Box::new(a.clone())))
                    }
                    // `select(a < b, b - a, a - b)`: absdiff, the wrapping max - min.
                    (
                        BinOp::Lt,
                        Expr::Binary(BinOp::Sub, b1, a1),
                        Expr::Binary(BinOp::Sub, a2, b2),
                    ) if &**a1 == a && &**a2 == a && &**b1 == b && &**b2 == b => {
                        Some(bin(BinOp::AbsDiff, a.clone(), b.clone()))
                    }
                    // `select(x > 0, 1, select(x < 0, -1, 0))`: sign.
                    (BinOp::Gt, one, Expr::Select(c2, m, z))
                        if i32_lit(b, 0) && i32_lit(one, 1) =>
                    {
                        let ok = matches!(&**c2, Expr::Binary(BinOp::Lt, x, z2) if &**x == a && i32_lit(z2, 0))
                            && i32_lit(m, -1)
                            && i32_lit(z, 0);
                        ok.then(|| Expr::Unary(UnOp::Sign, Box::new(a.clone())))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}
