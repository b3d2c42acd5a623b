//! `vyrescope selftest`: every fixture on the live GPU with verification, the occupancy
//! estimator against the driver for every fixture x block size x dynamic shared size, and
//! the fault-recovery check.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::occupancy_record::dynamic_sizes;
use crate::occupancy::table::{compare_rows, TableRow};
use crate::occupancy::DeviceCaps;
use crate::runtime::execute::RunRequest;
use crate::runtime::fault::FaultStep;
use crate::runtime::{KernelHandle, KernelInfo, Runtime};

/// One fixture's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FixtureResult {
    /// File name.
    pub fixture: String,
    /// Registers per thread (0 when it did not compile).
    pub regs: u32,
    /// Local (spill/stack) bytes per thread.
    pub spills: u32,
    /// Median device time (ms).
    pub device_ms: f64,
    /// JIT wall time (ms).
    pub jit_ms: f64,
    /// Elements compared and mismatches, or the error.
    pub parity: String,
    /// True when it ran and matched the reference.
    pub passed: bool,
}

/// The estimator against the driver.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OccupancyCheck {
    /// Cases compared.
    pub cases: u64,
    /// Cases where estimate == driver.
    pub agreed: u64,
    /// The first disagreements (`fixture: regs/block/dyn/static -> estimate vs driver`).
    pub disagreements: Vec<String>,
    /// Errors while asking the driver.
    pub errors: Vec<String>,
}

/// The whole selftest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelftestReport {
    /// Device probed.
    pub device: DeviceCaps,
    /// Per fixture.
    pub fixtures: Vec<FixtureResult>,
    /// Estimator vs driver.
    pub occupancy: OccupancyCheck,
    /// Fault recovery.
    pub faults: Vec<FaultStep>,
    /// True when everything passed.
    pub passed: bool,
}

/// `*.json` files of `dir`, sorted.
pub fn fixture_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn first_line(e: &impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// Runs one fixture with verification; the kernel handle and info come back for the
/// occupancy comparison.
fn selftest_fixture(
    rt: &mut Runtime,
    path: &Path,
    repeat: u32,
    root: Option<&Path>,
) -> (FixtureResult, Option<(KernelHandle, KernelInfo)>) {
    let fixture = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fail = |parity: String| FixtureResult {
        fixture: fixture.clone(),
        regs: 0,
        spills: 0,
        device_ms: 0.0,
        jit_ms: 0.0,
        parity,
        passed: false,
    };
    let program = match crate::ir::load_program(path) {
        Ok(p) => p,
        Err(e) => return (fail(format!("parse error: {}", first_line(&e))), None),
    };
    let base = path.parent().unwrap_or(Path::new("."));
    let req = RunRequest {
        repeat,
        verify: true,
        root: root.map(Path::to_path_buf),
        ..RunRequest::default()
    };
    match rt.run_program(&program, base, &req) {
        Err(e) => (fail(first_line(&e)), None),
        Ok(run) => {
            let r = &run.compiled.info.resources;
            let (parity, passed) = match &run.parity {
                Some(p) if p.passed => (
                    format!(
                        "{} {} / {} ok",
                        p.mode.split(' ').next().unwrap_or("exact"),
                        p.compared,
                        p.compared
                    ),
                    true,
                ),
                Some(p) => {
                    let first = p.first_text();
                    (
                        format!("FAIL {} of {} differ{first}", p.mismatches, p.compared),
                        false,
                    )
                }
                None => ("not verified".into(), false),
            };
            let res = FixtureResult {
                fixture,
                regs: r.regs_per_thread,
                spills: r.local_bytes,
                device_ms: run.report.device_ms.as_ref().map_or(0.0, |d| d.median_ms),
                jit_ms: run.compiled.info.jit_ms,
                parity,
                passed,
            };
            (
                res,
                Some((run.compiled.handle.clone(), run.compiled.info.clone())),
            )
        }
    }
}

/// Asks the driver for blocks/SM at every block size (multiples of 32 up to the kernel's
/// limit) and every tested dynamic shared size; returns table rows.
fn driver_rows(
    rt: &mut Runtime,
    h: &KernelHandle,
    info: &KernelInfo,
    errors: &mut Vec<String>,
) -> Vec<TableRow> {
    let r = &info.resources;
    let room = rt
        .caps()
        .smem_per_block_optin
        .saturating_sub(r.static_smem_bytes);
    let mut rows = Vec::new();
    let mut block = 32;
    while block <= r.max_threads_per_block {
        for d in dynamic_sizes(room) {
            match rt.driver_occupancy(h, block, d) {
                Ok(n) => rows.push(TableRow {
                    regs_per_thread: r.regs_per_thread,
                    block_size: block,
                    dynamic_smem_bytes: d,
                    static_smem_bytes: r.static_smem_bytes,
                    blocks_per_sm_driver: n,
                }),
                Err(e) => errors.push(format!(
                    "{}: block {block} dyn {d}: {}",
                    h.name,
                    first_line(&e)
                )),
            }
        }
        block += 32;
    }
    rows
}

/// The whole selftest over `files`; `root` widens where their `file` inputs may come from
/// (`--root DIR`; None: each Program's folder).
pub fn selftest(
    rt: &mut Runtime,
    files: &[PathBuf],
    repeat: u32,
    faults: bool,
    root: Option<&Path>,
) -> SelftestReport {
    let mut fixtures = Vec::new();
    let mut occ = OccupancyCheck {
        cases: 0,
        agreed: 0,
        disagreements: Vec::new(),
        errors: Vec::new(),
    };
    for f in files {
        let (res, kernel) = selftest_fixture(rt, f, repeat, root);
        fixtures.push(res);
        if let Some((h, info)) = kernel {
            let rows = driver_rows(rt, &h, &info, &mut occ.errors);
            let cmp = compare_rows(rt.caps(), &rows);
            occ.cases += cmp.rows as u64;
            occ.agreed += (cmp.rows - cmp.mismatches.len()) as u64;
            for m in cmp
                .mismatches
                .iter()
                .take(20usize.saturating_sub(occ.disagreements.len()))
            {
                occ.disagreements.push(format!(
                    "{}: regs {} block {} dyn {} static {} -> estimate {} vs driver {}",
                    h.name,
                    m.row.regs_per_thread,
                    m.row.block_size,
                    m.row.dynamic_smem_bytes,
                    m.row.static_smem_bytes,
                    m.estimated,
                    m.row.blocks_per_sm_driver
                ));
            }
        }
    }
    let fault_steps = if faults {
        // Through a GPU worker process: a sticky fault there leaves this process's
        // context (and the rest of the selftest) untouched.
        let mut w = crate::runtime::GpuWorker::new();
        w.set_device(rt.ordinal());
        crate::runtime::fault::fault_check(&mut w)
    } else {
        Vec::new()
    };
    let passed = fixtures.iter().all(|f| f.passed)
        && occ.cases > 0
        && occ.agreed == occ.cases
        && occ.errors.is_empty()
        && fault_steps.iter().all(|s| s.ok);
    SelftestReport {
        device: rt.caps().clone(),
        fixtures,
        occupancy: occ,
        faults: fault_steps,
        passed,
    }
}

/// The fixture table as markdown (for BENCHMARKS.md and the terminal).
pub fn fixture_table(rep: &SelftestReport) -> String {
    let mut s = String::from("| fixture | regs | spills (B) | device ms | jit ms | parity |\n|---|---:|---:|---:|---:|---|\n");
    for f in &rep.fixtures {
        s.push_str(&format!(
            "| {} | {} | {} | {:.4} | {:.1} | {}{} |\n",
            f.fixture,
            f.regs,
            f.spills,
            f.device_ms,
            f.jit_ms,
            if f.passed { "" } else { "**FAIL** " },
            f.parity
        ));
    }
    s
}
