//! `{"barrier": "subtask", "threads": t}`: the format (parse, write, print), the validator's
//! shape checks (V073) and divergence scope, the interpreter (sub-tasks of a workgroup run
//! like workgroups of their own; a divergent arrival is I005) and the PTX (`bar.sync` on a
//! named barrier per sub-task, accepted by ptxas).

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::inputs::{HostBuffer, LaunchShape};
use vyrescope::interp;
use vyrescope::ir::{
    parse_program, program_to_json, Access, BarrierScope, ElemType, Program, StmtKind,
};
use vyrescope::validate::validate;

fn program(wg: [u32; 3], shared: u32, body: &str) -> Result<Program, String> {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": {wg:?}, "buffers": [
            {{"name": "x", "binding": 0, "access": "read", "type": "u32"}},
            {{"name": "out", "binding": 1, "access": "read_write", "type": "u32"}},
            {{"name": "t", "access": "workgroup", "type": "u32", "count": {shared}}}],
            "body": [{body}]}}"#
    );
    parse_program(&text, "t.json").map_err(|e| e.to_string())
}

/// A tree sum over each group of `group` threads of a workgroup of `wg` threads, in shared
/// memory, synchronised by `barrier`: thread `g * group` of group `g` writes the sum of its
/// group's `x` to `out[gid.x / group]`.
fn tree_sum(wg: u32, group: u32, barrier: &str) -> Program {
    let steps = group.trailing_zeros();
    let body = format!(
        r#"{{"let": "l", "value": {{"rem": [{{"lid": "x"}}, {group}]}}}},
           {{"store": "t", "index": {{"lid": "x"}}, "value": {{"load": "x", "index": {{"gid": "x"}}}}}},
           {barrier},
           {{"loop": "k", "from": 0, "to": {steps}, "body": [
             {{"let": "s", "value": {{"shr": [{half}, "k"]}}}},
             {{"if": {{"lt": ["l", "s"]}}, "then": [
               {{"store": "t", "index": {{"lid": "x"}}, "value": {{"add": [
                 {{"load": "t", "index": {{"lid": "x"}}}},
                 {{"load": "t", "index": {{"add": [{{"lid": "x"}}, "s"]}}}}]}}}}]}},
             {barrier}]}},
           {{"if": {{"eq": ["l", 0]}}, "then": [
             {{"store": "out", "index": {{"div": [{{"gid": "x"}}, {group}]}},
               "value": {{"load": "t", "index": {{"lid": "x"}}}}}}]}}"#,
        half = group / 2
    );
    program([wg, 1, 1], wg, &body).expect("parses")
}

fn run(p: &Program, workgroups: u32, x: &[u32]) -> Result<Vec<u32>, interp::InterpError> {
    let bytes = |v: &[u32]| v.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<u8>>();
    let mut bufs = vec![
        HostBuffer {
            name: "x".into(),
            elem: ElemType::U32,
            access: Access::Read,
            binding: 0,
            data: bytes(x),
        },
        HostBuffer {
            name: "out".into(),
            elem: ElemType::U32,
            access: Access::ReadWrite,
            binding: 1,
            data: bytes(&vec![0; x.len()]),
        },
    ];
    let shape = LaunchShape {
        workgroup_size: p.workgroup_size,
        grid: [workgroups, 1, 1],
    };
    interp::run(p, &shape, &mut bufs)?;
    Ok(bufs[1]
        .data
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

#[test]
fn subtask_barriers_parse_write_and_print_back() {
    let p = program([128, 1, 1], 4, r#"{"barrier": "subtask", "threads": 64}"#).unwrap();
    assert_eq!(
        p.body[0].kind,
        StmtKind::Barrier(BarrierScope::Subtask { threads: 64 })
    );
    let text = program_to_json(&p).unwrap();
    assert!(
        text.contains(r#""barrier":"subtask","threads":64"#),
        "{text}"
    );
    let q = parse_program(&text, "w.json").unwrap();
    assert_eq!(format!("{q:?}"), format!("{p:?}"));
    let printed = vyrescope::ir::print::print_program(&p).text();
    assert!(
        printed.contains("barrier(subtask, threads 64)"),
        "{printed}"
    );
    // `threads` is required for a sub-task barrier and refused on the others.
    let e = program([128, 1, 1], 4, r#"{"barrier": "subtask"}"#).unwrap_err();
    assert!(e.contains("missing `threads`") && e.contains("Fix:"), "{e}");
    let e = program([128, 1, 1], 4, r#"{"barrier": "workgroup", "threads": 64}"#).unwrap_err();
    assert!(e.contains("unexpected key `threads`"), "{e}");
    let e = program([128, 1, 1], 4, r#"{"barrier": "warp"}"#).unwrap_err();
    assert!(e.contains("subtask"), "{e}");
}

#[test]
fn the_validator_refuses_each_bad_subtask_shape() {
    let cases: [([u32; 3], u32, &str); 5] = [
        ([128, 1, 1], 0, "is 0"),
        ([128, 1, 1], 48, "not a multiple of 32"),
        ([256, 1, 1], 96, "does not divide"),
        ([64, 2, 1], 32, "multi-dimensional"),
        ([1024, 1, 1], 64, "16 sub-tasks"),
    ];
    for (wg, threads, what) in cases {
        let body = format!(r#"{{"barrier": "subtask", "threads": {threads}}}"#);
        let p = program(wg, 4, &body).unwrap();
        let d = validate(&p);
        let v = d.iter().find(|d| d.code == "V073");
        let v = v.unwrap_or_else(|| panic!("{wg:?} / {threads}: no V073 in {d:?}"));
        assert!(v.message.contains(what), "{what}: {}", v.message);
        assert!(!v.fix.is_empty(), "{what}: no fix");
        assert_eq!(v.node.as_deref(), Some("body[0]"));
    }
    // 15 sub-tasks of 64 in 960 threads, and one sub-task of the whole workgroup, are fine.
    for (wg, threads) in [(960, 64), (256, 256)] {
        let body = format!(r#"{{"barrier": "subtask", "threads": {threads}}}"#);
        let d = validate(&program([wg, 1, 1], 4, &body).unwrap());
        assert!(d.iter().all(|d| d.code != "V073"), "{d:?}");
    }
}

#[test]
fn a_subtask_barrier_needs_uniformity_only_within_its_subtask() {
    // `lid.x / 64` (or `/ 128`, a multiple) is the same in a sub-task of 64: fine.
    for d in [64, 128] {
        let body = format!(
            r#"{{"let": "v", "value": {{"add": [{{"wgid": "x"}}, {{"div": [{{"lid": "x"}}, {d}]}}]}}}},
               {{"if": {{"lt": ["v", 3]}}, "then": [{{"barrier": "subtask", "threads": 64}}]}}"#
        );
        let diags = validate(&program([256, 1, 1], 4, &body).unwrap());
        assert!(vyrescope::validate::is_valid(&diags), "/{d}: {diags:?}");
    }
    // ... but not `lid.x / 32`, nor `lid.x` itself; and a workgroup barrier there is refused.
    for cond in [
        r#"{"lt": [{"div": [{"lid": "x"}, 32]}, 3]}"#,
        r#"{"lt": [{"lid": "x"}, 3]}"#,
    ] {
        let body =
            format!(r#"{{"if": {cond}, "then": [{{"barrier": "subtask", "threads": 64}}]}}"#);
        let diags = validate(&program([256, 1, 1], 4, &body).unwrap());
        let v = diags.iter().find(|d| d.code == "V060");
        let v = v.unwrap_or_else(|| panic!("{cond}: {diags:?}"));
        assert!(v.message.contains("sub-task barrier"), "{}", v.message);
    }
    let body =
        r#"{"if": {"lt": [{"div": [{"lid": "x"}, 64]}, 3]}, "then": [{"barrier": "workgroup"}]}"#;
    let diags = validate(&program([256, 1, 1], 4, body).unwrap());
    assert!(diags.iter().any(|d| d.code == "V060"), "{diags:?}");
}

/// Sub-tasks of 64 threads in workgroups of 256, synchronised by sub-task barriers, give
/// what workgroups of 64 synchronised by workgroup barriers give (the per-sub-task
/// reference); both are the real group sums.
#[test]
fn subtasks_run_like_workgroups_of_their_own_on_the_interpreter() {
    let n = 1024u32;
    let x: Vec<u32> = (0..n)
        .map(|i| i.wrapping_mul(2_654_435_761) >> 20)
        .collect();
    let packed = tree_sum(256, 64, r#"{"barrier": "subtask", "threads": 64}"#);
    assert!(
        vyrescope::validate::is_valid(&validate(&packed)),
        "{:?}",
        validate(&packed)
    );
    let reference = tree_sum(64, 64, r#"{"barrier": "workgroup"}"#);
    let got = run(&packed, n / 256, &x).unwrap();
    let want = run(&reference, n / 64, &x).unwrap();
    assert_eq!(got, want);
    let sums: Vec<u32> = x.chunks(64).map(|c| c.iter().sum()).collect();
    assert_eq!(got[..sums.len()], sums[..]);
}

#[test]
fn a_subtask_barrier_reached_by_part_of_a_subtask_is_i005() {
    let body =
        r#"{"if": {"lt": [{"lid": "x"}, 16]}, "then": [{"barrier": "subtask", "threads": 32}]}"#;
    let p = program([64, 1, 1], 4, body).unwrap();
    let e = run(&p, 1, &[0; 64]).unwrap_err();
    assert_eq!(e.code, "I005", "{e}");
    assert_eq!(e.node.as_deref(), Some("body[0].then[0]"));
    assert!(e.to_string().contains("Fix:"), "{e}");
    // A whole sub-task taking the branch is fine: sub-task 1 only.
    let body = r#"{"if": {"eq": [{"div": [{"lid": "x"}, 32]}, 1]}, "then": [
        {"barrier": "subtask", "threads": 32},
        {"store": "out", "index": {"gid": "x"}, "value": 7}]}"#;
    let p = program([64, 1, 1], 4, body).unwrap();
    let got = run(&p, 1, &[0; 64]).unwrap();
    let want: Vec<u32> = (0..64).map(|i| if i >= 32 { 7 } else { 0 }).collect();
    assert_eq!(got, want);
}

#[test]
fn subtask_barriers_emit_named_barriers_that_ptxas_accepts() {
    let p = tree_sum(256, 64, r#"{"barrier": "subtask", "threads": 64}"#);
    let k = emit(&p, &EmitOptions::for_program(&p)).expect("emits");
    assert!(k.ptx.contains(", 64;"), "no counted bar.sync:\n{}", k.ptx);
    assert!(
        k.ptx
            .lines()
            .any(|l| l.trim_start().starts_with("bar.sync %")),
        "the barrier id is a register:\n{}",
        k.ptx
    );
    let Some(ptxas) = crate::support::tools::ptxas("subtask barriers") else {
        return;
    };
    assemble(&ptxas, &k.ptx, 90, false).unwrap_or_else(|e| panic!("ptxas: {e}"));
}

#[cfg(feature = "vyre")]
#[test]
fn vyre_export_refuses_subtask_barriers() {
    let p = tree_sum(256, 64, r#"{"barrier": "subtask", "threads": 64}"#);
    let e = vyrescope::vyre::export(&p).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("sub-task barrier") && text.contains("Fix:"),
        "{text}"
    );
}
