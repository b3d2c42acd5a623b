//! Every file of `fixtures/invalid/` against its `<name>.expected` (code, node and message of
//! the first diagnostic). A fixture without an expectation (or the reverse) fails the test, so
//! new invalid files must come with what they are expected to trigger.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use vyrescope::diagnostics::Severity;
use vyrescope::validate::load;

struct Expected {
    code: String,
    node: String,
    message: String,
}

fn invalid_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/invalid")
}

fn parse_expected(path: &Path) -> Expected {
    let text = std::fs::read_to_string(path).unwrap();
    let mut fields = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (k, v) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("{}: bad line {line:?}", path.display()));
        fields.insert(k.to_string(), v.to_string());
    }
    let get = |k: &str| {
        fields
            .get(k)
            .cloned()
            .unwrap_or_else(|| panic!("{}: missing `{k}:`", path.display()))
    };
    Expected {
        code: get("code"),
        node: get("node"),
        message: get("message"),
    }
}

/// (fixture, expectation) pairs; panics on a fixture without expectation or the reverse.
fn fixtures() -> Vec<(PathBuf, Expected)> {
    let mut out = Vec::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(invalid_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    for p in &names {
        match p.extension().and_then(|e| e.to_str()) {
            Some("json") => {
                let exp = p.with_extension("expected");
                assert!(exp.exists(), "{} has no .expected file", p.display());
                out.push((p.clone(), parse_expected(&exp)));
            }
            Some("expected") => assert!(
                p.with_extension("json").exists(),
                "{} has no .json fixture",
                p.display()
            ),
            _ => panic!(
                "{}: fixtures/invalid holds only NAME.json + NAME.expected",
                p.display()
            ),
        }
    }
    out
}

#[test]
fn every_invalid_fixture_gives_its_expected_first_diagnostic() {
    let all = fixtures();
    assert!(all.len() >= 24, "only {} invalid fixtures", all.len());
    let mut failures = Vec::new();
    for (path, exp) in &all {
        let diags = load(path).diagnostics;
        let Some(first) = diags.first() else {
            failures.push(format!("{}: no diagnostic at all", path.display()));
            continue;
        };
        let node = first.node.clone().unwrap_or_else(|| "program".into());
        // Very deep parse paths are shortened with " ... "; the expectation gives the start.
        let node_ok = node == exp.node
            || (exp.node.ends_with("...") && node.starts_with(exp.node.trim_end_matches("...")));
        if first.code != exp.code || !node_ok || !first.message.contains(&exp.message) {
            failures.push(format!(
                "{}:\n  expected {} {} {:?}\n  got      {} {} {:?}",
                path.display(),
                exp.code,
                exp.node,
                exp.message,
                first.code,
                node,
                first.message
            ));
        }
        // One problem per fixture: exactly one error.
        let errors = diags
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        if errors != 1 {
            failures.push(format!(
                "{}: {errors} errors, expected exactly one: {diags:#?}",
                path.display()
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
fn parse_and_validator_fixtures_are_both_present() {
    let all = fixtures();
    let parse = all.iter().filter(|(_, e)| e.code == "V000").count();
    assert!(parse >= 10, "{parse} parse-level fixtures");
    assert!(
        all.len() - parse >= 20,
        "{} validator-level fixtures",
        all.len() - parse
    );
}
