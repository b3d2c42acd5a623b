//! Elaborated Program -> compact register code for the SIMT executor.
//!
//! Every variable, literal, builtin and intermediate result gets a register (one `u64` per
//! lane). Literals are deduplicated constant registers, builtins are filled once per unit,
//! variables keep their register for the whole run, and intermediate results use temporaries
//! recycled per statement (a node's result register is allocated before its operands' are
//! released, so an instruction never writes a register it reads). Expressions become a flat
//! list of instructions in evaluation order (operands left to right, then the operation).

use std::collections::HashMap;

use super::InterpError;
use crate::ir::typing::typed_literal;
use crate::ir::{
    Access, AtomicOp, BarrierScope, BinOp, Builtin, ElemType, Expr, Literal, NodeId, Program,
    ReduceOp, ScalarType, Stmt, StmtKind, UnOp,
};

/// Register index.
pub(crate) type Reg = u32;

/// A buffer as the executor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BufRef {
    /// Host buffer number `i` (index into [`Code::globals`]).
    Global(u32),
    /// Workgroup buffer number `i` (index into [`Code::shared`]).
    Shared(u32),
}

/// Per-lane or per-run values filled into registers before a unit runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Special {
    /// A builtin id.
    Builtin(Builtin),
    /// Run-time length of host buffer `i`.
    Len(u32),
}

/// One instruction: computes `dst` on every active lane.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Instr {
    Bin {
        op: BinOp,
        ty: ScalarType,
        dst: Reg,
        a: Reg,
        b: Reg,
    },
    Un {
        op: UnOp,
        ty: ScalarType,
        dst: Reg,
        a: Reg,
    },
    Select {
        dst: Reg,
        c: Reg,
        a: Reg,
        b: Reg,
    },
    Cast {
        from: ScalarType,
        to: ScalarType,
        dst: Reg,
        a: Reg,
    },
    Fma {
        ty: ScalarType,
        dst: Reg,
        a: Reg,
        b: Reg,
        c: Reg,
    },
    Load {
        buf: BufRef,
        dst: Reg,
        idx: Reg,
    },
    Atomic {
        op: AtomicOp,
        ty: ScalarType,
        buf: BufRef,
        dst: Reg,
        idx: Reg,
        val: Reg,
        expected: Option<Reg>,
    },
    Shuffle {
        dst: Reg,
        val: Reg,
        lane: Reg,
    },
    Reduce {
        op: ReduceOp,
        ty: ScalarType,
        dst: Reg,
        val: Reg,
    },
    Ballot {
        dst: Reg,
        val: Reg,
    },
}

/// A compiled expression: run `instrs`, the value is in `result`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExprCode {
    pub(crate) instrs: Vec<Instr>,
    pub(crate) result: Reg,
}

/// A compiled statement.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SCode {
    /// Node id (for errors).
    pub(crate) id: NodeId,
    /// IR nodes evaluated per active lane each time the statement runs (itself + its
    /// expressions; a loop counts its `from`/`to` once, its body counts itself).
    pub(crate) cost: u64,
    /// True when a `return` may run inside (lanes must be re-filtered afterwards).
    pub(crate) may_return: bool,
    /// True when the statement advances the clock ([`Code::clock`]): every statement the
    /// Program's author wrote, none that instrumentation added.
    pub(crate) ticks: bool,
    pub(crate) kind: SKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum SKind {
    /// `let`/`assign`: copy `value` into `dst` on the active lanes (no copy when the value was
    /// computed in `dst` already).
    Set {
        dst: Reg,
        value: ExprCode,
    },
    Store {
        buf: BufRef,
        index: ExprCode,
        value: ExprCode,
    },
    If {
        cond: ExprCode,
        then: Vec<SCode>,
        otherwise: Vec<SCode>,
    },
    Loop {
        counter: Reg,
        end: Reg,
        from: ExprCode,
        to: ExprCode,
        body: Vec<SCode>,
    },
    Barrier(BarrierScope),
    Return,
    Block(Vec<SCode>),
    /// A last-arriver arrival (`SyncOp::Arrive`): each workgroup of the active lanes adds one
    /// to arrival counter `counter`; the lanes of the workgroup whose arrival is the
    /// `total`-th get `last` set to true.
    Arrive {
        last: Reg,
        counter: u32,
        total: u32,
    },
}

/// A host buffer the code uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GlobalDecl {
    pub(crate) name: String,
    pub(crate) elem: ElemType,
    pub(crate) writable: bool,
}

/// A workgroup buffer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SharedDecl {
    pub(crate) elem: ElemType,
    pub(crate) count: u32,
}

/// A compiled Program.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Code {
    pub(crate) n_regs: usize,
    pub(crate) consts: Vec<(Reg, u64)>,
    pub(crate) specials: Vec<(Reg, Special)>,
    pub(crate) globals: Vec<GlobalDecl>,
    pub(crate) shared: Vec<SharedDecl>,
    pub(crate) body: Vec<SCode>,
    pub(crate) has_grid_barrier: bool,
    /// The register `clock()` reads, when the Program reads it: per lane, the number of
    /// ticking statements ([`SCode::ticks`]) the invocation has started. Zero at the start of
    /// every unit; advanced before a statement runs, so a read sees its own statement.
    pub(crate) clock: Option<Reg>,
}

/// An operand: a register, its value type, and whether it is a temporary to release.
#[derive(Debug, Clone, Copy)]
struct Operand {
    reg: Reg,
    ty: ScalarType,
    temp: bool,
}

struct Compiler<'p> {
    program: &'p Program,
    next: Reg,
    free: Vec<Reg>,
    consts: HashMap<u64, Reg>,
    specials: HashMap<Special, Reg>,
    buffers: HashMap<&'p str, BufRef>,
    scopes: Vec<HashMap<&'p str, (Reg, ScalarType)>>,
    has_grid_barrier: bool,
    clock: Option<Reg>,
}

fn err(node: &str, message: String) -> InterpError {
    InterpError {
        code: "I002",
        node: Some(NodeId::from(node)),
        message,
        fix: "run `vyrescope check` on the Program and fix the errors it reports".into(),
    }
}

/// Compiles an elaborated Program.
pub(crate) fn compile(program: &Program) -> Result<Code, InterpError> {
    let mut globals = Vec::new();
    let mut shared = Vec::new();
    let mut buffers = HashMap::new();
    for b in &program.buffers {
        if b.access == Access::Workgroup {
            buffers.insert(b.name.as_str(), BufRef::Shared(shared.len() as u32));
            shared.push(SharedDecl {
                elem: b.elem,
                count: b.count.unwrap_or(0),
            });
        } else {
            buffers.insert(b.name.as_str(), BufRef::Global(globals.len() as u32));
            globals.push(GlobalDecl {
                name: b.name.clone(),
                elem: b.elem,
                writable: b.access.is_writable(),
            });
        }
    }
    let mut c = Compiler {
        program,
        next: 0,
        free: Vec::new(),
        consts: HashMap::new(),
        specials: HashMap::new(),
        buffers,
        scopes: vec![HashMap::new()],
        has_grid_barrier: false,
        clock: None,
    };
    let body = c.list(&program.body)?;
    let mut consts: Vec<_> = c.consts.iter().map(|(&v, &r)| (r, v)).collect();
    consts.sort_unstable();
    let mut specials: Vec<_> = c.specials.iter().map(|(&s, &r)| (r, s)).collect();
    specials.sort_unstable_by_key(|x| x.0);
    Ok(Code {
        n_regs: c.next as usize,
        consts,
        specials,
        globals,
        shared,
        body,
        has_grid_barrier: c.has_grid_barrier,
        clock: c.clock,
    })
}

/// Number of IR nodes in an expression tree.
fn nodes(e: &Expr) -> u64 {
    let mut n = 0;
    e.visit(&mut |_| n += 1);
    n
}

impl<'p> Compiler<'p> {
    fn fresh(&mut self) -> Reg {
        let r = self.next;
        self.next += 1;
        r
    }

    fn temp(&mut self) -> Reg {
        match self.free.pop() {
            Some(r) => r,
            None => self.fresh(),
        }
    }

    fn release(&mut self, o: Operand) {
        if o.temp {
            self.free.push(o.reg);
        }
    }

    fn constant(&mut self, bits: u64, ty: ScalarType) -> Operand {
        let reg = match self.consts.get(&bits) {
            Some(&r) => r,
            None => {
                let r = self.fresh();
                self.consts.insert(bits, r);
                r
            }
        };
        Operand {
            reg,
            ty,
            temp: false,
        }
    }

    fn special(&mut self, s: Special) -> Operand {
        let reg = match self.specials.get(&s) {
            Some(&r) => r,
            None => {
                let r = self.fresh();
                self.specials.insert(s, r);
                r
            }
        };
        Operand {
            reg,
            ty: ScalarType::U32,
            temp: false,
        }
    }

    fn lookup(&self, name: &str) -> Option<(Reg, ScalarType)> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    fn buffer(&self, node: &str, name: &str) -> Result<(BufRef, ElemType), InterpError> {
        match (self.buffers.get(name), self.program.buffer(name)) {
            (Some(&r), Some(b)) => Ok((r, b.elem)),
            _ => Err(err(node, format!("unknown buffer `{name}`"))),
        }
    }

    fn list(&mut self, list: &'p [Stmt]) -> Result<Vec<SCode>, InterpError> {
        self.scopes.push(HashMap::new());
        let out = list.iter().map(|s| self.stmt(s)).collect();
        self.scopes.pop();
        out
    }

    fn stmt(&mut self, s: &'p Stmt) -> Result<SCode, InterpError> {
        let id = s.id.as_str();
        let (kind, cost, may_return) = match &s.kind {
            StmtKind::Let { name, value } => {
                let cost = 1 + nodes(value);
                let mut instrs = Vec::new();
                let v = self.expr(id, value, &mut instrs)?;
                // A fresh temporary becomes the variable's register; anything else is copied.
                let dst = if v.temp { v.reg } else { self.fresh() };
                if let Some(top) = self.scopes.last_mut() {
                    top.insert(name.as_str(), (dst, v.ty));
                }
                let value = ExprCode {
                    instrs,
                    result: v.reg,
                };
                (SKind::Set { dst, value }, cost, false)
            }
            StmtKind::Assign { name, value } => {
                let cost = 1 + nodes(value);
                let Some((dst, _)) = self.lookup(name) else {
                    return Err(err(
                        id,
                        format!("assignment to undefined variable `{name}`"),
                    ));
                };
                let mut instrs = Vec::new();
                let v = self.expr(id, value, &mut instrs)?;
                self.release(v);
                let value = ExprCode {
                    instrs,
                    result: v.reg,
                };
                (SKind::Set { dst, value }, cost, false)
            }
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                let (buf, _) = self.buffer(id, buffer)?;
                let mut ii = Vec::new();
                let i = self.expr(id, index, &mut ii)?;
                let mut vi = Vec::new();
                let v = self.expr(id, value, &mut vi)?;
                self.release(i);
                self.release(v);
                (
                    SKind::Store {
                        buf,
                        index: ExprCode {
                            instrs: ii,
                            result: i.reg,
                        },
                        value: ExprCode {
                            instrs: vi,
                            result: v.reg,
                        },
                    },
                    1 + nodes(index) + nodes(value),
                    false,
                )
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                let mut ci = Vec::new();
                let c = self.expr(id, cond, &mut ci)?;
                self.release(c);
                let then = self.list(then)?;
                let otherwise = self.list(otherwise)?;
                let may_return = then.iter().chain(&otherwise).any(|s| s.may_return);
                (
                    SKind::If {
                        cond: ExprCode {
                            instrs: ci,
                            result: c.reg,
                        },
                        then,
                        otherwise,
                    },
                    1 + nodes(cond),
                    may_return,
                )
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                let mut fi = Vec::new();
                let f = self.expr(id, from, &mut fi)?;
                let mut ti = Vec::new();
                let t = self.expr(id, to, &mut ti)?;
                self.release(f);
                self.release(t);
                let counter = self.fresh();
                let end = self.fresh();
                self.scopes
                    .push(HashMap::from([(var.as_str(), (counter, ScalarType::U32))]));
                let body = self.list(body);
                self.scopes.pop();
                let body = body?;
                let may_return = body.iter().any(|s| s.may_return);
                (
                    SKind::Loop {
                        counter,
                        end,
                        from: ExprCode {
                            instrs: fi,
                            result: f.reg,
                        },
                        to: ExprCode {
                            instrs: ti,
                            result: t.reg,
                        },
                        body,
                    },
                    1 + nodes(from) + nodes(to),
                    may_return,
                )
            }
            StmtKind::Barrier(scope) => {
                if *scope == BarrierScope::Grid {
                    self.has_grid_barrier = true;
                }
                (SKind::Barrier(*scope), 1, false)
            }
            StmtKind::Return => (SKind::Return, 1, true),
            StmtKind::Sync(op) => {
                // Dataflow statements need the whole grid in one unit (they order work
                // across workgroups); statement-by-statement execution then orders more than
                // any wait does, so only an arrival does something.
                self.has_grid_barrier = true;
                match op {
                    crate::ir::SyncOp::Arrive {
                        counter,
                        total,
                        last,
                        ..
                    } => {
                        let Some((reg, _)) = self.lookup(last) else {
                            return Err(err(
                                id,
                                format!("arrival sets undefined variable `{last}`"),
                            ));
                        };
                        (
                            SKind::Arrive {
                                last: reg,
                                counter: *counter,
                                total: *total,
                            },
                            1,
                            false,
                        )
                    }
                    _ => (SKind::Block(Vec::new()), 1, false),
                }
            }
            StmtKind::Block(b) => {
                let b = self.list(b)?;
                let may_return = b.iter().any(|s| s.may_return);
                (SKind::Block(b), 1, may_return)
            }
        };
        Ok(SCode {
            id: s.id.clone(),
            cost,
            may_return,
            ticks: !s.id.is_instrumentation(),
            kind,
        })
    }

    /// Compiles `e`, appending its instructions to `out`.
    fn expr(
        &mut self,
        node: &str,
        e: &'p Expr,
        out: &mut Vec<Instr>,
    ) -> Result<Operand, InterpError> {
        Ok(match e {
            Expr::Lit(l) => {
                let s = match *l {
                    Literal::Typed(s) => s,
                    // Elaboration types every literal; keep a default for robustness.
                    Literal::Int(v) if v < 0 => typed_literal(*l, ScalarType::I32),
                    Literal::Int(_) => typed_literal(*l, ScalarType::U32),
                    Literal::Float(_) => typed_literal(*l, ScalarType::F32),
                };
                self.constant(s.to_bits(), s.ty())
            }
            Expr::Var(name) => {
                let Some((reg, ty)) = self.lookup(name) else {
                    return Err(err(node, format!("undefined variable `{name}`")));
                };
                Operand {
                    reg,
                    ty,
                    temp: false,
                }
            }
            Expr::Builtin(Builtin::SubgroupSize) => self.constant(32, ScalarType::U32),
            Expr::Builtin(b) => self.special(Special::Builtin(*b)),
            Expr::Clock => {
                let reg = match self.clock {
                    Some(r) => r,
                    None => {
                        let r = self.fresh();
                        self.clock = Some(r);
                        r
                    }
                };
                Operand {
                    reg,
                    ty: ScalarType::U64,
                    temp: false,
                }
            }
            Expr::Len(name) => match self.buffer(node, name)? {
                (BufRef::Global(i), _) => self.special(Special::Len(i)),
                (BufRef::Shared(i), _) => {
                    let count = self.program_count(i);
                    self.constant(count as u64, ScalarType::U32)
                }
            },
            Expr::Load { buffer, index } => {
                let (buf, elem) = self.buffer(node, buffer)?;
                let i = self.expr(node, index, out)?;
                let dst = self.temp();
                self.release(i);
                out.push(Instr::Load {
                    buf,
                    dst,
                    idx: i.reg,
                });
                self.result(dst, elem.value_type())
            }
            Expr::Binary(op, a, b) => {
                let x = self.expr(node, a, out)?;
                let y = self.expr(node, b, out)?;
                let dst = self.temp();
                self.release(x);
                self.release(y);
                out.push(Instr::Bin {
                    op: *op,
                    ty: x.ty,
                    dst,
                    a: x.reg,
                    b: y.reg,
                });
                let ty = if op.is_comparison() || matches!(op, BinOp::LAnd | BinOp::LOr) {
                    ScalarType::Bool
                } else {
                    x.ty
                };
                self.result(dst, ty)
            }
            Expr::Unary(op, a) => {
                let x = self.expr(node, a, out)?;
                let dst = self.temp();
                self.release(x);
                out.push(Instr::Un {
                    op: *op,
                    ty: x.ty,
                    dst,
                    a: x.reg,
                });
                let ty = match op {
                    UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite | UnOp::LNot => ScalarType::Bool,
                    _ => x.ty,
                };
                self.result(dst, ty)
            }
            Expr::Select(c, a, b) => {
                let (c, x, y) = (
                    self.expr(node, c, out)?,
                    self.expr(node, a, out)?,
                    self.expr(node, b, out)?,
                );
                let dst = self.temp();
                [c, x, y].into_iter().for_each(|o| self.release(o));
                out.push(Instr::Select {
                    dst,
                    c: c.reg,
                    a: x.reg,
                    b: y.reg,
                });
                self.result(dst, x.ty)
            }
            Expr::Cast(to, a) => {
                let x = self.expr(node, a, out)?;
                let dst = self.temp();
                self.release(x);
                out.push(Instr::Cast {
                    from: x.ty,
                    to: *to,
                    dst,
                    a: x.reg,
                });
                self.result(dst, *to)
            }
            // Same bits, new type: no instruction needed.
            Expr::Bitcast(to, a) => {
                let x = self.expr(node, a, out)?;
                Operand { ty: *to, ..x }
            }
            Expr::Fma(a, b, c) => {
                let (x, y, z) = (
                    self.expr(node, a, out)?,
                    self.expr(node, b, out)?,
                    self.expr(node, c, out)?,
                );
                let dst = self.temp();
                [x, y, z].into_iter().for_each(|o| self.release(o));
                out.push(Instr::Fma {
                    ty: x.ty,
                    dst,
                    a: x.reg,
                    b: y.reg,
                    c: z.reg,
                });
                self.result(dst, x.ty)
            }
            Expr::Atomic {
                op,
                buffer,
                index,
                value,
                expected,
                ..
            } => {
                let (buf, elem) = self.buffer(node, buffer)?;
                let i = self.expr(node, index, out)?;
                let v = self.expr(node, value, out)?;
                let x = match expected {
                    Some(x) => Some(self.expr(node, x, out)?),
                    None => None,
                };
                let dst = self.temp();
                [Some(i), Some(v), x]
                    .into_iter()
                    .flatten()
                    .for_each(|o| self.release(o));
                let ty = elem.value_type();
                out.push(Instr::Atomic {
                    op: *op,
                    ty,
                    buf,
                    dst,
                    idx: i.reg,
                    val: v.reg,
                    expected: x.map(|x| x.reg),
                });
                self.result(dst, ty)
            }
            Expr::Shuffle { value, lane } => {
                let v = self.expr(node, value, out)?;
                let l = self.expr(node, lane, out)?;
                let dst = self.temp();
                self.release(v);
                self.release(l);
                out.push(Instr::Shuffle {
                    dst,
                    val: v.reg,
                    lane: l.reg,
                });
                self.result(dst, v.ty)
            }
            Expr::SubgroupReduce(op, value) => {
                let v = self.expr(node, value, out)?;
                let dst = self.temp();
                self.release(v);
                out.push(Instr::Reduce {
                    op: *op,
                    ty: v.ty,
                    dst,
                    val: v.reg,
                });
                self.result(dst, v.ty)
            }
            Expr::Ballot(value) => {
                let v = self.expr(node, value, out)?;
                let dst = self.temp();
                self.release(v);
                out.push(Instr::Ballot { dst, val: v.reg });
                self.result(dst, ScalarType::U32)
            }
        })
    }

    fn result(&self, reg: Reg, ty: ScalarType) -> Operand {
        Operand {
            reg,
            ty,
            temp: true,
        }
    }

    fn program_count(&self, shared_index: u32) -> u32 {
        self.program
            .buffers
            .iter()
            .filter(|b| b.access == Access::Workgroup)
            .nth(shared_index as usize)
            .and_then(|b| b.count)
            .unwrap_or(0)
    }
}
