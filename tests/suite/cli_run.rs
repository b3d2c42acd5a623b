//! `vyrescope run` as a user runs it: text and JSON reports, `--dump` files, overrides, and
//! exit code 1 with diagnostics for invalid Programs.

use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

fn vyrescope(args: &[&str]) -> (i32, String, String) {
    crate::support::cli::run(args)
}

/// FNV-1a 64, written independently of the library.
fn fnv(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

#[test]
fn json_report_and_dump_agree_with_vadd() {
    let dir = std::env::temp_dir().join(format!("vyrescope-cli-run-{}", std::process::id()));
    let file = fixture("fixtures/programs/vadd_f32.json");
    let (code, out, err) = vyrescope(&[
        "run",
        file.to_str().unwrap(),
        "--backend",
        "reference",
        "--grid",
        "64",
        "--workgroup",
        "128,1,1",
        "--json",
        "--dump",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["program"], "vadd_f32");
    assert_eq!(v["backend"], "reference");
    assert_eq!(v["grid"], serde_json::json!([64, 1, 1]));
    assert_eq!(v["workgroup_size"], serde_json::json!([128, 1, 1]));
    assert!(v["elapsed_ms"].as_f64().unwrap() >= 0.0);
    assert!(v["node_evals"].as_u64().unwrap() > 0);
    let outputs = v["outputs"].as_object().unwrap();
    assert!(!outputs.is_empty());
    for (name, o) in outputs {
        let after = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
        assert!(dir.join(format!("{name}.in.bin")).exists());
        assert_eq!(o["checksum"], fnv(&after), "{name}");
        let size = match o["type"].as_str().unwrap() {
            "f64" | "u64" | "i64" => 8,
            "f16" | "u16" | "i16" => 2,
            "u8" | "i8" => 1,
            _ => 4,
        };
        assert_eq!(o["len"].as_u64().unwrap() as usize, after.len() / size);
        assert!(o["first"].as_array().unwrap().len() <= 8);
    }
    // c = a + b element by element, checked from the dumped bytes (only the first
    // 64 * 128 invocations ran).
    let f = |n: &str| -> Vec<f32> {
        std::fs::read(dir.join(n))
            .unwrap()
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let (a, b, c, c0) = (f("a.in.bin"), f("b.in.bin"), f("c.bin"), f("c.in.bin"));
    for i in 0..c.len() {
        let want = if i < 64 * 128 { a[i] + b[i] } else { c0[i] };
        assert_eq!(c[i].to_bits(), want.to_bits(), "c[{i}]");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn text_report_names_outputs_with_checksums() {
    let file = fixture("fixtures/programs/int_edge_cases.json");
    let (code, out, err) = vyrescope(&["run", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("int_edge_cases on reference: grid"),
        "{out}"
    );
    assert!(out.contains("checksum"), "{out}");
    assert!(out.contains("first ["), "{out}");
}

#[test]
fn invalid_programs_exit_1_with_diagnostics() {
    let dir = fixture("fixtures/invalid");
    let mut any = false;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "json") {
            any = true;
            let (code, _, err) = vyrescope(&["run", p.to_str().unwrap()]);
            assert_eq!(code, 1, "{}", p.display());
            assert!(err.contains("Fix:"), "{}: {err}", p.display());
        }
    }
    assert!(any);
}

#[test]
fn bad_overrides_are_errors() {
    let file = fixture("fixtures/programs/vadd_f32.json");
    let (code, _, _) = vyrescope(&["run", file.to_str().unwrap(), "--grid", "0,1,1"]);
    assert_ne!(code, 0);
    let (code, _, err) = vyrescope(&[
        "run",
        file.to_str().unwrap(),
        "--grid",
        "4294967295,65535,65535",
    ]);
    // Rejected while parsing the arguments (the same limits as every other shape option).
    assert_ne!(code, 0);
    assert!(err.contains("limit") && err.contains("Fix:"), "{err}");
    let (code, _, err) = vyrescope(&["run", file.to_str().unwrap(), "--workgroup", "2048,1,1"]);
    assert_ne!(code, 0);
    assert!(err.contains("1024") && err.contains("Fix:"), "{err}");
}

#[test]
fn a_grid_that_covers_part_of_the_elements_says_so() {
    let f = fixture("fixtures/programs/vadd_f32.json");
    let f = f.to_str().unwrap();
    let (code, _, err) = vyrescope(&[
        "run",
        f,
        "--backend",
        "reference",
        "--grid",
        "8,1,1",
        "--workgroup",
        "128,1,1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("launches 1024 invocations")
            && err.contains("run.elements is 1048576")
            && err.contains("leave --grid out"),
        "{err}"
    );
    // A grid that covers them all, or no --grid, says nothing.
    let (code, _, err) = vyrescope(&[
        "run",
        f,
        "--backend",
        "reference",
        "--grid",
        "8192,1,1",
        "--workgroup",
        "128,1,1",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains("not computed"), "{err}");
}
