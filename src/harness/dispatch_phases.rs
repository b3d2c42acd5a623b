//! Where vyrescope's own `dispatch` spends its time (feature `vyre`): the dispatch
//! benchmark's cases (the same Programs and input bytes as the race) through our backend type
//! itself, each dispatch split into its phases (binding, input staging, launch, wait, output
//! copy, hand-over) instead of the two parts vyre's `TimedDispatchResult` reports. This is
//! the breakdown that says what stands between a dispatch and the copy limit.

use serde::Serialize;
use vyre_driver::backend::BackendError;
use vyrescope_dispatch_bench::{for_each_case, median, repeats_for, BenchSizes};

use crate::vyre::backend::device::Device;
use crate::vyre::backend::{DispatchPhases, VyrescopeBackend};

/// Medians of each phase over a case's timed dispatches, µs (`None`: the device does not
/// tell the part apart).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseRow {
    /// The Program (`vadd_f32`, `reduce_sum_u32`).
    pub program: String,
    /// Elements.
    pub elements: u64,
    /// Timed dispatches.
    pub repeats: u32,
    /// Conversion lookup, checks, binding.
    pub prep_us: f64,
    /// Input staging (zero scans, host copies into pinned memory, copies queued).
    pub upload_us: Option<f64>,
    /// Queueing the launch.
    pub launch_us: Option<f64>,
    /// Waiting for the copies and the kernel.
    pub wait_us: Option<f64>,
    /// The kernel on the device's clock.
    pub device_us: Option<f64>,
    /// Output copies into host memory.
    pub readback_us: Option<f64>,
    /// Handing the outputs over.
    pub collect_us: f64,
    /// The whole call.
    pub wall_us: f64,
    /// Every timed dispatch's outputs were the expected ones.
    pub verified: bool,
}

/// The error of a case: its Program, size and the backend's error.
#[derive(Debug, thiserror::Error)]
#[error("{program} ({elements} elements): {error}")]
pub struct PhaseError {
    program: &'static str,
    elements: u64,
    error: Box<BackendError>,
}

/// Runs the benchmark's cases of `sizes` on `be`: one untimed dispatch (conversion, JIT),
/// then the case's usual number of timed ones, each verified.
pub fn phase_rows<D: Device>(
    be: &VyrescopeBackend<D>,
    sizes: &BenchSizes,
) -> Result<Vec<PhaseRow>, PhaseError> {
    let mut rows = Vec::new();
    for_each_case(sizes, |case| {
        let err = |e: BackendError| PhaseError {
            program: case.name,
            elements: case.elements,
            error: Box::new(e),
        };
        let inputs: Vec<&[u8]> = case.inputs.iter().map(Vec::as_slice).collect();
        let (out, _) = be.dispatch_phases(&case.program, &inputs).map_err(err)?;
        let mut verified = case.verifies(&out);
        drop(out);
        let repeats = repeats_for(case.elements);
        let mut phases = Vec::with_capacity(repeats as usize);
        for _ in 0..repeats {
            let (out, p) = be.dispatch_phases(&case.program, &inputs).map_err(err)?;
            verified &= case.verifies(&out);
            phases.push(p);
        }
        rows.push(row(case.name, case.elements, &phases, verified));
        Ok(())
    })?;
    Ok(rows)
}

fn row(program: &str, elements: u64, phases: &[DispatchPhases], verified: bool) -> PhaseRow {
    let us = |ns: u64| ns as f64 / 1e3;
    let all = |f: &dyn Fn(&DispatchPhases) -> u64| {
        median(&mut phases.iter().map(|p| us(f(p))).collect::<Vec<_>>())
    };
    // A part counts only when every dispatch reported it.
    let some = |f: &dyn Fn(&DispatchPhases) -> Option<u64>| {
        let mut v: Vec<f64> = phases.iter().filter_map(|p| f(p).map(us)).collect();
        (v.len() == phases.len() && !v.is_empty()).then(|| median(&mut v))
    };
    PhaseRow {
        program: program.to_string(),
        elements,
        repeats: phases.len() as u32,
        prep_us: all(&|p| p.prep_ns),
        upload_us: some(&|p| p.upload_ns),
        launch_us: some(&|p| p.launch_ns),
        wait_us: some(&|p| p.wait_ns),
        device_us: some(&|p| p.device_ns),
        readback_us: some(&|p| p.readback_ns),
        collect_us: all(&|p| p.collect_ns),
        wall_us: all(&|p| p.wall_ns),
        verified,
    }
}

/// The rows as a table, with what each phase holds.
pub fn phase_table(backend: &str, rows: &[PhaseRow]) -> String {
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let mut s = format!(
        "where {backend}'s own dispatch time goes (its backend type, phase medians, us):\n  {:<16} {:>10} {:>8} {:>9} {:>8} {:>9} {:>8} {:>10} {:>9} {:>9}  {}\n",
        "program", "elements", "prep", "upload", "launch", "wait", "kernel", "readback", "collect", "wall", "result"
    );
    for r in rows {
        s.push_str(&format!(
            "  {:<16} {:>10} {:>8.1} {:>9} {:>8} {:>9} {:>8} {:>10} {:>9.1} {:>9.1}  {}\n",
            r.program,
            r.elements,
            r.prep_us,
            opt(r.upload_us),
            opt(r.launch_us),
            opt(r.wait_us),
            opt(r.device_us),
            opt(r.readback_us),
            r.collect_us,
            r.wall_us,
            if r.verified { "verified" } else { "WRONG" }
        ));
    }
    s.push_str(
        "  prep: conversion lookup, checks, binding; upload: zero scans, host copies into pinned memory, copies queued;\n  \
         wait: the queued copies and the kernel (output pages mapped meanwhile); readback: outputs into host memory\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vyre::backend::reference::ReferenceDevice;
    use crate::vyre::backend::registry::REFERENCE_ID;

    #[test]
    fn every_case_runs_verified_on_the_reference_with_its_phases() {
        let be = VyrescopeBackend::new(REFERENCE_ID, ReferenceDevice::default()).unwrap();
        let rows = phase_rows(&be, &BenchSizes::HOST).unwrap();
        assert_eq!(rows.len(), BenchSizes::HOST.vadd.len() + 1);
        for r in &rows {
            assert!(r.verified, "{r:?}");
            assert!(r.wall_us > 0.0 && r.wall_us >= r.prep_us, "{r:?}");
            assert_eq!(r.repeats, repeats_for(r.elements));
        }
        let table = phase_table(REFERENCE_ID, &rows);
        assert!(table.contains("reduce_sum_u32") && table.contains("verified"));
    }
}
