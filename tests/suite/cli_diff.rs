//! `vyrescope diff` as a user runs it, on fixture pairs: workgroup 64 against 256, sm_80
//! against sm_90, unrolling off against on, and two edited versions of a Program. Each side's
//! JSON totals must equal what `sass --json` and `emit` report for that side alone.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn bin() -> Command {
    crate::support::cli::command()
}

fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn json_of(args: &[&str]) -> Value {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// PTX instruction lines of `emit --lineinfo` with `flags`.
fn emit_instructions(file: &Path, flags: &[&str]) -> u64 {
    let out = bin()
        .arg("emit")
        .arg(file)
        .arg("--lineinfo")
        .args(flags)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| vyrescope::diff::is_ptx_instruction(l))
        .count() as u64
}

/// Checks one side's totals against `sass --json` and `emit` of that side alone.
fn check_side(t: &Value, file: &Path, sass_flags: &[&str], emit_flags: &[&str]) {
    let f = file.to_str().unwrap();
    let mut args = vec!["sass", f, "--json"];
    args.extend_from_slice(sass_flags);
    let s = json_of(&args);
    let n = s["instructions"].as_array().unwrap().len() as u64;
    assert_eq!(t["sass_instructions"].as_u64(), Some(n), "{t}");
    assert_eq!(t["registers"], s["resources"]["registers"], "{t}");
    assert_eq!(t["shared_bytes"], s["resources"]["shared_bytes"], "{t}");
    assert_eq!(t["peak_live"], s["peak_live"], "{t}");
    assert_eq!(
        t["ptx_instructions"].as_u64(),
        Some(emit_instructions(file, emit_flags)),
        "{t}"
    );
}

fn diff(old: &str, new: &str, extra: &[&str]) -> Value {
    let mut args = vec!["diff", old, new, "--json"];
    args.extend_from_slice(extra);
    json_of(&args)
}

#[test]
fn workgroup_64_against_256() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let f = path("fixtures/programs/saxpy_f32.json");
    let fs = f.to_str().unwrap();
    let d = diff(&format!("{fs}@wg=64"), fs, &[]);
    assert_eq!(d["aligned_by"], "node_id");
    assert_eq!(
        d["totals"]["old"]["workgroup"],
        serde_json::json!([64, 1, 1])
    );
    assert_eq!(
        d["totals"]["new"]["workgroup"],
        serde_json::json!([256, 1, 1])
    );
    check_side(
        &d["totals"]["old"],
        &f,
        &["--workgroup", "64,1,1"],
        &["--workgroup", "64,1,1"],
    );
    check_side(&d["totals"]["new"], &f, &[], &[]);
    // Same statements on both sides, and the PTX differs in the block shape.
    let rows = d["statements"].as_array().unwrap();
    assert!(rows.len() >= 4);
    assert!(rows.iter().all(|r| r["old"]["node"] == r["new"]["node"]));
    let hunks = serde_json::to_string(&d["hunks"]).unwrap();
    assert!(hunks.contains(".maxntid 64, 1, 1") && hunks.contains(".maxntid 256, 1, 1"));
}

#[test]
fn sm_80_against_sm_90_at_the_sass_level() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let f = path("fixtures/programs/stencil5_f32.json");
    let fs = f.to_str().unwrap();
    let d = diff(&format!("{fs}@sm=80"), fs, &["--level", "sass"]);
    assert_eq!(d["level"], "sass");
    assert_eq!(d["totals"]["old"]["sm"], 80);
    assert_eq!(d["totals"]["new"]["sm"], 90);
    check_side(&d["totals"]["old"], &f, &["--sm", "80"], &["--sm", "80"]);
    check_side(&d["totals"]["new"], &f, &[], &[]);
    // Per-statement SASS counts add up to the owned instructions of each side.
    for side in ["old", "new"] {
        let owned: u64 = d["statements"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r[side]["sass"].as_u64())
            .sum();
        let total = d["totals"][side]["sass_instructions"].as_u64().unwrap();
        assert!(owned > 0 && owned <= total, "{side}: {owned} of {total}");
    }
    assert!(
        !d["hunks"].as_array().unwrap().is_empty(),
        "sm_80 and sm_90 SASS differ"
    );
}

#[test]
fn unrolling_off_against_on() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let f = path("fixtures/programs/matmul_tiled_f32.json");
    let fs = f.to_str().unwrap();
    let d = diff(&format!("{fs}@unroll=off"), fs, &[]);
    check_side(&d["totals"]["old"], &f, &["--no-unroll"], &["--no-unroll"]);
    check_side(&d["totals"]["new"], &f, &[], &[]);
    let old = d["totals"]["old"]["ptx_instructions"].as_u64().unwrap();
    let new = d["totals"]["new"]["ptx_instructions"].as_u64().unwrap();
    assert!(
        new > old,
        "unrolled PTX ({new}) should be longer than rolled ({old})"
    );
    // The loop body's statement is where the PTX grew.
    let grew = d["statements"].as_array().unwrap().iter().any(|r| {
        r["new"]["ptx"].as_u64().unwrap_or(0) > r["old"]["ptx"].as_u64().unwrap_or(0) + 10
    });
    assert!(grew, "{}", d["statements"]);
}

#[test]
fn two_edited_versions_align_through_the_ir() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let (a, b) = (
        path("fixtures/diff/saxpy_v1.json"),
        path("fixtures/diff/saxpy_v2.json"),
    );
    let d = diff(a.to_str().unwrap(), b.to_str().unwrap(), &["--level", "ir"]);
    assert_eq!(d["aligned_by"], "ir_diff");
    check_side(&d["totals"]["old"], &a, &[], &[]);
    check_side(&d["totals"]["new"], &b, &[], &[]);
    let rows = d["statements"].as_array().unwrap();
    // v2 inserts `let c` before the store: the store pairs with the store, `let c` is new.
    let added: Vec<&Value> = rows.iter().filter(|r| r["old"].is_null()).collect();
    assert_eq!(added.len(), 1, "{rows:?}");
    assert_eq!(added[0]["new"]["node"], "body[3]");
    assert!(rows
        .iter()
        .any(|r| r["old"]["node"] == "body[3]" && r["new"]["node"] == "body[4]"));
    let text = serde_json::to_string(&d["hunks"]).unwrap();
    assert!(text.contains("fma(c, x[i], y[i])"), "{text}");
}

#[test]
fn a_bad_side_is_one_error_with_a_fix_in_text_and_json() {
    let f = path("fixtures/programs/saxpy_f32.json");
    let fs = f.to_str().unwrap();
    let out = bin()
        .args(["diff", &format!("{fs}@wg=0"), fs])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("@wg=0") && err.contains("Fix: write FILE[@OPTION]"),
        "{err}"
    );
    let out = bin()
        .args(["diff", &format!("{fs}@wg=0"), fs, "--json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON value");
    assert!(v["fix"].as_str().unwrap().contains("wg=N"), "{v}");
    let out = bin().args(["diff", "nowhere.json", fs]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Fix:"));
}

/// sm_70: the pinned ptxas has no sm_70 target, so its SASS is sm_75's; the side says so
/// rather than calling sm_75 SASS sm_70's.
#[test]
fn sm_70_side_says_its_sass_is_sm_75() {
    let out = bin()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "diff",
            "fixtures/programs/vadd_f32.json@sm=70",
            "fixtures/programs/vadd_f32.json",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("sm_70 (the pinned ptxas (13) has no sm_70 target: its SASS is for sm_75)"),
        "{text}"
    );
    assert!(!text.contains("sm_90 (the pinned"), "{text}");
}

#[test]
fn without_ptxas_the_totals_are_the_ptx_estimate_and_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let nowhere = tmp.path().join("none");
    let f = path("fixtures/programs/saxpy_f32.json");
    let f = f.to_str().unwrap();
    let out = bin()
        .args(["diff", &format!("{f}@wg=64"), &format!("{f}@wg=256")])
        .env("VYRESCOPE_PTXAS", &nowhere)
        .env("VYRESCOPE_NVDISASM", &nowhere)
        .env("PATH", &nowhere)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let totals = text
        .lines()
        .find(|l| l.starts_with("totals:"))
        .unwrap_or_else(|| panic!("{text}"));
    // Figures, not dashes: registers and occupancy as `occupancy` estimates them.
    assert!(!totals.contains("registers -"), "{totals}");
    assert!(totals.contains('%'), "{totals}");
    assert!(text.contains("estimated from the PTX"), "{text}");
    let json = bin()
        .args([
            "diff",
            &format!("{f}@wg=64"),
            &format!("{f}@wg=256"),
            "--json",
        ])
        .env("VYRESCOPE_PTXAS", &nowhere)
        .env("VYRESCOPE_NVDISASM", &nowhere)
        .env("PATH", &nowhere)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&json.stdout).unwrap();
    let old = v["totals"]["old"].clone();
    assert!(old["registers"].as_u64().is_some_and(|r| r > 0), "{v}");
    assert_eq!(old["estimated"], true, "{v}");
}
