//! vyre's plan run as a form of the pipeline (`run GRAPH --both`, feature `vyre`): for the
//! hand-built graphs of `vyre_graph.rs` and the bundled fixtures, each vyre fusion group's
//! Program (vyre's `merge_programs_shared` of the group's nodes) imports, binds to the
//! pipeline's buffers and, run on the reference interpreter group by group, gives what the
//! steps give one by one (the same comparison as every GPU form); a group whose fused buffer
//! stands for two graph values is refused with the reason; vyre's own target compile is
//! reported (ok for one group, `MKC017` for several, vyre's binding error for buffer names
//! that differ from value names); the command prints three verified rows without times on
//! the CPU, and bad input is a clean error.

use std::path::{Path, PathBuf};

use vyrescope::harness::pipeline::{check_on_reference, expected, pipeline_tolerance};
use vyrescope::inputs::pipeline::{pipeline_shapes, prepare_pipeline};
use vyrescope::megakernel::launch::separate_launches;
use vyrescope::vyre::fused::{open, vyre_form, VyreForm};
use vyrescope::vyre::import::graph::ImportedGraph;
use vyrescope::vyre::plan::{compile_graph, Budget, PlanSource};

use crate::support::cli;
use crate::vyre_graph::{
    artifact_bytes, broadcast_chain, chain, converted, graphs, named_chain, named_chain_sized,
    retained, u32s,
};
use vyre_foundation::ir::ProgramGraph;

/// x -> `double` (workgroup 64) -> y -> `inc` (workgroup 256) -> out, buffers named after the
/// values: vyre plans two groups (MKL005, workgroup mismatch), both of which bind, so its
/// target compile gets as far as forming the payload (the bundled `named_mixed.vgr`).
fn named_mixed() -> ProgramGraph {
    named_chain_sized(64)
}

#[test]
fn bundled_named_mixed_is_what_the_builder_writes() {
    crate::support::snapshot::check_bytes(
        &fixture("named_mixed.vgr"),
        &named_mixed().to_wire().unwrap(),
        "what vyre's graph builder writes",
        "--features vyre --test suite vyre_both::",
    )
    .unwrap();
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/vyre/graphs")
        .join(name)
}

/// The graph's pipeline and its vyre form (vyre's plan computed now, PTX for sm_90).
fn form_of(g: vyre_foundation::ir::ProgramGraph, name: &str) -> (ImportedGraph, VyreForm) {
    let imported = converted(&g, name);
    let (artifact, request) =
        compile_graph(g, Budget::default(), name).unwrap_or_else(|e| panic!("{name}: {e:?}"));
    let form = vyre_form(
        &artifact,
        request.graph(),
        &imported,
        PlanSource::Computed,
        90,
    );
    (imported, form)
}

/// The vyre form run group by group on the interpreter against the steps one by one.
fn check_form(
    imported: &ImportedGraph,
    form: &VyreForm,
    what: &str,
) -> vyrescope::runtime::parity::ParityReport {
    let p = &imported.pipeline;
    let prepared = prepare_pipeline(p, Path::new(".")).unwrap();
    let want = expected(p, &prepared, u64::MAX >> 8).unwrap();
    let vp = form
        .pipeline
        .as_ref()
        .unwrap_or_else(|| panic!("{what}: refused: {:?}", form.refused));
    let shapes = pipeline_shapes(vp, Path::new(".")).unwrap();
    let launches = separate_launches(vp, &shapes).unwrap();
    assert_eq!(
        launches.len(),
        form.groups.len(),
        "{what}: one launch per group"
    );
    check_on_reference(
        &launches,
        &prepared,
        &want,
        pipeline_tolerance(p),
        u64::MAX >> 8,
    )
    .unwrap()
}

#[test]
fn each_vyre_group_runs_as_one_launch_and_equals_the_steps_one_by_one() {
    // (graph, vyre's groups, the form binds)
    let cases: &[(&str, usize, bool)] = &[
        ("chain", 1, false),
        ("named_chain", 1, true),
        ("diamond", 1, false),
        ("barrier_consumer", 2, true),
        ("mixed_workgroups", 3, true),
        ("retained", 3, true),
    ];
    for (name, g, model) in graphs() {
        let &(_, groups, binds) = cases.iter().find(|c| c.0 == name).unwrap();
        let (imported, form) = form_of(g, name);
        assert_eq!(form.groups.len(), groups, "{name}: {:?}", form.groups);
        if !binds {
            let why = form.refused.as_deref().unwrap_or_else(|| panic!("{name}"));
            assert!(
                why.contains(" values (`") && why.contains("merge joins"),
                "{name}: {why}"
            );
            assert!(form.pipeline.is_none());
            continue;
        }
        assert!(form.refused.is_none(), "{name}: {:?}", form.refused);
        let parity = check_form(&imported, &form, name);
        assert!(
            parity.passed && parity.compared >= 1000,
            "{name}: {parity:?}"
        );
        // The form's final `out` is also the host model's, from random inputs.
        let vp = form.pipeline.as_ref().unwrap();
        let init = prepare_pipeline(vp, Path::new(".")).unwrap();
        let mut done = init.clone();
        let shapes = pipeline_shapes(vp, Path::new(".")).unwrap();
        let mut bufs = vyrescope::harness::pipeline::host_buffers(&done);
        vyrescope::harness::pipeline::launches_on_reference(
            &separate_launches(vp, &shapes).unwrap(),
            &mut bufs,
            u64::MAX >> 8,
        )
        .unwrap();
        for (d, b) in done.buffers.iter_mut().zip(bufs) {
            d.data = b.data;
        }
        let x = u32s(&init, "x");
        assert!(
            x.iter().filter(|&&v| v != 0).count() > x.len() / 2,
            "{name}"
        );
        assert_eq!(
            u32s(&done, "out"),
            model(&|b| u32s(&init, b)),
            "{name}: out"
        );
        for gr in &form.groups {
            // vyre's target stops at the first group whose buffers are named unlike their
            // values; only named_chain's group reaches vyre's emitter through it.
            let want = if name == "named_chain" {
                "vyre_target"
            } else {
                "import_rule"
            };
            assert_eq!(gr.dispatch, want, "{name}: {gr:?}");
            let out = imported.pipeline.buffer("out").unwrap().contents.len;
            assert_eq!(Some(gr.elements), out, "{name}: {gr:?}");
            assert!(gr.ptx_lines.is_some_and(|n| n > 10), "{name}: {gr:?}");
        }
    }
}

#[test]
fn named_chain_is_one_kernel_with_vyres_grid_sync_and_a_target_compile_that_succeeds() {
    let (imported, form) = form_of(named_chain(), "named_chain");
    let g = &form.groups[0];
    assert_eq!(g.member_names, ["double", "inc"]);
    assert_eq!(g.barriers, ["double -> inc: grid_sync"]);
    assert_eq!(g.elements, 1000);
    // vyre's GridSync is in the imported Program, as a grid barrier.
    let program = g.program.as_ref().unwrap();
    let text = vyrescope::ir::print::print_program(program).text();
    assert!(text.contains("barrier(grid)"), "{text}");
    let mut bind = g.bind.clone();
    bind.sort();
    assert_eq!(
        bind,
        [
            ("out".to_string(), "out".to_string()),
            ("x".into(), "x".into()),
            ("y".into(), "y".into())
        ]
    );
    assert!(form.target.ok, "{:?}", form.target);
    assert_eq!(form.target.entry_points, ["main"]);
    assert!(check_form(&imported, &form, "named_chain").passed);
}

#[test]
fn vyres_target_compile_fails_with_mkc017_for_several_groups_and_on_renamed_buffers() {
    let (imported, form) = form_of(named_mixed(), "named_mixed");
    assert_eq!(form.groups.len(), 2, "{:?}", form.groups);
    let t = &form.target;
    assert!(!t.ok);
    assert_eq!(
        t.code.as_deref(),
        Some("MKC017_MALFORMED_TARGET_PAYLOAD"),
        "{t:?}"
    );
    let m = t.message.as_deref().unwrap();
    assert!(m.contains("duplicate target entry name main"), "{m}");
    assert!(t.text().starts_with("failed: [MKC017"), "{}", t.text());
    // vyre lowered and emitted both groups before refusing the payload, so both dispatch
    // vyre's own element count; the vyre form runs all the same (the verdict is a fact about
    // vyre's target, not ours).
    for g in &form.groups {
        assert_eq!(
            (g.dispatch.as_str(), g.elements),
            ("vyre_target", 1000),
            "{g:?}"
        );
    }
    assert!(check_form(&imported, &form, "named_mixed").passed);
    // Program buffers named unlike their values: vyre's binding fails first.
    for (g, name, buffer) in [(chain(), "chain", "dst"), (retained(), "retained", "acc")] {
        let (_, form) = form_of(g, name);
        let t = &form.target;
        assert_eq!(t.code.as_deref(), Some("InvalidArtifact"), "{name}: {t:?}");
        let m = t.message.as_deref().unwrap();
        assert!(
            m.contains(&format!(
                "binding `{buffer}` has no canonical artifact resource"
            )),
            "{name}: {m}"
        );
    }
}

#[test]
fn a_vyre_form_run_out_of_order_is_caught_by_the_comparison() {
    let (imported, mut form) = form_of(retained(), "retained");
    let p = form.pipeline.as_mut().unwrap();
    p.steps.reverse();
    let parity = check_form(&imported, &form, "retained reversed");
    assert!(!parity.passed && parity.mismatches > 0, "{parity:?}");
    assert_eq!(parity.first[0].buffer, "out");
}

#[test]
fn a_uniform_store_fused_with_vyres_workgroup_barrier_still_equals_the_steps() {
    let (imported, form) = form_of(broadcast_chain(), "broadcast_chain");
    assert_eq!(form.groups[0].barriers, ["first -> spread: seq_cst"]);
    assert!(check_form(&imported, &form, "broadcast_chain").passed);
}

#[test]
fn an_artifact_file_runs_its_recorded_plan() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("named_mixed.vmk");
    let bytes = artifact_bytes(named_mixed());
    std::fs::write(&path, &bytes).unwrap();
    let (imported, form) = open(&path, &bytes, Budget::default(), 90).unwrap();
    assert_eq!(form.source, PlanSource::Artifact);
    assert_eq!(form.groups.len(), 2);
    assert_eq!(
        form.target.code.as_deref(),
        Some("MKC017_MALFORMED_TARGET_PAYLOAD")
    );
    assert!(check_form(&imported, &form, "named_mixed.vmk").passed);
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn run_both_prints_three_verified_rows_and_says_times_were_not_measured() {
    vyrescope::vyre::install();
    let file = fixture("named_chain.vgr");
    let f = file.to_str().unwrap();
    let (code, out, err) = cli::run(&["run", f, "--both"]);
    assert_eq!(code, 0, "{out}{err}");
    for form in ["separate ", "vyrescope ", "vyre "] {
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with(form))
            .unwrap_or_else(|| panic!("no {form} row: {out}"));
        assert!(
            line.contains("verified") && line.contains("time not measured"),
            "{line}"
        );
    }
    assert!(out.contains("times not measured"), "{out}");
    assert!(out.contains("vyre target compile"), "{out}");
    let (code, out, err) = cli::run(&["run", f, "--both", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    assert_eq!(v["times_measured"], false);
    assert!(v["times_note"].as_str().unwrap().contains("not measured"));
    let forms = v["forms"].as_array().unwrap();
    let names: Vec<&str> = forms.iter().map(|r| r["form"].as_str().unwrap()).collect();
    assert_eq!(names, ["separate", "vyrescope", "vyre"]);
    let launches: Vec<u64> = forms
        .iter()
        .map(|r| r["launches"].as_u64().unwrap())
        .collect();
    assert_eq!(launches, [2, 1, 1]);
    for r in forms {
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["device_ms"].is_null(), "{r}");
        assert!(r["parity"]["compared"].as_u64().unwrap() >= 1000, "{r}");
    }
    assert_eq!(v["vyre_target"]["ok"], true);
    assert_eq!(
        v["vyre_plan"]["groups"][0]["barriers"][0],
        "double -> inc: grid_sync"
    );
}

#[test]
fn run_both_reports_vyres_refusals_as_facts_and_still_verifies_the_other_forms() {
    vyrescope::vyre::install();
    // The bundled chain: vyre's fused buffer `dst` is both `y` and `out`.
    let f = fixture("chain.vgr");
    let (code, out, err) = cli::run(&["run", f.to_str().unwrap(), "--both", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    let forms = v["forms"].as_array().unwrap();
    assert_eq!(forms[0]["verified"], true);
    assert_eq!(forms[1]["verified"], true);
    assert_eq!(forms[2]["launches"], 0);
    assert!(
        forms[2]["refused"]
            .as_str()
            .unwrap()
            .contains("`dst` carries 2 values"),
        "{}",
        forms[2]
    );
    assert_eq!(v["vyre_target"]["code"], "InvalidArtifact");
    // A multi-group artifact: MKC017 from vyre's target, all three forms verified.
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("named_mixed.vmk");
    std::fs::write(&path, artifact_bytes(named_mixed())).unwrap();
    let (code, out, err) = cli::run(&["run", path.to_str().unwrap(), "--both"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("failed: [MKC017_MALFORMED_TARGET_PAYLOAD]")
            && out.contains("duplicate target entry name main"),
        "{out}"
    );
    assert!(out.contains("recorded in the artifact"), "{out}");
    assert_eq!(out.matches("verified").count(), 3, "{out}");
}

#[test]
fn bad_input_to_run_both_is_a_clean_error() {
    vyrescope::vyre::install();
    let t = tempfile::tempdir().unwrap();
    // A graph vyre refuses to plan: a symbolic dimension nobody binds (vyre's MKC002).
    let mut g = vyre_foundation::ir::ProgramGraph::new();
    let c = vyre_foundation::ir::ValueContract {
        dtype: vyre_foundation::ir::DataType::U32,
        shape: vec![vyre_foundation::ir::ShapeDim::Symbol("n".into())],
        access: vyre_foundation::ir::BufferAccess::ReadOnly,
        lifetime: vyre_foundation::ir::ValueLifetime::Invocation,
    };
    g.add_external_value("x", c).unwrap();
    let bytes = g.to_wire().unwrap();
    let path = t.path().join("symbolic.vgr");
    std::fs::write(&path, &bytes).unwrap();
    let e = open(&path, &bytes, Budget::default(), 90).unwrap_err();
    assert!(e.message.contains("MKC0"), "{e:?}");
    assert!(!e.fix.is_empty(), "{e:?}");
    // A zero budget is refused before vyre runs.
    let good = std::fs::read(fixture("named_chain.vgr")).unwrap();
    let zero = Budget {
        max_candidates: 0,
        max_cpu_work: 1,
    };
    let e = open(&fixture("named_chain.vgr"), &good, zero, 90).unwrap_err();
    assert!(e.message.contains("positive search budget"), "{e:?}");
    // Truncated bytes and the symbolic graph through the command.
    let cut = t.path().join("cut.vgr");
    std::fs::write(&cut, &good[..good.len() / 2]).unwrap();
    for p in [&cut, &path] {
        let (code, out, err) = cli::run(&["run", p.to_str().unwrap(), "--both"]);
        assert_eq!(code, 1, "{out}{err}");
        assert!(err.contains("Fix:") && !err.contains("panicked"), "{err}");
    }
    // Options that keep one form's contents do not apply to three.
    let dump = t.path().join("dump");
    let named = fixture("named_chain.vgr");
    let (code, out, err) = cli::run(&[
        "run",
        named.to_str().unwrap(),
        "--both",
        "--dump",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("--dump") && err.contains("Fix:"), "{err}");
    assert!(!dump.exists(), "nothing is written before the refusal");
    // `--backend cuda` without a GPU: the runtime's one clear error, never a panic.
    let f = fixture("named_chain.vgr");
    let (code, out, err) = cli::run(&["run", f.to_str().unwrap(), "--both", "--backend", "cuda"]);
    assert!(!err.contains("panicked"), "{err}");
    if err.starts_with("error: no CUDA driver found") {
        assert_eq!(code, 1);
        assert!(err.contains("  Fix: "), "{err}");
    } else {
        // A GPU machine: the three forms ran and were timed.
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("median"), "{out}");
    }
}
