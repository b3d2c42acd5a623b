//! The one seam between the inspector and the live CUDA side of the library (`runtime`) and
//! the device profiles (`occupancy`): probe, dispatch with verification, tune sweeps, cache
//! statistics and telemetry. Everything here returns inspector view models (plain rows and
//! numbers), so wiring a newer runtime API changes this file only.
//!
//! When the runtime is absent (not in this build, or no CUDA driver on this machine) every
//! function returns `Err(reason)`: one line the panels show as is.

use std::path::Path;

use serde::Serialize;

use crate::emit::EmitOptions;
use crate::ir::Program;
use crate::occupancy::DeviceCaps;

/// Why the live panels are empty in this build.
pub const NO_RUNTIME: &str =
    "no CUDA runtime in this build (crate::runtime not linked) - press r on a build with the CUDA backend and a GPU";

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
    /// Target sm the PTX was emitted for.
    pub sm: u32,
    /// Kernel time from CUDA events.
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
    /// Why it could not launch, or "best".
    pub note: String,
}

/// Named counters (cache statistics, telemetry), in display order.
pub type Counters = Vec<(String, String)>;

/// Probes the live device.
pub fn probe() -> Result<DeviceCaps, String> {
    Err(NO_RUNTIME.to_string())
}

/// Emits, JITs, dispatches `program` with `opts` and verifies it against the reference
/// interpreter; `base_dir` resolves `file` inputs.
pub fn dispatch(
    program: &Program,
    base_dir: &Path,
    opts: &EmitOptions,
) -> Result<RunRecord, String> {
    let _ = (program, base_dir, opts);
    Err(NO_RUNTIME.to_string())
}

/// Times every workgroup-size candidate on the live GPU; `progress(done, total)` is called
/// after each.
pub fn tune(
    program: &Program,
    base_dir: &Path,
    opts: &EmitOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<TuneRow>, String> {
    let _ = (program, base_dir, opts, progress);
    Err(NO_RUNTIME.to_string())
}

/// PTX and module cache statistics since start.
pub fn cache_stats() -> Result<Counters, String> {
    Err(NO_RUNTIME.to_string())
}

/// Runtime telemetry counters since start.
pub fn telemetry() -> Result<Counters, String> {
    Err(NO_RUNTIME.to_string())
}

/// Offline device profiles (name, caps) for `d`, in display order.
pub fn device_profiles() -> Vec<(String, DeviceCaps)> {
    Vec::new()
}

/// Loads a device profile from a JSON file (`--device FILE`).
pub fn load_device_file(path: &Path) -> Result<DeviceCaps, String> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read device profile {}: {e}\n  Fix: check the path",
            path.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{} is not a device profile: {e}\n  Fix: use a file written by `vyrescope probe --json`",
            path.display()
        )
    })
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
