//! What recording costs: the same vector add dispatched with distinct inputs on every call
//! (so every call stores new input and output bytes), first on the backend alone, then
//! through `vyrescope-capture`'s recording wrapper with a limit large enough that every
//! record is full. The figure is the ratio of the median `dispatch` wall times, as the
//! application sees them (recording writes off the calling thread; a writer that falls
//! behind shows up here as back-pressure). The final flush is timed on its own.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use vyre_driver::backend::{BackendError, DispatchConfig, VyreBackend};
use vyrescope_capture::{capture_boxed, CaptureOptions, CapturingBackend};

use crate::samples::vadd_f32;

/// The capture overhead row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaptureOverhead {
    /// Elements of the vector add.
    pub elements: u32,
    /// Timed dispatches per side.
    pub repeats: u32,
    /// Median wall time without recording, µs.
    pub plain_us: f64,
    /// Median wall time with full records, µs.
    pub captured_us: f64,
    /// `captured_us / plain_us`.
    pub ratio: f64,
    /// Waiting for the recorder to finish writing after the last dispatch, ms.
    pub flush_ms: f64,
    /// Dispatch records the capture holds afterwards.
    pub records: u64,
    /// Every output equalled `a + b` on both sides.
    pub verified: bool,
}

/// Runs the overhead measurement on `backend` (taken: the wrapper owns what it records),
/// recording into `dir` (created; the caller removes it).
pub fn capture_overhead(
    backend: Box<dyn VyreBackend>,
    dir: &Path,
    elements: u32,
    repeats: u32,
) -> Result<CaptureOverhead, BackendError> {
    let program = vadd_f32(elements);
    let cfg = DispatchConfig::default();
    let n = elements as usize;
    let b: Vec<u8> = (0..n)
        .flat_map(|i| ((i % 977) as f32 * 0.25).to_le_bytes())
        .collect();
    // Call k's `a` differs from every other call's in every element.
    let input = |k: u32| -> Vec<u8> {
        (0..n)
            .map(|i| ((i as u32).wrapping_mul(31).wrapping_add(k) % 65_536) as f32)
            .flat_map(f32::to_le_bytes)
            .collect()
    };
    let right = |a: &[u8], out: &[Vec<u8>]| -> bool {
        out.len() == 1
            && out[0].len() == a.len()
            && out[0]
                .chunks_exact(4)
                .zip(a.chunks_exact(4).zip(b.chunks_exact(4)))
                .all(|(o, (x, y))| {
                    let f = |c: &[u8]| f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    f(o).to_bits() == (f(x) + f(y)).to_bits()
                })
    };
    let mut verified = true;
    let mut time = |be: &dyn VyreBackend, first: u32| -> Result<Vec<f64>, BackendError> {
        let mut walls = Vec::with_capacity(repeats as usize);
        for k in first..first + repeats {
            let a = input(k);
            let inputs = vec![a, b.clone()];
            let t = Instant::now();
            let out = be.dispatch(&program, &inputs, &cfg)?;
            walls.push(t.elapsed().as_secs_f64() * 1e6);
            verified &= right(&inputs[0], &out);
        }
        Ok(walls)
    };
    // Warm: the first dispatch compiles.
    backend.dispatch(&program, &[input(u32::MAX), b.clone()], &cfg)?;
    let mut plain = time(backend.as_ref(), 0)?;
    let options = CaptureOptions {
        limit_bytes: u64::MAX,
    };
    let wrapped: CapturingBackend = capture_boxed(backend, dir, options);
    let mut captured = time(&wrapped, repeats)?;
    let t = Instant::now();
    wrapped.flush_capture();
    let flush_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(wrapped);
    let records = vyrescope_capture::Capture::open(dir)
        .and_then(|c| c.indices())
        .map(|i| i.len() as u64)
        .unwrap_or(0);
    let plain_us = crate::bench::median(&mut plain);
    let captured_us = crate::bench::median(&mut captured);
    Ok(CaptureOverhead {
        elements,
        repeats,
        plain_us,
        captured_us,
        ratio: captured_us / plain_us.max(f64::MIN_POSITIVE),
        flush_ms,
        records,
        verified,
    })
}
