//! vyre's own ProgramGraphs as bundled fixtures (feature `vyre`): vyre-libs' dense gated MLP
//! block (`vyre_libs::nn::model::dense_gated_mlp_graph`, called as it is) at a small and a
//! GPU-timing size, and the graphs of vyre-megakernel 0.7.2's tests, rebuilt here through the
//! public ProgramGraph API (those tests build them inline). Each fixture is the graph's
//! `ProgramGraph::to_wire` bytes (`VYRESCOPE_BLESS=1` rewrites them); each opens as a
//! pipeline that plans, and its reference run gives what the nodes compute on the host.

use std::path::PathBuf;

use vyre_foundation::ir::{
    BufferAccess as VA, BufferDecl as VB, DataType as DT, Expr as E, GraphInput, GraphOutput,
    Node as N, Program as VP, ProgramGraph, ShapeDim, ValueContract, ValueLifetime as L,
};
use vyre_libs::nn::model::{dense_gated_mlp_graph, DenseGatedMlpSpec};


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
/// For GPU timing: 1 x 64 token rows, hidden 512, intermediate 1024 (65536 hidden and 131072
/// intermediate elements, 2^19 weights per projection, about 10^8 multiply-adds).
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
