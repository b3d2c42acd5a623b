//! Every command that takes `--json` answers exactly one JSON value on stdout on its error
//! paths too (a missing file, no ptxas, a bad option), with the documented exit code (1 for a
//! failure, 2 for a command line that cannot run) and nothing on stderr.

use std::path::Path;

use crate::support::cli;

/// Runs the binary in `dir` without a GPU tool or user config in reach: (code, stdout, stderr).
fn vy_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    cli::output(
        cli::command()
            .args(args)
            .current_dir(dir)
            .env("HOME", dir)
            .env("VYRESCOPE_CONFIG", dir.join("no-config.json"))
            .env("VYRESCOPE_PTXAS", dir.join("no-such-ptxas"))
            .env("VYRESCOPE_NVDISASM", dir.join("no-such-nvdisasm"))
            .env("XDG_CACHE_HOME", dir.join("cache")),
    )
}

/// The one JSON value on stdout (fails when there is none or more than one).
fn one_value(args: &[&str], stdout: &str) -> serde_json::Value {
    let mut values = serde_json::Deserializer::from_str(stdout).into_iter::<serde_json::Value>();
    let first = values
        .next()
        .unwrap_or_else(|| panic!("{args:?}: no JSON on stdout"))
        .unwrap_or_else(|e| panic!("{args:?}: stdout is not JSON ({e}): {stdout}"));
    assert!(
        values.next().is_none(),
        "{args:?}: more than one JSON value: {stdout}"
    );
    first
}

/// Asserts the error object of a failed `--json` command: `error` and `fix` non-empty,
/// `location` present, `exit` naming the class of `code`.
fn assert_error_object(args: &[&str], v: &serde_json::Value, code: i32) {
    assert!(
        v["error"].as_str().is_some_and(|s| !s.is_empty()),
        "{args:?}: {v}"
    );
    assert!(
        v["fix"].as_str().is_some_and(|s| !s.is_empty()),
        "{args:?}: {v}"
    );
    assert!(v.get("location").is_some(), "{args:?}: {v}");
    let class = if code == 2 { "usage" } else { "failure" };
    assert_eq!(v["exit"], class, "{args:?}: {v}");
}

#[test]
fn every_json_command_answers_one_json_value_on_a_missing_file() {
    let d = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let fixture = fixture.to_str().unwrap();
    let variant = format!("{fixture}@wg=64");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["run", "missing.json", "--json"], 1),
        (
            vec!["run", "missing.json", "--json", "--backend", "cuda"],
            1,
        ),
        (
            vec![
                "run",
                "missing.json",
                "--json",
                "--backend",
                "cuda",
                "--timeline",
            ],
            1,
        ),
        (vec!["import", "missing.vyre", "--json"], 1),
        (vec!["occupancy", "missing.json", "--json"], 1),
        (vec!["plan", "missing.json", "--json"], 1),
        (vec!["tune", "missing.json", "--json"], 1),
        (vec!["emit", "missing.json", "--compare-vyre", "--json"], 1),
        (vec!["sass", "missing.json", "--json"], 1),
        (vec!["diff", "missing.json", "missing.json", "--json"], 1),
        (vec!["bench-kernel", "missing.json", "--json"], 1),
        (vec!["selftest", "--fixtures", "missing", "--json"], 1),
        // No GPU or no ptxas: the same one object.
        (vec!["probe", "--json"], 1),
        (vec!["sass", fixture, "--json"], 1),
        (
            vec!["diff", fixture, &variant, "--level", "sass", "--json"],
            1,
        ),
        // Bad options: a usage error (2) or a refused value (1).
        (vec!["sass", "--json"], 2),
        (vec!["run", fixture, "--json", "--no-such-option"], 2),
        (
            vec!["occupancy", "--device", "nosuch", "--regs", "32", "--json"],
            1,
        ),
        (vec!["plan", fixture, "--json", "--min-occupancy", "200"], 1),
    ];
    for (args, code) in &cases {
        let (got, stdout, stderr) = vy_in(d.path(), args);
        assert_eq!(
            got, *code,
            "{args:?}: exit code; stdout {stdout} stderr {stderr}"
        );
        let v = one_value(args, &stdout);
        assert_error_object(args, &v, *code);
        assert!(stderr.is_empty(), "{args:?}: stderr {stderr}");
        // The text form of the same command line ends the same way.
        let text_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        let (text_code, _, text_err) = vy_in(d.path(), &text_args);
        assert_eq!(text_code, *code, "{text_args:?}: {text_err}");
        if *code == 1 {
            assert!(text_err.contains("Fix:"), "{text_args:?}: {text_err}");
        }
    }
    // `check` reports per file: its JSON answer is the report, one value, with a fix.
    let args = ["check", "missing.json", "--json"];
    let (code, stdout, stderr) = vy_in(d.path(), &args);
    assert_eq!(code, 1, "{stderr}");
    let v = one_value(&args, &stdout);
    assert_eq!(v[0]["valid"], false, "{v}");
    assert!(
        v[0]["diagnostics"][0]["fix"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{v}"
    );
}

#[test]
fn json_errors_name_the_node_of_an_invalid_program() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("inv.json"),
        r#"{"format": 1, "name": "k", "workgroup_size": [64, 1, 1],
  "buffers": [{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}],
  "body": [{"store": "nope", "index": 0, "value": 1}]}"#,
    )
    .unwrap();
    let args = ["run", "inv.json", "--json"];
    let (code, stdout, _) = vy_in(d.path(), &args);
    assert_eq!(code, 1);
    let v = one_value(&args, &stdout);
    assert_error_object(&args, &v, 1);
    assert_eq!(v["node"], "body[0]", "{v}");
    assert_eq!(v["location"], "inv.json", "{v}");
}
