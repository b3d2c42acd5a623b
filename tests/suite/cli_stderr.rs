//! Errors go to stderr through a writer that cannot panic: with stderr broken (its reader
//! gone) a failing command still exits with its own code (1), not with a panic (101).

use std::process::{Command, Stdio};

/// Runs vyrescope with stderr a pipe whose reader is closed at once, stdout discarded.
fn with_broken_stderr(args: &[&str]) -> i32 {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    drop(child.stderr.take());
    child.wait().unwrap().code().unwrap_or(-1)
}

#[test]
fn errors_on_a_broken_stderr_exit_1_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    // Invalid Program (diagnostics, then the error line), a missing file (`fail`), a bad
    // pipeline.
    let cases: [&[&str]; 4] = [
        &["run", "fixtures/invalid/assign_type_change.json"],
        &["run", missing],
        &["print", missing],
        &["plan", missing],
    ];
    for args in cases {
        // Several tries: the reader must be gone before the first write for EPIPE.
        for _ in 0..3 {
            assert_eq!(with_broken_stderr(args), 1, "{args:?}");
        }
    }
}
