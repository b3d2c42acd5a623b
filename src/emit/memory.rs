//! Buffer access: kernel parameters, addresses, bounds checks, loads, stores and atomics.
//!
//! Host buffers: the pointer parameter is converted with `cvta.to.global` once in the
//! prologue; an element address is one `mad.wide.u32 idx, size, base` (32-bit index math, a
//! 64-bit address; nvcc's `mul.wide` + `add.s64` pair measured slower, see `address.rs`).
//! Read-only (`read`, `uniform`) buffers load through `ld.global.nc`.
//! Workgroup buffers are `.shared` arrays addressed with 32-bit registers.
//!
//! Bounds: a load outside `[0, len)` gives 0 (the destination is zeroed, then the load is
//! predicated on `idx < len`), a store or atomic outside it is predicated off (an atomic then
//! yields 0). Checks proven unnecessary by [`super::bounds`] are left out and counted.
//! Inside a predicated `if` body every access runs under the guard, combined with its own
//! check where one remains, so threads with a false guard issue no memory operation.

use super::address::Index;
use super::regs::{Reg, RegClass};
use super::writer::{arith, imm_text, zero, Val, Writer};
use super::EmitError;
use crate::ir::{Access, AtomicOp, AtomicOrder, BufferDecl, ElemType, Expr, Scalar, ScalarType};

type R<T> = Result<T, EmitError>;

/// Outcome of the bounds analysis for one access.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Check {
    /// Proven in range: no check.
    Elided,
    /// Checked at run time: the access happens under this predicate.
    Pred(String),
    /// Proven out of range at compile time (literal index into a workgroup buffer).
    Never,
}

/// `ld`/`st` type suffix of an element type.
fn mem_suffix(e: ElemType) -> &'static str {
    match e {
        ElemType::Bool | ElemType::U32 => "u32",
        ElemType::U8 => "u8",
        ElemType::I8 => "s8",
        ElemType::U16 => "u16",
        ElemType::I16 => "s16",
        ElemType::I32 => "s32",
        ElemType::U64 => "u64",
        ElemType::I64 => "s64",
        ElemType::F16 => "b16",
        ElemType::F32 => "f32",
        ElemType::F64 => "f64",
    }
}

/// Register class a raw element is loaded into.
fn raw_class(e: ElemType) -> RegClass {
    match e {
        ElemType::F16 => RegClass::B16,
        ElemType::F32 => RegClass::F32,
        ElemType::F64 => RegClass::F64,
        ElemType::U64 | ElemType::I64 => RegClass::B64,
        _ => RegClass::B32,
    }
}

/// PTX parameter name of a host buffer's pointer.
pub(super) fn ptr_param(name: &str) -> String {
    format!("param_{name}_ptr")
}

/// PTX parameter name of a host buffer's element count.
pub(super) fn len_param(name: &str) -> String {
    format!("param_{name}_len")
}

/// `.shared` symbol of a workgroup buffer.
pub(super) fn shared_symbol(name: &str) -> String {
    format!("wg_{name}")
}

impl Writer<'_> {
    fn decl(&self, buf: &str) -> R<BufferDecl> {
        self.prog
            .buffer(buf)
            .cloned()
            .ok_or_else(|| EmitError::Internal(format!("unknown buffer `{buf}`")))
    }

    /// Global address register of a host buffer (prologue: `ld.param` + `cvta.to.global`).
    pub fn buffer_ptr_reg(&mut self, buf: &str) -> Reg {
        if let Some(r) = self.out.hoisted.buf_ptr.get(buf) {
            return r.clone();
        }
        let raw = self.reg_class(RegClass::B64);
        let g = self.reg_class(RegClass::B64);
        self.pro(format!("ld.param.u64 {raw}, [{}]", ptr_param(buf)));
        self.pro(format!("cvta.to.global.u64 {g}, {raw}"));
        self.out.hoisted.buf_ptr.insert(buf.to_string(), g.clone());
        g
    }

    /// Element-count register of a host buffer (prologue: `ld.param.u32`).
    pub fn buffer_len_reg(&mut self, buf: &str) -> Reg {
        if let Some(r) = self.out.hoisted.buf_len.get(buf) {
            return r.clone();
        }
        let r = self.reg_class(RegClass::B32);
        self.pro(format!("ld.param.u32 {r}, [{}]", len_param(buf)));
        self.out.hoisted.buf_len.insert(buf.to_string(), r.clone());
        r
    }

    /// 32-bit shared-window base address of a workgroup buffer.
    pub(super) fn shared_base_reg(&mut self, buf: &str) -> Reg {
        if let Some(r) = self.out.hoisted.shared_base.get(buf) {
            return r.clone();
        }
        let r = self.reg_class(RegClass::B32);
        self.pro(format!("mov.u32 {r}, {}", shared_symbol(buf)));
        self.out
            .hoisted
            .shared_base
            .insert(buf.to_string(), r.clone());
        r
    }

    /// Decides (and emits) the bounds check of `d[index]`. `in_select` allows a proof by
    /// the facts of enclosing `select` arms (loads only): the access then runs under their
    /// predicate.
    pub(super) fn bounds_check(
        &mut self,
        d: &BufferDecl,
        index: &Expr,
        ix: &Index<'_>,
        in_select: bool,
    ) -> R<Check> {
        let conditional = in_select && !self.at.cond_preds.is_empty();
        if !d.access.is_host() {
            let count = d.count.unwrap_or(0) as u64;
            if let Some(i) = ix.constant() {
                self.out.stats.bounds_checks_elided += 1;
                return Ok(if (i as u64) < count {
                    Check::Elided
                } else {
                    Check::Never
                });
            }
            if self.range(index).is_some_and(|r| r.hi < count) {
                self.out.stats.bounds_checks_elided += 1;
                return Ok(Check::Elided);
            }
            if conditional
                && crate::analysis::ranges::range_of(index, &self.env(true))
                    .is_some_and(|r| r.hi < count)
            {
                self.out.stats.bounds_checks_elided += 1;
                return Ok(Check::Pred(self.select_pred()));
            }
            self.out.stats.bounds_checks_emitted += 1;
            let idx = self.index_val(ix)?;
            let p = self.setp(
                "lt",
                ScalarType::U32,
                &idx,
                &Val::Imm(Scalar::U32(count as u32)),
            );
            return Ok(Check::Pred(p.text()));
        }
        if self.below_len(index, &d.name, false) || self.fast_proven(&d.name, index) {
            self.out.stats.bounds_checks_elided += 1;
            return Ok(Check::Elided);
        }
        if conditional && self.below_len(index, &d.name, true) {
            self.out.stats.bounds_checks_elided += 1;
            return Ok(Check::Pred(self.select_pred()));
        }
        self.out.stats.bounds_checks_emitted += 1;
        let len = self.buffer_len_reg(&d.name);
        let idx = self.index_val(ix)?;
        let len = Val::Reg {
            name: len,
            ty: ScalarType::U32,
            fresh: false,
        };
        let p = self.binary_ir(crate::ir::BinOp::Lt, idx, len)?;
        Ok(Check::Pred(p.text()))
    }

    /// The conjunction of the enclosing `select` arms' predicates.
    fn select_pred(&mut self) -> String {
        let preds = self.at.cond_preds.clone();
        let mut acc: Option<Reg> = None;
        for (p, negated) in preds {
            let p = if negated {
                let n = self.reg_class(RegClass::Pred);
                self.ins(format!("not.pred {n}, {p}"));
                n
            } else {
                p
            };
            acc = Some(match acc {
                None => p,
                Some(a) => {
                    let both = self.reg_class(RegClass::Pred);
                    self.ins(format!("and.pred {both}, {a}, {p}"));
                    both
                }
            });
        }
        acc.map(String::from).unwrap_or_default()
    }

    /// The predicate a side effect runs under: the bounds predicate and the short-body guard.
    fn effect_pred(&mut self, check: &Check) -> Option<String> {
        let own = match check {
            Check::Pred(p) => Some(p.clone()),
            _ => None,
        };
        match (own, self.at.guard.clone()) {
            (Some(a), Some(g)) => {
                self.out.guard_checks += 1;
                let p = self.reg_class(RegClass::Pred);
                self.ins(format!("and.pred {p}, {g}, {a}"));
                Some(p.to_string())
            }
            (a, g) => a.or(g),
        }
    }

    /// `load(B, index)`.
    pub fn load(&mut self, buf: &str, index: &Expr) -> R<Val> {
        let d = self.decl(buf)?;
        let ix = self.index(index)?;
        let check = self.bounds_check(&d, index, &ix, true)?;
        let vty = d.elem.value_type();
        if check == Check::Never {
            return Ok(Val::Imm(zero(vty)));
        }
        let addr = self.address(&d, &ix)?;
        let raw = self.reg_class(raw_class(d.elem));
        let op = match d.access {
            Access::Read | Access::Uniform => "ld.global.nc",
            Access::Workgroup => "ld.shared",
            Access::ReadWrite | Access::Write => "ld.global",
        };
        // A load in a predicated short body runs under the guard (combined with its check):
        // an unchecked one may rely on the guard's facts, and a checked one would otherwise
        // cost inactive threads a memory operation.
        let pred = match &check {
            Check::Pred(_) => {
                let zsfx = match raw_class(d.elem) {
                    RegClass::B16 => "b16",
                    RegClass::B64 => "b64",
                    RegClass::F32 => "f32",
                    RegClass::F64 => "f64",
                    _ => "b32",
                };
                let z = match raw_class(d.elem) {
                    RegClass::F32 => imm_text(Scalar::F32(0.0)),
                    RegClass::F64 => imm_text(Scalar::F64(0.0)),
                    _ => "0".into(),
                };
                self.ins(format!("mov.{zsfx} {raw}, {z}"));
                let p = self.effect_pred(&check);
                if let Some(p) = &p {
                    self.out.zero_unless.insert(raw.clone(), p.clone());
                }
                p
            }
            _ => self.at.guard.clone(),
        };
        self.ins_pred(
            pred.as_deref(),
            format!("{op}.{} {raw}, {addr}", mem_suffix(d.elem)),
        );
        Ok(match d.elem {
            ElemType::Bool => {
                let p = self.fresh(ScalarType::Bool);
                self.ins(format!("setp.ne.u32 {}, {raw}, 0", p.text()));
                p
            }
            ElemType::F16 => {
                let f = self.fresh(ScalarType::F32);
                self.ins(format!("cvt.f32.f16 {}, {raw}", f.text()));
                f
            }
            _ => Val::Reg {
                name: raw,
                ty: vty,
                fresh: true,
            },
        })
    }

    /// `store(B, index, value)`.
    pub fn store(&mut self, buf: &str, index: &Expr, value: &Expr) -> R<()> {
        let d = self.decl(buf)?;
        let ix = self.index(index)?;
        let val = self.expr(value)?;
        let check = self.bounds_check(&d, index, &ix, false)?;
        if check == Check::Never {
            return Ok(());
        }
        let src = match d.elem {
            ElemType::Bool => {
                let pr = self.in_reg(&val);
                let r = self.reg_class(RegClass::B32);
                self.ins(format!("selp.u32 {r}, 1, 0, {pr}"));
                r
            }
            ElemType::F16 => {
                // Round to nearest even; overflow gives inf, NaN stays NaN.
                let fr = self.in_reg(&val);
                let h = self.reg_class(RegClass::B16);
                self.ins(format!("cvt.rn.f16.f32 {h}, {fr}"));
                h
            }
            _ => self.in_reg(&val),
        };
        let addr = self.address(&d, &ix)?;
        let pred = self.effect_pred(&check);
        let op = if d.access.is_host() {
            "st.global"
        } else {
            "st.shared"
        };
        self.ins_pred(
            pred.as_deref(),
            format!("{op}.{} {addr}, {src}", mem_suffix(d.elem)),
        );
        Ok(())
    }

    /// `atomic(op, B, index, value[, expected])` with memory `order`; returns the old value.
    /// At gpu scope for global buffers and cta scope for shared ones, the standard C++ mapping
    /// of the PTX memory model: `seq_cst` is `fence.sc` + `atom.acq_rel`; the other orders are
    /// one `atom` with that `.sem` and no fence (`relaxed` is what CUDA's `atomicAdd` gives).
    /// A `relaxed` or `release` atomic whose old value is dead (a `let` nobody reads) is one
    /// `red` instead, as nvcc writes an `atomicAdd` whose result is unused.
    pub fn atomic(
        &mut self,
        op: AtomicOp,
        order: AtomicOrder,
        buf: &str,
        index: &Expr,
        value: &Expr,
        expected: Option<&Expr>,
    ) -> R<Val> {
        // `red` where the old value is dead and nothing reads through it: it has no acquire
        // form (only relaxed and release), and exchange and cas have none at all.
        let reduce = std::mem::take(&mut self.discard_result)
            && matches!(order, AtomicOrder::Relaxed | AtomicOrder::Release)
            && !matches!(op, AtomicOp::Exchange | AtomicOp::Cas);
        let d = self.decl(buf)?;
        let ix = self.index(index)?;
        let val = self.expr(value)?;
        let exp = match expected {
            Some(e) => Some(self.expr(e)?),
            None => None,
        };
        let ty = d.elem.value_type();
        let check = self.bounds_check(&d, index, &ix, false)?;
        if check == Check::Never {
            return Ok(Val::Imm(zero(ty)));
        }
        let addr = self.address(&d, &ix)?;
        let pred = self.effect_pred(&check);
        if reduce {
            let (scope, space) = if d.access.is_host() {
                ("gpu", "global")
            } else {
                ("cta", "shared")
            };
            let (name, sfx) = atom_op(op, ty);
            let sem = order.name();
            let vr = self.in_reg(&val);
            self.ins_pred(
                pred.as_deref(),
                format!("red.{sem}.{scope}.{space}.{name}.{sfx} {addr}, {vr}"),
            );
            // The value is never read.
            return Ok(Val::Imm(zero(ty)));
        }
        let res = self.fresh(ty);
        if pred.is_some() {
            self.ins(format!(
                "mov{} {}, {}",
                super::writer::mov_suffix(ty),
                res.text(),
                imm_text(zero(ty))
            ));
        }
        let (scope, space) = if d.access.is_host() {
            ("gpu", "global")
        } else {
            ("cta", "shared")
        };
        let (name, sfx) = atom_op(op, ty);
        let vr = self.in_reg(&val);
        if order == AtomicOrder::SeqCst {
            self.ins_pred(pred.as_deref(), format!("fence.sc.{scope}"));
        }
        let sem = match order {
            AtomicOrder::Relaxed => "relaxed",
            AtomicOrder::Acquire => "acquire",
            AtomicOrder::Release => "release",
            AtomicOrder::AcqRel | AtomicOrder::SeqCst => "acq_rel",
        };
        let operands = match (&exp, op) {
            (Some(e), AtomicOp::Cas) => {
                let er = self.in_reg(e);
                format!("{er}, {vr}")
            }
            _ => vr.to_string(),
        };
        self.ins_pred(
            pred.as_deref(),
            format!(
                "atom.{sem}.{scope}.{space}.{name}.{sfx} {}, {addr}, {operands}",
                res.text()
            ),
        );
        Ok(res)
    }
}

/// The PTX operation and type suffix of an `atom`/`red` of `op` on `ty`.
fn atom_op(op: AtomicOp, ty: ScalarType) -> (&'static str, String) {
    let b = if ty.bits() == 64 { "b64" } else { "b32" };
    match op {
        AtomicOp::Add if ty == ScalarType::I64 => ("add", "u64".to_string()),
        AtomicOp::Add if ty == ScalarType::I32 => ("add", "s32".to_string()),
        AtomicOp::Add => ("add", arith(ty).to_string()),
        AtomicOp::Min => ("min", arith(ty).to_string()),
        AtomicOp::Max => ("max", arith(ty).to_string()),
        AtomicOp::And => ("and", b.to_string()),
        AtomicOp::Or => ("or", b.to_string()),
        AtomicOp::Xor => ("xor", b.to_string()),
        AtomicOp::Exchange => ("exch", b.to_string()),
        AtomicOp::Cas => ("cas", b.to_string()),
    }
}
