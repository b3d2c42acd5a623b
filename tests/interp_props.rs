//! Property test: random well-typed Programs (integer and float arithmetic, casts, selects,
//! loops, ifs, returns, loads/stores of every element type, warp ops, atomics, barriers)
//! never panic the reference interpreter; a run either succeeds with intact buffer sizes or
//! fails with a `Fix:` hint.
//!
//! Programs are built by a small typed generator driven by a proptest-chosen seed; each
//! expression is generated for the type its context needs, so the Programs are well typed by
//! construction, and the validator filters the rest (e.g. literal ranges, divergence).

use proptest::prelude::*;

use vyrescope::diagnostics::Severity;
use vyrescope::inputs::prepare;
use vyrescope::interp::{run_with, Options};
use vyrescope::ir::{
    Access, AtomicOp, Axis, BarrierScope, BinOp, BufferDecl, Builtin, ElemType, Expr, Fill,
    InputSource, InputSpec, Literal, Program, ReduceOp, RunSpec, Scalar, ScalarType as T, Stmt,
    StmtKind, UnOp,
};

/// SplitMix64 driving the generator.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a, X>(&mut self, xs: &'a [X]) -> &'a X {
        &xs[self.below(xs.len())]
    }
}

const VALUE_TYPES: [T; 7] = [T::Bool, T::U32, T::I32, T::U64, T::I64, T::F32, T::F64];

fn var(t: T) -> String {
    format!("v_{}", t.name())
}

fn lit(g: &mut Gen, t: T) -> Expr {
    let r = g.next();
    let s = match t {
        T::Bool => Scalar::Bool(r & 1 == 1),
        T::U32 => Scalar::U32(*g.pick(&[0, 1, 2, 7, 31, 32, 33, u32::MAX, r as u32])),
        T::I32 => Scalar::I32(*g.pick(&[0, 1, -1, 5, i32::MIN, i32::MAX, r as i32])),
        T::U64 => Scalar::U64(*g.pick(&[0, 1, 63, 64, u64::MAX, r])),
        T::I64 => Scalar::I64(*g.pick(&[0, -1, i64::MIN, i64::MAX, r as i64])),
        T::F32 => Scalar::F32(*g.pick(&[
            0.0,
            -0.0,
            1.0,
            -1.5,
            f32::INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            1e30,
            (r as u32 as f32) / 1e6,
        ])),
        T::F64 => Scalar::F64(*g.pick(&[0.0, -0.0, 2.5, f64::NEG_INFINITY, f64::NAN, 1e300])),
    };
    Expr::Lit(Literal::Typed(s))
}

fn u32_expr(g: &mut Gen, depth: u32) -> Expr {
    expr(g, T::U32, depth)
}

fn leaf(g: &mut Gen, t: T) -> Expr {
    match (t, g.below(5)) {
        (_, 0) => lit(g, t),
        (T::U32, 1) => Expr::Builtin(*g.pick(&[
            Builtin::GlobalId(Axis::X),
            Builtin::LocalId(Axis::X),
            Builtin::WorkgroupId(Axis::X),
            Builtin::NumWorkgroups(Axis::X),
            Builtin::Lane,
            Builtin::SubgroupSize,
        ])),
        (T::U32, 2) => Expr::Len(g.pick(&["iu", "ou", "o8"]).to_string()),
        (T::U32 | T::I32 | T::F32, 3) => {
            let b = match t {
                T::U32 => *g.pick(&["iu", "ou", "o8", "s"]),
                T::I32 => "ii",
                _ => *g.pick(&["if", "oh", "of"]),
            };
            let index = Box::new(Expr::Binary(
                BinOp::And,
                Box::new(Expr::Builtin(Builtin::GlobalId(Axis::X))),
                Box::new(lit(g, T::U32)),
            ));
            Expr::Load {
                buffer: b.into(),
                index,
            }
        }
        _ => Expr::Var(var(t)),
    }
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}

fn expr(g: &mut Gen, t: T, depth: u32) -> Expr {
    if depth == 0 || g.below(4) == 0 {
        return leaf(g, t);
    }
    let d = depth - 1;
    let choice = g.below(10);
    if choice == 0 {
        return Expr::Select(
            bx(expr(g, T::Bool, d)),
            bx(expr(g, t, d)),
            bx(expr(g, t, d)),
        );
    }
    if choice == 1 && t != T::Bool {
        let from = *g.pick(&VALUE_TYPES);
        return Expr::Cast(t, bx(expr(g, from, d)));
    }
    if choice == 2 && t != T::Bool {
        return match g.below(2) {
            0 => Expr::Shuffle {
                value: bx(expr(g, t, d)),
                lane: bx(u32_expr(g, d)),
            },
            _ => {
                let ops: &[ReduceOp] = if t.is_float() {
                    &[ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max]
                } else {
                    &ReduceOp::ALL
                };
                Expr::SubgroupReduce(*g.pick(ops), bx(expr(g, t, d)))
            }
        };
    }
    match t {
        T::Bool => match g.below(5) {
            0 => {
                let ot = *g.pick(&VALUE_TYPES[1..]);
                let op = *g.pick(&[
                    BinOp::Eq,
                    BinOp::Ne,
                    BinOp::Lt,
                    BinOp::Le,
                    BinOp::Gt,
                    BinOp::Ge,
                ]);
                Expr::Binary(op, bx(expr(g, ot, d)), bx(expr(g, ot, d)))
            }
            1 => {
                let op = *g.pick(&[BinOp::LAnd, BinOp::LOr, BinOp::Eq, BinOp::Xor, BinOp::And]);
                Expr::Binary(op, bx(expr(g, T::Bool, d)), bx(expr(g, T::Bool, d)))
            }
            2 => Expr::Unary(UnOp::LNot, bx(expr(g, T::Bool, d))),
            3 => {
                let op = *g.pick(&[UnOp::IsNan, UnOp::IsInf, UnOp::IsFinite]);
                let ft = *g.pick(&[T::F32, T::F64]);
                Expr::Unary(op, bx(expr(g, ft, d)))
            }
            _ => {
                let from = *g.pick(&VALUE_TYPES);
                Expr::Cast(T::Bool, bx(expr(g, from, d)))
            }
        },
        T::U32 | T::I32 | T::U64 | T::I64 => match g.below(6) {
            0 | 1 => {
                let op = *g.pick(&[
                    BinOp::Add,
                    BinOp::Sub,
                    BinOp::Mul,
                    BinOp::Div,
                    BinOp::Rem,
                    BinOp::Min,
                    BinOp::Max,
                    BinOp::AbsDiff,
                    BinOp::MulHi,
                    BinOp::And,
                    BinOp::Or,
                    BinOp::Xor,
                ]);
                Expr::Binary(op, bx(expr(g, t, d)), bx(expr(g, t, d)))
            }
            2 => {
                let op = *g.pick(&[BinOp::Shl, BinOp::Shr, BinOp::Rotl, BinOp::Rotr]);
                Expr::Binary(op, bx(expr(g, t, d)), bx(u32_expr(g, d)))
            }
            3 => {
                let op = *g.pick(&[
                    UnOp::Neg,
                    UnOp::Not,
                    UnOp::Popcount,
                    UnOp::Clz,
                    UnOp::Ctz,
                    UnOp::Brev,
                    UnOp::Abs,
                    UnOp::Sign,
                ]);
                Expr::Unary(op, bx(expr(g, t, d)))
            }
            4 if t == T::U32 => match g.below(2) {
                0 => Expr::Ballot(bx(expr(g, T::Bool, d))),
                _ => {
                    let op = *g.pick(&AtomicOp::ALL);
                    Expr::Atomic {
                        op,
                        buffer: "ou".into(),
                        index: bx(u32_expr(g, d)),
                        value: bx(u32_expr(g, d)),
                        expected: (op == AtomicOp::Cas).then(|| bx(u32_expr(g, d))),
                    }
                }
            },
            4 if t == T::I32 => Expr::Bitcast(T::I32, bx(expr(g, T::F32, d))),
            _ => Expr::Binary(BinOp::Add, bx(expr(g, t, d)), bx(lit(g, t))),
        },
        T::F32 | T::F64 => match g.below(5) {
            0 | 1 => {
                let op = *g.pick(&[
                    BinOp::Add,
                    BinOp::Sub,
                    BinOp::Mul,
                    BinOp::Div,
                    BinOp::Min,
                    BinOp::Max,
                    BinOp::AbsDiff,
                ]);
                Expr::Binary(op, bx(expr(g, t, d)), bx(expr(g, t, d)))
            }
            2 => {
                let op = *g.pick(&[
                    UnOp::Neg,
                    UnOp::Abs,
                    UnOp::Sign,
                    UnOp::Sqrt,
                    UnOp::Rsqrt,
                    UnOp::Rcp,
                    UnOp::Exp,
                    UnOp::Exp2,
                    UnOp::Log,
                    UnOp::Log2,
                    UnOp::Sin,
                    UnOp::Cos,
                    UnOp::Tan,
                    UnOp::Tanh,
                    UnOp::Floor,
                    UnOp::Ceil,
                    UnOp::Round,
                    UnOp::Trunc,
                ]);
                Expr::Unary(op, bx(expr(g, t, d)))
            }
            3 => Expr::Fma(bx(expr(g, t, d)), bx(expr(g, t, d)), bx(expr(g, t, d))),
            _ if t == T::F32 => Expr::Bitcast(T::F32, bx(u32_expr(g, d))),
            _ => Expr::Bitcast(T::F64, bx(expr(g, T::U64, d))),
        },
    }
}

fn stmt(g: &mut Gen, id: String, depth: u32, top: bool) -> Stmt {
    let kind = match g.below(if depth == 0 { 3 } else { 8 }) {
        0 | 1 => {
            let t = *g.pick(&VALUE_TYPES);
            StmtKind::Assign {
                name: var(t),
                value: expr(g, t, 3),
            }
        }
        2 => {
            let (b, t) = *g.pick(&[
                ("ou", T::U32),
                ("of", T::F32),
                ("o8", T::U32),
                ("oh", T::F32),
                ("ob", T::Bool),
                ("o64", T::U64),
                ("od", T::F64),
                ("oi", T::I32),
                ("s", T::U32),
            ]);
            let index = if g.below(3) == 0 {
                u32_expr(g, 2)
            } else {
                Expr::Builtin(Builtin::GlobalId(Axis::X))
            };
            StmtKind::Store {
                buffer: b.into(),
                index,
                value: expr(g, t, 3),
            }
        }
        3 | 4 => StmtKind::If {
            cond: expr(g, T::Bool, 2),
            then: list(g, &format!("{id}.then"), depth - 1, false),
            otherwise: list(g, &format!("{id}.else"), depth - 1, false),
            has_else: true,
        },
        5 => StmtKind::Loop {
            var: format!("k{depth}_{}", g.below(1000)),
            from: u32_expr(g, 1),
            to: Expr::Binary(BinOp::And, bx(u32_expr(g, 2)), bx(lit(g, T::U32))),
            body: list(g, &format!("{id}.body"), depth - 1, false),
        },
        6 if top => StmtKind::Barrier(BarrierScope::Workgroup),
        6 => StmtKind::Return,
        _ => StmtKind::Block(list(g, &format!("{id}.block"), depth - 1, false)),
    };
    Stmt { id, kind }
}

fn list(g: &mut Gen, path: &str, depth: u32, top: bool) -> Vec<Stmt> {
    let n = 1 + g.below(4);
    (0..n)
        .map(|i| stmt(g, format!("{path}[{i}]"), depth, top))
        .collect()
}

fn random_program(seed: u64) -> Program {
    let g = &mut Gen(seed);
    let buf = |name: &str, binding: Option<u32>, access: Access, elem: ElemType| BufferDecl {
        name: name.into(),
        binding,
        access,
        elem,
        count: if access == Access::Workgroup {
            Some(64)
        } else {
            None
        },
    };
    let buffers = vec![
        buf("iu", Some(0), Access::Read, ElemType::U32),
        buf("if", Some(1), Access::Read, ElemType::F32),
        buf("ii", Some(2), Access::Read, ElemType::I32),
        buf("ou", Some(3), Access::ReadWrite, ElemType::U32),
        buf("of", Some(4), Access::ReadWrite, ElemType::F32),
        buf("o8", Some(5), Access::ReadWrite, ElemType::U8),
        buf("oh", Some(6), Access::ReadWrite, ElemType::F16),
        buf("ob", Some(7), Access::Write, ElemType::Bool),
        buf("o64", Some(8), Access::ReadWrite, ElemType::U64),
        buf("od", Some(9), Access::ReadWrite, ElemType::F64),
        buf("oi", Some(10), Access::ReadWrite, ElemType::I32),
        buf("s", None, Access::Workgroup, ElemType::U32),
    ];
    let gid = || Expr::Builtin(Builtin::GlobalId(Axis::X));
    let mut body: Vec<Stmt> = [
        (T::U32, gid()),
        (T::I32, Expr::Cast(T::I32, bx(gid()))),
        (T::U64, Expr::Cast(T::U64, bx(gid()))),
        (T::I64, Expr::Cast(T::I64, bx(gid()))),
        (
            T::F32,
            Expr::Load {
                buffer: "if".into(),
                index: bx(gid()),
            },
        ),
        (T::F64, Expr::Lit(Literal::Typed(Scalar::F64(0.5)))),
        (
            T::Bool,
            Expr::Binary(
                BinOp::Lt,
                bx(gid()),
                bx(Expr::Lit(Literal::Typed(Scalar::U32(50)))),
            ),
        ),
    ]
    .into_iter()
    .enumerate()
    .map(|(i, (t, value))| Stmt {
        id: format!("body[{i}]"),
        kind: StmtKind::Let {
            name: var(t),
            value,
        },
    })
    .collect();
    let rest = list(g, "body", 3, true);
    let base = body.len();
    body.extend(
        rest.into_iter()
            .enumerate()
            .map(|(i, s)| renumber(s, &format!("body[{}]", base + i))),
    );
    let wg = *g.pick(&[
        [1, 1, 1],
        [7, 1, 1],
        [32, 1, 1],
        [48, 1, 1],
        [64, 1, 1],
        [8, 2, 2],
    ]);
    let input = |n: &str, source| (n.to_string(), InputSpec { len: None, source });
    Program {
        name: "prop".into(),
        doc: None,
        workgroup_size: wg,
        buffers,
        body,
        run: Some(RunSpec {
            grid: Some([1 + g.below(4) as u32, 1, 1]),
            elements: Some(100),
            inputs: vec![
                input(
                    "iu",
                    InputSource::Fill(Fill::Random {
                        seed: 1,
                        range: None,
                    }),
                ),
                input(
                    "if",
                    InputSource::Fill(Fill::Random {
                        seed: 2,
                        range: Some((-4.0, 4.0)),
                    }),
                ),
                input("ii", InputSource::Fill(Fill::Iota)),
                input("oh", InputSource::Fill(Fill::Ones)),
            ],
        }),
    }
}

/// Rewrites the node ids of `s` (generated under a provisional path) to live under `path`.
fn renumber(s: Stmt, path: &str) -> Stmt {
    let old = s.id.clone();
    fn walk(s: Stmt, old: &str, new: &str) -> Stmt {
        let id = format!("{new}{}", &s.id[old.len().min(s.id.len())..]);
        let kind = match s.kind {
            StmtKind::If {
                cond,
                then,
                otherwise,
                has_else,
            } => StmtKind::If {
                cond,
                then: then.into_iter().map(|x| walk(x, old, new)).collect(),
                otherwise: otherwise.into_iter().map(|x| walk(x, old, new)).collect(),
                has_else,
            },
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => StmtKind::Loop {
                var,
                from,
                to,
                body: body.into_iter().map(|x| walk(x, old, new)).collect(),
            },
            StmtKind::Block(b) => {
                StmtKind::Block(b.into_iter().map(|x| walk(x, old, new)).collect())
            }
            k => k,
        };
        Stmt { id, kind }
    }
    walk(s, &old, path)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_programs_never_panic_the_interpreter(seed in any::<u64>()) {
        let program = random_program(seed);
        let errors = vyrescope::validate::validate(&program)
            .into_iter()
            .filter(|d| d.severity == Severity::Error)
            .count();
        prop_assume!(errors == 0);
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
