//! Expressions: one method per construct, each returning a [`Val`]. Operands are evaluated
//! left to right before the operation (docs/semantics.md), so instruction order is evaluation
//! order. Float arithmetic always carries `.rn`: without a rounding modifier ptxas may fuse
//! `mul`+`add` into `fma`, which would break bit parity with the interpreter.
//!
//! IR operations on constants fold (`fold.rs`, the interpreter's own arithmetic), exact
//! integer identities drop (`x + 0`), and repeated pure operations on unchanging operands
//! reuse the first result (`cse.rs`).

use super::fold;
use super::writer::{arith, bits, konst, zero, Val, Writer};
use super::EmitError;
use crate::ir::typing::typed_literal;
use crate::ir::{BinOp, Builtin, Expr, Literal, Scalar, ScalarType, UnOp};

type R<T> = Result<T, EmitError>;

impl Writer<'_> {
    /// Lowers `e`.
    pub fn expr(&mut self, e: &Expr) -> R<Val> {
        match e {
            Expr::Lit(Literal::Typed(s)) => Ok(Val::Imm(*s)),
            Expr::Lit(l @ Literal::Int(v)) => Ok(Val::Imm(typed_literal(
                *l,
                if *v < 0 {
                    ScalarType::I32
                } else {
                    ScalarType::U32
                },
            ))),
            Expr::Lit(l @ Literal::Float(_)) => Ok(Val::Imm(typed_literal(*l, ScalarType::F32))),
            Expr::Var(n) => {
                let v = self.var(n)?;
                if let Some(k) = v.konst {
                    return Ok(Val::Imm(k));
                }
                Ok(Val::Reg {
                    name: v.reg.clone(),
                    ty: v.ty,
                    fresh: false,
                })
            }
            Expr::Builtin(Builtin::SubgroupSize) => Ok(Val::Imm(Scalar::U32(32))),
            Expr::Builtin(b) => Ok(Val::Reg {
                name: self.builtin(*b),
                ty: ScalarType::U32,
                fresh: false,
            }),
            Expr::Len(buf) => self.len_of(buf),
            Expr::Clock => {
                // A fresh register per read: two reads never share a value (not cached).
                let v = self.fresh(ScalarType::U64);
                self.ins(format!("mov.u64 {}, %clock64", v.text()));
                Ok(v)
            }
            Expr::Load { buffer, index } => self.load(buffer, index),
            Expr::Binary(op, a, b) => {
                let x = self.expr(a)?;
                let y = self.expr(b)?;
                self.binary_ir(*op, x, y)
            }
            Expr::Unary(op, a) => {
                let x = self.expr(a)?;
                if let Some(k) = x.imm().and_then(|k| fold::unary(*op, k)) {
                    return Ok(Val::Imm(k));
                }
                let key = self.unary_key(*op, &x);
                if let Some(v) = self.reuse(&key) {
                    return Ok(v);
                }
                let v = self.unary(*op, x)?;
                self.remember(key, &v);
                Ok(v)
            }
            Expr::Select(c, a, b) => {
                let cv = self.expr(c)?;
                let x = self.select_arm(c, &cv, true, a)?;
                let y = self.select_arm(c, &cv, false, b)?;
                if let Some(k) = cv.imm() {
                    return Ok(if k.to_bits() != 0 { x } else { y });
                }
                // `select(c, B[i], 0)` where the load already ran under `c` with a zeroed
                // destination: the load's register is the select's value (when neither
                // register can have been overwritten since).
                if let (Val::Reg { name, .. }, Some(z), Val::Reg { name: p, .. }) =
                    (&x, y.imm(), &cv)
                {
                    if z.to_bits() == 0
                        && self.stable(&x)
                        && self.stable(&cv)
                        && self.out.zero_unless.get(name).is_some_and(|z| **z == **p)
                    {
                        return Ok(x);
                    }
                }
                self.select(&cv, &x, &y)
            }
            Expr::Cast(t, a) => {
                let x = self.expr(a)?;
                if let Some(k) = x.imm() {
                    return Ok(Val::Imm(fold::cast(*t, k)));
                }
                self.cast(*t, x)
            }
            Expr::Bitcast(t, a) => {
                let x = self.expr(a)?;
                self.bitcast(*t, x)
            }
            Expr::Fma(a, b, c) => {
                let x = self.expr(a)?;
                let y = self.expr(b)?;
                let z = self.expr(c)?;
                if let (Some(p), Some(q), Some(r)) = (x.imm(), y.imm(), z.imm()) {
                    return Ok(Val::Imm(fold::fma(p, q, r)));
                }
                let ty = x.ty();
                let xr = self.in_reg(&x);
                let d = self.fresh(ty);
                let op = if ty.is_float() {
                    format!("fma.rn.{}", arith(ty))
                } else {
                    format!("mad.lo.{}", arith(ty))
                };
                self.ins(format!(
                    "{op} {}, {xr}, {}, {}",
                    d.text(),
                    y.text(),
                    z.text()
                ));
                Ok(d)
            }
            Expr::Atomic {
                op,
                buffer,
                index,
                value,
                expected,
                order,
            } => self.atomic(*op, *order, buffer, index, value, expected.as_deref()),
            Expr::Shuffle { value, lane } => {
                let v = self.expr(value)?;
                let l = self.expr(lane)?;
                self.shuffle(v, l)
            }
            Expr::SubgroupReduce(op, v) => {
                let v = self.expr(v)?;
                self.subgroup_reduce(*op, v)
            }
            Expr::Ballot(c) => {
                let c = self.expr(c)?;
                self.ballot(c)
            }
        }
    }

    /// `len(B)`: the `.u32` length parameter of a host buffer, `count` of a workgroup one.
    pub fn len_of(&mut self, buf: &str) -> R<Val> {
        let decl = self
            .prog
            .buffer(buf)
            .ok_or_else(|| EmitError::Internal(format!("unknown buffer `{buf}`")))?;
        if let Some(c) = decl.count.filter(|_| !decl.access.is_host()) {
            return Ok(Val::Imm(Scalar::U32(c)));
        }
        Ok(Val::Reg {
            name: self.buffer_len_reg(buf),
            ty: ScalarType::U32,
            fresh: false,
        })
    }

    /// An IR binary operation: folded when both operands are constants, simplified by an
    /// exact identity, reused when computed before in scope, else lowered.
    pub fn binary_ir(&mut self, op: BinOp, x: Val, y: Val) -> R<Val> {
        if let (Some(a), Some(b)) = (x.imm(), y.imm()) {
            return Ok(Val::Imm(fold::binary(op, a, b)));
        }
        if let Some(v) = fold::identity(op, &x, &y) {
            return Ok(v);
        }
        let key = self.binary_key(op, &x, &y);
        if let Some(v) = self.reuse(&key) {
            return Ok(v);
        }
        let v = self.binary(op, x, y)?;
        self.remember(key, &v);
        Ok(v)
    }

    /// Lowers one arm of `select(c, a, b)` (`truth`: the arm taken when `c` is true). When
    /// `c` is in a register and the arm is lane-local and free of side effects, the facts of
    /// `c == truth` hold conditionally while it is lowered (see `bounds.rs`).
    fn select_arm(&mut self, c: &Expr, cv: &Val, truth: bool, arm: &Expr) -> R<Val> {
        let Val::Reg { name, .. } = cv else {
            return self.expr(arm);
        };
        let mut local = true;
        arm.visit(&mut |e| {
            local &= !matches!(
                e,
                Expr::Atomic { .. }
                    | Expr::Shuffle { .. }
                    | Expr::SubgroupReduce(..)
                    | Expr::Ballot(_)
                    | Expr::Clock
            )
        });
        let facts = crate::analysis::ranges::implied(c, truth, &self.env(true));
        if !local || facts.is_empty() {
            return self.expr(arm);
        }
        self.facts.push();
        for f in facts {
            self.facts.add(f, true);
        }
        self.at.cond_preds.push((name.clone(), !truth));
        let r = self.expr(arm);
        self.at.cond_preds.pop();
        self.facts.pop();
        r
    }

    /// Emits `op d, a, b` into a fresh register of type `ty`.
    pub fn op2(&mut self, op: &str, ty: ScalarType, a: &Val, b: &Val) -> Val {
        let ar = self.in_reg(a);
        let d = self.fresh(ty);
        self.ins(format!("{op} {}, {ar}, {}", d.text(), b.text()));
        d
    }

    /// Emits `op d, a` into a fresh register of type `ty`.
    pub fn op1(&mut self, op: &str, ty: ScalarType, a: &Val) -> Val {
        let ar = self.in_reg(a);
        let d = self.fresh(ty);
        self.ins(format!("{op} {}, {ar}", d.text()));
        d
    }

    /// `setp.<cmp>.<ty> p, a, b`.
    pub fn setp(&mut self, cmp: &str, ty: ScalarType, a: &Val, b: &Val) -> Val {
        let d = self.fresh(ScalarType::Bool);
        self.ins(format!(
            "setp.{cmp}.{} {}, {}, {}",
            arith(ty),
            d.text(),
            a.text(),
            b.text()
        ));
        d
    }

    /// `selp.<ty> d, a, b, p` (`p ? a : b`) for non-bool types.
    pub fn selp(&mut self, ty: ScalarType, a: &Val, b: &Val, p: &Val) -> Val {
        let pr = self.in_reg(p);
        let d = self.fresh(ty);
        let sfx = match ty {
            ScalarType::U32 | ScalarType::I32 => "b32",
            ScalarType::U64 | ScalarType::I64 => "b64",
            _ => arith(ty),
        };
        self.ins(format!(
            "selp.{sfx} {}, {}, {}, {pr}",
            d.text(),
            a.text(),
            b.text()
        ));
        d
    }

    /// Lowers a binary operator on evaluated operands.
    pub fn binary(&mut self, op: BinOp, x: Val, y: Val) -> R<Val> {
        let ty = x.ty();
        let a = arith(ty);
        let f = ty.is_float();
        Ok(match op {
            BinOp::Add | BinOp::Sub | BinOp::Mul => {
                let name = match op {
                    BinOp::Add => "add",
                    BinOp::Sub => "sub",
                    _ => "mul",
                };
                let full = match (f, op) {
                    (true, _) => format!("{name}.rn.{a}"),
                    (false, BinOp::Mul) => format!("mul.lo.{a}"),
                    _ => format!("{name}.{a}"),
                };
                self.op2(&full, ty, &x, &y)
            }
            BinOp::Div if f => self.op2(&format!("div.rn.{a}"), ty, &x, &y),
            BinOp::Div | BinOp::Rem => self.int_divrem(op == BinOp::Div, x, y),
            BinOp::Min | BinOp::Max => {
                let name = if op == BinOp::Min { "min" } else { "max" };
                let r = self.op2(&format!("{name}.{a}"), ty, &x, &y);
                if f {
                    self.signed_zero_fixup(op == BinOp::Min, &x, &y, r)
                } else {
                    r
                }
            }
            BinOp::AbsDiff => {
                if f {
                    let d = self.op2(&format!("sub.rn.{a}"), ty, &x, &y);
                    self.float_abs(&d)
                } else {
                    let hi = self.op2(&format!("max.{a}"), ty, &x, &y);
                    let lo = self.op2(&format!("min.{a}"), ty, &x, &y);
                    self.op2(&format!("sub.{a}"), ty, &hi, &lo)
                }
            }
            BinOp::MulHi => self.op2(&format!("mul.hi.{a}"), ty, &x, &y),
            BinOp::AddSat | BinOp::SubSat | BinOp::MulSat => self.saturating(op, x, y),
            BinOp::And | BinOp::Or | BinOp::Xor | BinOp::LAnd | BinOp::LOr => {
                let name = match op {
                    BinOp::And | BinOp::LAnd => "and",
                    BinOp::Or | BinOp::LOr => "or",
                    _ => "xor",
                };
                if ty == ScalarType::Bool {
                    let yr = self.in_reg(&y);
                    self.op2(
                        &format!("{name}.pred"),
                        ty,
                        &x,
                        &Val::Reg {
                            name: yr,
                            ty,
                            fresh: false,
                        },
                    )
                } else {
                    self.op2(&format!("{name}.{}", bits(ty)), ty, &x, &y)
                }
            }
            // PTX clamps shift amounts above the width to the width: shl gives 0, shr.u gives
            // 0 and shr.s gives the sign fill (0 or -1), exactly the spec's rule.
            BinOp::Shl => self.op2(&format!("shl.{}", bits(ty)), ty, &x, &y),
            BinOp::Shr => self.op2(&format!("shr.{a}"), ty, &x, &y),
            BinOp::Rotl | BinOp::Rotr => self.rotate(op == BinOp::Rotl, x, y),
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => {
                self.compare(op, x, y)
            }
        })
    }

    /// `addsat subsat mulsat` on an integer type: the exact result clamped to the type's
    /// range (docs/semantics.md). `i32` add/sub have PTX's `.sat`; the others are computed
    /// with wrapping arithmetic plus an overflow test and a `selp` of the bound.
    fn saturating(&mut self, op: BinOp, x: Val, y: Val) -> Val {
        let ty = x.ty();
        let a = arith(ty);
        let b = bits(ty);
        let w = ty.bits();
        if !ty.is_signed() {
            let max = Val::Imm(konst(ty, -1));
            return match op {
                // Carry out: the wrapped sum is below an operand.
                BinOp::AddSat => {
                    let s = self.op2(&format!("add.{a}"), ty, &x, &y);
                    let c = self.setp("lt", ty, &s, &x);
                    self.selp(ty, &max, &s, &c)
                }
                // max(x, y) - y is x - y when x >= y, else 0.
                BinOp::SubSat => {
                    let m = self.op2(&format!("max.{a}"), ty, &x, &y);
                    self.op2(&format!("sub.{a}"), ty, &m, &y)
                }
                // Overflow: the high half of the full product is not 0.
                _ => {
                    let hi = self.op2(&format!("mul.hi.{a}"), ty, &x, &y);
                    let lo = self.op2(&format!("mul.lo.{a}"), ty, &x, &y);
                    let c = self.setp("ne", ty, &hi, &Val::Imm(zero(ty)));
                    self.selp(ty, &max, &lo, &c)
                }
            };
        }
        if ty == ScalarType::I32 {
            return match op {
                BinOp::AddSat => self.op2("add.sat.s32", ty, &x, &y),
                BinOp::SubSat => self.op2("sub.sat.s32", ty, &x, &y),
                // The full 64-bit product clamped to the i32 range.
                _ => {
                    let wide = self.op2("mul.wide.s32", ScalarType::I64, &x, &y);
                    let lo = self.op2(
                        "max.s64",
                        ScalarType::I64,
                        &wide,
                        &Val::Imm(konst(ScalarType::I64, i64::from(i32::MIN))),
                    );
                    let hi = self.op2(
                        "min.s64",
                        ScalarType::I64,
                        &lo,
                        &Val::Imm(konst(ScalarType::I64, i64::from(i32::MAX))),
                    );
                    self.op1("cvt.s32.s64", ty, &hi)
                }
            };
        }
        // i64: wrapping result r; the bound is MAX, or MIN when the exact result is negative
        // (`(s >> 63) ^ MAX` for the sign word s), written without a MIN literal.
        let sh = Val::Imm(Scalar::U32(w - 1));
        let max = Val::Imm(konst(ty, i64::MAX));
        let (r, overflow, sign_src) = match op {
            // Overflow: both operands' signs differ from the result's.
            BinOp::AddSat | BinOp::SubSat => {
                let add = op == BinOp::AddSat;
                let r = self.op2(
                    &format!("{}.{a}", if add { "add" } else { "sub" }),
                    ty,
                    &x,
                    &y,
                );
                let xr = self.op2(&format!("xor.{b}"), ty, &x, &r);
                // add: (x ^ r) & (y ^ r) < 0; sub: (x ^ y) & (x ^ r) < 0.
                let other = if add {
                    self.op2(&format!("xor.{b}"), ty, &y, &r)
                } else {
                    self.op2(&format!("xor.{b}"), ty, &x, &y)
                };
                let both = self.op2(&format!("and.{b}"), ty, &xr, &other);
                let o = self.setp("lt", ty, &both, &Val::Imm(zero(ty)));
                (r, o, x.clone())
            }
            // Overflow: the high half is not the sign extension of the low half.
            _ => {
                let lo = self.op2(&format!("mul.lo.{a}"), ty, &x, &y);
                let hi = self.op2(&format!("mul.hi.{a}"), ty, &x, &y);
                let ext = self.op2(&format!("shr.{a}"), ty, &lo, &sh);
                let o = self.setp("ne", ty, &hi, &ext);
                let signs = self.op2(&format!("xor.{b}"), ty, &x, &y);
                (lo, o, signs)
            }
        };
        let sign = self.op2(&format!("shr.{a}"), ty, &sign_src, &sh);
        let bound = self.op2(&format!("xor.{b}"), ty, &sign, &max);
        self.selp(ty, &bound, &r, &overflow)
    }

    fn compare(&mut self, op: BinOp, x: Val, y: Val) -> Val {
        let ty = x.ty();
        if ty == ScalarType::Bool {
            let xr = self.in_reg(&x);
            let yr = self.in_reg(&y);
            let d = self.fresh(ScalarType::Bool);
            self.ins(format!("xor.pred {}, {xr}, {yr}", d.text()));
            if op == BinOp::Eq {
                return self.op1("not.pred", ScalarType::Bool, &d);
            }
            return d;
        }
        let cmp = match op {
            BinOp::Eq => "eq",
            // Unordered not-equal: NaN != x is true.
            BinOp::Ne if ty.is_float() => "neu",
            BinOp::Ne => "ne",
            BinOp::Lt => "lt",
            BinOp::Le => "le",
            BinOp::Gt => "gt",
            _ => "ge",
        };
        self.setp(cmp, ty, &x, &y)
    }

    /// Integer div/rem with the spec's total semantics: x/0 = 0, x%0 = 0, MIN/-1 = MIN,
    /// MIN%-1 = 0. The divisor is replaced by 1 where PTX is undefined (0, and -1 for signed),
    /// then the quotient is fixed up with `selp`.
    fn int_divrem(&mut self, is_div: bool, x: Val, y: Val) -> Val {
        let ty = x.ty();
        let a = arith(ty);
        let name = if is_div { "div" } else { "rem" };
        let signed = ty.is_signed();
        if let Some(s) = y.imm() {
            let v = s.to_bits();
            let minus_one = signed && konst(ty, -1).to_bits() == v;
            if v == 0 || (minus_one && !is_div) {
                return Val::Imm(zero(ty));
            }
            if minus_one {
                return self.op1(&format!("neg.{a}"), ty, &x);
            }
            // Unsigned division by a power of two is a shift and the remainder a mask: ptxas
            // (and the driver's JIT) keep `div.u32 x, 32` as a reciprocal sequence of about
            // fifteen instructions (seen in warp_scan_u32's SASS on sm_90).
            if !signed && v.is_power_of_two() {
                let bits = ty.bits();
                return if is_div {
                    let k = Val::Imm(konst(ty, i64::from(v.trailing_zeros())));
                    self.op2(&format!("shr.{a}"), ty, &x, &k)
                } else {
                    let mask = Val::Imm(konst(ty, (v - 1) as i64));
                    self.op2(&format!("and.b{bits}"), ty, &x, &mask)
                };
            }
            return self.op2(&format!("{name}.{a}"), ty, &x, &y);
        }
        let is_zero = self.setp("eq", ty, &y, &Val::Imm(zero(ty)));
        let guard = if signed {
            let is_m1 = self.setp("eq", ty, &y, &Val::Imm(konst(ty, -1)));
            let both = self.op2("or.pred", ScalarType::Bool, &is_zero, &is_m1);
            (both, Some(is_m1))
        } else {
            (is_zero.clone(), None)
        };
        let safe = self.selp(ty, &Val::Imm(konst(ty, 1)), &y, &guard.0);
        let q = self.op2(&format!("{name}.{a}"), ty, &x, &safe);
        if !is_div {
            // x % 1 == 0 covers both replaced divisors.
            return q;
        }
        let q = match guard.1 {
            Some(m1) => {
                let neg = self.op1(&format!("neg.{a}"), ty, &x);
                self.selp(ty, &neg, &q, &m1)
            }
            None => q,
        };
        self.selp(ty, &Val::Imm(zero(ty)), &q, &is_zero)
    }

    /// Makes float min/max order -0.0 below +0.0: when the operands compare equal the result
    /// is their bitwise OR (min) or AND (max), which only differs from either for a +-0 pair.
    fn signed_zero_fixup(&mut self, is_min: bool, x: &Val, y: &Val, r: Val) -> Val {
        let ty = x.ty();
        let eq = self.setp("eq", ty, x, y);
        let both = self.op2(
            &format!("{}.{}", if is_min { "or" } else { "and" }, bits(ty)),
            ty,
            x,
            y,
        );
        self.selp(ty, &both, &r, &eq)
    }

    /// Clears the sign bit (exact for every input, NaN included).
    pub fn float_abs(&mut self, x: &Val) -> Val {
        let ty = x.ty();
        let mask = if ty == ScalarType::F64 {
            format!("0x{:016X}", i64::MAX)
        } else {
            format!("0x{:08X}", i32::MAX)
        };
        let xr = self.in_reg(x);
        let d = self.fresh(ty);
        self.ins(format!("and.{} {}, {xr}, {mask}", bits(ty), d.text()));
        d
    }

    /// Flips the sign bit.
    pub fn float_neg(&mut self, x: &Val) -> Val {
        let ty = x.ty();
        let mask = if ty == ScalarType::F64 {
            "0x8000000000000000".to_string()
        } else {
            "0x80000000".to_string()
        };
        let xr = self.in_reg(x);
        let d = self.fresh(ty);
        self.ins(format!("xor.{} {}, {xr}, {mask}", bits(ty), d.text()));
        d
    }

    fn rotate(&mut self, left: bool, x: Val, n: Val) -> Val {
        let ty = x.ty();
        if ty.bits() == 32 {
            // shf.wrap takes the amount modulo 32.
            let xr = self.in_reg(&x);
            let d = self.fresh(ty);
            let dir = if left { "l" } else { "r" };
            self.ins(format!(
                "shf.{dir}.wrap.b32 {}, {xr}, {xr}, {}",
                d.text(),
                n.text()
            ));
            return d;
        }
        // 64-bit: (x << k) | (x >> ((64 - k) & 63)) with k = n & 63 (for rotr, swap shifts);
        // k = 0 gives x | x = x.
        let k = self.op2("and.b32", ScalarType::U32, &n, &Val::Imm(Scalar::U32(63)));
        let back = self.op2("sub.u32", ScalarType::U32, &Val::Imm(Scalar::U32(64)), &k);
        let back = self.op2(
            "and.b32",
            ScalarType::U32,
            &back,
            &Val::Imm(Scalar::U32(63)),
        );
        let (l, r) = if left { (&k, &back) } else { (&back, &k) };
        let hi = self.op2("shl.b64", ty, &x, l);
        let lo = self.op2("shr.u64", ty, &x, r);
        self.op2("or.b64", ty, &hi, &lo)
    }

    /// `c ? a : b`.
    pub fn select(&mut self, c: &Val, x: &Val, y: &Val) -> R<Val> {
        let ty = x.ty();
        if ty != ScalarType::Bool {
            return Ok(self.selp(ty, x, y, c));
        }
        // Predicates have no selp: (c & x) | (!c & y).
        let cr = self.in_reg(c);
        let xr = self.in_reg(x);
        let yr = self.in_reg(y);
        let t = self.fresh(ty);
        self.ins(format!("and.pred {}, {cr}, {xr}", t.text()));
        let nc = self.fresh(ty);
        self.ins(format!("not.pred {}, {cr}", nc.text()));
        let e = self.fresh(ty);
        self.ins(format!("and.pred {}, {}, {yr}", e.text(), nc.text()));
        Ok(self.op2("or.pred", ty, &t, &e))
    }

    /// Lowers a unary operator.
    pub fn unary(&mut self, op: UnOp, x: Val) -> R<Val> {
        let ty = x.ty();
        let a = arith(ty);
        let f = ty.is_float();
        Ok(match op {
            UnOp::Neg if f => self.float_neg(&x),
            UnOp::Neg => self.op1(&format!("neg.{}", signed_arith(ty)), ty, &x),
            UnOp::Not => self.op1(&format!("not.{}", bits(ty)), ty, &x),
            UnOp::LNot => self.op1("not.pred", ty, &x),
            UnOp::Popcount | UnOp::Clz => {
                let name = if op == UnOp::Popcount { "popc" } else { "clz" };
                let c = self.op1(&format!("{name}.{}", bits(ty)), ScalarType::U32, &x);
                self.widen_count(c, ty)
            }
            UnOp::Ctz => {
                let r = self.op1(&format!("brev.{}", bits(ty)), ty, &x);
                let c = self.op1(&format!("clz.{}", bits(ty)), ScalarType::U32, &r);
                self.widen_count(c, ty)
            }
            UnOp::Brev => self.op1(&format!("brev.{}", bits(ty)), ty, &x),
            UnOp::Abs if f => self.float_abs(&x),
            UnOp::Abs if ty.is_signed() => {
                // max(x, -x): abs(MIN) = MIN without relying on abs.s32's corner case.
                let n = self.op1(&format!("neg.{a}"), ty, &x);
                self.op2(&format!("max.{a}"), ty, &x, &n)
            }
            UnOp::Abs => x,
            UnOp::Sign => self.sign(x),
            UnOp::Sqrt => self.op1(&format!("sqrt.rn.{a}"), ty, &x),
            UnOp::Rcp => self.op1(&format!("rcp.rn.{a}"), ty, &x),
            UnOp::Rsqrt => {
                // Two correctly rounded steps, the same as the reference's 1/sqrt(x).
                let s = self.op1(&format!("sqrt.rn.{a}"), ty, &x);
                self.op1(&format!("rcp.rn.{a}"), ty, &s)
            }
            UnOp::Floor => self.op1(&format!("cvt.rmi.{a}.{a}"), ty, &x),
            UnOp::Ceil => self.op1(&format!("cvt.rpi.{a}.{a}"), ty, &x),
            UnOp::Round => self.op1(&format!("cvt.rni.{a}.{a}"), ty, &x),
            UnOp::Trunc => self.op1(&format!("cvt.rzi.{a}.{a}"), ty, &x),
            UnOp::IsNan => self.op1(&format!("testp.notanumber.{a}"), ScalarType::Bool, &x),
            UnOp::IsInf => self.op1(&format!("testp.infinite.{a}"), ScalarType::Bool, &x),
            UnOp::IsFinite => self.op1(&format!("testp.finite.{a}"), ScalarType::Bool, &x),
            UnOp::Exp
            | UnOp::Exp2
            | UnOp::Log
            | UnOp::Log2
            | UnOp::Sin
            | UnOp::Cos
            | UnOp::Tan
            | UnOp::Tanh => self.transcendental(op, x)?,
        })
    }

    /// Widens a `u32` bit count to the operand's type.
    fn widen_count(&mut self, c: Val, ty: ScalarType) -> Val {
        if ty.bits() == 64 {
            self.op1("cvt.u64.u32", ty, &c)
        } else {
            match c {
                Val::Reg { name, fresh, .. } => Val::Reg { name, ty, fresh },
                v => v,
            }
        }
    }

    fn sign(&mut self, x: Val) -> Val {
        let ty = x.ty();
        let a = arith(ty);
        if ty.is_float() {
            // copysign(1, x), except +-0 and NaN which return x (equ: equal or unordered).
            let (sign, one) = if ty == ScalarType::F64 {
                ("0x8000000000000000", format!("0x{:016X}", 1f64.to_bits()))
            } else {
                ("0x80000000", format!("0x{:08X}", 1f32.to_bits()))
            };
            let xr = self.in_reg(&x);
            let s = self.fresh(ty);
            self.ins(format!("and.{} {}, {xr}, {sign}", bits(ty), s.text()));
            let o = self.fresh(ty);
            self.ins(format!("or.{} {}, {}, {one}", bits(ty), o.text(), s.text()));
            let z = self.setp("equ", ty, &x, &Val::Imm(zero(ty)));
            return self.selp(ty, &x, &o, &z);
        }
        if ty.is_signed() {
            let pos = self.setp("gt", ty, &x, &Val::Imm(zero(ty)));
            let neg = self.setp("lt", ty, &x, &Val::Imm(zero(ty)));
            let t = self.selp(ty, &Val::Imm(konst(ty, 1)), &Val::Imm(zero(ty)), &pos);
            return self.selp(ty, &Val::Imm(konst(ty, -1)), &t, &neg);
        }
        let nz = self.setp("ne", ty, &x, &Val::Imm(zero(ty)));
        let _ = a;
        self.selp(ty, &Val::Imm(konst(ty, 1)), &Val::Imm(zero(ty)), &nz)
    }

    /// Numeric conversion (Rust `as` semantics).
    pub fn cast(&mut self, t: ScalarType, x: Val) -> R<Val> {
        let s = x.ty();
        if s == t {
            return Ok(x);
        }
        if let Val::Imm(v) = &x {
            return Ok(Val::Imm(fold::cast(t, *v)));
        }
        Ok(match (s, t) {
            (ScalarType::Bool, _) => {
                let (one, zero_v) = (konst(t, 1), zero(t));
                self.selp(t, &Val::Imm(one), &Val::Imm(zero_v), &x)
            }
            (_, ScalarType::Bool) if s.is_float() => self.setp("neu", s, &x, &Val::Imm(zero(s))),
            (_, ScalarType::Bool) => self.setp("ne", s, &x, &Val::Imm(zero(s))),
            _ if s.is_int() && t.is_int() => {
                if s.bits() == t.bits() {
                    self.retype(x, t)
                } else if s.bits() < t.bits() {
                    let src = if s.is_signed() { "s32" } else { "u32" };
                    let dst = if s.is_signed() { "s64" } else { "u64" };
                    self.op1(&format!("cvt.{dst}.{src}"), t, &x)
                } else {
                    self.op1("cvt.u32.u64", t, &x)
                }
            }
            _ if s.is_int() => self.op1(&format!("cvt.rn.{}.{}", arith(t), arith(s)), t, &x),
            _ if t.is_int() => {
                // Saturating toward zero; NaN is forced to 0 explicitly because PTX gives
                // MIN for NaN when the source is f64 or the destination 64-bit.
                let c = self.op1(&format!("cvt.rzi.sat.{}.{}", arith(t), arith(s)), t, &x);
                let nan = self.op1(
                    &format!("testp.notanumber.{}", arith(s)),
                    ScalarType::Bool,
                    &x,
                );
                self.selp(t, &Val::Imm(zero(t)), &c, &nan)
            }
            (ScalarType::F32, ScalarType::F64) => self.op1("cvt.f64.f32", t, &x),
            _ => self.op1("cvt.rn.f32.f64", t, &x),
        })
    }

    /// The same register reinterpreted as another same-class type.
    fn retype(&mut self, x: Val, t: ScalarType) -> Val {
        match x {
            Val::Reg { name, fresh, .. } => Val::Reg { name, ty: t, fresh },
            Val::Imm(s) => Val::Imm(crate::ir::Scalar::from_bits(t, s.to_bits())),
        }
    }

    /// Same-width reinterpretation.
    pub fn bitcast(&mut self, t: ScalarType, x: Val) -> R<Val> {
        let s = x.ty();
        if s == t {
            return Ok(x);
        }
        if let Val::Imm(v) = &x {
            let b = if t.bits() == 32 {
                v.to_bits() & 0xFFFF_FFFF
            } else {
                v.to_bits()
            };
            return Ok(Val::Imm(Scalar::from_bits(t, b)));
        }
        if s.is_float() == t.is_float() {
            return Ok(self.retype(x, t));
        }
        Ok(self.op1(&format!("mov.{}", bits(t)), t, &x))
    }
}

/// `neg` type for an integer (unsigned negation wraps the same way).
fn signed_arith(ty: ScalarType) -> &'static str {
    if ty.bits() == 64 {
        "s64"
    } else {
        "s32"
    }
}
