//! `vyrescope check` as a user runs it: the built binary on every invalid fixture (exit 1, the
//! node or file:line:col and a `Fix:` in the output) and on every valid Program (exit 0).

use std::path::{Path, PathBuf};
use std::process::Command;

fn files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

fn check(args: &[&str], file: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .arg("check")
        .args(args)
        .arg(file)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

/// `code`, `node` of `fixtures/invalid/<name>.expected`.
fn expected(file: &Path) -> (String, String) {
    let text = std::fs::read_to_string(file.with_extension("expected")).unwrap();
    let field = |k: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}: ")))
            .unwrap()
            .to_string()
    };
    (field("code"), field("node"))
}

#[test]
fn invalid_files_exit_1_and_name_the_node_and_a_fix() {
    let all = files("fixtures/invalid");
    assert!(all.len() >= 24);
    for f in &all {
        let (code, text) = check(&[], f);
        assert_eq!(code, 1, "{}: exit {code}\n{text}", f.display());
        assert!(text.contains("Fix:"), "{}: no Fix:\n{text}", f.display());
        let (rule, node) = expected(f);
        assert!(
            text.contains(&format!("[{rule}]")),
            "{}: no [{rule}]\n{text}",
            f.display()
        );
        if rule == "V000" {
            // Parse errors: file:line:col with a real (non-zero) line and column.
            let at = format!("{}:", f.display());
            let after_code = &text[text.find("[V000]").unwrap()..];
            let rest =
                &after_code[after_code.find(&at).unwrap_or_else(|| panic!("{text}")) + at.len()..];
            let mut parts = rest.splitn(3, ':');
            let line: usize = parts.next().unwrap().parse().unwrap();
            let col: usize = parts.next().unwrap().parse().unwrap();
            assert!(line >= 1 && col >= 1, "{}: {text}", f.display());
        } else {
            assert!(
                text.contains(&node),
                "{}: node {node} missing\n{text}",
                f.display()
            );
        }
    }
}

#[test]
fn invalid_files_json_output_has_the_documented_shape() {
    for f in files("fixtures/invalid") {
        let (code, text) = check(&["--json"], &f);
        assert_eq!(code, 1);
        let v: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not JSON ({e}):\n{text}", f.display()));
        let reports = v.as_array().unwrap();
        assert_eq!(reports.len(), 1);
        let r = &reports[0];
        assert_eq!(r["file"].as_str(), Some(f.display().to_string().as_str()));
        assert_eq!(r["valid"], serde_json::Value::Bool(false));
        let diags = r["diagnostics"].as_array().unwrap();
        assert!(!diags.is_empty());
        for d in diags {
            for k in ["severity", "node", "message", "fix"] {
                assert!(d[k].is_string(), "{}: `{k}` missing in {d}", f.display());
            }
        }
        assert!(diags.iter().any(|d| d["severity"] == "error"));
    }
}

#[test]
fn valid_programs_exit_0() {
    let all = files("fixtures/programs");
    assert!(!all.is_empty());
    for f in &all {
        let (code, text) = check(&[], f);
        assert_eq!(code, 0, "{}: exit {code}\n{text}", f.display());
        assert!(!text.contains("error["), "{}: {text}", f.display());
    }
    // All of them at once, as the README suggests, with --json.
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .arg("check")
        .arg("--json")
        .args(&all)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), all.len());
    assert!(v.as_array().unwrap().iter().all(|r| r["valid"] == true));
}

#[test]
fn one_invalid_file_among_valid_ones_fails_the_run() {
    let mut args: Vec<PathBuf> = files("fixtures/programs");
    args.push(files("fixtures/invalid")[0].clone());
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .arg("check")
        .args(&args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn missing_file_is_an_error_not_a_panic() {
    let (code, text) = check(&[], Path::new("/nonexistent/nope.json"));
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("Fix:"));
}
