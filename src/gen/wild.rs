//! The wild generator: anything the model can hold, mostly invalid.

use super::{bx, st, Rng, VALUE_TYPES};
use crate::ir::parse::assign_ids;
use crate::ir::*;

const NAMES: [&str; 8] = ["i", "x", "y", "acc", "k", "2bad", "", "out"];
const BUF_NAMES: [&str; 6] = ["a", "b", "out", "tile", "x", "b@d"];

pub(super) fn wild_expr(r: &mut Rng, depth: usize) -> Expr {
    let leaf = depth == 0 || r.chance(1, 3);
    if leaf {
        return match r.below(7) {
            0 => Expr::Lit(Literal::Int(match r.below(4) {
                0 => r.next_u64() as i128,
                1 => -(r.next_u64() as i128),
                2 => i128::MAX,
                _ => r.below(10) as i128,
            })),
            1 => Expr::Lit(Literal::Float(FloatLit::exact(f64::from_bits(
                r.next_u64(),
            )))),
            2 => Expr::Lit(Literal::Typed(Scalar::from_bits(
                r.pick(&VALUE_TYPES),
                r.next_u64(),
            ))),
            3 => Expr::Var(r.pick(&NAMES).to_string()),
            4 => Expr::Len(r.pick(&BUF_NAMES).to_string()),
            _ => Expr::Builtin(r.pick(&[
                Builtin::GlobalId(Axis::X),
                Builtin::LocalId(Axis::Y),
                Builtin::WorkgroupId(Axis::Z),
                Builtin::NumWorkgroups(Axis::X),
                Builtin::Lane,
                Builtin::SubgroupSize,
            ])),
        };
    }
    let d = depth - 1;
    let k = r.below(12);
    let (op2, op1) = (r.pick(&BinOp::ALL), r.pick(&UnOp::ALL));
    let (t, atomic, reduce) = (
        r.pick(&VALUE_TYPES),
        r.pick(&AtomicOp::ALL),
        r.pick(&ReduceOp::ALL),
    );
    let (buffer, with_expected) = (r.pick(&BUF_NAMES).to_string(), r.chance(1, 2));
    let mut e = || bx(wild_expr(r, d));
    match k {
        0 => Expr::Binary(op2, e(), e()),
        1 => Expr::Unary(op1, e()),
        2 => Expr::Select(e(), e(), e()),
        3 => Expr::Cast(t, e()),
        4 => Expr::Bitcast(t, e()),
        5 => Expr::Fma(e(), e(), e()),
        6 => {
            let (index, value) = (e(), e());
            let expected = if with_expected { Some(e()) } else { None };
            Expr::Atomic {
                op: atomic,
                buffer,
                index,
                value,
                expected,
                order: r.pick(&AtomicOrder::ALL),
            }
        }
        7 => Expr::Shuffle {
            value: e(),
            lane: e(),
        },
        8 => Expr::SubgroupReduce(reduce, e()),
        9 => Expr::Ballot(e()),
        10 => Expr::Load { buffer, index: e() },
        _ => Expr::Binary(BinOp::Add, e(), e()),
    }
}

fn wild_stmts(r: &mut Rng, depth: usize, n: usize) -> Vec<Stmt> {
    (0..n)
        .map(|_| {
            let ed = r.below(5);
            let kind = match r.below(9) {
                0 => StmtKind::Let {
                    name: r.pick(&NAMES).into(),
                    value: wild_expr(r, ed),
                },
                1 => StmtKind::Assign {
                    name: r.pick(&NAMES).into(),
                    value: wild_expr(r, ed),
                },
                2 => StmtKind::Store {
                    buffer: r.pick(&BUF_NAMES).into(),
                    index: wild_expr(r, ed),
                    value: wild_expr(r, ed),
                },
                3 if depth > 0 => {
                    let has_else = r.chance(1, 2);
                    StmtKind::If {
                        cond: wild_expr(r, ed),
                        then: {
                            let n = r.below(4);
                            wild_stmts(r, depth - 1, n)
                        },
                        otherwise: if has_else {
                            {
                                let n = r.below(3);
                                wild_stmts(r, depth - 1, n)
                            }
                        } else {
                            Vec::new()
                        },
                        has_else,
                    }
                }
                4 if depth > 0 => StmtKind::Loop {
                    var: r.pick(&NAMES).into(),
                    from: wild_expr(r, ed),
                    to: wild_expr(r, ed),
                    body: {
                        let n = r.below(4);
                        wild_stmts(r, depth - 1, n)
                    },
                },
                5 if depth > 0 => StmtKind::Block({
                    let n = r.below(4);
                    wild_stmts(r, depth - 1, n)
                }),
                6 => StmtKind::Barrier(if r.chance(1, 2) {
                    BarrierScope::Workgroup
                } else if r.chance(1, 3) {
                    // Good and bad sub-task sizes alike: 0, not a warp multiple, too many.
                    BarrierScope::Subtask {
                        threads: r.pick(&[0, 32, 48, 64, 256, 4096]),
                    }
                } else {
                    BarrierScope::Grid
                }),
                7 => StmtKind::Return,
                _ => StmtKind::Let {
                    name: format!("w{}", r.below(5)),
                    value: wild_expr(r, ed),
                },
            };
            st(kind)
        })
        .collect()
}

/// Anything the model can hold: random buffers, names, statements and expressions.
pub fn wild_program(seed: u64) -> Program {
    wild_program_with(Rng::new(seed))
}

/// [`wild_program`] drawing from `r` (e.g. [`Rng::from_bytes`]).
pub fn wild_program_with(mut r: Rng) -> Program {
    let accesses = [
        Access::Read,
        Access::ReadWrite,
        Access::Write,
        Access::Uniform,
        Access::Workgroup,
    ];
    let nb = r.below(6);
    let buffers = (0..nb)
        .map(|_| BufferDecl {
            name: r.pick(&BUF_NAMES).into(),
            binding: if r.chance(3, 4) {
                Some(r.below(4) as u32)
            } else {
                None
            },
            access: r.pick(&accesses),
            elem: r.pick(&ElemType::ALL),
            count: if r.chance(1, 2) {
                Some(r.next_u64() as u32 >> r.below(32))
            } else {
                None
            },
        })
        .collect();
    let depth = r.below(5);
    let n = r.below(8);
    let mut body = wild_stmts(&mut r, depth, n);
    assign_ids(&mut body, "body");
    Program {
        name: r.pick(&["k", "bad name", "", "_ok"]).into(),
        doc: None,
        workgroup_size: [
            r.pick(&[0, 1, 64, 1024, 5000]),
            r.pick(&[1, 2, 0]),
            r.pick(&[1, 65]),
        ],
        buffers,
        body,
        run: None,
    }
}
