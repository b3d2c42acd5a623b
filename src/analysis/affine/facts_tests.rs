//! Path facts in the index analysis: vyre's clamped accesses after its early exit are one
//! form, and nothing is decided where the facts do not hold (no early exit, an assigned
//! variable, a `return` inside a loop, a fact from a branch used after it).

use std::collections::HashMap;

use super::*;
use crate::ir::parse_program;

const GID: Index = Index::Affine {
    coef: [
        Coef::Known(1),
        Coef::Known(0),
        Coef::Known(0),
        Coef::Known(0),
        Coef::Known(0),
        Coef::Known(0),
        Coef::Known(0),
    ],
    wgid: ZERO3,
    constant: Some(0),
};

/// vyre's early exit past the element count of `output`.
const EXIT: &str = r#"{"if": {"ge": [{"gid": "x"}, {"len": "output"}]}, "then": [{"return": {}}]}"#;
/// vyre's clamped store of element `index`.
const STORE: &str = r#"{"store": "output", "index": {"select": [{"lt": ["index", {"len": "output"}]}, "index", 0]}, "value": 7}"#;
/// vyre's clamped load of `gate` at `index`, stored at `gid.x`.
const LOAD: &str = r#"{"store": "output", "index": {"gid": "x"}, "value": {"load": "gate", "index": {"select": [{"lt": ["index", {"len": "gate"}]}, "index", 0]}}}"#;
const LET: &str = r#"{"let": "index", "value": {"gid": "x"}}"#;

/// The exact accesses to `buffer` of a Program with `body` (buffers `gate`, `output`), with
/// the known lengths `lens`.
fn writes(body: &str, buffer: &str, write: bool, lens: &[(&str, u64)]) -> Vec<Access> {
    let text = format!(
        r#"{{"format": 1, "name": "facts", "workgroup_size": [64, 1, 1], "buffers": [
            {{"name": "gate", "binding": 0, "access": "read", "type": "u32"}},
            {{"name": "output", "binding": 1, "access": "read_write", "type": "u32"}}],
            "body": {body}}}"#
    );
    let p = parse_program(&text, "facts").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let lens: HashMap<String, u64> = lens.iter().map(|(n, l)| (n.to_string(), *l)).collect();
    accesses_exact(&p, &lens)
        .into_iter()
        .filter(|a| a.buffer == buffer && a.write == write)
        .collect()
}

/// The values the one access to `buffer` may take: its form, or its alternatives' count.
fn one(body: &str, buffer: &str, write: bool, lens: &[(&str, u64)]) -> (Index, usize) {
    let acc = writes(body, buffer, write, lens);
    assert_eq!(acc.len(), 1, "{acc:?}");
    let n = acc[0].alts.as_ref().map_or(1, |a| a.alts.len());
    (acc[0].index, n)
}

#[test]
fn the_clamped_store_after_the_early_exit_is_gid_x() {
    // As vyre writes it: the exit at the top, the access in a nested block under an `if`.
    let body = format!(
        r#"[{EXIT}, {{"block": [{LET}, {{"if": {{"lt": ["index", 65536]}}, "then": [{STORE}]}}]}}]"#
    );
    assert_eq!(one(&body, "output", true, &[]), (GID, 1));
    // `let index = gid.x` is gid.x already without any fact (the let is resolved).
    let bare = format!(r#"[{LET}, {{"store": "output", "index": "index", "value": 1}}]"#);
    assert_eq!(one(&bare, "output", true, &[]), (GID, 1));
}

#[test]
fn without_the_early_exit_both_alternatives_stay() {
    let body = format!(r#"[{LET}, {STORE}]"#);
    let (index, n) = one(&body, "output", true, &[]);
    assert_eq!(index, Index::Varying);
    assert_eq!(n, 2);
    // An exit on another buffer's length says nothing about `len(output)` ...
    let other = format!(
        r#"[{{"if": {{"ge": [{{"gid": "x"}}, {{"len": "gate"}}]}}, "then": [{{"return": {{}}}}]}}, {LET}, {STORE}]"#
    );
    assert_eq!(one(&other, "output", true, &[]).1, 2);
    // ... unless the lengths are known: gid.x < 4096 = len(gate) <= len(output).
    let known = [("gate", 4096), ("output", 4096)];
    assert_eq!(one(&other, "output", true, &known), (GID, 1));
    let shorter = [("gate", 4096), ("output", 4095)];
    assert_eq!(one(&other, "output", true, &shorter).1, 2);
}

#[test]
fn a_load_clamped_to_another_buffer_needs_the_lengths() {
    let body = format!(r#"[{EXIT}, {LET}, {LOAD}]"#);
    assert_eq!(one(&body, "gate", false, &[]).1, 2);
    let same = [("gate", 65536), ("output", 65536)];
    assert_eq!(one(&body, "gate", false, &same), (GID, 1));
    // A gate shorter than the dispatch is really read at 0 by the last threads.
    let short = [("gate", 65535), ("output", 65536)];
    assert_eq!(one(&body, "gate", false, &short).1, 2);
}

#[test]
fn an_assigned_variable_gives_no_fact() {
    // `n` is assigned between the exit and the access: `gid.x < n` no longer holds.
    let body = format!(
        r#"[{{"let": "n", "value": {{"len": "output"}}}},
            {{"if": {{"ge": [{{"gid": "x"}}, "n"]}}, "then": [{{"return": {{}}}}]}},
            {{"assign": "n", "value": 0}},
            {LET},
            {{"store": "output", "index": {{"select": [{{"lt": ["index", "n"]}}, "index", 0]}}, "value": 1}}]"#
    );
    // With `len(output)` known (4096), an unassigned `n` would be 4096 and decide it.
    let lens = [("output", 4096)];
    let (index, n) = one(&body, "output", true, &lens);
    assert_eq!(index, Index::Varying);
    assert_eq!(n, 2);
    let kept = body.replace(r#"{"assign": "n", "value": 0},"#, "");
    assert_ne!(kept, body);
    assert_eq!(one(&kept, "output", true, &lens), (GID, 1));
    // An assigned index variable: the fact is about gid.x, not about what `i` holds later.
    let moved = format!(
        r#"[{EXIT}, {{"let": "i", "value": {{"gid": "x"}}}}, {{"assign": "i", "value": {{"add": ["i", 1]}}}},
            {{"store": "output", "index": {{"select": [{{"lt": ["i", {{"len": "output"}}]}}, "i", 0]}}, "value": 1}}]"#
    );
    assert_ne!(one(&moved, "output", true, &[]).0, GID);
}

#[test]
fn a_return_inside_a_loop_gives_no_fact_after_it() {
    let body = format!(
        r#"[{{"loop": "k", "from": 0, "to": 4, "body": [
                {{"if": {{"lt": ["k", 2]}}, "then": [
                    {{"if": {{"ge": [{{"gid": "x"}}, {{"len": "output"}}]}}, "then": [{{"return": {{}}}}]}}
                ]}}]}},
            {LET}, {STORE}]"#
    );
    assert_eq!(one(&body, "output", true, &[]).1, 2);
    // Inside the loop, after the exit, it holds (the same iteration, the same list).
    let inside =
        format!(r#"[{{"loop": "k", "from": 0, "to": 4, "body": [{EXIT}, {LET}, {STORE}]}}]"#);
    assert_eq!(one(&inside, "output", true, &[]), (GID, 1));
    // A return under a condition only gives the fact inside that branch.
    let under =
        format!(r#"[{{"if": {{"lt": [{{"lid": "x"}}, 2]}}, "then": [{EXIT}]}}, {LET}, {STORE}]"#);
    assert_eq!(one(&under, "output", true, &[]).1, 2);
}

#[test]
fn branch_conditions_hold_in_their_branch_only() {
    // then: index < len(output) holds; else: it does not, the clamp takes 0.
    let body = format!(
        r#"[{LET}, {{"if": {{"lt": ["index", {{"len": "output"}}]}}, "then": [{STORE}], "else": [{STORE}]}}, {STORE}]"#
    );
    let acc = writes(&body, "output", true, &[]);
    assert_eq!(acc.len(), 3);
    assert_eq!(acc[0].index, GID);
    // `gid.x >= len(output)` is no range while the length is unknown: both stay.
    assert_eq!(acc[1].alts.as_ref().map(|a| a.alts.len()), Some(2));
    assert_eq!(acc[2].index, Index::Varying, "after the if: both");
    let acc = writes(&body, "output", true, &[("output", 4096)]);
    assert_eq!(acc[0].index, GID);
    assert_eq!(acc[1].index.known_form(), Some(([0; IDS], [0; 3], 0)));
    assert_eq!(acc[2].alts.as_ref().map(|a| a.alts.len()), Some(2));
    // An else that returns proves the condition after the if; min and max are decided too.
    let exit_else = format!(
        r#"[{LET}, {{"if": {{"lt": ["index", {{"len": "output"}}]}}, "then": [], "else": [{{"return": {{}}}}]}},
            {{"store": "output", "index": {{"min": ["index", {{"len": "output"}}]}}, "value": 1}}]"#
    );
    assert_eq!(one(&exit_else, "output", true, &[]), (GID, 1));
}
