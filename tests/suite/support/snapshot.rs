//! The one snapshot helper: compare a text with its file under `tests/snapshots/`, or write it
//! when blessing. Blessing is on when `VYRESCOPE_BLESS` is set to anything but `0` or empty.

use std::path::Path;

/// Whether this run rewrites snapshots instead of comparing them.
pub fn blessing() -> bool {
    std::env::var_os("VYRESCOPE_BLESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Compares `actual` with the snapshot at `path` (or writes it when blessing). The error names
/// the file, the first differing line with a little context, and how to accept the change;
/// `what` says what `actual` is ("emitted PTX", "printed IR", ...) and `module` which test
/// module to re-run.
pub fn check(path: &Path, actual: &str, what: &str, module: &str) -> Result<(), String> {
    let rerun = format!("VYRESCOPE_BLESS=1 cargo test --test suite {module}::");
    if blessing() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::write(path, actual).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let expected = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: {e}; run `{rerun}` to create it", path.display()))?;
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
        "{} differs from the {what} at line {} (snapshot {} lines, {what} {} lines)\n{diff}run `{rerun}` if the change is intended",
        path.display(),
        first + 1,
        e.len(),
        a.len()
    ))
}

/// [`check`] for bytes (files that are not text, e.g. vyre wire files): equal or not, with the
/// same blessing rule and re-run hint. Only the vyre wire-file tests use it.
#[cfg_attr(not(feature = "vyre"), allow(dead_code))]
pub fn check_bytes(path: &Path, actual: &[u8], what: &str, test: &str) -> Result<(), String> {
    let rerun = format!("VYRESCOPE_BLESS=1 cargo test {test}");
    if blessing() {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        return std::fs::write(path, actual).map_err(|e| format!("{}: {e}", path.display()));
    }
    match std::fs::read(path) {
        Ok(b) if b == actual => Ok(()),
        Ok(b) => Err(format!(
            "{} ({} bytes) differs from {what} ({} bytes); run `{rerun}` if the change is intended",
            path.display(),
            b.len(),
            actual.len()
        )),
        Err(e) => Err(format!(
            "{}: {e}; run `{rerun}` to create it",
            path.display()
        )),
    }
}

#[test]
fn bless_zero_and_empty_do_not_bless() {
    // The rule itself, without touching the process environment (tests share it).
    let rule = |v: &str| !v.is_empty() && v != "0";
    assert!(!rule("0"));
    assert!(!rule(""));
    assert!(rule("1"));
    assert!(rule("yes"));
}
