//! Hostile inputs, round 4: small files that claimed sizes they do not hold, inputs that
//! made work grow quadratically, and tools that outlived their caller. Each test reproduces
//! one defect (it aborted, ran out of memory or hung before the fix) and holds the rule:
//! every input ends in time with bounded memory and a clear error, never an abort.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Runs `f` on a thread and fails the test if it does not finish in `secs`.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("did not finish in time")
}

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The vyrescope binary in `cwd` with a private HOME and config.
fn cli(args: &[&str], cwd: &Path) -> (i32, String, String) {
    crate::support::cli::output(
        crate::support::cli::command()
            .args(args)
            .current_dir(cwd)
            .env("HOME", cwd)
            .env("XDG_CACHE_HOME", cwd.join("cache"))
            .env("XDG_CONFIG_HOME", cwd.join("config"))
            .env_remove("VYRESCOPE_CONFIG"),
    )
}

// ---- 1. timeline record files -------------------------------------------------------------

/// A record file of one launch (one block, one slot, one record of unit 0) whose spec holds
/// `units` step units, each claiming `workgroups` virtual workgroups.
fn claimed_record_file(units: usize, workgroups: u32) -> String {
    let unit = |k: usize| {
        format!(
            r#"{{"node": "body[{k}]", "kind": {{"kind": "step"}}, "step": {k}, "workgroup_var": "v", "workgroups": {workgroups}}}"#
        )
    };
    let units: Vec<String> = (0..units).map(unit).collect();
    format!(
        r#"{{"format": "vyrescope-timeline", "version": 1, "source": "fixtures/programs/atomics_mixed.json", "forms": [{{"form": "", "launches": [{{"kernel": "k", "spec": {{"units": [{}], "slots_per_block": 1}}, "grid": [1, 1, 1], "records": [{{"block": 0, "unit": 0, "workgroup": 0, "sm": 0, "seq": 0, "start_ns": 1, "end_ns": 2}}]}}]}}]}}"#,
        units.join(", ")
    )
}

#[test]
fn timeline_counts_claimed_by_a_record_file_cost_nothing_until_recorded() {
    // Before: 2^32 - 1 claimed workgroups aborted ("memory allocation of 17179869180 bytes
    // failed"); 2000 units of 2^28 ran for minutes.
    for (units, wgs) in [(1, u32::MAX), (2000, 1 << 28)] {
        let text = claimed_record_file(units, wgs);
        let problems = within(20, move || {
            let f = vyrescope::timeline::file::parse(&text, "rec.json").unwrap();
            let c = &f.forms[0].capture;
            let d = vyrescope::timeline::decode(c).unwrap();
            let _ = vyrescope::timeline::summarize(c, &d);
            vyrescope::timeline::check(c, &d)
        });
        assert_eq!(problems.len(), units, "{problems:?}");
        let want = format!("{} of {wgs} workgroups missing", wgs - 1);
        assert!(problems[0].contains(&want), "{problems:?}");
        assert!(problems[1..]
            .iter()
            .all(|p| p.contains(&format!("{wgs} of {wgs} workgroups missing"))));
    }
}

#[test]
fn the_inspector_opens_a_record_file_claiming_four_billion_workgroups() {
    let t = tempfile::tempdir().unwrap();
    let rec = t.path().join("big.rec.json");
    std::fs::write(&rec, claimed_record_file(1, u32::MAX)).unwrap();
    let prog = fixture("fixtures/programs/atomics_mixed.json");
    let start = Instant::now();
    let (code, out, err) = cli(
        &[
            "tui",
            prog.to_str().unwrap(),
            "--timeline",
            rec.to_str().unwrap(),
            "--keys",
            "q",
            "--snapshot",
            "-",
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

// ---- 6. deeply nested themes --------------------------------------------------------------

/// A `.tmTheme` of 60,000 nested arrays (900 KB, under the size limit).
fn deep_theme(path: &Path) {
    let n = 60_000;
    let text = format!(
        "<?xml version=\"1.0\"?>\n<plist version=\"1.0\">{}{}</plist>\n",
        "<array>".repeat(n),
        "</array>".repeat(n)
    );
    std::fs::write(path, text).unwrap();
}

fn inspector_with_config(cwd: &Path, config: Option<&Path>, extra: &[&str]) -> (i32, String) {
    let prog = fixture("fixtures/programs/atomics_mixed.json");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"));
    cmd.args([
        "tui",
        prog.to_str().unwrap(),
        "--keys",
        "q",
        "--snapshot",
        "-",
    ])
    .args(extra)
    .current_dir(cwd)
    .env("HOME", cwd)
    .env("XDG_CONFIG_HOME", cwd.join("config"))
    .env_remove("VYRESCOPE_CONFIG");
    if let Some(c) = config {
        cmd.env("VYRESCOPE_CONFIG", c);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_deeply_nested_theme_is_an_error_not_a_stack_overflow() {
    // Before: "fatal runtime error: stack overflow, aborting" (signal 6).
    let t = tempfile::tempdir().unwrap();
    let deep = t.path().join("deep.tmTheme");
    deep_theme(&deep);
    let (code, err) = inspector_with_config(t.path(), None, &["--theme", deep.to_str().unwrap()]);
    assert!(code == 1 || code == 2, "exit {code}: {err}");
    assert!(err.contains("nested more than"), "{err}");
    assert!(
        err.contains("deep.tmTheme") && err.contains("Fix:"),
        "{err}"
    );
}

#[test]
fn a_config_names_its_theme_relative_to_its_own_folder() {
    let t = tempfile::tempdir().unwrap();
    let conf_dir = t.path().join("conf");
    let elsewhere = t.path().join("elsewhere");
    std::fs::create_dir_all(&conf_dir).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    deep_theme(&conf_dir.join("deep.tmTheme"));
    let config = conf_dir.join("config.json");
    std::fs::write(&config, r#"{"theme": "deep.tmTheme"}"#).unwrap();
    // Started from another folder, the theme beside the config is the one read (and
    // refused for its depth): not "no such file".
    let (code, err) = inspector_with_config(&elsewhere, Some(&config), &[]);
    assert!(code == 1 || code == 2, "exit {code}: {err}");
    assert!(err.contains("nested more than"), "{err}");
    // A good theme beside the config is used.
    std::fs::write(
        conf_dir.join("mine.tmTheme"),
        include_str!("../../themes/light.tmTheme"),
    )
    .unwrap();
    std::fs::write(&config, r#"{"theme": "mine.tmTheme"}"#).unwrap();
    let (code, err) = inspector_with_config(&elsewhere, Some(&config), &[]);
    assert_eq!(code, 0, "{err}");
    // A config error names the config file (it printed `config : ...` before).
    std::fs::write(&config, r#"{"keys": {"no-such-command": ["x"]}}"#).unwrap();
    let (code, err) = inspector_with_config(&elsewhere, Some(&config), &[]);
    assert_ne!(code, 0);
    assert!(
        err.contains(&format!("config {}:", config.display())),
        "{err}"
    );
}

// ---- 5. diff of large Programs --------------------------------------------------------------

/// A Program of `n` stores inside one bounds check, each with its own constant (the same
/// shape `benches/diff.rs` times).
fn many_statements(n: usize) -> String {
    let stores: Vec<String> = (0..n)
        .map(|k| {
            format!(
                r#"{{"store": "dst", "index": "i", "value": {{"add": [{{"load": "src", "index": "i"}}, {k}.5]}}}}"#
            )
        })
        .collect();
    format!(
        r#"{{"format": 1, "name": "many", "workgroup_size": [64, 1, 1],
  "buffers": [{{"name": "src", "binding": 0, "access": "read", "type": "f32"}},
              {{"name": "dst", "binding": 1, "access": "write", "type": "f32"}}],
  "body": [{{"let": "i", "value": {{"gid": "x"}}}},
           {{"if": {{"lt": ["i", {{"len": "dst"}}]}}, "then": [{}]}}]}}"#,
        stores.join(", ")
    )
}

#[test]
fn diff_of_a_sixteen_thousand_statement_program_gives_every_row() {
    // Before the fix this took 84-130 s (every statement searched the PTX text and the source
    // map anew); the time per statement is measured by `cargo bench --bench diff`, not here.
    // The limit only turns a hang into a failure. ptxas and nvdisasm are left out with
    // --no-sass: on 16,000 stores they alone take minutes (NVIDIA's cost).
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("many.json"), many_statements(16_000)).unwrap();
    let dir = t.path().to_path_buf();
    let (code, out, err) = within(600, move || {
        cli(
            &[
                "diff",
                "many.json",
                "many.json@wg=128",
                "--json",
                "--no-sass",
            ],
            &dir,
        )
    });
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["aligned_by"], "node_id", "{}", v["aligned_by"]);
    let rows = v["statements"].as_array().unwrap();
    assert!(rows.len() > 16_000, "{}", rows.len());
    // Every store's row counts its own PTX instructions on both sides, and no SASS figure was
    // made.
    let stores: Vec<_> = rows
        .iter()
        .filter(|r| r["old"]["ptx"].as_u64().unwrap_or(0) >= 3)
        .collect();
    assert!(
        stores.len() >= 16_000,
        "{} rows with a store's instructions",
        stores.len()
    );
    for r in [
        stores[0],
        stores[stores.len() / 2],
        stores[stores.len() - 1],
    ] {
        assert_eq!(r["old"]["ptx"], r["new"]["ptx"], "{r}");
        assert!(
            r["old"]["sass"].is_null() && r["new"]["sass"].is_null(),
            "{r}"
        );
    }
    // --no-sass cannot go with a SASS-level diff.
    let (code, _, err) = cli(
        &[
            "diff",
            "many.json",
            "many.json@wg=128",
            "--level",
            "sass",
            "--no-sass",
        ],
        t.path(),
    );
    assert_ne!(code, 0);
    assert!(err.contains("--no-sass") && err.contains("Fix:"), "{err}");
}

// ---- 3. vyre export of nested loads ---------------------------------------------------------

/// `out[i] = a[a[...a[i]]]`, `depth` loads deep, with `a` random in [0, 300) over 256
/// elements (so some indices fall outside and read 0 in our semantics).
#[cfg(feature = "vyre")]
fn nested_loads(depth: usize) -> vyrescope::ir::Program {
    let mut e = r#""i""#.to_string();
    for _ in 0..depth {
        e = format!(r#"{{"load": "a", "index": {e}}}"#);
    }
    let text = format!(
        r#"{{"format": 1, "name": "nest", "workgroup_size": [64, 1, 1],
  "buffers": [{{"name": "a", "binding": 0, "access": "read", "type": "u32"}},
              {{"name": "out", "binding": 1, "access": "write", "type": "u32"}}],
  "body": [{{"let": "i", "value": {{"gid": "x"}}}},
           {{"store": "out", "index": "i", "value": {e}}}],
  "run": {{"elements": 256, "inputs": {{"a": {{"fill": "random", "seed": 5, "range": [0, 300]}},
                                        "out": {{"fill": "zeros"}}}}}}}}"#
    );
    vyrescope::ir::parse_program(&text, "nest.json").unwrap()
}

#[cfg(feature = "vyre")]
fn interpret(p: &vyrescope::ir::Program) -> Vec<u8> {
    let mut prepared = vyrescope::inputs::prepare(p, Path::new("."), None, None).unwrap();
    vyrescope::interp::run_with(
        p,
        &prepared.shape,
        &mut prepared.buffers,
        &vyrescope::interp::Options::default(),
    )
    .unwrap();
    prepared
        .buffers
        .into_iter()
        .find(|b| b.name == "out")
        .unwrap()
        .data
}

#[cfg(feature = "vyre")]
#[test]
fn vyre_export_of_nested_loads_is_linear_and_computes_the_same() {
    // Before: depth 40 ran out of memory (each load's bounds test copied its index, so the
    // export doubled at every level); depth 18 wrote 6.8 MB that vyre refused.
    let mut sizes = Vec::new();
    for depth in [10, 20, 40] {
        let p = nested_loads(depth);
        let v = within(30, {
            let p = p.clone();
            move || vyrescope::vyre::export(&p).unwrap()
        });
        let wire = v.to_wire().unwrap();
        sizes.push(wire.len());
        // vyre reads it back, and it computes what ours does.
        let back = vyre_foundation::ir::Program::from_wire(&wire).unwrap();
        let mut imported = crate::support::vyre::import_clean(&back, "nest", "nested loads");
        imported.run = p.run.clone();
        let (want, got) = (interpret(&p), interpret(&imported));
        assert!(want.iter().any(|&b| b != 0));
        assert_eq!(want, got, "depth {depth}");
    }
    // Linear: twice the depth, at most about twice the bytes.
    assert!(sizes[2] < 3 * sizes[1], "{sizes:?}");
    assert!(sizes[2] < 64 << 10, "{sizes:?}");
}

#[cfg(feature = "vyre")]
#[test]
fn an_export_vyre_cannot_read_back_is_refused_with_a_fix() {
    // `not` nested as deep as our format allows (64 levels), under three `if`s: nothing
    // is copied, but vyre's decoder stops at 64 levels of statements and expressions.
    let mut e = r#""i""#.to_string();
    for _ in 0..62 {
        e = format!(r#"{{"not": {e}}}"#);
    }
    let e = format!(
        r#"{{"if": {{"lt": ["i", 5]}}, "then": [{{"if": {{"lt": ["i", 6]}}, "then": [{{"store": "out", "index": "i", "value": {e}}}]}}]}}"#
    );
    let text = format!(
        r#"{{"format": 1, "name": "deep", "workgroup_size": [64, 1, 1],
  "buffers": [{{"name": "out", "binding": 0, "access": "write", "type": "u32"}}],
  "body": [{{"let": "i", "value": {{"gid": "x"}}}},
           {{"if": {{"lt": ["i", {{"len": "out"}}]}}, "then": [{e}]}}]}}"#
    );
    let p = vyrescope::ir::parse_program(&text, "deep.json").unwrap();
    let e = vyrescope::vyre::export(&p).unwrap_err().to_string();
    assert!(e.contains("vyre cannot read it back"), "{e}");
    assert!(e.contains("Fix:"), "{e}");
}

// ---- 2. long pipelines --------------------------------------------------------------------

/// `add1`: `dst[i] = src[i] + 1`.
const ADD1: &str = r#"{"format": 1, "name": "add1", "workgroup_size": [64, 1, 1],
  "buffers": [{"name": "src", "binding": 0, "access": "read", "type": "f32"},
              {"name": "dst", "binding": 1, "access": "write", "type": "f32"}],
  "body": [{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"add": [{"load": "src", "index": "i"}, 1.0]}}]}]}"#;

/// A generated chain of `steps` `add1` steps in `dir`, a buffer of its own per step (`b0 ->
/// b1 -> ...`, so the step-pair limit does not apply), `len` elements each.
fn chain(dir: &Path, steps: usize, len: u64) -> PathBuf {
    std::fs::write(dir.join("add1.json"), ADD1).unwrap();
    let buffers: Vec<String> = (0..=steps)
        .map(|k| {
            let fill = if k == 0 {
                r#""fill": "random", "seed": 7"#
            } else {
                r#""fill": "zeros""#
            };
            format!(r#""b{k}": {{"type": "f32", "len": {len}, {fill}}}"#)
        })
        .collect();
    let step_list: Vec<String> = (0..steps)
        .map(|i| {
            format!(
                r#"{{"program": "add1.json", "bind": {{"src": "b{i}", "dst": "b{}"}}}}"#,
                i + 1
            )
        })
        .collect();
    let path = dir.join(format!("chain{steps}.pipeline.json"));
    std::fs::write(
        &path,
        format!(
            r#"{{"format": 1, "pipeline": "chain", "buffers": {{{}}}, "steps": [{}]}}"#,
            buffers.join(", "),
            step_list.join(", ")
        ),
    )
    .unwrap();
    path
}

/// `vyrescope plan --no-cache PATH` in 2 GiB of address space: (seconds, exit code, stdout,
/// stderr).
fn plan_limited(dir: &Path, path: &Path) -> (f64, i32, String, String) {
    let script = format!(
        "ulimit -v 2097152; exec {} plan --no-cache {}",
        env!("CARGO_BIN_EXE_vyrescope"),
        path.display()
    );
    let start = Instant::now();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("HOME", dir)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .unwrap();
    (
        start.elapsed().as_secs_f64(),
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn planning_grows_near_linearly_in_steps_up_to_twenty_thousand() {
    // Before: 1000 steps 4.7 s / 64 MB, 2000 steps 20 s / 203 MB (quadratic, mostly in
    // fusing); 10,000 steps aborted after 3.6 GB with the terminal left raw.
    let t = tempfile::tempdir().unwrap();
    let mut times = Vec::new();
    for steps in [1, 10, 100, 2_500, 20_000] {
        let path = chain(t.path(), steps, 256);
        let (secs, code, out, err) = plan_limited(t.path(), &path);
        assert_eq!(code, 0, "{steps} steps: {err}");
        assert!(out.contains("chain"), "{out}");
        // Every step is planned: fused groups cover the chain (split where a group would
        // grow past the fused-kernel size limit).
        assert!(!out.contains("not fused"), "{steps} steps: {out}");
        times.push((steps, secs));
        assert!(secs < 120.0, "{steps} steps took {secs:.1} s");
    }
    // 8 times the steps: linear growth is about 8 times the time, quadratic 64 times.
    let (t2500, t20000) = (times[3].1, times[4].1);
    assert!(
        t20000 < 24.0 * t2500.max(0.05),
        "2,500 steps {t2500:.2} s, 20,000 steps {t20000:.2} s: {times:?}"
    );
}

// ---- 10. `check` refuses the elements `run` and `plan` refuse ----------------------------

#[test]
fn check_refuses_a_step_whose_elements_no_grid_holds() {
    // Before: `check` said ok; `plan` and `run` refused (17,179,869,172 workgroups).
    let t = tempfile::tempdir().unwrap();
    std::fs::write(t.path().join("add1.json"), ADD1).unwrap();
    std::fs::write(
        t.path().join("big.pipeline.json"),
        r#"{"format": 1, "pipeline": "big",
  "buffers": {"a": {"type": "f32", "len": 256, "fill": "zeros"}, "b": {"type": "f32", "len": 256, "fill": "zeros"}},
  "steps": [{"program": "add1.json", "bind": {"src": "a", "dst": "b"}, "elements": 1099511627000}]}"#,
    )
    .unwrap();
    let (code, out, err) = cli(&["check", "big.pipeline.json"], t.path());
    assert_ne!(code, 0, "{out}{err}");
    let text = format!("{out}{err}");
    assert!(text.contains("steps[0].elements"), "{text}");
    assert!(
        text.contains("more than u32 holds") && text.contains("Fix:"),
        "{text}"
    );
    let (plan_code, _, plan_err) = cli(&["plan", "--no-cache", "big.pipeline.json"], t.path());
    assert_ne!(plan_code, 0);
    assert!(plan_err.contains("more than u32 holds"), "{plan_err}");
}

// ---- 9. the inspector's `X` export refuses the open file ----------------------------------

#[test]
fn the_inspector_export_never_replaces_the_open_program() {
    // Before: `X`, the Program's own path and `y` replaced the Program with the export.
    let t = tempfile::tempdir().unwrap();
    let prog = t.path().join("vadd.json");
    let original = std::fs::read_to_string(fixture("fixtures/programs/vadd_f32.json")).unwrap();
    std::fs::write(&prog, &original).unwrap();
    let erase = vec!["Backspace"; 300].join(" ");
    for answer in ["y", ""] {
        let keys = format!("X {erase} {} Enter {answer}", prog.display());
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
            .args([
                "tui",
                prog.to_str().unwrap(),
                "--keys",
                &keys,
                "--device",
                "h200",
                "--size",
                "200x40",
            ])
            .env("HOME", t.path())
            .env("XDG_DATA_HOME", t.path().join("data"))
            .env("VYRESCOPE_CONFIG", "/nonexistent/config.json")
            .current_dir(t.path())
            .output()
            .unwrap();
        let screen = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(&prog).unwrap(),
            original,
            "{screen}"
        );
        assert!(screen.contains("is the input file"), "{screen}");
    }
}

// ---- 11. smaller refusals -------------------------------------------------------------------

#[test]
fn diff_sides_take_files_with_at_and_refuse_repeated_or_huge_options_once() {
    let t = tempfile::tempdir().unwrap();
    let vadd = std::fs::read_to_string(fixture("fixtures/programs/vadd_f32.json")).unwrap();
    std::fs::write(t.path().join("a@b.json"), &vadd).unwrap();
    // Before: "unknown option `b.json`" even as `./a@b.json`.
    for spec in ["a@b.json", "./a@b.json", "./a@b.json@wg=64"] {
        let (code, _, err) = cli(&["diff", spec, "a@b.json@wg=128"], t.path());
        assert_eq!(code, 0, "{spec}: {err}");
    }
    for (spec, want) in [
        ("a@b.json@sm=90@sm=80", "given twice"),
        ("a@b.json@wg=99999999999", "above CUDA's limit"),
        ("a@b.json@wg=0", "not a positive integer"),
    ] {
        let (code, _, err) = cli(&["diff", spec, "a@b.json"], t.path());
        assert!(code == 1 || code == 2, "{spec}: exit {code}: {err}");
        assert!(err.contains(want), "{spec}: {err}");
        // One message, one `Fix:` (`@wg=0` printed both twice).
        assert_eq!(err.matches("Fix:").count(), 1, "{spec}: {err}");
    }
}

#[test]
fn json_usage_errors_list_every_missing_argument() {
    let t = tempfile::tempdir().unwrap();
    let prog = fixture("fixtures/programs/vadd_f32.json");
    // Before: "... the following required arguments were not provided:" and nothing after.
    let (code, out, _) = cli(&["emit", prog.to_str().unwrap(), "--json"], t.path());
    assert_eq!(code, 2);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let e = v["error"].as_str().unwrap();
    assert!(e.contains("--compare-vyre"), "{e}");
}

#[cfg(target_os = "linux")]
#[test]
fn a_worker_that_never_answers_is_stopped_with_everything_it_started() {
    // Before: the replay waited 30 s and the worker's child ran on.
    let t = tempfile::tempdir().unwrap();
    let fake = t.path().join("fake-worker");
    let pid_file = t.path().join("child.pid");
    crate::support::script::sh_script(
        &fake,
        &format!("sleep 300 &\necho $! > {}\nwait", pid_file.display()),
    );
    let prog = fixture("fixtures/programs/vadd_f32.json");
    let start = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args([
            "tui",
            prog.to_str().unwrap(),
            "--keys",
            "r",
            "--snapshot",
            "-",
        ])
        .env("HOME", t.path())
        .env("VYRESCOPE_CONFIG", "/nonexistent/config.json")
        .env("VYRESCOPE_WORKER_EXE", &fake)
        .current_dir(t.path())
        .output()
        .unwrap();
    let waited = start.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(waited < Duration::from_secs(25), "{waited:?}");
    let pid = std::fs::read_to_string(&pid_file).expect("the fake worker was started");
    let stat = format!("/proc/{}/stat", pid.trim());
    let t0 = Instant::now();
    while std::fs::read_to_string(&stat)
        .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"))
    {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "the worker's child {pid} runs on"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

// ---- 8. the tool runner --------------------------------------------------------------------

/// An executable `sh` script at `path`.
#[cfg(unix)]
fn script(path: &Path, body: &str) {
    crate::support::script::sh_script(path, body);
}

#[cfg(unix)]
#[test]
fn occupancy_with_a_ptxas_that_prints_without_end_fails_cleanly() {
    // Before: the whole log was read (3 GB: "memory allocation failed", abort) and a 2.8 GB
    // temp folder stayed behind.
    let t = tempfile::tempdir().unwrap();
    let tmp = t.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let fake = t.path().join("ptxas");
    script(
        &fake,
        "exec yes 0123456789abcdef0123456789abcdef0123456789abcdef",
    );
    let prog = fixture("fixtures/programs/vadd_f32.json");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 2097152; exec {} occupancy {}",
            env!("CARGO_BIN_EXE_vyrescope"),
            prog.display()
        ))
        .env("HOME", t.path())
        .env("TMPDIR", &tmp)
        .env("VYRESCOPE_PTXAS", &fake)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("more than 256 MiB of output") && err.contains("Fix:"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "temp files left"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn quitting_the_inspector_while_ptxas_runs_ends_it_and_removes_its_folder() {
    // Before: ptxas ran on after `q`, and its temp folder (with the kernel's PTX) stayed.
    if !crate::support::tools::tmux("the inspector quit test") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let tmp = t.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let fake = t.path().join("ptxas");
    let pid_file = t.path().join("ptxas.pid");
    script(
        &fake,
        &format!("echo $$ > {}\nsleep 300 &\nwait", pid_file.display()),
    );
    let prog = fixture("fixtures/programs/vadd_f32.json");
    let session = format!("vyrescope-i35-{}", std::process::id());
    let cmd = format!(
        "env VYRESCOPE_CONFIG=/nonexistent TMPDIR={} VYRESCOPE_PTXAS={} TERM=xterm-256color {} {}; sleep 60",
        tmp.display(),
        fake.display(),
        env!("CARGO_BIN_EXE_vyrescope"),
        prog.display()
    );
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .args(args)
            .env("TMUX_TMPDIR", t.path())
            .env_remove("TMUX")
            .output()
            .unwrap()
    };
    let started = tmux(&[
        "new-session",
        "-d",
        "-s",
        &session,
        "-x",
        "120",
        "-y",
        "40",
        &cmd,
    ]);
    assert!(started.status.success(), "{started:?}");
    struct Kill<'a>(&'a dyn Fn(&[&str]) -> std::process::Output, String);
    impl Drop for Kill<'_> {
        fn drop(&mut self) {
            let _ = (self.0)(&["kill-session", "-t", &self.1]);
        }
    }
    let _kill = Kill(&tmux, session.clone());
    // The inspector asks ptxas for the kernel's resources once it has emitted it.
    let t0 = Instant::now();
    while !pid_file.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "ptxas never started"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    assert!(
        std::fs::read_dir(&tmp).unwrap().count() > 0,
        "ptxas runs in a folder under TMPDIR"
    );
    let sent = tmux(&["send-keys", "-t", &session, "q"]);
    assert!(sent.status.success());
    let stat = format!("/proc/{}/stat", pid.trim());
    let t0 = Instant::now();
    loop {
        let running = std::fs::read_to_string(&stat)
            .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"));
        let left = std::fs::read_dir(&tmp).unwrap().count();
        if !running && left == 0 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "after quitting: ptxas {pid} running: {running}, {left} temp entries left"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---- 7. the size of dataflow kernels -------------------------------------------------------

/// `dst[i] = src[i - 1] + src[i + 1]` (clamped at the ends): each workgroup reads its
/// neighbours' elements, so consecutive steps need cross-workgroup waits.
const STENCIL3: &str = r#"{"format": 1, "name": "st3", "workgroup_size": [64, 1, 1],
  "buffers": [{"name": "src", "binding": 0, "access": "read", "type": "f32"},
              {"name": "dst", "binding": 1, "access": "write", "type": "f32"}],
  "body": [{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"let": "l", "value": {"select": [{"gt": ["i", 0]}, {"sub": ["i", 1]}, "i"]}},
             {"let": "r", "value": {"min": [{"add": ["i", 1]}, {"sub": [{"len": "src"}, 1]}]}},
             {"store": "dst", "index": "i", "value": {"add": [{"load": "src", "index": "l"}, {"load": "src", "index": "r"}]}}]}]}"#;

/// A ping-pong pipeline of `steps` 3-point stencil steps over two buffers (`a -> b -> a ->
/// ...`): every step depends on earlier ones across workgroups, so its dataflow form waits.
fn ping_pong(dir: &Path, steps: usize) -> PathBuf {
    std::fs::write(dir.join("st3.json"), STENCIL3).unwrap();
    let list: Vec<String> = (0..steps)
        .map(|i| {
            let (s, d) = if i % 2 == 0 { ("a", "b") } else { ("b", "a") };
            format!(r#"{{"program": "st3.json", "bind": {{"src": "{s}", "dst": "{d}"}}}}"#)
        })
        .collect();
    let path = dir.join("pingpong.pipeline.json");
    std::fs::write(
        &path,
        format!(
            r#"{{"format": 1, "pipeline": "pingpong",
  "buffers": {{"a": {{"type": "f32", "len": 65536, "fill": "random", "seed": 3}},
              "b": {{"type": "f32", "len": 65536, "fill": "zeros"}}}},
  "steps": [{}]}}"#,
            list.join(", ")
        ),
    )
    .unwrap();
    path
}

#[test]
fn dataflow_kernels_of_a_long_ping_pong_stay_small() {
    // Before: all 200 steps went into one dataflow kernel (`emit` ran past 300 s here; 100
    // steps took 110 s for 52,000 PTX lines, the barrier form 5,000), and ptxas needed
    // about 23 GB for such a kernel.
    let t = tempfile::tempdir().unwrap();
    let path = ping_pong(t.path(), 200);
    let start = Instant::now();
    let (code, out, err) = cli(
        &["emit", path.to_str().unwrap(), "--sync", "dataflow"],
        t.path(),
    );
    assert_eq!(code, 0, "{err}");
    // One `// pipeline ..., group K of N` header per fused kernel.
    let modules: Vec<usize> = out
        .split("// pipeline ")
        .skip(1)
        .map(|m| m.lines().count())
        .collect();
    assert!(
        modules.len() >= 200 / vyrescope::megakernel::plan::MAX_GROUP_STEPS,
        "{}",
        modules.len()
    );
    let largest = modules.iter().copied().max().unwrap_or(0);
    assert!(largest < 40_000, "a fused kernel of {largest} PTX lines");
    assert!(
        start.elapsed() < Duration::from_secs(120),
        "{:?}",
        start.elapsed()
    );
    // The plan says why the groups end.
    let (code, out, err) = cli(&["plan", "--no-cache", path.to_str().unwrap()], t.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the most one fused kernel takes"), "{out}");
}

// ---- 4. the dataflow schedule check ----------------------------------------------------------

/// Reduce then normalise over `elements`: per-workgroup partial sums, then every workgroup
/// of the second step reads a partial of another workgroup (its producer set is all of the
/// first step's workgroups).
fn reduce_normalise(dir: &Path, elements: u64) -> PathBuf {
    std::fs::create_dir_all(dir.join("programs")).unwrap();
    std::fs::copy(
        fixture("fixtures/pipelines/programs/partial_sums_f32.json"),
        dir.join("programs/partial_sums_f32.json"),
    )
    .unwrap();
    std::fs::write(
        dir.join("programs/norm_all.json"),
        r#"{"format": 1, "name": "norm_all", "workgroup_size": [256, 1, 1],
  "buffers": [{"name": "src", "binding": 0, "access": "read", "type": "f32"},
              {"name": "partial", "binding": 1, "access": "read", "type": "f32"},
              {"name": "dst", "binding": 2, "access": "write", "type": "f32"}],
  "body": [{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"div": [{"load": "src", "index": "i"},
               {"load": "partial", "index": {"sub": [{"len": "partial"}, {"add": [{"wgid": "x"}, 1]}]}}]}}]}]}"#,
    )
    .unwrap();
    let path = dir.join(format!("rn{elements}.pipeline.json"));
    std::fs::write(
        &path,
        format!(
            r#"{{"format": 1, "pipeline": "rn",
  "buffers": {{"x": {{"type": "f32", "len": {elements}, "fill": "random", "seed": 3}},
              "partial": {{"type": "f32", "len": {}, "fill": "zeros"}},
              "out": {{"type": "f32", "len": {elements}, "fill": "zeros"}}}},
  "steps": [{{"program": "programs/partial_sums_f32.json", "bind": {{"x": "x", "partial": "partial"}}, "elements": {elements}}},
            {{"program": "programs/norm_all.json", "bind": {{"src": "x", "partial": "partial", "dst": "out"}}}}]}}"#,
            elements / 256
        ),
    )
    .unwrap();
    path
}

#[test]
fn the_dataflow_schedule_check_is_linear_in_workgroups() {
    // Before: 2^20 elements 0.54 s, 2^22 6.5 s (every consumer workgroup checked against
    // every producer); 2^24 would have taken minutes.
    let t = tempfile::tempdir().unwrap();
    for elements in [1u64 << 20, 1 << 24] {
        let path = reduce_normalise(t.path(), elements);
        let start = Instant::now();
        let (code, out, err) = cli(
            &[
                "plan",
                "--no-cache",
                "--sync",
                "dataflow",
                path.to_str().unwrap(),
            ],
            t.path(),
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("all_to_all"), "{out}");
        assert!(!out.contains("not fused"), "{out}");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{elements}: {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn a_schedule_of_too_many_tasks_is_refused_at_once() {
    use vyrescope::megakernel::validate::{check_size, MAX_TASKS};
    // Steps near 2^32 elements in workgroups of 256 make 2^24 tasks each: refused with a
    // `Fix:` before any task is built.
    let e = check_size(&[(0, 1 << 24), (1, 1 << 24)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(&MAX_TASKS.to_string()) && e.contains("Fix:"),
        "{e}"
    );
    assert!(check_size(&[(0, 1 << 16), (1, 1 << 16)]).is_ok());
}
