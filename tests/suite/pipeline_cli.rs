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
