//! Command line (the only `clap` user): parse arguments, call the library, print.
//!
//! Each subcommand lives in `cli/<name>.rs` with its `Args` and a `run` returning an
//! [`Outcome`]: its exit code, or the [`Problem`] that stopped it. [`report`] prints a problem
//! as one message with a `Fix:` line on stderr, or, when the command was given `--json`, as one
//! JSON object on stdout, `{"error", "fix", "location", "node", "exit"}`; the exit code is the
//! problem's class (1 failure, 2 usage) either way.

use clap::{Parser, Subcommand};

use crate::util::Problem;

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

pub(crate) mod bench_kernel;
pub(crate) mod check;
pub(crate) mod diff;
pub(crate) mod emit;
pub(crate) mod export;
pub(crate) mod fault_test;
pub(crate) mod gpu_arg;
pub(crate) mod gpu_worker;
pub(crate) mod import;
pub(crate) mod import_graph;
pub(crate) mod occupancy;
pub(crate) mod occupancy_record;
pub(crate) mod pipeline_kernels;
pub(crate) mod plan;
pub(crate) mod print;
pub(crate) mod probe;
pub(crate) mod profile;
pub(crate) mod replay;
pub mod run;
pub(crate) mod run_args;
#[cfg(feature = "vyre")]
pub(crate) mod run_both;
pub(crate) mod run_cuda;
pub(crate) mod run_pipeline;
pub(crate) mod run_timeline;
pub(crate) mod sass;
pub(crate) mod selftest;
pub(crate) mod selftest_inspector;
pub(crate) mod selftest_timeline;
pub(crate) mod tui;
pub(crate) mod tune;
pub(crate) mod unknown_command;
pub(crate) mod vyre_emit;

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
    /// The length of a symbolic dimension of a vyre graph or artifact (feature `vyre`), e.g.
    /// `--bind items=1048576`; repeatable, and taken by every command that opens one.
    #[arg(
        long = "bind",
        global = true,
        value_name = "SYMBOL=N",
        value_parser = crate::ir::foreign::parse_binding
    )]
    pub bind: Vec<(String, u64)>,
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
    /// Where a Program's time goes, per IR statement, on the GPU (or `--estimate` without one).
    Profile(profile::Args),
    /// Compare two lowerings (variants of a Program, or two Programs) statement by statement.
    Diff(diff::Args),
    /// Occupancy of a Program's kernel, or calculator mode with --regs.
    Occupancy(occupancy::Args),
    /// Plan a pipeline's fused (megakernel) execution: groups, waves, barriers, breaks.
    Plan(plan::Args),
    /// Probe a CUDA device and print its capabilities.
    Probe(probe::Args),
    /// Replay a capture of a vyre application's dispatches and compare every output
    /// (feature `vyre`).
    Replay(replay::Args),
    /// Fault-recovery check with raw PTX (test-only).
    #[command(hide = true)]
    FaultTest(fault_test::Args),
    /// Run every fixture on the GPU with verification, the occupancy check and fault recovery.
    Selftest(selftest::Args),
    /// Time candidate workgroup sizes on the GPU.
    Tune(tune::Args),
    /// Record the driver's occupancy table (test-only).
    #[command(hide = true)]
    OccupancyRecord(occupancy_record::Args),
    /// Benchmark an emitted kernel (test-only, used by benches/gpu).
    #[command(hide = true)]
    BenchKernel(bench_kernel::Args),
    /// Open the inspector (or replay keys headlessly with --keys/--snapshot).
    Tui(tui::Args),
    /// Serve GPU requests on stdin/stdout (started by vyrescope itself).
    #[command(hide = true)]
    GpuWorker(gpu_worker::Args),
}

/// What a subcommand returns: the exit code of a command that ran to its end (0, or 1 when
/// it found something wrong and said so), or the [`Problem`] that stopped it, which [`main`]
/// prints through [`report`].
pub type Outcome = Result<i32, Problem>;

/// Refuses a pipeline file given to `command`, which works on one Program: says it is a
/// pipeline and what to use `instead` (as `plan` says of a Program in the reverse case),
/// rather than the Program parser's "unknown key `pipeline`".
pub(crate) fn refuse_pipeline(
    file: &std::path::Path,
    command: &str,
    instead: &str,
) -> Result<(), Problem> {
    if !crate::ir::is_pipeline_file(file) {
        return Ok(());
    }
    let name = file.display().to_string();
    Err(Problem::new(
        format!("{name} is a pipeline, and `{command}` works on one Program"),
        instead,
    )
    .at(name))
}

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
            Command::Replay(a) => a.json,
            Command::Selftest(a) => a.json,
            Command::Tune(a) => a.json,
            Command::BenchKernel(a) => a.json,
            Command::FaultTest(a) => a.json,
            Command::Emit(a) => a.json,
            Command::Sass(a) => a.json,
            Command::Profile(a) => a.json,
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
            // `chek FILE --json` and `chek --help` fail to parse or ask for help as the
            // inspector's command line; the mistyped command word is what went wrong.
            if let Some(p) = mistyped_command() {
                return report(&p, std::env::args().skip(1).any(|a| a == "--json"));
            }
            // A usage error of a `--json` command line is JSON too (help and version stay text).
            if e.use_stderr() && std::env::args().skip(1).any(|a| a == "--json") {
                let text = e.kind().to_string();
                let detail = e.render().to_string();
                // clap's message runs over the lines before the first blank one (the
                // missing arguments are listed below its first line).
                let detail = detail
                    .lines()
                    .take_while(|l| !l.trim().is_empty())
                    .map(|l| l.trim().trim_start_matches("error: "))
                    .collect::<Vec<_>>()
                    .join(" ");
                let p = Problem::usage(
                    format!("{text}: {detail}"),
                    "see `vyrescope <command> --help` for the options",
                );
                return report(&p, true);
            }
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let json = cli.command.as_ref().is_some_and(Command::json);
    match crate::ir::foreign::collect_bindings(&cli.bind) {
        Ok(b) => crate::ir::foreign::bind_graph_symbols(b),
        Err(e) => {
            let p = Problem::usage(
                e.to_string(),
                "give each symbol one value: `--bind SYMBOL=N`",
            );
            return report(&p, json);
        }
    }
    let outcome = match cli.command {
        Some(Command::Check(a)) => check::run(&a),
        Some(Command::Print(a)) => print::run(&a),
        Some(Command::Import(a)) => import::run(&a),
        Some(Command::Run(a)) => run::run(&a),
        Some(Command::Emit(a)) => emit::run(&a),
        Some(Command::Export(a)) => export::run(&a),
        Some(Command::Sass(a)) => sass::run(&a),
        Some(Command::Profile(a)) => profile::run(&a),
        Some(Command::Diff(a)) => diff::run(&a),
        Some(Command::Occupancy(a)) => occupancy::run(&a),
        Some(Command::Plan(a)) => plan::run(&a),
        Some(Command::Probe(a)) => probe::run(&a),
        Some(Command::Replay(a)) => replay::run(&a),
        Some(Command::FaultTest(a)) => fault_test::run(&a),
        Some(Command::Selftest(a)) => selftest::run(&a),
        Some(Command::Tune(a)) => tune::run(&a),
        Some(Command::OccupancyRecord(a)) => occupancy_record::run(&a),
        Some(Command::BenchKernel(a)) => bench_kernel::run(&a),
        Some(Command::Tui(a)) => tui::run(&a),
        Some(Command::GpuWorker(a)) => gpu_worker::run(&a),
        None => inspector(&cli.files, &cli.inspector),
    };
    match outcome {
        Ok(code) => code,
        Err(p) => report(&p, json),
    }
}

/// `vyrescope FILE...` without a subcommand: the inspector, unless the first word is a
/// mistyped command.
fn inspector(files: &[std::path::PathBuf], opts: &tui::InspectorOpts) -> Outcome {
    let Some(first) = files.first() else {
        return Err(Problem::usage(
            "no Program files given",
            "run `vyrescope FILE...` or see `vyrescope --help`",
        ));
    };
    if let Some(e) = unknown_command::unknown_command(first, &command_names()) {
        return Err(e);
    }
    tui::open(files, opts)
}

/// The visible subcommand names.
fn command_names() -> Vec<String> {
    <Cli as clap::CommandFactory>::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// The unknown-command error when the command line's first word is a mistyped command (see
/// [`unknown_command::unknown_command`]).
fn mistyped_command() -> Option<Problem> {
    let first = std::env::args_os().nth(1)?;
    // Any subcommand, hidden ones and aliases too, is no typo.
    let cmd = <Cli as clap::CommandFactory>::command();
    if first
        .to_str()
        .is_some_and(|w| w == "help" || cmd.find_subcommand(w).is_some())
    {
        return None;
    }
    unknown_command::unknown_command(std::path::Path::new(&first), &command_names())
}

/// The one place a [`Problem`] is printed; returns its exit code (the same with and without
/// `--json`: scripts read the code, not the format). Text: its notes (diagnostics), then
/// `error: message` and its `Fix:` line on stderr, with terminal controls escaped (errors
/// quote names and text from the input). JSON: one object on stdout,
/// `{"error", "fix", "location", "node", "exit"}`.
pub fn report(p: &Problem, json: bool) -> i32 {
    if json {
        outln!("{}", p.to_json());
    } else {
        for n in p.notes() {
            errln!("{}", crate::util::terminal_safe(n));
        }
        errln!("error: {}", crate::util::terminal_safe(&p.to_string()));
    }
    p.exit_code()
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
