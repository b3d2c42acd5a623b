//! `vyrescope sass` as a user runs it: `--json`'s instruction count equals what nvdisasm
//! prints for the cubin `ptxas -lineinfo` makes from `vyrescope emit --lineinfo` (trailing
//! alignment NOPs aside), the text form's gutter, and one clear line with a `Fix:` when a
//! tool is missing while `emit` goes on working.

use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    crate::support::cli::command()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/programs/{name}.json"))
}

/// Instructions nvdisasm prints for `cubin`, trailing NOPs not counted.
fn nvdisasm_count(nvdisasm: &Path, cubin: &Path) -> usize {
    let out = Command::new(nvdisasm)
        .arg("-c")
        .arg(cubin)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let ins: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("/*") && l.contains("*/"))
        .map(|l| l.split("*/").nth(1).unwrap().trim())
        .collect();
    let trailing = ins.iter().rev().take_while(|t| **t == "NOP;").count();
    ins.len() - trailing
}

#[test]
fn json_instruction_count_matches_nvdisasm_on_the_emitted_cubin() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let (ptxas, nvdisasm) = (
        vyrescope::emit::ptxas::find_ptxas().expect("checked above"),
        vyrescope::sass::find_nvdisasm().expect("checked above"),
    );
    let tmp = tempfile::tempdir().unwrap();
    for (name, sm) in [
        ("vadd_f32", 90),
        ("u64_f64_arith", 90),
        ("matmul_tiled_f32", 80),
        ("subgroup_ops", 70),
    ] {
        let ptx = tmp.path().join(format!("{name}.ptx"));
        let cubin = tmp.path().join(format!("{name}.cubin"));
        let st = bin()
            .args(["emit", "--lineinfo", "--sm", &sm.to_string(), "-o"])
            .arg(&ptx)
            .arg(fixture(name))
            .status()
            .unwrap();
        assert!(st.success());
        let arch = format!("-arch=sm_{}", sm.max(75));
        let st = Command::new(&ptxas)
            .args([arch.as_str(), "-lineinfo"])
            .arg(&ptx)
            .arg("-o")
            .arg(&cubin)
            .status()
            .unwrap();
        assert!(st.success());
        let want = nvdisasm_count(&nvdisasm, &cubin);
        let out = bin()
            .args(["sass", "--json", "--sm", &sm.to_string()])
            .arg(fixture(name))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ins = v["instructions"].as_array().unwrap();
        assert_eq!(ins.len(), want, "{name} sm_{sm}");
        assert!(want > 10, "{name}: {want}");
        assert_eq!(v["sm"], sm);
        assert_eq!(v["kernel"], name);
        for i in ins {
            assert!(i["address"].is_u64() && i["text"].is_string(), "{i}");
            assert!(i["ptx_line"].is_u64(), "{name}: {i}");
            assert!(i["node"].is_string() || i["node"].is_null(), "{i}");
        }
        assert!(ins.iter().any(|i| i["node"].is_string()));
        assert!(ins.iter().any(|i| i["node"].is_null()));
    }
}

#[test]
fn text_has_a_gutter_of_ptx_line_and_node() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let out = bin()
        .args(["sass", "--workgroup", "128,1,1"])
        .arg(fixture("vadd_f32"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("STG.E"))
        .expect("a global store");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert!(words[0].parse::<u32>().is_ok(), "{line}");
    assert_eq!(words[1], "body[1].then[0]", "{line}");
    // gid.x = wgid.x * 128 + lid.x: ptxas writes it as an IMAD by 0x80 or a LEA by 7.
    assert!(
        text.lines()
            .any(|l| (l.contains("IMAD R") && l.contains(", 0x80, "))
                || (l.contains("LEA R") && l.ends_with(", 0x7"))),
        "workgroup 128:\n{text}"
    );
    assert!(text.contains("// instruction mix and peak live registers per statement"));
    assert!(text.contains("// peak live registers: "), "{text}");
}

#[test]
fn a_missing_tool_is_one_line_with_a_fix_and_emit_still_works() {
    // Independent of the tools this machine has: PATH holds nothing, the tool under test
    // points nowhere, and the other one is a stand-in file (the lookup only asks that it
    // exists; `sass` looks both up before running either). So the error names the tool under
    // test whether or not ptxas and nvdisasm are installed here.
    let tmp = tempfile::tempdir().unwrap();
    let nowhere = tmp.path().join("none");
    let stand_in = tmp.path().join("stand-in");
    std::fs::create_dir(&stand_in).unwrap();
    let fake_ptxas = stand_in.join("ptxas");
    let fake_nvdisasm = stand_in.join("nvdisasm-elsewhere");
    std::fs::write(&fake_ptxas, "#!/bin/sh\nexit 1\n").unwrap();
    std::fs::write(&fake_nvdisasm, "#!/bin/sh\nexit 1\n").unwrap();
    for (var, tool, script, other_var, other) in [
        (
            "VYRESCOPE_NVDISASM",
            "nvdisasm",
            "install-nvdisasm.sh",
            "VYRESCOPE_PTXAS",
            &fake_ptxas,
        ),
        (
            "VYRESCOPE_PTXAS",
            "ptxas",
            "install-ptxas.sh",
            "VYRESCOPE_NVDISASM",
            &fake_nvdisasm,
        ),
    ] {
        let out = bin()
            .arg("sass")
            .arg(fixture("vadd_f32"))
            .env(var, &nowhere)
            .env(other_var, other)
            .env("PATH", &nowhere)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("error: {tool} not found")),
            "{err}"
        );
        assert!(err.contains("Fix:") && err.contains(script), "{err}");
        assert_eq!(err.lines().count(), 2, "{err}");
        let out = bin()
            .arg("emit")
            .arg(fixture("vadd_f32"))
            .env(var, &nowhere)
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let out = bin()
        .args(["sass", "--sm", "61"])
        .arg(fixture("vadd_f32"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Fix:"));
}
