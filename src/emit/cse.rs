//! Reuse of computed values: pure IR operations and element addresses are computed once per
//! scope and reused by later occurrences (value numbering on the operand registers).
//!
//! Why it is sound:
//! - keys name operands by register (or immediate), and an entry is only made when no
//!   operand register can change: registers of assigned variables are *mutable* and never
//!   appear in keys; a cached result that a `let` of an assigned variable adopted becomes
//!   mutable and is no longer served;
//! - entries live in the scope that computed them and its nested scopes, so every use is
//!   dominated by the definition: a branch body's entries vanish when it ends. The copies of
//!   an unrolled loop share their enclosing scope's entries (straight-line code, the first
//!   copy dominates the later ones). Only IR-level operations are cached, never instructions
//!   that emitter helpers write inside their own internal branches.
//!
//! After unrolling, this is what makes `tile[l]` and `tile[l + 64]` share one address
//! register (`[%r6]`, `[%r6+256]`), the way nvcc addresses its reduction.

use std::collections::HashMap;

use super::regs::Reg;
use super::writer::{Val, Writer};
use crate::ir::{BinOp, ScalarType, UnOp};

/// One operand of a cached operation: a register, or an immediate by its bits (its type is
/// in [`OpKey`]'s operand pair).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum Operand {
    /// A register that never changes after its definition.
    Reg(Reg),
    /// An immediate ([`crate::ir::Scalar::to_bits`]).
    Imm(u64),
}

/// The operation an IR expression computes, on operands that never change: two
/// occurrences with equal keys have equal values.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum OpKey {
    /// A unary operator on a typed operand.
    Unary(UnOp, (ScalarType, Operand)),
    /// A binary operator on typed operands.
    Binary(BinOp, (ScalarType, Operand), (ScalarType, Operand)),
}

/// Values and addresses computed in one scope.
#[derive(Debug, Clone, Default)]
pub(super) struct Cache {
    /// Operation key -> result register.
    values: HashMap<OpKey, Val>,
    /// (buffer, index register) -> address register.
    addresses: HashMap<(String, Reg), Reg>,
}

impl Writer<'_> {
    /// True when `v` is an immediate or a register that never changes after its definition.
    pub(super) fn stable(&self, v: &Val) -> bool {
        match v {
            Val::Imm(_) => true,
            Val::Reg { name, .. } => !self.out.mutable.contains(name),
        }
    }

    /// The key operand of `v` (`None` when it may change).
    fn key_operand(&self, v: &Val) -> Option<(ScalarType, Operand)> {
        if !self.stable(v) {
            return None;
        }
        Some(match v {
            Val::Reg { name, ty, .. } => (*ty, Operand::Reg(name.clone())),
            Val::Imm(s) => (s.ty(), Operand::Imm(s.to_bits())),
        })
    }

    /// The key of unary `op` on `x` (`None` when `x` may change).
    pub(super) fn unary_key(&self, op: UnOp, x: &Val) -> Option<OpKey> {
        Some(OpKey::Unary(op, self.key_operand(x)?))
    }

    /// The key of binary `op` on `x` and `y` (`None` when an operand may change).
    pub(super) fn binary_key(&self, op: BinOp, x: &Val, y: &Val) -> Option<OpKey> {
        Some(OpKey::Binary(
            op,
            self.key_operand(x)?,
            self.key_operand(y)?,
        ))
    }

    /// A value computed earlier in this scope (or an enclosing one) under `key`.
    pub(super) fn reuse(&self, key: &Option<OpKey>) -> Option<Val> {
        let key = key.as_ref()?;
        let v = self.caches.iter().rev().find_map(|c| c.values.get(key))?;
        if !self.stable(v) {
            return None;
        }
        Some(match v {
            Val::Reg { name, ty, .. } => Val::Reg {
                name: name.clone(),
                ty: *ty,
                fresh: false,
            },
            imm => imm.clone(),
        })
    }

    /// Records `v` as the value of `key` in the innermost scope.
    pub(super) fn remember(&mut self, key: Option<OpKey>, v: &Val) {
        if let (Some(k), Some(top)) = (key, self.caches.last_mut()) {
            top.values.insert(k, v.clone());
        }
    }

    /// The address register of element `index_reg` of `buffer`, if computed in scope.
    pub(super) fn reuse_address(&self, buffer: &str, index_reg: &Reg) -> Option<Reg> {
        if self.out.mutable.contains(index_reg) {
            return None;
        }
        let key = (buffer.to_string(), index_reg.clone());
        self.caches
            .iter()
            .rev()
            .find_map(|c| c.addresses.get(&key))
            .cloned()
    }

    /// Records the address register of element `index_reg` of `buffer`.
    pub(super) fn remember_address(&mut self, buffer: &str, index_reg: &Reg, addr: &Reg) {
        if self.out.mutable.contains(index_reg) {
            return;
        }
        if let Some(top) = self.caches.last_mut() {
            top.addresses
                .insert((buffer.to_string(), index_reg.clone()), addr.clone());
        }
    }
}
