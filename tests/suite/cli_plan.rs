//! `vyrescope plan` as a user runs it: the built binary on the pipeline fixtures (JSON keys,
//! the kinds of barriers the fixtures are built to show, the plan cache's miss then hit) and
//! its refusals (a Program instead of a pipeline, bad --regs).

use std::path::Path;

fn plan(args: &[&str], cache: &Path) -> (i32, String, String) {
    crate::support::cli::output(
        crate::support::cli::in_root()
            .arg("plan")
            .args(args)
            .env("XDG_CACHE_HOME", cache),
    )
}

fn cache_dir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("vyrescope-cli-plan-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn json(args: &[&str], cache: &Path) -> serde_json::Value {
    let mut a = args.to_vec();
    a.push("--json");
    let (code, out, err) = plan(&a, cache);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn chain_is_one_launch_and_the_second_run_hits_the_cache() {
    let cache = cache_dir("chain");
    let v = json(&["fixtures/pipelines/chain.json"], &cache);
    for key in [
        "pipeline",
        "groups",
        "grid_barriers",
        "launches",
        "fusion_breaks",
        "coresident_blocks",
        "shared_bytes",
        "cache",
    ] {
        assert!(v.get(key).is_some(), "missing {key}: {v}");
    }
    assert_eq!(v["pipeline"], "chain");
    assert_eq!(v["launches"], 1);
    assert_eq!(v["grid_barriers"], 0);
    assert_eq!(v["cache"], "miss");
    assert_eq!(v["groups"][0]["kind"], "launch");
    assert_eq!(v["groups"][0]["barriers"][0]["kind"], "invocation");
    let again = json(&["fixtures/pipelines/chain.json"], &cache);
    assert_eq!(again["cache"], "hit");
    assert_eq!(again["groups"], v["groups"]);
    // Another device is another key.
    let a100 = json(
        &["fixtures/pipelines/chain.json", "--device", "a100"],
        &cache,
    );
    assert_eq!(a100["cache"], "miss");
    assert_ne!(a100["device"], v["device"]);
    let _ = std::fs::remove_dir_all(&cache);
}

/// A group of mixed workgroup sizes (hist_equalize_shared: 256, 32, 256 in one launch) is
/// cached like any other: the second run hits, silently. The entry check compared every
/// step with the group's block size, so such an entry always "disagreed with the pipeline":
/// a warning on every run after the first, and no cache.
#[test]
fn a_mixed_workgroup_size_plan_is_cached_without_a_warning() {
    let cache = cache_dir("mixed");
    let f = "fixtures/pipelines/hist_equalize_shared.json";
    // Fused as far as legal: the cost model may keep these steps apart.
    let v = json(&[f, "--device", "h200", "--decide", "fuse"], &cache);
    assert_eq!(v["cache"], "miss");
    assert!(
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["step_workgroup_sizes"][1] == serde_json::json!([32, 1, 1])),
        "{v}"
    );
    let (code, out, err) = plan(
        &[f, "--device", "h200", "--decide", "fuse", "--json"],
        &cache,
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    let again: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(again["cache"], "hit");
    assert_eq!(again["groups"], v["groups"]);
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn fixtures_show_each_barrier_kind() {
    let cache = cache_dir("kinds");
    let rot = json(&["fixtures/pipelines/workgroup_rotate.json"], &cache);
    assert_eq!(rot["groups"][0]["kind"], "launch");
    assert_eq!(rot["groups"][0]["barriers"][0]["kind"], "workgroup");
    let red = json(&["fixtures/pipelines/reduce_normalize.json"], &cache);
    assert_eq!(red["grid_barriers"], 1);
    assert_eq!(red["launches"], 1);
    let g = &red["groups"][0];
    assert_eq!(g["kind"], "megakernel");
    assert_eq!(g["barriers"][0]["kind"], "grid");
    assert!(g["barriers"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("partial"));
    assert!(red["coresident_blocks"].as_u64().unwrap() > 0);
    assert_eq!(red["shared_bytes"], 1024);
    // Workgroup sizes 256 and 128 share one launch of 256-thread blocks.
    let pair = json(&["fixtures/pipelines/independent_pair.json"], &cache);
    assert_eq!(pair["launches"], 1);
    let g = &pair["groups"][0];
    assert_eq!(g["workgroup_size"], serde_json::json!([256, 1, 1]));
    assert_eq!(
        g["step_workgroup_sizes"],
        serde_json::json!([[256, 1, 1], [128, 1, 1]])
    );
    let _ = std::fs::remove_dir_all(&cache);
}

#[test]
fn human_output_lists_waves_barriers_and_breaks() {
    let cache = cache_dir("human");
    let (code, out, err) = plan(
        &["fixtures/pipelines/reduce_normalize.json", "--no-cache"],
        &cache,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 launch, 1 grid barrier"), "{out}");
    assert!(out.contains("megakernel"), "{out}");
    assert!(out.contains("wave 0: step 0 (partial_sums_f32)"), "{out}");
    assert!(out.contains("grid barrier after step 0"), "{out}");
    assert!(out.contains("registers: each group's kernel, "), "{out}");
    assert!(
        out.contains("fusion decided with 32 registers per thread assumed"),
        "{out}"
    );
    // --no-cache wrote nothing.
    assert!(!cache.join("vyrescope").join("plan").exists());
    let (code, out, _) = plan(
        &["fixtures/pipelines/independent_pair.json", "--no-cache"],
        &cache,
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("mixed workgroup sizes in one launch (step 0 256x1x1, step 1 128x1x1)"),
        "{out}"
    );
}

#[test]
fn refusals_name_the_problem_and_a_fix() {
    let cache = cache_dir("refuse");
    let (code, _, err) = plan(&["fixtures/programs/vadd_f32.json"], &cache);
    assert_eq!(code, 1);
    assert!(
        err.contains("is a Program, not a pipeline") && err.contains("Fix:"),
        "{err}"
    );
    let (code, _, err) = plan(&["fixtures/pipelines/chain.json", "--regs", "300"], &cache);
    assert_eq!(code, 1);
    assert!(err.contains("--regs") && err.contains("Fix:"), "{err}");
    let (code, _, err) = plan(
        &["fixtures/pipelines/chain.json", "--device", "nosuch"],
        &cache,
    );
    assert_eq!(code, 1);
    assert!(err.contains("Fix:"), "{err}");
    let (code, _, err) = plan(&["fixtures/pipelines/missing.json"], &cache);
    assert_eq!(code, 1);
    assert!(err.contains("Fix:"), "{err}");
}

#[test]
fn register_counts_change_the_plan() {
    let cache = cache_dir("regs");
    // 24 and 255 registers: the heavy step would drag the light one to 12.5% occupancy.
    let v = json(
        &[
            "fixtures/pipelines/chain.json",
            "--regs",
            "24,255",
            "--no-cache",
        ],
        &cache,
    );
    assert_eq!(v["launches"], 2, "{v}");
    assert!(v["fusion_breaks"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("occupancy"));
    let v = json(
        &[
            "fixtures/pipelines/chain.json",
            "--regs",
            "24,255",
            "--min-occupancy",
            "10",
            "--no-cache",
        ],
        &cache,
    );
    assert_eq!(v["launches"], 1, "{v}");
}

/// The dataflow view: the fold after per-workgroup partials is run by the last producer, the
/// total is a broadcast of its one writer, and text and JSON use the same label names.
#[test]
fn dataflow_labels_name_fold_and_broadcast_in_text_and_json() {
    let cache = cache_dir("dataflow");
    let file = "fixtures/pipelines/reduce_total_normalize.json";
    let v = json(&[file, "--no-cache"], &cache);
    let g = &v["groups"][0]["dataflow"];
    assert_eq!(g["boundaries"][0]["label"], "last_arriver_fold", "{g}");
    assert_eq!(g["boundaries"][0]["waits"][0]["producers"]["kind"], "all");
    assert_eq!(g["boundaries"][1]["label"], "broadcast", "{g}");
    assert_eq!(g["boundaries"][1]["waits"][0]["producers"]["first"], 0);
    assert!(g["blocks"].as_u64().is_some_and(|b| b > 0), "{g}");
    let (code, text, err) = plan(&[file, "--no-cache"], &cache);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("dataflow: last_arriver_fold: step 1 waits for step 0 workgroups all"),
        "{text}"
    );
    assert!(
        text.contains("dataflow: broadcast: step 2 waits for step 1 workgroups 0"),
        "{text}"
    );
    assert!(text.contains("dataflow grid: "), "{text}");
}

/// `scan_1024_middle` (256, 1024, 256 threads): both 256-thread steps pack 4 x 256 into the
/// 1024-thread block, the elementwise last one and the first, a shared-memory scan with
/// workgroup barriers (its barriers become sub-task barriers, its tile one copy per sub-task:
/// 4 x 1 KiB plus step 1's 4 KiB of shared memory). The text plan says so per step, the JSON
/// as `step_layouts`; the dataflow form packs both too.
#[test]
fn scan_1024_middle_packs_its_elementwise_step_in_the_barrier_form() {
    let cache = cache_dir("packed");
    let f = "fixtures/pipelines/scan_1024_middle.json";
    let common = [f, "--device", "h200", "--decide", "fuse"];
    let v = json(&[&common[..], &["--sync", "barrier"]].concat(), &cache);
    let g = &v["groups"][0];
    assert_eq!(g["workgroup_size"], serde_json::json!([1024, 1, 1]), "{v}");
    let packed = serde_json::json!({"layout": "packed", "tasks": 4, "threads": 256});
    assert_eq!(g["step_layouts"][0], packed, "{g}");
    assert_eq!(g["step_layouts"][1]["layout"], "whole", "{g}");
    assert_eq!(g["step_layouts"][2], packed, "{g}");
    // The kernel's own shared memory: at least four packed copies of step 0's 1 KiB
    // workgroup buffer.
    assert!(g["shared_bytes"].as_u64().unwrap() >= 4 * 1024, "{g}");
    let (code, out, err) = plan(&[&common[..], &["--sync", "barrier"]].concat(), &cache);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("step 2: packed 4 x 256 in 1024"), "{out}");
    assert!(out.contains("step 0: packed 4 x 256 in 1024"), "{out}");
    let d = json(&[&common[..], &["--sync", "dataflow"]].concat(), &cache);
    for k in [0, 2] {
        assert_eq!(d["groups"][0]["step_layouts"][k], packed, "{d}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// In the dataflow form a packed step's sub-tasks wait together: `plan` shows the packing,
/// the grid counted in block-sized tasks and the trip's widened window.
#[test]
fn stencil_mixed_sizes_packs_and_waits_per_trip_in_the_dataflow_form() {
    let cache = cache_dir("packed-dataflow");
    let args = [
        "fixtures/pipelines/stencil_mixed_sizes.json",
        "--device",
        "h200",
        "--decide",
        "fuse",
    ];
    let (code, out, err) = plan(&args, &cache);
    assert_eq!(code, 0, "{err}");
    for want in [
        "step 1: packed 4 x 64 in 256",
        "step 2: packed 4 x 64 in 256",
        "dataflow grid: 79 blocks",
        "step 2 sub-tasks w..w+3 (one trip of a packed block) wait together for the flags of step 1 workgroups w-1..w+4",
    ] {
        assert!(out.contains(want), "missing `{want}`:\n{out}");
    }
    let _ = std::fs::remove_dir_all(&cache);
}

/// One register figure for a pipeline (the Plan tab once said 1056 co-resident blocks beside
/// a 35-register kernel that keeps 792 resident): every group of `plan` gives its kernel's
/// own registers, shared memory and co-resident blocks, the figures `occupancy` reports for
/// the same kernel, and a persistent grid those registers keep resident. Whichever source
/// the machine has (ptxas, or the PTX estimate without it), both commands name the same one.
#[test]
fn plan_and_occupancy_give_one_register_figure_and_a_grid_that_fits() {
    let cache = cache_dir("one-figure");
    for file in [
        "softmax.json",
        "reduce_total_normalize.json",
        "stencil_clamped.json",
        "scan_1024_middle.json",
    ] {
        let path = format!("fixtures/pipelines/{file}");
        for sync in ["dataflow", "barrier"] {
            let p = json(
                &[&path, "--device", "h100-sxm", "--sync", sync, "--no-cache"],
                &cache,
            );
            let (code, out, err) = crate::support::cli::output(
                crate::support::cli::in_root()
                    .args(["occupancy", &path, "--device", "h100-sxm", "--sync", sync])
                    .arg("--json"),
            );
            assert_eq!(code, 0, "{err}");
            let o: serde_json::Value = serde_json::from_str(&out).unwrap();
            let groups = p["groups"].as_array().unwrap();
            assert_eq!(
                groups.len(),
                o["groups"].as_array().unwrap().len(),
                "{file}"
            );
            for (i, g) in groups.iter().enumerate() {
                let k = &o["groups"][i];
                let at = format!("{file} --sync {sync} group {i}");
                assert_eq!(g["registers"], k["resources"]["regs_per_thread"], "{at}");
                assert_eq!(g["registers_source"], k["resources_source"], "{at}");
                assert_eq!(
                    g["shared_bytes"], k["resources"]["static_smem_bytes"],
                    "{at}"
                );
                let per_sm = k["estimate"]["blocks_per_sm"].as_u64().unwrap();
                assert_eq!(g["coresident_blocks"].as_u64(), Some(per_sm * 132), "{at}");
                // The persistent grid `runs_as` reports fits what stays resident.
                for line in p["runs_as"][i].as_array().unwrap() {
                    let line = line.as_str().unwrap();
                    if let Some(n) = line
                        .strip_prefix("persistent grid ")
                        .and_then(|r| r.strip_suffix(" blocks"))
                    {
                        let n: u64 = n.parse().unwrap();
                        assert!(n >= 1 && n <= per_sm * 132, "{at}: {line}");
                    }
                }
            }
        }
    }
}
