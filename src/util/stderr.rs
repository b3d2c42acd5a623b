//! The one way vyrescope writes to standard error. `eprintln!` panics when stderr is closed
//! or broken (`vyrescope run BAD.json 2>&-`, or stderr piped into a reader that has gone), and
//! the panic message itself then cannot be written either; a message that cannot be shown
//! is dropped instead, and the exit code still tells what happened.

use std::io::Write;

/// Writes `text` to stderr; a failed write is ignored (see the module docs).
pub fn write_stderr(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(text.as_bytes()).and_then(|_| e.flush());
}

/// Writes `text` and a newline to stderr, ignoring a failed write.
pub fn stderr_line(text: &str) {
    write_stderr(&format!("{text}\n"));
}
