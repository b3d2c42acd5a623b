//! `vyrescope tune FILE`: time candidate workgroup sizes on the live GPU (each verified
//! against the reference interpreter); results are cached per (program, device).

use std::path::{Path, PathBuf};

use crate::harness::tune::TuneRequest;
use crate::occupancy::tune::{parse_candidates, render_json, render_text, CacheMode};
use crate::util::Problem;

/// Time candidate workgroup sizes on the GPU and report the fastest.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope tune fixtures/programs/vadd_f32.json\n  vyrescope tune fixtures/programs/reduce_sum_f32.json --candidates 64,128,256,512 --repeat 20 --json"
)]
pub struct Args {
    /// Program file.
    pub file: PathBuf,
    /// Candidate workgroup sizes: a range of multiples of 32 (`32..1024`), a list, or 2-D sizes.
    #[arg(long, default_value = "32..1024")]
    pub candidates: String,
    /// Timed launches per candidate (median reported).
    #[arg(long, default_value_t = 10)]
    pub repeat: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Ignore (and overwrite) cached results.
    #[arg(long)]
    pub fresh: bool,
    /// Allow `run.inputs.*.file` data files anywhere inside DIR (default: only inside the
    /// Program file's folder).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// GPU ordinal (`--gpu N`).
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
}

/// Runs `tune`.
pub fn run(a: &Args) -> super::Outcome {
    let text = {
        let b =
            crate::util::read_limited(&a.file, crate::ir::parse::MAX_FILE_BYTES, "Program file")?;
        String::from_utf8_lossy(&b).into_owned()
    };
    let program = crate::ir::parse_program(&text, &a.file.display().to_string())?;
    let candidates = parse_candidates(&a.candidates)?;
    let mut rt = a.gpu.open()?;
    let req = TuneRequest {
        program: &program,
        program_text: &text,
        base: a.file.parent().unwrap_or(Path::new(".")),
        root: a.root.as_deref(),
        candidates,
        repeat: a.repeat,
        mode: if a.fresh {
            CacheMode::Fresh
        } else {
            CacheMode::Use
        },
        cache: None,
    };
    match rt.tune(&req) {
        Ok(r) => {
            if a.json {
                outln!("{}", render_json(&r));
            } else {
                out!("{}", render_text(&r));
            }
            Ok(0)
        }
        Err(e) => Err(Problem::from(e)),
    }
}
