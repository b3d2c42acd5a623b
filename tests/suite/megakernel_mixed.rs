//! Mixed workgroup sizes in one fused launch: steps of 256, 64, 32 and 1 threads share blocks
//! of the largest size, the smaller ones masking the extra threads. Each case runs its steps one
//! by one on the reference interpreter, then the fused Program once (ordinary and persistent
//! grids), and every pipeline buffer must end bit for bit the same from random inputs; the
//! fused PTX must assemble with ptxas (see `megakernel_fuse::check`).

use vyrescope::ir::{BinOp, ElemType, Expr, Literal, Scalar, Stmt, StmtKind};
use vyrescope::megakernel::{fuse_group, DepKind};

use super::megakernel_fuse::{check, expected, first_difference, prog, rnd, Case, PERSISTENT};

/// Elements: not a multiple of any workgroup size, so every step has a partial workgroup.
const N: usize = 4096 + 77;

fn grid(wg: usize) -> [u32; 3] {
    [N.div_ceil(wg) as u32, 1, 1]
}

/// u32 host buffers `(name, access)`, bindings in order.
fn bufs(list: &[(&str, &str)]) -> String {
    list.iter()
        .enumerate()
        .map(|(i, (n, a))| {
            format!(r#"{{"name": "{n}", "binding": {i}, "access": "{a}", "type": "u32"}}"#)
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn histogram_one_thread_cdf_then_map() {
    let hist = prog(
        "hist",
        [256, 1, 1],
        &bufs(&[("x", "read"), ("h", "read_write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "x"}]}, "then": [
             {"let": "old", "value": {"atomic": "add", "buffer": "h",
               "index": {"and": [{"load": "x", "index": "i"}, 255]}, "value": 1}}]}"#,
    );
    let cdf = prog(
        "cdf",
        [1, 1, 1],
        &bufs(&[("h", "read"), ("c", "write")]),
        r#"{"let": "acc", "value": 0},
           {"loop": "k", "from": 0, "to": 256, "body": [
             {"assign": "acc", "value": {"add": ["acc", {"load": "h", "index": "k"}]}},
             {"store": "c", "index": "k", "value": "acc"}]}"#,
    );
    let map = prog(
        "map",
        [256, 1, 1],
        &bufs(&[("x", "read"), ("c", "read"), ("y", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "y"}]}, "then": [
             {"store": "y", "index": "i", "value": {"div": [
               {"mul": [{"load": "c", "index": {"and": [{"load": "x", "index": "i"}, 255]}}, 255]},
               {"len": "x"}]}}]}"#,
    );
    let case = Case {
        name: "hist_equalize",
        buffers: vec![
            ("x", ElemType::U32, N, rnd(101, 0.0, 1.0e6)),
            ("h", ElemType::U32, 256, rnd(102, 0.0, 3.0)),
            ("c", ElemType::U32, 256, rnd(103, 0.0, 1.0e6)),
            ("y", ElemType::U32, N, rnd(104, 0.0, 1.0e6)),
        ],
        steps: vec![
            (hist, vec![("x", "x"), ("h", "h")], grid(256)),
            (cdf, vec![("h", "h"), ("c", "c")], [1, 1, 1]),
            (map, vec![("x", "x"), ("c", "c"), ("y", "y")], grid(256)),
        ],
        seps: vec![DepKind::Grid, DepKind::Grid],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

/// A 32-thread tree reduction per workgroup (workgroup barriers in a loop, a workgroup-uniform
/// return before them) between 256- and 64-thread steps, then two 32-thread steps separated by
/// a workgroup barrier only.
#[test]
fn barriers_returns_and_shared_memory_in_smaller_steps() {
    let scale = prog(
        "scale",
        [256, 1, 1],
        &bufs(&[("x", "read"), ("y", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "y"}]}, "then": [
             {"store": "y", "index": "i", "value": {"add": [{"mul": [{"load": "x", "index": "i"}, 3]}, 1]}}]}"#,
    );
    let block_sum = prog(
        "block_sum32",
        [32, 1, 1],
        &format!(
            r#"{}, {{"name": "tile", "access": "workgroup", "type": "u32", "count": 32}}"#,
            bufs(&[("y", "read"), ("sums", "write")])
        ),
        r#"{"if": {"eq": [{"rem": [{"wgid": "x"}, 5]}, 3]}, "then": [{"return": {}}]},
           {"store": "tile", "index": {"lid": "x"}, "value": {"load": "y", "index": {"gid": "x"}}},
           {"barrier": "workgroup"},
           {"loop": "r", "from": 0, "to": 5, "body": [
             {"let": "h", "value": {"shr": [16, "r"]}},
             {"if": {"lt": [{"lid": "x"}, "h"]}, "then": [
               {"store": "tile", "index": {"lid": "x"}, "value": {"add": [
                 {"load": "tile", "index": {"lid": "x"}},
                 {"load": "tile", "index": {"add": [{"lid": "x"}, "h"]}}]}}]},
             {"barrier": "workgroup"}]},
           {"if": {"eq": [{"lid": "x"}, 0]}, "then": [
             {"store": "sums", "index": {"wgid": "x"}, "value": {"load": "tile", "index": 0}}]}"#,
    );
    let add_sums = prog(
        "add_sums",
        [64, 1, 1],
        &bufs(&[("y", "read"), ("sums", "read"), ("z", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "z"}]}, "then": [
             {"store": "z", "index": "i", "value": {"xor": [{"load": "y", "index": "i"},
               {"load": "sums", "index": {"div": ["i", 32]}}]}}]}"#,
    );
    let double = prog(
        "double32",
        [32, 1, 1],
        &bufs(&[("z", "read"), ("w", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"store": "w", "index": "i", "value": {"mul": [{"load": "z", "index": "i"}, 2]}}"#,
    );
    let rotate = prog(
        "rotate32",
        [32, 1, 1],
        &bufs(&[("w", "read"), ("out", "write")]),
        r#"{"let": "j", "value": {"add": [{"mul": [{"wgid": "x"}, 32]}, {"rem": [{"add": [{"lid": "x"}, 7]}, 32]}]}},
           {"store": "out", "index": {"gid": "x"}, "value": {"add": [{"load": "w", "index": "j"}, {"lid": "x"}]}}"#,
    );
    let case = Case {
        name: "mixed_barriers",
        buffers: vec![
            ("x", ElemType::U32, N, rnd(111, 0.0, 1.0e6)),
            ("y", ElemType::U32, N, rnd(112, 0.0, 1.0e6)),
            ("sums", ElemType::U32, N.div_ceil(32), rnd(113, 0.0, 1.0e6)),
            ("z", ElemType::U32, N, rnd(114, 0.0, 1.0e6)),
            ("w", ElemType::U32, N, rnd(115, 0.0, 1.0e6)),
            ("out", ElemType::U32, N, rnd(116, 0.0, 1.0e6)),
        ],
        steps: vec![
            (scale, vec![("x", "x"), ("y", "y")], grid(256)),
            (block_sum, vec![("y", "y"), ("sums", "sums")], grid(32)),
            (
                add_sums,
                vec![("y", "y"), ("sums", "sums"), ("z", "z")],
                grid(64),
            ),
            (double, vec![("z", "z"), ("w", "w")], grid(32)),
            (rotate, vec![("w", "w"), ("out", "out")], grid(32)),
        ],
        seps: vec![
            DepKind::Grid,
            DepKind::Grid,
            DepKind::Grid,
            DepKind::Workgroup,
        ],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

/// A 64-thread step reducing over its subgroups next to a 256-thread step: whole subgroups are
/// masked, so the reduction sees exactly its own lanes.
#[test]
fn subgroup_operations_in_a_smaller_step() {
    let scale = prog(
        "scale",
        [256, 1, 1],
        &bufs(&[("x", "read"), ("y", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "y"}]}, "then": [
             {"store": "y", "index": "i", "value": {"sub": [{"load": "x", "index": "i"}, 5]}}]}"#,
    );
    let warp_sum = prog(
        "warp_sum64",
        [64, 1, 1],
        &bufs(&[("y", "read"), ("z", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"let": "s", "value": {"subgroup_reduce": "add", "value": {"load": "y", "index": "i"}}},
           {"if": {"lt": ["i", {"len": "z"}]}, "then": [
             {"store": "z", "index": "i", "value": {"add": ["s", {"lane": {}}]}}]}"#,
    );
    let case = Case {
        name: "mixed_subgroups",
        buffers: vec![
            ("x", ElemType::U32, N, rnd(121, 0.0, 1.0e6)),
            ("y", ElemType::U32, N, rnd(122, 0.0, 1.0e6)),
            ("z", ElemType::U32, N, rnd(123, 0.0, 1.0e6)),
        ],
        steps: vec![
            (scale, vec![("x", "x"), ("y", "y")], grid(256)),
            (warp_sum, vec![("y", "y"), ("z", "z")], grid(64)),
        ],
        seps: vec![DepKind::Grid],
        transient: vec![],
    };
    check(&case, &PERSISTENT);
}

#[test]
fn weak_separations_between_sizes_and_unmappable_sizes_are_errors() {
    let small = prog(
        "small",
        [32, 1, 1],
        &bufs(&[("x", "read"), ("y", "write")]),
        r#"{"store": "y", "index": {"gid": "x"}, "value": {"load": "x", "index": {"gid": "x"}}}"#,
    );
    let big = prog(
        "big",
        [128, 1, 1],
        &bufs(&[("x", "read"), ("y", "write")]),
        r#"{"store": "y", "index": {"gid": "x"}, "value": {"load": "x", "index": {"gid": "x"}}}"#,
    );
    let mut case = Case {
        name: "bad_mixed",
        buffers: vec![
            ("a", ElemType::U32, N, rnd(131, 0.0, 9.0)),
            ("b", ElemType::U32, N, rnd(132, 0.0, 9.0)),
            ("c", ElemType::U32, N, rnd(133, 0.0, 9.0)),
        ],
        steps: vec![
            (big, vec![("x", "a"), ("y", "b")], grid(128)),
            (small, vec![("x", "b"), ("y", "c")], grid(32)),
        ],
        seps: vec![DepKind::Invocation],
        transient: vec![],
    };
    let (pipeline, shapes) = case.pipeline();
    let e = fuse_group(&pipeline, &shapes, &case.spec(None)).expect_err("invocation across sizes");
    let text = e.to_string();
    assert!(
        text.contains("different workgroup sizes") && text.contains("Fix:"),
        "{text}"
    );
    case.seps = vec![DepKind::Workgroup];
    let (pipeline, shapes) = case.pipeline();
    assert!(fuse_group(&pipeline, &shapes, &case.spec(None)).is_err());
    // With a grid barrier the same pair fuses, into blocks of 128.
    case.seps = vec![DepKind::Grid];
    let (pipeline, shapes) = case.pipeline();
    let k = fuse_group(&pipeline, &shapes, &case.spec(None)).expect("grid barrier: fuses");
    assert_eq!(k.shape.workgroup_size, [128, 1, 1]);
    check(&case, &[None, Some(5)]);
}

/// Steps of 256, 1024, 64 and 256 threads over grid barriers: the 256- and 64-thread
/// elementwise, neighbour and atomic steps pack 4 and 16 workgroups into each 1024-thread
/// block; the last 256-thread step (a workgroup barrier over shared memory) packs 4 too, with
/// sub-task barriers and one copy of its tile per sub-task (`fuse::pack`).
fn packing_case() -> Case {
    let ids = prog(
        "ids256",
        [256, 1, 1],
        &bufs(&[("x", "read"), ("y", "write"), ("ids", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "y"}]}, "then": [
             {"store": "y", "index": "i", "value": {"add": [{"mul": [{"load": "x", "index": "i"}, 3]}, 1]}},
             {"store": "ids", "index": "i", "value": {"xor": [{"lid": "x"},
               {"add": [{"mul": [{"wgid": "x"}, 4096]}, {"mul": [{"nwg": "x"}, 65536]}]}]}}]}"#,
    );
    let neighbours = prog(
        "neighbours1024",
        [1024, 1, 1],
        &bufs(&[("y", "read"), ("z", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "z"}]}, "then": [
             {"store": "z", "index": "i", "value": {"add": [{"load": "y", "index": "i"},
               {"load": "y", "index": {"rem": [{"add": ["i", 1]}, {"len": "y"}]}}]}}]}"#,
    );
    let hist = prog(
        "hist64",
        [64, 1, 1],
        &bufs(&[("z", "read"), ("h", "read_write"), ("w", "write")]),
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "z"}]}, "then": [
             {"let": "old", "value": {"atomic": "add", "buffer": "h",
               "index": {"and": [{"load": "z", "index": "i"}, 63]}, "value": {"add": [{"lid": "x"}, 1]}}},
             {"store": "w", "index": "i", "value": {"xor": [{"load": "z", "index": "i"}, {"wgid": "x"}]}}]}"#,
    );
    let shared = prog(
        "reverse256",
        [256, 1, 1],
        &format!(
            r#"{}, {{"name": "tile", "access": "workgroup", "type": "u32", "count": 256}}"#,
            bufs(&[("w", "read"), ("out", "write")])
        ),
        r#"{"let": "i", "value": {"min": [{"gid": "x"}, {"sub": [{"len": "w"}, 1]}]}},
           {"store": "tile", "index": {"lid": "x"}, "value": {"load": "w", "index": "i"}},
           {"barrier": "workgroup"},
           {"if": {"lt": [{"gid": "x"}, {"len": "out"}]}, "then": [
             {"store": "out", "index": {"gid": "x"}, "value": {"load": "tile", "index": {"sub": [255, {"lid": "x"}]}}}]}"#,
    );
    Case {
        name: "packed_mixed",
        buffers: vec![
            ("x", ElemType::U32, N, rnd(121, 0.0, 1.0e6)),
            ("y", ElemType::U32, N, rnd(122, 0.0, 1.0e6)),
            ("ids", ElemType::U32, N, rnd(123, 0.0, 1.0e6)),
            ("z", ElemType::U32, N, rnd(124, 0.0, 1.0e6)),
            ("h", ElemType::U32, 64, rnd(125, 0.0, 1.0e3)),
            ("w", ElemType::U32, N, rnd(126, 0.0, 1.0e6)),
            ("out", ElemType::U32, N, rnd(127, 0.0, 1.0e6)),
        ],
        steps: vec![
            (ids, vec![("x", "x"), ("y", "y"), ("ids", "ids")], grid(256)),
            (neighbours, vec![("y", "y"), ("z", "z")], grid(1024)),
            (hist, vec![("z", "z"), ("h", "h"), ("w", "w")], grid(64)),
            (shared, vec![("w", "w"), ("out", "out")], grid(256)),
        ],
        seps: vec![DepKind::Grid, DepKind::Grid, DepKind::Grid],
        transient: vec![],
    }
}

#[test]
fn elementwise_neighbour_and_atomic_steps_pack_into_the_block() {
    let case = packing_case();
    let (pipeline, shapes) = case.pipeline();
    for p in PERSISTENT {
        let k = fuse_group(&pipeline, &shapes, &case.spec(p)).expect("fuses");
        let got: Vec<String> = k.layouts.iter().map(|l| l.describe(1024)).collect();
        assert_eq!(
            got,
            [
                "packed 4 x 256 in 1024".to_string(),
                "whole block".to_string(),
                "packed 16 x 64 in 1024".to_string(),
                "packed 4 x 256 in 1024".to_string()
            ],
            "{p:?}"
        );
        // The shared step's barrier is its sub-task's and its tile is 4 copies long; on a
        // persistent grid (several trips per block) one more closes each trip, so no thread
        // overwrites the tile while a slower one of its sub-task still reads it.
        let text = vyrescope::ir::print::print_program(&k.program).text();
        let barriers = text.matches("barrier(subtask, threads 256)").count();
        let trips = p.map_or(1, |blocks| N.div_ceil(256).div_ceil(blocks as usize * 4));
        assert_eq!(barriers, 1 + usize::from(trips > 1), "{p:?}: {text}");
        let tile = k.program.buffers.iter().find(|b| b.name.ends_with("tile"));
        assert_eq!(tile.and_then(|b| b.count), Some(1024));
    }
    check(&case, &PERSISTENT);
}

/// Applies `f` to every statement of `list`, nested ones included.
fn each_stmt(list: &mut [Stmt], f: &mut dyn FnMut(&mut Stmt)) {
    for s in list {
        f(s);
        match &mut s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                each_stmt(then, f);
                each_stmt(otherwise, f);
            }
            StmtKind::Loop { body, .. } | StmtKind::Block(body) => each_stmt(body, f),
            _ => {}
        }
    }
}

/// A change to one expression of a fused kernel.
type Mutation = fn(&mut Expr);

/// Wrong packing is caught by the comparison: dropping the sub-task from the virtual
/// workgroup id (every sub-task of a block runs the same workgroup) or taking the local id
/// modulo half the step's size.
#[test]
fn a_wrong_sub_task_offset_or_local_id_is_caught() {
    let case = packing_case();
    let (pipeline, shapes) = case.pipeline();
    let expected = expected(&case);
    let k = fuse_group(&pipeline, &shapes, &case.spec(Some(3))).expect("fuses");
    assert_eq!(first_difference(&case, &k, &expected), None);
    let mutations: [(&str, Mutation); 2] = [
        ("f0_v", |e| {
            if let Expr::Binary(BinOp::Add, base, _sub) = e {
                *e = (**base).clone();
            }
        }),
        ("f2_lid_x", |e| {
            if let Expr::Binary(BinOp::Rem, _, s) = e {
                **s = Expr::Lit(Literal::Typed(Scalar::U32(32)));
            }
        }),
    ];
    for (var, mutate) in mutations {
        let mut bad = k.clone();
        let mut hit = 0;
        each_stmt(&mut bad.program.body, &mut |s| {
            if let StmtKind::Let { name, value } = &mut s.kind {
                if name == var {
                    let before = value.clone();
                    mutate(value);
                    hit += usize::from(*value != before);
                }
            }
        });
        assert_eq!(hit, 1, "{var} not found or not changed");
        assert!(
            first_difference(&case, &bad, &expected).is_some(),
            "mutating {var} went unnoticed"
        );
    }
}

/// A 32-element reversal within each sub-task of `sub` threads of a `wg`-thread workgroup
/// through a shared tile, synchronised by `barrier`.
fn reverse_within(name: &str, wg: u32, sub: u32, barrier: &str) -> vyrescope::ir::Program {
    prog(
        name,
        [wg, 1, 1],
        &format!(
            r#"{}, {{"name": "tile", "access": "workgroup", "type": "u32", "count": {wg}}}"#,
            bufs(&[("src", "read"), ("dst", "write")])
        ),
        &format!(
            r#"{{"store": "tile", "index": {{"lid": "x"}}, "value": {{"load": "src", "index": {{"gid": "x"}}}}}},
               {barrier},
               {{"let": "base", "value": {{"mul": [{{"div": [{{"lid": "x"}}, {sub}]}}, {sub}]}}}},
               {{"let": "mirror", "value": {{"sub": [{last}, {{"rem": [{{"lid": "x"}}, {sub}]}}]}}}},
               {{"store": "dst", "index": {{"gid": "x"}},
                 "value": {{"load": "tile", "index": {{"add": ["base", "mirror"]}}}}}}"#,
            last = sub - 1
        ),
    )
}

/// What still masks among steps with barriers or shared memory, each with its reason, and
/// runs exactly: a step with sub-task barriers of its own (guarded per sub-task, `lid.x / 32
/// < 2`), and a 48-thread step with workgroup barriers (a sub-task barrier counts whole
/// warps). A 32-thread step with barriers and a tile in the same block packs 4.
#[test]
fn steps_with_own_subtask_barriers_or_partial_warps_mask_and_stay_exact() {
    let copy = |wg: u32| {
        prog(
            "copy",
            [wg, 1, 1],
            &bufs(&[("src", "read"), ("dst", "write")]),
            r#"{"store": "dst", "index": {"gid": "x"}, "value": {"add": [{"load": "src", "index": {"gid": "x"}}, 1]}}"#,
        )
    };
    let own = reverse_within("own", 64, 32, r#"{"barrier": "subtask", "threads": 32}"#);
    let packs = reverse_within("packs", 32, 32, r#"{"barrier": "workgroup"}"#);
    let case = Case {
        name: "own_subtasks",
        buffers: vec![
            ("a", ElemType::U32, N, rnd(141, 0.0, 1.0e6)),
            ("b", ElemType::U32, N, rnd(142, 0.0, 1.0e6)),
            ("c", ElemType::U32, N, rnd(143, 0.0, 1.0e6)),
            ("d", ElemType::U32, N, rnd(144, 0.0, 1.0e6)),
        ],
        steps: vec![
            (copy(128), vec![("src", "a"), ("dst", "b")], grid(128)),
            (own, vec![("src", "b"), ("dst", "c")], grid(64)),
            (packs, vec![("src", "c"), ("dst", "d")], grid(32)),
        ],
        seps: vec![DepKind::Grid, DepKind::Grid],
        transient: vec![],
    };
    let (pipeline, shapes) = case.pipeline();
    let k = fuse_group(&pipeline, &shapes, &case.spec(None)).expect("fuses");
    let got: Vec<String> = k.layouts.iter().map(|l| l.describe(128)).collect();
    assert_eq!(got[0], "whole block");
    assert!(
        got[1].starts_with("masked 64 of 128") && got[1].contains("already has sub-task barriers"),
        "{got:?}"
    );
    assert_eq!(got[2], "packed 4 x 32 in 128");
    check(&case, &PERSISTENT);

    let partial = reverse_within("partial", 48, 48, r#"{"barrier": "workgroup"}"#);
    let case = Case {
        name: "partial_warps",
        buffers: vec![
            ("a", ElemType::U32, N, rnd(145, 0.0, 1.0e6)),
            ("b", ElemType::U32, N, rnd(146, 0.0, 1.0e6)),
            ("c", ElemType::U32, N, rnd(147, 0.0, 1.0e6)),
        ],
        steps: vec![
            (copy(96), vec![("src", "a"), ("dst", "b")], grid(96)),
            (partial, vec![("src", "b"), ("dst", "c")], grid(48)),
        ],
        seps: vec![DepKind::Grid],
        transient: vec![],
    };
    let (pipeline, shapes) = case.pipeline();
    let k = fuse_group(&pipeline, &shapes, &case.spec(None)).expect("fuses");
    let reason = k.layouts[1].describe(96);
    assert!(
        reason.starts_with("masked 48 of 96") && reason.contains("not a multiple of the 32"),
        "{reason}"
    );
    check(&case, &PERSISTENT);
}
