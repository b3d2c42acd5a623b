//! Subgroup (warp) operations over the lanes active at the call (`activemask.b32`).
//!
//! - `shuffle`: `shfl.sync.idx.b32` with clamp 31, which reads lane `lane & 31`; 64-bit values
//!   move as two halves, bools as 0/1 words.
//! - `ballot`: `vote.sync.ballot.b32`.
//! - `subgroup_reduce`: `redux.sync` for 32-bit integer add/min/max/and/or/xor on sm_80+.
//!   Otherwise (floats, mul, 64-bit, older targets): with all 32 lanes active, an xor
//!   butterfly (`shfl.sync.bfly`, offsets 16, 8, 4, 2, 1); with some lanes inactive, every
//!   active lane folds the active lanes' values in increasing lane order. Integer results do
//!   not depend on the order; for float add/mul the order is part of the contract (a full
//!   warp sums pairs `(l, l^16)` first, then `^8`, `^4`, `^2`, `^1`).

use super::regs::RegClass;
use super::writer::{mov_suffix, Val, Writer};
use super::EmitError;
use crate::ir::{BinOp, ReduceOp, ScalarType};

type R<T> = Result<T, EmitError>;

impl Writer<'_> {
    /// `activemask.b32` at this point.
    fn member_mask(&mut self) -> String {
        let m = self.reg_class(RegClass::B32);
        self.ins(format!("activemask.b32 {m}"));
        m
    }

    /// `shfl.sync.<mode>.b32` of any value type.
    fn shfl(&mut self, mode: &str, v: &Val, lane: &str, mask: &str) -> Val {
        let ty = v.ty();
        let vr = self.in_reg(v);
        match ty {
            ScalarType::Bool => {
                let w = self.reg_class(RegClass::B32);
                self.ins(format!("selp.u32 {w}, 1, 0, {vr}"));
                let o = self.reg_class(RegClass::B32);
                self.ins(format!("shfl.sync.{mode}.b32 {o}, {w}, {lane}, 31, {mask}"));
                let d = self.fresh(ty);
                self.ins(format!("setp.ne.u32 {}, {o}, 0", d.text()));
                d
            }
            _ if ty.bits() == 64 => {
                let (lo, hi) = (self.reg_class(RegClass::B32), self.reg_class(RegClass::B32));
                self.ins(format!("mov.b64 {{{lo}, {hi}}}, {vr}"));
                let (lo2, hi2) = (self.reg_class(RegClass::B32), self.reg_class(RegClass::B32));
                self.ins(format!(
                    "shfl.sync.{mode}.b32 {lo2}, {lo}, {lane}, 31, {mask}"
                ));
                self.ins(format!(
                    "shfl.sync.{mode}.b32 {hi2}, {hi}, {lane}, 31, {mask}"
                ));
                let d = self.fresh(ty);
                self.ins(format!("mov.b64 {}, {{{lo2}, {hi2}}}", d.text()));
                d
            }
            _ => {
                let d = self.fresh(ty);
                self.ins(format!(
                    "shfl.sync.{mode}.b32 {}, {vr}, {lane}, 31, {mask}",
                    d.text()
                ));
                d
            }
        }
    }

    /// `shuffle(value, lane)`.
    pub fn shuffle(&mut self, v: Val, lane: Val) -> R<Val> {
        let mask = self.member_mask();
        let l = lane.text();
        Ok(self.shfl("idx", &v, &l, &mask))
    }

    /// `ballot(cond)`.
    pub fn ballot(&mut self, c: Val) -> R<Val> {
        let mask = self.member_mask();
        let p = self.in_reg(&c);
        let d = self.fresh(ScalarType::U32);
        self.ins(format!("vote.sync.ballot.b32 {}, {p}, {mask}", d.text()));
        Ok(d)
    }

    /// `subgroup_reduce(op, value)`.
    pub fn subgroup_reduce(&mut self, op: ReduceOp, v: Val) -> R<Val> {
        let ty = v.ty();
        if ty == ScalarType::Bool {
            return Err(EmitError::Unsupported("subgroup_reduce on bool".into()));
        }
        let mask = self.member_mask();
        if self.opts.sm >= 80 && ty.bits() == 32 && ty.is_int() && op != ReduceOp::Mul {
            let sfx = match op {
                ReduceOp::And | ReduceOp::Or | ReduceOp::Xor => "b32",
                _ if ty.is_signed() => "s32",
                _ => "u32",
            };
            let vr = self.in_reg(&v);
            let d = self.fresh(ty);
            self.ins(format!(
                "redux.sync.{}.{sfx} {}, {vr}, {mask}",
                op.name(),
                d.text()
            ));
            return Ok(d);
        }
        let bin = match op {
            ReduceOp::Add => BinOp::Add,
            ReduceOp::Mul => BinOp::Mul,
            ReduceOp::Min => BinOp::Min,
            ReduceOp::Max => BinOp::Max,
            ReduceOp::And => BinOp::And,
            ReduceOp::Or => BinOp::Or,
            ReduceOp::Xor => BinOp::Xor,
        };
        let mv = mov_suffix(ty);
        let acc = self.reg(ty);
        let vr = self.in_reg(&v);
        let serial = self.fresh_label("red_partial");
        let done = self.fresh_label("red_done");
        let full = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.eq.u32 {full}, {mask}, -1"));
        self.ins(format!("@!{full} bra {serial}"));
        // Full warp: xor butterfly.
        self.ins(format!("mov{mv} {acc}, {vr}"));
        for off in [16, 8, 4, 2, 1] {
            let cur = Val::Reg {
                name: acc.clone(),
                ty,
                fresh: false,
            };
            let other = self.shfl("bfly", &cur, &off.to_string(), &mask);
            let r = self.binary(bin, cur, other)?;
            self.ins(format!("mov{mv} {acc}, {}", r.text()));
        }
        self.ins(format!("bra.uni {done}"));
        // Partial warp: fold the active lanes in increasing lane order.
        self.label(&serial);
        let rest = self.reg_class(RegClass::B32);
        self.ins(format!("mov.b32 {rest}, {mask}"));
        let first = self.next_lane(&rest);
        let x = self.shfl("idx", &v_reg(&vr, ty), &first, &mask);
        self.ins(format!("mov{mv} {acc}, {}", x.text()));
        let top = self.fresh_label("red_next");
        self.label(&top);
        let empty = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.eq.u32 {empty}, {rest}, 0"));
        self.ins(format!("@{empty} bra {done}"));
        let lane = self.next_lane(&rest);
        let x = self.shfl("idx", &v_reg(&vr, ty), &lane, &mask);
        let cur = v_reg(&acc, ty);
        let r = self.binary(bin, cur, x)?;
        self.ins(format!("mov{mv} {acc}, {}", r.text()));
        self.ins(format!("bra.uni {top}"));
        self.label(&done);
        Ok(Val::Reg {
            name: acc,
            ty,
            fresh: true,
        })
    }

    /// Lowest set lane of `rest` (which loses that bit).
    fn next_lane(&mut self, rest: &str) -> String {
        let rev = self.reg_class(RegClass::B32);
        self.ins(format!("brev.b32 {rev}, {rest}"));
        let lane = self.reg_class(RegClass::B32);
        self.ins(format!("clz.b32 {lane}, {rev}"));
        let m1 = self.reg_class(RegClass::B32);
        self.ins(format!("add.s32 {m1}, {rest}, -1"));
        self.ins(format!("and.b32 {rest}, {rest}, {m1}"));
        lane
    }
}

fn v_reg(name: &str, ty: ScalarType) -> Val {
    Val::Reg {
        name: name.to_string(),
        ty,
        fresh: false,
    }
}
