//! JIT: PTX -> module with `cuModuleLoadDataEx` (info and error logs, wall time, optional
//! line info), kernel resources from `cuFuncGetAttribute`, and the Program -> PTX -> module
//! path through both caches.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::CUfunction_attribute as FA;
use serde::{Deserialize, Serialize};

use super::cache::{hash_parts, LoadedKernel};
use super::driver::{Function, JitRequest, Module};
use super::{Result, Runtime, RuntimeError, GENERIC_FIX};
use crate::emit::grid_sync::GridBarrier;
use crate::emit::{EmitOptions, EmittedKernel};
use crate::ir::Program;
use crate::occupancy::KernelResources;

/// JIT options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct JitOptions {
    /// `CU_JIT_GENERATE_LINE_INFO` (for profilers mapping SASS to PTX lines).
    pub lineinfo: bool,
    /// `CU_JIT_MAX_REGISTERS`; 0 = no cap.
    pub max_registers: u32,
    /// `CU_JIT_OPTIMIZATION_LEVEL` 0..4; None = the driver default (4).
    pub opt_level: Option<u32>,
    /// How the emitter lowers grid barriers (see `emit::grid_sync`).
    pub grid_barrier: GridBarrier,
    /// The emitter's versioned bounds checks (`EmitOptions::version_bounds`), for
    /// side-by-side measurement.
    pub version_bounds: bool,
}

impl JitOptions {
    fn request(&self) -> JitRequest {
        JitRequest {
            lineinfo: self.lineinfo,
            max_registers: self.max_registers,
            opt_level: self.opt_level,
        }
    }
}

/// A kernel the runtime can launch: enough to reload it after its module was evicted or
/// its context recreated.
#[derive(Debug, Clone)]
pub struct KernelHandle {
    /// Module cache key (PTX hash, device, options).
    pub key: u64,
    /// `.entry` name.
    pub name: String,
    /// PTX text.
    pub ptx: Arc<str>,
    /// JIT options.
    pub options: JitOptions,
}

/// What the driver says about a loaded kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// Registers, shared, local and const bytes, max threads per block.
    pub resources: KernelResources,
    /// PTX ISA version the kernel was compiled from (major*10+minor).
    pub ptx_version: u32,
    /// SASS binary version (major*10+minor).
    pub binary_version: u32,
    /// Max dynamic shared memory the kernel may use without opting in (bytes).
    pub max_dynamic_smem: u32,
    /// Wall time of `cuModuleLoadDataEx` (ms); 0 on a module cache hit.
    pub jit_ms: f64,
    /// The driver's own JIT wall-time figure (ms).
    pub driver_jit_ms: f64,
    /// JIT info log (ptxas resource lines).
    pub info_log: String,
    /// True when the module came from the module cache.
    pub cached: bool,
}

/// A Program compiled for this device.
#[derive(Debug, Clone)]
pub struct CompiledProgram {
    /// The emitter's output (PTX, map, ABI).
    pub emitted: EmittedKernel,
    /// True when the PTX came from the PTX cache.
    pub ptx_cached: bool,
    /// Launchable kernel.
    pub handle: KernelHandle,
    /// Driver figures.
    pub info: KernelInfo,
}

fn read_info(f: Function, log: &super::driver::JitLog, jit_ms: f64) -> Result<KernelInfo> {
    let a = |attr: FA| {
        f.attr(attr)
            .map(|v| v.max(0) as u32)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))
    };
    Ok(KernelInfo {
        resources: KernelResources {
            regs_per_thread: a(FA::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_smem_bytes: a(FA::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: a(FA::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            const_bytes: a(FA::CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES)?,
            max_threads_per_block: a(FA::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        },
        ptx_version: a(FA::CU_FUNC_ATTRIBUTE_PTX_VERSION)?,
        binary_version: a(FA::CU_FUNC_ATTRIBUTE_BINARY_VERSION)?,
        max_dynamic_smem: a(FA::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)?,
        jit_ms,
        driver_jit_ms: log.driver_ms,
        info_log: log.info.clone(),
        cached: false,
    })
}

impl Runtime {
    /// JIT-compiles `ptx` (or finds it in the module cache) and returns a handle to kernel
    /// `name` with its resources. A JIT failure carries the whole error log.
    pub fn load_kernel(
        &mut self,
        ptx: &str,
        name: &str,
        options: &JitOptions,
    ) -> Result<(KernelHandle, KernelInfo)> {
        let _range = super::driver::nvtx::range(&format!("vyrescope jit {name}"));
        let req = options.request();
        let key = hash_parts(&[
            ptx.as_bytes(),
            name.as_bytes(),
            &self.ordinal().to_le_bytes(),
            &[req.lineinfo as u8],
            &req.max_registers.to_le_bytes(),
            &req.opt_level.map_or(u32::MAX, |l| l).to_le_bytes(),
        ]);
        let handle = KernelHandle {
            key,
            name: name.to_string(),
            ptx: Arc::from(ptx),
            options: *options,
        };
        let (_, info) = self.kernel(&handle)?;
        Ok((handle, info))
    }

    /// Blocks of `threads` threads (no dynamic shared memory) of loaded kernel `h` that the
    /// driver keeps resident at once on the whole device
    /// (`cuOccupancyMaxActiveBlocksPerMultiprocessor` times the SM count).
    pub fn resident_blocks(&mut self, h: &KernelHandle, threads: u32) -> Result<u64> {
        let (f, _) = self.kernel_for_launch(h)?;
        let per_sm = f
            .max_active_blocks(threads, 0)
            .map_err(|e| RuntimeError::driver(e, GENERIC_FIX))?;
        Ok(u64::from(per_sm) * u64::from(self.caps().sm_count))
    }

    /// The function and resources for a launch of `h`: an uncounted cache lookup, falling
    /// back to [`Runtime::kernel`] (a counted load) when the module is gone.
    pub(super) fn kernel_for_launch(
        &mut self,
        h: &KernelHandle,
    ) -> Result<(Function, KernelResources)> {
        let sess = self.sess()?;
        if let Some(k) = sess.modules.peek(h.key) {
            return Ok((k.function, k.info.resources.clone()));
        }
        let (f, info) = self.kernel(h)?;
        Ok((f, info.resources))
    }

    /// The loaded function for `h`, JIT-compiling it again if its module is not loaded in
    /// the current context.
    pub(super) fn kernel(&mut self, h: &KernelHandle) -> Result<(Function, KernelInfo)> {
        let ordinal_key = h.key;
        let sess = self.sess()?;
        if let Some(k) = sess.modules.get(ordinal_key) {
            let mut info = k.info.clone();
            info.cached = true;
            info.jit_ms = 0.0;
            let f = k.function;
            return Ok((f, info));
        }
        let t = Instant::now();
        let loaded = Module::load_ptx(&h.ptx, &h.options.request());
        let jit_ms = t.elapsed().as_secs_f64() * 1e3;
        let (module, log) = match loaded {
            Ok(ok) => ok,
            Err(boxed) => {
                let (err, log) = *boxed;
                let mut text = log.error.clone();
                if !log.info.is_empty() {
                    text.push('\n');
                    text.push_str(&log.info);
                }
                return Err(RuntimeError::Jit {
                    kernel: h.name.clone(),
                    err: Box::new(err),
                    log: text,
                });
            }
        };
        let f = module.function(&h.name).map_err(|e| {
            RuntimeError::driver(
                e,
                "the PTX has no `.entry` of that name; check the kernel name",
            )
        })?;
        let info = read_info(f, &log, jit_ms)?;
        self.telemetry.jit_count += 1;
        self.telemetry.jit_ms_total += jit_ms;
        let sess = self.sess()?;
        sess.modules.insert(
            ordinal_key,
            LoadedKernel {
                function: f,
                info: info.clone(),
                _module: module,
            },
            h.ptx.len() as u64,
            jit_ms,
        );
        self.names.insert(h.key, h.name.clone());
        Ok((f, info))
    }

    /// Emits (or finds in the PTX cache) and loads `program` for `workgroup`, targeting the
    /// device's own sm.
    pub fn compile_program(
        &mut self,
        program: &Program,
        workgroup: [u32; 3],
        options: &JitOptions,
    ) -> Result<CompiledProgram> {
        self.compile_program_for(program, workgroup, None, options)
    }

    /// Like [`Runtime::compile_program`], emitting for target `sm` (None = the device's own).
    /// PTX for an sm newer than the device's cannot load, so that is refused up front with
    /// the device's sm in the message.
    pub fn compile_program_for(
        &mut self,
        program: &Program,
        workgroup: [u32; 3],
        sm: Option<u32>,
        options: &JitOptions,
    ) -> Result<CompiledProgram> {
        let caps = self.caps();
        let device_sm = caps.cc_major * 10 + caps.cc_minor;
        let sm = sm.unwrap_or(device_sm);
        if sm > device_sm {
            return Err(RuntimeError::Launch(crate::util::Problem::new(format!("PTX emitted for sm_{sm} cannot run on {} (sm_{device_sm}): the driver JITs PTX only for its own or newer architectures", caps.name), format!("target sm_{device_sm} or older (in the inspector, press T until the status bar shows sm_{device_sm})"))));
        }
        let eopts = EmitOptions {
            sm,
            workgroup_size: workgroup,
            lineinfo: options.lineinfo,
            unroll: true,
            grid_barrier: options.grid_barrier,
            version_bounds: options.version_bounds,
        };
        let key = program_key(program, &eopts);
        let (emitted, ptx_cached) = match self.ptx_cache.get(key) {
            Some(k) => (k.clone(), true),
            None => {
                let t = Instant::now();
                let k = crate::emit::emit(program, &eopts)?;
                let ms = t.elapsed().as_secs_f64() * 1e3;
                self.ptx_cache
                    .insert(key, k.clone(), k.ptx.len() as u64, ms);
                (k, false)
            }
        };
        let (handle, info) = self.load_kernel(&emitted.ptx, &emitted.kernel_name, options)?;
        Ok(CompiledProgram {
            emitted,
            ptx_cached,
            handle,
            info,
        })
    }
}

/// PTX cache key: program, workgroup, target and emit options.
pub fn program_key(program: &Program, opts: &EmitOptions) -> u64 {
    // Debug output covers every field of the Program, deterministically.
    let text = format!("{program:?}");
    let wg: Vec<u8> = opts
        .workgroup_size
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    hash_parts(&[
        text.as_bytes(),
        &wg,
        &opts.sm.to_le_bytes(),
        &[opts.lineinfo as u8],
        opts.grid_barrier.name().as_bytes(),
        &[opts.version_bounds as u8],
    ])
}
