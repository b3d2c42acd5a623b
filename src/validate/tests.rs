//! One case per rule: small Programs with the codes they must (and must only) produce.

use super::*;
use crate::ir::parse_program;

/// Buffers every case can use.
const BUFFERS: &str = r#"[
  {"name": "a",    "binding": 0, "access": "read",       "type": "f32"},
  {"name": "o",    "binding": 1, "access": "read_write", "type": "u32"},
  {"name": "oi",   "binding": 2, "access": "read_write", "type": "i32"},
  {"name": "of",   "binding": 3, "access": "read_write", "type": "f32"},
  {"name": "od",   "binding": 4, "access": "read_write", "type": "f64"},
  {"name": "o8",   "binding": 5, "access": "write",      "type": "u8"},
  {"name": "oh",   "binding": 6, "access": "read_write", "type": "f16"},
  {"name": "ob",   "binding": 7, "access": "read_write", "type": "bool"},
  {"name": "o64",  "binding": 8, "access": "read_write", "type": "u64"},
  {"name": "oi64", "binding": 9, "access": "read_write", "type": "i64"},
  {"name": "p",    "binding": 10, "access": "uniform",   "type": "u32"},
  {"name": "t",    "access": "workgroup", "type": "u32", "count": 64}
]"#;

fn program(buffers: &str, body: &str) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1], "buffers": {buffers}, "body": {body}}}"#
    );
    match parse_program(&text, "case.json") {
        Ok(p) => p,
        Err(e) => panic!("case does not parse: {e}\n{text}"),
    }
}

fn run(buffers: &str, body: &str) -> Vec<Diagnostic> {
    validate(&program(buffers, body))
}

/// Codes of all diagnostics (errors, warnings, notes) of `body` over [`BUFFERS`].
fn codes(body: &str) -> Vec<&'static str> {
    run(BUFFERS, body).iter().map(|d| d.code).collect()
}

#[track_caller]
fn assert_codes(body: &str, want: &[&str]) {
    let d = run(BUFFERS, body);
    let got: Vec<&str> = d.iter().map(|d| d.code).collect();
    assert_eq!(got, want, "{body}\n{:#?}", d);
}

#[track_caller]
fn assert_ok(body: &str) {
    assert_codes(body, &[]);
}

// ---------------------------------------------------------------------------------------------
// Declarations

#[test]
fn buffer_rules() {
    let c = |b: &str| -> Vec<&'static str> { run(b, "[]").iter().map(|d| d.code).collect() };
    assert_eq!(
        c(r#"[{"name": "x y", "binding": 0, "access": "read", "type": "f32"}]"#),
        ["V001"]
    );
    assert_eq!(
        c(
            r#"[{"name": "x", "binding": 0, "access": "read", "type": "f32"},
              {"name": "x", "binding": 1, "access": "read", "type": "f32"}]"#
        ),
        ["V002"]
    );
    assert_eq!(
        c(r#"[{"name": "x", "access": "uniform", "type": "u32"}]"#),
        ["V003"]
    );
    assert_eq!(
        c(
            r#"[{"name": "x", "binding": 3, "access": "read", "type": "f32"},
              {"name": "y", "binding": 3, "access": "write", "type": "f32"}]"#
        ),
        ["V004"]
    );
    assert_eq!(
        c(r#"[{"name": "w", "access": "workgroup", "type": "f32", "count": 0}]"#),
        ["V005"]
    );
    assert_eq!(
        c(r#"[{"name": "w", "binding": 0, "access": "workgroup", "type": "f32", "count": 4}]"#),
        ["V006"]
    );
    assert_eq!(
        c(r#"[{"name": "x", "binding": 0, "access": "read", "type": "f32", "count": 4}]"#),
        ["V007"]
    );
    // 48 KiB exactly fits; one more element does not.
    let fits = MAX_SHARED_BYTES / 4;
    assert!(c(&format!(
        r#"[{{"name": "w", "access": "workgroup", "type": "f32", "count": {fits}}}]"#
    ))
    .is_empty());
    assert_eq!(
        c(&format!(
            r#"[{{"name": "w", "access": "workgroup", "type": "f32", "count": {}}},
                {{"name": "w2", "access": "workgroup", "type": "u8", "count": 1}}]"#,
            fits
        )),
        ["V008"]
    );
}

#[test]
fn workgroup_size_limits() {
    for (wg, ok) in [
        ([1024, 1, 1], true),
        ([32, 32, 1], true),
        ([1, 1, 64], true),
        ([1025, 1, 1], false),
        ([64, 32, 1], false),
        ([1, 1, 65], false),
    ] {
        let mut p = program(BUFFERS, "[]");
        p.workgroup_size = wg;
        let d = validate(&p);
        assert_eq!(d.is_empty(), ok, "{wg:?}: {d:#?}");
        if !ok {
            assert_eq!(d[0].code, "V009");
        }
    }
}

#[test]
fn run_inputs_must_name_host_buffers() {
    let text = r#"{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
        "buffers": [{"name": "a", "binding": 0, "access": "read", "type": "f32"},
                    {"name": "w", "access": "workgroup", "type": "f32", "count": 4}],
        "body": [], "run": {"inputs": {"a": {"fill": "zeros"}, "w": {"fill": "ones"}, "zz": {"fill": "iota"}}}}"#;
    let d = validate(&parse_program(text, "r.json").unwrap());
    let got: Vec<_> = d
        .iter()
        .map(|d| (d.code, d.node.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        got,
        [
            ("V010", "run.inputs.w".into()),
            ("V010", "run.inputs.zz".into())
        ]
    );
}

// ---------------------------------------------------------------------------------------------
// Scoping

#[test]
fn scoping_rules() {
    assert_codes(
        r#"[{"store": "o", "index": 0, "value": "nope"}]"#,
        &["V020"],
    );
    assert_codes(r#"[{"assign": "nope", "value": 1}]"#, &["V020"]);
    // Shadowing at any depth, of variables and of loop counters, and by loop counters.
    assert_codes(
        r#"[{"let": "x", "value": 1}, {"block": [{"let": "x", "value": 2}]}]"#,
        &["V021"],
    );
    assert_codes(
        r#"[{"loop": "k", "from": 0, "to": 2, "body": [{"if": true, "then": [{"let": "k", "value": 1}]}]}]"#,
        &["V021"],
    );
    assert_codes(
        r#"[{"let": "k", "value": 1}, {"loop": "k", "from": 0, "to": 2, "body": []}]"#,
        &["V021"],
    );
    // Siblings may reuse a name: the first is out of scope.
    assert_ok(
        r#"[{"block": [{"let": "x", "value": 1}]}, {"block": [{"let": "x", "value": 2.5}]}]"#,
    );
    assert_ok(
        r#"[{"loop": "k", "from": 0, "to": 2, "body": []}, {"loop": "k", "from": 0, "to": 2, "body": []}]"#,
    );
    // Out of scope after the block.
    assert_codes(
        r#"[{"block": [{"let": "x", "value": 1}]}, {"store": "o", "index": 0, "value": "x"}]"#,
        &["V020"],
    );
    assert_codes(
        r#"[{"loop": "k", "from": 0, "to": 2, "body": [{"assign": "k", "value": 1}]}]"#,
        &["V022"],
    );
    assert_codes(
        r#"[{"let": "x", "value": 1}, {"assign": "x", "value": {"i32": 1}}]"#,
        &["V023"],
    );
    assert_ok(r#"[{"let": "x", "value": {"i64": 1}}, {"assign": "x", "value": 5}]"#);
    assert_codes(r#"[{"let": "2x", "value": 1}]"#, &["V001"]);
}

#[test]
fn one_mistake_one_diagnostic() {
    // `x` has no type after its error; later uses are not reported again.
    assert_codes(
        r#"[{"let": "x", "value": {"add": [{"u32": 1}, {"i32": 2}]}},
            {"store": "o", "index": "x", "value": {"mul": ["x", 2.5]}}]"#,
        &["V040"],
    );
}

// ---------------------------------------------------------------------------------------------
// Literals

#[test]
fn literal_ranges_and_contexts() {
    assert_ok(r#"[{"store": "o", "index": 0, "value": 4294967295}]"#);
    assert_codes(
        r#"[{"store": "o", "index": 0, "value": 4294967296}]"#,
        &["V043"],
    );
    assert_ok(r#"[{"store": "oi", "index": 0, "value": -2147483648}]"#);
    assert_codes(
        r#"[{"store": "oi", "index": 0, "value": -2147483649}]"#,
        &["V043"],
    );
    assert_codes(r#"[{"store": "o", "index": 0, "value": -1}]"#, &["V043"]);
    assert_ok(r#"[{"store": "o64", "index": 0, "value": 18446744073709551615}]"#);
    assert_ok(r#"[{"store": "oi64", "index": 0, "value": -9223372036854775808}]"#);
    // Without context: u32 (i32 if negative).
    assert_codes(r#"[{"let": "x", "value": 5000000000}]"#, &["V043"]);
    assert_codes(r#"[{"let": "x", "value": -3000000000}]"#, &["V043"]);
    assert_codes(r#"[{"let": "x", "value": {"add": ["o", 1]}}]"#, &["V020"]);
    // Narrow stores take the widened type: 300 is a fine u32 (it truncates on store).
    assert_ok(r#"[{"store": "o8", "index": 0, "value": 300}]"#);
    assert_ok(r#"[{"store": "oh", "index": 0, "value": 0.5}]"#);
    // No implicit int <-> float.
    assert_codes(r#"[{"store": "of", "index": 0, "value": 1}]"#, &["V042"]);
    assert_codes(r#"[{"store": "o", "index": 0, "value": 1.5}]"#, &["V042"]);
    assert_codes(r#"[{"store": "o", "index": 1.0, "value": 1}]"#, &["V042"]);
    assert_codes(r#"[{"store": "ob", "index": 0, "value": 1}]"#, &["V042"]);
    assert_codes(r#"[{"let": "x", "value": {"add": [1, 1.5]}}]"#, &["V042"]);
    // f32 range; f64 takes it.
    assert_codes(r#"[{"store": "of", "index": 0, "value": 1e39}]"#, &["V043"]);
    assert_ok(r#"[{"store": "od", "index": 0, "value": 1e39}]"#);
    // Shift amounts are u32 whatever the left side is.
    assert_ok(r#"[{"store": "oi64", "index": 0, "value": {"shl": [{"i64": 1}, 40]}}]"#);
    assert_codes(
        r#"[{"store": "o", "index": 0, "value": {"shl": [1, -1]}}]"#,
        &["V043"],
    );
}

#[test]
fn literal_messages_name_the_operand() {
    let d = run(
        BUFFERS,
        r#"[{"let": "x", "value": {"gid": "x"}}, {"store": "o", "index": "x", "value": {"add": ["x", {"mul": [2, 5000000000]}]}}]"#,
    );
    // Only the literal that does not fit is reported, by its path below the statement.
    assert_eq!(d.len(), 1, "{d:#?}");
    assert!(
        d[0].message
            .starts_with("in `value.add[1].mul[1]`: literal 5000000000"),
        "{d:#?}"
    );
    assert_eq!(d[0].node.as_deref(), Some("body[1]"));
}

// ---------------------------------------------------------------------------------------------
// Operand rules

#[test]
fn operand_rules() {
    // Same type both sides.
    assert_codes(
        r#"[{"let": "x", "value": {"add": [{"u32": 1}, {"i32": 1}]}}]"#,
        &["V040"],
    );
    assert_codes(
        r#"[{"let": "x", "value": {"select": [true, {"u32": 1}, {"f32": 1}]}}]"#,
        &["V040"],
    );
    assert_codes(
        r#"[{"let": "x", "value": {"eq": [true, {"u32": 1}]}}]"#,
        &["V040"],
    );
    // Classes.
    for (expr, ok) in [
        (r#"{"rem": [{"f32": 1}, {"f32": 2}]}"#, false),
        (r#"{"mulhi": [{"i64": 1}, {"i64": 2}]}"#, true),
        (r#"{"and": [true, false]}"#, true),
        (r#"{"and": [{"f32": 1}, {"f32": 2}]}"#, false),
        (r#"{"lt": [true, false]}"#, false),
        (r#"{"eq": [true, false]}"#, true),
        (r#"{"add": [true, false]}"#, false),
        (r#"{"land": [true, {"u32": 1}]}"#, false),
        (r#"{"shl": [{"f32": 1}, 2]}"#, false),
        (r#"{"shr": [{"i64": 1}, {"u64": 2}]}"#, false),
        (r#"{"rotl": [{"u64": 1}, {"u32": 2}]}"#, true),
        (r#"{"neg": {"u32": 1}}"#, true),
        (r#"{"neg": true}"#, false),
        (r#"{"popcount": {"f32": 1}}"#, false),
        (r#"{"lnot": {"u32": 1}}"#, false),
        (r#"{"sqrt": {"u32": 4}}"#, false),
        (r#"{"isnan": {"f64": 1}}"#, true),
        (r#"{"fma": [{"f32": 1}, 2.0, 3.0]}"#, true),
        (r#"{"fma": [{"u32": 1}, 2, 3]}"#, false),
        (r#"{"cast": "bool", "value": {"f32": 1}}"#, true),
        (r#"{"bitcast": "f32", "value": {"i32": 1}}"#, true),
        (r#"{"bitcast": "i64", "value": {"f64": 1}}"#, true),
        (r#"{"bitcast": "f64", "value": {"u32": 1}}"#, false),
        (r#"{"bitcast": "u32", "value": true}"#, false),
        (r#"{"subgroup_reduce": "xor", "value": {"f32": 1}}"#, false),
        (r#"{"subgroup_reduce": "max", "value": {"f32": 1}}"#, true),
        (r#"{"ballot": {"u32": 1}}"#, false),
        (r#"{"shuffle": {"f64": 1}, "lane": 3}"#, true),
        (r#"{"shuffle": {"f64": 1}, "lane": {"i32": 3}}"#, false),
        (r#"{"load": "a", "index": {"i32": 0}}"#, false),
        (r#"{"len": "nope"}"#, false),
    ] {
        let d = codes(&format!(r#"[{{"let": "x", "value": {expr}}}]"#));
        assert_eq!(d.is_empty(), ok, "{expr}: {d:?}");
    }
    assert_codes(r#"[{"if": {"u32": 1}, "then": []}]"#, &["V044"]);
    assert_codes(
        r#"[{"loop": "k", "from": {"i32": 0}, "to": 4, "body": []}]"#,
        &["V044"],
    );
}

// ---------------------------------------------------------------------------------------------
// Buffers and atomics

#[test]
fn store_and_load_rules() {
    assert_codes(r#"[{"store": "a", "index": 0, "value": 1.0}]"#, &["V031"]);
    assert_codes(r#"[{"store": "p", "index": 0, "value": 1}]"#, &["V031"]);
    assert_codes(r#"[{"store": "zz", "index": 0, "value": 1}]"#, &["V030"]);
    assert_codes(
        r#"[{"store": "o", "index": 0, "value": {"f32": 1}}]"#,
        &["V032"],
    );
    assert_codes(
        r#"[{"store": "ob", "index": 0, "value": true}, {"store": "t", "index": 0, "value": 7}]"#,
        &[],
    );
    assert_codes(
        r#"[{"let": "x", "value": {"load": "o8", "index": 0}}]"#,
        &["V033"],
    );
    assert_codes(
        r#"[{"let": "x", "value": {"load": "zz", "index": 0}}]"#,
        &["V030"],
    );
}

#[test]
fn atomic_rules() {
    let at = |op: &str, buf: &str, extra: &str| {
        codes(&format!(
            r#"[{{"let": "x", "value": {{"atomic": "{op}", "buffer": "{buf}", "index": 0, "value": 1{extra}}}}}]"#
        ))
    };
    assert_eq!(at("add", "o", ""), Vec::<&str>::new());
    assert_eq!(at("max", "oi", ""), Vec::<&str>::new());
    assert_eq!(at("xor", "o64", ""), Vec::<&str>::new());
    assert_eq!(at("exchange", "t", ""), Vec::<&str>::new());
    assert_eq!(at("cas", "o", r#", "expected": 0"#), Vec::<&str>::new());
    assert_eq!(at("cas", "o", ""), ["V052"]);
    assert_eq!(at("add", "o", r#", "expected": 0"#), ["V052"]);
    assert_eq!(at("add", "oi64", ""), ["V051"]);
    assert_eq!(at("add", "a", ""), ["V042", "V050"]);
    assert_eq!(at("add", "p", ""), ["V050"]);
    assert_eq!(at("add", "o8", ""), ["V050", "V051"]);
    // f32 only for add.
    let f = |op: &str| {
        codes(&format!(
            r#"[{{"let": "x", "value": {{"atomic": "{op}", "buffer": "of", "index": 0, "value": 1.0}}}}]"#
        ))
    };
    assert!(f("add").is_empty());
    assert_eq!(f("max"), ["V051"]);
    assert_eq!(
        codes(
            r#"[{"let": "x", "value": {"atomic": "add", "buffer": "od", "index": 0, "value": 1.0}}]"#
        ),
        ["V051"]
    );
    assert_eq!(
        codes(
            r#"[{"let": "x", "value": {"atomic": "add", "buffer": "nope", "index": 0, "value": 1}}]"#
        ),
        ["V030"]
    );
}

// ---------------------------------------------------------------------------------------------
// Divergence

#[test]
fn barriers_under_uniform_control_are_fine() {
    // Literals, len, nwg, wgid (workgroup scope), uniform-buffer loads and arithmetic on them.
    for cond in [
        r#"{"lt": [{"nwg": "x"}, 4]}"#,
        r#"{"lt": [{"len": "a"}, 4]}"#,
        r#"{"eq": [{"wgid": "y"}, 0]}"#,
        r#"{"gt": [{"load": "p", "index": {"add": [{"wgid": "x"}, 1]}}, 0]}"#,
        r#"{"ne": [{"subgroup_size": {}}, 32]}"#,
        r#"true"#,
    ] {
        assert_ok(&format!(
            r#"[{{"if": {cond}, "then": [{{"barrier": "workgroup"}}]}}]"#
        ));
    }
    // Tree-reduction shape: uniform loop, non-uniform `if` beside (not around) the barrier.
    assert_ok(
        r#"[{"let": "l", "value": {"lid": "x"}},
            {"loop": "k", "from": 0, "to": 6, "body": [
              {"let": "s", "value": {"shr": [32, "k"]}},
              {"if": {"lt": ["l", "s"]}, "then": [
                {"store": "t", "index": "l", "value": {"add": [{"load": "t", "index": "l"}, {"load": "t", "index": {"add": ["l", "s"]}}]}}]},
              {"barrier": "workgroup"}]}]"#,
    );
    // A variable assigned only uniform values stays uniform.
    assert_ok(
        r#"[{"let": "n", "value": {"len": "a"}},
            {"loop": "k", "from": 0, "to": 3, "body": [{"assign": "n", "value": {"shr": ["n", 1]}}]},
            {"if": {"gt": ["n", 0]}, "then": [{"barrier": "workgroup"}]}]"#,
    );
    // A return under a uniform condition removes all threads or none.
    assert_ok(
        r#"[{"if": {"eq": [{"wgid": "x"}, 3]}, "then": [{"return": {}}]}, {"barrier": "workgroup"}]"#,
    );
}

#[test]
fn barriers_under_divergent_control_are_errors() {
    for cond in [
        r#"{"lt": [{"gid": "x"}, 4]}"#,
        r#"{"lt": [{"lid": "z"}, 4]}"#,
        r#"{"lt": [{"lane": {}}, 4]}"#,
        r#"{"gt": [{"load": "a", "index": 0}, 0.0]}"#,
        r#"{"gt": [{"load": "p", "index": {"lid": "x"}}, 0]}"#,
        r#"{"gt": [{"atomic": "add", "buffer": "o", "index": 0, "value": 1}, 3]}"#,
        r#"{"gt": [{"ballot": true}, 3]}"#,
        r#"{"gt": [{"subgroup_reduce": "add", "value": 1}, 3]}"#,
    ] {
        let d = run(
            BUFFERS,
            &format!(r#"[{{"if": {cond}, "then": [{{"barrier": "workgroup"}}]}}]"#),
        );
        assert_eq!(
            d.iter().map(|d| d.code).collect::<Vec<_>>(),
            ["V060"],
            "{cond}: {d:#?}"
        );
        assert_eq!(d[0].node.as_deref(), Some("body[0].then[0]"));
        assert!(d[0].message.contains("`if` at body[0]"), "{}", d[0].message);
    }
    // Non-uniform loop bounds.
    let d = run(
        BUFFERS,
        r#"[{"loop": "k", "from": 0, "to": {"lid": "x"}, "body": [{"barrier": "workgroup"}]}]"#,
    );
    assert_eq!(d[0].code, "V060");
    assert!(d[0].message.contains("`loop` at body[0]") && d[0].message.contains("bounds"));
}

#[test]
fn non_uniformity_flows_through_variables_and_control() {
    // Through a chain of variables.
    let d = run(
        BUFFERS,
        r#"[{"let": "a1", "value": {"lid": "x"}}, {"let": "a2", "value": {"mul": ["a1", 2]}},
            {"if": {"lt": ["a2", 8]}, "then": [{"barrier": "workgroup"}]}]"#,
    );
    assert_eq!(d[0].code, "V060");
    assert!(
        d[0].message.contains("`a2`, which depends on `lid.x`"),
        "{}",
        d[0].message
    );
    // Assigned a uniform value, but only by some threads.
    assert_codes(
        r#"[{"let": "f", "value": 0},
            {"if": {"lt": [{"lid": "x"}, 8]}, "then": [{"assign": "f", "value": 1}]},
            {"if": {"eq": ["f", 1]}, "then": [{"barrier": "workgroup"}]}]"#,
        &["V060"],
    );
    // Assigned later in a loop: found by iterating to a fixpoint.
    assert_codes(
        r#"[{"let": "n", "value": 2}, {"let": "m", "value": 2},
            {"loop": "k", "from": 0, "to": 3, "body": [
              {"if": {"gt": ["n", 1]}, "then": [{"barrier": "workgroup"}]},
              {"assign": "n", "value": "m"},
              {"assign": "m", "value": {"gid": "x"}}]}]"#,
        &["V060"],
    );
    // Same name in sibling blocks: only the non-uniform one is.
    assert_ok(
        r#"[{"block": [{"let": "v", "value": {"gid": "x"}}]},
            {"block": [{"let": "v", "value": 3}, {"if": {"eq": ["v", 3]}, "then": [{"barrier": "workgroup"}]}]}]"#,
    );
}

#[test]
fn divergent_return_poisons_later_barriers() {
    let d = run(
        BUFFERS,
        r#"[{"block": [{"if": {"ge": [{"gid": "x"}, 100]}, "then": [{"block": [{"return": {}}]}]}]},
            {"barrier": "workgroup"}, {"barrier": "workgroup"}]"#,
    );
    let got: Vec<_> = d
        .iter()
        .map(|d| {
            (
                d.code,
                d.node.as_ref().map(|n| n.to_string()).unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("V061", "body[1]".to_string()),
            ("V061", "body[2]".to_string())
        ]
    );
    assert!(
        d[0].message
            .contains("`return` at body[0].block[0].then[0].block[0]"),
        "{}",
        d[0].message
    );
    // Inside a loop, a divergent return also affects the barrier before it (next iteration).
    let d = run(
        BUFFERS,
        r#"[{"loop": "k", "from": 0, "to": 4, "body": [
              {"barrier": "workgroup"},
              {"if": {"eq": [{"lid": "x"}, "k"]}, "then": [{"return": {}}]}]}]"#,
    );
    assert_eq!(
        d.iter().map(|d| d.code).collect::<Vec<_>>(),
        ["V061"],
        "{d:#?}"
    );
    assert_eq!(d[0].node.as_deref(), Some("body[0].body[0]"));
}

#[test]
fn grid_scope_treats_wgid_as_divergent() {
    let body = |scope: &str| {
        format!(r#"[{{"if": {{"eq": [{{"wgid": "x"}}, 0]}}, "then": [{{"barrier": "{scope}"}}]}}]"#)
    };
    assert_codes(&body("workgroup"), &[]);
    assert_codes(&body("grid"), &["V060", "V063"]);
    assert_codes(r#"[{"barrier": "grid"}]"#, &["V063"]);
    let d = run(BUFFERS, r#"[{"barrier": "grid"}]"#);
    assert_eq!(d[0].severity, Severity::Info);
    assert!(is_valid(&d));
}

#[test]
fn subgroup_ops_under_divergence_warn() {
    let d = run(
        BUFFERS,
        r#"[{"if": {"lt": [{"lane": {}}, 16]}, "then": [
              {"let": "x", "value": {"shuffle": {"lane": {}}, "lane": 0}}]}]"#,
    );
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!((d[0].code, d[0].severity), ("V062", Severity::Warning));
    assert!(is_valid(&d));
    assert_ok(r#"[{"let": "x", "value": {"shuffle": {"lane": {}}, "lane": 0}}]"#);
}

#[test]
fn diagnostics_come_in_program_order() {
    let d = run(
        r#"[{"name": "a", "binding": 0, "access": "read", "type": "f32"},
            {"name": "b", "access": "read", "type": "f32"}]"#,
        r#"[{"let": "x", "value": "u"},
            {"if": {"lt": [{"gid": "x"}, 4]}, "then": [{"barrier": "workgroup"}, {"assign": "y", "value": 1}]},
            {"store": "a", "index": 0, "value": 1.0}]"#,
    );
    let nodes: Vec<_> = d
        .iter()
        .map(|d| d.node.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        nodes,
        [
            "buffers[1]",
            "body[0]",
            "body[1].then[0]",
            "body[1].then[1]",
            "body[2]"
        ]
    );
    assert!(!is_valid(&d));
}

/// A `persistent_fixpoint`-style loop: clear a flag, barrier, set it, barrier, leave with
/// `return` when the flag (read at a uniform index) is 0. Sound only at one workgroup.
#[test]
fn one_workgroup_relaxes_load_dependent_returns() {
    let with_run = |run: &str| {
        let text = format!(
            r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
            "buffers": [{{"name": "flag", "binding": 0, "access": "read_write", "type": "u32"}},
                        {{"name": "w", "access": "workgroup", "type": "u32", "count": 64}}],
            "body": [{{"loop": "k", "from": 0, "to": 8, "body": [
                {{"if": {{"eq": [{{"lid": "x"}}, 0]}}, "then": [{{"store": "flag", "index": 0, "value": 0}}]}},
                {{"barrier": "workgroup"}},
                {{"if": {{"lt": [{{"lid": "x"}}, "k"]}}, "then": [{{"store": "flag", "index": 0, "value": 1}}]}},
                {{"barrier": "workgroup"}},
                {{"if": {{"eq": [{{"load": "flag", "index": 0}}, 0]}}, "then": [{{"return": {{}}}}]}},
                {{"barrier": "workgroup"}}]}}]{run}}}"#
        );
        let p = parse_program(&text, "f.json").unwrap();
        let d = validate(&p);
        (p, d)
    };
    let codes = |d: &[Diagnostic]| d.iter().map(|d| d.code).collect::<Vec<_>>();
    // No run section, or one of several workgroups: refused as before.
    let (_, d) = with_run("");
    assert!(codes(&d).contains(&"V061"), "{d:#?}");
    let (_, d) = with_run(r#", "run": {"grid": [2, 1, 1]}"#);
    assert!(codes(&d).contains(&"V061"), "{d:#?}");
    let (_, d) = with_run(r#", "run": {"elements": 65}"#);
    assert!(codes(&d).contains(&"V061"), "{d:#?}");
    // One workgroup: valid, with the note naming the barriers.
    for run in [
        r#", "run": {"grid": [1, 1, 1]}"#,
        r#", "run": {"elements": 64}"#,
    ] {
        let (_, d) = with_run(run);
        assert_eq!(codes(&d), ["V064"], "{d:#?}");
        assert!(d[0].message.contains("body[0].body[1]"), "{}", d[0].message);
    }
    // A divergence that one workgroup does not remove stays an error (lid-dependent return).
    let text = r#"{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
        "buffers": [{"name": "flag", "binding": 0, "access": "read_write", "type": "u32"}],
        "body": [{"if": {"eq": [{"load": "flag", "index": {"lid": "x"}}, 0]}, "then": [{"return": {}}]},
                 {"barrier": "workgroup"}], "run": {"grid": [1, 1, 1]}}"#;
    let d = validate(&parse_program(text, "g.json").unwrap());
    assert_eq!(codes(&d), ["V061"], "{d:#?}");
}
