//! The instrumented build: a Program transform that times every statement.
//!
//! Around each statement of the Program (nested ones too, `return` excepted: nothing runs
//! after it) the transform adds, in the same statement list:
//!
//! ```text
//! let T_k = clock();                   // before the statement
//! <the statement>
//! if SAMPLED { let D_k = atomic add TABLE[k], clock() - T_k (relaxed) }
//! ```
//!
//! so slot `k` of the extra `u64` buffer `TABLE` sums, over the threads of sampled
//! workgroups, the statement's *inclusive* time: a loop's slot holds its whole execution,
//! its body statements' slots hold theirs (the report derives each statement's own share by
//! subtracting its children). `SAMPLED` is computed once per thread at the top of the body:
//! every `stride`-th workgroup in linear order (`wgid.x + nwg.x * (wgid.y + nwg.y *
//! wgid.z)`), a choice uniform over the workgroup, so the added `if` never splits a warp.
//!
//! The added statements carry instrumentation node ids ([`NodeId::instrumentation`]), which
//! the interpreter's `clock()` does not count: there a slot holds exactly the number of the
//! Program's own statements each sampled thread started inside the timed one (1 per run of a
//! simple statement). On a GPU `clock()` is `%clock64`, the SM's cycle counter.
//!
//! Nothing else changes: every buffer, binding and statement of the plain Program is kept,
//! so its outputs are the plain build's (the tests check it on every fixture).

use std::collections::HashSet;

use super::ProfileError;
use crate::ir::{
    Access, AtomicOp, AtomicOrder, Axis, BinOp, BufferDecl, Builtin, ElemType, Expr, Literal,
    NodeId, Program, Scalar, ScalarType, Stmt, StmtKind,
};

/// One timed statement: slot `k` of the table belongs to `slots[k]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// The statement's node id in the plain Program.
    pub node: NodeId,
    /// The slot of the enclosing timed statement (`None` at the top of the body).
    pub parent: Option<usize>,
}

/// An instrumented Program and what its table means.
#[derive(Debug, Clone, PartialEq)]
pub struct Instrumented {
    /// The Program with the timing statements and the table buffer added.
    pub program: Program,
    /// Name of the added `u64` `read_write` buffer (the last binding).
    pub table: String,
    /// Its binding slot.
    pub binding: u32,
    /// What each table element times, in program order.
    pub slots: Vec<Slot>,
    /// Every how many workgroups one is sampled (1 = all).
    pub stride: u32,
}

impl Instrumented {
    /// The zeroed table buffer to pass beside the plain Program's host buffers.
    pub fn table_buffer(&self) -> crate::inputs::HostBuffer {
        crate::inputs::HostBuffer {
            name: self.table.clone(),
            elem: ElemType::U64,
            access: Access::ReadWrite,
            binding: self.binding,
            data: vec![0; self.slots.len().max(1) * 8],
        }
    }

    /// Reads the table back from the buffers of a finished run (`None` when it is absent or
    /// shorter than the slot count).
    pub fn read_table(&self, buffers: &[crate::inputs::HostBuffer]) -> Option<Vec<u64>> {
        let b = buffers.iter().find(|b| b.name == self.table)?;
        let words: Vec<u64> = b
            .data
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect();
        (words.len() >= self.slots.len()).then(|| words[..self.slots.len()].to_vec())
    }
}

/// How many workgroups to sample at most: enough for a stable share, few enough that the
/// table's atomics stay a small part of the run.
pub const SAMPLED_WORKGROUPS: u64 = 256;

/// The sampling stride for a grid of `workgroups`: every workgroup up to
/// [`SAMPLED_WORKGROUPS`], then every `ceil(workgroups / SAMPLED_WORKGROUPS)`-th.
pub fn stride_for(workgroups: u64) -> u32 {
    workgroups
        .div_ceil(SAMPLED_WORKGROUPS)
        .clamp(1, u64::from(u32::MAX)) as u32
}

/// Instruments `program` (see the module documentation), sampling every `stride`-th
/// workgroup.
pub fn instrument(program: &Program, stride: u32) -> Result<Instrumented, ProfileError> {
    if program.body.is_empty() {
        return Err(ProfileError::Empty {
            program: program.name.clone(),
        });
    }
    let prefix = free_prefix(program);
    let table = format!("{prefix}table");
    let binding = program
        .buffers
        .iter()
        .filter_map(|b| b.binding)
        .max()
        .map_or(0, |b| b + 1);
    let mut t = Transform {
        prefix: prefix.clone(),
        table: table.clone(),
        sampled: format!("{prefix}sampled"),
        slots: Vec::new(),
    };
    let first = program.body[0].id.clone();
    let mut body = vec![Stmt {
        id: first.instrumentation("profile.sampled"),
        kind: StmtKind::Let {
            name: t.sampled.clone(),
            value: sampled_expr(stride),
        },
    }];
    body.extend(t.list(&program.body, None));
    let mut out = program.clone();
    out.body = body;
    out.buffers.push(BufferDecl {
        name: table.clone(),
        binding: Some(binding),
        access: Access::ReadWrite,
        elem: ElemType::U64,
        count: None,
    });
    Ok(Instrumented {
        program: out,
        table,
        binding,
        slots: t.slots,
        stride: stride.max(1),
    })
}

struct Transform {
    prefix: String,
    table: String,
    sampled: String,
    slots: Vec<Slot>,
}

impl Transform {
    fn list(&mut self, list: &[Stmt], parent: Option<usize>) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(list.len() * 3);
        for s in list {
            if matches!(s.kind, StmtKind::Return) {
                out.push(s.clone());
                continue;
            }
            let k = self.slots.len();
            self.slots.push(Slot {
                node: s.id.clone(),
                parent,
            });
            let start = format!("{}t{k}", self.prefix);
            out.push(Stmt {
                id: s.id.instrumentation("profile.start"),
                kind: StmtKind::Let {
                    name: start.clone(),
                    value: Expr::Clock,
                },
            });
            out.push(self.nested(s, k));
            out.push(self.end(s, k, &start));
        }
        out
    }

    /// `s` with its nested statement lists instrumented.
    fn nested(&mut self, s: &Stmt, k: usize) -> Stmt {
        Stmt {
            id: s.id.clone(),
            kind: s
                .kind
                .clone()
                .map_lists(&mut |list| self.list(&list, Some(k))),
        }
    }

    /// `if SAMPLED { let D_k = atomic add TABLE[k], clock() - T_k }`.
    fn end(&self, s: &Stmt, k: usize, start: &str) -> Stmt {
        let add = Stmt {
            id: s.id.instrumentation("profile.add"),
            kind: StmtKind::Let {
                name: format!("{}d{k}", self.prefix),
                value: Expr::Atomic {
                    op: AtomicOp::Add,
                    buffer: self.table.clone(),
                    index: Box::new(u32_lit(k as u32)),
                    value: Box::new(Expr::Binary(
                        BinOp::Sub,
                        Box::new(Expr::Clock),
                        Box::new(Expr::Var(start.to_string())),
                    )),
                    expected: None,
                    order: AtomicOrder::Relaxed,
                },
            },
        };
        Stmt {
            id: s.id.instrumentation("profile.end"),
            kind: StmtKind::If {
                cond: Expr::Var(self.sampled.clone()),
                then: vec![add],
                otherwise: Vec::new(),
                has_else: false,
            },
        }
    }
}

fn u32_lit(v: u32) -> Expr {
    Expr::Lit(Literal::Typed(Scalar::U32(v)))
}

/// `(wgid.x + nwg.x * (wgid.y + nwg.y * wgid.z)) % stride == 0`, in `u64` so that no grid
/// size wraps it.
fn sampled_expr(stride: u32) -> Expr {
    let wide = |b: Builtin| Box::new(Expr::Cast(ScalarType::U64, Box::new(Expr::Builtin(b))));
    let bin = |op, a, b| Box::new(Expr::Binary(op, a, b));
    let linear = bin(
        BinOp::Add,
        wide(Builtin::WorkgroupId(Axis::X)),
        bin(
            BinOp::Mul,
            wide(Builtin::NumWorkgroups(Axis::X)),
            bin(
                BinOp::Add,
                wide(Builtin::WorkgroupId(Axis::Y)),
                bin(
                    BinOp::Mul,
                    wide(Builtin::NumWorkgroups(Axis::Y)),
                    wide(Builtin::WorkgroupId(Axis::Z)),
                ),
            ),
        ),
    );
    let stride = Box::new(Expr::Lit(Literal::Typed(Scalar::U64(u64::from(
        stride.max(1),
    )))));
    Expr::Binary(
        BinOp::Eq,
        bin(BinOp::Rem, linear, stride),
        Box::new(Expr::Lit(Literal::Typed(Scalar::U64(0)))),
    )
}

/// A name prefix no buffer or variable of `program` starts with (`vs_prof_`, with
/// underscores added until free), so the added names never shadow the Program's.
fn free_prefix(program: &Program) -> String {
    let mut names: HashSet<&str> = program.buffers.iter().map(|b| b.name.as_str()).collect();
    program.walk_stmts(&mut |s| match &s.kind {
        StmtKind::Let { name, .. } | StmtKind::Assign { name, .. } => {
            names.insert(name);
        }
        StmtKind::Loop { var, .. } => {
            names.insert(var);
        }
        _ => {}
    });
    let mut prefix = "vs_prof_".to_string();
    while names.iter().any(|n| n.starts_with(&prefix)) {
        prefix.push('_');
    }
    prefix
}
