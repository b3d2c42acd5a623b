//! JSON -> [`Program`] for format version 1.
//!
//! Parsing is one streaming pass of `serde_json` through hand-written visitors, wrapped in
//! `serde_path_to_error` so that every error carries the JSON path (`body[1].then[0].value`)
//! as well as the line and column. `serde_json`'s recursion limit (128 levels of arrays and
//! objects) bounds nesting, so deep input yields an error instead of a stack overflow.

use std::fmt;
use std::path::Path;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::ast::*;
use super::data::DataArray;
use super::run_spec::*;
use super::types::ElemType;

mod expr;
pub(crate) mod f32_text;
mod run;
mod stmt;
pub(crate) mod suggest;

pub(crate) use expr::*;
pub(crate) use run::*;
pub(crate) use stmt::*;

/// Largest Program file accepted (bytes); larger inputs are rejected before parsing.
pub const MAX_FILE_BYTES: u64 = 256 << 20;

/// Separates a message from its fix hint inside serde's custom error strings.
pub(crate) const FIX_SEP: &str = "\u{1f}Fix: ";

/// A Program file that could not be parsed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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

impl ParseError {
    /// `FILE:LINE:COLUMN`, or just `FILE` for an error about the whole file (line 0).
    pub fn place(&self) -> String {
        if self.line == 0 {
            self.file.clone()
        } else {
            format!("{}:{}:{}", self.file, self.line, self.column)
        }
    }
}

/// Reads and parses a Program file: format-1 JSON, or a vyre wire/text file through the
/// installed converter (see [`super::foreign`]).
pub fn load_program(path: &Path) -> Result<Program, ParseError> {
    match load_source(path)? {
        Source::Json(text) => parse_program(&text, &path.display().to_string()),
        Source::Foreign(bytes, format) => super::foreign::import(path, &bytes, format),
    }
}

/// The contents of a Program file, by format.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Format-1 JSON text (checked to be UTF-8 without a byte order mark).
    Json(String),
    /// A foreign file's bytes (vyre wire or text), for [`super::foreign`].
    Foreign(Vec<u8>, super::foreign::ForeignFormat),
}

/// Reads a Program file (bounded, regular files only) and tells its format from its first
/// bytes; JSON text is checked as [`json_text`] does.
pub fn load_source(path: &Path) -> Result<Source, ParseError> {
    let bytes = read_file_bytes(
        path,
        "Program file",
        "move large input data to a `run.inputs.<buf>.file` raw binary file",
    )?;
    if let Some(format) = super::foreign::sniff(path, &bytes) {
        return Ok(Source::Foreign(bytes, format));
    }
    json_text(path, bytes).map(Source::Json)
}

/// A file's bytes: only a regular file, read no further than the limit (a FIFO must not
/// block, /dev/zero must not fill memory; see `util::read_limited`). `what` names the kind of
/// file in messages; `too_large_fix` says where big data belongs.
pub(crate) fn read_file_bytes(
    path: &Path,
    what: &str,
    too_large_fix: &str,
) -> Result<Vec<u8>, ParseError> {
    let file = path.display().to_string();
    crate::util::read_limited(path, MAX_FILE_BYTES, what).map_err(|e| {
        let fix = match e.kind {
            crate::util::ReadErrorKind::TooLarge => too_large_fix.to_string(),
            crate::util::ReadErrorKind::NotRegular => format!("pass a *.json {what}"),
            _ => "check the path and that the file is readable".to_string(),
        };
        ParseError {
            file: file.clone(),
            line: 0,
            column: 0,
            path: String::new(),
            message: e.message,
            fix,
        }
    })
}

/// A JSON document's bytes as UTF-8 text: a byte order mark or invalid UTF-8 is an error
/// naming the line and column.
pub(crate) fn json_text(path: &Path, bytes: Vec<u8>) -> Result<String, ParseError> {
    let file = path.display().to_string();
    if bytes.starts_with(b"\xef\xbb\xbf") {
        return Err(ParseError {
            file,
            line: 1,
            column: 1,
            path: String::new(),
            message:
                "the file starts with a UTF-8 byte order mark (BOM), which JSON does not allow"
                    .into(),
            fix: "save the file as UTF-8 without BOM (e.g. `sed -i '1s/^\\xEF\\xBB\\xBF//' FILE`)"
                .into(),
        });
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let (line, column) = line_col(&e.as_bytes()[..valid]);
        ParseError {
            file,
            line,
            column,
            path: String::new(),
            message: format!("invalid UTF-8 at byte {valid}"),
            fix: "save the file as UTF-8 JSON".into(),
        }
    })
}

pub(crate) fn line_col(prefix: &[u8]) -> (usize, usize) {
    let line = prefix.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = prefix.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
    (line, col)
}

/// Parses Program JSON text; `file` names it in errors.
pub fn parse_program(text: &str, file: &str) -> Result<Program, ParseError> {
    deserialize_document::<RawProgram>(
        text,
        file,
        "a Program is a JSON object: {\"format\": 1, \"name\": ..., \"workgroup_size\": [..], \"buffers\": [..], \"body\": [..]}",
    )
    .map(|raw| raw.0)
}

/// One JSON document of `text` as `T`, every error with its JSON path, line and column, and
/// trailing data refused; `empty_fix` is the hint for an empty file.
pub(crate) fn deserialize_document<'de, T: Deserialize<'de>>(
    text: &'de str,
    file: &str,
    empty_fix: &str,
) -> Result<T, ParseError> {
    if text.trim().is_empty() {
        return Err(ParseError {
            file: file.into(),
            line: 1,
            column: 1,
            path: String::new(),
            message: "empty file".into(),
            fix: empty_fix.into(),
        });
    }
    if let Some(d) = crate::util::find_duplicate_key(text) {
        return Err(ParseError {
            file: file.into(),
            line: d.line,
            column: d.column,
            message: d.message(),
            fix: d.fix(),
            path: d.path,
        });
    }
    f32_text::with_document(text, || {
        let mut de = serde_json::Deserializer::from_str(text);
        let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            from_json_error(file, path, e.into_inner())
        })?;
        de.end()
            .map_err(|e| from_json_error(file, String::new(), e))?;
        Ok(value)
    })
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
            let msg = if msg.starts_with("number out of range") {
                // serde_json refuses numbers beyond f64 before any visitor sees a type.
                "number literal out of range for its type: beyond the largest finite f64 \
                 (about 1.8e308)"
                    .to_string()
            } else {
                msg
            };
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
        Category::Syntax if msg.contains("number out of range") => {
            "the number does not fit any type (f64 ends near 1.8e308): write a value in range, \
             or use \"inf\" in a float buffer's data"
                .into()
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
                                    suggest::fix_for(
                                        &s,
                                        &suggest::accesses(),
                                        "an access is one of",
                                    ),
                                )
                            })?);
                        }
                        "type" => {
                            let s: String = map.next_value()?;
                            elem = Some(ElemType::from_name(&s).ok_or_else(|| {
                                err::<A::Error>(
                                    format!("unknown element type `{s}`"),
                                    suggest::fix_for(
                                        &s,
                                        &suggest::elem_types(),
                                        "an element type is one of",
                                    ),
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

impl crate::util::HasFix for ParseError {
    fn message(&self) -> String {
        match self.path.as_str() {
            "" => format!("{}: {}", self.place(), self.message),
            path => format!("{}: at {path}: {}", self.place(), self.message),
        }
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }

    /// The place of the error is its location; the JSON path of the value, its node.
    fn problem(&self) -> crate::util::Problem {
        let p = crate::util::Problem::new(self.message(), self.fix()).at(self.place());
        match self.path.as_str() {
            "" => p,
            path => p.on_node(path),
        }
    }
}

crate::util::problem::into_problem!(ParseError);
