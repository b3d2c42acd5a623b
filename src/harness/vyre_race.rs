//! `vyrescope selftest --vyre`: our kernel and vyre's kernel for the same Programs, on the
//! same inputs, both verified against the reference interpreter and timed side by side.
//!
//! vyre's kernel is the Program exported to vyre ([`crate::vyre::export`]) and emitted by
//! vyre's own crates ([`crate::vyre::vyre_ptx`]), JIT-compiled as kernel `main` and launched
//! in vyre's ABI: one `.u64` device pointer per host buffer in vyre's parameter order, then
//! a pointer to a device `u32` array `params_buf` whose word 0 is the dispatch element count
//! and word `1 + binding` the element count of that binding. Word 0 is `grid.x * wg.x`, so
//! every thread of our launch runs (vyre's own `grid_override` does the same).
//!
//! Timing: after a warm-up launch of each, `rounds` rounds each launch ours once and vyre's
//! once, back to back on their own resident copies of the inputs, with CUDA events around
//! each launch; the table gives the medians and the ratio ours / vyre's.

use std::path::Path;

use serde::Serialize;

use crate::inputs::{self, HostBuffer, PreparedRun};
use crate::runtime::dispatch::TimingStats;
use crate::runtime::execute::tolerance_for;
use crate::runtime::parity::{self, ParityReport};
use crate::runtime::{DispatchOptions, JitOptions, Result, Runtime, RuntimeError};

/// The Programs `selftest --vyre` races by default.
pub const VYRE_RACE_PROGRAMS: [&str; 4] = [
    "fixtures/programs/vadd_f32.json",
    "fixtures/programs/saxpy_f32.json",
    "fixtures/programs/reduce_sum_f32.json",
    "benches/gpu/vyre/histogram_global_u32.json",
];

/// One Program's race.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RaceRow {
    /// Program name.
    pub program: String,
    /// Invocations.
    pub elements: u64,
    /// Grid and workgroup.
    pub grid: [u32; 3],
    /// Workgroup size.
    pub workgroup: [u32; 3],
    /// Registers per thread: ours, vyre's.
    pub regs: [u32; 2],
    /// Device time of ours.
    pub ours_ms: TimingStats,
    /// Device time of vyre's.
    pub vyre_ms: TimingStats,
    /// Median of ours / median of vyre's (below 1: ours is faster).
    pub ratio: f64,
    /// Ours against the reference interpreter.
    pub ours_parity: ParityReport,
    /// vyre's against the reference interpreter.
    pub vyre_parity: ParityReport,
}

/// A Program that could not race, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RaceSkip {
    /// File.
    pub file: String,
    /// The error.
    pub error: String,
}

/// The whole race.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct RaceReport {
    /// Programs raced.
    pub rows: Vec<RaceRow>,
    /// Programs that failed (export, vyre's PTX, JIT, launch).
    pub failed: Vec<RaceSkip>,
    /// True when every row's both results matched the reference and nothing failed.
    pub passed: bool,
}

/// Races every file of `files` (format-1 Programs with a `run` section), at `elements`
/// invocations when given.
pub fn vyre_race(
    rt: &mut Runtime,
    files: &[std::path::PathBuf],
    elements: Option<u64>,
    rounds: u32,
) -> RaceReport {
    let mut rep = RaceReport::default();
    for f in files {
        match race_one(rt, f, elements, rounds) {
            Ok(row) => rep.rows.push(row),
            Err(e) => rep.failed.push(RaceSkip {
                file: f.display().to_string(),
                error: e.to_string(),
            }),
        }
    }
    rep.passed = rep.failed.is_empty()
        && !rep.rows.is_empty()
        && rep
            .rows
            .iter()
            .all(|r| r.ours_parity.passed && r.vyre_parity.passed);
    rep
}

fn race_one(rt: &mut Runtime, file: &Path, elements: Option<u64>, rounds: u32) -> Result<RaceRow> {
    let p = crate::ir::load_program(file).map_err(|e| RuntimeError::Other(e.into()))?;
    let p = match elements {
        Some(n) => super::bench::with_elements(&p, n),
        None => p,
    };
    let base = file.parent().unwrap_or(Path::new("."));
    let PreparedRun { shape, buffers } = inputs::prepare(&p, base, None, None)?;
    // vyre's kernel.
    let vp = crate::vyre::export(&p).map_err(|e| RuntimeError::Other(e.into()))?;
    let sm = rt.caps().cc_major * 10 + rt.caps().cc_minor;
    let vk = crate::vyre::vyre_ptx(&vp, sm).map_err(|e| RuntimeError::Other(e.into()))?;
    if vk.grid_sync {
        return Err(RuntimeError::Other(crate::util::Problem::new(format!("`{}`: vyre's kernel has a grid barrier on a module-scope counter, which this race does not reset between launches", p.name), "race Programs without grid barriers")));
    }
    let (vh, vinfo) = rt.load_kernel(&vk.ptx, "main", &JitOptions::default())?;
    // Our kernel.
    let c = rt.compile_program(&p, shape.workgroup_size, &JitOptions::default())?;
    let opts = DispatchOptions {
        useful_invocations: Some(shape.invocations()),
        ..DispatchOptions::default()
    };
    // Reference.
    let mut reference = buffers.clone();
    let interp_opts = crate::interp::Options {
        fuel: 1 << 44,
        parallel: true,
    };
    crate::interp::run_with(&p, &shape, &mut reference, &interp_opts)?;
    let tol = tolerance_for(&p);
    // vyre's parameter list: buffer pointers by name, then params_buf.
    let order: Vec<usize> = vk
        .params
        .iter()
        .map(|n| {
            buffers.iter().position(|b| &b.name == n).ok_or_else(|| {
                RuntimeError::Other(crate::util::Problem::bug(format!(
                    "vyre's kernel takes buffer `{n}`, which the Program does not have"
                )))
            })
        })
        .collect::<Result<_>>()?;
    let words = params_words(&buffers, &shape);
    let pbuf = HostBuffer {
        name: "params_buf".into(),
        elem: crate::ir::ElemType::U32,
        access: crate::ir::Access::Read,
        binding: 0,
        data: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
    };
    let ours_set = rt.upload(&buffers)?;
    let vyre_set = rt.upload(&buffers)?;
    let pset = rt.upload(std::slice::from_ref(&pbuf))?;
    let result = (|| {
        let ptrs = rt.resident_pointers(&vyre_set)?;
        let pptr = rt.resident_pointers(&pset)?;
        let mut args: Vec<u64> = order.iter().map(|&i| ptrs[i]).collect();
        args.push(pptr[0]);
        // First launch of each on fresh inputs: verified.
        rt.launch_resident(&c.handle, &c.emitted.abi, &shape, &ours_set, 1, &opts)?;
        rt.launch_foreign(&vh, &shape, &args, false, 1, true)?;
        let mut ours_out = buffers.clone();
        rt.download(&ours_set, &mut ours_out)?;
        let mut vyre_out = buffers.clone();
        rt.download(&vyre_set, &mut vyre_out)?;
        let ours_parity = parity::compare(&ours_out, &reference, tol);
        let vyre_parity = parity::compare(&vyre_out, &reference, tol);
        // Interleaved timed rounds.
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..rounds.max(1) {
            let t = rt.launch_resident(&c.handle, &c.emitted.abi, &shape, &ours_set, 1, &opts)?;
            a.extend(t.iter().filter_map(|t| t.device_ms));
            let t = rt.launch_foreign(&vh, &shape, &args, false, 1, true)?;
            b.extend(t.iter().filter_map(|t| t.device_ms));
        }
        Ok::<_, RuntimeError>((ours_parity, vyre_parity, a, b))
    })();
    rt.release(ours_set);
    rt.release(vyre_set);
    rt.release(pset);
    let (ours_parity, vyre_parity, a, b) = result?;
    let ours_ms = TimingStats::of(&a);
    let vyre_ms = TimingStats::of(&b);
    let ratio = if vyre_ms.median_ms > 0.0 {
        ours_ms.median_ms / vyre_ms.median_ms
    } else {
        f64::NAN
    };
    Ok(RaceRow {
        program: p.name.clone(),
        elements: shape.invocations(),
        grid: shape.grid,
        workgroup: shape.workgroup_size,
        regs: [
            c.info.resources.regs_per_thread,
            vinfo.resources.regs_per_thread,
        ],
        ours_ms,
        vyre_ms,
        ratio,
        ours_parity,
        vyre_parity,
    })
}

/// vyre's `params_buf` words for `buffers` (binding order) launched as `shape`: word 0 the
/// dispatch element count (`grid.x * wg.x`), word `1 + binding` each binding's count.
pub fn params_words(buffers: &[HostBuffer], shape: &crate::shape::LaunchShape) -> Vec<u32> {
    let top = buffers.iter().map(|b| b.binding).max().unwrap_or(0);
    let mut w = vec![0u32; top as usize + 2];
    w[0] = shape.grid[0].saturating_mul(shape.workgroup_size[0]);
    for b in buffers {
        w[1 + b.binding as usize] = b.len() as u32;
    }
    w
}

/// The race as a table.
pub fn race_table(r: &RaceReport) -> String {
    let mut s = format!(
        "{:<22} {:>10} {:>9} {:>11} {:>11} {:>7} {:>9} {:>9}\n",
        "program", "elements", "regs", "ours ms", "vyre ms", "ratio", "ours ok", "vyre ok"
    );
    for row in &r.rows {
        s += &format!(
            "{:<22} {:>10} {:>4}/{:<4} {:>11.4} {:>11.4} {:>7.3} {:>9} {:>9}\n",
            row.program,
            row.elements,
            row.regs[0],
            row.regs[1],
            row.ours_ms.median_ms,
            row.vyre_ms.median_ms,
            row.ratio,
            verdict(&row.ours_parity),
            verdict(&row.vyre_parity),
        );
    }
    for f in &r.failed {
        s += &format!("FAILED {}: {}\n", f.file, f.error);
    }
    s += if r.passed {
        "vyre race PASSED (both kernels matched the reference on every Program)\n"
    } else {
        "vyre race FAILED\n"
    };
    s
}

fn verdict(p: &ParityReport) -> String {
    if p.passed {
        "yes".into()
    } else {
        format!("{} bad", p.mismatches)
    }
}
