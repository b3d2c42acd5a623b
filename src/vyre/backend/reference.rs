//! `vyrescope-reference`: the backend over our reference interpreter (the oracle every GPU
//! result is compared with). Resident buffers are host byte vectors; a run copies them into
//! host buffers, interprets, and copies the writable ones back. No GPU is needed, so every
//! check of the backend contract also runs on a machine without one.

use std::collections::HashMap;

use super::device::{
    Device, DeviceFailure, DeviceResult, FailKind, Limits, ProgramKey, ResidentArg, RunOptions,
    RunTimes,
};
use crate::inputs::{HostBuffer, Staged};
use crate::ir::Program;
use crate::shape::{LaunchShape, MAX_GRID_DIMS, MAX_WORKGROUP_DIMS, MAX_WORKGROUP_THREADS};

/// The reference interpreter as a [`Device`].
#[derive(Debug, Default)]
pub struct ReferenceDevice {
    buffers: HashMap<u64, Vec<u8>>,
    next: u64,
    runs: u64,
}

fn interp_failure(e: crate::interp::InterpError) -> DeviceFailure {
    let p: crate::util::Problem = e.into();
    DeviceFailure::new(FailKind::Dispatch, p.message, p.fix)
}

fn stale(id: u64) -> DeviceFailure {
    DeviceFailure::new(
        FailKind::Stale,
        format!("reference resident buffer {id} does not exist"),
        "allocate the buffer with allocate_resident on this backend instance",
    )
}

impl Device for ReferenceDevice {
    type Buffer = u64;

    fn limits(&self) -> Limits {
        Limits {
            device: "vyrescope reference interpreter (CPU)".into(),
            max_workgroup: MAX_WORKGROUP_DIMS,
            max_invocations: MAX_WORKGROUP_THREADS as u32,
            max_workgroups_per_dim: MAX_GRID_DIMS.iter().copied().min().unwrap_or(1),
            subgroup_size: Some(32),
            max_buffer_bytes: 0,
            grid_sync: true,
            max_resident_threads: 0,
            device_timestamps: false,
            shared_bytes: crate::validate::MAX_SHARED_BYTES as u32,
            compute_units: 0,
            l2_bytes: 0,
            mem_bw_gbps: 0,
        }
    }

    fn run(
        &mut self,
        _key: ProgramKey,
        program: &Program,
        shape: &LaunchShape,
        buffers: &mut [HostBuffer],
        sources: &[Staged<'_>],
        _opts: RunOptions,
    ) -> DeviceResult<RunTimes> {
        // The interpreter needs owned bytes.
        for (b, s) in buffers.iter_mut().zip(sources) {
            if let Some(s) = s.slice() {
                b.data = s.to_vec();
            }
        }
        crate::interp::run(program, shape, buffers).map_err(interp_failure)?;
        self.runs += 1;
        Ok(RunTimes::default())
    }

    fn alloc(&mut self, bytes: usize) -> DeviceResult<u64> {
        self.next += 1;
        self.buffers.insert(self.next, vec![0; bytes]);
        Ok(self.next)
    }

    fn write(&mut self, buffer: &u64, offset: usize, bytes: &[u8]) -> DeviceResult<()> {
        let b = self.buffers.get_mut(buffer).ok_or_else(|| stale(*buffer))?;
        let end = offset.saturating_add(bytes.len());
        let Some(dst) = b.get_mut(offset..end) else {
            return Err(stale(*buffer));
        };
        dst.copy_from_slice(bytes);
        Ok(())
    }

    fn read(&mut self, buffer: &u64, offset: usize, out: &mut [u8]) -> DeviceResult<()> {
        let b = self.buffers.get(buffer).ok_or_else(|| stale(*buffer))?;
        let end = offset.saturating_add(out.len());
        let Some(src) = b.get(offset..end) else {
            return Err(stale(*buffer));
        };
        out.copy_from_slice(src);
        Ok(())
    }

    fn free(&mut self, buffer: u64) {
        self.buffers.remove(&buffer);
    }

    fn run_resident(
        &mut self,
        key: ProgramKey,
        program: &Program,
        shape: &LaunchShape,
        args: &[ResidentArg<'_, u64>],
        opts: RunOptions,
    ) -> DeviceResult<RunTimes> {
        let mut host = Vec::with_capacity(args.len());
        for a in args {
            let b = self.buffers.get(a.buffer).ok_or_else(|| stale(*a.buffer))?;
            let bytes = (a.elements as usize).saturating_mul(a.elem.size_bytes());
            let data = b.get(..bytes).ok_or_else(|| stale(*a.buffer))?.to_vec();
            host.push(HostBuffer {
                name: a.name.to_string(),
                elem: a.elem,
                access: a.access,
                binding: a.binding,
                data,
            });
        }
        let times = self.run(key, program, shape, &mut host, &[], opts)?;
        for (a, h) in args.iter().zip(host) {
            if a.access.is_writable() {
                if let Some(dst) = self
                    .buffers
                    .get_mut(a.buffer)
                    .and_then(|b| b.get_mut(..h.data.len()))
                {
                    dst.copy_from_slice(&h.data);
                }
            }
        }
        Ok(times)
    }

    fn finish(&mut self) -> DeviceResult<()> {
        Ok(())
    }

    fn recover(&mut self) -> DeviceResult<()> {
        // Nothing can fault: an interpreter error leaves no state behind.
        Ok(())
    }

    fn lost(&self) -> bool {
        false
    }

    fn cache_counts(&self) -> Option<(u64, u64)> {
        None
    }

    fn metrics(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("reference_runs", self.runs),
            ("reference_resident_buffers", self.buffers.len() as u64),
        ]
    }
}
