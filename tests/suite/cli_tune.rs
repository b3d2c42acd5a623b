//! `vyrescope tune`: the offline sweep (no GPU), the no-GPU error pointing to it, and the
//! refusal of a pipeline file.

use crate::support::cli;

/// `tune --offline`: one row per candidate with registers, occupancy, instruction mix and
/// the results check, labelled an estimate; the suggestion keeps the results.
#[test]
fn offline_tune_estimates_each_candidate() {
    let (code, out, err) = cli::output(cli::in_root().args([
        "tune",
        "fixtures/programs/reduce_sum_f32.json",
        "--offline",
        "--candidates",
        "64,128,256",
        "--json",
    ]));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["label"].as_str().unwrap().contains("estimate"), "{v}");
    assert_eq!(v["suggested"], serde_json::json!([256, 1, 1]));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        assert!(r["registers"].as_u64().unwrap() > 0, "{r}");
        assert!(r["mix"]["memory"].as_u64().unwrap() > 0, "{r}");
        assert!(r["occupancy_pct"].as_f64().unwrap() > 0.0, "{r}");
        let kind = r["results"]["kind"].as_str().unwrap();
        let own = r["workgroup"] == serde_json::json!([256, 1, 1]);
        assert_eq!(kind, if own { "preserved" } else { "changed" }, "{r}");
    }
    let (code, out, _) = cli::output(cli::in_root().args([
        "tune",
        "fixtures/programs/saxpy_f32.json",
        "--offline",
        "--candidates",
        "64,128",
        "--device",
        "a100",
    ]));
    assert_eq!(code, 0);
    assert!(out.contains("OFFLINE on NVIDIA A100"), "{out}");
    assert!(out.contains("<- suggested"), "{out}");
    assert!(out.contains("nothing was timed"), "{out}");
    assert!(!out.contains("changes results"), "{out}");
}

/// Without a GPU, `tune`'s error points to the offline sweep.
#[test]
fn tune_without_a_gpu_points_to_the_offline_sweep() {
    let home = tempfile::tempdir().unwrap();
    let (code, _, err) = cli::output(
        cli::in_root()
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join("cache"))
            .args([
                "tune",
                "fixtures/programs/vadd_f32.json",
                "--candidates",
                "64",
            ]),
    );
    if code == 0 {
        // A machine with a GPU tuned it; nothing to check here.
        return;
    }
    assert!(err.contains("Fix:"), "{err}");
    assert!(err.contains("--offline"), "{err}");
}

/// A pipeline file is named as such, with what to use instead (not "unknown key").
#[test]
fn tune_and_diff_refuse_a_pipeline_saying_what_to_use() {
    let (code, _, err) =
        cli::output(cli::in_root().args(["tune", "fixtures/pipelines/softmax.json", "--offline"]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("is a pipeline, and `tune` works on one Program"),
        "{err}"
    );
    assert!(
        err.contains("Fix:") && err.contains("plan PIPELINE"),
        "{err}"
    );
    assert!(!err.contains("unknown key"), "{err}");
    let (code, _, err) = cli::output(cli::in_root().args([
        "diff",
        "fixtures/pipelines/softmax.json",
        "fixtures/programs/vadd_f32.json",
    ]));
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("is a pipeline, and `diff` works on one Program"),
        "{err}"
    );
    assert!(!err.contains("unknown key"), "{err}");
}

/// `--candidates` beyond the CUDA workgroup limit is refused when the option is read (it used
/// to sweep for hours and give results verdicts for sizes that cannot launch).
#[test]
fn candidates_above_1024_threads_are_refused_at_once() {
    for bad in ["32..100000", "1..4294967295", "64,2048", "64x64"] {
        let start = std::time::Instant::now();
        let (code, out, err) = cli::output(cli::in_root().args([
            "tune",
            "fixtures/programs/vadd_f32.json",
            "--offline",
            "--candidates",
            bad,
        ]));
        assert_eq!(code, 1, "{bad}: {out}{err}");
        assert!(err.contains("1024") && err.contains("Fix:"), "{bad}: {err}");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{bad}"
        );
    }
}

/// A size the device cannot launch gets no results verdict (here a profile that allows 256
/// threads per block, so 512 cannot launch).
#[test]
fn offline_tune_compares_results_only_for_sizes_that_launch() {
    let d = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let prof = std::fs::read_to_string(root.join("fixtures/devices/a100.json")).unwrap();
    let small = prof.replacen(
        "\"max_threads_per_block\": 1024",
        "\"max_threads_per_block\": 256",
        1,
    );
    assert_ne!(small, prof);
    std::fs::write(d.path().join("small.json"), small).unwrap();
    let program = root.join("fixtures/programs/reduce_sum_f32.json");
    let args = |json: bool| {
        let mut a = vec![
            "tune".to_string(),
            program.display().to_string(),
            "--offline".into(),
            "--candidates".into(),
            "64,512".into(),
            "--device".into(),
            "small.json".into(),
        ];
        if json {
            a.push("--json".into());
        }
        a
    };
    let (code, out, err) = cli::output(cli::command().current_dir(d.path()).args(args(true)));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let row = |w: u64| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["workgroup"][0] == w)
            .cloned()
            .unwrap()
    };
    let big = row(512);
    assert!(big["cannot_launch"].is_string(), "{big}");
    assert_eq!(big["results"]["kind"], "not_checked", "{big}");
    assert_eq!(big["results"]["why"], "the size cannot launch", "{big}");
    assert_eq!(row(64)["results"]["kind"], "changed", "{v}");
    let (code, out, err) = cli::output(cli::command().current_dir(d.path()).args(args(false)));
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("512x1x1")).unwrap();
    assert!(
        line.contains("cannot launch") && !line.contains("results"),
        "{line}"
    );
}
