//! Operators whose vyre form needs a rewrite: vyre's validator takes shift and rotate
//! operands as `u32` only (V094), integer `abs`/`sign` not at all (V102, f32 only), and `i32`
//! negation not at all (V098); and vyre's shifts may mask the amount to 5 bits (its
//! validator says the target text does), where ours give 0 for an amount of 32 or more.
//! Each rewrite computes exactly our result with operations vyre accepts. Rewrites that use
//! an operand twice refuse operands with atomics (an atomic must run once).

use vyre_foundation::ir as v;

use super::expr::bin;
use super::ExportError;
use crate::ir::{ScalarType, UnOp};

fn twice(node: &str, what: &str) -> ExportError {
    ExportError::new(
        node,
        format!("{what} of an atomic's result"),
        "the vyre form of this operator uses its operand twice, and an atomic must run once",
        "bind the atomic with its own `let` first",
    )
}

fn cast(t: v::DataType, e: v::Expr) -> v::Expr {
    v::Expr::cast(t, e)
}

fn not(e: v::Expr) -> v::Expr {
    v::Expr::UnOp {
        op: v::UnOp::BitNot,
        operand: Box::new(e),
    }
}

/// `x OP y` on `u32` with our rule that an amount of 32 or more gives 0 (unless `small`: the
/// amount is known to be below 32).
fn shift_u32(op: v::BinOp, x: v::Expr, y: v::Expr, small: bool) -> v::Expr {
    if small || matches!(op, v::BinOp::RotateLeft | v::BinOp::RotateRight) {
        // Rotates take the amount modulo 32 in both.
        return bin(op, x, y);
    }
    v::Expr::select(
        bin(v::BinOp::Lt, y.clone(), v::Expr::LitU32(32)),
        bin(op, x, y),
        v::Expr::LitU32(0),
    )
}

/// A shift or rotate of a value of type `t` by the `u32` amount `y`.
pub fn shift(
    op: v::BinOp,
    t: Option<ScalarType>,
    x: v::Expr,
    y: v::Expr,
    small: bool,
    has_atomic: bool,
    node: &str,
) -> Result<v::Expr, ExportError> {
    let rotate = matches!(op, v::BinOp::RotateLeft | v::BinOp::RotateRight);
    if has_atomic && !(small || rotate) {
        return Err(twice(node, "a shift"));
    }
    match t {
        Some(ScalarType::U32) => Ok(shift_u32(op, x, y, small)),
        Some(ScalarType::I32) if op == v::BinOp::Shr => {
            // Arithmetic shift: for x < 0, !((!x) >> y); an amount of 32 or more gives -1 or
            // 0, as ours does.
            if has_atomic {
                return Err(twice(node, "an i32 right shift"));
            }
            let u = cast(v::DataType::U32, x.clone());
            let neg = bin(v::BinOp::Lt, x, v::Expr::LitI32(0));
            let r = v::Expr::select(
                neg,
                not(shift_u32(op, not(u.clone()), y.clone(), small)),
                shift_u32(op, u, y, small),
            );
            Ok(cast(v::DataType::I32, r))
        }
        Some(ScalarType::I32) => {
            // Left shifts and rotates act on the bits alike for both signs.
            let u = cast(v::DataType::U32, x);
            Ok(cast(v::DataType::I32, shift_u32(op, u, y, small)))
        }
        other => Err(ExportError::new(
            node,
            format!(
                "shift of a {} value",
                other.map_or("?".to_string(), |t| t.to_string())
            ),
            "vyre shifts 32-bit integers only",
            "shift a u32 or i32 value",
        )),
    }
}

/// The vyre form of integer unary `op` on `x` of type `t`, when it needs one.
pub fn int_unary(
    op: UnOp,
    t: ScalarType,
    x: v::Expr,
    has_atomic: bool,
    node: &str,
) -> Result<Option<v::Expr>, ExportError> {
    let zero = |t: ScalarType| match t {
        ScalarType::I32 => v::Expr::LitI32(0),
        _ => v::Expr::LitU32(0),
    };
    let one = |t: ScalarType| match t {
        ScalarType::I32 => v::Expr::LitI32(1),
        _ => v::Expr::LitU32(1),
    };
    Ok(Some(match (op, t) {
        (UnOp::Neg, ScalarType::I32) => bin(v::BinOp::Sub, zero(t), x),
        (UnOp::Abs, ScalarType::U32) => x,
        (UnOp::Sign, ScalarType::U32) => bin(v::BinOp::Min, x, one(t)),
        (UnOp::Abs, ScalarType::I32) => {
            if has_atomic {
                return Err(twice(node, "abs"));
            }
            v::Expr::select(
                bin(v::BinOp::Lt, x.clone(), zero(t)),
                bin(v::BinOp::Sub, zero(t), x.clone()),
                x,
            )
        }
        (UnOp::Sign, ScalarType::I32) => {
            if has_atomic {
                return Err(twice(node, "sign"));
            }
            v::Expr::select(
                bin(v::BinOp::Gt, x.clone(), zero(t)),
                one(t),
                v::Expr::select(bin(v::BinOp::Lt, x, zero(t)), v::Expr::LitI32(-1), zero(t)),
            )
        }
        _ => return Ok(None),
    }))
}
