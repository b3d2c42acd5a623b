//! The atomic `order` key: parse (default, every name, unknown names), print and write (round
//! trip, the default left out), validation (every order on every op and buffer kind), the PTX
//! each order lowers to, ptxas on sm_70/80/90, and the interpreter (the order never changes
//! the values).

use std::path::{Path, PathBuf};

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::inputs::prepare;
use vyrescope::ir::print::print_program;
use vyrescope::ir::{parse_program, program_to_json, AtomicOrder, Expr, Program, StmtKind};
use vyrescope::validate::validate;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every op on a global `u32`, a global `u64` and a workgroup `i32` buffer, plus `f32` add,
/// each with `order` (or none when `order` is `None`).
fn program(order: Option<&str>) -> String {
    let o = order
        .map(|o| format!(r#", "order": "{o}""#))
        .unwrap_or_default();
    let mut body = vec![
        r#"{"let": "i", "value": {"gid": "x"}}"#.to_string(),
        r#"{"let": "l", "value": {"lid": "x"}}"#.to_string(),
        r#"{"store": "w", "index": "l", "value": 0}"#.to_string(),
        r#"{"barrier": "workgroup"}"#.to_string(),
    ];
    let ops = ["add", "min", "max", "and", "or", "xor", "exchange"];
    for (buf, v) in [
        ("g", r#"{"add": ["i", 3]}"#),
        ("d", r#"{"cast": "u64", "value": "i"}"#),
        ("w", r#"{"cast": "i32", "value": "i"}"#),
    ] {
        for op in ops {
            body.push(format!(
                r#"{{"let": "{buf}_{op}", "value": {{"atomic": "{op}", "buffer": "{buf}", "index": {{"rem": ["i", 8]}}, "value": {v}{o}}}}}"#
            ));
        }
        body.push(format!(
            r#"{{"let": "{buf}_cas", "value": {{"atomic": "cas", "buffer": "{buf}", "index": "l", "expected": {v}, "value": {v}{o}}}}}"#
        ));
    }
    body.push(format!(
        r#"{{"let": "f_add", "value": {{"atomic": "add", "buffer": "f", "index": 0, "value": 0.5{o}}}}}"#
    ));
    body.push(r#"{"barrier": "workgroup"}"#.to_string());
    body.push(
        r#"{"store": "out", "index": "i", "value": {"add": ["g_exchange", {"cast": "u32", "value": "w_cas"}]}}"#
            .to_string(),
    );
    format!(
        r#"{{"format": 1, "name": "orders", "workgroup_size": [64, 1, 1],
  "buffers": [
    {{"name": "g", "binding": 0, "access": "read_write", "type": "u32"}},
    {{"name": "d", "binding": 1, "access": "read_write", "type": "u64"}},
    {{"name": "f", "binding": 2, "access": "read_write", "type": "f32"}},
    {{"name": "out", "binding": 3, "access": "write", "type": "u32"}},
    {{"name": "w", "access": "workgroup", "type": "i32", "count": 64}}
  ],
  "body": [{}],
  "run": {{"elements": 256, "inputs": {{"g": {{"len": 8, "fill": "random", "seed": 7}},
    "d": {{"len": 8, "fill": "random", "seed": 8}}, "f": {{"len": 1, "fill": "zeros"}}}}}}}}"#,
        body.join(",\n    ")
    )
}

fn parse(text: &str) -> Program {
    parse_program(text, "orders.json").unwrap_or_else(|e| panic!("{e}"))
}

/// Every atomic's order, in statement order.
fn orders(p: &Program) -> Vec<AtomicOrder> {
    let mut v = Vec::new();
    p.walk_stmts(&mut |s| {
        if let StmtKind::Let { value, .. } = &s.kind {
            value.visit(&mut |e| {
                if let Expr::Atomic { order, .. } = e {
                    v.push(*order);
                }
            });
        }
    });
    v
}

#[test]
fn every_order_parses_prints_and_writes_back() {
    let default = parse(&program(None));
    let n = orders(&default).len();
    assert_eq!(n, 25, "24 typed atomics and one f32 add");
    assert!(orders(&default).iter().all(|&o| o == AtomicOrder::SeqCst));
    // The default is left out of the written file and the printed text.
    let json = program_to_json(&default).expect("write");
    assert!(!json.contains("\"order\""), "{json}");
    assert!(!print_program(&default).text().contains(".seq_cst"));
    for order in AtomicOrder::ALL {
        let p = parse(&program(Some(order.name())));
        assert_eq!(orders(&p), vec![order; n], "{}", order.name());
        let json = program_to_json(&p).expect("write");
        let back = parse_program(&json, "back.json").unwrap_or_else(|e| panic!("{e}\n{json}"));
        assert_eq!(back, p, "{} round trip", order.name());
        let text = print_program(&p).text();
        let marked = text.matches(&format!(".{}(", order.name())).count();
        if order == AtomicOrder::SeqCst {
            // An explicit seq_cst is the default: same Program, same text, same file.
            assert_eq!(p, default);
            assert_eq!(json, program_to_json(&default).expect("write"));
            assert_eq!(marked, 0);
        } else {
            assert_eq!(marked, n, "{text}");
            assert_eq!(
                json.matches(&format!("\"order\":\"{}\"", order.name()))
                    .count(),
                n
            );
        }
    }
}

#[test]
fn unknown_or_misplaced_orders_are_parse_errors_with_the_path_and_a_fix() {
    let text = program(None).replacen(
        r#""value": 0.5"#,
        r#""value": 0.5, "order": "sequential""#,
        1,
    );
    let e = parse_program(&text, "orders.json").expect_err("unknown order");
    let msg = e.to_string();
    assert!(msg.contains("unknown memory order `sequential`"), "{msg}");
    assert!(msg.contains("body[28].value.order"), "{msg}");
    assert!(
        msg.contains("Fix: use one of relaxed acquire release acq_rel seq_cst"),
        "{msg}"
    );
    // Not a string, a duplicate key, or `order` outside an atomic.
    for (from, to, want) in [
        (r#""value": 0.5"#, r#""value": 0.5, "order": 1"#, "order"),
        (
            r#""value": 0.5"#,
            r#""value": 0.5, "order": "relaxed", "order": "relaxed""#,
            "duplicate key `order`",
        ),
        (
            r#"{"store": "w", "index": "l", "value": 0}"#,
            r#"{"store": "w", "index": "l", "value": 0, "order": "relaxed"}"#,
            "unexpected key `order`",
        ),
    ] {
        let text = program(None).replacen(from, to, 1);
        let msg = parse_program(&text, "orders.json")
            .expect_err(to)
            .to_string();
        assert!(msg.contains(want), "{to}: {msg}");
        assert!(msg.contains("Fix:"), "{to}: {msg}");
    }
}

#[test]
fn every_order_is_valid_on_every_op_and_buffer_kind() {
    for order in AtomicOrder::ALL {
        let p = parse(&program(Some(order.name())));
        let d = validate(&p);
        assert!(d.is_empty(), "{}: {d:?}", order.name());
    }
    // The order does not lift the other atomic rules: a read-only buffer is still V050.
    let text = program(Some("relaxed")).replace(
        r#"{"name": "g", "binding": 0, "access": "read_write""#,
        r#"{"name": "g", "binding": 0, "access": "read""#,
    );
    let d = validate(&parse(&text));
    assert!(d.iter().any(|d| d.code == "V050"), "{d:?}");
}

fn ptx(order: Option<&str>, sm: u32) -> String {
    let p = parse(&program(order));
    let o = EmitOptions {
        sm,
        ..EmitOptions::for_program(&p)
    };
    emit(&p, &o).unwrap_or_else(|e| panic!("{e}")).ptx
}

/// Instructions (after any `@%p` / `@!%p` guard) that start with `prefix`.
fn lines_with<'a>(ptx: &'a str, prefix: &str) -> Vec<&'a str> {
    ptx.lines()
        .map(str::trim)
        .map(|l| match l.strip_prefix('@') {
            Some(rest) => rest.split_once(' ').map_or(rest, |(_, i)| i),
            None => l,
        })
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[test]
fn atomic_orders_lower_to_their_sem() {
    let default = ptx(None, 90);
    assert_eq!(default, ptx(Some("seq_cst"), 90));
    let atoms = lines_with(&default, "atom.");
    assert_eq!(atoms.len(), 25, "{default}");
    assert!(
        atoms.iter().all(|l| l.contains("atom.acq_rel.")),
        "{atoms:?}"
    );
    // seq_cst: one fence.sc of the buffer's scope before each atomic.
    assert_eq!(lines_with(&default, "fence.sc.gpu").len(), 17);
    assert_eq!(lines_with(&default, "fence.sc.cta").len(), 8);
    for (order, sem) in [
        ("relaxed", "relaxed"),
        ("acquire", "acquire"),
        ("release", "release"),
        ("acq_rel", "acq_rel"),
    ] {
        let text = ptx(Some(order), 90);
        assert!(lines_with(&text, "fence").is_empty(), "{order}: no fence");
        // Only `g_exchange` and `w_cas` are read later. A relaxed or release atomic whose
        // old value is dead is a `red` (no acquire form exists; exchange and cas have none).
        let reds = if matches!(order, "relaxed" | "release") {
            19
        } else {
            0
        };
        let atoms = lines_with(&text, "atom.");
        let red_lines = lines_with(&text, "red.");
        assert_eq!(atoms.len(), 25 - reds, "{order}\n{text}");
        assert_eq!(red_lines.len(), reds, "{order}");
        for kind in ["atom", "red"] {
            let lines = if kind == "atom" { &atoms } else { &red_lines };
            let gpu = format!("{kind}.{sem}.gpu.global.");
            let cta = format!("{kind}.{sem}.cta.shared.");
            let (g, c) = (
                lines.iter().filter(|l| l.contains(&gpu)).count(),
                lines.iter().filter(|l| l.contains(&cta)).count(),
            );
            assert_eq!(g + c, lines.len(), "{order} {kind}: {lines:?}");
            // Per buffer kind: 6 reducible ops on g and d (+ the f32 add) and 6 on w.
            if kind == "red" && reds > 0 {
                assert_eq!((g, c), (13, 6), "{order}");
            }
        }
    }
    // The old value read later keeps the atom.
    let text = ptx(Some("relaxed"), 90);
    assert_eq!(
        lines_with(&text, "atom.relaxed.gpu.global.exch.b32").len(),
        1
    );
}

#[test]
fn every_order_assembles_for_sm70_sm80_and_sm90() {
    let Some(bin) = crate::support::tools::ptxas("the atomic-order assembly check") else {
        return;
    };
    let mut failures = Vec::new();
    for order in AtomicOrder::ALL {
        for sm in [70, 80, 90] {
            if let Err(e) = assemble(&bin, &ptx(Some(order.name()), sm), sm, false) {
                failures.push(format!("{} sm_{sm}: {e}", order.name()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every buffer after a reference run of `p`.
fn run(p: &Program) -> Vec<(String, Vec<u8>)> {
    let prepared = prepare(p, Path::new("."), None, None).unwrap_or_else(|e| panic!("{e}"));
    let mut bufs = prepared.buffers;
    vyrescope::interp::run(p, &prepared.shape, &mut bufs).unwrap_or_else(|e| panic!("{e}"));
    bufs.into_iter().map(|b| (b.name, b.data)).collect()
}

#[test]
fn atomic_order_never_changes_results() {
    // The synthetic Program and the two atomic fixtures, with every order.
    let mut texts = vec![program(None)];
    for f in ["histogram_u8", "atomics_mixed"] {
        let path = root().join(format!("fixtures/programs/{f}.json"));
        texts.push(std::fs::read_to_string(&path).expect("fixture"));
    }
    for text in texts {
        let base = run(&parse(&text));
        assert!(
            base.iter().any(|(_, d)| d.iter().any(|&b| b != 0)),
            "the run writes something"
        );
        for order in AtomicOrder::ALL {
            // `buffer` appears only in atomics: give each one this order.
            let with = text.replace(
                r#""buffer": "#,
                &format!(r#""order": "{}", "buffer": "#, order.name()),
            );
            let p = parse(&with);
            let got = orders(&p);
            assert!(got.len() >= 2 && got.iter().all(|&o| o == order));
            assert_eq!(run(&p), base, "{}", order.name());
        }
    }
}
