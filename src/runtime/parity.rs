//! Parity: GPU results against the reference interpreter's, element by element.
//!
//! Exact mode compares bits (any NaN equals any NaN, since NaN payloads are not part of the
//! semantics); approximate mode (Programs that use transcendental ops) accepts float
//! elements within a ULP bound or an absolute bound near zero.
//!
//! Float atomic sums ([`crate::interp::float_sums`]): an element that only float atomic adds
//! wrote may differ from the reference by [`float_sum_bound`], whatever the mode, because the
//! order of the additions is not defined; everything else keeps the mode's rule.
//!
//! The bound. An element starts at `x0` and receives `n` adds `v_1..v_n` in some order; each
//! addition rounds to nearest (`fl(a + b) = (a + b)(1 + d)`, `|d| <= u`, `u = 2^-24` for `f32`,
//! `2^-53` for `f64`). Recursive summation of these `n + 1` terms in any order gives
//! `|computed - exact| <= gamma_n * S` with `gamma_n = n u / (1 - n u)` and
//! `S = |x0| + sum |v_k|` (Higham, *Accuracy and Stability of Numerical Algorithms*, 4.2). PTX's
//! `atom.add.f32` also flushes subnormal inputs and results to zero: each of the `n` additions
//! then adds at most `2^-126` (the smallest normal) for its operand and `2^-126` for its
//! result, and `x0` at most `2^-126`: `(2n + 1) 2^-126` in all (`f64` atomics do not flush).
//! The GPU and the interpreter each sum in their own order, so their results differ by at most
//! twice that: `2 (gamma_n S + (2n + 1) t)`. With `n u >= 1` the bound says nothing (infinite).
//! Linear growth in `n` is the worst case and the price of a bound that cannot fail on a
//! correct GPU: at 2^22 `f32` adds it allows 67 % of `S`; at 4096 adds 0.05 %.

use serde::{Deserialize, Serialize};

use crate::inputs::HostBuffer;
use crate::interp::float_sums::FloatSums;
use crate::ir::ElemType;

/// Mismatches listed in a report at most.
pub const FIRST_MISMATCHES: usize = 10;

/// How close float results must be.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Largest accepted distance in units in the last place.
    pub max_ulps: u64,
    /// Differences at or below this absolute value are accepted (results near zero, where
    /// ULP distance is meaningless).
    pub abs: f64,
}

/// One differing element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// Buffer name.
    pub buffer: String,
    /// Element index.
    pub index: u64,
    /// GPU value.
    pub gpu: String,
    /// Reference value.
    pub reference: String,
}

/// Outcome of one comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParityReport {
    /// "exact" or "within N ulp".
    pub mode: String,
    /// Elements compared (writable buffers only).
    pub compared: u64,
    /// Elements that differ.
    pub mismatches: u64,
    /// The first differing elements.
    pub first: Vec<Mismatch>,
    /// Largest float distance seen (ulps).
    pub max_ulps_seen: u64,
    /// Elements of float atomic sums that differ from the reference within
    /// [`float_sum_bound`] (counted as matching).
    #[serde(default)]
    pub order_bounded: u64,
    /// True when nothing differs.
    pub passed: bool,
}

impl ParityReport {
    /// `"; first BUF[I] gpu G ref R"` for the first differing element, or `""`: the tail of a
    /// one-line mismatch message.
    pub fn first_text(&self) -> String {
        self.first
            .first()
            .map(|m| {
                format!(
                    "; first {}[{}] gpu {} ref {}",
                    m.buffer, m.index, m.gpu, m.reference
                )
            })
            .unwrap_or_default()
    }
}

fn f32_ordered(b: u32) -> i64 {
    if b & 0x8000_0000 != 0 {
        -((b & 0x7fff_ffff) as i64)
    } else {
        b as i64
    }
}

fn f64_ordered(b: u64) -> i128 {
    if b >> 63 != 0 {
        -((b & 0x7fff_ffff_ffff_ffff) as i128)
    } else {
        b as i128
    }
}

fn f16_to_f64(h: u16) -> f64 {
    let sign = if h >> 15 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as f64;
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// Reads element `i` as raw bits (zero-extended).
fn bits(elem: ElemType, data: &[u8], i: usize) -> u64 {
    let n = elem.size_bytes();
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(&data[i * n..i * n + n]);
    u64::from_le_bytes(b)
}

/// Human-readable element value.
pub fn show(elem: ElemType, raw: u64) -> String {
    match elem {
        ElemType::F32 => format!("{:?}", f32::from_bits(raw as u32)),
        ElemType::F64 => format!("{:?}", f64::from_bits(raw)),
        ElemType::F16 => format!("{:?} (0x{raw:04x})", f16_to_f64(raw as u16)),
        ElemType::I8 => format!("{}", raw as u8 as i8),
        ElemType::I16 => format!("{}", raw as u16 as i16),
        ElemType::I32 => format!("{}", raw as u32 as i32),
        ElemType::I64 => format!("{}", raw as i64),
        ElemType::Bool => format!("{}", raw as u32),
        _ => format!("{raw}"),
    }
}

/// Distance between two elements in ulps (0 = equal, both NaN counts as equal); u64::MAX
/// when one is NaN and the other is not. Non-float elements: 0 or u64::MAX.
pub fn distance(elem: ElemType, a: u64, b: u64) -> u64 {
    match elem {
        ElemType::F32 => {
            let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
            if x.is_nan() || y.is_nan() {
                return if x.is_nan() && y.is_nan() {
                    0
                } else {
                    u64::MAX
                };
            }
            if a == b {
                return 0;
            }
            (f32_ordered(a as u32) - f32_ordered(b as u32)).unsigned_abs()
        }
        ElemType::F64 => {
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            if x.is_nan() || y.is_nan() {
                return if x.is_nan() && y.is_nan() {
                    0
                } else {
                    u64::MAX
                };
            }
            if a == b {
                return 0;
            }
            u64::try_from((f64_ordered(a) - f64_ordered(b)).unsigned_abs()).unwrap_or(u64::MAX)
        }
        ElemType::F16 => {
            let (x, y) = (f16_to_f64(a as u16), f16_to_f64(b as u16));
            if x.is_nan() || y.is_nan() {
                return if x.is_nan() && y.is_nan() {
                    0
                } else {
                    u64::MAX
                };
            }
            let o = |h: u16| {
                if h & 0x8000 != 0 {
                    -((h & 0x7fff) as i64)
                } else {
                    h as i64
                }
            };
            (o(a as u16) - o(b as u16)).unsigned_abs()
        }
        _ => {
            if a == b {
                0
            } else {
                u64::MAX
            }
        }
    }
}

fn as_f64(elem: ElemType, raw: u64) -> f64 {
    match elem {
        ElemType::F32 => f32::from_bits(raw as u32) as f64,
        ElemType::F64 => f64::from_bits(raw),
        ElemType::F16 => f16_to_f64(raw as u16),
        _ => f64::NAN,
    }
}

/// The largest `|gpu - reference|` accepted for an element that `adds` float atomic adds
/// produced, with `magnitude` = `|x0| + sum |v_k|` (see the module docs for the derivation).
pub fn float_sum_bound(elem: ElemType, adds: u64, magnitude: f64) -> f64 {
    let (u, tiny) = match elem {
        ElemType::F32 => (2f64.powi(-24), 2f64.powi(-126)),
        ElemType::F64 => (2f64.powi(-53), 0.0),
        _ => return 0.0,
    };
    let nu = adds as f64 * u;
    if nu >= 1.0 || !magnitude.is_finite() {
        return f64::INFINITY;
    }
    let gamma = nu / (1.0 - nu);
    2.0 * (gamma * magnitude + (2.0 * adds as f64 + 1.0) * tiny)
}

/// Compares the writable buffers of `gpu` with `reference` (same order and shapes).
pub fn compare(
    gpu: &[HostBuffer],
    reference: &[HostBuffer],
    tol: Option<Tolerance>,
) -> ParityReport {
    compare_with(gpu, reference, tol, None)
}

/// [`compare`], accepting the elements of `sums` (the reference run's float atomic sums)
/// within [`float_sum_bound`].
pub fn compare_with(
    gpu: &[HostBuffer],
    reference: &[HostBuffer],
    tol: Option<Tolerance>,
    sums: Option<&FloatSums>,
) -> ParityReport {
    let sums = sums.filter(|s| !s.buffers.is_empty());
    let mut rep = ParityReport {
        mode: match tol {
            None => "exact".into(),
            Some(t) => format!("within {} ulp (or {:e} absolute)", t.max_ulps, t.abs),
        } + if sums.is_some() {
            ", float atomic sums within the order bound"
        } else {
            ""
        },
        compared: 0,
        mismatches: 0,
        first: Vec::new(),
        max_ulps_seen: 0,
        order_bounded: 0,
        passed: true,
    };
    for (g, r) in gpu.iter().zip(reference) {
        if !r.access.is_writable() {
            continue;
        }
        let elem = r.elem;
        let is_float = matches!(elem, ElemType::F16 | ElemType::F32 | ElemType::F64);
        let n = g.len().min(r.len());
        let bounds = sums.and_then(|s| s.buffers.get(&r.name));
        if g.len() != r.len() {
            rep.mismatches += 1;
            rep.first.push(Mismatch {
                buffer: r.name.clone(),
                index: n as u64,
                gpu: format!("{} elements", g.len()),
                reference: format!("{} elements", r.len()),
            });
        }
        for i in 0..n {
            let (a, b) = (bits(elem, &g.data, i), bits(elem, &r.data, i));
            rep.compared += 1;
            if a == b {
                continue;
            }
            let d = distance(elem, a, b);
            // Bits differ here: equal only as two NaNs (exact mode keeps -0.0 != +0.0).
            let both_nan = is_float && as_f64(elem, a).is_nan() && as_f64(elem, b).is_nan();
            let within_sum_bound = || {
                let Some(s) = bounds.and_then(|b| b.get(i)).filter(|s| s.adds > 0) else {
                    return false;
                };
                let (x, y) = (as_f64(elem, a), as_f64(elem, b));
                x.is_finite()
                    && y.is_finite()
                    && (x - y).abs() <= float_sum_bound(elem, s.adds, s.magnitude)
            };
            let ok = match (tol, is_float) {
                _ if both_nan => true,
                _ if is_float && within_sum_bound() => {
                    rep.order_bounded += 1;
                    true
                }
                (Some(t), true) => {
                    d != u64::MAX
                        && (d <= t.max_ulps || (as_f64(elem, a) - as_f64(elem, b)).abs() <= t.abs)
                }
                _ => false,
            };
            if is_float && d != u64::MAX {
                rep.max_ulps_seen = rep.max_ulps_seen.max(d);
            }
            if !ok {
                rep.mismatches += 1;
                if rep.first.len() < FIRST_MISMATCHES {
                    rep.first.push(Mismatch {
                        buffer: r.name.clone(),
                        index: i as u64,
                        gpu: show(elem, a),
                        reference: show(elem, b),
                    });
                }
            }
        }
    }
    rep.passed = rep.mismatches == 0;
    rep
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Access;

    fn buf(elem: ElemType, access: Access, data: Vec<u8>) -> HostBuffer {
        HostBuffer {
            name: "c".into(),
            elem,
            access,
            binding: 0,
            data,
        }
    }

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn exact_mode_counts_and_lists_mismatches() {
        // Pseudo-random data, then flip a few known elements.
        let mut x: u32 = 12345;
        let vals: Vec<f32> = (0..1000)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 8) as f32 / 65536.0 - 128.0
            })
            .collect();
        let mut gpu_vals = vals.clone();
        for &i in &[3usize, 500, 999] {
            gpu_vals[i] = f32::from_bits(gpu_vals[i].to_bits() ^ 1);
        }
        gpu_vals[7] = f32::NAN;
        let mut ref_vals = vals;
        ref_vals[10] = f32::NAN;
        gpu_vals[10] = f32::from_bits(0x7fc0_0123); // another NaN payload: equal
        let r = compare(
            &[buf(ElemType::F32, Access::ReadWrite, f32s(&gpu_vals))],
            &[buf(ElemType::F32, Access::ReadWrite, f32s(&ref_vals))],
            None,
        );
        assert_eq!(r.compared, 1000);
        assert_eq!(r.mismatches, 4);
        assert_eq!(
            r.first.iter().map(|m| m.index).collect::<Vec<_>>(),
            vec![3, 7, 500, 999]
        );
        assert_eq!(r.first[1].gpu, "NaN");
        assert!(!r.passed);
    }

    #[test]
    fn tolerance_accepts_close_floats_only() {
        let a = 1.0f32;
        let near = f32::from_bits(a.to_bits() + 2);
        let far = f32::from_bits(a.to_bits() + 9);
        let tol = Some(Tolerance {
            max_ulps: 4,
            abs: 1e-30,
        });
        let g = [buf(
            ElemType::F32,
            Access::ReadWrite,
            f32s(&[near, far, -0.0]),
        )];
        let r = [buf(ElemType::F32, Access::ReadWrite, f32s(&[a, a, 0.0]))];
        let rep = compare(&g, &r, tol);
        assert_eq!(rep.mismatches, 1);
        assert_eq!(rep.first[0].index, 1);
        assert_eq!(rep.max_ulps_seen, 9);
        // Exact mode: -0.0 and +0.0 differ (the semantics distinguish them).
        let exact = compare(&g, &r, None);
        assert_eq!(exact.mismatches, 3);
    }

    #[test]
    fn read_only_buffers_and_integers() {
        let g = [
            buf(ElemType::U32, Access::Read, vec![1, 0, 0, 0]),
            buf(
                ElemType::I32,
                Access::ReadWrite,
                (-5i32).to_le_bytes().to_vec(),
            ),
        ];
        let r = [
            buf(ElemType::U32, Access::Read, vec![2, 0, 0, 0]),
            buf(
                ElemType::I32,
                Access::ReadWrite,
                (-6i32).to_le_bytes().to_vec(),
            ),
        ];
        let rep = compare(
            &g,
            &r,
            Some(Tolerance {
                max_ulps: 100,
                abs: 1.0,
            }),
        );
        assert_eq!((rep.compared, rep.mismatches), (1, 1));
        assert_eq!(
            (rep.first[0].gpu.as_str(), rep.first[0].reference.as_str()),
            ("-5", "-6")
        );
    }

    /// `terms` summed into `x0` in f32 with the flush of PTX's `atom.add.f32`.
    fn atomic_sum(x0: f32, terms: &[f32]) -> f32 {
        let ftz = |x: f32| {
            if x.is_subnormal() {
                0.0 * x.signum()
            } else {
                x
            }
        };
        terms.iter().fold(ftz(x0), |s, &t| ftz(ftz(s) + ftz(t)))
    }

    fn sums_of(name: &str, adds: u64, magnitude: f64) -> FloatSums {
        let mut s = FloatSums::default();
        s.buffers.insert(
            name.into(),
            vec![crate::interp::float_sums::FloatSum { adds, magnitude }],
        );
        s
    }

    #[test]
    fn float_atomic_sums_pass_in_any_order_and_wrong_sums_fail() {
        // 4096 terms of mixed signs over six orders of magnitude, one of them large.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut terms: Vec<f32> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let m = (x >> 40) as f32 / (1u64 << 24) as f32;
                let e = ((x >> 8) % 6) as i32 - 2;
                let s = if x & 1 == 0 { 1.0 } else { -1.0 };
                s * m * 10f32.powi(e)
            })
            .collect();
        terms[100] = 5000.0;
        let x0 = 1.25f32;
        let reference = atomic_sum(x0, &terms);
        // Another order: a fixed pseudo-random permutation.
        let mut order: Vec<usize> = (0..terms.len()).collect();
        for i in (1..order.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let permuted: Vec<f32> = order.iter().map(|&i| terms[i]).collect();
        let gpu = atomic_sum(x0, &permuted);
        assert_ne!(
            gpu.to_bits(),
            reference.to_bits(),
            "the orders must round differently"
        );
        let magnitude = x0.abs() as f64 + terms.iter().map(|t| t.abs() as f64).sum::<f64>();
        let sums = sums_of("c", terms.len() as u64, magnitude);
        let g = |v: f32| [buf(ElemType::F32, Access::ReadWrite, f32s(&[v]))];
        let r = g(reference);
        // Exact mode alone flags the permuted sum; with the sums it passes, counted.
        assert_eq!(compare(&g(gpu), &r, None).mismatches, 1);
        let rep = compare_with(&g(gpu), &r, None, Some(&sums));
        assert!(rep.passed && rep.order_bounded == 1, "{rep:?}");
        assert!(rep.mode.contains("order bound"), "{}", rep.mode);
        // A sum that lost its large term, or is off by three bounds, fails.
        let bound = float_sum_bound(ElemType::F32, terms.len() as u64, magnitude);
        assert!(bound > 0.0 && bound < 5000.0, "{bound}");
        let lost = atomic_sum(x0, &[&terms[..100], &terms[101..]].concat());
        assert!(!compare_with(&g(lost), &r, None, Some(&sums)).passed);
        let off = (reference as f64 + 3.0 * bound) as f32;
        assert!(!compare_with(&g(off), &r, None, Some(&sums)).passed);
        // Elements outside the log, and buffers not in it, stay exact.
        assert!(!compare_with(&g(gpu), &r, None, Some(&sums_of("other", 4096, magnitude))).passed);
        assert!(!compare_with(&g(gpu), &r, None, Some(&sums_of("c", 0, magnitude))).passed);
        // NaN and infinity are never within the bound.
        assert!(!compare_with(&g(f32::INFINITY), &r, None, Some(&sums)).passed);
    }

    #[test]
    fn float_sum_bound_follows_the_derivation() {
        let u = 2f64.powi(-24);
        // n u / (1 - n u) S, twice, plus the flush term.
        let b = float_sum_bound(ElemType::F32, 1 << 22, 1000.0);
        let nu = (1u64 << 22) as f64 * u;
        let want = 2.0 * (nu / (1.0 - nu) * 1000.0 + ((2u64 << 22) + 1) as f64 * 2f64.powi(-126));
        assert_eq!(b, want);
        assert!(
            (b / 1000.0 - 2.0 / 3.0).abs() < 1e-9,
            "2^22 adds: two thirds of S"
        );
        assert_eq!(float_sum_bound(ElemType::F32, 1 << 24, 1.0), f64::INFINITY);
        assert_eq!(float_sum_bound(ElemType::F64, 0, 1.0), 0.0);
        assert_eq!(float_sum_bound(ElemType::U32, 10, 1.0), 0.0);
        let d = float_sum_bound(ElemType::F64, 1000, 1.0);
        assert!(d > 2.0 * 1000.0 * 2f64.powi(-53) && d < 2.1 * 1000.0 * 2f64.powi(-53));
    }

    #[test]
    fn f16_decoding() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 2f64.powi(-24));
        assert!(f16_to_f64(0x7e00).is_nan());
        assert_eq!(distance(ElemType::F16, 0x3c00, 0x3c03), 3);
    }
}
