//! The external tools some tests need (ptxas, nvdisasm, tmux), found in one place.
//!
//! A missing tool skips the test with a NOTICE on a developer's machine and fails it in CI
//! (`CI=true`), where `.ci/run` installs every tool: a test that needs a tool can never pass
//! there without running. The pinned tool versions are read from the install scripts that
//! `.ci/run` calls, so bumping a wheel there changes what the SASS snapshots are keyed by
//! instead of silently turning them off.

use std::path::{Path, PathBuf};

/// Whether this run is CI's (`CI=true`), where skipping is a failure.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Whether skipping for a missing tool is allowed in CI too: `.ci/run`'s second pass sets
/// `VYRESCOPE_ALLOW_MISSING_TOOLS=1` and hides every tool, proving that the suite passes on a
/// fresh machine without them.
fn skips_allowed() -> bool {
    std::env::var("VYRESCOPE_ALLOW_MISSING_TOOLS").is_ok_and(|v| v == "1")
}

/// Skips (NOTICE, `None`) or, in CI, fails: `tool` is missing for `what`.
///
/// libtest shows no skips and captures a passing test's stderr, so each skip is also appended
/// to the file `VYRESCOPE_SKIP_LOG` names (one `tool<TAB>what` line), which `.ci/run` counts.
fn missing<T>(tool: &str, install: &str, what: &str) -> Option<T> {
    if in_ci() && !skips_allowed() {
        panic!("{tool} is required in CI for {what}: {install}");
    }
    eprintln!("NOTICE: {tool} not found; skipping {what} ({install})");
    if let Some(log) = std::env::var_os("VYRESCOPE_SKIP_LOG") {
        use std::io::Write;
        // One short `write` per line on an append-mode file: lines from parallel tests
        // do not interleave.
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            let _ = f.write_all(format!("{tool}\t{what}\n").as_bytes());
        }
    }
    None
}

/// ptxas, or `None` after a NOTICE (a failure in CI).
pub fn ptxas(what: &str) -> Option<PathBuf> {
    vyrescope::emit::ptxas::find_ptxas().or_else(|| {
        missing(
            "ptxas",
            "export VYRESCOPE_PTXAS=$(scripts/install-ptxas.sh)",
            what,
        )
    })
}

/// nvdisasm, or `None` after a NOTICE (a failure in CI).
pub fn nvdisasm(what: &str) -> Option<PathBuf> {
    vyrescope::sass::find_nvdisasm().or_else(|| {
        missing(
            "nvdisasm",
            "export VYRESCOPE_NVDISASM=$(scripts/install-nvdisasm.sh)",
            what,
        )
    })
}

/// Both ptxas and nvdisasm are there (each missing one is a NOTICE, or a failure in CI).
pub fn sass_tools(what: &str) -> bool {
    // Both are looked up so that the notice (or CI failure) names every missing tool.
    let p = ptxas(what).is_some();
    let n = nvdisasm(what).is_some();
    p && n
}

/// Whether tmux runs (a NOTICE when not; a failure in CI, where `.ci/run` installs it).
pub fn tmux(what: &str) -> bool {
    if std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    missing::<()>("tmux", "install tmux (.ci/run does)", what).is_some()
}

/// The version pinned by `scripts/<script>`: the `==X.Y.Z` of its `pip install` line.
fn pinned_in(script: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(script);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| l.contains("pip install"))
        .find_map(|l| {
            let v = l.split("==").nth(1)?;
            let v: String = v
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            (!v.is_empty()).then_some(v)
        })
        .unwrap_or_else(|| panic!("{}: no `pip install ...==VERSION` line", path.display()))
}

/// The ptxas and nvdisasm versions the SASS snapshots are made with (the install scripts').
pub fn pinned_versions() -> (String, String) {
    (
        pinned_in("install-ptxas.sh"),
        pinned_in("install-nvdisasm.sh"),
    )
}

/// Whether SASS made by ptxas `ptxas` / nvdisasm `nvdisasm` may be compared with the
/// snapshots: only with the pinned versions (other versions schedule differently). Other
/// versions skip the comparison with a NOTICE locally and fail in CI, which installs the
/// pinned ones.
pub fn sass_snapshots_comparable(ptxas: &str, nvdisasm: &str, what: &str) -> bool {
    let (pp, pn) = pinned_versions();
    if ptxas == pp && nvdisasm == pn {
        return true;
    }
    let msg = format!(
        "ptxas {ptxas} / nvdisasm {nvdisasm} are not the pinned {pp} / {pn} (scripts/install-*.sh); {what}"
    );
    if in_ci() {
        panic!("{msg}: CI must run the pinned tools");
    }
    eprintln!("NOTICE: {msg} not compared");
    false
}

#[test]
fn ci_installs_the_pinned_tools() {
    // `.ci/run` installs ptxas from the wheel version the snapshots are keyed by, and uses the
    // nvdisasm script: a bump in one place without the other fails here.
    let ci = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/run"))
        .expect(".ci/run");
    let (pp, _) = pinned_versions();
    assert!(
        ci.contains(&format!("nvidia-cuda-nvcc=={pp}")),
        ".ci/run must install ptxas {pp}, the version scripts/install-ptxas.sh pins"
    );
    assert!(ci.contains("scripts/install-nvdisasm.sh"));
}
