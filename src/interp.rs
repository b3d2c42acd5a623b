//! Reference interpreter: the oracle every GPU result is checked against.
//!
//! [`run`] executes a Program (elaborated here, so bare literals are fine) over a
//! [`LaunchShape`], reading and writing host buffers in place, with exactly the semantics of
//! `docs/program-format.md` and docs/semantics.md: wrapping integers, div/rem by zero = 0, PTX shift
//! rules, IEEE `f32`/`f64` without flush-to-zero, NaN-ignoring `min`/`max` with -0 < +0,
//! saturating casts, out-of-range loads 0 and stores/atomics dropped, `f16` stored with
//! round-to-nearest-even, `bool` as 32-bit words.
//!
//! # How it runs
//! The Program is compiled ([`compile`]) into register code: every variable, literal and
//! intermediate value is a register holding one `u64` per lane. A *unit* of whole workgroups
//! (about 1024 threads, at least one workgroup) is executed statement by statement over all
//! its threads at once with an active-lane set ([`exec`]): expressions are evaluated
//! lane-vectorised (one tight loop per operator), `if` splits the lane set, loops run while a
//! lane is active, `return` retires lanes for good. As every statement completes on all
//! active lanes before the next starts, a barrier's guarantee holds by construction; the
//! executor still verifies that all live threads of the scope arrived and reports a
//! divergent barrier as an error.
//!
//! Units run in parallel with rayon when the Program has no `grid` barrier; buffers are held
//! in atomic words ([`memory`]) so this is sound. A Program with a grid barrier runs the whole
//! grid as one unit, so the grid barrier is a lockstep point too.
//!
//! # Warps
//! Threads are grouped in warps of 32 by linear local id (`lid.x + lid.y*X + lid.z*X*Y`); the
//! last warp of a workgroup whose size is not a multiple of 32 is short. Subgroup operations
//! act on the warp's active lanes:
//! - `ballot`: bit `lane` set for each active lane whose value is true;
//! - `shuffle`: reads lane `src & 31`; reading an inactive or missing lane gives the reading
//!   lane's own value;
//! - `subgroup_reduce`: a butterfly over the 32 lane slots (combine slot pairs at distance
//!   16, 8, 4, 2, 1), where inactive or missing lanes hold the operator's identity (`add`:
//!   0 / -0.0, `mul`: 1, `min`/`max`: the type's MAX/MIN or NaN for floats, `and`: all ones,
//!   `or`/`xor`: 0). For integers any order gives the same result; for floats this fixes the
//!   summation order, which the emitter follows for bit-identical results.
//!
//! # Atomics
//! Sequentially consistent; within one statement the active lanes of a unit act in
//! increasing linear id order; parallel units interleave arbitrarily (as on a GPU).
//!
//! # NaN bits
//! Arithmetic on NaN propagates the host's (x86 SSE) NaN payloads; `min`/`max` of two NaNs
//! give the canonical NaN `0x7fffffff` (`0x7fffffffffffffff` for f64). GPU NaN payloads may
//! differ: compare NaNs as equal.
//!
//! # Budget
//! Every statement adds `(1 + its expression nodes) x active lanes` to the node-evaluation
//! count ([`InterpStats::node_evals`]). The step budget ([`Options::fuel`]) counts those plus
//! one step per invocation and per active lane of every loop iteration, and a fixed dispatch
//! charge per statement, iteration and unit (so an empty loop body or a huge loop-free grid
//! costs steps too). Each unit checks the budget before it starts and loops check it every
//! iteration, so all work is bounded: running out is an error naming the loop's node, or the
//! Program's first statement when the grid itself is too large.

pub(crate) mod compile;
pub(crate) mod exec;
pub mod float_sums;
pub(crate) mod memory;
pub mod pipeline;

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::inputs::{HostBuffer, LaunchShape};
use crate::ir::{ElemType, NodeId, Program};

/// Default step budget: 2^32 steps. Measured in release on the 2-core build machine (under
/// load): the costliest steps (one lane looping over a one-statement body, or a store by every
/// lane of a 2^40-invocation grid) run about 2.6 ns each, so the default ends any run in about
/// 11 s at worst; the vectorised fast path runs several times more steps per second.
pub const DEFAULT_FUEL: u64 = 1 << 32;

/// Steps charged per statement executed, on top of its node evaluations: dispatching a
/// statement on one lane costs about as much as this many lane-node evaluations.
pub(crate) const STATEMENT_OVERHEAD: u64 = 16;

/// Steps charged per loop iteration (the lane-set filter and counter update), on top of one
/// step per active lane, so that an empty body is bounded too.
pub(crate) const ITERATION_OVERHEAD: u64 = 32;

/// Steps charged per unit of workgroups (filling its builtins), on top of one per invocation.
pub(crate) const UNIT_OVERHEAD: u64 = 256;

/// Threads a unit aims for: enough to amortise per-statement dispatch over a tight lane loop,
/// small enough to stay in cache.
const UNIT_LANES: usize = 1024;

/// Largest interpreter state (registers of one unit) accepted, in bytes.
const MAX_STATE_BYTES: u128 = 4 << 30;

/// Counters from one interpreted dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct InterpStats {
    /// IR nodes (statements and expressions) evaluated, summed over invocations.
    pub node_evals: u64,
    /// Invocations run.
    pub invocations: u64,
    /// Fuel spent ([`Options::fuel`] counts it): what a pipeline's later steps have left.
    #[serde(skip)]
    pub fuel_used: u64,
}

/// Why the interpreter stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterpError {
    /// Stable code: `I001` launch or buffers unusable, `I002` the Program does not compile
    /// (invalid), `I003` the step budget ran out, `I004` a barrier not reached by every thread, `I005` a sub-task barrier
    /// not reached by every thread of its sub-task.
    pub code: &'static str,
    /// The statement where it happened, when one is to blame.
    pub node: Option<NodeId>,
    /// What happened.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl InterpError {
    /// An error about the launch or the buffers (no statement to blame).
    pub fn launch(message: impl Into<String>, fix: impl Into<String>) -> Self {
        InterpError {
            code: "I001",
            node: None,
            message: message.into(),
            fix: fix.into(),
        }
    }
}

impl std::error::Error for InterpError {}

impl crate::util::HasFix for InterpError {
    fn message(&self) -> String {
        match &self.node {
            Some(node) => format!("{node}: {}", self.message),
            None => self.message.clone(),
        }
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }

    fn problem(&self) -> crate::util::Problem {
        let p = crate::util::Problem::located(self.message(), self.fix());
        match &self.node {
            Some(node) => p.on_node(node.to_string()),
            None => p,
        }
    }
}

crate::util::problem::into_problem!(InterpError);

/// Interpreter settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Step budget (node evaluations plus per-invocation, per-iteration and dispatch charges);
    /// running out is an error.
    pub fuel: u64,
    /// Run units on the rayon pool (when the Program has no grid barrier).
    pub parallel: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fuel: DEFAULT_FUEL,
            parallel: true,
        }
    }
}

/// Executes `program` over `shape` on the CPU with default [`Options`].
pub fn run(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
) -> Result<InterpStats, InterpError> {
    run_with(program, shape, buffers, &Options::default())
}

/// Executes `program` over `shape` on the CPU. `buffers` are matched to the Program's host
/// buffers by name; they are written back only when the run succeeds.
pub fn run_with(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
    options: &Options,
) -> Result<InterpStats, InterpError> {
    run_units(
        &crate::ir::elaborate(program),
        shape,
        buffers,
        options,
        1,
        None,
    )
}

/// [`run_with`] for a Program the validator accepted: it runs the typed Program `info`
/// holds, so nothing is elaborated again (the interpreter itself accepts any Program that
/// parsed, as an oracle must, and reports what it cannot run as an [`InterpError`]).
pub fn run_valid(
    info: &crate::validate::ProgramInfo,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
    options: &Options,
) -> Result<InterpStats, InterpError> {
    run_units(info.typed(), shape, buffers, options, 1, None)
}

/// Like [`run_with`], and also returns the float atomic sums of the buffers that only float
/// atomic adds write ([`float_sums`]): what an order-independent result check needs.
pub fn run_with_sums(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
    options: &Options,
) -> Result<(InterpStats, float_sums::FloatSums), InterpError> {
    let mut sums = float_sums::FloatSums::default();
    let elaborated = crate::ir::elaborate(program);
    let stats = run_units(&elaborated, shape, buffers, options, 1, Some(&mut sums))?;
    Ok((stats, sums))
}

/// Like [`run_with`], but runs only every `every`-th unit of workgroups (units are runs of
/// consecutive workgroups of about 1024 threads) plus the last one, leaving the other
/// workgroups' outputs untouched: a sampled reference for dispatches too large to interpret
/// whole. Only meaningful when workgroups are independent (no grid barrier, no atomics on
/// host buffers); the caller checks that and compares only the elements the run changed.
pub fn run_sampled(
    program: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
    options: &Options,
    every: u64,
) -> Result<InterpStats, InterpError> {
    let elaborated = crate::ir::elaborate(program);
    run_units(&elaborated, shape, buffers, options, every.max(1), None)
}

/// Runs `elaborated` (a Program with every literal typed) unit by unit.
fn run_units(
    elaborated: &Program,
    shape: &LaunchShape,
    buffers: &mut [HostBuffer],
    options: &Options,
    every: u64,
    sums: Option<&mut float_sums::FloatSums>,
) -> Result<InterpStats, InterpError> {
    shape.check().map_err(|e| InterpError {
        code: "I001",
        node: None,
        message: e.message,
        fix: e.fix,
    })?;
    let code = compile::compile(elaborated)?;

    let float_targets = if sums.is_some() {
        float_sums::float_add_targets(elaborated)
    } else {
        Default::default()
    };
    let mut mems = Vec::with_capacity(code.globals.len());
    let mut slots = Vec::with_capacity(code.globals.len());
    for g in &code.globals {
        let Some(i) = buffers.iter().position(|b| b.name == g.name) else {
            return Err(InterpError {
                code: "I001",
                node: None,
                message: format!("no host buffer `{}` was given", g.name),
                fix: "prepare the buffers with `inputs::prepare` for this Program".into(),
            });
        };
        let b = &buffers[i];
        if b.elem != g.elem {
            return Err(InterpError {
                code: "I001",
                node: None,
                message: format!(
                    "host buffer `{}` holds {} but the Program declares {}",
                    g.name, b.elem, g.elem
                ),
                fix: "prepare the buffers from the same Program".into(),
            });
        }
        if b.len() > u32::MAX as usize {
            return Err(InterpError {
                code: "I001",
                node: None,
                message: format!(
                    "host buffer `{}` has {} elements; indices are u32",
                    g.name,
                    b.len()
                ),
                fix: "use at most 4294967295 elements".into(),
            });
        }
        let mut m = memory::Memory::from_bytes(b.elem, &b.data);
        if sums.is_some() && float_targets.contains(&g.name) {
            m.float_log = Some(float_sums::Log::new(m.len));
        }
        mems.push(m);
        slots.push(i);
    }

    let threads = shape.threads_per_workgroup() as usize;
    let workgroups = shape.workgroups();
    let per_unit = if code.has_grid_barrier {
        workgroups
    } else {
        ((UNIT_LANES / threads).max(1) as u64).min(workgroups)
    };
    let lanes = per_unit as u128 * threads as u128;
    let shared_bytes: u128 = code
        .shared
        .iter()
        .map(|s| s.count as u128 * s.elem.size_bytes() as u128 + 4)
        .sum();
    let state = lanes * (code.n_regs as u128 * 8 + 24) + per_unit as u128 * shared_bytes;
    if state > MAX_STATE_BYTES {
        return Err(InterpError {
            code: "I001",
            node: None,
            message: format!(
                "interpreting {lanes} threads in lockstep ({}) needs about {} MiB of state, more than the {} MiB limit",
                if code.has_grid_barrier { "a grid barrier makes the whole grid one unit" } else { "one workgroup" },
                state >> 20,
                MAX_STATE_BYTES >> 20
            ),
            fix: "use a smaller grid or workgroup for the reference run".into(),
        });
    }
    let per_unit = per_unit as usize;
    let units = workgroups.div_ceil(per_unit as u64);
    let fuel = exec::Fuel {
        limit: options.fuel,
        used: AtomicU64::new(0),
        evals: AtomicU64::new(0),
    };
    let cx = exec::Ctx {
        code: &code,
        globals: &mems,
        shape: *shape,
        fuel: &fuel,
    };
    let count = |k: u64| (workgroups - k * per_unit as u64).min(per_unit as u64) as usize;
    let chosen = |k: &u64| k.is_multiple_of(every) || *k + 1 == units;
    if options.parallel && units > 1 {
        (0..units)
            .into_par_iter()
            .filter(chosen)
            .try_for_each_init(
                || exec::Unit::new(&cx, per_unit),
                |unit, k| unit.run(&cx, k * per_unit as u64, count(k)),
            )?;
    } else {
        let mut unit = exec::Unit::new(&cx, per_unit);
        for k in (0..units).filter(chosen) {
            unit.run(&cx, k * per_unit as u64, count(k))?;
        }
    }

    if let Some(sums) = sums {
        for ((g, m), &i) in code.globals.iter().zip(&mems).zip(&slots) {
            if let Some(log) = &m.float_log {
                let b = &buffers[i];
                let initial = |k: usize| {
                    let n = b.elem.size_bytes();
                    let mut w = [0u8; 8];
                    w[..n].copy_from_slice(&b.data[k * n..k * n + n]);
                    match b.elem {
                        ElemType::F32 => {
                            (f32::from_bits(u64::from_le_bytes(w) as u32) as f64).abs()
                        }
                        ElemType::F64 => f64::from_bits(u64::from_le_bytes(w)).abs(),
                        _ => 0.0,
                    }
                };
                sums.buffers.insert(g.name.clone(), log.finish(initial));
            }
        }
    }
    for ((g, m), &i) in code.globals.iter().zip(&mems).zip(&slots) {
        if g.writable {
            m.write_bytes(&mut buffers[i].data);
        }
    }
    Ok(InterpStats {
        node_evals: fuel.evals.load(Ordering::Relaxed),
        invocations: shape.invocations(),
        fuel_used: fuel.used.load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests;
