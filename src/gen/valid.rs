//! The valid generator: well-typed Programs built rule by rule.

use super::{bx, st, Config, Rng, VALUE_TYPES};
use crate::ir::parse::assign_ids;
use crate::ir::*;

const NUM_TYPES: [ScalarType; 6] = [
    ScalarType::U32,
    ScalarType::I32,
    ScalarType::U64,
    ScalarType::I64,
    ScalarType::F32,
    ScalarType::F64,
];

fn buf(
    name: &str,
    binding: Option<u32>,
    access: Access,
    elem: ElemType,
    count: Option<u32>,
) -> BufferDecl {
    BufferDecl {
        name: name.into(),
        binding,
        access,
        elem,
        count,
    }
}

/// The buffer table every valid Program uses: one read-write buffer per element type, a few
/// read-only ones, a write-only, a uniform and a workgroup buffer.
pub fn standard_buffers() -> Vec<BufferDecl> {
    let mut v = Vec::new();
    let mut b = 0u32;
    for e in ElemType::ALL {
        v.push(buf(
            &format!("out_{}", e.name()),
            Some(b),
            Access::ReadWrite,
            e,
            None,
        ));
        b += 1;
    }
    for e in [
        ElemType::F32,
        ElemType::U32,
        ElemType::I64,
        ElemType::F16,
        ElemType::I8,
    ] {
        v.push(buf(
            &format!("in_{}", e.name()),
            Some(b),
            Access::Read,
            e,
            None,
        ));
        b += 1;
    }
    v.push(buf("w_bool", Some(b), Access::Write, ElemType::Bool, None));
    b += 1;
    v.push(buf("params", Some(b), Access::Uniform, ElemType::U32, None));
    v.push(buf(
        "tile",
        None,
        Access::Workgroup,
        ElemType::U32,
        Some(64),
    ));
    v
}

#[derive(Clone)]
struct VarInfo {
    name: String,
    ty: ScalarType,
    counter: bool,
}

struct ValidGen<'c> {
    rng: Rng,
    cfg: &'c Config,
    buffers: Vec<BufferDecl>,
    /// Visible variables; `frames` holds the length of `vars` at each block entry.
    vars: Vec<VarInfo>,
    frames: Vec<usize>,
    next_name: usize,
    /// A `return` was emitted under control flow: no barrier may follow.
    returned: bool,
    /// The Program's workgroup size (sub-task barriers must divide it).
    wg: [u32; 3],
    /// The size of the Program's sub-task barriers once one was drawn: one size per Program,
    /// as V074 requires between workgroup barriers.
    subtask: Option<u32>,
}

/// A well-typed Program the validator must accept.
pub fn valid_program(seed: u64, cfg: &Config) -> Program {
    valid_program_with(Rng::new(seed), cfg, format!("gen_{}", seed % 100_000))
}

/// [`valid_program`] drawing from `rng` (e.g. [`Rng::from_bytes`]), named `name`.
pub fn valid_program_with(rng: Rng, cfg: &Config, name: String) -> Program {
    let mut g = ValidGen {
        rng,
        cfg,
        buffers: standard_buffers(),
        vars: Vec::new(),
        frames: Vec::new(),
        next_name: 0,
        returned: false,
        wg: [1, 1, 1],
        subtask: None,
    };
    let wg = g.rng.pick(&cfg.workgroups);
    g.wg = wg;
    let mut body = vec![Stmt {
        id: Default::default(),
        kind: StmtKind::Let {
            name: "i".into(),
            value: Expr::Builtin(Builtin::GlobalId(Axis::X)),
        },
    }];
    g.vars.push(VarInfo {
        name: "i".into(),
        ty: ScalarType::U32,
        // Race-free Programs never reassign `i`: it is what keeps threads' elements apart.
        counter: cfg.race_free,
    });
    if cfg.race_free && cfg.workgroup_memory {
        // Shared memory starts undefined on the GPU (the interpreter zeroes it): each thread
        // writes its own element of every workgroup buffer before anything can read it.
        for b in g.buffers.clone() {
            if b.access == Access::Workgroup {
                let value = g.typed_lit(b.elem.value_type());
                body.push(st(StmtKind::Store {
                    buffer: b.name,
                    index: Expr::Var("i".into()),
                    value,
                }));
            }
        }
    }
    if cfg.prologue {
        for ty in VALUE_TYPES {
            let name = format!("p_{}", ty.name());
            let value = g.expr(ty, 0);
            g.vars.push(VarInfo {
                name: name.clone(),
                ty,
                counter: false,
            });
            body.push(st(StmtKind::Let { name, value }));
        }
    }
    let n = 1 + g.rng.below(cfg.max_stmts);
    for _ in 0..n {
        let s = g.stmt(1, true);
        body.push(s);
    }
    assign_ids(&mut body, "body");
    let run = cfg.run.then(|| run_spec(&mut g.rng, &g.buffers));
    Program {
        name,
        doc: None,
        workgroup_size: wg,
        buffers: g.buffers.clone(),
        body,
        run,
    }
}

/// A `run` section: 1 to 4 workgroups over 100 elements (so some threads are past the end),
/// each read-only and uniform buffer filled with random values (floats sometimes in a
/// range), `0, 1, 2, ...` or ones; the rest start zeroed.
fn run_spec(rng: &mut Rng, buffers: &[BufferDecl]) -> RunSpec {
    let inputs = buffers
        .iter()
        .filter(|b| matches!(b.access, Access::Read | Access::Uniform))
        .map(|b| {
            let fill = match rng.below(3) {
                0 => Fill::Random {
                    seed: rng.next_u64(),
                    range: (b.elem.value_type().is_float() && rng.chance(1, 2))
                        .then_some((-4.0, 4.0)),
                },
                1 => Fill::Iota,
                _ => Fill::Ones,
            };
            let spec = InputSpec {
                len: None,
                source: InputSource::Fill(fill),
            };
            (b.name.clone(), spec)
        })
        .collect();
    RunSpec {
        grid: Some([1 + rng.below(4) as u32, 1, 1]),
        elements: Some(100),
        inputs,
    }
}

impl ValidGen<'_> {
    fn fresh(&mut self) -> String {
        self.next_name += 1;
        format!("v{}", self.next_name)
    }

    fn push(&mut self) {
        self.frames.push(self.vars.len());
    }

    fn pop(&mut self) {
        let n = self.frames.pop().unwrap_or(0);
        self.vars.truncate(n);
    }

    fn block(&mut self, depth: usize) -> Vec<Stmt> {
        self.push();
        let n = self.rng.below(self.cfg.max_stmts.min(4) + 1);
        let v = (0..n).map(|_| self.stmt(depth + 1, false)).collect();
        self.pop();
        v
    }

    fn writable(&self, allow_wg: bool) -> Vec<BufferDecl> {
        self.buffers
            .iter()
            .filter(|b| b.access.is_writable() && (allow_wg || b.access.is_host()))
            .cloned()
            .collect()
    }

    fn stmt(&mut self, depth: usize, top: bool) -> Stmt {
        let nested_ok = depth < self.cfg.max_stmt_depth;
        loop {
            match self.rng.below(10) {
                0 | 1 => {
                    let name = self.fresh();
                    let (value, ty) = if self.rng.chance(1, 5) {
                        // A bare literal without context takes its default type.
                        match self.rng.below(3) {
                            0 => (
                                Expr::Lit(Literal::Int(self.rng.below(1000) as i128)),
                                ScalarType::U32,
                            ),
                            1 => (
                                Expr::Lit(Literal::Int(-(self.rng.below(1000) as i128) - 1)),
                                ScalarType::I32,
                            ),
                            _ => (
                                Expr::Lit(Literal::Float(FloatLit::exact(
                                    self.rng.below(1000) as f64 / 8.0,
                                ))),
                                ScalarType::F32,
                            ),
                        }
                    } else {
                        let ty = self.rng.pick(&VALUE_TYPES);
                        (self.expr(ty, 0), ty)
                    };
                    self.vars.push(VarInfo {
                        name: name.clone(),
                        ty,
                        counter: false,
                    });
                    return st(StmtKind::Let { name, value });
                }
                2 => {
                    let cands: Vec<VarInfo> =
                        self.vars.iter().filter(|v| !v.counter).cloned().collect();
                    if cands.is_empty() {
                        continue;
                    }
                    let v = cands[self.rng.below(cands.len())].clone();
                    let value = self.operand(v.ty, 0);
                    return st(StmtKind::Assign {
                        name: v.name,
                        value,
                    });
                }
                3 | 4 => {
                    let bufs = self.writable(self.cfg.workgroup_memory);
                    let b = bufs[self.rng.below(bufs.len())].clone();
                    let index = self.index_into(&b, 0);
                    let value = self.operand(b.elem.value_type(), 0);
                    return st(StmtKind::Store {
                        buffer: b.name,
                        index,
                        value,
                    });
                }
                5 if nested_ok => {
                    let cond = self.expr(ScalarType::Bool, 0);
                    let then = self.block(depth);
                    let has_else = self.rng.chance(1, 2);
                    let otherwise = if has_else {
                        self.block(depth)
                    } else {
                        Vec::new()
                    };
                    return st(StmtKind::If {
                        cond,
                        then,
                        otherwise,
                        has_else,
                    });
                }
                6 if nested_ok => {
                    let var = self.fresh();
                    let from = Expr::Lit(Literal::Int(self.rng.below(3) as i128));
                    let to = if self.cfg.long_loops && self.rng.chance(1, 2) {
                        // Any count up to u32::MAX: some run out of an interpreter's fuel.
                        let count = self.typed_lit(ScalarType::U32);
                        if self.rng.chance(1, 2) {
                            count
                        } else {
                            let e = self.expr(ScalarType::U32, 1);
                            Expr::Binary(BinOp::And, bx(e), bx(count))
                        }
                    } else if self.rng.chance(1, 2) {
                        Expr::Lit(Literal::Int(self.rng.below(6) as i128))
                    } else {
                        let e = self.expr(ScalarType::U32, 1);
                        Expr::Binary(BinOp::Min, bx(e), bx(Expr::Lit(Literal::Int(4))))
                    };
                    self.push();
                    self.vars.push(VarInfo {
                        name: var.clone(),
                        ty: ScalarType::U32,
                        counter: true,
                    });
                    let n = self.rng.below(3) + 1;
                    let body = (0..n).map(|_| self.stmt(depth + 1, false)).collect();
                    self.pop();
                    return st(StmtKind::Loop {
                        var,
                        from,
                        to,
                        body,
                    });
                }
                7 if nested_ok => return st(StmtKind::Block(self.block(depth))),
                8 if top && self.cfg.barriers && !self.returned => {
                    // Sub-tasks of whole warps (V073) now and then; never in race-free
                    // Programs, whose shared-memory order relies on whole-workgroup barriers.
                    let [x, y, z] = self.wg;
                    let sizes: Vec<u32> = [32, 64, 128]
                        .into_iter()
                        .filter(|&t| x.is_multiple_of(t) && x / t <= 15 && y == 1 && z == 1)
                        .collect();
                    if !self.cfg.race_free && !sizes.is_empty() && self.rng.chance(1, 3) {
                        // Drawn every time so that the random stream (and every other
                        // seed's Program) stays as it was before sizes were kept.
                        let drawn = self.rng.pick(&sizes);
                        let threads = *self.subtask.get_or_insert(drawn);
                        return st(StmtKind::Barrier(BarrierScope::Subtask { threads }));
                    }
                    return st(StmtKind::Barrier(BarrierScope::Workgroup));
                }
                9 if !top && self.rng.chance(3, 4) => {
                    self.returned = true;
                    return st(StmtKind::Return);
                }
                _ => {}
            }
        }
    }

    /// An index: often the thread's own element `i` (in bounds for the threads below the
    /// length) or `i & LIT`, else any `u32` expression or a bare literal (mostly out of
    /// bounds).
    /// An index into `b`: with [`Config::race_free`], a buffer other threads may write is
    /// indexed only by the thread's own `i`, so no element is shared between threads.
    fn index_into(&mut self, b: &BufferDecl, depth: usize) -> Expr {
        if self.cfg.race_free && b.access.is_writable() {
            return Expr::Var("i".into());
        }
        self.index(depth)
    }

    fn index(&mut self, depth: usize) -> Expr {
        let own = || Expr::Var("i".into());
        match self.rng.below(4) {
            0 => own(),
            1 => Expr::Binary(BinOp::And, bx(own()), bx(self.typed_lit(ScalarType::U32))),
            _ => self.operand(ScalarType::U32, depth),
        }
    }

    /// An expression of type `ty` for a position that gives bare literals their type from
    /// context (store value, assign value, index, atomic operand, second operand).
    fn operand(&mut self, ty: ScalarType, depth: usize) -> Expr {
        if ty != ScalarType::Bool && self.rng.chance(1, 4) {
            self.bare(ty)
        } else {
            self.expr(ty, depth)
        }
    }

    fn bare(&mut self, ty: ScalarType) -> Expr {
        Expr::Lit(match ty {
            ScalarType::F32 | ScalarType::F64 => Literal::Float(FloatLit::exact(
                self.rng.pick(&[0.0, 0.5, -1.25, 3.0e4, 1.0e-3, 7.0]),
            )),
            t => {
                let v = self.int_value(t);
                Literal::Int(v)
            }
        })
    }

    fn int_value(&mut self, t: ScalarType) -> i128 {
        let (lo, hi): (i128, i128) = match t {
            ScalarType::U32 => (0, u32::MAX as i128),
            ScalarType::I32 => (i32::MIN as i128, i32::MAX as i128),
            ScalarType::U64 => (0, u64::MAX as i128),
            _ => (i64::MIN as i128, i64::MAX as i128),
        };
        match self.rng.below(7) {
            0 => lo,
            1 => hi,
            2 => 0,
            3 => 1.clamp(lo, hi),
            4 => (-1i128).clamp(lo, hi),
            // Shift and rotate amounts below, at and past the operand width.
            5 => self.rng.pick(&[7, 31, 32, 33, 63, 64]),
            _ => lo + (self.rng.next_u64() as i128 % (hi - lo + 1)),
        }
    }

    fn typed_lit(&mut self, ty: ScalarType) -> Expr {
        let s = match ty {
            ScalarType::Bool => Scalar::Bool(self.rng.chance(1, 2)),
            ScalarType::U32 => Scalar::U32(self.int_value(ty) as u32),
            ScalarType::I32 => Scalar::I32(self.int_value(ty) as i32),
            ScalarType::U64 => Scalar::U64(self.int_value(ty) as u64),
            ScalarType::I64 => Scalar::I64(self.int_value(ty) as i64),
            ScalarType::F32 => Scalar::F32(self.rng.pick(&[
                0.0,
                -0.0,
                1.5,
                -2.25,
                f32::INFINITY,
                f32::NAN,
                1.0e30,
                1.0e-40,
                f32::MIN_POSITIVE,
                f32::from_bits(1),
            ])),
            ScalarType::F64 => Scalar::F64(self.rng.pick(&[
                0.0,
                -0.0,
                1.5,
                -2.25,
                f64::NEG_INFINITY,
                f64::NAN,
                1.0e300,
                5.0e-324,
            ])),
        };
        Expr::Lit(Literal::Typed(s))
    }

    /// A self-typed expression of type `ty` (never a bare literal: its type does not depend
    /// on context, which keeps the elaborated types equal to the intended ones).
    fn expr(&mut self, ty: ScalarType, depth: usize) -> Expr {
        if depth >= self.cfg.max_expr_depth || self.rng.chance(1, 3) {
            return self.leaf(ty);
        }
        let d = depth + 1;
        match ty {
            ScalarType::Bool => match self.rng.below(6) {
                0 | 1 => {
                    let t = self.rng.pick(&VALUE_TYPES);
                    let op = if t == ScalarType::Bool {
                        self.rng.pick(&[BinOp::Eq, BinOp::Ne])
                    } else {
                        self.rng.pick(&[
                            BinOp::Eq,
                            BinOp::Ne,
                            BinOp::Lt,
                            BinOp::Le,
                            BinOp::Gt,
                            BinOp::Ge,
                        ])
                    };
                    let a = self.expr(t, d);
                    let b = self.operand(t, d);
                    self.binary_either_order(op, a, b)
                }
                2 => {
                    let op = self.rng.pick(&[
                        BinOp::LAnd,
                        BinOp::LOr,
                        BinOp::And,
                        BinOp::Or,
                        BinOp::Xor,
                    ]);
                    Expr::Binary(op, bx(self.expr(ty, d)), bx(self.expr(ty, d)))
                }
                3 => Expr::Unary(UnOp::LNot, bx(self.expr(ty, d))),
                4 => {
                    let t = self.rng.pick(&[ScalarType::F32, ScalarType::F64]);
                    let op = self.rng.pick(&[UnOp::IsNan, UnOp::IsInf, UnOp::IsFinite]);
                    Expr::Unary(op, bx(self.expr(t, d)))
                }
                _ => self.common(ty, d),
            },
            t if t.is_int() => match self.rng.below(7) {
                0 | 1 => {
                    let op = self.rng.pick(&[
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
                    let a = self.expr(t, d);
                    let b = self.operand(t, d);
                    self.binary_either_order(op, a, b)
                }
                2 => {
                    let op = self
                        .rng
                        .pick(&[BinOp::Shl, BinOp::Shr, BinOp::Rotl, BinOp::Rotr]);
                    let a = self.expr(t, d);
                    let b = self.operand(ScalarType::U32, d);
                    Expr::Binary(op, bx(a), bx(b))
                }
                3 => {
                    let op = self.rng.pick(&[
                        UnOp::Neg,
                        UnOp::Abs,
                        UnOp::Sign,
                        UnOp::Not,
                        UnOp::Popcount,
                        UnOp::Clz,
                        UnOp::Ctz,
                        UnOp::Brev,
                    ]);
                    Expr::Unary(op, bx(self.expr(t, d)))
                }
                4 if self.cfg.atomics
                    && matches!(t, ScalarType::U32 | ScalarType::I32 | ScalarType::U64) =>
                {
                    self.atomic(t, d)
                }
                5 if self.cfg.subgroup_ops && t == ScalarType::U32 => {
                    Expr::Ballot(bx(self.expr(ScalarType::Bool, d)))
                }
                _ => self.common(ty, d),
            },
            t => match self.rng.below(6) {
                0 | 1 => {
                    let op = self.rng.pick(&[
                        BinOp::Add,
                        BinOp::Sub,
                        BinOp::Mul,
                        BinOp::Div,
                        BinOp::Min,
                        BinOp::Max,
                        BinOp::AbsDiff,
                    ]);
                    let a = self.expr(t, d);
                    let b = self.operand(t, d);
                    self.binary_either_order(op, a, b)
                }
                2 => {
                    let op = self.rng.pick(&[
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
                    let x = self.expr(t, d);
                    let x = if self.cfg.race_free && matches!(op, UnOp::Sin | UnOp::Cos | UnOp::Tan)
                    {
                        trig_range(t, x)
                    } else {
                        x
                    };
                    Expr::Unary(op, bx(x))
                }
                3 => {
                    // At least one self-typed operand first, so that elaboration types the rest.
                    let a = self.expr(t, d);
                    let b = self.operand(t, d);
                    let c = self.operand(t, d);
                    Expr::Fma(bx(a), bx(b), bx(c))
                }
                4 if self.cfg.atomics && t == ScalarType::F32 => self.atomic(t, d),
                _ => self.common(ty, d),
            },
        }
    }

    /// `a OP b` or `b OP a` (the bare-literal side may come first; the other side types it).
    fn binary_either_order(&mut self, op: BinOp, a: Expr, b: Expr) -> Expr {
        if self.rng.chance(1, 2) {
            Expr::Binary(op, bx(a), bx(b))
        } else {
            Expr::Binary(op, bx(b), bx(a))
        }
    }

    /// Forms valid for every type.
    fn common(&mut self, ty: ScalarType, d: usize) -> Expr {
        match self.rng.below(5) {
            0 => {
                let c = self.expr(ScalarType::Bool, d);
                let a = self.expr(ty, d);
                let b = self.operand(ty, d);
                if self.rng.chance(1, 2) {
                    Expr::Select(bx(c), bx(a), bx(b))
                } else {
                    Expr::Select(bx(c), bx(b), bx(a))
                }
            }
            1 => {
                let from = self.rng.pick(&VALUE_TYPES);
                Expr::Cast(ty, bx(self.expr(from, d)))
            }
            2 if ty != ScalarType::Bool => {
                // NaN payloads are not defined (docs/semantics.md), so a race-free Program,
                // whose results must not depend on the backend, never bitcasts a float to
                // an integer.
                let partners: Vec<ScalarType> = NUM_TYPES
                    .iter()
                    .copied()
                    .filter(|t| t.bits() == ty.bits())
                    .filter(|t| !(self.cfg.race_free && ty.is_int() && t.is_float()))
                    .collect();
                let from = self.rng.pick(&partners);
                Expr::Bitcast(ty, bx(self.expr(from, d)))
            }
            3 | 4 if self.cfg.subgroup_ops => match (self.rng.below(3), ty) {
                (0, _) | (_, ScalarType::Bool) => Expr::Shuffle {
                    value: bx(self.expr(ty, d)),
                    lane: bx(self.operand(ScalarType::U32, d)),
                },
                (1, _) if ty == ScalarType::U32 => Expr::Ballot(bx(self.expr(ScalarType::Bool, d))),
                _ => {
                    let op = if ty.is_int() {
                        self.rng.pick(&ReduceOp::ALL)
                    } else {
                        self.rng
                            .pick(&[ReduceOp::Add, ReduceOp::Mul, ReduceOp::Min, ReduceOp::Max])
                    };
                    Expr::SubgroupReduce(op, bx(self.expr(ty, d)))
                }
            },
            _ => self.leaf(ty),
        }
    }

    fn atomic(&mut self, ty: ScalarType, d: usize) -> Expr {
        let bufs: Vec<BufferDecl> = self
            .buffers
            .iter()
            .filter(|b| {
                matches!(b.access, Access::ReadWrite | Access::Workgroup)
                    && b.elem.value_type() == ty
                    && !b.elem.is_narrow()
                    && (self.cfg.workgroup_memory || b.access.is_host())
            })
            .cloned()
            .collect();
        if bufs.is_empty() {
            return self.leaf(ty);
        }
        let b = bufs[self.rng.below(bufs.len())].clone();
        let op = if ty == ScalarType::F32 {
            AtomicOp::Add
        } else {
            self.rng.pick(&AtomicOp::ALL)
        };
        let expected = (op == AtomicOp::Cas).then(|| bx(self.operand(ty, d)));
        let index = bx(self.index_into(&b, d));
        let value = bx(self.operand(ty, d));
        Expr::Atomic {
            op,
            buffer: b.name,
            index,
            value,
            expected,
            order: self.rng.pick(&AtomicOrder::ALL),
        }
    }

    fn leaf(&mut self, ty: ScalarType) -> Expr {
        let vars: Vec<String> = self
            .vars
            .iter()
            .filter(|v| v.ty == ty)
            .map(|v| v.name.clone())
            .collect();
        let loads: Vec<BufferDecl> = self
            .buffers
            .iter()
            .filter(|b| {
                b.elem.value_type() == ty
                    && b.access != Access::Write
                    && (self.cfg.workgroup_memory || b.access.is_host())
            })
            .cloned()
            .collect();
        loop {
            match self.rng.below(5) {
                0 if !vars.is_empty() => {
                    return Expr::Var(vars[self.rng.below(vars.len())].clone())
                }
                1 if !loads.is_empty() => {
                    let b = loads[self.rng.below(loads.len())].clone();
                    let index = self.index_into(&b, self.cfg.max_expr_depth);
                    return Expr::Load {
                        buffer: b.name,
                        index: bx(index),
                    };
                }
                2 if ty == ScalarType::U32 => {
                    let axis = self.rng.pick(&[Axis::X, Axis::Y, Axis::Z]);
                    return Expr::Builtin(match self.rng.below(7) {
                        0 => Builtin::GlobalId(axis),
                        1 => Builtin::LocalId(axis),
                        2 => Builtin::WorkgroupId(axis),
                        3 => Builtin::NumWorkgroups(axis),
                        4 => Builtin::Lane,
                        5 => Builtin::SubgroupSize,
                        _ => Builtin::GlobalId(Axis::X),
                    });
                }
                3 if ty == ScalarType::U32 => {
                    let b = self.rng.below(self.buffers.len());
                    return Expr::Len(self.buffers[b].name.clone());
                }
                4 => return self.typed_lit(ty),
                _ if vars.is_empty() && loads.is_empty() && ty != ScalarType::U32 => {
                    return self.typed_lit(ty)
                }
                _ => {}
            }
        }
    }
}

/// `min(max(x, -2^20), 2^20)` of float type `t`: `sin cos tan` are only promised to match the
/// interpreter for `|x| <= 2^20` (docs/semantics.md), so race-free Programs keep the argument
/// there (NaN becomes `-2^20`, as `max` returns the operand that is not NaN).
fn trig_range(t: ScalarType, x: Expr) -> Expr {
    const LIMIT: f64 = 1_048_576.0;
    let lit = |v: f64| {
        Expr::Lit(Literal::Typed(if t == ScalarType::F32 {
            Scalar::F32(v as f32)
        } else {
            Scalar::F64(v)
        }))
    };
    let lo = Expr::Binary(BinOp::Max, bx(x), bx(lit(-LIMIT)));
    Expr::Binary(BinOp::Min, bx(lo), bx(lit(LIMIT)))
}
