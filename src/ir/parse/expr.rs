//! Expressions: literals (bare and typed), variables, builtins, loads, operators, casts,
//! atomics and subgroup operations.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::*;
use crate::ir::types::{Scalar, ScalarType};

pub(crate) struct RawExpr(pub(crate) Expr);

impl<'de> Deserialize<'de> for RawExpr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ExprVisitor).map(RawExpr)
    }
}

pub(crate) struct ExprVisitor;

pub(crate) fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl<'de> Visitor<'de> for ExprVisitor {
    type Value = Expr;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an expression (number, true/false, variable name or operator object)")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Expr, E> {
        Ok(Expr::Lit(Literal::Typed(Scalar::Bool(v))))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Expr, E> {
        Ok(Expr::Lit(Literal::Int(v as i128)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Expr, E> {
        Ok(Expr::Lit(Literal::Int(v as i128)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Expr, E> {
        Ok(Expr::Lit(Literal::Float(f32_text::float_lit(v)?)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Expr, E> {
        if !is_ident(v) {
            return Err(err(
                format!("`{v}` is not a variable name"),
                "variables are names like `i` or `acc_2`; write other values as expressions",
            ));
        }
        Ok(Expr::Var(v.to_string()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Expr, E> {
        Err(err(
            "null is not an expression",
            "write a value or an expression object",
        ))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _seq: A) -> Result<Expr, A::Error> {
        Err(err(
            "an array is not an expression",
            "operands go inside an operator object, e.g. {\"add\": [a, b]}",
        ))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Expr, A::Error> {
        let Some(kind) = map.next_key::<String>()? else {
            return Err(err(
                "empty expression object",
                "an expression object's first key names its operator",
            ));
        };
        let mut extra = Extra::default();
        let k = kind.as_str();
        let e = if let Some(t) = ScalarType::from_name(k).filter(|t| *t != ScalarType::Bool) {
            let lit = map.next_value_seed(TypedLit(t))?;
            extra.read(&mut map, &[])?;
            Expr::Lit(Literal::Typed(lit))
        } else if let Some(op) = BinOp::from_name(k) {
            let v: Vec<RawExpr> = map.next_value()?;
            extra.read(&mut map, &[])?;
            let [a, b] = arity::<A::Error, 2>(v, k)?;
            Expr::Binary(op, bx(a), bx(b))
        } else if let Some(op) = UnOp::from_name(k) {
            let a: RawExpr = map.next_value()?;
            extra.read(&mut map, &[])?;
            Expr::Unary(op, bx(a.0))
        } else {
            match k {
                "gid" | "lid" | "wgid" | "nwg" => {
                    let s: String = map.next_value()?;
                    let axis = match s.as_str() {
                        "x" => Axis::X,
                        "y" => Axis::Y,
                        "z" => Axis::Z,
                        _ => {
                            return Err(err(
                                format!("unknown axis `{s}`"),
                                "use \"x\", \"y\" or \"z\"",
                            ))
                        }
                    };
                    extra.read(&mut map, &[])?;
                    Expr::Builtin(match k {
                        "gid" => Builtin::GlobalId(axis),
                        "lid" => Builtin::LocalId(axis),
                        "wgid" => Builtin::WorkgroupId(axis),
                        _ => Builtin::NumWorkgroups(axis),
                    })
                }
                "lane" | "subgroup_size" => {
                    map.next_value::<Empty>()?;
                    extra.read(&mut map, &[])?;
                    Expr::Builtin(if k == "lane" {
                        Builtin::Lane
                    } else {
                        Builtin::SubgroupSize
                    })
                }
                "load" => {
                    let buffer: String = map.next_value()?;
                    extra.read(&mut map, &["index"])?;
                    Expr::Load {
                        buffer,
                        index: bx(extra.take_expr::<A::Error>("index", k)?),
                    }
                }
                "len" => {
                    let b: String = map.next_value()?;
                    extra.read(&mut map, &[])?;
                    Expr::Len(b)
                }
                "select" | "fma" => {
                    let v: Vec<RawExpr> = map.next_value()?;
                    extra.read(&mut map, &[])?;
                    let [a, b, c] = arity::<A::Error, 3>(v, k)?;
                    if k == "select" {
                        Expr::Select(bx(a), bx(b), bx(c))
                    } else {
                        Expr::Fma(bx(a), bx(b), bx(c))
                    }
                }
                "cast" | "bitcast" => {
                    let s: String = map.next_value()?;
                    let t = ScalarType::from_name(&s).ok_or_else(|| {
                        err::<A::Error>(
                            format!("unknown value type `{s}`"),
                            format!(
                                "{} (storage types like u8 or f16 are not value types)",
                                suggest::fix_for(
                                    &s,
                                    &suggest::value_types(),
                                    "a value type is one of"
                                )
                            ),
                        )
                    })?;
                    extra.read(&mut map, &["value"])?;
                    let v = bx(extra.take_expr::<A::Error>("value", k)?);
                    if k == "cast" {
                        Expr::Cast(t, v)
                    } else {
                        Expr::Bitcast(t, v)
                    }
                }
                "atomic" => {
                    let s: String = map.next_value()?;
                    let op = AtomicOp::from_name(&s).ok_or_else(|| {
                        err::<A::Error>(
                            format!("unknown atomic op `{s}`"),
                            suggest::fix_for(&s, &suggest::atomic_ops(), "an atomic op is one of"),
                        )
                    })?;
                    extra.read(&mut map, &["buffer", "index", "value", "expected", "order"])?;
                    let buffer = extra.buffer.take().ok_or_else(|| {
                        err::<A::Error>("`atomic` is missing `buffer`", "add \"buffer\": \"NAME\"")
                    })?;
                    Expr::Atomic {
                        op,
                        buffer,
                        index: bx(extra.take_expr::<A::Error>("index", k)?),
                        value: bx(extra.take_expr::<A::Error>("value", k)?),
                        expected: extra.take_opt_expr("expected").map(bx),
                        order: extra.order.take().unwrap_or_default(),
                    }
                }
                "shuffle" => {
                    let v: RawExpr = map.next_value()?;
                    extra.read(&mut map, &["lane"])?;
                    Expr::Shuffle {
                        value: bx(v.0),
                        lane: bx(extra.take_expr::<A::Error>("lane", k)?),
                    }
                }
                "subgroup_reduce" => {
                    let s: String = map.next_value()?;
                    let op = ReduceOp::from_name(&s).ok_or_else(|| {
                        err::<A::Error>(
                            format!("unknown reduction `{s}`"),
                            suggest::fix_for(&s, &suggest::reduce_ops(), "a reduction is one of"),
                        )
                    })?;
                    extra.read(&mut map, &["value"])?;
                    Expr::SubgroupReduce(op, bx(extra.take_expr::<A::Error>("value", k)?))
                }
                "ballot" => {
                    let v: RawExpr = map.next_value()?;
                    extra.read(&mut map, &[])?;
                    Expr::Ballot(bx(v.0))
                }
                _ => {
                    return Err(err(
                        format!("unknown expression kind `{k}`"),
                        format!(
                            "{}; see the expression table of docs/program-format.md",
                            suggest::fix_for(
                                k,
                                &suggest::expr_kinds(),
                                "an expression kind is one of"
                            )
                        ),
                    ))
                }
            }
        };
        Ok(e)
    }
}

pub(crate) fn arity<E: de::Error, const N: usize>(
    v: Vec<RawExpr>,
    op: &str,
) -> Result<[Expr; N], E> {
    let n = v.len();
    let items: Vec<Expr> = v.into_iter().map(|e| e.0).collect();
    items.try_into().map_err(|_| {
        err(
            format!("`{op}` takes {N} operands, got {n}"),
            format!("write {{\"{op}\": [{}]}}", vec!["..."; N].join(", ")),
        )
    })
}

/// A typed literal's value: a number, or for floats also `"inf"`, `"-inf"`, `"nan"`.
pub(crate) struct TypedLit(pub(crate) ScalarType);

impl<'de> DeserializeSeed<'de> for TypedLit {
    type Value = Scalar;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TypedLit {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} number", self.0)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        int_scalar(self.0, v as i128)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        int_scalar(self.0, v as i128)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        match self.0 {
            ScalarType::F32 => {
                let f = f32_text::nearest_f32(v)?;
                if f.is_infinite() && v.is_finite() {
                    return Err(err(
                        format!("{v} does not fit f32"),
                        "use a smaller value, \"inf\", or an f64 literal",
                    ));
                }
                Ok(Scalar::F32(f))
            }
            ScalarType::F64 => Ok(Scalar::F64(v)),
            t => Err(err(
                format!("{v} is fractional but the literal is {t}"),
                format!("write a whole number for {t}, or use {{\"f32\": {v}}}"),
            )),
        }
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        let f = match v {
            "inf" => f64::INFINITY,
            "-inf" => f64::NEG_INFINITY,
            "nan" => f64::NAN,
            _ => {
                return Err(err(
                    format!("`{v}` is not a {} literal", self.0),
                    "write a number; floats also take \"inf\", \"-inf\", \"nan\"",
                ))
            }
        };
        match self.0 {
            ScalarType::F32 => Ok(Scalar::F32(f as f32)),
            ScalarType::F64 => Ok(Scalar::F64(f)),
            t => Err(err(
                format!("\"{v}\" is only valid for f32/f64, not {t}"),
                "write a whole number",
            )),
        }
    }
}

/// Converts an integer to a typed scalar, rejecting values that do not fit.
pub fn int_scalar<E: de::Error>(t: ScalarType, v: i128) -> Result<Scalar, E> {
    let s = match t {
        ScalarType::U32 => u32::try_from(v).ok().map(Scalar::U32),
        ScalarType::I32 => i32::try_from(v).ok().map(Scalar::I32),
        ScalarType::U64 => u64::try_from(v).ok().map(Scalar::U64),
        ScalarType::I64 => i64::try_from(v).ok().map(Scalar::I64),
        ScalarType::F32 => Some(Scalar::F32(v as f32)),
        ScalarType::F64 => Some(Scalar::F64(v as f64)),
        ScalarType::Bool => None,
    };
    s.ok_or_else(|| {
        err(
            format!("{v} does not fit {t}"),
            format!("use a value in the range of {t}, or a wider type"),
        )
    })
}
