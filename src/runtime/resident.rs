//! Resident buffers addressed by bytes, for callers that manage device memory one buffer at
//! a time (vyrescope's vyre backend: vyre's `allocate_resident`, `upload_resident_at`,
//! `download_resident_range`, `dispatch_resident_timed`): each is a [`ResidentSet`] of one
//! buffer, so it lives in the current context's pool and a context recreated after a fault
//! makes it stale (an error, never a dangling pointer), like every resident set.
//!
//! Also the one place a launch's arguments are built from device pointers and element
//! counts ([`Runtime::prepare_launch_bufs`]), shared by resident sets and these buffers.

use super::copies::{download_at, upload_at};
use super::dispatch::{Counters, DispatchOptions, LaunchMode, LaunchTiming, ReadyLaunch};
use super::driver::{nvtx, DeviceBuffer, Geometry};
use super::jit::KernelHandle;
use super::scratch::{ScratchState, SyncUse};
use super::{Result, Runtime, RuntimeError, GENERIC_FIX};
use crate::emit::KernelAbi;
use crate::inputs::LaunchShape;

fn product(v: [u32; 3]) -> u64 {
    v.iter().map(|&x| u64::from(x)).product()
}

impl Runtime {
    /// A zeroed device buffer of `bytes` bytes, resident until [`Runtime::release`].
    pub fn alloc_resident(&mut self, bytes: usize) -> Result<ResidentSet> {
        let sess = self.sess()?;
        let mut c = Counters::default();
        let d = match sess.pool.take(bytes) {
            Some(d) => d,
            None => {
                c.allocs += 1;
                c.alloc_bytes += bytes as u64;
                match DeviceBuffer::alloc(bytes) {
                    Ok(d) => d,
                    Err(e) => return Err(self.copy_error(e)),
                }
            }
        };
        let sess = self.sess()?;
        if let Err(e) = d.memset_async(0, &sess.stream) {
            return Err(self.copy_error(e));
        }
        let sess = self.sess()?;
        sess.pool.next_id += 1;
        let id = sess.pool.next_id;
        let generation = sess.generation;
        sess.pool.resident.insert(id, vec![d]);
        self.apply(&c);
        Ok(ResidentSet::single(id, generation, bytes as u64))
    }

    /// The device buffer `index` of `set`, checked against the current context.
    fn resident_buffer(&mut self, set: &ResidentSet, index: usize) -> Result<()> {
        let sess = self.sess()?;
        if set.generation_of() != sess.generation {
            return Err(RuntimeError::StaleResident);
        }
        match sess.pool.resident.get(&set.id()) {
            Some(v) if index < v.len() => Ok(()),
            _ => Err(RuntimeError::StaleResident),
        }
    }

    /// Copies `bytes` into buffer `index` of `set` from byte `offset` on (queued on the
    /// runtime's stream, so later launches and reads see it).
    pub fn write_resident(
        &mut self,
        set: &ResidentSet,
        index: usize,
        offset: usize,
        bytes: &[u8],
    ) -> Result<()> {
        let _range = nvtx::range("vyrescope resident write");
        self.resident_buffer(set, index)?;
        let mut c = Counters::default();
        let r = match self.session.as_mut() {
            Some(sess) => {
                // Take the buffer out of the pool while the session's staging is borrowed.
                let Some(devs) = sess.pool.resident.remove(&set.id()) else {
                    return Err(RuntimeError::StaleResident);
                };
                let r = range_ok(&devs[index], offset, bytes.len()).and_then(|_| {
                    upload_at(sess, &devs[index], offset, bytes, &mut c).map_err(Some)
                });
                sess.pool.resident.insert(set.id(), devs);
                r
            }
            None => return Err(RuntimeError::StaleResident),
        };
        self.apply(&c);
        match r {
            Ok(()) => Ok(()),
            Err(None) => Err(out_of_range("write", offset, bytes.len(), set, index)),
            Err(Some(e)) => Err(self.copy_error(e)),
        }
    }

    /// Reads `out.len()` bytes of buffer `index` of `set` from byte `offset` on (waits for
    /// the work queued before it).
    pub fn read_resident(
        &mut self,
        set: &ResidentSet,
        index: usize,
        offset: usize,
        out: &mut [u8],
    ) -> Result<()> {
        let _range = nvtx::range("vyrescope resident read");
        self.resident_buffer(set, index)?;
        let mut c = Counters::default();
        let len = out.len();
        let r = match self.session.as_mut() {
            Some(sess) => {
                let Some(devs) = sess.pool.resident.remove(&set.id()) else {
                    return Err(RuntimeError::StaleResident);
                };
                let r = range_ok(&devs[index], offset, len).and_then(|_| {
                    download_at(sess, &devs[index], offset, out, &mut c).map_err(Some)
                });
                sess.pool.resident.insert(set.id(), devs);
                r
            }
            None => return Err(RuntimeError::StaleResident),
        };
        self.apply(&c);
        match r {
            Ok(()) => Ok(()),
            Err(None) => Err(out_of_range("read", offset, len, set, index)),
            Err(Some(e)) => Err(self.copy_error(e)),
        }
    }

    /// Pinned host<->device copy bandwidth (GB/s, host to device and device to host): the
    /// staging ring's page-locked slots copied `rounds` times each way with no host work in
    /// between, the DMA engines' own speed. The copy limit a dispatch of pageable inputs is
    /// measured against.
    pub fn pinned_copy_gbps(&mut self, rounds: usize) -> Result<(f64, f64)> {
        let bytes = super::dispatch::STAGING_CHUNK;
        let slots = super::dispatch::STAGING_SLOTS;
        // The context current first: the buffer belongs to it.
        self.sess()?;
        let dev = DeviceBuffer::alloc(bytes).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let sess = self.sess()?;
        sess.staging
            .ensure()
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let run =
            |sess: &mut super::Session, up: bool| -> std::result::Result<f64, super::DriverError> {
                sess.stream.synchronize()?;
                let t = std::time::Instant::now();
                for k in 0..rounds.max(1) {
                    let slot = &mut sess.staging.slots[k % slots];
                    if up {
                        slot.upload(bytes, |_| {}, &dev, 0, &sess.stream)?;
                    } else {
                        slot.download(&dev, 0, bytes, &sess.stream)?;
                    }
                }
                sess.stream.synchronize()?;
                Ok((rounds.max(1) * bytes) as f64 / t.elapsed().as_secs_f64() / 1e9)
            };
        let h2d = run(sess, true).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        let d2h = run(sess, false).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        // Leave no copy in flight on the slots.
        for s in sess.staging.slots.iter_mut() {
            s.wait().map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        }
        Ok((h2d, d2h))
    }

    /// Waits for all work queued on the runtime's stream.
    pub fn synchronize(&mut self) -> Result<()> {
        let sess = self.sess()?;
        if let Err(e) = sess.stream.synchronize() {
            return Err(self.launch_error("(previous launch)", e));
        }
        self.telemetry.sync_points += 1;
        Ok(())
    }

    /// One launch of `h` whose kernel buffer `i` (binding order) is buffer `parts[i].1` of
    /// resident set `parts[i].0`, with `parts[i].2` elements (the kernel's length parameter,
    /// at most the buffer's size).
    pub fn launch_resident_parts(
        &mut self,
        h: &KernelHandle,
        abi: &KernelAbi,
        shape: &LaunchShape,
        parts: &[(&ResidentSet, usize, u64)],
        opts: &DispatchOptions,
    ) -> Result<LaunchTiming> {
        let mut bufs = Vec::with_capacity(parts.len());
        for &(set, index, elements) in parts {
            let ptrs = self.resident_pointers(set)?;
            let ptr = ptrs
                .get(index)
                .copied()
                .ok_or(RuntimeError::StaleResident)?;
            bufs.push((ptr, elements));
        }
        let _range = nvtx::range(&format!("vyrescope launch {}", h.name));
        let mut ready = self.prepare_launch_bufs(h, abi, shape, &bufs, opts)?;
        self.arm_grid_sync(&mut ready)?;
        let mode = LaunchMode {
            cooperative: ready.cooperative,
            timeout: opts.timeout,
            timed: opts.device_timing,
        };
        let t = self.launch_core(&h.name, ready.f, &ready.geo, &mut ready.args, mode)?;
        let useful = opts
            .useful_invocations
            .unwrap_or(ready.slots)
            .min(ready.slots);
        self.telemetry
            .record_launch(ready.cooperative, ready.slots, useful, t.device_ms);
        Ok(t)
    }

    /// Checks a launch of `h` over device buffers `bufs` (pointer, element count; binding
    /// order) and builds its arguments, ready to enqueue: the kernel loaded, the shape and
    /// co-residency checked, the grid-barrier scratch allocated.
    pub(super) fn prepare_launch_bufs(
        &mut self,
        h: &KernelHandle,
        abi: &KernelAbi,
        shape: &LaunchShape,
        bufs: &[(u64, u64)],
        opts: &DispatchOptions,
    ) -> Result<ReadyLaunch> {
        if bufs.len() != abi.params.len() {
            return Err(RuntimeError::Abi(crate::util::Problem::new(
                format!(
                    "kernel `{}` takes {} buffers but {} were given",
                    h.name,
                    abi.params.len(),
                    bufs.len()
                ),
                "pass one buffer per ABI parameter, in binding order",
            )));
        }
        let (f, res) = self.kernel_for_launch(h)?;
        self.check_shape(
            &h.name,
            shape,
            res.max_threads_per_block,
            opts.dynamic_smem,
            res.static_smem_bytes,
        )?;
        let mut args: Vec<u64> = Vec::with_capacity(bufs.len() * 2 + 2);
        for &(ptr, len) in bufs {
            let len32 = u32::try_from(len).map_err(|_| {
                RuntimeError::Abi(crate::util::Problem::new(format!("a buffer of {len} elements does not fit the kernel's .u32 length parameter"), format!("split the data into buffers of at most {} elements", u32::MAX)))
            })?;
            args.push(ptr);
            args.push(u64::from(len32));
        }
        let geo = Geometry {
            grid: shape.grid,
            block: shape.workgroup_size,
            dynamic_smem: opts.dynamic_smem,
        };
        if abi.grid_sync {
            self.check_coresidency(&h.name, f, &geo)?;
            let p = self.ensure_scratch(abi.scratch.words.max(1) as usize)?;
            args.push(p);
        }
        let sync = abi.grid_sync.then(|| SyncUse {
            epoch_arg: abi.scratch.epoch.then(|| {
                // Set by `arm_grid_sync` before each launch.
                args.push(0);
                args.len() - 1
            }),
            scratch: abi.scratch,
        });
        Ok(ReadyLaunch {
            f,
            geo,
            args,
            cooperative: abi.grid_sync,
            slots: product(shape.grid) * product(shape.workgroup_size),
            sync,
        })
    }
}

use super::dispatch::ResidentSet;

impl Runtime {
    /// The grid-barrier scratch, grown (replaced by a zeroed one) when it holds fewer than
    /// `words` u32 words; returns its device pointer. A replaced scratch is freed, so every
    /// launch prepared before the growth would point at freed memory: callers preparing
    /// several launches size it for the largest first.
    pub(super) fn ensure_scratch(&mut self, words: usize) -> Result<u64> {
        let sess = self.sess()?;
        if sess
            .pool
            .scratch
            .as_ref()
            .is_none_or(|s| s.bytes() < words * 4)
        {
            sess.pool.scratch = None;
            let s =
                DeviceBuffer::alloc(words * 4).map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
            s.memset_async(0, &sess.stream)
                .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
            sess.pool.scratch = Some(s);
            sess.pool.scratch_state = ScratchState::zeroed();
            self.telemetry.allocations += 1;
            self.telemetry.allocated_bytes += (words * 4) as u64;
        }
        Ok(self.sess()?.pool.scratch.as_ref().map_or(0, |s| s.ptr()))
    }
}

/// `Err(None)` when `[offset, offset + len)` is outside `d`.
fn range_ok(
    d: &DeviceBuffer,
    offset: usize,
    len: usize,
) -> std::result::Result<(), Option<super::DriverError>> {
    match offset.checked_add(len) {
        Some(end) if end <= d.bytes() => Ok(()),
        _ => Err(None),
    }
}

fn out_of_range(
    what: &str,
    offset: usize,
    len: usize,
    set: &ResidentSet,
    index: usize,
) -> RuntimeError {
    let size = set.lens.get(index).copied().unwrap_or(0);
    RuntimeError::Abi(crate::util::Problem::new(
        format!("resident {what} of {len} bytes at byte {offset} is outside the buffer's bytes"),
        format!("keep offset + length within the allocation (the set records {size} elements for this buffer)"),
    ))
}
