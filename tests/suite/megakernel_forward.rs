//! Register forwarding and transient buffers in fused Programs, and steps of different
//! one-dimensional grids without a grid barrier between them: every case runs against the
//! separate steps on the reference interpreter bit for bit (the harness of
//! `megakernel_fuse`), from random inputs, on partial grids, and the fused Program is checked
//! to load and store exactly what forwarding allows.

use std::collections::HashMap;
use std::path::Path;

use vyrescope::inputs::LaunchShape;
use vyrescope::ir::{load_pipeline, ElemType, Expr, Program, StmtKind};
use vyrescope::megakernel::{fuse_group, DepKind, FusedGroupSpec, Separation};

use crate::megakernel_fuse::{
    add1, check, prog, reduce_partials, rnd, run_bound, scale2, Case, F32_IN, G40, N, PERSISTENT,
    WG,
};

/// Loads and stores per buffer in `p`: `(loads, stores)`.
fn accesses(p: &Program) -> HashMap<String, (usize, usize)> {
    let mut out: HashMap<String, (usize, usize)> = HashMap::new();
    let note_expr = |e: &Expr, out: &mut HashMap<String, (usize, usize)>| {
        e.visit(&mut |x| {
            if let Expr::Load { buffer, .. } = x {
                out.entry(buffer.clone()).or_default().0 += 1;
            }
        })
    };
    p.walk_stmts(&mut |s| match &s.kind {
        StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => note_expr(value, &mut out),
        StmtKind::Store {
            buffer,
            index,
            value,
        } => {
            note_expr(index, &mut out);
            note_expr(value, &mut out);
            out.entry(buffer.clone()).or_default().1 += 1;
        }
        StmtKind::If { cond, .. } => note_expr(cond, &mut out),
        StmtKind::Loop { from, to, .. } => {
            note_expr(from, &mut out);
            note_expr(to, &mut out);
        }
        _ => {}
    });
    out
}

/// `(loads, stores)` of `buffer` in the fused Program of `case` (launch grid = step grids).
fn fused_accesses(case: &Case, buffer: &str) -> (usize, usize) {
    let (pipeline, shapes) = case.pipeline();
    let k = fuse_group(&pipeline, &shapes, &case.spec(None)).expect("fuses");
    accesses(&k.program)
        .get(buffer)
        .copied()
        .unwrap_or_default()
}

#[test]
fn chain_forwards_and_drops_transient_stores() {
    let case = Case {
        name: "fwd_chain",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(101, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(102, -1.0, 1.0)),
            ("z", ElemType::F32, N, rnd(103, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(104, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (scale2(), vec![("src", "y"), ("dst", "z")], G40),
            (scale2(), vec![("src", "z"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Invocation, DepKind::Invocation],
        transient: vec!["y", "z"],
    };
    check(&case, &PERSISTENT);
    assert_eq!(fused_accesses(&case, "x"), (1, 0));
    assert_eq!(
        fused_accesses(&case, "y"),
        (0, 0),
        "y: forwarded, store dropped"
    );
    assert_eq!(
        fused_accesses(&case, "z"),
        (0, 0),
        "z: forwarded, store dropped"
    );
    assert_eq!(fused_accesses(&case, "out"), (0, 1));

    // Not transient: forwarded, but still written for whoever reads it later.
    let kept = Case {
        transient: vec![],
        name: "fwd_chain_kept",
        ..case
    };
    check(&kept, &PERSISTENT);
    assert_eq!(fused_accesses(&kept, "y"), (0, 1));
    assert_eq!(fused_accesses(&kept, "z"), (0, 1));
}

#[test]
fn unguarded_load_after_guarded_store_reads_memory() {
    // add1 loads its source before its `if i < len` guard, so on the partial last workgroup
    // the load runs where scale2's guarded store did not: it must not be forwarded, and the
    // transient `y` must keep its store.
    let case = Case {
        name: "fwd_unguarded",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(111, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(112, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(113, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (add1(), vec![("src", "y"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Invocation],
        transient: vec!["y"],
    };
    check(&case, &PERSISTENT);
    assert_eq!(fused_accesses(&case, "y"), (1, 1));
}

#[test]
fn conditional_and_repeated_stores_forward_only_where_they_ran() {
    // Step 0 stores y[i] for every i < len, then again for i % 3 == 0, and z[i] only for even
    // i. Step 1 reads y[i] under i % 3 == 0 (the second store: forwarded), y[i] in the other
    // branch (either store may be the last: memory), z[i] for every i (odd i keep the old,
    // random contents: memory) and z[i] under i % 2 == 0 (forwarded).
    let stores = prog(
        "stores",
        WG,
        r#"{"name": "src", "binding": 0, "access": "read", "type": "f32"},
           {"name": "y", "binding": 1, "access": "write", "type": "f32"},
           {"name": "z", "binding": 2, "access": "write", "type": "f32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "y"}]}, "then": [
             {"let": "v", "value": {"load": "src", "index": "i"}},
             {"store": "y", "index": "i", "value": {"mul": ["v", 3.0]}},
             {"if": {"eq": [{"rem": ["i", 3]}, 0]}, "then": [
               {"store": "y", "index": "i", "value": {"add": ["v", 7.0]}}]},
             {"if": {"eq": [{"rem": ["i", 2]}, 0]}, "then": [
               {"store": "z", "index": "i", "value": {"sub": ["v", 0.25]}}]}]}"#,
    );
    let uses = prog(
        "uses",
        WG,
        r#"{"name": "y", "binding": 0, "access": "read", "type": "f32"},
           {"name": "z", "binding": 1, "access": "read", "type": "f32"},
           {"name": "out", "binding": 2, "access": "write", "type": "f32"}"#,
        r#"{"let": "j", "value": {"gid": "x"}},
           {"if": {"lt": ["j", {"len": "out"}]}, "then": [
             {"let": "zz", "value": {"load": "z", "index": "j"}},
             {"if": {"eq": [{"rem": ["j", 3]}, 0]}, "then": [
               {"store": "out", "index": "j", "value": {"add": [{"load": "y", "index": "j"}, "zz"]}}
             ], "else": [
               {"store": "out", "index": "j", "value": {"mul": [{"load": "y", "index": "j"}, "zz"]}}]},
             {"if": {"eq": [{"rem": ["j", 2]}, 0]}, "then": [
               {"store": "out", "index": "j", "value": {"sub": [{"load": "out", "index": "j"},
                                                                {"load": "z", "index": "j"}]}}]}]}"#,
    );
    let case = Case {
        name: "fwd_conditional",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(121, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(122, -1.0, 1.0)),
            ("z", ElemType::F32, N, rnd(123, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(124, -1.0, 1.0)),
        ],
        steps: vec![
            (stores, vec![("src", "x"), ("y", "y"), ("z", "z")], G40),
            (uses, vec![("y", "y"), ("z", "z"), ("out", "out")], G40),
        ],
        seps: vec![DepKind::Invocation],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
    // y: the else-branch load stays; z: the unconditional load stays; out: its own store in
    // the then/else branches is not certain at the last `if`, so that load stays too.
    assert_eq!(fused_accesses(&case, "y"), (1, 2));
    assert_eq!(fused_accesses(&case, "z"), (1, 1));
    assert_eq!(fused_accesses(&case, "out"), (1, 3));
}

#[test]
fn intervening_writes_and_barriers_end_forwarding() {
    // Step 1 stores y at an index that is always i but not provably so (it goes through a
    // load): the value step 0 stored may be overwritten, so step 2 must read memory.
    let overwrite = prog(
        "overwrite",
        WG,
        F32_IN,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"let": "v", "value": {"load": "src", "index": "i"}},
             {"let": "k", "value": {"select": [{"gt": ["v", 0.0]}, "i", "i"]}},
             {"if": {"lt": ["v", 0.5]}, "then": [
               {"store": "dst", "index": "k", "value": {"mul": ["v", 5.0]}}]}]}"#,
    );
    let case = Case {
        name: "fwd_overwrite",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(131, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(132, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(133, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (overwrite, vec![("src", "x"), ("dst", "y")], G40),
            (scale2(), vec![("src", "y"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Invocation, DepKind::Invocation],
        transient: vec!["y"],
    };
    check(&case, &PERSISTENT);
    assert_eq!(fused_accesses(&case, "y"), (1, 2));

    // A barrier between the steps: no forwarding across it.
    let barrier = Case {
        name: "fwd_barrier",
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (scale2(), vec![("src", "y"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Workgroup],
        ..case
    };
    check(&barrier, &PERSISTENT);
    assert_eq!(fused_accesses(&barrier, "y"), (1, 1));
}

#[test]
fn storage_only_buffers_are_not_forwarded() {
    // An f16 store rounds: the value read back is not the value stored.
    let to_half = prog(
        "to_half",
        WG,
        r#"{"name": "src", "binding": 0, "access": "read", "type": "f32"},
           {"name": "dst", "binding": 1, "access": "write", "type": "f16"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"mul": [{"load": "src", "index": "i"}, 1.1]}}]}"#,
    );
    let from_half = prog(
        "from_half",
        WG,
        r#"{"name": "src", "binding": 0, "access": "read", "type": "f16"},
           {"name": "dst", "binding": 1, "access": "write", "type": "f32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"load": "src", "index": "i"}}]}"#,
    );
    let case = Case {
        name: "fwd_f16",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(141, -3.0, 3.0)),
            ("h", ElemType::F16, N, rnd(142, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(143, -1.0, 1.0)),
        ],
        steps: vec![
            (to_half, vec![("src", "x"), ("dst", "h")], G40),
            (from_half, vec![("src", "h"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Invocation],
        transient: vec!["h"],
    };
    check(&case, &PERSISTENT);
    assert_eq!(fused_accesses(&case, "h"), (1, 1));
}

#[test]
fn chain3_transient_fixture_moves_two_buffers() {
    let pipeline = load_pipeline(Path::new("fixtures/pipelines/chain3_transient.json"))
        .expect("fixture parses");
    let shape = LaunchShape {
        workgroup_size: [256, 1, 1],
        grid: [16, 1, 1],
    };
    let shapes = vec![shape; 3];
    let spec = |steps: Vec<usize>| FusedGroupSpec {
        separations: steps[..steps.len() - 1]
            .iter()
            .map(|&k| Separation {
                after_step: k,
                kind: DepKind::Invocation,
                reason: "test".into(),
            })
            .collect(),
        steps,
        persistent_blocks: None,
        dataflow: None,
        implied: Vec::new(),
        no_prefetch: false,
        halo: None,
    };
    let k = fuse_group(&pipeline, &shapes, &spec(vec![0, 1, 2])).expect("fuses");
    let acc = accesses(&k.program);
    let get = |b: &str| acc.get(b).copied().unwrap_or_default();
    assert_eq!(get("x"), (1, 0), "one load of x");
    assert_eq!(get("out"), (0, 1), "one store of out");
    assert_eq!(get("t1"), (0, 0));
    assert_eq!(get("t2"), (0, 0));
    assert_eq!(k.forwarding.forwarded_loads, 2);
    assert_eq!(
        k.forwarding.dropped,
        vec!["t1".to_string(), "t2".to_string()]
    );

    // Same result as the steps one by one (the interpreter, bit for bit, on `out`).
    let initial: HashMap<String, (ElemType, Vec<u8>)> = pipeline
        .buffers
        .iter()
        .map(|b| {
            let len = b.contents.len.expect("fixture lengths") as usize;
            let fill = match &b.contents.source {
                vyrescope::ir::InputSource::Fill(f) => *f,
                other => panic!("unexpected source {other:?}"),
            };
            let data =
                vyrescope::inputs::contents::fill_bytes(&b.name, b.elem, len, fill).expect("fill");
            (b.name.clone(), (b.elem, data))
        })
        .collect();
    let mut want = initial.clone();
    for (i, step) in pipeline.steps.iter().enumerate() {
        run_bound(
            &step.program,
            &shapes[i],
            &|n| step.bound(n).expect("bound").to_string(),
            &mut want,
        );
    }
    let mut got = initial;
    run_bound(&k.program, &k.shape, &|n| n.to_string(), &mut got);
    assert_eq!(got["out"], want["out"]);
    assert_ne!(got["out"], got["x"], "the chain changed something");

    // Steps 0 and 1 alone: t2 is read by step 2 outside the group, so it is still stored;
    // t1 is not.
    let k = fuse_group(&pipeline, &shapes, &spec(vec![0, 1])).expect("fuses");
    let acc = accesses(&k.program);
    assert_eq!(acc.get("t1").copied().unwrap_or_default(), (0, 0));
    assert_eq!(acc.get("t2").copied().unwrap_or_default(), (0, 1));
}

#[test]
fn different_one_dimensional_grids_need_no_grid_barrier() {
    // Step 1 runs 20 workgroups over the first 640 elements of what step 0 (40 workgroups)
    // wrote: an invocation dependence; step 2 (30 workgroups) reads a neighbour within its
    // workgroup of what step 1 wrote: a workgroup dependence.
    let neighbour = prog(
        "neighbour",
        WG,
        F32_IN,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"let": "j", "value": {"add": [{"mul": [{"wgid": "x"}, 32]},
                                          {"rem": [{"add": [{"lid": "x"}, 3]}, 32]}]}},
           {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
             {"store": "dst", "index": "i", "value": {"sub": [{"load": "src", "index": "j"},
                                                              {"load": "src", "index": "i"}]}}]}"#,
    );
    let case = Case {
        name: "grids_1d",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(151, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(152, -1.0, 1.0)),
            ("z", ElemType::F32, N, rnd(153, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(154, -1.0, 1.0)),
        ],
        steps: vec![
            (scale2(), vec![("src", "x"), ("dst", "y")], G40),
            (add1(), vec![("src", "y"), ("dst", "z")], [20, 1, 1]),
            (neighbour, vec![("src", "z"), ("dst", "out")], [30, 1, 1]),
        ],
        seps: vec![DepKind::Invocation, DepKind::Workgroup],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
    let (pipeline, shapes) = case.pipeline();
    for p in PERSISTENT {
        let k = fuse_group(&pipeline, &shapes, &case.spec(p)).expect("fuses");
        let mut grid_barriers = 0;
        k.program.walk_stmts(&mut |s| {
            if let StmtKind::Barrier(vyrescope::ir::BarrierScope::Grid) = s.kind {
                grid_barriers += 1;
            }
        });
        assert_eq!(grid_barriers, 0, "persistent {p:?}");
    }
}

#[test]
fn workgroup_arrays_are_reused_behind_a_barrier() {
    // Steps 0 and 1 each use a 32-float `tile`, a workgroup barrier apart: one array. Step 2's
    // `tile` follows step 1 without a barrier: it gets its own.
    let rotate = |name: &str, shift: u32| {
        prog(
            name,
            WG,
            r#"{"name": "src", "binding": 0, "access": "read", "type": "f32"},
               {"name": "dst", "binding": 1, "access": "read_write", "type": "f32"},
               {"name": "tile", "access": "workgroup", "type": "f32", "count": 32}"#,
            &format!(
                r#"{{"store": "tile", "index": {{"lid": "x"}}, "value": {{"mul": [{{"load": "src", "index": {{"gid": "x"}}}}, 2.0]}}}},
                   {{"barrier": "workgroup"}},
                   {{"let": "i", "value": {{"gid": "x"}}}},
                   {{"if": {{"lt": ["i", {{"len": "dst"}}]}}, "then": [
                     {{"store": "dst", "index": "i", "value": {{"add": [
                       {{"load": "tile", "index": {{"rem": [{{"add": [{{"lid": "x"}}, {shift}]}}, 32]}}}},
                       {{"load": "dst", "index": "i"}}]}}}}]}}"#
            ),
        )
    };
    let case = Case {
        name: "shared_reuse",
        buffers: vec![
            ("x", ElemType::F32, N, rnd(161, 0.5, 2.0)),
            ("partial", ElemType::F32, 40, rnd(162, -1.0, 1.0)),
            ("y", ElemType::F32, N, rnd(163, -1.0, 1.0)),
            ("out", ElemType::F32, N, rnd(164, -1.0, 1.0)),
        ],
        steps: vec![
            (
                reduce_partials(),
                vec![("x", "x"), ("partial", "partial")],
                G40,
            ),
            (rotate("rot1", 1), vec![("src", "x"), ("dst", "y")], G40),
            (rotate("rot5", 5), vec![("src", "x"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Workgroup, DepKind::None],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
    let (pipeline, shapes) = case.pipeline();
    for p in PERSISTENT {
        let k = fuse_group(&pipeline, &shapes, &case.spec(p)).expect("fuses");
        let shared: Vec<&str> = k
            .program
            .buffers
            .iter()
            .filter(|b| !b.access.is_host())
            .map(|b| b.name.as_str())
            .collect();
        assert_eq!(shared, vec!["s0_tile", "s2_tile"], "persistent {p:?}");
    }
}

#[test]
fn out_of_range_stores_are_not_forwarded() {
    // Step 0 stores y[i] for every thread, also past the end of y (those stores do nothing);
    // step 1 reads y[i] for every i < len(out), which is longer than y: past the end of y the
    // load gives 0, not the value the thread tried to store.
    let unguarded = prog(
        "unguarded",
        WG,
        F32_IN,
        r#"{"store": "dst", "index": {"gid": "x"}, "value": {"mul": [{"load": "src", "index": {"gid": "x"}}, 2.0]}}"#,
    );
    let case = Case {
        name: "fwd_out_of_range",
        buffers: vec![
            ("x", ElemType::F32, 40 * 32, rnd(171, -3.0, 3.0)),
            ("y", ElemType::F32, N, rnd(172, -1.0, 1.0)),
            ("out", ElemType::F32, 40 * 32, rnd(173, -1.0, 1.0)),
        ],
        steps: vec![
            (unguarded, vec![("src", "x"), ("dst", "y")], G40),
            (scale2(), vec![("src", "y"), ("dst", "out")], G40),
        ],
        seps: vec![DepKind::Invocation],
        transient: vec!["y"],
    };
    check(&case, &PERSISTENT);
    assert_eq!(fused_accesses(&case, "y"), (1, 1));
}
