//! The unsafe boundary: every CUDA driver call of the crate goes through this module.
//!
//! Thin RAII handles over `cudarc::driver::sys` (context, stream, event, module, device and
//! pinned buffers) and safe functions returning [`DriverError`]. Nothing outside this file
//! uses `unsafe` or raw driver handles; callers hold handles whose `Drop` releases them.
//!
//! cudarc resolves each symbol on first use and panics when `libcuda` is missing, so
//! [`load_library`] first opens the library ourselves (giving the loader's own reason on
//! failure) and [`init`] runs the first driver calls under `catch_unwind`.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::fmt;

use cudarc::driver::sys;

mod baseline;
pub(crate) mod cupti;
mod module;
pub(crate) mod nvtx;
pub(crate) mod staging;

pub(crate) use baseline::bare_cudarc_launch_loop;
pub(crate) use module::{Function, JitLog, JitRequest, Module};

/// Names the dynamic loader is asked for, most specific first.
pub(crate) const LIBCUDA_NAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

/// A failed driver call: which call, the `CUresult` and the driver's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverError {
    /// Driver entry point that failed (`cuLaunchKernel`).
    pub call: &'static str,
    /// Numeric `CUresult`.
    pub code: u32,
    /// `CUDA_ERROR_*` name.
    pub name: String,
    /// Driver's description.
    pub text: String,
}

impl DriverError {
    /// True for errors after which the context is unusable (sticky kernel faults).
    pub fn is_sticky(&self) -> bool {
        // 700 illegal address, 710 assert, 714 hardware stack, 715 illegal instruction,
        // 716 misaligned, 717 invalid address space, 718 invalid pc, 719 launch failed
        // (trap): documented as leaving the context in an unusable state.
        matches!(self.code, 700 | 710 | 714..=719)
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: {} ({}): {}",
            self.call, self.name, self.code, self.text
        )
    }
}

fn check(call: &'static str, r: sys::CUresult) -> Result<(), DriverError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const c_char = std::ptr::null();
    let mut text: *const c_char = std::ptr::null();
    // Safety: both functions only write a pointer to a static string owned by the driver;
    // a null result (unknown code) is handled below.
    unsafe {
        let _ = sys::cuGetErrorName(r, &mut name);
        let _ = sys::cuGetErrorString(r, &mut text);
    }
    let to_string = |p: *const c_char| {
        if p.is_null() {
            "unknown".to_string()
        } else {
            // Safety: non-null pointers from cuGetError* are NUL-terminated static strings.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    Err(DriverError {
        call,
        code: r as u32,
        name: to_string(name),
        text: to_string(text),
    })
}

/// `libcuda` could not be opened: the name tried and the loader's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot open {lib}: {reason}")]
pub(crate) struct NoLibrary {
    /// Library name tried first.
    pub lib: String,
    /// The loader's message.
    pub reason: String,
}

/// Opens `libcuda` with the system loader; on failure says which library and why. Opening
/// it here keeps cudarc from panicking later.
pub(crate) fn load_library() -> Result<(), NoLibrary> {
    let mut last = String::new();
    for name in LIBCUDA_NAMES {
        // Safety: loading libcuda runs its initialisers, which have no preconditions; the
        // handle is dropped at once (cudarc keeps its own handle to the same library).
        match unsafe { libloading::Library::new(name) } {
            Ok(_) => return Ok(()),
            Err(e) => {
                if last.is_empty() {
                    // libloading's own text is generic ("dlopen failed"); the loader's
                    // message is its source.
                    last = std::error::Error::source(&e)
                        .map_or_else(|| e.to_string(), |s| s.to_string());
                }
            }
        }
    }
    Err(NoLibrary {
        lib: LIBCUDA_NAMES[0].to_string(),
        reason: last,
    })
}

/// A panic inside cudarc's loader (a symbol the driver library lacks), caught by [`guarded`];
/// its message is the panic's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct LoaderPanic(pub String);

/// Runs `f`, turning a panic inside cudarc (missing symbol) into a [`LoaderPanic`], without
/// printing the panic message.
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, LoaderPanic> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    r.map_err(|p| {
        LoaderPanic(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the driver library panicked".into()),
        )
    })
}

/// `cuInit(0)`.
pub(crate) fn init() -> Result<(), DriverError> {
    // Safety: cuInit has no preconditions and may be called repeatedly.
    check("cuInit", unsafe { sys::cuInit(0) })
}

/// `cuDriverGetVersion` (e.g. 13000).
pub(crate) fn driver_version() -> Result<u32, DriverError> {
    let mut v: c_int = 0;
    // Safety: writes one int.
    check("cuDriverGetVersion", unsafe {
        sys::cuDriverGetVersion(&mut v)
    })?;
    Ok(v as u32)
}

/// Number of CUDA devices.
pub(crate) fn device_count() -> Result<u32, DriverError> {
    let mut n: c_int = 0;
    // Safety: writes one int; cuInit was called.
    check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) })?;
    Ok(n.max(0) as u32)
}

/// A device ordinal resolved to a driver handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Device(sys::CUdevice);

impl Device {
    /// `cuDeviceGet`.
    pub(crate) fn get(ordinal: u32) -> Result<Device, DriverError> {
        let mut d: sys::CUdevice = 0;
        // Safety: writes one device handle.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut d, ordinal as c_int)
        })?;
        Ok(Device(d))
    }

    /// `cuDeviceGetName`.
    pub(crate) fn name(self) -> Result<String, DriverError> {
        let mut buf = [0 as c_char; 256];
        // Safety: the driver writes at most `len` bytes including the NUL.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as c_int, self.0)
        })?;
        // Safety: NUL-terminated within the buffer (the driver truncates to len).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// `cuDeviceGetAttribute`.
    pub(crate) fn attr(self, a: sys::CUdevice_attribute) -> Result<i32, DriverError> {
        let mut v: c_int = 0;
        // Safety: writes one int.
        check("cuDeviceGetAttribute", unsafe {
            sys::cuDeviceGetAttribute(&mut v, a, self.0)
        })?;
        Ok(v)
    }

    /// `cuDeviceTotalMem`.
    pub(crate) fn total_mem(self) -> Result<u64, DriverError> {
        let mut v: usize = 0;
        // Safety: writes one size_t.
        check("cuDeviceTotalMem", unsafe {
            sys::cuDeviceTotalMem_v2(&mut v, self.0)
        })?;
        Ok(v as u64)
    }
}

/// A CUDA context: either the device's primary context (retained; the default, because
/// `cuDevicePrimaryCtxReset` is the documented way to clear a faulted device) or an owned
/// one from `cuCtxCreate`. Dropping it releases / destroys it, freeing everything in it.
#[derive(Debug)]
pub(crate) struct Context {
    raw: sys::CUcontext,
    dev: Device,
    primary: bool,
}

// Safety: a CUcontext may be used from any thread once made current there; every entry
// point of `Runtime` calls `make_current` first.
unsafe impl Send for Context {}

impl Context {
    /// Retains the primary context of `dev` (`primary`) or creates an owned one.
    pub(crate) fn create(dev: Device, primary: bool) -> Result<Context, DriverError> {
        let mut c: sys::CUcontext = std::ptr::null_mut();
        if primary {
            // Safety: writes one context handle; balanced by the release in Drop.
            check("cuDevicePrimaryCtxRetain", unsafe {
                sys::cuDevicePrimaryCtxRetain(&mut c, dev.0)
            })?;
        } else {
            // Safety: writes one context handle and makes it current on this thread.
            check("cuCtxCreate", unsafe {
                sys::cuCtxCreate_v2(&mut c, 0, dev.0)
            })?;
        }
        Ok(Context {
            raw: c,
            dev,
            primary,
        })
    }

    /// `cuCtxSetCurrent`.
    pub(crate) fn make_current(&self) -> Result<(), DriverError> {
        // vyrescope is the only CUDA user of its threads, so a per-thread note of what is
        // current saves a driver call on every launch.
        if CURRENT.with(|c| c.get()) == self.raw as usize {
            return Ok(());
        }
        // Safety: self.raw is a live context (released only in Drop).
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.raw) })?;
        CURRENT.with(|c| c.set(self.raw as usize));
        Ok(())
    }

    fn release(&self) -> Result<(), DriverError> {
        if self.primary {
            // Safety: balances the retain in `create`.
            check("cuDevicePrimaryCtxRelease", unsafe {
                sys::cuDevicePrimaryCtxRelease_v2(self.dev.0)
            })
        } else {
            // Safety: live owned handle.
            check("cuCtxDestroy", unsafe { sys::cuCtxDestroy_v2(self.raw) })
        }
    }
}

thread_local! {
    /// The context this thread last made current (0 = none known).
    static CURRENT: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Drop for Context {
    fn drop(&mut self) {
        // A new context may reuse the address: forget it as "current".
        CURRENT.with(|c| c.set(0));
        // Errors (a faulted context) are ignored: destruction is the recovery path.
        let _ = self.release();
    }
}

/// `cuDevicePrimaryCtxReset`: destroys all allocations and state of the primary context
/// (the driver's way out of a sticky fault).
pub(crate) fn reset_primary(dev: Device) -> Result<(), DriverError> {
    // Safety: no preconditions beyond a valid device; handles of the old context held by
    // the caller were dropped before.
    check("cuDevicePrimaryCtxReset", unsafe {
        sys::cuDevicePrimaryCtxReset_v2(dev.0)
    })
}

/// A non-blocking stream.
#[derive(Debug)]
pub(crate) struct Stream(sys::CUstream);

// Safety: see `Context`.
unsafe impl Send for Stream {}

impl Stream {
    /// `cuStreamCreate(CU_STREAM_NON_BLOCKING)`.
    pub(crate) fn create() -> Result<Stream, DriverError> {
        let mut s: sys::CUstream = std::ptr::null_mut();
        // Safety: writes one stream handle in the current context.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(
                &mut s,
                sys::CUstream_flags::CU_STREAM_NON_BLOCKING as c_uint,
            )
        })?;
        Ok(Stream(s))
    }

    /// `cuStreamSynchronize`.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // Safety: live stream.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.0)
        })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Safety: live owned handle; errors ignored (see Context::drop).
        unsafe {
            let _ = sys::cuStreamDestroy_v2(self.0);
        }
    }
}

/// A CUDA event (timing enabled or not).
#[derive(Debug)]
pub(crate) struct Event(sys::CUevent);

// Safety: see `Context`.
unsafe impl Send for Event {}

impl Event {
    /// `cuEventCreate`.
    pub(crate) fn create(timing: bool) -> Result<Event, DriverError> {
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let mut e: sys::CUevent = std::ptr::null_mut();
        // Safety: writes one event handle.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut e, flags as c_uint)
        })?;
        Ok(Event(e))
    }

    /// `cuEventRecord` on `stream`.
    pub(crate) fn record(&self, stream: &Stream) -> Result<(), DriverError> {
        // Safety: live event and stream of the same context.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.0, stream.0)
        })
    }

    /// `cuEventSynchronize`.
    pub(crate) fn synchronize(&self) -> Result<(), DriverError> {
        // Safety: live event.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(self.0)
        })
    }

    /// `cuEventQuery`: Ok(true) when complete, Ok(false) while pending.
    pub(crate) fn query(&self) -> Result<bool, DriverError> {
        // Safety: live event.
        let r = unsafe { sys::cuEventQuery(self.0) };
        if r == sys::CUresult::CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        check("cuEventQuery", r).map(|_| true)
    }

    /// `cuEventElapsedTime(start, end)` in milliseconds.
    pub(crate) fn elapsed_ms(start: &Event, end: &Event) -> Result<f64, DriverError> {
        let mut ms: f32 = 0.0;
        // Safety: both events are live, recorded and complete (callers synchronize `end`).
        check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime(&mut ms, start.0, end.0)
        })?;
        Ok(ms as f64)
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // Safety: live owned handle; errors ignored.
        unsafe {
            let _ = sys::cuEventDestroy_v2(self.0);
        }
    }
}

/// Device memory; freed on drop.
#[derive(Debug)]
pub(crate) struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
}

// Safety: see `Context`.
unsafe impl Send for DeviceBuffer {}

impl DeviceBuffer {
    /// `cuMemAlloc` (at least 1 byte so that empty buffers still get a valid pointer).
    pub(crate) fn alloc(bytes: usize) -> Result<DeviceBuffer, DriverError> {
        let mut p: sys::CUdeviceptr = 0;
        // Safety: writes one device pointer.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut p, bytes.max(1))
        })?;
        Ok(DeviceBuffer { ptr: p, bytes })
    }

    /// Device address.
    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Size in bytes as requested.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// `cuMemsetD8Async` over the whole buffer.
    pub(crate) fn memset_async(&self, value: u8, stream: &Stream) -> Result<(), DriverError> {
        // Safety: range within the allocation, live stream.
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(self.ptr, value, self.bytes, stream.0)
        })
    }

    /// `cuMemcpyHtoDAsync` of `src` (pinned) into `[offset, offset + len)`.
    ///
    /// # Safety
    /// `src` must stay alive and unwritten by the host until the copy completes (the stream
    /// reaches a later event or is synchronized). [`staging::StagingSlot`] is the only caller
    /// and enforces this.
    unsafe fn upload_async(
        &self,
        offset: usize,
        src: &PinnedBuffer,
        len: usize,
        stream: &Stream,
    ) -> Result<(), DriverError> {
        if offset + len > self.bytes || len > src.bytes {
            return Err(range_error("cuMemcpyHtoDAsync"));
        }
        // Safety: both ranges were checked above; the pinned source stays alive and unchanged
        // until the caller synchronizes (staging slots wait on an event before reuse).
        check("cuMemcpyHtoDAsync", unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                self.ptr + offset as u64,
                src.ptr as *const c_void,
                len,
                stream.0,
            )
        })
    }

    /// `cuMemcpyDtoHAsync` of `[offset, offset + len)` into `dst` (pinned).
    ///
    /// # Safety
    /// `dst` must stay alive and unread and unwritten by the host until the copy completes.
    /// [`staging::StagingSlot`] is the only caller and enforces this.
    unsafe fn download_async(
        &self,
        offset: usize,
        dst: &PinnedBuffer,
        len: usize,
        stream: &Stream,
    ) -> Result<(), DriverError> {
        if offset + len > self.bytes || len > dst.bytes {
            return Err(range_error("cuMemcpyDtoHAsync"));
        }
        // Safety: ranges checked; the caller synchronizes before reading `dst`.
        check("cuMemcpyDtoHAsync", unsafe {
            sys::cuMemcpyDtoHAsync_v2(dst.ptr, self.ptr + offset as u64, len, stream.0)
        })
    }
}

fn range_error(call: &'static str) -> DriverError {
    DriverError {
        call,
        code: 1,
        name: "CUDA_ERROR_INVALID_VALUE".into(),
        text: "copy range outside the buffer".into(),
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // Safety: live owned allocation; errors ignored (faulted context).
        unsafe {
            let _ = sys::cuMemFree_v2(self.ptr);
        }
    }
}

/// Page-locked host memory for staging copies; freed on drop. Only [`staging::StagingSlot`]
/// reads or writes it, so no host access can overlap a copy in flight.
#[derive(Debug)]
struct PinnedBuffer {
    ptr: *mut c_void,
    bytes: usize,
}

// Safety: plain host memory owned by this value; see `Context` for the driver side.
unsafe impl Send for PinnedBuffer {}

impl PinnedBuffer {
    /// `cuMemHostAlloc` (portable).
    fn alloc(bytes: usize) -> Result<PinnedBuffer, DriverError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // Safety: writes one host pointer to `bytes` page-locked bytes.
        check("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut p, bytes.max(1), sys::CU_MEMHOSTALLOC_PORTABLE)
        })?;
        Ok(PinnedBuffer { ptr: p, bytes })
    }

    /// The memory as bytes. Callers must not hold it while a copy into it is in flight.
    fn as_slice(&self) -> &[u8] {
        // Safety: ptr points to `bytes` initialised-or-not bytes we own; u8 has no invalid
        // values and the allocation zero pages are readable.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.bytes) }
    }

    /// The memory as mutable bytes.
    fn as_mut_slice(&mut self) -> &mut [u8] {
        // Safety: as above, and `&mut self` guarantees exclusive access on the host side.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut u8, self.bytes) }
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // Safety: live owned allocation.
        unsafe {
            let _ = sys::cuMemFreeHost(self.ptr);
        }
    }
}

/// Launch geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    /// Blocks.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub dynamic_smem: u32,
}

/// Launches `f`; each argument is one 8-byte slot (a `.u32` parameter reads the low four
/// bytes, which is where a little-endian u64 keeps the value).
pub(crate) fn launch(
    f: Function,
    geo: &Geometry,
    stream: &Stream,
    args: &mut [u64],
    cooperative: bool,
) -> Result<(), DriverError> {
    let mut ptrs: Vec<*mut c_void> = args
        .iter_mut()
        .map(|a| a as *mut u64 as *mut c_void)
        .collect();
    let [gx, gy, gz] = geo.grid;
    let [bx, by, bz] = geo.block;
    // Safety: `ptrs` points at `args`, which outlives the call (the driver copies parameter
    // values during the launch call); the function and stream are live.
    let r = unsafe {
        if cooperative {
            sys::cuLaunchCooperativeKernel(
                f.0,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                geo.dynamic_smem,
                stream.0,
                ptrs.as_mut_ptr(),
            )
        } else {
            sys::cuLaunchKernel(
                f.0,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                geo.dynamic_smem,
                stream.0,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    };
    check(
        if cooperative {
            "cuLaunchCooperativeKernel"
        } else {
            "cuLaunchKernel"
        },
        r,
    )
}
