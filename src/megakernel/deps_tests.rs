//! Unit tests of the dependence typing: each kind, and the non-cases that must stay `grid`.

use super::*;
use crate::ir::Program;
use crate::megakernel::test_support::{copy, pipeline, program, shape};

const WG: [u32; 3] = [256, 1, 1];
const GRID: [u32; 3] = [16, 1, 1];
const GID: &str = r#"{"gid": "x"}"#;

/// Kind and reason of step 1 on step 0 for two copy steps `x -> y`, `y -> z`.
fn chain(a: Program, b: Program, sa: LaunchShape, sb: LaunchShape) -> Dependence {
    let p = pipeline(vec![
        (a, &[("src", "x"), ("dst", "y")]),
        (b, &[("src", "y"), ("dst", "z")]),
    ]);
    let t = analyse(&p, &[sa, sb]).expect("analysis");
    t.get(0, 1).expect("pair").clone()
}

fn same(a: Program, b: Program) -> Dependence {
    chain(a, b, shape(WG, GRID), shape(WG, GRID))
}

#[test]
fn gid_to_gid_is_invocation() {
    let d = same(copy("a", WG, GID, GID), copy("b", WG, GID, GID));
    assert_eq!(d.kind, DepKind::Invocation, "{}", d.reason);
    assert_eq!(d.buffer.as_deref(), Some("y"));
    assert!(d.reason.contains("gid.x"), "{}", d.reason);
}

#[test]
fn gid_and_its_spelled_out_form_are_the_same_invocation() {
    // wgid.x * 256 + lid.x is gid.x for this workgroup size: the same function of the thread.
    let spelled = r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"lid": "x"}]}"#;
    let d = same(copy("a", WG, GID, spelled), copy("b", WG, GID, GID));
    assert_eq!(d.kind, DepKind::Invocation, "{}", d.reason);
}

#[test]
fn no_shared_written_buffer_is_none() {
    let p = pipeline(vec![
        (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
        (copy("b", WG, GID, GID), &[("src", "x"), ("dst", "z")]),
    ]);
    let s = shape(WG, GRID);
    let t = analyse(&p, &[s, s]).unwrap();
    assert_eq!(t.kind(0, 1), DepKind::None);
    // Only pairs sharing a written buffer are compared (and have an entry).
    assert!(t.get(0, 1).is_none());
    assert!(t.pairs.is_empty());
}

#[test]
fn write_after_read_is_found() {
    // Step 0 reads y (as src), step 1 overwrites y at a neighbour: WAR across workgroups.
    let p = pipeline(vec![
        (copy("a", WG, GID, GID), &[("src", "y"), ("dst", "x")]),
        (
            copy("b", WG, GID, r#"{"add": [{"gid": "x"}, 1]}"#),
            &[("src", "z"), ("dst", "y")],
        ),
    ]);
    let s = shape(WG, GRID);
    let t = analyse(&p, &[s, s]).unwrap();
    assert_eq!(
        t.kind(0, 1),
        DepKind::Grid,
        "{}",
        t.get(0, 1).unwrap().reason
    );
}

#[test]
fn write_after_write_at_same_index_is_invocation() {
    let p = pipeline(vec![
        (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
        (copy("b", WG, GID, GID), &[("src", "z"), ("dst", "y")]),
    ]);
    let s = shape(WG, GRID);
    let t = analyse(&p, &[s, s]).unwrap();
    assert_eq!(t.kind(0, 1), DepKind::Invocation);
}

#[test]
fn reversed_index_is_grid() {
    // B reads y[4095 - gid]: written by a thread of another workgroup.
    let rev = r#"{"sub": [4095, {"gid": "x"}]}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, rev, GID));
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
    assert!(d.reason.contains("4095"), "{}", d.reason);
}

#[test]
fn reversed_index_within_the_tile_is_workgroup() {
    // B reads y[wgid*256 + 255 - lid]: another thread's element, but in the same workgroup.
    let rev = r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"sub": [255, {"lid": "x"}]}]}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, rev, GID));
    assert_eq!(d.kind, DepKind::Workgroup, "{}", d.reason);
    assert!(d.reason.contains("256*wgid + 0"), "{}", d.reason);
}

#[test]
fn neighbour_across_the_workgroup_edge_is_grid() {
    let next = r#"{"add": [{"gid": "x"}, 1]}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, next, GID));
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
    assert!(d.reason.contains("gid.x + 1"), "{}", d.reason);
}

#[test]
fn shifted_tile_used_by_both_steps_is_invocation_or_workgroup() {
    // Both steps touch y only at gid + 1: the same element per invocation.
    let next = r#"{"add": [{"gid": "x"}, 1]}"#;
    let d = same(copy("a", WG, GID, next), copy("b", WG, next, GID));
    assert_eq!(d.kind, DepKind::Invocation, "{}", d.reason);
}

#[test]
fn different_workgroup_sizes_are_grid() {
    let d = chain(
        copy("a", WG, GID, GID),
        copy("b", [128, 1, 1], GID, GID),
        shape(WG, GRID),
        shape([128, 1, 1], [32, 1, 1]),
    );
    assert_eq!(d.kind, DepKind::Grid);
    assert!(d.reason.contains("different launch shapes"), "{}", d.reason);
}

#[test]
fn different_grids_are_grid() {
    let d = chain(
        copy("a", WG, GID, GID),
        copy("b", WG, GID, GID),
        shape(WG, GRID),
        shape(WG, [8, 1, 1]),
    );
    assert_eq!(d.kind, DepKind::Grid);
}

#[test]
fn atomic_at_a_constant_index_is_grid() {
    // Every thread adds into y[0]; step B reads y[0]: B needs all of A's atomics done.
    let a = program(
        "a",
        WG,
        &[("src", "read"), ("dst", "read_write")],
        r#"[{"let": "old", "value": {"atomic": "add", "buffer": "dst", "index": 0, "value": {"load": "src", "index": {"gid": "x"}}}}]"#,
    );
    let b = copy("b", WG, "0", GID);
    let d = same(a, b);
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
    assert!(
        d.reason.contains("lid.x") || d.reason.contains("share"),
        "{}",
        d.reason
    );
}

#[test]
fn atomic_at_own_element_is_invocation() {
    let a = program(
        "a",
        WG,
        &[("src", "read"), ("dst", "read_write")],
        r#"[{"let": "old", "value": {"atomic": "add", "buffer": "dst", "index": {"gid": "x"}, "value": 3}}]"#,
    );
    let d = same(a, copy("b", WG, GID, GID));
    assert_eq!(d.kind, DepKind::Invocation, "{}", d.reason);
}

#[test]
fn atomics_into_the_workgroups_own_slot_are_workgroup() {
    // Each thread adds into y[wgid]; B reads y[wgid]: one element per workgroup.
    let wgid = r#"{"wgid": "x"}"#;
    let a = program(
        "a",
        WG,
        &[("src", "read"), ("dst", "read_write")],
        &format!(
            r#"[{{"let": "old", "value": {{"atomic": "add", "buffer": "dst", "index": {wgid}, "value": 1}}}}]"#
        ),
    );
    let d = same(a, copy("b", WG, wgid, GID));
    assert_eq!(d.kind, DepKind::Workgroup, "{}", d.reason);
}

#[test]
fn data_dependent_index_is_grid() {
    let gather = r#"{"load": "src", "index": {"gid": "x"}}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, gather, GID));
    assert_eq!(d.kind, DepKind::Grid);
    assert!(d.reason.contains("data-dependent"), "{}", d.reason);
}

#[test]
fn float_round_trip_is_not_trusted() {
    // u32(f32(gid)) rounds above 2^24: two threads may hit one element.
    let rt = r#"{"cast": "u32", "value": {"cast": "f32", "value": {"gid": "x"}}}"#;
    let d = same(copy("a", WG, GID, rt), copy("b", WG, rt, GID));
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
}

#[test]
fn index_ignoring_a_grid_axis_is_not_one_invocation_per_element() {
    // A 2-D grid where the index ignores y: rows of threads share elements.
    let s = shape([16, 16, 1], [4, 4, 1]);
    let d = chain(
        copy("a", [16, 16, 1], GID, GID),
        copy("b", [16, 16, 1], GID, GID),
        s,
        s,
    );
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
    assert!(d.reason.contains("share an element"), "{}", d.reason);
}

#[test]
fn row_major_2d_index_is_invocation() {
    // gid.y * 64 + gid.x over a 64 x 64 grid of threads: one element each.
    let s = shape([16, 16, 1], [4, 4, 1]);
    let rm = r#"{"add": [{"mul": [{"gid": "y"}, 64]}, {"gid": "x"}]}"#;
    let d = chain(
        copy("a", [16, 16, 1], rm, rm),
        copy("b", [16, 16, 1], rm, rm),
        s,
        s,
    );
    assert_eq!(d.kind, DepKind::Invocation, "{}", d.reason);
}

#[test]
fn single_workgroup_grid_is_workgroup_whatever_the_index() {
    let gather = r#"{"load": "src", "index": {"gid": "x"}}"#;
    let s = shape(WG, [1, 1, 1]);
    let d = chain(copy("a", WG, GID, GID), copy("b", WG, gather, GID), s, s);
    assert_eq!(d.kind, DepKind::Workgroup, "{}", d.reason);
}

#[test]
fn guarded_access_keeps_the_proof() {
    // A bounds check on len(dst) does not change which elements a thread may touch.
    let a = program(
        "a",
        WG,
        &[("src", "read"), ("dst", "read_write")],
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "dst"}]}, "then": [
              {"store": "dst", "index": "i", "value": {"load": "src", "index": "i"}}]}]"#,
    );
    let d = same(a, copy("b", WG, GID, GID));
    assert_eq!(d.kind, DepKind::Invocation, "{}", d.reason);
}

#[test]
fn run_time_offset_is_grid() {
    // y[gid + len(src)]: an offset not known here.
    let off = r#"{"add": [{"gid": "x"}, {"len": "src"}]}"#;
    let d = same(copy("a", WG, GID, off), copy("b", WG, off, GID));
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
    assert!(d.reason.contains("run-time"), "{}", d.reason);
}

#[test]
fn loop_over_a_tile_is_not_proven() {
    // Each thread reads y[gid + i] for i in 0..4: the loop counter has no known value.
    let b = program(
        "b",
        WG,
        &[("src", "read"), ("dst", "read_write")],
        r#"[{"loop": "i", "from": 0, "to": 4, "body": [
              {"store": "dst", "index": {"gid": "x"},
               "value": {"load": "src", "index": {"add": [{"gid": "x"}, "i"]}}}]}]"#,
    );
    let d = same(copy("a", WG, GID, GID), b);
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
}

#[test]
fn strongest_buffer_wins() {
    // y is per invocation, but z is read by B at a neighbour after A wrote it.
    let a = program(
        "a",
        WG,
        &[("p", "read_write"), ("q", "read_write")],
        r#"[{"store": "p", "index": {"gid": "x"}, "value": 1},
            {"store": "q", "index": {"gid": "x"}, "value": 2}]"#,
    );
    let b = program(
        "b",
        WG,
        &[("p", "read_write"), ("q", "read_write")],
        r#"[{"store": "p", "index": {"gid": "x"},
             "value": {"load": "q", "index": {"add": [{"gid": "x"}, 1]}}}]"#,
    );
    let p = pipeline(vec![
        (a, &[("p", "y"), ("q", "z")]),
        (b, &[("p", "y"), ("q", "z")]),
    ]);
    let s = shape(WG, GRID);
    let t = analyse(&p, &[s, s]).unwrap();
    let d = t.get(0, 1).unwrap();
    assert_eq!(d.kind, DepKind::Grid);
    assert_eq!(d.buffer.as_deref(), Some("z"));
}

#[test]
fn table_indexes_every_pair() {
    let steps: Vec<(Program, &[(&str, &str)])> = (0..4)
        .map(|i| {
            let b: &[(&str, &str)] = &[("src", "x"), ("dst", "y")];
            (copy(&format!("s{i}"), WG, GID, GID), b)
        })
        .collect();
    let p = pipeline(steps);
    let s = shape(WG, GRID);
    let t = analyse(&p, &[s; 4]).unwrap();
    assert_eq!(t.pairs.len(), 6);
    for a in 0..4 {
        for b in a + 1..4 {
            let d = t.get(a, b).unwrap();
            assert_eq!((d.from, d.to), (a, b));
        }
    }
    assert!(t.get(2, 1).is_none());
    assert!(t.get(1, 4).is_none());
}

#[test]
fn wrong_shape_count_and_unbound_buffers_are_errors() {
    let p = pipeline(vec![(copy("a", WG, GID, GID), &[("src", "x")])]);
    let e = analyse(&p, &[]).unwrap_err();
    assert!(e.to_string().contains("Fix:"));
    let e = analyse(&p, &[shape(WG, GRID)]).unwrap_err();
    assert!(
        matches!(e, DepError::Unbound { step: 0, ref buffer } if buffer == "dst"),
        "{e}"
    );
}

#[test]
fn huge_strides_beyond_32_bits_are_grid() {
    // gid * 2^21 over 4096 threads passes 2^32: indices wrap, so elements coincide (gid 0 and
    // gid 2048 both hit element 0). gid * 2^20 would still be one element each.
    let big = r#"{"mul": [{"gid": "x"}, 2097152]}"#;
    let d = same(copy("a", WG, GID, big), copy("b", WG, big, GID));
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
}

#[test]
fn stride_just_inside_32_bits_is_still_one_element_each() {
    let big = r#"{"mul": [{"gid": "x"}, 1048576]}"#;
    let d = same(copy("a", WG, GID, big), copy("b", WG, big, GID));
    assert_eq!(d.kind, DepKind::Invocation, "{}", d.reason);
}

#[test]
fn rotation_within_the_tile_via_rem_is_workgroup() {
    // The fixture pattern: wgid*256 + rem(lid + 1, 256), the next element wrapping inside the
    // workgroup's slice.
    let j =
        r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"rem": [{"add": [{"lid": "x"}, 1]}, 256]}]}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, j, GID));
    assert_eq!(d.kind, DepKind::Workgroup, "{}", d.reason);
}

#[test]
fn rem_by_more_than_the_tile_is_grid() {
    // rem(lid + 1, 512) may reach 256 past the tile start: the next workgroup's element.
    let j =
        r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"rem": [{"add": [{"lid": "x"}, 1]}, 512]}]}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, j, GID));
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
    assert!(d.reason.contains("[0, 511]"), "{}", d.reason);
}

#[test]
fn rem_of_a_possibly_negative_value_is_not_in_the_tile() {
    // i32(lid) - 5 may be negative: a signed remainder may be negative too.
    let j =
        r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"rem": [{"sub": [{"lid": "x"}, 5]}, 256]}]}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, j, GID));
    assert_eq!(d.kind, DepKind::Grid, "{}", d.reason);
}

#[test]
fn masked_lane_index_is_workgroup() {
    // wgid*256 + and(lid * 7, 255): scattered but inside the tile.
    let j =
        r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"and": [{"mul": [{"lid": "x"}, 7]}, 255]}]}"#;
    let d = same(copy("a", WG, GID, GID), copy("b", WG, j, GID));
    assert_eq!(d.kind, DepKind::Workgroup, "{}", d.reason);
}

#[test]
fn bounded_index_is_never_an_invocation_proof() {
    // Both steps at wgid*256 + rem(lid, 256) (= gid for this shape, but not proven exact).
    let j = r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"rem": [{"lid": "x"}, 256]}]}"#;
    let d = same(copy("a", WG, GID, j), copy("b", WG, j, GID));
    assert_eq!(d.kind, DepKind::Workgroup, "{}", d.reason);
}
