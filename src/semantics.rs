//! The scalar operator semantics every layer shares: lane-vectorised operators (one call
//! applies an operator to every active lane) and their one-lane forms.
//!
//! Values live in registers as `u64` bit patterns (`u32`/`i32`/`f32`/`bool` in the low 32 bits,
//! `bool` as 0/1, floats as IEEE bits). Each operator is matched once per call and then runs a
//! tight loop over the active lanes, which is what makes the interpreter fast. The scalar
//! helpers ([`bin_scalar`], ...) run the very same code on one lane, so atomics, reductions,
//! tests and the emitter's constant folder (`emit::fold`) share one definition of every
//! operator's semantics (docs/semantics.md).

use crate::ir::{BinOp, ScalarType, UnOp};

/// The lanes a statement or expression runs on: all of `0..n`, or a sorted list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lanes {
    /// Every lane `0..n` is active.
    All(usize),
    /// These lanes (ascending) are active.
    List(Vec<u32>),
}

impl Lanes {
    /// Number of active lanes.
    pub(crate) fn len(&self) -> usize {
        match self {
            Lanes::All(n) => *n,
            Lanes::List(v) => v.len(),
        }
    }

    /// True when no lane is active.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f` on every active lane in ascending order.
    #[inline(always)]
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize)) {
        match self {
            Lanes::All(n) => (0..*n).for_each(f),
            Lanes::List(v) => v.iter().for_each(|&l| f(l as usize)),
        }
    }

    /// The active lanes for which `keep` holds (stays `All` when nothing is dropped).
    pub(crate) fn filter(&self, keep: impl Fn(usize) -> bool) -> Lanes {
        match self {
            Lanes::All(n) => {
                if (0..*n).all(&keep) {
                    Lanes::All(*n)
                } else {
                    Lanes::List((0..*n as u32).filter(|&l| keep(l as usize)).collect())
                }
            }
            Lanes::List(v) => {
                Lanes::List(v.iter().copied().filter(|&l| keep(l as usize)).collect())
            }
        }
    }
}

#[inline(always)]
pub(crate) fn map1(out: &mut [u64], a: &[u64], lanes: &Lanes, f: impl Fn(u64) -> u64) {
    match lanes {
        Lanes::All(n) => {
            for (o, &x) in out[..*n].iter_mut().zip(&a[..*n]) {
                *o = f(x);
            }
        }
        Lanes::List(v) => {
            for &l in v {
                let l = l as usize;
                out[l] = f(a[l]);
            }
        }
    }
}

#[inline(always)]
pub(crate) fn map2(
    out: &mut [u64],
    a: &[u64],
    b: &[u64],
    lanes: &Lanes,
    f: impl Fn(u64, u64) -> u64,
) {
    match lanes {
        Lanes::All(n) => {
            let n = *n;
            for ((o, &x), &y) in out[..n].iter_mut().zip(&a[..n]).zip(&b[..n]) {
                *o = f(x, y);
            }
        }
        Lanes::List(v) => {
            for &l in v {
                let l = l as usize;
                out[l] = f(a[l], b[l]);
            }
        }
    }
}

#[inline(always)]
pub(crate) fn map3(
    out: &mut [u64],
    a: &[u64],
    b: &[u64],
    c: &[u64],
    lanes: &Lanes,
    f: impl Fn(u64, u64, u64) -> u64,
) {
    match lanes {
        Lanes::All(n) => {
            let n = *n;
            for (((o, &x), &y), &z) in out[..n].iter_mut().zip(&a[..n]).zip(&b[..n]).zip(&c[..n]) {
                *o = f(x, y, z);
            }
        }
        Lanes::List(v) => {
            for &l in v {
                let l = l as usize;
                out[l] = f(a[l], b[l], c[l]);
            }
        }
    }
}

/// Integer binary operators for one type: `$t` the type, `$u` its unsigned twin (for the
/// zero-extended register form), `$wide` the double-width type for `mulhi`.
macro_rules! int_bin_fn {
    ($name:ident, $t:ty, $u:ty, $wide:ty) => {
        fn $name(op: BinOp, out: &mut [u64], a: &[u64], b: &[u64], lanes: &Lanes) {
            const W: u32 = <$t>::BITS;
            #[inline(always)]
            fn f(x: u64) -> $t {
                x as $t
            }
            #[inline(always)]
            fn t(v: $t) -> u64 {
                v as $u as u64
            }
            match op {
                BinOp::Add => map2(out, a, b, lanes, |x, y| t(f(x).wrapping_add(f(y)))),
                BinOp::Sub => map2(out, a, b, lanes, |x, y| t(f(x).wrapping_sub(f(y)))),
                BinOp::Mul => map2(out, a, b, lanes, |x, y| t(f(x).wrapping_mul(f(y)))),
                // Division by zero gives 0; MIN / -1 wraps to MIN and MIN rem -1 is 0.
                BinOp::Div => map2(out, a, b, lanes, |x, y| {
                    let (x, y) = (f(x), f(y));
                    t(if y == 0 { 0 } else { x.wrapping_div(y) })
                }),
                BinOp::Rem => map2(out, a, b, lanes, |x, y| {
                    let (x, y) = (f(x), f(y));
                    t(if y == 0 { 0 } else { x.wrapping_rem(y) })
                }),
                BinOp::Min => map2(out, a, b, lanes, |x, y| t(f(x).min(f(y)))),
                BinOp::Max => map2(out, a, b, lanes, |x, y| t(f(x).max(f(y)))),
                BinOp::AbsDiff => map2(out, a, b, lanes, |x, y| {
                    let (x, y) = (f(x), f(y));
                    t(if x > y {
                        x.wrapping_sub(y)
                    } else {
                        y.wrapping_sub(x)
                    })
                }),
                BinOp::MulHi => map2(out, a, b, lanes, |x, y| {
                    t(((f(x) as $wide * f(y) as $wide) >> W) as $t)
                }),
                // The exact result clamped to the type's range.
                BinOp::AddSat => map2(out, a, b, lanes, |x, y| t(f(x).saturating_add(f(y)))),
                BinOp::SubSat => map2(out, a, b, lanes, |x, y| t(f(x).saturating_sub(f(y)))),
                BinOp::MulSat => map2(out, a, b, lanes, |x, y| t(f(x).saturating_mul(f(y)))),
                BinOp::And => map2(out, a, b, lanes, |x, y| t(f(x) & f(y))),
                BinOp::Or => map2(out, a, b, lanes, |x, y| t(f(x) | f(y))),
                BinOp::Xor => map2(out, a, b, lanes, |x, y| t(f(x) ^ f(y))),
                // PTX rules: amounts >= width give 0, or the sign for an arithmetic shr
                // (shifting by W-1 then 1 more yields -1/0 for signed, 0 for unsigned).
                BinOp::Shl => map2(out, a, b, lanes, |x, y| {
                    let s = y as u32;
                    t(if s >= W { 0 } else { f(x) << s })
                }),
                BinOp::Shr => map2(out, a, b, lanes, |x, y| {
                    let s = y as u32;
                    let v = f(x);
                    t(if s >= W { (v >> (W - 1)) >> 1 } else { v >> s })
                }),
                BinOp::Rotl => map2(out, a, b, lanes, |x, y| t(f(x).rotate_left(y as u32 % W))),
                BinOp::Rotr => map2(out, a, b, lanes, |x, y| t(f(x).rotate_right(y as u32 % W))),
                BinOp::Eq => map2(out, a, b, lanes, |x, y| (f(x) == f(y)) as u64),
                BinOp::Ne => map2(out, a, b, lanes, |x, y| (f(x) != f(y)) as u64),
                BinOp::Lt => map2(out, a, b, lanes, |x, y| (f(x) < f(y)) as u64),
                BinOp::Le => map2(out, a, b, lanes, |x, y| (f(x) <= f(y)) as u64),
                BinOp::Gt => map2(out, a, b, lanes, |x, y| (f(x) > f(y)) as u64),
                BinOp::Ge => map2(out, a, b, lanes, |x, y| (f(x) >= f(y)) as u64),
                BinOp::LAnd => map2(out, a, b, lanes, |x, y| (f(x) != 0 && f(y) != 0) as u64),
                BinOp::LOr => map2(out, a, b, lanes, |x, y| (f(x) != 0 || f(y) != 0) as u64),
            }
        }
    };
}

int_bin_fn!(bin_u32, u32, u32, u64);
int_bin_fn!(bin_i32, i32, u32, i64);
int_bin_fn!(bin_u64, u64, u64, u128);
int_bin_fn!(bin_i64, i64, u64, i128);

/// Float binary operators for one type (`$u` is the bit-pattern type).
macro_rules! float_bin_fn {
    ($name:ident, $min:ident, $max:ident, $t:ty, $u:ty, $qnan:expr) => {
        /// `min`: the non-NaN operand; both NaN give the canonical NaN; -0 < +0.
        #[inline(always)]
        pub(crate) fn $min(a: $t, b: $t) -> $t {
            if a.is_nan() {
                if b.is_nan() {
                    <$t>::from_bits($qnan)
                } else {
                    b
                }
            } else if b.is_nan() || a < b {
                a
            } else if a == b {
                // Equal values differ at most in the sign of zero: prefer -0.
                if a.is_sign_negative() {
                    a
                } else {
                    b
                }
            } else {
                b
            }
        }

        /// `max`: the non-NaN operand; both NaN give the canonical NaN; +0 > -0.
        #[inline(always)]
        pub(crate) fn $max(a: $t, b: $t) -> $t {
            if a.is_nan() {
                if b.is_nan() {
                    <$t>::from_bits($qnan)
                } else {
                    b
                }
            } else if b.is_nan() || a > b {
                a
            } else if a == b {
                if a.is_sign_positive() {
                    a
                } else {
                    b
                }
            } else {
                b
            }
        }

        fn $name(op: BinOp, out: &mut [u64], a: &[u64], b: &[u64], lanes: &Lanes) {
            #[inline(always)]
            fn f(x: u64) -> $t {
                <$t>::from_bits(x as $u)
            }
            #[inline(always)]
            fn t(v: $t) -> u64 {
                v.to_bits() as u64
            }
            match op {
                BinOp::Add => map2(out, a, b, lanes, |x, y| t(f(x) + f(y))),
                BinOp::Sub => map2(out, a, b, lanes, |x, y| t(f(x) - f(y))),
                BinOp::Mul => map2(out, a, b, lanes, |x, y| t(f(x) * f(y))),
                BinOp::Div => map2(out, a, b, lanes, |x, y| t(f(x) / f(y))),
                BinOp::Min => map2(out, a, b, lanes, |x, y| t($min(f(x), f(y)))),
                BinOp::Max => map2(out, a, b, lanes, |x, y| t($max(f(x), f(y)))),
                // larger - smaller == |a - b| exactly (round-to-nearest is sign-symmetric).
                BinOp::AbsDiff => map2(out, a, b, lanes, |x, y| t((f(x) - f(y)).abs())),
                BinOp::Eq => map2(out, a, b, lanes, |x, y| (f(x) == f(y)) as u64),
                BinOp::Ne => map2(out, a, b, lanes, |x, y| (f(x) != f(y)) as u64),
                BinOp::Lt => map2(out, a, b, lanes, |x, y| (f(x) < f(y)) as u64),
                BinOp::Le => map2(out, a, b, lanes, |x, y| (f(x) <= f(y)) as u64),
                BinOp::Gt => map2(out, a, b, lanes, |x, y| (f(x) > f(y)) as u64),
                BinOp::Ge => map2(out, a, b, lanes, |x, y| (f(x) >= f(y)) as u64),
                // Not defined on floats (the validator rejects them): a harmless 0.
                BinOp::Rem
                | BinOp::MulHi
                | BinOp::AddSat
                | BinOp::SubSat
                | BinOp::MulSat
                | BinOp::And
                | BinOp::Or
                | BinOp::Xor
                | BinOp::Shl
                | BinOp::Shr
                | BinOp::Rotl
                | BinOp::Rotr
                | BinOp::LAnd
                | BinOp::LOr => map2(out, a, b, lanes, |_, _| 0),
            }
        }
    };
}

float_bin_fn!(bin_f32, fmin32, fmax32, f32, u32, 0x7fff_ffff);
float_bin_fn!(bin_f64, fmin64, fmax64, f64, u64, 0x7fff_ffff_ffff_ffff);

/// `out = a OP b` on the active lanes; `ty` is the operand type.
pub(crate) fn bin(op: BinOp, ty: ScalarType, out: &mut [u64], a: &[u64], b: &[u64], lanes: &Lanes) {
    match ty {
        // bool values are 0/1 words: the u32 operators give and/or/xor/eq/ne/land/lor.
        ScalarType::Bool | ScalarType::U32 => bin_u32(op, out, a, b, lanes),
        ScalarType::I32 => bin_i32(op, out, a, b, lanes),
        ScalarType::U64 => bin_u64(op, out, a, b, lanes),
        ScalarType::I64 => bin_i64(op, out, a, b, lanes),
        ScalarType::F32 => bin_f32(op, out, a, b, lanes),
        ScalarType::F64 => bin_f64(op, out, a, b, lanes),
    }
}

/// Integer unary operators for one type; `$abs`/`$sign` differ for signed and unsigned.
macro_rules! int_un_fn {
    ($name:ident, $t:ty, $u:ty, $abs:expr, $sign:expr) => {
        fn $name(op: UnOp, out: &mut [u64], a: &[u64], lanes: &Lanes) {
            #[inline(always)]
            fn f(x: u64) -> $t {
                x as $t
            }
            #[inline(always)]
            fn t(v: $t) -> u64 {
                v as $u as u64
            }
            let abs: fn($t) -> $t = $abs;
            let sign: fn($t) -> $t = $sign;
            match op {
                UnOp::Neg => map1(out, a, lanes, |x| t(f(x).wrapping_neg())),
                UnOp::Not => map1(out, a, lanes, |x| t(!f(x))),
                UnOp::LNot => map1(out, a, lanes, |x| (f(x) == 0) as u64),
                UnOp::Popcount => map1(out, a, lanes, |x| f(x).count_ones() as u64),
                UnOp::Clz => map1(out, a, lanes, |x| f(x).leading_zeros() as u64),
                UnOp::Ctz => map1(out, a, lanes, |x| f(x).trailing_zeros() as u64),
                UnOp::Brev => map1(out, a, lanes, |x| t(f(x).reverse_bits())),
                UnOp::Abs => map1(out, a, lanes, |x| t(abs(f(x)))),
                UnOp::Sign => map1(out, a, lanes, |x| t(sign(f(x)))),
                // Float-only operators (rejected by the validator): a harmless 0.
                _ => map1(out, a, lanes, |_| 0),
            }
        }
    };
}

int_un_fn!(un_u32, u32, u32, |v| v, |v| (v != 0) as u32);
int_un_fn!(un_i32, i32, u32, |v| v.wrapping_abs(), |v| v.signum());
int_un_fn!(un_u64, u64, u64, |v| v, |v| (v != 0) as u64);
int_un_fn!(un_i64, i64, u64, |v| v.wrapping_abs(), |v| v.signum());

macro_rules! float_un_fn {
    ($name:ident, $t:ty, $u:ty) => {
        fn $name(op: UnOp, out: &mut [u64], a: &[u64], lanes: &Lanes) {
            const SIGN: u64 = 1 << (<$u>::BITS - 1);
            #[inline(always)]
            fn f(x: u64) -> $t {
                <$t>::from_bits(x as $u)
            }
            #[inline(always)]
            fn t(v: $t) -> u64 {
                v.to_bits() as u64
            }
            /// The transcendental functions of an `f32` are evaluated in `f64` and rounded
            /// once, as the emitted PTX does (`emit::math`): both sides are then nearly
            /// correctly rounded and agree bit for bit except where an `f64` result lies
            /// within a few `f64` ulps of an `f32` rounding boundary. With `f32`'s own libm
            /// functions (up to about 1 ulp off) a 1-ulp difference in one `exp` was carried
            /// through a long dot product into an error of one ulp of its partial sums, far
            /// beyond any per-operator ulp bound on a result near zero. For `f64` this is
            /// the identity.
            #[inline(always)]
            fn wide(x: u64, g: fn(f64) -> f64) -> u64 {
                t(g(f(x) as f64) as $t)
            }
            match op {
                UnOp::Neg => map1(out, a, lanes, |x| x ^ SIGN),
                UnOp::Abs => map1(out, a, lanes, |x| x & !SIGN),
                UnOp::Sign => map1(out, a, lanes, |x| {
                    let v = f(x);
                    if v.is_nan() || v == 0.0 {
                        x
                    } else {
                        t((1.0 as $t).copysign(v))
                    }
                }),
                UnOp::Sqrt => map1(out, a, lanes, |x| t(f(x).sqrt())),
                UnOp::Rsqrt => map1(out, a, lanes, |x| t(1.0 / f(x).sqrt())),
                UnOp::Rcp => map1(out, a, lanes, |x| t(1.0 / f(x))),
                UnOp::Exp => map1(out, a, lanes, |x| wide(x, f64::exp)),
                UnOp::Exp2 => map1(out, a, lanes, |x| wide(x, f64::exp2)),
                UnOp::Log => map1(out, a, lanes, |x| wide(x, f64::ln)),
                UnOp::Log2 => map1(out, a, lanes, |x| wide(x, f64::log2)),
                UnOp::Sin => map1(out, a, lanes, |x| wide(x, f64::sin)),
                UnOp::Cos => map1(out, a, lanes, |x| wide(x, f64::cos)),
                UnOp::Tan => map1(out, a, lanes, |x| wide(x, f64::tan)),
                UnOp::Tanh => map1(out, a, lanes, |x| wide(x, f64::tanh)),
                UnOp::Floor => map1(out, a, lanes, |x| t(f(x).floor())),
                UnOp::Ceil => map1(out, a, lanes, |x| t(f(x).ceil())),
                UnOp::Round => map1(out, a, lanes, |x| t(f(x).round_ties_even())),
                UnOp::Trunc => map1(out, a, lanes, |x| t(f(x).trunc())),
                UnOp::IsNan => map1(out, a, lanes, |x| f(x).is_nan() as u64),
                UnOp::IsInf => map1(out, a, lanes, |x| f(x).is_infinite() as u64),
                UnOp::IsFinite => map1(out, a, lanes, |x| f(x).is_finite() as u64),
                // Integer/bool-only operators (rejected by the validator): a harmless 0.
                UnOp::Not | UnOp::LNot | UnOp::Popcount | UnOp::Clz | UnOp::Ctz | UnOp::Brev => {
                    map1(out, a, lanes, |_| 0)
                }
            }
        }
    };
}

float_un_fn!(un_f32, f32, u32);
float_un_fn!(un_f64, f64, u64);

/// `out = OP a` on the active lanes; `ty` is the operand type.
pub(crate) fn un(op: UnOp, ty: ScalarType, out: &mut [u64], a: &[u64], lanes: &Lanes) {
    match ty {
        ScalarType::Bool | ScalarType::U32 => un_u32(op, out, a, lanes),
        ScalarType::I32 => un_i32(op, out, a, lanes),
        ScalarType::U64 => un_u64(op, out, a, lanes),
        ScalarType::I64 => un_i64(op, out, a, lanes),
        ScalarType::F32 => un_f32(op, out, a, lanes),
        ScalarType::F64 => un_f64(op, out, a, lanes),
    }
}

/// Conversions from one source type `$s` (decoded by `$dec`) to every target (Rust `as`:
/// int->int by the source's signedness, float->int truncating and saturating with NaN -> 0,
/// to float round to nearest even; to bool is `x != 0`, NaN included).
macro_rules! cast_from {
    ($out:ident, $a:ident, $lanes:ident, $to:ident, $s:ty, $dec:expr, $zero:expr) => {{
        let dec: fn(u64) -> $s = $dec;
        match $to {
            ScalarType::Bool => map1($out, $a, $lanes, |x| (dec(x) != $zero) as u64),
            ScalarType::U32 => map1($out, $a, $lanes, |x| dec(x) as u32 as u64),
            ScalarType::I32 => map1($out, $a, $lanes, |x| dec(x) as i32 as u32 as u64),
            ScalarType::U64 => map1($out, $a, $lanes, |x| dec(x) as u64),
            ScalarType::I64 => map1($out, $a, $lanes, |x| dec(x) as i64 as u64),
            ScalarType::F32 => map1($out, $a, $lanes, |x| (dec(x) as f32).to_bits() as u64),
            ScalarType::F64 => map1($out, $a, $lanes, |x| (dec(x) as f64).to_bits()),
        }
    }};
}

/// `out = cast<to>(a)` where `a` has type `from`.
pub(crate) fn cast(from: ScalarType, to: ScalarType, out: &mut [u64], a: &[u64], lanes: &Lanes) {
    match from {
        // bool is 0/1: converting it like a u32 gives 0/1 and 0.0/1.0.
        ScalarType::Bool | ScalarType::U32 => cast_from!(out, a, lanes, to, u32, |x| x as u32, 0),
        ScalarType::I32 => cast_from!(out, a, lanes, to, i32, |x| x as u32 as i32, 0),
        ScalarType::U64 => cast_from!(out, a, lanes, to, u64, |x| x, 0),
        ScalarType::I64 => cast_from!(out, a, lanes, to, i64, |x| x as i64, 0),
        ScalarType::F32 => {
            cast_from!(out, a, lanes, to, f32, |x| f32::from_bits(x as u32), 0.0)
        }
        ScalarType::F64 => cast_from!(out, a, lanes, to, f64, f64::from_bits, 0.0),
    }
}

/// `out = a * b + c`: one rounding for floats (IEEE fma), wrapping for integers.
pub(crate) fn fma(ty: ScalarType, out: &mut [u64], a: &[u64], b: &[u64], c: &[u64], lanes: &Lanes) {
    match ty {
        ScalarType::F32 => map3(out, a, b, c, lanes, |x, y, z| {
            let f = |v: u64| f32::from_bits(v as u32);
            f(x).mul_add(f(y), f(z)).to_bits() as u64
        }),
        ScalarType::F64 => map3(out, a, b, c, lanes, |x, y, z| {
            f64::from_bits(x)
                .mul_add(f64::from_bits(y), f64::from_bits(z))
                .to_bits()
        }),
        ScalarType::U64 | ScalarType::I64 => map3(out, a, b, c, lanes, |x, y, z| {
            x.wrapping_mul(y).wrapping_add(z)
        }),
        _ => map3(out, a, b, c, lanes, |x, y, z| {
            (x as u32).wrapping_mul(y as u32).wrapping_add(z as u32) as u64
        }),
    }
}

/// `out = c ? a : b`.
pub(crate) fn select(out: &mut [u64], c: &[u64], a: &[u64], b: &[u64], lanes: &Lanes) {
    map3(out, c, a, b, lanes, |c, a, b| if c != 0 { a } else { b });
}

/// One lane of [`bin`].
pub(crate) fn bin_scalar(op: BinOp, ty: ScalarType, a: u64, b: u64) -> u64 {
    let mut o = [0];
    bin(op, ty, &mut o, &[a], &[b], &Lanes::All(1));
    o[0]
}

/// One lane of [`un`].
pub(crate) fn un_scalar(op: UnOp, ty: ScalarType, a: u64) -> u64 {
    let mut o = [0];
    un(op, ty, &mut o, &[a], &Lanes::All(1));
    o[0]
}

/// One lane of [`cast`].
pub(crate) fn cast_scalar(from: ScalarType, to: ScalarType, a: u64) -> u64 {
    let mut o = [0];
    cast(from, to, &mut o, &[a], &Lanes::All(1));
    o[0]
}

/// One lane of [`fma`].
pub(crate) fn fma_scalar(ty: ScalarType, a: u64, b: u64, c: u64) -> u64 {
    let mut o = [0];
    fma(ty, &mut o, &[a], &[b], &[c], &Lanes::All(1));
    o[0]
}
