//! The speedup gate: a plan is called "faster" than separate launches only with evidence.
//!
//! Each form needs at least [`MIN_SAMPLES`] timed repetitions. The speedup is the ratio of the
//! medians (separate / fused). Its noise interval is built from the interquartile ranges:
//! `[q1(separate) / q3(fused), q3(separate) / q1(fused)]`, the range of ratios between the
//! middle halves of both samples. The verdict is `faster` when the whole interval is above
//! 1.0, `slower` when it is below 1.0, and `no clear difference` otherwise. This is
//! deliberately conservative: a speedup inside run-to-run noise is not claimed.

use serde::{Deserialize, Serialize};

/// Fewest timed repetitions per form before the gate gives a verdict.
pub const MIN_SAMPLES: usize = 20;

/// What the gate concludes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The fused form is faster beyond the noise.
    Faster,
    /// The fused form is slower beyond the noise.
    Slower,
    /// The interval contains 1.0.
    NoClearDifference,
    /// Fewer than [`MIN_SAMPLES`] repetitions of a form.
    InsufficientEvidence,
}

impl Verdict {
    /// The verdict as printed.
    pub fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoClearDifference => "no clear difference",
            Verdict::InsufficientEvidence => "insufficient evidence",
        }
    }
}

/// The gate's figures and verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    /// Median device time of the separate launches (ms).
    pub separate_median_ms: f64,
    /// Median device time of the fused plan (ms).
    pub fused_median_ms: f64,
    /// `separate_median_ms / fused_median_ms`.
    pub speedup: f64,
    /// Lower end of the noise interval of the speedup.
    pub speedup_low: f64,
    /// Upper end of the noise interval.
    pub speedup_high: f64,
    /// Repetitions of the separate form.
    pub separate_samples: usize,
    /// Repetitions of the fused form.
    pub fused_samples: usize,
    /// The conclusion.
    pub verdict: Verdict,
    /// How the interval is computed (for reports).
    pub statistic: String,
}

/// The `q` quantile (0..=1) of `sorted` by linear interpolation; NaN when empty.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    s
}

/// Judges `fused` against `separate` (device times of whole executions, ms).
pub fn judge(separate: &[f64], fused: &[f64]) -> GateResult {
    let (s, f) = (sorted(separate), sorted(fused));
    let (sm, fm) = (quantile(&s, 0.5), quantile(&f, 0.5));
    let low = quantile(&s, 0.25) / quantile(&f, 0.75);
    let high = quantile(&s, 0.75) / quantile(&f, 0.25);
    let verdict = if s.len() < MIN_SAMPLES || f.len() < MIN_SAMPLES {
        Verdict::InsufficientEvidence
    } else if low > 1.0 {
        Verdict::Faster
    } else if high < 1.0 {
        Verdict::Slower
    } else {
        Verdict::NoClearDifference
    };
    GateResult {
        separate_median_ms: sm,
        fused_median_ms: fm,
        speedup: sm / fm,
        speedup_low: low,
        speedup_high: high,
        separate_samples: s.len(),
        fused_samples: f.len(),
        verdict,
        statistic: "ratio of medians; interval [q1(separate)/q3(fused), q3(separate)/q1(fused)]"
            .into(),
    }
}

/// The evidence as CSV: `form,repetition,device_ms` per sample.
pub fn evidence_csv(separate: &[f64], fused: &[f64]) -> String {
    let mut out = String::from("form,repetition,device_ms\n");
    for (form, v) in [("separate", separate), ("megakernel", fused)] {
        for (i, ms) in v.iter().enumerate() {
            out.push_str(&format!("{form},{i},{ms}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(base: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut g = crate::inputs::prng::SplitMix64::new(seed);
        (0..n)
            .map(|_| base * (1.0 + (g.next_u64() % 1000) as f64 / 10_000.0))
            .collect()
    }

    #[test]
    fn a_clear_speedup_is_faster() {
        let r = judge(&noisy(2.0, 30, 1), &noisy(1.0, 30, 2));
        assert_eq!(r.verdict, Verdict::Faster);
        assert!(r.speedup > 1.8 && r.speedup < 2.2, "{r:?}");
        assert!(r.speedup_low > 1.0 && r.speedup_low <= r.speedup && r.speedup <= r.speedup_high);
    }

    #[test]
    fn overlapping_samples_are_no_clear_difference() {
        let r = judge(&noisy(1.0, 40, 3), &noisy(1.0, 40, 4));
        assert_eq!(r.verdict, Verdict::NoClearDifference, "{r:?}");
    }

    #[test]
    fn slower_and_too_few_samples() {
        assert_eq!(
            judge(&noisy(1.0, 25, 5), &noisy(3.0, 25, 6)).verdict,
            Verdict::Slower
        );
        let r = judge(&noisy(5.0, 19, 7), &noisy(1.0, 40, 8));
        assert_eq!(r.verdict, Verdict::InsufficientEvidence);
        assert_eq!(r.separate_samples, 19);
    }

    #[test]
    fn csv_has_one_row_per_sample() {
        let csv = evidence_csv(&[1.0, 2.0], &[0.5]);
        assert_eq!(csv.lines().count(), 4);
        assert!(csv.contains("megakernel,0,0.5"));
    }
}
