//! `selftest --vyre-dispatch`: how fast a vyre application's dispatch is on a vyrescope
//! backend acquired from vyre's registry (feature `vyre`). The same vyre Programs and
//! pageable `Vec<u8>` inputs a vyre application would pass go through the `VyreBackend`
//! trait: vector add f32 at several sizes and one reduction, each verified against the host
//! once, then timed (median wall time of `dispatch`, and of `dispatch_resident_timed` with
//! its device time). The copy limit is the bytes a dispatch must move divided by the pinned
//! host<->device bandwidth measured in the same run (`Runtime::pinned_copy_gbps`): no
//! dispatch of pageable inputs can beat it.

use std::time::Instant;

use serde::Serialize;
use vyre_driver::backend::{BackendError, DispatchConfig, VyreBackend};

use crate::vyre::backend::samples::{reduce_sum_u32, vadd_f32, VyreProgram};

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
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A backend call of the benchmark that failed: which Program, at which size, and the
/// backend's error.
#[derive(Debug, thiserror::Error)]
#[error("{program} ({elements} elements): {error}")]
pub struct DispatchBenchError {
    /// The benchmark Program's name (`vadd_f32`, `reduce_sum_u32`).
    pub program: String,
    /// Its element count.
    pub elements: u64,
    /// The backend's error.
    pub error: Box<BackendError>,
}

fn repeats_for(elements: u64) -> u32 {
    match elements {
        0..=65_536 => 200,
        65_537..=4_194_304 => 50,
        _ => 10,
    }
}

/// Times `program` on `be`: first dispatch, `repeats` more, then resident dispatches over
/// the same inputs. `check` judges the first outputs.
#[allow(clippy::too_many_arguments)]
fn measure(
    be: &dyn VyreBackend,
    name: &str,
    program: &VyreProgram,
    inputs: &[Vec<u8>],
    elements: u64,
    bytes_in: u64,
    bytes_out: u64,
    bw: Option<(f64, f64)>,
    check: &dyn Fn(&[Vec<u8>]) -> bool,
) -> Result<DispatchRow, DispatchBenchError> {
    let cfg = DispatchConfig::default();
    let err = |e: BackendError| DispatchBenchError {
        program: name.to_string(),
        elements,
        error: Box::new(e),
    };
    let t = Instant::now();
    let out = be.dispatch(program, inputs, &cfg).map_err(err)?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let verified = check(&out);
    let repeats = repeats_for(elements);
    let mut walls = Vec::with_capacity(repeats as usize);
    for _ in 0..repeats {
        let t = Instant::now();
        let out = be.dispatch(program, inputs, &cfg).map_err(err)?;
        walls.push(t.elapsed().as_secs_f64() * 1e6);
        std::hint::black_box(out);
    }
    let min_us = walls.iter().copied().fold(f64::INFINITY, f64::min);
    let median_us = median(&mut walls);
    let split = measure_split(be, program, inputs, repeats).map_err(err)?;
    // Resident: every non-workgroup buffer allocated once (binding order = declaration
    // order here), inputs uploaded once, then dispatches on the resident buffers.
    let mut resources = Vec::new();
    for input in inputs {
        let r = be.allocate_resident(input.len()).map_err(err)?;
        be.upload_resident(&r, input).map_err(err)?;
        resources.push(r);
    }
    resources.push(be.allocate_resident(bytes_out as usize).map_err(err)?);
    let mut res_walls = Vec::new();
    let mut res_device = Vec::new();
    for _ in 0..repeats {
        let t = be
            .dispatch_resident_timed(program, &resources, &cfg)
            .map_err(err)?;
        res_walls.push(t.wall_ns as f64 / 1e3);
        if let Some(d) = t.device_ns {
            res_device.push(d as f64 / 1e3);
        }
    }
    for r in resources {
        be.free_resident(r).map_err(err)?;
    }
    let limit_us =
        bw.map(|(h2d, d2h)| bytes_in as f64 / (h2d * 1e3) + bytes_out as f64 / (d2h * 1e3));
    Ok(DispatchRow {
        program: name.to_string(),
        elements,
        bytes_moved: bytes_in + bytes_out,
        first_ms,
        repeats,
        median_us,
        min_us,
        limit_us,
        vs_limit: limit_us.filter(|l| *l > 0.0).map(|l| median_us / l),
        resident_wall_us: median(&mut res_walls),
        resident_device_us: (!res_device.is_empty()).then(|| median(&mut res_device)),
        split,
        verified,
    })
}

/// `repeats` timed dispatches of `program`: the medians of each part vyre's
/// `TimedDispatchResult` reports.
fn measure_split(
    be: &dyn VyreBackend,
    program: &VyreProgram,
    inputs: &[Vec<u8>],
    repeats: u32,
) -> Result<DispatchSplit, BackendError> {
    let cfg = DispatchConfig::default();
    let borrowed: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let (mut wall, mut before, mut device, mut after) = (vec![], vec![], vec![], vec![]);
    for _ in 0..repeats {
        let t = be.dispatch_borrowed_timed(program, &borrowed, &cfg)?;
        let us = |ns: u64| ns as f64 / 1e3;
        wall.push(us(t.wall_ns));
        before.extend(t.enqueue_ns.map(us));
        device.extend(t.device_ns.map(us));
        after.extend(t.wait_ns.map(us));
    }
    let med = |v: &mut Vec<f64>| (v.len() == repeats as usize).then(|| median(v));
    Ok(DispatchSplit {
        wall_us: median(&mut wall),
        before_wait_us: med(&mut before),
        device_us: med(&mut device),
        after_wait_us: med(&mut after),
    })
}

/// Runs the benchmark on `be`: vector add at each of `sizes` (elements) and a reduction of
/// `reduce_elements`; `bandwidth` is the pinned (h2d, d2h) GB/s, when measured.
pub fn run_dispatch_bench(
    be: &dyn VyreBackend,
    bandwidth: Option<(f64, f64)>,
    sizes: &[u32],
    reduce_elements: u32,
) -> Result<DispatchBench, DispatchBenchError> {
    let mut rng = Rng(45);
    let mut rows = Vec::new();
    for &n in sizes {
        let a: Vec<f32> = (0..n).map(|_| (rng.next() >> 40) as f32 / 1e6).collect();
        let b: Vec<f32> = (0..n).map(|_| (rng.next() >> 40) as f32 / 1e6).collect();
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let want = bytes(&a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<f32>>());
        let inputs = vec![bytes(&a), bytes(&b)];
        drop((a, b));
        let n64 = u64::from(n);
        rows.push(measure(
            be,
            "vadd_f32",
            &vadd_f32(n),
            &inputs,
            n64,
            8 * n64,
            4 * n64,
            bandwidth,
            &|out| out.len() == 1 && out[0] == want,
        )?);
    }
    let n = reduce_elements;
    let x: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let sum = x.iter().fold(0u32, |s, &v| s.wrapping_add(v));
    let input: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    drop(x);
    rows.push(measure(
        be,
        "reduce_sum_u32",
        &reduce_sum_u32(n),
        &[input],
        u64::from(n),
        4 * u64::from(n),
        4,
        bandwidth,
        &|out| out.len() == 1 && out[0] == sum.to_le_bytes(),
    )?);
    Ok(DispatchBench {
        backend: be.id(),
        h2d_gbps: bandwidth.map(|b| b.0),
        d2h_gbps: bandwidth.map(|b| b.1),
        passed: rows.iter().all(|r| r.verified),
        rows,
    })
}

/// The report as a table.
pub fn dispatch_table(r: &DispatchBench) -> String {
    let mut s = String::new();
    match (r.h2d_gbps, r.d2h_gbps) {
        (Some(h), Some(d)) => s.push_str(&format!(
            "pinned copies measured in this run: host->device {h:.1} GB/s, device->host {d:.1} GB/s\n\n"
        )),
        _ => s.push_str("no copy limit (the backend has no device)\n\n"),
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
    s
}
