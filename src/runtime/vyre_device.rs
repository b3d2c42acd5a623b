//! `vyrescope-cuda` (feature `vyre`): the CUDA runtime as the device under vyrescope's vyre
//! backend ([`crate::vyre::backend`]), and its registration in vyre's backend registry.
//!
//! A thin adapter: one-shot dispatches go through [`Runtime::dispatch_by_name`] (pinned
//! staging ring, CUDA events, fault recovery), resident buffers are single-buffer
//! [`ResidentSet`]s ([`Runtime::alloc_resident`] and friends), kernels are emitted and loaded
//! by [`Runtime::compile_program`] (PTX and module caches) and kept here per Program key, so
//! a Program seen before costs no emission, hashing of its text or JIT.
//!
//! The device ordinal is `VYRESCOPE_CUDA_DEVICE` (default 0).

use std::collections::HashMap;

use vyre_driver::backend::{BackendCapability, BackendError, BackendPrecedence, VyreBackend};

use super::dispatch::{DispatchOptions, LaunchTiming, ResidentSet};
use super::jit::{JitOptions, KernelHandle};
use super::{Runtime, RuntimeError};
use crate::emit::KernelAbi;
use crate::inputs::{HostBuffer, Staged};
use crate::ir::Program;
use crate::shape::LaunchShape;
use crate::util::HasFix;
use crate::vyre::backend::device::{
    Device, DeviceFailure, DeviceResult, FailKind, Limits, ProgramKey, ResidentArg, RunOptions,
    RunTimes,
};
use crate::vyre::backend::registry::{self, CUDA_ID, CUDA_RANK};
use crate::vyre::backend::VyrescopeBackend;

/// Kernels kept per Program key at most (past it the map starts over; the runtime's own
/// module cache still holds the loaded modules).
const KERNELS: usize = 1024;

/// The CUDA runtime as a vyre backend device.
pub struct CudaDevice {
    rt: Runtime,
    kernels: HashMap<ProgramKey, (KernelHandle, KernelAbi)>,
    hits: u64,
    misses: u64,
}

fn failure(e: RuntimeError) -> DeviceFailure {
    let kind = match &e {
        RuntimeError::Jit { .. } | RuntimeError::Emit(_) => FailKind::Compile,
        RuntimeError::Fault { .. } | RuntimeError::Timeout { .. } | RuntimeError::Driver { .. } => {
            FailKind::Dispatch
        }
        RuntimeError::FaultUnrecovered { .. }
        | RuntimeError::Poisoned(_)
        | RuntimeError::NoDriver { .. }
        | RuntimeError::NoDevice { .. } => FailKind::Lost,
        RuntimeError::StaleResident => FailKind::Stale,
        _ => FailKind::Invalid,
    };
    DeviceFailure::new(kind, e.message(), e.fix())
}

fn ns(ms: f64) -> u64 {
    (ms * 1e6).max(0.0) as u64
}

fn times(t: &LaunchTiming) -> RunTimes {
    RunTimes {
        device_ns: t.device_ms.map(ns),
        enqueue_ns: Some(ns(t.enqueue_ms)),
        wait_ns: Some(ns(t.wait_ms)),
        upload_ns: None,
        readback_ns: None,
    }
}

impl CudaDevice {
    /// Opens device `ordinal` in a CUDA context of its own: the application's other CUDA
    /// users keep the primary context, and `try_recover` (a new context) never resets it.
    pub fn open(ordinal: u32) -> Result<CudaDevice, RuntimeError> {
        Ok(CudaDevice {
            rt: Runtime::open_owned(ordinal)?,
            kernels: HashMap::new(),
            hits: 0,
            misses: 0,
        })
    }

    fn kernel(
        &mut self,
        key: ProgramKey,
        program: &Program,
        workgroup: [u32; 3],
    ) -> DeviceResult<(KernelHandle, KernelAbi)> {
        if let Some(k) = self.kernels.get(&key) {
            self.hits += 1;
            return Ok(k.clone());
        }
        self.misses += 1;
        let c = self
            .rt
            .compile_program(program, workgroup, &JitOptions::default())
            .map_err(failure)?;
        if self.kernels.len() >= KERNELS {
            self.kernels.clear();
        }
        let k = (c.handle, c.emitted.abi);
        self.kernels.insert(key, k.clone());
        Ok(k)
    }

    /// The runtime's options for a run. Without a caller's timeout the host blocks on the
    /// stream (or the stop event) instead of polling it, which keeps the wait off the
    /// dispatch's latency.
    fn options(opts: RunOptions) -> DispatchOptions {
        DispatchOptions {
            timeout: opts.timeout,
            device_timing: opts.timed,
            ..DispatchOptions::default()
        }
    }
}

impl Device for CudaDevice {
    type Buffer = ResidentSet;

    fn limits(&self) -> Limits {
        let c = self.rt.caps();
        Limits {
            device: format!("{} (sm_{}{})", c.name, c.cc_major, c.cc_minor),
            max_workgroup: c.max_block_dim,
            max_invocations: c.max_threads_per_block,
            max_workgroups_per_dim: c.max_grid_dim.iter().copied().min().unwrap_or(1),
            subgroup_size: Some(c.warp_size),
            max_buffer_bytes: c.total_mem_bytes,
            grid_sync: c.cooperative_launch,
            max_resident_threads: u64::from(c.max_threads_per_sm) * u64::from(c.sm_count),
            device_timestamps: true,
            shared_bytes: c.smem_per_block,
            compute_units: c.sm_count,
            l2_bytes: c.l2_bytes,
            // DDR: two transfers per memory clock.
            mem_bw_gbps: (u64::from(c.mem_clock_khz) * 2 * u64::from(c.bus_width_bits)
                / 8
                / 1_000_000) as u32,
        }
    }

    fn run(
        &mut self,
        key: ProgramKey,
        program: &Program,
        shape: &LaunchShape,
        buffers: &mut [HostBuffer],
        sources: &[Staged<'_>],
        opts: RunOptions,
    ) -> DeviceResult<RunTimes> {
        let (h, abi) = self.kernel(key, program, shape.workgroup_size)?;
        let opts = Self::options(opts);
        let rep = self
            .rt
            .dispatch_by_name_from(&h, &abi, shape, buffers, sources, &opts)
            .map_err(failure)?;
        Ok(RunTimes {
            device_ns: rep.device_ms.map(|s| ns(s.median_ms)),
            enqueue_ns: Some(ns(rep.enqueue_ms)),
            wait_ns: Some(ns(rep.wait_ms)),
            upload_ns: Some(ns(rep.upload_ms)),
            readback_ns: Some(ns(rep.readback_ms)),
        })
    }

    fn alloc(&mut self, bytes: usize) -> DeviceResult<ResidentSet> {
        self.rt.alloc_resident(bytes).map_err(failure)
    }

    fn write(&mut self, buffer: &ResidentSet, offset: usize, bytes: &[u8]) -> DeviceResult<()> {
        self.rt
            .write_resident(buffer, 0, offset, bytes)
            .map_err(failure)
    }

    fn read(&mut self, buffer: &ResidentSet, offset: usize, out: &mut [u8]) -> DeviceResult<()> {
        self.rt
            .read_resident(buffer, 0, offset, out)
            .map_err(failure)
    }

    fn free(&mut self, buffer: ResidentSet) {
        self.rt.release(buffer);
    }

    fn run_resident(
        &mut self,
        key: ProgramKey,
        program: &Program,
        shape: &LaunchShape,
        args: &[ResidentArg<'_, ResidentSet>],
        opts: RunOptions,
    ) -> DeviceResult<RunTimes> {
        let (h, abi) = self.kernel(key, program, shape.workgroup_size)?;
        let mut parts = Vec::with_capacity(abi.params.len());
        for p in &abi.params {
            let Some(a) = args.iter().find(|a| a.name == p.buffer) else {
                return Err(DeviceFailure::new(
                    FailKind::Invalid,
                    format!(
                        "the kernel takes `{}`, which has no resident buffer",
                        p.buffer
                    ),
                    "pass one resource per non-workgroup buffer of the Program, in binding order",
                ));
            };
            parts.push((a.buffer, 0usize, a.elements));
        }
        let opts = Self::options(opts);
        let t = self
            .rt
            .launch_resident_parts(&h, &abi, shape, &parts, &opts)
            .map_err(failure)?;
        Ok(times(&t))
    }

    fn finish(&mut self) -> DeviceResult<()> {
        self.rt.synchronize().map_err(failure)
    }

    fn recover(&mut self) -> DeviceResult<()> {
        self.rt.recreate().map(|_| ()).map_err(failure)
    }

    fn lost(&self) -> bool {
        self.rt.poisoned().is_some()
    }

    fn cache_counts(&self) -> Option<(u64, u64)> {
        Some((self.hits, self.misses))
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        let t = self.rt.telemetry();
        let cache = self.rt.cache_report();
        vec![
            ("cuda_kernel_launches", t.launches),
            ("cuda_cooperative_launches", t.cooperative_launches),
            ("cuda_host_to_device_bytes", t.h2d_bytes),
            ("cuda_device_to_host_bytes", t.d2h_bytes),
            ("cuda_allocations", t.allocations),
            ("cuda_sync_points", t.sync_points),
            ("cuda_jit_count", t.jit_count),
            ("cuda_faults", t.faults),
            ("cuda_contexts_created", t.contexts_created),
            ("cuda_module_cache_hits", cache.module.hits),
            ("cuda_module_cache_misses", cache.module.misses),
            ("cuda_ptx_cache_hits", cache.ptx.hits),
            ("cuda_ptx_cache_misses", cache.ptx.misses),
            ("vyrescope_kernel_map_hits", self.hits),
            ("vyrescope_kernel_map_misses", self.misses),
        ]
    }
}

/// Builds `vyrescope-cuda` on device `VYRESCOPE_CUDA_DEVICE` (default 0); without a CUDA
/// driver or device, an error with a `Fix:` (vyre's registry then skips it).
pub fn cuda_factory() -> Result<Box<dyn VyreBackend>, BackendError> {
    let ordinal = match std::env::var("VYRESCOPE_CUDA_DEVICE") {
        Ok(v) => v.trim().parse::<u32>().map_err(|_| {
            BackendError::new(format!(
                "VYRESCOPE_CUDA_DEVICE={v:?} is not a device ordinal. Fix: set it to a number such as 0 (see nvidia-smi), or unset it."
            ))
        })?,
        Err(_) => 0,
    };
    let device = CudaDevice::open(ordinal).map_err(|e| {
        BackendError::new(format!(
            "{CUDA_ID} could not open CUDA device {ordinal}: {}. Fix: {}",
            e.message(),
            e.fix()
        ))
    })?;
    // `VYRESCOPE_CAPTURE=DIR` records every call (docs/capture.md); unset, the backend as is.
    Ok(vyrescope_capture::capture_from_env(Box::new(
        VyrescopeBackend::new(CUDA_ID, device)?,
    )))
}

inventory::submit! {
    registry::registration(CUDA_ID, false, cuda_factory)
}

inventory::submit! {
    BackendPrecedence { id: CUDA_ID, rank: CUDA_RANK }
}

inventory::submit! {
    BackendCapability { id: CUDA_ID, dispatches: true }
}

/// Keeps both vyrescope backends' registrations in the final binary and returns their ids:
/// an application calls it once (or names any other item of this module) before it reads
/// vyre's registry. See docs/vyre.md, "Using vyrescope as vyre's backend".
pub fn link() -> [&'static str; 2] {
    std::hint::black_box(cuda_factory as fn() -> _);
    [CUDA_ID, registry::link()]
}
