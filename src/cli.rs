//! Command line (the only `clap` user): parse arguments, call the library, print.
//!
//! Each subcommand lives in `cli/<name>.rs` with its `Args` and a `run` returning the exit
//! code. Errors are printed as one message with a `Fix:` line and exit code 1.

use clap::{Parser, Subcommand};

/// `print!` for the CLI: through [`write_stdout`], so a closed pipe ends the process quietly.
macro_rules! out {
    ($($t:tt)*) => { $crate::cli::write_stdout(&format!($($t)*)) };
}

/// `println!` for the CLI: through [`write_stdout`], so a closed pipe ends the process quietly.
macro_rules! outln {
    () => { $crate::cli::write_stdout("\n") };
    ($($t:tt)*) => { $crate::cli::write_stdout(&(format!($($t)*) + "\n")) };
}

pub mod bench_kernel;
pub mod check;
pub mod emit;
pub mod fault_test;
pub mod gpu_worker;
pub mod occupancy;
pub mod occupancy_capture;
pub mod plan;
pub mod print;
pub mod probe;
pub mod run;
pub mod run_cuda;
pub mod run_pipeline;
pub mod run_pipeline_cuda;
pub mod sass;
pub mod selftest;
pub mod tui;
pub mod tune;

/// vyrescope: inspect, emit, run and tune vyre-style compute Programs on CUDA GPUs.
#[derive(Debug, Parser)]
#[command(
    name = "vyrescope",
    version,
    about,
    long_about = "vyrescope: a CUDA/PTX backend for vyre-style compute Programs and a terminal \
inspector. Without a subcommand, `vyrescope FILE...` opens the inspector on the given Program \
files (directories expand to their *.json).",
    after_help = "Examples:\n  vyrescope check fixtures/programs/*.json\n  vyrescope print fixtures/programs/vadd_f32.json\n  vyrescope run fixtures/programs/vadd_f32.json --backend reference"
)]
pub struct Cli {
    /// Subcommand; omit it to open the inspector on FILES.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Program files or directories for the inspector.
    pub files: Vec<std::path::PathBuf>,
    /// Inspector options (without a subcommand).
    #[command(flatten)]
    pub inspector: tui::InspectorOpts,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse and validate Program files.
    Check(check::Args),
    /// Print a Program's IR text with node ids in a gutter.
    Print(print::Args),
    /// Execute a Program and summarise its output buffers.
    Run(run::Args),
    /// Emit PTX (with --map: JSON source map; --resources: ptxas figures).
    Emit(emit::Args),
    /// SASS of a Program's kernel with the PTX line and IR node of every instruction.
    Sass(sass::Args),
    /// Occupancy of a Program's kernel, or calculator mode with --regs.
    Occupancy(occupancy::Args),
    /// Plan a pipeline's fused (megakernel) execution: groups, waves, barriers, breaks.
    Plan(plan::Args),
    /// Probe a CUDA device and print its capabilities.
    Probe(probe::Args),
    /// Fault-recovery check with raw PTX (test-only).
    #[command(hide = true)]
    FaultTest(fault_test::Args),
    /// Run every fixture on the GPU with verification, the occupancy check and fault recovery.
    Selftest(selftest::Args),
    /// Time candidate workgroup sizes on the GPU.
    Tune(tune::Args),
    /// Capture the driver's occupancy table (test-only).
    #[command(hide = true)]
    OccupancyCapture(occupancy_capture::Args),
    /// Benchmark an emitted kernel (test-only, used by benches/gpu).
    #[command(hide = true)]
    BenchKernel(bench_kernel::Args),
    /// Open the inspector (or replay keys headlessly with --keys/--snapshot).
    Tui(tui::Args),
    /// Serve GPU requests on stdin/stdout (started by vyrescope itself).
    #[command(hide = true)]
    GpuWorker(gpu_worker::Args),
}

/// Runs the CLI; returns the process exit code.
pub fn main() -> i32 {
    crate::runtime::worker::mark_this_binary();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return code;
        }
    };
    match cli.command {
        Some(Command::Check(a)) => check::run(&a),
        Some(Command::Print(a)) => print::run(&a),
        Some(Command::Run(a)) => run::run(&a),
        Some(Command::Emit(a)) => emit::run(&a),
        Some(Command::Sass(a)) => sass::run(&a),
        Some(Command::Occupancy(a)) => occupancy::run(&a),
        Some(Command::Plan(a)) => plan::run(&a),
        Some(Command::Probe(a)) => probe::run(&a),
        Some(Command::FaultTest(a)) => fault_test::run(&a),
        Some(Command::Selftest(a)) => selftest::run(&a),
        Some(Command::Tune(a)) => tune::run(&a),
        Some(Command::OccupancyCapture(a)) => occupancy_capture::run(&a),
        Some(Command::BenchKernel(a)) => bench_kernel::run(&a),
        Some(Command::Tui(a)) => tui::run(&a),
        Some(Command::GpuWorker(a)) => gpu_worker::run(&a),
        None => {
            if cli.files.is_empty() {
                eprintln!("error: no Program files given\n  Fix: run `vyrescope FILE...` or see `vyrescope --help`");
                return 2;
            }
            tui::open(&cli.files, &cli.inspector)
        }
    }
}

/// Prints an error (message already holds its `Fix:` line) and returns exit code 1. Errors
/// quote names and text from the input, so terminal controls in them are escaped.
pub fn fail(e: impl std::fmt::Display) -> i32 {
    eprintln!("error: {}", crate::util::terminal_safe(&e.to_string()));
    1
}

/// Writes `text` to stdout. `print!` panics when the reader of a pipe has gone (`run --json |
/// head -1`); here a broken pipe ends the process at once with exit code 0, as the reader
/// asked for no more, and any other write error ends it with a message and exit code 1.
pub fn write_stdout(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
        stdout_failed(e);
    }
}

/// Ends the process after a failed write to stdout (see [`write_stdout`]).
fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to standard output: {e}\n  Fix: check where the output goes (disk full?)");
    std::process::exit(1);
}
