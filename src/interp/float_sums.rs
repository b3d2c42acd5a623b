//! What a float atomic sum's result may be, whatever the order of its additions.
//!
//! The order in which the threads' `atomic add` operations reach an element is not defined, and
//! float addition is not associative: the GPU's `f32` sum of 2^22 atomic adds differs from the
//! interpreter's sequential one. An element that only float atomic adds write is therefore
//! compared against an order-independent bound (`runtime::parity`), computed from what the
//! interpreter logs here while it runs: per element, the number of adds `n` and
//! `S = |x0| + sum |v_k|` (the initial value and the added values).
//!
//! Only buffers that the Program writes with float atomic adds *and nothing else* (no store,
//! no other atomic operation) are logged: for those, every element's final value is the
//! initial value plus its terms in some order. Values derived from such a sum (the old values
//! an atomic returns, or a workgroup-memory sum stored later) are not covered and stay exact.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ir::{AtomicOp, ElemType, Expr, Program, StmtKind};

/// One element of a float atomic sum.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FloatSum {
    /// Atomic adds applied to it.
    pub adds: u64,
    /// `|initial value| + sum |added value|`, rounded upwards (a bound of the exact sum).
    pub magnitude: f64,
}

/// The float atomic sums of one interpreted dispatch, per buffer written only by them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FloatSums {
    /// Buffer name -> one entry per element.
    pub buffers: BTreeMap<String, Vec<FloatSum>>,
}

/// Names of the host buffers of `p` whose elements only float (`f32`, `f64`) atomic adds write.
pub fn float_add_targets(p: &Program) -> BTreeSet<String> {
    let mut adds = BTreeSet::new();
    let mut other = BTreeSet::new();
    p.walk_stmts(&mut |s| {
        let exprs: Vec<&Expr> = match &s.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => vec![value],
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                other.insert(buffer.clone());
                vec![index, value]
            }
            StmtKind::If { cond, .. } => vec![cond],
            StmtKind::Loop { from, to, .. } => vec![from, to],
            StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Block(_) | StmtKind::Sync(_) => {
                vec![]
            }
        };
        for e in exprs {
            e.visit(&mut |x| {
                if let Expr::Atomic { op, buffer, .. } = x {
                    if *op == AtomicOp::Add {
                        adds.insert(buffer.clone());
                    } else {
                        other.insert(buffer.clone());
                    }
                }
            });
        }
    });
    adds.into_iter()
        .filter(|b| {
            !other.contains(b)
                && p.buffer(b).is_some_and(|d| {
                    d.access.is_host() && matches!(d.elem, ElemType::F32 | ElemType::F64)
                })
        })
        .collect()
}

/// The per-element log of one buffer while the interpreter runs (shared by parallel units).
#[derive(Debug)]
pub(crate) struct Log {
    adds: Vec<AtomicU64>,
    /// `f64` bits of the running sum of magnitudes.
    magnitude: Vec<AtomicU64>,
}

impl Log {
    /// A log of `len` elements.
    pub(crate) fn new(len: usize) -> Log {
        Log {
            adds: (0..len).map(|_| AtomicU64::new(0)).collect(),
            magnitude: (0..len).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Records one add of a value of magnitude `m` to element `i`.
    pub(crate) fn add(&self, i: usize, m: f64) {
        self.adds[i].fetch_add(1, Ordering::Relaxed);
        let _ = self.magnitude[i].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
            Some((f64::from_bits(b) + m).to_bits())
        });
    }

    /// The entries, with the initial values' magnitudes (`initial[i]`) added. The magnitudes
    /// are sums of non-negative `f64` terms, each rounding by at most a relative 2^-53, so
    /// `n` of them stay below the exact sum times `1 / (1 - n 2^-53)`: that factor makes each
    /// an upper bound.
    pub(crate) fn finish(&self, initial: impl Fn(usize) -> f64) -> Vec<FloatSum> {
        (0..self.adds.len())
            .map(|i| {
                let adds = self.adds[i].load(Ordering::Relaxed);
                let sum = f64::from_bits(self.magnitude[i].load(Ordering::Relaxed)) + initial(i);
                let slack = 1.0 - (adds as f64 + 1.0) * f64::EPSILON / 2.0;
                FloatSum {
                    adds,
                    magnitude: if slack > 0.0 {
                        sum / slack
                    } else {
                        f64::INFINITY
                    },
                }
            })
            .collect()
    }
}
