//! The GPU half of `vyrescope tune`: time each candidate workgroup size (verified against
//! the reference), with results cached on disk per (program, device, driver) by
//! `occupancy::tune::TuneCache`. A candidate whose outputs differ from the Program's own
//! size's on the reference interpreter ([`crate::harness::preserve`]) is refused untimed.

use std::path::Path;

use crate::harness::preserve::{preserves, Inputs, Preservation};
use crate::ir::Program;
use crate::occupancy::estimate::estimate;
use crate::occupancy::tune::{
    program_hash, CacheMode, TuneCache, TuneKey, TuneResult, TuneRow, TuneStatus,
};
use crate::runtime::execute::RunRequest;
use crate::runtime::{Result, Runtime, RuntimeError};

/// What to tune.
#[derive(Debug, Clone)]
pub struct TuneRequest<'a> {
    /// The Program.
    pub program: &'a Program,
    /// Its file text (the cache key).
    pub program_text: &'a str,
    /// Directory for `file` inputs.
    pub base: &'a Path,
    /// Folder `file` inputs may come from (`--root DIR`); None: `base` only.
    pub root: Option<&'a Path>,
    /// Candidate workgroup sizes.
    pub candidates: Vec<[u32; 3]>,
    /// Timed launches per candidate.
    pub repeat: u32,
    /// Use or ignore the cache.
    pub mode: CacheMode,
    /// Cache location (None = the user cache dir).
    pub cache: Option<TuneCache>,
}

/// The row of a candidate refused because it changes the Program's results.
pub fn refused(wg: [u32; 3], first: String) -> TuneRow {
    TuneRow {
        workgroup: wg,
        median_ms: None,
        occupancy_pct: 0.0,
        speedup_vs_default: None,
        status: TuneStatus::ChangesResults(first),
        results_note: None,
    }
}

/// Applies a result-preservation answer to a row: a size that changes the results is
/// refused, one that could not be compared is noted (and is never "best").
pub fn mark(row: &mut TuneRow, p: Preservation) {
    match p {
        Preservation::Preserved => row.results_note = None,
        Preservation::Changed { first, .. } => {
            row.status = TuneStatus::ChangesResults(first);
            row.median_ms = None;
            row.results_note = None;
        }
        Preservation::NotChecked { why } => row.results_note = Some(format!("not checked: {why}")),
    }
}

/// Times one candidate: verified run, median device time, occupancy.
fn tune_one(rt: &mut Runtime, req: &TuneRequest<'_>, wg: [u32; 3]) -> TuneRow {
    let run = RunRequest {
        root: req.root.map(Path::to_path_buf),
        workgroup: Some(wg),
        repeat: req.repeat.max(1),
        verify: true,
        ..RunRequest::default()
    };
    match rt.run_program(req.program, req.base, &run) {
        Ok(r) => {
            let threads = wg.iter().product();
            let occ = estimate(rt.caps(), &r.compiled.info.resources, threads, 0).occupancy_pct;
            let ok = r.parity.as_ref().is_some_and(|p| p.passed);
            TuneRow {
                workgroup: wg,
                median_ms: r.report.device_ms.as_ref().map(|d| d.median_ms),
                occupancy_pct: occ,
                speedup_vs_default: None,
                status: if ok {
                    TuneStatus::Ok
                } else {
                    TuneStatus::Mismatch
                },
                results_note: None,
            }
        }
        Err(e) => TuneRow {
            workgroup: wg,
            median_ms: None,
            occupancy_pct: 0.0,
            speedup_vs_default: None,
            status: TuneStatus::CannotLaunch(e.to_string()),
            results_note: None,
        },
    }
}

/// Tunes: cached rows are reused (unless `mode` is fresh), the rest are timed; the
/// Program's default workgroup is always measured so speedups have a baseline.
pub fn tune(rt: &mut Runtime, req: &TuneRequest<'_>) -> Result<TuneResult> {
    let cache = match &req.cache {
        Some(c) => c.clone(),
        None => TuneCache::user().map_err(|e| RuntimeError::Other(e.into()))?,
    };
    let caps = rt.caps().clone();
    let key = TuneKey {
        program_hash: program_hash(req.program_text),
        device: caps.name.clone(),
        driver: caps.driver_version,
    };
    let default_wg = req.program.workgroup_size;
    let mut wanted = req.candidates.clone();
    if !wanted.contains(&default_wg) {
        wanted.push(default_wg);
    }
    let lookup = cache
        .lookup(&key, req.mode, &wanted)
        .map_err(|e| RuntimeError::Other(e.into()))?;
    let from_cache = lookup.missing.is_empty();
    let inputs = Inputs {
        base: req.base.to_path_buf(),
        root: req.root.map(Path::to_path_buf),
    };
    let mut rows = lookup.cached;
    for wg in lookup.missing {
        // A size that changes the Program's results is refused before it is timed.
        match preserves(req.program, &inputs, wg) {
            Preservation::Changed { first, .. } => rows.push(refused(wg, first)),
            _ => rows.push(tune_one(rt, req, wg)),
        }
    }
    // Every row, cached ones too (a cache written before this check), says whether its
    // size keeps the Program's results.
    for r in &mut rows {
        mark(r, preserves(req.program, &inputs, r.workgroup));
    }
    rows.sort_by_key(|r| {
        wanted
            .iter()
            .position(|w| *w == r.workgroup)
            .unwrap_or(usize::MAX)
    });
    let mut result = TuneResult {
        program: req.program.name.clone(),
        device: caps.name.clone(),
        driver: caps.driver_version,
        default_workgroup: default_wg,
        repeat: req.repeat,
        rows,
        from_cache,
    };
    result.compute_speedups();
    if !from_cache {
        cache
            .store(&key, &result, req.mode)
            .map_err(|e| RuntimeError::Other(e.into()))?;
    }
    Ok(result)
}
