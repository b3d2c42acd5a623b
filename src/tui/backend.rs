//! The one seam between the inspector and the live CUDA side of the library (`runtime`) and
//! the device profiles (`occupancy`): probe, dispatch with verification, tune sweeps, cache
//! statistics and telemetry. Everything here returns inspector view models (plain rows and
//! numbers), so wiring a newer runtime API changes this file only.
//!
//! When the runtime is absent (not in this build, or no CUDA driver on this machine) every
//! function returns `Err(reason)`: one line the panels show as is.

use std::cell::RefCell;
use std::path::Path;

use serde::Serialize;

use crate::emit::{ptxas, EmitOptions, EmittedKernel};
use crate::inputs;
use crate::interp;
use crate::ir::Program;
use crate::occupancy::{estimate, profiles, DeviceCaps, KernelResources};
use crate::runtime::dispatch::DispatchOptions;
use crate::runtime::jit::JitOptions;
use crate::runtime::{parity, Runtime};

use super::analysis::{threads, Resources};

/// Why the live panels are empty before the first probe.
pub const NO_RUNTIME: &str = "no dispatch yet - press r to run on the GPU";

thread_local! {
    // The runtime lives on the thread that does GPU work (the worker, or the main thread in
    // a headless replay): opened on first use, kept for the caches and telemetry.
    static RUNTIME: RefCell<Option<Result<Runtime, String>>> = const { RefCell::new(None) };
}

fn with_runtime<T>(f: impl FnOnce(&mut Runtime) -> Result<T, String>) -> Result<T, String> {
    RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Runtime::open(0).map_err(|e| e.to_string()));
        }
        match slot.as_mut() {
            Some(Ok(rt)) => f(rt),
            Some(Err(e)) => Err(e.clone()),
            None => Err("runtime not opened".into()),
        }
    })
}

fn runtime_is_open() -> bool {
    RUNTIME.with(|cell| matches!(&*cell.borrow(), Some(Ok(_))))
}

/// Result of verifying a GPU dispatch against the reference interpreter.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Parity {
    /// True when every element matched (within the documented ULP bound).
    pub ok: bool,
    /// Elements that differ.
    pub mismatches: u64,
    /// First mismatches, as `buffer[index]: gpu=.. ref=..`.
    pub first: Vec<String>,
}

/// One dispatch, as the Run tab lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunRecord {
    /// Program name.
    pub program: String,
    /// Workgroups.
    pub grid: [u32; 3],
    /// Threads per workgroup.
    pub workgroup: [u32; 3],
    /// Target sm the PTX was emitted for (the device's).
    pub sm: u32,
    /// Kernel time from CUDA events (median over the launches).
    pub device_ms: f64,
    /// JIT time (0 when the module came from the cache).
    pub jit_ms: f64,
    /// Verification against the reference interpreter.
    pub parity: Option<Parity>,
}

/// One tune candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TuneRow {
    /// Workgroup size tried.
    pub workgroup: [u32; 3],
    /// Median device time; `None` when it could not launch.
    pub median_ms: Option<f64>,
    /// Estimated occupancy.
    pub occupancy_pct: Option<f64>,
    /// Speedup against the program's default size.
    pub speedup: Option<f64>,
    /// Why it could not launch, "mismatch", "best" or empty.
    pub note: String,
}

/// Named counters (cache statistics, telemetry), in display order.
pub type Counters = Vec<(String, String)>;

/// Probes the live device (opening the runtime on this thread).
pub fn probe() -> Result<DeviceCaps, String> {
    with_runtime(|rt| Ok(rt.caps().clone()))
}

/// Kernel resources of `kernel`: from the live driver when a runtime is open here (and the
/// PTX loads for it), else from `ptxas -v` for `sm`.
pub fn kernel_resources(kernel: &EmittedKernel, sm: u32) -> Resources {
    let mut why = String::from("no GPU probed");
    if runtime_is_open() {
        match with_runtime(|rt| {
            rt.load_kernel(&kernel.ptx, &kernel.kernel_name, &JitOptions::default())
                .map_err(|e| e.to_string())
        }) {
            Ok((_, info)) => return Ok((info.resources, "live driver".into())),
            Err(e) => why = format!("live driver: {}", e.lines().next().unwrap_or("")),
        }
    }
    match ptxas::offline_resources(&kernel.ptx, sm) {
        Ok(o) => Ok((
            KernelResources {
                regs_per_thread: o.registers,
                static_smem_bytes: o.shared_bytes,
                local_bytes: o.stack_frame.max(o.spill_stores),
                const_bytes: o.constant_bytes,
                max_threads_per_block: 0,
            },
            format!("ptxas -v for {}", o.arch),
        )),
        Err(ptxas::PtxasError::NotFound) => Err(format!(
            "kernel resources unknown: {why} and ptxas not found - run on a GPU machine, or export VYRESCOPE_PTXAS=$(scripts/install-ptxas.sh)"
        )),
        Err(e) => Err(format!("kernel resources unknown: {why}; {}", e.to_string().lines().next().unwrap_or(""))),
    }
}

fn parity_of(rep: &parity::ParityReport) -> Parity {
    Parity {
        ok: rep.passed,
        mismatches: rep.mismatches,
        first: rep
            .first
            .iter()
            .map(|m| {
                format!(
                    "{}[{}]: gpu={} ref={}",
                    m.buffer, m.index, m.gpu, m.reference
                )
            })
            .collect(),
    }
}

/// Float tolerance for the parity check: exact unless the program uses approximate math.
fn tolerance(program: &Program) -> Option<parity::Tolerance> {
    let mut approx = false;
    program.walk_stmts(&mut |s| {
        use crate::ir::StmtKind as K;
        let exprs: Vec<&crate::ir::Expr> = match &s.kind {
            K::Let { value, .. } | K::Assign { value, .. } => vec![value],
            K::Store { index, value, .. } => vec![index, value],
            K::If { cond, .. } => vec![cond],
            K::Loop { from, to, .. } => vec![from, to],
            K::Barrier(_) | K::Return | K::Block(_) => vec![],
        };
        for e in exprs {
            e.visit(&mut |e| {
                if let crate::ir::Expr::Unary(op, _) = e {
                    approx |= op.is_approximate();
                }
            });
        }
    });
    approx.then_some(parity::Tolerance {
        max_ulps: 4,
        abs: 1e-12,
    })
}

/// One verified dispatch of `program` at `workgroup`, `repeat` launches.
fn dispatch_once(
    rt: &mut Runtime,
    program: &Program,
    base_dir: &Path,
    workgroup: [u32; 3],
    repeat: u32,
) -> Result<RunRecord, String> {
    let mut prepared =
        inputs::prepare(program, base_dir, Some(workgroup), None).map_err(|e| e.to_string())?;
    let compiled = rt
        .compile_program(program, workgroup, &JitOptions::default())
        .map_err(|e| e.to_string())?;
    let mut reference = prepared.buffers.clone();
    let opts = DispatchOptions {
        repeat: repeat.max(1),
        ..DispatchOptions::default()
    };
    let report = rt
        .dispatch(
            &compiled.handle,
            &compiled.emitted.abi,
            &prepared.shape,
            &mut prepared.buffers,
            &opts,
        )
        .map_err(|e| e.to_string())?;
    interp::run(program, &prepared.shape, &mut reference).map_err(|e| e.to_string())?;
    let rep = parity::compare(&prepared.buffers, &reference, tolerance(program));
    let caps = rt.caps();
    Ok(RunRecord {
        program: program.name.clone(),
        grid: prepared.shape.grid,
        workgroup,
        sm: caps.cc_major * 10 + caps.cc_minor,
        device_ms: report.device_ms.median_ms,
        jit_ms: if compiled.info.cached {
            0.0
        } else {
            compiled.info.jit_ms
        },
        parity: Some(parity_of(&rep)),
    })
}

/// Emits, JITs, dispatches `program` with `opts`' workgroup and verifies it against the
/// reference interpreter; `base_dir` resolves `file` inputs.
pub fn dispatch(
    program: &Program,
    base_dir: &Path,
    opts: &EmitOptions,
) -> Result<RunRecord, String> {
    with_runtime(|rt| dispatch_once(rt, program, base_dir, opts.workgroup_size, 5))
}

/// Candidate workgroups of a tune sweep: powers of two and multiples of 128 from 32 up to
/// the device limit, keeping the program's y and z.
pub fn candidates(program: &Program, max_threads: u32) -> Vec<[u32; 3]> {
    let [_, y, z] = program.workgroup_size;
    let yz = (y * z).max(1);
    let mut xs: Vec<u32> = vec![32, 64, 96, 128, 192, 256, 384, 512, 640, 768, 896, 1024];
    xs.retain(|x| x * yz <= max_threads.max(32));
    if !xs.contains(&program.workgroup_size[0]) && program.workgroup_size[0] * yz <= max_threads {
        xs.push(program.workgroup_size[0]);
        xs.sort_unstable();
    }
    xs.into_iter().map(|x| [x, y, z]).collect()
}

/// Times every workgroup-size candidate on the live GPU (each verified); `progress(done,
/// total)` is called after each.
pub fn tune(
    program: &Program,
    base_dir: &Path,
    opts: &EmitOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<TuneRow>, String> {
    let _ = opts;
    with_runtime(|rt| {
        let caps = rt.caps().clone();
        let cands = candidates(program, caps.max_threads_per_block);
        let total = cands.len();
        let mut rows = Vec::with_capacity(total);
        for (i, wg) in cands.into_iter().enumerate() {
            let row = match dispatch_once(rt, program, base_dir, wg, 10) {
                Ok(r) => {
                    let ok = r.parity.as_ref().is_none_or(|p| p.ok);
                    let occ = rt
                        .compile_program(program, wg, &JitOptions::default())
                        .ok()
                        .map(|c| estimate(&caps, &c.info.resources, threads(wg), 0).occupancy_pct);
                    TuneRow {
                        workgroup: wg,
                        median_ms: Some(r.device_ms),
                        occupancy_pct: occ,
                        speedup: None,
                        note: if ok { String::new() } else { "mismatch".into() },
                    }
                }
                Err(e) => TuneRow {
                    workgroup: wg,
                    median_ms: None,
                    occupancy_pct: None,
                    speedup: None,
                    note: e.lines().next().unwrap_or("failed").to_string(),
                },
            };
            rows.push(row);
            progress(i + 1, total);
        }
        let base = rows
            .iter()
            .find(|r| r.workgroup == program.workgroup_size && r.note.is_empty())
            .and_then(|r| r.median_ms);
        for r in &mut rows {
            r.speedup = match (base, r.median_ms) {
                (Some(b), Some(m)) if m > 0.0 && r.note.is_empty() => Some(b / m),
                _ => None,
            };
        }
        let best = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.note.is_empty())
            .filter_map(|(i, r)| r.median_ms.map(|m| (i, m)))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i);
        if let Some(i) = best {
            rows[i].note = "best".into();
        }
        Ok(rows)
    })
}

/// PTX and module cache statistics since the runtime opened.
pub fn cache_stats() -> Result<Counters, String> {
    with_runtime(|rt| Ok(counters_of(&rt.cache_report())))
}

/// Runtime telemetry counters since it opened.
pub fn telemetry() -> Result<Counters, String> {
    with_runtime(|rt| Ok(counters_of(rt.telemetry())))
}

/// Bundled device profiles (name, caps) for `d`, in display order.
pub fn device_profiles() -> Vec<(String, DeviceCaps)> {
    profiles::names()
        .into_iter()
        .filter_map(|n| {
            profiles::bundled(n)
                .and_then(Result::ok)
                .map(|c| (n.to_string(), c))
        })
        .collect()
}

/// Index of the default offline profile in [`device_profiles`].
pub fn default_profile(list: &[(String, DeviceCaps)]) -> usize {
    list.iter()
        .position(|(n, _)| n == profiles::DEFAULT_PROFILE)
        .unwrap_or(0)
}

/// Loads a device profile from a JSON file (`--device FILE`).
pub fn load_device_file(path: &Path) -> Result<DeviceCaps, String> {
    profiles::load(&path.display().to_string()).map_err(|e| e.to_string())
}

/// Flattens any serializable statistics struct into display rows (`a.b = 3`), so the panels
/// follow whatever fields the runtime reports.
pub fn counters_of<T: Serialize>(value: &T) -> Counters {
    fn walk(prefix: &str, v: &serde_json::Value, out: &mut Counters) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
            other => out.push((prefix.to_string(), other.to_string())),
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(value) {
        walk("", &v, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_flatten_nested_objects_in_order() {
        #[derive(Serialize)]
        struct Inner {
            hits: u32,
            bytes: u64,
        }
        #[derive(Serialize)]
        struct Outer {
            ptx: Inner,
            name: &'static str,
        }
        let rows = counters_of(&Outer {
            ptx: Inner {
                hits: 3,
                bytes: 4096,
            },
            name: "x",
        });
        let keys: Vec<_> = rows.iter().map(|r| r.0.as_str()).collect();
        assert!(
            keys.contains(&"ptx.hits") && keys.contains(&"ptx.bytes") && keys.contains(&"name")
        );
        assert!(rows.contains(&("ptx.bytes".into(), "4096".into())));
    }
}
