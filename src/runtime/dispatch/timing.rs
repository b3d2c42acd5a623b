//! What a dispatch's timings are reported as: one launch's device and host times, and the
//! cold first launch against min / median / max over the warm ones.

use serde::{Deserialize, Serialize};

/// min / median / max over launches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TimingStats {
    /// Launches timed.
    pub count: u32,
    /// Fastest (ms).
    pub min_ms: f64,
    /// Median (ms).
    pub median_ms: f64,
    /// Slowest (ms).
    pub max_ms: f64,
}

impl TimingStats {
    /// Stats of `samples` (ms).
    pub fn of(samples: &[f64]) -> TimingStats {
        if samples.is_empty() {
            return TimingStats::default();
        }
        let mut s = samples.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        TimingStats {
            count: n as u32,
            min_ms: s[0],
            median_ms: median,
            max_ms: s[n - 1],
        }
    }
}

/// A run's launches told apart: the first is cold (it carries the module's first use and the
/// first touch of its buffers, several times a warm launch for small kernels), the rest warm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ColdWarm {
    /// The first launch (ms).
    pub first_ms: f64,
    /// The launches after it; `None` after a single launch (then only a cold figure exists).
    pub warm: Option<TimingStats>,
}

impl ColdWarm {
    /// Splits `samples` (ms, in launch order); `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<ColdWarm> {
        let (first, rest) = samples.split_first()?;
        Some(ColdWarm {
            first_ms: *first,
            warm: (!rest.is_empty()).then(|| TimingStats::of(rest)),
        })
    }

    /// The samples a comparison should use: the warm ones, or the one cold one if that is
    /// all there is.
    pub fn comparable(samples: &[f64]) -> &[f64] {
        match samples {
            [_, rest @ ..] if !rest.is_empty() => rest,
            all => all,
        }
    }
}

/// One launch's times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct LaunchTiming {
    /// Device time between the events around the launch (ms); `None` when the launch was
    /// not timed with events (`DispatchOptions::device_timing` off).
    pub device_ms: Option<f64>,
    /// Host time to enqueue the launch (ms).
    pub enqueue_ms: f64,
    /// Host time waiting for completion (ms).
    pub wait_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_launch_is_cold_and_the_rest_are_warm() {
        let c = ColdWarm::of(&[9.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(c.first_ms, 9.0);
        let w = c.warm.unwrap();
        assert_eq!(
            (w.count, w.min_ms, w.median_ms, w.max_ms),
            (3, 1.0, 2.0, 3.0)
        );
        assert_eq!(ColdWarm::of(&[4.0]).unwrap().warm, None);
        assert_eq!(ColdWarm::of(&[]), None);
        assert_eq!(ColdWarm::comparable(&[9.0, 1.0, 3.0]), &[1.0, 3.0]);
        assert_eq!(ColdWarm::comparable(&[9.0]), &[9.0]);
    }

    #[test]
    fn timing_stats_median_and_extremes() {
        let s = TimingStats::of(&[3.0, 1.0, 2.0]);
        assert_eq!(
            (s.count, s.min_ms, s.median_ms, s.max_ms),
            (3, 1.0, 2.0, 3.0)
        );
        let s = TimingStats::of(&[4.0, 1.0, 2.0, 3.0]);
        assert_eq!(s.median_ms, 2.5);
        assert_eq!(TimingStats::of(&[]).count, 0);
    }
}
