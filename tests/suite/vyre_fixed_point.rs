//! The proofs and shapes that make JSON -> vyre -> JSON a fixed point (feature `vyre`), each
//! with a Program where it must not apply: the import leaves its shift mask out only where
//! range analysis proves the amount below 32; it maps the export's `u32` forms of `i32`
//! operators back only in their exact shape; it folds a value bound before a store's guard
//! back only when nothing moves; and it leaves vyre's early exit out for stores indexed at or
//! above `gid.x` only where the index provably does not wrap (and then no buffer changes).

use vyre_foundation::ir::{
    BinOp as VB, BufferDecl as VBuf, DataType as DT, Expr as E, Node as N, Program as VP,
};

use vyrescope::inputs::prepare;
use vyrescope::ir::print::print_program;
use vyrescope::ir::{parse_program, Program, StmtKind};
use vyrescope::vyre::export;

fn bin(op: VB, a: E, b: E) -> E {
    E::BinOp {
        op,
        left: Box::new(a),
        right: Box::new(b),
    }
}

/// The imported Program's body as text (no errors allowed).
fn imported(v: &VP) -> (Program, String) {
    let program = crate::support::vyre::import_clean(v, "t", "t");
    let text = print_program(&program).text();
    (program, text)
}

/// `let i = gid.x; if i < len(out) { body }` over `a` (read, u32) and `out` (output, u32).
fn kernel(body: Vec<N>) -> VP {
    VP::wrapped(
        vec![VBuf::read("a", 0, DT::U32), VBuf::output("out", 1, DT::U32)],
        [64, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(bin(VB::Lt, E::var("i"), E::buf_len("out")), body),
        ],
    )
}

fn store(value: E) -> N {
    N::store("out", E::var("i"), value)
}

#[test]
fn the_shift_mask_is_left_out_only_where_the_amount_is_proven_below_32() {
    let v = kernel(vec![
        N::let_bind("s", E::load("a", E::var("i"))),
        // A loop counter below 5: proven.
        N::loop_for(
            "k",
            E::u32(0),
            E::u32(5),
            vec![store(bin(VB::Shl, E::u32(1), E::var("k")))],
        ),
        // A loaded amount: not proven, masked as vyre's kernel computes it.
        store(bin(VB::Shl, E::u32(1), E::var("s"))),
        // The same amount under `if s < 32`: proven.
        N::if_then(
            bin(VB::Lt, E::var("s"), E::u32(32)),
            vec![store(bin(VB::Shr, E::u32(1), E::var("s")))],
        ),
        // vyre's own `& 31` stays as written (no mask of the import's).
        store(bin(
            VB::Shl,
            E::u32(1),
            bin(VB::BitAnd, E::var("s"), E::u32(31)),
        )),
    ]);
    let (_, text) = imported(&v);
    assert!(text.contains("out[i] = 1 << k\n"), "{text}");
    assert!(text.contains("out[i] = 1 << (s & 31)\n"), "{text}");
    assert!(text.contains("out[i] = 1 >> s\n"), "{text}");
    assert_eq!(text.matches("& 31").count(), 2, "{text}");
}

#[test]
fn only_the_exact_u32_forms_of_i32_operators_come_back_as_the_operator() {
    let x = || E::cast(DT::I32, E::load("out", E::var("i")));
    let y = || E::i32(7);
    let lt0 = |e: E| bin(VB::Lt, e, E::i32(0));
    let v = kernel(vec![
        // The export's abs, absdiff and negation.
        store(E::cast(
            DT::U32,
            E::select(lt0(x()), bin(VB::Sub, E::i32(0), x()), x()),
        )),
        store(E::cast(
            DT::U32,
            E::select(
                bin(VB::Lt, x(), y()),
                bin(VB::Sub, y(), x()),
                bin(VB::Sub, x(), y()),
            ),
        )),
        // Near misses: the else arm is another value; the operands of absdiff swapped.
        store(E::cast(
            DT::U32,
            E::select(lt0(x()), bin(VB::Sub, E::i32(0), x()), y()),
        )),
        store(E::cast(
            DT::U32,
            E::select(
                bin(VB::Lt, x(), y()),
                bin(VB::Sub, x(), y()),
                bin(VB::Sub, y(), x()),
            ),
        )),
        // abs of an atomic's result: its operand runs three times, so no fold.
        store(E::cast(
            DT::U32,
            E::select(
                lt0(E::cast(DT::I32, E::atomic_add("out", E::u32(0), E::u32(1)))),
                bin(
                    VB::Sub,
                    E::i32(0),
                    E::cast(DT::I32, E::atomic_add("out", E::u32(0), E::u32(1))),
                ),
                E::cast(DT::I32, E::atomic_add("out", E::u32(0), E::u32(1))),
            ),
        )),
    ]);
    let (_, text) = imported(&v);
    assert!(text.contains("out[i] = u32(abs(i32(out[i])))\n"), "{text}");
    assert!(
        text.contains("out[i] = u32(absdiff(i32(out[i]), 7i32))\n"),
        "{text}"
    );
    assert!(
        text.contains("out[i] = u32(select(i32(out[i]) < 0i32, -i32(out[i]), 7i32))\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "out[i] = u32(select(i32(out[i]) < 7i32, i32(out[i]) - 7i32, 7i32 - i32(out[i])))\n"
        ),
        "{text}"
    );
    assert_eq!(text.matches("abs(").count(), 1, "{text}");
}

#[test]
fn a_value_bound_before_a_store_guard_folds_back_only_when_nothing_moves() {
    let guarded = |value: E| {
        N::if_then(
            bin(VB::Gt, E::buf_len("out"), E::var("i")),
            vec![N::store("out", E::var("i"), value)],
        )
    };
    let v = kernel(vec![
        // The export's shape: folds to `out[i] = subgroup_add(out[i])`.
        N::let_bind("vs_value_x", E::subgroup_add(E::load("out", E::var("i")))),
        guarded(E::var("vs_value_x")),
        // Read again after the store: kept.
        N::let_bind("vs_value_y", E::subgroup_add(E::var("i"))),
        guarded(E::var("vs_value_y")),
        store(E::var("vs_value_y")),
        // An atomic would run after the index instead of before: kept.
        N::let_bind("vs_value_z", E::atomic_add("out", E::u32(0), E::u32(1))),
        guarded(E::var("vs_value_z")),
        // Not a name of the export's: kept.
        N::let_bind("w", E::subgroup_add(E::var("i"))),
        guarded(E::var("w")),
    ]);
    let (_, text) = imported(&v);
    assert!(text.contains("out[i] = subgroup_add(out[i])\n"), "{text}");
    assert!(!text.contains("vs_value_x"), "{text}");
    assert!(text.contains("let vs_value_y: u32"), "{text}");
    assert!(text.contains("let vs_value_z: u32"), "{text}");
    assert!(text.contains("let w: u32"), "{text}");
}

/// `p` with `out` of 100 elements and a grid of 256 invocations (past the count of 100).
fn json(body: &str) -> Program {
    let text = format!(
        r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1], "buffers": [
            {{"name": "a", "binding": 0, "access": "read", "type": "u32"}},
            {{"name": "out", "binding": 1, "access": "write", "type": "u32"}}],
            "body": {body},
            "run": {{"grid": [4, 1, 1], "inputs": {{
              "a": {{"len": 256, "fill": "random", "seed": 3}},
              "out": {{"len": 100, "fill": "zeros"}}}}}}}}"#
    );
    parse_program(&text, "t.json").expect("parses")
}

/// `import(export(p))` and whether it kept vyre's early exit first.
fn trip(p: &Program) -> (Program, bool) {
    let v = export(p).expect("exports");
    let (mut back, _) = imported(&v);
    back.run = p.run.clone();
    let exit = vyrescope::vyre::import::dispatch_exit(&v);
    let kept = matches!(
        (back.body.first().map(|s| &s.kind), exit),
        (Some(StmtKind::If { cond, .. }), Some(e)) if *cond == e
    );
    (back, kept)
}

fn run(p: &Program) -> Vec<Vec<u8>> {
    let dir = std::env::temp_dir();
    let prepared = prepare(p, &dir, None, None).expect("prepares");
    let mut bufs = prepared.buffers;
    vyrescope::interp::run(p, &prepared.shape, &mut bufs).expect("runs");
    bufs.into_iter().map(|b| b.data).collect()
}

#[test]
fn the_early_exit_goes_for_indices_at_or_above_gid_only_without_wrap() {
    // `t < 256` bounds `t * 4 + 3` below 2^32: at or above gid.x, so out of range past the
    // count; the trip gives the Program back, and putting the exit back changes no buffer.
    let p = json(
        r#"[{"let": "t", "value": {"gid": "x"}},
            {"if": {"ge": ["t", 256]}, "then": [{"return": {}}]},
            {"store": "out", "index": {"add": [{"mul": ["t", 4]}, 3]}, "value": {"load": "a", "index": "t"}},
            {"store": "out", "index": "t", "value": 1}]"#,
    );
    let (back, kept) = trip(&p);
    assert!(!kept, "{}", print_program(&back).text());
    let v = export(&p).expect("exports");
    let cond = vyrescope::vyre::import::dispatch_exit(&v).expect("an exit");
    let with_exit = crate::support::vyre::with_exit_first(&back, cond);
    assert_eq!(run(&back), run(&with_exit));
    assert_eq!(run(&back), run(&p));
    // Without the bound, `t * 4 + 3` wraps for t >= 2^30 (and could store in range): kept.
    let (_, kept) = trip(&json(
        r#"[{"let": "t", "value": {"gid": "x"}},
            {"store": "out", "index": {"add": [{"mul": ["t", 4]}, 3]}, "value": 1}]"#,
    ));
    assert!(kept);
    // `t + 1` wraps at t = 2^32 - 1: kept.
    let (_, kept) = trip(&json(
        r#"[{"let": "t", "value": {"gid": "x"}},
            {"store": "out", "index": {"add": ["t", 1]}, "value": 1}]"#,
    ));
    assert!(kept);
    // A factor that may be 0 (`t * k`, k loaded): kept.
    let (_, kept) = trip(&json(
        r#"[{"let": "t", "value": {"gid": "x"}},
            {"if": {"ge": ["t", 256]}, "then": [{"return": {}}]},
            {"let": "k", "value": {"and": [{"load": "a", "index": 0}, 7]}},
            {"store": "out", "index": {"mul": ["t", "k"]}, "value": 1}]"#,
    ));
    assert!(kept);
}

#[test]
fn a_bitcast_and_a_cast_between_u32_and_i32_both_come_back() {
    let p = json(
        r#"[{"let": "t", "value": {"gid": "x"}},
            {"if": {"ge": ["t", {"len": "out"}]}, "then": [{"return": {}}]},
            {"let": "u", "value": {"load": "a", "index": "t"}},
            {"let": "b", "value": {"bitcast": "i32", "value": "u"}},
            {"let": "c", "value": {"cast": "i32", "value": "u"}},
            {"store": "out", "index": "t", "value": {"bitcast": "u32", "value": {"add": ["b", "c"]}}}]"#,
    );
    let (back, _) = trip(&p);
    let text = print_program(&back).text();
    assert!(text.contains("let b: i32 = bitcast<i32>(u)\n"), "{text}");
    assert!(text.contains("let c: i32 = i32(u)\n"), "{text}");
    assert!(text.contains("bitcast<u32>(b + c)"), "{text}");
    assert_eq!(run(&back), run(&p));
}
