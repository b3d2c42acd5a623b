//! Running the benchmark on one backend: inputs from a fixed seed, one verified first
//! dispatch per Program, then the timed dispatches.

use std::time::Instant;

use vyre_driver::backend::{BackendError, DispatchConfig, VyreBackend};

use crate::report::{DispatchBench, DispatchRow, DispatchSplit};
use crate::samples::{reduce_sum_u32, vadd_f32, VyreProgram};

/// The seed of every input: both sides of a race dispatch the same bytes.
const SEED: u64 = 45;

/// The sizes the benchmark runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchSizes {
    /// Vector add f32, one row per element count.
    pub vadd: &'static [u32],
    /// The u32 sum's element count.
    pub reduce: u32,
}

impl BenchSizes {
    /// A GPU backend: vector add at 2^10, 2^20 and 2^26 elements, the sum of 2^24.
    pub const GPU: BenchSizes = BenchSizes {
        vadd: &[1 << 10, 1 << 20, 1 << 26],
        reduce: 1 << 24,
    };
    /// A host interpreter (a smoke test of the code path, no timing claims): vector add at
    /// 2^10 and 2^14, the sum of 2^14.
    pub const HOST: BenchSizes = BenchSizes {
        vadd: &[1 << 10, 1 << 14],
        reduce: 1 << 14,
    };
}

/// SplitMix64: reproducible random inputs (never zeros only).
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

/// The median of `v` (sorted in place); 0 when empty.
pub fn median(v: &mut [f64]) -> f64 {
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

/// Timed dispatches of a case of `elements` elements.
pub fn repeats_for(elements: u64) -> u32 {
    match elements {
        0..=65_536 => 200,
        65_537..=4_194_304 => 50,
        _ => 10,
    }
}

/// One Program of the benchmark with its inputs and the outputs it must produce.
pub struct BenchCase {
    /// The Program's name (`vadd_f32`, `reduce_sum_u32`).
    pub name: &'static str,
    /// The vyre Program.
    pub program: VyreProgram,
    /// Its inputs, as a vyre application passes them.
    pub inputs: Vec<Vec<u8>>,
    /// Elements.
    pub elements: u64,
    /// Bytes of output a dispatch copies back.
    pub bytes_out: u64,
    /// The outputs, computed on the host.
    pub expected: Vec<Vec<u8>>,
}

impl BenchCase {
    /// Whether `out` is exactly the expected outputs.
    pub fn verifies(&self, out: &[Vec<u8>]) -> bool {
        out == self.expected.as_slice()
    }
}

/// Times `case` on `be`: first dispatch, `repeats` more, the timed split, then resident
/// dispatches over the same inputs.
fn measure(
    be: &dyn VyreBackend,
    case: &BenchCase,
    bw: Option<(f64, f64)>,
) -> Result<DispatchRow, DispatchBenchError> {
    let cfg = DispatchConfig::default();
    let err = |e: BackendError| DispatchBenchError {
        program: case.name.to_string(),
        elements: case.elements,
        error: Box::new(e),
    };
    let (program, inputs) = (&case.program, case.inputs.as_slice());
    let t = Instant::now();
    let out = be.dispatch(program, inputs, &cfg).map_err(err)?;
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let verified = case.verifies(&out);
    let repeats = repeats_for(case.elements);
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
    let (resident_wall_us, resident_device_us) =
        measure_resident(be, program, inputs, case.bytes_out, repeats).map_err(err)?;
    let bytes_in: u64 = inputs.iter().map(|i| i.len() as u64).sum();
    let limit_us =
        bw.map(|(h2d, d2h)| bytes_in as f64 / (h2d * 1e3) + case.bytes_out as f64 / (d2h * 1e3));
    Ok(DispatchRow {
        program: case.name.to_string(),
        elements: case.elements,
        bytes_moved: bytes_in + case.bytes_out,
        first_ms,
        repeats,
        median_us,
        min_us,
        limit_us,
        vs_limit: limit_us.filter(|l| *l > 0.0).map(|l| median_us / l),
        resident_wall_us,
        resident_device_us,
        split,
        verified,
    })
}

/// Resident: every non-workgroup buffer allocated once (binding order = declaration order
/// in the samples), inputs uploaded once, then `repeats` dispatches on the resident buffers.
/// The medians of their wall and device times, µs.
fn measure_resident(
    be: &dyn VyreBackend,
    program: &VyreProgram,
    inputs: &[Vec<u8>],
    bytes_out: u64,
    repeats: u32,
) -> Result<(f64, Option<f64>), BackendError> {
    let cfg = DispatchConfig::default();
    let mut resources = Vec::new();
    for input in inputs {
        let r = be.allocate_resident(input.len())?;
        be.upload_resident(&r, input)?;
        resources.push(r);
    }
    resources.push(be.allocate_resident(bytes_out as usize)?);
    let mut walls = Vec::new();
    let mut device = Vec::new();
    for _ in 0..repeats {
        let t = be.dispatch_resident_timed(program, &resources, &cfg)?;
        walls.push(t.wall_ns as f64 / 1e3);
        device.extend(t.device_ns.map(|d| d as f64 / 1e3));
    }
    for r in resources {
        be.free_resident(r)?;
    }
    Ok((
        median(&mut walls),
        (!device.is_empty()).then(|| median(&mut device)),
    ))
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
    // A part counts only when every dispatch reported it.
    let med = |v: &mut Vec<f64>| (v.len() == repeats as usize).then(|| median(v));
    Ok(DispatchSplit {
        wall_us: median(&mut wall),
        before_wait_us: med(&mut before),
        device_us: med(&mut device),
        after_wait_us: med(&mut after),
    })
}

fn le_bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Calls `f` on each case of the benchmark in turn: vector add at each of `sizes.vadd` and
/// the sum of `sizes.reduce` u32, inputs from a fixed seed (the same bytes on every backend
/// and every caller). One case is held at a time (at 2^26 elements one takes 1 GB).
pub fn for_each_case<E>(
    sizes: &BenchSizes,
    mut f: impl FnMut(&BenchCase) -> Result<(), E>,
) -> Result<(), E> {
    let mut rng = Rng(SEED);
    for &n in sizes.vadd {
        let a: Vec<f32> = (0..n).map(|_| (rng.next() >> 40) as f32 / 1e6).collect();
        let b: Vec<f32> = (0..n).map(|_| (rng.next() >> 40) as f32 / 1e6).collect();
        let want = le_bytes_f32(&a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<f32>>());
        let case = BenchCase {
            name: "vadd_f32",
            program: vadd_f32(n),
            inputs: vec![le_bytes_f32(&a), le_bytes_f32(&b)],
            elements: u64::from(n),
            bytes_out: 4 * u64::from(n),
            expected: vec![want],
        };
        drop((a, b));
        f(&case)?;
    }
    let n = sizes.reduce;
    let x: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
    let sum = x.iter().fold(0u32, |s, &v| s.wrapping_add(v));
    f(&BenchCase {
        name: "reduce_sum_u32",
        program: reduce_sum_u32(n),
        inputs: vec![x.iter().flat_map(|v| v.to_le_bytes()).collect()],
        elements: u64::from(n),
        bytes_out: 4,
        expected: vec![sum.to_le_bytes().to_vec()],
    })
}

/// Runs the benchmark on `be` over [`for_each_case`]; `bandwidth` is the pinned (h2d, d2h)
/// GB/s, when measured.
pub fn run_dispatch_bench(
    be: &dyn VyreBackend,
    bandwidth: Option<(f64, f64)>,
    sizes: &BenchSizes,
) -> Result<DispatchBench, DispatchBenchError> {
    let mut rows = Vec::new();
    for_each_case(sizes, |case| {
        rows.push(measure(be, case, bandwidth)?);
        Ok(())
    })?;
    Ok(DispatchBench {
        backend: be.id(),
        h2d_gbps: bandwidth.map(|b| b.0),
        d2h_gbps: bandwidth.map(|b| b.1),
        passed: rows.iter().all(|r| r.verified),
        rows,
        capture: None,
    })
}
