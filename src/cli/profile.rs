//! `vyrescope profile FILE [--source pc|instrumented] [--estimate] [--json]`: where a
//! Program's time goes, per IR statement (a pipeline: per step), with the PTX lines and SASS
//! instructions behind each statement.

use std::path::PathBuf;

use crate::harness::profile_run::{
    estimate_kernels, instrumented_profiles, instrumented_runs, load_kernels, profile_request,
    PROFILE_REPEAT,
};
use crate::profile::report::Profile;
use crate::util::Problem;

/// Which source `--source` picks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceArg {
    /// CUPTI PC sampling of the plain kernel (samples and stall reasons).
    Pc,
    /// The instrumented build (%clock64 cycles per statement).
    Instrumented,
}

/// Profile a Program (or each step of a pipeline) per IR statement on the GPU.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Without a GPU, `--estimate` runs the instrumented build on the reference interpreter instead: an instruction-count ESTIMATE (statements executed), not time.\n\nExamples:\n  vyrescope profile fixtures/programs/matmul_tiled_f32.json\n  vyrescope profile fixtures/programs/saxpy_f32.json --source pc --json\n  vyrescope profile fixtures/programs/stencil5_f32.json --estimate"
)]
pub struct Args {
    /// Program or pipeline file.
    pub file: PathBuf,
    /// Where the numbers come from.
    #[arg(long, value_enum, default_value = "instrumented")]
    pub source: SourceArg,
    /// No GPU: the reference interpreter's instruction-count estimate (labelled as such).
    #[arg(long, conflicts_with = "source")]
    pub estimate: bool,
    /// Statements listed per kernel.
    #[arg(long, default_value_t = 15)]
    pub top: usize,
    /// SM of the PTX and SASS the statements point into (the GPU's own for the run).
    #[arg(long, default_value_t = 90)]
    pub sm: u32,
    /// Print JSON: {"profiles":[{"kernel","source","unit","total","statements":[...]}]}.
    #[arg(long)]
    pub json: bool,
    /// GPU ordinal.
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
}

/// Runs `profile`.
pub fn run(a: &Args) -> super::Outcome {
    let (kernels, mut inputs) = load_kernels(&a.file)?;
    if a.estimate {
        let profiles = estimate_kernels(&kernels, &mut inputs, Some(a.sm))?;
        return print(a, &profiles);
    }
    let mut rt = a.gpu.open().map_err(|p| {
        Problem::new(
            format!("`profile` measures on a GPU, and none could be opened: {}", p.message),
            format!(
                "{}; or add `--estimate` for the reference interpreter's instruction-count estimate (statements executed, not time)",
                p.fix
            ),
        )
    })?;
    if a.source == SourceArg::Pc {
        let why = crate::runtime::cupti::pc_sampling_unavailable();
        errln!("note: {}\n  falling back to `--source instrumented`", why);
    }
    // In this process, as `run --backend cuda` runs; the GPU worker's
    // `HarnessJob::Profile` calls the same `instrumented_runs` (through `profile_file`).
    let req = profile_request(PROFILE_REPEAT, None);
    let runs = instrumented_runs(&mut rt, &kernels, &mut inputs, &req)?;
    let profiles = instrumented_profiles(&kernels, &runs, Some(a.sm))?;
    print(a, &profiles)
}

fn print(a: &Args, profiles: &[Profile]) -> super::Outcome {
    if a.json {
        let v = serde_json::json!({ "profiles": profiles });
        match serde_json::to_string_pretty(&v) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        let text: Vec<String> = profiles.iter().map(|p| p.render(a.top)).collect();
        out!("{}", crate::util::terminal_safe(&text.join("\n")));
    }
    Ok(0)
}
