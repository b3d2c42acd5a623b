//! The seam under vyrescope's vyre backends: what a place to run our Programs must do. The
//! reference interpreter ([`super::reference`]) and the CUDA runtime
//! (`runtime::vyre_device`) implement it; everything vyre-specific (conversion, binding,
//! resident handles, errors) lives above it in [`super::VyrescopeBackend`], once for both.

use crate::inputs::{HostBuffer, Staged};
use crate::ir::{Access, ElemType, Program};
use crate::shape::LaunchShape;

/// Identity of a converted Program at one workgroup size: the key of a device's compile
/// cache (vyre's Program fingerprint and the workgroup, hashed).
pub type ProgramKey = u64;

/// What a device can run, answered from what it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Device name for messages and `DeviceLost` errors.
    pub device: String,
    /// Most threads per workgroup axis.
    pub max_workgroup: [u32; 3],
    /// Most threads per workgroup.
    pub max_invocations: u32,
    /// Most workgroups per grid axis (the smallest axis limit).
    pub max_workgroups_per_dim: u32,
    /// Warp width, when the device has one.
    pub subgroup_size: Option<u32>,
    /// Largest single buffer in bytes (0 = not reported).
    pub max_buffer_bytes: u64,
    /// Whole-grid barriers run natively (one launch).
    pub grid_sync: bool,
    /// Most threads resident on the device at once (a grid barrier's launch must fit; 0 =
    /// no limit).
    pub max_resident_threads: u64,
    /// Device time is measured (CUDA events); otherwise host time only.
    pub device_timestamps: bool,
    /// Shared (workgroup) memory per workgroup in bytes.
    pub shared_bytes: u32,
    /// Streaming multiprocessors (0 = not a GPU).
    pub compute_units: u32,
    /// L2 bytes (0 = not reported).
    pub l2_bytes: u64,
    /// Memory bandwidth in GB/s (0 = not reported).
    pub mem_bw_gbps: u32,
}

/// How to run: measure device time, and how long a launch may take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Measure the kernel's device time (CUDA events).
    pub timed: bool,
    /// Give up on a launch after this long (the device recovers); `None` = the device's
    /// default.
    pub timeout: Option<std::time::Duration>,
}

/// Host times of one run, when the device measures them (nanoseconds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunTimes {
    /// Device time of the kernel (CUDA events).
    pub device_ns: Option<u64>,
    /// Host time spent enqueueing.
    pub enqueue_ns: Option<u64>,
    /// Host time spent waiting for completion.
    pub wait_ns: Option<u64>,
    /// Host time copying the inputs to the device (staging included), one-shot runs only.
    pub upload_ns: Option<u64>,
    /// Host time copying the outputs back, one-shot runs only.
    pub readback_ns: Option<u64>,
}

/// One buffer of a resident launch: a device buffer standing for one of the Program's
/// buffers.
#[derive(Debug)]
pub struct ResidentArg<'a, B> {
    /// The device buffer.
    pub buffer: &'a B,
    /// The Program's buffer name.
    pub name: &'a str,
    /// Its element type.
    pub elem: ElemType,
    /// Its access.
    pub access: Access,
    /// Its binding.
    pub binding: u32,
    /// Elements the kernel sees (`len(b)`); the buffer holds at least this many.
    pub elements: u64,
}

/// Why a device operation failed, classified for vyre's `BackendError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailKind {
    /// The Program or its launch cannot run here (limits, ABI, co-residency).
    Invalid,
    /// Compiling the kernel failed.
    Compile,
    /// The kernel failed or timed out; the device recovered.
    Dispatch,
    /// The device is gone for this process (a sticky fault that recovery could not undo).
    Lost,
    /// A resident buffer belongs to a context that no longer exists.
    Stale,
}

/// A device failure: kind, message and the `Fix:` text (without the prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceFailure {
    /// Classification.
    pub kind: FailKind,
    /// What went wrong.
    pub message: String,
    /// What to do about it.
    pub fix: String,
}

impl DeviceFailure {
    /// A failure of `kind`.
    pub fn new(kind: FailKind, message: impl Into<String>, fix: impl Into<String>) -> Self {
        DeviceFailure {
            kind,
            message: message.into(),
            fix: fix.into(),
        }
    }
}

/// Result alias of device operations.
pub type DeviceResult<T> = Result<T, DeviceFailure>;

/// A place to run our Programs: one-shot runs over host buffers and runs over resident
/// buffers. Calls come one at a time (the backend holds a lock).
pub trait Device: Send + 'static {
    /// A resident buffer.
    type Buffer: Send + 'static;

    /// The device's limits.
    fn limits(&self) -> Limits;

    /// Runs `program` (compiled once per `key`) on `shape` over `buffers` (the Program's
    /// non-workgroup buffers, declaration order), leaving the writable ones updated.
    /// `sources[i]` says where buffer `i`'s contents are: with [`Staged::From`] its `data` is
    /// empty and the caller's input stands for it (not copied; a writable such buffer gets its
    /// results in `data`), with [`Staged::Zeros`] its `data` is known to be zeros.
    fn run(
        &mut self,
        key: ProgramKey,
        program: &Program,
        shape: &LaunchShape,
        buffers: &mut [HostBuffer],
        sources: &[Staged<'_>],
        opts: RunOptions,
    ) -> DeviceResult<RunTimes>;

    /// A zeroed buffer of `bytes` bytes.
    fn alloc(&mut self, bytes: usize) -> DeviceResult<Self::Buffer>;

    /// Writes `bytes` at byte `offset` (the caller checked the range).
    fn write(&mut self, buffer: &Self::Buffer, offset: usize, bytes: &[u8]) -> DeviceResult<()>;

    /// Reads `out.len()` bytes from byte `offset` (the caller checked the range).
    fn read(&mut self, buffer: &Self::Buffer, offset: usize, out: &mut [u8]) -> DeviceResult<()>;

    /// Frees a buffer.
    fn free(&mut self, buffer: Self::Buffer);

    /// Runs `program` on `shape` over resident buffers (`args`: the Program's non-workgroup
    /// buffers, declaration order).
    fn run_resident(
        &mut self,
        key: ProgramKey,
        program: &Program,
        shape: &LaunchShape,
        args: &[ResidentArg<'_, Self::Buffer>],
        opts: RunOptions,
    ) -> DeviceResult<RunTimes>;

    /// Waits for queued work.
    fn finish(&mut self) -> DeviceResult<()>;

    /// Makes the device usable again after a fault (resident buffers of the old context
    /// become stale).
    fn recover(&mut self) -> DeviceResult<()>;

    /// The device can no longer run work in this process.
    fn lost(&self) -> bool;

    /// Compile-cache hits and misses, when counted.
    fn cache_counts(&self) -> Option<(u64, u64)>;

    /// Numeric telemetry (`name`, value).
    fn metrics(&self) -> Vec<(&'static str, u64)>;
}
