//! Program-level execution on the GPU: inputs -> PTX -> module -> dispatch -> parity with
//! the reference interpreter. Shared by `run --backend cuda`, `selftest` and `tune`.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::dispatch::DispatchReport;
use super::jit::CompiledProgram;
use super::parity::{self, ParityReport, Tolerance};
use super::{DispatchOptions, JitOptions, Result, Runtime};
use crate::inputs::{self, HostBuffer, LaunchShape};
use crate::ir::{Expr, Program, ScalarType};

/// How to run a Program: the one request type of every executor (the reference
/// interpreter, an in-process runtime, the GPU worker, whose `RunJob` carries it as is).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Workgroup size override.
    pub workgroup: Option<[u32; 3]>,
    /// Grid override.
    pub grid: Option<[u32; 3]>,
    /// Target sm to emit for (None = the device's own).
    pub sm: Option<u32>,
    /// Launches (>= 1); the first is verified, all are timed.
    pub repeat: u32,
    /// Compare with the reference interpreter.
    pub verify: bool,
    /// Per-launch timeout (whole milliseconds on the wire, as `timeout_ms`).
    #[serde(rename = "timeout_ms", with = "millis", default)]
    pub timeout: Option<Duration>,
    /// JIT with line info.
    pub lineinfo: bool,
    /// Time launches with CUDA events (off: `device_ms` is absent).
    pub device_timing: bool,
    /// Folder `file` inputs may come from (`--root DIR`); None: the Program's folder only.
    #[serde(default)]
    pub root: Option<std::path::PathBuf>,
    /// Fuel of the reference run that verifies (`--fuel`); None: the interpreter's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fuel: Option<u64>,
}

/// `Option<Duration>` as optional whole milliseconds (the worker protocol's `timeout_ms`).
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        d.map(|t| t.as_millis() as u64).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<u64>::deserialize(d)?.map(Duration::from_millis))
    }
}

impl RunRequest {
    /// The reference interpreter's options for verifying this run: `--fuel` when given.
    pub fn reference_options(&self) -> crate::interp::Options {
        crate::interp::Options {
            fuel: self.fuel.unwrap_or(crate::interp::DEFAULT_FUEL),
            ..crate::interp::Options::default()
        }
    }
}

impl Default for RunRequest {
    fn default() -> Self {
        RunRequest {
            root: None,
            workgroup: None,
            grid: None,
            sm: None,
            repeat: 1,
            verify: false,
            timeout: None,
            lineinfo: false,
            device_timing: true,
            fuel: None,
        }
    }
}

/// What a run is doing now, for callers that watch it (the GPU worker tells its client, so
/// the client knows how long the GPU part may take before it counts as hung).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunPhase {
    /// Host work: input preparation, emission, the reference interpreter.
    Host,
    /// JIT and the launches; `budget` is the most the launches may take given the
    /// per-launch timeout (None without a timeout).
    Device {
        /// Upper bound of the launches' device time.
        budget: Option<Duration>,
    },
}

/// Everything one GPU run produced.
#[derive(Debug, Clone)]
pub struct ProgramRun {
    /// Launch shape used.
    pub shape: LaunchShape,
    /// Emitted + loaded kernel.
    pub compiled: CompiledProgram,
    /// Timings and copies.
    pub report: DispatchReport,
    /// Parity with the interpreter (when asked for).
    pub parity: Option<ParityReport>,
    /// Buffers after the first launch (GPU results).
    pub buffers: Vec<HostBuffer>,
}

/// Summary of a run for JSON output.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Device time of the launches (None without device timing).
    pub device_ms: Option<super::TimingStats>,
    /// JIT wall time (0 when cached).
    pub jit_ms: f64,
}

/// The parity bound for `program`: exact unless it uses approximate ops; then the sum of
/// the emitter's published per-op bounds (both float widths, to be safe) doubled for error
/// carried through later exact arithmetic, and the largest absolute bound.
pub fn tolerance_for(program: &Program) -> Option<Tolerance> {
    let mut ulps = 0u64;
    let mut abs = 0f64;
    program.walk_exprs(&mut |x| {
        if let Expr::Unary(op, _) = x {
            if op.is_approximate() {
                for ty in [ScalarType::F32, ScalarType::F64] {
                    let t = crate::emit::precision::tolerance(*op, ty);
                    ulps += t.max_ulp as u64;
                    abs = abs.max(t.max_abs);
                }
            }
        }
    });
    (ulps > 0).then_some(Tolerance {
        max_ulps: ulps * 2,
        abs,
    })
}

impl Runtime {
    /// Runs `program` (inputs from its `run` section, files relative to `base`).
    pub fn run_program(
        &mut self,
        program: &Program,
        base: &Path,
        req: &RunRequest,
    ) -> Result<ProgramRun> {
        self.run_program_watched(program, base, req, &mut |_| {})
    }

    /// [`Runtime::run_program`], calling `phase` as it moves between host and device work.
    pub fn run_program_watched(
        &mut self,
        program: &Program,
        base: &Path,
        req: &RunRequest,
        phase: &mut dyn FnMut(RunPhase),
    ) -> Result<ProgramRun> {
        phase(RunPhase::Host);
        let files = inputs::FileRoot {
            base,
            root: req.root.as_deref().unwrap_or(base),
        };
        let prepared = inputs::prepare_rooted(program, files, req.workgroup, req.grid)?;
        let shape = prepared.shape;
        let mut buffers = prepared.buffers;
        let reference = if req.verify {
            let mut r = buffers.clone();
            let opts = req.reference_options();
            let (_, sums) = crate::interp::run_with_sums(program, &shape, &mut r, &opts)?;
            Some((r, sums))
        } else {
            None
        };
        phase(RunPhase::Device {
            budget: req.timeout.map(|t| t * req.repeat.max(1)),
        });
        let compiled = self.compile_program_for(
            program,
            shape.workgroup_size,
            req.sm,
            &JitOptions {
                lineinfo: req.lineinfo,
                ..JitOptions::default()
            },
        )?;
        let useful = useful_invocations(program, &buffers, &shape);
        let opts = DispatchOptions {
            repeat: req.repeat.max(1),
            timeout: req.timeout,
            readback: true,
            useful_invocations: Some(useful),
            dynamic_smem: 0,
            device_timing: req.device_timing,
        };
        let report = self.dispatch(
            &compiled.handle,
            &compiled.emitted.abi,
            &shape,
            &mut buffers,
            &opts,
        )?;
        phase(RunPhase::Host);
        let parity = reference.map(|(r, sums)| {
            let p = parity::compare_with(&buffers, &r, tolerance_for(program), Some(&sums));
            self.record_parity(p.passed);
            p
        });
        Ok(ProgramRun {
            shape,
            compiled,
            report,
            parity,
            buffers,
        })
    }
}

impl Runtime {
    /// [`Runtime::dispatch`] with `buffers` in any order: each kernel parameter takes the
    /// buffer of its name (the ABI takes buffers in binding order). Every parameter must have
    /// a buffer; buffers the kernel does not take are left as they are.
    pub fn dispatch_by_name(
        &mut self,
        h: &crate::runtime::KernelHandle,
        abi: &crate::emit::KernelAbi,
        shape: &LaunchShape,
        buffers: &mut [HostBuffer],
        opts: &DispatchOptions,
    ) -> Result<super::DispatchReport> {
        self.dispatch_by_name_from(h, abi, shape, buffers, &[], opts)
    }

    /// [`Runtime::dispatch_by_name`] with buffer `i`'s input bytes taken as `sources[i]` says
    /// (see [`Runtime::dispatch_from`]).
    pub fn dispatch_by_name_from(
        &mut self,
        h: &crate::runtime::KernelHandle,
        abi: &crate::emit::KernelAbi,
        shape: &LaunchShape,
        buffers: &mut [HostBuffer],
        sources: &[inputs::Staged<'_>],
        opts: &DispatchOptions,
    ) -> Result<super::DispatchReport> {
        let order: Vec<usize> = abi
            .params
            .iter()
            .map(|p| {
                buffers
                    .iter()
                    .position(|b| b.name == p.buffer)
                    .ok_or_else(|| {
                        super::RuntimeError::Abi(crate::util::Problem::new(
                        format!("the kernel takes `{}`, which was not bound", p.buffer),
                        "bind one host buffer per kernel parameter, named as the Program names it",
                    ))
                    })
            })
            .collect::<Result<_>>()?;
        let mut abi_bufs: Vec<HostBuffer> = Vec::with_capacity(order.len());
        for &i in &order {
            let data = std::mem::take(&mut buffers[i].data);
            abi_bufs.push(HostBuffer {
                data,
                ..buffers[i].clone()
            });
        }
        let abi_sources: Vec<inputs::Staged<'_>> = order
            .iter()
            .map(|&i| sources.get(i).copied().unwrap_or_default())
            .collect();
        let r = self.dispatch_from(h, abi, shape, &mut abi_bufs, &abi_sources, opts);
        for (&i, b) in order.iter().zip(abi_bufs) {
            buffers[i].data = b.data;
        }
        r
    }
}

/// Invocations that do useful work: `run.elements` if given, else the largest writable
/// host buffer (the spec's default element count), capped by the launched slots.
pub fn useful_invocations(program: &Program, buffers: &[HostBuffer], shape: &LaunchShape) -> u64 {
    let slots: u64 = shape
        .grid
        .iter()
        .chain(shape.workgroup_size.iter())
        .map(|&v| v as u64)
        .product();
    let elements = program.run.as_ref().and_then(|r| r.elements).or_else(|| {
        if program.run.as_ref().and_then(|r| r.grid).is_some() {
            None
        } else {
            buffers
                .iter()
                .filter(|b| b.access.is_writable())
                .map(|b| b.len() as u64)
                .max()
        }
    });
    elements.unwrap_or(slots).min(slots)
}
