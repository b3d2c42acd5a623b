//! ptxas as the external judge: the PTX of every fixture (sm_80 and sm_90, with and without
//! line info) and of generated programs that use every operator on every type (all targets)
//! must assemble.
//!
//! ptxas comes from `VYRESCOPE_PTXAS` or `PATH` (`scripts/install-ptxas.sh` installs it).
//! Without it the tests print a notice and pass, except in CI (`CI=true`) where a missing
//! ptxas is a failure.

use std::path::PathBuf;

use crate::support;
use support::fixtures::fixtures;

use vyrescope::emit::grid_sync::GridBarrier;
use vyrescope::emit::ptxas::{assemble, offline_resources, parse_verbose};
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::ir::{parse_program, Program};

fn ptxas() -> Option<PathBuf> {
    crate::support::tools::ptxas("the ptxas checks")
}

fn check(
    bin: &std::path::Path,
    name: &str,
    p: &Program,
    sm: u32,
    (lineinfo, unroll, grid_barrier, version_bounds): (bool, bool, GridBarrier, bool),
    failures: &mut Vec<String>,
) {
    let o = EmitOptions {
        sm,
        workgroup_size: p.workgroup_size,
        lineinfo,
        unroll,
        grid_barrier,
        version_bounds,
    };
    match emit(p, &o) {
        Ok(k) => {
            if let Err(e) = assemble(bin, &k.ptx, sm, lineinfo) {
                failures.push(format!(
                    "{name} sm_{sm} lineinfo={lineinfo} unroll={unroll} grid_barrier={} version_bounds={version_bounds}: {e}",
                    grid_barrier.name()
                ));
            }
        }
        Err(e) => failures.push(format!("{name}: {e}")),
    }
}

#[test]
fn every_fixture_assembles_for_sm80_and_sm90() {
    let Some(bin) = ptxas() else { return };
    let mut failures = Vec::new();
    let fx = fixtures();
    assert!(!fx.is_empty());
    for (f, p) in &fx {
        for sm in [80, 90] {
            // Line info with the default (unrolled) code, the rolled loops of `--no-unroll`,
            // the earlier grid-barrier lowering of `--grid-barrier generation` and the
            // versioned bounds checks of `--version-bounds`.
            for mode in [
                (false, true, GridBarrier::Flip, false),
                (true, true, GridBarrier::Flip, false),
                (false, false, GridBarrier::Flip, false),
                (false, true, GridBarrier::Generation, false),
                (false, true, GridBarrier::Flip, true),
                (true, false, GridBarrier::Flip, true),
            ] {
                check(&bin, &f.display().to_string(), p, sm, mode, &mut failures);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn offline_resources_are_parsed_from_ptxas() {
    let Some(_) = ptxas() else { return };
    let (_, p) = fixtures()
        .into_iter()
        .find(|(f, _)| f.ends_with("vadd_f32.json"))
        .expect("vadd fixture");
    let k = emit(&p, &EmitOptions::for_program(&p)).expect("emits");
    let r = offline_resources(&k.ptx, 90).expect("ptxas -v");
    assert!(r.registers >= 4 && r.registers <= 255, "{r:?}");
    assert_eq!((r.spill_stores, r.spill_loads, r.stack_frame), (0, 0, 0));
    assert_eq!(r.arch, "sm_90");
    // A kernel with shared memory reports it.
    let (_, p) = fixtures()
        .into_iter()
        .find(|(_, p)| p.buffers.iter().any(|b| !b.access.is_host()))
        .expect("a fixture with a workgroup buffer");
    let o = EmitOptions {
        sm: 80,
        ..EmitOptions::for_program(&p)
    };
    let k = emit(&p, &o).expect("emits");
    let r = offline_resources(&k.ptx, 80).expect("ptxas -v");
    assert_eq!(r.shared_bytes, k.abi.static_shared_bytes);
    assert!(parse_verbose("garbage").is_err());
}

const INTS: [&str; 4] = ["u32", "i32", "u64", "i64"];
const ALL: [&str; 6] = ["u32", "i32", "u64", "i64", "f32", "f64"];

/// A Program storing one result per construct: every binary and unary operator on every
/// type of `types`, every cast and bitcast from and to them, select/fma, subgroup ops; with
/// `misc`, also bool logic, narrow and f16 storage, atomics, loops, nested ifs, barriers.
/// (Split per type: ptxas time grows faster than linearly with kernel size.)
fn kitchen_sink(types: &[&str], misc: bool) -> String {
    let mut bufs = Vec::new();
    let mut binding = 0;
    let mut buf = |name: &str, access: &str, ty: &str, bufs: &mut Vec<String>| {
        bufs.push(format!(
            r#"{{"name": "{name}", "binding": {binding}, "access": "{access}", "type": "{ty}"}}"#
        ));
        binding += 1;
    };
    for t in ALL {
        buf(&format!("in_{t}"), "read", t, &mut bufs);
        buf(&format!("out_{t}"), "read_write", t, &mut bufs);
    }
    buf("out_bool", "write", "bool", &mut bufs);
    buf("in_bool", "uniform", "bool", &mut bufs);
    for t in ["u8", "i8", "u16", "i16", "f16"] {
        buf(&format!("io_{t}"), "read_write", t, &mut bufs);
    }
    bufs.push(r#"{"name": "tile", "access": "workgroup", "type": "u32", "count": 128}"#.into());
    bufs.push(r#"{"name": "ftile", "access": "workgroup", "type": "f64", "count": 64}"#.into());

    let mut body: Vec<String> = vec![
        r#"{"let": "i", "value": {"gid": "x"}}"#.into(),
        r#"{"let": "sh", "value": {"and": [{"lid": "x"}, 127]}}"#.into(),
    ];
    for t in ALL {
        body.push(format!(
            r#"{{"let": "x_{t}", "value": {{"load": "in_{t}", "index": "i"}}}}"#
        ));
        body.push(format!(
            r#"{{"let": "y_{t}", "value": {{"load": "in_{t}", "index": {{"add": ["i", 1]}}}}}}"#
        ));
    }
    let mut slot = 0;
    let mut store = |t: &str, e: String, body: &mut Vec<String>| {
        let buf = if t == "bool" {
            "out_bool".to_string()
        } else {
            format!("out_{t}")
        };
        body.push(format!(
            r#"{{"store": "{buf}", "index": {slot}, "value": {e}}}"#
        ));
        slot += 1;
    };
    for &t in types {
        let int = INTS.contains(&t);
        let mut ops = vec!["add", "sub", "mul", "div", "min", "max", "absdiff"];
        if int {
            ops.extend(["rem", "mulhi", "and", "or", "xor"]);
        }
        for op in ops {
            store(t, format!(r#"{{"{op}": ["x_{t}", "y_{t}"]}}"#), &mut body);
        }
        // Literal divisors: 0, -1 (signed), 7.
        if int {
            for d in ["0", "7"] {
                store(t, format!(r#"{{"div": ["x_{t}", {d}]}}"#), &mut body);
                store(t, format!(r#"{{"rem": ["x_{t}", {d}]}}"#), &mut body);
            }
            if t.starts_with('i') {
                store(t, format!(r#"{{"div": ["x_{t}", -1]}}"#), &mut body);
                store(t, format!(r#"{{"rem": ["x_{t}", -1]}}"#), &mut body);
            }
            for op in ["shl", "shr", "rotl", "rotr"] {
                store(t, format!(r#"{{"{op}": ["x_{t}", "sh"]}}"#), &mut body);
                store(t, format!(r#"{{"{op}": ["x_{t}", 3]}}"#), &mut body);
            }
            for op in [
                "neg", "not", "popcount", "clz", "ctz", "brev", "abs", "sign",
            ] {
                store(t, format!(r#"{{"{op}": "x_{t}"}}"#), &mut body);
            }
        } else {
            for op in [
                "neg", "abs", "sign", "sqrt", "rsqrt", "rcp", "exp", "exp2", "log", "log2", "sin",
                "cos", "tan", "tanh", "floor", "ceil", "round", "trunc",
            ] {
                store(t, format!(r#"{{"{op}": "x_{t}"}}"#), &mut body);
            }
            for op in ["isnan", "isinf", "isfinite"] {
                store("bool", format!(r#"{{"{op}": "x_{t}"}}"#), &mut body);
            }
            store(
                t,
                format!(r#"{{"fma": ["x_{t}", "y_{t}", "x_{t}"]}}"#),
                &mut body,
            );
        }
        for op in ["eq", "ne", "lt", "le", "gt", "ge"] {
            store(
                "bool",
                format!(r#"{{"{op}": ["x_{t}", "y_{t}"]}}"#),
                &mut body,
            );
        }
        store(
            t,
            format!(r#"{{"select": [{{"lt": ["x_{t}", "y_{t}"]}}, "x_{t}", "y_{t}"]}}"#),
            &mut body,
        );
        for s in ALL {
            store(
                t,
                format!(r#"{{"cast": "{t}", "value": "x_{s}"}}"#),
                &mut body,
            );
        }
        store(
            t,
            format!(r#"{{"cast": "{t}", "value": {{"load": "in_bool", "index": 0}}}}"#),
            &mut body,
        );
        store(
            "bool",
            format!(r#"{{"cast": "bool", "value": "x_{t}"}}"#),
            &mut body,
        );
        let twins: &[&str] = match t {
            "u32" | "i32" | "f32" => &["u32", "i32", "f32"],
            _ => &["u64", "i64", "f64"],
        };
        for s in twins {
            store(
                t,
                format!(r#"{{"bitcast": "{t}", "value": "x_{s}"}}"#),
                &mut body,
            );
        }
        store(
            t,
            format!(r#"{{"shuffle": "x_{t}", "lane": {{"add": [{{"lane": {{}}}}, 1]}}}}"#),
            &mut body,
        );
        let reds: &[&str] = if int {
            &["add", "mul", "min", "max", "and", "or", "xor"]
        } else {
            &["add", "mul", "min", "max"]
        };
        for r in reds {
            store(
                t,
                format!(r#"{{"subgroup_reduce": "{r}", "value": "x_{t}"}}"#),
                &mut body,
            );
        }
    }
    if !misc {
        return finish(&bufs, &body);
    }
    let b = r#"{"load": "in_bool", "index": 1}"#;
    for e in [
        format!(r#"{{"land": [{b}, {{"lt": ["x_u32", 5]}}]}}"#),
        format!(r#"{{"lor": [{b}, {{"lt": ["x_u32", 5]}}]}}"#),
        format!(r#"{{"lnot": {b}}}"#),
        format!(r#"{{"eq": [{b}, true]}}"#),
        format!(r#"{{"ne": [{b}, false]}}"#),
        format!(r#"{{"xor": [{b}, true]}}"#),
        format!(r#"{{"select": [{b}, {{"lt": ["x_f32", 0.5]}}, false]}}"#),
        format!(r#"{{"shuffle": {b}, "lane": 3}}"#),
    ] {
        store("bool", e, &mut body);
    }
    store("u32", format!(r#"{{"ballot": {b}}}"#), &mut body);
    store(
        "u32",
        r#"{"add": [{"subgroup_size": {}}, {"nwg": "x"}]}"#.into(),
        &mut body,
    );
    // Narrow and f16 storage, round trip plus arithmetic.
    for t in ["u8", "i8", "u16", "i16", "f16"] {
        let v = if t == "f16" {
            r#"{"mul": [{"load": "io_f16", "index": "i"}, 1.5]}"#.to_string()
        } else {
            format!(r#"{{"add": [{{"load": "io_{t}", "index": "i"}}, 1]}}"#)
        };
        body.push(format!(
            r#"{{"store": "io_{t}", "index": {{"add": ["i", 7]}}, "value": {v}}}"#
        ));
    }
    // Atomics, global and shared.
    for (t, ops) in [
        (
            "u32",
            &["add", "min", "max", "and", "or", "xor", "exchange"][..],
        ),
        (
            "i32",
            &["add", "min", "max", "and", "or", "xor", "exchange"][..],
        ),
        (
            "u64",
            &["add", "min", "max", "and", "or", "xor", "exchange"][..],
        ),
        ("f32", &["add"][..]),
    ] {
        for op in ops {
            let e = format!(
                r#"{{"atomic": "{op}", "buffer": "out_{t}", "index": "sh", "value": "x_{t}"}}"#
            );
            store(t, e, &mut body);
        }
        if t != "f32" {
            let e = format!(
                r#"{{"atomic": "cas", "buffer": "out_{t}", "index": 3, "expected": "x_{t}", "value": "y_{t}"}}"#
            );
            store(t, e, &mut body);
        }
    }
    body.push(r#"{"store": "tile", "index": {"lid": "x"}, "value": 0}"#.into());
    body.push(r#"{"barrier": "workgroup"}"#.into());
    store(
        "u32",
        r#"{"atomic": "add", "buffer": "tile", "index": "sh", "value": 1}"#.into(),
        &mut body,
    );
    store("u32", r#"{"atomic": "cas", "buffer": "tile", "index": {"add": ["sh", 1]}, "expected": 0, "value": 2}"#.into(), &mut body);
    body.push(r#"{"store": "ftile", "index": {"and": ["sh", 63]}, "value": "x_f64"}"#.into());
    // Control flow: loop with accumulator, if/else, nested predicated body, early return.
    body.push(r#"{"let": "acc", "value": {"u32": 0}}"#.into());
    body.push(
        r#"{"loop": "k", "from": 0, "to": {"len": "in_u32"}, "body": [
            {"if": {"lt": ["k", 3]}, "then": [{"assign": "acc", "value": {"add": ["acc", {"load": "in_u32", "index": "k"}]}}],
             "else": [{"assign": "acc", "value": {"xor": ["acc", "k"]}},
                      {"if": {"gt": ["acc", 100]}, "then": [{"block": [{"assign": "acc", "value": 1}]}]}]}]}"#
            .into(),
    );
    store("u32", r#""acc""#.into(), &mut body);
    body.push(r#"{"if": {"ge": ["i", {"len": "out_u32"}]}, "then": [{"return": {}}]}"#.into());
    body.push(r#"{"store": "out_u32", "index": "i", "value": "acc"}"#.into());
    finish(&bufs, &body)
}

fn finish(bufs: &[String], body: &[String]) -> String {
    format!(
        r#"{{"format": 1, "name": "kitchen_sink", "workgroup_size": [128, 1, 1], "buffers": [{}], "body": [{}]}}"#,
        bufs.join(",\n"),
        body.join(",\n")
    )
}

fn grid_program() -> String {
    r#"{"format": 1, "name": "grid_loop", "workgroup_size": [8, 4, 2],
        "buffers": [{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}],
        "body": [{"let": "i", "value": {"gid": "x"}},
                 {"loop": "r", "from": 0, "to": 4, "body": [
                    {"barrier": "grid"},
                    {"store": "a", "index": "i", "value": {"add": [{"load": "a", "index": "i"}, "r"]}},
                    {"barrier": "grid"}]}]}"#
        .to_string()
}

#[test]
fn every_construct_assembles_on_every_target() {
    let Some(bin) = ptxas() else { return };
    let mut failures = Vec::new();
    let mut programs: Vec<(String, String, &[u32])> = ALL
        .iter()
        .map(|t| {
            (
                format!("ops_{t}"),
                kitchen_sink(&[t], false),
                &[70, 80, 90][..],
            )
        })
        .collect();
    programs.push((
        "misc".into(),
        kitchen_sink(&[], true),
        &[70, 75, 80, 86, 89, 90],
    ));
    programs.push(("grid_loop".into(), grid_program(), &[70, 80, 90]));
    // ptxas runs in parallel (one thread per program); each checks its targets in turn.
    let results: Vec<Vec<String>> = std::thread::scope(|sc| {
        let handles: Vec<_> = programs
            .iter()
            .map(|(name, text, sms)| {
                let bin = bin.clone();
                sc.spawn(move || {
                    let mut f = Vec::new();
                    let p = parse_program(text, &format!("{name}.json"))
                        .unwrap_or_else(|e| panic!("{e}"));
                    for &sm in *sms {
                        check(
                            &bin,
                            name,
                            &p,
                            sm,
                            (sm == 90, sm != 80, GridBarrier::Flip, sm == 80),
                            &mut f,
                        );
                    }
                    f
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    failures.extend(results.into_iter().flatten());
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
