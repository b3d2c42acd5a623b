//! `vyrescope export --vyre FILE.json [-o OUT.vyre | --text [-o OUT.txt]]`; a pipeline file
//! (or a vyre graph) gives a vyre ProgramGraph: `export --vyre PIPELINE.json -o OUT.vgr`.

use std::path::PathBuf;

use crate::util::Problem;

/// Export a Program to another compiler's format (vyre; needs the `vyre` feature).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope export --vyre fixtures/programs/vadd_f32.json -o vadd.vyre\n  vyrescope export --vyre fixtures/programs/vadd_f32.json --text -o vadd.txt\n  vyrescope export --vyre fixtures/programs/vadd_f32.json --text\n  vyrescope export --vyre fixtures/pipelines/chain.json -o chain.vgr"
)]
pub struct Args {
    /// Program file (format-1 JSON), or a pipeline file (exported as a vyre ProgramGraph).
    pub file: PathBuf,
    /// Write a vyre Program (wire bytes, or with --text the `vyre_ir v0.1` hex envelope); for
    /// a pipeline, a vyre ProgramGraph (`VGR0` wire bytes).
    #[arg(long)]
    pub vyre: bool,
    /// Write vyre's text envelope instead of wire bytes.
    #[arg(long)]
    pub text: bool,
    /// Output file (needed for wire bytes; text goes to stdout without it).
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

/// Runs `export`.
pub fn run(a: &Args) -> super::Outcome {
    if !a.vyre {
        return Err(Problem::new(
            "export needs a target format",
            "pass --vyre (the only target so far)",
        ));
    }
    run_vyre(a)
}

#[cfg(not(feature = "vyre"))]
fn run_vyre(_a: &Args) -> super::Outcome {
    Err(super::vyre_emit::feature_off())
}

#[cfg(feature = "vyre")]
fn run_vyre(a: &Args) -> super::Outcome {
    let bytes = if crate::ir::is_pipeline_file(&a.file) {
        graph_bytes(a)?
    } else {
        let p = crate::ir::load_program(&a.file)?;
        let vp = match crate::vyre::export(&p) {
            Ok(v) => v,
            Err(e) => return Err(Problem::from(e).context(a.file.display())),
        };
        crate::vyre::files::encode(&vp, a.text)
            .map_err(|e| Problem::from(e).context(a.file.display()))?
    };
    match &a.output {
        Some(path) => {
            crate::util::refuse_overwrite(path, [a.file.as_path()], "-o")?;
            // Atomic: a failed write leaves a previous file whole (see util::write_atomic).
            if let Err(e) = crate::util::write_atomic(path, &bytes) {
                return Err(Problem::new(
                    format!("cannot write {}: {e}", path.display()),
                    "check the folder exists and is writable, and that the path names a regular file",
                ));
            }
            Ok(0)
        }
        None if a.text => {
            super::write_stdout(&String::from_utf8_lossy(&bytes));
            Ok(0)
        }
        None => Err(Problem::new(
            "wire bytes are binary and were not written to the terminal",
            "pass -o OUT.vyre, or --text for the hex envelope",
        )),
    }
}

/// The ProgramGraph wire bytes of the pipeline `a.file` (validated first), refused where
/// vyre's own decoder would not read them back.
#[cfg(feature = "vyre")]
fn graph_bytes(a: &Args) -> Result<Vec<u8>, Problem> {
    if a.text {
        return Err(Problem::usage(
            "a pipeline exports as a vyre ProgramGraph, which has no text form",
            "leave out --text and pass -o OUT.vgr",
        ));
    }
    let pipeline = super::plan::load(&a.file)?;
    let graph = crate::vyre::export::graph::export_pipeline(&pipeline)
        .map_err(|e| Problem::from(e).context(a.file.display()))?;
    crate::vyre::export::graph::encode_graph(&graph, &pipeline.name)
        .map_err(|e| Problem::from(e).context(a.file.display()))
}
