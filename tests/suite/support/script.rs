//! Executable stand-ins (fake ptxas, fake workers) written so that running them cannot fail
//! with "Text file busy".
//!
//! Tests run on many threads. A file written by this process is open for writing for a moment;
//! a child that another thread forks in that moment inherits the open descriptor until it
//! execs, and exec'ing the new file while any process holds it open for writing fails with
//! ETXTBSY. Writing through a short-lived `sh` keeps the write descriptor out of this process,
//! so no fork here can inherit it.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes `text` to `path` exactly as given and makes it executable (mode 755).
pub fn write_executable(path: &Path, text: &str) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("cat > \"$1\" && chmod 755 \"$1\"")
        .arg("sh")
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sh runs");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(text.as_bytes())
        .expect("script written to sh");
    let status = child.wait().expect("sh finishes");
    assert!(
        status.success(),
        "writing {} failed: {status}",
        path.display()
    );
}

/// An executable `sh` script at `path` running `body`.
pub fn sh_script(path: &Path, body: &str) {
    write_executable(path, &format!("#!/bin/sh\n{body}\n"));
}
