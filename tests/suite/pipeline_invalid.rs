//! Every file of `fixtures/invalid_pipelines/` against its `<name>.expected` (code, node and a
//! message fragment of the first diagnostic, exactly one error), through the same loader that
//! `vyrescope check` uses, and through the binary itself (exit 1, a `Fix:`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use vyrescope::finding::Severity;
use vyrescope::validate::pipeline::load_pipeline;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/invalid_pipelines")
}

fn fixtures() -> Vec<(PathBuf, BTreeMap<String, String>)> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    let mut out = Vec::new();
    for p in v {
        match p.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                let exp = p.with_extension("expected");
                let text = std::fs::read_to_string(&exp)
                    .unwrap_or_else(|_| panic!("{} has no .expected", p.display()));
                let fields = text
                    .lines()
                    .filter_map(|l| l.split_once(": "))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
                out.push((p, fields));
            }
            Some("expected") => assert!(p.with_extension("json").exists(), "{}", p.display()),
            _ => panic!("unexpected file {}", p.display()),
        }
    }
    out
}

#[test]
fn every_invalid_pipeline_gives_its_expected_first_error() {
    let all = fixtures();
    assert!(all.len() >= 15, "only {} invalid pipelines", all.len());
    let mut failures = Vec::new();
    for (path, exp) in &all {
        let loaded = load_pipeline(path);
        assert!(!loaded.is_valid(), "{} is valid", path.display());
        let errors: Vec<_> = loaded
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .collect();
        let first = errors[0];
        let node = first
            .node
            .as_ref()
            .map(|n| n.to_string())
            .unwrap_or_else(|| "program".into());
        if first.code != exp["code"]
            || node != exp["node"]
            || !first.message.contains(&exp["message"])
            || errors.len() != 1
        {
            failures.push(format!(
                "{}: expected {} {} {:?}, got {} errors, first {} {} {:?}",
                path.display(),
                exp["code"],
                exp["node"],
                exp["message"],
                errors.len(),
                first.code,
                node,
                first.message
            ));
        }
        assert!(
            !first.fix.trim().is_empty(),
            "{}: empty fix",
            path.display()
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_error_class_is_covered() {
    let codes: Vec<String> = fixtures()
        .into_iter()
        .map(|(_, e)| e["code"].clone())
        .collect();
    for c in [
        "V000", "V009", "V042", "V100", "V101", "V102", "V103", "V104", "V105", "V106",
    ] {
        assert!(codes.iter().any(|x| x == c), "no invalid pipeline for {c}");
    }
}

#[test]
fn the_binary_rejects_every_invalid_pipeline_in_check_and_run() {
    for (path, exp) in fixtures() {
        for cmd in ["check", "run"] {
            let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
                .arg(cmd)
                .arg(&path)
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                out.status.code(),
                Some(1),
                "{cmd} {}: {text}",
                path.display()
            );
            assert!(text.contains("Fix:"), "{cmd} {}: {text}", path.display());
            assert!(
                text.contains(&exp["code"]),
                "{cmd} {}: {text}",
                path.display()
            );
        }
    }
}
