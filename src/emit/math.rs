//! Transcendental functions (`exp exp2 log log2 sin cos tan tanh`), straight-line PTX.
//!
//! Method (bounds in [`super::precision`]): every function is evaluated in **f64** with
//! correctly rounded f64 `fma.rn`/`mul.rn`/`div.rn` steps; an f32 operand is widened exactly,
//! and the f64 result rounded once to f32 (`cvt.rn.f32.f64`), which makes the f32 versions
//! nearly correctly rounded. No `.approx` instruction is used: their errors are absolute,
//! not relative, on part of the range (`sin.approx`, `lg2.approx`) or too large
//! (`tanh.approx`, 2^-11).
//!
//! - `exp(x)`: `k = rni(x*log2(e))`, `r = x - k*ln2` with ln2 split in two parts (Cody-Waite,
//!   both steps as fma; `|r| <= ln2/2`), `exp(r)` by its Taylor polynomial (degree 13, Horner
//!   with fma), times `2^k` applied as two exact power-of-two factors so that subnormal and
//!   overflowing results round once. The operand is clamped to where the result saturates
//!   (0 or inf); NaN is passed through.
//! - `exp2(x)`: `k = rni(x)`, `r = x - k` (exact), `2^r` by the Taylor polynomial of
//!   `exp(r*ln2)` (coefficients `ln2^n/n!`), then the same scaling.
//! - `log(x)`, `log2(x)`: `x = 2^e * m` with `m` in `[sqrt(1/2), sqrt(2))` (subnormals
//!   pre-scaled by 2^54), `log(m) = 2*atanh(s)`, `s = (m-1)/(m+1)`, odd series in `s` to
//!   degree 23; `log = e*ln2_hi + (e*ln2_lo + log(m))`, `log2 = e + log(m)*log2(e)` (fma).
//!   `x < 0` or NaN gives NaN, `+-0` gives `-inf`, `+inf` gives `+inf`.
//! - `sin`, `cos`, `tan`: `k = rni(x*2/pi)`, `r = x - k*pi/2` (two-part pi/2, fma), Taylor
//!   polynomials of sin (degree 17) and cos (degree 18) on `|r| <= pi/4`, quadrant `k mod 4`
//!   selects and negates; `tan = sin/cos` of the reduced argument. Accurate for
//!   `|x| < 2^20`; beyond that (and for `|k| >= 2^31`) the reduction loses accuracy.
//! - `tanh(x)`: `|x| < 0.55`: `u = expm1(2|x|)` by its Taylor polynomial, `u/(u+2)`;
//!   otherwise `1 - 2/(exp(2|x|)+1)`; the sign of `x` is copied onto the result.

use super::writer::{Val, Writer};
use super::EmitError;
use crate::ir::{Scalar, ScalarType, UnOp};

type R<T> = Result<T, EmitError>;

const F64: ScalarType = ScalarType::F64;
/// ln2 split for Cody-Waite reduction (the fdlibm constants): the high part has 21 trailing
/// zero bits, so `k*hi` is exact for |k| < 2^21.
const LN2_HI: f64 = f64::from_bits(0x3FE6_2E42_FEE0_0000);
const LN2_LO: f64 = f64::from_bits(0x3DEA_39EF_3579_3C76);
/// pi/2 = PIO2_HI + PIO2_LO to about 2^-107.
const PIO2_HI: f64 = std::f64::consts::FRAC_PI_2;
const PIO2_LO: f64 = 6.123_233_995_736_766e-17;

fn k(v: f64) -> Val {
    Val::Imm(Scalar::F64(v))
}

/// Taylor coefficients `a^n / n!` for n = 0..=deg.
fn exp_coeffs(a: f64, deg: usize) -> Vec<f64> {
    let mut c = Vec::with_capacity(deg + 1);
    let mut t = 1.0f64;
    for n in 0..=deg {
        if n > 0 {
            t = t * a / n as f64;
        }
        c.push(t);
    }
    c
}

impl Writer<'_> {
    /// Lowers an approximate unary op (see the module docs).
    pub fn transcendental(&mut self, op: UnOp, x: Val) -> R<Val> {
        let ty = x.ty();
        if !ty.is_float() {
            return Err(EmitError::Internal(format!("{} on {ty}", op.name())));
        }
        let x64 = if ty == ScalarType::F32 {
            self.op1("cvt.f64.f32", F64, &x)
        } else {
            Val::Reg {
                name: self.in_reg(&x),
                ty: F64,
                fresh: false,
            }
        };
        let r = match op {
            UnOp::Exp => self.exp64(&x64, false),
            UnOp::Exp2 => self.exp64(&x64, true),
            UnOp::Log => self.log64(&x64, false),
            UnOp::Log2 => self.log64(&x64, true),
            UnOp::Sin | UnOp::Cos | UnOp::Tan => self.trig64(op, &x64),
            UnOp::Tanh => self.tanh64(&x64),
            _ => {
                return Err(EmitError::Internal(format!(
                    "{} is not transcendental",
                    op.name()
                )))
            }
        };
        Ok(if ty == ScalarType::F32 {
            self.op1("cvt.rn.f32.f64", ScalarType::F32, &r)
        } else {
            r
        })
    }

    fn fma64(&mut self, a: &Val, b: &Val, c: &Val) -> Val {
        let ar = self.in_reg(a);
        let d = self.fresh(F64);
        self.ins(format!(
            "fma.rn.f64 {}, {ar}, {}, {}",
            d.text(),
            b.text(),
            c.text()
        ));
        d
    }

    fn mul64(&mut self, a: &Val, b: &Val) -> Val {
        self.op2("mul.rn.f64", F64, a, b)
    }

    /// Horner: `c[0] + r*(c[1] + r*(... c[n]))`.
    fn horner(&mut self, r: &Val, c: &[f64]) -> Val {
        let mut acc = k(c[c.len() - 1]);
        for &ci in c[..c.len() - 1].iter().rev() {
            acc = self.fma64(&acc, r, &k(ci));
        }
        acc
    }

    /// `p * 2^kf` for an integral f64 `kf`, as two exact power-of-two factors.
    fn scale2(&mut self, p: &Val, kf: &Val) -> Val {
        let ki = self.op1("cvt.rzi.s32.f64", ScalarType::I32, kf);
        let k1 = self.op2("shr.s32", ScalarType::I32, &ki, &Val::Imm(Scalar::U32(1)));
        let k2 = self.op2("sub.s32", ScalarType::I32, &ki, &k1);
        let mut out = p.clone();
        for half in [k1, k2] {
            let w = self.op1("cvt.s64.s32", ScalarType::I64, &half);
            let b = self.op2("add.s64", ScalarType::I64, &w, &Val::Imm(Scalar::I64(1023)));
            let e = self.op2("shl.b64", ScalarType::I64, &b, &Val::Imm(Scalar::U32(52)));
            let f = self.op1("mov.b64", F64, &e);
            out = self.mul64(&out, &f);
        }
        out
    }

    /// `isnan(x) ? x : r`.
    fn keep_nan(&mut self, x: &Val, r: &Val) -> Val {
        let nan = self.op1("testp.notanumber.f64", ScalarType::Bool, x);
        self.selp(F64, x, r, &nan)
    }

    fn exp64(&mut self, x: &Val, base2: bool) -> Val {
        let (lo, hi) = if base2 {
            (-1080.0, 1030.0)
        } else {
            (-750.0, 712.0)
        };
        let c = self.op2("max.f64", F64, x, &k(lo));
        let c = self.op2("min.f64", F64, &c, &k(hi));
        let (kf, r) = if base2 {
            let kf = self.op1("cvt.rni.f64.f64", F64, &c);
            let r = self.op2("sub.rn.f64", F64, &c, &kf);
            (kf, r)
        } else {
            let t = self.mul64(&c, &k(std::f64::consts::LOG2_E));
            let kf = self.op1("cvt.rni.f64.f64", F64, &t);
            let nk = self.float_neg(&kf);
            let r = self.fma64(&nk, &k(LN2_HI), &c);
            let r = self.fma64(&nk, &k(LN2_LO), &r);
            (kf, r)
        };
        let coeffs = exp_coeffs(if base2 { std::f64::consts::LN_2 } else { 1.0 }, 13);
        let p = self.horner(&r, &coeffs);
        let s = self.scale2(&p, &kf);
        self.keep_nan(x, &s)
    }

    fn log64(&mut self, x: &Val, base2: bool) -> Val {
        // Subnormals: scale by 2^54 so the exponent field is meaningful.
        let sub = self.setp("lt", F64, x, &k(f64::MIN_POSITIVE));
        let xs_big = self.mul64(x, &k(18014398509481984.0));
        let xs = self.selp(F64, &xs_big, x, &sub);
        let eoff = self.selp(
            ScalarType::I32,
            &Val::Imm(Scalar::I32(-54)),
            &Val::Imm(Scalar::I32(0)),
            &sub,
        );
        let bits = self.op1("mov.b64", ScalarType::U64, &xs);
        let ebits = self.op2(
            "shr.u64",
            ScalarType::U64,
            &bits,
            &Val::Imm(Scalar::U32(52)),
        );
        let e32 = self.op1("cvt.u32.u64", ScalarType::I32, &ebits);
        let e = self.op2(
            "add.s32",
            ScalarType::I32,
            &e32,
            &Val::Imm(Scalar::I32(-1023)),
        );
        let e = self.op2("add.s32", ScalarType::I32, &e, &eoff);
        let mb = self.op2(
            "and.b64",
            ScalarType::U64,
            &bits,
            &Val::Imm(Scalar::U64((1u64 << 52) - 1)),
        );
        let mb = self.op2(
            "or.b64",
            ScalarType::U64,
            &mb,
            &Val::Imm(Scalar::U64(1f64.to_bits())),
        );
        let m = self.op1("mov.b64", F64, &mb);
        let big = self.setp("gt", F64, &m, &k(std::f64::consts::SQRT_2));
        let mh = self.mul64(&m, &k(0.5));
        let m = self.selp(F64, &mh, &m, &big);
        let e1 = self.op2("add.s32", ScalarType::I32, &e, &Val::Imm(Scalar::I32(1)));
        let e = self.selp(ScalarType::I32, &e1, &e, &big);
        let num = self.op2("sub.rn.f64", F64, &m, &k(1.0));
        let den = self.op2("add.rn.f64", F64, &m, &k(1.0));
        let s = self.op2("div.rn.f64", F64, &num, &den);
        let z = self.mul64(&s, &s);
        let coeffs: Vec<f64> = (0..12).map(|n| 2.0 / (2 * n + 1) as f64).collect();
        let q = self.horner(&z, &coeffs);
        let lm = self.mul64(&s, &q);
        let ef = self.op1("cvt.rn.f64.s32", F64, &e);
        let r = if base2 {
            self.fma64(&lm, &k(std::f64::consts::LOG2_E), &ef)
        } else {
            let lo = self.fma64(&ef, &k(LN2_LO), &lm);
            self.fma64(&ef, &k(LN2_HI), &lo)
        };
        // Special operands.
        let zero = self.setp("eq", F64, x, &k(0.0));
        let r = self.selp(F64, &k(f64::NEG_INFINITY), &r, &zero);
        let neg = self.setp("lt", F64, x, &k(0.0));
        let r = self.selp(F64, &Val::Imm(Scalar::F64(f64::NAN)), &r, &neg);
        let inf = self.setp("eq", F64, x, &k(f64::INFINITY));
        let r = self.selp(F64, &k(f64::INFINITY), &r, &inf);
        self.keep_nan(x, &r)
    }

    fn trig64(&mut self, op: UnOp, x: &Val) -> Val {
        let t = self.mul64(x, &k(std::f64::consts::FRAC_2_PI));
        let kf = self.op1("cvt.rni.f64.f64", F64, &t);
        let nk = self.float_neg(&kf);
        let r = self.fma64(&nk, &k(PIO2_HI), x);
        let r = self.fma64(&nk, &k(PIO2_LO), &r);
        // k = 0: r = x exactly (keeps the sign of -0).
        let k0 = self.setp("eq", F64, &kf, &k(0.0));
        let r = self.selp(F64, x, &r, &k0);
        let z = self.mul64(&r, &r);
        // sin(r) = r + r*z*S(z), cos(r) = 1 + z*C(z).
        let sc: Vec<f64> = (1..=8).map(|n| sign(n) / fact(2 * n + 1)).collect();
        let cc: Vec<f64> = (1..=9).map(|n| sign(n) / fact(2 * n)).collect();
        let sp = self.horner(&z, &sc);
        let rz = self.mul64(&r, &z);
        let s = self.fma64(&rz, &sp, &r);
        let cp = self.horner(&z, &cc);
        let c = self.fma64(&z, &cp, &k(1.0));
        let q = self.op1("cvt.rzi.s32.f64", ScalarType::I32, &kf);
        let q = self.op2("and.b32", ScalarType::I32, &q, &Val::Imm(Scalar::I32(3)));
        let odd_b = self.op2("and.b32", ScalarType::I32, &q, &Val::Imm(Scalar::I32(1)));
        let odd = self.setp("ne", ScalarType::I32, &odd_b, &Val::Imm(Scalar::I32(0)));
        match op {
            UnOp::Tan => {
                // q even: s/c; q odd: -c/s.
                let num = self.selp(F64, &c, &s, &odd);
                let den = self.selp(F64, &s, &c, &odd);
                let nn = self.float_neg(&num);
                let num = self.selp(F64, &nn, &num, &odd);
                self.op2("div.rn.f64", F64, &num, &den)
            }
            _ => {
                // sin: q -> S, C, -S, -C; cos: q -> C, -S, -C, S.
                let qq = if op == UnOp::Cos {
                    self.op2("add.s32", ScalarType::I32, &q, &Val::Imm(Scalar::I32(1)))
                } else {
                    q
                };
                let odd_b = self.op2("and.b32", ScalarType::I32, &qq, &Val::Imm(Scalar::I32(1)));
                let odd = self.setp("ne", ScalarType::I32, &odd_b, &Val::Imm(Scalar::I32(0)));
                let neg_b = self.op2("and.b32", ScalarType::I32, &qq, &Val::Imm(Scalar::I32(2)));
                let negp = self.setp("ne", ScalarType::I32, &neg_b, &Val::Imm(Scalar::I32(0)));
                let v = self.selp(F64, &c, &s, &odd);
                let nv = self.float_neg(&v);
                self.selp(F64, &nv, &v, &negp)
            }
        }
    }

    fn tanh64(&mut self, x: &Val) -> Val {
        let a = self.float_abs(x);
        let two_a = self.op2("add.rn.f64", F64, &a, &a);
        // Small: expm1(y) = y * sum y^n/(n+1)!, tanh = u/(u+2).
        let em: Vec<f64> = (0..20).map(|n| 1.0 / fact(n + 1)).collect();
        let p = self.horner(&two_a, &em);
        let u = self.mul64(&two_a, &p);
        let den = self.op2("add.rn.f64", F64, &u, &k(2.0));
        let small = self.op2("div.rn.f64", F64, &u, &den);
        // Large: 1 - 2/(exp(2a)+1).
        let e = self.exp64(&two_a, false);
        let e1 = self.op2("add.rn.f64", F64, &e, &k(1.0));
        let q = self.op2("div.rn.f64", F64, &k(2.0), &e1);
        let large = self.op2("sub.rn.f64", F64, &k(1.0), &q);
        let is_small = self.setp("lt", F64, &a, &k(0.55));
        let t = self.selp(F64, &small, &large, &is_small);
        // copysign(t, x)
        let sgn = self.op2("and.b64", F64, x, &Val::Imm(Scalar::U64(1 << 63)));
        let t = self.op2("or.b64", F64, &t, &sgn);
        self.keep_nan(x, &t)
    }
}

fn sign(n: usize) -> f64 {
    if n % 2 == 1 {
        -1.0
    } else {
        1.0
    }
}

fn fact(n: usize) -> f64 {
    (1..=n).map(|i| i as f64).product()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Evaluates the same polynomial pipeline on the CPU, to check the coefficients and the
    /// reductions (the PTX runs exactly these f64 operations).
    fn horner(r: f64, c: &[f64]) -> f64 {
        c.iter()
            .rev()
            .skip(1)
            .fold(c[c.len() - 1], |acc, ci| acc.mul_add(r, *ci))
    }

    #[test]
    fn split_constants_sum_to_their_targets() {
        assert!((LN2_HI + LN2_LO - std::f64::consts::LN_2).abs() < 1e-16);
        assert_eq!(LN2_HI.to_bits() & 0x1F_FFFF, 0);
        assert_eq!(PIO2_HI + PIO2_LO, std::f64::consts::FRAC_PI_2);
    }

    #[test]
    fn cpu_model_of_exp_is_within_two_ulp() {
        let ulp = |a: f64, b: f64| (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs();
        let mut x = -700.0f64;
        while x < 700.0 {
            let kf = (x * std::f64::consts::LOG2_E).round_ties_even();
            let r = (-kf).mul_add(LN2_HI, x);
            let r = (-kf).mul_add(LN2_LO, r);
            let p = horner(r, &exp_coeffs(1.0, 13));
            let ki = kf as i32;
            let (k1, k2) = (ki >> 1, ki - (ki >> 1));
            let got = p
                * f64::from_bits(((k1 + 1023) as u64) << 52)
                * f64::from_bits(((k2 + 1023) as u64) << 52);
            assert!(ulp(got, x.exp()) <= 2, "exp({x}) = {got} vs {}", x.exp());
            x += 0.913;
        }
    }

    #[test]
    fn cpu_model_of_sin_is_within_two_ulp() {
        let ulp = |a: f64, b: f64| (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs();
        let sc: Vec<f64> = (1..=8).map(|n| sign(n) / fact(2 * n + 1)).collect();
        let cc: Vec<f64> = (1..=9).map(|n| sign(n) / fact(2 * n)).collect();
        let mut x = -100.0f64;
        while x < 100.0 {
            let kf = (x * std::f64::consts::FRAC_2_PI).round_ties_even();
            let r = (-kf).mul_add(PIO2_HI, x);
            let r = (-kf).mul_add(PIO2_LO, r);
            let z = r * r;
            let s = (r * z).mul_add(horner(z, &sc), r);
            let c = z.mul_add(horner(z, &cc), 1.0);
            let q = (kf as i32) & 3;
            let v = match q {
                0 => s,
                1 => c,
                2 => -s,
                _ => -c,
            };
            let want = x.sin();
            assert!(
                ulp(v, want) <= 2 || (v - want).abs() < 1e-18,
                "sin({x}) = {v} vs {want}"
            );
            x += 0.0731;
        }
    }
}
