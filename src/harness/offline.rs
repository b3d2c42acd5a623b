//! Tuning without a GPU (`vyrescope tune --offline`, the inspector's `t` with no driver):
//! per candidate workgroup size, the kernel emitted for that size, its registers (`ptxas -v`
//! when installed, else the PTX estimate), the occupancy on a device profile, the
//! instruction mix (SASS with ptxas and nvdisasm, else the PTX), and whether the size keeps
//! the Program's results ([`super::preserve`]). Nothing is timed: every figure is an
//! estimate and is labelled so.
//!
//! [`kernel_resources`] is also the one place `occupancy` gets a kernel's resources from.

use serde::Serialize;

use super::preserve::{preserves, Inputs, Preservation};
use crate::emit::{
    emit_valid, ptxas, reg_estimate, validated, EmitError, EmitOptions, EmittedKernel,
};
use crate::ir::Program;
use crate::occupancy::{estimate, DeviceCaps, KernelResources};
use crate::sass::classify::{Class, Mix};
use crate::util::Problem;
use crate::validate::ProgramInfo;

/// What every offline result says about itself.
pub const ESTIMATE_LABEL: &str =
    "estimate without a GPU: nothing was timed (registers, occupancy and instruction counts only); `vyrescope tune FILE` on a GPU measures";

/// Where a kernel's resources came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResourceSource {
    /// One line for a report (`ptxas -v for sm_90`, the estimate's note, `--regs 40`).
    pub text: String,
    /// True when the registers are the offline estimate (no ptxas, no `--regs`).
    pub estimated: bool,
}

/// A kernel's resources: `regs` when given (static shared memory from the PTX), else
/// `ptxas -v`, else the estimate from the PTX when ptxas is not installed.
pub fn kernel_resources(
    kernel: &EmittedKernel,
    sm: u32,
    regs: Option<u32>,
) -> Result<(KernelResources, ResourceSource), Problem> {
    if let Some(n) = regs {
        let res = KernelResources {
            regs_per_thread: n,
            ..reg_estimate::estimate_resources(&kernel.ptx)
        };
        let text = format!("--regs {n}; static shared memory from the PTX");
        return Ok((
            res,
            ResourceSource {
                text,
                estimated: false,
            },
        ));
    }
    match ptxas::offline_resources(&kernel.ptx, sm) {
        Ok(o) => Ok((
            crate::diagnostics::compile::resources_from_ptxas(&o),
            ResourceSource {
                text: format!("ptxas -v for {}", o.arch),
                estimated: false,
            },
        )),
        Err(ptxas::PtxasError::NotFound) => Ok((
            reg_estimate::estimate_resources(&kernel.ptx),
            ResourceSource {
                text: reg_estimate::ESTIMATED_NOTE.to_string(),
                estimated: true,
            },
        )),
        Err(e) => Err(Problem::from(e).context(format_args!(
            "no kernel resources for `{}`",
            kernel.kernel_name
        ))),
    }
}

/// One candidate of an offline sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfflineRow {
    /// Workgroup size.
    pub workgroup: [u32; 3],
    /// Registers per thread (None when the kernel could not be emitted).
    pub registers: Option<u32>,
    /// Estimated occupancy, percent (0 when it cannot launch).
    pub occupancy_pct: f64,
    /// Why it cannot launch on the device, when it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_launch: Option<String>,
    /// Instructions per class.
    pub mix: Option<Mix>,
    /// Does this size keep the Program's results (against its own size)?
    pub results: Preservation,
}

impl OfflineRow {
    /// Can it be suggested: it launches and keeps the results (the own size always does).
    pub fn usable(&self) -> bool {
        self.cannot_launch.is_none() && self.registers.is_some() && self.results.is_preserved()
    }
}

/// A whole offline sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OfflineTune {
    /// Program name.
    pub program: String,
    /// Device profile.
    pub device: String,
    /// The Program's own workgroup size.
    pub default_workgroup: [u32; 3],
    /// Where the registers came from (`ptxas -v for sm_90`, or the estimate's note).
    pub registers_source: String,
    /// Where the instruction mix came from (`SASS (nvdisasm)` or `PTX`).
    pub mix_source: String,
    /// Candidates in the order given (the own size added when missing).
    pub rows: Vec<OfflineRow>,
    /// The suggestion: the highest estimated occupancy among sizes that launch and keep the
    /// results; among equals the smallest of at least 128 threads, else the largest.
    pub suggested: Option<[u32; 3]>,
    /// [`ESTIMATE_LABEL`].
    pub label: &'static str,
}

/// Called after each candidate of a sweep with (candidates done, candidates in all), from
/// whichever thread finished it.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Sweeps `candidates` for `program` on `caps` (described as `device`) without a GPU. The
/// candidates are estimated in parallel (each its own emission, `ptxas` and `nvdisasm` runs
/// and reference run); `progress` hears of each one done. Results are compared only for sizes
/// that can launch.
pub fn tune_offline(
    program: &Program,
    inputs: &Inputs,
    candidates: &[[u32; 3]],
    caps: &DeviceCaps,
    device: &str,
    progress: Option<Progress<'_>>,
) -> OfflineTune {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let sm = (caps.cc_major * 10 + caps.cc_minor).min(90);
    let own = program.workgroup_size;
    let mut wanted = candidates.to_vec();
    if !wanted.contains(&own) {
        wanted.push(own);
    }
    // The own size's reference run, once, before the candidates compare against it.
    super::preserve::own_outputs(program, inputs);
    // Validated once for every candidate: each emits from the same facts.
    let info = validated(program);
    let done = AtomicUsize::new(0);
    let found: Vec<(OfflineRow, Option<String>, Option<&'static str>)> = wanted
        .par_iter()
        .map(|&wg| {
            let r = candidate(program, &info, inputs, wg, caps, sm);
            if let Some(report) = progress {
                report(done.fetch_add(1, Ordering::Relaxed) + 1, wanted.len());
            }
            r
        })
        .collect();
    let reg_source = found.iter().find_map(|f| f.1.clone()).unwrap_or_default();
    let mix_source = found
        .iter()
        .find_map(|f| f.2)
        .unwrap_or_default()
        .to_string();
    let rows: Vec<OfflineRow> = found.into_iter().map(|f| f.0).collect();
    let suggested = suggest(&rows);
    OfflineTune {
        program: program.name.clone(),
        device: device.to_string(),
        default_workgroup: own,
        registers_source: reg_source,
        mix_source,
        rows,
        suggested,
        label: ESTIMATE_LABEL,
    }
}

/// Why a size that cannot launch has no results verdict.
pub const NOT_LAUNCHED: &str = "the size cannot launch";

/// One candidate: its row, where its registers came from and where its mix came from.
/// `info` is the validator's verdict on `program` (an invalid Program launches at no size).
fn candidate(
    program: &Program,
    info: &Result<ProgramInfo, EmitError>,
    inputs: &Inputs,
    wg: [u32; 3],
    caps: &DeviceCaps,
    sm: u32,
) -> (OfflineRow, Option<String>, Option<&'static str>) {
    let threads = wg.iter().map(|&d| u64::from(d)).product::<u64>();
    let not_launched = |why: String| OfflineRow {
        workgroup: wg,
        registers: None,
        occupancy_pct: 0.0,
        cannot_launch: Some(why),
        mix: None,
        results: Preservation::NotChecked {
            why: NOT_LAUNCHED.into(),
        },
    };
    let opts = EmitOptions {
        sm,
        workgroup_size: wg,
        lineinfo: false,
        unroll: true,
        grid_barrier: Default::default(),
        version_bounds: false,
    };
    let kernel = match info
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|i| emit_valid(i, &opts))
    {
        Ok(k) => k,
        Err(e) => return (not_launched(e.to_string()), None, None),
    };
    let (res, src) = match kernel_resources(&kernel, sm, None) {
        Ok(r) => r,
        Err(p) => return (not_launched(p.message), None, None),
    };
    let e = estimate(caps, &res, u32::try_from(threads).unwrap_or(u32::MAX), 0);
    let (mix, from) = instruction_mix(&kernel, sm);
    let cannot_launch = e
        .launchable
        .as_ref()
        .err()
        .map(|u| u.to_string().lines().next().unwrap_or("").to_string());
    // A results verdict only for a size that can run.
    let results = match cannot_launch {
        None => preserves(program, inputs, wg),
        Some(_) => Preservation::NotChecked {
            why: NOT_LAUNCHED.into(),
        },
    };
    let row = OfflineRow {
        workgroup: wg,
        registers: Some(res.regs_per_thread),
        occupancy_pct: if cannot_launch.is_none() {
            e.occupancy_pct
        } else {
            0.0
        },
        cannot_launch,
        mix: Some(mix),
        results,
    };
    (row, Some(src.text), Some(from))
}

fn suggest(rows: &[OfflineRow]) -> Option<[u32; 3]> {
    let threads = |w: [u32; 3]| w.iter().map(|&d| u64::from(d)).product::<u64>();
    let best = rows
        .iter()
        .filter(|r| r.usable())
        .map(|r| r.occupancy_pct)
        .max_by(f64::total_cmp)?;
    let mut tied: Vec<[u32; 3]> = rows
        .iter()
        .filter(|r| r.usable() && r.occupancy_pct == best)
        .map(|r| r.workgroup)
        .collect();
    tied.sort_by_key(|w| threads(*w));
    tied.iter()
        .copied()
        .find(|w| threads(*w) >= 128)
        .or_else(|| tied.last().copied())
}

/// The kernel's instruction mix: SASS when ptxas and nvdisasm are installed, else its PTX
/// instructions by the same classes (a coarser count: ptxas expands, fuses and schedules).
fn instruction_mix(kernel: &EmittedKernel, sm: u32) -> (Mix, &'static str) {
    if let Ok(l) = crate::sass::disassemble(kernel, sm) {
        let mut m = Mix::default();
        for i in &l.instructions {
            m.add(i.class);
        }
        return (m, "SASS (ptxas + nvdisasm)");
    }
    (
        ptx_mix(&kernel.ptx),
        "PTX (no ptxas/nvdisasm: SASS counts need both)",
    )
}

/// PTX instructions by class: memory (`ld st atom red membar fence cp prefetch`), control
/// (`bra ret exit bar barrier call`), conversion (`cvt cvta`), special (warp-wide and
/// special-function ops: `shfl vote activemask match redux ex2 lg2 sin cos rsqrt rcp.approx
/// tanh`), the rest arithmetic. Directives, labels, braces and comments are not counted.
pub fn ptx_mix(ptx: &str) -> Mix {
    let mut m = Mix::default();
    for line in ptx.lines() {
        let t = line.trim();
        if t.is_empty()
            || t.starts_with("//")
            || t.starts_with('.')
            || t.starts_with('{')
            || t.starts_with('}')
            || t.ends_with(':')
        {
            continue;
        }
        let t = match t.strip_prefix('@') {
            Some(rest) => rest
                .split_once(char::is_whitespace)
                .map_or("", |(_, r)| r.trim()),
            None => t,
        };
        let op = t
            .split(|c: char| c.is_whitespace() || c == ';')
            .next()
            .unwrap_or("");
        let base = op.split('.').next().unwrap_or(op);
        let class = match base {
            "ld" | "st" | "atom" | "red" | "membar" | "fence" | "cp" | "prefetch" => Class::Memory,
            "bra" | "ret" | "exit" | "bar" | "barrier" | "call" => Class::Control,
            "cvt" | "cvta" => Class::Conversion,
            "shfl" | "vote" | "activemask" | "match" | "redux" | "ex2" | "lg2" | "sin" | "cos"
            | "rsqrt" | "tanh" => Class::Special,
            "rcp" if op.contains("approx") => Class::Special,
            "" => continue,
            _ => Class::Arithmetic,
        };
        m.add(class);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_mix_counts_instructions_by_class() {
        let ptx = "\t.reg .b32 %r<4>;\n$L1:\n\tld.global.f32 %f1, [%rd1];\n\t@%p1 bra $L1;\n\tcvt.u32.u64 %r1, %rd1;\n\tadd.s32 %r2, %r1, 1;\n\tshfl.sync.bfly.b32 %r3, %r2, 1, 31, -1;\n\t// comment\n\tret;\n}\n";
        let m = ptx_mix(ptx);
        assert_eq!(
            (m.memory, m.control, m.conversion, m.arithmetic, m.special),
            (1, 2, 1, 1, 1)
        );
    }
}
