//! vyre's own ProgramGraphs as bundled fixtures (feature `vyre`): vyre-libs' dense gated MLP
//! block (`vyre_libs::nn::model::dense_gated_mlp_graph`, called as it is) at a small and a
//! GPU-timing size, and the graphs of vyre-megakernel 0.7.2's tests, rebuilt here through the
//! public ProgramGraph API (those tests build them inline). Each fixture is the graph's
//! `ProgramGraph::to_wire` bytes (`VYRESCOPE_BLESS=1` rewrites them); each opens as a
//! pipeline that plans, and its reference run gives what the nodes compute on the host.

use std::path::{Path, PathBuf};

use vyre_foundation::ir::{
    BufferAccess as VA, BufferDecl as VB, DataType as DT, Expr as E, GraphInput, GraphOutput,
    Node as N, Program as VP, ProgramGraph, ShapeDim, ValueContract, ValueLifetime as L,
};
use vyre_libs::nn::model::{dense_gated_mlp_graph, DenseGatedMlpSpec};

use vyrescope::inputs::pipeline::{prepare_pipeline, PreparedPipeline};
use vyrescope::interp::{self, pipeline::run_pipeline};

use crate::support::cli;
use crate::vyre_graph::{converted, u32s};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/vyre/graphs")
        .join(format!("{name}.vgr"))
}

/// The MLP block's sizes: (batch, sequence, hidden, intermediate).
fn mlp(batch: u32, sequence: u32, hidden_dim: u32, intermediate_dim: u32) -> ProgramGraph {
    dense_gated_mlp_graph(&DenseGatedMlpSpec {
        batch,
        sequence,
        hidden_dim,
        intermediate_dim,
        norm_eps: 1e-5,
        dtype: DT::F32,
    })
    .expect("vyre-libs builds the dense gated MLP")
}

/// Small: 2 x 4 token rows, hidden 32, intermediate 64 (256 hidden elements, 2048 weights per
/// projection): the reference interpreter checks it in well under a second.
pub(crate) const MLP_SMALL: (u32, u32, u32, u32) = (2, 4, 32, 64);
/// For GPU timing: 1 x 64 token rows, hidden 512, intermediate 1024 (32768 hidden and 65536
/// intermediate elements, 2^19 weights per projection, about 1.2 x 10^8 multiply-adds: `run
/// --both` checks it on the interpreter in about 11 s).
pub(crate) const MLP_LARGE: (u32, u32, u32, u32) = (1, 64, 512, 1024);

fn u32_contract(n: u32, access: VA, lifetime: L) -> ValueContract {
    ValueContract {
        dtype: DT::U32,
        shape: vec![ShapeDim::Known(n.into())],
        access,
        lifetime,
    }
}

/// The elements of the megakernel-test graphs: large enough to time on a GPU (2^20), small
/// enough for the interpreter (one or two operations per element and node).
pub(crate) const MK_ELEMENTS: u32 = 1 << 20;
const MK_WG: u32 = 32;

fn guarded(out: &str, value: E) -> Vec<N> {
    vec![
        N::let_bind("i", E::gid_x()),
        N::if_then(
            E::lt(E::var("i"), E::buf_len(out)),
            vec![N::store(out, E::var("i"), value)],
        ),
    ]
}

/// `dst[i] = src[i]`, both buffers read-write storage as in vyre's tests, optionally after a
/// workgroup barrier.
fn copy(src: &str, dst: &str, n: u32, wg: u32, barrier: bool) -> VP {
    let mut body = Vec::new();
    if barrier {
        body.push(N::barrier());
    }
    body.extend(guarded(dst, E::load(src, E::var("i"))));
    VP::wrapped(
        vec![
            VB::storage(src, 0, VA::ReadWrite, DT::U32).with_count(n),
            VB::storage(dst, 1, VA::ReadWrite, DT::U32).with_count(n),
        ],
        [wg, 1, 1],
        body,
    )
}

fn port(buffer: &str, value: vyre_foundation::ir::GraphValueId, c: ValueContract) -> GraphInput {
    GraphInput {
        buffer: buffer.into(),
        value,
        contract: c,
    }
}

fn out_port(name: &str, c: ValueContract) -> GraphOutput {
    GraphOutput {
        buffer: name.into(),
        name: name.into(),
        contract: c,
        retained_successor_of: None,
    }
}

/// The shape of vyre-megakernel 0.7.2 `tests/artifact_contract.rs` `whole_graph`: `zeta` adds
/// an invocation input and a constant into `intermediate`; `alpha` writes it into the retained
/// `retained`, whose successor is `retained.next`; `omega` copies that into the output
/// `result`. vyre's test uses a symbolic `items` dimension and touches element 0; here every
/// value has `n` elements and every node works on all of them (buffers named as their values,
/// so vyre's target compile can bind them).
pub(crate) fn mk_whole(n: u32) -> ProgramGraph {
    let inv = |a| u32_contract(n, a, L::Invocation);
    let kept = || u32_contract(n, VA::ReadWrite, L::Retained);
    let constant = u32_contract(n, VA::ReadOnly, L::Constant);
    let mut g = ProgramGraph::new();
    let input = g.add_external_value("input", inv(VA::ReadOnly)).unwrap();
    let k = g.add_external_value("constant", constant.clone()).unwrap();
    let retained = g.add_external_value("retained", kept()).unwrap();
    let add = VP::wrapped(
        vec![
            VB::storage("input", 0, VA::ReadOnly, DT::U32).with_count(n),
            VB::storage("constant", 1, VA::ReadOnly, DT::U32).with_count(n),
            VB::storage("intermediate", 2, VA::ReadWrite, DT::U32).with_count(n),
        ],
        [MK_WG, 1, 1],
        guarded(
            "intermediate",
            E::add(
                E::load("input", E::var("i")),
                E::load("constant", E::var("i")),
            ),
        ),
    );
    let (_, mid) = g
        .add_node(
            "zeta",
            add,
            vec![
                port("input", input, inv(VA::ReadOnly)),
                port("constant", k, constant),
            ],
            vec![out_port("intermediate", inv(VA::ReadWrite))],
        )
        .unwrap();
    let (_, next) = g
        .add_node(
            "alpha",
            copy("intermediate", "retained", n, MK_WG, false),
            vec![
                port("intermediate", mid[0], inv(VA::ReadWrite)),
                port("retained", retained, kept()),
            ],
            vec![GraphOutput {
                buffer: "retained".into(),
                name: "retained.next".into(),
                contract: kept(),
                retained_successor_of: Some(retained),
            }],
        )
        .unwrap();
    g.add_node(
        "omega",
        copy("retained.next", "result", n, MK_WG, false),
        vec![port("retained.next", next[0], kept())],
        vec![out_port(
            "result",
            u32_contract(n, VA::ReadWrite, L::Output),
        )],
    )
    .unwrap();
    g
}

/// The shape of vyre-megakernel 0.7.2 `tests/artifact_contract.rs` `fusion_pair_graph`: a
/// `producer` copying `input` into `intermediate` (with a workgroup barrier first when
/// `barrier`) and a `consumer` copying that into the output `output`, with the given workgroup
/// widths. vyre's tests use (32, 64, no barrier), rejected for MKL005 (workgroup mismatch), and
/// (32, 32, barrier), rejected for MKL006 (synchronization boundary).
pub(crate) fn mk_pair(n: u32, producer_wg: u32, consumer_wg: u32, barrier: bool) -> ProgramGraph {
    let inv = || u32_contract(n, VA::ReadWrite, L::Invocation);
    let mut g = ProgramGraph::new();
    let input = g.add_external_value("input", inv()).unwrap();
    let (_, mid) = g
        .add_node(
            "producer",
            copy("input", "intermediate", n, producer_wg, barrier),
            vec![port("input", input, inv())],
            vec![out_port("intermediate", inv())],
        )
        .unwrap();
    g.add_node(
        "consumer",
        copy("intermediate", "output", n, consumer_wg, false),
        vec![port("intermediate", mid[0], inv())],
        vec![out_port(
            "output",
            u32_contract(n, VA::ReadWrite, L::Output),
        )],
    )
    .unwrap();
    g
}

/// The bundled upstream graphs, by fixture name.
pub(crate) fn upstream_graphs() -> Vec<(&'static str, ProgramGraph)> {
    let (b, s, h, i) = MLP_SMALL;
    let (lb, ls, lh, li) = MLP_LARGE;
    vec![
        ("dense_gated_mlp", mlp(b, s, h, i)),
        ("dense_gated_mlp_large", mlp(lb, ls, lh, li)),
        ("mk_whole", mk_whole(MK_ELEMENTS)),
        ("mk_pair_workgroups", mk_pair(MK_ELEMENTS, 32, 64, false)),
        ("mk_pair_barrier", mk_pair(MK_ELEMENTS, 32, 32, true)),
    ]
}

#[test]
fn bundled_upstream_graphs_are_what_vyre_writes() {
    let mut failures = Vec::new();
    for (name, g) in upstream_graphs() {
        let bytes = g.to_wire().unwrap();
        assert!(bytes.starts_with(b"VGR0"), "{name}");
        if let Err(e) = crate::support::snapshot::check_bytes(
            &fixture(name),
            &bytes,
            "what vyre's graph API writes",
            "--features vyre --test suite vyre_upstream_graphs::",
        ) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn f32s(pp: &PreparedPipeline, name: &str) -> Vec<f32> {
    u32s(pp, name).into_iter().map(f32::from_bits).collect()
}

/// The reference run of the graph's pipeline: (initial, final) buffers.
fn reference(g: &ProgramGraph, name: &str) -> (PreparedPipeline, PreparedPipeline) {
    let p = converted(g, name).pipeline;
    let init = prepare_pipeline(&p, Path::new(".")).unwrap();
    let mut done = init.clone();
    run_pipeline(&p, &mut done, &interp::Options::default()).unwrap();
    (init, done)
}

/// The MLP block on the host in f64: RMSNorm with a learned weight, gate and up projections
/// (weights `[intermediate, hidden]`), `silu(gate) * up`, the down projection (weights
/// `[hidden, intermediate]`) and the residual.
fn mlp_model(b: &dyn Fn(&str) -> Vec<f32>, rows: usize, h: usize, i: usize) -> Vec<f64> {
    let x = b("residual");
    let nw = b("post_attention_layernorm_weight");
    let (wg, wu, wd) = (
        b("mlp_gate_proj_weight"),
        b("mlp_up_proj_weight"),
        b("mlp_down_proj_weight"),
    );
    let f = |v: f32| f64::from(v);
    let mut out = Vec::with_capacity(rows * h);
    for r in 0..rows {
        let row = &x[r * h..(r + 1) * h];
        let ms = row.iter().map(|&v| f(v) * f(v)).sum::<f64>() / h as f64;
        let scale = 1.0 / (ms + 1e-5).sqrt();
        let normed: Vec<f64> = (0..h).map(|k| f(row[k]) * scale * f(nw[k])).collect();
        let proj = |w: &[f32], c: usize| (0..h).map(|k| normed[k] * f(w[c * h + k])).sum::<f64>();
        let act: Vec<f64> = (0..i)
            .map(|c| {
                let (g, u) = (proj(&wg, c), proj(&wu, c));
                g * u / (1.0 + (-g).exp())
            })
            .collect();
        for c in 0..h {
            let down = (0..i).map(|k| act[k] * f(wd[c * i + k])).sum::<f64>();
            out.push(f(row[c]) + down);
        }
    }
    out
}

#[test]
fn the_mlp_block_computes_rmsnorm_swiglu_and_the_residual_on_the_reference() {
    let (bt, s, h, i) = MLP_SMALL;
    let g = mlp(bt, s, h, i);
    let imported = converted(&g, "dense_gated_mlp");
    let names: Vec<&str> = imported.node_names.iter().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "mlp.norm",
            "mlp.gate_proj",
            "mlp.up_proj",
            "mlp.swiglu",
            "mlp.down_proj",
            "mlp.residual"
        ]
    );
    let (init, done) = reference(&g, "dense_gated_mlp");
    let x = f32s(&init, "residual");
    assert!(
        x.iter().filter(|v| **v != 0.0).count() > x.len() / 2,
        "random input"
    );
    let (h, i) = (h as usize, i as usize);
    let want = mlp_model(&|n| f32s(&init, n), (bt * s) as usize, h, i);
    let got = f32s(&done, "mlp_block_output");
    assert_eq!(got.len(), want.len());
    let mut worst = 0f64;
    for (k, (&a, &w)) in got.iter().zip(&want).enumerate() {
        assert!(a.is_finite(), "element {k}: {a}");
        let err = (f64::from(a) - w).abs() / w.abs().max(1.0);
        worst = worst.max(err);
        assert!(err < 1e-3, "element {k}: reference {a}, host {w}");
    }
    // The block changes the residual: the branch is not all zeros.
    let moved = got.iter().zip(&x).filter(|(a, b)| a != b).count();
    assert!(
        moved > got.len() / 2,
        "{moved} of {} moved, worst {worst}",
        got.len()
    );
}

#[test]
fn the_megakernel_test_graphs_compute_what_their_nodes_say() {
    let n = 4096;
    let (init, done) = reference(&mk_whole(n), "mk_whole");
    let (a, k) = (u32s(&init, "input"), u32s(&init, "constant"));
    assert!(a.iter().filter(|v| **v != 0).count() > a.len() / 2);
    let sum: Vec<u32> = a.iter().zip(&k).map(|(x, y)| x.wrapping_add(*y)).collect();
    assert_eq!(u32s(&done, "result"), sum);
    assert_eq!(
        u32s(&done, "retained"),
        sum,
        "alpha writes the retained value"
    );
    for (wp, wc, barrier) in [(32, 64, false), (32, 32, true)] {
        let (init, done) = reference(&mk_pair(n, wp, wc, barrier), "mk_pair");
        assert_eq!(
            u32s(&done, "output"),
            u32s(&init, "input"),
            "{wp} {wc} {barrier}"
        );
    }
}

/// The command's JSON, run with a private HOME (the plan cache stays out of the machine's).
fn json(args: &[&str], home: &Path) -> serde_json::Value {
    let (code, out, err) = cli::output(cli::command().args(args).env("HOME", home));
    assert_eq!(code, 0, "{args:?}: {out}{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Each bundled upstream graph through the commands: `check` is clean, `plan --vyre` gives
/// vyre's groups and pruned edges beside our plan, and `run --both` verifies separate launches
/// and our plan (as the cost model decides, and with `--decide fuse` one launch) against the
/// reference, and vyre's plan where its merged kernels can stand for
/// the graph (the MLP's cannot: vyre-libs names every projection's buffers `input`, `weight`,
/// `output`, and vyre's merge joins buffers by name).
#[test]
fn upstream_graphs_check_plan_and_run_in_three_forms() {
    vyrescope::vyre::install();
    // (fixture, vyre's groups by node name, vyre's pruned edges, vyre form runs, target code)
    type Case = (
        &'static str,
        &'static [&'static [&'static str]],
        &'static [&'static str],
        bool,
        &'static str,
    );
    let cases: &[Case] = &[
        (
            "dense_gated_mlp",
            &[
                &["mlp.norm"],
                &[
                    "mlp.gate_proj",
                    "mlp.up_proj",
                    "mlp.swiglu",
                    "mlp.down_proj",
                    "mlp.residual",
                ],
            ],
            &["MKL004_MULTIPLE_CONSUMERS"],
            false,
            "InvalidArtifact",
        ),
        (
            "mk_whole",
            &[&["zeta", "alpha"], &["omega"]],
            &["MKL003_LIFECYCLE_BOUNDARY"],
            true,
            "MKC017_MALFORMED_TARGET_PAYLOAD",
        ),
        (
            "mk_pair_workgroups",
            &[&["producer"], &["consumer"]],
            &["MKL005_WORKGROUP_MISMATCH"],
            true,
            "MKC017_MALFORMED_TARGET_PAYLOAD",
        ),
        (
            "mk_pair_barrier",
            &[&["producer"], &["consumer"]],
            &["MKL006_SYNCHRONIZATION_BOUNDARY"],
            true,
            "MKC017_MALFORMED_TARGET_PAYLOAD",
        ),
    ];
    let home = tempfile::tempdir().unwrap();
    let json = |args: &[&str]| json(args, home.path());
    for &(name, groups, pruned, vyre_runs, target) in cases {
        let path = fixture(name);
        let f = path.to_str().unwrap();
        let (code, out, err) = cli::run(&["check", f]);
        assert_eq!(code, 0, "{name}: {out}{err}");
        let plan = json(&["plan", f, "--vyre", "--json"]);
        let codes: Vec<&str> = plan["vyre"]["pruned"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["code"].as_str().unwrap())
            .collect();
        for c in pruned {
            assert!(codes.contains(c), "{name}: {codes:?}");
        }
        assert!(
            plan["vyrescope"]["groups"]
                .as_array()
                .is_some_and(|g| !g.is_empty()),
            "{name}"
        );
        let r = json(&["run", f, "--both", "--json"]);
        let got: Vec<Vec<&str>> = r["vyre_plan"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                g["member_names"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|m| m.as_str().unwrap())
                    .collect()
            })
            .collect();
        assert_eq!(got, groups, "{name}");
        let forms = r["forms"].as_array().unwrap();
        assert_eq!(forms[0]["form"], "separate");
        assert_eq!(
            forms[0]["launches"].as_u64(),
            Some(groups.iter().map(|g| g.len() as u64).sum())
        );
        for form in &forms[..2] {
            assert_eq!(form["verified"], true, "{name}: {form}");
            assert!(
                form["parity"]["compared"].as_u64().unwrap() >= 256,
                "{name}: {form}"
            );
        }
        // Our plan runs as `plan` says (the cost model may keep nodes apart) ...
        assert_eq!(
            forms[1]["launches"], plan["vyrescope"]["launches"],
            "{name}: {}",
            forms[1]
        );
        // ... and can fuse every node into one verified launch.
        let fused = json(&["run", f, "--both", "--decide", "fuse", "--json"]);
        let ours = &fused["forms"][1];
        assert_eq!(ours["launches"], 1, "{name}: {ours}");
        assert_eq!(ours["verified"], true, "{name}: {ours}");
        if vyre_runs {
            assert_eq!(forms[2]["verified"], true, "{name}: {}", forms[2]);
            assert_eq!(
                forms[2]["launches"].as_u64(),
                Some(groups.len() as u64),
                "{name}"
            );
        } else {
            let why = forms[2]["refused"].as_str().unwrap();
            assert!(
                why.contains("`input` carries 2 values") && why.contains("merge joins"),
                "{name}: {why}"
            );
        }
        assert_eq!(r["vyre_target"]["ok"], false, "{name}");
        assert_eq!(r["vyre_target"]["code"], target, "{name}");
    }
    // The GPU-timing MLP converts and plans (its three-form run is the GPU script's).
    let large = fixture("dense_gated_mlp_large");
    let plan = json(&["plan", large.to_str().unwrap(), "--vyre", "--json"]);
    assert_eq!(plan["vyre"]["groups"].as_array().unwrap().len(), 2);
}

/// Every graph fixture is written by a builder whose test compares its bytes: those of
/// `vyre_graph.rs`, `named_mixed` of `vyre_both.rs` and the upstream graphs above.
#[test]
fn every_graph_fixture_has_a_builder() {
    let dir = fixture("x").parent().unwrap().to_path_buf();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            (p.extension()? == "vgr").then(|| p.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    on_disk.sort();
    let mut built: Vec<String> = crate::vyre_graph::BUNDLED
        .iter()
        .copied()
        .chain(["named_mixed"])
        .chain(upstream_graphs().into_iter().map(|(n, _)| n))
        .map(String::from)
        .collect();
    built.sort();
    assert_eq!(
        on_disk, built,
        "fixtures/vyre/graphs/*.vgr against the builders"
    );
}

/// vyre clamps every access (`output[select(index < len(output), index, 0)]`) behind its
/// early exit `if gid.x >= len(output) { return }`: every thread that reaches the access has
/// `index < len(output)`, and the inputs are as long as the output, so each access is
/// `gid.x`. The large MLP's gate/up -> swiglu and down -> residual edges are then one
/// invocation per element (no wait at all, where counters were needed before), and the whole
/// block fused into one persistent kernel still equals the steps one by one on the
/// reference interpreter.
#[test]
fn the_mlp_after_vyres_early_exit_needs_no_waits_per_element_and_fuses_correctly() {
    use std::sync::Arc;
    use vyrescope::harness::pipeline::{check_on_reference, expected, pipeline_tolerance};
    use vyrescope::megakernel::compiled::CompiledPipeline;
    use vyrescope::megakernel::dataflow::SyncMode;
    use vyrescope::megakernel::plan::{Decide, PlanOptions};
    use vyrescope::occupancy::profiles;

    let home = tempfile::tempdir().unwrap();
    let large = fixture("dense_gated_mlp_large");
    let plan = json(
        &[
            "plan",
            large.to_str().unwrap(),
            "--device",
            "h100",
            // The cost model keeps this graph's loop-heavy steps apart (fused, they ran
            // 0.71x on an H100); the dependences are what this test is about.
            "--decide",
            "fuse",
            "--json",
        ],
        home.path(),
    );
    let ours = &plan["vyrescope"];
    let kind = |from: u64, to: u64| {
        ours["dependences"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["from"] == from && d["to"] == to)
            .map(|d| (d["kind"].as_str().unwrap(), d["reason"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("no dependence {from} -> {to}: {ours}"))
    };
    for (from, to) in [(1, 3), (2, 3), (4, 5)] {
        let (k, why) = kind(from, to);
        assert_eq!(k, "invocation", "{from} -> {to}: {why}");
        assert!(
            why.contains("at gid.x, one element per invocation"),
            "{why}"
        );
    }
    // The projection reading the whole activation row still waits for all of it.
    assert_eq!(kind(3, 4).0, "grid");
    // Fused, one kernel holds steps 1..5: no wait of step 3 or 5 at all.
    let groups = ours["groups"].as_array().unwrap();
    let gi = groups
        .iter()
        .position(|g| {
            g["steps"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!(3))
        })
        .expect("a group with step 3");
    let group = &groups[gi];
    for s in 1..=5 {
        assert!(
            group["steps"]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!(s)),
            "{group}"
        );
    }
    for b in group["dataflow"]["boundaries"].as_array().unwrap() {
        let waits = b["waits"].as_array().unwrap();
        assert!(
            waits
                .iter()
                .all(|w| w["to"] == 4 || w["to"] == 1 || w["to"] == 2),
            "only the projections wait: {b}"
        );
        if b["after_step"] == 2 || b["after_step"] == 4 {
            assert_eq!(b["label"], "invocation", "{b}");
            assert!(waits.is_empty(), "{b}");
        }
    }
    let runs_as = ours["runs_as"][gi].to_string();
    assert!(!runs_as.contains("step 3 workgroup"), "{runs_as}");
    assert!(!runs_as.contains("step 5 workgroup"), "{runs_as}");

    // The whole block as one launch, on the interpreter, against the steps one by one.
    let (lb, ls, lh, li) = MLP_LARGE;
    let p = converted(&mlp(lb, ls, lh, li), "dense_gated_mlp_large").pipeline;
    let prepared = prepare_pipeline(&p, Path::new(".")).unwrap();
    let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
    let mut opts = PlanOptions::new(profiles::load("h100").unwrap());
    opts.decide = Decide::Fuse;
    let compiled =
        CompiledPipeline::compile(Arc::new(p.clone()), shapes, &opts, SyncMode::Dataflow, None)
            .unwrap();
    let launches = compiled.fused_launches().unwrap();
    assert_eq!(launches.len(), 1);
    let fuel = u64::MAX >> 8;
    let want = expected(&p, &prepared, fuel).unwrap();
    let parity =
        check_on_reference(&launches, &prepared, &want, pipeline_tolerance(&p), fuel).unwrap();
    assert!(parity.passed && parity.compared >= 32768, "{parity:?}");
}
