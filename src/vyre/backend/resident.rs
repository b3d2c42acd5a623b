//! The resident half of the contract: buffers that stay on the device between dispatches,
//! named by `Resource::Resident` handles of this backend instance. Each operation holds the
//! backend's lock for its whole length, so a batch (`upload_resident_many`, ranged batch
//! downloads) is one step for other threads.

use vyre_driver::backend::{BackendError, DispatchConfig, Resource};
use vyre_foundation::ir::Program as VyreProgram;

use super::device::{Device, ResidentArg, RunTimes};
use super::{add_times, errors, run_options, Inner, Slot, State};
use crate::vyre::binding;

impl<D: Device> Inner<D> {
    /// The buffer id behind `resource`, refusing borrowed bytes and other instances' handles.
    fn resolve(&self, resource: &Resource, context: &str) -> Result<u64, BackendError> {
        match resource {
            Resource::Resident(h) => self.owner.resolve(*h, context),
            Resource::Borrowed(_) => Err(errors::invalid(
                format!(
                    "{}: {context} was given borrowed bytes, not a resident handle",
                    self.id
                ),
                "allocate the buffer with allocate_resident and upload into it first",
            )),
        }
    }

    fn slot<'s>(
        &self,
        st: &'s State<D>,
        id: u64,
        context: &str,
    ) -> Result<&'s Slot<D::Buffer>, BackendError> {
        st.resident.get(&id).ok_or_else(|| {
            errors::invalid(
                format!("{}: {context}: resident buffer {id} was freed or never allocated on this instance", self.id),
                "allocate it again with allocate_resident (handles stay valid until free_resident)",
            )
        })
    }

    fn check_range(
        &self,
        slot_bytes: usize,
        offset: usize,
        len: usize,
        context: &str,
    ) -> Result<(), BackendError> {
        match offset.checked_add(len) {
            Some(end) if end <= slot_bytes => Ok(()),
            _ => Err(errors::invalid(
                format!("{}: {context} of {len} bytes at byte {offset} is outside the {slot_bytes}-byte resident buffer", self.id),
                "keep offset + length within the allocation",
            )),
        }
    }

    /// `allocate_resident`: a zeroed buffer of `bytes` (> 0) bytes.
    pub(crate) fn allocate(&self, bytes: usize) -> Result<Resource, BackendError> {
        if bytes == 0 {
            return Err(errors::invalid(
                format!("{}: allocate_resident(0)", self.id),
                "allocate at least one element's bytes",
            ));
        }
        if self.limits.max_buffer_bytes > 0 && bytes as u64 > self.limits.max_buffer_bytes {
            return Err(BackendError::DeviceOutOfMemory {
                requested: bytes as u64,
                available: self.limits.max_buffer_bytes,
            });
        }
        let mut st = self.lock()?;
        let buffer = match st.device.alloc(bytes) {
            Ok(b) => b,
            Err(f) => return Err(self.device_error(&st, f)),
        };
        st.next += 1;
        let id = st.next;
        st.resident.insert(id, Slot { buffer, bytes });
        Ok(Resource::Resident(self.owner.handle(id)))
    }

    /// `upload_resident_at` for several ranges under one lock; `whole` requires each upload
    /// to fill its buffer exactly (`upload_resident`).
    pub(crate) fn upload(
        &self,
        uploads: &[(&Resource, usize, &[u8])],
        whole: bool,
    ) -> Result<(), BackendError> {
        let context = if whole {
            "resident upload"
        } else {
            "resident ranged upload"
        };
        let mut st = self.lock()?;
        for &(resource, offset, bytes) in uploads {
            let id = self.resolve(resource, context)?;
            let slot = self.slot(&st, id, context)?;
            if whole && bytes.len() != slot.bytes {
                return Err(errors::invalid(
                    format!(
                        "{}: upload_resident of {} bytes into a {}-byte resident buffer",
                        self.id,
                        bytes.len(),
                        slot.bytes
                    ),
                    "upload exactly the allocation's length, or use upload_resident_at for a part",
                ));
            }
            self.check_range(slot.bytes, offset, bytes.len(), context)?;
            let State {
                device, resident, ..
            } = &mut *st;
            let Some(slot) = resident.get(&id) else {
                continue;
            };
            if let Err(f) = device.write(&slot.buffer, offset, bytes) {
                return Err(self.device_error(&st, f));
            }
        }
        Ok(())
    }

    /// Ranged downloads under one lock; `len = None` reads the whole buffer. Each output is
    /// cleared and reused.
    pub(crate) fn download(
        &self,
        ranges: &[(&Resource, usize, Option<usize>)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), BackendError> {
        if ranges.len() != outputs.len() {
            return Err(errors::invalid(
                format!(
                    "{}: {} ranges but {} outputs",
                    self.id,
                    ranges.len(),
                    outputs.len()
                ),
                "pass one output vector per range",
            ));
        }
        let mut st = self.lock()?;
        for (&(resource, offset, len), out) in ranges.iter().zip(outputs.iter_mut()) {
            let id = self.resolve(resource, "resident download")?;
            let slot = self.slot(&st, id, "resident download")?;
            let len = len.unwrap_or(slot.bytes.saturating_sub(offset));
            self.check_range(slot.bytes, offset, len, "resident download")?;
            out.clear();
            out.resize(len, 0);
            let State {
                device, resident, ..
            } = &mut *st;
            let Some(slot) = resident.get(&id) else {
                continue;
            };
            if let Err(f) = device.read(&slot.buffer, offset, out) {
                return Err(self.device_error(&st, f));
            }
        }
        Ok(())
    }

    /// `free_resident`.
    pub(crate) fn free(&self, resource: &Resource) -> Result<(), BackendError> {
        let id = self.resolve(resource, "resident free")?;
        let mut st = self.lock()?;
        match st.resident.remove(&id) {
            Some(slot) => {
                st.device.free(slot.buffer);
                Ok(())
            }
            None => Err(errors::invalid(
                format!(
                    "{}: free_resident of buffer {id}, which is not allocated",
                    self.id
                ),
                "free each handle once",
            )),
        }
    }

    /// Frees every resident buffer (shutdown).
    pub(crate) fn free_all(&self) -> Result<(), BackendError> {
        let mut st = self.lock()?;
        let slots: Vec<Slot<D::Buffer>> = st.resident.drain().map(|(_, s)| s).collect();
        for s in slots {
            st.device.free(s.buffer);
        }
        Ok(())
    }

    /// `dispatch_resident_timed`: `resources` are the Program's non-workgroup buffers in
    /// binding order; results stay in them (nothing is read back).
    pub(crate) fn dispatch_resident(
        &self,
        program: &VyreProgram,
        resources: &[Resource],
        config: &DispatchConfig,
        timed: bool,
    ) -> Result<RunTimes, BackendError> {
        let iterations = self.check_config(config)?;
        let choice = self.choice(program, config)?;
        let conv = self
            .programs
            .get(program)
            .map_err(|r| errors::refused(self.id, &r))?;
        let ids = resources
            .iter()
            .map(|r| self.resolve(r, "resident dispatch"))
            .collect::<Result<Vec<u64>, _>>()?;
        let mut st = self.lock()?;
        let mut lens = Vec::with_capacity(ids.len());
        for &id in &ids {
            lens.push(self.slot(&st, id, "resident dispatch")?.bytes);
        }
        let rb = binding::bind_resident(&conv.vyre, &conv.ours, &lens, choice)
            .map_err(|m| errors::bad_inputs(self.id, &m))?;
        let ours = conv
            .for_launch(&rb.shape)
            .map_err(|r| errors::refused(self.id, &r))?;
        let host = binding::host_buffers(&conv.vyre, &conv.ours);
        // Resource r stands for host buffer `rb.buffer_of_resource[r]` (declaration order).
        let mut by_pos: Vec<Option<(u64, usize)>> = vec![None; host.len()];
        for (r, (&id, &bytes)) in ids.iter().zip(&lens).enumerate() {
            if let Some(&pos) = rb.buffer_of_resource.get(r) {
                if let Some(p) = by_pos.get_mut(pos) {
                    *p = Some((id, bytes));
                }
            }
        }
        let State {
            device,
            resident,
            generation,
            ..
        } = &mut *st;
        let mut args = Vec::with_capacity(host.len());
        for (pos, &decl) in host.iter().enumerate() {
            let (Some((id, bytes)), Some(b)) = (by_pos[pos], conv.ours.buffers.get(decl)) else {
                return Err(errors::bad_inputs(
                    self.id,
                    "a buffer of the Program has no resource",
                ));
            };
            let Some(slot) = resident.get(&id) else {
                return Err(errors::bad_inputs(self.id, "a resource was freed"));
            };
            args.push(ResidentArg {
                buffer: &slot.buffer,
                name: &b.name,
                elem: b.elem,
                access: b.access,
                binding: b.binding.unwrap_or(0),
                elements: (bytes / b.elem.size_bytes()) as u64,
            });
        }
        let key = conv.key(rb.shape.workgroup_size);
        let mut times: Option<RunTimes> = None;
        for _ in 0..iterations {
            let t = device
                .run_resident(key, &ours, &rb.shape, &args, run_options(config, timed))
                .map_err(|f| errors::device(self.id, &self.limits.device, *generation, f))?;
            times = Some(times.map_or(t, |a| add_times(a, t)));
        }
        Ok(times.unwrap_or_default())
    }

    /// Waits for queued work.
    pub(crate) fn finish(&self) -> Result<(), BackendError> {
        let mut st = self.lock()?;
        match st.device.finish() {
            Ok(()) => Ok(()),
            Err(f) => Err(self.device_error(&st, f)),
        }
    }

    /// `try_recover`: the device made usable again; a new generation.
    pub(crate) fn recover(&self) -> Result<(), BackendError> {
        let mut st = self.lock()?;
        match st.device.recover() {
            Ok(()) => {
                st.generation += 1;
                Ok(())
            }
            Err(f) => Err(self.device_error(&st, f)),
        }
    }

    /// `device_lost`.
    pub(crate) fn lost(&self) -> bool {
        self.state.lock().map_or(true, |st| st.device.lost())
    }

    /// Kernel-cache hits and misses of the device.
    pub(crate) fn cache_counts(&self) -> Option<(u64, u64)> {
        self.state.lock().ok()?.device.cache_counts()
    }

    /// The device's metrics and the backend's own.
    pub(crate) fn metrics(&self) -> Vec<(&'static str, u64)> {
        match self.state.lock() {
            Ok(st) => {
                let mut m = st.device.metrics();
                m.push(("vyrescope_resident_buffers", st.resident.len() as u64));
                m.push(("vyrescope_generation", st.generation));
                m
            }
            Err(_) => Vec::new(),
        }
    }
}
