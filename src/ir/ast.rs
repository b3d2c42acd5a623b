//! The Program model (format version 1): buffers, statements, expressions.
//!
//! Statements carry their node id (their JSON path, e.g. `body[1].then[0]`), the key every
//! diagnostic, source-map entry and TUI panel speaks in.

use super::run_spec::RunSpec;
use super::types::{ElemType, Scalar, ScalarType};

pub use super::node_id::NodeId;
pub use super::ops::{AtomicOp, AtomicOrder, BinOp, ReduceOp, UnOp};

/// One compute kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// Kernel name (`[A-Za-z_][A-Za-z0-9_]*`).
    pub name: String,
    /// Free text.
    pub doc: Option<String>,
    /// Default threads per workgroup (CUDA block), x/y/z.
    pub workgroup_size: [u32; 3],
    /// Buffer declarations in file order.
    pub buffers: Vec<BufferDecl>,
    /// Statements run once per invocation.
    pub body: Vec<Stmt>,
    /// Default dispatch.
    pub run: Option<RunSpec>,
}

/// Where a buffer lives and who may write it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Host buffer, read-only in the kernel.
    Read,
    /// Host buffer, read and written.
    ReadWrite,
    /// Host buffer, written only.
    Write,
    /// Host buffer, read-only and the same for every thread (small parameters).
    Uniform,
    /// Per-workgroup shared memory.
    Workgroup,
}

impl Access {
    /// Spec spelling.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::ReadWrite => "read_write",
            Access::Write => "write",
            Access::Uniform => "uniform",
            Access::Workgroup => "workgroup",
        }
    }

    /// Parses the spec spelling.
    pub fn from_name(s: &str) -> Option<Self> {
        [
            Access::Read,
            Access::ReadWrite,
            Access::Write,
            Access::Uniform,
            Access::Workgroup,
        ]
        .into_iter()
        .find(|a| a.name() == s)
    }

    /// True for buffers the kernel may store to.
    pub fn is_writable(self) -> bool {
        matches!(self, Access::ReadWrite | Access::Write | Access::Workgroup)
    }

    /// True for host-visible buffers (all but workgroup).
    pub fn is_host(self) -> bool {
        !matches!(self, Access::Workgroup)
    }
}

/// One buffer declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct BufferDecl {
    /// Unique name.
    pub name: String,
    /// Binding slot (host buffers only).
    pub binding: Option<u32>,
    /// Access mode.
    pub access: Access,
    /// Element type.
    pub elem: ElemType,
    /// Element count (workgroup buffers only).
    pub count: Option<u32>,
}

/// Scope of a barrier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BarrierScope {
    /// All threads of the workgroup.
    Workgroup,
    /// All threads of the dispatch (cooperative launch).
    Grid,
    /// The threads of one sub-task of the workgroup: threads `lid.x / threads` equal wait for
    /// each other (a packed step of a fused kernel runs `workgroup_size.x / threads` sub-tasks
    /// side by side in one block, each synchronising only itself).
    Subtask {
        /// Threads per sub-task (a multiple of 32 dividing the workgroup's x size).
        threads: u32,
    },
}

impl BarrierScope {
    /// The scope's name in the Program format (`workgroup`, `grid`, `subtask`).
    pub fn name(self) -> &'static str {
        match self {
            BarrierScope::Workgroup => "workgroup",
            BarrierScope::Grid => "grid",
            BarrierScope::Subtask { .. } => "subtask",
        }
    }
}

/// A statement with its node id.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    /// JSON path of this statement.
    pub id: NodeId,
    /// What it does.
    pub kind: StmtKind,
}

/// Statement kinds (spec table "Statements").
#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `{"let": NAME, "value": E}`
    Let {
        /// New variable.
        name: String,
        /// Initial value.
        value: Expr,
    },
    /// `{"assign": NAME, "value": E}`
    Assign {
        /// Existing variable.
        name: String,
        /// New value.
        value: Expr,
    },
    /// `{"store": BUF, "index": E, "value": E}`
    Store {
        /// Target buffer.
        buffer: String,
        /// Element index (`u32`).
        index: Expr,
        /// Stored value.
        value: Expr,
    },
    /// `{"if": E, "then": [..], "else": [..]}`
    If {
        /// Condition (`bool`).
        cond: Expr,
        /// Taken branch.
        then: Vec<Stmt>,
        /// Other branch (empty when absent).
        otherwise: Vec<Stmt>,
        /// Whether the file had an `else` key (kept for faithful printing).
        has_else: bool,
    },
    /// `{"loop": NAME, "from": E, "to": E, "body": [..]}`
    Loop {
        /// `u32` counter name.
        var: String,
        /// First value.
        from: Expr,
        /// End (exclusive).
        to: Expr,
        /// Loop body.
        body: Vec<Stmt>,
    },
    /// `{"barrier": "workgroup" | "grid"}`
    Barrier(BarrierScope),
    /// `{"return": {}}`
    Return,
    /// `{"block": [..]}`
    Block(Vec<Stmt>),
    /// Dataflow synchronisation of a fused persistent kernel (made by fusion only; see
    /// [`super::sync`]).
    Sync(super::sync::SyncOp),
}

/// A literal as written.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Literal {
    /// Bare integer; its type comes from context (see [`crate::validate::elaborate`]).
    Int(i128),
    /// Bare fractional number; its type comes from context.
    Float(FloatLit),
    /// `true`/`false` or a typed literal such as `{"u64": 7}`.
    Typed(Scalar),
}

/// A bare fractional literal: the decimal as written, rounded once to each float type it may
/// take from context. The f32 is rounded from the decimal, not from the f64: a decimal just
/// above an f32 midpoint can round to that midpoint in f64, and rounding again would tie to
/// even (see `docs/program-format.md`, literals).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatLit {
    /// The nearest f64.
    pub value: f64,
    /// The nearest f32.
    pub f32: f32,
}

impl FloatLit {
    /// The literal whose decimal is exactly `value` (its f32 is `value` rounded once).
    pub fn exact(value: f64) -> FloatLit {
        FloatLit {
            value,
            f32: value as f32,
        }
    }
}

/// Axis of a builtin id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Axis {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl Axis {
    /// `x`, `y` or `z`.
    pub fn name(self) -> &'static str {
        match self {
            Axis::X => "x",
            Axis::Y => "y",
            Axis::Z => "z",
        }
    }

    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }
}

/// Builtin invocation ids (all `u32`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// `{"gid": A}` global invocation id.
    GlobalId(Axis),
    /// `{"lid": A}` id within the workgroup.
    LocalId(Axis),
    /// `{"wgid": A}` workgroup id.
    WorkgroupId(Axis),
    /// `{"nwg": A}` number of workgroups.
    NumWorkgroups(Axis),
    /// `{"lane": {}}` lane within the warp.
    Lane,
    /// `{"subgroup_size": {}}` warp width.
    SubgroupSize,
}

/// Expressions (spec table "Expressions").
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A literal.
    Lit(Literal),
    /// A variable.
    Var(String),
    /// A builtin id.
    Builtin(Builtin),
    /// `{"load": BUF, "index": E}`
    Load {
        /// Buffer name.
        buffer: String,
        /// Index (`u32`).
        index: Box<Expr>,
    },
    /// `{"len": BUF}`
    Len(String),
    /// `{"OP": [A, B]}`
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `{"OP": A}`
    Unary(UnOp, Box<Expr>),
    /// `{"select": [C, A, B]}`
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `{"cast": T, "value": E}`
    Cast(ScalarType, Box<Expr>),
    /// `{"bitcast": T, "value": E}`
    Bitcast(ScalarType, Box<Expr>),
    /// `{"fma": [A, B, C]}`
    Fma(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `{"atomic": OP, "buffer": BUF, "index": E, "value": E, "expected": E, "order": O}`
    Atomic {
        /// Operation.
        op: AtomicOp,
        /// Buffer name.
        buffer: String,
        /// Index (`u32`).
        index: Box<Expr>,
        /// Operand (the new value for `cas`).
        value: Box<Expr>,
        /// Compared value (`cas` only).
        expected: Option<Box<Expr>>,
        /// Memory order (`seq_cst` when the file has no `order`).
        order: AtomicOrder,
    },
    /// `{"shuffle": E, "lane": E}`
    Shuffle {
        /// Value read from the other lane.
        value: Box<Expr>,
        /// Source lane (`u32`).
        lane: Box<Expr>,
    },
    /// `{"subgroup_reduce": OP, "value": E}`
    SubgroupReduce(ReduceOp, Box<Expr>),
    /// `{"ballot": E}`
    Ballot(Box<Expr>),
    /// The thread's cycle counter (`u64`), made by the profiler's instrumentation only
    /// (`crate::profile::instrument`); not part of the file format. The GPU reads
    /// `%clock64`; the interpreter reads a deterministic count of the statements the
    /// invocation has started that are not instrumentation ([`NodeId::is_instrumentation`]).
    Clock,
}

impl Program {
    /// A stable fingerprint of the whole Program (FNV-1a of its full debug form, node ids
    /// included): two Programs are the same kernel source exactly when their fingerprints
    /// are, e.g. the fused kernel a run launched and the one its timeline recorded.
    pub fn fingerprint(&self) -> u64 {
        crate::util::fnv1a(format!("{self:?}").as_bytes())
    }

    /// The declaration of buffer `name`.
    pub fn buffer(&self, name: &str) -> Option<&BufferDecl> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// Host-visible buffers sorted by binding (the kernel ABI order).
    pub fn host_buffers(&self) -> Vec<&BufferDecl> {
        let mut v: Vec<&BufferDecl> = self.buffers.iter().filter(|b| b.access.is_host()).collect();
        v.sort_by_key(|b| b.binding.unwrap_or(u32::MAX));
        v
    }

    /// Calls `f` on every statement, depth first, in program order.
    pub fn walk_stmts<'a>(&'a self, f: &mut dyn FnMut(&'a Stmt)) {
        walk_list(&self.body, f);
    }

    /// The statement with node id `id`.
    pub fn find_stmt(&self, id: &str) -> Option<&Stmt> {
        let mut found = None;
        self.walk_stmts(&mut |s| {
            if found.is_none() && s.id == id {
                found = Some(s);
            }
        });
        found
    }
}

impl StmtKind {
    /// The same statement with each nested statement list (an `if`'s branches, a loop's body,
    /// a block) replaced by `f` of it; other kinds are returned as they are.
    pub fn map_lists(self, f: &mut dyn FnMut(Vec<Stmt>) -> Vec<Stmt>) -> StmtKind {
        match self {
            StmtKind::If {
                cond,
                then,
                otherwise,
                has_else,
            } => StmtKind::If {
                cond,
                then: f(then),
                otherwise: f(otherwise),
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
                body: f(body),
            },
            StmtKind::Block(b) => StmtKind::Block(f(b)),
            other => other,
        }
    }
}

/// Calls `f` on every statement of `list`, depth first, in program order (the walk of
/// [`Program::walk_stmts`] over a part of a body).
pub fn walk_list<'a>(list: &'a [Stmt], f: &mut dyn FnMut(&'a Stmt)) {
    for s in list {
        f(s);
        match &s.kind {
            StmtKind::If {
                then, otherwise, ..
            } => {
                walk_list(then, f);
                walk_list(otherwise, f);
            }
            StmtKind::Loop { body, .. } => walk_list(body, f),
            StmtKind::Block(b) => walk_list(b, f),
            _ => {}
        }
    }
}

impl Expr {
    /// Calls `f` on this expression and every sub-expression, pre-order.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Lit(_) | Expr::Var(_) | Expr::Builtin(_) | Expr::Len(_) | Expr::Clock => {}
            Expr::Load { index, .. } => index.visit(f),
            Expr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Unary(_, a)
            | Expr::Cast(_, a)
            | Expr::Bitcast(_, a)
            | Expr::SubgroupReduce(_, a)
            | Expr::Ballot(a) => a.visit(f),
            Expr::Select(a, b, c) | Expr::Fma(a, b, c) => {
                a.visit(f);
                b.visit(f);
                c.visit(f);
            }
            Expr::Atomic {
                index,
                value,
                expected,
                ..
            } => {
                index.visit(f);
                value.visit(f);
                if let Some(e) = expected {
                    e.visit(f);
                }
            }
            Expr::Shuffle { value, lane } => {
                value.visit(f);
                lane.visit(f);
            }
        }
    }
}
