//! A small affine analysis of index expressions: how an index changes from one thread to the
//! next along x, which is what decides coalescing (global memory) and bank conflicts (shared
//! memory).
//!
//! An index is described as a linear form over the thread ids (`gid`, `lid` on x/y/z and
//! `lane`) plus a part `u` uniform across the workgroup (literals, `wgid`, `nwg`, `len`,
//! uniform loads, loop counters with uniform bounds). A coefficient may be a run-time uniform
//! value (`row * n` with `n` loaded): such terms split a warp into segments assumed far
//! apart (rows). Anything else (a loaded value, a product of two thread-varying terms, a
//! shuffle) makes the index [`Index::Varying`]. Offsets are then evaluated for the actual
//! threads of each warp of the workgroup, so 2-D workgroups narrower than a warp are exact.
//!
//! The uniform part keeps its `wgid` terms apart (`wgid.x * 256 + lid.x`), which is what the
//! megakernel dependence analysis needs to prove that accesses stay inside a workgroup's tile.
//! That analysis also needs *exact* forms ([`accesses_exact`]): the same walk, but a cast that
//! is not a 32-bit integer reinterpretation (to a float, or widening to 64 bits, where the
//! value is no longer the linear form modulo 2^32) makes a thread-varying index `Varying`.

use std::collections::HashMap;

pub mod alts;
mod walker;

pub use alts::{Alt, AltSet, Guard, Lin, Piece};
use walker::walk;

use crate::ir::{NodeId, Program};

/// A coefficient: a known integer, or a uniform value only known at run time (e.g. a row
/// length read from a buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coef {
    /// Known at analysis time.
    Known(i64),
    /// Uniform across the warp but not known here (nonzero).
    Unknown,
}

/// The thread ids an index may depend on: `gid.x gid.y gid.z lid.x lid.y lid.z lane`.
pub const IDS: usize = 7;
/// Most warps [`Index::warp_segments`] examines: every warp of the largest valid workgroup
/// (1024 threads).
pub const MAX_SAMPLED_WARPS: u64 = 32;
const ZERO: [Coef; IDS] = [Coef::Known(0); IDS];
const ZERO3: [Coef; 3] = [Coef::Known(0); 3];

/// What an index expression is, seen from the threads of one workgroup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// `sum(coef[i] * id[i]) + sum(wgid[a] * wgid.a) + u` over [`IDS`] and the three
    /// workgroup-id axes, `u` uniform; `constant` is `u` when known. The `wgid` terms are
    /// uniform within a workgroup (they do not count as thread-varying); when `constant` is
    /// `None` the uniform part is unknown as a whole.
    Affine {
        /// Coefficients of `gid.x gid.y gid.z lid.x lid.y lid.z lane`.
        coef: [Coef; IDS],
        /// Coefficients of `wgid.x wgid.y wgid.z`.
        wgid: [Coef; 3],
        /// The rest of the uniform part when it is a compile-time constant.
        constant: Option<i64>,
    },
    /// A known linear form (as in `Affine`, every part known) plus a per-thread term `r` only
    /// known to lie in `[lo, hi]`: what `rem(e, k)` and `and(e, mask)` of a thread-varying
    /// `e` give (`wgid.x * 256 + rem(lid.x + 1, 256)`). Not an exact form: the coalescing
    /// rules treat it as `Varying`; the megakernel's workgroup-tile proof uses its range.
    Bounded {
        /// Coefficients of `gid.x gid.y gid.z lid.x lid.y lid.z lane`.
        coef: [i64; IDS],
        /// Coefficients of `wgid.x wgid.y wgid.z`.
        wgid: [i64; 3],
        /// The constant part.
        constant: i64,
        /// Smallest value of the bounded term.
        lo: i64,
        /// Largest value of the bounded term.
        hi: i64,
    },
    /// Thread-varying in a way this analysis does not follow (e.g. data dependent).
    Varying,
}

/// A known form with a bounded term: `(coef, wgid, constant, lo, hi)` (see [`Index::Bounded`]).
pub type Parts = ([i64; IDS], [i64; 3], i64, i64, i64);

/// Largest value of each id as an unsigned 32-bit value (`gid.* lid.* lane`, then `wgid.*`):
/// lid below CUDA's 1024 threads per block, lane below 32, grid below 2^31 blocks.
const ID_MAX: [i128; IDS + 3] = [
    u32::MAX as i128,
    u32::MAX as i128,
    u32::MAX as i128,
    1023,
    1023,
    63,
    31,
    i32::MAX as i128,
    65535,
    65535,
];

impl Index {
    fn uniform(c: Option<i64>) -> Index {
        Index::Affine {
            coef: ZERO,
            wgid: ZERO3,
            constant: c,
        }
    }

    fn id(i: usize) -> Index {
        let mut coef = ZERO;
        coef[i] = Coef::Known(1);
        Index::Affine {
            coef,
            wgid: ZERO3,
            constant: Some(0),
        }
    }

    fn wgid_axis(a: usize) -> Index {
        let mut wgid = ZERO3;
        wgid[a] = Coef::Known(1);
        Index::Affine {
            coef: ZERO,
            wgid,
            constant: Some(0),
        }
    }

    fn map_coef(
        self,
        f: impl Fn(Coef) -> Coef + Copy,
        c: impl Fn(Option<i64>) -> Option<i64>,
    ) -> Index {
        match self {
            Index::Affine {
                coef,
                wgid,
                constant,
            } => Index::Affine {
                coef: coef.map(f),
                wgid: wgid.map(f),
                constant: c(constant),
            },
            Index::Bounded { .. } | Index::Varying => Index::Varying,
        }
    }

    /// `(coef, wgid, constant, lo, hi)` of a known form: `Bounded`, or an `Affine` index with
    /// every part known (`lo = hi = 0`).
    pub fn known_parts(&self) -> Option<Parts> {
        match *self {
            Index::Bounded {
                coef,
                wgid,
                constant,
                lo,
                hi,
            } => Some((coef, wgid, constant, lo, hi)),
            _ => self.known_form().map(|(k, w, c)| (k, w, c, 0, 0)),
        }
    }

    /// A `Bounded` index from parts; `None` parts (an overflow) make it `Varying`.
    fn bounded(p: Option<Parts>) -> Index {
        match p {
            Some((coef, wgid, constant, lo, hi)) => Index::Bounded {
                coef,
                wgid,
                constant,
                lo,
                hi,
            },
            None => Index::Varying,
        }
    }

    /// `[min, max]` of the index over every value its ids can take (known forms only).
    fn value_range(&self) -> Option<(i128, i128)> {
        let (coef, wgid, c, lo, hi) = self.known_parts()?;
        let (mut min, mut max) = (
            i128::from(c) + i128::from(lo),
            i128::from(c) + i128::from(hi),
        );
        for (k, top) in coef.iter().chain(&wgid).zip(ID_MAX) {
            let far = i128::from(*k) * top;
            min += far.min(0);
            max += far.max(0);
        }
        Some((min, max))
    }

    /// `rem(self, k)` / `and(self, k)` of a thread-varying value: a term in a known range.
    fn bounded_term(lo: i64, hi: i64) -> Index {
        Index::Bounded {
            coef: [0; IDS],
            wgid: [0; 3],
            constant: 0,
            lo,
            hi,
        }
    }

    fn add(self, o: Index, sign: i64) -> Index {
        if matches!(self, Index::Bounded { .. }) || matches!(o, Index::Bounded { .. }) {
            let (Some(a), Some(b)) = (self.known_parts(), o.known_parts()) else {
                return Index::Varying;
            };
            let b = if sign < 0 { neg_parts(b) } else { Some(b) };
            return Index::bounded(b.and_then(|b| add_parts(a, b)));
        }
        match (self, o) {
            (
                Index::Affine {
                    coef: a,
                    wgid: wa,
                    constant: c,
                },
                Index::Affine {
                    coef: b,
                    wgid: wb,
                    constant: d,
                },
            ) => {
                let sum = |x: Coef, y: Coef| match (x, y) {
                    (Coef::Known(x), Coef::Known(y)) => {
                        Coef::Known(x.wrapping_add(sign.wrapping_mul(y)))
                    }
                    _ => Coef::Unknown,
                };
                let mut coef = ZERO;
                for i in 0..IDS {
                    coef[i] = sum(a[i], b[i]);
                }
                let mut wgid = ZERO3;
                for i in 0..3 {
                    wgid[i] = sum(wa[i], wb[i]);
                }
                Index::Affine {
                    coef,
                    wgid,
                    constant: c.zip(d).map(|(c, d)| c.wrapping_add(sign.wrapping_mul(d))),
                }
            }
            _ => Index::Varying,
        }
    }

    fn scale(self, k: i64) -> Index {
        if let Some(p) = matches!(self, Index::Bounded { .. })
            .then(|| self.known_parts())
            .flatten()
        {
            return Index::bounded(scale_parts(p, k));
        }
        self.map_coef(
            |c| match c {
                Coef::Known(x) => Coef::Known(x.wrapping_mul(k)),
                Coef::Unknown if k == 0 => Coef::Known(0),
                Coef::Unknown => Coef::Unknown,
            },
            |c| c.map(|c| c.wrapping_mul(k)),
        )
    }

    /// Multiplied by a uniform value not known here.
    fn scale_unknown(self) -> Index {
        self.map_coef(
            |c| match c {
                Coef::Known(0) => Coef::Known(0),
                _ => Coef::Unknown,
            },
            |_| None,
        )
    }

    fn is_uniform(&self) -> bool {
        matches!(self, Index::Affine { coef, .. } if *coef == ZERO)
    }

    /// The value when it is one compile-time constant (no thread or workgroup ids in it).
    fn constant(&self) -> Option<i64> {
        match *self {
            Index::Affine {
                coef,
                wgid,
                constant,
            } if coef == ZERO && wgid == ZERO3 => constant,
            _ => None,
        }
    }

    /// `(g, c)` when the index is exactly `g * gid.x + c` with known `g` and `c`.
    pub fn gid_x_only(&self) -> Option<(i64, i64)> {
        match *self {
            Index::Affine {
                coef,
                wgid,
                constant: Some(c),
            } if coef[1..] == ZERO[1..] && wgid == ZERO3 => match coef[0] {
                Coef::Known(g) => Some((g, c)),
                Coef::Unknown => None,
            },
            _ => None,
        }
    }

    /// Elements between the indices of two threads neighbouring along x (when known).
    pub fn stride_x(&self) -> Option<i64> {
        match *self {
            Index::Affine { coef, .. } => match (coef[0], coef[3], coef[6]) {
                (Coef::Known(a), Coef::Known(b), Coef::Known(c)) => Some(a + b + c),
                _ => None,
            },
            Index::Bounded { .. } | Index::Varying => None,
        }
    }

    /// For each warp of a workgroup of size `wg`, its threads' element offsets (relative to
    /// the uniform part) grouped into segments: threads whose indices differ by a run-time
    /// multiple (e.g. different rows of a row-major array with a run-time row length) are in
    /// different segments, assumed far apart. `None` when the index is data dependent or its
    /// step along x is a run-time value.
    ///
    /// At most [`MAX_SAMPLED_WARPS`] warps are examined (all of them for any valid workgroup;
    /// evenly spaced ones for a larger size), so the cost never grows with the thread count.
    pub fn warp_segments(&self, wg: [u32; 3]) -> Option<Vec<Vec<Vec<i64>>>> {
        let Index::Affine { coef, .. } = *self else {
            return None;
        };
        if [coef[0], coef[3], coef[6]].contains(&Coef::Unknown) {
            return None;
        }
        let [wx, wy, wz] = wg.map(|d| u64::from(d.max(1)));
        // Saturating: an absurd size must not overflow (it is only sampled, never walked).
        let threads = wx.saturating_mul(wy).saturating_mul(wz);
        let n_warps = threads.div_ceil(32);
        let step = n_warps.div_ceil(MAX_SAMPLED_WARPS).max(1);
        let mut warps = Vec::new();
        for w in (0..n_warps).step_by(step as usize) {
            let start = w.saturating_mul(32);
            let end = (start + 32).min(threads);
            let mut segs: Vec<(Vec<i64>, Vec<i64>)> = Vec::new();
            for t in start..end {
                let lid = [t % wx, (t / wx) % wy, t / wx.saturating_mul(wy)].map(|v| v as i64);
                // Within one workgroup gid and lid differ by a uniform amount.
                let ids = [
                    lid[0],
                    lid[1],
                    lid[2],
                    lid[0],
                    lid[1],
                    lid[2],
                    (t % 32) as i64,
                ];
                let mut key = Vec::new();
                let mut off = 0i64;
                for i in 0..IDS {
                    match coef[i] {
                        Coef::Known(k) => off = off.wrapping_add(k.wrapping_mul(ids[i])),
                        Coef::Unknown => key.push(ids[i]),
                    }
                }
                match segs.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => v.push(off),
                    None => segs.push((key, vec![off])),
                }
            }
            warps.push(segs.into_iter().map(|(_, v)| v).collect());
        }
        Some(warps)
    }

    /// True when every coefficient is known (offsets within a warp are exact).
    pub fn fully_known(&self) -> bool {
        matches!(self, Index::Affine { coef, .. } if !coef.contains(&Coef::Unknown))
    }

    /// `(coef, wgid, constant)` when the whole index is a known linear form of the thread and
    /// workgroup ids: every coefficient and the constant known.
    pub fn known_form(&self) -> Option<([i64; IDS], [i64; 3], i64)> {
        let Index::Affine {
            coef,
            wgid,
            constant: Some(c),
        } = *self
        else {
            return None;
        };
        let known = |x: Coef| match x {
            Coef::Known(k) => Some(k),
            Coef::Unknown => None,
        };
        let mut k = [0i64; IDS];
        for i in 0..IDS {
            k[i] = known(coef[i])?;
        }
        let mut w = [0i64; 3];
        for i in 0..3 {
            w[i] = known(wgid[i])?;
        }
        Some((k, w, c))
    }
}

/// Bytes of a global-memory sector, the unit memory moves in.
pub const SECTOR_BYTES: u64 = 32;

/// The distinct global-memory sectors one warp's accesses touch, from its segments of element
/// offsets ([`Index::warp_segments`]; segments are assumed far apart) for elements of
/// `elem_bytes` bytes.
pub fn warp_sectors(segments: &[Vec<i64>], elem_bytes: u64) -> u64 {
    segments
        .iter()
        .map(|s| {
            s.iter()
                .map(|&o| (o * elem_bytes as i64).div_euclid(SECTOR_BYTES as i64))
                .collect::<std::collections::HashSet<_>>()
                .len() as u64
        })
        .sum()
}

/// One buffer access found in the Program.
#[derive(Debug, Clone, PartialEq)]
pub struct Access {
    /// Statement node id.
    pub node: NodeId,
    /// Buffer name.
    pub buffer: String,
    /// True for a store or atomic.
    pub write: bool,
    /// The index.
    pub index: Index,
    /// Exact walk only, for an index that is not a known form: the values it may take
    /// (`select`, `min`, `max`, `rem` by a length; see [`alts`]).
    pub alts: Option<AltSet>,
}

/// Every load, store and atomic of `program` with its index analysed, in program order.
pub fn accesses(program: &Program) -> Vec<Access> {
    walk(program, false, &HashMap::new())
}

/// Like [`accesses`], but an index is only [`Index::Affine`] when its form is the index's exact
/// value modulo 2^32: a thread-varying value that passes through a float or a 64-bit cast is
/// `Varying` (`u32(f32(gid))` rounds above 2^24; `u64(gid - 1)` is not `gid - 1` mod 2^32).
/// Soundness proofs (megakernel dependences) use this one; the performance rules keep the
/// lenient reading.
///
/// `lens`: the lengths of host buffers (by Program buffer name) that hold for every run, as a
/// pipeline's declared buffer lengths do; empty when none is known. They only sharpen the
/// path facts (`len(gate)` is 65536 like `len(output)`, so `gid.x < len(output)` decides
/// `gid.x < len(gate)`).
pub fn accesses_exact(program: &Program, lens: &HashMap<String, u64>) -> Vec<Access> {
    walk(program, true, lens)
}

/// Checked element-wise `op` of two coefficient arrays.
fn zip_checked<const N: usize>(
    a: [i64; N],
    b: [i64; N],
    op: impl Fn(i64, i64) -> Option<i64>,
) -> Option<[i64; N]> {
    let mut out = [0i64; N];
    for (o, (x, y)) in out.iter_mut().zip(a.into_iter().zip(b)) {
        *o = op(x, y)?;
    }
    Some(out)
}

fn add_parts(a: Parts, b: Parts) -> Option<Parts> {
    let coef = zip_checked(a.0, b.0, i64::checked_add)?;
    let wgid = zip_checked(a.1, b.1, i64::checked_add)?;
    Some((
        coef,
        wgid,
        a.2.checked_add(b.2)?,
        a.3.checked_add(b.3)?,
        a.4.checked_add(b.4)?,
    ))
}

fn neg_parts(a: Parts) -> Option<Parts> {
    scale_parts(a, -1)
}

fn scale_parts(a: Parts, k: i64) -> Option<Parts> {
    let coef = zip_checked(a.0, [k; IDS], i64::checked_mul)?;
    let wgid = zip_checked(a.1, [k; 3], i64::checked_mul)?;
    let (x, y) = (a.3.checked_mul(k)?, a.4.checked_mul(k)?);
    Some((coef, wgid, a.2.checked_mul(k)?, x.min(y), x.max(y)))
}

#[cfg(test)]
#[path = "affine/facts_tests.rs"]
mod facts_tests;
