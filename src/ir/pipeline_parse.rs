//! JSON -> [`Pipeline`] (pipeline format version 1, `docs/pipeline-format.md`).
//!
//! One streaming `serde_json` pass like the Program parser (and reusing its pieces: inline
//! Programs go through the same visitor, buffer contents through the same `run.inputs` entry
//! reader), so every error carries the JSON path (`steps[1].bind.src`), line and column and a
//! `Fix:`. A second pass loads the Programs named by path, relative to the pipeline file's
//! folder; a path that is absolute or climbs out of that folder is refused, so a pipeline
//! cannot make the tool read arbitrary files.
//!
//! Only the document's shape is checked here; whether the bindings make sense (every host
//! buffer bound, element types, aliasing, transient buffers) is `validate::pipeline`'s job,
//! which reports all findings at once.

use std::fmt;
use std::path::{Component, Path};

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

use super::ast::Program;
use super::parse::{
    deserialize_document, err, is_ident, json_text, load_program, read_file_bytes, Dims,
    InputFields, KernelName, ParseError, ProgramVisitor, INPUT_KEYS,
};
use super::pipeline::{Pipeline, PipelineBuffer, Step};
use super::run_spec::InputSource;
use super::types::ElemType;

/// Top-level keys of a pipeline file.
const PIPELINE_KEYS: &str = "format, pipeline, doc, buffers, steps";
/// Keys of one step.
const STEP_KEYS: &str = "program, bind, workgroup_size, grid, elements";

/// Reads and parses a pipeline file, then loads the Programs its steps name (relative to the
/// file's folder).
pub fn load_pipeline(path: &Path) -> Result<Pipeline, ParseError> {
    let file = path.display().to_string();
    let bytes = read_bytes(path)?;
    if super::foreign::is_vyre_graph(path, &bytes) {
        return super::foreign::import_graph(path, &bytes);
    }
    let text = json_text(path, bytes)?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse_pipeline(&text, &file, base)
}

/// Parses pipeline JSON text (`file` names it in errors); `base_dir` resolves `program` paths.
pub fn parse_pipeline(text: &str, file: &str, base_dir: &Path) -> Result<Pipeline, ParseError> {
    let raw: RawPipeline = deserialize_document(
        text,
        file,
        "a pipeline is a JSON object: {\"format\": 1, \"pipeline\": ..., \"buffers\": {..}, \"steps\": [..]}",
    )?;
    resolve(raw, file, base_dir)
}

/// True when `text` is a JSON object with a top-level `steps` or `pipeline` key: a pipeline
/// rather than a Program. Anything unreadable is "not a pipeline", so the Program parser
/// reports it.
pub fn looks_like_pipeline(text: &str) -> bool {
    struct Probe;
    impl<'de> Visitor<'de> for Probe {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut found = false;
            while let Some(k) = map.next_key::<String>()? {
                found |= k == "steps" || k == "pipeline";
                map.next_value::<IgnoredAny>()?;
            }
            Ok(found)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Probe).unwrap_or(false)
}

/// True when the file at `path` is readable and [`looks_like_pipeline`], or is a vyre
/// ProgramGraph (which opens as a pipeline).
pub fn is_pipeline_file(path: &Path) -> bool {
    read_bytes(path).is_ok_and(|b| {
        super::foreign::is_vyre_graph(path, &b)
            || json_text(path, b).is_ok_and(|t| looks_like_pipeline(&t))
    })
}

/// The file as UTF-8 text, with the same reader, limit and messages as a Program file.
fn read_bytes(path: &Path) -> Result<Vec<u8>, ParseError> {
    read_file_bytes(
        path,
        "pipeline file",
        "move large buffer contents to a `buffers.<name>.file` raw binary file",
    )
}

/// Loads the Programs named by path and puts each step's bindings into its Program's buffer
/// order (bindings naming no buffer of the Program keep file order at the end, for the
/// validator to report).
fn resolve(raw: RawPipeline, file: &str, base_dir: &Path) -> Result<Pipeline, ParseError> {
    let at = |path: String, message: String, fix: String| ParseError {
        file: file.into(),
        line: 0,
        column: 0,
        path,
        message,
        fix,
    };
    let mut steps = Vec::with_capacity(raw.steps.len());
    for (i, s) in raw.steps.into_iter().enumerate() {
        let (program, program_path) = match s.program {
            StepProgram::Inline(p) => (p, None),
            StepProgram::Path(rel) => {
                let where_ = format!("steps[{i}].program");
                if !stays_inside(&rel) {
                    return Err(at(
                        where_,
                        format!("step {i}: program path `{rel}` is absolute or leaves the pipeline's folder"),
                        "put the Program in the pipeline's folder (or below it) and give its path relative to the pipeline file, e.g. \"programs/scale.json\"".into(),
                    ));
                }
                // Lexically inside is not enough: a symbolic link on the way may point
                // anywhere, so the resolved file must be inside the folder too.
                let confined = crate::util::confine(base_dir, base_dir, &rel, &where_)
                    .map_err(|e| {
                        at(
                            where_.clone(),
                            format!("step {i}: program `{rel}` does not load: {}", e.message),
                            "put the Program itself (not a link to a file elsewhere) in the pipeline's folder or below it".into(),
                        )
                    })?;
                let p = load_program(&confined).map_err(|e| {
                    let inner = if e.path.is_empty() {
                        String::new()
                    } else {
                        format!("at {}: ", e.path)
                    };
                    at(
                        where_,
                        format!(
                            "step {i}: program `{rel}` does not load: {}:{}:{}: {inner}{}",
                            e.file, e.line, e.column, e.message
                        ),
                        e.fix,
                    )
                })?;
                (p, Some(rel))
            }
        };
        let mut bind = Vec::with_capacity(s.bind.len());
        for b in program.host_buffers() {
            if let Some(pair) = s.bind.iter().find(|(k, _)| *k == b.name) {
                bind.push(pair.clone());
            }
        }
        for pair in &s.bind {
            if !bind.iter().any(|(k, _)| *k == pair.0) {
                bind.push(pair.clone());
            }
        }
        steps.push(Step {
            program,
            program_path,
            bind,
            workgroup_size: s.workgroup_size,
            grid: s.grid,
            elements: s.elements,
        });
    }
    Ok(Pipeline {
        name: raw.name,
        doc: raw.doc,
        buffers: raw.buffers,
        steps,
    })
}

/// True for a relative path that never climbs above its starting folder (`a/../b` is fine,
/// `../x` and `/x` are not).
fn stays_inside(rel: &str) -> bool {
    let mut depth = 0usize;
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    !rel.is_empty()
}

// ---------------------------------------------------------------------------------------------
// Raw document

struct RawPipeline {
    name: String,
    doc: Option<String>,
    buffers: Vec<PipelineBuffer>,
    steps: Vec<RawStep>,
}

impl<'de> Deserialize<'de> for RawPipeline {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPipeline;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a pipeline object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawPipeline, A::Error> {
                let (mut format, mut name, mut doc, mut buffers, mut steps) =
                    (None, None, None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "format" => {
                            let v: u64 = map.next_value()?;
                            if v != 1 {
                                return Err(err(
                                    format!("format {v} is not supported (this build reads pipeline format 1)"),
                                    "set \"format\": 1, or use a vyrescope that reads this format",
                                ));
                            }
                            format = Some(v);
                        }
                        "pipeline" => name = Some(map.next_value::<KernelName>()?.0),
                        "doc" => doc = Some(map.next_value::<String>()?),
                        "buffers" => buffers = Some(map.next_value::<RawBuffers>()?.0),
                        "steps" => steps = Some(map.next_value::<RawSteps>()?.0),
                        other => {
                            return Err(err(
                                format!("unknown key `{other}`"),
                                format!("remove it; a pipeline has the keys {PIPELINE_KEYS}"),
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
                let steps = steps.ok_or_else(|| missing("steps"))?;
                Ok(RawPipeline {
                    name: name.ok_or_else(|| missing("pipeline"))?,
                    doc,
                    buffers: buffers.ok_or_else(|| missing("buffers"))?,
                    steps,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `buffers`: name -> buffer, in file order.
struct RawBuffers(Vec<PipelineBuffer>);

impl<'de> Deserialize<'de> for RawBuffers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<PipelineBuffer>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object mapping buffer names to buffers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut v: Vec<PipelineBuffer> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    // Names become dump file names (`DIR/<name>.bin`): identifiers only.
                    if !is_ident(&name) {
                        return Err(err(
                            format!("`{name}` is not a valid buffer name"),
                            "use letters, digits and `_`, not starting with a digit",
                        ));
                    }
                    if v.iter().any(|b| b.name == name) {
                        return Err(err(
                            format!("duplicate buffer `{name}`"),
                            "keep one of them",
                        ));
                    }
                    let mut b: PipelineBuffer = map.next_value::<RawBuffer>()?.0;
                    b.name = name;
                    v.push(b);
                }
                if v.is_empty() {
                    return Err(err(
                        "`buffers` is empty",
                        "declare the buffers the steps bind, e.g. {\"x\": {\"type\": \"f32\", \"len\": 1024, \"fill\": \"random\"}}",
                    ));
                }
                Ok(v)
            }
        }
        d.deserialize_map(V).map(RawBuffers)
    }
}

struct RawBuffer(PipelineBuffer);

impl<'de> Deserialize<'de> for RawBuffer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PipelineBuffer;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a buffer {\"type\", \"len\", \"fill\"} | {\"type\", \"data\"} | {\"type\", \"file\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PipelineBuffer, A::Error> {
                let mut fields = InputFields::default();
                let (mut elem, mut transient) = (None, false);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "type" => {
                            let s: String = map.next_value()?;
                            elem = Some(ElemType::from_name(&s).ok_or_else(|| {
                                err::<A::Error>(
                                    format!("unknown element type `{s}`"),
                                    super::parse::suggest::fix_for(
                                        &s,
                                        &super::parse::suggest::elem_types(),
                                        "an element type is one of",
                                    ),
                                )
                            })?);
                        }
                        "transient" => transient = map.next_value::<bool>()?,
                        k => {
                            if !fields.take(k, &mut map)? {
                                return Err(err(
                                    format!("unknown key `{k}` in a pipeline buffer"),
                                    format!("remove it; a pipeline buffer has the keys type, transient, {INPUT_KEYS}"),
                                ));
                            }
                        }
                    }
                }
                let contents = fields.finish::<A::Error>()?;
                // A Program's input may take its length from `run.elements`; a pipeline has no
                // such default, so a fill must say how long it is.
                if contents.len.is_none() && matches!(contents.source, InputSource::Fill(_)) {
                    return Err(err(
                        "a filled pipeline buffer needs `len`",
                        "add \"len\": N (the element count)",
                    ));
                }
                Ok(PipelineBuffer {
                    name: String::new(),
                    elem: elem.ok_or_else(|| {
                        err::<A::Error>(
                            "buffer is missing `type`",
                            "add \"type\": \"f32\" (or another element type)",
                        )
                    })?,
                    contents,
                    transient,
                })
            }
        }
        d.deserialize_map(V).map(RawBuffer)
    }
}

/// `steps`: at least one (checked here so the error's path is `steps`).
struct RawSteps(Vec<RawStep>);

impl<'de> Deserialize<'de> for RawSteps {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let steps = Vec::<RawStep>::deserialize(d)?;
        if steps.is_empty() {
            return Err(err(
                "`steps` is empty",
                "give at least one step: {\"program\": \"programs/x.json\", \"bind\": {..}}",
            ));
        }
        Ok(RawSteps(steps))
    }
}

enum StepProgram {
    Path(String),
    Inline(Program),
}

struct RawStep {
    program: StepProgram,
    bind: Vec<(String, String)>,
    workgroup_size: Option<[u32; 3]>,
    grid: Option<[u32; 3]>,
    elements: Option<u64>,
}

impl<'de> Deserialize<'de> for RawStep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawStep;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a step {\"program\", \"bind\"}")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawStep, A::Error> {
                let (mut program, mut bind, mut wg, mut grid, mut elements) =
                    (None, None, None, None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "program" => program = Some(map.next_value::<RawStepProgram>()?.0),
                        "bind" => bind = Some(map.next_value::<RawBind>()?.0),
                        "workgroup_size" => wg = Some(map.next_value::<Dims>()?.0),
                        "grid" => grid = Some(map.next_value::<Dims>()?.0),
                        "elements" => {
                            let n: u64 = map.next_value()?;
                            if n == 0 {
                                return Err(err(
                                    "`elements` is 0",
                                    "give at least 1 element, or drop `elements`",
                                ));
                            }
                            elements = Some(n);
                        }
                        other => {
                            return Err(err(
                                format!("unknown key `{other}` in a step"),
                                format!("remove it; a step has the keys {STEP_KEYS}"),
                            ))
                        }
                    }
                }
                if grid.is_some() && elements.is_some() {
                    return Err(err(
                        "a step gives both `grid` and `elements`",
                        "keep one of them",
                    ));
                }
                Ok(RawStep {
                    program: program.ok_or_else(|| {
                        err::<A::Error>(
                            "step is missing `program`",
                            "add \"program\": \"programs/NAME.json\" or an inline Program object",
                        )
                    })?,
                    bind: bind.ok_or_else(|| {
                        err::<A::Error>(
                            "step is missing `bind`",
                            "add \"bind\": {\"PROGRAM_BUFFER\": \"PIPELINE_BUFFER\", ...}",
                        )
                    })?,
                    workgroup_size: wg,
                    grid,
                    elements,
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// `program`: a path string or an inline Program object (parsed by the Program visitor, so the
/// error paths read `steps[0].program.body[2]`).
struct RawStepProgram(StepProgram);

impl<'de> Deserialize<'de> for RawStepProgram {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StepProgram;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a Program path or an inline Program object")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<StepProgram, E> {
                Ok(StepProgram::Path(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<StepProgram, A::Error> {
                ProgramVisitor.visit_map(map).map(StepProgram::Inline)
            }
        }
        d.deserialize_any(V).map(RawStepProgram)
    }
}

/// `bind`: Program buffer -> pipeline buffer, in file order; a Program buffer named twice is
/// an error here (JSON objects may repeat keys).
struct RawBind(Vec<(String, String)>);

impl<'de> Deserialize<'de> for RawBind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Vec<(String, String)>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object mapping Program buffers to pipeline buffers")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut v: Vec<(String, String)> = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    if v.iter().any(|(p, _)| *p == k) {
                        return Err(err(
                            format!("Program buffer `{k}` is bound twice"),
                            "keep one binding for it",
                        ));
                    }
                    let target: String = map.next_value()?;
                    v.push((k, target));
                }
                Ok(v)
            }
        }
        d.deserialize_map(V).map(RawBind)
    }
}
