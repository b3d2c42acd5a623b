//! Property tests: the validator accepts every generated well-typed Program, and neither the
//! parser nor the validator ever panics (or overflows the stack) on anything else.

use proptest::prelude::*;
use vyrescope::diagnostics::Severity;
use vyrescope::gen::{mutate, valid_program, wild_program, Config};
use vyrescope::ir::{
    parse_program, Axis, BarrierScope, BinOp, Builtin, Expr, FloatLit, Literal, Program, Stmt,
    StmtKind, UnOp,
};
use vyrescope::validate::{is_valid, validate, MAX_EXPR_DEPTH, MAX_NODES, MAX_STMT_DEPTH};

const VADD: &str = include_str!("../../fixtures/programs/vadd_f32.json");

fn errors(p: &Program) -> Vec<String> {
    validate(p)
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_valid_programs_are_accepted(seed in any::<u64>()) {
        let p = valid_program(seed, &Config::default());
        let errs = errors(&p);
        prop_assert!(errs.is_empty(), "seed {seed}: {errs:#?}\n{p:#?}");
    }

    #[test]
    fn wild_programs_never_panic_the_validator(seed in any::<u64>()) {
        let p = wild_program(seed);
        let d = validate(&p);
        // Every diagnostic is complete, and the result is deterministic.
        for x in &d {
            prop_assert!(x.code.starts_with('V') && !x.message.is_empty() && !x.fix.is_empty());
        }
        prop_assert_eq!(d, validate(&p));
    }

    #[test]
    fn mutated_programs_never_panic_the_validator(seed in any::<u64>(), m in any::<u64>()) {
        let p = mutate(&valid_program(seed, &Config::default()), m);
        let d = validate(&p);
        prop_assert!(complete(&d), "{d:#?}");
        prop_assert_eq!(d, validate(&p));
    }

    #[test]
    fn a_barrier_under_a_lid_condition_is_always_caught(seed in any::<u64>(), at in any::<usize>(), ret in any::<bool>()) {
        let mut p = valid_program(seed, &Config::default());
        let mut then = vec![st(StmtKind::Barrier(BarrierScope::Workgroup))];
        if ret {
            // `return` first: then the barrier is both divergent and after a divergent return.
            then.insert(0, st(StmtKind::Return));
        }
        let cond = Expr::Binary(
            BinOp::Lt,
            Box::new(Expr::Builtin(Builtin::LocalId(Axis::X))),
            Box::new(Expr::Lit(Literal::Int(3))),
        );
        let at = at % (p.body.len() + 1);
        p.body.insert(at, st(StmtKind::If { cond, then, otherwise: Vec::new(), has_else: false }));
        vyrescope::ir::parse::assign_ids(&mut p.body, "body");
        let d = validate(&p);
        let want = format!("body[{at}].then[{}]", usize::from(ret));
        prop_assert!(
            d.iter().any(|x| x.code == "V060" && x.node.as_deref() == Some(want.as_str())),
            "{d:#?}"
        );
    }

    #[test]
    fn random_bytes_never_panic_the_parser(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        match parse_program(&text, "fuzz.json") {
            Ok(p) => {
                let d = validate(&p);
                prop_assert!(complete(&d), "{d:#?}");
            }
            Err(e) => prop_assert!(!e.fix.is_empty() && e.line >= 1, "{e}"),
        }
    }

    #[test]
    fn mutated_fixture_text_never_panics_parser_or_validator(
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..4), 1..6)
    ) {
        let mut bytes = VADD.as_bytes().to_vec();
        for (at, byte, kind) in edits {
            let at = at % (bytes.len() + 1);
            match kind {
                0 => bytes.insert(at, byte),
                1 if at < bytes.len() => { bytes.remove(at); }
                2 if at < bytes.len() => bytes[at] = byte,
                _ => bytes.truncate(at),
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        match parse_program(&text, "m.json") {
            Ok(p) => {
                let d = validate(&p);
                prop_assert!(complete(&d), "{d:#?}");
            }
            Err(e) => prop_assert!(!e.fix.is_empty() && e.line >= 1, "{e}"),
        }
    }
}

/// Every diagnostic names its rule, says what is wrong and how to fix it.
fn complete(d: &[vyrescope::finding::Diagnostic]) -> bool {
    d.iter()
        .all(|x| x.code.starts_with('V') && !x.message.is_empty() && !x.fix.is_empty())
}

#[test]
fn generator_covers_the_interesting_forms() {
    // The valid generator must reach barriers, atomics, subgroup ops, loops and returns, or
    // the acceptance property above would test little.
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..300 {
        let p = valid_program(seed, &Config::default());
        p.walk_stmts(&mut |s| {
            let k = match &s.kind {
                StmtKind::Barrier(_) => "barrier",
                StmtKind::Loop { .. } => "loop",
                StmtKind::Return => "return",
                StmtKind::If { .. } => "if",
                _ => "",
            };
            seen.insert(k);
            let mut note = |e: &Expr| {
                seen.insert(match e {
                    Expr::Atomic { .. } => "atomic",
                    Expr::Shuffle { .. } => "shuffle",
                    Expr::Lit(Literal::Int(_) | Literal::Float(_)) => "bare literal",
                    Expr::Bitcast(..) => "bitcast",
                    _ => "",
                });
            };
            match &s.kind {
                StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => {
                    value.visit(&mut note)
                }
                StmtKind::Store { value, .. } => value.visit(&mut note),
                _ => {}
            }
        });
    }
    for k in [
        "barrier",
        "loop",
        "return",
        "if",
        "atomic",
        "shuffle",
        "bare literal",
        "bitcast",
    ] {
        assert!(seen.contains(k), "generator never produced {k}");
    }
}

fn st(kind: StmtKind) -> Stmt {
    Stmt {
        id: Default::default(),
        kind,
    }
}

/// Runs `f` on a thread with a small stack: the validator must not need more.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn very_deep_statements_are_rejected_without_recursion() {
    let depth = 50_000;
    let mut body = vec![st(StmtKind::Return)];
    // Ids are set here (not by the recursive `assign_ids`): JSON paths this deep would be huge.
    for n in 0..depth {
        body = vec![Stmt {
            id: format!("n{n}").into(),
            kind: StmtKind::Block(body),
        }];
    }
    let mut p: Program = parse_program(VADD, "v.json").unwrap();
    p.body = body;
    let (d, p) = on_small_stack(move || (validate(&p), p));
    assert!(d.iter().any(|x| x.code == "V070"), "{d:#?}");
    assert!(d[0].message.contains(&format!("limit is {MAX_STMT_DEPTH}")));
    // The first statement beyond the limit is named (top level is depth 1).
    assert_eq!(
        d[0].node.as_deref(),
        Some(format!("n{}", depth - 1 - MAX_STMT_DEPTH).as_str())
    );
    // Dropping the nested tree recurses (Rust drop glue), so leak it on purpose.
    std::mem::forget(p);
}

#[test]
fn very_deep_expressions_are_rejected_without_recursion() {
    let mut e = Expr::Lit(Literal::Float(FloatLit::exact(1.0)));
    for _ in 0..50_000 {
        e = Expr::Unary(UnOp::Neg, Box::new(e));
    }
    let mut p: Program = parse_program(VADD, "v.json").unwrap();
    p.body = vec![st(StmtKind::Let {
        name: "x".into(),
        value: e,
    })];
    vyrescope::ir::parse::assign_ids(&mut p.body, "body");
    let (d, p) = on_small_stack(move || (validate(&p), p));
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].code, "V071");
    assert!(d[0].message.contains(&format!("limit is {MAX_EXPR_DEPTH}")));
    std::mem::forget(p);
}

#[test]
fn too_many_nodes_is_one_clear_error() {
    let mut p: Program = parse_program(VADD, "v.json").unwrap();
    p.body = (0..MAX_NODES / 2)
        .map(|_| st(StmtKind::Barrier(BarrierScope::Workgroup)))
        .collect();
    vyrescope::ir::parse::assign_ids(&mut p.body, "body");
    assert!(is_valid(&validate(&p)));
    p.body.extend(p.body.clone());
    p.body.push(st(StmtKind::Return));
    vyrescope::ir::parse::assign_ids(&mut p.body, "body");
    let d: Vec<_> = validate(&p)
        .into_iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    assert_eq!(d.len(), 1, "{d:#?}");
    assert_eq!(d[0].code, "V072");
    assert!(d[0].node.is_none());
    assert!(d[0].message.contains(&(MAX_NODES + 1).to_string()));
}
