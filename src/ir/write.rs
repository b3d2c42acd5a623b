//! [`Program`] -> format-1 JSON text, the inverse of [`super::parse_program`], and
//! [`Pipeline`] -> pipeline JSON, the inverse of [`super::parse_pipeline`].
//!
//! The GPU worker process (`runtime::worker`) receives Programs as text, and the inspector
//! holds parsed Programs only, so this writer must round-trip: parsing its output gives back
//! an equal Program (same node ids, literals bit for bit, `else` kept when it was written).
//! The text is written by hand rather than through `serde_json::Value` because the parser
//! reads an object's first key as its kind, and `Value` maps sort their keys.

use std::fmt::Write as _;

use super::ast::*;
use super::pipeline::Pipeline;
use super::run_spec::*;
use super::types::Scalar;

/// A Program that has no format-1 spelling (only possible for Programs built in code).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct WriteError {
    /// Program name.
    pub program: String,
    /// What cannot be written.
    pub what: String,
    /// How to fix it.
    pub fix: String,
}

/// Writes `program` as one line of format-1 JSON.
pub fn program_to_json(program: &Program) -> Result<String, WriteError> {
    let mut w = Writer {
        out: String::with_capacity(1024),
        program: &program.name,
    };
    w.program(program)?;
    Ok(w.out)
}

/// Writes `pipeline` as pipeline JSON, a line per buffer and per step. Step `k`'s Program is
/// written inline, or, with `program_files`, as the path `program_files[k]` (relative to the
/// pipeline file; the caller writes the Program there with [`program_to_json`]).
pub fn pipeline_to_json(
    pipeline: &Pipeline,
    program_files: Option<&[String]>,
) -> Result<String, WriteError> {
    let mut w = Writer {
        out: String::with_capacity(4096),
        program: &pipeline.name,
    };
    w.s("{\"format\":1,");
    w.key("pipeline");
    w.string(&pipeline.name);
    if let Some(doc) = &pipeline.doc {
        w.s(",\n ");
        w.key("doc");
        w.string(doc);
    }
    w.s(",\n \"buffers\":{");
    for (i, b) in pipeline.buffers.iter().enumerate() {
        w.s(if i > 0 { ",\n  " } else { "\n  " });
        w.key(&b.name);
        w.s("{");
        w.key("type");
        w.string(b.elem.name());
        w.s(",");
        w.input_fields(&b.contents)?;
        if b.transient {
            w.s(",\"transient\":true");
        }
        w.s("}");
    }
    w.s("},\n \"steps\":[");
    for (k, step) in pipeline.steps.iter().enumerate() {
        w.s(if k > 0 { ",\n  {" } else { "\n  {" });
        w.key("program");
        match program_files.and_then(|f| f.get(k)) {
            Some(path) => w.string(path),
            None => w.program(&step.program)?,
        }
        w.s(",\"bind\":{");
        for (i, (port, buffer)) in step.bind.iter().enumerate() {
            if i > 0 {
                w.s(",");
            }
            w.key(port);
            w.string(buffer);
        }
        w.s("}");
        if let Some(d) = step.workgroup_size {
            w.s(",\"workgroup_size\":");
            w.dims(d);
        }
        if let Some(g) = step.grid {
            w.s(",\"grid\":");
            w.dims(g);
        }
        if let Some(n) = step.elements {
            let _ = write!(w.out, ",\"elements\":{n}");
        }
        w.s("}");
    }
    w.s("]}\n");
    Ok(w.out)
}

struct Writer<'a> {
    out: String,
    program: &'a str,
}

type R = Result<(), WriteError>;

impl Writer<'_> {
    fn fail(&self, what: String, fix: &str) -> WriteError {
        WriteError {
            program: self.program.to_string(),
            what,
            fix: fix.to_string(),
        }
    }

    fn s(&mut self, text: &str) {
        self.out.push_str(text);
    }

    /// A JSON string literal (escaped).
    fn string(&mut self, v: &str) {
        match serde_json::to_string(v) {
            Ok(q) => self.out.push_str(&q),
            // Serializing a &str cannot fail; keep the output well-formed regardless.
            Err(_) => self.out.push_str("\"\""),
        }
    }

    /// `"key":`
    fn key(&mut self, k: &str) {
        self.string(k);
        self.out.push(':');
    }

    fn dims(&mut self, d: [u32; 3]) {
        let _ = write!(self.out, "[{},{},{}]", d[0], d[1], d[2]);
    }

    fn program(&mut self, p: &Program) -> R {
        self.s("{\"format\":1,");
        self.key("name");
        self.string(&p.name);
        if let Some(doc) = &p.doc {
            self.s(",");
            self.key("doc");
            self.string(doc);
        }
        self.s(",\"workgroup_size\":");
        self.dims(p.workgroup_size);
        self.s(",\"buffers\":[");
        for (i, b) in p.buffers.iter().enumerate() {
            if i > 0 {
                self.s(",");
            }
            self.s("{");
            self.key("name");
            self.string(&b.name);
            if let Some(binding) = b.binding {
                let _ = write!(self.out, ",\"binding\":{binding}");
            }
            self.s(",");
            self.key("access");
            self.string(b.access.name());
            self.s(",");
            self.key("type");
            self.string(b.elem.name());
            if let Some(count) = b.count {
                let _ = write!(self.out, ",\"count\":{count}");
            }
            self.s("}");
        }
        self.s("],\"body\":");
        self.stmts(&p.body)?;
        if let Some(run) = &p.run {
            self.s(",\"run\":");
            self.run(run)?;
        }
        self.s("}");
        Ok(())
    }

    fn stmts(&mut self, list: &[Stmt]) -> R {
        self.s("[");
        for (i, s) in list.iter().enumerate() {
            if i > 0 {
                self.s(",");
            }
            self.stmt(s)?;
        }
        self.s("]");
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> R {
        self.s("{");
        match &s.kind {
            StmtKind::Let { name, value } | StmtKind::Assign { name, value } => {
                self.key(if matches!(s.kind, StmtKind::Let { .. }) {
                    "let"
                } else {
                    "assign"
                });
                self.string(name);
                self.s(",\"value\":");
                self.expr(value)?;
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                self.key("store");
                self.string(buffer);
                self.s(",\"index\":");
                self.expr(index)?;
                self.s(",\"value\":");
                self.expr(value)?;
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                has_else,
            } => {
                self.key("if");
                self.expr(cond)?;
                self.s(",\"then\":");
                self.stmts(then)?;
                // An empty `else` written in the file is kept; a non-empty one always is.
                if *has_else || !otherwise.is_empty() {
                    self.s(",\"else\":");
                    self.stmts(otherwise)?;
                }
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                self.key("loop");
                self.string(var);
                self.s(",\"from\":");
                self.expr(from)?;
                self.s(",\"to\":");
                self.expr(to)?;
                self.s(",\"body\":");
                self.stmts(body)?;
            }
            StmtKind::Barrier(scope) => {
                self.key("barrier");
                self.string(scope.name());
                if let BarrierScope::Subtask { threads } = scope {
                    self.s(&format!(",\"threads\":{threads}"));
                }
            }
            StmtKind::Return => self.s("\"return\":{}"),
            StmtKind::Sync(op) => {
                // Internal to fused dataflow kernels, not part of the Program format: a file
                // written with it could not be read back, so parse and write stay inverses.
                return Err(self.fail(
                    format!(
                        "statement {} is a dataflow wait ({}), which only fused kernels hold",
                        s.id,
                        op.describe()
                    ),
                    "write the pipeline file instead (`vyrescope emit PIPELINE --sync dataflow` shows the fused kernel as PTX)",
                ));
            }
            StmtKind::Block(b) => {
                self.key("block");
                self.stmts(b)?;
            }
        }
        self.s("}");
        Ok(())
    }

    /// A finite float as a JSON number that parses back as a float (never as an integer).
    fn float(&mut self, v: f64) -> R {
        let text = serde_json::to_string(&v)
            .map_err(|e| self.fail(format!("float {v}: {e}"), "use a finite value"))?;
        self.s(&text);
        if !text.contains(['.', 'e', 'E']) {
            self.s(".0");
        }
        Ok(())
    }

    fn literal(&mut self, l: &Literal) -> R {
        match *l {
            Literal::Int(v) => {
                if let Ok(u) = u64::try_from(v) {
                    let _ = write!(self.out, "{u}");
                } else if let Ok(i) = i64::try_from(v) {
                    let _ = write!(self.out, "{i}");
                } else {
                    return Err(self.fail(
                        format!("integer literal {v} is outside the 64-bit range"),
                        "use a value that fits i64 or u64",
                    ));
                }
            }
            Literal::Float(f) => {
                let v = f.value;
                if !v.is_finite() {
                    return Err(self.fail(
                        format!("bare float literal {v} has no JSON spelling"),
                        "use a typed literal such as {\"f32\": \"nan\"}",
                    ));
                }
                // Digits that give back both roundings (f64 and f32) of the literal.
                let text = crate::ir::parse::f32_text::decimal_text(f);
                self.s(&text);
                if !text.contains(['.', 'e', 'E']) {
                    self.s(".0");
                }
            }
            Literal::Typed(Scalar::Bool(b)) => self.s(if b { "true" } else { "false" }),
            Literal::Typed(s) => {
                self.s("{");
                self.key(s.ty().name());
                match s {
                    Scalar::U32(v) => {
                        let _ = write!(self.out, "{v}");
                    }
                    Scalar::I32(v) => {
                        let _ = write!(self.out, "{v}");
                    }
                    Scalar::U64(v) => {
                        let _ = write!(self.out, "{v}");
                    }
                    Scalar::I64(v) => {
                        let _ = write!(self.out, "{v}");
                    }
                    // f32 -> f64 is exact, and the parser rounds the f64 back to the same f32.
                    Scalar::F32(v) => self.special_or_float(v as f64)?,
                    Scalar::F64(v) => self.special_or_float(v)?,
                    Scalar::Bool(_) => {}
                }
                self.s("}");
            }
        }
        Ok(())
    }

    fn special_or_float(&mut self, v: f64) -> R {
        if v.is_nan() {
            self.s("\"nan\"");
        } else if v == f64::INFINITY {
            self.s("\"inf\"");
        } else if v == f64::NEG_INFINITY {
            self.s("\"-inf\"");
        } else {
            self.float(v)?;
        }
        Ok(())
    }

    fn op_args(&mut self, name: &str, args: &[&Expr]) -> R {
        self.s("{");
        self.key(name);
        self.s("[");
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                self.s(",");
            }
            self.expr(a)?;
        }
        self.s("]}");
        Ok(())
    }

    fn expr(&mut self, e: &Expr) -> R {
        match e {
            Expr::Lit(l) => self.literal(l)?,
            Expr::Var(v) => self.string(v),
            Expr::Builtin(b) => {
                let (name, axis) = match b {
                    Builtin::GlobalId(a) => ("gid", Some(a)),
                    Builtin::LocalId(a) => ("lid", Some(a)),
                    Builtin::WorkgroupId(a) => ("wgid", Some(a)),
                    Builtin::NumWorkgroups(a) => ("nwg", Some(a)),
                    Builtin::Lane => ("lane", None),
                    Builtin::SubgroupSize => ("subgroup_size", None),
                };
                self.s("{");
                self.key(name);
                match axis {
                    Some(a) => self.string(a.name()),
                    None => self.s("{}"),
                }
                self.s("}");
            }
            Expr::Load { buffer, index } => {
                self.s("{");
                self.key("load");
                self.string(buffer);
                self.s(",\"index\":");
                self.expr(index)?;
                self.s("}");
            }
            Expr::Len(b) => {
                self.s("{");
                self.key("len");
                self.string(b);
                self.s("}");
            }
            Expr::Binary(op, a, b) => self.op_args(op.name(), &[a, b])?,
            Expr::Unary(op, a) => {
                self.s("{");
                self.key(op.name());
                self.expr(a)?;
                self.s("}");
            }
            Expr::Select(c, a, b) => self.op_args("select", &[c, a, b])?,
            Expr::Fma(a, b, c) => self.op_args("fma", &[a, b, c])?,
            Expr::Cast(t, v) | Expr::Bitcast(t, v) => {
                self.s("{");
                self.key(if matches!(e, Expr::Cast(..)) {
                    "cast"
                } else {
                    "bitcast"
                });
                self.string(t.name());
                self.s(",\"value\":");
                self.expr(v)?;
                self.s("}");
            }
            Expr::Atomic {
                op,
                buffer,
                index,
                value,
                expected,
                order,
            } => {
                self.s("{");
                self.key("atomic");
                self.string(op.name());
                self.s(",\"buffer\":");
                self.string(buffer);
                self.s(",\"index\":");
                self.expr(index)?;
                self.s(",\"value\":");
                self.expr(value)?;
                if let Some(x) = expected {
                    self.s(",\"expected\":");
                    self.expr(x)?;
                }
                // The default is left out: files without `order` write back unchanged.
                if *order != AtomicOrder::SeqCst {
                    self.s(",\"order\":");
                    self.string(order.name());
                }
                self.s("}");
            }
            Expr::Shuffle { value, lane } => {
                self.s("{");
                self.key("shuffle");
                self.expr(value)?;
                self.s(",\"lane\":");
                self.expr(lane)?;
                self.s("}");
            }
            Expr::SubgroupReduce(op, v) => {
                self.s("{");
                self.key("subgroup_reduce");
                self.string(op.name());
                self.s(",\"value\":");
                self.expr(v)?;
                self.s("}");
            }
            Expr::Ballot(v) => {
                self.s("{");
                self.key("ballot");
                self.expr(v)?;
                self.s("}");
            }
            Expr::Clock => {
                // Made by the profiler's instrumentation only, not part of the Program
                // format: a file written with it could not be read back.
                return Err(self.fail(
                    "a `clock()` read is profiler instrumentation, not part of the Program format".to_string(),
                    "write the Program before instrumenting it (`vyrescope profile FILE` instruments on its own)",
                ));
            }
        }
        Ok(())
    }

    fn run(&mut self, run: &RunSpec) -> R {
        let mut first = true;
        let mut sep = |w: &mut Self| {
            if !first {
                w.s(",");
            }
            first = false;
        };
        self.s("{");
        if let Some(g) = run.grid {
            sep(self);
            self.s("\"grid\":");
            self.dims(g);
        }
        if let Some(n) = run.elements {
            sep(self);
            let _ = write!(self.out, "\"elements\":{n}");
        }
        if !run.inputs.is_empty() {
            sep(self);
            self.s("\"inputs\":{");
            for (i, (name, spec)) in run.inputs.iter().enumerate() {
                if i > 0 {
                    self.s(",");
                }
                self.key(name);
                self.input(spec)?;
            }
            self.s("}");
        }
        self.s("}");
        Ok(())
    }

    fn input(&mut self, spec: &InputSpec) -> R {
        self.s("{");
        self.input_fields(spec)?;
        self.s("}");
        Ok(())
    }

    /// The fields of a `run.inputs` entry (or a pipeline buffer's contents), without braces.
    fn input_fields(&mut self, spec: &InputSpec) -> R {
        if let Some(len) = spec.len {
            let _ = write!(self.out, "\"len\":{len},");
        }
        match &spec.source {
            InputSource::Fill(f) => {
                self.key("fill");
                match f {
                    Fill::Zeros => self.string("zeros"),
                    Fill::Ones => self.string("ones"),
                    Fill::Iota => self.string("iota"),
                    Fill::Random { seed, range } => {
                        self.string("random");
                        let _ = write!(self.out, ",\"seed\":{seed}");
                        if let Some((lo, hi)) = range {
                            self.s(",\"range\":[");
                            self.float(*lo)?;
                            self.s(",");
                            self.float(*hi)?;
                            self.s("]");
                        }
                    }
                }
            }
            InputSource::Data(items) => {
                self.s("\"data\":[");
                for (i, l) in items.iter().enumerate() {
                    if i > 0 {
                        self.s(",");
                    }
                    self.literal(&l)?;
                }
                self.s("]");
            }
            InputSource::File(f) => {
                self.key("file");
                self.string(f);
            }
        }
        Ok(())
    }
}

impl crate::util::HasFix for WriteError {
    fn message(&self) -> String {
        format!(
            "cannot write Program `{}` as JSON: {}",
            self.program, self.what
        )
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(WriteError);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse_program;

    fn roundtrip(p: &Program) -> Program {
        let text = program_to_json(p).expect("writes");
        parse_program(&text, "written.json").unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn every_fixture_round_trips() {
        let mut n = 0;
        for dir in ["fixtures/programs", "fixtures/invalid"] {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in rd.flatten() {
                let path = e.path();
                if path.extension().is_none_or(|x| x != "json") {
                    continue;
                }
                // Invalid fixtures that do not even parse have nothing to round-trip.
                let Ok(p) = crate::ir::load_program(&path) else {
                    continue;
                };
                let q = roundtrip(&p);
                // Debug text compares NaN literals too (NaN != NaN under PartialEq).
                assert_eq!(format!("{q:?}"), format!("{p:?}"), "{}", path.display());
                n += 1;
            }
        }
        assert!(n >= 19, "only {n} fixtures round-tripped");
    }

    #[test]
    fn literal_edge_cases_round_trip() {
        let text = r#"{"format":1,"name":"k","workgroup_size":[32,1,1],
          "buffers":[{"name":"o","binding":0,"access":"read_write","type":"f32"}],
          "body":[
            {"let":"a","value":{"f32":0.1}},
            {"let":"b","value":{"f64":"-inf"}},
            {"let":"c","value":{"f32":"nan"}},
            {"let":"d","value":{"i64":-9223372036854775808}},
            {"let":"e","value":{"u64":18446744073709551615}},
            {"let":"f","value":{"add":[1e-7, 3.0]}},
            {"let":"g","value":{"f32":16777217}},
            {"if":true,"then":[],"else":[]},
            {"store":"o","index":0,"value":-0.0}],
          "run":{"elements":4,"inputs":{"o":{"data":[1.5,-2,3e30,true]}}}}"#;
        let p = parse_program(text, "edge.json").expect("parses");
        let q = roundtrip(&p);
        assert_eq!(format!("{q:?}"), format!("{p:?}"));
        // -0.0 keeps its sign through the text.
        let out = program_to_json(&p).expect("writes");
        assert!(out.contains("\"value\":-0.0"), "{out}");
    }

    #[test]
    fn unwritable_literals_are_errors_not_panics() {
        let mut p = parse_program(
            r#"{"format":1,"name":"k","workgroup_size":[1,1,1],"buffers":[],"body":[{"let":"a","value":1.5}]}"#,
            "x.json",
        )
        .expect("parses");
        if let StmtKind::Let { value, .. } = &mut p.body[0].kind {
            *value = Expr::Lit(Literal::Float(FloatLit::exact(f64::NAN)));
        }
        let e = program_to_json(&p).expect_err("NaN bare literal");
        assert!(e.to_string().contains("Fix:"), "{e}");
        if let StmtKind::Let { value, .. } = &mut p.body[0].kind {
            *value = Expr::Lit(Literal::Int(1i128 << 70));
        }
        assert!(program_to_json(&p).is_err());
    }
}
