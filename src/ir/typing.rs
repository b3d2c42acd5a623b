//! Expression types and literal elaboration.
//!
//! Bare literals (`7`, `1.5`) take their type from context (docs/program-format.md, "Bare numeric
//! literals"). [`elaborate`] rewrites every bare literal of a Program into a typed one, so that
//! the interpreter and the emitter never see an untyped literal; [`expr_type`] then gives the
//! type of any expression from the variable types in scope. Both assume a Program the validator
//! accepted: on an invalid Program they do their best and never panic, but the result means
//! nothing.

use std::collections::HashMap;

use super::ast::*;
use super::types::{Scalar, ScalarType};

/// The type of `e`, given the types of the variables in scope.
///
/// Returns `None` for untyped literals without context, unknown variables or buffers, and
/// ill-typed operands.
pub fn expr_type(
    program: &Program,
    e: &Expr,
    var: &dyn Fn(&str) -> Option<ScalarType>,
) -> Option<ScalarType> {
    Some(match e {
        Expr::Lit(Literal::Typed(s)) => s.ty(),
        Expr::Lit(Literal::Int(v)) => {
            if *v < 0 {
                ScalarType::I32
            } else {
                ScalarType::U32
            }
        }
        Expr::Lit(Literal::Float(_)) => ScalarType::F32,
        Expr::Var(n) => var(n)?,
        Expr::Builtin(_) | Expr::Len(_) | Expr::Ballot(_) => ScalarType::U32,
        Expr::Clock => ScalarType::U64,
        Expr::Load { buffer, .. } | Expr::Atomic { buffer, .. } => {
            program.buffer(buffer)?.elem.value_type()
        }
        Expr::Binary(op, a, b) => {
            if op.yields_bool() {
                ScalarType::Bool
            } else if op.is_shift() || !is_bare(a) {
                expr_type(program, a, var)?
            } else if !is_bare(b) {
                expr_type(program, b, var)?
            } else {
                // Two bare literals: the same default `elaborate` gives them without context.
                bare_default(a, b)?
            }
        }
        Expr::Unary(op, a) => match op {
            UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite | UnOp::LNot => ScalarType::Bool,
            _ => expr_type(program, a, var)?,
        },
        Expr::Select(_, a, b) => match (is_bare(a), is_bare(b)) {
            (false, _) => expr_type(program, a, var)?,
            (true, false) => expr_type(program, b, var)?,
            (true, true) => bare_default(a, b)?,
        },
        Expr::Cast(t, _) | Expr::Bitcast(t, _) => *t,
        Expr::Fma(a, b, c) => [a, b, c]
            .into_iter()
            .find(|x| !is_bare(x))
            .and_then(|x| expr_type(program, x, var))
            .unwrap_or(ScalarType::F32),
        Expr::Shuffle { value, .. } | Expr::SubgroupReduce(_, value) => {
            expr_type(program, value, var)?
        }
    })
}

/// True for a literal whose type comes from context.
pub fn is_bare(e: &Expr) -> bool {
    matches!(e, Expr::Lit(Literal::Int(_) | Literal::Float(_)))
}

/// Converts a bare literal to type `t` (wrapping or rounding if it does not fit: the validator
/// rejects such literals, so this only matters for invalid Programs).
pub fn typed_literal(l: Literal, t: ScalarType) -> Scalar {
    match l {
        Literal::Typed(s) => s,
        Literal::Int(v) => match t {
            ScalarType::Bool => Scalar::Bool(v != 0),
            ScalarType::U32 => Scalar::U32(v as u32),
            ScalarType::I32 => Scalar::I32(v as i32),
            ScalarType::U64 => Scalar::U64(v as u64),
            ScalarType::I64 => Scalar::I64(v as i64),
            ScalarType::F32 => Scalar::F32(v as f32),
            ScalarType::F64 => Scalar::F64(v as f64),
        },
        Literal::Float(f) => match t {
            ScalarType::F64 => Scalar::F64(f.value),
            _ => Scalar::F32(f.f32),
        },
    }
}

/// Returns a copy of `program` in which every bare literal is typed from its context.
pub fn elaborate(program: &Program) -> Program {
    let mut out = program.clone();
    let mut scopes: Vec<HashMap<String, ScalarType>> = vec![HashMap::new()];
    let mut body = std::mem::take(&mut out.body);
    elab_list(&out, &mut body, &mut scopes);
    out.body = body;
    out
}

fn lookup(scopes: &[HashMap<String, ScalarType>], n: &str) -> Option<ScalarType> {
    scopes.iter().rev().find_map(|s| s.get(n).copied())
}

fn elab_list(p: &Program, list: &mut [Stmt], scopes: &mut Vec<HashMap<String, ScalarType>>) {
    for s in list {
        match &mut s.kind {
            StmtKind::Let { name, value } => {
                elab_expr(p, value, None, scopes);
                let t = expr_type(p, value, &|n| lookup(scopes, n)).unwrap_or(ScalarType::U32);
                if let Some(top) = scopes.last_mut() {
                    top.insert(name.clone(), t);
                }
            }
            StmtKind::Assign { name, value } => {
                let t = lookup(scopes, name);
                elab_expr(p, value, t, scopes);
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                elab_expr(p, index, Some(ScalarType::U32), scopes);
                let t = p.buffer(buffer).map(|b| b.elem.value_type());
                elab_expr(p, value, t, scopes);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                elab_expr(p, cond, Some(ScalarType::Bool), scopes);
                scopes.push(HashMap::new());
                elab_list(p, then, scopes);
                scopes.pop();
                scopes.push(HashMap::new());
                elab_list(p, otherwise, scopes);
                scopes.pop();
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                elab_expr(p, from, Some(ScalarType::U32), scopes);
                elab_expr(p, to, Some(ScalarType::U32), scopes);
                scopes.push(HashMap::from([(var.clone(), ScalarType::U32)]));
                elab_list(p, body, scopes);
                scopes.pop();
            }
            StmtKind::Block(b) => {
                scopes.push(HashMap::new());
                elab_list(p, b, scopes);
                scopes.pop();
            }
            StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {}
        }
    }
}

/// Types the bare literals of `e`; `want` is the type the context expects, if any.
fn elab_expr(
    p: &Program,
    e: &mut Expr,
    want: Option<ScalarType>,
    scopes: &[HashMap<String, ScalarType>],
) {
    let ty_of = |x: &Expr| expr_type(p, x, &|n| lookup(scopes, n));
    match e {
        Expr::Lit(l @ (Literal::Int(_) | Literal::Float(_))) => {
            let t = match (*l, want) {
                // A fractional literal in an integer context is invalid; keep it a float.
                (Literal::Float(_), Some(t)) if !t.is_float() => ScalarType::F32,
                (_, Some(t)) => t,
                (Literal::Int(v), None) if v < 0 => ScalarType::I32,
                (Literal::Int(_), None) => ScalarType::U32,
                _ => ScalarType::F32,
            };
            *l = Literal::Typed(typed_literal(*l, t));
        }
        Expr::Lit(_) | Expr::Var(_) | Expr::Builtin(_) | Expr::Len(_) | Expr::Clock => {}
        Expr::Load { index, .. } => elab_expr(p, index, Some(ScalarType::U32), scopes),
        Expr::Binary(op, a, b) => {
            if op.is_shift() {
                elab_expr(p, a, want, scopes);
                elab_expr(p, b, Some(ScalarType::U32), scopes);
            } else if matches!(op, BinOp::LAnd | BinOp::LOr) {
                elab_expr(p, a, Some(ScalarType::Bool), scopes);
                elab_expr(p, b, Some(ScalarType::Bool), scopes);
            } else {
                // The non-bare side decides; with two bare sides the context (or the default)
                // does, except for comparisons whose result type says nothing about operands.
                let ctx = if op.is_comparison() { None } else { want };
                let t = match (is_bare(a), is_bare(b)) {
                    (false, _) => ty_of(a),
                    (true, false) => ty_of(b),
                    (true, true) => ctx.or_else(|| bare_default(a, b)),
                };
                elab_expr(p, a, t, scopes);
                elab_expr(p, b, t, scopes);
            }
        }
        Expr::Unary(op, a) => {
            let t = match op {
                UnOp::LNot => Some(ScalarType::Bool),
                UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite => None,
                _ => want,
            };
            elab_expr(p, a, t, scopes)
        }
        Expr::Select(c, a, b) => {
            elab_expr(p, c, Some(ScalarType::Bool), scopes);
            let t = match (is_bare(a), is_bare(b)) {
                (false, _) => ty_of(a),
                (true, false) => ty_of(b),
                (true, true) => want.or_else(|| bare_default(a, b)),
            };
            elab_expr(p, a, t, scopes);
            elab_expr(p, b, t, scopes);
        }
        Expr::Cast(_, a) | Expr::Bitcast(_, a) => elab_expr(p, a, None, scopes),
        Expr::Fma(a, b, c) => {
            let t = [&**a, &**b, &**c]
                .into_iter()
                .find(|x| !is_bare(x))
                .and_then(ty_of)
                .or(want);
            elab_expr(p, a, t, scopes);
            elab_expr(p, b, t, scopes);
            elab_expr(p, c, t, scopes);
        }
        Expr::Atomic {
            buffer,
            index,
            value,
            expected,
            ..
        } => {
            let t = p.buffer(buffer).map(|b| b.elem.value_type());
            elab_expr(p, index, Some(ScalarType::U32), scopes);
            elab_expr(p, value, t, scopes);
            if let Some(x) = expected {
                elab_expr(p, x, t, scopes);
            }
        }
        Expr::Shuffle { value, lane } => {
            elab_expr(p, value, want, scopes);
            elab_expr(p, lane, Some(ScalarType::U32), scopes);
        }
        Expr::SubgroupReduce(_, v) => elab_expr(p, v, want, scopes),
        Expr::Ballot(v) => elab_expr(p, v, Some(ScalarType::Bool), scopes),
    }
}

/// Default type for an operation between two bare literals: f32 if either is fractional,
/// i32 if either is negative, else u32.
fn bare_default(a: &Expr, b: &Expr) -> Option<ScalarType> {
    let lits = [a, b].map(|x| match x {
        Expr::Lit(l) => Some(*l),
        _ => None,
    });
    if lits.iter().any(|l| matches!(l, Some(Literal::Float(_)))) {
        Some(ScalarType::F32)
    } else if lits
        .iter()
        .any(|l| matches!(l, Some(Literal::Int(v)) if *v < 0))
    {
        Some(ScalarType::I32)
    } else {
        Some(ScalarType::U32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse_program;

    #[test]
    fn nested_bare_literals_agree_with_elaborate() {
        let text = r#"{"format":1,"name":"t","workgroup_size":[1,1,1],"buffers":[],
            "body":[{"let":"x","value":{"i32":3}},
                    {"let":"y","value":{"add":[{"add":[-1,1]},"x"]}},
                    {"let":"z","value":{"select":[true,-2,1]}}]}"#;
        let p = elaborate(&parse_program(text, "t.json").unwrap());
        let crate::ir::StmtKind::Let { value, .. } = &p.body[1].kind else {
            panic!("let expected")
        };
        let crate::ir::Expr::Binary(_, inner, _) = value else {
            panic!("add expected")
        };
        let crate::ir::Expr::Binary(_, l, _) = &**inner else {
            panic!("add expected")
        };
        assert_eq!(**l, Expr::Lit(Literal::Typed(Scalar::I32(-1))));
        let untyped = parse_program(text, "t.json").unwrap();
        let crate::ir::StmtKind::Let { value, .. } = &untyped.body[2].kind else {
            panic!("let expected")
        };
        assert_eq!(expr_type(&untyped, value, &|_| None), Some(ScalarType::I32));
    }
}
