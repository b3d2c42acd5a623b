//! A Program's profile on the live GPU from its instrumented build: the plain kernel is
//! timed, the instrumented one runs once on the same inputs for its table and is timed the
//! same way for the overhead, and its outputs are compared with the plain kernel's (the
//! instrumentation must not change them).
//!
//! [`profile_file`] is the one GPU path of a profile, for a Program or each step of a
//! pipeline. `vyrescope profile` calls it in its own process, as `run --backend cuda` runs
//! its GPU work in-process; the GPU worker calls the same function for
//! [`HarnessJob::Profile`](super::worker_messages::HarnessJob::Profile), the job a caller
//! that must survive a faulting kernel sends through
//! [`JobsClient::profile`](super::worker_messages::JobsClient::profile) instead (the
//! inspector's `p` does). [`instrumented_profiles`] turns the runs into the per-statement
//! table and [`estimate_kernels`] makes the interpreter's estimate, for both callers.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::emit::{emit, EmitOptions, EmittedKernel};
use crate::inputs::pipeline::PreparedPipeline;
use crate::inputs::{self, FileRoot, HostBuffer, LaunchShape};
use crate::ir::Program;
use crate::profile::instrument::{instrument, stride_for};
use crate::profile::report::{from_table, Lowering, Overhead, Profile, Source};
use crate::runtime::dispatch::DispatchOptions;
use crate::runtime::execute::{tolerance_for, RunRequest};
use crate::runtime::jit::JitOptions;
use crate::runtime::Runtime;
use crate::sass::SassListing;
use crate::util::Problem;

/// What an instrumented GPU run measured (what the worker sends back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstrumentedRun {
    /// Per slot of the instrumented build, the cycles its statement took (inclusive).
    pub table: Vec<u64>,
    /// Every how many workgroups one was timed.
    pub stride: u32,
    /// Median device time of the plain kernel, ms.
    pub plain_ms: f64,
    /// Median device time of the instrumented kernel, ms.
    pub instrumented_ms: f64,
    /// Device name.
    pub device: String,
}

/// Profiles `program` with its instrumented build on `rt` (inputs as `run` prepares them).
pub fn instrumented_run(
    rt: &mut Runtime,
    program: &Program,
    base: &Path,
    req: &RunRequest,
) -> Result<InstrumentedRun, Problem> {
    let files = FileRoot {
        base,
        root: req.root.as_deref().unwrap_or(base),
    };
    let mut prepared = inputs::prepare_rooted(program, files, req.workgroup, req.grid)?;
    instrumented_run_on(rt, program, &prepared.shape, &mut prepared.buffers, req)
}

/// [`instrumented_run`] on given inputs (a pipeline step's): `buffers` are left holding the
/// plain kernel's outputs, so the next step of a pipeline reads what the plain kernel wrote.
pub fn instrumented_run_on(
    rt: &mut Runtime,
    program: &Program,
    shape: &crate::inputs::LaunchShape,
    buffers: &mut Vec<crate::inputs::HostBuffer>,
    req: &RunRequest,
) -> Result<InstrumentedRun, Problem> {
    let shape = *shape;
    let initial = buffers.clone();
    let jit = JitOptions {
        lineinfo: req.lineinfo,
        ..JitOptions::default()
    };
    let timed = DispatchOptions {
        repeat: req.repeat.max(3),
        timeout: req.timeout,
        readback: true,
        useful_invocations: None,
        dynamic_smem: 0,
        device_timing: true,
    };
    let plain = rt.compile_program_for(program, shape.workgroup_size, req.sm, &jit)?;
    // The timed rounds run on the outputs of the round before; only the first round's
    // inputs are the prepared ones, so the outputs compared come from a single launch.
    let mut plain_out = initial.clone();
    let single = DispatchOptions {
        repeat: 1,
        device_timing: false,
        ..timed.clone()
    };
    rt.dispatch_by_name(
        &plain.handle,
        &plain.emitted.abi,
        &shape,
        &mut plain_out,
        &single,
    )?;
    let mut scratch = initial.clone();
    let plain_report = rt.dispatch_by_name(
        &plain.handle,
        &plain.emitted.abi,
        &shape,
        &mut scratch,
        &timed,
    )?;
    let inst = instrument(program, stride_for(shape.workgroups()))?;
    let compiled = rt.compile_program_for(&inst.program, shape.workgroup_size, req.sm, &jit)?;
    // One launch on fresh inputs and a zeroed table: the table and the outputs to compare.
    let mut once = initial.clone();
    once.push(inst.table_buffer());
    rt.dispatch_by_name(
        &compiled.handle,
        &compiled.emitted.abi,
        &shape,
        &mut once,
        &single,
    )?;
    let table = inst
        .read_table(&once)
        .ok_or(crate::profile::ProfileError::NoTable {
            table: inst.table.clone(),
        })?;
    once.retain(|b| b.name != inst.table);
    let parity =
        crate::runtime::parity::compare_with(&once, &plain_out, tolerance_for(program), None);
    if !parity.passed {
        return Err(Problem::new(
            format!(
                "the instrumented build of `{}` computed other outputs than the plain kernel on the GPU",
                program.name
            ),
            "this is a vyrescope bug: report it with the Program file; `vyrescope profile FILE --source pc` profiles the plain kernel",
        ));
    }
    // The timed rounds only measure the overhead; their table sums are not used.
    let mut again = initial;
    again.push(inst.table_buffer());
    let inst_report = rt.dispatch_by_name(
        &compiled.handle,
        &compiled.emitted.abi,
        &shape,
        &mut again,
        &timed,
    )?;
    let median = |r: &crate::runtime::DispatchReport| {
        r.device_ms.as_ref().map_or(r.full_ms, |t| t.median_ms)
    };
    *buffers = plain_out;
    Ok(InstrumentedRun {
        table,
        stride: inst.stride,
        plain_ms: median(&plain_report),
        instrumented_ms: median(&inst_report),
        device: rt.caps().name.clone(),
    })
}

/// Timed repetitions of a profile's plain and instrumented kernels unless a caller asks
/// for others (`vyrescope profile`'s count).
pub const PROFILE_REPEAT: u32 = 5;

/// The run request of a profile: `repeat` timed rounds (at least 3, see
/// [`instrumented_run_on`]), each launch bounded by `timeout`, built for the GPU's own SM.
pub fn profile_request(repeat: u32, timeout: Option<Duration>) -> RunRequest {
    RunRequest {
        sm: None,
        repeat,
        timeout,
        ..RunRequest::default()
    }
}

/// One kernel of a profiled file: the Program, or one step of a pipeline.
#[derive(Debug, Clone)]
pub struct ProfileKernel {
    /// `steps[K] NAME` for a pipeline step; None for a Program (its own name is used).
    pub label: Option<String>,
    /// The Program.
    pub program: Program,
    /// Its launch shape.
    pub shape: LaunchShape,
}

/// Inputs of a profiled file's kernels: a Program's prepared buffers, or a pipeline's,
/// taken step by step so each step reads what the step before it wrote.
pub enum KernelInputs {
    /// A Program's buffers (taken once).
    Program(Option<Vec<HostBuffer>>),
    /// A pipeline's buffers.
    Pipeline(PreparedPipeline),
}

impl KernelInputs {
    /// The buffers kernel `k` runs on.
    pub fn take(&mut self, k: usize) -> Vec<HostBuffer> {
        match self {
            KernelInputs::Program(b) => b.take().unwrap_or_default(),
            KernelInputs::Pipeline(p) => p.take_step_buffers(k),
        }
    }

    /// Hands back kernel `k`'s buffers after its run (its outputs, for the next step).
    pub fn put(&mut self, k: usize, buffers: Vec<HostBuffer>) {
        match self {
            KernelInputs::Program(b) => *b = Some(buffers),
            KernelInputs::Pipeline(p) => p.put_back(k, buffers),
        }
    }
}

/// The kernels of `file` and their inputs: the Program, or each step of a pipeline in order
/// (inputs relative to the file's folder, as `run` reads them).
pub fn load_kernels(file: &Path) -> Result<(Vec<ProfileKernel>, KernelInputs), Problem> {
    let base = file.parent().unwrap_or(Path::new("."));
    if crate::ir::is_pipeline_file(file) {
        let loaded = crate::validate::pipeline::load_pipeline(file);
        let Some(pipeline) = loaded.pipeline.as_ref().filter(|_| loaded.is_valid()) else {
            return Err(Problem::invalid_file(file, "pipeline", &loaded.diagnostics));
        };
        let prepared = crate::inputs::pipeline::prepare_pipeline(pipeline, base)?;
        let kernels = pipeline
            .steps
            .iter()
            .zip(&prepared.steps)
            .enumerate()
            .map(|(k, (s, ps))| ProfileKernel {
                label: Some(format!("steps[{k}] {}", s.program.name)),
                program: s.program.clone(),
                shape: ps.shape,
            })
            .collect();
        return Ok((kernels, KernelInputs::Pipeline(prepared)));
    }
    let (program, prepared) = crate::inputs::prepare_file(file, None, None)?;
    let diags = crate::validate::validate(&program);
    if diags
        .iter()
        .any(|d| d.severity == crate::finding::Severity::Error)
    {
        return Err(Problem::invalid_file(file, "Program", &diags));
    }
    Ok((
        vec![ProfileKernel {
            label: None,
            program,
            shape: prepared.shape,
        }],
        KernelInputs::Program(Some(prepared.buffers)),
    ))
}

/// The instrumented run of each of `kernels` in order on `rt`, one per kernel.
pub fn instrumented_runs(
    rt: &mut Runtime,
    kernels: &[ProfileKernel],
    inputs: &mut KernelInputs,
    req: &RunRequest,
) -> Result<Vec<InstrumentedRun>, Problem> {
    let mut runs = Vec::with_capacity(kernels.len());
    for (k, kernel) in kernels.iter().enumerate() {
        let mut buffers = inputs.take(k);
        let r = instrumented_run_on(rt, &kernel.program, &kernel.shape, &mut buffers, req)?;
        inputs.put(k, buffers);
        runs.push(r);
    }
    Ok(runs)
}

/// Profiles a Program or pipeline file on `rt`: one [`InstrumentedRun`] per kernel, in
/// the order of [`load_kernels`].
pub fn profile_file(
    rt: &mut Runtime,
    file: &Path,
    req: &RunRequest,
) -> Result<Vec<InstrumentedRun>, Problem> {
    let (kernels, mut inputs) = load_kernels(file)?;
    instrumented_runs(rt, &kernels, &mut inputs, req)
}

/// The instruction-count estimate of each of `kernels` in order on the reference
/// interpreter (no GPU): `vyrescope profile --estimate` and the inspector's `p` offline.
/// A pipeline step reads what the plain build of the step before it wrote. `sm`: the PTX
/// and SASS the statements point into (None leaves them out: the inspector maps statements
/// to its own panes' lines).
pub fn estimate_kernels(
    kernels: &[ProfileKernel],
    inputs: &mut KernelInputs,
    sm: Option<u32>,
) -> Result<Vec<Profile>, Problem> {
    let mut profiles = Vec::with_capacity(kernels.len());
    for (k, kernel) in kernels.iter().enumerate() {
        let lowered = Lowered::of(kernel, sm);
        let prepared = crate::inputs::PreparedRun {
            shape: kernel.shape,
            buffers: inputs.take(k),
        };
        let mut p =
            crate::profile::estimate::estimate(&kernel.program, &prepared, lowered.lowering())?;
        // The next pipeline step reads what this one wrote: run the plain build for it.
        let mut buffers = prepared.buffers;
        crate::interp::run(&kernel.program, &kernel.shape, &mut buffers)?;
        inputs.put(k, buffers);
        p.kernel = kernel.label.clone().unwrap_or(p.kernel);
        profiles.push(p);
    }
    Ok(profiles)
}

/// The profiles of `kernels` from their instrumented GPU runs (one per kernel, in order, as
/// [`instrumented_runs`] and the worker's job return them), with each run's overhead.
pub fn instrumented_profiles(
    kernels: &[ProfileKernel],
    runs: &[InstrumentedRun],
    sm: Option<u32>,
) -> Result<Vec<Profile>, Problem> {
    if runs.len() != kernels.len() {
        return Err(Problem::new(
            format!(
                "the profile run returned {} tables for {} kernels",
                runs.len(),
                kernels.len()
            ),
            "the file changed while it was profiled: profile it again",
        ));
    }
    let mut profiles = Vec::with_capacity(kernels.len());
    for (kernel, r) in kernels.iter().zip(runs) {
        let lowered = Lowered::of(kernel, sm);
        let inst = instrument(&kernel.program, r.stride)?;
        let mut p = from_table(
            &kernel.program,
            &inst,
            &r.table,
            Source::Instrumented,
            lowered.lowering(),
        );
        p.overhead = Some(Overhead {
            plain_ms: r.plain_ms,
            instrumented_ms: r.instrumented_ms,
        });
        p.kernel = kernel.label.clone().unwrap_or(p.kernel);
        profiles.push(p);
    }
    Ok(profiles)
}

/// The plain kernel and its SASS, for the PTX lines and instructions behind statements
/// (either may be missing: no ptxas or nvdisasm leaves the SASS out).
struct Lowered {
    kernel: Option<EmittedKernel>,
    sass: Option<SassListing>,
}

impl Lowered {
    /// `kernel` emitted for `sm` as `sass` does (line info on, so the SASS maps back to IR
    /// lines); nothing without an `sm`.
    fn of(kernel: &ProfileKernel, sm: Option<u32>) -> Self {
        let Some(sm) = sm else {
            return Lowered {
                kernel: None,
                sass: None,
            };
        };
        let opts = EmitOptions {
            sm,
            workgroup_size: kernel.shape.workgroup_size,
            lineinfo: true,
            ..EmitOptions::for_program(&kernel.program)
        };
        let emitted = emit(&kernel.program, &opts).ok();
        let sass = emitted
            .as_ref()
            .and_then(|k| crate::sass::disassemble(k, sm).ok());
        Lowered {
            kernel: emitted,
            sass,
        }
    }

    fn lowering(&self) -> Lowering<'_> {
        Lowering {
            kernel: self.kernel.as_ref(),
            sass: self.sass.as_ref(),
        }
    }
}
