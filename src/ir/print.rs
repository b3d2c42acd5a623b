//! IR printer: a compact, readable, deterministic text form of a Program.
//!
//! The text has three parts:
//!
//! ```text
//! kernel vadd_f32 workgroup(256,1,1)
//! // c[i] = a[i] + b[i]
//! buffers {
//!   @0  read        f32  a
//!   @1  read        f32  b
//!   @2  read_write  f32  c
//!   --  workgroup   f32  tile[256]
//! }
//! let i: u32 = gid.x
//! if i < len(c) {
//!   c[i] = a[i] + b[i]
//! }
//! ```
//!
//! a header (name, default workgroup size, the doc as `//` comments wrapped at 92 columns), a buffer table (binding,
//! access, element type, name, and `[count]` for workgroup buffers) and one statement per line,
//! indented by two spaces per block level. Operators use Rust's spelling and precedence
//! (`* / %` > `+ -` > `<< >>` > `&` > `^` > `|` > comparisons > `&&` > `||`), with the
//! parentheses that precedence needs, plus those that keep shifts and bit operators readable
//! to C eyes (`(v + 1) << 2`, `(v & 1) == 0`); everything else is a call (`min(a, b)`,
//! `u32(x)` for a cast, `bitcast<f32>(x)`, `atomic_cas(h[i], expected, value)`). Literals are
//! printed as written: bare ones plain, typed ones with a suffix unless the type is the one a
//! bare literal would default to (`7` for `u32`, `-3` for `i32`, `1.5` for `f32`, else `7u64`,
//! `1.5f64`, `inf`, `nan_f64`). Each `let` shows the type the variable gets.
//!
//! [`Printed::lines`] says which node id each line belongs to (the gutter). The emitter's `.loc`
//! directives and the TUI's IR pane use these line numbers, so the output depends only on the
//! Program: the same Program always prints the same lines.

use std::collections::HashMap;

use super::ast::*;
use super::types::{Scalar, ScalarType};
use super::typing::{elaborate, expr_type};

/// One printed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrintedLine {
    /// The line's text, without gutter and without a trailing newline.
    pub code: String,
    /// The statement this line belongs to (`None` for headers, buffer table, closing braces).
    pub node: Option<NodeId>,
}

/// A printed Program.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Printed {
    /// Lines in order; line number `n` (1-based) is `lines[n - 1]`.
    pub lines: Vec<PrintedLine>,
}

impl Printed {
    /// 1-based line number of the line that opens statement `node`.
    pub fn line_of(&self, node: &str) -> Option<usize> {
        self.lines
            .iter()
            .position(|l| l.node.as_deref() == Some(node))
            .map(|i| i + 1)
    }

    /// The text without gutter, newline-terminated.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for l in &self.lines {
            s.push_str(&l.code);
            s.push('\n');
        }
        s
    }

    /// The text with the node-id gutter (`node | code`), newline-terminated; the gutter is as
    /// wide as the longest node id so the code column lines up.
    pub fn text_with_gutter(&self) -> String {
        let width = self
            .lines
            .iter()
            .filter_map(|l| l.node.as_ref().map(|n| n.len()))
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for l in &self.lines {
            let node = l.node.as_deref().unwrap_or("");
            s.push_str(&format!("{node:>width$} | {}", l.code));
            // No trailing blanks on lines whose code is empty.
            while s.ends_with(' ') {
                s.pop();
            }
            s.push('\n');
        }
        s
    }
}

/// Prints `program`.
pub fn print_program(program: &Program) -> Printed {
    print_program_prefixed(program, "")
}

/// Prints `program` with every line's node id prefixed by `prefix` (a pipeline prints step 1's
/// `body[2]` as `steps[1].body[2]`, so ids stay unique across the steps).
pub fn print_program_prefixed(program: &Program, prefix: &str) -> Printed {
    print_with(program, prefix, let_types(program))
}

/// Prints `program` whose `let` types are already known (`let_types`, by node id: the
/// validator's, see [`crate::validate::ProgramInfo::let_types`]) instead of deriving them again.
pub fn print_program_typed(program: &Program, let_types: &HashMap<NodeId, ScalarType>) -> Printed {
    print_with(program, "", let_types.clone())
}

fn print_with(program: &Program, prefix: &str, let_types: HashMap<NodeId, ScalarType>) -> Printed {
    let mut w = Writer {
        program,
        prefix,
        let_types,
        lines: Vec::new(),
    };
    w.header();
    w.stmts(&program.body, 0);
    Printed { lines: w.lines }
}

struct Writer<'a> {
    program: &'a Program,
    /// Put before every node id (empty for a lone Program).
    prefix: &'a str,
    /// Type of the variable each `let` introduces, by node id.
    let_types: HashMap<NodeId, ScalarType>,
    lines: Vec<PrintedLine>,
}

impl Writer<'_> {
    fn push(&mut self, code: String, node: Option<&NodeId>) {
        let node = match node {
            Some(n) if !self.prefix.is_empty() => Some(NodeId::new(format!("{}{n}", self.prefix))),
            n => n.cloned(),
        };
        self.lines.push(PrintedLine { code, node });
    }

    fn header(&mut self) {
        let p = self.program;
        let [x, y, z] = p.workgroup_size;
        self.push(format!("kernel {} workgroup({x},{y},{z})", p.name), None);
        if let Some(doc) = &p.doc {
            for l in doc.lines() {
                let l = l.trim_end();
                if l.is_empty() {
                    self.push("//".into(), None);
                }
                for part in wrap(l, DOC_WIDTH) {
                    self.push(format!("// {part}"), None);
                }
            }
        }
        if p.buffers.is_empty() {
            self.push("buffers {}".into(), None);
            return;
        }
        self.push("buffers {".into(), None);
        // Host buffers in binding order (the kernel ABI order), then workgroup buffers in file
        // order; columns padded so the table reads as one.
        let mut rows: Vec<[String; 4]> = p
            .host_buffers()
            .into_iter()
            .map(|b| {
                [
                    b.binding.map_or("--".into(), |n| format!("@{n}")),
                    b.access.name().into(),
                    b.elem.name().into(),
                    b.name.clone(),
                ]
            })
            .collect();
        rows.extend(p.buffers.iter().filter(|b| !b.access.is_host()).map(|b| {
            [
                "--".into(),
                b.access.name().into(),
                b.elem.name().into(),
                match b.count {
                    Some(c) => format!("{}[{c}]", b.name),
                    None => b.name.clone(),
                },
            ]
        }));
        let mut width = [0usize; 3];
        for r in &rows {
            for (w, c) in width.iter_mut().zip(r.iter()) {
                *w = (*w).max(c.len());
            }
        }
        for [bind, access, ty, name] in rows {
            self.push(
                format!(
                    "  {bind:<w0$}  {access:<w1$}  {ty:<w2$}  {name}",
                    w0 = width[0],
                    w1 = width[1],
                    w2 = width[2]
                ),
                None,
            );
        }
        self.push("}".into(), None);
    }

    fn stmts(&mut self, list: &[Stmt], depth: usize) {
        for s in list {
            self.stmt(s, depth);
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        let ind = "  ".repeat(depth);
        let id = Some(&s.id);
        match &s.kind {
            StmtKind::Let { name, value } => {
                let ty = match self.let_types.get(&s.id) {
                    Some(t) => format!(": {t}"),
                    None => String::new(),
                };
                self.push(format!("{ind}let {name}{ty} = {}", expr(value)), id);
            }
            StmtKind::Assign { name, value } => {
                self.push(format!("{ind}{name} = {}", expr(value)), id);
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                self.push(
                    format!("{ind}{buffer}[{}] = {}", expr(index), expr(value)),
                    id,
                );
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                has_else,
            } => {
                self.push(format!("{ind}if {} {{", expr(cond)), id);
                self.stmts(then, depth + 1);
                if *has_else || !otherwise.is_empty() {
                    self.push(format!("{ind}}} else {{"), None);
                    self.stmts(otherwise, depth + 1);
                }
                self.push(format!("{ind}}}"), None);
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                self.push(
                    format!("{ind}for {var} in {}..{} {{", expr(from), expr(to)),
                    id,
                );
                self.stmts(body, depth + 1);
                self.push(format!("{ind}}}"), None);
            }
            StmtKind::Barrier(scope) => {
                let scope = match scope {
                    BarrierScope::Subtask { threads } => format!("subtask, threads {threads}"),
                    other => other.name().to_string(),
                };
                self.push(format!("{ind}barrier({scope})"), id);
            }
            StmtKind::Return => self.push(format!("{ind}return"), id),
            StmtKind::Sync(op) => self.push(format!("{ind}sync({})", op.describe()), id),
            StmtKind::Block(body) => {
                self.push(format!("{ind}{{"), id);
                self.stmts(body, depth + 1);
                self.push(format!("{ind}}}"), None);
            }
        }
    }
}

/// Doc comment lines are wrapped to this many characters (after `// `), so that narrow panes
/// show the whole text.
const DOC_WIDTH: usize = 92;

/// Splits `text` into lines of at most `width` characters at spaces (a longer word gets a line
/// of its own).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut cur = String::new();
    for word in text.split_whitespace() {
        if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut cur));
        }
        if !cur.is_empty() {
            cur.push(' ');
        }
        cur.push_str(word);
    }
    if !cur.is_empty() {
        lines.push(cur);
    }
    lines
}

/// The type each `let` gives its variable, keyed by the `let`'s node id. Computed on the
/// elaborated Program (same statements, same ids) so that bare literals have their context type.
fn let_types(program: &Program) -> HashMap<NodeId, ScalarType> {
    let elab = elaborate(program);
    let mut out = HashMap::new();
    let mut scopes: Vec<HashMap<String, ScalarType>> = vec![HashMap::new()];
    collect_lets(&elab, &elab.body, &mut scopes, &mut out);
    out
}

fn collect_lets(
    p: &Program,
    list: &[Stmt],
    scopes: &mut Vec<HashMap<String, ScalarType>>,
    out: &mut HashMap<NodeId, ScalarType>,
) {
    for s in list {
        match &s.kind {
            StmtKind::Let { name, value } => {
                let t = expr_type(p, value, &|n| {
                    scopes.iter().rev().find_map(|m| m.get(n).copied())
                });
                if let (Some(t), Some(top)) = (t, scopes.last_mut()) {
                    top.insert(name.clone(), t);
                    out.insert(s.id.clone(), t);
                }
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_scope(p, then, HashMap::new(), scopes, out);
                collect_scope(p, otherwise, HashMap::new(), scopes, out);
            }
            StmtKind::Loop { var, body, .. } => {
                let counter = HashMap::from([(var.clone(), ScalarType::U32)]);
                collect_scope(p, body, counter, scopes, out);
            }
            StmtKind::Block(body) => collect_scope(p, body, HashMap::new(), scopes, out),
            StmtKind::Assign { .. }
            | StmtKind::Store { .. }
            | StmtKind::Barrier(_)
            | StmtKind::Sync(_)
            | StmtKind::Return => {}
        }
    }
}

/// Collects the lets of a nested statement list in a new scope that starts with `top`.
fn collect_scope(
    p: &Program,
    list: &[Stmt],
    top: HashMap<String, ScalarType>,
    scopes: &mut Vec<HashMap<String, ScalarType>>,
    out: &mut HashMap<NodeId, ScalarType>,
) {
    scopes.push(top);
    collect_lets(p, list, scopes, out);
    scopes.pop();
}

/// Binding strength of an expression's outermost form; higher binds tighter.
fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Binary(op, ..) => binop_prec(*op).unwrap_or(ATOM),
        Expr::Unary(op, _) if unop_prefix(*op).is_some() => PREFIX,
        // A negative literal reads like a prefix minus: `-(-3)`, `2 * -3` stay unambiguous.
        Expr::Lit(Literal::Int(v)) if *v < 0 => PREFIX,
        Expr::Lit(Literal::Float(v)) if v.value.is_sign_negative() => PREFIX,
        Expr::Lit(Literal::Typed(s)) if literal_is_negative(*s) => PREFIX,
        _ => ATOM,
    }
}

const ATOM: u8 = 20;
const PREFIX: u8 = 15;

/// Infix precedence of a binary operator, `None` for those printed as calls.
fn binop_prec(op: BinOp) -> Option<u8> {
    Some(match op {
        BinOp::Mul | BinOp::Div | BinOp::Rem => 10,
        BinOp::Add | BinOp::Sub => 9,
        BinOp::Shl | BinOp::Shr => 8,
        BinOp::And => 7,
        BinOp::Xor => 6,
        BinOp::Or => 5,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
        BinOp::LAnd => 3,
        BinOp::LOr => 2,
        BinOp::Min
        | BinOp::Max
        | BinOp::AbsDiff
        | BinOp::MulHi
        | BinOp::AddSat
        | BinOp::SubSat
        | BinOp::MulSat
        | BinOp::Rotl
        | BinOp::Rotr => return None,
    })
}

fn binop_symbol(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::Rem => "%",
        BinOp::And => "&",
        BinOp::Or => "|",
        BinOp::Xor => "^",
        BinOp::Shl => "<<",
        BinOp::Shr => ">>",
        BinOp::Eq => "==",
        BinOp::Ne => "!=",
        BinOp::Lt => "<",
        BinOp::Le => "<=",
        BinOp::Gt => ">",
        BinOp::Ge => ">=",
        BinOp::LAnd => "&&",
        BinOp::LOr => "||",
        // Call-style operators use their spec name.
        BinOp::Min
        | BinOp::Max
        | BinOp::AbsDiff
        | BinOp::MulHi
        | BinOp::AddSat
        | BinOp::SubSat
        | BinOp::MulSat
        | BinOp::Rotl
        | BinOp::Rotr => op.name(),
    }
}

/// Prefix symbol of a unary operator, `None` for those printed as calls.
fn unop_prefix(op: UnOp) -> Option<&'static str> {
    match op {
        UnOp::Neg => Some("-"),
        UnOp::Not => Some("~"),
        UnOp::LNot => Some("!"),
        _ => None,
    }
}

/// Prints an expression.
pub fn expr(e: &Expr) -> String {
    let mut s = String::new();
    write_expr(&mut s, e);
    s
}

fn write_expr(s: &mut String, e: &Expr) {
    match e {
        Expr::Lit(l) => s.push_str(&literal(*l)),
        Expr::Var(n) => s.push_str(n),
        Expr::Builtin(b) => s.push_str(&builtin(*b)),
        Expr::Clock => s.push_str("clock()"),
        Expr::Load { buffer, index } => {
            s.push_str(buffer);
            s.push('[');
            write_expr(s, index);
            s.push(']');
        }
        Expr::Len(b) => {
            s.push_str("len(");
            s.push_str(b);
            s.push(')');
        }
        Expr::Binary(op, a, b) => match binop_prec(*op) {
            Some(p) => {
                // Left-associative; comparisons do not chain, so they parenthesize both sides.
                let left_min = if p == 4 { p + 1 } else { p };
                operand(s, a, if clarify(p, a) { ATOM } else { left_min });
                s.push(' ');
                s.push_str(binop_symbol(*op));
                s.push(' ');
                operand(s, b, if clarify(p, b) { ATOM } else { p + 1 });
            }
            None => call(s, op.name(), &[a, b]),
        },
        Expr::Unary(op, a) => match unop_prefix(*op) {
            Some(sym) => {
                s.push_str(sym);
                // `- -x` and `--3` would read as a decrement; parenthesize prefix operands.
                operand(s, a, ATOM);
            }
            None => call(s, op.name(), &[a]),
        },
        Expr::Select(c, a, b) => call(s, "select", &[c, a, b]),
        Expr::Cast(t, a) => call(s, t.name(), &[a]),
        Expr::Bitcast(t, a) => call(s, &format!("bitcast<{t}>"), &[a]),
        Expr::Fma(a, b, c) => call(s, "fma", &[a, b, c]),
        Expr::Atomic {
            op,
            buffer,
            index,
            value,
            expected,
            order,
        } => {
            s.push_str("atomic_");
            s.push_str(op.name());
            // The default order is not written, so Programs without `order` print as before.
            if *order != AtomicOrder::SeqCst {
                s.push('.');
                s.push_str(order.name());
            }
            s.push('(');
            s.push_str(buffer);
            s.push('[');
            write_expr(s, index);
            s.push_str("], ");
            if let Some(x) = expected {
                write_expr(s, x);
                s.push_str(", ");
            }
            write_expr(s, value);
            s.push(')');
        }
        Expr::Shuffle { value, lane } => call(s, "shuffle", &[value, lane]),
        Expr::SubgroupReduce(op, a) => call(s, &format!("subgroup_{}", op.name()), &[a]),
        Expr::Ballot(a) => call(s, "ballot", &[a]),
    }
}

/// Whether operand `e` of an infix operator of precedence `parent` gets parentheses that
/// precedence alone would not need: C and Rust disagree on where bit operators bind, so a
/// shift or bit operator never takes a bare operand with a different infix operator
/// (`(v + 1) << 2`, `(a & 1) | b`), and a comparison never takes a bare bit operation
/// (`(v & 1) == 0`).
fn clarify(parent: u8, e: &Expr) -> bool {
    let child = match e {
        Expr::Binary(op, ..) => match binop_prec(*op) {
            Some(c) => c,
            None => return false,
        },
        _ => return false,
    };
    let bitwise = |p: u8| (5..=8).contains(&p);
    (bitwise(parent) && child != parent && child > 4) || (parent == 4 && bitwise(child))
}

/// Writes `e`, parenthesized when it binds looser than `min`.
fn operand(s: &mut String, e: &Expr, min: u8) {
    if prec(e) < min {
        s.push('(');
        write_expr(s, e);
        s.push(')');
    } else {
        write_expr(s, e);
    }
}

fn call(s: &mut String, name: &str, args: &[&Expr]) {
    s.push_str(name);
    s.push('(');
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        write_expr(s, a);
    }
    s.push(')');
}

fn builtin(b: Builtin) -> String {
    match b {
        Builtin::GlobalId(a) => format!("gid.{}", a.name()),
        Builtin::LocalId(a) => format!("lid.{}", a.name()),
        Builtin::WorkgroupId(a) => format!("wgid.{}", a.name()),
        Builtin::NumWorkgroups(a) => format!("nwg.{}", a.name()),
        Builtin::Lane => "lane".into(),
        Builtin::SubgroupSize => "subgroup_size".into(),
    }
}

fn literal_is_negative(s: Scalar) -> bool {
    match s {
        Scalar::I32(v) => v < 0,
        Scalar::I64(v) => v < 0,
        Scalar::F32(v) => v.is_sign_negative() && !v.is_nan(),
        Scalar::F64(v) => v.is_sign_negative() && !v.is_nan(),
        _ => false,
    }
}

/// Prints a literal as written (see the module docs for the suffix rule).
pub fn literal(l: Literal) -> String {
    match l {
        Literal::Int(v) => v.to_string(),
        Literal::Float(v) => float(v.value, ""),
        Literal::Typed(s) => match s {
            Scalar::Bool(b) => b.to_string(),
            Scalar::U32(v) => v.to_string(),
            Scalar::I32(v) if v < 0 => v.to_string(),
            Scalar::I32(v) => format!("{v}i32"),
            Scalar::U64(v) => format!("{v}u64"),
            Scalar::I64(v) => format!("{v}i64"),
            Scalar::F32(v) => float(v as f64, ""),
            Scalar::F64(v) => float(v, "f64"),
        },
    }
}

/// A float literal: shortest round-trip digits with a `.` or exponent so it reads as a float,
/// `inf`/`-inf`/`nan` for the specials (with `_f64` when a suffix is due).
fn float(v: f64, suffix: &str) -> String {
    let sep = if suffix.is_empty() { "" } else { "_" };
    if v.is_nan() {
        return format!("nan{sep}{suffix}");
    }
    if v.is_infinite() {
        let sign = if v < 0.0 { "-" } else { "" };
        return format!("{sign}inf{sep}{suffix}");
    }
    // f32 values were widened exactly; print them with f32's shortest digits.
    let digits = if suffix.is_empty() && (v as f32) as f64 == v {
        format!("{:?}", v as f32)
    } else {
        format!("{v:?}")
    };
    format!("{digits}{suffix}")
}

#[cfg(test)]
mod tests;
