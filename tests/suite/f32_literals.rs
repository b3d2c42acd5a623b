//! f32 values are rounded once from the decimal as written, not from its f64: typed and bare
//! literals, `data` elements of Programs and pipelines, and a Program written back. The cases
//! sit just above, just below and exactly on f32 midpoints, negative and subnormal; the
//! "just above/below" ones are those where rounding the f64 again (ties to even) goes the
//! wrong way.

use std::path::Path;

use vyrescope::inputs::{buffer_bytes, prepare, FileRoot};
use vyrescope::ir::{
    elaborate, parse_pipeline, parse_program, program_to_json, Expr, Literal, Program, Scalar,
    StmtKind,
};

/// 1 + 2^-24, halfway between 1.0 (even) and 0x3f800001.
const M1: &str = "1.000000059604644775390625";
/// 1 + 3 * 2^-24, halfway between 0x3f800001 and 0x3f800002 (even).
const M3: &str = "1.000000178813934326171875";
/// 2^-150, halfway between 0 (even) and the least subnormal.
const H: &str = "7.00649232162408535461864791644958065640130970938257885878534141944895541342930300743319094181060791015625e-46";
/// 3 * 2^-150, halfway between subnormals 1 and 2 (even).
const S3: &str = "2.101947696487225606385594374934874196920392912814773657635602425834686624028790902229957282543182373046875e-45";

/// (decimal, f32 bits): each pair of a midpoint, a decimal a hair above it and one a hair
/// below, whose f64 is the midpoint itself.
fn cases() -> Vec<(String, u32)> {
    let above = |m: &str| match m.split_once('e') {
        Some((d, e)) => format!("{d}0001e{e}"),
        None => format!("{m}0001"),
    };
    // The exact midpoints end in 5: one unit less in an appended place lies just below.
    let below = |m: &str| match m.split_once('e') {
        Some((d, e)) => format!("{}49999e{e}", &d[..d.len() - 1]),
        None => format!("{}49999", &m[..m.len() - 1]),
    };
    let mut v = vec![
        ("1.0000000596046447754".to_string(), 0x3f80_0001),
        (M1.to_string(), 0x3f80_0000),
        (above(M1), 0x3f80_0001),
        (below(M1), 0x3f80_0000),
        (M3.to_string(), 0x3f80_0002),
        (above(M3), 0x3f80_0002),
        (below(M3), 0x3f80_0001),
        (H.to_string(), 0),
        (above(H), 1),
        (S3.to_string(), 2),
        (below(S3), 1),
        (above(S3), 2),
        ("0.1".to_string(), 0.1f32.to_bits()),
    ];
    let neg: Vec<(String, u32)> = v
        .iter()
        .map(|(d, b)| (format!("-{d}"), b | 0x8000_0000))
        .collect();
    v.extend(neg);
    v
}

#[test]
fn the_cases_are_what_they_claim() {
    for (d, bits) in cases() {
        assert_eq!(d.parse::<f32>().unwrap().to_bits(), bits, "{d}");
    }
    // Where the f64 rounded again gives another f32: above M1 and H, below M3 and S3, the
    // issue's decimal, and their negatives.
    let wrong_before = cases()
        .iter()
        .filter(|(d, b)| (d.parse::<f64>().unwrap() as f32).to_bits() != *b)
        .count();
    assert_eq!(wrong_before, 10);
}

fn program(body: &str, buffers: &str, run: &str) -> String {
    format!(
        r#"{{"format": 1, "name": "k", "workgroup_size": [1, 1, 1], "buffers": [{buffers}], "body": [{body}]{run}}}"#
    )
}

fn let_value(p: &Program, i: usize) -> &Expr {
    match &p.body[i].kind {
        StmtKind::Let { value, .. } => value,
        other => panic!("not a let: {other:?}"),
    }
}

fn f32_bits(e: &Expr) -> u32 {
    match e {
        Expr::Lit(Literal::Typed(Scalar::F32(v))) => v.to_bits(),
        other => panic!("not an f32 literal: {other:?}"),
    }
}

#[test]
fn typed_and_bare_f32_literals_round_once_from_the_text() {
    for (d, bits) in cases() {
        let text = program(
            &format!(
                r#"{{"let": "t", "value": {{"f32": {d}}}}}, {{"let": "b", "value": {d}}}, {{"let": "w", "value": {{"add": [{{"f64": 0.5}}, {d}]}}}}"#
            ),
            "",
            "",
        );
        let p = parse_program(&text, "k.json").unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(f32_bits(let_value(&p, 0)), bits, "typed {d}");
        let typed = elaborate(&p);
        assert_eq!(f32_bits(let_value(&typed, 1)), bits, "bare {d}");
        // In an f64 context the same bare literal is its nearest f64.
        match let_value(&typed, 2) {
            Expr::Binary(_, _, b) => assert_eq!(
                **b,
                Expr::Lit(Literal::Typed(Scalar::F64(d.parse().unwrap()))),
                "{d}"
            ),
            other => panic!("{other:?}"),
        }
    }
}

/// Each case in its own files: one file that writes two decimals of one midpoint with
/// different roundings is refused (the last test).
#[test]
fn data_elements_of_programs_and_pipelines_round_once() {
    let decl = r#"{"name": "a", "binding": 0, "access": "read_write", "type": "f32"}"#;
    for (d, bits) in cases() {
        let list = format!("{d}, 0.25, {d}");
        let want: Vec<u8> = [bits, 0.25f32.to_bits(), bits]
            .iter()
            .flat_map(|b| b.to_le_bytes())
            .collect();
        let text = program(
            "",
            decl,
            &format!(r#", "run": {{"inputs": {{"a": {{"data": [{list}]}}}}}}"#),
        );
        let p = parse_program(&text, "k.json").unwrap_or_else(|e| panic!("{d}: {e}"));
        let run = prepare(&p, Path::new("."), None, None).expect("prepares");
        assert_eq!(run.buffers[0].data, want, "{d}");

        // Pipeline buffers, plain and typed elements, `data` before and after `type`.
        let pipe = format!(
            r#"{{"format": 1, "pipeline": "p", "buffers": {{"a": {{"type": "f32", "data": [{list}]}}, "b": {{"data": [{{"f32": {d}}}, 0.25, {{"f32": {d}}}], "type": "f32"}}}},
                "steps": [{{"program": {}, "bind": {{"a": "a"}}}}]}}"#,
            program("", decl, "")
        );
        let pl =
            parse_pipeline(&pipe, "p.json", Path::new(".")).unwrap_or_else(|e| panic!("{d}: {e}"));
        for b in &pl.buffers {
            let bytes = buffer_bytes(
                &b.name,
                b.elem,
                3,
                &b.contents.source,
                &FileRoot::program_folder(Path::new(".")),
            )
            .expect("bytes");
            assert_eq!(bytes, want, "pipeline buffer {} {d}", b.name);
        }
    }
}

#[test]
fn a_written_program_reads_back_with_the_same_roundings() {
    for (d, bits) in cases() {
        let text = program(
            &format!(r#"{{"let": "b", "value": {d}}}"#),
            r#"{"name": "a", "binding": 0, "access": "read_write", "type": "f32"}"#,
            &format!(r#", "run": {{"inputs": {{"a": {{"data": [{d}, 0.5]}}}}}}"#),
        );
        let p = parse_program(&text, "k.json").expect("parses");
        let written = program_to_json(&p).expect("writes");
        let back = parse_program(&written, "back.json").expect("reads back");
        assert_eq!(back, p, "{d} -> {written}");
        assert_eq!(f32_bits(let_value(&elaborate(&back), 0)), bits, "{written}");
    }
}

#[test]
fn two_decimals_of_one_midpoint_with_different_roundings_are_refused_with_a_fix() {
    let text = program(
        &format!(
            r#"{{"let": "a", "value": 1.0000000596046447754}}, {{"let": "b", "value": {M1}}}"#
        ),
        "",
        "",
    );
    let e = parse_program(&text, "k.json").expect_err("ambiguous");
    assert_eq!(e.path, "body[0].value", "{e:?}");
    assert!(e.message.contains("f32"), "{e:?}");
    assert!(
        e.fix.contains("1.0") && e.fix.contains("1.0000001"),
        "{e:?}"
    );
    // The same decimal twice is no conflict.
    let same = program(
        r#"{"let": "a", "value": 1.0000000596046447754}, {"let": "b", "value": {"f32": 1.0000000596046447754}}"#,
        "",
        "",
    );
    let p = parse_program(&same, "k.json").expect("parses");
    assert_eq!(f32_bits(let_value(&p, 1)), 0x3f80_0001);
}
