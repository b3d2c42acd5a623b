//! Dispatch: host buffers -> device (pinned, double-buffered staging), launch with the
//! emitter's ABI, CUDA-event device time plus host enqueue/wait time, read back.
//!
//! The ABI (`emit::KernelAbi`): per host buffer, in binding order, a `.u64` pointer and a
//! `.u32` element count; kernels with a grid barrier take one more `.u64`, a zeroed scratch,
//! and are launched cooperatively after checking that the whole grid fits on the device.
//!
//! Large copies go through a ring of pinned staging slots: the host copies chunk k into a
//! slot (in parallel, with rayon) while the DMA engine moves chunk k-1, so a full dispatch
//! costs about one pass over the data at link speed instead of a pageable copy.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::copies::{download_from, upload_into};
use super::driver::nvtx;
use super::driver::{self, DeviceBuffer, DriverError, Event, Function, Geometry};
use super::jit::KernelHandle;
use super::scratch::{ScratchState, SyncUse};
use super::{Result, Runtime, RuntimeError, GENERIC_FIX};
use crate::emit::KernelAbi;
use crate::inputs::{HostBuffer, LaunchShape, Staged};

mod timing;

pub use timing::{ColdWarm, LaunchTiming, TimingStats};

/// Bytes per staging slot.
pub const STAGING_CHUNK: usize = 16 << 20;
/// Staging slots in the ring.
pub const STAGING_SLOTS: usize = 4;
/// Device bytes kept in the reuse pool at most.
const POOL_LIMIT: usize = 8 << 30;

/// How to dispatch.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchOptions {
    /// Launches in total (>= 1): the first is read back (and verified by callers), the
    /// others re-launch on the resident buffers for timing.
    pub repeat: u32,
    /// Give up on a launch after this long (the context is then recreated).
    pub timeout: Option<Duration>,
    /// Read writable buffers back after the first launch.
    pub readback: bool,
    /// Invocations that do useful work (for wasted-slot telemetry); None = all.
    pub useful_invocations: Option<u64>,
    /// Dynamic shared memory bytes per block.
    pub dynamic_smem: u32,
    /// Time each launch with CUDA events (two event records and a query per launch);
    /// without it `device_ms` is absent (`None`) and the host only waits on the stream.
    pub device_timing: bool,
}

impl Default for DispatchOptions {
    fn default() -> Self {
        DispatchOptions {
            repeat: 1,
            timeout: None,
            readback: true,
            useful_invocations: None,
            dynamic_smem: 0,
            device_timing: true,
        }
    }
}

/// How one launch is made and waited for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct LaunchMode {
    /// `cuLaunchCooperativeKernel` (grid barrier).
    pub cooperative: bool,
    /// Give up after this long.
    pub timeout: Option<Duration>,
    /// Record CUDA events around the launch.
    pub timed: bool,
}

/// A launch whose kernel, shape and arguments are checked and built, ready to enqueue.
pub(super) struct ReadyLaunch {
    /// The kernel.
    pub f: Function,
    /// Grid and block.
    pub geo: Geometry,
    /// One 8-byte slot per parameter.
    pub args: Vec<u64>,
    /// Needs `cuLaunchCooperativeKernel` (grid barrier).
    pub cooperative: bool,
    /// Threads launched.
    pub slots: u64,
    /// The kernel's scratch use, for [`Runtime::arm_grid_sync`] (None without a scratch).
    pub sync: Option<SyncUse>,
}

/// What a dispatch did and how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchReport {
    /// Kernel name.
    pub kernel: String,
    /// Blocks.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Launched cooperatively (grid barrier).
    pub cooperative: bool,
    /// Device time over all launches; `None` (JSON `null`) when device timing was off.
    pub device_ms: Option<TimingStats>,
    /// Every launch's device time (ms), in order (empty when device timing was off).
    pub device_samples_ms: Vec<f64>,
    /// Host->device copy wall time (ms).
    pub upload_ms: f64,
    /// First launch: enqueue (ms).
    pub enqueue_ms: f64,
    /// First launch: wait (ms).
    pub wait_ms: f64,
    /// Device->host copy wall time (ms).
    pub readback_ms: f64,
    /// Upload + first launch + readback wall time (ms).
    pub full_ms: f64,
    /// Bytes uploaded.
    pub h2d_bytes: u64,
    /// Bytes read back.
    pub d2h_bytes: u64,
}

/// Buffers left on the device between launches. Owned by the runtime's current context: a
/// context recreated after a fault invalidates it (using it then is an error, never a
/// dangling pointer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResidentSet {
    id: u64,
    generation: u64,
    /// Element counts in binding order.
    pub lens: Vec<u64>,
}

impl ResidentSet {
    /// A set of one buffer already in the pool's resident map under `id`.
    pub(super) fn single(id: u64, generation: u64, len: u64) -> ResidentSet {
        ResidentSet {
            id,
            generation,
            lens: vec![len],
        }
    }

    pub(super) fn id(&self) -> u64 {
        self.id
    }

    pub(super) fn generation_of(&self) -> u64 {
        self.generation
    }
}

/// Device buffers kept for reuse, by size.
#[derive(Default)]
pub(super) struct BufferPool {
    free: HashMap<usize, Vec<DeviceBuffer>>,
    bytes: usize,
    /// Buffers of resident sets, by set id.
    pub(super) resident: HashMap<u64, Vec<DeviceBuffer>>,
    pub(super) next_id: u64,
    /// Grid-barrier scratch (zeroed when allocated, not between launches: see
    /// [`Runtime::arm_grid_sync`]).
    pub(super) scratch: Option<DeviceBuffer>,
    /// What the scratch has held since it was zeroed.
    pub(super) scratch_state: ScratchState,
}

impl BufferPool {
    pub(super) fn take(&mut self, bytes: usize) -> Option<DeviceBuffer> {
        let v = self.free.get_mut(&bytes)?;
        let b = v.pop()?;
        self.bytes -= bytes;
        Some(b)
    }

    fn put(&mut self, b: DeviceBuffer) {
        if self.bytes + b.bytes() <= POOL_LIMIT {
            self.bytes += b.bytes();
            self.free.entry(b.bytes()).or_default().push(b);
        }
    }
}

fn product(v: [u32; 3]) -> u64 {
    v.iter().map(|&x| x as u64).product()
}

/// Copies and allocation counters of one operation, applied to telemetry afterwards (the
/// session and the telemetry are borrowed separately).
#[derive(Default)]
pub(super) struct Counters {
    pub(super) allocs: u64,
    pub(super) alloc_bytes: u64,
    pub(super) h2d: u64,
    pub(super) d2h: u64,
    pub(super) syncs: u64,
}

impl Runtime {
    pub(super) fn apply(&mut self, c: &Counters) {
        self.telemetry.allocations += c.allocs;
        self.telemetry.allocated_bytes += c.alloc_bytes;
        self.telemetry.h2d_bytes += c.h2d;
        self.telemetry.d2h_bytes += c.d2h;
        self.telemetry.sync_points += c.syncs;
    }

    /// Maps a driver error of a copy: sticky errors (an earlier faulting kernel) recreate
    /// the context.
    pub(super) fn copy_error(&mut self, e: DriverError) -> RuntimeError {
        if e.is_sticky() {
            self.launch_error("(previous launch)", e)
        } else {
            RuntimeError::driver(
                e,
                "device memory may be exhausted (see `nvidia-smi`); try fewer elements",
            )
        }
    }

    /// Uploads `buffers` (binding order) into device memory that stays resident. Buffers
    /// whose bytes are all zero are cleared on the device instead of copied.
    pub fn upload(&mut self, buffers: &[HostBuffer]) -> Result<ResidentSet> {
        self.upload_from(buffers, &[])
    }

    /// [`Runtime::upload`] with buffer `i`'s bytes taken as `sources[i]` says (the
    /// caller's slice staged as it is, or known zeros; absent: `buffers[i].data`).
    pub fn upload_from(
        &mut self,
        buffers: &[HostBuffer],
        sources: &[Staged<'_>],
    ) -> Result<ResidentSet> {
        let _range = nvtx::range("vyrescope upload");
        self.sess()?;
        let mut c = Counters::default();
        let mut devs = Vec::with_capacity(buffers.len());
        let r = match self.session.as_mut() {
            Some(sess) => upload_into(sess, buffers, sources, &mut devs, &mut c),
            None => Ok(()),
        };
        self.apply(&c);
        if let Err(e) = r {
            drop(devs);
            return Err(self.copy_error(e));
        }
        let lens = devs
            .iter()
            .zip(buffers)
            .map(|(d, b)| (d.bytes() / b.elem.size_bytes()) as u64)
            .collect();
        let sess = self.sess()?;
        sess.pool.next_id += 1;
        let id = sess.pool.next_id;
        sess.pool.resident.insert(id, devs);
        Ok(ResidentSet {
            id,
            generation: sess.generation,
            lens,
        })
    }

    /// Reads the writable buffers of `set` back into `buffers` (binding order); returns the
    /// bytes read.
    pub fn download(&mut self, set: &ResidentSet, buffers: &mut [HostBuffer]) -> Result<u64> {
        let _range = nvtx::range("vyrescope readback");
        let sess = self.sess()?;
        if set.generation != sess.generation {
            return Err(RuntimeError::StaleResident);
        }
        let mut c = Counters::default();
        let r = download_from(sess, set.id, buffers, &mut c);
        self.apply(&c);
        r.map_err(|e| self.copy_error(e))?;
        Ok(c.d2h)
    }

    /// Returns the buffers of `set` to the reuse pool.
    pub fn release(&mut self, set: ResidentSet) {
        if let Some(sess) = self.session.as_mut() {
            if sess.generation == set.generation {
                if let Some(bufs) = sess.pool.resident.remove(&set.id) {
                    for b in bufs {
                        sess.pool.put(b);
                    }
                }
            }
        }
    }

    /// Checks a launch against the device and kernel limits before the driver sees it.
    pub(super) fn check_shape(
        &self,
        kernel: &str,
        shape: &LaunchShape,
        max_threads: u32,
        dynamic_smem: u32,
        static_smem: u32,
    ) -> Result<()> {
        let caps = self.caps();
        let threads = product(shape.workgroup_size);
        let mut problems = Vec::new();
        if threads == 0 || product(shape.grid) == 0 {
            problems.push("workgroup and grid dimensions must all be >= 1".to_string());
        }
        if threads > max_threads as u64 {
            problems.push(format!(
                "workgroup of {threads} threads exceeds the {max_threads} this kernel can launch with (device limit {}, lower when registers limit it)",
                caps.max_threads_per_block
            ));
        }
        for a in 0..3 {
            if shape.workgroup_size[a] > caps.max_block_dim[a] {
                problems.push(format!(
                    "workgroup {} = {} exceeds the device's {}",
                    ["x", "y", "z"][a],
                    shape.workgroup_size[a],
                    caps.max_block_dim[a]
                ));
            }
            if shape.grid[a] > caps.max_grid_dim[a] {
                problems.push(format!(
                    "grid {} = {} exceeds the device's {}",
                    ["x", "y", "z"][a],
                    shape.grid[a],
                    caps.max_grid_dim[a]
                ));
            }
        }
        let smem = dynamic_smem as u64 + static_smem as u64;
        if smem > caps.smem_per_block_optin as u64 {
            problems.push(format!(
                "{smem} bytes of shared memory exceed the device's {} per block",
                caps.smem_per_block_optin
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(RuntimeError::Launch(crate::util::Problem::new(
                format!(
                    "cannot launch `{kernel}` with workgroup {:?} x grid {:?}: {}",
                    shape.workgroup_size,
                    shape.grid,
                    problems.join("; ")
                ),
                "pick a smaller --workgroup (see `vyrescope occupancy`) or grid",
            )))
        }
    }

    /// `warmup` then `iters` launches of `ptx`'s kernel `name` straight through cudarc, over
    /// the resident set `set` in the emitter's ABI (pointer and count per buffer), with or
    /// without CUDA events around each: the bare baseline of the dispatch overhead benchmark.
    /// Returns the host time of each of the `iters` launches (µs).
    #[allow(clippy::too_many_arguments)]
    pub fn bare_launch_loop(
        &mut self,
        ptx: &str,
        name: &str,
        shape: &LaunchShape,
        set: &ResidentSet,
        warmup: u32,
        iters: u32,
        events: bool,
    ) -> Result<Vec<f64>> {
        let sess = self.sess()?;
        let bufs = sess
            .pool
            .resident
            .get(&set.id())
            .ok_or(RuntimeError::StaleResident)?;
        let mut args: Vec<u64> = Vec::new();
        for (b, &n) in bufs.iter().zip(&set.lens) {
            args.push(b.ptr());
            args.push(n);
        }
        let geo = Geometry {
            grid: shape.grid,
            block: shape.workgroup_size,
            dynamic_smem: 0,
        };
        let mut run = |n: u32| {
            driver::bare_cudarc_launch_loop(ptx, name, &geo, &sess.stream, &mut args, n, events)
                .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))
        };
        run(warmup)?;
        run(iters)
    }

    /// Launches `h` `launches` times on resident buffers and returns each launch's times.
    pub fn launch_resident(
        &mut self,
        h: &KernelHandle,
        abi: &KernelAbi,
        shape: &LaunchShape,
        set: &ResidentSet,
        launches: u32,
        opts: &DispatchOptions,
    ) -> Result<Vec<LaunchTiming>> {
        self.launch_resident_mapped(h, abi, shape, set, None, launches, opts)
    }

    /// Like [`Runtime::launch_resident`], with the kernel's buffer `i` (binding order) taken
    /// from `set` buffer `map[i]` (`None`: buffer `i`), so that kernels over different subsets
    /// of one resident set (the steps of a pipeline) share its device buffers.
    #[allow(clippy::too_many_arguments)]
    pub fn launch_resident_mapped(
        &mut self,
        h: &KernelHandle,
        abi: &KernelAbi,
        shape: &LaunchShape,
        set: &ResidentSet,
        map: Option<&[usize]>,
        launches: u32,
        opts: &DispatchOptions,
    ) -> Result<Vec<LaunchTiming>> {
        let identity: Vec<usize>;
        let map = match map {
            Some(m) => m,
            None => {
                identity = (0..set.lens.len()).collect();
                &identity
            }
        };
        if map.len() != abi.params.len() {
            return Err(RuntimeError::Abi(crate::util::Problem::new(
                format!(
                    "kernel `{}` takes {} buffers but {} were given",
                    h.name,
                    abi.params.len(),
                    map.len()
                ),
                "pass one host buffer per ABI parameter, in binding order",
            )));
        }
        if let Some(&bad) = map.iter().find(|&&i| i >= set.lens.len()) {
            return Err(RuntimeError::Abi(crate::util::Problem::new(
                format!(
                    "kernel `{}`: buffer map names resident buffer {bad} of {}",
                    h.name,
                    set.lens.len()
                ),
                "map every kernel buffer to a buffer of the resident set",
            )));
        }
        let _range = nvtx::range(&format!("vyrescope launch {}", h.name));
        let mut ready = self.prepare_launch(h, abi, shape, set, map, opts)?;
        let useful = opts
            .useful_invocations
            .unwrap_or(ready.slots)
            .min(ready.slots);
        let mut out = Vec::with_capacity(launches as usize);
        for _ in 0..launches.max(1) {
            self.arm_grid_sync(&mut ready)?;
            let mode = LaunchMode {
                cooperative: ready.cooperative,
                timeout: opts.timeout,
                timed: opts.device_timing,
            };
            let t = self.launch_core(&h.name, ready.f, &ready.geo, &mut ready.args, mode)?;
            self.telemetry
                .record_launch(ready.cooperative, ready.slots, useful, t.device_ms);
            out.push(t);
        }
        Ok(out)
    }

    /// Checks a launch of `h` over `set` (through `map`) and builds its arguments, ready to
    /// enqueue: the kernel loaded, the shape and co-residency checked, the grid-barrier
    /// scratch allocated.
    pub(super) fn prepare_launch(
        &mut self,
        h: &KernelHandle,
        abi: &KernelAbi,
        shape: &LaunchShape,
        set: &ResidentSet,
        map: &[usize],
        opts: &DispatchOptions,
    ) -> Result<ReadyLaunch> {
        if map.len() != abi.params.len() || map.iter().any(|&i| i >= set.lens.len()) {
            return Err(RuntimeError::Abi(crate::util::Problem::new(format!("kernel `{}` takes {} buffers; the map {map:?} does not fit a resident set of {}", h.name, abi.params.len(), set.lens.len()), "map every kernel buffer to a buffer of the resident set")));
        }
        let all = self.resident_pointers(set)?;
        let mut bufs = Vec::with_capacity(map.len());
        for &i in map {
            let ptr = all.get(i).copied().ok_or(RuntimeError::StaleResident)?;
            bufs.push((ptr, set.lens[i]));
        }
        self.prepare_launch_bufs(h, abi, shape, &bufs, opts)
    }

    /// Readies the grid-sync scratch for the next launch of `ready` (call it right before
    /// every launch of a prepared kernel): gives it a fresh epoch, and zeroes the scratch in
    /// the rare cases `scratch::ScratchState::arm` names.
    pub(super) fn arm_grid_sync(&mut self, ready: &mut ReadyLaunch) -> Result<()> {
        let Some(sync) = ready.sync else {
            return Ok(());
        };
        let sess = self.sess()?;
        let armed = sess.pool.scratch_state.arm(&sync);
        if armed.clear {
            if let Some(s) = sess.pool.scratch.as_ref() {
                s.memset_async(0, &sess.stream)
                    .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
            }
        }
        if let (Some(i), Some(e)) = (sync.epoch_arg, armed.epoch) {
            if let Some(slot) = ready.args.get_mut(i) {
                *slot = u64::from(e);
            }
        }
        Ok(())
    }

    /// Refuses a cooperative launch whose grid cannot be resident at once.
    pub(super) fn check_coresidency(
        &mut self,
        kernel: &str,
        f: Function,
        geo: &Geometry,
    ) -> Result<()> {
        let block = product(geo.block) as u32;
        let per_sm = f
            .max_active_blocks(block, geo.dynamic_smem)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let sms = self.caps().sm_count;
        let max_blocks = per_sm as u64 * sms as u64;
        let grid_blocks = product(geo.grid);
        if !self.caps().cooperative_launch {
            return Err(RuntimeError::Launch(crate::util::Problem::new(format!("kernel `{kernel}` has a grid barrier but this device does not support cooperative launch"), "split the Program at the grid barrier into two dispatches")));
        }
        if grid_blocks > max_blocks {
            return Err(RuntimeError::CoResidency {
                kernel: kernel.to_string(),
                grid_blocks,
                max_blocks,
                per_sm,
                sms,
                block,
                regs: f
                    .attr(cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_NUM_REGS)
                    .map_or(0, |r| r.max(0) as u32),
            });
        }
        Ok(())
    }

    /// One timed launch: events around it, host enqueue and wait times, fault handling.
    pub(super) fn launch_core(
        &mut self,
        kernel: &str,
        f: Function,
        geo: &Geometry,
        args: &mut [u64],
        mode: LaunchMode,
    ) -> Result<LaunchTiming> {
        let LaunchMode {
            cooperative,
            timeout,
            timed,
        } = mode;
        // A timeout polls the stop event, so it needs the events too; the device time is
        // still reported only when it was asked for.
        let report_device_ms = timed;
        let timed = timed || timeout.is_some();
        let sess = self.sess()?;
        let t0 = Instant::now();
        let r = if timed {
            sess.ev_start
                .record(&sess.stream)
                .and_then(|_| driver::launch(f, geo, &sess.stream, args, cooperative))
                .and_then(|_| sess.ev_stop.record(&sess.stream))
        } else {
            driver::launch(f, geo, &sess.stream, args, cooperative)
        };
        let enqueue_ms = t0.elapsed().as_secs_f64() * 1e3;
        if let Err(e) = r {
            return Err(self.launch_error(kernel, e));
        }
        let t1 = Instant::now();
        let waited = match timeout {
            None if !timed => sess.stream.synchronize(),
            None => sess.ev_stop.synchronize(),
            Some(limit) => loop {
                match sess.ev_stop.query() {
                    Ok(true) => break Ok(()),
                    Ok(false) if t1.elapsed() < limit => {
                        std::thread::sleep(Duration::from_micros(50))
                    }
                    Ok(false) => {
                        self.telemetry.faults += 1;
                        let recover_ms = self.recreate()?;
                        return Err(RuntimeError::Timeout {
                            kernel: kernel.to_string(),
                            timeout_ms: limit.as_millis() as u64,
                            recover_ms,
                        });
                    }
                    Err(e) => break Err(e),
                }
            },
        };
        let wait_ms = t1.elapsed().as_secs_f64() * 1e3;
        self.telemetry.sync_points += 1;
        self.telemetry.enqueue_ms_total += enqueue_ms;
        self.telemetry.wait_ms_total += wait_ms;
        if let Err(e) = waited {
            return Err(self.launch_error(kernel, e));
        }
        let device_ms = if report_device_ms {
            let sess = self.sess()?;
            Some(
                Event::elapsed_ms(&sess.ev_start, &sess.ev_stop)
                    .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?,
            )
        } else {
            None
        };
        Ok(LaunchTiming {
            device_ms,
            enqueue_ms,
            wait_ms,
        })
    }

    /// Full dispatch: upload `buffers`, launch once, read writable buffers back into
    /// `buffers`, then re-launch `repeat - 1` times on the resident buffers for timing.
    pub fn dispatch(
        &mut self,
        h: &KernelHandle,
        abi: &KernelAbi,
        shape: &LaunchShape,
        buffers: &mut [HostBuffer],
        opts: &DispatchOptions,
    ) -> Result<DispatchReport> {
        self.dispatch_from(h, abi, shape, buffers, &[], opts)
    }

    /// [`Runtime::dispatch`] with buffer `i`'s input bytes taken from `sources[i]` when given
    /// (see [`Runtime::upload_from`]); a writable buffer with a source is read back into
    /// `buffers[i].data`, sized to the source.
    pub fn dispatch_from(
        &mut self,
        h: &KernelHandle,
        abi: &KernelAbi,
        shape: &LaunchShape,
        buffers: &mut [HostBuffer],
        sources: &[Staged<'_>],
        opts: &DispatchOptions,
    ) -> Result<DispatchReport> {
        if buffers.len() != abi.params.len() {
            return Err(RuntimeError::Abi(crate::util::Problem::new(
                format!(
                    "kernel `{}` takes {} buffers but {} were given",
                    h.name,
                    abi.params.len(),
                    buffers.len()
                ),
                "pass one host buffer per ABI parameter, in binding order",
            )));
        }
        // Load the module first so JIT time stays out of the dispatch figures.
        self.kernel_for_launch(h)?;
        let h2d0 = self.telemetry.h2d_bytes;
        let t0 = Instant::now();
        let set = self.upload_from(buffers, sources)?;
        for (b, s) in buffers.iter_mut().zip(sources) {
            if let Some(s) = s.slice() {
                if b.access.is_writable() && b.data.len() != s.len() {
                    if b.data.is_empty() {
                        // Zeroed by the allocator without touching the pages: they are
                        // mapped on the thread pool during the launch (below), not here.
                        b.data = vec![0u8; s.len()];
                    } else {
                        b.data.resize(s.len(), 0);
                    }
                }
            }
        }
        let upload_ms = t0.elapsed().as_secs_f64() * 1e3;
        let result = (|| {
            // While the device copies and computes, the host maps the pages the results
            // will land in (on the thread pool; this thread launches and waits). Small
            // dispatches hand nothing over: waking a pool thread would cost more.
            let prefault = opts.readback && buffers.iter().any(super::copies::worth_prefaulting);
            let first = rayon::in_place_scope(|s| {
                if prefault {
                    let outs = &mut *buffers;
                    s.spawn(move |_| super::copies::prefault_outputs(outs));
                }
                self.launch_resident(h, abi, shape, &set, 1, opts)
            })?;
            let t1 = Instant::now();
            let d2h = if opts.readback {
                self.download(&set, buffers)?
            } else {
                0
            };
            let readback_ms = t1.elapsed().as_secs_f64() * 1e3;
            let full_ms = t0.elapsed().as_secs_f64() * 1e3;
            let mut samples: Vec<f64> = first.iter().filter_map(|t| t.device_ms).collect();
            if opts.repeat > 1 {
                let more = self.launch_resident(h, abi, shape, &set, opts.repeat - 1, opts)?;
                samples.extend(more.iter().filter_map(|t| t.device_ms));
            }
            Ok::<_, RuntimeError>(DispatchReport {
                kernel: h.name.clone(),
                grid: shape.grid,
                block: shape.workgroup_size,
                cooperative: abi.grid_sync,
                device_ms: opts.device_timing.then(|| TimingStats::of(&samples)),
                device_samples_ms: samples,
                upload_ms,
                enqueue_ms: first[0].enqueue_ms,
                wait_ms: first[0].wait_ms,
                readback_ms,
                full_ms,
                h2d_bytes: 0,
                d2h_bytes: d2h,
            })
        })();
        self.release(set);
        let mut rep = result?;
        rep.h2d_bytes = self.telemetry.h2d_bytes - h2d0;
        Ok(rep)
    }
}
