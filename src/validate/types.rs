//! Scoping, literal typing, operand rules, buffer access and atomics.
//!
//! The pass walks the Program as written and its elaborated copy
//! ([`crate::ir::typing::elaborate`]) side by side. Elaboration decides which type every bare
//! literal takes from its context, exactly as the interpreter and the emitter will see it; the
//! written tree tells which literals were bare, so that a bare literal that does not fit the
//! type chosen for it (`5000000000` as `u32`, `1` as `f32`, `1.5` as `u32`) is reported as a
//! literal problem (V042/V043) rather than as a confusing type mismatch. Everything else is
//! checked on the elaborated types with the operand rules of `docs/semantics.md`.
//!
//! A variable whose declaration had an error gets no type (`None`); operations on it are not
//! checked further, so one mistake yields one diagnostic instead of a cascade.

use std::collections::HashMap;

use crate::finding::Severity;
use crate::ir::parse::is_ident;
use crate::ir::{
    Access, AtomicOp, BinOp, BufferDecl, ElemType, Expr, FloatLit, Literal, NodeId, Program,
    ReduceOp, Scalar, ScalarType, Stmt, StmtKind, UnOp,
};

use super::limits::expr_children;
use super::scope::Scopes;
use super::Sink;

/// Runs the pass over `p` and its elaboration `elab` (same shape, typed literals); returns
/// the type of the variable each `let` introduces (by the `let`'s node id; absent where the
/// `let`'s value had an error).
pub fn check<'a>(
    p: &'a Program,
    elab: &'a Program,
    sink: &mut Sink,
) -> HashMap<NodeId, ScalarType> {
    let mut c = Checker {
        p,
        sink,
        scopes: Scopes::default(),
        node: "",
        path: String::new(),
        let_types: HashMap::new(),
    };
    c.list(&p.body, &elab.body);
    c.let_types
}

struct Checker<'a, 's> {
    p: &'a Program,
    sink: &'s mut Sink,
    /// Visible variables and their types (`None` after an error in the declaration).
    scopes: Scopes<'a, Option<ScalarType>>,
    /// Node id of the statement being checked.
    node: &'a str,
    /// JSON path of the current operand below the statement (`value.add[1]`).
    path: String,
    /// The type each `let` gave its variable, by node id (a fact later stages reuse).
    let_types: HashMap<NodeId, ScalarType>,
}

/// The `i`-th child of the written expression, or `fallback` (the elaborated child) if the
/// shapes ever differed.
fn kid<'x>(written: &[&'x Expr], i: usize, fallback: &'x Expr) -> &'x Expr {
    written.get(i).copied().unwrap_or(fallback)
}

fn cast_hint(t: ScalarType) -> String {
    format!("convert it explicitly: {{\"cast\": \"{t}\", \"value\": ...}}")
}

fn int_range(t: ScalarType) -> (i128, i128) {
    match t {
        ScalarType::U32 => (0, u32::MAX as i128),
        ScalarType::I32 => (i32::MIN as i128, i32::MAX as i128),
        ScalarType::U64 => (0, u64::MAX as i128),
        ScalarType::I64 => (i64::MIN as i128, i64::MAX as i128),
        _ => (0, 0),
    }
}

impl<'a> Checker<'a, '_> {
    fn diag(&mut self, severity: Severity, code: &'static str, message: String, fix: String) {
        let message = if self.path.is_empty() {
            message
        } else {
            format!("in `{}`: {message}", self.path)
        };
        self.sink
            .push(severity, code, Some(self.node), message, fix);
    }

    fn err(&mut self, code: &'static str, message: String, fix: impl Into<String>) {
        self.diag(Severity::Error, code, message, fix.into());
    }

    /// Runs `f` with `seg` appended to the operand path.
    fn at<R>(&mut self, seg: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(seg);
        let r = f(self);
        self.path.truncate(len);
        r
    }

    // -----------------------------------------------------------------------------------------
    // Statements

    fn list(&mut self, written: &'a [Stmt], elab: &'a [Stmt]) {
        for (o, e) in written.iter().zip(elab) {
            self.stmt(o, e);
        }
    }

    fn block(&mut self, written: &'a [Stmt], elab: &'a [Stmt]) {
        self.scopes.push();
        self.list(written, elab);
        self.scopes.pop();
    }

    fn stmt(&mut self, o: &'a Stmt, e: &'a Stmt) {
        self.node = &o.id;
        self.path.clear();
        match (&o.kind, &e.kind) {
            (StmtKind::Let { name, value: ov }, StmtKind::Let { value: ev, .. }) => {
                let t = self.at("value", |c| c.ty(ov, ev));
                if let Some(t) = t {
                    self.let_types.insert(o.id.clone(), t);
                }
                self.check_name(name);
                self.check_shadow(name, "`let`");
                self.scopes.declare(name, &o.id, false, t);
            }
            (StmtKind::Assign { name, value: ov }, StmtKind::Assign { value: ev, .. }) => {
                let t = self.at("value", |c| c.ty(ov, ev));
                let var = self
                    .scopes
                    .lookup(name)
                    .map(|v| (v.counter, v.data, v.decl));
                match var {
                    None => self.err(
                        "V020",
                        format!("`assign` to undefined variable `{name}`"),
                        format!("declare it first with {{\"let\": \"{name}\", \"value\": ...}}, or fix the spelling"),
                    ),
                    Some((true, _, decl)) => self.err(
                        "V022",
                        format!("`{name}` is the counter of the loop at {decl}; counters cannot be assigned"),
                        "use a separate variable, or change the loop's `from`/`to`",
                    ),
                    Some((false, Some(vt), decl)) => {
                        if let Some(t) = t.filter(|&t| t != vt) {
                            if matches!(ov, Expr::Lit(Literal::Float(_))) {
                                self.at("value", |c| {
                                    c.mismatch(ov, t, vt, "V023", "the assigned value")
                                });
                            } else {
                                self.err(
                                    "V023",
                                    format!("`assign` changes the type of `{name}` (declared {vt} at {decl}) to {t}"),
                                    format!("{} or declare a new variable", cast_hint(vt)),
                                );
                            }
                        }
                    }
                    Some((false, None, _)) => {}
                }
            }
            (
                StmtKind::Store {
                    buffer,
                    index: oi,
                    value: ov,
                },
                StmtKind::Store {
                    index: ei,
                    value: ev,
                    ..
                },
            ) => {
                let buf = self.buffer(buffer);
                if let Some(b) = buf.filter(|b| !b.access.is_writable()) {
                    self.err(
                        "V031",
                        format!("`store` to `{}`, a {} buffer", b.name, b.access.name()),
                        format!(
                            "declare `{}` with \"access\": \"read_write\" (or \"write\"), or store to another buffer",
                            b.name
                        ),
                    );
                }
                self.at("index", |c| {
                    c.expect(oi, ei, ScalarType::U32, "V044", "a store index")
                });
                match buf {
                    Some(b) => {
                        let want = b.elem.value_type();
                        let what = format!("a value stored to `{}` ({} elements)", b.name, b.elem);
                        self.at("value", |c| c.expect(ov, ev, want, "V032", &what));
                    }
                    None => {
                        self.at("value", |c| c.ty(ov, ev));
                    }
                }
            }
            (
                StmtKind::If {
                    cond: oc,
                    then: ot,
                    otherwise: oe,
                    ..
                },
                StmtKind::If {
                    cond: ec,
                    then: et,
                    otherwise: ee,
                    ..
                },
            ) => {
                self.at("if", |c| {
                    c.expect(oc, ec, ScalarType::Bool, "V044", "an `if` condition")
                });
                self.block(ot, et);
                self.block(oe, ee);
            }
            (
                StmtKind::Loop {
                    var,
                    from: of,
                    to: ot,
                    body: ob,
                },
                StmtKind::Loop {
                    from: ef,
                    to: et,
                    body: eb,
                    ..
                },
            ) => {
                self.at("from", |c| {
                    c.expect(of, ef, ScalarType::U32, "V044", "a loop bound")
                });
                self.at("to", |c| {
                    c.expect(ot, et, ScalarType::U32, "V044", "a loop bound")
                });
                self.check_name(var);
                self.check_shadow(var, "loop counter");
                self.scopes.push();
                self.scopes.declare(var, &o.id, true, Some(ScalarType::U32));
                self.list(ob, eb);
                self.scopes.pop();
            }
            (StmtKind::Block(ob), StmtKind::Block(eb)) => self.block(ob, eb),
            _ => {}
        }
    }

    fn check_name(&mut self, name: &str) {
        if !is_ident(name) {
            self.err(
                "V001",
                format!("variable name `{name}` is not an identifier"),
                "use letters, digits and `_`, not starting with a digit (e.g. `acc_2`)",
            );
        }
    }

    fn check_shadow(&mut self, name: &str, what: &str) {
        if let Some(v) = self.scopes.lookup(name) {
            let kind = if v.counter {
                "loop counter"
            } else {
                "variable"
            };
            let decl = v.decl;
            self.err(
                "V021",
                format!("{what} `{name}` shadows the {kind} `{name}` declared at {decl}"),
                format!("rename it (e.g. `{name}_2`): a name may be declared once among the visible scopes; to change the existing variable use `assign`"),
            );
        }
    }

    fn buffer(&mut self, name: &str) -> Option<&'a BufferDecl> {
        let b = self.p.buffer(name);
        if b.is_none() {
            let known: Vec<&str> = self.p.buffers.iter().map(|b| b.name.as_str()).collect();
            self.err(
                "V030",
                format!("unknown buffer `{name}`"),
                if known.is_empty() {
                    "declare it in \"buffers\"".to_string()
                } else {
                    format!(
                        "declare it in \"buffers\" or use one of: {}",
                        known.join(", ")
                    )
                },
            );
        }
        b
    }

    // -----------------------------------------------------------------------------------------
    // Expressions

    /// Checks `o` (written) / `e` (elaborated) and requires type `want`.
    fn expect(&mut self, o: &Expr, e: &Expr, want: ScalarType, code: &'static str, what: &str) {
        if let Some(t) = self.ty(o, e) {
            if t != want {
                self.mismatch(o, t, want, code, what);
            }
        }
    }

    /// Reports that `o` has type `found` where `want` is needed.
    fn mismatch(
        &mut self,
        o: &Expr,
        found: ScalarType,
        want: ScalarType,
        code: &'static str,
        what: &str,
    ) {
        if let Expr::Lit(Literal::Float(FloatLit { value: f, .. })) = o {
            self.err(
                "V042",
                format!("bare literal {f:?} is fractional but {what} is {want}; there are no implicit conversions"),
                if want.is_int() {
                    "write a whole number (e.g. `1` instead of `1.0`)".to_string()
                } else {
                    cast_hint(want)
                },
            );
            return;
        }
        let fix = if want == ScalarType::Bool {
            "compare it to get a bool, e.g. {\"ne\": [x, 0]}".to_string()
        } else {
            cast_hint(want)
        };
        self.err(code, format!("{what} must be {want}, found {found}"), fix);
    }

    /// Checks a bare literal against the type elaboration gave it.
    fn literal(&mut self, written: Literal, typed: Scalar) {
        let t = typed.ty();
        match written {
            Literal::Int(v) if t.is_int() => {
                let (lo, hi) = int_range(t);
                if v < lo || v > hi {
                    self.err(
                        "V043",
                        format!("literal {v} does not fit {t} (range {lo} to {hi})"),
                        format!("use a value in range, or a typed literal of a wider type (e.g. {{\"i64\": {v}}}) and cast"),
                    );
                }
            }
            Literal::Int(v) if t.is_float() => self.err(
                "V042",
                format!("bare integer {v} is used as {t}; there are no implicit conversions"),
                format!("write it as a float: {v}.0"),
            ),
            Literal::Int(v) => self.err(
                "V042",
                format!("bare integer {v} is used as bool"),
                "write true or false",
            ),
            Literal::Float(FloatLit { value: f, f32 })
                if t == ScalarType::F32 && f.is_finite() && f32.is_infinite() =>
            {
                self.err(
                    "V043",
                    format!("literal {f:e} does not fit f32"),
                    format!("use a smaller value, or an f64 literal {{\"f64\": {f:e}}}"),
                )
            }
            _ => {}
        }
    }

    /// The elaborated type of an expression, reporting every problem inside it.
    fn ty(&mut self, o: &Expr, e: &Expr) -> Option<ScalarType> {
        let ok = expr_children(o);
        match e {
            Expr::Lit(Literal::Typed(s)) => {
                if let Expr::Lit(l @ (Literal::Int(_) | Literal::Float(_))) = o {
                    self.literal(*l, *s);
                }
                Some(s.ty())
            }
            // Elaboration types every bare literal; this is only reached if it ever did not.
            Expr::Lit(_) => crate::ir::expr_type(self.p, e, &|_| None),
            Expr::Var(n) => match self.scopes.lookup(n) {
                Some(v) => v.data,
                None => {
                    self.err(
                        "V020",
                        format!("undefined variable `{n}`"),
                        format!("declare it before this statement with {{\"let\": \"{n}\", \"value\": ...}}, or fix the spelling"),
                    );
                    None
                }
            },
            Expr::Builtin(_) => Some(ScalarType::U32),
            Expr::Clock => Some(ScalarType::U64),
            Expr::Len(b) => {
                self.at("len", |c| c.buffer(b));
                Some(ScalarType::U32)
            }
            Expr::Load { buffer, index } => {
                let oi = kid(&ok, 0, index);
                let b = self.at("load", |c| c.buffer(buffer));
                self.at("index", |c| {
                    c.expect(oi, index, ScalarType::U32, "V044", "a load index")
                });
                let b = b?;
                if b.access == Access::Write {
                    self.diag(
                        Severity::Warning,
                        "V033",
                        format!("load from `{}`, a write-only buffer", b.name),
                        format!(
                            "declare `{}` with \"access\": \"read_write\" if the kernel reads it",
                            b.name
                        ),
                    );
                }
                Some(b.elem.value_type())
            }
            Expr::Binary(op, a, b) => self.binary(*op, kid(&ok, 0, a), a, kid(&ok, 1, b), b),
            Expr::Unary(op, a) => {
                let oa = kid(&ok, 0, a);
                let t = self.at(op.name(), |c| c.ty(oa, a))?;
                let (fits, class) = match op {
                    UnOp::Neg | UnOp::Abs | UnOp::Sign => {
                        (t.is_int() || t.is_float(), "integer or float")
                    }
                    UnOp::Not | UnOp::Popcount | UnOp::Clz | UnOp::Ctz | UnOp::Brev => {
                        (t.is_int(), "integer")
                    }
                    UnOp::LNot => (t == ScalarType::Bool, "bool"),
                    _ => (t.is_float(), "float"),
                };
                if !fits {
                    let name = op.name();
                    self.err(
                        "V041",
                        format!("`{name}` takes {class} operands, not {t}"),
                        format!(
                            "{} with a type `{name}` accepts, or use another operator",
                            cast_hint_any()
                        ),
                    );
                    return None;
                }
                Some(match op {
                    UnOp::LNot | UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite => ScalarType::Bool,
                    _ => t,
                })
            }
            Expr::Select(c, a, b) => {
                let (oc, oa, ob) = (kid(&ok, 0, c), kid(&ok, 1, a), kid(&ok, 2, b));
                self.at("select[0]", |x| {
                    x.expect(oc, c, ScalarType::Bool, "V044", "a `select` condition")
                });
                let ta = self.at("select[1]", |x| x.ty(oa, a));
                let tb = self.at("select[2]", |x| x.ty(ob, b));
                self.same("select", [(oa, ta), (ob, tb)])
            }
            Expr::Cast(t, a) => {
                let oa = kid(&ok, 0, a);
                self.at("value", |c| c.ty(oa, a));
                Some(*t)
            }
            Expr::Bitcast(t, a) => {
                let oa = kid(&ok, 0, a);
                let from = self.at("value", |c| c.ty(oa, a));
                if let Some(from) = from {
                    if from == ScalarType::Bool || *t == ScalarType::Bool || from.bits() != t.bits()
                    {
                        self.err(
                            "V045",
                            format!("`bitcast` from {from} ({} bits) to {t} ({} bits)", from.bits(), t.bits()),
                            "bitcast only between same-width types (u32/i32/f32 or u64/i64/f64); use `cast` to convert values",
                        );
                    }
                }
                Some(*t)
            }
            Expr::Fma(a, b, c) => {
                let (oa, ob, oc) = (kid(&ok, 0, a), kid(&ok, 1, b), kid(&ok, 2, c));
                let ta = self.at("fma[0]", |x| x.ty(oa, a));
                let tb = self.at("fma[1]", |x| x.ty(ob, b));
                let tc = self.at("fma[2]", |x| x.ty(oc, c));
                let t = self.same("fma", [(oa, ta), (ob, tb), (oc, tc)])?;
                if !t.is_float() {
                    self.err(
                        "V041",
                        format!("`fma` takes float operands, not {t}"),
                        "use {\"add\": [{\"mul\": [a, b]}, c]} for integers",
                    );
                    return None;
                }
                Some(t)
            }
            Expr::Atomic {
                op,
                buffer,
                index,
                value,
                expected,
                ..
            } => {
                let oi = kid(&ok, 0, index);
                let ov = kid(&ok, 1, value);
                self.atomic(
                    *op,
                    buffer,
                    (oi, index),
                    (ov, value),
                    expected.as_deref().map(|x| (kid(&ok, 2, x), x)),
                )
            }
            Expr::Shuffle { value, lane } => {
                let (ov, ol) = (kid(&ok, 0, value), kid(&ok, 1, lane));
                let t = self.at("shuffle", |c| c.ty(ov, value));
                self.at("lane", |c| {
                    c.expect(ol, lane, ScalarType::U32, "V044", "a shuffle lane")
                });
                t
            }
            Expr::SubgroupReduce(op, v) => {
                let ov = kid(&ok, 0, v);
                let t = self.at("value", |c| c.ty(ov, v))?;
                let (fits, class) = match op {
                    ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => {
                        (t.is_int() || t == ScalarType::Bool, "integer or bool")
                    }
                    _ => (t.is_int() || t.is_float(), "integer or float"),
                };
                if !fits {
                    self.err(
                        "V041",
                        format!(
                            "`subgroup_reduce` `{}` takes {class} values, not {t}",
                            op.name()
                        ),
                        format!("{} with a type the reduction accepts", cast_hint_any()),
                    );
                    return None;
                }
                Some(t)
            }
            Expr::Ballot(v) => {
                let ov = kid(&ok, 0, v);
                self.at("ballot", |c| {
                    c.expect(ov, v, ScalarType::Bool, "V044", "a `ballot` predicate")
                });
                Some(ScalarType::U32)
            }
        }
    }

    /// All operands must have the same type; returns it (or `None` after an error).
    fn same<const N: usize>(
        &mut self,
        op: &str,
        operands: [(&Expr, Option<ScalarType>); N],
    ) -> Option<ScalarType> {
        let mut types = Vec::with_capacity(N);
        for (_, t) in &operands {
            types.push((*t)?);
        }
        let first = types.first().copied()?;
        if let Some(i) = types.iter().position(|&t| t != first) {
            let other = types[i];
            let bare = operands.iter().find_map(|(o, _)| match o {
                Expr::Lit(Literal::Float(f)) => Some(f.value),
                _ => None,
            });
            match bare {
                Some(f) => self.err(
                    "V042",
                    format!("bare literal {f:?} is fractional but the operands of `{op}` are {}; there are no implicit conversions", types.iter().find(|t| !t.is_float()).copied().unwrap_or(first)),
                    "write a whole number, or cast the other operand to a float type",
                ),
                None => self.err(
                    "V040",
                    format!("operands of `{op}` have different types: {first} and {other}"),
                    format!("there are no implicit conversions: cast one side, e.g. {{\"cast\": \"{first}\", \"value\": ...}}"),
                ),
            }
            return None;
        }
        Some(first)
    }

    fn binary(
        &mut self,
        op: BinOp,
        oa: &Expr,
        a: &Expr,
        ob: &Expr,
        b: &Expr,
    ) -> Option<ScalarType> {
        let name = op.name();
        let ta = self.at(&format!("{name}[0]"), |c| c.ty(oa, a));
        if op.is_shift() {
            self.at(&format!("{name}[1]"), |c| {
                c.expect(
                    ob,
                    b,
                    ScalarType::U32,
                    "V044",
                    &format!("the amount of `{name}`"),
                )
            });
            let t = ta?;
            if !t.is_int() {
                self.err(
                    "V041",
                    format!("`{name}` takes an integer left operand, not {t}"),
                    format!("{} (shifts work on u32, i32, u64, i64)", cast_hint_any()),
                );
                return None;
            }
            return Some(t);
        }
        if matches!(op, BinOp::LAnd | BinOp::LOr) {
            if let Some(t) = ta.filter(|&t| t != ScalarType::Bool) {
                self.at(&format!("{name}[0]"), |c| {
                    c.mismatch(
                        oa,
                        t,
                        ScalarType::Bool,
                        "V044",
                        &format!("an operand of `{name}`"),
                    )
                });
            }
            self.at(&format!("{name}[1]"), |c| {
                c.expect(
                    ob,
                    b,
                    ScalarType::Bool,
                    "V044",
                    &format!("an operand of `{name}`"),
                )
            });
            return Some(ScalarType::Bool);
        }
        let tb = self.at(&format!("{name}[1]"), |c| c.ty(ob, b));
        let result_if_unknown = op.is_comparison().then_some(ScalarType::Bool);
        let Some(t) = self.same(name, [(oa, ta), (ob, tb)]) else {
            return result_if_unknown;
        };
        let (fits, class) = match op {
            BinOp::Rem | BinOp::MulHi | BinOp::AddSat | BinOp::SubSat | BinOp::MulSat => {
                (t.is_int(), "integer")
            }
            BinOp::And | BinOp::Or | BinOp::Xor => {
                (t.is_int() || t == ScalarType::Bool, "integer or bool")
            }
            BinOp::Eq | BinOp::Ne => (true, "any"),
            _ => (t.is_int() || t.is_float(), "integer or float"),
        };
        if !fits {
            self.err(
                "V041",
                format!("`{name}` takes {class} operands, not {t}"),
                format!(
                    "{} with a type `{name}` accepts, or use another operator",
                    cast_hint_any()
                ),
            );
            return result_if_unknown;
        }
        Some(if op.is_comparison() {
            ScalarType::Bool
        } else {
            t
        })
    }

    fn atomic(
        &mut self,
        op: AtomicOp,
        buffer: &str,
        (oi, index): (&Expr, &Expr),
        (ov, value): (&Expr, &Expr),
        expected: Option<(&Expr, &Expr)>,
    ) -> Option<ScalarType> {
        let name = op.name();
        let b = self.at("buffer", |c| c.buffer(buffer));
        self.at("index", |c| {
            c.expect(oi, index, ScalarType::U32, "V044", "an atomic index")
        });
        let want = b.map(|b| b.elem.value_type());
        let what = format!("the operand of atomic `{name}`");
        match want {
            Some(w) => self.at("value", |c| c.expect(ov, value, w, "V044", &what)),
            None => {
                self.at("value", |c| c.ty(ov, value));
            }
        }
        match (op, expected) {
            (AtomicOp::Cas, None) => self.err(
                "V052",
                "atomic `cas` needs `expected` (the value to compare with)".into(),
                "add \"expected\": E; `value` is stored when the old value equals it",
            ),
            (AtomicOp::Cas, Some((oe, ee))) => match want {
                Some(w) => self.at("expected", |c| {
                    c.expect(oe, ee, w, "V044", "the `expected` of atomic `cas`")
                }),
                None => {
                    self.at("expected", |c| c.ty(oe, ee));
                }
            },
            (_, Some((oe, ee))) => {
                self.at("expected", |c| c.ty(oe, ee));
                self.err(
                    "V052",
                    format!("`expected` only applies to atomic `cas`, not `{name}`"),
                    "remove \"expected\", or use \"atomic\": \"cas\"",
                );
            }
            (_, None) => {}
        }
        let b = b?;
        if !matches!(b.access, Access::ReadWrite | Access::Workgroup) {
            self.err(
                "V050",
                format!("atomic `{name}` on `{}`, a {} buffer; atomics need a read_write or workgroup buffer", b.name, b.access.name()),
                format!("declare `{}` with \"access\": \"read_write\"", b.name),
            );
        }
        let supported = matches!(b.elem, ElemType::U32 | ElemType::I32 | ElemType::U64)
            || (b.elem == ElemType::F32 && op == AtomicOp::Add);
        if !supported {
            self.err(
                "V051",
                format!("atomic `{name}` on `{}` with {} elements; atomics support u32, i32 and u64 elements (and f32 for `add`)", b.name, b.elem),
                "keep atomically updated values in a u32, i32 or u64 buffer (f32 only with `add`)",
            );
        }
        Some(b.elem.value_type())
    }
}

fn cast_hint_any() -> &'static str {
    "convert the operand with {\"cast\": \"TYPE\", \"value\": ...}"
}
