//! Unit tests of the printer: statement forms, precedence, literal spellings, let types, gutter.

use super::*;
use crate::ir::parse_program;

fn prog(body: &str, buffers: &str) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
            "buffers": [{buffers}], "body": {body}}}"#
    );
    match parse_program(&text, "t.json") {
        Ok(p) => p,
        Err(e) => panic!("test program does not parse: {e}"),
    }
}

const BUFS: &str = r#"{"name": "a", "binding": 0, "access": "read", "type": "f32"},
    {"name": "c", "binding": 1, "access": "read_write", "type": "u32"},
    {"name": "h", "binding": 2, "access": "read_write", "type": "u64"},
    {"name": "tile", "access": "workgroup", "type": "f32", "count": 128}"#;

/// Body lines only (after the buffer table's closing brace).
fn body_lines(p: &Printed) -> Vec<String> {
    let start = p
        .lines
        .iter()
        .position(|l| l.code == "}")
        .map_or(0, |i| i + 1);
    p.lines[start..].iter().map(|l| l.code.clone()).collect()
}

/// Parses a single expression as the value of `let x`, returns its printed form.
fn ex(json: &str) -> String {
    let p = prog(
        &format!(
            r#"[{{"let": "v", "value": {{"u32": 3}}}}, {{"let": "f", "value": 1.5}}, {{"let": "x", "value": {json}}}]"#
        ),
        BUFS,
    );
    let lines = body_lines(&print_program(&p));
    let last = lines.last().cloned().unwrap_or_default();
    match last.split_once(" = ") {
        Some((_, rhs)) => rhs.to_string(),
        None => last,
    }
}

#[test]
fn header_and_buffer_table() {
    let mut p = prog("[]", BUFS);
    p.doc = Some("first line\nsecond line".into());
    let text = print_program(&p).text();
    assert_eq!(
        text,
        "kernel t workgroup(64,1,1)\n// first line\n// second line\nbuffers {\n  @0  read        f32  a\n  @1  read_write  u32  c\n  @2  read_write  u64  h\n  --  workgroup   f32  tile[128]\n}\n"
    );
    assert!(print_program(&p).lines.iter().all(|l| l.node.is_none()));
}

#[test]
fn long_docs_wrap_at_word_boundaries() {
    let mut p = prog("[]", BUFS);
    let words: Vec<String> = (0..60).map(|i| format!("word{i}")).collect();
    p.doc = Some(format!("{}\n\nshort", words.join(" ")));
    let printed = print_program(&p);
    let docs: Vec<&str> = printed
        .lines
        .iter()
        .map(|l| l.code.as_str())
        .filter(|c| c.starts_with("//"))
        .collect();
    assert!(docs.len() >= 5, "{docs:?}");
    assert!(docs.iter().all(|l| l.len() <= 3 + 92), "{docs:?}");
    let rejoined: Vec<&str> = docs
        .iter()
        .flat_map(|l| l.trim_start_matches("//").split_whitespace())
        .collect();
    let mut want: Vec<&str> = words.iter().map(String::as_str).collect();
    want.push("short");
    assert_eq!(rejoined, want);
    assert!(docs.contains(&"//"), "blank doc lines are kept");
}

#[test]
fn buffer_table_is_in_binding_order() {
    let p = prog(
        "[]",
        r#"{"name": "z", "binding": 1, "access": "write", "type": "i8"},
           {"name": "y", "binding": 0, "access": "uniform", "type": "f64"}"#,
    );
    let t = print_program(&p).text();
    let y = t.find("  @0  uniform  f64  y").unwrap_or(usize::MAX);
    let z = t.find("  @1  write    i8   z").unwrap_or(usize::MAX);
    assert!(y < z && z != usize::MAX, "{t}");
}

#[test]
fn statements_with_node_ids_and_braces() {
    let p = prog(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "c"}]}, "then": [
                {"store": "c", "index": "i", "value": {"add": [{"load": "c", "index": "i"}, 1]}}
            ], "else": [{"return": {}}]},
            {"loop": "k", "from": 0, "to": 4, "body": [
                {"barrier": "workgroup"},
                {"block": [{"assign": "i", "value": {"mul": ["i", 2]}}]}
            ]},
            {"barrier": "grid"}]"#,
        BUFS,
    );
    let printed = print_program(&p);
    let body: Vec<(String, Option<String>)> = printed
        .lines
        .iter()
        .skip_while(|l| l.code != "}")
        .skip(1)
        .map(|l| (l.code.clone(), l.node.as_ref().map(|n| n.to_string())))
        .collect();
    let want: Vec<(&str, Option<&str>)> = vec![
        ("let i: u32 = gid.x", Some("body[0]")),
        ("if i < len(c) {", Some("body[1]")),
        ("  c[i] = c[i] + 1", Some("body[1].then[0]")),
        ("} else {", None),
        ("  return", Some("body[1].else[0]")),
        ("}", None),
        ("for k in 0..4 {", Some("body[2]")),
        ("  barrier(workgroup)", Some("body[2].body[0]")),
        ("  {", Some("body[2].body[1]")),
        ("    i = i * 2", Some("body[2].body[1].block[0]")),
        ("  }", None),
        ("}", None),
        ("barrier(grid)", Some("body[3]")),
    ];
    let want: Vec<(String, Option<String>)> = want
        .into_iter()
        .map(|(c, n)| (c.to_string(), n.map(str::to_string)))
        .collect();
    assert_eq!(body, want);
    // Every statement opens exactly one line.
    let mut ids = Vec::new();
    p.walk_stmts(&mut |s| ids.push(s.id.clone()));
    for id in ids {
        assert_eq!(
            printed
                .lines
                .iter()
                .filter(|l| l.node.as_ref() == Some(&id))
                .count(),
            1,
            "{id}"
        );
        assert!(printed.line_of(&id).is_some());
    }
}

#[test]
fn empty_else_is_kept() {
    let p = prog(r#"[{"if": true, "then": [], "else": []}]"#, BUFS);
    assert_eq!(
        body_lines(&print_program(&p)),
        ["if true {", "} else {", "}"]
    );
}

#[test]
fn precedence_and_parentheses() {
    assert_eq!(ex(r#"{"add": ["v", {"mul": ["v", "v"]}]}"#), "v + v * v");
    assert_eq!(ex(r#"{"mul": [{"add": ["v", "v"]}, "v"]}"#), "(v + v) * v");
    assert_eq!(ex(r#"{"sub": ["v", {"sub": ["v", "v"]}]}"#), "v - (v - v)");
    assert_eq!(ex(r#"{"sub": [{"sub": ["v", "v"]}, "v"]}"#), "v - v - v");
    assert_eq!(ex(r#"{"shl": [{"add": ["v", 1]}, 2]}"#), "(v + 1) << 2");
    assert_eq!(ex(r#"{"add": [{"shl": ["v", 1]}, 2]}"#), "(v << 1) + 2");
    assert_eq!(
        ex(r#"{"and": [{"or": ["v", 1]}, {"xor": ["v", 2]}]}"#),
        "(v | 1) & (v ^ 2)"
    );
    assert_eq!(
        ex(r#"{"or": [{"and": ["v", 1]}, {"xor": ["v", 2]}]}"#),
        "(v & 1) | (v ^ 2)"
    );
    assert_eq!(
        ex(r#"{"eq": [{"and": ["v", 1]}, 0]}"#),
        "(v & 1) == 0",
        "C and Rust disagree here: always parenthesized"
    );
    assert_eq!(ex(r#"{"eq": [{"lt": ["v", 1]}, true]}"#), "(v < 1) == true");
    assert_eq!(
        ex(r#"{"lor": [{"land": [{"lt": ["v", 1]}, {"gt": ["v", 0]}]}, {"ne": ["v", 3]}]}"#),
        "v < 1 && v > 0 || v != 3"
    );
    assert_eq!(
        ex(r#"{"land": [{"lor": [true, false]}, true]}"#),
        "(true || false) && true"
    );
    assert_eq!(ex(r#"{"shr": [{"shl": ["v", 1]}, 2]}"#), "v << 1 >> 2");
    assert_eq!(ex(r#"{"and": [{"and": ["v", 1]}, 2]}"#), "v & 1 & 2");
    assert_eq!(ex(r#"{"add": [{"mul": ["v", 1]}, 2]}"#), "v * 1 + 2");
    assert_eq!(ex(r#"{"neg": {"add": ["f", 1.0]}}"#), "-(f + 1.0)");
    assert_eq!(ex(r#"{"neg": {"neg": "f"}}"#), "-(-f)");
    assert_eq!(ex(r#"{"not": "v"}"#), "~v");
    assert_eq!(ex(r#"{"lnot": {"lt": ["v", 2]}}"#), "!(v < 2)");
    assert_eq!(ex(r#"{"mul": [{"neg": "f"}, "f"]}"#), "-f * f");
    assert_eq!(ex(r#"{"sub": ["f", -2.5]}"#), "f - -2.5");
    assert_eq!(ex(r#"{"neg": {"i32": -3}}"#), "-(-3)");
    assert_eq!(
        ex(r#"{"div": [{"rem": ["v", 7]}, {"mul": ["v", 3]}]}"#),
        "v % 7 / (v * 3)"
    );
}

#[test]
fn call_forms() {
    assert_eq!(
        ex(r#"{"min": ["v", {"max": ["v", 1]}]}"#),
        "min(v, max(v, 1))"
    );
    assert_eq!(ex(r#"{"absdiff": ["v", 1]}"#), "absdiff(v, 1)");
    assert_eq!(ex(r#"{"mulhi": ["v", 1]}"#), "mulhi(v, 1)");
    assert_eq!(ex(r#"{"rotl": ["v", 1]}"#), "rotl(v, 1)");
    assert_eq!(ex(r#"{"rotr": ["v", 1]}"#), "rotr(v, 1)");
    assert_eq!(ex(r#"{"sqrt": {"add": ["f", "f"]}}"#), "sqrt(f + f)");
    assert_eq!(ex(r#"{"isnan": "f"}"#), "isnan(f)");
    assert_eq!(ex(r#"{"popcount": "v"}"#), "popcount(v)");
    assert_eq!(
        ex(r#"{"select": [{"lt": ["v", 1]}, "f", 2.0]}"#),
        "select(v < 1, f, 2.0)"
    );
    assert_eq!(ex(r#"{"fma": ["f", "f", 1.0]}"#), "fma(f, f, 1.0)");
    assert_eq!(ex(r#"{"cast": "u32", "value": "f"}"#), "u32(f)");
    assert_eq!(
        ex(r#"{"cast": "f64", "value": {"add": ["v", 1]}}"#),
        "f64(v + 1)"
    );
    assert_eq!(ex(r#"{"bitcast": "f32", "value": "v"}"#), "bitcast<f32>(v)");
    assert_eq!(
        ex(r#"{"atomic": "add", "buffer": "c", "index": "v", "value": 1}"#),
        "atomic_add(c[v], 1)"
    );
    assert_eq!(
        ex(r#"{"atomic": "cas", "buffer": "c", "index": 0, "expected": "v", "value": 5}"#),
        "atomic_cas(c[0], v, 5)"
    );
    assert_eq!(
        ex(r#"{"atomic": "exchange", "buffer": "h", "index": 1, "value": {"u64": 9}}"#),
        "atomic_exchange(h[1], 9u64)"
    );
    assert_eq!(
        ex(r#"{"shuffle": "f", "lane": {"sub": [{"lane": {}}, 1]}}"#),
        "shuffle(f, lane - 1)"
    );
    assert_eq!(
        ex(r#"{"subgroup_reduce": "add", "value": "v"}"#),
        "subgroup_add(v)"
    );
    assert_eq!(
        ex(r#"{"subgroup_reduce": "xor", "value": "v"}"#),
        "subgroup_xor(v)"
    );
    assert_eq!(ex(r#"{"ballot": {"gt": ["v", 0]}}"#), "ballot(v > 0)");
    assert_eq!(ex(r#"{"lane": {}}"#), "lane");
    assert_eq!(ex(r#"{"subgroup_size": {}}"#), "subgroup_size");
    assert_eq!(ex(r#"{"nwg": "z"}"#), "nwg.z");
    assert_eq!(ex(r#"{"wgid": "y"}"#), "wgid.y");
    assert_eq!(ex(r#"{"lid": "x"}"#), "lid.x");
    assert_eq!(
        ex(r#"{"load": "tile", "index": {"add": ["v", 1]}}"#),
        "tile[v + 1]"
    );
}

#[test]
fn literal_spellings() {
    assert_eq!(ex("7"), "7");
    assert_eq!(ex("-3"), "-3");
    assert_eq!(ex("1.5"), "1.5");
    assert_eq!(ex("2.0"), "2.0");
    assert_eq!(ex("0.1"), "0.1");
    assert_eq!(ex(r#"{"u32": 7}"#), "7");
    assert_eq!(ex(r#"{"i32": 7}"#), "7i32");
    assert_eq!(ex(r#"{"i32": -7}"#), "-7");
    assert_eq!(ex(r#"{"u64": 7}"#), "7u64");
    assert_eq!(ex(r#"{"i64": -7}"#), "-7i64");
    assert_eq!(ex(r#"{"f32": 1.5}"#), "1.5");
    assert_eq!(ex(r#"{"f32": 0.1}"#), "0.1");
    assert_eq!(ex(r#"{"f64": 1.5}"#), "1.5f64");
    assert_eq!(ex(r#"{"f64": 0.1}"#), "0.1f64");
    assert_eq!(ex(r#"{"f32": "inf"}"#), "inf");
    assert_eq!(ex(r#"{"f32": "-inf"}"#), "-inf");
    assert_eq!(ex(r#"{"f32": "nan"}"#), "nan");
    assert_eq!(ex(r#"{"f64": "inf"}"#), "inf_f64");
    assert_eq!(ex(r#"{"f64": "nan"}"#), "nan_f64");
    assert_eq!(ex("true"), "true");
    assert_eq!(ex(r#"{"f32": -0.0}"#), "-0.0");
}

#[test]
fn let_lines_show_inferred_types() {
    let p = prog(
        r#"[{"let": "a", "value": 1},
            {"let": "b", "value": {"add": [{"u64": 1}, 2]}},
            {"let": "c", "value": {"lt": ["a", 2]}},
            {"let": "d", "value": {"cast": "f64", "value": "a"}},
            {"let": "e", "value": {"load": "tile", "index": 0}},
            {"loop": "k", "from": 0, "to": 2, "body": [
                {"let": "g", "value": {"add": ["k", "a"]}},
                {"let": "h", "value": {"atomic": "max", "buffer": "h", "index": "g", "value": 3}}
            ]},
            {"let": "m", "value": -2},
            {"let": "n", "value": {"ballot": true}}]"#,
        BUFS,
    );
    let lines = body_lines(&print_program(&p));
    let lets: Vec<&str> = lines
        .iter()
        .filter(|l| l.trim_start().starts_with("let "))
        .map(|l| l.trim_start())
        .collect();
    assert_eq!(
        lets,
        [
            "let a: u32 = 1",
            "let b: u64 = 1u64 + 2",
            "let c: bool = a < 2",
            "let d: f64 = f64(a)",
            "let e: f32 = tile[0]",
            "let g: u32 = k + a",
            "let h: u64 = atomic_max(h[g], 3)",
            "let m: i32 = -2",
            "let n: u32 = ballot(true)",
        ]
    );
}

#[test]
fn deterministic_and_gutter_aligned() {
    let p = prog(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", 4]}, "then": [{"store": "c", "index": "i", "value": "i"}]}]"#,
        BUFS,
    );
    let a = print_program(&p);
    assert_eq!(a, print_program(&p.clone()));
    let g = a.text_with_gutter();
    let bars: Vec<usize> = g.lines().filter_map(|l| l.find(" |")).collect();
    assert_eq!(bars.len(), a.lines.len());
    assert!(bars.windows(2).all(|w| w[0] == w[1]), "{g}");
    assert!(g.contains("body[1].then[0] |   c[i] = i\n"), "{g}");
    assert!(g.lines().all(|l| !l.ends_with(' ')));
}
