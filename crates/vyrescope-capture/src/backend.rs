//! [`CapturingBackend`]: a `VyreBackend` that forwards every call to the backend it wraps and
//! records the calls that move data.
//!
//! Every trait method is forwarded to the wrapped backend's own method (never to a default
//! of this type), so the wrapped backend's overrides, results and errors are exactly what the
//! application sees. Recording happens after the wrapped call returns: the results are
//! copied and queued for the writer thread, never changed.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use vyre_driver::backend::{
    private, BackendError, DeviceBuffer, DispatchConfig, OutputBuffers, PendingDispatch,
    ResidentDispatchStep, ResidentReadRange, ResidentSequenceTiming, Resource, TimedDispatchResult,
    VyreBackend,
};
use vyre_foundation::ir::{OpId, Program};

use crate::format::{CallResult, ConfigRecord, Event, ReadRef, StepRef, Timing, UploadRef};
use crate::pending::{CapturedPending, PendingKind};
use crate::recorder::{host_timing, Call, Recorder};
use crate::writer::Payload;

/// Whether a capturing backend is recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureStatus {
    /// Recording every call with its data.
    Recording,
    /// Past the data limit: recording sizes only.
    MetadataOnly,
    /// A write failed and recording stopped (reported once on stderr).
    Stopped,
    /// Recording never started; the reason (also reported on stderr).
    Off(String),
}

/// A backend that records every dispatch of the backend it wraps (see the crate docs).
pub struct CapturingBackend {
    inner: Box<dyn VyreBackend>,
    recorder: Option<Arc<Recorder>>,
    off_reason: Option<String>,
}

impl CapturingBackend {
    pub(crate) fn new(
        inner: Box<dyn VyreBackend>,
        recorder: Result<Recorder, String>,
    ) -> CapturingBackend {
        match recorder {
            Ok(r) => CapturingBackend {
                inner,
                recorder: Some(Arc::new(r)),
                off_reason: None,
            },
            Err(reason) => CapturingBackend {
                inner,
                recorder: None,
                off_reason: Some(reason),
            },
        }
    }

    /// Whether calls are being recorded.
    pub fn status(&self) -> CaptureStatus {
        match (&self.recorder, &self.off_reason) {
            (Some(r), _) if !r.active() => CaptureStatus::Stopped,
            (Some(r), _)
                if r.writer
                    .shared
                    .metadata_only
                    .load(std::sync::atomic::Ordering::SeqCst) =>
            {
                CaptureStatus::MetadataOnly
            }
            (Some(_), _) => CaptureStatus::Recording,
            (None, reason) => CaptureStatus::Off(reason.clone().unwrap_or_default()),
        }
    }

    /// The capture folder, when recording started.
    pub fn capture_dir(&self) -> Option<&Path> {
        self.recorder.as_ref().map(|r| r.dir.as_path())
    }

    /// Waits until every call recorded so far is written to the folder.
    pub fn flush_capture(&self) {
        if let Some(r) = &self.recorder {
            r.writer.flush();
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &dyn VyreBackend {
        self.inner.as_ref()
    }

    /// The recorder, while it records.
    fn live(&self) -> Option<&Arc<Recorder>> {
        self.recorder.as_ref().filter(|r| r.active())
    }

    /// Records a host-buffer dispatch (`what`: the method, the Program, the inputs copied,
    /// the configuration) that returned `r`.
    fn record_dispatch(
        &self,
        rec: &Recorder,
        call: &Call,
        what: (&'static str, &Program, Vec<Payload>, &DispatchConfig),
        r: Result<&[Vec<u8>], &BackendError>,
        timing: Timing,
    ) {
        let (name, program, inputs, config) = what;
        let outputs = r.map(|o| rec.payloads(o)).unwrap_or_default();
        let result = match r {
            Ok(_) => CallResult::Ok,
            Err(e) => CallResult::error(e),
        };
        rec.finish(
            call,
            name,
            Event::Dispatch {
                program: program.clone(),
                config: ConfigRecord::from_config(config),
                inputs,
                outputs,
            },
            timing,
            result,
        );
    }

    /// Records one or more resident reads.
    fn record_reads(
        &self,
        rec: &Recorder,
        call: &Call,
        name: &'static str,
        reads: Vec<(&Resource, usize, Option<usize>)>,
        data: Option<Vec<&[u8]>>,
        result: CallResult,
    ) {
        let reads = reads
            .into_iter()
            .enumerate()
            .map(|(i, (res, offset, len))| ReadRef {
                resource: rec.resource(res),
                offset: offset as u64,
                len: len.map(|l| l as u64),
                data: data.as_ref().and_then(|d| d.get(i)).map(|b| rec.payload(b)),
            })
            .collect();
        rec.finish(
            call,
            name,
            Event::Download { reads },
            host_timing(call),
            result,
        );
    }

    /// Records one or more resident writes.
    fn record_writes(
        &self,
        rec: &Recorder,
        call: &Call,
        name: &'static str,
        writes: &[(&Resource, usize, &[u8])],
        result: CallResult,
    ) {
        let writes = writes
            .iter()
            .map(|(res, offset, bytes)| UploadRef {
                resource: rec.resource(res),
                offset: *offset as u64,
                data: rec.payload(bytes),
            })
            .collect();
        rec.finish(
            call,
            name,
            Event::Upload { writes },
            host_timing(call),
            result,
        );
    }

    fn steps(
        &self,
        rec: &Recorder,
        steps: &[ResidentDispatchStep<'_>],
    ) -> Vec<StepRef<Program, Payload>> {
        steps
            .iter()
            .map(|s| StepRef {
                program: s.program.clone(),
                resources: s.resources.iter().map(|r| rec.resource(r)).collect(),
                grid_override: s.grid_override,
                workgroup_override: s.workgroup_override,
            })
            .collect()
    }

    fn sequence_reads(
        rec: &Recorder,
        ranges: &[ResidentReadRange<'_>],
        outputs: Option<&[&mut Vec<u8>]>,
    ) -> Vec<ReadRef<Payload>> {
        ranges
            .iter()
            .enumerate()
            .map(|(i, r)| ReadRef {
                resource: rec.resource(r.resource),
                offset: r.byte_offset as u64,
                len: Some(r.byte_len as u64),
                data: outputs.and_then(|o| o.get(i)).map(|b| rec.payload(b)),
            })
            .collect()
    }
}

impl private::Sealed for CapturingBackend {}

impl VyreBackend for CapturingBackend {
    fn id(&self) -> &'static str {
        self.inner.id()
    }

    fn version(&self) -> &'static str {
        self.inner.version()
    }

    fn supported_ops(&self) -> &HashSet<OpId> {
        self.inner.supported_ops()
    }

    fn dispatch(
        &self,
        program: &Program,
        inputs: &[Vec<u8>],
        config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.dispatch(program, inputs, config);
        };
        let call = rec.begin();
        let r = self.inner.dispatch(program, inputs, config);
        let timing = host_timing(&call);
        let ins = rec.payloads(inputs);
        let view = r.as_deref();
        self.record_dispatch(rec, &call, ("dispatch", program, ins, config), view, timing);
        r
    }

    fn dispatch_borrowed(
        &self,
        program: &Program,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.dispatch_borrowed(program, inputs, config);
        };
        let call = rec.begin();
        let r = self.inner.dispatch_borrowed(program, inputs, config);
        let timing = host_timing(&call);
        let ins = rec.payloads(inputs);
        let view = r.as_deref();
        self.record_dispatch(
            rec,
            &call,
            ("dispatch_borrowed", program, ins, config),
            view,
            timing,
        );
        r
    }

    fn dispatch_borrowed_timed(
        &self,
        program: &Program,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<TimedDispatchResult, BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.dispatch_borrowed_timed(program, inputs, config);
        };
        let call = rec.begin();
        let r = self.inner.dispatch_borrowed_timed(program, inputs, config);
        let mut timing = host_timing(&call);
        if let Ok(t) = &r {
            timing.backend_wall_ns = Some(t.wall_ns);
            timing.device_ns = t.device_ns;
            timing.enqueue_ns = t.enqueue_ns;
            timing.wait_ns = t.wait_ns;
        }
        let ins = rec.payloads(inputs);
        let view = r.as_ref().map(|t| t.outputs.as_slice());
        self.record_dispatch(
            rec,
            &call,
            ("dispatch_borrowed_timed", program, ins, config),
            view,
            timing,
        );
        r
    }

    fn dispatch_borrowed_into(
        &self,
        program: &Program,
        inputs: &[&[u8]],
        config: &DispatchConfig,
        outputs: &mut OutputBuffers,
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .dispatch_borrowed_into(program, inputs, config, outputs);
        };
        let call = rec.begin();
        let r = self
            .inner
            .dispatch_borrowed_into(program, inputs, config, outputs);
        let timing = host_timing(&call);
        let ins = rec.payloads(inputs);
        let view = r.as_ref().map(|_| outputs.as_slice());
        self.record_dispatch(
            rec,
            &call,
            ("dispatch_borrowed_into", program, ins, config),
            view,
            timing,
        );
        r
    }

    fn allocate_resident(&self, byte_len: usize) -> Result<Resource, BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.allocate_resident(byte_len);
        };
        let call = rec.begin();
        let r = self.inner.allocate_resident(byte_len);
        let event = Event::Allocate {
            byte_len: byte_len as u64,
            resource: r.as_ref().ok().map(|res| rec.resource(res)),
        };
        rec.finish(
            &call,
            "allocate_resident",
            event,
            host_timing(&call),
            CallResult::of(&r),
        );
        r
    }

    fn upload_resident(&self, resource: &Resource, bytes: &[u8]) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.upload_resident(resource, bytes);
        };
        let call = rec.begin();
        let r = self.inner.upload_resident(resource, bytes);
        self.record_writes(
            rec,
            &call,
            "upload_resident",
            &[(resource, 0, bytes)],
            CallResult::of(&r),
        );
        r
    }

    fn upload_resident_many(&self, uploads: &[(&Resource, &[u8])]) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.upload_resident_many(uploads);
        };
        let call = rec.begin();
        let r = self.inner.upload_resident_many(uploads);
        let writes: Vec<_> = uploads.iter().map(|(res, b)| (*res, 0, *b)).collect();
        self.record_writes(
            rec,
            &call,
            "upload_resident_many",
            &writes,
            CallResult::of(&r),
        );
        r
    }

    fn upload_resident_at(
        &self,
        resource: &Resource,
        dst_offset_bytes: usize,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .upload_resident_at(resource, dst_offset_bytes, bytes);
        };
        let call = rec.begin();
        let r = self
            .inner
            .upload_resident_at(resource, dst_offset_bytes, bytes);
        self.record_writes(
            rec,
            &call,
            "upload_resident_at",
            &[(resource, dst_offset_bytes, bytes)],
            CallResult::of(&r),
        );
        r
    }

    fn upload_resident_at_many(
        &self,
        uploads: &[(&Resource, usize, &[u8])],
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.upload_resident_at_many(uploads);
        };
        let call = rec.begin();
        let r = self.inner.upload_resident_at_many(uploads);
        self.record_writes(
            rec,
            &call,
            "upload_resident_at_many",
            uploads,
            CallResult::of(&r),
        );
        r
    }

    fn download_resident(&self, resource: &Resource) -> Result<Vec<u8>, BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.download_resident(resource);
        };
        let call = rec.begin();
        let r = self.inner.download_resident(resource);
        let data = r.as_ref().ok().map(|b| vec![b.as_slice()]);
        self.record_reads(
            rec,
            &call,
            "download_resident",
            vec![(resource, 0, None)],
            data,
            CallResult::of(&r),
        );
        r
    }

    fn download_resident_into(
        &self,
        resource: &Resource,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.download_resident_into(resource, out);
        };
        let call = rec.begin();
        let r = self.inner.download_resident_into(resource, out);
        let data = r.as_ref().ok().map(|_| vec![out.as_slice()]);
        self.record_reads(
            rec,
            &call,
            "download_resident_into",
            vec![(resource, 0, None)],
            data,
            CallResult::of(&r),
        );
        r
    }

    fn download_resident_range(
        &self,
        resource: &Resource,
        byte_offset: usize,
        byte_len: usize,
    ) -> Result<Vec<u8>, BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .download_resident_range(resource, byte_offset, byte_len);
        };
        let call = rec.begin();
        let r = self
            .inner
            .download_resident_range(resource, byte_offset, byte_len);
        let data = r.as_ref().ok().map(|b| vec![b.as_slice()]);
        self.record_reads(
            rec,
            &call,
            "download_resident_range",
            vec![(resource, byte_offset, Some(byte_len))],
            data,
            CallResult::of(&r),
        );
        r
    }

    fn download_resident_range_into(
        &self,
        resource: &Resource,
        byte_offset: usize,
        byte_len: usize,
        out: &mut Vec<u8>,
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .download_resident_range_into(resource, byte_offset, byte_len, out);
        };
        let call = rec.begin();
        let r = self
            .inner
            .download_resident_range_into(resource, byte_offset, byte_len, out);
        let data = r.as_ref().ok().map(|_| vec![out.as_slice()]);
        self.record_reads(
            rec,
            &call,
            "download_resident_range_into",
            vec![(resource, byte_offset, Some(byte_len))],
            data,
            CallResult::of(&r),
        );
        r
    }

    fn download_resident_ranges_into(
        &self,
        ranges: &[(&Resource, usize, usize)],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.download_resident_ranges_into(ranges, outputs);
        };
        let call = rec.begin();
        let r = self.inner.download_resident_ranges_into(ranges, outputs);
        let reads = ranges
            .iter()
            .map(|(res, o, l)| (*res, *o, Some(*l)))
            .collect();
        let data = r
            .as_ref()
            .ok()
            .map(|_| outputs.iter().map(|o| o.as_slice()).collect());
        self.record_reads(
            rec,
            &call,
            "download_resident_ranges_into",
            reads,
            data,
            CallResult::of(&r),
        );
        r
    }

    fn free_resident(&self, resource: Resource) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.free_resident(resource);
        };
        let call = rec.begin();
        let recorded = rec.resource(&resource);
        let r = self.inner.free_resident(resource);
        rec.finish(
            &call,
            "free_resident",
            Event::Free { resource: recorded },
            host_timing(&call),
            CallResult::of(&r),
        );
        r
    }

    fn dispatch_resident_timed(
        &self,
        program: &Program,
        resources: &[Resource],
        config: &DispatchConfig,
    ) -> Result<TimedDispatchResult, BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .dispatch_resident_timed(program, resources, config);
        };
        let call = rec.begin();
        let r = self
            .inner
            .dispatch_resident_timed(program, resources, config);
        let mut timing = host_timing(&call);
        if let Ok(t) = &r {
            timing.backend_wall_ns = Some(t.wall_ns);
            timing.device_ns = t.device_ns;
            timing.enqueue_ns = t.enqueue_ns;
            timing.wait_ns = t.wait_ns;
        }
        let event = Event::ResidentDispatch {
            program: program.clone(),
            config: ConfigRecord::from_config(config),
            resources: resources.iter().map(|x| rec.resource(x)).collect(),
            outputs: r
                .as_ref()
                .map(|t| rec.payloads(&t.outputs))
                .unwrap_or_default(),
        };
        rec.finish(
            &call,
            "dispatch_resident_timed",
            event,
            timing,
            CallResult::of(&r),
        );
        r
    }

    fn dispatch_resident_async(
        &self,
        program: &Program,
        resources: &[Resource],
        config: &DispatchConfig,
    ) -> Result<Box<dyn PendingDispatch>, BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .dispatch_resident_async(program, resources, config);
        };
        let call = rec.begin();
        let kind = PendingKind::Resident {
            program: program.clone(),
            config: ConfigRecord::from_config(config),
            resources: resources.iter().map(|x| rec.resource(x)).collect(),
        };
        let r = self
            .inner
            .dispatch_resident_async(program, resources, config);
        CapturedPending::wrap(rec.clone(), call, "dispatch_resident_async", kind, r)
    }

    fn dispatch_resident_sequence_read_ranges_into(
        &self,
        steps: &[ResidentDispatchStep<'_>],
        read_ranges: &[ResidentReadRange<'_>],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.dispatch_resident_sequence_read_ranges_into(
                steps,
                read_ranges,
                outputs,
            );
        };
        let call = rec.begin();
        let r = self
            .inner
            .dispatch_resident_sequence_read_ranges_into(steps, read_ranges, outputs);
        let event = Event::Sequence {
            prefix: self.steps(rec, steps),
            repeated: Vec::new(),
            repeat_count: 0,
            reads: Self::sequence_reads(rec, read_ranges, r.as_ref().ok().map(|_| &*outputs)),
        };
        rec.finish(
            &call,
            "dispatch_resident_sequence_read_ranges_into",
            event,
            host_timing(&call),
            CallResult::of(&r),
        );
        r
    }

    fn dispatch_resident_sequence_read_ranges_timed_into(
        &self,
        steps: &[ResidentDispatchStep<'_>],
        read_ranges: &[ResidentReadRange<'_>],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<ResidentSequenceTiming, BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .dispatch_resident_sequence_read_ranges_timed_into(steps, read_ranges, outputs);
        };
        let call = rec.begin();
        let r = self
            .inner
            .dispatch_resident_sequence_read_ranges_timed_into(steps, read_ranges, outputs);
        let mut timing = host_timing(&call);
        if let Ok(t) = &r {
            timing.backend_wall_ns = Some(t.wall_ns);
            timing.device_ns = t.device_ns;
            timing.enqueue_ns = t.enqueue_ns;
            timing.wait_ns = t.wait_ns;
        }
        let event = Event::Sequence {
            prefix: self.steps(rec, steps),
            repeated: Vec::new(),
            repeat_count: 0,
            reads: Self::sequence_reads(rec, read_ranges, r.as_ref().ok().map(|_| &*outputs)),
        };
        rec.finish(
            &call,
            "dispatch_resident_sequence_read_ranges_timed_into",
            event,
            timing,
            CallResult::of(&r),
        );
        r
    }

    fn dispatch_resident_repeated_sequence_read_ranges_into(
        &self,
        prefix_steps: &[ResidentDispatchStep<'_>],
        repeated_steps: &[ResidentDispatchStep<'_>],
        repeat_count: u32,
        read_ranges: &[ResidentReadRange<'_>],
        outputs: &mut [&mut Vec<u8>],
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .dispatch_resident_repeated_sequence_read_ranges_into(
                    prefix_steps,
                    repeated_steps,
                    repeat_count,
                    read_ranges,
                    outputs,
                );
        };
        let call = rec.begin();
        let r = self
            .inner
            .dispatch_resident_repeated_sequence_read_ranges_into(
                prefix_steps,
                repeated_steps,
                repeat_count,
                read_ranges,
                outputs,
            );
        let event = Event::Sequence {
            prefix: self.steps(rec, prefix_steps),
            repeated: self.steps(rec, repeated_steps),
            repeat_count,
            reads: Self::sequence_reads(rec, read_ranges, r.as_ref().ok().map(|_| &*outputs)),
        };
        rec.finish(
            &call,
            "dispatch_resident_repeated_sequence_read_ranges_into",
            event,
            host_timing(&call),
            CallResult::of(&r),
        );
        r
    }

    fn pipeline_cache_snapshot(&self) -> Option<vyre_driver::pipeline::PipelineCacheSnapshot> {
        self.inner.pipeline_cache_snapshot()
    }

    fn backend_metric_snapshot(&self) -> Vec<(&'static str, u64)> {
        self.inner.backend_metric_snapshot()
    }

    fn dispatch_async(
        &self,
        program: &Program,
        inputs: &[Vec<u8>],
        config: &DispatchConfig,
    ) -> Result<Box<dyn PendingDispatch>, BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.dispatch_async(program, inputs, config);
        };
        let call = rec.begin();
        let kind = PendingKind::Host {
            program: program.clone(),
            config: ConfigRecord::from_config(config),
            inputs: rec.payloads(inputs),
        };
        let r = self.inner.dispatch_async(program, inputs, config);
        CapturedPending::wrap(rec.clone(), call, "dispatch_async", kind, r)
    }

    fn dispatch_borrowed_async(
        &self,
        program: &Program,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<Box<dyn PendingDispatch>, BackendError> {
        let Some(rec) = self.live() else {
            return self.inner.dispatch_borrowed_async(program, inputs, config);
        };
        let call = rec.begin();
        let kind = PendingKind::Host {
            program: program.clone(),
            config: ConfigRecord::from_config(config),
            inputs: rec.payloads(inputs),
        };
        let r = self.inner.dispatch_borrowed_async(program, inputs, config);
        CapturedPending::wrap(rec.clone(), call, "dispatch_borrowed_async", kind, r)
    }

    fn supports_subgroup_ops(&self) -> bool {
        self.inner.supports_subgroup_ops()
    }

    fn supports_f16(&self) -> bool {
        self.inner.supports_f16()
    }

    fn supports_bf16(&self) -> bool {
        self.inner.supports_bf16()
    }

    fn supports_tensor_cores(&self) -> bool {
        self.inner.supports_tensor_cores()
    }

    fn supports_async_compute(&self) -> bool {
        self.inner.supports_async_compute()
    }

    fn supports_indirect_dispatch(&self) -> bool {
        self.inner.supports_indirect_dispatch()
    }

    fn supports_speculation(&self) -> bool {
        self.inner.supports_speculation()
    }

    fn supports_persistent_thread_dispatch(&self) -> bool {
        self.inner.supports_persistent_thread_dispatch()
    }

    fn supports_grid_sync(&self) -> bool {
        self.inner.supports_grid_sync()
    }

    fn cooperative_grid_sync_fits(
        &self,
        program: &Program,
        inputs: &[&[u8]],
        config: &DispatchConfig,
    ) -> Result<bool, BackendError> {
        self.inner
            .cooperative_grid_sync_fits(program, inputs, config)
    }

    fn allows_host_grid_sync_split(&self) -> bool {
        self.inner.allows_host_grid_sync_split()
    }

    fn supports_resident_dispatch(&self) -> bool {
        self.inner.supports_resident_dispatch()
    }

    fn is_distributed(&self) -> bool {
        self.inner.is_distributed()
    }

    fn supports_distributed_collectives(&self) -> bool {
        self.inner.supports_distributed_collectives()
    }

    fn max_workgroup_size(&self) -> [u32; 3] {
        self.inner.max_workgroup_size()
    }

    fn max_compute_workgroups_per_dimension(&self) -> u32 {
        self.inner.max_compute_workgroups_per_dimension()
    }

    fn max_compute_invocations_per_workgroup(&self) -> u32 {
        self.inner.max_compute_invocations_per_workgroup()
    }

    fn subgroup_size(&self) -> Option<u32> {
        self.inner.subgroup_size()
    }

    fn max_storage_buffer_bytes(&self) -> u64 {
        self.inner.max_storage_buffer_bytes()
    }

    fn device_profile(&self) -> vyre_driver::DeviceProfile {
        self.inner.device_profile()
    }

    fn prepare(&self) -> Result<(), BackendError> {
        self.inner.prepare()
    }

    /// Flushes the wrapped backend, then waits for the capture's writer.
    fn flush(&self) -> Result<(), BackendError> {
        let r = self.inner.flush();
        self.flush_capture();
        r
    }

    fn shutdown(&self) -> Result<(), BackendError> {
        let r = self.inner.shutdown();
        self.flush_capture();
        r
    }

    fn device_lost(&self) -> bool {
        self.inner.device_lost()
    }

    fn try_recover(&self) -> Result<(), BackendError> {
        self.inner.try_recover()
    }

    fn allocate_device_buffer(
        &self,
        byte_len: usize,
    ) -> Result<Box<dyn DeviceBuffer>, BackendError> {
        self.inner.allocate_device_buffer(byte_len)
    }

    fn upload_device_buffer(
        &self,
        buffer: &mut dyn DeviceBuffer,
        bytes: &[u8],
    ) -> Result<(), BackendError> {
        self.inner.upload_device_buffer(buffer, bytes)
    }

    fn download_device_buffer(&self, buffer: &dyn DeviceBuffer) -> Result<Vec<u8>, BackendError> {
        self.inner.download_device_buffer(buffer)
    }

    fn free_device_buffer(&self, buffer: Box<dyn DeviceBuffer>) -> Result<(), BackendError> {
        self.inner.free_device_buffer(buffer)
    }

    fn dispatch_with_device_buffers(
        &self,
        program: &Program,
        inputs: &[&dyn DeviceBuffer],
        outputs: &mut [&mut dyn DeviceBuffer],
        config: &DispatchConfig,
    ) -> Result<(), BackendError> {
        let Some(rec) = self.live() else {
            return self
                .inner
                .dispatch_with_device_buffers(program, inputs, outputs, config);
        };
        let call = rec.begin();
        let r = self
            .inner
            .dispatch_with_device_buffers(program, inputs, outputs, config);
        let event = Event::DeviceBufferDispatch {
            program: program.clone(),
            config: ConfigRecord::from_config(config),
            inputs: u32::try_from(inputs.len()).unwrap_or(u32::MAX),
            outputs: u32::try_from(outputs.len()).unwrap_or(u32::MAX),
        };
        rec.finish_not_captured(
            &call,
            "dispatch_with_device_buffers",
            event,
            host_timing(&call),
            CallResult::of(&r),
        );
        r
    }
}
