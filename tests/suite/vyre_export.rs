//! vyre export and vyre's PTX (feature `vyre`): every fixture exports or is refused with the
//! expected reason; exported Programs round-trip through vyre's wire and text formats; vyre's
//! PTX for them assembles with ptxas (or vyre refuses them for the recorded reason); the
//! semantic guards appear exactly where they must; the comparison with our PTX is stable;
//! and the CLI commands work end to end.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;
use support::fixtures::fixtures;

use vyre_foundation::ir::Program as VProgram;
use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::ir::parse_program;
use vyrescope::vyre::{export, ptx_diff, vyre_ptx};

/// What each fixture's export gives: `Ok` or pieces of the expected refusal (node, construct).
const EXPORT: &[(&str, Option<(&str, &str)>)] = &[
    ("atomics_mixed", Some(("buffers[4]", "u64 buffer"))),
    ("atomics_mixed_relaxed", Some(("buffers[4]", "u64 buffer"))),
    ("bounds_fast_path", None),
    ("f16_storage", None),
    ("float_specials", Some(("buffers[5]", "i64 buffer"))),
    ("grid_barrier_loop_u32", None),
    ("grid_two_phase_u32", Some(("body[6]", "`nwg` builtin"))),
    (
        "histogram_u8",
        Some(("body[4].then[0]", "atomic on workgroup buffer `bins`")),
    ),
    (
        "histogram_u8_relaxed",
        Some(("body[4].then[0]", "atomic on workgroup buffer `bins`")),
    ),
    ("ids_3d", Some(("body[0]", "`nwg` builtin"))),
    ("int_edge_cases", None),
    ("loop_early_return", None),
    ("math_f32", None),
    ("matmul_tiled_f32", None),
    ("nested_blocks", None),
    ("reduce_sum_f32", None),
    ("saturating_int", Some(("buffers[4]", "u64 buffer"))),
    ("saxpy_f32", None),
    ("stencil5_f32", None),
    ("subgroup_ops", None),
    ("u64_f64_arith", Some(("buffers[0]", "u64 buffer"))),
    ("vadd_f32", None),
    ("warp_scan_u32", None),
];

/// vyre's PTX for the exported fixtures: `None` = emitted and accepted by ptxas, else the
/// stage and a piece of vyre's message.
const VYRE_PTX: &[(&str, Option<(&str, &str)>)] = &[
    ("bounds_fast_path", None),
    ("f16_storage", None),
    (
        "grid_barrier_loop_u32",
        Some(("emit", "GridSync barrier inside a loop body")),
    ),
    ("int_edge_cases", None),
    (
        "loop_early_return",
        Some((
            "emit",
            "Node::Return under a condition that is not provably uniform",
        )),
    ),
    ("math_f32", Some(("emit", "has no PTX lowering"))),
    ("matmul_tiled_f32", Some(("validate", "V010"))),
    ("nested_blocks", None),
    ("reduce_sum_f32", None),
    ("saxpy_f32", None),
    ("stencil5_f32", None),
    ("subgroup_ops", None),
    ("vadd_f32", None),
    ("warp_scan_u32", None),
];

fn name(f: &Path) -> String {
    f.file_stem().unwrap().to_string_lossy().into_owned()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn exported() -> Vec<(String, vyrescope::ir::Program, VProgram)> {
    fixtures()
        .into_iter()
        .filter_map(|(f, p)| export(&p).ok().map(|v| (name(&f), p, v)))
        .collect()
}

#[test]
fn every_fixture_exports_or_is_refused_as_expected() {
    let all = fixtures();
    let names: Vec<String> = all.iter().map(|(f, _)| name(f)).collect();
    let listed: Vec<&str> = EXPORT.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names, listed,
        "every fixture needs an entry in EXPORT (and in docs/vyre.md)"
    );
    for ((f, p), (_, want)) in all.iter().zip(EXPORT) {
        match (export(p), want) {
            (Ok(_), None) => {}
            (Err(e), Some((node, construct))) => {
                let text = e.to_string();
                assert_eq!(e.node, *node, "{}: {text}", f.display());
                assert!(text.contains(construct), "{}: {text}", f.display());
                assert!(text.contains("\n  Fix: "), "{}: {text}", f.display());
            }
            (Ok(_), Some(w)) => panic!("{}: exported, expected refusal {w:?}", f.display()),
            (Err(e), None) => panic!("{}: {e}", f.display()),
        }
    }
}

#[test]
fn exported_fixtures_round_trip_through_wire_and_text() {
    let all = exported();
    assert!(all.len() >= 12, "only {} fixtures exported", all.len());
    for (n, _, v) in all {
        let wire = v.to_wire().unwrap_or_else(|e| panic!("{n}: to_wire: {e}"));
        assert_eq!(&wire[..4], b"VYRE", "{n}");
        let back = VProgram::from_wire(&wire).unwrap_or_else(|e| panic!("{n}: from_wire: {e}"));
        assert!(back == v, "{n}: from_wire(to_wire(p)) != p");
        let text = v.to_text().unwrap();
        assert!(text.starts_with("vyre_ir v0.1\n"), "{n}");
        let back = VProgram::from_text(&text).unwrap_or_else(|e| panic!("{n}: from_text: {e}"));
        assert!(back == v, "{n}: from_text(to_text(p)) != p");
        assert_eq!(v.workgroup_size(), back.workgroup_size());
    }
}

fn ptxas() -> Option<PathBuf> {
    crate::support::tools::ptxas("the vyre ptxas checks")
}

#[test]
fn vyre_ptx_of_exported_fixtures_assembles_or_vyre_refuses_as_recorded() {
    let bin = ptxas();
    let all = exported();
    let names: Vec<&str> = all.iter().map(|(n, _, _)| n.as_str()).collect();
    let listed: Vec<&str> = VYRE_PTX.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names, listed,
        "every exported fixture needs an entry in VYRE_PTX"
    );
    for ((n, p, v), (_, want)) in all.iter().zip(VYRE_PTX) {
        for sm in [80, 90] {
            match (vyre_ptx(v, sm), want) {
                (Ok(k), None) => {
                    assert!(k.ptx.contains(".entry main"), "{n}");
                    assert!(k.ptx.contains(&format!(".target sm_{sm}")), "{n}");
                    // One pointer per host buffer, named after it.
                    let hosts: Vec<String> =
                        p.host_buffers().iter().map(|b| b.name.clone()).collect();
                    let mut got = k.params.clone();
                    got.sort();
                    let mut want_params = hosts;
                    want_params.sort();
                    assert_eq!(got, want_params, "{n}");
                    if let Some(b) = &bin {
                        if let Err(e) = assemble(b, &k.ptx, sm, false) {
                            panic!("{n} sm_{sm}: ptxas rejected vyre's PTX: {e}");
                        }
                    }
                }
                (Err(e), Some((stage, piece))) => {
                    assert_eq!(e.stage, *stage, "{n}: {e}");
                    assert!(e.to_string().contains(piece), "{n}: {e}");
                    assert!(e.to_string().contains("\n  Fix: "), "{n}");
                }
                (Ok(_), Some(w)) => panic!("{n} sm_{sm}: vyre emitted, expected {w:?}"),
                (Err(e), None) => panic!("{n} sm_{sm}: {e}"),
            }
        }
    }
}

fn program(body: &str, buffers: &str) -> vyrescope::ir::Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1], "buffers": [{buffers}], "body": {body}}}"#
    );
    parse_program(&text, "t.json").unwrap_or_else(|e| panic!("{e}\n{text}"))
}

const AB: &str = r#"{"name": "a", "binding": 0, "access": "read", "type": "u32"},
    {"name": "b", "binding": 1, "access": "read_write", "type": "u32"}"#;

fn debug(p: &vyrescope::ir::Program) -> String {
    format!("{:?}", export(p).unwrap().entry())
}

#[test]
fn loads_stores_and_atomics_get_our_bounds_semantics_unless_proven() {
    // Unguarded: the load becomes select(i < len(a), load, 0), the store runs under
    // if i < len(b).
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"store": "b", "index": "i", "value": {"load": "a", "index": "i"}}]"#,
        AB,
    );
    let d = debug(&p);
    assert_eq!(d.matches("Select").count(), 1, "{d}");
    assert_eq!(d.matches("BufLen").count(), 2, "{d}");
    assert_eq!(d.matches("If {").count(), 1, "{d}");
    // Guarded by both lengths: no select, no extra if (only the user's).
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"land": [{"lt": ["i", {"len": "a"}]}, {"lt": ["i", {"len": "b"}]}]}, "then": [
              {"store": "b", "index": "i", "value": {"load": "a", "index": "i"}}]}]"#,
        AB,
    );
    let d = debug(&p);
    assert_eq!(d.matches("Select").count(), 0, "{d}");
    assert_eq!(d.matches("If {").count(), 1, "{d}");
    // An atomic whose index is not proven: hoisted under a guard.
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"let": "old", "value": {"atomic": "add", "buffer": "b", "index": {"and": ["i", 7]}, "value": 1}}]"#,
        AB,
    );
    let d = debug(&p);
    assert!(d.contains("Assign") && d.contains("Atomic"), "{d}");
    // Nested in an expression it cannot be hoisted: refused, naming the node.
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"let": "old", "value": {"add": [1, {"atomic": "add", "buffer": "b", "index": "i", "value": 1}]}}]"#,
        AB,
    );
    let e = export(&p).unwrap_err();
    assert_eq!(e.node, "body[1]");
    assert!(e.to_string().contains("atomic inside an expression"), "{e}");
}

#[test]
fn a_guarded_store_still_runs_its_value_and_index_once_in_every_invocation() {
    // In our semantics a store out of range is dropped, but its value is still evaluated: an
    // atomic (proven in range by the `if`) or a subgroup operation in the value of a store
    // whose own index is not proven must run before the store's guard, not under it (the
    // guard would skip it, or leave lanes out of the subgroup operation).
    let rw = r#"{"name": "a", "binding": 0, "access": "read_write", "type": "u32"},
        {"name": "b", "binding": 1, "access": "read_write", "type": "u32"}"#;
    for value in [
        r#"{"atomic": "add", "buffer": "a", "index": "i", "value": 1}"#,
        r#"{"subgroup_reduce": "add", "value": "i"}"#,
    ] {
        let p = program(
            &format!(
                r#"[{{"let": "i", "value": {{"gid": "x"}}}},
                    {{"if": {{"lt": ["i", {{"len": "a"}}]}}, "then": [
                      {{"store": "b", "index": {{"mul": ["i", 2]}}, "value": {value}}}]}}]"#
            ),
            rw,
        );
        let d = debug(&p);
        let effect = if value.contains("atomic") {
            "Atomic"
        } else {
            "SubgroupReduce"
        };
        // The last `If` is the store's guard; the operation is bound before it.
        let guard = d.rfind("If {").expect("a guard");
        assert!(d[..guard].contains(effect), "{d}");
        assert!(!d[guard..].contains(effect), "{d}");
        assert!(d[..guard].contains("vs_value_body_1__then_0_"), "{d}");
    }
    // An index with an atomic is bound too: the guard reads it once more.
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "a"}]}, "then": [
              {"store": "b", "index": {"atomic": "add", "buffer": "a", "index": "i", "value": 1}, "value": 3}]}]"#,
        r#"{"name": "a", "binding": 0, "access": "read_write", "type": "u32"},
        {"name": "b", "binding": 1, "access": "read_write", "type": "u32"}"#,
    );
    let d = debug(&p);
    assert_eq!(d.matches("Atomic").count(), 1, "{d}");
    assert!(d.contains("vs_index_body_1__then_0_"), "{d}");
}

#[test]
fn division_shifts_and_early_return_keep_our_results() {
    // u32 division by a variable: select(d == 0, 0, a / d); by a nonzero literal: plain.
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "b"}]}, "then": [
              {"store": "b", "index": "i", "value": {"div": [100, "i"]}}]}]"#,
        AB,
    );
    assert_eq!(debug(&p).matches("Select").count(), 1);
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "b"}]}, "then": [
              {"store": "b", "index": "i", "value": {"div": ["i", 3]}}]}]"#,
        AB,
    );
    assert_eq!(debug(&p).matches("Select").count(), 0);
    // A shift by an amount not known below 32 gets the >= 32 -> 0 rule.
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "b"}]}, "then": [
              {"store": "b", "index": "i", "value": {"shl": [1, "i"]}},
              {"store": "b", "index": "i", "value": {"shl": [1, {"and": ["i", 31]}]}}]}]"#,
        AB,
    );
    assert_eq!(debug(&p).matches("Select").count(), 1);
    // `if c { return }` at the top level becomes `if !c { rest }`: no Return is left.
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"ge": ["i", {"len": "b"}]}, "then": [{"return": {}}]},
            {"store": "b", "index": "i", "value": 5}]"#,
        AB,
    );
    let d = debug(&p);
    assert!(!d.contains("Return"), "{d}");
    assert!(d.contains("LogicalNot"), "{d}");
    // ... and proves the store in range (no guard of its own).
    assert_eq!(d.matches("If {").count(), 1, "{d}");
}

#[test]
fn constructs_vyre_lacks_are_refused_with_node_and_reason() {
    let cases = [
        (
            r#"[{"let": "f", "value": 1.5}, {"let": "u", "value": {"bitcast": "u32", "value": "f"}}]"#,
            "body[1]",
            "bitcast f32 -> u32",
        ),
        (
            r#"[{"let": "n", "value": {"nwg": "x"}}]"#,
            "body[0]",
            "`nwg` builtin",
        ),
        (
            r#"[{"let": "w", "value": {"cast": "u64", "value": 3}}]"#,
            "body[0]",
            "u64",
        ),
    ];
    for (body, node, piece) in cases {
        let e = export(&program(body, AB)).unwrap_err();
        assert_eq!(e.node, node, "{e}");
        assert!(e.to_string().contains(piece), "{e}");
        assert!(e.to_string().contains("\n  Fix: "), "{e}");
    }
    // An invalid Program is refused before anything else.
    let e = export(&program(r#"[{"let": "x", "value": "nope"}]"#, AB)).unwrap_err();
    assert!(e.to_string().contains("invalid Program"), "{e}");
}

#[test]
fn compare_classes_and_figures() {
    for (op, class) in [
        ("ld.global.nc.f32", "ld_global"),
        ("ld.param.u64", "param"),
        ("ld.shared.u32", "ld_shared"),
        ("st.global.f32", "st_global"),
        ("st.shared.b32", "st_shared"),
        ("atom.global.add.u32", "atomic"),
        ("red.global.add.u32", "atomic"),
        ("fma.rn.f32", "arith"),
        ("setp.lt.u32", "arith"),
        ("bra.uni", "control"),
        ("bar.sync", "sync"),
        ("shfl.sync.idx.b32", "warp"),
        ("cvta.to.global.u64", "param"),
        ("wibble", "other"),
    ] {
        assert_eq!(ptx_diff::class(op), class, "{op}");
    }
    let ptx = ".visible .entry k(\n  .param .u64 p\n)\n{\n  .reg .pred %p<3>;\n  .reg .b32 %r<7>;\n  ld.param.u64 %rd1, [p];\n  @%p1 bra $L1;\n  ld.global.u32 %r1, [%rd1]; // load\n  add.s32 %r2, %r1, 1;\n$L1:\n  @!%p2 st.global.u32 [%rd1], %r2;\n  ret;\n}\n";
    let f = ptx_diff::figures(ptx);
    assert_eq!(f.registers.len(), 2);
    assert_eq!(f.virtual_registers, 10);
    let c = &f.counts;
    assert_eq!(
        (
            c.param,
            c.control,
            c.ld_global,
            c.arith,
            c.st_global,
            c.total
        ),
        (1, 2, 1, 1, 1, 6)
    );
    assert_eq!(f.lines, ptx.lines().count() as u32);
}

#[test]
fn compare_of_vadd_is_stable() {
    let f = root().join("fixtures/programs/vadd_f32.json");
    let p = vyrescope::ir::load_program(&f).unwrap();
    let ours = emit(&p, &EmitOptions::for_program(&p)).unwrap();
    let theirs = vyre_ptx(&export(&p).unwrap(), 90).unwrap();
    let c = ptx_diff::compare(&ours.ptx, &theirs.ptx);
    assert_eq!(c.ours.counts.st_global, 1);
    assert!(c.vyre.counts.ld_global >= 2, "{:?}", c.vyre.counts);
    assert!(c.diff.starts_with("--- vyrescope\n+++ vyre\n"));
    let text = format!("{}\n{}", ptx_diff::table(&c), c.diff);
    let snap = root().join("tests/snapshots/vyre/vadd_f32.compare.txt");
    support::snapshot::check(&snap, &text, "vyre compare of vadd_f32", "vyre_export")
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn params_words_follow_vyres_abi() {
    use vyrescope::inputs::HostBuffer;
    use vyrescope::ir::{Access, ElemType};
    let buf = |name: &str, binding: u32, n: usize| HostBuffer {
        name: name.into(),
        elem: ElemType::U32,
        access: Access::Read,
        binding,
        data: vec![0; n * 4],
    };
    let shape = vyrescope::shape::LaunchShape {
        workgroup_size: [128, 1, 1],
        grid: [10, 1, 1],
    };
    let w =
        vyrescope::harness::vyre_race::params_words(&[buf("a", 0, 7), buf("c", 3, 1000)], &shape);
    assert_eq!(w, vec![1280, 7, 0, 0, 1000]);
}

fn vyrescope_cli(args: &[&str]) -> (i32, Vec<u8>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn cli_export_emit_vyre_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let vadd = root().join("fixtures/programs/vadd_f32.json");
    let vadd = vadd.to_str().unwrap();
    let out = dir.path().join("vadd.vyre");
    let (code, _, err) = vyrescope_cli(&["export", "--vyre", vadd, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(&out).unwrap();
    let back = VProgram::from_wire(&bytes).unwrap();
    let p = vyrescope::ir::load_program(Path::new(vadd)).unwrap();
    assert!(back == export(&p).unwrap());
    let (code, text, err) = vyrescope_cli(&["export", "--vyre", "--text", vadd]);
    assert_eq!(code, 0, "{err}");
    let text = String::from_utf8(text).unwrap();
    assert!(VProgram::from_text(&text).unwrap() == back);
    // Binary to a terminal is refused; a refused Program names its node.
    let (code, _, err) = vyrescope_cli(&["export", "--vyre", vadd]);
    assert_eq!(code, 1);
    assert!(err.contains("Fix: pass -o"), "{err}");
    let ids = root().join("fixtures/programs/ids_3d.json");
    let (code, _, err) = vyrescope_cli(&["export", "--vyre", ids.to_str().unwrap(), "--text"]);
    assert_eq!(code, 1);
    assert!(err.contains("`body[0]`") && err.contains("nwg"), "{err}");
    // vyre's PTX and the comparison.
    let (code, ptx, err) = vyrescope_cli(&["emit", "--vyre", vadd, "--sm", "80"]);
    assert_eq!(code, 0, "{err}");
    let ptx = String::from_utf8(ptx).unwrap();
    assert!(
        ptx.contains(".entry main") && ptx.contains(".target sm_80"),
        "{ptx}"
    );
    let (code, json, err) = vyrescope_cli(&["emit", "--compare-vyre", vadd, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(v["ours"]["counts"]["total"].as_u64().unwrap() > 10);
    assert!(v["vyre"]["counts"]["total"].as_u64().unwrap() > 10);
    assert!(v["diff"].as_str().unwrap().contains("+++ vyre"));
    let (code, text, err) = vyrescope_cli(&["emit", "--compare-vyre", vadd]);
    assert_eq!(code, 0, "{err}");
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.starts_with("class ") && text.contains("registers (vyre):"),
        "{text}"
    );
    // vyre's refusal is an error with vyre's reason.
    let lr = root().join("fixtures/programs/loop_early_return.json");
    let (code, _, err) = vyrescope_cli(&["emit", "--vyre", lr.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("vyre's PTX (emit) failed"), "{err}");
}

#[test]
fn inspector_v_cycles_the_ptx_pane_through_vyre_views() {
    let vadd = root().join("fixtures/programs/vadd_f32.json");
    let screen = |keys: &str| {
        let (code, out, err) = vyrescope_cli(&[
            "tui",
            vadd.to_str().unwrap(),
            "--keys",
            keys,
            "--snapshot",
            "-",
            "--size",
            "140x30",
        ]);
        assert_eq!(code, 0, "{err}");
        String::from_utf8(out).unwrap()
    };
    let s = screen("v");
    assert!(
        s.contains("PTX · vyre's PTX") && s.contains(".entry main("),
        "{s}"
    );
    let s = screen("v v");
    assert!(
        s.contains("PTX · vyrescope vs vyre") && s.contains("ld.global"),
        "{s}"
    );
    let s = screen("v v v");
    assert!(s.contains("Generated by vyrescope"), "{s}");
    let s = screen("?");
    assert!(s.contains("PTX pane: ours/vyre/diff"), "{s}");
    // A Program vyre refuses shows vyre's reason in the pane.
    let lr = root().join("fixtures/programs/ids_3d.json");
    let (code, out, err) = vyrescope_cli(&[
        "tui",
        lr.to_str().unwrap(),
        "--keys",
        "v",
        "--snapshot",
        "-",
        "--size",
        "160x30",
    ]);
    assert_eq!(code, 0, "{err}");
    let s = String::from_utf8(out).unwrap();
    assert!(s.contains("no vyre PTX: cannot export"), "{s}");
}

#[test]
fn race_programs_export_and_vyres_ptx_assembles() {
    let bin = ptxas();
    for f in vyrescope::harness::vyre_race::VYRE_RACE_PROGRAMS {
        let p = vyrescope::ir::load_program(&root().join(f)).unwrap();
        assert!(p.run.is_some(), "{f}: the race needs a run section");
        let k = vyre_ptx(&export(&p).unwrap(), 90).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(!k.grid_sync, "{f}");
        assert_eq!(k.params.len(), p.host_buffers().len(), "{f}");
        if let Some(b) = &bin {
            assemble(b, &k.ptx, 90, false).unwrap_or_else(|e| panic!("{f}: {e}"));
        }
    }
}

/// JSON -> vyre -> JSON: every fixture vyre can express comes back through the import as a
/// Program that computes the same thing. The Programs are not equal node for node (the export
/// writes our bounds and division semantics out as guards, the import writes vyre's clamps
/// and early exit out; both documented in docs/vyre.md), so the check is on results: both run
/// on the reference interpreter with the fixture's own inputs (random data), every buffer
/// compared byte for byte.
#[test]
fn fixtures_round_trip_through_vyre_with_the_same_results() {
    let mut checked = 0;
    for (name, original, v) in exported() {
        let mut back = crate::support::vyre::import_clean(&v, &name, &name);
        back.run = original.run.clone();
        let base = root().join("fixtures/programs");
        let run = |p: &vyrescope::ir::Program| {
            let mut prepared = vyrescope::inputs::prepare(p, &base, None, None)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            vyrescope::interp::run_with(
                p,
                &prepared.shape,
                &mut prepared.buffers,
                &vyrescope::interp::Options::default(),
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
            let mut bufs: Vec<(String, Vec<u8>)> = prepared
                .buffers
                .into_iter()
                .map(|b| (b.name, b.data))
                .collect();
            bufs.sort();
            bufs
        };
        let (want, got) = (run(&original), run(&back));
        assert_eq!(
            want.iter().map(|b| &b.0).collect::<Vec<_>>(),
            got.iter().map(|b| &b.0).collect::<Vec<_>>(),
            "{name}: buffers"
        );
        for ((buf, w), (_, g)) in want.iter().zip(&got) {
            assert!(w.iter().any(|&x| x != 0) || g.iter().any(|&x| x != 0) || w.is_empty());
            assert!(
                w == g,
                "{name}: buffer `{buf}` differs after JSON -> vyre -> JSON"
            );
        }
        checked += 1;
    }
    assert!(checked >= 13, "{checked} fixtures round-tripped");
}

/// `addsat subsat mulsat` on `u32` are vyre's `SaturatingAdd/Sub/Mul` and come back as they
/// were; on `i32` vyre's validator refuses them (V085), so the export does.
#[test]
fn saturating_operators_export_on_u32_and_are_refused_on_i32() {
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "o"}]}, "then": [
              {"let": "x", "value": {"load": "o", "index": "i"}},
              {"store": "o", "index": "i", "value": {"mulsat": [{"subsat": [{"addsat": ["x", 7]}, 3]}, "x"]}}]}]"#,
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
    );
    let v = export(&p).unwrap();
    let text = format!("{:?}", v.entry());
    for op in ["SaturatingAdd", "SaturatingSub", "SaturatingMul"] {
        assert!(text.contains(op), "{op} missing: {text}");
    }
    let back = vyrescope::vyre::import_program(&v, "back");
    let printed = vyrescope::ir::print::print_program(&back.program).text();
    for op in ["addsat(", "subsat(", "mulsat("] {
        assert!(printed.contains(op), "{op} missing:\n{printed}");
    }
    let q = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "o"}]}, "then": [
              {"store": "o", "index": "i", "value": {"addsat": [{"load": "o", "index": "i"}, {"i32": 1}]}}]}]"#,
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "i32"}"#,
    );
    let e = export(&q).unwrap_err();
    assert!(
        e.construct.contains("addsat") && e.why.contains("V085"),
        "{e:?}"
    );
    assert_eq!(e.node, "body[1].then[0]");
}
