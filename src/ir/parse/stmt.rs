//! Statements: `let`, `assign`, `store`, `if`, `loop`, `barrier`, `return`, `block`, each
//! with its key set checked.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::*;

pub(crate) struct RawStmt(pub(crate) Stmt);

pub(crate) fn stmt(kind: StmtKind) -> Stmt {
    Stmt {
        id: NodeId::default(),
        kind,
    }
}

pub(crate) fn stmts(v: Vec<RawStmt>) -> Vec<Stmt> {
    v.into_iter().map(|s| s.0).collect()
}

pub(crate) const STMT_KINDS: &str = "let, assign, store, if, loop, barrier, return, block";

impl<'de> Deserialize<'de> for RawStmt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StmtVisitor).map(RawStmt)
    }
}

pub(crate) struct StmtVisitor;

impl<'de> Visitor<'de> for StmtVisitor {
    type Value = Stmt;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a statement object whose first key names its kind")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Stmt, A::Error> {
        let Some(kind) = map.next_key::<String>()? else {
            return Err(err(
                "empty statement object",
                format!("a statement's first key names its kind: {STMT_KINDS}"),
            ));
        };
        let mut extra = Extra::default();
        let s = match kind.as_str() {
            "let" | "assign" => {
                let name: String = map.next_value()?;
                extra.read(&mut map, &["value"])?;
                let value = extra.take_expr::<A::Error>("value", &kind)?;
                if kind == "let" {
                    StmtKind::Let { name, value }
                } else {
                    StmtKind::Assign { name, value }
                }
            }
            "store" => {
                let buffer: String = map.next_value()?;
                extra.read(&mut map, &["index", "value"])?;
                StmtKind::Store {
                    buffer,
                    index: extra.take_expr::<A::Error>("index", &kind)?,
                    value: extra.take_expr::<A::Error>("value", &kind)?,
                }
            }
            "if" => {
                let cond: RawExpr = map.next_value()?;
                extra.read(&mut map, &["then", "else"])?;
                let has_else = extra.otherwise.is_some();
                StmtKind::If {
                    cond: cond.0,
                    then: extra.then.take().ok_or_else(|| {
                        err::<A::Error>("`if` is missing `then`", "add \"then\": [..]")
                    })?,
                    otherwise: extra.otherwise.take().unwrap_or_default(),
                    has_else,
                }
            }
            "loop" => {
                let var: String = map.next_value()?;
                extra.read(&mut map, &["from", "to", "body"])?;
                StmtKind::Loop {
                    var,
                    from: extra.take_expr::<A::Error>("from", &kind)?,
                    to: extra.take_expr::<A::Error>("to", &kind)?,
                    body: extra.body.take().ok_or_else(|| {
                        err::<A::Error>("`loop` is missing `body`", "add \"body\": [..]")
                    })?,
                }
            }
            "barrier" => {
                let s: String = map.next_value()?;
                let scope = match s.as_str() {
                    "workgroup" => BarrierScope::Workgroup,
                    "grid" => BarrierScope::Grid,
                    "subtask" => BarrierScope::Subtask { threads: 0 },
                    _ => {
                        return Err(err(
                            format!("unknown barrier scope `{s}`"),
                            "use \"workgroup\", \"grid\" or \"subtask\"",
                        ))
                    }
                };
                if let BarrierScope::Subtask { .. } = scope {
                    extra.read(&mut map, &["threads"])?;
                    let threads = extra.threads.take().ok_or_else(|| {
                        err::<A::Error>(
                            "`barrier: subtask` is missing `threads`",
                            "add \"threads\": <threads per sub-task>",
                        )
                    })?;
                    StmtKind::Barrier(BarrierScope::Subtask { threads })
                } else {
                    extra.read(&mut map, &[])?;
                    StmtKind::Barrier(scope)
                }
            }
            "return" => {
                map.next_value::<Empty>()?;
                extra.read(&mut map, &[])?;
                StmtKind::Return
            }
            "block" => {
                let b: Vec<RawStmt> = map.next_value()?;
                extra.read(&mut map, &[])?;
                StmtKind::Block(stmts(b))
            }
            other if suggest::expr_kinds().contains(&other) => {
                return Err(err(
                    format!("`{other}` is an expression, not a statement"),
                    format!(
                        "bind its result with `let`: {{\"let\": \"old\", \"value\": {{\"{other}\": ..}}}} \
                         (a statement's first key is one of {STMT_KINDS})"
                    ),
                ))
            }
            other => {
                return Err(err(
                    format!("unknown statement kind `{other}`"),
                    suggest::fix_for(
                        other,
                        &suggest::STMT_KIND_NAMES,
                        "the first key of a statement is one of",
                    ),
                ))
            }
        };
        Ok(stmt(s))
    }
}

/// The keys after the first one of a statement or expression object.
#[derive(Default)]
pub(crate) struct Extra {
    pub(crate) exprs: Vec<(&'static str, Expr)>,
    pub(crate) then: Option<Vec<Stmt>>,
    pub(crate) otherwise: Option<Vec<Stmt>>,
    pub(crate) body: Option<Vec<Stmt>>,
    pub(crate) buffer: Option<String>,
    pub(crate) order: Option<AtomicOrder>,
    /// A sub-task barrier's `threads`.
    pub(crate) threads: Option<u32>,
}

impl Extra {
    pub(crate) fn read<'de, A: MapAccess<'de>>(
        &mut self,
        map: &mut A,
        allowed: &[&'static str],
    ) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            let Some(&k) = allowed.iter().find(|&&a| a == key) else {
                let fix = if allowed.is_empty() {
                    "remove it; this kind takes no other keys".to_string()
                } else {
                    format!("remove it; allowed here: {}", allowed.join(", "))
                };
                return Err(err(format!("unexpected key `{key}`"), fix));
            };
            if self.exprs.iter().any(|(n, _)| *n == k) {
                return Err(err(format!("duplicate key `{k}`"), "keep one of them"));
            }
            match k {
                "then" => self.then = Some(stmts(map.next_value()?)),
                "else" => self.otherwise = Some(stmts(map.next_value()?)),
                "body" => self.body = Some(stmts(map.next_value()?)),
                "buffer" => self.buffer = Some(map.next_value()?),
                "threads" => {
                    if self.threads.is_some() {
                        return Err(err("duplicate key `threads`", "keep one of them"));
                    }
                    self.threads = Some(map.next_value()?);
                }
                "order" => {
                    if self.order.is_some() {
                        return Err(err("duplicate key `order`", "keep one of them"));
                    }
                    self.order = Some(map.next_value::<OrderName>()?.0);
                }
                _ => {
                    let e: RawExpr = map.next_value()?;
                    self.exprs.push((k, e.0));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn take_expr<E: de::Error>(&mut self, key: &str, kind: &str) -> Result<Expr, E> {
        match self.exprs.iter().position(|(n, _)| *n == key) {
            Some(i) => Ok(self.exprs.swap_remove(i).1),
            None => Err(err(
                format!("`{kind}` is missing `{key}`"),
                format!("add \"{key}\": <expression>"),
            )),
        }
    }

    pub(crate) fn take_opt_expr(&mut self, key: &str) -> Option<Expr> {
        let i = self.exprs.iter().position(|(n, _)| *n == key)?;
        Some(self.exprs.swap_remove(i).1)
    }
}

/// An atomic's `order` value; an unknown name fails here, so the error's path ends in
/// `.order`.
pub(crate) struct OrderName(pub(crate) AtomicOrder);

impl<'de> Deserialize<'de> for OrderName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AtomicOrder::from_name(&s).map(OrderName).ok_or_else(|| {
            let all: Vec<&str> = AtomicOrder::ALL.iter().map(|o| o.name()).collect();
            err(
                format!("unknown memory order `{s}`"),
                format!(
                    "use one of {} (or leave `order` out for seq_cst)",
                    all.join(" ")
                ),
            )
        })
    }
}

/// `{}` (the argument of `return`, `lane`, `subgroup_size`).
pub(crate) struct Empty;

impl<'de> Deserialize<'de> for Empty {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Empty;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an empty object {}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Empty, A::Error> {
                if let Some(k) = map.next_key::<String>()? {
                    return Err(err(format!("unexpected key `{k}`"), "write {}"));
                }
                Ok(Empty)
            }
        }
        d.deserialize_map(V)
    }
}
