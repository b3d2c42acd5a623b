//! A small affine analysis of index expressions: how an index changes from one thread to the
//! next along x, which is what decides coalescing (global memory) and bank conflicts (shared
//! memory).
//!
//! An index is described as `gx * gid.x + lx * lid.x + u`, where `u` is uniform across the
//! threads of a warp (literals, `wgid`, `nwg`, `len`, loop counters with uniform bounds, and,
//! when a warp lies inside one row of the workgroup, the y/z ids). Consecutive threads of a
//! warp differ by `gx + lx` elements. Anything else (a loaded value, a product of two
//! thread-varying terms, a shuffle) makes the index [`Index::Varying`].

use std::collections::HashMap;

use crate::ir::{Axis, BinOp, Builtin, Expr, Literal, Program, Scalar, Stmt, StmtKind, UnOp};

/// What an index expression is, seen from the threads of one warp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// `gx * gid.x + lx * lid.x + u`; `constant` is `u` when it is a known integer.
    Affine {
        /// Coefficient of `gid.x`.
        gx: i64,
        /// Coefficient of `lid.x`.
        lx: i64,
        /// The uniform part when it is a compile-time constant.
        constant: Option<i64>,
    },
    /// Thread-varying in a way this analysis does not follow (e.g. data dependent).
    Varying,
}

impl Index {
    fn uniform(c: Option<i64>) -> Index {
        Index::Affine {
            gx: 0,
            lx: 0,
            constant: c,
        }
    }

    /// Elements between the indices of two consecutive threads of a warp, if affine.
    pub fn stride(&self) -> Option<i64> {
        match *self {
            Index::Affine { gx, lx, .. } => Some(gx + lx),
            Index::Varying => None,
        }
    }

    fn add(self, o: Index, sign: i64) -> Index {
        match (self, o) {
            (
                Index::Affine {
                    gx: a,
                    lx: b,
                    constant: c,
                },
                Index::Affine {
                    gx: d,
                    lx: e,
                    constant: f,
                },
            ) => Index::Affine {
                gx: a.wrapping_add(sign.wrapping_mul(d)),
                lx: b.wrapping_add(sign.wrapping_mul(e)),
                constant: c.zip(f).map(|(c, f)| c.wrapping_add(sign.wrapping_mul(f))),
            },
            _ => Index::Varying,
        }
    }

    fn scale(self, k: i64) -> Index {
        match self {
            Index::Affine { gx, lx, constant } => Index::Affine {
                gx: gx.wrapping_mul(k),
                lx: lx.wrapping_mul(k),
                constant: constant.map(|c| c.wrapping_mul(k)),
            },
            Index::Varying => Index::Varying,
        }
    }

    fn is_uniform(&self) -> bool {
        matches!(self, Index::Affine { gx: 0, lx: 0, .. })
    }

    fn constant(&self) -> Option<i64> {
        match *self {
            Index::Affine {
                gx: 0,
                lx: 0,
                constant,
            } => constant,
            _ => None,
        }
    }
}

/// One buffer access found in the Program.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    /// Statement node id.
    pub node: String,
    /// Buffer name.
    pub buffer: String,
    /// True for a store or atomic.
    pub write: bool,
    /// The index.
    pub index: Index,
}

/// Every load, store and atomic of `program` with its index analysed, in program order.
/// `workgroup` decides whether y/z ids are uniform within a warp (`workgroup[0]` a multiple
/// of 32).
pub fn accesses(program: &Program, workgroup: [u32; 3]) -> Vec<Access> {
    let mut w = Walker {
        env: vec![HashMap::new()],
        out: Vec::new(),
        rows_whole_warps: workgroup[0].is_multiple_of(32),
        assigned: HashMap::new(),
    };
    collect_assigned(&program.body, &mut w.assigned);
    w.list(&program.body);
    w.out
}

/// Variables written by `assign` anywhere (their value depends on control flow).
fn collect_assigned(list: &[Stmt], out: &mut HashMap<String, ()>) {
    for s in list {
        match &s.kind {
            StmtKind::Assign { name, .. } => {
                out.insert(name.clone(), ());
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_assigned(then, out);
                collect_assigned(otherwise, out);
            }
            StmtKind::Loop { body, .. } => collect_assigned(body, out),
            StmtKind::Block(b) => collect_assigned(b, out),
            _ => {}
        }
    }
}

struct Walker {
    env: Vec<HashMap<String, Index>>,
    out: Vec<Access>,
    rows_whole_warps: bool,
    assigned: HashMap<String, ()>,
}

impl Walker {
    fn lookup(&self, name: &str) -> Index {
        for scope in self.env.iter().rev() {
            if let Some(i) = scope.get(name) {
                return *i;
            }
        }
        Index::Varying
    }

    fn bind(&mut self, name: &str, v: Index) {
        // An assigned variable may hold any of its values: keep it only when uniform.
        let v = if self.assigned.contains_key(name) && !v.is_uniform() {
            Index::Varying
        } else if self.assigned.contains_key(name) {
            Index::uniform(None)
        } else {
            v
        };
        if let Some(scope) = self.env.last_mut() {
            scope.insert(name.to_string(), v);
        }
    }

    fn list(&mut self, list: &[Stmt]) {
        self.env.push(HashMap::new());
        for s in list {
            self.stmt(s);
        }
        self.env.pop();
    }

    fn stmt(&mut self, s: &Stmt) {
        match &s.kind {
            StmtKind::Let { name, value } => {
                self.scan(&s.id, value);
                let v = self.eval(value);
                self.bind(name, v);
            }
            StmtKind::Assign { name, value } => {
                self.scan(&s.id, value);
                let v = self.eval(value);
                // A uniform reassignment keeps the variable uniform; otherwise it varies.
                if !v.is_uniform() {
                    for scope in self.env.iter_mut().rev() {
                        if let Some(slot) = scope.get_mut(name) {
                            *slot = Index::Varying;
                            break;
                        }
                    }
                }
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                self.scan(&s.id, index);
                self.scan(&s.id, value);
                let i = self.eval(index);
                self.out.push(Access {
                    node: s.id.clone(),
                    buffer: buffer.clone(),
                    write: true,
                    index: i,
                });
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                self.scan(&s.id, cond);
                self.list(then);
                self.list(otherwise);
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                self.scan(&s.id, from);
                self.scan(&s.id, to);
                let uniform = self.eval(from).is_uniform() && self.eval(to).is_uniform();
                self.env.push(HashMap::new());
                let v = if uniform {
                    Index::uniform(None)
                } else {
                    Index::Varying
                };
                if let Some(scope) = self.env.last_mut() {
                    scope.insert(var.clone(), v);
                }
                self.list(body);
                self.env.pop();
            }
            StmtKind::Block(b) => self.list(b),
            StmtKind::Barrier(_) | StmtKind::Return => {}
        }
    }

    /// Records the loads and atomics inside `e`.
    fn scan(&mut self, node: &str, e: &Expr) {
        let mut found = Vec::new();
        e.visit(&mut |x| match x {
            Expr::Load { buffer, index } => found.push((buffer.clone(), (**index).clone(), false)),
            Expr::Atomic { buffer, index, .. } => {
                found.push((buffer.clone(), (**index).clone(), true))
            }
            _ => {}
        });
        for (buffer, index, write) in found {
            let i = self.eval(&index);
            self.out.push(Access {
                node: node.to_string(),
                buffer,
                write,
                index: i,
            });
        }
    }

    fn eval(&self, e: &Expr) -> Index {
        match e {
            Expr::Lit(l) => Index::uniform(lit_int(l)),
            Expr::Var(v) => self.lookup(v),
            Expr::Builtin(b) => match b {
                Builtin::GlobalId(Axis::X) => Index::Affine {
                    gx: 1,
                    lx: 0,
                    constant: None,
                },
                Builtin::LocalId(Axis::X) => Index::Affine {
                    gx: 0,
                    lx: 1,
                    constant: None,
                },
                Builtin::GlobalId(_) | Builtin::LocalId(_) => {
                    if self.rows_whole_warps {
                        Index::uniform(None)
                    } else {
                        Index::Varying
                    }
                }
                Builtin::WorkgroupId(_) | Builtin::NumWorkgroups(_) => Index::uniform(None),
                Builtin::SubgroupSize => Index::uniform(Some(32)),
                // lane = lid.x mod 32 when warps lie in rows: stride 1 between threads.
                Builtin::Lane => {
                    if self.rows_whole_warps {
                        Index::Affine {
                            gx: 0,
                            lx: 1,
                            constant: None,
                        }
                    } else {
                        Index::Varying
                    }
                }
            },
            Expr::Len(_) => Index::uniform(None),
            Expr::Binary(op, a, b) => {
                let (x, y) = (self.eval(a), self.eval(b));
                match op {
                    BinOp::Add => x.add(y, 1),
                    BinOp::Sub => x.add(y, -1),
                    BinOp::Mul => match (x.constant(), y.constant()) {
                        (Some(k), _) => y.scale(k),
                        (_, Some(k)) => x.scale(k),
                        _ if x.is_uniform() && y.is_uniform() => Index::uniform(None),
                        _ => Index::Varying,
                    },
                    BinOp::Shl => match y.constant() {
                        Some(k) if (0..32).contains(&k) => x.scale(1i64 << k),
                        _ if x.is_uniform() && y.is_uniform() => Index::uniform(None),
                        _ => Index::Varying,
                    },
                    _ if x.is_uniform() && y.is_uniform() => {
                        let c = x
                            .constant()
                            .zip(y.constant())
                            .and_then(|(p, q)| fold(*op, p, q));
                        Index::uniform(c)
                    }
                    _ => Index::Varying,
                }
            }
            Expr::Cast(_, a) | Expr::Bitcast(_, a) => self.eval(a),
            Expr::Unary(op, a) => {
                let x = self.eval(a);
                match op {
                    UnOp::Neg => x.scale(-1),
                    _ if x.is_uniform() => Index::uniform(None),
                    _ => Index::Varying,
                }
            }
            Expr::Select(c, a, b) => {
                let (c, a, b) = (self.eval(c), self.eval(a), self.eval(b));
                if c.is_uniform() && a == b {
                    a
                } else if c.is_uniform() && a.is_uniform() && b.is_uniform() {
                    Index::uniform(None)
                } else {
                    Index::Varying
                }
            }
            Expr::Fma(a, b, c) => {
                let prod = Expr::Binary(BinOp::Mul, a.clone(), b.clone());
                self.eval(&prod).add(self.eval(c), 1)
            }
            Expr::SubgroupReduce(..) => Index::uniform(None),
            Expr::Ballot(_) => Index::uniform(None),
            // Every thread reading the same element gets the same value.
            Expr::Load { index, .. } if self.eval(index).is_uniform() => Index::uniform(None),
            Expr::Load { .. } | Expr::Atomic { .. } | Expr::Shuffle { .. } => Index::Varying,
        }
    }
}

fn lit_int(l: &Literal) -> Option<i64> {
    match l {
        Literal::Int(v) => i64::try_from(*v).ok(),
        Literal::Typed(s) => match s {
            Scalar::U32(v) => Some(i64::from(*v)),
            Scalar::I32(v) => Some(i64::from(*v)),
            Scalar::U64(v) => i64::try_from(*v).ok(),
            Scalar::I64(v) => Some(*v),
            _ => None,
        },
        Literal::Float(_) => None,
    }
}

fn fold(op: BinOp, a: i64, b: i64) -> Option<i64> {
    match op {
        BinOp::Div if b != 0 => Some(a / b),
        BinOp::Rem if b != 0 => Some(a % b),
        BinOp::Min => Some(a.min(b)),
        BinOp::Max => Some(a.max(b)),
        BinOp::And => Some(a & b),
        BinOp::Or => Some(a | b),
        BinOp::Xor => Some(a ^ b),
        BinOp::Shr if (0..63).contains(&b) => Some(a >> b),
        _ => None,
    }
}
