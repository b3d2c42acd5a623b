//! Export: a vyrescope Program as a vyre `Program` (vyre-foundation 0.7.2), so a kernel
//! tuned here goes back into a vyre project as wire bytes or the `vyre_ir v0.1` text.
//!
//! What maps one to one: buffers (access, element type, binding, workgroup `count`), the
//! workgroup size, `let assign store if loop block return barrier`, literals of 32-bit and
//! `bool` types, variables, builtins except `nwg`, `load len` and the operators vyre has
//! (every binary and unary operator of the format), `select cast fma`, atomics on `u32`
//! global buffers with the order carried over, `shuffle subgroup_reduce ballot`.
//!
//! Where vyre computes something else, the export adds what makes vyre compute our result
//! (docs/vyre.md lists every case):
//! - a load whose index is not proven in range becomes `select(i < len, load, 0)` (vyre's
//!   PTX reads element 0 instead of giving 0); a workgroup load also clamps its index, since
//!   vyre does not check shared accesses at all;
//! - a store or atomic not proven in range runs under `if len > i` (vyre's PTX writes element
//!   0 or, for atomics, does not check); an atomic is then hoisted into `let x = 0; if .. {x =
//!   atomic}`, which is why such an atomic must be the whole value of its `let` or `assign`;
//!   a guarded store's value or index with an atomic or a subgroup operation is bound before
//!   the guard, since our format evaluates both in every invocation;
//! - `u32` division by a divisor not known to be nonzero becomes `select(d == 0, 0, a / d)`
//!   (vyre gives `u32::MAX`);
//! - an early `if c { return }` in the top-level body becomes `if !c { rest }` (vyre's PTX
//!   refuses a `return` under a condition that varies between threads).
//!
//! What vyre cannot express is an [`ExportError`] naming the node, the construct and why.

mod expr;
pub mod graph;
mod ops;
pub mod proof;

use vyre_foundation::ir as v;

use crate::ir::{Access, BarrierScope, ElemType, Expr, Program, Stmt, StmtKind, UnOp};
use proof::Env;

/// Why a Program cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ExportError {
    /// Node id of the statement (`body[1].then[0]`), `buffers[i]`, or `program`.
    pub node: String,
    /// The construct (`f64 buffer`, `nwg builtin`, ...).
    pub construct: String,
    /// Why vyre cannot express it.
    pub why: String,
    /// What to do instead.
    pub fix: String,
}

impl ExportError {
    fn new(node: &str, construct: impl Into<String>, why: impl Into<String>, fix: &str) -> Self {
        ExportError {
            node: node.to_string(),
            construct: construct.into(),
            why: why.into(),
            fix: fix.to_string(),
        }
    }
}

/// Converts `program` (which must validate) into a vyre Program.
pub fn export(program: &Program) -> Result<v::Program, ExportError> {
    let info = crate::validate::prove(program).map_err(|e| match e.first_error() {
        Some(d) => ExportError::new(
            d.node.as_ref().map_or("program", |n| n.as_str()),
            "invalid Program",
            format!("{} {}", d.code, d.message),
            "fix the Program first (`vyrescope check` lists every error)",
        ),
        None => ExportError::new(
            "program",
            "invalid Program",
            e.to_string(),
            "fix the Program first (`vyrescope check` lists every error)",
        ),
    })?;
    // The validator's typed Program: bare literals carry the types it checked.
    let p = info.typed();
    let whole = readable(build(p, None)?)?;
    // A first statement that is the import's early exit past vyre's dispatch count: vyre's
    // kernel ends those invocations by itself, so the exported Program leaves it out (and
    // the import writes it again).
    if let Some(StmtKind::If {
        cond,
        then,
        otherwise,
        ..
    }) = p.body.first().map(|s| &s.kind)
    {
        let exit = crate::vyre::import::dispatch_exit(&whole);
        if proof::is_bare_return(then) && otherwise.is_empty() && exit.as_ref() == Some(cond) {
            return readable(build(p, Some(cond))?);
        }
    }
    Ok(whole)
}

/// `p` when vyre can read it back: its own wire encoding decoded by its own decoder, which
/// refuses what nests deeper than its decode limit or is too large. An export vyre cannot
/// read is refused here with vyre's reason, rather than written for vyre to refuse later.
fn readable(p: v::Program) -> Result<v::Program, ExportError> {
    let refuse = |why: String| {
        ExportError::new(
            "program",
            "exported Program",
            format!("vyre cannot read it back: {why}"),
            "bind deep or repeated sub-expressions with `let`, or split the kernel into smaller ones",
        )
    };
    let bytes = super::files::encode(&p, false).map_err(|e| refuse(e.0))?;
    let back = std::panic::catch_unwind(|| v::Program::from_wire(&bytes).map(|_| ()));
    match back {
        Ok(Ok(())) => Ok(p),
        Ok(Err(e)) => Err(refuse(
            e.to_string()
                .split("Fix:")
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
        )),
        Err(_) => Err(refuse("vyre's decoder panicked on it".into())),
    }
}

/// The vyre Program of `p` (elaborated, valid); with `vyre_exit`, the first statement (`if
/// vyre_exit { return }`, which vyre's kernel does by itself) is left out.
fn build(p: &Program, vyre_exit: Option<&Expr>) -> Result<v::Program, ExportError> {
    let mut buffers = Vec::with_capacity(p.buffers.len());
    for (i, b) in p.buffers.iter().enumerate() {
        let node = format!("buffers[{i}]");
        let dt = data_type(b.elem, &node)?;
        let binding = b.binding.unwrap_or(0);
        let decl = match b.access {
            Access::Read => v::BufferDecl::read(&b.name, binding, dt),
            Access::ReadWrite => v::BufferDecl::read_write(&b.name, binding, dt),
            Access::Write => {
                v::BufferDecl::storage(&b.name, binding, v::BufferAccess::WriteOnly, dt)
            }
            Access::Uniform => v::BufferDecl::uniform(&b.name, binding, dt),
            Access::Workgroup => v::BufferDecl::workgroup(&b.name, b.count.unwrap_or(1), dt),
        };
        buffers.push(decl);
    }
    let mut env = Env::new(p);
    let mut cx = expr::Cx::new(p);
    let body = match vyre_exit {
        Some(c) => {
            env.assume(c, false);
            &p.body[1..]
        }
        None => &p.body[..],
    };
    let entry = stmts(body, &mut env, &mut cx, true)?;
    Ok(v::Program::wrapped(buffers, p.workgroup_size, entry))
}

/// vyre's element type for ours.
pub(crate) fn data_type(e: ElemType, node: &str) -> Result<v::DataType, ExportError> {
    Ok(match e {
        ElemType::Bool => v::DataType::Bool,
        ElemType::U8 => v::DataType::U8,
        ElemType::I8 => v::DataType::I8,
        ElemType::U16 => v::DataType::U16,
        ElemType::I16 => v::DataType::I16,
        ElemType::U32 => v::DataType::U32,
        ElemType::I32 => v::DataType::I32,
        ElemType::F16 => v::DataType::F16,
        ElemType::F32 => v::DataType::F32,
        ElemType::U64 | ElemType::I64 | ElemType::F64 => {
            return Err(sixty_four(node, &format!("{e} buffer")))
        }
    })
}

/// The refusal of every 64-bit type.
fn sixty_four(node: &str, construct: &str) -> ExportError {
    ExportError::new(
        node,
        construct,
        "vyre 0.7.2 has no 64-bit literal expressions (only opaque extension nodes that other \
         decoders need registered) and its PTX emitter has no f64 registers, so the export \
         keeps to 32-bit types",
        "use 32-bit types (u32, i32, f32) in the Program you export",
    )
}

/// Converts a statement list. `top` is true for the kernel's top-level body, the only place
/// where the early-return rewrite is exact (nothing runs after it).
fn stmts(
    list: &[Stmt],
    env: &mut Env,
    cx: &mut expr::Cx,
    top: bool,
) -> Result<Vec<v::Node>, ExportError> {
    // `let`s hoisted while converting the enclosing statement (its condition, its loop
    // bounds) belong before it, outside this list: kept aside and given back.
    let outer = std::mem::take(&mut cx.hoisted);
    let r = stmts_here(list, env, cx, top);
    cx.hoisted = outer;
    r
}

fn stmts_here(
    list: &[Stmt],
    env: &mut Env,
    cx: &mut expr::Cx,
    top: bool,
) -> Result<Vec<v::Node>, ExportError> {
    let mut out = Vec::new();
    for (k, s) in list.iter().enumerate() {
        if top {
            if let StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } = &s.kind
            {
                if proof::is_bare_return(then) && otherwise.is_empty() {
                    // `if c { return } rest` == `if !c { rest }` at the top level.
                    let c = cx.expr(cond, env, &s.id)?;
                    env.push();
                    env.assume(cond, false);
                    let rest = stmts(&list[k + 1..], env, cx, true)?;
                    env.pop();
                    out.append(&mut cx.hoisted);
                    out.push(v::Node::if_then(not(c), rest));
                    return Ok(out);
                }
            }
        }
        // The statement's own nodes go after the `let`s its expressions hoisted.
        let mut here = Vec::new();
        stmt(s, env, cx, &mut here)?;
        out.append(&mut cx.hoisted);
        out.append(&mut here);
    }
    Ok(out)
}

fn not(c: v::Expr) -> v::Expr {
    v::Expr::UnOp {
        op: v::UnOp::LogicalNot,
        operand: Box::new(c),
    }
}

fn stmt(
    s: &Stmt,
    env: &mut Env,
    cx: &mut expr::Cx,
    out: &mut Vec<v::Node>,
) -> Result<(), ExportError> {
    let id = s.id.as_str();
    match &s.kind {
        StmtKind::Let { name, value } => {
            let ty = env.ty(value).ok_or_else(|| internal(id, "untyped let"))?;
            cx.check_type(ty, id)?;
            match cx.guarded_atomic(value, env, id)? {
                Some((ok, atomic)) => {
                    out.push(v::Node::let_bind(name.as_str(), expr::zero(ty)));
                    out.push(v::Node::if_then(
                        ok,
                        vec![v::Node::assign(name.as_str(), atomic)],
                    ));
                }
                None => {
                    let e = cx.expr(value, env, id)?;
                    out.push(v::Node::let_bind(name.as_str(), e));
                }
            }
            env.declare(name, ty, Some(value));
        }
        StmtKind::Assign { name, value } => {
            let ty = env
                .var_ty(name)
                .ok_or_else(|| internal(id, "unknown variable"))?;
            match cx.guarded_atomic(value, env, id)? {
                Some((ok, atomic)) => out.push(v::Node::if_then_else(
                    ok,
                    vec![v::Node::assign(name.as_str(), atomic)],
                    vec![v::Node::assign(name.as_str(), expr::zero(ty))],
                )),
                None => {
                    let e = cx.expr(value, env, id)?;
                    out.push(v::Node::assign(name.as_str(), e));
                }
            }
        }
        StmtKind::Store {
            buffer,
            index,
            value,
        } => {
            let decl = env
                .program()
                .buffer(buffer)
                .ok_or_else(|| internal(id, "unknown buffer"))?;
            let mut val = cx.expr(value, env, id)?;
            if decl.elem.is_narrow() {
                val = v::Expr::cast(data_type(decl.elem, id)?, val);
            }
            if let Some(j) = cx.vyre_store_index(buffer, index) {
                // The import's form of vyre's store, which clamps its index itself.
                let j = cx.expr(j, env, id)?;
                out.push(v::Node::store(buffer.as_str(), j, val));
                return Ok(());
            }
            let mut i = cx.expr(index, env, id)?;
            if env.in_range(buffer, index) {
                out.push(v::Node::store(buffer.as_str(), i, val));
            } else {
                // In our semantics the value and the index are evaluated by every
                // invocation, in range or not, and the guard below reads the index once more:
                // an atomic or a subgroup operation in either runs first, bound to a name,
                // so the guard neither skips it nor runs it twice.
                if has_effects(index) {
                    i = bind(env.program(), id, "index", i, out);
                }
                if has_effects(value) {
                    val = bind(env.program(), id, "value", val, out);
                }
                let ok = cx.len_above(buffer, i.clone());
                out.push(v::Node::if_then(
                    ok,
                    vec![v::Node::store(buffer.as_str(), i, val)],
                ));
            }
        }
        StmtKind::If {
            cond,
            then,
            otherwise,
            ..
        } => {
            let c = cx.expr(cond, env, id)?;
            env.push();
            env.assume(cond, true);
            let t = stmts(then, env, cx, false)?;
            env.pop();
            env.push();
            env.assume(cond, false);
            let o = stmts(otherwise, env, cx, false)?;
            env.pop();
            out.push(if o.is_empty() {
                v::Node::if_then(c, t)
            } else {
                v::Node::if_then_else(c, t, o)
            });
        }
        StmtKind::Loop {
            var,
            from,
            to,
            body,
        } => {
            let f = cx.expr(from, env, id)?;
            let t = cx.expr(to, env, id)?;
            env.push();
            env.declare(var, crate::ir::ScalarType::U32, None);
            env.assume_loop(var, from, to);
            let b = stmts(body, env, cx, false)?;
            env.pop();
            out.push(v::Node::loop_for(var.as_str(), f, t, b));
        }
        StmtKind::Barrier(scope) => out.push(v::Node::Barrier {
            ordering: match scope {
                BarrierScope::Workgroup => v::MemoryOrdering::SeqCst,
                BarrierScope::Grid => v::MemoryOrdering::GridSync,
                BarrierScope::Subtask { threads } => {
                    return Err(ExportError::new(
                        id,
                        "barrier(subtask)",
                        format!(
                            "a sub-task barrier ({threads} threads) synchronises part of a \
                             workgroup, which vyre has no barrier for"
                        ),
                        "export the pipeline's steps one by one (a packed step of a fused kernel \
                         is where sub-task barriers come from), or use `barrier(workgroup)`",
                    ))
                }
            },
        }),
        StmtKind::Return => out.push(v::Node::Return),
        StmtKind::Sync(op) => {
            return Err(ExportError::new(
                id,
                "dataflow",
                format!(
                    "`{}` is a dataflow wait of a fused kernel, which vyre has no node for",
                    op.describe()
                ),
                "export the kernel fused with `--sync barrier` (grid barriers), or export the pipeline's steps one by one",
            ))
        }
        StmtKind::Block(list) => {
            env.push();
            let b = stmts(list, env, cx, false)?;
            env.pop();
            out.push(v::Node::block(b));
        }
    }
    Ok(())
}

fn internal(node: &str, what: &str) -> ExportError {
    ExportError::new(
        node,
        "internal",
        format!("{what} in a Program the validator accepted"),
        "report this bug with the Program file",
    )
}

/// True for the unary operators whose result is `bool` (used by the expression converter).
pub(crate) fn unary_is_predicate(op: UnOp) -> bool {
    matches!(op, UnOp::IsNan | UnOp::IsInf | UnOp::IsFinite | UnOp::LNot)
}

/// True when `e` contains an atomic or a subgroup operation: evaluating it a second time, or
/// in fewer invocations, changes results.
fn has_effects(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        found |= matches!(
            x,
            Expr::Atomic { .. }
                | Expr::Shuffle { .. }
                | Expr::SubgroupReduce(..)
                | Expr::Ballot(..)
                | Expr::Clock
        )
    });
    found
}

/// Binds `e` to a fresh name (`let`, pushed to `out`) and returns the name's use. The name is
/// one no statement of `p` declares: `vs_<what>_<node>`, with underscores added until free.
fn bind(p: &Program, node: &str, what: &str, e: v::Expr, out: &mut Vec<v::Node>) -> v::Expr {
    let mut declared = std::collections::HashSet::new();
    collect_names(&p.body, &mut declared);
    let clean: String = node
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let mut name = format!("vs_{what}_{clean}");
    while declared.contains(&name) {
        name.push('_');
    }
    out.push(v::Node::let_bind(name.as_str(), e));
    v::Expr::var(name.as_str())
}

/// Every name a `let` or a loop of `list` declares, at any depth.
fn collect_names(list: &[Stmt], names: &mut std::collections::HashSet<String>) {
    for s in list {
        match &s.kind {
            StmtKind::Let { name, .. } => {
                names.insert(name.clone());
            }
            StmtKind::Loop { var, body, .. } => {
                names.insert(var.clone());
                collect_names(body, names);
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_names(then, names);
                collect_names(otherwise, names);
            }
            StmtKind::Block(b) => collect_names(b, names),
            _ => {}
        }
    }
}

/// True when `e` contains an atomic.
pub(crate) fn has_atomic(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x, Expr::Atomic { .. }));
    found
}

impl crate::util::HasFix for ExportError {
    fn message(&self) -> String {
        format!(
            "cannot export `{}` to vyre: {}: {}",
            self.node, self.construct, self.why
        )
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }

    fn problem(&self) -> crate::util::Problem {
        crate::util::Problem::located(self.message(), self.fix()).on_node(self.node.clone())
    }
}

crate::util::problem::into_problem!(ExportError);
