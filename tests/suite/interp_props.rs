//! Property test: random well-typed Programs (integer and float arithmetic, casts, selects,
//! loops, ifs, returns, loads/stores of every element type, warp ops, atomics, barriers)
//! never panic the reference interpreter; a run either succeeds with intact buffer sizes or
//! fails with a `Fix:` hint.
//!
//! Programs come from the shared generator (`tests/suite/support/gen.rs`) with
//! [`Config::interp`]: valid by construction (so every case runs; the validator must agree),
//! with a `run` section, odd workgroup sizes, a variable of every type from the start and
//! loops that may outrun the fuel.

use proptest::prelude::*;
use std::collections::BTreeSet;

use vyrescope::diagnostics::Severity;
use vyrescope::gen::{valid_program, Config};
use vyrescope::inputs::prepare;
use vyrescope::interp::{run_with, InterpStats, Options};
use vyrescope::ir::{Access, Expr, Program, StmtKind};

/// Runs `program` as the test does; `Err` is the interpreter's message.
fn run(program: &Program, parallel: bool) -> Result<InterpStats, String> {
    let prepared = prepare(program, std::path::Path::new("."), None, None)
        .map_err(|e| format!("prepare: {e}"))?;
    let mut buffers = prepared.buffers.clone();
    let opts = Options {
        fuel: 2_000_000,
        parallel,
    };
    run_with(program, &prepared.shape, &mut buffers, &opts).map_err(|e| e.to_string())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_programs_never_panic_the_interpreter(seed in any::<u64>()) {
        let program = valid_program(seed, &Config::interp());
        let errors: Vec<String> = vyrescope::validate::validate(&program)
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.to_string())
            .collect();
        prop_assert!(errors.is_empty(), "seed {seed}: {errors:#?}");
        let prepared = prepare(&program, std::path::Path::new("."), None, None)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let sizes: Vec<usize> = prepared.buffers.iter().map(|b| b.data.len()).collect();
        for parallel in [true, false] {
            let mut buffers = prepared.buffers.clone();
            let opts = Options { fuel: 2_000_000, parallel };
            match run_with(&program, &prepared.shape, &mut buffers, &opts) {
                Ok(stats) => {
                    prop_assert_eq!(stats.invocations, prepared.shape.invocations());
                    prop_assert!(stats.node_evals >= 8 * stats.invocations);
                    let after: Vec<usize> = buffers.iter().map(|b| b.data.len()).collect();
                    prop_assert_eq!(&after, &sizes);
                }
                Err(e) => prop_assert!(e.to_string().contains("Fix:"), "{}", e),
            }
        }
    }
}

/// The forms a Program uses (statement kinds, expression kinds, access of stored buffers).
fn forms(p: &Program) -> BTreeSet<&'static str> {
    let mut seen = BTreeSet::new();
    let write_only: Vec<&str> = p
        .buffers
        .iter()
        .filter(|b| b.access == Access::Write)
        .map(|b| b.name.as_str())
        .collect();
    let expr = |e: &Expr, seen: &mut BTreeSet<&'static str>| {
        e.visit(&mut |e| {
            seen.insert(match e {
                Expr::Atomic { .. } => "atomic",
                Expr::Shuffle { .. } => "shuffle",
                Expr::SubgroupReduce(..) => "subgroup_reduce",
                Expr::Ballot(_) => "ballot",
                Expr::Bitcast(..) => "bitcast",
                Expr::Load { .. } => "load",
                _ => "",
            });
        })
    };
    p.walk_stmts(&mut |s| match &s.kind {
        StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => expr(value, &mut seen),
        StmtKind::Store {
            buffer,
            index,
            value,
        } => {
            seen.insert(if write_only.contains(&buffer.as_str()) {
                "store_write_only"
            } else {
                "store"
            });
            expr(index, &mut seen);
            expr(value, &mut seen);
        }
        StmtKind::If { cond, .. } => {
            seen.insert("if");
            expr(cond, &mut seen);
        }
        StmtKind::Loop { from, to, .. } => {
            seen.insert("loop");
            expr(from, &mut seen);
            expr(to, &mut seen);
        }
        StmtKind::Barrier(_) => {
            seen.insert("barrier");
        }
        StmtKind::Return => {
            seen.insert("return");
        }
        StmtKind::Block(_) | StmtKind::Sync(_) => {}
    });
    seen
}

#[test]
fn the_interp_generator_reaches_every_path() {
    // The property above tests little unless its Programs run both ways (to completion and
    // out of fuel), on partial warps, through every statement and the warp, atomic and
    // memory forms.
    let mut seen = BTreeSet::new();
    let (mut ok, mut out_of_fuel, mut partial_warps, mut grids) = (0, 0, 0, BTreeSet::new());
    for seed in 0..400u64 {
        let p = valid_program(seed, &Config::interp());
        seen.extend(forms(&p));
        if !p.workgroup_size[0].is_multiple_of(32) {
            partial_warps += 1;
        }
        grids.insert(p.run.as_ref().and_then(|r| r.grid).map(|g| g[0]));
        if seed < 120 {
            match run(&p, true) {
                Ok(_) => ok += 1,
                Err(e) if e.contains("budget") => out_of_fuel += 1,
                Err(e) => panic!("seed {seed}: {e}"),
            }
        }
    }
    for f in [
        "atomic",
        "ballot",
        "barrier",
        "bitcast",
        "if",
        "load",
        "loop",
        "return",
        "shuffle",
        "store",
        "store_write_only",
        "subgroup_reduce",
    ] {
        assert!(seen.contains(f), "no {f} in 400 Programs: {seen:?}");
    }
    assert!(ok >= 60, "{ok} of 120 ran to completion");
    assert!(out_of_fuel >= 1, "no Program ran out of fuel");
    assert!(
        partial_warps >= 100,
        "{partial_warps} of 400 with partial warps"
    );
    assert_eq!(grids.len(), 4, "grids of 1 to 4 workgroups: {grids:?}");
}
