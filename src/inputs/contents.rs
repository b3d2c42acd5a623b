//! Element bytes for fills, random values and `data` literals, per element type.
//!
//! Every buffer is built as raw little-endian elements, exactly what a GPU buffer holds:
//! `bool` is a 32-bit word (0/1), 8/16-bit integers take 1/2 bytes, `f16` is IEEE binary16.

use half::f16;

use super::prng::SplitMix64;
use super::InputError;
use crate::ir::{DataArray, ElemType, Fill, FloatLit, Literal, Scalar};

/// Appends the low `elem.size_bytes()` bytes of `bits`, little-endian.
fn push(out: &mut Vec<u8>, elem: ElemType, bits: u64) {
    out.extend_from_slice(&bits.to_le_bytes()[..elem.size_bytes()]);
}

/// Raw bits of the value 1 in `elem`.
fn one_bits(elem: ElemType) -> u64 {
    match elem {
        ElemType::F16 => f16::ONE.to_bits() as u64,
        ElemType::F32 => 1.0f32.to_bits() as u64,
        ElemType::F64 => 1.0f64.to_bits(),
        _ => 1,
    }
}

/// Raw bits of iota element `i`: integers wrap to the type's width, floats round to nearest
/// even (f16 overflows to +inf from 65520 on), `bool` alternates `i % 2` (false, true, ...).
pub fn iota_bits(elem: ElemType, i: u64) -> u64 {
    match elem {
        ElemType::Bool => i % 2,
        ElemType::F16 => f16::from_f64(i as f64).to_bits() as u64,
        ElemType::F32 => (i as f32).to_bits() as u64,
        ElemType::F64 => (i as f64).to_bits(),
        // Truncation to the element width (done by `push`) is the wrap.
        _ => i,
    }
}

/// Smallest and one past the largest value of an integer element type.
fn int_bounds(elem: ElemType) -> (i128, i128) {
    match elem {
        ElemType::Bool => (0, 2),
        ElemType::U8 => (0, 1 << 8),
        ElemType::I8 => (-(1 << 7), 1 << 7),
        ElemType::U16 => (0, 1 << 16),
        ElemType::I16 => (-(1 << 15), 1 << 15),
        ElemType::U32 => (0, 1 << 32),
        ElemType::I32 => (-(1 << 31), 1 << 31),
        ElemType::U64 => (0, 1 << 64),
        ElemType::I64 => (-(1 << 63), 1 << 63),
        ElemType::F16 | ElemType::F32 | ElemType::F64 => (0, 0),
    }
}

/// Largest finite value of a float element type.
fn float_max(elem: ElemType) -> f64 {
    match elem {
        ElemType::F16 => f16::MAX.to_f64(),
        ElemType::F32 => f32::MAX as f64,
        _ => f64::MAX,
    }
}

fn is_float(elem: ElemType) -> bool {
    matches!(elem, ElemType::F16 | ElemType::F32 | ElemType::F64)
}

/// Raw bits of the float `v` stored as `elem` (round to nearest even).
fn float_bits(elem: ElemType, v: f64) -> u64 {
    match elem {
        ElemType::F16 => f16::from_f64(v).to_bits() as u64,
        ElemType::F32 => (v as f32).to_bits() as u64,
        _ => v.to_bits(),
    }
}

/// How one random draw `r` becomes an element (documented in [`crate::inputs`]).
#[derive(Debug, Clone, Copy)]
enum RandomMap {
    /// `r >> 63`.
    Bool,
    /// The low bits of `r` (full range of the type).
    FullInt,
    /// `lo + ((r * span) >> 64)` in `[lo, lo + span)`.
    IntRange { lo: i128, span: u128 },
    /// `lo + (hi - lo) * u`, `u = (r >> 11) * 2^-53` in `[0, 1)`, rounded to the type.
    Float { lo: f64, hi: f64 },
}

fn random_map(
    name: &str,
    elem: ElemType,
    range: Option<(f64, f64)>,
) -> Result<RandomMap, InputError> {
    if elem == ElemType::Bool {
        return match range {
            None => Ok(RandomMap::Bool),
            Some(_) => Err(InputError {
                message: format!("input `{name}`: `range` does not apply to a bool buffer"),
                fix: "remove `range`; random bools are true or false with equal probability".into(),
            }),
        };
    }
    if is_float(elem) {
        let (lo, hi) = range.unwrap_or((-1.0, 1.0));
        let max = float_max(elem);
        if lo.abs() > max || hi.abs() > max {
            return Err(InputError {
                message: format!("input `{name}`: range [{lo}, {hi}] exceeds the finite {elem} values (max {max})"),
                fix: format!("use a range within [-{max}, {max}]"),
            });
        }
        return Ok(RandomMap::Float { lo, hi });
    }
    let Some((lo, hi)) = range else {
        return Ok(RandomMap::FullInt);
    };
    let (min, end) = int_bounds(elem);
    if lo.fract() != 0.0 || hi.fract() != 0.0 {
        return Err(InputError {
            message: format!(
                "input `{name}`: range [{lo}, {hi}] of a {elem} buffer is not integral"
            ),
            fix: "write integer bounds, e.g. \"range\": [0, 100] (low inclusive, high exclusive)"
                .into(),
        });
    }
    let (lo, hi) = (lo as i128, hi as i128);
    if lo < min || hi > end {
        return Err(InputError {
            message: format!(
                "input `{name}`: range [{lo}, {hi}) does not fit {elem} (values {min}..={})",
                end - 1
            ),
            fix: format!("use bounds within [{min}, {end}] (high is exclusive)"),
        });
    }
    Ok(RandomMap::IntRange {
        lo,
        span: (hi - lo) as u128,
    })
}

fn random_bits(map: RandomMap, elem: ElemType, r: u64) -> u64 {
    match map {
        RandomMap::Bool => r >> 63,
        RandomMap::FullInt => r,
        RandomMap::IntRange { lo, span } => (lo + ((r as u128 * span) >> 64) as i128) as u64,
        RandomMap::Float { lo, hi } => {
            let u = (r >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
            float_bits(elem, lo + (hi - lo) * u)
        }
    }
}

/// An empty vector with room for `n` bytes, or an error naming buffer `name` when the memory
/// is not there (fallible: a failed allocation must not abort the process).
pub fn alloc_bytes(name: &str, n: usize) -> Result<Vec<u8>, InputError> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|e| InputError {
        message: format!("buffer `{name}`: cannot allocate {n} bytes: {e}"),
        fix: "use fewer elements (run.elements, run.inputs.<buf>.len) or free memory".into(),
    })?;
    Ok(v)
}

/// The bytes of a generated buffer of `len` elements.
pub fn fill_bytes(
    name: &str,
    elem: ElemType,
    len: usize,
    fill: Fill,
) -> Result<Vec<u8>, InputError> {
    let size = elem.size_bytes();
    let mut out = alloc_bytes(name, len * size)?;
    match fill {
        Fill::Zeros => out.resize(len * size, 0),
        Fill::Ones => {
            let one = one_bits(elem).to_le_bytes();
            out.reserve_exact(len * size);
            for _ in 0..len {
                out.extend_from_slice(&one[..size]);
            }
        }
        Fill::Iota => {
            out.reserve_exact(len * size);
            for i in 0..len as u64 {
                push(&mut out, elem, iota_bits(elem, i));
            }
        }
        Fill::Random { seed, range } => {
            let map = random_map(name, elem, range)?;
            let mut g = SplitMix64::new(seed);
            out.reserve_exact(len * size);
            for _ in 0..len {
                push(&mut out, elem, random_bits(map, elem, g.next_u64()));
            }
        }
    }
    Ok(out)
}

/// A `data` literal's value before conversion.
enum Num {
    Bool(bool),
    Int(i128),
    Float(FloatLit),
}

fn literal_num(l: &Literal) -> Num {
    match *l {
        Literal::Int(v) => Num::Int(v),
        Literal::Float(f) => Num::Float(f),
        Literal::Typed(s) => match s {
            Scalar::Bool(b) => Num::Bool(b),
            Scalar::U32(v) => Num::Int(v as i128),
            Scalar::I32(v) => Num::Int(v as i128),
            Scalar::U64(v) => Num::Int(v as i128),
            Scalar::I64(v) => Num::Int(v as i128),
            Scalar::F32(v) => Num::Float(FloatLit::exact(v.into())),
            Scalar::F64(v) => Num::Float(FloatLit::exact(v)),
        },
    }
}

/// Raw bits of `data` element `i` converted to `elem`, with range checks.
fn data_bits(name: &str, elem: ElemType, i: usize, l: Literal) -> Result<u64, InputError> {
    let bad = |what: String, fix: &str| InputError {
        message: format!("input `{name}`, data[{i}]: {what}"),
        fix: fix.to_string(),
    };
    let n = literal_num(&l);
    if is_float(elem) {
        let (bits, shown) = match n {
            // Convert directly from the integer so there is only one rounding.
            Num::Int(v) => match elem {
                ElemType::F32 => ((v as f32).to_bits() as u64, v as f64),
                ElemType::F64 => ((v as f64).to_bits(), v as f64),
                _ => (float_bits(elem, v as f64), v as f64),
            },
            // The literal's own f32 rounding (from the decimal), not the f64 rounded again.
            Num::Float(f) if elem == ElemType::F32 => (f.f32.to_bits() as u64, f.value),
            Num::Float(f) => (float_bits(elem, f.value), f.value),
            Num::Bool(_) => {
                return Err(bad(
                    format!("true/false in a {elem} buffer"),
                    "write a number such as 1.0 or 0.0",
                ))
            }
        };
        let back = match elem {
            ElemType::F16 => f16::from_bits(bits as u16).to_f64(),
            ElemType::F32 => f32::from_bits(bits as u32) as f64,
            _ => f64::from_bits(bits),
        };
        if shown.is_finite() && back.is_infinite() {
            return Err(bad(
                format!("{shown} overflows {elem} (max {})", float_max(elem)),
                "use a smaller value, \"inf\", or a wider element type",
            ));
        }
        return Ok(bits);
    }
    let v: i128 = match n {
        Num::Bool(b) if elem == ElemType::Bool => b as i128,
        Num::Bool(_) => {
            return Err(bad(
                format!("true/false in a {elem} buffer"),
                "write an integer such as 1 or 0",
            ))
        }
        Num::Int(v) => v,
        Num::Float(FloatLit { value: f, .. }) if !f.is_finite() => {
            return Err(bad(
                format!("{f} has no {elem} value"),
                "\"inf\", \"-inf\" and \"nan\" only go in float buffers (f16, f32, f64): write an integer",
            ))
        }
        Num::Float(FloatLit { value: f, .. }) => {
            if f.fract() != 0.0 {
                return Err(bad(
                    format!("{f} is not an integer, but the buffer holds {elem}"),
                    "write an integer, or declare the buffer with a float type",
                ));
            }
            f as i128
        }
    };
    let (min, end) = int_bounds(elem);
    if v < min || v >= end {
        return Err(bad(
            format!("{v} does not fit {elem} ({min}..={})", end - 1),
            "use a value in the type's range or a wider element type",
        ));
    }
    Ok(v as u64)
}

/// Checks a fill against the element type (a `random` range must suit it) without
/// generating anything.
pub fn check_fill(name: &str, elem: ElemType, fill: Fill) -> Result<(), InputError> {
    if let Fill::Random { range, .. } = fill {
        random_map(name, elem, range)?;
    }
    Ok(())
}

/// Checks that every `data` element converts to `elem` (the same conversion as
/// [`data_bytes`], without keeping the bytes).
pub fn check_data(name: &str, elem: ElemType, data: &DataArray) -> Result<(), InputError> {
    for (i, l) in data.iter().enumerate() {
        data_bits(name, elem, i, l)?;
    }
    Ok(())
}

/// The bytes of a `data` buffer.
pub fn data_bytes(name: &str, elem: ElemType, data: &DataArray) -> Result<Vec<u8>, InputError> {
    let mut out = alloc_bytes(name, data.len() * elem.size_bytes())?;
    for (i, l) in data.iter().enumerate() {
        push(&mut out, elem, data_bits(name, elem, i, l)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elems(elem: ElemType, bytes: &[u8]) -> Vec<u64> {
        bytes
            .chunks(elem.size_bytes())
            .map(|c| {
                let mut b = [0u8; 8];
                b[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(b)
            })
            .collect()
    }

    #[test]
    fn iota_wraps_and_rounds_per_type() {
        let b = fill_bytes("x", ElemType::U8, 300, Fill::Iota).unwrap();
        assert_eq!(elems(ElemType::U8, &b)[257], 1);
        let b = fill_bytes("x", ElemType::I8, 200, Fill::Iota).unwrap();
        assert_eq!(elems(ElemType::I8, &b)[130] as u8 as i8, -126);
        let b = fill_bytes("x", ElemType::Bool, 4, Fill::Iota).unwrap();
        assert_eq!(elems(ElemType::Bool, &b), vec![0, 1, 0, 1]);
        // 2049 is not an f16: the neighbours are 2048 and 2050, tie -> even mantissa (2048).
        let b = fill_bytes("x", ElemType::F16, 2050, Fill::Iota).unwrap();
        assert_eq!(elems(ElemType::F16, &b)[2049], 0x6800);
        // 16777217 rounds to 16777216 in f32.
        assert_eq!(
            iota_bits(ElemType::F32, 16_777_217),
            16_777_216f32.to_bits() as u64
        );
        assert_eq!(iota_bits(ElemType::F16, 70000), 0x7c00);
    }

    #[test]
    fn ones_per_type() {
        for e in ElemType::ALL {
            let b = fill_bytes("x", e, 3, Fill::Ones).unwrap();
            assert_eq!(b.len(), 3 * e.size_bytes());
            assert_eq!(elems(e, &b)[2], one_bits(e));
        }
        assert_eq!(one_bits(ElemType::F16), 0x3c00);
    }

    #[test]
    fn random_is_seeded_and_in_range() {
        let f = |seed, range| Fill::Random { seed, range };
        let a = fill_bytes("x", ElemType::F32, 1000, f(7, Some((2.0, 3.0)))).unwrap();
        let b = fill_bytes("x", ElemType::F32, 1000, f(7, Some((2.0, 3.0)))).unwrap();
        let c = fill_bytes("x", ElemType::F32, 1000, f(8, Some((2.0, 3.0)))).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let vals: Vec<f32> = elems(ElemType::F32, &a)
            .iter()
            .map(|&x| f32::from_bits(x as u32))
            .collect();
        assert!(vals.iter().all(|v| (2.0..=3.0).contains(v)));
        // Element 0 is draw 0 mapped as documented.
        let r = SplitMix64::new(7).next_u64();
        let want = (2.0 + ((r >> 11) as f64 / (1u64 << 53) as f64)) as f32;
        assert_eq!(vals[0], want);

        let ints = fill_bytes("x", ElemType::I16, 5000, f(3, Some((-5.0, 5.0)))).unwrap();
        let v: Vec<i16> = elems(ElemType::I16, &ints)
            .iter()
            .map(|&x| x as u16 as i16)
            .collect();
        assert!(v.iter().all(|x| (-5..5).contains(x)));
        assert!(v.contains(&-5) && v.contains(&4));
        let r = SplitMix64::new(3).next_u64();
        assert_eq!(v[0] as i128, -5 + ((r as u128 * 10) >> 64) as i128);

        let full = fill_bytes("x", ElemType::U64, 1, f(9, None)).unwrap();
        assert_eq!(
            elems(ElemType::U64, &full)[0],
            SplitMix64::new(9).next_u64()
        );
    }

    #[test]
    fn random_range_errors() {
        let r = |e, lo, hi| {
            fill_bytes(
                "x",
                e,
                1,
                Fill::Random {
                    seed: 0,
                    range: Some((lo, hi)),
                },
            )
        };
        assert!(r(ElemType::U8, 0.0, 257.0).is_err());
        assert!(r(ElemType::U8, 0.0, 256.0).is_ok());
        assert!(r(ElemType::I32, 0.5, 2.0).is_err());
        assert!(r(ElemType::F16, 0.0, 70000.0).is_err());
        assert!(r(ElemType::Bool, 0.0, 1.0).is_err());
    }

    #[test]
    fn data_conversion_and_range_checks() {
        let d = |e, l: Vec<Literal>| data_bytes("x", e, &l.into());
        assert_eq!(
            d(ElemType::I8, vec![Literal::Int(-128), Literal::Int(127)]).unwrap(),
            vec![0x80, 0x7f]
        );
        assert!(d(ElemType::I8, vec![Literal::Int(128)]).is_err());
        assert!(d(ElemType::U32, vec![Literal::Int(-1)]).is_err());
        assert!(d(ElemType::U32, vec![Literal::Float(FloatLit::exact(1.5))]).is_err());
        assert_eq!(
            d(ElemType::U32, vec![Literal::Float(FloatLit::exact(3.0))]).unwrap(),
            3u32.to_le_bytes()
        );
        assert_eq!(
            d(ElemType::F16, vec![Literal::Float(FloatLit::exact(1.0))]).unwrap(),
            0x3c00u16.to_le_bytes()
        );
        assert!(d(
            ElemType::F16,
            vec![Literal::Float(FloatLit::exact(70000.0))]
        )
        .is_err());
        for (v, bits) in [(f64::INFINITY, 0x7c00u16), (f64::NEG_INFINITY, 0xfc00)] {
            assert_eq!(
                d(ElemType::F16, vec![Literal::Float(FloatLit::exact(v))]).unwrap(),
                bits.to_le_bytes()
            );
        }
        let nan = d(
            ElemType::F32,
            vec![Literal::Float(FloatLit::exact(f64::NAN))],
        )
        .unwrap();
        assert!(f32::from_le_bytes(nan.try_into().unwrap()).is_nan());
        assert_eq!(
            d(
                ElemType::F64,
                vec![Literal::Float(FloatLit::exact(f64::NEG_INFINITY))]
            )
            .unwrap(),
            f64::NEG_INFINITY.to_le_bytes()
        );
        let e = d(
            ElemType::I32,
            vec![Literal::Float(FloatLit::exact(f64::INFINITY))],
        )
        .unwrap_err();
        assert!(e.to_string().contains("only go in float buffers"), "{e}");
        assert_eq!(
            d(
                ElemType::F32,
                vec![Literal::Typed(Scalar::F32(f32::INFINITY))]
            )
            .unwrap(),
            f32::INFINITY.to_le_bytes()
        );
        assert_eq!(
            d(ElemType::Bool, vec![Literal::Typed(Scalar::Bool(true))]).unwrap(),
            1u32.to_le_bytes()
        );
        assert!(d(ElemType::Bool, vec![Literal::Int(2)]).is_err());
        assert!(d(ElemType::F32, vec![Literal::Typed(Scalar::Bool(true))]).is_err());
        assert_eq!(
            d(ElemType::U64, vec![Literal::Int(u64::MAX as i128)]).unwrap(),
            u64::MAX.to_le_bytes()
        );
    }
}
