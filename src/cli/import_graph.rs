//! `vyrescope import GRAPH.vgr [-o DIR] [--json]` (feature `vyre`): a vyre ProgramGraph (or
//! a megakernel artifact `.vmk`, through the graph it carries) converted into a pipeline ([`crate::vyre::import::graph`]). With `-o DIR` the pipeline goes to
//! `DIR/<name>.pipeline.json` and each step's Program to `DIR/programs/<step>.json`, so that
//! the result reads like any hand-written pipeline; without it, one pipeline file with inline
//! Programs goes to stdout.

use std::path::Path;

use crate::util::Problem;

use super::import::Args;

#[cfg(feature = "vyre")]
#[derive(serde::Serialize)]
struct Report<'a> {
    file: String,
    out: Option<String>,
    valid: bool,
    steps: usize,
    buffers: usize,
    diagnostics: &'a [crate::finding::Diagnostic],
}

/// Runs `import` on a graph file (`bytes` are its contents): exit 0 when the graph converted
/// completely and the pipeline validates.
#[cfg(feature = "vyre")]
pub(super) fn run(a: &Args, bytes: &[u8]) -> super::Outcome {
    use crate::vyre::import::graph::{graph_name, import_graph, read_graph};
    let (graph, notes) = read_graph(&a.file, bytes).map_err(Problem::from)?;
    let mut imported = import_graph(&graph, &graph_name(&a.file));
    imported.diagnostics.splice(0..0, notes);
    if imported.errors().next().is_some() {
        return Err(Problem::invalid_file(
            &a.file,
            "vyre graph for import",
            &imported.diagnostics,
        ));
    }
    let pipeline = imported.pipeline;
    let mut diagnostics = imported.diagnostics;
    diagnostics.extend(crate::validate::pipeline::validate_pipeline(&pipeline));
    let valid = !diagnostics
        .iter()
        .any(|d| d.severity == crate::finding::Severity::Error);
    let text = match &a.out {
        Some(dir) => {
            let (path, files) = write_dir(a, dir, &pipeline)?;
            if !a.json {
                errln!("wrote {} and {files} Program file(s)", path.display());
            }
            None
        }
        None => Some(crate::ir::pipeline_to_json(&pipeline, None)?),
    };
    if a.json {
        let report = Report {
            file: a.file.display().to_string(),
            out: a.out.as_ref().map(|o| o.display().to_string()),
            valid,
            steps: pipeline.steps.len(),
            buffers: pipeline.buffers.len(),
            diagnostics: &diagnostics,
        };
        let head = serde_json::to_string(&report).map_err(Problem::bug)?;
        // The pipeline goes in as written (statement key order matters to the parser).
        let body = text.as_deref().map(str::trim_end).unwrap_or("null");
        outln!("{},\"pipeline\":{body}}}", head.trim_end_matches('}'));
    } else {
        if let Some(text) = &text {
            out!("{text}");
        }
        for d in &diagnostics {
            let text = d.to_string().replace('\n', "\n  ");
            errln!("{}", crate::util::terminal_safe(&text));
        }
    }
    Ok(if valid { 0 } else { 1 })
}

/// Writes the pipeline and its step Programs under `dir` (created if missing); refuses to
/// replace the graph file itself. Returns the pipeline file's path and the Program count.
#[cfg(feature = "vyre")]
fn write_dir(
    a: &Args,
    dir: &Path,
    pipeline: &crate::ir::Pipeline,
) -> Result<(std::path::PathBuf, usize), Problem> {
    let fix = "pass -o with a folder you can write to";
    let cannot = |what: &Path, e: std::io::Error| {
        Problem::new(format!("cannot write {}: {e}", what.display()), fix)
    };
    let programs = dir.join("programs");
    std::fs::create_dir_all(&programs).map_err(|e| cannot(&programs, e))?;
    let mut files = Vec::new();
    for step in &pipeline.steps {
        let rel = format!("programs/{}.json", step.program.name);
        let path = dir.join(&rel);
        crate::util::refuse_overwrite(&path, [a.file.as_path()], "-o")?;
        let json = crate::ir::program_to_json(&step.program)?;
        crate::util::write_atomic(&path, format!("{json}\n").as_bytes())
            .map_err(|e| cannot(&path, e))?;
        files.push(rel);
    }
    let path = dir.join(format!("{}.pipeline.json", pipeline.name));
    crate::util::refuse_overwrite(&path, [a.file.as_path()], "-o")?;
    let text = crate::ir::pipeline_to_json(pipeline, Some(&files))?;
    crate::util::write_atomic(&path, text.as_bytes()).map_err(|e| cannot(&path, e))?;
    Ok((path, files.len()))
}

/// Without the `vyre` feature a graph cannot be converted: the loader's error says how to
/// get a build that can.
#[cfg(not(feature = "vyre"))]
pub(super) fn run(a: &Args, bytes: &[u8]) -> super::Outcome {
    match crate::ir::foreign::import_graph(&a.file, bytes) {
        Err(e) => Err(Problem::from(e).at(a.file.display().to_string())),
        Ok(_) => Err(Problem::bug("a graph converted without the vyre feature")),
    }
}

/// True when `path` (with contents `bytes`) is a vyre graph rather than a Program file.
pub(super) fn is_graph(path: &Path, bytes: &[u8]) -> bool {
    crate::ir::foreign::is_vyre_graph(path, bytes)
}
