//! `vyrescope profile FILE [--source pc|instrumented] [--estimate] [--json]`: where a
//! Program's time goes, per IR statement (a pipeline: per step), with the PTX lines and SASS
//! instructions behind each statement.

use std::path::PathBuf;

use crate::emit::{emit, EmitOptions, EmittedKernel};
use crate::harness::profile_run::{
    instrumented_runs, load_kernels, profile_request, PROFILE_REPEAT,
};
use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::Program;
use crate::profile::instrument::instrument;
use crate::profile::report::{from_table, Lowering, Overhead, Profile, Source};
use crate::sass::SassListing;
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
    let mut profiles = Vec::new();
    if a.estimate {
        for (k, kernel) in kernels.iter().enumerate() {
            let mut buffers = inputs.take(k);
            let lowered = lower(&kernel.program, kernel.shape.workgroup_size, a.sm);
            let mut p = estimate_on(
                &kernel.program,
                &kernel.shape,
                &mut buffers,
                lowered.lowering(),
            )?;
            p.kernel = kernel.label.clone().unwrap_or(p.kernel);
            inputs.put(k, buffers);
            profiles.push(p);
        }
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
    for (kernel, r) in kernels.iter().zip(&runs) {
        let lowered = lower(&kernel.program, kernel.shape.workgroup_size, a.sm);
        let inst = instrument(&kernel.program, r.stride)?;
        let mut p = from_table(
            &kernel.program,
            &inst,
            &r.table,
            Source::Instrumented,
            lowered.lowering(),
        );
        p.overhead = Some(Overhead {
            plain_ms: r.plain_ms,
            instrumented_ms: r.instrumented_ms,
        });
        p.kernel = kernel.label.clone().unwrap_or(p.kernel);
        profiles.push(p);
    }
    print(a, &profiles)
}

/// The estimate of one kernel on `buffers` (left holding the plain build's outputs).
fn estimate_on(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut Vec<HostBuffer>,
    lowering: Lowering,
) -> Result<Profile, Problem> {
    let prepared = crate::inputs::PreparedRun {
        shape: *shape,
        buffers: std::mem::take(buffers),
    };
    let p = crate::profile::estimate::estimate(program, &prepared, lowering)?;
    *buffers = prepared.buffers;
    // The next pipeline step reads what this one wrote: run the plain build for it.
    crate::interp::run(program, shape, buffers)?;
    Ok(p)
}

/// The plain kernel and its SASS, for the PTX lines and instructions behind statements
/// (either may be missing: no ptxas or nvdisasm leaves the SASS out).
struct Lowered {
    kernel: Option<EmittedKernel>,
    sass: Option<SassListing>,
}

impl Lowered {
    fn lowering(&self) -> Lowering<'_> {
        Lowering {
            kernel: self.kernel.as_ref(),
            sass: self.sass.as_ref(),
        }
    }
}

/// Emits `program` as `sass` does (line info on, so the SASS maps back to IR lines).
fn lower(program: &Program, wg: [u32; 3], sm: u32) -> Lowered {
    let opts = EmitOptions {
        sm,
        workgroup_size: wg,
        lineinfo: true,
        ..EmitOptions::for_program(program)
    };
    let kernel = emit(program, &opts).ok();
    let sass = kernel
        .as_ref()
        .and_then(|k| crate::sass::disassemble(k, sm).ok());
    Lowered { kernel, sass }
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
