//! Subgroup (warp) operations over the lanes active at the call (`activemask.b32`).
//!
//! - `shuffle`: `shfl.sync.idx.b32` with clamp 31, which reads lane `lane & 31`; 64-bit values
//!   move as two halves, bools as 0/1 words. When the source lane is not in the member mask
//!   (inactive, or past a short last warp) the reading lane gets its own value, as in the
//!   reference interpreter (the hardware result would be undefined). Where every lane is
//!   surely active (`Writer::full_warp`: whole-warp workgroups, no earlier `return`, outside
//!   any `if` or rolled loop) the mask is the constant `-1` and that select is left out, as
//!   nvcc's `__shfl_sync(0xffffffff, ..)`.
//! - `ballot`: `vote.sync.ballot.b32`.
//! - `subgroup_reduce`: `redux.sync` for 32-bit integer add/min/max/and/or/xor on sm_80+.
//!   Otherwise (floats, mul, 64-bit, older targets) the result is the butterfly over the 32
//!   lane slots that the interpreter defines: combine slots at distance 16, 8, 4, 2, 1, with
//!   the operator's identity in inactive slots (`add` 0 / -0.0, `mul` 1, `min`/`max` the
//!   type's MAX/MIN or NaN for floats, `and` all ones, `or`/`xor` 0). With all 32 lanes
//!   active that is an xor butterfly (`shfl.sync.bfly`). Otherwise, for float add/mul (the
//!   only order-sensitive cases) every active lane gathers the 32 slots with `shfl.sync.idx`
//!   (identity where the mask bit is clear) and evaluates the same tree itself, which keeps
//!   results bit-identical; the other ops fold the active lanes in a loop (any order gives
//!   the same bits).

use super::regs::{Reg, RegClass};
use super::writer::{konst, mov_suffix, Val, Writer};
use super::EmitError;
use crate::ir::{BinOp, ReduceOp, ScalarType};

type R<T> = Result<T, EmitError>;

impl Writer<'_> {
    /// `activemask.b32` at this point, or the constant full mask where every lane is
    /// surely active ([`Writer::full_warp`]).
    fn member_mask(&mut self) -> String {
        if self.full_warp() {
            return "-1".to_string();
        }
        let m = self.reg_class(RegClass::B32);
        self.ins(format!("activemask.b32 {m}"));
        m.to_string()
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
        let l = self.in_reg(&lane);
        let got = self.shfl("idx", &v, &l, &mask);
        if self.full_warp() {
            // Every source lane is active: the shuffle's value is the result.
            return Ok(got);
        }
        // Source lane outside the member mask: keep the reader's own value.
        let src = self.reg_class(RegClass::B32);
        self.ins(format!("and.b32 {src}, {l}, 31"));
        let bit = self.reg_class(RegClass::B32);
        self.ins(format!("shr.b32 {bit}, {mask}, {src}"));
        let on_b = self.reg_class(RegClass::B32);
        self.ins(format!("and.b32 {on_b}, {bit}, 1"));
        let on = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {on}, {on_b}, 0"));
        let on = v_reg(&on, ScalarType::Bool);
        self.select(&on, &got, &v)
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
        // A warp known to be whole at this point needs neither the test nor the partial path.
        let known_full = self.full_warp();
        let (serial, done) = if known_full {
            (String::new(), String::new())
        } else {
            let serial = self.fresh_label("red_partial");
            let done = self.fresh_label("red_done");
            let full = self.reg_class(RegClass::Pred);
            self.ins(format!("setp.eq.u32 {full}, {mask}, -1"));
            self.ins(format!("@!{full} bra {serial}"));
            (serial, done)
        };
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
        if known_full {
            return Ok(Val::Reg {
                name: acc,
                ty,
                fresh: true,
            });
        }
        self.ins(format!("bra.uni {done}"));
        self.label(&serial);
        if ty.is_float() && matches!(op, ReduceOp::Add | ReduceOp::Mul) {
            // Partial warp, order-sensitive: gather the 32 slots (identity where the lane is
            // inactive) and evaluate the same tree locally.
            let ident = identity(op, ty);
            let mut slots = Vec::with_capacity(32);
            for lane in 0..32u32 {
                let x = self.shfl("idx", &v_reg(&vr, ty), &lane.to_string(), &mask);
                slots.push(self.slot_or_identity(ty, &x, ident, &mask, lane));
            }
            let mut width = 16;
            while width > 0 {
                for i in 0..width {
                    let (a, b) = (slots[i].clone(), slots[i + width].clone());
                    slots[i] = self.binary(bin, a, b)?;
                }
                width /= 2;
            }
            self.ins(format!("mov{mv} {acc}, {}", slots[0].text()));
        } else {
            // Partial warp, order-free op (integers, float min/max): fold the active lanes in
            // a loop, lowest lane first.
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
            let r = self.binary(bin, v_reg(&acc, ty), x)?;
            self.ins(format!("mov{mv} {acc}, {}", r.text()));
            self.ins(format!("bra.uni {top}"));
        }
        self.label(&done);
        Ok(Val::Reg {
            name: acc,
            ty,
            fresh: true,
        })
    }
}

impl Writer<'_> {
    /// `x` when bit `lane` of `mask` is set, else `ident`, without a predicate register.
    ///
    /// A `setp` + `selp` per slot made ptxas fail on sm_90 at -O2 and above with "(C7600)
    /// Register allocation failed with register count of '7'": the 32 predicates depend only
    /// on the member mask, so the scheduler computes them all ahead of the 32 `shfl.sync`s,
    /// and the 7 allocatable predicate registers (P0-P6) cannot hold them; the allocator
    /// gives up instead of spilling across the shuffles. Here the bit becomes an all-ones or
    /// all-zeros word (`bfe`, `neg`) that blends the bits, `ident ^ ((x ^ ident) & m)`, in
    /// ordinary registers.
    fn slot_or_identity(
        &mut self,
        ty: ScalarType,
        x: &Val,
        ident: crate::ir::Scalar,
        mask: &str,
        lane: u32,
    ) -> Val {
        let bit = self.reg_class(RegClass::B32);
        self.ins(format!("bfe.u32 {bit}, {mask}, {lane}, 1"));
        let m = self.reg_class(RegClass::B32);
        self.ins(format!("neg.s32 {m}, {bit}"));
        let xr = self.in_reg(x);
        let (class, b, m, ib) = if ty.bits() == 64 {
            let m64 = self.reg_class(RegClass::B64);
            self.ins(format!("cvt.s64.s32 {m64}, {m}"));
            (RegClass::B64, "b64", m64, ident.to_bits())
        } else {
            (RegClass::B32, "b32", m, ident.to_bits() & 0xffff_ffff)
        };
        let xi = self.reg_class(class);
        self.ins(format!("mov.{b} {xi}, {xr}"));
        let t = self.reg_class(class);
        self.ins(format!("xor.{b} {t}, {xi}, {ib}"));
        let t2 = self.reg_class(class);
        self.ins(format!("and.{b} {t2}, {t}, {m}"));
        let t3 = self.reg_class(class);
        self.ins(format!("xor.{b} {t3}, {t2}, {ib}"));
        let d = self.fresh(ty);
        self.ins(format!("mov.{b} {}, {t3}", d.text()));
        d
    }

    /// Lowest set lane of `rest` (which loses that bit).
    fn next_lane(&mut self, rest: &str) -> Reg {
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

fn v_reg(name: &Reg, ty: ScalarType) -> Val {
    Val::Reg {
        name: name.clone(),
        ty,
        fresh: false,
    }
}

/// The identity of reduction `op` on `ty` (what inactive slots hold).
fn identity(op: ReduceOp, ty: ScalarType) -> crate::ir::Scalar {
    use crate::ir::Scalar as S;
    let float = ty.is_float();
    match (op, ty) {
        (ReduceOp::Add, ScalarType::F32) => S::F32(-0.0),
        (ReduceOp::Add, ScalarType::F64) => S::F64(-0.0),
        (ReduceOp::Mul, _) => konst(ty, 1),
        (ReduceOp::Min | ReduceOp::Max, ScalarType::F32) => S::F32(f32::NAN),
        (ReduceOp::Min | ReduceOp::Max, ScalarType::F64) => S::F64(f64::NAN),
        (ReduceOp::Min, ScalarType::U32) => S::U32(u32::MAX),
        (ReduceOp::Min, ScalarType::I32) => S::I32(i32::MAX),
        (ReduceOp::Min, ScalarType::U64) => S::U64(u64::MAX),
        (ReduceOp::Min, ScalarType::I64) => S::I64(i64::MAX),
        (ReduceOp::Max, ScalarType::I32) => S::I32(i32::MIN),
        (ReduceOp::Max, ScalarType::I64) => S::I64(i64::MIN),
        (ReduceOp::And, _) if !float => konst(ty, -1),
        _ => konst(ty, 0),
    }
}
