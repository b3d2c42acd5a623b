//! Loaded modules and the kernel functions in them: JIT options and logs of
//! `cuModuleLoadDataEx`, function lookup and the per-function limits the driver reports.

use super::*;

/// Options for one `cuModuleLoadDataEx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct JitRequest {
    /// `CU_JIT_GENERATE_LINE_INFO`.
    pub lineinfo: bool,
    /// `CU_JIT_MAX_REGISTERS` (0 = no cap).
    pub max_registers: u32,
    /// `CU_JIT_OPTIMIZATION_LEVEL` (None = driver default, 4).
    pub opt_level: Option<u32>,
}

/// What the JIT said.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct JitLog {
    /// Info log (ptxas-style resource lines with verbose logging).
    pub info: String,
    /// Error log.
    pub error: String,
    /// Driver-reported JIT wall time (ms), `CU_JIT_WALL_TIME`.
    pub driver_ms: f64,
}

pub(super) const LOG_BYTES: usize = 64 * 1024;

/// A loaded module.
#[derive(Debug)]
pub(crate) struct Module(pub(super) sys::CUmodule);

// Safety: see `Context`.
unsafe impl Send for Module {}

/// A kernel function inside a [`Module`] (valid while the module lives).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Function(pub(super) sys::CUfunction);

// Safety: see `Context`; the owning module is kept alive by the caller's cache entry.
unsafe impl Send for Function {}

pub(super) fn log_text(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim_end().to_string()
}

impl Module {
    /// `cuModuleLoadDataEx` of PTX text with info/error logs; the logs come back on both
    /// success and failure.
    pub(crate) fn load_ptx(
        ptx: &str,
        req: &JitRequest,
    ) -> Result<(Module, JitLog), Box<(DriverError, JitLog)>> {
        let image = match CString::new(ptx) {
            Ok(c) => c,
            Err(_) => {
                let e = DriverError {
                    call: "cuModuleLoadDataEx",
                    code: 1,
                    name: "CUDA_ERROR_INVALID_VALUE".into(),
                    text: "PTX text contains a NUL byte".into(),
                };
                return Err(Box::new((e, JitLog::default())));
            }
        };
        let mut info = vec![0u8; LOG_BYTES];
        let mut error = vec![0u8; LOG_BYTES];
        use sys::CUjit_option as O;
        let mut opts: Vec<O> = vec![
            O::CU_JIT_INFO_LOG_BUFFER,
            O::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_ERROR_LOG_BUFFER,
            O::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
            O::CU_JIT_LOG_VERBOSE,
            O::CU_JIT_WALL_TIME,
        ];
        // Option values are passed by value in pointer-sized slots (the API's convention).
        let mut vals: Vec<*mut c_void> = vec![
            info.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(LOG_BYTES),
            error.as_mut_ptr() as *mut c_void,
            std::ptr::without_provenance_mut(LOG_BYTES),
            std::ptr::without_provenance_mut(1),
            std::ptr::null_mut(),
        ];
        let wall_slot = 5;
        if req.lineinfo {
            opts.push(O::CU_JIT_GENERATE_LINE_INFO);
            vals.push(std::ptr::without_provenance_mut(1));
        }
        if req.max_registers > 0 {
            opts.push(O::CU_JIT_MAX_REGISTERS);
            vals.push(std::ptr::without_provenance_mut(req.max_registers as usize));
        }
        if let Some(l) = req.opt_level {
            opts.push(O::CU_JIT_OPTIMIZATION_LEVEL);
            vals.push(std::ptr::without_provenance_mut(l as usize));
        }
        let mut m: sys::CUmodule = std::ptr::null_mut();
        // Safety: `image` is a NUL-terminated PTX string alive for the call; `opts`/`vals`
        // have equal length; the log buffers outlive the call and their sizes are given.
        let r = unsafe {
            sys::cuModuleLoadDataEx(
                &mut m,
                image.as_ptr() as *const c_void,
                opts.len() as c_uint,
                opts.as_mut_ptr(),
                vals.as_mut_ptr(),
            )
        };
        // The driver writes the wall time as a float into the low bits of the slot.
        let driver_ms = f32::from_bits(vals[wall_slot] as usize as u32) as f64;
        let log = JitLog {
            info: log_text(&info),
            error: log_text(&error),
            driver_ms,
        };
        match check("cuModuleLoadDataEx", r) {
            Ok(()) => Ok((Module(m), log)),
            Err(e) => Err(Box::new((e, log))),
        }
    }

    /// `cuModuleGetFunction`.
    pub(crate) fn function(&self, name: &str) -> Result<Function, DriverError> {
        let c = CString::new(name).map_err(|_| DriverError {
            call: "cuModuleGetFunction",
            code: 500,
            name: "CUDA_ERROR_NOT_FOUND".into(),
            text: "kernel name contains a NUL byte".into(),
        })?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // Safety: live module, NUL-terminated name.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, self.0, c.as_ptr())
        })?;
        Ok(Function(f))
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // Safety: live owned handle; errors ignored.
        unsafe {
            let _ = sys::cuModuleUnload(self.0);
        }
    }
}

impl Function {
    /// `cuFuncGetAttribute`.
    pub(crate) fn attr(self, a: sys::CUfunction_attribute) -> Result<i32, DriverError> {
        let mut v: c_int = 0;
        // Safety: live function (its module is alive), writes one int.
        check("cuFuncGetAttribute", unsafe {
            sys::cuFuncGetAttribute(&mut v, a, self.0)
        })?;
        Ok(v)
    }

    /// Sets `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub(crate) fn set_max_dynamic_smem(self, bytes: u32) -> Result<(), DriverError> {
        // Safety: live function.
        check("cuFuncSetAttribute", unsafe {
            sys::cuFuncSetAttribute(
                self.0,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as c_int,
            )
        })
    }

    /// `cuOccupancyMaxActiveBlocksPerMultiprocessor`.
    pub(crate) fn max_active_blocks(
        self,
        block: u32,
        dynamic_smem: u32,
    ) -> Result<u32, DriverError> {
        let mut n: c_int = 0;
        // Safety: live function, writes one int.
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n,
                self.0,
                block as c_int,
                dynamic_smem as usize,
            )
        })?;
        Ok(n.max(0) as u32)
    }
}
