//! Expressions of the export (see the parent module for the semantic adaptations).

use vyre_foundation::ir as v;

use super::ops;
use super::proof::Env;
use super::{has_atomic, sixty_four, unary_is_predicate, ExportError};
use crate::ir::{
    Access, AtomicOp, AtomicOrder, Axis, BinOp, Builtin, Expr, Literal, Program, ReduceOp, Scalar,
    ScalarType, UnOp,
};

/// Conversion context.
pub struct Cx<'p> {
    program: &'p Program,
    /// vyre's kernel keeps every lane alive (shared memory or a barrier), so it predicates
    /// global stores instead of clamping their index (see the import).
    full_workgroup: bool,
    /// `let` statements binding an expression used more than once (see [`Cx::share`]),
    /// waiting to be placed before the statement being converted.
    pub hoisted: Vec<v::Node>,
    /// Names bound by [`Cx::share`] so far (for fresh names).
    shared: usize,
    /// Every name the Program declares (a fresh name must be none of them).
    names: std::collections::HashSet<String>,
}

/// Expressions of at most this many nodes are copied where the export uses them twice (a
/// load's bounds test and its index); larger ones are bound once with `let`, as the import
/// does: a nested index (`a[a[a[i]]]`) copied at every level would double at every level.
pub const MAX_COPIED_NODES: usize = 8;

fn expr_nodes(e: &Expr) -> usize {
    let mut n = 0usize;
    e.visit(&mut |_| n += 1);
    n
}

/// The constructs whose export may use an operand twice.
fn duplicates(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Load { .. }
            | Expr::Binary(BinOp::Div | BinOp::Shl | BinOp::Shr | BinOp::AbsDiff, ..)
            | Expr::Unary(UnOp::Abs | UnOp::Sign, ..)
    )
}

/// Whether such a construct sits inside another in `e`: only then can copying double at
/// every level (`a[a[a[i]]]`); a flat index is copied as it always was, so the export of
/// ordinary Programs (and their round trip through vyre) is unchanged.
fn nested_duplication(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        if !found && duplicates(x) {
            let mut inner = 0usize;
            x.visit(&mut |y| inner += usize::from(duplicates(y)));
            found = inner > 1;
        }
    });
    found
}

/// The zero of a 32-bit or `bool` type.
pub fn zero(t: ScalarType) -> v::Expr {
    match t {
        ScalarType::I32 => v::Expr::LitI32(0),
        ScalarType::F32 => v::Expr::LitF32(0.0),
        ScalarType::Bool => v::Expr::LitBool(false),
        _ => v::Expr::LitU32(0),
    }
}

fn scalar_dt(t: ScalarType) -> Option<v::DataType> {
    Some(match t {
        ScalarType::Bool => v::DataType::Bool,
        ScalarType::U32 => v::DataType::U32,
        ScalarType::I32 => v::DataType::I32,
        ScalarType::F32 => v::DataType::F32,
        ScalarType::U64 | ScalarType::I64 | ScalarType::F64 => return None,
    })
}

pub(super) fn bin(op: v::BinOp, a: v::Expr, b: v::Expr) -> v::Expr {
    v::Expr::BinOp {
        op,
        left: Box::new(a),
        right: Box::new(b),
    }
}

fn axis(a: Axis) -> u8 {
    a.index() as u8
}

impl<'p> Cx<'p> {
    /// A context for `program` (elaborated).
    pub fn new(program: &'p Program) -> Self {
        let mut barrier = false;
        program.walk_stmts(&mut |s| barrier |= matches!(s.kind, crate::ir::StmtKind::Barrier(_)));
        let shared = program
            .buffers
            .iter()
            .any(|b| b.access == Access::Workgroup);
        let mut names = std::collections::HashSet::new();
        super::collect_names(&program.body, &mut names);
        Cx {
            program,
            full_workgroup: shared || barrier,
            hoisted: Vec::new(),
            shared: 0,
            names,
        }
    }

    /// `e`, the vyre form of `src`, made ready to be used more than once: when `src` is
    /// larger than [`MAX_COPIED_NODES`], free of effects and nests constructs that copy an
    /// operand (see [`nested_duplication`]), it is bound once with a `let`
    /// placed before the statement (in [`Cx::hoisted`]) and its name is returned; else `e`
    /// itself, to be copied. Our format evaluates every operand in every invocation and
    /// vyre's loads never fault, so evaluating it before the statement changes nothing.
    pub fn share(&mut self, src: &Expr, e: v::Expr) -> v::Expr {
        if expr_nodes(src) <= MAX_COPIED_NODES
            || super::has_effects(src)
            || !nested_duplication(src)
        {
            return e;
        }
        let name = loop {
            self.shared += 1;
            let n = format!("vs_shared_{}", self.shared);
            if !self.names.contains(&n) {
                break n;
            }
        };
        self.hoisted.push(v::Node::let_bind(name.as_str(), e));
        v::Expr::var(name.as_str())
    }

    /// `len(buffer) > index` (the `count` literal for a workgroup buffer): the guard of a
    /// store or an atomic, written with the length first so that the import tells it from a
    /// Program's own `if i < len(b)` and folds it back into the plain store or atomic.
    pub fn len_above(&self, buffer: &str, index: v::Expr) -> v::Expr {
        let len = match self.program.buffer(buffer).and_then(|d| d.count) {
            Some(c) => v::Expr::LitU32(c),
            None => v::Expr::buf_len(buffer),
        };
        bin(v::BinOp::Gt, len, index)
    }

    /// `i` when `index` is `select(i < len(buffer), i, 0)` on a host buffer with `i` free
    /// of atomics: the import's form of vyre's load, whose index vyre clamps to element 0
    /// itself, so `load(buffer, i)` in vyre computes exactly this load.
    fn vyre_index<'e>(&self, buffer: &str, index: &'e Expr) -> Option<&'e Expr> {
        let host = self
            .program
            .buffer(buffer)
            .is_some_and(|d| d.access.is_host());
        let Expr::Select(c, i, zero) = index else {
            return None;
        };
        let Expr::Binary(BinOp::Lt, j, len) = &**c else {
            return None;
        };
        let ok = host
            && matches!(&**len, Expr::Len(b) if b == buffer)
            && j == i
            && matches!(**zero, Expr::Lit(Literal::Typed(Scalar::U32(0))))
            && !has_atomic(i);
        ok.then_some(&**i)
    }

    /// Like [`Cx::vyre_index`] for a store: vyre clamps a store's index only in kernels that
    /// do not keep every lane alive (it predicates the store in the others).
    pub fn vyre_store_index<'e>(&self, buffer: &str, index: &'e Expr) -> Option<&'e Expr> {
        if self.full_workgroup {
            return None;
        }
        self.vyre_index(buffer, index)
    }

    /// `a / d` when `e` is `select(d == 0, 4294967295, a / d)` on `u32` with `d` free of
    /// atomics: the import's form of vyre's division, which gives `u32::MAX` for `d == 0`.
    fn vyre_division<'e>(&self, e: &'e Expr, env: &Env) -> Option<(&'e Expr, &'e Expr)> {
        let Expr::Select(c, max, q) = e else {
            return None;
        };
        let (Expr::Binary(BinOp::Eq, d, zero), Expr::Binary(BinOp::Div, a, d2)) = (&**c, &**q)
        else {
            return None;
        };
        let ok = matches!(**zero, Expr::Lit(Literal::Typed(Scalar::U32(0))))
            && matches!(**max, Expr::Lit(Literal::Typed(Scalar::U32(u32::MAX))))
            && d == d2
            && !has_atomic(d)
            && env.ty(a) == Some(ScalarType::U32);
        ok.then_some((&**a, &**d))
    }

    /// Refuses the types vyre's export cannot carry.
    pub fn check_type(&self, t: ScalarType, node: &str) -> Result<(), ExportError> {
        match scalar_dt(t) {
            Some(_) => Ok(()),
            None => Err(sixty_four(node, &format!("{t} value"))),
        }
    }

    /// `index < len(buffer)`, with the `count` literal for workgroup buffers.
    pub fn below_len(&self, buffer: &str, index: v::Expr, _env: &Env) -> v::Expr {
        let len = match self.program.buffer(buffer).and_then(|d| d.count) {
            Some(c) => v::Expr::LitU32(c),
            None => v::Expr::buf_len(buffer),
        };
        bin(v::BinOp::Lt, index, len)
    }

    /// When `value` is an atomic on a host buffer whose index is not proven in range: the
    /// guard and the atomic, for the caller to run the atomic under the guard.
    pub fn guarded_atomic(
        &mut self,
        value: &Expr,
        env: &Env,
        node: &str,
    ) -> Result<Option<(v::Expr, v::Expr)>, ExportError> {
        let Expr::Atomic { buffer, index, .. } = value else {
            return Ok(None);
        };
        if env.in_range(buffer, index) {
            return Ok(None);
        }
        let atomic = self.atomic(value, env, node)?;
        let i = self.expr(index, env, node)?;
        let i = self.share(index, i);
        Ok(Some((self.len_above(buffer, i), atomic)))
    }

    /// The vyre expression of `e`.
    pub fn expr(&mut self, e: &Expr, env: &Env, node: &str) -> Result<v::Expr, ExportError> {
        Ok(match e {
            Expr::Lit(l) => literal(*l, node)?,
            Expr::Var(n) => {
                if let Some(t) = env.var_ty(n) {
                    self.check_type(t, node)?;
                }
                v::Expr::var(n.as_str())
            }
            Expr::Builtin(b) => match b {
                Builtin::GlobalId(a) => v::Expr::InvocationId { axis: axis(*a) },
                Builtin::LocalId(a) => v::Expr::LocalId { axis: axis(*a) },
                Builtin::WorkgroupId(a) => v::Expr::WorkgroupId { axis: axis(*a) },
                Builtin::Lane => v::Expr::SubgroupLocalId,
                Builtin::SubgroupSize => v::Expr::SubgroupSize,
                Builtin::NumWorkgroups(_) => {
                    return Err(ExportError::new(
                        node,
                        "`nwg` builtin",
                        "vyre has no number-of-workgroups builtin",
                        "pass the workgroup count in a uniform buffer",
                    ))
                }
            },
            Expr::Clock => return Err(ExportError::new(
                node,
                "`clock()` read",
                "vyre has no cycle-counter expression, and `clock()` is profiler instrumentation",
                "export the Program before instrumenting it",
            )),
            Expr::Load { buffer, index } => self.load(buffer, index, env, node)?,
            Expr::Len(b) => match self.program.buffer(b).and_then(|d| d.count) {
                Some(c) => v::Expr::LitU32(c),
                None => v::Expr::buf_len(b.as_str()),
            },
            Expr::Binary(op, a, b) => self.binary(*op, a, b, env, node)?,
            Expr::Unary(op, a) => {
                let x = self.expr(a, env, node)?;
                let t = env.ty(a);
                // i32 abs and sign use their operand twice or three times.
                let x = match (op, t) {
                    (UnOp::Abs | UnOp::Sign, Some(ScalarType::I32)) => self.share(a, x),
                    _ => x,
                };
                if !unary_is_predicate(*op) {
                    if let Some(t) = t {
                        self.check_type(t, node)?;
                    }
                }
                if let Some(t @ (ScalarType::I32 | ScalarType::U32)) = t {
                    if let Some(r) = ops::int_unary(*op, t, x.clone(), has_atomic(a), node)? {
                        return Ok(r);
                    }
                }
                v::Expr::UnOp {
                    op: unop(*op),
                    operand: Box::new(x),
                }
            }
            Expr::Select(..) if self.vyre_division(e, env).is_some() => {
                let Some((a, d)) = self.vyre_division(e, env) else {
                    return Err(super::internal(node, "division form"));
                };
                bin(
                    v::BinOp::Div,
                    self.expr(a, env, node)?,
                    self.expr(d, env, node)?,
                )
            }
            Expr::Select(c, a, b) => v::Expr::select(
                self.expr(c, env, node)?,
                self.expr(a, env, node)?,
                self.expr(b, env, node)?,
            ),
            Expr::Cast(t, x) => {
                let dt = scalar_dt(*t).ok_or_else(|| sixty_four(node, &format!("cast to {t}")))?;
                v::Expr::cast(dt, self.expr(x, env, node)?)
            }
            Expr::Bitcast(t, x) => {
                let from = env.ty(x);
                let inner = self.expr(x, env, node)?;
                match (from, *t) {
                    (Some(f), t) if f == t => inner,
                    (
                        Some(f @ (ScalarType::U32 | ScalarType::I32)),
                        ScalarType::I32 | ScalarType::U32,
                    ) => {
                        // vyre's same-width integer cast keeps the bits. The cast to the
                        // value's own type first changes nothing in vyre and tells the import
                        // this is a bitcast, not our `cast` (which vyre writes alike).
                        let own = v::Expr::cast(scalar_dt(f).unwrap_or(v::DataType::U32), inner);
                        v::Expr::cast(scalar_dt(*t).unwrap_or(v::DataType::U32), own)
                    }
                    (f, t) => {
                        return Err(ExportError::new(
                            node,
                            format!(
                                "bitcast {} -> {t}",
                                f.map_or("?".to_string(), |f| f.to_string())
                            ),
                            "vyre's cast converts the value; it has no reinterpretation of \
                             float bits as an integer or back",
                            "keep the value in one type, or compute the bits with integer ops",
                        ))
                    }
                }
            }
            Expr::Fma(a, b, c) => v::Expr::fma(
                self.expr(a, env, node)?,
                self.expr(b, env, node)?,
                self.expr(c, env, node)?,
            ),
            Expr::Atomic { buffer, index, .. } => {
                if !env.in_range(buffer, index) {
                    return Err(ExportError::new(
                        node,
                        "atomic inside an expression",
                        "its index is not proven in range, and vyre's PTX does not check \
                         atomic indices, so the export must run it under `if index < len`, \
                         which needs the atomic as the whole value of a `let` or `assign`",
                        "bind the atomic with its own `let`, or guard it with `if index < len`",
                    ));
                }
                self.atomic(e, env, node)?
            }
            Expr::Shuffle { value, lane } => {
                v::Expr::subgroup_shuffle(self.expr(value, env, node)?, self.expr(lane, env, node)?)
            }
            Expr::SubgroupReduce(op, x) => v::Expr::subgroup_reduce(
                match op {
                    ReduceOp::Add => v::SubgroupReduceOp::Add,
                    ReduceOp::Mul => v::SubgroupReduceOp::Mul,
                    ReduceOp::Min => v::SubgroupReduceOp::Min,
                    ReduceOp::Max => v::SubgroupReduceOp::Max,
                    ReduceOp::And => v::SubgroupReduceOp::And,
                    ReduceOp::Or => v::SubgroupReduceOp::Or,
                    ReduceOp::Xor => v::SubgroupReduceOp::Xor,
                },
                self.expr(x, env, node)?,
            ),
            Expr::Ballot(c) => v::Expr::subgroup_ballot(self.expr(c, env, node)?),
        })
    }

    fn load(
        &mut self,
        buffer: &str,
        index: &Expr,
        env: &Env,
        node: &str,
    ) -> Result<v::Expr, ExportError> {
        let decl = self
            .program
            .buffer(buffer)
            .ok_or_else(|| super::internal(node, "unknown buffer"))?;
        let ty = decl.elem.value_type();
        self.check_type(ty, node)?;
        let widen = |e: v::Expr| match (decl.elem.is_narrow(), scalar_dt(ty)) {
            (true, Some(dt)) => v::Expr::cast(dt, e),
            _ => e,
        };
        if let Some(j) = self.vyre_index(buffer, index) {
            // The import's form of vyre's load, which clamps its index itself.
            let j = self.expr(j, env, node)?;
            return Ok(widen(v::Expr::load(buffer, j)));
        }
        let i = self.expr(index, env, node)?;
        if env.in_range(buffer, index) {
            return Ok(widen(v::Expr::load(buffer, i)));
        }
        let i = self.share(index, i);
        let ok = self.below_len(buffer, i.clone(), env);
        // vyre's PTX clamps a host-buffer index to 0 itself; a workgroup index it does not
        // check, so the export clamps it too.
        let at = if decl.access == Access::Workgroup {
            v::Expr::select(ok.clone(), i, v::Expr::LitU32(0))
        } else {
            i
        };
        Ok(v::Expr::select(
            ok,
            widen(v::Expr::load(buffer, at)),
            zero(ty),
        ))
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        env: &Env,
        node: &str,
    ) -> Result<v::Expr, ExportError> {
        let ta = env.ty(a);
        if let Some(t) = ta {
            self.check_type(t, node)?;
        }
        let x = self.expr(a, env, node)?;
        let y = self.expr(b, env, node)?;
        let vop = match op {
            BinOp::Add => v::BinOp::Add,
            BinOp::Sub => v::BinOp::Sub,
            BinOp::Mul => v::BinOp::Mul,
            BinOp::Div => v::BinOp::Div,
            BinOp::Rem => v::BinOp::Mod,
            BinOp::Min => v::BinOp::Min,
            BinOp::Max => v::BinOp::Max,
            BinOp::AbsDiff => v::BinOp::AbsDiff,
            BinOp::MulHi => v::BinOp::MulHigh,
            BinOp::AddSat => v::BinOp::SaturatingAdd,
            BinOp::SubSat => v::BinOp::SaturatingSub,
            BinOp::MulSat => v::BinOp::SaturatingMul,
            BinOp::And => v::BinOp::BitAnd,
            BinOp::Or => v::BinOp::BitOr,
            BinOp::Xor => v::BinOp::BitXor,
            BinOp::Shl => v::BinOp::Shl,
            BinOp::Shr => v::BinOp::Shr,
            BinOp::Rotl => v::BinOp::RotateLeft,
            BinOp::Rotr => v::BinOp::RotateRight,
            BinOp::Eq => v::BinOp::Eq,
            BinOp::Ne => v::BinOp::Ne,
            BinOp::Lt => v::BinOp::Lt,
            BinOp::Le => v::BinOp::Le,
            BinOp::Gt => v::BinOp::Gt,
            BinOp::Ge => v::BinOp::Ge,
            BinOp::LAnd => v::BinOp::And,
            BinOp::LOr => v::BinOp::Or,
        };
        if op == BinOp::AbsDiff && ta == Some(ScalarType::I32) {
            // vyre refuses i32 absdiff (V086); ours is the wrapping max - min.
            if has_atomic(a) || has_atomic(b) {
                return Err(ExportError::new(
                    node,
                    "i32 absdiff of an atomic's result",
                    "the vyre form uses each operand twice, and an atomic must run once",
                    "bind the atomic with its own `let` first",
                ));
            }
            let (x, y) = (self.share(a, x), self.share(b, y));
            return Ok(v::Expr::select(
                bin(v::BinOp::Lt, x.clone(), y.clone()),
                bin(v::BinOp::Sub, y.clone(), x.clone()),
                bin(v::BinOp::Sub, x, y),
            ));
        }
        if matches!(op, BinOp::AddSat | BinOp::SubSat | BinOp::MulSat)
            && ta != Some(ScalarType::U32)
        {
            return Err(ExportError::new(
                node,
                format!("`{}` on {}", op.name(), ta.map_or("?", |t| t.name())),
                "vyre's saturating operators take u32 operands only (its validator, V085)",
                "clamp explicitly with min/max, or saturate in u32",
            ));
        }
        if op.is_shift() {
            let small = crate::analysis::ranges::range_of(b, env).is_some_and(|r| r.hi < 32);
            // Unless the amount is known small, the forms test it, and an i32 right shift
            // uses the value twice.
            let x = match ta {
                Some(ScalarType::I32) if op == BinOp::Shr => self.share(a, x),
                _ => x,
            };
            let rotate = matches!(op, BinOp::Rotl | BinOp::Rotr);
            let y = if small || rotate { y } else { self.share(b, y) };
            return ops::shift(vop, ta, x, y, small, has_atomic(a) || has_atomic(b), node);
        }
        let nonzero_literal = matches!(b, Expr::Lit(Literal::Typed(Scalar::U32(d))) if *d != 0);
        if op == BinOp::Div && ta == Some(ScalarType::U32) && !nonzero_literal {
            // Ours: x / 0 = 0; vyre's PTX: u32::MAX.
            if has_atomic(b) {
                return Err(ExportError::new(
                    node,
                    "u32 division by an atomic's result",
                    "the export evaluates the divisor twice (for its zero test), which an \
                     atomic must not be",
                    "bind the atomic with its own `let` first",
                ));
            }
            let y = self.share(b, y);
            let is_zero = bin(v::BinOp::Eq, y.clone(), v::Expr::LitU32(0));
            return Ok(v::Expr::select(is_zero, v::Expr::LitU32(0), bin(vop, x, y)));
        }
        let r = bin(vop, x, y);
        // vyre's validator types every bitwise, remainder and mulhi result as u32 whatever
        // the operands, so an i32 or f32 one feeding another operator would be a type
        // mismatch there (V093); a cast to the operands' own type keeps the value.
        let u32_typed = matches!(
            vop,
            v::BinOp::BitAnd
                | v::BinOp::BitOr
                | v::BinOp::BitXor
                | v::BinOp::Mod
                | v::BinOp::MulHigh
        );
        Ok(match ta {
            Some(t @ (ScalarType::I32 | ScalarType::F32)) if u32_typed => {
                v::Expr::cast(scalar_dt(t).unwrap_or(v::DataType::U32), r)
            }
            _ => r,
        })
    }

    /// The vyre atomic of `e` (an [`Expr::Atomic`]), without a bounds guard.
    fn atomic(&mut self, e: &Expr, env: &Env, node: &str) -> Result<v::Expr, ExportError> {
        let Expr::Atomic {
            op,
            buffer,
            index,
            value,
            expected,
            order,
        } = e
        else {
            return Err(super::internal(node, "not an atomic"));
        };
        let decl = self
            .program
            .buffer(buffer)
            .ok_or_else(|| super::internal(node, "unknown buffer"))?;
        if decl.access == Access::Workgroup {
            return Err(ExportError::new(
                node,
                format!("atomic on workgroup buffer `{buffer}`"),
                "vyre's validator accepts atomics only on read_write host buffers (V025)",
                "count in a global read_write u32 buffer instead",
            ));
        }
        if decl.elem != crate::ir::ElemType::U32 {
            return Err(ExportError::new(
                node,
                format!("atomic on {} buffer `{buffer}`", decl.elem),
                "vyre's atomics work on u32 elements only (V014)",
                "use a u32 buffer for the atomic",
            ));
        }
        let i = self.expr(index, env, node)?;
        let val = self.expr(value, env, node)?;
        let exp = match expected {
            Some(x) => Some(Box::new(self.expr(x, env, node)?)),
            None => None,
        };
        Ok(v::Expr::Atomic {
            op: match op {
                AtomicOp::Add => v::AtomicOp::Add,
                AtomicOp::Min => v::AtomicOp::Min,
                AtomicOp::Max => v::AtomicOp::Max,
                AtomicOp::And => v::AtomicOp::And,
                AtomicOp::Or => v::AtomicOp::Or,
                AtomicOp::Xor => v::AtomicOp::Xor,
                AtomicOp::Exchange => v::AtomicOp::Exchange,
                AtomicOp::Cas => v::AtomicOp::CompareExchange,
            },
            buffer: buffer.as_str().into(),
            index: Box::new(i),
            expected: exp,
            value: Box::new(val),
            ordering: ordering(*order),
        })
    }
}

/// vyre's memory ordering for our atomic order.
pub fn ordering(o: AtomicOrder) -> v::MemoryOrdering {
    match o {
        AtomicOrder::Relaxed => v::MemoryOrdering::Relaxed,
        AtomicOrder::Acquire => v::MemoryOrdering::Acquire,
        AtomicOrder::Release => v::MemoryOrdering::Release,
        AtomicOrder::AcqRel => v::MemoryOrdering::AcqRel,
        AtomicOrder::SeqCst => v::MemoryOrdering::SeqCst,
    }
}

fn literal(l: Literal, node: &str) -> Result<v::Expr, ExportError> {
    Ok(match l {
        Literal::Typed(Scalar::Bool(b)) => v::Expr::LitBool(b),
        Literal::Typed(Scalar::U32(x)) => v::Expr::LitU32(x),
        Literal::Typed(Scalar::I32(x)) => v::Expr::LitI32(x),
        Literal::Typed(Scalar::F32(x)) => v::Expr::LitF32(x),
        Literal::Typed(s) => return Err(sixty_four(node, &format!("{} literal", s.ty()))),
        // The export runs on an elaborated Program: no bare literal is left.
        Literal::Int(_) | Literal::Float(_) => {
            return Err(super::internal(node, "bare literal after elaboration"))
        }
    })
}

fn unop(op: UnOp) -> v::UnOp {
    match op {
        UnOp::Neg => v::UnOp::Negate,
        UnOp::Not => v::UnOp::BitNot,
        UnOp::LNot => v::UnOp::LogicalNot,
        UnOp::Popcount => v::UnOp::Popcount,
        UnOp::Clz => v::UnOp::Clz,
        UnOp::Ctz => v::UnOp::Ctz,
        UnOp::Brev => v::UnOp::ReverseBits,
        UnOp::Abs => v::UnOp::Abs,
        UnOp::Sign => v::UnOp::Sign,
        UnOp::Sqrt => v::UnOp::Sqrt,
        UnOp::Rsqrt => v::UnOp::InverseSqrt,
        UnOp::Rcp => v::UnOp::Reciprocal,
        UnOp::Exp => v::UnOp::Exp,
        UnOp::Exp2 => v::UnOp::Exp2,
        UnOp::Log => v::UnOp::Log,
        UnOp::Log2 => v::UnOp::Log2,
        UnOp::Sin => v::UnOp::Sin,
        UnOp::Cos => v::UnOp::Cos,
        UnOp::Tan => v::UnOp::Tan,
        UnOp::Tanh => v::UnOp::Tanh,
        UnOp::Floor => v::UnOp::Floor,
        UnOp::Ceil => v::UnOp::Ceil,
        UnOp::Round => v::UnOp::Round,
        UnOp::Trunc => v::UnOp::Trunc,
        UnOp::IsNan => v::UnOp::IsNan,
        UnOp::IsInf => v::UnOp::IsInf,
        UnOp::IsFinite => v::UnOp::IsFinite,
    }
}
