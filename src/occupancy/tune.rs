//! Workgroup tuning support (the GPU timing loop lives in `runtime`; `vyrescope tune` is wired
//! there): candidate lists, the on-disk results cache and the results table.
//!
//! Results are cached per (Program hash, device name, driver version) under
//! `dirs::cache_dir()/vyrescope/tune/`, one JSON file per key holding one row per workgroup
//! measured, so a second run with the same candidates is instant and a run with new
//! candidates only times the new ones. `--fresh` ([`CacheMode::Fresh`]) ignores what is
//! cached and overwrites it.

pub mod cache;
pub mod candidates;
pub mod render;

pub use cache::{program_hash, CacheError, CacheMode, TuneCache, TuneKey};
pub use candidates::{parse_candidates, CandidateError};
pub use render::{render_json, render_text};

use serde::{Deserialize, Serialize};

/// How one candidate ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "why", rename_all = "snake_case")]
pub enum TuneStatus {
    /// Ran and matched the reference.
    Ok,
    /// Could not launch (the reason, with its Fix).
    CannotLaunch(String),
    /// Ran but the results differ from the reference interpreter.
    Mismatch,
    /// Not timed: on the reference interpreter this size gives other outputs than the
    /// Program's own size (the first difference, `partial[3] 12.0 vs 9.5`).
    ChangesResults(String),
}

/// One candidate's measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneRow {
    /// Workgroup size.
    pub workgroup: [u32; 3],
    /// Median device time over the repetitions (ms); `None` when it did not run.
    pub median_ms: Option<f64>,
    /// Occupancy at this workgroup size, percent.
    pub occupancy_pct: f64,
    /// Default workgroup's median over this one's (> 1 is faster); `None` without both times.
    pub speedup_vs_default: Option<f64>,
    /// Outcome.
    pub status: TuneStatus,
    /// Set when this size's outputs could not be compared with the own size's (`too large:
    /// ...`): it ran, but nothing says it computes the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub results_note: Option<String>,
}

/// A whole tuning run: every candidate plus what it was compared with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TuneResult {
    /// Program name.
    pub program: String,
    /// Device name.
    pub device: String,
    /// Driver version.
    pub driver: u32,
    /// The Program's own workgroup size (the baseline).
    pub default_workgroup: [u32; 3],
    /// Timed repetitions per candidate.
    pub repeat: u32,
    /// Candidates in the order given.
    pub rows: Vec<TuneRow>,
    /// True when every row came from the cache.
    #[serde(default)]
    pub from_cache: bool,
}

impl TuneResult {
    /// Fills each row's `speedup_vs_default` from the default workgroup's median.
    pub fn compute_speedups(&mut self) {
        let base = self
            .rows
            .iter()
            .find(|r| r.workgroup == self.default_workgroup && r.status == TuneStatus::Ok)
            .and_then(|r| r.median_ms);
        for r in &mut self.rows {
            r.speedup_vs_default = match (base, r.median_ms, &r.status) {
                (Some(b), Some(m), TuneStatus::Ok) if m > 0.0 => Some(b / m),
                _ => None,
            };
        }
    }

    /// The fastest candidate that ran, matched the reference and keeps the Program's results
    /// (a size whose results were not compared with the own size's is never "best").
    pub fn best(&self) -> Option<&TuneRow> {
        self.rows
            .iter()
            .filter(|r| r.status == TuneStatus::Ok)
            .filter(|r| r.results_note.is_none() || r.workgroup == self.default_workgroup)
            .filter_map(|r| r.median_ms.map(|m| (m, r)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(x: u32, ms: Option<f64>, status: TuneStatus) -> TuneRow {
        TuneRow {
            workgroup: [x, 1, 1],
            median_ms: ms,
            occupancy_pct: 100.0,
            speedup_vs_default: None,
            status,
            results_note: None,
        }
    }

    #[test]
    fn speedups_and_best_ignore_failed_rows() {
        let mut r = TuneResult {
            program: "p".into(),
            device: "d".into(),
            driver: 1,
            default_workgroup: [256, 1, 1],
            repeat: 5,
            rows: vec![
                row(64, Some(2.0), TuneStatus::Ok),
                row(256, Some(1.0), TuneStatus::Ok),
                row(512, Some(0.5), TuneStatus::Mismatch),
                row(1024, Some(0.8), TuneStatus::Ok),
                row(2048, None, TuneStatus::CannotLaunch("too big".into())),
            ],
            from_cache: false,
        };
        r.compute_speedups();
        assert_eq!(r.rows[0].speedup_vs_default, Some(0.5));
        assert_eq!(r.rows[1].speedup_vs_default, Some(1.0));
        assert_eq!(r.rows[2].speedup_vs_default, None);
        assert_eq!(r.rows[3].speedup_vs_default, Some(1.25));
        assert_eq!(r.best().unwrap().workgroup, [1024, 1, 1]);
    }
}
