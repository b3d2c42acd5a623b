//! Where the accesses of one step reach, as (own workgroup, element) pairs, and the producer
//! sets two such reaches give: the part of the tile analysis that reads clamped and wrapped
//! indices (`crate::analysis::affine::alts`).
//!
//! An access is a union of [`Reach`] pieces: a [`Reach::Moving`] interval that moves with the
//! workgroup (`tile * w + [lo, hi]` for every `w`), or a [`Reach::Fixed`] set of elements
//! touched only by a range of workgroups. A plain affine index is one moving piece, exactly as
//! before. An alternative of a `select`/`min`/`max` that moves with the workgroup is a moving
//! piece; one that does not (`0`, `len(x) - 1`) is a fixed piece whose workgroups are bounded
//! by its guards (`select(i > 0, i - 1, 0)` takes `0` only in workgroup 0). `rem(f, len(x))`
//! with `f` in `[0, 2^31)` is `f - k * len(x)` on segment `k`: the widest segment is a moving
//! piece shifted by `k * len(x)`, every other one a fixed piece (the wrap-around workgroups).
//!
//! Pieces pair up into producer sets: moving with moving is the window of `pair_set`; a fixed
//! consumer piece needs the producers of its elements (a fixed range); a fixed producer piece
//! is needed, as its own range of workgroups, by every consumer that may touch its elements.
//! So a clamped or periodic stencil gets a window plus boundary workgroups instead of all.

use crate::analysis::affine::{AltSet, Guard, Index, Lin, Parts, Piece};
use crate::ir::Pipeline;
use crate::shape::LaunchShape;

use super::super::deps::{describe, Unproven};
use super::{div_ceil, div_floor, linear, pair_set, span, span_parts, ProducerSet, Span};

/// Most wrap segments (`k` of `f - k * len`) an access may have before it counts as unknown.
const MAX_SEGMENTS: i128 = 8;

/// One piece of an access (see the module docs).
#[derive(Debug, Clone, Copy)]
pub(super) enum Reach {
    /// Workgroup `w` touches `tile * w + [lo, hi]`.
    Moving(Span),
    /// Workgroups `wgs.0 ..= wgs.1` may touch elements `elems.0 ..= elems.1`.
    Fixed {
        elems: (i128, i128),
        wgs: (u64, u64),
    },
}

/// What resolving an access of one step needs.
pub(super) struct Ctx<'a> {
    pipeline: &'a Pipeline,
    step: usize,
    shape: LaunchShape,
    /// The accessed pipeline buffer's length.
    len: Option<u64>,
}

impl<'a> Ctx<'a> {
    pub(super) fn new(
        pipeline: &'a Pipeline,
        step: usize,
        shape: LaunchShape,
        len: Option<u64>,
    ) -> Ctx<'a> {
        Ctx {
            pipeline,
            step,
            shape,
            len,
        }
    }

    fn grid(&self) -> u64 {
        self.shape.workgroups()
    }

    /// The length of the Program buffer `name` of this step (its pipeline buffer's).
    fn buffer_len(&self, name: &str) -> Result<i128, Unproven> {
        self.pipeline
            .bound_len(self.step, name)
            .map(i128::from)
            .ok_or_else(|| {
                Unproven(format!(
                    "the length of `{name}` is not known before the run"
                ))
            })
    }

    /// `lin` with its length term replaced by the buffer's length.
    fn resolve(&self, lin: &Lin) -> Result<Parts, Unproven> {
        let (coef, wgid, c, lo, hi) = lin.parts;
        let Some((buf, k)) = &lin.len else {
            return Ok(lin.parts);
        };
        let c = i128::from(c) + i128::from(*k) * self.buffer_len(buf)?;
        let c = i64::try_from(c).map_err(|_| "a constant out of range".to_string())?;
        Ok((coef, wgid, c, lo, hi))
    }

    /// Smallest and largest value of `parts` over every invocation of the step.
    fn whole_range(&self, parts: Parts) -> Result<(i128, i128), Unproven> {
        let (t, lo, hi) = linear(parts, self.shape)?;
        let far = t * (i128::from(self.grid()) - 1);
        Ok((lo + far.min(0), hi + far.max(0)))
    }

    /// The workgroups in which some invocation may satisfy `g` (all of them when the guard
    /// cannot be relied on: a side outside `[0, 2^31)`, where the comparison's signedness
    /// would matter).
    fn guard_workgroups(&self, g: &Guard) -> (i128, i128) {
        let all = (0, i128::from(self.grid()) - 1);
        let sides = self
            .resolve(&g.big)
            .and_then(|b| Ok((b, self.resolve(&g.small)?)));
        let Ok((big, small)) = sides else {
            return all;
        };
        let safe = |p: Parts| {
            self.whole_range(p)
                .is_ok_and(|(lo, hi)| lo >= 0 && hi <= i128::from(i32::MAX))
        };
        if !safe(big) || !safe(small) {
            return all;
        }
        let (Ok((tb, _, hb)), Ok((ts, ls, _))) =
            (linear(big, self.shape), linear(small, self.shape))
        else {
            return all;
        };
        // big - small - gap <= t * w + h for every invocation of workgroup w.
        let (t, h) = (tb - ts, hb - ls - i128::from(g.gap));
        match t {
            0 if h >= 0 => all,
            0 => (1, 0),
            t if t > 0 => (div_ceil(-h, t).max(all.0), all.1),
            t => (all.0, div_floor(h, -t).min(all.1)),
        }
    }

    fn guards_workgroups(&self, when: &[Guard]) -> Option<(u64, u64)> {
        let (mut a, mut b) = (0, i128::from(self.grid()) - 1);
        for g in when {
            let (x, y) = self.guard_workgroups(g);
            a = a.max(x);
            b = b.min(y);
        }
        // Within [0, grid - 1]: fits u64.
        (a <= b).then_some((a as u64, b as u64))
    }
}

/// The index as text for a reason: its form, or what its alternatives are.
pub(super) fn index_text(index: &Index, alts: Option<&AltSet>) -> String {
    match alts {
        Some(a) if a.is_rich() => {
            let wraps = a.alts.iter().any(|x| matches!(x.value, Piece::Wrap(..)));
            format!(
                "{} of {} values",
                if wraps {
                    "a wrapped index"
                } else {
                    "a clamped index"
                },
                a.alts.len()
            )
        }
        _ => describe(index),
    }
}

/// The pieces of one access (`alts`: its alternatives when its index is not one form).
pub(super) fn reaches(
    index: &Index,
    alts: Option<&AltSet>,
    ctx: &Ctx,
) -> Result<Vec<Reach>, Unproven> {
    let Some(alts) = alts.filter(|_| index.known_parts().is_none()) else {
        return Ok(vec![Reach::Moving(span(index, ctx.shape, ctx.len)?)]);
    };
    let g = ctx.grid();
    let mut out = Vec::new();
    for alt in &alts.alts {
        let Some(wgs) = ctx.guards_workgroups(&alt.when) else {
            continue;
        };
        match &alt.value {
            Piece::Value(lin) => {
                let s = span_parts(ctx.resolve(lin)?, ctx.shape, ctx.len)?;
                out.push(if s.tile == 0 || g <= 1 {
                    Reach::Fixed {
                        elems: (s.lo, s.hi),
                        wgs,
                    }
                } else {
                    Reach::Moving(s)
                });
            }
            Piece::Wrap(lin, buf) => wrap(ctx, lin, buf, wgs, &mut out)?,
        }
    }
    Ok(out)
}

/// The pieces of `rem(lin, len(buf))` taken by workgroups `wgs`.
fn wrap(
    ctx: &Ctx,
    lin: &Lin,
    buf: &str,
    wgs: (u64, u64),
    out: &mut Vec<Reach>,
) -> Result<(), Unproven> {
    let n = ctx.buffer_len(buf)?;
    if n < 1 || n > i128::from(i32::MAX) {
        return Err(Unproven(format!("it wraps at a length of {n}")));
    }
    let parts = ctx.resolve(lin)?;
    let (t, lo, hi) = linear(parts, ctx.shape)?;
    let (a, b) = ctx.whole_range(parts)?;
    if t < 0 || a < 0 || b > i128::from(i32::MAX) {
        return Err(Unproven(format!(
            "the wrapped value [{a}, {b}] may be negative or wrap at 2^31"
        )));
    }
    let (k0, k1) = (a / n, b / n);
    if k1 - k0 >= MAX_SEGMENTS {
        // Wrapped many times (a buffer much shorter than the launch): every element of it,
        // from the workgroups that take this value.
        out.push(Reach::Fixed {
            elems: (0, n - 1),
            wgs,
        });
        return Ok(());
    }
    let g = i128::from(ctx.grid());
    let seg = |k: i128| (a.max(k * n), b.min(k * n + n - 1));
    // The widest segment moves with the workgroup; the others are the wrap-around ones.
    let main = (k0..=k1)
        .max_by_key(|&k| {
            let (x, y) = seg(k);
            (y - x, -k)
        })
        .unwrap_or(k0);
    for k in k0..=k1 {
        let (x, y) = seg(k);
        if t > 0 && g > 1 && k == main {
            out.push(Reach::Moving(Span {
                tile: t,
                lo: lo - k * n,
                hi: hi - k * n,
            }));
            continue;
        }
        // The workgroups with an invocation in this segment.
        let (mut w0, mut w1) = (i128::from(wgs.0), i128::from(wgs.1));
        if t > 0 {
            w0 = w0.max(div_ceil(x - hi, t));
            w1 = w1.min(div_floor(y - lo, t));
        }
        if w0 <= w1 {
            out.push(Reach::Fixed {
                elems: (x - k * n, y - k * n),
                // Within `wgs`: fits u64.
                wgs: (w0 as u64, w1 as u64),
            });
        }
    }
    Ok(())
}

/// The producer set of every pair of a producer piece (grid `ga`) and a consumer piece
/// (grid `gb`), joined.
pub(super) fn pairs(a: &[Reach], ga: u64, b: &[Reach], gb: u64) -> Result<ProducerSet, Unproven> {
    let mut sets = Vec::with_capacity(a.len() * b.len());
    for x in a {
        for y in b {
            sets.push(pair(*x, ga, *y, gb)?);
        }
    }
    Ok(ProducerSet::join(sets))
}

fn pair(x: Reach, ga: u64, y: Reach, gb: u64) -> Result<ProducerSet, Unproven> {
    match (x, y) {
        (Reach::Moving(a), Reach::Moving(b)) => pair_set(a, ga, b, gb),
        (Reach::Moving(a), Reach::Fixed { elems, .. }) => pair_set(
            a,
            ga,
            Span {
                tile: 0,
                lo: elems.0,
                hi: elems.1,
            },
            gb,
        ),
        (Reach::Fixed { elems, wgs }, y) => {
            // Every consumer that may touch these elements needs these producers.
            let (lo, hi) = match y {
                Reach::Moving(b) => (b.lo, b.tile * (i128::from(gb) - 1).max(0) + b.hi),
                Reach::Fixed { elems, .. } => elems,
            };
            let last = ga.saturating_sub(1).min(wgs.1);
            if lo > elems.1 || hi < elems.0 || ga == 0 || wgs.0 > last {
                return Ok(ProducerSet::Empty);
            }
            Ok(ProducerSet::Range { first: wgs.0, last })
        }
    }
}

#[cfg(test)]
#[path = "reach_props.rs"]
mod props;
