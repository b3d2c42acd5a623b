//! Whole Programs: memory rules, control flow, barriers, warps, atomics, grid barriers, fuel.
//! Expected values are computed independently in the tests.

use std::path::Path;

use crate::inputs::{prepare, HostBuffer};
use crate::interp::{run, run_with, InterpError, Options};
use crate::ir::{parse_program, Program};

fn program(buffers: &str, body: &str, wg: [u32; 3], run: &str) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": {wg:?},
            "buffers": [{buffers}], "body": [{body}], "run": {run}}}"#
    );
    match parse_program(&text, "t.json") {
        Ok(p) => p,
        Err(e) => panic!("{e}\n{text}"),
    }
}

fn exec(p: &Program) -> Result<Vec<HostBuffer>, InterpError> {
    let mut r = prepare(p, Path::new("."), None, None).map_err(|e| InterpError {
        code: "I001",
        node: None,
        message: e.message,
        fix: e.fix,
    })?;
    run(p, &r.shape, &mut r.buffers)?;
    Ok(r.buffers)
}

fn buf<'a>(bufs: &'a [HostBuffer], name: &str) -> &'a HostBuffer {
    bufs.iter().find(|b| b.name == name).expect("buffer")
}

fn u32s(b: &HostBuffer) -> Vec<u32> {
    b.data
        .chunks(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn i32s(b: &HostBuffer) -> Vec<i32> {
    u32s(b).into_iter().map(|v| v as i32).collect()
}

fn f32s(b: &HostBuffer) -> Vec<f32> {
    u32s(b).into_iter().map(f32::from_bits).collect()
}

const GUARD: &str = r#"{"let": "i", "value": {"gid": "x"}},
    {"if": {"ge": ["i", {"len": "o"}]}, "then": [{"return": {}}]}"#;

#[test]
fn elementwise_with_tail_and_node_count() {
    let p = program(
        r#"{"name": "a", "binding": 0, "access": "read", "type": "f32"},
           {"name": "b", "binding": 1, "access": "read", "type": "f32"},
           {"name": "o", "binding": 2, "access": "write", "type": "f32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "o"}]}, "then": [
             {"store": "o", "index": "i",
              "value": {"add": [{"load": "a", "index": "i"}, {"load": "b", "index": "i"}]}}]}"#,
        [256, 1, 1],
        r#"{"elements": 1000, "inputs": {"a": {"fill": "random", "seed": 5}, "b": {"fill": "iota"}}}"#,
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let a = f32s(&r.buffers[0]);
    let stats = run(&p, &r.shape, &mut r.buffers).unwrap();
    let o = f32s(&r.buffers[2]);
    for k in 0..1000 {
        assert_eq!(o[k], a[k] + k as f32);
    }
    // 1024 invocations run `let` (2 nodes) and `if` (4); the 1000 in range the store (7).
    assert_eq!(stats.node_evals, 1024 * 6 + 1000 * 7);
    assert_eq!(stats.invocations, 1024);
}

#[test]
fn out_of_bounds_loads_zero_and_stores_dropped() {
    let p = program(
        r#"{"name": "a", "binding": 0, "access": "read", "type": "u32"},
           {"name": "o", "binding": 1, "access": "read_write", "type": "u32"},
           {"name": "s", "access": "workgroup", "type": "u32", "count": 4}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"store": "s", "index": {"lid": "x"}, "value": 7},
           {"store": "o", "index": {"add": ["i", 100]}, "value": 9},
           {"if": {"lt": ["i", {"len": "o"}]}, "then": [
             {"store": "o", "index": "i", "value": {"add": [
               {"load": "a", "index": {"add": ["i", 6]}},
               {"load": "s", "index": {"lid": "x"}}]}}]}"#,
        [8, 1, 1],
        r#"{"grid": [1, 1, 1], "inputs": {"a": {"len": 8, "fill": "iota"}, "o": {"len": 8, "fill": "zeros"}}}"#,
    );
    let b = exec(&p).unwrap();
    // a[i+6] exists for i < 2; s has 4 elements, so lanes 4..8 stored nothing and load 0.
    assert_eq!(u32s(buf(&b, "o")), vec![13, 14, 7, 7, 0, 0, 0, 0]);
}

#[test]
fn narrow_f16_and_bool_buffers_through_programs() {
    let p = program(
        r#"{"name": "x", "binding": 0, "access": "read", "type": "f32"},
           {"name": "h", "binding": 1, "access": "read_write", "type": "f16"},
           {"name": "b", "binding": 2, "access": "read_write", "type": "i8"},
           {"name": "q", "binding": 3, "access": "read_write", "type": "bool"},
           {"name": "o", "binding": 4, "access": "read_write", "type": "f32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"let": "v", "value": {"load": "x", "index": "i"}},
           {"store": "h", "index": "i", "value": "v"},
           {"store": "o", "index": "i", "value": {"load": "h", "index": "i"}},
           {"store": "b", "index": "i", "value": {"sub": [{"cast": "i32", "value": "v"}, 200]}},
           {"store": "q", "index": "i", "value": {"gt": ["v", 1.0]}}"#,
        [4, 1, 1],
        r#"{"grid": [1, 1, 1], "inputs": {"x": {"data": [1.0005, 70000.0, -3.0, 0.5]}}}"#,
    );
    let b = exec(&p).unwrap();
    // 1.0005 is just above 1 + 2^-11 (the tie), so it rounds up to 1 + 2^-10.
    assert_eq!(
        f32s(buf(&b, "o")),
        vec![1.0009766, f32::INFINITY, -3.0, 0.5]
    );
    let bytes: Vec<i8> = buf(&b, "b").data.iter().map(|&x| x as i8).collect();
    // (1 - 200), (70000 - 200) truncated to 8 bits, (-3 - 200) wraps, (0 - 200) wraps.
    assert_eq!(
        bytes,
        vec![
            (-199i32) as i8,
            (69800i32) as i8,
            (-203i32) as i8,
            (-200i32) as i8
        ]
    );
    assert_eq!(u32s(buf(&b, "q")), vec![1, 1, 0, 0]);
}

#[test]
fn return_and_divergent_loops() {
    // Lane i loops i times (a per-lane trip count), returns early when i is 5.
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        &format!(
            r#"{GUARD},
           {{"let": "acc", "value": 0}},
           {{"loop": "k", "from": 0, "to": "i", "body": [
             {{"if": {{"eq": ["i", 5]}}, "then": [{{"return": {{}}}}]}},
             {{"assign": "acc", "value": {{"add": ["acc", {{"mul": ["k", "k"]}}]}}}}]}},
           {{"store": "o", "index": "i", "value": {{"add": ["acc", 1]}}}}"#
        ),
        [16, 1, 1],
        r#"{"elements": 40, "inputs": {"o": {"fill": "ones"}}}"#,
    );
    let b = exec(&p).unwrap();
    let want: Vec<u32> = (0..40u32)
        .map(|i| {
            if i == 5 {
                1
            } else {
                (0..i).map(|k| k * k).sum::<u32>() + 1
            }
        })
        .collect();
    assert_eq!(u32s(buf(&b, "o")), want);
}

#[test]
fn loop_bounds_are_evaluated_once() {
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "n", "value": 4},
           {"let": "c", "value": 0},
           {"loop": "k", "from": 1, "to": "n", "body": [
             {"assign": "n", "value": 100},
             {"assign": "c", "value": {"add": ["c", 1]}}]},
           {"store": "o", "index": {"gid": "x"}, "value": {"add": [{"mul": ["c", 1000]}, "n"]}}"#,
        [1, 1, 1],
        r#"{"elements": 1}"#,
    );
    let b = exec(&p).unwrap();
    assert_eq!(u32s(buf(&b, "o")), vec![3100]);
}

#[test]
fn workgroup_reduction_needs_real_barriers() {
    // Tree reduction in shared memory: wrong unless every thread's store is visible to the
    // others after each barrier.
    let wg = 128u32;
    let p = program(
        r#"{"name": "a", "binding": 0, "access": "read", "type": "u32"},
           {"name": "o", "binding": 1, "access": "read_write", "type": "u32"},
           {"name": "t", "access": "workgroup", "type": "u32", "count": 128}"#,
        r#"{"let": "l", "value": {"lid": "x"}},
           {"store": "t", "index": "l", "value": {"load": "a", "index": {"gid": "x"}}},
           {"barrier": "workgroup"},
           {"let": "s", "value": 64},
           {"loop": "step", "from": 0, "to": 7, "body": [
             {"if": {"lt": ["l", "s"]}, "then": [
               {"store": "t", "index": "l", "value": {"add": [
                 {"load": "t", "index": "l"}, {"load": "t", "index": {"add": ["l", "s"]}}]}}]},
             {"barrier": "workgroup"},
             {"assign": "s", "value": {"shr": ["s", 1]}}]},
           {"if": {"eq": ["l", 0]}, "then": [
             {"store": "o", "index": {"wgid": "x"}, "value": {"load": "t", "index": 0}}]}"#,
        [wg, 1, 1],
        r#"{"grid": [20, 1, 1], "inputs": {"a": {"len": 2560, "fill": "random", "seed": 3, "range": [0, 1000]}, "o": {"len": 20, "fill": "zeros"}}}"#,
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let a = u32s(&r.buffers[0]);
    run(&p, &r.shape, &mut r.buffers).unwrap();
    let want: Vec<u32> = a.chunks(wg as usize).map(|c| c.iter().sum()).collect();
    assert_eq!(u32s(&r.buffers[1]), want);
}

#[test]
fn shared_memory_reversal_across_warps() {
    // Thread l reads what thread (T-1-l) wrote before the barrier (another warp).
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"},
           {"name": "t", "access": "workgroup", "type": "u32", "count": 96}"#,
        r#"{"let": "l", "value": {"lid": "x"}},
           {"store": "t", "index": "l", "value": {"mul": [{"gid": "x"}, 3]}},
           {"barrier": "workgroup"},
           {"store": "o", "index": {"gid": "x"}, "value": {"load": "t", "index": {"sub": [95, "l"]}}}"#,
        [96, 1, 1],
        r#"{"elements": 288}"#,
    );
    let b = exec(&p).unwrap();
    let want: Vec<u32> = (0..288u32)
        .map(|g| (g / 96 * 96 + 95 - g % 96) * 3)
        .collect();
    assert_eq!(u32s(buf(&b, "o")), want);
}

#[test]
fn divergent_barrier_is_reported() {
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"if": {"lt": [{"lid": "x"}, 16]}, "then": [{"barrier": "workgroup"}]}"#,
        [64, 1, 1],
        r#"{"elements": 64}"#,
    );
    let e = exec(&p).unwrap_err();
    assert_eq!(e.node.as_deref(), Some("body[0].then[0]"), "{e}");
    assert_eq!(e.code, "I004");
    assert!(e.to_string().starts_with("body[0].then[0]: "), "{e}");
    assert!(e.to_string().contains("Fix:"));
    // A workgroup-uniform condition is fine.
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"if": {"eq": [{"wgid": "x"}, 1]}, "then": [{"barrier": "workgroup"},
             {"store": "o", "index": {"gid": "x"}, "value": 1}]}"#,
        [64, 1, 1],
        r#"{"elements": 192}"#,
    );
    let b = exec(&p).unwrap();
    let want: Vec<u32> = (0..192).map(|g| (g / 64 == 1) as u32).collect();
    assert_eq!(u32s(buf(&b, "o")), want);
}

#[test]
fn warp_shuffle_reduce_ballot() {
    // 48 threads: warp 0 has 32 lanes, warp 1 has 16.
    let p = program(
        r#"{"name": "sh", "binding": 0, "access": "read_write", "type": "u32"},
           {"name": "rd", "binding": 1, "access": "read_write", "type": "u32"},
           {"name": "bl", "binding": 2, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "g", "value": {"gid": "x"}},
           {"let": "v", "value": {"mul": ["g", 10]}},
           {"store": "sh", "index": "g", "value": {"shuffle": "v", "lane": {"add": [{"lane": {}}, 1]}}},
           {"store": "rd", "index": "g", "value": {"subgroup_reduce": "add", "value": "v"}},
           {"store": "bl", "index": "g", "value": {"ballot": {"eq": [{"and": ["g", 1]}, 1]}}}"#,
        [48, 1, 1],
        r#"{"elements": 96}"#,
    );
    let b = exec(&p).unwrap();
    let (sh, rd, bl) = (
        u32s(buf(&b, "sh")),
        u32s(buf(&b, "rd")),
        u32s(buf(&b, "bl")),
    );
    for g in 0..96u32 {
        let l = g % 48;
        let warp_first = g - l % 32;
        let warp_len = if l < 32 { 32 } else { 16 };
        let src = (l % 32 + 1) & 31;
        let want_sh = if src < warp_len {
            (warp_first + src) * 10
        } else {
            g * 10
        };
        assert_eq!(sh[g as usize], want_sh, "shuffle at {g}");
        let sum: u32 = (warp_first..warp_first + warp_len).map(|x| x * 10).sum();
        assert_eq!(rd[g as usize], sum, "reduce at {g}");
        let mask: u32 = (0..warp_len)
            .filter(|k| (warp_first + k) % 2 == 1)
            .map(|k| 1 << k)
            .sum();
        assert_eq!(bl[g as usize], mask, "ballot at {g}");
    }
}

#[test]
fn warp_ops_under_divergence_use_active_lanes_only() {
    let p = program(
        r#"{"name": "rd", "binding": 0, "access": "read_write", "type": "u32"},
           {"name": "bl", "binding": 1, "access": "read_write", "type": "u32"},
           {"name": "sh", "binding": 2, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "l", "value": {"lid": "x"}},
           {"if": {"lt": [{"lane": {}}, 10]}, "then": [
             {"store": "rd", "index": "l", "value": {"subgroup_reduce": "max", "value": "l"}},
             {"store": "bl", "index": "l", "value": {"ballot": true}},
             {"store": "sh", "index": "l", "value": {"shuffle": "l", "lane": 20}}]}"#,
        [64, 1, 1],
        r#"{"elements": 64}"#,
    );
    let b = exec(&p).unwrap();
    for l in 0..64u32 {
        let active = l % 32 < 10;
        let (rd, bl, sh) = (
            u32s(buf(&b, "rd"))[l as usize],
            u32s(buf(&b, "bl"))[l as usize],
            u32s(buf(&b, "sh"))[l as usize],
        );
        if active {
            assert_eq!(rd, (l / 32) * 32 + 9);
            assert_eq!(bl, 0x3ff);
            // Lane 20 is inactive: the reading lane gets its own value.
            assert_eq!(sh, l);
        } else {
            assert_eq!((rd, bl, sh), (0, 0, 0));
        }
    }
}

#[test]
fn float_subgroup_add_uses_the_butterfly_order() {
    let p = program(
        r#"{"name": "x", "binding": 0, "access": "read", "type": "f32"},
           {"name": "o", "binding": 1, "access": "read_write", "type": "f32"}"#,
        r#"{"let": "g", "value": {"gid": "x"}},
           {"if": {"ne": [{"lane": {}}, 3]}, "then": [
             {"store": "o", "index": "g", "value": {"subgroup_reduce": "add", "value": {"load": "x", "index": "g"}}}]}"#,
        [32, 1, 1],
        r#"{"elements": 32, "inputs": {"x": {"fill": "random", "seed": 11, "range": [-1000.0, 1000.0]}}}"#,
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let x = f32s(&r.buffers[0]);
    run(&p, &r.shape, &mut r.buffers).unwrap();
    let mut s: Vec<f32> = (0..32).map(|k| if k == 3 { -0.0 } else { x[k] }).collect();
    for off in [16, 8, 4, 2, 1] {
        s = (0..32).map(|k| s[k] + s[k ^ off]).collect();
    }
    for (k, o) in f32s(&r.buffers[1]).into_iter().enumerate() {
        if k != 3 {
            assert_eq!(o.to_bits(), s[0].to_bits());
        }
    }
}

#[test]
fn atomics_histogram_across_parallel_workgroups() {
    let p = program(
        r#"{"name": "a", "binding": 0, "access": "read", "type": "u32"},
           {"name": "h", "binding": 1, "access": "read_write", "type": "u32"},
           {"name": "f", "binding": 2, "access": "read_write", "type": "f32"},
           {"name": "m", "binding": 3, "access": "read_write", "type": "i32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "a"}]}, "then": [
             {"let": "v", "value": {"load": "a", "index": "i"}},
             {"let": "old", "value": {"atomic": "add", "buffer": "h", "index": {"and": ["v", 15]}, "value": 1}},
             {"let": "x", "value": {"atomic": "add", "buffer": "f", "index": 0, "value": 0.5}},
             {"let": "y", "value": {"atomic": "min", "buffer": "m", "index": 0, "value": {"sub": [0, {"cast": "i32", "value": "v"}]}}},
             {"let": "z", "value": {"atomic": "max", "buffer": "m", "index": 1, "value": {"cast": "i32", "value": "v"}}},
             {"let": "w", "value": {"atomic": "add", "buffer": "h", "index": 1000, "value": 1}}]}"#,
        [64, 1, 1],
        r#"{"elements": 100000, "inputs": {"a": {"fill": "random", "seed": 2, "range": [0, 100000]},
            "h": {"len": 16, "fill": "zeros"}, "f": {"len": 1, "fill": "zeros"}, "m": {"len": 2, "fill": "zeros"}}}"#,
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let a = u32s(&r.buffers[0]);
    run(&p, &r.shape, &mut r.buffers).unwrap();
    let mut want = vec![0u32; 16];
    a.iter().for_each(|&v| want[(v & 15) as usize] += 1);
    assert_eq!(u32s(&r.buffers[1]), want);
    assert_eq!(f32s(&r.buffers[2]), vec![50000.0]);
    let mx = *a.iter().max().unwrap() as i32;
    assert_eq!(i32s(&r.buffers[3]), vec![-mx, mx]);
}

#[test]
fn float_atomic_sums_are_logged_for_buffers_only_float_adds_write() {
    // f: only f32 atomic adds (logged); g: an add and an exchange (not logged); h: an add and
    // a store (not logged); c: an integer counter (not logged).
    let p = program(
        r#"{"name": "a", "binding": 0, "access": "read", "type": "f32"},
           {"name": "f", "binding": 1, "access": "read_write", "type": "f32"},
           {"name": "g", "binding": 2, "access": "read_write", "type": "f32"},
           {"name": "h", "binding": 3, "access": "read_write", "type": "f32"},
           {"name": "c", "binding": 4, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"if": {"lt": ["i", {"len": "a"}]}, "then": [
             {"let": "v", "value": {"load": "a", "index": "i"}},
             {"let": "x", "value": {"atomic": "add", "buffer": "f", "index": {"and": ["i", 3]}, "value": "v"}},
             {"let": "y", "value": {"atomic": "add", "buffer": "f", "index": 9, "value": "v"}},
             {"let": "z", "value": {"atomic": "add", "buffer": "g", "index": 0, "value": "v"}},
             {"let": "e", "value": {"atomic": "exchange", "buffer": "g", "index": 1, "value": "v"}},
             {"let": "u", "value": {"atomic": "add", "buffer": "h", "index": 0, "value": "v"}},
             {"store": "h", "index": 1, "value": "v"},
             {"let": "k", "value": {"atomic": "add", "buffer": "c", "index": 0, "value": 1}}]}"#,
        [64, 1, 1],
        r#"{"elements": 5000, "inputs": {"a": {"fill": "random", "seed": 5, "range": [-3.0, 3.0]},
            "f": {"data": [0.5, -2.0, 0.0, 1.0, 7.0]}, "g": {"len": 2, "fill": "zeros"},
            "h": {"len": 2, "fill": "zeros"}, "c": {"len": 1, "fill": "zeros"}}}"#,
    );
    assert_eq!(
        crate::interp::float_sums::float_add_targets(&crate::ir::elaborate(&p))
            .into_iter()
            .collect::<Vec<_>>(),
        vec!["f".to_string()]
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let a = f32s(&r.buffers[0]);
    let (_, sums) =
        crate::interp::run_with_sums(&p, &r.shape, &mut r.buffers, &Options::default()).unwrap();
    assert_eq!(sums.buffers.keys().collect::<Vec<_>>(), vec!["f"]);
    let f = &sums.buffers["f"];
    assert_eq!(f.len(), 5);
    let init = [0.5f64, 2.0, 0.0, 1.0, 7.0];
    for (k, e) in f.iter().enumerate().take(4) {
        let terms: Vec<f64> = a
            .iter()
            .skip(k)
            .step_by(4)
            .map(|&v| v.abs() as f64)
            .collect();
        assert_eq!(e.adds, terms.len() as u64, "element {k}");
        let exact = init[k] + terms.iter().sum::<f64>();
        assert!(
            e.magnitude >= exact && e.magnitude <= exact * (1.0 + 1e-12),
            "{k}: {e:?} vs {exact}"
        );
    }
    // Index 9 is out of range (dropped, not logged); element 4 received nothing.
    assert_eq!(f[4].adds, 0);
    assert!(f[4].magnitude >= 7.0 && f[4].magnitude < 7.0 * (1.0 + 1e-12));
    // The same run without the log writes the same buffers.
    let mut plain = prepare(&p, Path::new("."), None, None).unwrap();
    run(&p, &plain.shape, &mut plain.buffers).unwrap();
    assert_eq!(plain.buffers[4].data, r.buffers[4].data);
}

#[test]
fn atomic_old_values_cas_exchange_and_workgroup_atomics() {
    // One workgroup: every thread takes a ticket; tickets are a permutation of 0..64.
    let p = program(
        r#"{"name": "t", "binding": 0, "access": "read_write", "type": "u32"},
           {"name": "c", "binding": 1, "access": "read_write", "type": "u32"},
           {"name": "s", "access": "workgroup", "type": "u32", "count": 2}"#,
        r#"{"let": "l", "value": {"lid": "x"}},
           {"let": "k", "value": {"atomic": "add", "buffer": "s", "index": 0, "value": 1}},
           {"store": "t", "index": "l", "value": "k"},
           {"let": "old", "value": {"atomic": "cas", "buffer": "c", "index": 0, "value": {"add": ["l", 100]}, "expected": 0}},
           {"let": "ex", "value": {"atomic": "exchange", "buffer": "c", "index": 1, "value": "l"}},
           {"let": "oob", "value": {"atomic": "add", "buffer": "c", "index": 500, "value": 5}},
           {"store": "c", "index": {"add": ["l", 2]}, "value": {"add": [{"add": ["old", "ex"]}, "oob"]}}"#,
        [64, 1, 1],
        r#"{"grid": [1, 1, 1], "inputs": {"t": {"len": 64, "fill": "zeros"}, "c": {"len": 66, "fill": "zeros"}}}"#,
    );
    let b = exec(&p).unwrap();
    let mut t = u32s(buf(&b, "t"));
    // Lanes act in increasing linear id order within one statement.
    assert_eq!(t, (0..64).collect::<Vec<_>>());
    t.sort_unstable();
    let c = u32s(buf(&b, "c"));
    // Thread 0's cas succeeds (stores 100); the others see 100. Exchange returns the previous
    // thread's id. The out-of-range atomic returns 0 and does nothing.
    assert_eq!(c[0], 100);
    assert_eq!(c[1], 63);
    for l in 0..64u32 {
        let old = if l == 0 { 0 } else { 100 };
        let ex = if l == 0 { 0 } else { l - 1 };
        assert_eq!(c[l as usize + 2], old + ex, "thread {l}");
    }
}

#[test]
fn grid_barrier_two_phase() {
    let p = program(
        r#"{"name": "a", "binding": 0, "access": "read_write", "type": "u32"},
           {"name": "o", "binding": 1, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "i", "value": {"gid": "x"}},
           {"let": "n", "value": {"len": "a"}},
           {"store": "a", "index": "i", "value": {"mul": ["i", 2]}},
           {"barrier": "grid"},
           {"store": "o", "index": "i", "value": {"load": "a", "index": {"rem": [{"add": ["i", 33]}, "n"]}}}"#,
        [32, 1, 1],
        r#"{"elements": 256}"#,
    );
    let b = exec(&p).unwrap();
    let want: Vec<u32> = (0..256u32).map(|i| ((i + 33) % 256) * 2).collect();
    assert_eq!(u32s(buf(&b, "o")), want);
}

#[test]
fn fuel_turns_runaway_loops_into_errors() {
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "c", "value": 0},
           {"block": [{"loop": "k", "from": 0, "to": 4000000000, "body": [
             {"assign": "c", "value": {"add": ["c", 1]}}]}]}"#,
        [32, 1, 1],
        r#"{"elements": 32}"#,
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let before = r.buffers.clone();
    let opts = Options {
        fuel: 1_000_000,
        ..Options::default()
    };
    let e = run_with(&p, &r.shape, &mut r.buffers, &opts).unwrap_err();
    assert_eq!(e.node.as_deref(), Some("body[1].block[0]"), "{e}");
    assert_eq!(e.code, "I003");
    assert!(e.message.contains("budget"), "{e}");
    assert_eq!(r.buffers, before, "buffers untouched on error");
}

#[test]
fn fuel_bounds_empty_loops() {
    // Regression (issue 13): an empty body was never charged, so this ran for minutes.
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"loop": "k", "from": 0, "to": 4294967295, "body": []}"#,
        [1, 1, 1],
        r#"{"elements": 1}"#,
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let opts = Options {
        fuel: 1_000_000,
        ..Options::default()
    };
    let t = std::time::Instant::now();
    let e = run_with(&p, &r.shape, &mut r.buffers, &opts).unwrap_err();
    assert_eq!(
        (e.code, e.node.as_deref()),
        ("I003", Some("body[0]")),
        "{e}"
    );
    assert!(
        e.message.contains("--fuel") && e.fix.contains("--fuel N"),
        "{e}"
    );
    assert!(t.elapsed().as_secs() < 5, "took {:?}", t.elapsed());
}

#[test]
fn fuel_bounds_loop_free_grids() {
    // Regression (issue 13): 2^40 invocations without a loop ran past 60 s with fuel 1000.
    for (wg, grid) in [
        ([1024, 1, 1], [1048576, 1024, 1]),
        ([1, 1, 1], [1048576, 1024, 1024]),
    ] {
        let p = program(
            r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
            r#"{"store": "o", "index": {"gid": "y"}, "value": {"gid": "x"}}"#,
            wg,
            &format!(r#"{{"elements": 1, "grid": {grid:?}}}"#),
        );
        let mut r = prepare(&p, Path::new("."), None, None).unwrap();
        assert_eq!(r.shape.invocations(), 1 << 40);
        let before = r.buffers.clone();
        let opts = Options {
            fuel: 1000,
            ..Options::default()
        };
        let t = std::time::Instant::now();
        let e = run_with(&p, &r.shape, &mut r.buffers, &opts).unwrap_err();
        assert_eq!(
            (e.code, e.node.as_deref()),
            ("I003", Some("body[0]")),
            "{e}"
        );
        assert!(e.fix.contains("--fuel N"), "{e}");
        assert!(t.elapsed().as_secs() < 5, "took {:?}", t.elapsed());
        assert_eq!(r.buffers, before, "buffers untouched on error");
    }
}

#[test]
fn fuel_counts_invocations_and_iterations() {
    // A loop-free Program of n invocations needs more than n steps; exactly enough fuel for
    // a small run passes, and the node-evaluation statistic excludes the dispatch charges.
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"store": "o", "index": {"gid": "x"}, "value": 7}"#,
        [64, 1, 1],
        r#"{"elements": 4096}"#,
    );
    let mut r = prepare(&p, Path::new("."), None, None).unwrap();
    let e = run_with(
        &p,
        &r.shape,
        &mut r.buffers,
        &Options {
            fuel: 4096,
            ..Options::default()
        },
    )
    .unwrap_err();
    assert_eq!(e.code, "I003", "{e}");
    let stats = run_with(&p, &r.shape, &mut r.buffers, &Options::default()).unwrap();
    assert_eq!(
        stats.node_evals,
        4096 * 3,
        "the store, its index and its value"
    );
    assert_eq!(u32s(buf(&r.buffers, "o")), vec![7; 4096]);
}

#[test]
fn multi_dimensional_builtins() {
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"let": "x", "value": {"gid": "x"}},
           {"let": "y", "value": {"gid": "y"}},
           {"let": "z", "value": {"gid": "z"}},
           {"let": "w", "value": {"mul": [{"nwg": "x"}, 4]}},
           {"let": "h", "value": {"mul": [{"nwg": "y"}, 2]}},
           {"let": "lin", "value": {"add": ["x", {"mul": [{"add": ["y", {"mul": ["z", "h"]}]}, "w"]}]}},
           {"let": "loc", "value": {"add": [{"lid": "x"}, {"mul": [4, {"add": [{"lid": "y"}, {"mul": [2, {"lid": "z"}]}]}]}]}},
           {"store": "o", "index": "lin", "value": {"add": [{"mul": ["loc", 1000]}, {"add": [{"wgid": "x"}, {"mul": [10, {"add": [{"wgid": "y"}, {"mul": [10, {"wgid": "z"}]}]}]}]}]}}"#,
        [4, 2, 2],
        r#"{"grid": [3, 2, 2], "inputs": {"o": {"len": 192, "fill": "zeros"}}}"#,
    );
    let b = exec(&p).unwrap();
    let o = u32s(buf(&b, "o"));
    for z in 0..4u32 {
        for y in 0..4u32 {
            for x in 0..12u32 {
                let lin = x + (y + z * 4) * 12;
                let loc = x % 4 + 4 * (y % 2 + 2 * (z % 2));
                let wg = x / 4 + 10 * (y / 2 + 10 * (z / 2));
                assert_eq!(o[lin as usize], loc * 1000 + wg, "({x},{y},{z})");
            }
        }
    }
}

#[test]
fn u64_f64_and_bitcast() {
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u64"},
           {"name": "d", "binding": 1, "access": "read_write", "type": "f64"}"#,
        r#"{"let": "i", "value": {"cast": "u64", "value": {"gid": "x"}}},
           {"let": "big", "value": {"mul": [{"add": ["i", {"u64": 4294967296}]}, {"u64": 3}]}},
           {"store": "o", "index": {"gid": "x"}, "value": {"bitcast": "u64", "value": {"bitcast": "i64", "value": "big"}}},
           {"store": "d", "index": {"gid": "x"}, "value": {"div": [{"cast": "f64", "value": "big"}, 7.0]}}"#,
        [4, 1, 1],
        r#"{"elements": 4}"#,
    );
    let b = exec(&p).unwrap();
    let o: Vec<u64> = buf(&b, "o")
        .data
        .chunks(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let d: Vec<f64> = buf(&b, "d")
        .data
        .chunks(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for i in 0..4u64 {
        let big = (i + (1 << 32)) * 3;
        assert_eq!(o[i as usize], big);
        assert_eq!(d[i as usize], big as f64 / 7.0);
    }
}

#[test]
fn missing_or_mismatched_buffers_are_errors() {
    let p = program(
        r#"{"name": "o", "binding": 0, "access": "read_write", "type": "u32"}"#,
        r#"{"store": "o", "index": 0, "value": 1}"#,
        [1, 1, 1],
        r#"{"elements": 1}"#,
    );
    let r = prepare(&p, Path::new("."), None, None).unwrap();
    let mut none: Vec<HostBuffer> = Vec::new();
    assert!(run(&p, &r.shape, &mut none).is_err());
    let mut wrong = r.buffers.clone();
    wrong[0].elem = crate::ir::ElemType::F32;
    assert!(run(&p, &r.shape, &mut wrong).is_err());
}
