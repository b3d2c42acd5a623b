//! Element addresses with constant offsets folded into the address operand.
//!
//! An index expression is split into a register *base* and a constant element *offset*
//! (`l + 128` -> base `l`, offset 128; `k*16 + tx` with `k` constant -> base `tx`, offset
//! `16k`). The address of the base is computed once per scope (`cse.rs`) and each access
//! adds its offset in the operand: `[%r6+512]`, the form nvcc gives its tree reduction.
//!
//! The split is exact when `base + offset` cannot wrap in `u32`, which the range analysis
//! must prove from the unconditional facts (`wrapping_free`); otherwise the index is computed
//! in full and addressed with offset 0. (For global memory `idx * size` is widened to 64 bits
//! after the `u32` index arithmetic, so a wrapped index and a split address would differ; for
//! shared memory the proof keeps the base address inside the window.) The whole index value,
//! needed only when a bounds check remains, is materialised on demand ([`Index`]).

use super::regs::RegClass;
use super::writer::{Val, Writer};
use super::EmitError;
use crate::ir::{BinOp, BufferDecl, Expr, Scalar};

type R<T> = Result<T, EmitError>;

/// Largest byte offset put into an address operand (well inside the signed 32-bit
/// immediate PTX accepts).
const MAX_BYTE_OFFSET: i64 = 1 << 24;

/// An evaluated index: `base + off` (mod 2^32).
#[derive(Debug, Clone)]
pub(super) struct Index<'e> {
    /// The register part and the expression it is the value of (`None`: a constant index).
    pub base: Option<(Val, &'e Expr)>,
    /// The constant part, as a wrapping `u32`.
    pub off: u32,
}

impl Index<'_> {
    /// The constant index, if it is one.
    pub fn constant(&self) -> Option<u32> {
        self.base.is_none().then_some(self.off)
    }
}

impl Writer<'_> {
    /// Evaluates an index expression, keeping constant addends apart.
    pub(super) fn index<'e>(&mut self, e: &'e Expr) -> R<Index<'e>> {
        match e {
            Expr::Binary(BinOp::Add, a, b) => {
                let ia = self.index(a)?;
                let ib = self.index(b)?;
                match (ia.base, ib.base) {
                    (None, base) | (base, None) => Ok(Index {
                        base,
                        off: ia.off.wrapping_add(ib.off),
                    }),
                    (Some(x), Some(y)) => {
                        let xa = self.index_val(&Index {
                            base: Some(x),
                            off: ia.off,
                        })?;
                        let yb = self.index_val(&Index {
                            base: Some(y),
                            off: ib.off,
                        })?;
                        let v = self.binary_ir(BinOp::Add, xa, yb)?;
                        Ok(self.whole(v, e))
                    }
                }
            }
            Expr::Binary(BinOp::Sub, a, b) => {
                let ia = self.index(a)?;
                let vb = self.expr(b)?;
                match vb.imm() {
                    Some(k) => Ok(Index {
                        base: ia.base,
                        off: ia.off.wrapping_sub(k.to_bits() as u32),
                    }),
                    None => {
                        let va = self.index_val(&ia)?;
                        let v = self.binary_ir(BinOp::Sub, va, vb)?;
                        Ok(self.whole(v, e))
                    }
                }
            }
            _ => {
                let v = self.expr(e)?;
                Ok(self.whole(v, e))
            }
        }
    }

    fn whole<'e>(&self, v: Val, e: &'e Expr) -> Index<'e> {
        match v.imm() {
            Some(k) => Index {
                base: None,
                off: k.to_bits() as u32,
            },
            None => Index {
                base: Some((v, e)),
                off: 0,
            },
        }
    }

    /// The full index value `base + off`.
    pub(super) fn index_val(&mut self, ix: &Index<'_>) -> R<Val> {
        let off = Val::Imm(Scalar::U32(ix.off));
        match &ix.base {
            None => Ok(off),
            Some((b, _)) if ix.off == 0 => Ok(b.clone()),
            Some((b, _)) if (ix.off as i32) < 0 => self.binary_ir(
                BinOp::Sub,
                b.clone(),
                Val::Imm(Scalar::U32((ix.off as i32).unsigned_abs())),
            ),
            Some((b, _)) => self.binary_ir(BinOp::Add, b.clone(), off),
        }
    }

    /// True when `base + off` provably does not wrap in `u32` (unconditional facts only:
    /// the address is computed whatever a `select` condition is).
    fn wrapping_free(&self, base: &Expr, off: u32) -> bool {
        let off = off as i32 as i64;
        if self.fast_no_wrap(base, off) {
            return true;
        }
        let Some(r) = self.range(base) else {
            return false;
        };
        r.lo as i64 + off >= 0 && r.hi as i64 + off <= u32::MAX as i64
    }

    /// `[address]` operand of element `ix` of `d`.
    pub(super) fn address(&mut self, d: &BufferDecl, ix: &Index<'_>) -> R<String> {
        let size = d.elem.size_bytes() as i64;
        let host = d.access.is_host();
        let operand = |base: &str, bytes: i64| {
            if bytes == 0 {
                format!("[{base}]")
            } else {
                format!("[{base}+{bytes}]")
            }
        };
        if let Some(k) = ix.constant() {
            let bytes = k as i64 * size;
            if bytes < 1 << 31 {
                let base = if host {
                    self.buffer_ptr_reg(&d.name).to_string()
                } else {
                    super::memory::shared_symbol(&d.name)
                };
                return Ok(operand(&base, bytes));
            }
        }
        let bytes = ix.off as i32 as i64 * size;
        let split = match &ix.base {
            Some((Val::Reg { name, .. }, base_expr)) => (bytes.abs() < MAX_BYTE_OFFSET
                && self.wrapping_free(base_expr, ix.off))
            .then(|| (name.clone(), bytes)),
            _ => None,
        };
        let (index_reg, bytes) = match split {
            Some(s) => s,
            None => {
                let v = self.index_val(ix)?;
                (self.in_reg(&v), 0)
            }
        };
        if let Some(a) = self.reuse_address(&d.name, &index_reg) {
            return Ok(operand(&a, bytes));
        }
        let a = if host {
            let base = self.buffer_ptr_reg(&d.name);
            // One `mad.wide.u32` per address. nvcc's form (`mul.wide.u32` once per index and
            // `add.s64` per buffer) gives ptxas 13 shorter SASS (one IMAD.WIDE.U32 with the base
            // in a register pair), but measured side by side on an H200 it was slower on every
            // timed fixture it changed (warp_scan_u32 1.023x, reduce_sum_f32 1.015x, stencil5_f32
            // 1.006x; docs/benchmarks-history.md, 2026-12-03, NVIDIA H200, build 50e88b1), so
            // the emitter keeps this form.
            let a = self.reg_class(RegClass::B64);
            self.ins(format!("mad.wide.u32 {a}, {index_reg}, {size}, {base}"));
            a
        } else {
            let base = self.shared_base_reg(&d.name);
            let a = self.reg_class(RegClass::B32);
            self.ins(format!("mad.lo.s32 {a}, {index_reg}, {size}, {base}"));
            a
        };
        self.remember_address(&d.name, &index_reg, &a);
        Ok(operand(&a, bytes))
    }
}
