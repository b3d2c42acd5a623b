//! The elements of a `data` array (`run.inputs.<buf>.data`, a pipeline buffer's `data`),
//! stored compactly.
//!
//! A `data` array may hold tens of millions of elements (a Program file may be 256 MiB). A
//! `Vec<Literal>` takes 32 bytes per element whatever the element, so a file of small numbers
//! needed 16 times its own size and a large one aborted the process on a failed allocation.
//! [`DataArray`] keeps each element as a tag byte and the fewest payload bytes that hold it
//! exactly (a small integer: 2 bytes; a float: 5 or 9), grows fallibly while parsing, and
//! shares its bytes between clones. The buffer's element type is not known while parsing (the
//! `buffers` list or a pipeline buffer's `type` may come after the data), so the elements stay
//! literals here; [`crate::inputs`] converts them to the buffer's type, with its range checks.

use std::collections::TryReserveError;
use std::fmt;
use std::sync::Arc;

use super::ast::{FloatLit, Literal};
use super::types::Scalar;

/// The literal elements of a `data` array, in order.
#[derive(Clone, Default)]
pub struct DataArray {
    /// Encoded elements (see [`Tag`]).
    bytes: Arc<Vec<u8>>,
    /// Number of elements.
    len: usize,
}

/// The tag byte in front of each element's payload.
#[repr(u8)]
#[derive(Clone, Copy)]
enum Tag {
    /// Bare integer, zigzag LEB128.
    Int = 0,
    /// Bare float whose f32 is the f64 rounded to f32: 8 bytes.
    Float64 = 1,
    /// Bare float whose value is an f32 value: 4 bytes.
    Float32 = 2,
    /// Bare float with its own f32 rounding (a decimal near an f32 midpoint): 8 + 4 bytes.
    FloatBoth = 3,
    /// `false`
    False = 4,
    /// `true`
    True = 5,
    /// `{"u32": ..}`, LEB128.
    U32 = 6,
    /// `{"i32": ..}`, zigzag LEB128.
    I32 = 7,
    /// `{"u64": ..}`, LEB128.
    U64 = 8,
    /// `{"i64": ..}`, zigzag LEB128.
    I64 = 9,
    /// `{"f32": ..}`, 4 bytes.
    F32 = 10,
    /// `{"f64": ..}`, 8 bytes.
    F64 = 11,
}

impl DataArray {
    /// An empty array.
    pub fn new() -> DataArray {
        DataArray::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held for the elements (the encoding, not the buffer they become).
    pub fn encoded_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// The elements in order.
    pub fn iter(&self) -> DataIter<'_> {
        DataIter {
            bytes: &self.bytes,
            pos: 0,
        }
    }
}

/// Builds a [`DataArray`] one element at a time.
#[derive(Default)]
pub struct DataBuilder {
    bytes: Vec<u8>,
    len: usize,
}

impl DataBuilder {
    /// Elements so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True before the first element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes held so far.
    pub fn encoded_bytes(&self) -> usize {
        self.bytes.len()
    }

    /// Appends `l`, failing instead of aborting when memory runs out.
    pub fn try_push(&mut self, l: Literal) -> Result<(), TryReserveError> {
        let mut item = [0u8; 20];
        let n = encode(l, &mut item);
        if self.bytes.capacity() - self.bytes.len() < n {
            // Half again: the last growth step over-allocates a third at most.
            self.bytes.try_reserve(n.max(self.bytes.len() / 2))?;
        }
        self.bytes.extend_from_slice(&item[..n]);
        self.len += 1;
        Ok(())
    }

    /// The array, its growth reserve released.
    pub fn finish(mut self) -> DataArray {
        self.bytes.shrink_to_fit();
        DataArray {
            bytes: Arc::new(self.bytes),
            len: self.len,
        }
    }
}

impl FromIterator<Literal> for DataArray {
    /// Collects literals (in-memory construction; an allocation failure aborts as a `Vec`
    /// does, so parsing uses [`DataBuilder::try_push`]).
    fn from_iter<I: IntoIterator<Item = Literal>>(iter: I) -> DataArray {
        let mut b = DataBuilder::default();
        for l in iter {
            b.try_push(l).unwrap_or_else(|e| panic!("data array: {e}"));
        }
        b.finish()
    }
}

impl From<Vec<Literal>> for DataArray {
    fn from(v: Vec<Literal>) -> DataArray {
        v.into_iter().collect()
    }
}

impl PartialEq for DataArray {
    /// Same elements with the same bits (a NaN equals the same NaN, unlike [`Literal`]).
    fn eq(&self, other: &DataArray) -> bool {
        self.len == other.len && self.bytes == other.bytes
    }
}

impl fmt::Debug for DataArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 16;
        let mut l = f.debug_list();
        l.entries(self.iter().take(SHOWN));
        if self.len > SHOWN {
            l.entry(&format_args!("... {} elements", self.len));
        }
        l.finish()
    }
}

impl<'a> IntoIterator for &'a DataArray {
    type Item = Literal;
    type IntoIter = DataIter<'a>;
    fn into_iter(self) -> DataIter<'a> {
        self.iter()
    }
}

/// The elements of a [`DataArray`], decoded one at a time.
pub struct DataIter<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Iterator for DataIter<'_> {
    type Item = Literal;
    fn next(&mut self) -> Option<Literal> {
        let (l, n) = decode(self.bytes.get(self.pos..)?)?;
        self.pos += n;
        Some(l)
    }
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(u: u128) -> i128 {
    ((u >> 1) as i128) ^ -((u & 1) as i128)
}

/// Writes `v` as LEB128 into `out`; returns the byte count.
fn leb(mut v: u128, out: &mut [u8]) -> usize {
    let mut n = 0;
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[n] = b;
            return n + 1;
        }
        out[n] = b | 0x80;
        n += 1;
    }
}

fn read_leb(b: &[u8]) -> Option<(u128, usize)> {
    let mut v = 0u128;
    for (i, &byte) in b.iter().enumerate().take(19) {
        v |= u128::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// Encodes one element into `out` (20 bytes suffice: a tag and at most 19 LEB128 bytes).
fn encode(l: Literal, out: &mut [u8; 20]) -> usize {
    let mut put = |tag: Tag, payload: &[u8]| {
        out[0] = tag as u8;
        out[1..1 + payload.len()].copy_from_slice(payload);
        1 + payload.len()
    };
    match l {
        Literal::Int(v) => {
            out[0] = Tag::Int as u8;
            1 + leb(zigzag(v), &mut out[1..])
        }
        Literal::Float(f) => {
            if f.f32.to_bits() == (f.value as f32).to_bits() {
                if (f.f32 as f64).to_bits() == f.value.to_bits() {
                    put(Tag::Float32, &f.f32.to_le_bytes())
                } else {
                    put(Tag::Float64, &f.value.to_le_bytes())
                }
            } else {
                let mut p = [0u8; 12];
                p[..8].copy_from_slice(&f.value.to_le_bytes());
                p[8..].copy_from_slice(&f.f32.to_le_bytes());
                put(Tag::FloatBoth, &p)
            }
        }
        Literal::Typed(s) => match s {
            Scalar::Bool(false) => put(Tag::False, &[]),
            Scalar::Bool(true) => put(Tag::True, &[]),
            Scalar::F32(v) => put(Tag::F32, &v.to_le_bytes()),
            Scalar::F64(v) => put(Tag::F64, &v.to_le_bytes()),
            Scalar::U32(v) => int_tagged(out, Tag::U32, u128::from(v)),
            Scalar::I32(v) => int_tagged(out, Tag::I32, zigzag(v.into())),
            Scalar::U64(v) => int_tagged(out, Tag::U64, u128::from(v)),
            Scalar::I64(v) => int_tagged(out, Tag::I64, zigzag(v.into())),
        },
    }
}

fn int_tagged(out: &mut [u8; 20], tag: Tag, v: u128) -> usize {
    out[0] = tag as u8;
    1 + leb(v, &mut out[1..])
}

/// Decodes the element at the start of `b`: the literal and the bytes it took.
fn decode(b: &[u8]) -> Option<(Literal, usize)> {
    let (&tag, rest) = b.split_first()?;
    let f32_at = |r: &[u8]| Some(f32::from_le_bytes(r.get(..4)?.try_into().ok()?));
    let f64_at = |r: &[u8]| Some(f64::from_le_bytes(r.get(..8)?.try_into().ok()?));
    let int = |r: &[u8]| read_leb(r).map(|(v, n)| (v, n + 1));
    Some(match tag {
        0 => {
            let (v, n) = int(rest)?;
            (Literal::Int(unzigzag(v)), n)
        }
        1 => (Literal::Float(FloatLit::exact(f64_at(rest)?)), 9),
        2 => (Literal::Float(FloatLit::exact(f32_at(rest)?.into())), 5),
        3 => {
            let lit = FloatLit {
                value: f64_at(rest)?,
                f32: f32_at(rest.get(8..)?)?,
            };
            (Literal::Float(lit), 13)
        }
        4 => (Literal::Typed(Scalar::Bool(false)), 1),
        5 => (Literal::Typed(Scalar::Bool(true)), 1),
        6 => {
            let (v, n) = int(rest)?;
            (Literal::Typed(Scalar::U32(v as u32)), n)
        }
        7 => {
            let (v, n) = int(rest)?;
            (Literal::Typed(Scalar::I32(unzigzag(v) as i32)), n)
        }
        8 => {
            let (v, n) = int(rest)?;
            (Literal::Typed(Scalar::U64(v as u64)), n)
        }
        9 => {
            let (v, n) = int(rest)?;
            (Literal::Typed(Scalar::I64(unzigzag(v) as i64)), n)
        }
        10 => (Literal::Typed(Scalar::F32(f32_at(rest)?)), 5),
        11 => (Literal::Typed(Scalar::F64(f64_at(rest)?)), 9),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (SplitMix64), seeded per test.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed;
        move || {
            s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    fn random_literal(next: &mut impl FnMut() -> u64) -> Literal {
        let r = next();
        let wide = ((next() as u128) << 64 | r as u128) as i128;
        match r % 13 {
            0 => Literal::Int(wide),
            1 => Literal::Int((r >> 8) as i8 as i128),
            2 => Literal::Float(FloatLit::exact(f64::from_bits(next()))),
            3 => Literal::Float(FloatLit::exact(f32::from_bits(next() as u32).into())),
            4 => Literal::Float(FloatLit {
                value: f64::from_bits(next()),
                f32: f32::from_bits(next() as u32),
            }),
            5 => Literal::Typed(Scalar::Bool(r & 256 != 0)),
            6 => Literal::Typed(Scalar::U32(next() as u32)),
            7 => Literal::Typed(Scalar::I32(next() as i32)),
            8 => Literal::Typed(Scalar::U64(next())),
            9 => Literal::Typed(Scalar::I64(next() as i64)),
            10 => Literal::Typed(Scalar::F32(f32::from_bits(next() as u32))),
            11 => Literal::Typed(Scalar::F64(f64::from_bits(next()))),
            _ => Literal::Int(i128::MIN + (r % 3) as i128),
        }
    }

    /// Bits of a literal, so that NaNs compare by payload.
    fn bits(l: Literal) -> (u8, u128, u32) {
        match l {
            Literal::Int(v) => (0, v as u128, 0),
            Literal::Float(f) => (1, f.value.to_bits().into(), f.f32.to_bits()),
            Literal::Typed(s) => (2, s.to_bits().into(), s.ty() as u32),
        }
    }

    #[test]
    fn every_literal_comes_back_with_its_bits() {
        let mut next = rng(0x5eed_da7a);
        let lits: Vec<Literal> = (0..20_000).map(|_| random_literal(&mut next)).collect();
        let a: DataArray = lits.iter().copied().collect();
        assert_eq!(a.len(), lits.len());
        let back: Vec<_> = a.iter().map(bits).collect();
        let want: Vec<_> = lits.into_iter().map(bits).collect();
        assert_eq!(back, want);
    }

    #[test]
    fn small_integers_take_two_bytes_each() {
        let mut next = rng(7);
        let a: DataArray = (0..10_000)
            .map(|_| Literal::Int((next() % 64) as i128 - 32))
            .collect();
        assert_eq!(a.encoded_bytes(), 2 * a.len());
        let f: DataArray = (0..1000)
            .map(|_| f32::from_bits(next() as u32 & 0x7f7f_ffff))
            .map(|v| Literal::Float(FloatLit::exact(v.into())))
            .collect();
        assert_eq!(f.encoded_bytes(), 5 * f.len());
    }

    #[test]
    fn clones_share_their_bytes() {
        let a: DataArray = vec![Literal::Int(1), Literal::Int(-2)].into();
        let b = a.clone();
        assert!(Arc::ptr_eq(&a.bytes, &b.bytes));
        assert_eq!(
            b.iter().collect::<Vec<_>>(),
            [Literal::Int(1), Literal::Int(-2)]
        );
    }
}
