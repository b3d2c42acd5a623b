//! vyre ProgramGraphs (feature `vyre`): graphs built with vyre's own API (a chain, a diamond,
//! a consumer with a workgroup barrier, mixed workgroup sizes, a retained value) open as
//! pipelines whose buffers, steps, transient flags and bindings follow the mapping of
//! docs/vyre.md, plan, and give on the reference interpreter what the nodes compute on the
//! host from the same random inputs; a pipeline exported as a graph is accepted by vyre's own
//! decoder and imports back to the same results; the bundled graph fixture is what the builder
//! writes; hostile graph bytes give errors with a `Fix:`, never a panic.

use std::path::{Path, PathBuf};

use vyre_foundation::ir::{
    BufferAccess as VA, BufferDecl as VB, DataType as DT, Expr as E, GraphInput, GraphOutput,
    GraphValueId, Node as N, Program as VP, ProgramGraph, ShapeDim, ValueContract,
    ValueLifetime as L,
};

use vyrescope::finding::Severity;
use vyrescope::inputs::pipeline::{prepare_pipeline, PreparedPipeline};
use vyrescope::interp::{self, pipeline::run_pipeline};
use vyrescope::ir::{Access, Pipeline};
use vyrescope::megakernel::plan::{plan, Decide, PlanOptions};
use vyrescope::occupancy::profiles;
use vyrescope::vyre::export::graph::export_pipeline;
use vyrescope::vyre::import::graph::{decode_graph, import_graph, ImportedGraph};

use crate::support::cli;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/vyre/graphs")
}

fn contract(n: u64, access: VA, lifetime: L) -> ValueContract {
    ValueContract {
        dtype: DT::U32,
        shape: vec![ShapeDim::Known(n)],
        access,
        lifetime,
    }
}

/// `out[i] = f(in[i])` for `i < len(out)`, `n` elements, workgroup `wg`.
fn map(input: &str, out: &str, n: u32, wg: u32, f: impl Fn(E) -> E) -> VP {
    VP::wrapped(
        vec![
            VB::read(input, 0, DT::U32).with_count(n),
            VB::output(out, 1, DT::U32).with_count(n),
        ],
        [wg, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(
                E::lt(E::var("i"), E::buf_len(out)),
                vec![N::store(out, E::var("i"), f(E::load(input, E::var("i"))))],
            ),
        ],
    )
}

/// `out[i] = a[i] + b[i]`.
fn add(a: &str, b: &str, out: &str, n: u32, wg: u32) -> VP {
    VP::wrapped(
        vec![
            VB::read(a, 0, DT::U32).with_count(n),
            VB::read(b, 1, DT::U32).with_count(n),
            VB::output(out, 2, DT::U32).with_count(n),
        ],
        [wg, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(
                E::lt(E::var("i"), E::buf_len(out)),
                vec![N::store(
                    out,
                    E::var("i"),
                    E::add(E::load(a, E::var("i")), E::load(b, E::var("i"))),
                )],
            ),
        ],
    )
}

/// Each workgroup rotates its slice by one through shared memory and a barrier:
/// `out[i] = in[wg_base + (lid + 1) % wg]`. `n` is a multiple of `wg`.
fn rotate(input: &str, out: &str, n: u32, wg: u32) -> VP {
    VP::wrapped(
        vec![
            VB::read(input, 0, DT::U32).with_count(n),
            VB::output(out, 1, DT::U32).with_count(n),
            VB::workgroup("tile", wg, DT::U32),
        ],
        [wg, 1, 1],
        vec![
            N::let_bind("lid", E::local_x()),
            N::store("tile", E::var("lid"), E::load(input, E::gid_x())),
            N::barrier(),
            N::store(
                out,
                E::gid_x(),
                E::load("tile", E::rem(E::add(E::var("lid"), E::u32(1)), E::u32(wg))),
            ),
        ],
    )
}

/// `state[i] = state[i] + x[i]` in place.
fn accumulate(state: &str, x: &str, n: u32, wg: u32) -> VP {
    VP::wrapped(
        vec![
            VB::read_write(state, 0, DT::U32).with_count(n),
            VB::read(x, 1, DT::U32).with_count(n),
        ],
        [wg, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(
                E::lt(E::var("i"), E::buf_len(state)),
                vec![N::store(
                    state,
                    E::var("i"),
                    E::add(E::load(state, E::var("i")), E::load(x, E::var("i"))),
                )],
            ),
        ],
    )
}

pub(crate) fn input(g: &mut ProgramGraph, name: &str, n: u64) -> GraphValueId {
    g.add_external_value(name, contract(n, VA::ReadOnly, L::Invocation))
        .unwrap()
}

pub(crate) fn port(buffer: &str, value: GraphValueId, c: ValueContract) -> GraphInput {
    GraphInput {
        buffer: buffer.into(),
        value,
        contract: c,
    }
}

pub(crate) fn out_port(buffer: &str, name: &str, c: ValueContract) -> GraphOutput {
    GraphOutput {
        buffer: buffer.into(),
        name: name.into(),
        contract: c,
        retained_successor_of: None,
    }
}

pub(crate) const N: u32 = 1000;

pub(crate) fn read(n: u32) -> ValueContract {
    contract(u64::from(n), VA::ReadOnly, L::Invocation)
}

pub(crate) fn temp(n: u32) -> ValueContract {
    contract(u64::from(n), VA::WriteOnly, L::Invocation)
}

pub(crate) fn result(n: u32) -> ValueContract {
    contract(u64::from(n), VA::WriteOnly, L::Output)
}

/// x -> `double` -> y (intermediate) -> `inc` -> out.
pub(crate) fn chain() -> ProgramGraph {
    let mut g = ProgramGraph::new();
    let x = input(&mut g, "x", N.into());
    let (_, y) = g
        .add_node(
            "double",
            map("src", "dst", N, 256, |v| E::mul(v, E::u32(2))),
            vec![port("src", x, read(N))],
            vec![out_port("dst", "y", temp(N))],
        )
        .unwrap();
    let y_in = contract(N.into(), VA::ReadOnly, L::Invocation);
    g.add_node(
        "inc",
        map("src", "dst", N, 256, |v| E::add(v, E::u32(1))),
        vec![port("src", y[0], y_in)],
        vec![out_port("dst", "out", result(N))],
    )
    .unwrap();
    g
}

/// x -> a = 3x, x -> b = x + 7, out = a + b.
pub(crate) fn diamond() -> ProgramGraph {
    let mut g = ProgramGraph::new();
    let x = input(&mut g, "x", N.into());
    let (_, a) = g
        .add_node(
            "triple",
            map("src", "dst", N, 128, |v| E::mul(v, E::u32(3))),
            vec![port("src", x, read(N))],
            vec![out_port("dst", "a", temp(N))],
        )
        .unwrap();
    let (_, b) = g
        .add_node(
            "plus7",
            map("src", "dst", N, 128, |v| E::add(v, E::u32(7))),
            vec![port("src", x, read(N))],
            vec![out_port("dst", "b", temp(N))],
        )
        .unwrap();
    g.add_node(
        "sum",
        add("l", "r", "dst", N, 128),
        vec![port("l", a[0], read(N)), port("r", b[0], read(N))],
        vec![out_port("dst", "out", result(N))],
    )
    .unwrap();
    g
}

/// x -> y = x ^ 0x55 -> a consumer that rotates each workgroup's slice through shared memory
/// after a barrier.
pub(crate) fn barrier_consumer() -> ProgramGraph {
    const M: u32 = 1024;
    let mut g = ProgramGraph::new();
    let x = input(&mut g, "x", M.into());
    let (_, y) = g
        .add_node(
            "mask",
            map("src", "dst", M, 128, |v| E::bitxor(v, E::u32(0x55))),
            vec![port("src", x, read(M))],
            vec![out_port("dst", "y", temp(M))],
        )
        .unwrap();
    g.add_node(
        "rotate",
        rotate("src", "dst", M, 128),
        vec![port("src", y[0], read(M))],
        vec![out_port("dst", "out", result(M))],
    )
    .unwrap();
    g
}

/// Three maps with workgroup sizes 64, 256 and 32.
pub(crate) fn mixed_workgroups() -> ProgramGraph {
    let mut g = ProgramGraph::new();
    let x = input(&mut g, "x", N.into());
    let (_, y) = g
        .add_node(
            "shl",
            map("src", "dst", N, 64, |v| E::shl(v, E::u32(3))),
            vec![port("src", x, read(N))],
            vec![out_port("dst", "y", temp(N))],
        )
        .unwrap();
    let (_, z) = g
        .add_node(
            "sub",
            map("src", "dst", N, 256, |v| E::sub(v, E::u32(5))),
            vec![port("src", y[0], read(N))],
            vec![out_port("dst", "z", temp(N))],
        )
        .unwrap();
    g.add_node(
        "or",
        map("src", "dst", N, 32, |v| E::bitor(v, E::u32(1))),
        vec![port("src", z[0], read(N))],
        vec![out_port("dst", "out", result(N))],
    )
    .unwrap();
    g
}

/// A retained `state` updated in place twice (`state += x`, then `state += y`), then read:
/// `out = state * 2`. `state`, `state_1` and `state_2` are one retained chain.
pub(crate) fn retained() -> ProgramGraph {
    let mut g = ProgramGraph::new();
    let kept = || contract(N.into(), VA::ReadWrite, L::Retained);
    let state = g.add_external_value("state", kept()).unwrap();
    let x = input(&mut g, "x", N.into());
    let y = input(&mut g, "y", N.into());
    let step = |g: &mut ProgramGraph, name: &str, prior, other, successor: &str| {
        let (_, ids) = g
            .add_node(
                name,
                accumulate("acc", "inc", N, 256),
                vec![port("acc", prior, kept()), port("inc", other, read(N))],
                vec![GraphOutput {
                    retained_successor_of: Some(prior),
                    ..out_port("acc", successor, kept())
                }],
            )
            .unwrap();
        ids[0]
    };
    let s1 = step(&mut g, "add_x", state, x, "state_1");
    let s2 = step(&mut g, "add_y", s1, y, "state_2");
    g.add_node(
        "double",
        map("src", "dst", N, 256, |v| E::mul(v, E::u32(2))),
        vec![port(
            "src",
            s2,
            contract(N.into(), VA::ReadOnly, L::Retained),
        )],
        vec![out_port("dst", "out", result(N))],
    )
    .unwrap();
    g
}

/// The graphs of this file, each with what its nodes compute from the inputs on the host:
/// (name, graph, host model taking the input buffers by name and giving `out`).
pub(crate) type Model = fn(&dyn Fn(&str) -> Vec<u32>) -> Vec<u32>;

pub(crate) fn graphs() -> Vec<(&'static str, ProgramGraph, Model)> {
    vec![
        ("chain", chain(), |b| {
            b("x")
                .iter()
                .map(|v| v.wrapping_mul(2).wrapping_add(1))
                .collect()
        }),
        ("named_chain", named_chain(), |b| {
            b("x")
                .iter()
                .map(|v| v.wrapping_mul(2).wrapping_add(1))
                .collect()
        }),
        ("diamond", diamond(), |b| {
            b("x")
                .iter()
                .map(|v| v.wrapping_mul(3).wrapping_add(v.wrapping_add(7)))
                .collect()
        }),
        ("barrier_consumer", barrier_consumer(), |b| {
            let y: Vec<u32> = b("x").iter().map(|v| v ^ 0x55).collect();
            (0..y.len())
                .map(|i| y[i / 128 * 128 + (i % 128 + 1) % 128])
                .collect()
        }),
        ("mixed_workgroups", mixed_workgroups(), |b| {
            b("x")
                .iter()
                .map(|v| (v << 3).wrapping_sub(5) | 1)
                .collect()
        }),
        ("retained", retained(), |b| {
            let (s, x, y) = (b("state"), b("x"), b("y"));
            (0..s.len())
                .map(|i| s[i].wrapping_add(x[i]).wrapping_add(y[i]).wrapping_mul(2))
                .collect()
        }),
    ]
}

pub(crate) fn converted(g: &ProgramGraph, name: &str) -> ImportedGraph {
    let got = import_graph(g, name);
    let errors: Vec<String> = got.errors().map(|d| d.to_string()).collect();
    assert!(errors.is_empty(), "{name}: {errors:?}");
    got
}

pub(crate) fn u32s(pp: &PreparedPipeline, name: &str) -> Vec<u32> {
    let b = pp
        .buffers
        .iter()
        .find(|b| b.name == name)
        .unwrap_or_else(|| panic!("no buffer {name}"));
    b.data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The reference run of `p`: (initial, final) buffers.
fn run(p: &Pipeline) -> (PreparedPipeline, PreparedPipeline) {
    let init = prepare_pipeline(p, Path::new(".")).unwrap();
    let mut done = init.clone();
    run_pipeline(p, &mut done, &interp::Options::default()).unwrap();
    (init, done)
}

/// `p`'s reference run against the graph's host model, on `p`'s (random) inputs.
fn check_results(p: &Pipeline, model: Model, what: &str) {
    let (init, done) = run(p);
    let x = u32s(&init, "x");
    assert!(
        x.iter().filter(|&&v| v != 0).count() > x.len() / 2,
        "{what}: random x"
    );
    let want = model(&|name| u32s(&init, name));
    assert_eq!(u32s(&done, "out"), want, "{what}: out");
}

#[test]
fn graphs_convert_to_the_documented_pipeline_and_compute_the_nodes_results() {
    for (name, g, model) in graphs() {
        let got = converted(&g, name);
        let p = &got.pipeline;
        assert_eq!(p.name, name);
        assert_eq!(p.steps.len(), g.nodes().len(), "{name}: one step per node");
        assert_eq!(
            got.node_names,
            g.nodes().iter().map(|n| n.name.clone()).collect::<Vec<_>>()
        );
        // Every value is a buffer, but a retained chain is one.
        let chained = g
            .values()
            .iter()
            .filter(|v| v.retained_successor_of.is_some())
            .count();
        assert_eq!(
            p.buffers.len(),
            g.values().len() - chained,
            "{name}: buffers"
        );
        for v in g.values() {
            let Some(b) = p.buffer(&v.name) else {
                assert!(
                    v.retained_successor_of.is_some(),
                    "{name}: no buffer {}",
                    v.name
                );
                continue;
            };
            let produced_temp = v.producer.is_some() && v.contract.lifetime == L::Invocation;
            assert_eq!(b.transient, produced_temp, "{name}: {} transient", v.name);
            let ShapeDim::Known(n) = v.contract.shape[0] else {
                unreachable!()
            };
            assert_eq!(b.contents.len, Some(n), "{name}: {} length", v.name);
        }
        // Each step binds its Program's host buffers to the values of the node's ports, and
        // dispatches vyre's element count (the largest counted buffer: here every one).
        for (step, node) in p.steps.iter().zip(g.nodes()) {
            let host: Vec<&str> = step
                .program
                .buffers
                .iter()
                .filter(|b| b.access != Access::Workgroup)
                .map(|b| b.name.as_str())
                .collect();
            let bound: Vec<&str> = step.bind.iter().map(|(p, _)| p.as_str()).collect();
            assert_eq!(bound, host, "{name}/{}: bind order", node.name);
            for input in &node.inputs {
                let value = &g.values()[input.value.0 as usize];
                let buffer = &step
                    .bind
                    .iter()
                    .find(|(p, _)| *p == input.buffer)
                    .unwrap()
                    .1;
                let root = root_name(&g, value.id);
                assert_eq!(buffer, &root, "{name}/{}: {}", node.name, input.buffer);
            }
            assert!(step.elements.is_some_and(|e| e >= 1000), "{name}: elements");
        }
        if name == "mixed_workgroups" {
            let wgs: Vec<u32> = p
                .steps
                .iter()
                .map(|s| s.program.workgroup_size[0])
                .collect();
            assert_eq!(wgs, [64, 256, 32]);
        }
        if name == "barrier_consumer" {
            assert!(p.steps[1]
                .program
                .buffers
                .iter()
                .any(|b| b.access == Access::Workgroup));
        }
        // The pipeline validates, plans and computes what the nodes compute.
        let diags = vyrescope::validate::pipeline::validate_pipeline(p);
        assert!(
            diags.iter().all(|d| d.severity != Severity::Error),
            "{name}: {diags:?}"
        );
        let init = prepare_pipeline(p, Path::new(".")).unwrap();
        let shapes: Vec<_> = init.steps.iter().map(|s| s.shape).collect();
        let opts = PlanOptions::new(profiles::load("h200").unwrap());
        let planned = plan(p, &shapes, &opts).unwrap_or_else(|e| panic!("{name}: plan: {e}"));
        let members: usize = planned.groups.iter().map(|g| g.steps.len()).sum();
        assert_eq!(members, p.steps.len(), "{name}: every step planned once");
        check_results(p, model, name);
    }
}

/// The first value of `id`'s retained chain: the buffer the chain shares.
fn root_name(g: &ProgramGraph, mut id: GraphValueId) -> String {
    while let Some(prior) = g.values()[id.0 as usize].retained_successor_of {
        id = prior;
    }
    g.values()[id.0 as usize].name.clone()
}

#[test]
fn exported_pipelines_are_graphs_vyre_reads_and_import_back_to_the_same_results() {
    for (name, g, model) in graphs() {
        let first = converted(&g, name).pipeline;
        let exported = export_pipeline(&first).unwrap_or_else(|e| panic!("{name}: {e}"));
        let bytes = exported.to_wire().unwrap();
        let back = ProgramGraph::from_wire(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back.nodes().len(), g.nodes().len(), "{name}");
        let second = converted(&back, name).pipeline;
        // Same buffers (names, types, lengths, transient flags) and the same results from
        // the same random inputs.
        let shape = |p: &Pipeline| {
            p.buffers
                .iter()
                .map(|b| (b.name.clone(), b.elem, b.contents.len, b.transient))
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&second), shape(&first), "{name}");
        check_results(&second, model, &format!("{name} (exported and back)"));
        let (_, a) = run(&first);
        let (_, b) = run(&second);
        for buf in &first.buffers {
            assert_eq!(
                u32s(&a, &buf.name),
                u32s(&b, &buf.name),
                "{name}: {}",
                buf.name
            );
        }
    }
}

/// The bundled graphs: `fixtures/vyre/graphs/<name>.vgr`, vyre's wire bytes of the builders
/// above (`VYRESCOPE_BLESS=1` rewrites them).
pub(crate) const BUNDLED: &[&str] = &["chain", "named_chain", "diamond", "retained"];

#[test]
fn bundled_graphs_are_what_the_builders_write() {
    let mut failures = Vec::new();
    for (name, g, _) in graphs() {
        if !BUNDLED.contains(&name) {
            continue;
        }
        let bytes = g.to_wire().unwrap();
        assert!(bytes.starts_with(b"VGR0"));
        if let Err(e) = crate::support::snapshot::check_bytes(
            &fixture_dir().join(format!("{name}.vgr")),
            &bytes,
            "what vyre's graph builder writes",
            "--features vyre --test suite vyre_graph::",
        ) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn cli_in(args: &[&str], cwd: &Path) -> (i32, String, String) {
    cli::output(cli::command().args(args).current_dir(cwd).env("HOME", cwd))
}

#[test]
fn commands_open_graph_files_and_import_writes_a_pipeline_folder() {
    let t = tempfile::tempdir().unwrap();
    let chain = fixture_dir().join("chain.vgr");
    let chain = chain.to_str().unwrap();
    let (code, stdout, err) = cli_in(&["check", chain], t.path());
    assert_eq!(code, 0, "{stdout}{err}");
    let (code, stdout, err) = cli_in(&["plan", chain], t.path());
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(
        stdout.contains("double") && stdout.contains("inc"),
        "{stdout}"
    );
    let (code, stdout, err) = cli_in(
        &["run", chain, "--backend", "reference", "--json"],
        t.path(),
    );
    assert_eq!(code, 0, "{stdout}{err}");
    let (code, stdout, err) = cli_in(&["tui", chain, "--keys", "q", "--snapshot", "-"], t.path());
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(stdout.contains("double"), "{stdout}");
    // import -o DIR: a pipeline file and one Program file per step, which load as the graph
    // does and give the same results.
    let out = t.path().join("out");
    let (code, _, err) = cli_in(&["import", chain, "-o", out.to_str().unwrap()], t.path());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("wrote"), "{err}");
    assert!(out.join("programs/double.json").is_file());
    assert!(out.join("programs/inc.json").is_file());
    vyrescope::vyre::install();
    let written = vyrescope::ir::load_pipeline(&out.join("chain.pipeline.json")).unwrap();
    let direct = vyrescope::ir::load_pipeline(Path::new(chain)).unwrap();
    assert_eq!(written.buffers, direct.buffers);
    assert_eq!(written.steps.len(), direct.steps.len());
    for (a, b) in written.steps.iter().zip(&direct.steps) {
        assert_eq!((&a.program, &a.bind), (&b.program, &b.bind));
    }
    let (_, a) = run(&written);
    let (_, b) = run(&direct);
    assert_eq!(u32s(&a, "out"), u32s(&b, "out"));
    // --json without -o: the report with the pipeline inline.
    let (code, stdout, err) = cli_in(&["import", chain, "--json"], t.path());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["steps"], 2);
    assert_eq!(v["pipeline"]["pipeline"], "chain");
}

#[test]
fn what_has_no_equivalent_names_the_node_or_value_and_has_a_fix() {
    // A symbolic dimension (VY021) and a Program buffer bound to no value (VY022).
    let mut g = ProgramGraph::new();
    let sym = ValueContract {
        shape: vec![ShapeDim::Symbol("batch".into())],
        ..read(N)
    };
    let x = g.add_external_value("x", sym.clone()).unwrap();
    g.add_node(
        "loose",
        VP::wrapped(
            vec![
                VB::read("a", 0, DT::U32),
                VB::read("b", 1, DT::U32).with_count(N),
                VB::output("dst", 2, DT::U32).with_count(N),
            ],
            [64, 1, 1],
            vec![N::store(
                "dst",
                E::gid_x(),
                E::add(E::load("a", E::gid_x()), E::load("b", E::gid_x())),
            )],
        ),
        vec![port("a", x, sym)],
        vec![out_port("dst", "out", result(N))],
    )
    .unwrap();
    let got = import_graph(&g, "bad");
    let codes: Vec<&str> = got.errors().map(|d| d.code).collect();
    assert!(
        codes.contains(&"VY021") && codes.contains(&"VY022"),
        "{codes:?}"
    );
    for d in got.errors() {
        assert!(!d.fix.is_empty(), "{d}");
        assert!(
            d.message.contains("`x`") || d.message.contains("`loose`"),
            "names the value or node: {d}"
        );
    }
    // Opened by a command: the first finding, how many, and its fix.
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("bad.vgr");
    std::fs::write(&path, g.to_wire().unwrap()).unwrap();
    let (code, stdout, err) = cli_in(&["plan", path.to_str().unwrap()], t.path());
    assert_eq!(code, 1, "{stdout}");
    assert!(err.contains("VY02") && err.contains("Fix:"), "{err}");
    let (code, _, err) = cli_in(&["import", path.to_str().unwrap()], t.path());
    assert_eq!(code, 1);
    assert!(err.contains("VY021") && err.contains("VY022"), "{err}");
    // An empty graph has nothing to run.
    let got = import_graph(&ProgramGraph::new(), "empty");
    assert_eq!(got.errors().next().map(|d| d.code), Some("VY023"));
}

/// x[items] -> `double` -> out[items]: a graph whose length is a configuration symbol.
fn symbolic_chain() -> ProgramGraph {
    let mut g = ProgramGraph::new();
    let sym = |c: ValueContract| ValueContract {
        shape: vec![ShapeDim::Symbol("items".into())],
        ..c
    };
    let x = g.add_external_value("x", sym(read(N))).unwrap();
    g.add_node(
        "double",
        VP::wrapped(
            // vyre's wire format needs a positive count on a live-out buffer; the graph's
            // values stay symbolic.
            vec![
                VB::read("src", 0, DT::U32),
                VB::output("dst", 1, DT::U32).with_count(N),
            ],
            [64, 1, 1],
            vec![
                N::let_bind("i", E::gid_x()),
                N::if_then(
                    E::lt(E::var("i"), E::buf_len("dst")),
                    vec![N::store(
                        "dst",
                        E::var("i"),
                        E::mul(E::load("src", E::var("i")), E::u32(2)),
                    )],
                ),
            ],
        ),
        vec![port("src", x, sym(read(N)))],
        vec![out_port("dst", "out", sym(result(N)))],
    )
    .unwrap();
    g
}

#[test]
fn bind_gives_symbolic_dimensions_their_length_in_every_command() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("sym.vgr");
    std::fs::write(&path, symbolic_chain().to_wire().unwrap()).unwrap();
    let file = path.to_str().unwrap();
    // Unbound: the error lists the symbols and shows the flag.
    for cmd in [
        &["plan", file][..],
        &["run", file, "--backend", "reference"][..],
    ] {
        let (code, stdout, err) = cli_in(cmd, t.path());
        assert_eq!(code, 1, "{cmd:?}: {stdout}{err}");
        assert!(
            err.contains("VY021") && err.contains("unbound in this graph: items"),
            "{err}"
        );
        assert!(
            err.contains("Fix:") && err.contains("--bind items=N"),
            "{err}"
        );
    }
    // Bound: each command opens it at that length.
    let (code, stdout, err) = cli_in(&["plan", file, "--bind", "items=3000"], t.path());
    assert_eq!(code, 0, "{stdout}{err}");
    let (code, stdout, err) = cli_in(
        &[
            "run",
            file,
            "--backend",
            "reference",
            "--json",
            "--bind",
            "items=3000",
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{stdout}{err}");
    let out = t.path().join("out");
    let (code, _, err) = cli_in(
        &[
            "import",
            file,
            "--bind",
            "items=3000",
            "-o",
            out.to_str().unwrap(),
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{err}");
    vyrescope::vyre::install();
    let written = vyrescope::ir::load_pipeline(&out.join("sym.pipeline.json")).unwrap();
    let lens: Vec<Option<u64>> = written.buffers.iter().map(|b| b.contents.len).collect();
    assert_eq!(lens, vec![Some(3000), Some(3000)], "{:?}", written.buffers);
    // On the reference interpreter the bound graph computes out = 2x over all 3000.
    let (init, done) = run(&written);
    let x = u32s(&init, "x");
    let got = u32s(&done, "out");
    assert_eq!(got.len(), 3000);
    assert!(x.iter().any(|&v| v != 0));
    // The step dispatches over the bound length, not the Program's declared count.
    assert!(x.iter().zip(&got).all(|(a, b)| a.wrapping_mul(2) == *b));
    // The inspector takes it too, and bad values are usage errors.
    let (code, stdout, err) = cli_in(
        &[
            "tui",
            file,
            "--bind",
            "items=3000",
            "--keys",
            "q",
            "--snapshot",
            "-",
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(stdout.contains("double"), "{stdout}");
    for bad in ["items", "items=0", "=5", "items=x", "items=99999999999"] {
        let (code, _, err) = cli_in(&["plan", file, "--bind", bad], t.path());
        assert_eq!(code, 2, "{bad}: {err}");
    }
    let (code, _, err) = cli_in(
        &["plan", file, "--bind", "items=4", "--bind", "items=5"],
        t.path(),
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("given twice"), "{err}");
}

#[test]
fn hostile_graph_bytes_give_errors_with_a_fix() {
    vyrescope::vyre::install();
    let good = chain().to_wire().unwrap();
    let mut huge_count = good[..6].to_vec();
    huge_count.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut huge_name = good[..10].to_vec();
    huge_name.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut version = good.clone();
    version[4] = 9;
    let mut flipped = good.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 0xff;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("magic only", b"VGR0".to_vec()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("one byte short", good[..good.len() - 1].to_vec()),
        ("trailing bytes", [good.clone(), vec![0; 3]].concat()),
        ("wrong version", version),
        ("huge external count", huge_count),
        ("huge name length", huge_name),
        ("last byte flipped", flipped),
        ("wrong magic, .vgr name", b"VGR1 hello".to_vec()),
        ("empty, .vgr name", Vec::new()),
    ];
    let t = tempfile::tempdir().unwrap();
    for (what, bytes) in cases {
        let path = t.path().join("hostile.vgr");
        std::fs::write(&path, &bytes).unwrap();
        match decode_graph(&path, &bytes) {
            Ok(g) => {
                // A flipped byte may still decode; then the conversion speaks.
                let _ = import_graph(&g, "hostile");
            }
            Err(e) => assert!(!e.fix.is_empty(), "{what}: {e:?}"),
        }
        for cmd in ["check", "plan", "import"] {
            let (code, stdout, err) = cli_in(&[cmd, path.to_str().unwrap()], t.path());
            assert!(
                code == 0 || code == 1,
                "{what}: {cmd} exit {code}\n{stdout}{err}"
            );
            assert!(!err.contains("panicked"), "{what}: {cmd}: {err}");
            if code == 1 {
                assert!(
                    format!("{stdout}{err}").contains("Fix:"),
                    "{what}: {cmd}: {stdout}{err}"
                );
            }
        }
    }
}

/// The final contents of pipeline buffer `name` in a re-imported graph: its last version
/// (`name_vK` with the largest K, else `name` itself).
fn last_version<'a>(p: &Pipeline, done: &'a PreparedPipeline, name: &str) -> &'a [u8] {
    let mut best = (1, name.to_string());
    for b in &p.buffers {
        if let Some(k) = b
            .name
            .strip_prefix(&format!("{name}_v"))
            .and_then(|k| k.parse::<u32>().ok())
        {
            if k > best.0 {
                best = (k, b.name.clone());
            }
        }
    }
    let b = done.buffers.iter().find(|b| b.name == best.1).unwrap();
    &b.data
}

#[test]
fn fixture_pipelines_export_as_graphs_that_compute_the_same_results() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| !p.to_string_lossy().contains("2p20"))
        .collect();
    files.sort();
    let mut exported = 0;
    for f in &files {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        let first = vyrescope::ir::load_pipeline(f).unwrap();
        let graph = match export_pipeline(&first) {
            Ok(g) => g,
            Err(e) => {
                // A refusal says what and why, with a fix.
                assert!(
                    e.what.contains("steps[") && !e.fix.is_empty(),
                    "{name}: {e}"
                );
                continue;
            }
        };
        exported += 1;
        let bytes = vyrescope::vyre::export::graph::encode_graph(&graph, &name).unwrap();
        let back = ProgramGraph::from_wire(&bytes).unwrap();
        let mut second = converted(&back, &name).pipeline;
        // The same initial contents (a graph carries none of its own).
        for b in &mut second.buffers {
            if let Some(orig) = first.buffer(&b.name) {
                b.contents = orig.contents.clone();
            }
        }
        let mut a = prepare_pipeline(&first, &dir).unwrap();
        run_pipeline(&first, &mut a, &interp::Options::default()).unwrap();
        let mut b = prepare_pipeline(&second, &dir).unwrap();
        run_pipeline(&second, &mut b, &interp::Options::default()).unwrap();
        for buf in first.buffers.iter().filter(|b| !b.transient) {
            let want = &a.buffers.iter().find(|x| x.name == buf.name).unwrap().data;
            assert!(
                last_version(&second, &b, &buf.name) == want.as_slice(),
                "{name}: buffer {} differs after export and import",
                buf.name
            );
        }
    }
    assert!(
        exported >= files.len() - 2,
        "{exported} of {} exported",
        files.len()
    );
}

/// vyre-megakernel's artifact of `g` (compiled in-process with a small search budget).
pub(crate) fn artifact_bytes(g: ProgramGraph) -> Vec<u8> {
    use vyre_megakernel::{compile, CompileRequest, Digest, ExternalFacts, SearchBudget};
    let facts = ExternalFacts::new(Digest([7; 32]), Default::default());
    let budget = SearchBudget::new(64, 1_000_000, 0, 0, 1_000_000_000);
    let request = CompileRequest::new(g, facts, budget, 1 << 30)
        .validate()
        .unwrap();
    compile(&request).unwrap().to_bytes().unwrap()
}

#[test]
fn megakernel_artifacts_open_as_the_graph_they_were_compiled_from() {
    vyrescope::vyre::install();
    let t = tempfile::tempdir().unwrap();
    for (name, g, model) in graphs() {
        let bytes = artifact_bytes(g);
        assert!(bytes.starts_with(b"VMK0"));
        let path = t.path().join(format!("{name}.vmk"));
        std::fs::write(&path, &bytes).unwrap();
        let (rebuilt, notes) = vyrescope::vyre::import::graph::read_graph(&path, &bytes)
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(notes[0].code, "VY025");
        // The same pipeline as the graph's own, up to vyre's canonical form of the Programs.
        let from_graph = converted(&graphs_by_name(name), name).pipeline;
        let from_artifact = converted(&rebuilt, name).pipeline;
        assert_eq!(from_artifact.buffers, from_graph.buffers, "{name}: buffers");
        let binds = |p: &Pipeline| p.steps.iter().map(|s| s.bind.clone()).collect::<Vec<_>>();
        let mut a = binds(&from_artifact);
        let mut b = binds(&from_graph);
        for v in a.iter_mut().chain(b.iter_mut()) {
            v.sort();
        }
        assert_eq!(a, b, "{name}: bindings");
        check_results(&from_artifact, model, &format!("{name} (artifact)"));
        // Every pipeline command opens it.
        let (code, stdout, err) = cli_in(&["plan", path.to_str().unwrap()], t.path());
        assert_eq!(code, 0, "{name}: {stdout}{err}");
    }
    // The bundled artifact is what vyre-megakernel writes for the chain.
    crate::support::snapshot::check_bytes(
        &fixture_dir().join("chain.vmk"),
        &artifact_bytes(chain()),
        "what vyre-megakernel compiles the chain graph to",
        "--features vyre --test suite vyre_graph::",
    )
    .unwrap();
}

fn graphs_by_name(name: &str) -> ProgramGraph {
    graphs()
        .into_iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, g, _)| g)
        .unwrap()
}

#[test]
fn hostile_artifact_bytes_give_errors_with_a_fix() {
    vyrescope::vyre::install();
    let good = artifact_bytes(chain());
    let mut flipped = good.clone();
    flipped[20] ^= 1;
    let mut version = good.clone();
    version[4] = 3;
    let mut long = good.clone();
    long[6..10].copy_from_slice(&u32::MAX.to_le_bytes());
    let t = tempfile::tempdir().unwrap();
    for (what, bytes) in [
        ("magic only", b"VMK0".to_vec()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("body byte flipped", flipped),
        ("old schema", version),
        ("huge body length", long),
        ("garbage, .vmk name", b"not an artifact".to_vec()),
    ] {
        let path = t.path().join("hostile.vmk");
        std::fs::write(&path, &bytes).unwrap();
        let e = vyrescope::vyre::import::graph::read_graph(&path, &bytes)
            .err()
            .unwrap_or_else(|| panic!("{what}: accepted"));
        assert!(
            !e.fix.is_empty() && e.message.contains("artifact"),
            "{what}: {e:?}"
        );
        for cmd in ["check", "plan", "import"] {
            let (code, stdout, err) = cli_in(&[cmd, path.to_str().unwrap()], t.path());
            assert_eq!(code, 1, "{what}: {cmd}\n{stdout}{err}");
            assert!(
                format!("{stdout}{err}").contains("Fix:") && !err.contains("panicked"),
                "{what}: {cmd}: {stdout}{err}"
            );
        }
    }
}

// --- vyre-megakernel's plan beside ours (`vyrescope plan` on a graph) ---

/// `out[i] = f(in[i])` guarded by both buffers' own lengths (so every access is provably in
/// bounds), with Program buffers named like the graph values they carry (so vyre's merge,
/// which links arms by buffer name, sees the edge).
pub(crate) fn named_map(input: &str, out: &str, n: u32, wg: u32, f: impl Fn(E) -> E) -> VP {
    VP::wrapped(
        vec![
            VB::read(input, 0, DT::U32).with_count(n),
            VB::output(out, 1, DT::U32).with_count(n),
        ],
        [wg, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(
                E::lt(E::var("i"), E::buf_len(input)),
                vec![N::if_then(
                    E::lt(E::var("i"), E::buf_len(out)),
                    vec![N::store(out, E::var("i"), f(E::load(input, E::var("i"))))],
                )],
            ),
        ],
    )
}

/// x -> `double` -> y -> `inc` -> out, each Program's buffers named after the values.
pub(crate) fn named_chain() -> ProgramGraph {
    named_chain_sized(256)
}

/// [`named_chain`] with `double` run at workgroup size `double_wg` (`inc` stays at 256).
pub(crate) fn named_chain_sized(double_wg: u32) -> ProgramGraph {
    let mut g = ProgramGraph::new();
    let x = input(&mut g, "x", N.into());
    let (_, y) = g
        .add_node(
            "double",
            named_map("x", "y", N, double_wg, |v| E::mul(v, E::u32(2))),
            vec![port("x", x, read(N))],
            vec![out_port("y", "y", temp(N))],
        )
        .unwrap();
    g.add_node(
        "inc",
        named_map("y", "out", N, 256, |v| E::add(v, E::u32(1))),
        vec![port("y", y[0], read(N))],
        vec![out_port("out", "out", result(N))],
    )
    .unwrap();
    g
}

use vyrescope::megakernel::against_vyre::{differences, Difference};
use vyrescope::vyre::plan::{plan_graph, Budget, VyrePlan};

/// vyre's plan, ours and the differences for `g` (ours planned for the bundled h200).
fn both_plans(
    g: ProgramGraph,
    name: &str,
) -> (VyrePlan, vyrescope::megakernel::plan::Plan, Vec<Difference>) {
    both_plans_with(g, name, Budget::default())
}

fn both_plans_with(
    g: ProgramGraph,
    name: &str,
    budget: Budget,
) -> (VyrePlan, vyrescope::megakernel::plan::Plan, Vec<Difference>) {
    let p = converted(&g, name).pipeline;
    let init = prepare_pipeline(&p, Path::new(".")).unwrap();
    let shapes: Vec<_> = init.steps.iter().map(|s| s.shape).collect();
    // What our planner can fuse (`--decide fuse`), not what the cost model chooses: these
    // tests compare the two planners' legality and synchronization, not calibration.
    let mut opts = PlanOptions::new(profiles::load("h200").unwrap());
    opts.decide = Decide::Fuse;
    let ours = plan(&p, &shapes, &opts).unwrap();
    let names: Vec<String> = g.nodes().iter().map(|n| n.name.clone()).collect();
    let theirs = plan_graph(g, budget, name).unwrap_or_else(|e| panic!("{name}: {e}"));
    let diffs = differences(&theirs, &ours, &|i| names[i as usize].clone());
    (theirs, ours, diffs)
}

fn members(v: &VyrePlan) -> Vec<Vec<u32>> {
    v.groups.iter().map(|g| g.members.clone()).collect()
}

fn our_groups(p: &vyrescope::megakernel::plan::Plan) -> Vec<Vec<usize>> {
    p.groups.iter().map(|g| g.steps.clone()).collect()
}

fn kinds(d: &[Difference]) -> Vec<(&str, Vec<u32>)> {
    d.iter()
        .map(|d| (d.kind.as_str(), d.nodes.clone()))
        .collect()
}

/// The open cost model holds for every plan: work + 1000 x launches + 100 x crossing edges.
fn check_cost(v: &VyrePlan, what: &str) {
    let c = v.cost;
    assert_eq!(c.launches as usize, v.groups.len(), "{what}");
    assert_eq!(
        c.total,
        c.semantic_work + 1000 * c.launches + 100 * c.materialized_edges,
        "{what}"
    );
    let work: u64 = v.nodes.iter().map(|n| n.semantic_work).sum();
    assert_eq!(c.semantic_work, work, "{what}");
    assert!(c.semantic_work > 0, "{what}");
}

#[test]
fn chain_vyre_fuses_with_a_grid_sync_where_we_prove_no_barrier() {
    let (v, ours, d) = both_plans(named_chain(), "named_chain");
    check_cost(&v, "named_chain");
    assert_eq!(members(&v), [vec![0, 1]]);
    let g = &v.groups[0];
    assert_eq!(g.kernel_barriers.len(), 1, "{g:?}");
    assert_eq!(
        (g.kernel_barriers[0].after, g.kernel_barriers[0].before),
        (0, 1)
    );
    assert_eq!(g.kernel_barriers[0].ordering, "grid_sync");
    assert!(g.unlinked_values.is_empty(), "{g:?}");
    assert!(v.pruned.is_empty() && v.launch_boundaries.is_empty());
    // Only the output is materialized; the intermediate stays inside the kernel.
    let mats: Vec<(&str, &str)> = v
        .materializations
        .iter()
        .map(|m| (m.value.as_str(), m.reason.as_str()))
        .collect();
    assert_eq!(mats, [("out", "output")]);
    assert_eq!(v.peak_live_bytes, 3 * 4 * u64::from(N));
    assert_eq!((v.cost.launches, v.cost.materialized_edges), (1, 0));
    // Ours: one launch, the two steps one invocation apart (no barrier).
    assert_eq!(our_groups(&ours), [vec![0, 1]]);
    assert_eq!(ours.grid_barriers, 0, "{ours:?}");
    assert_eq!(kinds(&d), [("kernel_barrier", vec![0, 1])], "{d:?}");
    assert!(
        d[0].vyre.contains("GridSync") && d[0].vyre.contains("stronger"),
        "{d:?}"
    );
    assert!(
        d[0].vyrescope.starts_with("no barrier (invocation)"),
        "{d:?}"
    );
}

#[test]
fn bundled_chain_reads_its_intermediate_under_another_name_which_vyres_merge_cannot_link() {
    let (v, _, d) = both_plans(chain(), "chain");
    assert_eq!(members(&v), [vec![0, 1]]);
    assert_eq!(v.groups[0].unlinked_values, ["y"]);
    assert!(
        d.iter()
            .any(|d| d.kind == "unlinked_value" && d.vyre.contains("`y`")),
        "{d:?}"
    );
}

#[test]
fn diamond_vyre_fuses_all_three_with_a_grid_sync_between_independent_nodes() {
    let (v, ours, d) = both_plans(diamond(), "diamond");
    check_cost(&v, "diamond");
    assert_eq!(members(&v), [vec![0, 1, 2]]);
    let after: Vec<(u32, &str)> = v.groups[0]
        .kernel_barriers
        .iter()
        .map(|k| (k.after, k.ordering.as_str()))
        .collect();
    assert_eq!(after, [(0, "grid_sync"), (1, "grid_sync")]);
    // Ours: triple and plus7 share a wave (no dependence), so vyre's sync between them is one
    // we prove unnecessary.
    assert_eq!(ours.groups[0].waves[0], [0, 1]);
    let between = d
        .iter()
        .find(|d| d.kind == "kernel_barrier" && d.nodes == [0, 1])
        .unwrap_or_else(|| panic!("{d:?}"));
    assert!(between.vyrescope.contains("same wave"), "{between:?}");
    assert_eq!(v.budget.edges, 2);
    assert_eq!(v.budget.edges_examined, 2);
}

#[test]
fn a_consumer_with_a_barrier_is_a_synchronization_boundary_for_vyre() {
    let (v, ours, d) = both_plans(barrier_consumer(), "barrier_consumer");
    check_cost(&v, "barrier_consumer");
    assert_eq!(members(&v), [vec![0], vec![1]]);
    let pruned: Vec<(u32, u32, &str)> = v
        .pruned
        .iter()
        .map(|p| (p.from, p.to, p.code.as_str()))
        .collect();
    assert_eq!(pruned, [(0, 1, "MKL006_SYNCHRONIZATION_BOUNDARY")]);
    assert!(v.pruned[0].meaning.contains("barrier"));
    // Two stages, the intermediate materialized across them.
    assert_eq!(v.launch_boundaries.len(), 1);
    assert_eq!(v.launch_boundaries[0].edges[0].value.as_deref(), Some("y"));
    assert!(v
        .materializations
        .iter()
        .any(|m| m.value == "y" && m.reason == "cross_group_use"));
    assert_eq!(v.cost.materialized_edges, 1);
    // Ours fuses them: a group boundary difference naming vyre's code.
    if our_groups(&ours).len() == 1 {
        let gb = d
            .iter()
            .find(|d| d.kind == "group_boundary")
            .unwrap_or_else(|| panic!("{d:?}"));
        assert!(gb.vyre.contains("MKL006"), "{gb:?}");
        assert!(gb.vyrescope.starts_with("fuses them"), "{gb:?}");
    } else {
        assert!(d.iter().all(|d| d.kind != "group_boundary"), "{d:?}");
    }
}

#[test]
fn mixed_workgroup_sizes_vyre_refuses_with_mkl005_and_we_fuse() {
    let (v, ours, d) = both_plans(mixed_workgroups(), "mixed_workgroups");
    check_cost(&v, "mixed_workgroups");
    assert_eq!(members(&v), [vec![0], vec![1], vec![2]]);
    let codes: Vec<&str> = v.pruned.iter().map(|p| p.code.as_str()).collect();
    assert_eq!(codes, ["MKL005_WORKGROUP_MISMATCH"; 2]);
    assert_eq!(v.launch_boundaries.len(), 2);
    // Ours runs them as one mixed-size launch.
    assert_eq!(our_groups(&ours), [vec![0, 1, 2]]);
    assert!(ours.groups[0].mixed_workgroup_sizes());
    let gb: Vec<&Difference> = d.iter().filter(|d| d.kind == "group_boundary").collect();
    assert_eq!(gb.len(), 2, "{d:?}");
    assert!(gb.iter().all(|d| d.vyre.contains("MKL005")), "{gb:?}");
    assert!(d
        .iter()
        .any(|d| d.kind == "launches" && d.vyre.starts_with("3 launches")));
}

#[test]
fn retained_state_is_a_lifecycle_boundary_and_materialized_as_retained() {
    let (v, ours, d) = both_plans(retained(), "retained");
    check_cost(&v, "retained");
    assert_eq!(members(&v), [vec![0], vec![1], vec![2]]);
    let codes: Vec<&str> = v.pruned.iter().map(|p| p.code.as_str()).collect();
    assert_eq!(codes, ["MKL003_LIFECYCLE_BOUNDARY"; 2]);
    let mut mats: Vec<(&str, &str)> = v
        .materializations
        .iter()
        .map(|m| (m.value.as_str(), m.reason.as_str()))
        .collect();
    mats.sort_unstable();
    assert_eq!(
        mats,
        [
            ("out", "output"),
            ("state_1", "retained"),
            ("state_2", "retained")
        ]
    );
    // Live ranges: the retained state lives to the end; `x` only in stage 0, `y` to stage 1.
    let range = |name: &str| {
        let r = v.resources.iter().find(|r| r.value == name).unwrap();
        (r.first_stage, r.last_stage)
    };
    assert_eq!(range("state"), (0, 2));
    assert_eq!(range("x"), (0, 0));
    assert_eq!(range("out"), (2, 2));
    // Stage 1 holds state, y, state_1 and state_2.
    assert_eq!(v.peak_live_bytes, 4 * 4 * u64::from(N));
    assert_eq!(v.total_bytes, 6 * 4 * u64::from(N));
    // Ours fuses the in-place updates (one invocation apart): a boundary difference there.
    assert_eq!(our_groups(&ours).len(), 1);
    let first = d
        .iter()
        .find(|d| d.kind == "group_boundary" && d.nodes == [0, 1])
        .unwrap_or_else(|| panic!("{d:?}"));
    assert!(first.vyre.contains("MKL003"), "{first:?}");
    assert!(first.vyrescope.contains("invocation"), "{first:?}");
}

#[test]
fn a_small_search_budget_leaves_edges_unexamined_and_unfused() {
    // One work unit: the first edge is examined (and fused alone); the second never is.
    let budget = Budget {
        max_candidates: 64,
        max_cpu_work: 1,
    };
    let (v, _, d) = both_plans_with(diamond(), "diamond", budget);
    assert_eq!((v.budget.edges, v.budget.edges_examined), (2, 1));
    assert_eq!(v.budget.cpu_work, 1);
    assert_eq!(v.groups.len(), 2, "{:?}", members(&v));
    assert!(
        d.iter()
            .any(|d| d.kind == "group_boundary" && d.vyre.contains("not fused")),
        "{d:?}"
    );
    // One candidate: only the unfused baseline is scored.
    let budget = Budget {
        max_candidates: 1,
        max_cpu_work: 1000,
    };
    let (v, _, _) = both_plans_with(named_chain(), "named_chain", budget);
    assert_eq!(v.budget.candidates_explored, 1);
    assert_eq!(members(&v), [vec![0], vec![1]]);
    // A zero budget is refused with a fix, as is a graph vyre cannot plan.
    let e = plan_graph(
        chain(),
        Budget {
            max_candidates: 0,
            max_cpu_work: 5,
        },
        "chain",
    )
    .unwrap_err();
    assert!(e.fix.contains("--vyre-candidates"), "{e:?}");
    let mut g = ProgramGraph::new();
    let sym = ValueContract {
        shape: vec![ShapeDim::Symbol("batch".into())],
        ..read(N)
    };
    let x = g.add_external_value("x", sym.clone()).unwrap();
    g.add_node(
        "double",
        VP::wrapped(
            vec![
                VB::read("x", 0, DT::U32),
                VB::output("out", 1, DT::U32).with_count(N),
            ],
            [64, 1, 1],
            vec![N::store("out", E::gid_x(), E::load("x", E::gid_x()))],
        ),
        vec![port("x", x, sym)],
        vec![out_port("out", "out", result(N))],
    )
    .unwrap();
    match plan_graph(g, Budget::default(), "symbolic") {
        Err(e) => {
            assert!(
                e.message.contains("symbolic") && e.message.contains("[MKC"),
                "{e:?}"
            );
            assert!(!e.fix.is_empty(), "{e:?}");
        }
        Ok(v) => panic!("planned a graph with an unbound symbol: {v:?}"),
    }
}

#[test]
fn plan_command_prints_both_plans_and_the_three_key_json() {
    let t = tempfile::tempdir().unwrap();
    let path = t.path().join("named_chain.vgr");
    std::fs::write(&path, named_chain().to_wire().unwrap()).unwrap();
    let path = path.to_str().unwrap();
    let (code, stdout, err) = cli_in(&["plan", path, "--no-cache"], t.path());
    assert_eq!(code, 0, "{stdout}{err}");
    for want in [
        "vyre-megakernel 0.7.2 plan",
        "in-kernel GridSync after double",
        "vyrescope plan:",
        "cost ",
        "peak_live_bytes",
        "differences (1):",
        "kernel_barrier",
    ] {
        assert!(stdout.contains(want), "{want}: {stdout}");
    }
    let (code, stdout, err) = cli_in(&["plan", path, "--json", "--no-cache"], t.path());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["differences", "vyre", "vyrescope"]);
    assert_eq!(v["vyre"]["source"], "computed");
    assert_eq!(
        v["vyre"]["groups"][0]["kernel_barriers"][0]["ordering"],
        "grid_sync"
    );
    assert_eq!(v["vyrescope"]["launches"], 1);
    assert_eq!(v["differences"][0]["kind"], "kernel_barrier");
    // An artifact: the plan it records, unless a budget asks for a new one.
    let vmk = fixture_dir().join("chain.vmk");
    let vmk = vmk.to_str().unwrap();
    let (code, stdout, err) = cli_in(&["plan", vmk, "--json", "--no-cache"], t.path());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["vyre"]["source"], "artifact");
    assert_eq!(v["vyre"]["budget"]["budget"]["max_candidates"], 64);
    let (code, stdout, err) = cli_in(
        &[
            "plan",
            vmk,
            "--json",
            "--no-cache",
            "--vyre-candidates",
            "1",
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["vyre"]["source"], "computed");
    assert_eq!(v["vyre"]["groups"].as_array().unwrap().len(), 2);
    // A pipeline: today's plan JSON, or with --vyre the comparison.
    let chain_json =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/chain.json");
    let chain_json = chain_json.to_str().unwrap();
    let (code, stdout, err) = cli_in(&["plan", chain_json, "--json", "--no-cache"], t.path());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v.get("groups").is_some() && v.get("vyre").is_none(), "{v}");
    let (code, stdout, err) = cli_in(
        &["plan", chain_json, "--vyre", "--json", "--no-cache"],
        t.path(),
    );
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(v["vyre"]["groups"].is_array() && v["vyrescope"]["groups"].is_array());
    assert!(v["differences"].is_array());
    // A zero budget: an error with a fix, no panic.
    let (code, stdout, err) = cli_in(&["plan", path, "--vyre-budget", "0"], t.path());
    assert_eq!(code, 1, "{stdout}");
    assert!(err.contains("Fix:") && !err.contains("panicked"), "{err}");
}

/// x -> `first` (every invocation stores x[0] into y[0]) -> `spread` (out[i] = y[0] + i).
pub(crate) fn broadcast_chain() -> ProgramGraph {
    let mut g = ProgramGraph::new();
    let x = input(&mut g, "x", N.into());
    let (_, y) = g
        .add_node(
            "first",
            VP::wrapped(
                vec![
                    VB::read("x", 0, DT::U32).with_count(N),
                    VB::output("y", 1, DT::U32).with_count(1),
                ],
                [64, 1, 1],
                vec![N::store("y", E::u32(0), E::load("x", E::u32(0)))],
            ),
            vec![port("x", x, read(N))],
            vec![out_port("y", "y", temp(1))],
        )
        .unwrap();
    g.add_node(
        "spread",
        VP::wrapped(
            vec![
                VB::read("y", 0, DT::U32).with_count(1),
                VB::output("out", 1, DT::U32).with_count(N),
            ],
            [64, 1, 1],
            vec![
                N::let_bind("i", E::gid_x()),
                N::if_then(
                    E::lt(E::var("i"), E::buf_len("out")),
                    vec![N::store(
                        "out",
                        E::var("i"),
                        E::add(E::load("y", E::u32(0)), E::var("i")),
                    )],
                ),
            ],
        ),
        vec![port("y", y[0], read(1))],
        vec![out_port("out", "out", result(N))],
    )
    .unwrap();
    g
}

#[test]
fn a_uniform_store_gets_a_workgroup_barrier_from_vyre_where_we_need_a_grid_barrier() {
    let (v, ours, d) = both_plans(broadcast_chain(), "broadcast_chain");
    check_cost(&v, "broadcast_chain");
    assert_eq!(members(&v), [vec![0, 1]]);
    let orderings: Vec<&str> = v.groups[0]
        .kernel_barriers
        .iter()
        .map(|k| k.ordering.as_str())
        .collect();
    assert_eq!(orderings, ["seq_cst"], "{:?}", v.groups[0]);
    let (kind, reason) = vyrescope::megakernel::against_vyre::our_separation(&ours, 0, 1).unwrap();
    assert_eq!(kind, vyrescope::megakernel::DepKind::Grid, "{reason}");
    let kb = d
        .iter()
        .find(|d| d.kind == "kernel_barrier")
        .unwrap_or_else(|| panic!("{d:?}"));
    assert!(
        kb.vyre.contains("Barrier{SeqCst}") && kb.vyre.contains("weaker"),
        "{kb:?}"
    );
    assert!(kb.vyrescope.starts_with("grid barrier"), "{kb:?}");
}

#[test]
fn inspector_plan_tab_switches_to_vyres_plan_with_v() {
    let t = tempfile::tempdir().unwrap();
    let g = fixture_dir().join("named_chain.vgr");
    let g = g.to_str().unwrap();
    let screen = |keys: &str| {
        let (code, stdout, err) = cli_in(
            &[
                "tui",
                g,
                "--keys",
                keys,
                "--size",
                "80x24",
                "--snapshot",
                "-",
            ],
            t.path(),
        );
        assert_eq!(code, 0, "{keys}: {stdout}{err}");
        stdout
    };
    let vyre = screen("7 V");
    assert!(
        vyre.contains("vyre-megakernel's plan (V: ours again)")
            && vyre.contains("in-kernel GridSync after double"),
        "{vyre}"
    );
    // Expanded, the differences are in view.
    let expanded = screen("7 V e");
    assert!(
        expanded.contains("differences (1)") && expanded.contains("kernel_barrier"),
        "{expanded}"
    );
    // V again: our wave diagram.
    let ours = screen("7 V V");
    assert!(
        !ours.contains("vyre-megakernel") && ours.contains("group 0"),
        "{ours}"
    );
}
