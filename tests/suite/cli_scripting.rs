//! The CLI as scripts and newcomers meet it: parse errors that list the valid alternatives,
//! duplicate JSON keys refused everywhere, `--gpu N` vs `--device NAME`, JSON errors and exit
//! codes independent of the output format, `--snapshot -`, `data` specials, `check` judging the
//! `run` section like `run`, and workgroup sizes that overrun a workgroup buffer. Every file
//! written lives in a private temp folder.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn vy_in(dir: &Path, args: &[&str]) -> Out {
    let o = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("VYRESCOPE_CONFIG", dir.join("no-config.json"))
        .env("VYRESCOPE_PTXAS", "/nonexistent/ptxas")
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn vy(args: &[&str]) -> Out {
    vy_in(&root(), args)
}

/// A Program with one u32 output and the given body and `run` section.
fn program(body: &str, run: &str) -> String {
    format!(
        r#"{{"format": 1, "name": "k", "workgroup_size": [64, 1, 1],
  "buffers": [{{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}},
              {{"name": "f", "binding": 1, "access": "read_write", "type": "f16"}}],
  "body": {body}{run}}}"#
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn unknown_kinds_list_the_alternatives_closest_first() {
    let d = tmp();
    let f = write(
        d.path(),
        "p.json",
        &program(r#"[{"store": "a", "index": 0, "value": {"sqr": 4}}]"#, ""),
    );
    let o = vy_in(d.path(), &["check", &f]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("unknown expression kind `sqr`"),
        "{}",
        o.stdout
    );
    let fix = o.stdout.lines().find(|l| l.contains("Fix:")).unwrap();
    // The closest kinds first, then every other kind.
    let list = fix.split("(closest first): ").nth(1).unwrap();
    assert!(list.starts_with("sqrt, "), "{fix}");
    for k in ["subgroup_reduce", "bitcast", "load", "f32", "atomic"] {
        assert!(list.contains(k), "{k} missing: {fix}");
    }
    // Statement kind, element type, access, atomic op: each lists its own alternatives.
    for (body, bufs, want, first) in [
        (
            r#"[{"stor": "a", "index": 0, "value": 1}]"#,
            None,
            "unknown statement kind `stor`",
            "store",
        ),
        (
            "[]",
            Some(("u23", "read_write")),
            "unknown element type `u23`",
            "u32",
        ),
        (
            "[]",
            Some(("u32", "readwrite")),
            "unknown access `readwrite`",
            "read_write",
        ),
        (
            r#"[{"let": "o", "value": {"atomic": "ad", "buffer": "a", "index": 0, "value": 1}}]"#,
            None,
            "unknown atomic op `ad`",
            "add",
        ),
    ] {
        let mut text = program(body, "");
        if let Some((ty, access)) = bufs {
            text = text.replacen(
                r#""access": "read_write", "type": "u32""#,
                &format!(r#""access": "{access}", "type": "{ty}""#),
                1,
            );
        }
        let f = write(d.path(), "q.json", &text);
        let o = vy_in(d.path(), &["check", &f]);
        assert_eq!(o.code, 1, "{}", o.stdout);
        assert!(o.stdout.contains(want), "{want}: {}", o.stdout);
        assert!(
            o.stdout.contains(&format!("did you mean `{first}`?")),
            "{want}: {}",
            o.stdout
        );
    }
}

#[test]
fn atomic_as_a_statement_says_to_bind_it_with_let() {
    let d = tmp();
    let f = write(
        d.path(),
        "p.json",
        &program(
            r#"[{"atomic": "add", "buffer": "a", "index": 0, "value": 1}]"#,
            "",
        ),
    );
    let o = vy_in(d.path(), &["check", &f]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout
            .contains("`atomic` is an expression, not a statement"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("bind its result with `let`"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("body[0]"), "{}", o.stdout);
}

#[test]
fn duplicate_keys_are_refused_everywhere_with_their_path() {
    let d = tmp();
    let body = r#"[{"store": "a", "index": {"gid": "x"}, "value": 7}]"#;
    let run = r#", "run": {"elements": 64}"#;
    // The last one would win in serde_json: an empty body followed by the real one.
    let cases = [
        (
            program(body, run).replacen("\"body\":", "\"body\": [], \"body\":", 1),
            "body",
        ),
        (
            program(body, run).replacen(
                "\"type\": \"u32\"",
                "\"type\": \"u32\", \"type\": \"f32\"",
                1,
            ),
            "buffers[0].type",
        ),
        (
            program(
                r#"[{"store": "a", "index": 0, "index": 1, "value": 7}]"#,
                run,
            ),
            "body[0].index",
        ),
        (
            program(body, r#", "run": {"elements": 64, "elements": 128}"#),
            "run.elements",
        ),
    ];
    for (text, path) in cases {
        let f = write(d.path(), "dup.json", &text);
        let o = vy_in(d.path(), &["check", &f]);
        assert_eq!(o.code, 1, "{path}: {}", o.stdout);
        assert!(o.stdout.contains("duplicate key"), "{path}: {}", o.stdout);
        assert!(
            o.stdout.contains(&format!("[V000] {path}:")),
            "{path}: {}",
            o.stdout
        );
        assert!(o.stdout.contains("Fix:"), "{}", o.stdout);
        let o = vy_in(d.path(), &["run", &f]);
        assert_eq!(o.code, 1, "run accepted a duplicate key at {path}");
    }
    // A pipeline.
    let chain = std::fs::read_to_string(root().join("fixtures/pipelines/chain.json")).unwrap();
    let dup = chain.replacen(
        "\"pipeline\": \"chain\",",
        "\"pipeline\": \"chain\", \"pipeline\": \"chain2\",",
        1,
    );
    assert_ne!(dup, chain);
    let pdir = root().join("fixtures/pipelines");
    let pfile = d.path().join("dup_pipeline.json");
    std::fs::write(&pfile, dup).unwrap();
    // Steps name Programs relative to the pipeline's folder: check from a copy beside them
    // is not needed, the duplicate is found before the steps are read.
    let o = vy_in(&pdir, &["check", pfile.to_str().unwrap()]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(
        o.stdout.contains("duplicate key `pipeline`"),
        "{}",
        o.stdout
    );
    // A device profile.
    let prof = std::fs::read_to_string(root().join("fixtures/devices/a100.json")).unwrap();
    let dup = prof.replacen('{', "{\"sm_count\": 1, ", 1);
    write(d.path(), "dev.json", &dup);
    let o = vy_in(
        d.path(),
        &["occupancy", "--device", "dev.json", "--regs", "32"],
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("duplicate key `sm_count`"),
        "{}",
        o.stderr
    );
    // The inspector config.
    let e = vyrescope::tui::config::Config::parse(r#"{"theme": "dark", "theme": "light"}"#)
        .unwrap_err();
    assert!(e.to_string().contains("duplicate key `theme`"), "{e}");
}

#[test]
fn gpu_ordinal_is_gpu_and_device_is_a_profile() {
    for cmd in ["probe", "selftest", "tune", "run", "bench-kernel"] {
        let o = vy(&[cmd, "--help"]);
        assert_eq!(o.code, 0);
        assert!(
            o.stdout.contains("--gpu <N>"),
            "{cmd} --help lacks --gpu:\n{}",
            o.stdout
        );
        assert!(
            !o.stdout.contains("--device <"),
            "{cmd} --help still shows --device"
        );
    }
    // A profile name where a GPU is meant: refused with the right option in the Fix.
    let o = vy(&["probe", "--device", "h200"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("Fix: use `--gpu N`"), "{}", o.stderr);
    // The old spelling of an ordinal still works for now, with a warning.
    let o = vy(&["probe", "--device", "0"]);
    assert!(
        o.stderr.contains("`--device 0` is deprecated"),
        "{}",
        o.stderr
    );
    // Occupancy keeps --device for profiles.
    let o = vy(&[
        "occupancy",
        "--device",
        "a100",
        "--regs",
        "32",
        "--block",
        "128",
    ]);
    assert_eq!(o.code, 0, "{}", o.stderr);
}

#[test]
fn json_errors_are_json_on_stdout_with_the_same_exit_code() {
    let d = tmp();
    for args in [
        vec!["run", "missing.json", "--json"],
        vec!["check", "missing.json", "--json"],
        vec!["occupancy", "missing.json", "--json"],
        vec!["plan", "missing.json", "--json"],
        vec!["occupancy", "--device", "nosuch", "--regs", "32", "--json"],
        vec!["run", "--json", "--workgroup", "0,1,1", "missing.json"],
    ] {
        let text_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        let text = vy_in(d.path(), &text_args);
        let json = vy_in(d.path(), &args);
        assert_eq!(text.code, json.code, "{args:?}: exit codes differ");
        assert_ne!(json.code, 0, "{args:?}");
        if args[0] == "check" {
            // check reports per file: its JSON report is the error.
            let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
            assert_eq!(v[0]["valid"], false);
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(json.stdout.trim())
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", json.stdout));
        assert!(v["error"].as_str().is_some_and(|s| !s.is_empty()), "{v}");
        assert!(v["fix"].as_str().is_some_and(|s| !s.is_empty()), "{v}");
        assert!(v.get("location").is_some(), "{v}");
        assert!(json.stderr.is_empty(), "{args:?}: stderr {}", json.stderr);
    }
    // A parse error has its place as the location.
    let f = write(d.path(), "bad.json", "{\"format\": 1,\n \"name\": 5}");
    let o = vy_in(d.path(), &["run", &f, "--json"]);
    let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).unwrap();
    let loc = v["location"].as_str().unwrap_or_default();
    assert!(loc.starts_with("bad.json:2:"), "{v}");
    // An invalid Program under run --json: the first error diagnostic.
    let f = write(
        d.path(),
        "inv.json",
        &program(r#"[{"store": "nope", "index": 0, "value": 1}]"#, ""),
    );
    let o = vy_in(d.path(), &["run", &f, "--json"]);
    assert_eq!(o.code, 1);
    let v: serde_json::Value = serde_json::from_str(o.stdout.trim()).unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("[V030] body[0]"),
        "{v}"
    );
}

#[test]
fn exit_codes_do_not_depend_on_the_format() {
    for extra in [&[][..], &["--json"][..]] {
        let args = [&["occupancy", "--regs", "32", "--block", "0"][..], extra].concat();
        assert_eq!(vy(&args).code, 1, "{args:?}");
        let args = [&["occupancy", "--regs", "32", "--block", "2048"][..], extra].concat();
        assert_eq!(vy(&args).code, 1, "{args:?}");
        let args = [&["occupancy", "--regs", "32", "--block", "256"][..], extra].concat();
        assert_eq!(vy(&args).code, 0, "{args:?}");
    }
}

#[test]
fn whole_file_errors_bom_and_huge_literals_have_their_own_messages() {
    let d = tmp();
    let o = vy_in(d.path(), &["check", "missing.json"]);
    assert!(
        o.stdout.contains("missing.json: cannot read"),
        "{}",
        o.stdout
    );
    assert!(!o.stdout.contains(":0:0"), "{}", o.stdout);
    let valid = std::fs::read(root().join("fixtures/programs/vadd_f32.json")).unwrap();
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend_from_slice(&valid);
    std::fs::write(d.path().join("bom.json"), bom).unwrap();
    let o = vy_in(d.path(), &["check", "bom.json"]);
    assert_eq!(o.code, 1);
    assert!(o.stdout.contains("byte order mark"), "{}", o.stdout);
    assert!(o.stdout.contains("without BOM"), "{}", o.stdout);
    let f = write(
        d.path(),
        "big.json",
        &program(r#"[{"let": "x", "value": {"f64": 1e309}}]"#, ""),
    );
    let o = vy_in(d.path(), &["check", &f]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("out of range for its type"),
        "{}",
        o.stdout
    );
}

#[test]
fn snapshot_dash_is_stdout_and_keys_may_start_with_a_dash() {
    let d = tmp();
    let fixture = root().join("fixtures/programs/vadd_f32.json");
    let o = vy_in(
        d.path(),
        &[
            "tui",
            fixture.to_str().unwrap(),
            "--keys",
            "- -",
            "--snapshot",
            "-",
            "--size",
            "100x30",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("vadd_f32"), "{}", o.stdout);
    let rows = o.stdout.lines().count();
    assert!((25..=31).contains(&rows), "{rows} rows:\n{}", o.stdout);
    assert!(!d.path().join("-").exists(), "wrote a file named -");
}

#[test]
fn data_accepts_float_specials_only_in_float_buffers() {
    let d = tmp();
    let body = r#"[{"let": "i", "value": {"gid": "x"}},
        {"if": {"lt": ["i", 4]}, "then": [{"store": "a", "index": "i", "value": {"add": [{"load": "a", "index": "i"}, 1]}}]}]"#;
    let ok = program(
        body,
        r#", "run": {"grid": [1, 1, 1], "inputs": {"a": {"data": [1, 2, 3, 4]}, "f": {"data": ["inf", "-inf", "nan", {"f32": 1.5}]}}}"#,
    );
    let f = write(d.path(), "ok.json", &ok);
    let o = vy_in(d.path(), &["run", &f, "--json", "--dump", "out"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let bytes = std::fs::read(d.path().join("out/f.in.bin")).unwrap();
    let halves: Vec<u16> = bytes
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(halves[0], 0x7c00);
    assert_eq!(halves[1], 0xfc00);
    assert_eq!(halves[2] & 0x7c00, 0x7c00);
    assert_ne!(halves[2] & 0x03ff, 0, "nan");
    assert_eq!(halves[3], 0x3e00);
    let a = std::fs::read(d.path().join("out/a.bin")).unwrap();
    assert_eq!(&a[..8], &[2, 0, 0, 0, 3, 0, 0, 0]);
    // In an integer buffer: refused by check and run alike, with a Fix.
    let bad = ok.replace(
        r#""a": {"data": [1, 2, 3, 4]}"#,
        r#""a": {"data": [1, "inf", 3, 4]}"#,
    );
    let f = write(d.path(), "bad.json", &bad);
    let o = vy_in(d.path(), &["run", &f]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("data[1]") && o.stderr.contains("only go in float buffers"),
        "{}",
        o.stderr
    );
    let o = vy_in(d.path(), &["check", &f]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("[V011] run:") && o.stdout.contains("only go in float buffers"),
        "{}",
        o.stdout
    );
    // Other strings are not data.
    let f = write(d.path(), "word.json", &ok.replace("\"nan\"", "\"NaN!\""));
    let o = vy_in(d.path(), &["check", &f]);
    assert_eq!(o.code, 1);
    assert!(
        o.stdout.contains("`NaN!` is not a data element"),
        "{}",
        o.stdout
    );
}

#[test]
fn check_judges_the_run_section_as_run_does() {
    let d = tmp();
    let body = r#"[{"store": "a", "index": {"gid": "x"}, "value": 1}]"#;
    for (run, want) in [
        (
            r#", "run": {"grid": [1, 1, 1], "inputs": {"a": {"len": 18446744073709551615, "fill": "zeros"}}}"#,
            "elements",
        ),
        (
            r#", "run": {"grid": [1, 1, 1], "inputs": {"f": {"fill": "random", "range": [0, 70000]}}}"#,
            "f16",
        ),
    ] {
        let f = write(d.path(), "r.json", &program(body, run));
        let check = vy_in(d.path(), &["check", &f]);
        let run_o = vy_in(d.path(), &["run", &f]);
        assert_eq!(run_o.code, 1, "run accepted {run}");
        assert_eq!(check.code, 1, "check accepted {run}: {}", check.stdout);
        assert!(check.stdout.contains("[V011] run:"), "{}", check.stdout);
        assert!(check.stdout.contains(want), "{want}: {}", check.stdout);
        // The same message as run's.
        let run_msg = run_o
            .stderr
            .lines()
            .next()
            .unwrap()
            .trim_start_matches("error: ");
        assert!(
            check.stdout.contains(run_msg),
            "check: {}\nrun: {run_msg}",
            check.stdout
        );
    }
    // A sound run section passes.
    let f = write(
        d.path(),
        "good.json",
        &program(body, r#", "run": {"elements": 64}"#),
    );
    assert_eq!(vy_in(d.path(), &["check", &f]).code, 0);
}

#[test]
fn workgroup_overrunning_a_workgroup_buffer_is_an_error() {
    let f = "fixtures/programs/reduce_sum_f32.json";
    let o = vy(&["check", f]);
    assert_eq!(o.code, 0, "{}", o.stdout);
    let o = vy(&["check", f, "--workgroup", "512"]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stdout.contains("[L012] body[2]"), "{}", o.stdout);
    assert!(
        o.stdout.contains("reaches index 511") && o.stdout.contains("256 elements"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout
            .contains("Fix: use a workgroup size of at most 256 along x"),
        "{}",
        o.stdout
    );
    // occupancy reports it (and fails) in text and JSON.
    let o = vy(&["occupancy", f, "--device", "h100-sxm", "--workgroup", "512"]);
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("[L012] body[2]"), "{}", o.stdout);
    let o = vy(&[
        "occupancy",
        f,
        "--device",
        "h100-sxm",
        "--workgroup",
        "512",
        "--json",
    ]);
    assert_eq!(o.code, 1);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"L012"), "{codes:?}");
    // At its own size occupancy is clean of it.
    let o = vy(&["occupancy", f, "--device", "h100-sxm"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(!o.stdout.contains("L012"));
}

/// A mistyped subcommand is an unknown command naming the closest one, not a Program for
/// the inspector; without a terminal the inspector refuses to start instead of writing
/// escapes into the pipe; a misspelt `--keys` name is refused.
#[test]
fn mistyped_commands_and_no_terminal_are_clear_errors() {
    let t = tmp();
    let o = vy_in(t.path(), &["chek", "prog.json"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("unknown command `chek`") && o.stderr.contains("did you mean `check`?"),
        "{}",
        o.stderr
    );
    // The hint stays when the options after the word are a subcommand's (`--json`) or ask
    // for help: not clap's "unexpected argument" or the top-level help with exit 0.
    let o = vy_in(t.path(), &["chek", "prog.json", "--json"]);
    assert_eq!(o.code, 2, "{}{}", o.stdout, o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).expect("JSON error");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("unknown command `chek`"),
        "{v}"
    );
    assert!(
        v["fix"].as_str().unwrap().contains("did you mean `check`?"),
        "{v}"
    );
    for args in [
        &["chek", "--help"][..],
        &["ocupancy", "-h"],
        &["chek", "prog.json", "--regs", "3"],
    ] {
        let o = vy_in(t.path(), args);
        assert_eq!(o.code, 2, "{args:?}: {}{}", o.stdout, o.stderr);
        assert!(
            o.stderr.contains("unknown command"),
            "{args:?}: {}",
            o.stderr
        );
        assert!(o.stderr.contains("did you mean"), "{args:?}: {}", o.stderr);
        assert!(!o.stdout.contains("Usage"), "{args:?}: {}", o.stdout);
    }
    // A real file named like a command is still the inspector's.
    let o = vy_in(&root(), &["fixtures/programs/vadd_f32.json", "--json"]);
    assert!(!o.stderr.contains("unknown command"), "{}", o.stderr);
    assert!(
        !o.stdout.contains('\u{1b}'),
        "escapes on stdout: {:?}",
        o.stdout
    );

    let fixture = root().join("fixtures/programs/vadd_f32.json");
    let f = fixture.to_str().unwrap();
    // stdout is a pipe here.
    let o = vy(&[f, "--device", "h200"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains("needs a terminal"), "{}", o.stderr);
    assert!(o.stderr.contains("Fix:"), "{}", o.stderr);
    assert!(
        !o.stdout.contains('\u{1b}'),
        "escapes on stdout: {:?}",
        o.stdout
    );

    let o = vy(&["tui", f, "--keys", "j Tabb"]);
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr.contains("`Tabb` is not a key name"),
        "{}",
        o.stderr
    );
}

/// A headless replay of a named file that cannot be loaded shows the error screen and exits
/// 1 with the load error, instead of 0 as if the replay had worked.
#[test]
fn a_headless_replay_of_a_file_that_does_not_load_fails() {
    let t = tmp();
    let bad = t.path().join("broken.json");
    std::fs::write(&bad, "{\"format\": 1, \"name\": ").unwrap();
    for (file, says) in [("nope.json", "nope.json"), ("broken.json", "broken.json")] {
        let o = vy_in(t.path(), &["tui", file, "--keys", "", "--snapshot", "-"]);
        assert_eq!(o.code, 1, "{file}: {}{}", o.stdout, o.stderr);
        assert!(
            o.stderr.contains(says) && o.stderr.contains("Fix:"),
            "{}",
            o.stderr
        );
        assert!(!o.stdout.is_empty(), "the screen is still written");
    }
    let good = root().join("fixtures/programs/vadd_f32.json");
    let o = vy_in(
        t.path(),
        &[
            "tui",
            good.to_str().unwrap(),
            "--keys",
            "",
            "--snapshot",
            "-",
        ],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    // A folder's files are the inspector's list: a bad one there is shown, not an error.
    let o = vy_in(t.path(), &["tui", ".", "--keys", "", "--snapshot", "-"]);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
}
