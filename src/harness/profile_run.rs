//! A Program's profile on the live GPU from its instrumented build: the plain kernel is
//! timed, the instrumented one runs once on the same inputs for its table and is timed the
//! same way for the overhead, and its outputs are compared with the plain kernel's (the
//! instrumentation must not change them). The CLI runs this in its own process, as
//! `run --backend cuda` does; the inspector runs it in the GPU worker.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::inputs::{self, FileRoot};
use crate::ir::Program;
use crate::profile::instrument::{instrument, stride_for};
use crate::runtime::dispatch::DispatchOptions;
use crate::runtime::execute::{tolerance_for, RunRequest};
use crate::runtime::jit::JitOptions;
use crate::runtime::Runtime;
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
