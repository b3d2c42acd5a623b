//! PTX snapshots, naga style: every `fixtures/programs/*.json` is emitted for sm_90 with its
//! own workgroup size and compared with `tests/snapshots/ptx/<file stem>.ptx`. After an
//! intended emitter change, regenerate them with
//!
//! ```sh
//! VYRESCOPE_BLESS=1 cargo test --test emit_snapshots
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

fn bless() -> bool {
    std::env::var_os("VYRESCOPE_BLESS").is_some_and(|v| v != "0")
}

fn check(path: &Path, actual: &str) -> Result<(), String> {
    if bless() {
        std::fs::write(path, actual).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e}; run `VYRESCOPE_BLESS=1 cargo test --test emit_snapshots` to create it",
            path.display()
        )
    })?;
    if expected == actual {
        return Ok(());
    }
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    let first = e
        .iter()
        .zip(&a)
        .position(|(x, y)| x != y)
        .unwrap_or(e.len().min(a.len()));
    let mut diff = String::new();
    for i in first.saturating_sub(2)..(first + 4).min(e.len().max(a.len())) {
        if let Some(x) = e.get(i) {
            diff.push_str(&format!("  -{:>4} {x}\n", i + 1));
        }
        if let Some(y) = a.get(i) {
            diff.push_str(&format!("  +{:>4} {y}\n", i + 1));
        }
    }
    Err(format!(
        "{} differs from the emitted PTX at line {}\n{diff}run `VYRESCOPE_BLESS=1 cargo test --test emit_snapshots` if the change is intended",
        path.display(),
        first + 1
    ))
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
    if !bless() {
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
