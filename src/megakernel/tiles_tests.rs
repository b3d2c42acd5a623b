//! Producer sets: the named cases (neighbour, halo, fold, broadcast, unproven, write after
//! read) and a seeded brute-force check that every set contains every producer workgroup
//! that really shares an element with the consumer workgroup.

use super::*;
use crate::inputs::prng::SplitMix64;
use crate::megakernel::test_support::{copy, pipeline, program, shape};

const WG: [u32; 3] = [256, 1, 1];
const GID: &str = r#"{"gid": "x"}"#;

fn dep(steps: Vec<(crate::ir::Program, &[(&str, &str)])>, shapes: &[LaunchShape]) -> TileDep {
    let p = pipeline(steps);
    tile_dep(&p, shapes, 0, 1).expect("tile dependence")
}

const G16: LaunchShape = LaunchShape {
    workgroup_size: WG,
    grid: [16, 1, 1],
};

#[test]
fn neighbour_read_waits_for_own_and_next_workgroup() {
    let next = r#"{"add": [{"gid": "x"}, 1]}"#;
    let d = dep(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, next, GID), &[("src", "y"), ("dst", "z")]),
        ],
        &[G16; 2],
    );
    assert_eq!(
        d.producers,
        ProducerSet::Window { lo: 0, hi: 1 },
        "{}",
        d.reason
    );
    assert_eq!(d.label, SyncLabel::Counter);
    assert_eq!(d.producers.describe(), "w..w+1");
    assert_eq!(d.producers.producers_of(15, 16), 15..=15);
}

#[test]
fn stencil_halo_is_w_minus_1_to_w_plus_1() {
    let body = r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"add": [
        {"load": "src", "index": {"sub": [{"gid": "x"}, 1]}},
        {"add": [{"load": "src", "index": {"gid": "x"}},
                 {"load": "src", "index": {"add": [{"gid": "x"}, 1]}}]}]}}]"#;
    let halo = program("halo", WG, &[("src", "read"), ("dst", "read_write")], body);
    let d = dep(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (halo, &[("src", "y"), ("dst", "z")]),
        ],
        &[G16; 2],
    );
    assert_eq!(
        d.producers,
        ProducerSet::Window { lo: -1, hi: 1 },
        "{}",
        d.reason
    );
    assert_eq!(d.label, SyncLabel::Counter);
    assert_eq!(d.producers.producers_of(0, 16), 0..=1);
}

#[test]
fn one_workgroup_fold_of_partials_needs_all_producers() {
    let partial = program(
        "partial",
        WG,
        &[("src", "read"), ("dst", "read_write")],
        r#"[{"if": {"eq": [{"lid": "x"}, 0]}, "then": [
            {"store": "dst", "index": {"wgid": "x"}, "value": {"load": "src", "index": {"gid": "x"}}}]}]"#,
    );
    let fold = copy("fold", [16, 1, 1], r#"{"lid": "x"}"#, r#"{"lid": "x"}"#);
    let d = dep(
        vec![
            (partial, &[("src", "x"), ("dst", "y")]),
            (fold, &[("src", "y"), ("dst", "z")]),
        ],
        &[G16, shape([16, 1, 1], [1, 1, 1])],
    );
    assert_eq!(
        d.producers,
        ProducerSet::Range { first: 0, last: 15 },
        "{}",
        d.reason
    );
    assert_eq!(d.label, SyncLabel::LastArriverFold);
}

#[test]
fn scalar_read_by_everyone_is_a_broadcast_of_its_writer() {
    // A one-workgroup step writes y[0]; every workgroup of the next step reads it.
    let total = copy("total", WG, "0", "0");
    let scale = program(
        "scale",
        WG,
        &[("s", "read"), ("src", "read"), ("dst", "read_write")],
        r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"add": [
            {"load": "src", "index": {"gid": "x"}}, {"load": "s", "index": 0}]}}]"#,
    );
    let d = dep(
        vec![
            (total, &[("src", "x"), ("dst", "y")]),
            (scale, &[("s", "y"), ("src", "x"), ("dst", "z")]),
        ],
        &[shape(WG, [1, 1, 1]), G16],
    );
    assert_eq!(
        d.producers,
        ProducerSet::Range { first: 0, last: 0 },
        "{}",
        d.reason
    );
    assert_eq!(d.label, SyncLabel::Broadcast);
    // Element 300 of a 16-workgroup producer was written by workgroup 1 only.
    let read300 = program(
        "read300",
        WG,
        &[("s", "read"), ("dst", "read_write")],
        r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"load": "s", "index": 300}}]"#,
    );
    let d = dep(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (read300, &[("s", "y"), ("dst", "z")]),
        ],
        &[G16; 2],
    );
    assert_eq!(
        d.producers,
        ProducerSet::Range { first: 1, last: 1 },
        "{}",
        d.reason
    );
    assert_eq!(d.label, SyncLabel::Broadcast);
}

#[test]
fn data_dependent_index_is_all_to_all() {
    let gather = program(
        "gather",
        WG,
        &[("idx", "read"), ("src", "read"), ("dst", "read_write")],
        r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"load": "src", "index":
            {"load": "idx", "index": {"gid": "x"}}}}]"#,
    );
    let d = dep(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (gather, &[("idx", "w"), ("src", "y"), ("dst", "z")]),
        ],
        &[G16; 2],
    );
    assert_eq!(d.producers, ProducerSet::All);
    assert_eq!(d.label, SyncLabel::AllToAll);
    assert!(d.reason.contains("unproven"), "{}", d.reason);
    // The same into a one-workgroup step is a fold by the last producer.
    let d = dep(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (
                program(
                    "gather1",
                    WG,
                    &[("idx", "read"), ("src", "read"), ("dst", "read_write")],
                    r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"load": "src", "index":
                        {"load": "idx", "index": {"gid": "x"}}}}]"#,
                ),
                &[("idx", "w"), ("src", "y"), ("dst", "z")],
            ),
        ],
        &[G16, shape(WG, [1, 1, 1])],
    );
    assert_eq!(d.label, SyncLabel::LastArriverFold);
}

#[test]
fn write_after_read_waits_for_the_readers() {
    // Step 0 reads y[gid + 1]; step 1 overwrites y[gid]: workgroup q must wait for the readers
    // of its elements, q - 1 and q.
    let next = r#"{"add": [{"gid": "x"}, 1]}"#;
    let d = dep(
        vec![
            (copy("a", WG, next, GID), &[("src", "y"), ("dst", "z")]),
            (copy("b", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
        ],
        &[G16; 2],
    );
    assert_eq!(
        d.producers,
        ProducerSet::Window { lo: -1, hi: 0 },
        "{}",
        d.reason
    );
}

#[test]
fn no_common_element_needs_nothing() {
    // Step 0 writes the first 4096 elements, step 1 reads 8192 onwards.
    let far = r#"{"add": [{"gid": "x"}, 8192]}"#;
    let d = dep(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, far, GID), &[("src", "y"), ("dst", "z")]),
        ],
        &[G16; 2],
    );
    assert_eq!(d.producers, ProducerSet::Empty);
    assert_eq!(d.label, SyncLabel::None);
}

/// Random strides, offsets and grids: the computed set of every consumer workgroup contains
/// every producer workgroup that touches one of its elements (checked by enumerating every
/// invocation's index, wrapped to u32 and cut at the buffer length of 4096).
#[test]
fn producer_sets_contain_every_real_producer() {
    let mut rng = SplitMix64::new(22);
    let wg = [8u32, 1, 1];
    for case in 0..300 {
        let mut pick = |n: u64| rng.next_u64() % n;
        let (sa, ca) = (pick(4) as i64, pick(40) as i64 - 20);
        let (sb, cb) = (pick(4) as i64, pick(40) as i64 - 20);
        let (ga, gb) = (1 + pick(12), 1 + pick(12));
        let by_wgid = pick(3) == 0;
        let form = |s: i64, c: i64, wgid: bool| {
            let id = if wgid { r#"{"wgid": "x"}"# } else { GID };
            format!(r#"{{"add": [{{"mul": [{id}, {s}]}}, {c}]}}"#)
        };
        let a = copy("a", wg, GID, &form(sa, ca, false));
        let b = copy("b", wg, &form(sb, cb, by_wgid), GID);
        let p = pipeline(vec![
            (a, &[("src", "x"), ("dst", "y")]),
            (b, &[("src", "y"), ("dst", "z")]),
        ]);
        let shapes = [shape(wg, [ga as u32, 1, 1]), shape(wg, [gb as u32, 1, 1])];
        let d = tile_dep(&p, &shapes, 0, 1).expect("tile dependence");
        let elem = |s: i64, c: i64, w: u64, l: u64, wgid: bool| -> Option<u64> {
            let id = if wgid { w as i64 } else { (w * 8 + l) as i64 };
            let e = (s * id + c).rem_euclid(1 << 32) as u64;
            (e < 4096).then_some(e)
        };
        for q in 0..gb {
            let set = d.producers.producers_of(q, ga);
            for lb in 0..8 {
                let Some(eb) = elem(sb, cb, q, lb, by_wgid) else {
                    continue;
                };
                for p_ in 0..ga {
                    let hit = (0..8).any(|la| elem(sa, ca, p_, la, false) == Some(eb));
                    assert!(
                        !hit || set.contains(&p_),
                        "case {case}: y[{sa}*gid{ca:+}] (grid {ga}) then y[{sb}*{}{cb:+}] (grid {gb}): consumer {q} needs producer {p_}, set {:?} ({})",
                        if by_wgid { "wgid" } else { "gid" },
                        d.producers,
                        d.reason
                    );
                }
            }
        }
    }
}
