//! Live CUDA backend (the only `cudarc` user): probe, JIT, dispatch, caches, telemetry.
//!
//! The driver is loaded dynamically: [`Runtime::open`] fails with
//! [`RuntimeError::NoDriver`] (one line plus a `Fix:`) where `libcuda` is absent, so every
//! offline feature of the crate keeps working without a GPU.
//!
//! Layout: `driver` is the unsafe FFI boundary (RAII handles); `probe` reads [`DeviceCaps`];
//! `jit` loads PTX with logs and reads [`KernelResources`]; `dispatch` moves buffers, launches
//! and times; `parity` compares against the reference interpreter; `cache` and `telemetry`
//! keep the statistics; `fault` holds the raw-PTX fault kernels used to test recovery;
//! `execute` runs one Program (inputs, JIT, dispatch, parity); `launch_list` is the one loop
//! that runs a sequence of launches over resident buffers, `pipeline` a pipeline's execution
//! through it and `timeline` its record mode (instrumented kernels, one record buffer per
//! launch); `worker` runs GPU work in a replaceable process.
//! The command harnesses built on this API (`selftest`, `fuzz`, `bench`, `tune`, ...) live one
//! layer up, in [`crate::harness`].
//!
//! Recovery: a sticky kernel fault (illegal address, trap) or a timeout leaves the CUDA
//! context unusable, so the runtime drops the whole [`Session`] (everything allocated in the
//! context, then the context) and creates a fresh one; caches of host-side data (PTX) survive.

use std::collections::HashMap;

use crate::occupancy::DeviceCaps;

pub mod cache;
pub(crate) mod copies;
pub mod cupti;
pub mod dispatch;
pub(crate) mod driver;
pub mod execute;
pub mod fault;
pub mod foreign;
pub mod jit;
pub mod launch_list;
pub mod parity;
pub mod pipeline;
pub mod probe;
pub mod resident;
pub(crate) mod scratch;
pub mod telemetry;
pub mod timeline;
#[cfg(feature = "vyre")]
pub mod vyre_device;
pub mod worker;

pub use cache::CacheStats;
pub use dispatch::{ColdWarm, DispatchOptions, DispatchReport, ResidentSet, TimingStats};
pub use driver::DriverError;
pub use jit::{JitOptions, KernelHandle, KernelInfo};
pub use launch_list::{LaunchList, ListTiming, PassTimes};
pub use parity::{Mismatch, ParityReport};
pub use telemetry::Telemetry;
pub use timeline::{TimelineLaunch, TimelineRun};
pub use worker::{GpuWorker, SweepRequest};

use driver::{Context, Device, Event, Stream};

/// Why a GPU operation failed. Every message ends with a `Fix:` line.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RuntimeError {
    /// `libcuda` could not be loaded.
    NoDriver {
        /// Library name tried.
        lib: String,
        /// Loader's message.
        reason: String,
    },
    /// The driver loaded but there is no usable device.
    NoDevice {
        /// Ordinal asked for.
        ordinal: u32,
        /// What the driver said.
        detail: String,
    },
    /// A driver call failed.
    Driver {
        /// The failed call.
        err: Box<DriverError>,
        /// Hint.
        fix: String,
    },
    /// The JIT rejected the PTX; the error log is kept whole.
    Jit {
        /// Kernel name.
        kernel: String,
        /// The failed call.
        err: Box<DriverError>,
        /// JIT error log (and info log).
        log: String,
    },
    /// A kernel faulted; the context was recreated.
    Fault {
        /// Kernel name.
        kernel: String,
        /// Plain words (illegal memory address, trap, ...).
        what: String,
        /// The driver error that reported it.
        err: Box<DriverError>,
        /// Hint.
        fix: String,
    },
    /// A kernel faulted and the driver refused a fresh context afterwards.
    FaultUnrecovered {
        /// Kernel name.
        kernel: String,
        /// Plain words.
        what: String,
        /// The driver error that reported the fault.
        err: Box<DriverError>,
        /// Why recovery failed.
        recovery: String,
    },
    /// An earlier sticky fault left this process unable to create a CUDA context.
    Poisoned(String),
    /// A kernel ran longer than the timeout; the context was recreated.
    Timeout {
        /// Kernel name.
        kernel: String,
        /// The limit.
        timeout_ms: u64,
        /// How long tearing down the context took.
        recover_ms: f64,
    },
    /// A grid barrier needs more blocks resident at once than the device holds.
    CoResidency {
        /// Kernel name.
        kernel: String,
        /// Workgroups requested.
        grid_blocks: u64,
        /// Largest grid that fits.
        max_blocks: u64,
        /// Blocks per SM from the driver.
        per_sm: u32,
        /// SMs.
        sms: u32,
        /// Threads per block.
        block: u32,
        /// Registers per thread of the loaded kernel.
        regs: u32,
    },
    /// The launch is impossible on this device or with this kernel.
    Launch(crate::util::Problem),
    /// Host buffers do not match the kernel's ABI.
    Abi(crate::util::Problem),
    /// Resident buffers belong to a context that no longer exists.
    StaleResident,
    /// Emission failed.
    Emit(#[from] crate::emit::EmitError),
    /// Inputs could not be prepared.
    Input(#[from] crate::inputs::InputError),
    /// The reference interpreter failed.
    Interp(#[from] crate::interp::InterpError),
    /// A kernel faulted in the GPU worker process; that worker exited and the next request
    /// starts a fresh one (see [`worker`]).
    WorkerFault {
        /// Kernel name.
        kernel: String,
        /// Plain words (illegal memory address, ...).
        what: String,
        /// The driver error that reported it.
        driver: String,
        /// Hint.
        fix: String,
        /// The worker that faulted.
        pid: u32,
    },
    /// The GPU worker process died (end of output, a signal) during a request.
    WorkerDied {
        /// The worker.
        pid: u32,
        /// What it was doing.
        request: String,
        /// Exit code or signal, in words.
        status: String,
        /// Its last stderr lines.
        last_words: String,
        /// Hint.
        fix: String,
    },
    /// The GPU worker process did not answer in time and was killed.
    WorkerHung {
        /// The worker.
        pid: u32,
        /// What it was doing.
        request: String,
        /// How long the client waited (ms).
        waited_ms: u64,
        /// The margin beyond the kernel budget (ms).
        margin_ms: u64,
    },
    /// The GPU worker process could not be started or spoke nonsense.
    Worker(crate::util::Problem),
    /// Anything else (I/O of dumps, caches).
    Other(crate::util::Problem),
}

impl RuntimeError {
    /// Wraps a driver error with a hint.
    pub(crate) fn driver(err: DriverError, fix: &str) -> RuntimeError {
        RuntimeError::Driver {
            err: Box::new(err),
            fix: fix.to_string(),
        }
    }
}

/// Result alias.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

pub(crate) const GENERIC_FIX: &str = "check `nvidia-smi`; if the GPU is healthy this is a vyrescope bug, please report it with the command line";

/// Everything that lives inside one CUDA context. Field order is drop order: all resources
/// go before the context that owns them.
struct Session {
    modules: cache::ModuleCache,
    staging: copies::Staging,
    pool: dispatch::BufferPool,
    ev_start: Event,
    ev_stop: Event,
    stream: Stream,
    ctx: Context,
    /// Increments with each new context; resident sets remember theirs.
    generation: u64,
}

impl Session {
    fn create(dev: Device, generation: u64, primary: bool) -> Result<Session> {
        let ctx =
            Context::create(dev, primary).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        ctx.make_current()
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let stream = Stream::create().map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let ev_start = Event::create(true).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let ev_stop = Event::create(true).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        Ok(Session {
            modules: cache::ModuleCache::new(cache::MODULE_CAPACITY),
            staging: copies::Staging::default(),
            pool: dispatch::BufferPool::default(),
            ev_start,
            ev_stop,
            stream,
            ctx,
            generation,
        })
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // Resources are freed by their own Drop; they need this context current.
        let _ = self.ctx.make_current();
    }
}

/// An open device: context, stream, caches and telemetry.
pub struct Runtime {
    ordinal: u32,
    device: Device,
    caps: DeviceCaps,
    /// None only between destroying a faulted context and creating its replacement.
    session: Option<Session>,
    /// Primary context (default) or an owned one (`VYRESCOPE_CONTEXT=owned`).
    primary: bool,
    /// Set when a sticky fault left the driver refusing new contexts (observed on driver
    /// 580 / CUDA 13: the whole process stays poisoned, as NVIDIA documents for sticky
    /// errors); every later call then fails at once with this reason.
    poisoned: Option<String>,
    /// Try to recreate the context after a sticky fault (the GPU worker turns this off: it
    /// exits instead, and its client starts a fresh process).
    fault_recovery: bool,
    next_generation: u64,
    ptx_cache: cache::PtxCache,
    /// Module-cache counters of contexts destroyed by recoveries.
    module_stats: CacheStats,
    telemetry: Telemetry,
    driver_cache: cache::DriverCache,
    /// Kernel names by handle, for messages.
    names: HashMap<u64, String>,
}

/// Loads the driver and initialises it, mapping a missing library (or a panic inside the
/// loader) to [`RuntimeError::NoDriver`].
pub fn load_driver() -> Result<u32> {
    if let Err(driver::NoLibrary { lib, reason }) = driver::load_library() {
        return Err(RuntimeError::NoDriver { lib, reason });
    }
    let lib = driver::LIBCUDA_NAMES[0].to_string();
    match driver::guarded(|| driver::init().and_then(|_| driver::driver_version())) {
        Err(panic) => Err(RuntimeError::NoDriver {
            lib,
            reason: panic.0,
        }),
        Ok(Err(e)) if e.code == 100 => Err(RuntimeError::NoDevice {
            ordinal: 0,
            detail: e.to_string(),
        }),
        Ok(Err(e)) => Err(RuntimeError::NoDriver {
            lib,
            reason: e.to_string(),
        }),
        Ok(Ok(v)) => Ok(v),
    }
}

/// An open NVTX profiler range (see `runtime::driver::nvtx`): pushed when created, popped
/// when dropped; a no-op when no NVTX library is present. Pipeline execution marks each step
/// and fused group with one.
pub struct ProfilerRange(#[allow(dead_code)] driver::nvtx::Range);

/// Opens an NVTX range called `name`.
pub fn profiler_range(name: &str) -> ProfilerRange {
    ProfilerRange(driver::nvtx::range(name))
}

/// True when an NVTX library was found, so ranges appear in an Nsight Systems timeline.
pub fn profiler_ranges_available() -> bool {
    driver::nvtx::available()
}

impl Runtime {
    /// Opens device `ordinal`: loads the driver, probes the device and creates a context.
    /// Sets `CUDA_CACHE_PATH` (the driver's persistent JIT cache) under the user cache dir
    /// unless the user set it.
    pub fn open(ordinal: u32) -> Result<Runtime> {
        let primary = std::env::var("VYRESCOPE_CONTEXT").map_or(true, |v| v != "owned");
        Self::open_with(ordinal, primary)
    }

    /// [`Runtime::open`] with a context of its own (not the device's primary context), for a
    /// runtime living inside another application (the vyre backend): recreating it after a
    /// fault then never resets the primary context under the application's other CUDA users.
    pub fn open_owned(ordinal: u32) -> Result<Runtime> {
        Self::open_with(ordinal, false)
    }

    fn open_with(ordinal: u32, primary: bool) -> Result<Runtime> {
        // Must happen before cuInit, which reads the variable.
        let driver_cache = cache::DriverCache::configure();
        load_driver()?;
        let device = probe::device(ordinal)?;
        let caps = probe::read_caps(device)?;
        let session = Some(Session::create(device, 1, primary)?);
        let telemetry = Telemetry {
            contexts_created: 1,
            ..Telemetry::default()
        };
        Ok(Runtime {
            ordinal,
            device,
            caps,
            session,
            primary,
            poisoned: None,
            fault_recovery: true,
            next_generation: 2,
            ptx_cache: cache::PtxCache::new(cache::PTX_CAPACITY),
            module_stats: CacheStats::default(),
            telemetry,
            driver_cache,
            names: HashMap::new(),
        })
    }

    /// Whether a sticky fault triggers an attempt to recreate the context in this process
    /// (default on). Off, the runtime reports the fault and refuses later work at once, for
    /// a caller that replaces the whole process instead (the GPU worker).
    pub fn set_in_process_fault_recovery(&mut self, on: bool) {
        self.fault_recovery = on;
    }

    /// The probed capabilities.
    pub fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    /// Device ordinal.
    pub fn ordinal(&self) -> u32 {
        self.ordinal
    }

    /// Telemetry since open.
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// Cache statistics: PTX cache, module cache, driver disk cache location.
    pub fn cache_report(&self) -> cache::CacheReport {
        cache::CacheReport {
            ptx: self.ptx_cache.stats(),
            module: {
                let cur = self
                    .session
                    .as_ref()
                    .map(|s| s.modules.stats())
                    .unwrap_or_default();
                let base = &self.module_stats;
                CacheStats {
                    entries: cur.entries,
                    bytes: cur.bytes,
                    hits: base.hits + cur.hits,
                    misses: base.misses + cur.misses,
                    evictions: base.evictions + cur.evictions,
                    saved_ms: base.saved_ms + cur.saved_ms,
                }
            },
            driver_cache_path: self.driver_cache.path.clone(),
            driver_cache_user_set: self.driver_cache.user_set,
        }
    }

    /// The live session, made current on this thread (recreated if a fault destroyed it).
    fn sess(&mut self) -> Result<&mut Session> {
        if let Some(why) = &self.poisoned {
            return Err(RuntimeError::Poisoned(why.clone()));
        }
        if self.session.is_none() {
            let s = Session::create(self.device, self.next_generation, self.primary)?;
            self.next_generation += 1;
            self.telemetry.contexts_created += 1;
            self.session = Some(s);
        }
        match self.session.as_mut() {
            Some(s) => {
                s.ctx
                    .make_current()
                    .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
                Ok(s)
            }
            None => Err(RuntimeError::Other(crate::util::Problem::new(
                "no CUDA context",
                "retry the command",
            ))),
        }
    }

    /// Destroys the current context with everything in it (the only way out of a sticky
    /// fault) and creates a fresh one; returns how long that took (ms).
    fn recreate(&mut self) -> Result<f64> {
        let t = std::time::Instant::now();
        // Destroy first: a faulted context must be gone before the device is used again.
        // Its module-cache counters are kept (entries and bytes go with it).
        if let Some(old) = self.session.take() {
            let s = old.modules.stats();
            self.module_stats.hits += s.hits;
            self.module_stats.misses += s.misses;
            self.module_stats.evictions += s.evictions;
            self.module_stats.saved_ms += s.saved_ms;
            drop(old);
        }
        if self.primary {
            // Releasing is not enough for a faulted primary context: reset clears it.
            driver::reset_primary(self.device).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        }
        self.sess()?;
        Ok(t.elapsed().as_secs_f64() * 1e3)
    }

    /// Why this runtime can no longer use the GPU (a sticky fault with in-process recovery
    /// off, or a failed recovery), if it cannot.
    pub fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// Turns a driver error during or after a launch into a fault (recreating the context
    /// for sticky errors) or a plain driver error.
    fn launch_error(&mut self, kernel: &str, err: DriverError) -> RuntimeError {
        if err.is_sticky() {
            self.telemetry.faults += 1;
            let (what, fix) = fault::describe(&err);
            if !self.fault_recovery {
                self.poisoned = Some(format!("{what} in `{kernel}`"));
                return RuntimeError::FaultUnrecovered {
                    kernel: kernel.to_string(),
                    what,
                    err: Box::new(err),
                    recovery: "not attempted: this GPU worker process exits instead".into(),
                };
            }
            if let Err(e) = self.recreate() {
                self.poisoned = Some(format!("{what} in `{kernel}`"));
                return RuntimeError::FaultUnrecovered {
                    kernel: kernel.to_string(),
                    what,
                    err: Box::new(err),
                    recovery: e.to_string().lines().next().unwrap_or_default().to_string(),
                };
            }
            RuntimeError::Fault {
                kernel: kernel.to_string(),
                what,
                err: Box::new(err),
                fix,
            }
        } else {
            RuntimeError::driver(err, GENERIC_FIX)
        }
    }
}

impl crate::util::HasFix for RuntimeError {
    fn message(&self) -> String {
        match self {
            Self::NoDriver { lib, reason, .. } => format!("no CUDA driver found ({lib}): {reason}"),
            Self::NoDevice { ordinal, detail, .. } => format!("no CUDA device {ordinal} ({detail})"),
            Self::Driver { err, .. } => err.to_string(),
            Self::Jit { kernel, err, log, .. } => format!("JIT of kernel `{kernel}` failed: {err}\n{log}"),
            Self::Fault { kernel, what, err, .. } => format!("kernel `{kernel}` faulted: {what} ({err}); the CUDA context was recreated, later dispatches work"),
            Self::FaultUnrecovered { kernel, what, err, recovery, .. } => format!("kernel `{kernel}` faulted: {what} ({err}); recreating the CUDA context failed: {recovery}"),
            Self::Poisoned(a0) => format!("the GPU state of this process was poisoned by an earlier fault ({a0}); the driver refuses new contexts"),
            Self::Timeout { kernel, timeout_ms, recover_ms, .. } => format!("kernel `{kernel}` did not finish within {timeout_ms} ms; the CUDA context was recreated (recovery took {recover_ms:.0} ms)"),
            Self::CoResidency { kernel, grid_blocks, max_blocks, per_sm, sms, block, regs, .. } => format!("kernel `{kernel}` has a grid barrier and needs all {grid_blocks} workgroups resident at once, but only {max_blocks} fit ({per_sm} per SM x {sms} SMs at {block} threads and {regs} registers per thread)"),
            Self::Launch(e) => crate::util::HasFix::message(e),
            Self::Abi(e) => crate::util::HasFix::message(e),
            Self::StaleResident => "resident buffers were lost when the CUDA context was recreated after a fault".to_string(),
            Self::Emit(e) => crate::util::HasFix::message(e),
            Self::Input(e) => crate::util::HasFix::message(e),
            Self::Interp(e) => crate::util::HasFix::message(e),
            Self::WorkerFault { kernel, what, driver, pid, .. } => format!("kernel `{kernel}` faulted: {what} ({driver}); the GPU worker process (pid {pid}) that ran it exited, and the next GPU request recreates the CUDA context in a fresh worker process"),
            Self::WorkerDied { pid, request, status, last_words, .. } => format!("the GPU worker process (pid {pid}) died during {request}: {status}{words}; the next GPU request starts a fresh worker", words = if last_words.is_empty() { String::new() } else { format!("; its last words: {last_words}") }),
            Self::WorkerHung { pid, request, waited_ms, margin_ms, .. } => format!("the GPU worker process (pid {pid}) did not finish {request} within {waited_ms} ms (the kernel time its timeout allows plus a {margin_ms} ms margin); it was killed, and the next GPU request starts a fresh worker"),
            Self::Worker(e) => crate::util::HasFix::message(e),
            Self::Other(e) => crate::util::HasFix::message(e),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::NoDriver { .. } => "run on a machine with an NVIDIA driver; offline features (check, print, emit, occupancy --device) work without one".to_string(),
            Self::NoDevice { .. } => "check `nvidia-smi` and CUDA_VISIBLE_DEVICES; offline features work without a GPU".to_string(),
            Self::Driver { fix, .. } => fix.to_string(),
            Self::Jit { .. } => "the PTX is invalid for this device; the log above names the PTX line (see `vyrescope emit --map`)".to_string(),
            Self::Fault { fix, .. } => fix.to_string(),
            Self::FaultUnrecovered { .. } => "the driver keeps this process's GPU state poisoned after such a fault; restart vyrescope".to_string(),
            Self::Poisoned(_) => "restart vyrescope (a fault in an emitted kernel is a vyrescope bug: please report it)".to_string(),
            Self::Timeout { .. } => "raise --timeout, or shrink the grid / loop bounds".to_string(),
            Self::CoResidency { max_blocks, .. } => format!("launch at most {max_blocks} workgroups (--grid {max_blocks}) and loop over the data inside the kernel"),
            Self::Launch(e) => crate::util::HasFix::fix(e),
            Self::Abi(e) => crate::util::HasFix::fix(e),
            Self::StaleResident => "upload the buffers again".to_string(),
            Self::Emit(e) => crate::util::HasFix::fix(e),
            Self::Input(e) => crate::util::HasFix::fix(e),
            Self::Interp(e) => crate::util::HasFix::fix(e),
            Self::WorkerFault { fix, .. } => fix.to_string(),
            Self::WorkerDied { fix, .. } => fix.to_string(),
            Self::WorkerHung { .. } => "a kernel may be stuck in an endless loop: lower its loop bounds or grid, or give it a larger --timeout".to_string(),
            Self::Worker(e) => crate::util::HasFix::fix(e),
            Self::Other(e) => crate::util::HasFix::fix(e),
        }
    }

    fn problem(&self) -> crate::util::Problem {
        match self {
            Self::Launch(e) => crate::util::HasFix::problem(e),
            Self::Abi(e) => crate::util::HasFix::problem(e),
            Self::Emit(e) => crate::util::HasFix::problem(e),
            Self::Input(e) => crate::util::HasFix::problem(e),
            Self::Interp(e) => crate::util::HasFix::problem(e),
            Self::Worker(e) => crate::util::HasFix::problem(e),
            Self::Other(e) => crate::util::HasFix::problem(e),
            _ => crate::util::Problem::located(self.message(), self.fix()),
        }
    }
}

crate::util::problem::into_problem!(RuntimeError);
