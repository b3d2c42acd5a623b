//! `check`, `print` and `run` on pipeline files as a user runs them: the built binary.

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pipelines")
        .join(name)
}

fn vyrescope(args: &[&str]) -> (i32, String, String) {
    crate::support::cli::run(args)
}

#[test]
fn check_accepts_every_fixture_pipeline_next_to_programs() {
    let chain = fixture("chain.json");
    let rotate = fixture("workgroup_rotate.json");
    let vadd = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let (code, out, err) = vyrescope(&[
        "check",
        chain.to_str().unwrap(),
        rotate.to_str().unwrap(),
        vadd.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches(": ok").count(), 3, "{out}");
}

#[test]
fn print_shows_steps_with_prefixed_ids() {
    let f = fixture("reduce_normalize.json");
    let (code, out, err) = vyrescope(&["print", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("pipeline reduce_normalize"), "{out}");
    assert!(
        out.contains("step 0  programs/partial_sums_f32.json"),
        "{out}"
    );
    assert!(out.contains("elements(4096)"), "{out}");
    assert!(out.contains("steps[1].body[2] |"), "{out}");
    assert!(out.contains("kernel normalize_f32"), "{out}");
}

#[test]
fn run_json_reports_steps_and_non_transient_outputs() {
    let f = fixture("transient_intermediate.json");
    let (code, out, err) = vyrescope(&["run", f.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["pipeline"], "transient_intermediate");
    assert_eq!(v["backend"], "reference");
    assert_eq!(v["steps"].as_array().unwrap().len(), 3);
    assert_eq!(v["steps"][1]["program"], "add1_f32");
    assert_eq!(v["steps"][1]["grid"], serde_json::json!([24, 1, 1]));
    let outputs = v["outputs"].as_object().unwrap();
    assert!(outputs.contains_key("out2") && outputs.contains_key("x"));
    assert!(
        !outputs.contains_key("t"),
        "transient buffers are not outputs: {out}"
    );
    assert_eq!(outputs["out"]["len"], 6000);
    let total: u64 = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stats"]["node_evals"].as_u64().unwrap())
        .sum();
    assert_eq!(v["node_evals"].as_u64().unwrap(), total);
}

#[test]
fn dump_writes_initial_and_final_contents_but_no_final_transient() {
    let dir = std::env::temp_dir().join(format!("vyrescope_pipe_dump_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let f = fixture("transient_intermediate.json");
    let (code, _, err) = vyrescope(&["run", f.to_str().unwrap(), "--dump", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let read = |n: &str| -> Vec<f32> {
        std::fs::read(dir.join(n))
            .unwrap()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    for b in ["x", "t", "out", "out2"] {
        assert!(dir.join(format!("{b}.in.bin")).exists(), "{b}.in.bin");
    }
    assert!(
        !dir.join("t.bin").exists(),
        "a transient buffer has no final dump"
    );
    let x = read("x.in.bin");
    assert_eq!(x.len(), 6000);
    assert_eq!(read("x.bin"), x);
    assert!(read("out.in.bin").iter().all(|&v| v == 0.0));
    let out = read("out.bin");
    for (i, (&o, &xv)) in out.iter().zip(&x).enumerate() {
        assert_eq!(o.to_bits(), (xv * 2.0 + 1.0).to_bits(), "out[{i}]");
    }
    let out2 = read("out2.bin");
    for (i, (&o2, &o)) in out2.iter().zip(&out).enumerate() {
        assert_eq!(o2.to_bits(), (o * 2.0).to_bits(), "out2[{i}]");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_text_and_refusals() {
    let f = fixture("chain.json");
    let f = f.to_str().unwrap();
    let (code, out, err) = vyrescope(&["run", f]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("chain on reference: 2 steps"), "{out}");
    assert!(out.contains("steps[1] add1_f32: grid [20, 1, 1]"), "{out}");
    assert!(out.contains("  out: f32[5000] checksum "), "{out}");
    // Launch overrides belong in the pipeline file.
    let (code, _, err) = vyrescope(&["run", f, "--grid", "4"]);
    assert_eq!(code, 1);
    assert!(err.contains("Fix:"), "{err}");
    // Without a GPU, the cuda backend fails with one line and a fix (CI has no GPU; on a GPU
    // machine `selftest` covers the real run).
    let (code, _, err) = vyrescope(&["run", f, "--backend", "cuda", "--both"]);
    if code != 0 {
        assert_eq!(code, 1);
        assert!(err.contains("Fix:"), "{err}");
    }
    let (code, _, err) = vyrescope(&["run", f, "--separate", "--megakernel"]);
    assert_ne!(code, 0, "the forms exclude each other");
    assert!(err.contains("cannot be used with"), "{err}");
}

/// Plan groups of `file` for h200 (from `plan --json`).
fn plan_groups(file: &str) -> Vec<serde_json::Value> {
    let (code, out, err) = vyrescope(&["plan", file, "--device", "h200", "--no-cache", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["groups"].as_array().unwrap().clone()
}

/// Issue 24 item 14: `emit`, `sass` and `occupancy` on a pipeline show each plan group's
/// fused kernel (they refused with "unknown key `pipeline`" before), in text and `--json`.
#[test]
fn emit_sass_and_occupancy_show_every_fused_group_of_a_pipeline() {
    for name in [
        "reduce_total_normalize.json",
        "stencil_pingpong.json",
        "chain.json",
    ] {
        let f = fixture(name);
        let f = f.to_str().unwrap();
        let groups = plan_groups(f);
        let n = groups.len();

        let (code, out, err) = vyrescope(&["emit", f]);
        assert_eq!(code, 0, "{name}: {err}");
        assert_eq!(out.matches(".entry ").count(), n, "{name}: {out}");
        assert_eq!(out.matches("// pipeline ").count(), n, "{name}");
        assert!(out.contains(&format!("group {} of {n}", n - 1)), "{out}");

        let (code, out, err) = vyrescope(&["emit", f, "--map"]);
        assert_eq!(code, 0, "{name}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let gs = v["groups"].as_array().unwrap();
        assert_eq!(gs.len(), n);
        for (g, want) in gs.iter().zip(&groups) {
            assert_eq!(g["steps"], want["steps"], "{name}");
            assert!(g["ptx"].as_str().unwrap().contains(".entry"));
            // The map speaks in the steps' node ids, as the inspector's PTX pane does.
            let nodes: Vec<&str> = g["map"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["node"].as_str())
                .collect();
            assert!(nodes.iter().any(|n| n.starts_with("steps[")), "{nodes:?}");
        }

        let (code, out, err) = vyrescope(&["occupancy", f, "--device", "h200", "--json"]);
        assert_eq!(code, 0, "{name}: {err}{out}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let gs = v["groups"].as_array().unwrap();
        assert_eq!(gs.len(), n);
        assert!(gs
            .iter()
            .all(|g| g["estimate"]["occupancy_pct"].is_number()));
        let (code, out, _) = vyrescope(&["occupancy", f, "--device", "h200"]);
        assert_eq!(code, 0);
        assert_eq!(out.matches("% occupancy").count(), n, "{out}");
    }
    let f = fixture("workgroup_rotate.json");
    let (code, out, err) = vyrescope(&["emit", f.to_str().unwrap(), "--workgroup", "64,1,1"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.contains("does not apply to a pipeline") && err.contains("Fix:"),
        "{err}"
    );
    assert!(!err.contains("unknown key"), "{err}");
}

/// `emit`, `sass` and `occupancy --sync dataflow` show the kernel `run --sync dataflow`
/// launches (completion flags, the launch epoch, polls), `--sync barrier` the grid-barrier
/// one, and the default is the dataflow kernel; on a Program file, `--sync` is refused
/// rather than ignored.
#[test]
fn sync_dataflow_shows_the_dataflow_kernel_and_is_refused_on_a_program() {
    let f = fixture("reduce_total_normalize.json");
    let f = f.to_str().unwrap();
    let (code, dataflow, err) = vyrescope(&["emit", f, "--sync", "dataflow"]);
    assert_eq!(code, 0, "{err}");
    let (code, barrier, err) = vyrescope(&["emit", f, "--sync", "barrier"]);
    assert_eq!(code, 0, "{err}");
    let (_, default, _) = vyrescope(&["emit", f]);
    assert_eq!(default, dataflow, "dataflow is the default form");
    assert!(
        dataflow.contains("param_sync_epoch")
            && dataflow.contains("// dataflow: step 2 waits for step 1"),
        "{dataflow}"
    );
    assert!(!barrier.contains("param_sync_epoch") && !barrier.contains("// dataflow:"));
    let (code, out, err) = vyrescope(&[
        "occupancy",
        f,
        "--device",
        "h200",
        "--sync",
        "dataflow",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["groups"].as_array().map(Vec::len), Some(1), "{out}");
    if crate::support::tools::sass_tools("sass --sync dataflow on a pipeline") {
        let (code, out, err) = vyrescope(&["sass", f, "--sync", "dataflow"]);
        assert_eq!(code, 0, "{err}");
        assert!(out.contains("NANOSLEEP"), "the flag poll: {out}");
    }
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    for cmd in ["emit", "sass", "occupancy"] {
        let (code, out, err) = vyrescope(&[cmd, program.to_str().unwrap(), "--sync", "dataflow"]);
        assert_eq!(code, 1, "{cmd}: {out}");
        assert!(
            err.contains("--sync dataflow applies to pipelines")
                && err.contains("Fix: drop --sync"),
            "{cmd}: {err}"
        );
    }
}

/// The inspector's `--sync dataflow` (replayed headlessly): the PTX pane shows the dataflow
/// kernel (its launch-epoch parameter is found) and the Plan tab says the group runs with
/// dataflow waits; without it, the grid-barrier kernel and "runs with grid barriers".
#[test]
fn inspector_sync_dataflow_shows_and_runs_the_dataflow_kernel() {
    let f = fixture("reduce_total_normalize.json");
    let f = f.to_str().unwrap();
    let screen = |sync: &str, keys: &str| {
        let (code, out, err) = vyrescope(&[
            "tui",
            f,
            "--sync",
            sync,
            "--device",
            "h200",
            "--size",
            "160x50",
            "--keys",
            keys,
            "--snapshot",
            "-",
        ]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let search = "Tab Tab /param_sync_epoch Enter";
    let dataflow = screen("dataflow", search);
    assert!(
        dataflow.contains("param_sync_epoch") && !dataflow.contains("not found"),
        "{dataflow}"
    );
    let barrier = screen("barrier", search);
    assert!(barrier.contains("not found: param_sync_epoch"), "{barrier}");
    let plan = screen("dataflow", "7 j");
    assert!(
        plan.contains("sync: runs with dataflow waits (the default)"),
        "{plan}"
    );
    let plan = screen("barrier", "7 j");
    assert!(
        plan.contains("sync: runs with grid barriers (--sync barrier)"),
        "{plan}"
    );
}

/// `sass PIPELINE` (needs ptxas and nvdisasm; skipped with a notice without them).
#[test]
fn sass_shows_every_fused_group_of_a_pipeline() {
    let f = fixture("reduce_total_normalize.json");
    let f = f.to_str().unwrap();
    if !crate::support::tools::sass_tools("sass on a pipeline") {
        return;
    }
    let (code, out, err) = vyrescope(&["sass", f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let gs = v["groups"].as_array().unwrap();
    assert_eq!(gs.len(), plan_groups(f).len());
    assert!(gs[0]["instructions"]
        .as_array()
        .is_some_and(|i| !i.is_empty()));
    let (code, out, _) = vyrescope(&["sass", f]);
    assert_eq!(code, 0);
    // What decided the kernels first, in `plan`'s words, then each group's listing.
    assert!(out.starts_with("// fusion decided by: "), "{out}");
    assert!(
        out.contains("\n// pipeline reduce_total_normalize, group 0"),
        "{out}"
    );
}

/// Issue 36 item 6: the fused kernel's statement comments speak of the steps' own nodes and
/// statements (as the IR pane does), not of the fused Program's ids and renamed variables;
/// `plan` names both accesses of a neighbour read with their steps and verbs.
#[test]
fn fused_comments_name_step_nodes_and_plan_names_both_steps() {
    let f = fixture("softmax.json");
    let (code, out, err) = vyrescope(&["emit", f.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("// steps[0].body[2]: tile[l] = "), "{out}");
    // Every statement comment that comes from a step is relabelled: what is left with a
    // fused id is what the fusion made up (its own blocks, loops and guards).
    for l in out
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("// body["))
    {
        assert!(
            !l.contains("s0_tile"),
            "a step statement kept its fused name: {l}"
        );
    }
    // The source map points at the same step nodes the comments name.
    let (_, map, _) = vyrescope(&["emit", f.to_str().unwrap(), "--map"]);
    assert!(map.contains("\"steps[0].body[2]\""), "{map}");
    let halo = fixture("stencil_halo4.json");
    // Fused as far as legal (the model runs it recomputed, with no dependence to explain).
    let (code, out, err) = vyrescope(&["plan", halo.to_str().unwrap(), "--decide", "fuse"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("step 0 reads it at both gid.x - 1 and gid.x in one statement (node `steps[0].body[1].then[0]`)"),
        "{out}"
    );
    assert!(!out.contains("but step 0 at"), "{out}");
}

/// `emit`, `sass` and `occupancy` of a pipeline show the kernels `run` launches: the cost
/// model's plan, which runs the clamped stencil's first three steps as one recomputed pass
/// and the last alone (fusing them with waits was measured slower); `--decide fuse` shows
/// the fused kernel the model declined; `--decide` on a Program file is refused.
#[test]
fn decide_fuse_shows_the_kernel_the_model_declines() {
    let f = fixture("stencil_clamped.json");
    let f = f.to_str().unwrap();
    let entries = |out: &str| out.lines().filter(|l| l.contains(".entry")).count();
    let (code, model, err) = vyrescope(&["emit", f]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(entries(&model), 2, "{model}");
    assert!(model.contains("recomputed over"), "{model}");
    let (code, fused, err) = vyrescope(&["emit", f, "--decide", "fuse"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(entries(&fused), 1, "{fused}");
    assert!(fused.contains("// dataflow:"), "{fused}");
    let (code, out, err) = vyrescope(&[
        "occupancy",
        f,
        "--device",
        "h200",
        "--decide",
        "fuse",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["groups"].as_array().map(Vec::len), Some(1), "{out}");
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let (code, _, err) = vyrescope(&["emit", program.to_str().unwrap(), "--decide", "fuse"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("--decide applies to pipelines") && err.contains("Fix:"),
        "{err}"
    );
}
