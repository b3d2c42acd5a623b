//! Buffer storage shared by parallel workgroups: atomic words.
//!
//! Workgroups run in parallel, so every buffer is held in atomic words and all accesses are
//! data-race free by construction. Elements of 4 bytes or less sit in `AtomicU32` words (8- and
//! 16-bit elements packed little-endian, so a narrow store is a compare-and-swap on the
//! containing word), 8-byte elements in `AtomicU64`. Plain loads and stores are `Relaxed`
//! (program-level ordering comes from barriers and the end of the dispatch); atomic operations
//! are `SeqCst` as docs/semantics.md requires.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use half::f16;

use crate::ir::ElemType;

/// One buffer's elements.
#[derive(Debug)]
pub(crate) struct Memory {
    /// Element type.
    pub(crate) elem: ElemType,
    /// Element count.
    pub(crate) len: usize,
    w32: Vec<AtomicU32>,
    w64: Vec<AtomicU64>,
    /// The float atomic add log, for buffers only float atomic adds write (`float_sums`).
    pub(crate) float_log: Option<super::float_sums::Log>,
}

const R: Ordering = Ordering::Relaxed;
const SC: Ordering = Ordering::SeqCst;

impl Memory {
    /// `len` zero elements.
    pub(crate) fn zeroed(elem: ElemType, len: usize) -> Memory {
        let size = elem.size_bytes();
        let (w32, w64) = if size == 8 {
            (Vec::new(), (0..len).map(|_| AtomicU64::new(0)).collect())
        } else {
            (
                (0..(len * size).div_ceil(4))
                    .map(|_| AtomicU32::new(0))
                    .collect(),
                Vec::new(),
            )
        };
        Memory {
            elem,
            len,
            w32,
            w64,
            float_log: None,
        }
    }

    /// Elements from raw little-endian bytes (a trailing partial element is ignored).
    pub(crate) fn from_bytes(elem: ElemType, bytes: &[u8]) -> Memory {
        let size = elem.size_bytes();
        let len = bytes.len() / size;
        let bytes = &bytes[..len * size];
        let (w32, w64) = if size == 8 {
            let w = bytes
                .chunks_exact(8)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    AtomicU64::new(u64::from_le_bytes(b))
                })
                .collect();
            (Vec::new(), w)
        } else {
            let w = bytes
                .chunks(4)
                .map(|c| {
                    let mut b = [0u8; 4];
                    b[..c.len()].copy_from_slice(c);
                    AtomicU32::new(u32::from_le_bytes(b))
                })
                .collect();
            (w, Vec::new())
        };
        Memory {
            elem,
            len,
            w32,
            w64,
            float_log: None,
        }
    }

    /// Writes the elements back as raw little-endian bytes into `out` (same length).
    pub(crate) fn write_bytes(&self, out: &mut [u8]) {
        if self.elem.size_bytes() == 8 {
            for (c, w) in out.chunks_exact_mut(8).zip(&self.w64) {
                c.copy_from_slice(&w.load(R).to_le_bytes());
            }
        } else {
            for (c, w) in out.chunks_mut(4).zip(&self.w32) {
                let b = w.load(R).to_le_bytes();
                let n = c.len();
                c.copy_from_slice(&b[..n]);
            }
        }
    }

    /// The 32-bit words (elements of 4 bytes or less), for tight load loops.
    pub(crate) fn words32(&self) -> &[AtomicU32] {
        &self.w32
    }

    /// The 64-bit words (8-byte elements), for tight load loops.
    pub(crate) fn words64(&self) -> &[AtomicU64] {
        &self.w64
    }

    /// Sets every element to zero.
    pub(crate) fn clear(&self) {
        self.w32.iter().for_each(|w| w.store(0, R));
        self.w64.iter().for_each(|w| w.store(0, R));
    }

    /// Raw storage bits of element `i` (`i < len`).
    #[inline(always)]
    pub(crate) fn raw(&self, i: usize) -> u64 {
        match self.elem.size_bytes() {
            8 => self.w64[i].load(R),
            4 => self.w32[i].load(R) as u64,
            2 => ((self.w32[i >> 1].load(R) >> ((i & 1) * 16)) & 0xffff) as u64,
            _ => ((self.w32[i >> 2].load(R) >> ((i & 3) * 8)) & 0xff) as u64,
        }
    }

    /// Stores raw storage bits into element `i` (`i < len`); narrow elements CAS their word.
    #[inline(always)]
    pub(crate) fn set_raw(&self, i: usize, bits: u64) {
        match self.elem.size_bytes() {
            8 => self.w64[i].store(bits, R),
            4 => self.w32[i].store(bits as u32, R),
            2 => set_field(&self.w32[i >> 1], (i & 1) as u32 * 16, 0xffff, bits as u32),
            _ => set_field(&self.w32[i >> 2], (i & 3) as u32 * 8, 0xff, bits as u32),
        }
    }

    /// Atomically replaces element `i` by `f(old)` (raw storage bits); returns `old`.
    pub(crate) fn rmw(&self, i: usize, f: impl Fn(u64) -> u64) -> u64 {
        match self.elem.size_bytes() {
            8 => {
                let mut old = self.w64[i].load(SC);
                loop {
                    match self.w64[i].compare_exchange_weak(old, f(old), SC, SC) {
                        Ok(_) => return old,
                        Err(cur) => old = cur,
                    }
                }
            }
            size => {
                let (w, shift, mask) = match size {
                    4 => (&self.w32[i], 0, u32::MAX),
                    2 => (&self.w32[i >> 1], (i & 1) as u32 * 16, 0xffff),
                    _ => (&self.w32[i >> 2], (i & 3) as u32 * 8, 0xff),
                };
                let mut word = w.load(SC);
                loop {
                    let old = (word >> shift) & mask;
                    let new = ((f(old as u64) as u32) & mask) << shift;
                    match w.compare_exchange_weak(word, (word & !(mask << shift)) | new, SC, SC) {
                        Ok(_) => return old as u64,
                        Err(cur) => word = cur,
                    }
                }
            }
        }
    }
}

/// Replaces the `mask`-wide field at `shift` of `w` by `bits`.
fn set_field(w: &AtomicU32, shift: u32, mask: u32, bits: u32) {
    let field = (bits & mask) << shift;
    let _ = w.fetch_update(R, R, |word| Some((word & !(mask << shift)) | field));
}

/// The register value (see `ops`) of raw storage bits of an `elem` element: narrow integers
/// zero/sign-extend to 32 bits, `f16` widens exactly to `f32`, `bool` becomes 0/1.
#[inline(always)]
pub(crate) fn decode(elem: ElemType, raw: u64) -> u64 {
    match elem {
        ElemType::Bool => (raw as u32 != 0) as u64,
        ElemType::I8 => raw as u8 as i8 as i32 as u32 as u64,
        ElemType::I16 => raw as u16 as i16 as i32 as u32 as u64,
        ElemType::F16 => f16::from_bits(raw as u16).to_f32().to_bits() as u64,
        _ => raw,
    }
}

/// Raw storage bits of a register value stored into an `elem` element: narrow integers
/// truncate, `f16` rounds to nearest even (overflow to inf, NaN stays NaN), `bool` is 1/0.
#[inline(always)]
pub(crate) fn encode(elem: ElemType, v: u64) -> u64 {
    match elem {
        ElemType::Bool => (v as u32 != 0) as u64,
        ElemType::U8 | ElemType::I8 => v & 0xff,
        ElemType::U16 | ElemType::I16 => v & 0xffff,
        ElemType::U32 | ElemType::I32 | ElemType::F32 => v & 0xffff_ffff,
        ElemType::F16 => f16::from_f32(f32::from_bits(v as u32)).to_bits() as u64,
        ElemType::U64 | ElemType::I64 | ElemType::F64 => v,
    }
}
