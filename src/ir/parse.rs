//! JSON -> [`Program`] for format version 1.
//!
//! Parsing is one streaming pass of `serde_json` through hand-written visitors, wrapped in
//! `serde_path_to_error` so that every error carries the JSON path (`body[1].then[0].value`)
//! as well as the line and column. `serde_json`'s recursion limit (128 levels of arrays and
//! objects) bounds nesting, so deep input yields an error instead of a stack overflow.

use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::ast::*;
use super::run_spec::*;
use super::types::{ElemType, Scalar, ScalarType};

/// Largest Program file accepted (bytes); larger inputs are rejected before parsing.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Separates a message from its fix hint inside serde's custom error strings.
pub(crate) const FIX_SEP: &str = "\u{1f}Fix: ";

/// A Program file that could not be parsed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}:{line}:{column}: {where_}{message}\n  Fix: {fix}", where_ = if path.is_empty() { String::new() } else { format!("at {path}: ") })]
pub struct ParseError {
    /// File name as given.
    pub file: String,
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// 1-based column (0 when unknown).
    pub column: usize,
    /// JSON path of the offending value (empty for the document itself).
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// Reads and parses a Program file.
pub fn load_program(path: &Path) -> Result<Program, ParseError> {
    let file = path.display().to_string();
    let fail = |message: String, fix: &str| ParseError {
        file: file.clone(),
        line: 0,
        column: 0,
        path: String::new(),
        message,
        fix: fix.to_string(),
    };
    // Only a regular file, read no further than the limit (a FIFO must not block, /dev/zero
    // must not fill memory); see util::read_limited.
    let bytes = crate::util::read_limited(path, MAX_FILE_BYTES, "Program file").map_err(|e| {
        let fix = match e.kind {
            crate::util::ReadErrorKind::TooLarge => {
                "move large input data to a `run.inputs.<buf>.file` raw binary file"
            }
            crate::util::ReadErrorKind::NotRegular => "pass a *.json Program file",
            _ => "check the path and that the file is readable",
        };
        fail(e.message, fix)
    })?;
    let text = match std::str::from_utf8(&bytes) {
        Ok(t) => t,
        Err(e) => {
            let (line, column) = line_col(&bytes[..e.valid_up_to()]);
            return Err(ParseError {
                file,
                line,
                column,
                path: String::new(),
                message: format!("invalid UTF-8 at byte {}", e.valid_up_to()),
                fix: "save the file as UTF-8 JSON".into(),
            });
        }
    };
    parse_program(text, &file)
}

pub(crate) fn line_col(prefix: &[u8]) -> (usize, usize) {
    let line = prefix.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = prefix.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

/// Parses Program JSON text; `file` names it in errors.
pub fn parse_program(text: &str, file: &str) -> Result<Program, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError {
            file: file.into(),
            line: 1,
            column: 1,
            path: String::new(),
            message: "empty file".into(),
            fix: "a Program is a JSON object: {\"format\": 1, \"name\": ..., \"workgroup_size\": [..], \"buffers\": [..], \"body\": [..]}".into(),
        });
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let result: Result<RawProgram, _> = serde_path_to_error::deserialize(&mut de);
    let raw = match result {
        Ok(p) => p,
        Err(e) => {
            let path = e.path().to_string();
            return Err(from_json_error(file, path, e.into_inner()));
        }
    };
    if let Err(e) = de.end() {
        return Err(from_json_error(file, String::new(), e));
    }
    Ok(raw.0)
}

pub(crate) fn from_json_error(file: &str, path: String, e: serde_json::Error) -> ParseError {
    let full = e.to_string();
    // serde_json appends " at line L column C"; we report those as fields instead.
    let msg = match full.rfind(" at line ") {
        Some(i) => full[..i].to_string(),
        None => full,
    };
    let (message, fix) = match msg.split_once(FIX_SEP) {
        Some((m, f)) => (m.to_string(), f.to_string()),
        None => {
            let fix = generic_fix(&e, &msg);
            (msg, fix)
        }
    };
    let path = tidy_path(&path);
    ParseError {
        file: file.into(),
        line: e.line(),
        column: e.column().max(1),
        path,
        message,
        fix,
    }
}

/// Drops serde_path_to_error's placeholders and shortens very deep paths for display.
fn tidy_path(path: &str) -> String {
    let p = path.replace(".?", "").replace('?', "");
    let p = if p == "." { String::new() } else { p };
    if p.len() > 160 {
        format!("{} ... {}", &p[..80], &p[p.len() - 60..])
    } else {
        p
    }
}

fn generic_fix(e: &serde_json::Error, msg: &str) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Eof => "the file ends early: close every `{`, `[` and string".into(),
        Category::Syntax if msg.contains("recursion limit") => {
            "nesting is limited to 128 levels of JSON arrays/objects: split deep expressions with `let`".into()
        }
        Category::Syntax => "fix the JSON syntax at this position".into(),
        Category::Io => "check that the file is readable".into(),
        Category::Data if msg.contains("missing field") => {
            "add the missing field (see docs/program-format.md)".into()
        }
        Category::Data if msg.contains("unknown field") => {
            "remove or rename the field (see docs/program-format.md)".into()
        }
        Category::Data => "give the value the type docs/program-format.md asks for here".into(),
    }
}

pub(crate) fn err<E: de::Error>(message: impl fmt::Display, fix: impl fmt::Display) -> E {
    E::custom(format!("{message}{FIX_SEP}{fix}"))
}

// ---------------------------------------------------------------------------------------------
// Top level

pub(crate) struct RawProgram(pub(crate) Program);

impl<'de> Deserialize<'de> for RawProgram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ProgramVisitor).map(RawProgram)
    }
}

pub(crate) struct ProgramVisitor;

const PROGRAM_KEYS: &str = "format, name, doc, workgroup_size, buffers, body, run";

impl<'de> Visitor<'de> for ProgramVisitor {
    type Value = Program;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Program object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Program, A::Error> {
        let mut format = None;
        let mut name = None;
        let mut doc = None;
        let mut wg = None;
        let mut buffers = None;
        let mut body = None;
        let mut run = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => {
                    let v: u64 = map.next_value()?;
                    if v != 1 {
                        return Err(err(
                            format!("format {v} is not supported (this build reads format 1)"),
                            "set \"format\": 1, or use a vyrescope that reads this format",
                        ));
                    }
                    format = Some(v);
                }
                "name" => name = Some(map.next_value::<KernelName>()?.0),
                "doc" => doc = Some(map.next_value::<String>()?),
                "workgroup_size" => wg = Some(map.next_value::<Dims>()?.0),
                "buffers" => buffers = Some(map.next_value::<Vec<RawBuffer>>()?),
                "body" => body = Some(map.next_value::<Vec<RawStmt>>()?),
                "run" => run = Some(map.next_value::<RawRun>()?.0),
                other => {
                    return Err(err(
                        format!("unknown key `{other}`"),
                        format!("remove it; a Program has the keys {PROGRAM_KEYS}"),
                    ))
                }
            }
        }
        let missing = |k: &str| {
            err::<A::Error>(
                format!("missing key `{k}`"),
                format!("add \"{k}\" to the top-level object"),
            )
        };
        format.ok_or_else(|| missing("format"))?;
        let mut body: Vec<Stmt> = body
            .ok_or_else(|| missing("body"))?
            .into_iter()
            .map(|s| s.0)
            .collect();
        assign_ids(&mut body, "body");
        Ok(Program {
            name: name.ok_or_else(|| missing("name"))?,
            doc,
            workgroup_size: wg.ok_or_else(|| missing("workgroup_size"))?,
            buffers: buffers
                .ok_or_else(|| missing("buffers"))?
                .into_iter()
                .map(|b| b.0)
                .collect(),
            body,
            run,
        })
    }
}

/// Sets node ids (JSON paths) on a statement list and everything below it.
pub fn assign_ids(list: &mut [Stmt], prefix: &str) {
    for (i, s) in list.iter_mut().enumerate() {
        s.id = NodeId::new(format!("{prefix}[{i}]"));
        let id = s.id.clone();
        match &mut s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                assign_ids(then, &format!("{id}.then"));
                assign_ids(otherwise, &format!("{id}.else"));
            }
            StmtKind::Loop { body, .. } => assign_ids(body, &format!("{id}.body")),
            StmtKind::Block(b) => assign_ids(b, &format!("{id}.block")),
            _ => {}
        }
    }
}

pub(crate) struct KernelName(pub(crate) String);

impl<'de> Deserialize<'de> for KernelName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if !is_ident(&s) {
            return Err(err(
                format!("`{s}` is not a valid name"),
                "use letters, digits and `_`, not starting with a digit (e.g. \"vadd_f32\")",
            ));
        }
        Ok(KernelName(s))
    }
}

/// True for `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

pub(crate) struct Dims(pub(crate) [u32; 3]);

impl<'de> Deserialize<'de> for Dims {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<u64>::deserialize(d)?;
        if v.len() != 3 || v.iter().any(|&x| x == 0 || x > u32::MAX as u64) {
            return Err(err(
                format!("expected three positive 32-bit integers, got {v:?}"),
                "write [x, y, z] with each at least 1, e.g. [256, 1, 1]",
            ));
        }
        Ok(Dims([v[0] as u32, v[1] as u32, v[2] as u32]))
    }
}

// ---------------------------------------------------------------------------------------------
// Buffers

struct RawBuffer(BufferDecl);

const BUFFER_KEYS: &str = "name, binding, access, type, count";

impl<'de> Deserialize<'de> for RawBuffer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BufferDecl;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a buffer object {\"name\", \"binding\", \"access\", \"type\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BufferDecl, A::Error> {
                let (mut name, mut binding, mut access, mut elem, mut count) =
                    (None, None, None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "name" => name = Some(map.next_value::<String>()?),
                        "binding" => binding = Some(map.next_value::<u32>()?),
                        "access" => {
                            let s: String = map.next_value()?;
                            access = Some(Access::from_name(&s).ok_or_else(|| {
                                err::<A::Error>(
                                    format!("unknown access `{s}`"),
                                    "use one of read, read_write, write, uniform, workgroup",
                                )
                            })?);
                        }
                        "type" => {
                            let s: String = map.next_value()?;
                            elem = Some(ElemType::from_name(&s).ok_or_else(|| {
                                err::<A::Error>(
                                    format!("unknown element type `{s}`"),
                                    "use one of bool u8 i8 u16 i16 u32 i32 u64 i64 f16 f32 f64",
                                )
                            })?);
                        }
                        "count" => count = Some(map.next_value::<u32>()?),
                        other => {
                            return Err(err(
                                format!("unknown key `{other}` in a buffer"),
                                format!("remove it; a buffer has the keys {BUFFER_KEYS}"),
                            ))
                        }
                    }
                }
                let missing = |k: &str| {
                    err::<A::Error>(
                        format!("buffer is missing `{k}`"),
                        format!("add \"{k}\" to the buffer object"),
                    )
                };
                Ok(BufferDecl {
                    name: name.ok_or_else(|| missing("name"))?,
                    binding,
                    access: access.ok_or_else(|| missing("access"))?,
                    elem: elem.ok_or_else(|| missing("type"))?,
                    count,
                })
            }
        }
        d.deserialize_map(V).map(RawBuffer)
    }
}

// ---------------------------------------------------------------------------------------------
// Statements

struct RawStmt(Stmt);

fn stmt(kind: StmtKind) -> Stmt {
    Stmt {
        id: NodeId::default(),
        kind,
    }
}

fn stmts(v: Vec<RawStmt>) -> Vec<Stmt> {
    v.into_iter().map(|s| s.0).collect()
}

const STMT_KINDS: &str = "let, assign, store, if, loop, barrier, return, block";

impl<'de> Deserialize<'de> for RawStmt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(StmtVisitor).map(RawStmt)
    }
}

struct StmtVisitor;

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
                    _ => {
                        return Err(err(
                            format!("unknown barrier scope `{s}`"),
                            "use \"workgroup\" or \"grid\"",
                        ))
                    }
                };
                extra.read(&mut map, &[])?;
                StmtKind::Barrier(scope)
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
            other => {
                return Err(err(
                    format!("unknown statement kind `{other}`"),
                    format!("the first key of a statement is one of {STMT_KINDS}"),
                ))
            }
        };
        Ok(stmt(s))
    }
}

/// The keys after the first one of a statement or expression object.
#[derive(Default)]
struct Extra {
    exprs: Vec<(&'static str, Expr)>,
    then: Option<Vec<Stmt>>,
    otherwise: Option<Vec<Stmt>>,
    body: Option<Vec<Stmt>>,
    buffer: Option<String>,
}

impl Extra {
    fn read<'de, A: MapAccess<'de>>(
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
                _ => {
                    let e: RawExpr = map.next_value()?;
                    self.exprs.push((k, e.0));
                }
            }
        }
        Ok(())
    }

    fn take_expr<E: de::Error>(&mut self, key: &str, kind: &str) -> Result<Expr, E> {
        match self.exprs.iter().position(|(n, _)| *n == key) {
            Some(i) => Ok(self.exprs.swap_remove(i).1),
            None => Err(err(
                format!("`{kind}` is missing `{key}`"),
                format!("add \"{key}\": <expression>"),
            )),
        }
    }

    fn take_opt_expr(&mut self, key: &str) -> Option<Expr> {
        let i = self.exprs.iter().position(|(n, _)| *n == key)?;
        Some(self.exprs.swap_remove(i).1)
    }
}

/// `{}` (the argument of `return`, `lane`, `subgroup_size`).
struct Empty;

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

// ---------------------------------------------------------------------------------------------
// Expressions

struct RawExpr(Expr);

impl<'de> Deserialize<'de> for RawExpr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ExprVisitor).map(RawExpr)
    }
}

struct ExprVisitor;

fn bx(e: Expr) -> Box<Expr> {
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
        Ok(Expr::Lit(Literal::Float(v)))
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
                            "use one of bool u32 i32 u64 i64 f32 f64 (storage types like u8 or f16 are not value types)",
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
                            "use one of add min max and or xor exchange cas",
                        )
                    })?;
                    extra.read(&mut map, &["buffer", "index", "value", "expected"])?;
                    let buffer = extra.buffer.take().ok_or_else(|| {
                        err::<A::Error>("`atomic` is missing `buffer`", "add \"buffer\": \"NAME\"")
                    })?;
                    Expr::Atomic {
                        op,
                        buffer,
                        index: bx(extra.take_expr::<A::Error>("index", k)?),
                        value: bx(extra.take_expr::<A::Error>("value", k)?),
                        expected: extra.take_opt_expr("expected").map(bx),
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
                            "use one of add mul min max and or xor",
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
                _ => return Err(err(
                    format!("unknown expression kind `{k}`"),
                    "see the expression table of docs/program-format.md (e.g. add, load, select, cast)",
                )),
            }
        };
        Ok(e)
    }
}

fn arity<E: de::Error, const N: usize>(v: Vec<RawExpr>, op: &str) -> Result<[Expr; N], E> {
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
struct TypedLit(ScalarType);

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
                let f = v as f32;
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

// ---------------------------------------------------------------------------------------------
// run

struct RawRun(RunSpec);

const RUN_KEYS: &str = "grid, elements, inputs";

impl<'de> Deserialize<'de> for RawRun {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RunSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a run object {\"elements\" | \"grid\", \"inputs\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RunSpec, A::Error> {
                let mut run = RunSpec::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "grid" => run.grid = Some(map.next_value::<Dims>()?.0),
                        "elements" => run.elements = Some(map.next_value::<u64>()?),
                        "inputs" => run.inputs = map.next_value::<RawInputs>()?.0,
                        other => {
                            return Err(err(
                                format!("unknown key `{other}` in run"),
                                format!("remove it; run has the keys {RUN_KEYS}"),
                            ))
                        }
                    }
                }
                Ok(run)
            }
        }
        d.deserialize_map(V).map(RawRun)
    }
}

struct RawInputs(Vec<(String, InputSpec)>);

impl<'de> Deserialize<'de> for RawInputs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<(String, InputSpec)>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object mapping buffer names to input specs")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut v: Vec<(String, InputSpec)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if v.iter().any(|(k, _)| *k == key) {
                        return Err(err(format!("duplicate input `{key}`"), "keep one of them"));
                    }
                    let spec: RawInput = map.next_value()?;
                    v.push((key, spec.0));
                }
                Ok(v)
            }
        }
        d.deserialize_map(V).map(RawInputs)
    }
}

struct RawInput(InputSpec);

pub(crate) const INPUT_KEYS: &str = "len, fill, seed, range, data, file";

impl<'de> Deserialize<'de> for RawInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = InputSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an input spec {\"len\", \"fill\"} | {\"data\"} | {\"file\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InputSpec, A::Error> {
                let mut fields = InputFields::default();
                while let Some(key) = map.next_key::<String>()? {
                    if !fields.take(&key, &mut map)? {
                        return Err(err(
                            format!("unknown key `{key}` in an input"),
                            format!("remove it; an input has the keys {INPUT_KEYS}"),
                        ));
                    }
                }
                fields.finish()
            }
        }
        d.deserialize_map(V).map(RawInput)
    }
}

/// The keys of one `run.inputs` entry, gathered one at a time so that other objects that embed
/// an input spec (a pipeline buffer adds `type` and `transient`) parse it the same way.
#[derive(Default)]
pub(crate) struct InputFields {
    len: Option<u64>,
    fill: Option<String>,
    seed: Option<u64>,
    range: Option<(f64, f64)>,
    data: Option<Vec<Literal>>,
    file: Option<String>,
}

impl InputFields {
    /// Reads the value of `key` if it is an input key; `false` leaves the value unread.
    pub(crate) fn take<'de, A: MapAccess<'de>>(
        &mut self,
        key: &str,
        map: &mut A,
    ) -> Result<bool, A::Error> {
        match key {
            "len" => self.len = Some(map.next_value::<u64>()?),
            "fill" => self.fill = Some(map.next_value::<String>()?),
            "seed" => self.seed = Some(map.next_value::<u64>()?),
            "range" => {
                let r: [f64; 2] = map.next_value()?;
                if !(r[0].is_finite() && r[1].is_finite() && r[0] <= r[1]) {
                    return Err(err(
                        format!("range {r:?} is not [low, high] with low <= high"),
                        "write \"range\": [low, high] with finite numbers",
                    ));
                }
                self.range = Some((r[0], r[1]));
            }
            "data" => {
                self.data = Some(
                    map.next_value::<Vec<RawExpr>>()?
                        .into_iter()
                        .map(|e| match e.0 {
                            Expr::Lit(l) => Ok(l),
                            _ => Err(err::<A::Error>(
                                "data elements must be numbers or true/false",
                                "write plain numbers, e.g. [1, 2.5, -3]",
                            )),
                        })
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            "file" => self.file = Some(map.next_value::<String>()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The input spec once every key is read: exactly one source, `seed`/`range` only with
    /// `random`.
    pub(crate) fn finish<E: de::Error>(self) -> Result<InputSpec, E> {
        let InputFields {
            len,
            fill,
            seed,
            range,
            data,
            file,
        } = self;
        let sources = fill.is_some() as u8 + data.is_some() as u8 + file.is_some() as u8;
        if sources != 1 {
            return Err(err(
                "an input needs exactly one of `fill`, `data`, `file`",
                "keep one source, e.g. {\"fill\": \"random\", \"seed\": 1}",
            ));
        }
        if (seed.is_some() || range.is_some()) && fill.as_deref() != Some("random") {
            return Err(err(
                "`seed` and `range` only apply to \"fill\": \"random\"",
                "remove them or use \"fill\": \"random\"",
            ));
        }
        let source = if let Some(f) = fill {
            InputSource::Fill(match f.as_str() {
                "zeros" => Fill::Zeros,
                "ones" => Fill::Ones,
                "iota" => Fill::Iota,
                "random" => Fill::Random {
                    seed: seed.unwrap_or(0),
                    range,
                },
                other => {
                    return Err(err(
                        format!("unknown fill `{other}`"),
                        "use zeros, ones, iota or random",
                    ))
                }
            })
        } else if let Some(d) = data {
            InputSource::Data(d)
        } else {
            InputSource::File(file.unwrap_or_default())
        };
        Ok(InputSpec { len, source })
    }
}
