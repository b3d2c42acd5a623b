//! vyrescope as a vyre backend: two implementations of vyre-driver's `VyreBackend`
//! (0.7.2), registered in vyre's backend registry so that a vyre application acquires them
//! by id (`vyre_driver::backend::acquire("vyrescope-cuda")`) without naming our types.
//!
//! | id | runs on | registration |
//! |---|---|---|
//! | `vyrescope-cuda` | our CUDA runtime (`runtime::vyre_device`): our PTX, our JIT and module caches, pinned staging | rank 4 (ahead of vyre's own `cuda`, rank 5), dispatches, not an oracle |
//! | `vyrescope-reference` | our reference interpreter ([`reference`]) | rank 1000, dispatches, a `reference_oracle` (never chosen by `acquire_preferred_dispatch_backend`) |
//!
//! The shape (wgpu-hal's): one adapter, [`VyrescopeBackend`], implements the whole trait
//! once over the [`device::Device`] seam; each device only runs our Programs over host or
//! resident buffers. Everything vyre-specific happens here:
//!
//! - **Programs.** vyre's Program is made what vyre's reference runs and imported with the
//!   import every other vyre path uses (`vyre::catalog::import_for_reference`, cached per
//!   vyre fingerprint in [`programs`]), then validated per launch shape. A construct the
//!   import refuses (`VY...`) or a validator error (`V...`) is an `InvalidProgram` error
//!   naming the codes.
//! - **Bytes.** Inputs, outputs and the inferred launch follow vyre's reference
//!   ([`crate::vyre::binding`]): same inputs, same outputs (cut to `output_byte_range`),
//!   same grid. The import already writes vyre's CUDA semantics where they differ from our
//!   format (docs/vyre.md), so results are vyre's bytes.
//! - **Resident buffers** are handles minted by a `ResidentOwner` per backend instance
//!   (a foreign handle is refused, never resolved by id) over device buffers.
//! - **Errors** are `BackendError`s whose text carries a `Fix:` ([`errors`]).
//!
//! docs/vyre.md ("Using vyrescope as vyre's backend") lists the method-by-method behaviour
//! and what vyre's registry wrapper forwards.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use vyre_driver::backend::{BackendError, DispatchConfig, ResidentOwner};
use vyre_foundation::ir::Program as VyreProgram;

use crate::inputs::Staged;
use crate::vyre::binding::{self, LaunchChoice};

pub mod contract;
pub mod device;
pub mod errors;
pub mod pending;
pub mod programs;
pub mod reference;
pub mod registry;
pub mod resident;
/// The dispatch benchmark's vyre Programs (the workspace crate `vyrescope-dispatch-bench`,
/// which the race binary on vyre-driver-cuda shares).
pub use vyrescope_dispatch_bench::samples;

use device::{Device, Limits, RunOptions, RunTimes};

/// A vyre backend over device `D` (see the module docs). Cheap to clone handles are not
/// offered: vyre owns it as a `Box<dyn VyreBackend>`.
pub struct VyrescopeBackend<D: Device> {
    inner: Arc<Inner<D>>,
}

/// The shared state (async dispatches run on a thread holding an `Arc` of it).
pub(crate) struct Inner<D: Device> {
    id: &'static str,
    limits: Limits,
    programs: programs::Programs,
    owner: ResidentOwner,
    state: Mutex<State<D>>,
}

struct State<D: Device> {
    device: D,
    resident: HashMap<u64, Slot<D::Buffer>>,
    next: u64,
    /// Bumped by each recovery (vyre's `DeviceLost` generation).
    generation: u64,
}

/// One resident allocation.
struct Slot<B> {
    buffer: B,
    bytes: usize,
}

/// What one dispatch produced.
pub(crate) struct Dispatched {
    pub outputs: Vec<Vec<u8>>,
    pub times: RunTimes,
    /// Host time before the first run: conversion lookup, checks, binding.
    pub prep_ns: u64,
    /// Host time after the last run: moving the outputs out.
    pub collect_ns: u64,
}

impl Dispatched {
    /// The run's times split the way vyre's `TimedDispatchResult` reads them: `enqueue_ns`
    /// is everything before the wait (host preparation, input copies, launch), `wait_ns`
    /// everything after it (the kernel's wait, output copies, collecting the outputs).
    /// Without a device clock for a part, the split is absent.
    pub fn vyre_split(&self) -> RunTimes {
        let t = self.times;
        let sum = |parts: &[Option<u64>]| {
            parts
                .iter()
                .try_fold(0u64, |acc, p| Some(acc.saturating_add((*p)?)))
        };
        RunTimes {
            enqueue_ns: sum(&[Some(self.prep_ns), t.upload_ns, t.enqueue_ns]),
            wait_ns: sum(&[t.wait_ns, t.readback_ns, Some(self.collect_ns)]),
            ..t
        }
    }
}

impl<D: Device> VyrescopeBackend<D> {
    /// A backend called `id` over `device`.
    pub fn new(id: &'static str, device: D) -> Result<Self, BackendError> {
        Ok(VyrescopeBackend {
            inner: Arc::new(Inner {
                id,
                limits: device.limits(),
                programs: programs::Programs::default(),
                owner: ResidentOwner::new()?,
                state: Mutex::new(State {
                    device,
                    resident: HashMap::new(),
                    next: 0,
                    generation: 0,
                }),
            }),
        })
    }

    /// The device's limits.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// `dispatch_borrowed` with every phase of its host wall time told apart (what vyre's
    /// `TimedDispatchResult` folds into two parts): the outputs and the phases.
    pub fn dispatch_phases(
        &self,
        program: &VyreProgram,
        inputs: &[&[u8]],
    ) -> Result<(Vec<Vec<u8>>, DispatchPhases), BackendError> {
        let t0 = Instant::now();
        let d = self
            .inner
            .dispatch(program, inputs, &DispatchConfig::default(), true)?;
        let wall_ns = elapsed_ns(t0);
        let t = d.times;
        Ok((
            d.outputs,
            DispatchPhases {
                prep_ns: d.prep_ns,
                upload_ns: t.upload_ns,
                launch_ns: t.enqueue_ns,
                wait_ns: t.wait_ns,
                device_ns: t.device_ns,
                readback_ns: t.readback_ns,
                collect_ns: d.collect_ns,
                wall_ns,
            },
        ))
    }
}

/// Where one dispatch's host wall time went, ns (`None`: the device does not tell the part
/// apart, as the reference interpreter does not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchPhases {
    /// Conversion lookup, checks, binding the inputs (no copy) and allocating outputs.
    pub prep_ns: u64,
    /// Input staging: zero scans, host copies into pinned memory, copies queued.
    pub upload_ns: Option<u64>,
    /// Queueing the launch.
    pub launch_ns: Option<u64>,
    /// Waiting for the queued copies and the kernel (output pages are mapped meanwhile).
    pub wait_ns: Option<u64>,
    /// The kernel's own time on the device's clock.
    pub device_ns: Option<u64>,
    /// Copying the outputs back into host memory.
    pub readback_ns: Option<u64>,
    /// Handing the outputs over.
    pub collect_ns: u64,
    /// The whole call.
    pub wall_ns: u64,
}

impl<D: Device> Inner<D> {
    fn lock(&self) -> Result<MutexGuard<'_, State<D>>, BackendError> {
        self.state.lock().map_err(|_| errors::poisoned(self.id))
    }

    fn device_error(&self, st: &State<D>, f: device::DeviceFailure) -> BackendError {
        errors::device(self.id, &self.limits.device, st.generation, f)
    }

    /// Refuses configuration this backend does not honour.
    fn check_config(&self, config: &DispatchConfig) -> Result<u32, BackendError> {
        if config.cooperative && !self.limits.grid_sync {
            return Err(errors::unsupported(self.id, "cooperative grid-sync launch"));
        }
        if config.speculation.is_some() {
            return Err(errors::unsupported(self.id, "speculative dispatch"));
        }
        if config.persistent_thread.is_some() {
            return Err(errors::unsupported(self.id, "persistent-thread dispatch"));
        }
        match config.fixpoint_iterations {
            Some(0) => Err(errors::invalid(
                "DispatchConfig::fixpoint_iterations is Some(0)",
                "use None (one iteration) or a positive count",
            )),
            n => Ok(n.unwrap_or(1)),
        }
    }

    /// The caller's launch choices (workgroup, grid or coverage), checked against the
    /// device's limits where known up front.
    fn choice(
        &self,
        program: &VyreProgram,
        config: &DispatchConfig,
    ) -> Result<LaunchChoice, BackendError> {
        let workgroup = config
            .workgroup_override
            .unwrap_or(program.workgroup_size());
        let l = &self.limits;
        let threads: u64 = workgroup.iter().map(|&d| u64::from(d)).product();
        if workgroup.contains(&0)
            || (0..3).any(|a| workgroup[a] > l.max_workgroup[a])
            || threads > u64::from(l.max_invocations)
        {
            return Err(errors::invalid(
                format!(
                    "{}: workgroup {workgroup:?} is outside this device's limits (at most {:?} per axis, {} threads)",
                    self.id, l.max_workgroup, l.max_invocations
                ),
                "pick a workgroup within max_workgroup_size() and max_compute_invocations_per_workgroup()",
            ));
        }
        let grid = config.grid_override.or(config.dispatch_grid);
        if let Some(g) = grid {
            if g.contains(&0) || g.iter().any(|&d| d > l.max_workgroups_per_dim) {
                return Err(errors::invalid(
                    format!(
                        "{}: grid {g:?} is outside this device's limits (1 to {} per axis)",
                        self.id, l.max_workgroups_per_dim
                    ),
                    "pick a grid within max_compute_workgroups_per_dimension()",
                ));
            }
        }
        Ok(LaunchChoice {
            workgroup: config.workgroup_override,
            grid,
            min_elements: config.dispatch_elements,
        })
    }

    /// Refuses, before anything is allocated, a backend-allocated output larger than the
    /// device's memory (its zero-filled host copy would be as large).
    fn check_output_sizes(&self, conv: &programs::Converted) -> Result<(), BackendError> {
        let max = self.limits.max_buffer_bytes;
        if max == 0 {
            return Ok(());
        }
        for (d, b) in conv.vyre.buffers().iter().zip(&conv.ours.buffers) {
            let bytes = u64::from(d.count()).saturating_mul(b.elem.size_bytes() as u64);
            if binding::is_output(d) && bytes > max {
                return Err(BackendError::DeviceOutOfMemory {
                    requested: bytes,
                    available: max,
                });
            }
        }
        Ok(())
    }

    /// One dispatch over host inputs: convert, bind, run (`iterations` times on the same
    /// buffers), return vyre's outputs.
    pub(crate) fn dispatch(
        &self,
        program: &VyreProgram,
        inputs: &[&[u8]],
        config: &DispatchConfig,
        timed: bool,
    ) -> Result<Dispatched, BackendError> {
        let t0 = Instant::now();
        let iterations = self.check_config(config)?;
        let choice = self.choice(program, config)?;
        let conv = self
            .programs
            .get(program)
            .map_err(|r| errors::refused(self.id, &r))?;
        self.check_output_sizes(&conv)?;
        let mut bound = binding::bind_borrowed(&conv.vyre, &conv.ours, inputs, choice)
            .map_err(|m| errors::bad_inputs(self.id, &m))?;
        let ours = conv
            .for_launch(&bound.shape)
            .map_err(|r| errors::refused(self.id, &r))?;
        let key = conv.key(bound.shape.workgroup_size);
        let mut times: Option<RunTimes> = None;
        let prep_ns = elapsed_ns(t0);
        {
            let mut st = self.lock()?;
            for iteration in 0..iterations {
                // A buffer still empty takes the caller's bytes; one that holds results (a
                // later fixpoint iteration) keeps them; a fresh output is zeros until the
                // first run.
                let sources: Vec<Staged<'_>> = bound
                    .sources
                    .iter()
                    .zip(&bound.zeroed)
                    .zip(&bound.buffers)
                    .map(|((s, &zeroed), b)| {
                        match s
                            .filter(|_| b.data.is_empty())
                            .and_then(|i| inputs.get(i).copied())
                        {
                            Some(bytes) => Staged::From(bytes),
                            None if zeroed && iteration == 0 => Staged::Zeros,
                            None => Staged::Held,
                        }
                    })
                    .collect();
                let t = st
                    .device
                    .run(
                        key,
                        &ours,
                        &bound.shape,
                        &mut bound.buffers,
                        &sources,
                        run_options(config, timed),
                    )
                    .map_err(|f| self.device_error(&st, f))?;
                times = Some(times.map_or(t, |a| add_times(a, t)));
            }
        }
        let times = times.unwrap_or_default();
        let t_collect = Instant::now();
        let mut outputs = Vec::with_capacity(bound.outputs.len());
        let mut total = 0usize;
        for slot in &bound.outputs {
            let Some(b) = bound.buffers.get_mut(slot.buffer) else {
                outputs.push(Vec::new());
                continue;
            };
            // A whole buffer moves out (no copy of a large output); a range is copied.
            let data = if slot.bytes(&b.data).len() == b.data.len() {
                std::mem::take(&mut b.data)
            } else {
                slot.bytes(&b.data).to_vec()
            };
            total += data.len();
            outputs.push(data);
        }
        if let Some(max) = config.max_output_bytes {
            if total > max {
                return Err(errors::invalid(
                    format!(
                        "{}: the outputs take {total} bytes, more than max_output_bytes = {max}",
                        self.id
                    ),
                    "raise DispatchConfig::max_output_bytes or read a smaller output_byte_range",
                ));
            }
        }
        Ok(Dispatched {
            outputs,
            times,
            prep_ns,
            collect_ns: elapsed_ns(t_collect),
        })
    }

    /// Device time etc. of a run, with the host wall time since `t0`.
    pub(crate) fn timed_result(
        outputs: Vec<Vec<u8>>,
        t0: Instant,
        times: RunTimes,
    ) -> vyre_driver::backend::TimedDispatchResult {
        vyre_driver::backend::TimedDispatchResult {
            outputs,
            wall_ns: elapsed_ns(t0),
            device_ns: times.device_ns,
            enqueue_ns: times.enqueue_ns,
            wait_ns: times.wait_ns,
        }
    }
}

/// Nanoseconds since `t0`.
pub(crate) fn elapsed_ns(t0: Instant) -> u64 {
    u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// The device options of a dispatch.
pub(crate) fn run_options(config: &DispatchConfig, timed: bool) -> RunOptions {
    RunOptions {
        timed,
        timeout: config.timeout,
    }
}

/// Sums two runs' times (a side is absent when either run lacks it).
pub(crate) fn add_times(a: RunTimes, b: RunTimes) -> RunTimes {
    let add = |x: Option<u64>, y: Option<u64>| Some(x?.saturating_add(y?));
    RunTimes {
        device_ns: add(a.device_ns, b.device_ns),
        enqueue_ns: add(a.enqueue_ns, b.enqueue_ns),
        wait_ns: add(a.wait_ns, b.wait_ns),
        upload_ns: add(a.upload_ns, b.upload_ns),
        readback_ns: add(a.readback_ns, b.readback_ns),
    }
}
