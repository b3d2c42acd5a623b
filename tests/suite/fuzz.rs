//! The fuzz harness: proptest strategies over arbitrary bytes (raw file text, edits of the
//! fixtures, and byte strings that drive the Program generators through
//! `gen::Rng::from_bytes`, so a failure shrinks to a small input) run through the parser,
//! the validator, the printer and writer, the interpreter (with a small step budget) and the
//! emitter (sm_70, sm_80, sm_90). The properties: nothing panics, every error carries a
//! `Fix:`, the interpreter stops within its budget, the emitter refuses only with a reason.
//!
//! CI runs a few dozen cases per target. `VYRESCOPE_FUZZ_CASES=N` sets the cases per round
//! and `VYRESCOPE_FUZZ_SECONDS=S` repeats rounds (fresh random inputs each) until S seconds
//! have passed, for a long run:
//! `VYRESCOPE_FUZZ_SECONDS=1800 nice -n 19 cargo test --release --test suite fuzz:: -- --test-threads 8 --nocapture`.
//! Each target prints its executions.

use std::path::Path;
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::{Config as PropConfig, TestError, TestRunner};
use vyrescope::emit::{emit, EmitError, EmitOptions};
use vyrescope::gen::{mutate_with, valid_program_with, wild_program_with, Config, Rng};
use vyrescope::interp::{run_with, Options};
use vyrescope::ir::{parse_pipeline, parse_program, program_to_json, Program, RunSpec};
use vyrescope::validate::{is_valid, validate};

/// Step budget of the interpreter in the harness: small, so every case is quick.
const FUEL: u64 = 200_000;

/// Longest one interpreter case may take with [`FUEL`] (generous: the machine is shared and
/// CI builds without optimisation of the test code).
const CASE_LIMIT: Duration = Duration::from_secs(20);

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// Runs `test` over `strategy` in rounds of `VYRESCOPE_FUZZ_CASES` cases (default
/// `default_cases`) until `VYRESCOPE_FUZZ_SECONDS` have passed (default: one round). A failure
/// panics with proptest's shrunk input.
fn fuzz<S: Strategy>(
    name: &str,
    default_cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let cases = env_u64("VYRESCOPE_FUZZ_CASES").map_or(default_cases, |n| n.max(1) as u32);
    let budget = Duration::from_secs(env_u64("VYRESCOPE_FUZZ_SECONDS").unwrap_or(0));
    let start = Instant::now();
    let mut executions = 0u64;
    loop {
        let mut runner = TestRunner::new(PropConfig {
            cases,
            failure_persistence: None,
            ..PropConfig::default()
        });
        match runner.run(&strategy, &test) {
            Ok(()) => executions += cases as u64,
            Err(TestError::Fail(why, input)) => {
                panic!("fuzz {name}: {why}\nminimal failing input: {input:#?}")
            }
            Err(TestError::Abort(why)) => panic!("fuzz {name} aborted: {why}"),
        }
        if start.elapsed() >= budget {
            break;
        }
    }
    eprintln!(
        "fuzz {name}: {executions} executions in {:.1} s, no finding",
        start.elapsed().as_secs_f64()
    );
}

/// Every fixture file (Programs and pipelines, valid and invalid), read once.
fn fixtures() -> &'static [(String, String)] {
    static ALL: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = Vec::new();
        for dir in [
            "fixtures/programs",
            "fixtures/invalid",
            "fixtures/pipelines",
            "fixtures/pipelines/programs",
            "fixtures/invalid_pipelines",
        ] {
            let Ok(rd) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut files: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.sort();
            for f in files {
                if f.extension().is_some_and(|x| x == "json") {
                    if let Ok(t) = std::fs::read_to_string(&f) {
                        v.push((f.display().to_string(), t));
                    }
                }
            }
        }
        assert!(
            v.len() > 20,
            "fixtures not found: run from the repository root"
        );
        v
    })
}

/// An error message must say how to fix it.
fn has_fix(msg: &str) -> bool {
    msg.contains("Fix:")
}

/// Parses `text` as a Program (or as a pipeline, when it looks like one) and runs every
/// later stage on what parses.
fn check_text(text: &str) -> Result<(), TestCaseError> {
    if vyrescope::ir::looks_like_pipeline(text) {
        match parse_pipeline(text, "fuzz.json", Path::new("fixtures/pipelines")) {
            Ok(p) => {
                let d = vyrescope::validate::pipeline::validate_pipeline(&p);
                for x in &d {
                    prop_assert!(!x.fix.is_empty(), "{x}");
                }
            }
            Err(e) => prop_assert!(!e.fix.is_empty() && has_fix(&e.to_string()), "{e}"),
        }
        return Ok(());
    }
    match parse_program(text, "fuzz.json") {
        Ok(p) => check_program(&p, true),
        Err(e) => {
            prop_assert!(!e.fix.is_empty() && has_fix(&e.to_string()), "{e}");
            Ok(())
        }
    }
}

/// Validates, prints, writes, interprets (small fuel) and emits `p`. `shrink_run`: replace the
/// run section by a small launch first (inputs of mutated files may ask for gigabytes, which
/// the input limits accept; the harness is about the stages, not about allocating them).
fn check_program(p: &Program, shrink_run: bool) -> Result<(), TestCaseError> {
    let d = validate(p);
    for x in &d {
        prop_assert!(!x.message.is_empty() && !x.fix.is_empty(), "{x}");
    }
    let _ = vyrescope::ir::print::print_program(p);
    if !is_valid(&d) {
        // The emitter refuses an invalid Program with the first error, never panics.
        if let Err(e) = emit(p, &EmitOptions::for_program(p)) {
            prop_assert!(has_fix(&e.to_string()), "{e}");
        }
        return Ok(());
    }
    // The writer round-trips every valid Program (compared as written text: NaN literals
    // make `==` on Programs false even for identical bits).
    if let Ok(json) = program_to_json(p) {
        let again = parse_program(&json, "w.json").map(|b| program_to_json(&b));
        prop_assert!(
            matches!(&again, Ok(Ok(j)) if *j == json),
            "round trip: {json}\n{again:?}"
        );
    }
    let mut q = p.clone();
    if shrink_run {
        q.run = Some(RunSpec {
            grid: Some([2, 1, 1]),
            elements: None,
            inputs: Vec::new(),
        });
    }
    interpret(&q)?;
    for sm in [70, 80, 90] {
        let opts = EmitOptions {
            sm,
            ..EmitOptions::for_program(&q)
        };
        match emit(&q, &opts) {
            Ok(k) => prop_assert!(k.ptx.contains(".entry"), "sm_{sm}"),
            Err(EmitError::Internal(e)) => {
                return Err(TestCaseError::fail(format!(
                    "sm_{sm}: internal emitter error: {e}"
                )))
            }
            Err(e) => prop_assert!(has_fix(&e.to_string()), "sm_{sm}: {e}"),
        }
    }
    Ok(())
}

/// Runs `p` on the interpreter with [`FUEL`]: it finishes, runs out of fuel (`I003`) or is
/// refused with a `Fix:`, quickly.
fn interpret(p: &Program) -> Result<(), TestCaseError> {
    let prepared = match vyrescope::inputs::prepare(p, Path::new("fixtures/programs"), None, None) {
        Ok(x) => x,
        Err(e) => {
            prop_assert!(has_fix(&e.to_string()), "{e}");
            return Ok(());
        }
    };
    let mut bufs = prepared.buffers;
    let t = Instant::now();
    let r = run_with(
        p,
        &prepared.shape,
        &mut bufs,
        &Options {
            fuel: FUEL,
            parallel: false,
        },
    );
    prop_assert!(
        t.elapsed() < CASE_LIMIT,
        "the interpreter ran {:?} with fuel {FUEL}",
        t.elapsed()
    );
    if let Err(e) = r {
        prop_assert!(!e.fix.is_empty(), "{e}");
        // A valid Program with a usable launch fails only by running out of fuel.
        prop_assert!(e.code == "I003" || e.code == "I001", "{e}");
    }
    Ok(())
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
enum Edit {
    Insert(usize, u8),
    Remove(usize),
    Set(usize, u8),
    Truncate(usize),
    /// Copy `len` bytes from `from` to `to` (duplicates keys, objects, numbers).
    Splice {
        from: usize,
        len: usize,
        to: usize,
    },
    /// Replace the number starting at or after `at` by an extreme one.
    Number(usize, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Edit::Insert(a, b)),
        any::<usize>().prop_map(Edit::Remove),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Edit::Set(a, b)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), 1usize..64, any::<usize>()).prop_map(|(from, len, to)| Edit::Splice {
            from,
            len,
            to
        }),
        (any::<usize>(), any::<u8>()).prop_map(|(a, k)| Edit::Number(a, k)),
    ]
}

const EXTREMES: [&str; 12] = [
    "0",
    "-1",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "-9223372036854775808",
    "1e308",
    "-0.0",
    "65535",
    "1024",
    "1.5",
    "99999999999999999999999999",
];

fn apply(bytes: &mut Vec<u8>, e: &Edit) {
    let n = bytes.len();
    let at = |a: usize| if n == 0 { 0 } else { a % n };
    match *e {
        Edit::Insert(a, b) => bytes.insert(a % (n + 1), b),
        Edit::Remove(a) if n > 0 => {
            bytes.remove(at(a));
        }
        Edit::Set(a, b) if n > 0 => bytes[at(a)] = b,
        Edit::Truncate(a) => bytes.truncate(a % (n + 1)),
        Edit::Splice { from, len, to } if n > 0 => {
            let from = at(from);
            let piece: Vec<u8> = bytes[from..(from + len).min(n)].to_vec();
            let to = to % (n + 1);
            bytes.splice(to..to, piece);
        }
        Edit::Number(a, k) if n > 0 => {
            let start = at(a);
            if let Some(s) = (start..n).find(|&i| bytes[i].is_ascii_digit()) {
                let mut end = s;
                while end < n && (bytes[end].is_ascii_digit() || b".eE+-".contains(&bytes[end])) {
                    end += 1;
                }
                let s = if s > 0 && bytes[s - 1] == b'-' {
                    s - 1
                } else {
                    s
                };
                let new = EXTREMES[k as usize % EXTREMES.len()].as_bytes();
                bytes.splice(s..end, new.iter().copied());
            }
        }
        _ => {}
    }
}

#[test]
fn parser_takes_raw_bytes() {
    fuzz("parser_raw_bytes", 96, vec(any::<u8>(), 0..2048), |bytes| {
        check_text(&String::from_utf8_lossy(&bytes))?;
        // The file reader takes bytes that are not UTF-8 too.
        if let Ok(t) = std::str::from_utf8(&bytes) {
            check_text(t)?;
        }
        Ok(())
    });
}

#[test]
fn parser_takes_mutated_fixtures() {
    let n = fixtures().len();
    fuzz(
        "parser_mutated_fixtures",
        48,
        (0..n, vec(edit(), 1..8)),
        |(k, edits)| {
            let mut bytes = fixtures()[k].1.as_bytes().to_vec();
            for e in &edits {
                apply(&mut bytes, e);
            }
            check_text(&String::from_utf8_lossy(&bytes))
        },
    );
}

#[test]
fn validator_takes_wild_programs() {
    fuzz(
        "validator_wild_programs",
        96,
        vec(any::<u8>(), 0..1024),
        |bytes| {
            let p = wild_program_with(Rng::from_bytes(&bytes));
            let d = validate(&p);
            prop_assert_eq!(&d, &validate(&p), "the validator is deterministic");
            check_program(&p, true)
        },
    );
}

#[test]
fn stages_take_mutated_valid_programs() {
    fuzz(
        "mutated_valid_programs",
        48,
        (vec(any::<u8>(), 0..512), vec(any::<u8>(), 0..64)),
        |(bytes, m)| {
            let p = valid_program_with(Rng::from_bytes(&bytes), &Config::default(), "k".into());
            check_program(&mutate_with(&p, Rng::from_bytes(&m)), true)
        },
    );
}

#[test]
fn interpreter_and_emitter_take_generated_programs() {
    fuzz(
        "generated_programs",
        32,
        vec(any::<u8>(), 0..2048),
        |bytes| {
            let p = valid_program_with(Rng::from_bytes(&bytes), &Config::interp(), "k".into());
            let d = validate(&p);
            prop_assert!(
                is_valid(&d),
                "the generator made an invalid Program: {d:#?}"
            );
            check_program(&p, false)
        },
    );
}

/// Race-free Programs give the same results whatever order the interpreter runs workgroups
/// in: serial and parallel runs agree bit for bit.
#[test]
fn race_free_programs_run_the_same_in_parallel() {
    fuzz(
        "race_free_parallel",
        24,
        vec(any::<u8>(), 0..2048),
        |bytes| {
            let p =
                valid_program_with(Rng::from_bytes(&bytes), &Config::differential(), "k".into());
            let prepared = vyrescope::inputs::prepare(&p, Path::new("."), None, None)
                .map_err(|e| TestCaseError::fail(format!("inputs of a generated Program: {e}")))?;
            let run = |parallel| {
                let mut b = prepared.buffers.clone();
                run_with(
                    &p,
                    &prepared.shape,
                    &mut b,
                    &Options {
                        fuel: 1 << 24,
                        parallel,
                    },
                )
                .map(|_| b)
            };
            if let (Ok(a), Ok(b)) = (run(false), run(true)) {
                prop_assert!(a == b, "serial and parallel runs differ");
            }
            Ok(())
        },
    );
}

/// The byte-driven generator does what the harness relies on: the same bytes give the same
/// Program, different bytes different ones, and a byte string that runs out falls back to
/// random draws (every input is a whole Program).
#[test]
fn byte_driven_generator_is_deterministic_and_total() {
    let a = valid_program_with(Rng::from_bytes(&[1, 2, 3]), &Config::default(), "k".into());
    let b = valid_program_with(Rng::from_bytes(&[1, 2, 3]), &Config::default(), "k".into());
    assert_eq!(a, b);
    let mut distinct = std::collections::BTreeSet::new();
    let mut r = Rng::new(9);
    for _ in 0..50 {
        let bytes: Vec<u8> = (0..64).map(|_| r.next_u64() as u8).collect();
        let p = valid_program_with(Rng::from_bytes(&bytes), &Config::default(), "k".into());
        assert!(is_valid(&validate(&p)));
        distinct.insert(format!("{:?}", p.body));
    }
    assert!(distinct.len() > 40, "{}", distinct.len());
    assert!(
        !valid_program_with(Rng::from_bytes(&[]), &Config::default(), "k".into())
            .body
            .is_empty()
    );
}

/// Regression (found by `validator_wild_programs` and `mutated_valid_programs`): float
/// literals were parsed up to one ULP off (serde_json's fast float path), so a Program
/// written as JSON and read back (as the GPU worker receives Programs) held other bits.
#[test]
fn float_literals_parse_to_the_nearest_double() {
    for text in [
        "1.24947779860561e-246",
        "2.2729873307131272e-7",
        "-7.206203099869228e-88",
        "2.2250738585072014e-308",
        "4.9406564584124654e-324",
        "1.7976931348623157e308",
        "0.1",
    ] {
        let want: f64 = text.parse().unwrap();
        let src = format!(
            r#"{{"format": 1, "name": "k", "workgroup_size": [1, 1, 1], "buffers": [],
                "body": [{{"let": "x", "value": {{"f64": {text}}}}}, {{"let": "y", "value": {text}}}]}}"#
        );
        let p = parse_program(&src, "f.json").unwrap();
        let json = program_to_json(&p).unwrap();
        let back = parse_program(&json, "w.json").unwrap();
        assert_eq!(program_to_json(&back).unwrap(), json, "{text}");
        let bits = |p: &Program| format!("{:?}", p.body);
        assert!(
            bits(&p).contains(&format!("{want:?}")),
            "{text}: {}",
            bits(&p)
        );
        assert_eq!(bits(&p), bits(&back), "{text}");
    }
}

/// The expressions a statement holds directly (not those of nested statements).
fn own_exprs(s: &vyrescope::ir::Stmt) -> Vec<&vyrescope::ir::Expr> {
    use vyrescope::ir::StmtKind as K;
    match &s.kind {
        K::Let { value, .. } | K::Assign { value, .. } => vec![value],
        K::Store { index, value, .. } => vec![index, value],
        K::If { cond, .. } => vec![cond],
        K::Loop { from, to, .. } => vec![from, to],
        _ => Vec::new(),
    }
}

/// `selftest --fuzz` found 160 of 2000 Programs differing on an H200, every one a Program
/// outside the documented semantics rather than a backend bug: reads of workgroup memory
/// before any write (undefined on the GPU, zero in the interpreter), `sin cos tan` beyond
/// `|x| <= 2^20` (nothing promised there) and float-to-integer bitcasts (NaN payloads are not
/// defined). `Config::differential` must not make such Programs.
#[test]
fn differential_programs_stay_inside_the_semantics() {
    use vyrescope::ir::{elaborate, expr_type, Access, Expr, Literal, Scalar, StmtKind, UnOp};
    let (mut trig, mut bitcasts, mut wg_reads) = (0, 0, 0);
    for seed in 0..400u64 {
        let p = elaborate(&vyrescope::harness::fuzz::fuzz_program(seed));
        // Variable names are fresh per Program, so one table serves every scope.
        let mut vars = std::collections::HashMap::new();
        let wg: Vec<String> = p
            .buffers
            .iter()
            .filter(|b| b.access == Access::Workgroup)
            .map(|b| b.name.clone())
            .collect();
        // Each workgroup buffer is written at the thread's own element first thing.
        for (k, name) in wg.iter().enumerate() {
            match &p.body[1 + k].kind {
                StmtKind::Store { buffer, index, .. } => {
                    assert_eq!(buffer, name, "seed {seed}");
                    assert_eq!(index, &Expr::Var("i".into()), "seed {seed}");
                }
                other => panic!("seed {seed}: body[{}] is {other:?}", 1 + k),
            }
        }
        p.walk_stmts(&mut |s| {
            let ty = |e: &Expr, vars: &std::collections::HashMap<String, _>| {
                expr_type(&p, e, &|n| vars.get(n).copied())
            };
            for e in own_exprs(s) {
                e.visit(&mut |x| match x {
                    Expr::Unary(UnOp::Sin | UnOp::Cos | UnOp::Tan, a) => {
                        trig += 1;
                        let limit = |e: &Expr, want: f64| match e {
                            Expr::Lit(Literal::Typed(Scalar::F32(v))) => *v as f64 == want,
                            Expr::Lit(Literal::Typed(Scalar::F64(v))) => *v == want,
                            _ => false,
                        };
                        let ok = matches!(&**a, Expr::Binary(vyrescope::ir::BinOp::Min, lo, hi)
                            if limit(hi, 1_048_576.0)
                                && matches!(&**lo, Expr::Binary(vyrescope::ir::BinOp::Max, _, l)
                                    if limit(l, -1_048_576.0)));
                        assert!(ok, "seed {seed} {}: unbounded trig argument {a:?}", s.id);
                    }
                    Expr::Bitcast(t, a) => {
                        let from = ty(a, &vars).expect("typed operand");
                        bitcasts += 1;
                        assert!(
                            !(t.is_int() && from.is_float()),
                            "seed {seed} {}: bitcast of a float to {t:?}",
                            s.id
                        );
                    }
                    Expr::Load { buffer, .. } | Expr::Atomic { buffer, .. }
                        if wg.contains(buffer) =>
                    {
                        wg_reads += 1
                    }
                    _ => {}
                });
            }
            match &s.kind {
                StmtKind::Let { name, value } => {
                    let t = ty(value, &vars).expect("typed let");
                    vars.insert(name.clone(), t);
                }
                StmtKind::Loop { var, .. } => {
                    vars.insert(var.clone(), vyrescope::ir::ScalarType::U32);
                }
                _ => {}
            }
        });
    }
    // The constructs are still generated, inside the rules.
    assert!(
        trig > 50 && bitcasts > 50 && wg_reads > 50,
        "{trig} {bitcasts} {wg_reads}"
    );
}
