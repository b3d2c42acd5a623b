//! The emitter's optimisations seen from outside: loop unrolling, constant folding, range
//! proofs that drop bounds checks (and the cases that must keep them), select/guard
//! predication, constant address offsets, value reuse, and `--no-unroll`.
//!
//! Shapes are asserted on the PTX text; folded constants are checked against the reference
//! interpreter running the same Program.

use std::path::{Path, PathBuf};
use std::process::Command;

use vyrescope::emit::{emit, EmitOptions, EmittedKernel};
use vyrescope::inputs::prepare;
use vyrescope::ir::{load_program, parse_program, Program};

fn fixture(stem: &str) -> Program {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/programs")
        .join(format!("{stem}.json"));
    load_program(&p).unwrap_or_else(|e| panic!("{e}"))
}

fn opts(p: &Program, unroll: bool) -> EmitOptions {
    EmitOptions {
        unroll,
        ..EmitOptions::for_program(p)
    }
}

/// Instruction lines of the entry body (no comments, labels, declarations).
fn instructions(ptx: &str) -> Vec<&str> {
    let start = ptx.find("\n{\n").map(|i| i + 3).unwrap_or(0);
    ptx[start..]
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//") && !l.starts_with('.'))
        .filter(|l| !l.ends_with(':') && *l != "}")
        .collect()
}

fn count(ptx: &str, needle: &str) -> usize {
    instructions(ptx)
        .iter()
        .filter(|l| l.contains(needle))
        .count()
}

/// The register names assigned by `mov.u32 R, %tid.x` / `%ctaid.x` and `ld.param.u32 R, [P]`.
fn reg_of(ptx: &str, source: &str) -> String {
    instructions(ptx)
        .iter()
        .find(|l| l.ends_with(&format!(", {source};")))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(|r| r.trim_end_matches(',').to_string())
        .unwrap_or_else(|| panic!("no register loaded from {source}"))
}

#[test]
fn reduce_sum_is_unrolled_with_constant_offsets_and_no_shared_checks() {
    let p = fixture("reduce_sum_f32");
    let k = emit(&p, &opts(&p, true)).expect("emits");
    let ptx = &k.ptx;
    assert_eq!(k.stats.loops_unrolled, 1);
    // No loop: no back-edge, no counter shift, no labels but the final if's.
    assert!(!ptx.contains("_head"), "a loop head remains:\n{ptx}");
    assert_eq!(count(ptx, "shr."), 0, "strides are folded");
    assert_eq!(count(ptx, "bar.sync 0"), 9, "1 + 8 tree steps");
    // No shared bounds compare at all: every compare is a guard, the select's or partial's.
    assert_eq!(count(ptx, ", 256;"), 0, "no `< 256` compare");
    // Steps compare lid.x with the folded strides 128, 64, ..., 1.
    let tid = reg_of(ptx, "%tid.x");
    for s in 0..8 {
        let stride = 128 >> s;
        assert_eq!(
            count(ptx, &format!("setp.lt.u32 %p{}, {tid}, {stride};", s + 2)),
            1,
            "guard of step {s}"
        );
    }
    // One address register for tile[l]: tile[l + stride] is [addr + 4 * stride].
    let addr = instructions(ptx)
        .iter()
        .find(|l| l.starts_with("mad.lo.s32") && l.contains(&format!(", {tid}, 4,")))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(|r| r.trim_end_matches(',').to_string())
        .expect("tile[l] address");
    assert_eq!(
        count(ptx, &format!(", {tid}, 4, ")),
        1,
        "one shared address computation"
    );
    for s in 0..8 {
        let bytes = 4 * (128 >> s);
        assert_eq!(
            count(
                ptx,
                &format!("ld.shared.f32 %f{}, [{addr}+{bytes}];", 3 * s + 3)
            ),
            1,
            "step {s} reads tile[l + {}]",
            128 >> s
        );
    }
    // Inactive threads issue no shared loads: every load and store in the steps is
    // predicated (the tile fill and the tile[0] read under `if l == 0` run unpredicated).
    let unpredicated = instructions(ptx)
        .iter()
        .filter(|l| l.starts_with("ld.shared") || l.starts_with("st.shared"))
        .count();
    assert_eq!(unpredicated, 2);
    // select(i < len(x), x[i], 0): one compare, the load runs under it, no selp.
    let gid = instructions(ptx)
        .iter()
        .find(|l| l.starts_with("mad.lo.s32") && l.contains(", 256, "))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(|r| r.trim_end_matches(',').to_string())
        .expect("gid.x");
    let xlen = reg_of(ptx, "[param_x_len]");
    assert_eq!(count(ptx, &format!("{gid}, {xlen};")), 1, "i < len(x) once");
    assert_eq!(count(ptx, "selp"), 0);
    assert_eq!(count(ptx, "@%p1 ld.global.nc.f32"), 1);
    // Checks: only partial[wgid.x] keeps one; tile[l], x[i] (by the select), 8 x 3 tile
    // accesses and tile[0] are proven.
    assert_eq!(
        (k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided),
        (1, 27)
    );
    // The body reads like nvcc's: fewer instructions than the rolled loop.
    let rolled = emit(&p, &opts(&p, false)).expect("emits");
    assert!(
        k.stats.instructions < 80 && rolled.stats.instructions < 40,
        "{} unrolled, {} rolled",
        k.stats.instructions,
        rolled.stats.instructions
    );
}

#[test]
fn no_unroll_keeps_the_loop_and_the_ranges_still_prove_the_tile() {
    let p = fixture("reduce_sum_f32");
    let k = emit(&p, &opts(&p, false)).expect("emits");
    assert_eq!(k.stats.loops_unrolled, 0);
    assert!(k.ptx.contains("$L_body4_head:"));
    assert!(k.ptx.contains("bra $L_body4_head;"));
    assert_eq!(count(&k.ptx, "bar.sync 0"), 2);
    // stride = 128 >> s with s in [0, 7] is in [1, 128], so under `l < stride` the index
    // l + stride is at most 127 + 128 = 255 < 256: still no shared check.
    assert_eq!(count(&k.ptx, ", 256;"), 0, "{}", k.ptx);
    // Constant bounds with at least one trip: no entry test before the head.
    assert_eq!(count(&k.ptx, "setp.ge.u32"), 0);
}

fn program(body: &str, buffers: &str, wg: u32) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": [{wg}, 1, 1],
            "buffers": [{buffers}], "body": {body}}}"#
    );
    parse_program(&text, "t.json").unwrap_or_else(|e| panic!("{e}"))
}

const BUFS: &str = r#"{"name": "x", "binding": 0, "access": "read", "type": "f32"},
                     {"name": "y", "binding": 1, "access": "read_write", "type": "f32"},
                     {"name": "n", "binding": 2, "access": "read_write", "type": "u32"},
                     {"name": "tile", "access": "workgroup", "type": "f32", "count": 256}"#;

fn emitted(body: &str) -> EmittedKernel {
    let p = program(body, BUFS, 256);
    emit(&p, &opts(&p, true)).unwrap_or_else(|e| panic!("{e}"))
}

/// As [`emitted`], with the versioned bounds checks of `--version-bounds`.
fn emitted_versioned(body: &str) -> EmittedKernel {
    let p = program(body, BUFS, 256);
    let o = EmitOptions {
        version_bounds: true,
        ..opts(&p, true)
    };
    emit(&p, &o).unwrap_or_else(|e| panic!("{e}"))
}

fn checks(k: &EmittedKernel) -> (u32, u32) {
    (k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided)
}

/// `if GUARD { tile[l] = tile[l + OFF] }` with l = lid.x (0..255), tile of 256.
fn guarded_tile(guard: &str, off: &str) -> EmittedKernel {
    emitted(&format!(
        r#"[{{"let": "l", "value": {{"lid": "x"}}}},
            {{"if": {guard}, "then": [
              {{"store": "tile", "index": "l", "value": {{"load": "tile", "index": {{"add": ["l", {off}]}}}}}}]}}]"#
    ))
}

#[test]
fn guards_prove_offsets_only_when_the_sum_fits() {
    // l < 128: l + 128 <= 255. Proven.
    let k = guarded_tile(r#"{"lt": ["l", 128]}"#, "128");
    assert_eq!(checks(&k), (0, 2));
    assert!(k.ptx.contains("+512]"));
    // l < 2 * 128 = 256 proves nothing for l + 128: the check stays.
    let k = guarded_tile(r#"{"lt": ["l", {"mul": [2, 128]}]}"#, "128");
    assert_eq!(checks(&k), (1, 1));
    assert!(k.ptx.contains("setp.lt.u32") && k.ptx.contains(", 256;"));
    // l <= 128: l + 128 may be 256.
    let k = guarded_tile(r#"{"le": ["l", 128]}"#, "128");
    assert_eq!(checks(&k), (1, 1));
    // 128 > l (mirrored spelling) proves it; so does the negation of l >= 128.
    let k = guarded_tile(r#"{"gt": [128, "l"]}"#, "128");
    assert_eq!(checks(&k), (0, 2));
    let k = guarded_tile(r#"{"lnot": {"ge": ["l", 128]}}"#, "128");
    assert_eq!(checks(&k), (0, 2));
    // A conjunction proves it; a disjunction does not.
    let k = guarded_tile(r#"{"land": [{"lt": ["l", 100]}, {"ne": ["l", 7]}]}"#, "128");
    assert_eq!(checks(&k), (0, 2));
    let k = guarded_tile(
        r#"{"lor": [{"lt": ["l", 100]}, {"eq": ["l", 255]}]}"#,
        "128",
    );
    assert_eq!(checks(&k), (1, 1));
    // l == 0: tile[l + 255] is tile[255].
    let k = guarded_tile(r#"{"eq": ["l", 0]}"#, "255");
    assert_eq!(checks(&k), (0, 2));
    // An early return is a guard for the rest of the block.
    let k = emitted(
        r#"[{"let": "l", "value": {"lid": "x"}},
            {"if": {"ge": ["l", 64]}, "then": [{"return": {}}]},
            {"store": "tile", "index": {"add": ["l", 192]}, "value": 1.0},
            {"store": "tile", "index": {"add": ["l", 193]}, "value": 1.0}]"#,
    );
    assert_eq!(checks(&k), (1, 1), "l + 193 may be 256");
    // A signed comparison proves nothing about the unsigned index.
    let k = emitted(
        r#"[{"let": "l", "value": {"lid": "x"}},
            {"if": {"lt": [{"cast": "i32", "value": "l"}, 128]}, "then": [
              {"store": "tile", "index": {"add": ["l", 128]}, "value": 1.0}]}]"#,
    );
    assert_eq!(checks(&k), (1, 0));
    // A variable that is assigned proves nothing, guard or not.
    let k = emitted(
        r#"[{"let": "l", "value": {"lid": "x"}},
            {"if": {"lt": ["l", 128]}, "then": [
              {"assign": "l", "value": {"add": ["l", 200]}},
              {"store": "tile", "index": "l", "value": 1.0}]}]"#,
    );
    assert_eq!(checks(&k), (1, 0));
    // Facts do not leak out of the branch.
    let k = emitted(
        r#"[{"let": "l", "value": {"lid": "x"}},
            {"if": {"lt": ["l", 128]}, "then": [
              {"store": "tile", "index": {"add": ["l", 128]}, "value": 1.0}]},
            {"store": "tile", "index": {"add": ["l", 128]}, "value": 2.0}]"#,
    );
    assert_eq!(checks(&k), (1, 1));
}

#[test]
fn a_remaining_check_in_a_short_guarded_body_branches_around_it() {
    // if i < len(y) { y[i] = x[i] }: x[i] keeps its check, so the body is branched over
    // (no `and.pred` per access); the store, proven by the guard, is unpredicated.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "y"}]}, "then": [
              {"store": "y", "index": "i", "value": {"load": "x", "index": "i"}}]}]"#,
    );
    assert_eq!(checks(&k), (1, 1));
    assert_eq!(count(&k.ptx, "and.pred"), 0);
    assert_eq!(count(&k.ptx, "@!%p1 bra $L_body1_end;"), 1);
    assert_eq!(count(&k.ptx, "@%p2 ld.global.nc.f32"), 1);
    assert!(k.ptx.contains("\tst.global.f32 ["));
    // Fully proven bodies stay predicated: every access under the guard.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", {"len": "x"}]}, "then": [
              {"store": "tile", "index": {"lid": "x"}, "value": {"load": "x", "index": "i"}}]}]"#,
    );
    assert_eq!(checks(&k), (0, 2));
    assert!(!k.ptx.contains(" bra "), "{}", k.ptx);
    assert_eq!(count(&k.ptx, "@%p1 ld.global.nc.f32"), 1);
    assert_eq!(count(&k.ptx, "@%p1 st.shared.f32"), 1);
}

#[test]
fn select_conditions_cover_their_arms_only_without_side_effects() {
    // The true arm's load runs under the condition: one compare, no selp.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"store": "tile", "index": {"lid": "x"},
             "value": {"select": [{"lt": ["i", {"len": "x"}]}, {"load": "x", "index": "i"}, 0.0]}}]"#,
    );
    assert_eq!(count(&k.ptx, "setp"), 1, "{}", k.ptx);
    assert_eq!(count(&k.ptx, "selp"), 0);
    // A nonzero false value keeps the selp, still one compare.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"store": "tile", "index": {"lid": "x"},
             "value": {"select": [{"lt": ["i", {"len": "x"}]}, {"load": "x", "index": "i"}, 1.0]}}]"#,
    );
    assert_eq!((count(&k.ptx, "setp"), count(&k.ptx, "selp")), (1, 1));
    // The false arm of the negated condition works the same way (under `not`).
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"store": "tile", "index": {"lid": "x"},
             "value": {"select": [{"ge": ["i", {"len": "x"}]}, 0.0, {"load": "x", "index": "i"}]}}]"#,
    );
    assert_eq!(count(&k.ptx, "setp"), 1, "{}", k.ptx);
    assert_eq!(count(&k.ptx, "not.pred"), 1);
    // An atomic in the arm is a side effect that happens whatever the condition is: its
    // own check stays.
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"store": "tile", "index": {"lid": "x"},
             "value": {"cast": "f32", "value": {"select": [{"lt": ["i", {"len": "n"}]},
                {"atomic": "add", "buffer": "n", "index": "i", "value": 1}, 0]}}}]"#,
    );
    assert_eq!(checks(&k), (1, 1), "the atomic keeps its compare");
    assert_eq!(
        count(&k.ptx, "setp.lt.u32"),
        1,
        "the compare is shared (value reuse)"
    );
}

#[test]
fn constant_offsets_on_global_memory_need_a_no_wrap_proof() {
    // t = lid.x < 256: t * 4 + 3 cannot wrap, so y[t*4 + 1..3] address [base + 4k].
    let body = r#"[{"let": "t", "value": {"mul": [{"lid": "x"}, 4]}},
            {"store": "y", "index": {"add": ["t", 1]}, "value": 1.0},
            {"store": "y", "index": {"add": ["t", 2]}, "value": 2.0},
            {"store": "y", "index": {"sub": [{"add": ["t", 3]}, 1]}, "value": 3.0}]"#;
    // One check per access (the default): the address of `t` once, the offsets in the operand.
    let k = emitted(body);
    assert!(!k.ptx.contains("_checked:"), "{}", k.ptx);
    assert_eq!(count(&k.ptx, "mad.wide.u32"), 1, "{}", k.ptx);
    assert!(k.ptx.contains("+4], ") && k.ptx.contains("+8], "));
    assert_eq!(count(&k.ptx, "+8], "), 2, "t + 3 - 1 is t + 2");
    // Both copies of the versioned run (fast and checked, see `version.rs`) do the same.
    let k = emitted_versioned(body);
    let (fast, checked) = k.ptx.split_once("_checked:").expect("a versioned run");
    for copy in [fast, checked] {
        assert_eq!(count(copy, "mad.wide.u32"), 1, "{}", k.ptx);
        assert!(copy.contains("+4], ") && copy.contains("+8], "));
        assert_eq!(count(copy, "+8], "), 2, "t + 3 - 1 is t + 2");
    }
    // gid.x + 1 may wrap: one check per access computes each index in full; the versioned
    // fast copy runs only where its test proved `g + 2 < len(y)` without wrapping.
    let body = r#"[{"let": "g", "value": {"gid": "x"}},
            {"store": "y", "index": {"add": ["g", 1]}, "value": 1.0},
            {"store": "y", "index": {"add": ["g", 2]}, "value": 2.0}]"#;
    let k = emitted(body);
    assert_eq!(count(&k.ptx, "mad.wide.u32"), 2, "{}", k.ptx);
    assert!(!k.ptx.contains("+4]") && !k.ptx.contains("+8]"));
    let k = emitted_versioned(body);
    let (fast, checked) = k.ptx.split_once("_checked:").expect("a versioned run");
    assert_eq!(count(checked, "mad.wide.u32"), 2, "{}", k.ptx);
    assert!(!checked.contains("+4]") && !checked.contains("+8]"));
    assert_eq!(count(fast, "mad.wide.u32"), 1, "{}", k.ptx);
    assert!(fast.contains("+4], ") && fast.contains("+8], "));
}

#[test]
fn unrolled_copies_keep_labels_unique_and_map_to_the_same_nodes() {
    // A branched if and a rolled inner loop inside an unrolled loop, plus a return.
    let p = program(
        r#"[{"let": "l", "value": {"lid": "x"}},
            {"loop": "k", "from": 0, "to": 3, "body": [
              {"if": {"eq": ["l", "k"]}, "then": [
                {"store": "n", "index": "l", "value": "k"},
                {"loop": "j", "from": 0, "to": {"len": "n"}, "body": [
                  {"store": "n", "index": "j", "value": {"add": ["j", "k"]}}]}],
               "else": [{"store": "n", "index": "k", "value": 7}]},
              {"barrier": "workgroup"},
              {"if": {"gt": [{"wgid": "x"}, 200]}, "then": [{"return": {}}]}]}]"#,
        BUFS,
        256,
    );
    let k = emit(&p, &opts(&p, true)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        k.stats.loops_unrolled, 1,
        "the inner loop has a run-time bound"
    );
    let labels: Vec<&str> = k.ptx.lines().filter(|l| l.ends_with(':')).collect();
    let mut unique = labels.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(labels.len(), unique.len(), "duplicate labels: {labels:?}");
    assert!(labels.contains(&"$L_body1_body0_end_u2:"));
    // Each copy of a loop body statement opens with the statement's comment, mapped to it
    // (an `if` owns more ranges: its branch and label lines around nested statements).
    let lines: Vec<&str> = k.ptx.lines().collect();
    for node in [
        "body[1].body[0]",
        "body[1].body[2]",
        "body[1].body[0].then[1]",
    ] {
        let ranges = k.source_map.lines_of(node);
        let heads = ranges
            .iter()
            .filter(|r| lines[r[0] as usize - 1].starts_with(&format!("\t// {node}: ")))
            .count();
        assert_eq!(heads, 3, "{node}: {ranges:?}");
    }
    assert_eq!(
        k.source_map.lines_of("body[1].body[1]").len(),
        3,
        "the barrier"
    );
    // k is a constant in each copy.
    assert!(k.ptx.contains("setp.eq.u32 %p1, %r1, 0;"), "{}", k.ptx);
    assert!(k.ptx.contains(", 7;"));
    // Zero trips: only comments, every statement still mapped.
    let p = program(
        r#"[{"loop": "k", "from": 4, "to": 4, "body": [
              {"store": "n", "index": "k", "value": 1}]}]"#,
        BUFS,
        256,
    );
    let k = emit(&p, &opts(&p, true)).expect("emits");
    assert_eq!(count(&k.ptx, "st.global"), 0);
    assert_eq!(k.source_map.lines_of("body[0].body[0]").len(), 1);
}

#[test]
fn unroll_limits_apply() {
    let body = |to: u32| {
        format!(
            r#"[{{"loop": "k", "from": 0, "to": {to}, "body": [
                  {{"store": "n", "index": "k", "value": "k"}}]}}]"#
        )
    };
    let p = program(&body(16), BUFS, 64);
    assert_eq!(
        emit(&p, &opts(&p, true))
            .expect("emits")
            .stats
            .loops_unrolled,
        1
    );
    let p = program(&body(17), BUFS, 64);
    assert_eq!(
        emit(&p, &opts(&p, true))
            .expect("emits")
            .stats
            .loops_unrolled,
        0
    );
}

/// A small deterministic generator (xorshift) for the folding property.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }
    fn literal(&mut self, ty: &str) -> String {
        let special = [
            0u64,
            1,
            2,
            31,
            32,
            33,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
        ];
        let bits = if self.next().is_multiple_of(2) {
            special[(self.next() % special.len() as u64) as usize]
        } else {
            self.next() & 0xffff_ffff
        };
        match ty {
            "u32" => format!(r#"{{"u32": {bits}}}"#),
            _ => format!(r#"{{"i32": {}}}"#, bits as u32 as i32),
        }
    }
}

const BIN: &[&str] = &[
    "add", "sub", "mul", "div", "rem", "min", "max", "absdiff", "mulhi", "and", "or", "xor",
];
const SHIFT: &[&str] = &["shl", "shr", "rotl", "rotr"];
const UN: &[&str] = &[
    "neg", "not", "abs", "sign", "popcount", "clz", "ctz", "brev",
];
const CMP: &[&str] = &["lt", "le", "gt", "ge", "eq", "ne"];

/// A random constant expression of type `ty` (`u32` or `i32`), possibly using the loop
/// counter `k` (a constant in each unrolled copy).
fn gen(r: &mut Rng, ty: &str, depth: u32) -> String {
    if depth == 0 || r.next().is_multiple_of(5) {
        return if ty == "u32" && r.next().is_multiple_of(3) {
            "\"k\"".into()
        } else {
            r.literal(ty)
        };
    }
    let other = if ty == "u32" { "i32" } else { "u32" };
    match r.next() % 6 {
        0 | 1 => format!(
            r#"{{"{}": [{}, {}]}}"#,
            r.pick(BIN),
            gen(r, ty, depth - 1),
            gen(r, ty, depth - 1)
        ),
        2 => format!(
            r#"{{"{}": [{}, {}]}}"#,
            r.pick(SHIFT),
            gen(r, ty, depth - 1),
            gen(r, "u32", depth - 1)
        ),
        3 => format!(r#"{{"{}": {}}}"#, r.pick(UN), gen(r, ty, depth - 1)),
        4 => format!(
            r#"{{"select": [{{"{}": [{}, {}]}}, {}, {}]}}"#,
            r.pick(CMP),
            gen(r, other, depth - 1),
            gen(r, other, depth - 1),
            gen(r, ty, depth - 1),
            gen(r, ty, depth - 1)
        ),
        _ => format!(
            r#"{{"cast": "{ty}", "value": {}}}"#,
            gen(r, other, depth - 1)
        ),
    }
}

#[test]
fn folded_constants_are_what_the_interpreter_computes() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..300 {
        let ty = if case % 2 == 0 { "u32" } else { "i32" };
        let expr = gen(&mut r, ty, 4);
        // One thread, one unrolled iteration (k = 5): the stored value is a constant.
        let text = format!(
            r#"{{"format": 1, "name": "fold", "workgroup_size": [1, 1, 1],
                "buffers": [{{"name": "out", "binding": 0, "access": "read_write", "type": "{ty}"}}],
                "body": [{{"loop": "k", "from": 5, "to": 6, "body": [
                  {{"store": "out", "index": 0, "value": {expr}}}]}}],
                "run": {{"grid": [1, 1, 1], "inputs": {{"out": {{"len": 1, "fill": "zeros"}}}}}}}}"#
        );
        let p = parse_program(&text, "fold.json").unwrap_or_else(|e| panic!("{e}\n{text}"));
        let k = emit(&p, &opts(&p, true)).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // The store's source register is set by one `mov` of an immediate, and nothing else
        // but the bounds check computes anything.
        let ins = instructions(&k.ptx);
        let store = ins
            .iter()
            .find(|l| l.contains("st.global"))
            .unwrap_or_else(|| panic!("no store:\n{}", k.ptx));
        let src = store
            .trim_end_matches(';')
            .rsplit(", ")
            .next()
            .expect("operand");
        let imm = ins
            .iter()
            .find_map(|l| l.strip_prefix(&format!("mov.b32 {src}, ")))
            .unwrap_or_else(|| panic!("{expr}: not folded:\n{}", k.ptx))
            .trim_end_matches(';');
        let folded = imm.parse::<i64>().unwrap_or_else(|e| panic!("{imm}: {e}")) as u32;
        assert!(
            ins.len() <= 8,
            "{expr}: more than the check and the store:\n{}",
            k.ptx
        );
        let prepared = prepare(&p, Path::new("."), None, None).expect("inputs");
        let mut bufs = prepared.buffers;
        vyrescope::interp::run(&p, &prepared.shape, &mut bufs).expect("runs");
        let want = u32::from_le_bytes(bufs[0].data[..4].try_into().expect("4 bytes"));
        assert_eq!(folded, want, "{expr}");
    }
}

#[test]
fn cli_no_unroll_switches_unrolling_off() {
    let file =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/reduce_sum_f32.json");
    let run = |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
            .arg("emit")
            .arg(&file)
            .arg("--map")
            .args(extra)
            .output()
            .expect("runs");
        assert!(out.status.success());
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        j["stats"]["loops_unrolled"].as_u64()
    };
    assert_eq!(run(&[]), Some(1));
    assert_eq!(run(&["--no-unroll"]), Some(0));
}

/// A shuffle, a ballot and an f32 subgroup sum after `prefix`, in a workgroup of `wg`.
fn warp_ops(prefix: &str, wg: u32) -> String {
    let body = format!(
        r#"[{prefix}
            {{"let": "i", "value": {{"gid": "x"}}}},
            {{"let": "v", "value": {{"load": "x", "index": "i"}}}},
            {{"let": "t", "value": {{"shuffle": "v", "lane": {{"sub": [{{"lane": {{}}}}, 1]}}}}}},
            {{"let": "b", "value": {{"ballot": {{"gt": ["t", 0.5]}}}}}},
            {{"let": "s", "value": {{"subgroup_reduce": "add", "value": "t"}}}},
            {{"store": "y", "index": "i", "value": {{"add": ["s", {{"cast": "f32", "value": "b"}}]}}}}]"#
    );
    let p = program(&body, BUFS, wg);
    emit(&p, &opts(&p, true))
        .unwrap_or_else(|e| panic!("{e}"))
        .ptx
}

#[test]
fn warp_ops_use_the_full_mask_only_where_every_lane_is_surely_active() {
    // Whole warps, no return, no enclosing if: constant mask, no inactive-source select, no
    // partial-warp reduction path.
    let full = warp_ops("", 256);
    assert_eq!(count(&full, "activemask"), 0, "{full}");
    assert_eq!(count(&full, "shfl.sync.idx.b32"), 1, "{full}");
    assert!(instructions(&full)
        .iter()
        .filter(|l| l.starts_with("shfl.sync") || l.starts_with("vote.sync"))
        .all(|l| l.ends_with(", -1;")));
    assert_eq!(count(&full, "red_partial"), 0, "{full}");
    assert_eq!(count(&full, "shfl.sync.bfly.b32"), 5, "{full}");
    // A short last warp (48 threads), an earlier return, or an enclosing if: lanes may be
    // inactive, so the mask comes from activemask and the select and partial path stay.
    let early_return = r#"{"if": {"ge": [{"gid": "x"}, {"len": "x"}]}, "then": [{"return": {}}]},"#;
    for (what, ptx) in [
        ("48 threads", warp_ops("", 48)),
        ("early return", warp_ops(early_return, 256)),
    ] {
        assert_eq!(count(&ptx, "activemask"), 3, "{what}\n{ptx}");
        assert!(count(&ptx, "red_partial") > 0, "{what}");
        assert!(
            count(&ptx, "selp.") > 0,
            "{what}: the inactive-source select"
        );
    }
    let p = program(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"if": {"lt": ["i", 100]}, "then": [
              {"store": "n", "index": "i", "value": {"shuffle": "i", "lane": 3}}]}]"#,
        BUFS,
        256,
    );
    let ptx = emit(&p, &opts(&p, true)).expect("emit").ptx;
    assert_eq!(count(&ptx, "activemask"), 1, "{ptx}");
}

/// Unsigned division and remainder by a power of two become a shift and a mask (ptxas keeps
/// `div.u32 x, 32` as a reciprocal sequence); signed division keeps `div` (it rounds toward
/// zero, a shift would not), and other divisors keep `div`/`rem`.
#[test]
fn unsigned_div_rem_by_powers_of_two_are_shifts_and_masks() {
    let k = emitted(
        r#"[{"let": "i", "value": {"gid": "x"}},
            {"store": "n", "index": 0, "value": {"div": ["i", 32]}},
            {"store": "n", "index": 1, "value": {"rem": ["i", 64]}},
            {"store": "n", "index": 2, "value": {"div": ["i", 24]}},
            {"store": "n", "index": 3, "value": {"cast": "u32", "value": {"div": [{"cast": "i32", "value": "i"}, 8]}}}]"#,
    );
    let ins = instructions(&k.ptx);
    assert!(
        ins.iter()
            .any(|l| l.starts_with("shr.u32") && l.ends_with(", 5;")),
        "{}",
        k.ptx
    );
    assert!(
        ins.iter()
            .any(|l| l.starts_with("and.b32") && l.ends_with(", 63;")),
        "{}",
        k.ptx
    );
    assert!(
        ins.iter()
            .any(|l| l.starts_with("div.u32") && l.ends_with(", 24;")),
        "{}",
        k.ptx
    );
    assert!(ins.iter().any(|l| l.starts_with("div.s32")), "{}", k.ptx);
    assert!(!ins.iter().any(|l| l.starts_with("rem.u32")), "{}", k.ptx);
}

/// The stencil's five `src` neighbours and its `out` store share one range test; the fast
/// copy loads without predicates and addresses `idx +- 1` as `[a+-4]`, the checked copy keeps
/// one compare and a zeroed destination per load (see `emit/version.rs`).
#[test]
fn stencil_neighbours_share_one_range_test_with_a_checked_copy() {
    let p = fixture("stencil5_f32");
    // Off by default (it measured no faster on an H200): one check per access.
    let plain = emit(&p, &opts(&p, true)).expect("emits");
    assert_eq!(plain.stats.bounds_checks_versioned, 0, "{}", plain.ptx);
    assert!(!plain.ptx.contains("_checked:"), "{}", plain.ptx);
    let versioned = EmitOptions {
        version_bounds: true,
        ..opts(&p, true)
    };
    let k = emit(&p, &versioned).expect("emits");
    // dims[0], dims[1]; src at idx, idx -+ w, idx +- 1 and out[idx]: 2 + 6 versioned.
    assert_eq!(k.stats.bounds_checks_versioned, 8, "{}", k.ptx);
    let src_len = reg_of(&k.ptx, "[param_src_len]");
    let out_len = reg_of(&k.ptx, "[param_out_len]");
    let (_, inner) = k
        .ptx
        .split_once("$L_body6_else:")
        .expect("the interior branch");
    let (fast, checked) = inner.split_once("_checked:").expect("a checked copy");
    // The test: max(w, 1), idx >= it, idx + it not wrapping and below len(src), idx < len(out).
    assert_eq!(count(fast, "max.u32"), 1, "{fast}");
    assert_eq!(count(fast, &format!(", {src_len};")), 1, "{fast}");
    assert_eq!(count(fast, &format!(", {out_len};")), 1, "{fast}");
    assert_eq!(count(fast, "setp."), 4, "{fast}");
    // Fast copy: five unpredicated loads, the +-1 neighbours off the centre's address.
    let loads: Vec<&str> = instructions(fast)
        .into_iter()
        .filter(|l| l.contains("ld.global.nc.f32"))
        .collect();
    assert_eq!(loads.len(), 5, "{fast}");
    assert!(loads.iter().all(|l| l.starts_with("ld.")), "{loads:?}");
    assert!(
        loads.iter().any(|l| l.ends_with("+4];")) && loads.iter().any(|l| l.ends_with("+-4];"))
    );
    assert!(instructions(fast)
        .iter()
        .any(|l| l.starts_with("st.global.f32")));
    // Checked copy: each load under its own compare against len(src), the store under one
    // against len(out).
    let checked = checked.split("_joined:").next().unwrap_or_default();
    assert_eq!(count(checked, &format!(", {src_len};")), 5, "{checked}");
    assert_eq!(
        count(checked, ", 0f00000000;"),
        5,
        "a zeroed destination per load"
    );
    assert_eq!(count(fast, ", 0f00000000;"), 0, "{fast}");
    assert_eq!(
        instructions(checked)
            .iter()
            .filter(|l| l.starts_with("@%p") && l.contains("ld.global.nc.f32"))
            .count(),
        5
    );
    assert!(instructions(checked)
        .iter()
        .any(|l| l.starts_with("@%p") && l.contains("st.global.f32")));
}

/// The fast path's test as emitted, in `u32` arithmetic: `b >= L`, `s = b + H` (wrapping),
/// `s >= H`, `s < len`. Whenever it holds, every index `b - t` (`t <= L`) and `b + t`
/// (`t <= H`) computed in wrapping `u32` is below `len` and equals the exact integer.
#[test]
fn the_fast_path_test_implies_every_index_in_range() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Half small, half anywhere in u32, to reach the wrapping corners.
        if x & 1 == 0 {
            (x >> 8) % m.max(1)
        } else {
            (x >> 16) & 0xffff_ffff
        }
    };
    let (mut passed, mut failed) = (0, 0);
    for _ in 0..200_000 {
        let b = next(1 << 12) as u32;
        let len = next(1 << 13) as u32;
        let terms: Vec<(bool, u32)> = (0..4).map(|_| (next(2) == 0, next(64) as u32)).collect();
        let lo = terms.iter().filter(|t| t.0).map(|t| t.1).max();
        let hi = terms
            .iter()
            .filter(|t| !t.0)
            .map(|t| t.1)
            .max()
            .unwrap_or(0);
        let s = b.wrapping_add(hi);
        let test = lo.is_none_or(|l| b >= l) && s >= hi && s < len;
        if !test {
            failed += 1;
            continue;
        }
        passed += 1;
        for (minus, t) in &terms {
            let (idx, exact) = if *minus {
                (b.wrapping_sub(*t), b as i64 - *t as i64)
            } else {
                (b.wrapping_add(*t), b as i64 + *t as i64)
            };
            assert!(
                idx < len && idx as i64 == exact,
                "b={b} len={len} {terms:?}"
            );
        }
    }
    assert!(
        passed > 1000 && failed > 1000,
        "{passed} passed, {failed} failed"
    );
}
