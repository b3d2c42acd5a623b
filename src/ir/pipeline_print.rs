//! Text form of a [`Pipeline`]: a header, the buffer table, then every step (its Program,
//! bindings and shape overrides) followed by that Program's IR printed by
//! [`super::print`] with node ids prefixed `steps[i].`, so the gutter names every statement of
//! the whole pipeline uniquely:
//!
//! ```text
//! pipeline chain
//! // x2 then +1
//! buffers {
//!   f32  x[1024]  random seed 7 range [-3, 3]
//!   f32  y[1024]  zeros  transient
//! }
//! step 0  programs/scale2.json  bind(src=x, dst=y)
//!   kernel scale2 workgroup(256,1,1)
//!   ...
//! ```

use super::pipeline::{Pipeline, PipelineBuffer, Step};
use super::print::{literal, print_program_prefixed, Printed, PrintedLine};
use super::run_spec::{Fill, InputSource};

/// Prints `pipeline`; the step bodies' lines carry node ids `steps[i].body[..]`.
pub fn print_pipeline(pipeline: &Pipeline) -> Printed {
    let mut lines = Vec::new();
    let mut push = |code: String, node: Option<String>| {
        lines.push(PrintedLine {
            code,
            node: node.map(Into::into),
        })
    };
    push(format!("pipeline {}", pipeline.name), None);
    if let Some(doc) = &pipeline.doc {
        for l in doc.lines() {
            push(format!("// {}", l.trim_end()).trim_end().to_string(), None);
        }
    }
    push("buffers {".into(), None);
    let width = pipeline
        .buffers
        .iter()
        .map(|b| b.name.len() + len_text(b).len())
        .max()
        .unwrap_or(0);
    for b in &pipeline.buffers {
        let decl = format!("{}{}", b.name, len_text(b));
        let mut code = format!(
            "  {:<4} {decl:<width$}  {}",
            b.elem.name(),
            contents_text(b)
        );
        if b.transient {
            code.push_str("  transient");
        }
        push(code, None);
    }
    push("}".into(), None);
    for (i, s) in pipeline.steps.iter().enumerate() {
        push(step_header(i, s), Some(format!("steps[{i}]")));
        let printed = print_program_prefixed(&s.program, &format!("steps[{i}]."));
        for l in printed.lines {
            push(format!("  {}", l.code), l.node.map(|n| n.to_string()));
        }
    }
    Printed { lines }
}

/// `[len]` when the length is written in the file (fills always; `data`/`file` when given).
fn len_text(b: &PipelineBuffer) -> String {
    match (&b.contents.len, &b.contents.source) {
        (Some(n), _) => format!("[{n}]"),
        (None, InputSource::Data(d)) => format!("[{}]", d.len()),
        (None, _) => String::new(),
    }
}

fn contents_text(b: &PipelineBuffer) -> String {
    match &b.contents.source {
        InputSource::Fill(Fill::Zeros) => "zeros".into(),
        InputSource::Fill(Fill::Ones) => "ones".into(),
        InputSource::Fill(Fill::Iota) => "iota".into(),
        InputSource::Fill(Fill::Random { seed, range }) => match range {
            Some((lo, hi)) => format!("random seed {seed} range [{lo}, {hi}]"),
            None => format!("random seed {seed}"),
        },
        InputSource::Data(d) => {
            let shown: Vec<String> = d.iter().take(8).map(literal).collect();
            let more = if d.len() > 8 { ", ..." } else { "" };
            format!("data [{}{more}]", shown.join(", "))
        }
        InputSource::File(f) => format!("file {f}"),
    }
}

fn step_header(i: usize, s: &Step) -> String {
    let mut h = format!(
        "step {i}  {}",
        s.program_path.as_deref().unwrap_or("(inline)")
    );
    let binds: Vec<String> = s.bind.iter().map(|(p, b)| format!("{p}={b}")).collect();
    h.push_str(&format!("  bind({})", binds.join(", ")));
    if let Some([x, y, z]) = s.workgroup_size {
        h.push_str(&format!("  workgroup({x},{y},{z})"));
    }
    if let Some([x, y, z]) = s.grid {
        h.push_str(&format!("  grid({x},{y},{z})"));
    }
    if let Some(n) = s.elements {
        h.push_str(&format!("  elements({n})"));
    }
    h
}
