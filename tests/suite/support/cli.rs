//! Running the `vyrescope` binary from a test: one place that names the binary and turns
//! its output into (exit code, stdout, stderr).

use std::process::{Command, Output, Stdio};

/// A command for the binary under test, with stdin closed (no test waits on a terminal).
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_vyrescope"));
    c.stdin(Stdio::null());
    c
}

/// The same, run from the repository root (for relative fixture paths).
pub fn in_root() -> Command {
    let mut c = command();
    c.current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

/// (exit code or -1 when killed by a signal, stdout, stderr) of a finished run.
pub fn parts(o: &Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Runs `cmd` to the end: (exit code, stdout, stderr).
pub fn output(cmd: &mut Command) -> (i32, String, String) {
    parts(&cmd.output().expect("the vyrescope binary runs"))
}

/// Runs the binary with `args`: (exit code, stdout, stderr).
pub fn run(args: &[&str]) -> (i32, String, String) {
    output(command().args(args))
}
