//! `VyreBackend` for [`VyrescopeBackend`]: each method maps onto the adapter's dispatch,
//! resident and lifecycle operations (`backend.rs`, `resident.rs`). Not implemented (vyre's
//! defaults answer `UnsupportedFeature`): the `DeviceBuffer` methods, which vyre's registry
//! wrapper does not forward anyway; the resident API covers the same ground.

use std::collections::HashSet;
use std::time::Instant;

use vyre_driver::backend::{
    private, BackendError, DispatchConfig, OutputBuffers, PendingDispatch, ResidentDispatchStep,
    ResidentReadRange, ResidentSequenceTiming, Resource, TimedDispatchResult, VyreBackend,
};
use vyre_driver::pipeline::PipelineCacheSnapshot;
use vyre_driver::{DeviceProfile, DeviceTimingQuality};
use vyre_foundation::ir::{OpId, Program as VyreProgram};

use super::device::{Device, RunTimes};
use super::pending::ThreadPending;
use super::{add_times, errors, registry, Inner, VyrescopeBackend};

fn borrowed(inputs: &[Vec<u8>]) -> Vec<&[u8]> {
    inputs.iter().map(Vec::as_slice).collect()
}

impl<D: Device> VyrescopeBackend<D> {
    /// Steps `prefix`, then `repeated` `count` times, each with its own grid and workgroup
    /// overrides, then the reads.
    fn sequence(
        &self,
        prefix: &[ResidentDispatchStep<'_>],
        repeated: &[ResidentDispatchStep<'_>],
        count: u32,
        reads: &[ResidentReadRange<'_>],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<ResidentSequenceTiming, BackendError> {
        let t0 = Instant::now();
        let mut times: Option<RunTimes> = None;
        let repeats = (0..count).flat_map(|_| repeated.iter());
        for step in prefix.iter().chain(repeats) {
            let mut config = DispatchConfig::default();
            config.grid_override = step.grid_override;
            config.workgroup_override = step.workgroup_override;
            let t = self
                .inner
                .dispatch_resident(step.program, step.resources, &config, true)?;
            times = Some(times.map_or(t, |a| add_times(a, t)));
        }
        let ranges: Vec<(&Resource, usize, Option<usize>)> = reads
            .iter()
            .map(|r| (r.resource, r.byte_offset, Some(r.byte_len)))
            .collect();
        self.inner.download(&ranges, outputs)?;
        let times = times.unwrap_or_default();
        Ok(ResidentSequenceTiming {
            wall_ns: super::elapsed_ns(t0),
            device_ns: times.device_ns,
            enqueue_ns: times.enqueue_ns,
            wait_ns: times.wait_ns,
        })
    }

    fn spawn(
        &self,
        program: &VyreProgram,
        inputs: Vec<Vec<u8>>,
        config: &DispatchConfig,
    ) -> Result<Box<dyn PendingDispatch>, BackendError> {
        let inner = std::sync::Arc::clone(&self.inner);
        let program = program.clone();
        let config = config.clone();
        let pending = ThreadPending::spawn(self.inner.id, move || {
            let t0 = Instant::now();
            let d = inner.dispatch(&program, &borrowed(&inputs), &config, true)?;
            let split = d.vyre_split();
            Ok(Inner::<D>::timed_result(d.outputs, t0, split))
        })?;
        Ok(Box::new(pending))
    }
}

impl<D: Device> private::Sealed for VyrescopeBackend<D> {}

impl<D: Device> VyreBackend for VyrescopeBackend<D> {
    fn id(&self) -> &'static str {
        self.inner.id
    }

    fn version(&self) -> &'static str {
        env!("CARGO_PKG_VERSION")
    }

    fn supported_ops(&self) -> &HashSet<OpId> {
        registry::supported_ops()
    }

    fn dispatch(
        &self,
        program: &VyreProgram,
        inputs: &[Vec<u8>],
        config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        Ok(self
            .inner
            .dispatch(program, &borrowed(inputs), config, false)?
            .outputs)
    }

    fn dispatch_borrowed(
        &self,
        program: &VyreProgram,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        Ok(self.inner.dispatch(program, inputs, config, false)?.outputs)
    }

    fn dispatch_borrowed_timed(
        &self,
        program: &VyreProgram,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<TimedDispatchResult, BackendError> {
        let t0 = Instant::now();
        let d = self.inner.dispatch(program, inputs, config, true)?;
        let split = d.vyre_split();
        Ok(Inner::<D>::timed_result(d.outputs, t0, split))
    }

    fn dispatch_borrowed_into(
        &self,
        program: &VyreProgram,
        inputs: &[&[u8]],
        config: &DispatchConfig,
        outputs: &mut OutputBuffers,
    ) -> Result<(), BackendError> {
        let d = self.inner.dispatch(program, inputs, config, false)?;
        outputs.truncate(d.outputs.len());
        for (i, o) in d.outputs.into_iter().enumerate() {
            match outputs.get_mut(i) {
                Some(slot) => {
                    slot.clear();
                    slot.extend_from_slice(&o);
                }
                None => outputs.push(o),
            }
        }
        Ok(())
    }

    fn dispatch_async(
        &self,
        program: &VyreProgram,
        inputs: &[Vec<u8>],
        config: &DispatchConfig,
    ) -> Result<Box<dyn PendingDispatch>, BackendError> {
        self.spawn(program, inputs.to_vec(), config)
    }

    fn dispatch_borrowed_async(
        &self,
        program: &VyreProgram,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<Box<dyn PendingDispatch>, BackendError> {
        self.spawn(program, inputs.iter().map(|s| s.to_vec()).collect(), config)
    }

    fn allocate_resident(&self, byte_len: usize) -> Result<Resource, BackendError> {
        self.inner.allocate(byte_len)
    }

    fn upload_resident(&self, resource: &Resource, bytes: &[u8]) -> Result<(), BackendError> {
        self.inner.upload(&[(resource, 0, bytes)], true)
    }

    fn upload_resident_many(&self, uploads: &[(&Resource, &[u8])]) -> Result<(), BackendError> {
        let all: Vec<(&Resource, usize, &[u8])> = uploads.iter().map(|&(r, b)| (r, 0, b)).collect();
        self.inner.upload(&all, true)
    }

    fn upload_resident_at(
        &self,
        resource: &Resource,
        dst_offset_bytes: usize,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        self.inner
            .upload(&[(resource, dst_offset_bytes, bytes)], false)
    }

    fn upload_resident_at_many(
        &self,
        uploads: &[(&Resource, usize, &[u8])],
    ) -> Result<(), BackendError> {
        self.inner.upload(uploads, false)
    }

    fn download_resident_into(
        &self,
        resource: &Resource,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.inner.download(&[(resource, 0, None)], &mut [out])
    }

    fn download_resident_range_into(
        &self,
        resource: &Resource,
        byte_offset: usize,
        byte_len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        self.inner
            .download(&[(resource, byte_offset, Some(byte_len))], &mut [out])
    }

    fn download_resident_ranges_into(
        &self,
        ranges: &[(&Resource, usize, usize)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), BackendError> {
        let ranges: Vec<(&Resource, usize, Option<usize>)> =
            ranges.iter().map(|&(r, o, l)| (r, o, Some(l))).collect();
        self.inner.download(&ranges, outputs)
    }

    fn free_resident(&self, resource: Resource) -> Result<(), BackendError> {
        self.inner.free(&resource)
    }

    fn dispatch_resident_timed(
        &self,
        program: &VyreProgram,
        resources: &[Resource],
        config: &DispatchConfig,
    ) -> Result<TimedDispatchResult, BackendError> {
        let t0 = Instant::now();
        let times = self
            .inner
            .dispatch_resident(program, resources, config, true)?;
        Ok(Inner::<D>::timed_result(Vec::new(), t0, times))
    }

    fn dispatch_resident_sequence_read_ranges_into(
        &self,
        steps: &[ResidentDispatchStep<'_>],
        read_ranges: &[ResidentReadRange<'_>],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), BackendError> {
        self.sequence(steps, &[], 0, read_ranges, outputs)
            .map(|_| ())
    }

    fn dispatch_resident_sequence_read_ranges_timed_into(
        &self,
        steps: &[ResidentDispatchStep<'_>],
        read_ranges: &[ResidentReadRange<'_>],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<ResidentSequenceTiming, BackendError> {
        self.sequence(steps, &[], 0, read_ranges, outputs)
    }

    fn dispatch_resident_repeated_sequence_read_ranges_into(
        &self,
        prefix_steps: &[ResidentDispatchStep<'_>],
        repeated_steps: &[ResidentDispatchStep<'_>],
        repeat_count: u32,
        read_ranges: &[ResidentReadRange<'_>],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), BackendError> {
        self.sequence(
            prefix_steps,
            repeated_steps,
            repeat_count,
            read_ranges,
            outputs,
        )
        .map(|_| ())
    }

    fn pipeline_cache_snapshot(&self) -> Option<PipelineCacheSnapshot> {
        self.inner
            .cache_counts()
            .map(|(hits, misses)| PipelineCacheSnapshot { hits, misses })
    }

    fn backend_metric_snapshot(&self) -> Vec<(&'static str, u64)> {
        self.inner.metrics()
    }

    fn supports_subgroup_ops(&self) -> bool {
        self.inner.limits.subgroup_size.is_some()
    }

    fn supports_grid_sync(&self) -> bool {
        self.inner.limits.grid_sync
    }

    fn cooperative_grid_sync_fits(
        &self,
        program: &VyreProgram,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<bool, BackendError> {
        let l = &self.inner.limits;
        if !l.grid_sync || !vyre_driver::grid_sync::contains_grid_sync(program) {
            return Ok(false);
        }
        let choice = self.inner.choice(program, config)?;
        let conv = self
            .inner
            .programs
            .get(program)
            .map_err(|r| errors::refused(self.inner.id, &r))?;
        let bound = crate::vyre::binding::bind_borrowed(&conv.vyre, &conv.ours, inputs, choice)
            .map_err(|m| errors::bad_inputs(self.inner.id, &m))?;
        let threads: u64 = bound
            .shape
            .grid
            .iter()
            .chain(&bound.shape.workgroup_size)
            .map(|&d| u64::from(d))
            .product();
        Ok(l.max_resident_threads == 0 || threads <= l.max_resident_threads)
    }

    fn allows_host_grid_sync_split(&self) -> bool {
        // Grid barriers run natively or are refused; never split into hidden launches.
        false
    }

    fn supports_resident_dispatch(&self) -> bool {
        true
    }

    fn max_workgroup_size(&self) -> [u32; 3] {
        self.inner.limits.max_workgroup
    }

    fn max_compute_workgroups_per_dimension(&self) -> u32 {
        self.inner.limits.max_workgroups_per_dim
    }

    fn max_compute_invocations_per_workgroup(&self) -> u32 {
        self.inner.limits.max_invocations
    }

    fn subgroup_size(&self) -> Option<u32> {
        self.inner.limits.subgroup_size
    }

    fn max_storage_buffer_bytes(&self) -> u64 {
        self.inner.limits.max_buffer_bytes
    }

    fn device_profile(&self) -> DeviceProfile {
        let l = &self.inner.limits;
        DeviceProfile {
            backend: self.inner.id,
            supports_subgroup_ops: l.subgroup_size.is_some(),
            supports_indirect_dispatch: false,
            supports_distributed_collectives: false,
            supports_specialization_constants: false,
            supports_f16: false,
            supports_bf16: false,
            supports_trap_propagation: false,
            supports_tensor_cores: false,
            has_mul_high: true,
            has_dual_issue_fp32_int32: false,
            has_subgroup_shuffle: l.subgroup_size.is_some(),
            has_shared_memory: l.shared_bytes > 0,
            max_native_int_width: 64,
            max_workgroup_size: l.max_workgroup,
            max_invocations_per_workgroup: l.max_invocations,
            max_shared_memory_bytes: l.shared_bytes,
            max_storage_buffer_binding_size: l.max_buffer_bytes,
            subgroup_size: l.subgroup_size.unwrap_or(0),
            compute_units: l.compute_units,
            regs_per_thread_max: if l.compute_units > 0 { 255 } else { 0 },
            l1_cache_bytes: 0,
            l2_cache_bytes: u32::try_from(l.l2_bytes).unwrap_or(u32::MAX),
            mem_bw_gbps: l.mem_bw_gbps,
            timing_quality: if l.device_timestamps {
                DeviceTimingQuality::DeviceTimestamps
            } else {
                DeviceTimingQuality::HostOnly
            },
            supports_device_timestamps: l.device_timestamps,
            supports_hardware_counters: false,
            ideal_unroll_depth: 0,
            ideal_vector_pack_bits: 0,
            ideal_workgroup_tile: [0, 0, 0],
            shared_memory_bank_count: if l.compute_units > 0 { 32 } else { 0 },
            shared_memory_bank_width_bytes: if l.compute_units > 0 { 4 } else { 0 },
        }
    }

    fn prepare(&self) -> Result<(), BackendError> {
        if self.inner.lost() {
            return Err(errors::device(
                self.inner.id,
                &self.inner.limits.device,
                0,
                super::device::DeviceFailure::new(
                    super::device::FailKind::Lost,
                    "the device is lost for this process",
                    "call try_recover, or restart the process",
                ),
            ));
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), BackendError> {
        self.inner.finish()
    }

    fn shutdown(&self) -> Result<(), BackendError> {
        self.inner.finish()?;
        self.inner.free_all()?;
        self.inner.programs.clear();
        Ok(())
    }

    fn device_lost(&self) -> bool {
        self.inner.lost()
    }

    fn try_recover(&self) -> Result<(), BackendError> {
        self.inner.recover()
    }
}
