//! Source-map and determinism properties over every fixture, plus emitter behaviour seen from
//! outside (bounds-check elision, ABI, line info).

use crate::support;
use support::fixtures::fixtures;

use vyrescope::emit::grid_sync::GridBarrier;
use vyrescope::emit::{emit, source_map, EmitOptions};
use vyrescope::ir::{parse_program, print::print_program, Program};

fn opts(p: &Program, sm: u32, lineinfo: bool) -> EmitOptions {
    EmitOptions {
        sm,
        workgroup_size: p.workgroup_size,
        lineinfo,
        unroll: true,
        grid_barrier: Default::default(),
        version_bounds: false,
    }
}

/// Line numbers (1-based) strictly inside the entry's `{ ... }`.
fn body_lines(ptx: &str) -> (u32, u32) {
    let lines: Vec<&str> = ptx.lines().collect();
    let open = lines
        .iter()
        .position(|l| *l == "{")
        .expect("entry body opens") as u32
        + 1;
    let close = lines
        .iter()
        .rposition(|l| *l == "}")
        .expect("entry body closes") as u32
        + 1;
    (open + 1, close - 1)
}

#[test]
fn map_covers_every_body_line_exactly_once() {
    for (f, p) in fixtures() {
        for sm in [80, 90] {
            for (lineinfo, unroll) in [(false, true), (true, true), (true, false)] {
                let o = EmitOptions {
                    unroll,
                    ..opts(&p, sm, lineinfo)
                };
                let k = emit(&p, &o).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
                let lines: Vec<&str> = k.ptx.lines().collect();
                let (first, last) = body_lines(&k.ptx);
                let mut owners = vec![0u32; lines.len() + 1];
                for e in &k.source_map.entries {
                    for r in &e.lines {
                        assert!(r[0] <= r[1], "{}: bad range {r:?}", f.display());
                        assert!(
                            r[0] >= first && r[1] <= last,
                            "{}: {} maps lines {r:?} outside the body {first}..{last}",
                            f.display(),
                            e.node
                        );
                        for l in r[0]..=r[1] {
                            owners[l as usize] += 1;
                        }
                    }
                }
                for l in first..=last {
                    let text = lines[l as usize - 1];
                    assert_eq!(
                        owners[l as usize],
                        1,
                        "{} sm_{sm} lineinfo={lineinfo} unroll={unroll}: line {l} `{text}` is mapped {} times",
                        f.display(),
                        owners[l as usize]
                    );
                }
                // Every statement is present (it writes at least its comment line), and the
                // comment names it.
                p.walk_stmts(&mut |s| {
                    let ranges = k.source_map.lines_of(&s.id);
                    assert!(!ranges.is_empty(), "{}: {} has no lines", f.display(), s.id);
                    let head = lines[ranges[0][0] as usize - 1];
                    assert!(
                        head.starts_with(&format!("\t// {}: ", s.id)),
                        "{}: first line of {} is `{head}`",
                        f.display(),
                        s.id
                    );
                });
                // The JSON form carries the same data.
                let j = source_map::to_json(&k);
                assert_eq!(j["kernel"], p.name.as_str());
                assert_eq!(
                    j["map"].as_array().map(|a| a.len()),
                    Some(k.source_map.entries.len())
                );
            }
        }
    }
}

#[test]
fn loc_directives_point_at_the_printed_ir_lines() {
    for (f, p) in fixtures() {
        let printed = print_program(&p);
        let k = emit(&p, &opts(&p, 90, true)).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        assert!(k.ptx.contains(&format!(".file 1 \"{}.vir\"", p.name)));
        let lines: Vec<&str> = k.ptx.lines().collect();
        let mut seen = 0;
        for (i, l) in lines.iter().enumerate() {
            let Some(rest) = l.trim().strip_prefix(".loc\t1 ") else {
                continue;
            };
            seen += 1;
            let ir_line: usize = rest
                .split(' ')
                .next()
                .and_then(|x| x.parse().ok())
                .expect("line number");
            let node = k
                .source_map
                .node_at(i as u32 + 1)
                .expect("a .loc belongs to a node");
            assert_eq!(
                printed.line_of(node),
                Some(ir_line),
                "{}: .loc {ir_line} inside {node}",
                f.display()
            );
        }
        assert!(seen > 0, "{}: no .loc", f.display());
        let plain = emit(&p, &opts(&p, 90, false)).expect("emits");
        assert!(!plain.ptx.contains(".loc") && !plain.ptx.contains(".file"));
    }
}

#[test]
fn emission_is_deterministic() {
    for (f, p) in fixtures() {
        let text = std::fs::read_to_string(&f).expect("readable");
        let again = parse_program(&text, &f.display().to_string()).expect("parses");
        for lineinfo in [false, true] {
            let a = emit(&p, &opts(&p, 90, lineinfo)).expect("emits");
            let b = emit(&again, &opts(&again, 90, lineinfo)).expect("emits");
            assert_eq!(a.ptx, b.ptx, "{}", f.display());
            assert_eq!(a.source_map, b.source_map);
            assert_eq!(a.stats, b.stats);
            let ja = serde_json::to_string(&source_map::to_json(&a)).expect("json");
            let jb = serde_json::to_string(&source_map::to_json(&b)).expect("json");
            assert_eq!(ja, jb);
        }
    }
}

fn program(body: &str, buffers: &str) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
            "buffers": [{buffers}], "body": {body}}}"#
    );
    parse_program(&text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

const AB: &str = r#"{"name": "a", "binding": 0, "access": "read", "type": "f32"},
                   {"name": "b", "binding": 1, "access": "read_write", "type": "f32"},
                   {"name": "tile", "access": "workgroup", "type": "f32", "count": 64}"#;

fn emitted(body: &str) -> vyrescope::emit::EmittedKernel {
    let p = program(body, AB);
    emit(&p, &opts(&p, 90, false)).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn guarded_accesses_lose_their_checks() {
    // if i < len(b) { b[i] = a[i] }: the store is proven, the load of `a` is not.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "b"}]}, "then": [
              {"store": "b", "index": "i", "value": {"load": "a", "index": "i"}}]}]"#,
    );
    assert_eq!(
        (k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided),
        (1, 1)
    );
    // Spelled `len(b) > i`.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"gt": [{"len": "b"}, "i"]}, "then": [
              {"store": "b", "index": "i", "value": 1.0}]}]"#,
    );
    assert_eq!(
        (k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided),
        (0, 1)
    );
    // Early return when i >= len(b): the rest of the block is proven.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"ge": ["i", {"len": "b"}]}, "then": [{"return": {}}]},
            {"store": "b", "index": "i", "value": 2.0},
            {"store": "b", "index": "i", "value": {"load": "b", "index": "i"}}]"#,
    );
    assert_eq!(
        (k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided),
        (0, 3)
    );
    // A reassigned index proves nothing.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "b"}]}, "then": [
              {"assign": "i", "value": {"add": ["i", 1]}},
              {"store": "b", "index": "i", "value": 1.0}]}]"#,
    );
    assert_eq!(
        (k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided),
        (1, 0)
    );
    // Outside the guarded branch the fact is gone.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "b"}]}, "then": [{"store": "b", "index": "i", "value": 1.0}]},
            {"store": "b", "index": "i", "value": 3.0}]"#,
    );
    assert_eq!(
        (k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided),
        (1, 1)
    );
}

#[test]
fn workgroup_indices_are_proven_statically() {
    // lid.x < 64 = count, literal 5 in range, literal 64 out of range (store dropped at
    // compile time, load folds to 0), gid.x unproven.
    let k = emitted(
        r#"[{"store": "tile", "index": {"lid": "x"}, "value": 1.0},
            {"store": "tile", "index": 5, "value": 2.0},
            {"store": "tile", "index": 64, "value": 3.0},
            {"store": "b", "index": 0, "value": {"load": "tile", "index": 64}},
            {"store": "tile", "index": {"gid": "x"}, "value": 4.0}]"#,
    );
    assert_eq!(k.stats.bounds_checks_elided, 4);
    assert_eq!(k.stats.bounds_checks_emitted, 2, "gid.x into tile and b[0]");
    assert!(k.ptx.contains("st.shared.f32 [wg_tile+20], %f"));
    assert!(
        !k.ptx.contains("0f40400000"),
        "the out-of-range store is dropped"
    );
    assert!(k.ptx.contains(".shared .align 4 .b8 wg_tile[256];"));
}

#[test]
fn abi_lists_pointer_and_length_per_host_buffer_in_binding_order() {
    let p = program(
        r#"[{"store": "z", "index": 0, "value": {"load": "y", "index": 0}}]"#,
        r#"{"name": "z", "binding": 1, "access": "write", "type": "u32"},
           {"name": "y", "binding": 0, "access": "uniform", "type": "u32"}"#,
    );
    let k = emit(&p, &opts(&p, 80, false)).expect("emits");
    let names: Vec<&str> = k.abi.params.iter().map(|a| a.buffer.as_str()).collect();
    assert_eq!(names, ["y", "z"]);
    let sig = k
        .ptx
        .split(".visible .entry t(")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("signature");
    let params: Vec<&str> = sig
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        params,
        [
            ".param .u64 param_y_ptr,",
            ".param .u32 param_y_len,",
            ".param .u64 param_z_ptr,",
            ".param .u32 param_z_len"
        ]
    );
    assert!(
        k.ptx.contains("ld.global.nc.u32"),
        "uniform buffers load through the nc path"
    );
    assert!(k.ptx.contains(".version 7.0\n.target sm_80\n"));
    assert!(k.ptx.contains(".maxntid 64, 1, 1"));
    assert!(!k.abi.grid_sync);
}

#[test]
fn grid_barrier_adds_the_scratch_parameter() {
    let p = program(
        r#"[{"loop": "r", "from": 0, "to": 3, "body": [{"barrier": "grid"}]}]"#,
        AB,
    );
    let k = emit(&p, &opts(&p, 90, false)).expect("emits");
    assert!(k.abi.grid_sync);
    assert_eq!(k.abi.scratch.words, 2);
    assert!(k.ptx.contains(".param .u64 param_grid_sync\n)"));
    // The default flip lowering: one acq_rel arrival per block, polled with acquire loads
    // until bit 31 changes; no generation word and no release by the last arriver.
    for needle in [
        "atom.acq_rel.gpu.global.add.u32",
        "ld.acquire.gpu.global.u32",
        "setp.ge.s32",
        "sub.s32",
        "%ctaid.x",
        "bar.sync 0",
    ] {
        assert!(k.ptx.contains(needle), "missing {needle}");
    }
    assert!(!k.ptx.contains("red.release"), "{}", k.ptx);
    // The earlier lowering, still available for comparison.
    let o = EmitOptions {
        grid_barrier: GridBarrier::Generation,
        ..opts(&p, 90, false)
    };
    let g = emit(&p, &o).expect("emits");
    assert_eq!(g.abi.scratch.words, 2);
    for needle in [
        "atom.acq_rel.gpu.global.add.u32",
        "red.release.gpu.global.add.u32",
        "ld.acquire.gpu.global.u32",
        "[%rd",
    ] {
        assert!(g.ptx.contains(needle), "missing {needle}");
    }
    assert!(g.ptx.contains("+4]"), "generation word at offset 4");
}
