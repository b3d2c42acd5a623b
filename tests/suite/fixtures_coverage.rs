//! The fixtures in `fixtures/programs/` together use every statement kind, every expression
//! kind and every element type of the spec (issue 2, item 8). This test lists what is missing.

use std::collections::BTreeSet;
use std::path::PathBuf;

use vyrescope::ir::*;

fn programs() -> Vec<Program> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| load_program(f).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Names of every construct used, e.g. `stmt:loop`, `bin:rotl`, `elem:f16`, `lit:f64:nan`.
fn used(p: &Program, seen: &mut BTreeSet<String>) {
    for b in &p.buffers {
        seen.insert(format!("elem:{}", b.elem.name()));
        seen.insert(format!("access:{}", b.access.name()));
    }
    p.walk_stmts(&mut |s| {
        let mut exprs: Vec<&Expr> = Vec::new();
        let kind = match &s.kind {
            StmtKind::Let { value, .. } => {
                exprs.push(value);
                "let"
            }
            StmtKind::Assign { value, .. } => {
                exprs.push(value);
                "assign"
            }
            StmtKind::Store { index, value, .. } => {
                exprs.extend([index, value]);
                "store"
            }
            StmtKind::If { cond, has_else, .. } => {
                exprs.push(cond);
                if *has_else {
                    seen.insert("stmt:if_else".into());
                }
                "if"
            }
            StmtKind::Loop { from, to, .. } => {
                exprs.extend([from, to]);
                "loop"
            }
            StmtKind::Barrier(BarrierScope::Workgroup) => "barrier_workgroup",
            StmtKind::Barrier(BarrierScope::Grid) => "barrier_grid",
            // Not required below: fusion writes it for packed steps (scan_1024_middle's block
            // scan fused), and `subtask_barrier.rs` covers it in Program files.
            StmtKind::Barrier(BarrierScope::Subtask { .. }) => "barrier_subtask",
            StmtKind::Return => "return",
            StmtKind::Block(_) => "block",
            // Made by fusion only; no Program file spells it.
            StmtKind::Sync(_) => "sync",
        };
        seen.insert(format!("stmt:{kind}"));
        for e in exprs {
            e.visit(&mut |e| {
                let name = match e {
                    Expr::Lit(Literal::Typed(s)) => {
                        let special = match s {
                            Scalar::F32(v) if v.is_nan() => ":nan",
                            Scalar::F64(v) if v.is_nan() => ":nan",
                            Scalar::F32(v) if v.is_infinite() => ":inf",
                            Scalar::F64(v) if v.is_infinite() => ":inf",
                            _ => "",
                        };
                        if !special.is_empty() {
                            seen.insert(format!("lit:{}{special}", s.ty()));
                        }
                        format!("lit:{}", s.ty())
                    }
                    Expr::Lit(_) => "lit:bare".into(),
                    Expr::Var(_) => "var".into(),
                    Expr::Builtin(b) => match b {
                        Builtin::GlobalId(a) => format!("gid.{}", a.name()),
                        Builtin::LocalId(a) => format!("lid.{}", a.name()),
                        Builtin::WorkgroupId(a) => format!("wgid.{}", a.name()),
                        Builtin::NumWorkgroups(a) => format!("nwg.{}", a.name()),
                        Builtin::Lane => "lane".into(),
                        Builtin::SubgroupSize => "subgroup_size".into(),
                    },
                    Expr::Load { .. } => "load".into(),
                    Expr::Len(_) => "len".into(),
                    Expr::Binary(op, ..) => format!("bin:{}", op.name()),
                    Expr::Unary(op, _) => format!("un:{}", op.name()),
                    Expr::Select(..) => "select".into(),
                    Expr::Cast(..) => "cast".into(),
                    Expr::Bitcast(..) => "bitcast".into(),
                    Expr::Fma(..) => "fma".into(),
                    Expr::Atomic { op, order, .. } => {
                        seen.insert(format!("order:{}", order.name()));
                        format!("atomic:{}", op.name())
                    }
                    Expr::Shuffle { .. } => "shuffle".into(),
                    Expr::SubgroupReduce(op, _) => format!("reduce:{}", op.name()),
                    Expr::Ballot(_) => "ballot".into(),
                    // Made by the profiler's instrumentation only; no Program file spells it.
                    Expr::Clock => "clock".into(),
                };
                seen.insert(name);
            });
        }
    });
}

#[test]
fn fixtures_use_every_construct() {
    let progs = programs();
    assert!(progs.len() >= 16, "only {} fixtures", progs.len());
    let mut seen = BTreeSet::new();
    for p in &progs {
        used(p, &mut seen);
    }
    let mut want: Vec<String> = [
        "stmt:let",
        "stmt:assign",
        "stmt:store",
        "stmt:if",
        "stmt:if_else",
        "stmt:loop",
        "stmt:barrier_workgroup",
        "stmt:barrier_grid",
        "stmt:return",
        "stmt:block",
        "lit:bare",
        "lit:f32:inf",
        "lit:f32:nan",
        "lit:f64:inf",
        "lit:f64:nan",
        "var",
        "lane",
        "subgroup_size",
        "load",
        "len",
        "select",
        "cast",
        "bitcast",
        "fma",
        "shuffle",
        "ballot",
        // The default and the order CUDA's atomicAdd has (the benchmarks time both).
        "order:seq_cst",
        "order:relaxed",
    ]
    .map(String::from)
    .to_vec();
    want.extend(ScalarType::ALL.map(|t| format!("lit:{t}")));
    want.extend(ElemType::ALL.map(|t| format!("elem:{t}")));
    for a in ["read", "read_write", "write", "uniform", "workgroup"] {
        want.push(format!("access:{a}"));
    }
    for id in ["gid", "lid", "wgid", "nwg"] {
        for axis in ["x", "y", "z"] {
            want.push(format!("{id}.{axis}"));
        }
    }
    want.extend(BinOp::ALL.map(|o| format!("bin:{}", o.name())));
    want.extend(UnOp::ALL.map(|o| format!("un:{}", o.name())));
    want.extend(AtomicOp::ALL.map(|o| format!("atomic:{}", o.name())));
    want.extend(ReduceOp::ALL.map(|o| format!("reduce:{}", o.name())));
    let missing: Vec<&String> = want.iter().filter(|w| !seen.contains(*w)).collect();
    assert!(missing.is_empty(), "no fixture uses: {missing:?}");
}

#[test]
fn fixtures_have_documented_inputs() {
    for p in programs() {
        let doc = p.doc.as_deref().unwrap_or("");
        assert!(!doc.is_empty(), "{}: no doc", p.name);
        let run = p
            .run
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no run", p.name));
        for (name, spec) in &run.inputs {
            if let InputSource::Fill(Fill::Random { seed, .. }) = spec.source {
                assert!(
                    doc.contains(&format!("seed {seed}")),
                    "{}: the doc does not name seed {seed} of `{name}`",
                    p.name
                );
            }
        }
        // Grid-barrier kernels must fit one cooperative launch on an H200 (132 SMs).
        let mut grid_barrier = false;
        p.walk_stmts(&mut |s| {
            grid_barrier |= matches!(s.kind, StmtKind::Barrier(BarrierScope::Grid))
        });
        if grid_barrier {
            let g = run
                .grid
                .unwrap_or_else(|| panic!("{}: needs run.grid", p.name));
            assert!(g[0] * g[1] * g[2] <= 132, "{}: grid {g:?}", p.name);
            assert!(
                p.workgroup_size.iter().product::<u32>() <= 256,
                "{}",
                p.name
            );
        }
    }
}
