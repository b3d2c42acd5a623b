//! PTX snapshots, naga style: every `fixtures/programs/*.json` is emitted for sm_90 with its
//! own workgroup size and compared with `tests/snapshots/ptx/<file stem>.ptx`. After an
//! intended emitter change, regenerate them with
//!
//! ```sh
//! VYRESCOPE_BLESS=1 cargo test --test suite emit_snapshots::
//! ```

use std::path::{Path, PathBuf};

use vyrescope::emit::{emit, EmitOptions};
use vyrescope::ir::load_program;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/programs"))
        .expect("fixtures/programs exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

fn check(path: &Path, actual: &str) -> Result<(), String> {
    crate::support::snapshot::check(path, actual, "emitted PTX", "emit_snapshots")
}

#[test]
fn emitted_fixtures_match_snapshots() {
    let files = fixture_files();
    assert!(!files.is_empty(), "no fixtures found");
    let mut failures = Vec::new();
    let dir = root().join("tests/snapshots/ptx");
    for f in &files {
        let p = load_program(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let k = match emit(&p, &EmitOptions::for_program(&p)) {
            Ok(k) => k,
            Err(e) => {
                failures.push(format!("{}: {e}", f.display()));
                continue;
            }
        };
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or("x");
        if let Err(e) = check(&dir.join(format!("{stem}.ptx")), &k.ptx) {
            failures.push(e);
        }
    }
    // No stale snapshots: every .ptx belongs to a fixture.
    if !crate::support::snapshot::blessing() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let stem = e
                .path()
                .file_stem()
                .map(|s| s.to_string_lossy().to_string());
            if let Some(stem) = stem {
                if !files
                    .iter()
                    .any(|f| f.file_stem().is_some_and(|s| s.to_string_lossy() == stem))
                {
                    failures.push(format!(
                        "stale snapshot {} (no fixture)",
                        e.path().display()
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
