//! Command line (the only `clap` user): parse arguments, call the library, print.
//!
//! Each subcommand lives in `cli/<name>.rs` with its `Args` and a `run` returning the exit
//! code. Errors are printed as one message with a `Fix:` line and exit code 1; when the
//! command was given `--json`, the error is instead one JSON object on stdout,
//! `{"error", "fix", "location"}`, with the same exit code (see [`fail`]).

use std::sync::atomic::{AtomicBool, Ordering};

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

/// `eprintln!` for the CLI: through [`crate::util::write_stderr`], so a closed or broken
/// stderr drops the message instead of panicking.
macro_rules! errln {
    ($($t:tt)*) => { $crate::util::stderr_line(&format!($($t)*)) };
}

pub mod bench_kernel;
pub mod check;
pub mod diff;
pub mod emit;
pub mod export;
pub mod fault_test;
pub mod gpu_arg;
pub mod gpu_worker;
pub mod import;
pub mod occupancy;
pub mod occupancy_capture;
pub mod pipeline_kernels;
pub mod plan;
pub mod print;
pub mod probe;
pub mod run;
pub mod run_cuda;
pub mod run_pipeline;
pub mod run_timeline;
pub mod sass;
pub mod selftest;
pub mod selftest_timeline;
pub mod tui;
pub mod tune;
pub mod unknown_command;
pub mod vyre_emit;

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
    /// Convert a vyre Program file (wire or `vyre_ir` text) into Program JSON (feature `vyre`).
    Import(import::Args),
    /// Execute a Program and summarise its output buffers.
    Run(run::Args),
    /// Emit PTX (with --map: JSON source map; --resources: ptxas figures).
    Emit(emit::Args),
    /// Export a Program as a vyre Program (wire bytes or `vyre_ir` text; feature `vyre`).
    Export(export::Args),
    /// SASS of a Program's kernel with the PTX line and IR node of every instruction.
    Sass(sass::Args),
    /// Compare two lowerings (variants of a Program, or two Programs) statement by statement.
    Diff(diff::Args),
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

/// Set once the command line asked for `--json`: [`fail`] then writes JSON to stdout.
static JSON_ERRORS: AtomicBool = AtomicBool::new(false);

impl Command {
    /// True when this command was given `--json`.
    fn json(&self) -> bool {
        match self {
            Command::Check(a) => a.json,
            Command::Import(a) => a.json,
            Command::Run(a) => a.json,
            Command::Occupancy(a) => a.json,
            Command::Plan(a) => a.json,
            Command::Probe(a) => a.json,
            Command::Selftest(a) => a.json,
            Command::Tune(a) => a.json,
            Command::BenchKernel(a) => a.json,
            Command::FaultTest(a) => a.json,
            Command::Emit(a) => a.json,
            Command::Sass(a) => a.json,
            Command::Diff(a) => a.json,
            _ => false,
        }
    }
}

/// Runs the CLI; returns the process exit code.
pub fn main() -> i32 {
    crate::runtime::worker::mark_this_binary();
    // Every Program loader opens vyre files once the conversion is installed.
    #[cfg(feature = "vyre")]
    crate::vyre::install();
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            // A usage error of a `--json` command line is JSON too (help and version stay text).
            if e.use_stderr() && std::env::args().skip(1).any(|a| a == "--json") {
                let text = e.kind().to_string();
                let detail = e.render().to_string();
                let detail = detail
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ");
                print_json_error(
                    &format!("{text}: {detail}"),
                    "see `vyrescope <command> --help` for the options",
                    None,
                );
                return code;
            }
            let _ = e.print();
            return code;
        }
    };
    if cli.command.as_ref().is_some_and(Command::json) {
        JSON_ERRORS.store(true, Ordering::Relaxed);
    }
    match cli.command {
        Some(Command::Check(a)) => check::run(&a),
        Some(Command::Print(a)) => print::run(&a),
        Some(Command::Import(a)) => import::run(&a),
        Some(Command::Run(a)) => run::run(&a),
        Some(Command::Emit(a)) => emit::run(&a),
        Some(Command::Export(a)) => export::run(&a),
        Some(Command::Sass(a)) => sass::run(&a),
        Some(Command::Diff(a)) => diff::run(&a),
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
                errln!("error: no Program files given\n  Fix: run `vyrescope FILE...` or see `vyrescope --help`");
                return 2;
            }
            let commands: Vec<String> = <Cli as clap::CommandFactory>::command()
                .get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| c.get_name().to_string())
                .collect();
            if let Some(e) = unknown_command::unknown_command(&cli.files[0], &commands) {
                errln!("{e}");
                return 2;
            }
            tui::open(&cli.files, &cli.inspector)
        }
    }
}

/// Prints an error (message already holds its `Fix:` line) and returns exit code 1. Errors
/// quote names and text from the input, so terminal controls in them are escaped. Under
/// `--json` the error goes to stdout as `{"error", "fix", "location"}` instead (the exit code
/// is the same: scripts read the code, not the format).
pub fn fail(e: impl std::fmt::Display) -> i32 {
    let text = e.to_string();
    if JSON_ERRORS.load(Ordering::Relaxed) {
        let (message, fix, location) = split_error(&text);
        print_json_error(message, fix, location);
    } else {
        errln!("error: {}", crate::util::terminal_safe(&text));
    }
    1
}

/// Reports that `file` is not valid: its diagnostics and one closing error in text, or the
/// first error diagnostic as the JSON error under `--json`. Returns exit code 1.
pub fn invalid_file(
    file: &std::path::Path,
    what: &str,
    diags: &[crate::diagnostic::Diagnostic],
) -> i32 {
    let first = diags
        .iter()
        .find(|d| d.severity == crate::diagnostic::Severity::Error);
    if JSON_ERRORS.load(Ordering::Relaxed) {
        if let Some(d) = first {
            let place = d.node.as_deref().unwrap_or("program");
            print_json_error(
                &format!(
                    "{} is not a valid {what}: [{}] {place}: {}",
                    file.display(),
                    d.code,
                    d.message
                ),
                &d.fix,
                Some(&file.display().to_string()),
            );
            return 1;
        }
    }
    for d in diags {
        errln!("{}", crate::util::terminal_safe(&d.to_string()));
    }
    fail(format!(
        "{} is not a valid {what}\n  Fix: correct the errors above (`vyrescope check {}`)",
        file.display(),
        file.display()
    ))
}

/// Splits an error text into (message, fix, location): the fix after the first
/// `\n  Fix: `; the location is a leading `FILE:LINE:COLUMN` or `FILE.json` place.
pub fn split_error(text: &str) -> (&str, &str, Option<&str>) {
    let (message, fix) = match text.split_once("\n  Fix: ") {
        Some((m, f)) => (m, f.trim_end()),
        // Several findings in one error (`plan`): the whole text, and the first fix.
        None => match text.find("Fix: ") {
            Some(i) => (
                text.trim_end(),
                text[i + 5..].lines().next().unwrap_or("").trim_end(),
            ),
            None => (text.trim_end(), ""),
        },
    };
    let location = message.split_once(": ").map(|(p, _)| p).filter(|p| {
        let parts: Vec<&str> = p.rsplitn(3, ':').collect();
        let numbered = parts.len() == 3
            && parts[0].chars().all(|c| c.is_ascii_digit())
            && parts[1].chars().all(|c| c.is_ascii_digit())
            && !parts[0].is_empty();
        !p.contains(' ') && (numbered || p.ends_with(".json"))
    });
    (message, fix, location)
}

/// Writes `{"error", "fix", "location"}` as one line on stdout.
fn print_json_error(message: &str, fix: &str, location: Option<&str>) {
    let v = serde_json::json!({"error": message, "fix": fix, "location": location});
    outln!("{v}");
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
    errln!("error: cannot write to standard output: {e}\n  Fix: check where the output goes (disk full?)");
    std::process::exit(1);
}
