//! The benchmark's report: one row per Program and size, and the table both sides of the
//! race print.

use serde::Serialize;

/// One measured Program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DispatchRow {
    /// `vadd_f32` or `reduce_sum_u32`.
    pub program: String,
    /// Elements.
    pub elements: u64,
    /// Bytes a dispatch moves (inputs up, outputs down).
    pub bytes_moved: u64,
    /// The first dispatch of the Program (conversion, emission, JIT), ms.
    pub first_ms: f64,
    /// Timed dispatches.
    pub repeats: u32,
    /// Median `dispatch` wall time, µs.
    pub median_us: f64,
    /// Fastest `dispatch`, µs.
    pub min_us: f64,
    /// Copy limit, µs (None without a bandwidth measurement).
    pub limit_us: Option<f64>,
    /// median / limit.
    pub vs_limit: Option<f64>,
    /// Median `dispatch_resident_timed` wall time, µs.
    pub resident_wall_us: f64,
    /// Median device time of those dispatches, µs (None when the backend has no clock).
    pub resident_device_us: Option<f64>,
    /// Where a timed dispatch's wall time goes (`dispatch_borrowed_timed`), medians.
    pub split: DispatchSplit,
    /// The outputs equalled the host's.
    pub verified: bool,
}

/// Medians of `dispatch_borrowed_timed` over the same inputs, as vyre's
/// `TimedDispatchResult` splits a dispatch: before the wait (host preparation, input
/// copies, launch) and after it (kernel wait, output copies, collecting the outputs).
/// `None` where the backend does not report the part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DispatchSplit {
    /// Median wall time of the timed dispatch, µs.
    pub wall_us: f64,
    /// Before the wait, µs.
    pub before_wait_us: Option<f64>,
    /// The kernel's device time, µs.
    pub device_us: Option<f64>,
    /// From the wait on, µs.
    pub after_wait_us: Option<f64>,
}

/// The whole benchmark.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DispatchBench {
    /// The backend id.
    pub backend: &'static str,
    /// Pinned host-to-device GB/s measured in this run.
    pub h2d_gbps: Option<f64>,
    /// Pinned device-to-host GB/s measured in this run.
    pub d2h_gbps: Option<f64>,
    /// One row per Program and size.
    pub rows: Vec<DispatchRow>,
    /// Every result verified.
    pub passed: bool,
    /// What recording costs ([`crate::capture_overhead`]), where it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<crate::CaptureOverhead>,
}

/// The report as a table.
pub fn dispatch_table(r: &DispatchBench) -> String {
    let mut s = String::new();
    match (r.h2d_gbps, r.d2h_gbps) {
        (Some(h), Some(d)) => s.push_str(&format!(
            "pinned copies measured in this run: host->device {h:.1} GB/s, device->host {d:.1} GB/s\n\n"
        )),
        _ => s.push_str("no copy limit (no pinned-copy bandwidth measured in this run)\n\n"),
    }
    s.push_str(&format!(
        "  {:<16} {:>10} {:>11} {:>10} {:>12} {:>12} {:>8} {:>13} {:>13}  {}\n",
        "program",
        "elements",
        "MB moved",
        "first ms",
        "median us",
        "limit us",
        "x limit",
        "resident us",
        "device us",
        "result"
    ));
    for row in &r.rows {
        let opt = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
        s.push_str(&format!(
            "  {:<16} {:>10} {:>11.2} {:>10.2} {:>12.1} {:>12} {:>8} {:>13.1} {:>13}  {}\n",
            row.program,
            row.elements,
            row.bytes_moved as f64 / 1e6,
            row.first_ms,
            row.median_us,
            opt(row.limit_us, 1),
            opt(row.vs_limit, 2),
            row.resident_wall_us,
            opt(row.resident_device_us, 1),
            if row.verified { "verified" } else { "WRONG" }
        ));
    }
    s.push_str(&format!(
        "\nwhere a timed dispatch's time goes (dispatch_borrowed_timed, medians, us):\n  {:<16} {:>10} {:>10} {:>13} {:>10} {:>12}\n",
        "program", "elements", "wall", "before wait", "kernel", "after wait"
    ));
    for row in &r.rows {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        let sp = &row.split;
        s.push_str(&format!(
            "  {:<16} {:>10} {:>10.1} {:>13} {:>10} {:>12}\n",
            row.program,
            row.elements,
            sp.wall_us,
            opt(sp.before_wait_us),
            opt(sp.device_us),
            opt(sp.after_wait_us),
        ));
    }
    s.push_str(
        "  before wait: conversion lookup, binding, input copies, launch; after wait: the kernel's wait, output copies, collecting the outputs\n",
    );
    if let Some(c) = &r.capture {
        s.push_str(&format!(
            "\ncapture overhead (vadd_f32, {} elements, distinct inputs each call, full records, {} dispatches a side): \
             {:.1} us plain, {:.1} us captured = {:.2}x; flush after the last {:.1} ms; {} records; {}\n",
            c.elements,
            c.repeats,
            c.plain_us,
            c.captured_us,
            c.ratio,
            c.flush_ms,
            c.records,
            if c.verified { "verified" } else { "WRONG" }
        ));
    }
    s
}
