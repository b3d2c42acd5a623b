//! Register forwarding in a fused Program: a load of a pipeline buffer at an index the same
//! thread has just stored to becomes a read of a variable holding the stored value, and the
//! stores to a transient buffer whose every load was forwarded are dropped.
//!
//! Soundness. The fused Program is already correct for the separations the planner gave (no
//! barrier between steps only where every dependence stays within one invocation), so between
//! two barriers a thread's loads of a host buffer see that thread's own earlier stores; what
//! is forwarded here is exactly that, in program order, and nothing across a barrier. A load
//! is replaced only when the store certainly ran before it:
//! - the store is proven in range (it sits under `if index < len(buffer)`): outside, a store
//!   does nothing and a load gives 0, so an out-of-range store has nothing to forward;
//! - the index is the same *stable* value: both index expressions expand (through variables
//!   declared once, never assigned, not loop counters) to the same expression of builtins,
//!   literals and buffer lengths (lengths known from the pipeline become literals);
//! - every condition the store sits under is also a condition the load sits under (the same
//!   stable expression with the same polarity); a condition that is not stable (it reads
//!   memory or a mutable variable, e.g. the `alive` flag of a lowered `return`) only matches
//!   loads inside that very `if`; stores inside a loop only serve loads later in the same
//!   iteration;
//! - no store, atomic or barrier between them may have changed the element: any store to the
//!   buffer at another index (it may alias), any atomic on it, any barrier, and a loop that
//!   writes it ends forwarding from earlier stores.
//!
//! Only value-typed buffers (`u32 i32 u64 i64 f32 f64`) are forwarded: a storage-only type
//! rounds or truncates on store, so the stored value is not what a load reads back.

use std::collections::{HashMap, HashSet};

use crate::ir::{walk_exprs, BinOp, Expr, Literal, NodeId, Scalar, ScalarType, Stmt, StmtKind};

use super::rewrite::{children_mut, let_, synth, SYNTHETIC};

/// Longest index or condition key compared (longer expressions are not forwarded).
const MAX_KEY: usize = 4096;

/// Most stores kept available at once; the oldest is forgotten past it. Forgetting a store
/// is always sound (its loads stay loads), and it bounds the walk: every `if` copies the
/// list and every load searches it, which was quadratic in the steps of a long chain whose
/// steps each store a buffer of their own. A step's loads are mostly of its neighbours'
/// stores, so a recent window keeps what forwarding is for.
const MAX_AVAIL: usize = 64;

/// What the pass may do with the host buffers of the fused Program.
pub(super) struct ForwardInput {
    /// Forwardable host buffers and their value type.
    pub elems: HashMap<String, ScalarType>,
    /// Host buffer lengths known from the pipeline.
    pub lens: HashMap<String, u64>,
    /// Transient pipeline buffers that no step outside the group reads: their stores are
    /// dropped when every load of them in the group is forwarded.
    pub droppable: HashSet<String>,
}

/// What the pass did (for tests and reports).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ForwardReport {
    /// Loads replaced by a forwarded value.
    pub forwarded_loads: usize,
    /// Transient buffers whose stores were all dropped.
    pub dropped: Vec<String>,
}

/// A condition on the path to a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cond {
    /// A stable expression (its key) and the branch taken.
    Stable(String, bool),
    /// A condition (or loop body) that only matches statements inside it.
    Opaque(usize),
}

/// A store whose value is available in `var`.
#[derive(Debug, Clone)]
struct Avail {
    id: usize,
    buffer: String,
    key: String,
    conds: Vec<Cond>,
    var: String,
    store: NodeId,
}

struct Walker<'a> {
    input: &'a ForwardInput,
    /// Stable variables: name -> definition.
    defs: HashMap<String, Expr>,
    keys: HashMap<String, Option<String>>,
    path: Vec<Cond>,
    next: usize,
    /// Store node -> (forwarding variable, its type), for stores whose value is used.
    used: HashMap<NodeId, (String, ScalarType)>,
    forwarded: usize,
}

/// Runs the pass over the fused body (node ids still `k|node` / [`SYNTHETIC`]).
pub(super) fn forward(body: &mut Vec<Stmt>, input: &ForwardInput) -> ForwardReport {
    let mut w = Walker {
        input,
        defs: stable_defs(body),
        keys: HashMap::new(),
        path: Vec::new(),
        next: 0,
        used: HashMap::new(),
        forwarded: 0,
    };
    let mut avail = Vec::new();
    w.list(body, &mut avail);

    // Transient buffers nobody loads any more need no stores.
    let mut still_read = HashSet::new();
    walk_exprs(body, &mut |e| match e {
        Expr::Load { buffer, .. } | Expr::Atomic { buffer, .. } => {
            still_read.insert(buffer.clone());
        }
        _ => {}
    });
    let mut dropped: Vec<String> = input
        .droppable
        .iter()
        .filter(|b| !still_read.contains(*b))
        .cloned()
        .collect();
    dropped.sort();
    let drop: HashSet<&str> = dropped.iter().map(String::as_str).collect();
    rewrite_stores(body, &w.used, &drop);

    let mut vars: Vec<_> = w.used.values().cloned().collect();
    vars.sort();
    body.splice(
        0..0,
        vars.into_iter()
            .map(|(name, ty)| let_(&name, Expr::Lit(Literal::Typed(zero(ty))))),
    );
    ForwardReport {
        forwarded_loads: w.forwarded,
        dropped,
    }
}

fn zero(ty: ScalarType) -> Scalar {
    match ty {
        ScalarType::Bool => Scalar::Bool(false),
        ScalarType::U32 => Scalar::U32(0),
        ScalarType::I32 => Scalar::I32(0),
        ScalarType::U64 => Scalar::U64(0),
        ScalarType::I64 => Scalar::I64(0),
        ScalarType::F32 => Scalar::F32(0.0),
        ScalarType::F64 => Scalar::F64(0.0),
    }
}

/// Variables declared exactly once, never assigned and not loop counters, with their values.
fn stable_defs(body: &[Stmt]) -> HashMap<String, Expr> {
    fn scan(
        list: &[Stmt],
        lets: &mut HashMap<String, (usize, Expr)>,
        changing: &mut HashSet<String>,
    ) {
        for s in list {
            match &s.kind {
                StmtKind::Let { name, value } => {
                    let e = lets.entry(name.clone()).or_insert((0, value.clone()));
                    e.0 += 1;
                }
                StmtKind::Assign { name, .. } => {
                    changing.insert(name.clone());
                }
                StmtKind::Loop { var, body, .. } => {
                    changing.insert(var.clone());
                    scan(body, lets, changing);
                }
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    scan(then, lets, changing);
                    scan(otherwise, lets, changing);
                }
                StmtKind::Block(b) => scan(b, lets, changing),
                StmtKind::Sync(op) => changing.extend(op.vars().1.map(str::to_string)),
                _ => {}
            }
        }
    }
    let mut lets = HashMap::new();
    let mut changing = HashSet::new();
    scan(body, &mut lets, &mut changing);
    lets.into_iter()
        .filter(|(n, (count, _))| *count == 1 && !changing.contains(n))
        .map(|(n, (_, e))| (n, e))
        .collect()
}

/// Buffers written (stored or atomically updated) in `list`, and whether it has a barrier.
fn writes(list: &[Stmt]) -> (HashSet<String>, bool) {
    let mut bufs = HashSet::new();
    let mut barrier = false;
    fn scan(list: &[Stmt], bufs: &mut HashSet<String>, barrier: &mut bool) {
        for s in list {
            match &s.kind {
                StmtKind::Store { buffer, .. } => {
                    bufs.insert(buffer.clone());
                }
                StmtKind::Barrier(_) | StmtKind::Sync(_) => *barrier = true,
                StmtKind::If {
                    then, otherwise, ..
                } => {
                    scan(then, bufs, barrier);
                    scan(otherwise, bufs, barrier);
                }
                StmtKind::Loop { body, .. } | StmtKind::Block(body) => scan(body, bufs, barrier),
                _ => {}
            }
        }
    }
    scan(list, &mut bufs, &mut barrier);
    walk_exprs(list, &mut |e| {
        if let Expr::Atomic { buffer, .. } = e {
            bufs.insert(buffer.clone());
        }
    });
    (bufs, barrier)
}

impl Walker<'_> {
    /// The key of a stable expression, or `None`.
    fn key(&mut self, e: &Expr, depth: usize) -> Option<String> {
        if depth > 64 {
            return None;
        }
        let k = match e {
            Expr::Lit(l) => match l {
                Literal::Int(v) => v.to_string(),
                Literal::Float(f) => format!("F{:x}_{:x}", f.value.to_bits(), f.f32.to_bits()),
                Literal::Typed(s) => match *s {
                    Scalar::U32(v) => v.to_string(),
                    Scalar::I32(v) => v.to_string(),
                    Scalar::U64(v) => v.to_string(),
                    Scalar::I64(v) => v.to_string(),
                    Scalar::Bool(b) => b.to_string(),
                    Scalar::F32(f) => format!("f{:x}", f.to_bits()),
                    Scalar::F64(f) => format!("d{:x}", f.to_bits()),
                },
            },
            Expr::Var(n) => {
                if let Some(k) = self.keys.get(n) {
                    return k.clone();
                }
                let k = match self.defs.get(n).cloned() {
                    Some(def) => self.key(&def, depth + 1),
                    None => None,
                };
                self.keys.insert(n.clone(), k.clone());
                return k;
            }
            Expr::Builtin(b) => format!("{b:?}"),
            Expr::Len(b) => match self.input.lens.get(b) {
                Some(n) => n.to_string(),
                None => format!("len({b})"),
            },
            Expr::Binary(op, a, b) => {
                format!(
                    "({op:?} {} {})",
                    self.key(a, depth + 1)?,
                    self.key(b, depth + 1)?
                )
            }
            Expr::Unary(op, a) => format!("({op:?} {})", self.key(a, depth + 1)?),
            Expr::Cast(t, a) => format!("(cast {t:?} {})", self.key(a, depth + 1)?),
            Expr::Bitcast(t, a) => format!("(bitcast {t:?} {})", self.key(a, depth + 1)?),
            Expr::Select(a, b, c) | Expr::Fma(a, b, c) => {
                let tag = if matches!(e, Expr::Select(..)) {
                    "select"
                } else {
                    "fma"
                };
                format!(
                    "({tag} {} {} {})",
                    self.key(a, depth + 1)?,
                    self.key(b, depth + 1)?,
                    self.key(c, depth + 1)?
                )
            }
            // Memory, other lanes and atomics are not stable.
            Expr::Load { .. }
            | Expr::Atomic { .. }
            | Expr::Shuffle { .. }
            | Expr::SubgroupReduce(..)
            | Expr::Ballot(_)
            | Expr::Clock => return None,
        };
        (k.len() <= MAX_KEY).then_some(k)
    }

    /// True when the path proves `index` inside `buffer` (`if index < len(buffer)` or
    /// `if len(buffer) > index`, lengths compared by value): a store outside does nothing
    /// and a load outside gives 0, so only an in-range store may be forwarded.
    fn in_range(&mut self, buffer: &str, index: &Expr) -> bool {
        let len = || Box::new(Expr::Len(buffer.to_string()));
        let idx = || Box::new(index.clone());
        let proofs = [
            Expr::Binary(BinOp::Lt, idx(), len()),
            Expr::Binary(BinOp::Gt, len(), idx()),
        ];
        proofs.iter().any(|p| {
            self.key(p, 0)
                .is_some_and(|k| self.path.contains(&Cond::Stable(k, true)))
        })
    }

    fn opaque(&mut self) -> Cond {
        self.next += 1;
        Cond::Opaque(self.next)
    }

    /// Replaces forwardable loads in `e`; atomics in `e` first end forwarding of their buffer.
    fn expr(&mut self, e: &mut Expr, avail: &mut Vec<Avail>) {
        let mut atomics = HashSet::new();
        e.visit(&mut |x| {
            if let Expr::Atomic { buffer, .. } = x {
                atomics.insert(buffer.clone());
            }
        });
        avail.retain(|a| !atomics.contains(&a.buffer));
        self.replace_loads(e, avail);
    }

    fn replace_loads(&mut self, e: &mut Expr, avail: &[Avail]) {
        for c in children_mut(e) {
            self.replace_loads(c, avail);
        }
        let Expr::Load { buffer, index } = e else {
            return;
        };
        let Some(key) = self.key(index, 0) else {
            return;
        };
        let path = &self.path;
        let hit = avail.iter().rev().find(|a| {
            &a.buffer == buffer && a.key == key && a.conds.iter().all(|c| path.contains(c))
        });
        if let Some(a) = hit {
            let ty = self.input.elems[buffer.as_str()];
            self.used.insert(a.store.clone(), (a.var.clone(), ty));
            *e = Expr::Var(a.var.clone());
            self.forwarded += 1;
        }
    }

    fn list(&mut self, list: &mut [Stmt], avail: &mut Vec<Avail>) {
        for s in list {
            let id = s.id.clone();
            match &mut s.kind {
                StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => {
                    self.expr(value, avail)
                }
                StmtKind::Store {
                    buffer,
                    index,
                    value,
                } => {
                    self.expr(index, avail);
                    self.expr(value, avail);
                    avail.retain(|a| &a.buffer != buffer);
                    let step = id.as_ref().split_once('|').map(|(k, _)| k.to_string());
                    let key = self.key(index, 0).filter(|_| self.in_range(buffer, index));
                    if let (Some(step), Some(key), true) = (
                        step,
                        key,
                        self.input.elems.contains_key(buffer.as_str()) && id.as_ref() != SYNTHETIC,
                    ) {
                        self.next += 1;
                        if avail.len() >= MAX_AVAIL {
                            avail.drain(..=avail.len() - MAX_AVAIL);
                        }
                        avail.push(Avail {
                            id: self.next,
                            buffer: buffer.clone(),
                            key,
                            conds: self.path.clone(),
                            var: format!("f{step}_fwd{}", self.next),
                            store: id,
                        });
                    }
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                    ..
                } => {
                    self.expr(cond, avail);
                    let (yes, no) = match self.key(cond, 0) {
                        Some(k) => (Cond::Stable(k.clone(), true), Cond::Stable(k, false)),
                        None => (self.opaque(), self.opaque()),
                    };
                    let before: HashSet<usize> = avail.iter().map(|a| a.id).collect();
                    let mut t = avail.clone();
                    self.path.push(yes);
                    self.list(then, &mut t);
                    self.path.pop();
                    let mut o = avail.clone();
                    self.path.push(no);
                    self.list(otherwise, &mut o);
                    self.path.pop();
                    // Kept: what both branches kept, and what either added (it carries the
                    // branch's condition, so only loads under that condition can use it).
                    let in_o: HashSet<usize> = o.iter().map(|a| a.id).collect();
                    let mut merged: Vec<Avail> = t
                        .into_iter()
                        .filter(|a| !before.contains(&a.id) || in_o.contains(&a.id))
                        .collect();
                    merged.extend(o.into_iter().filter(|a| !before.contains(&a.id)));
                    let over = merged.len().saturating_sub(MAX_AVAIL);
                    merged.drain(..over);
                    *avail = merged;
                }
                StmtKind::Loop { from, to, body, .. } => {
                    self.expr(from, avail);
                    self.expr(to, avail);
                    let (written, barrier) = writes(body);
                    if barrier {
                        avail.clear();
                    }
                    avail.retain(|a| !written.contains(&a.buffer));
                    let mut b = avail.clone();
                    let tok = self.opaque();
                    self.path.push(tok);
                    self.list(body, &mut b);
                    self.path.pop();
                }
                StmtKind::Block(b) => self.list(b, avail),
                // Another workgroup's writes become visible at a wait: forget every store.
                StmtKind::Barrier(_) | StmtKind::Sync(_) => avail.clear(),
                StmtKind::Return => {}
            }
        }
    }
}

fn has_atomic(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x, Expr::Atomic { .. }));
    found
}

/// Stores whose value is forwarded also write it to their variable; stores to `drop`
/// buffers go (keeping the variable update and any atomic they evaluate).
fn rewrite_stores(
    list: &mut Vec<Stmt>,
    used: &HashMap<NodeId, (String, ScalarType)>,
    drop: &HashSet<&str>,
) {
    let old = std::mem::take(list);
    for mut s in old {
        match &mut s.kind {
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                let dropped = drop.contains(buffer.as_str()) && !has_atomic(index);
                match used.get(&s.id) {
                    Some((var, _)) => {
                        let v = std::mem::replace(value, Expr::Var(var.clone()));
                        let assign = StmtKind::Assign {
                            name: var.clone(),
                            value: v,
                        };
                        if dropped {
                            // The store's own node: the inspector shows the update as it.
                            list.push(Stmt {
                                id: s.id,
                                kind: assign,
                            });
                            continue;
                        }
                        list.push(synth(assign));
                    }
                    None if dropped && !has_atomic(value) => continue,
                    None => {}
                }
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                rewrite_stores(then, used, drop);
                rewrite_stores(otherwise, used, drop);
            }
            StmtKind::Loop { body, .. } | StmtKind::Block(body) => rewrite_stores(body, used, drop),
            _ => {}
        }
        list.push(s);
    }
}
