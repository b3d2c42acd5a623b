//! vyre's own PTX for a Program, produced the way vyre's CUDA backend does it (its codegen
//! module), without that crate (it pins another cudarc build):
//!
//! 1. `lower_subgroup_reductions` with a CUDA-like adapter (subgroup ops on, warp 32);
//! 2. `vyre_lower::lower_verified` (composition inlining, vyre's optimizer once, lowering to
//!    a `KernelDescriptor`, canonicalization, verification);
//! 3. `vyre_emit_ptx::emit_with_options` for the target sm, subgroup size 32, cooperative
//!    grid sync on (vyre's CUDA backend always launches grid-sync kernels cooperatively) and
//!    a ULP budget of [`ULP_BUDGET`].
//!
//! vyre's own validator runs first, so a Program vyre would reject is reported with vyre's
//! code and message. Every vyre call runs under `catch_unwind`: a panic inside vyre becomes
//! an error naming the stage instead of taking the inspector down.

use std::panic::{catch_unwind, AssertUnwindSafe};

use vyre_emit_ptx::{ComputeCapability, PtxEmitOptions};
use vyre_foundation::ir as v;
use vyre_foundation::optimizer::AdapterCaps;

/// vyre's PTX and what the host needs to launch it.
#[derive(Debug, Clone, PartialEq)]
pub struct VyrePtx {
    /// The PTX module (one `.entry main`).
    pub ptx: String,
    /// Target sm.
    pub sm: u32,
    /// Host-buffer names in kernel parameter order (one `.u64` pointer each, then the
    /// `params_buf` pointer).
    pub params: Vec<String>,
    /// True when the kernel has a grid barrier (needs a cooperative launch and a zeroed
    /// `_vyre_grid_barrier` counter).
    pub grid_sync: bool,
}

/// Why vyre's PTX could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct VyrePtxError {
    /// `validate`, `lower` or `emit`.
    pub stage: &'static str,
    /// vyre's message.
    pub message: String,
    /// What to do.
    pub fix: String,
}

fn err(stage: &'static str, message: String, fix: &str) -> VyrePtxError {
    VyrePtxError {
        stage,
        message,
        fix: fix.to_string(),
    }
}

/// Runs `f`, turning a panic into an error of `stage`.
fn guarded<T>(
    stage: &'static str,
    f: impl FnOnce() -> Result<T, VyrePtxError>,
) -> Result<T, VyrePtxError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let text = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".to_string());
            Err(err(
                stage,
                format!("vyre panicked: {text}"),
                "this is a vyre bug; report it upstream with the exported .vyre file",
            ))
        }
    }
}

/// The adapter vyre's CUDA backend describes: subgroup operations with a 32-lane warp.
fn cuda_caps() -> AdapterCaps {
    AdapterCaps {
        backend: "cuda",
        supports_subgroup_ops: true,
        subgroup_size: 32,
        max_workgroup_size: [1024, 1024, 64],
        max_invocations_per_workgroup: 1024,
        max_shared_memory_bytes: 48 * 1024,
        ..AdapterCaps::default()
    }
}

/// The ULP budget vyre's emitter gets: our format bounds f32 transcendentals (`exp`, `sin`,
/// ...) at 2 ULP, so vyre may use its approximate instructions within that bound (without a
/// budget it refuses every transcendental).
pub const ULP_BUDGET: u32 = 2;

/// vyre's validator for a CUDA-like backend (subgroup operations, warp shuffles, shared
/// memory), so that subgroup operations are accepted as vyre's CUDA backend accepts them.
pub fn validate(program: &v::Program) -> Vec<v::ValidationError> {
    use vyre_foundation::validate::{
        validate_with_options, BackendCapabilities, ValidationOptions,
    };
    let caps = BackendCapabilities {
        supports_subgroup_ops: true,
        has_warp_shuffle: true,
        has_shared_memory: true,
        has_mul_high: true,
        max_native_int_width: 64,
        ..BackendCapabilities::default()
    };
    validate_with_options(
        program,
        ValidationOptions::default().with_backend_capabilities(caps),
    )
    .errors
}

/// vyre's PTX for `program` at target `sm` (70, 75, 80, 86, 89, 90, ...).
pub fn vyre_ptx(program: &v::Program, sm: u32) -> Result<VyrePtx, VyrePtxError> {
    let errors = guarded("validate", || Ok(validate(program)))?;
    if !errors.is_empty() {
        let mut text: Vec<String> = errors.iter().take(3).map(|e| e.to_string()).collect();
        if errors.len() > 3 {
            text.push(format!("... {} more", errors.len() - 3));
        }
        return Err(err(
            "validate",
            text.join("; "),
            "the Program uses something vyre's validator rejects; see the message",
        ));
    }
    let lowered = guarded("lower", || {
        let p = vyre_foundation::lower::lower_subgroup_reductions(program.clone(), &cuda_caps());
        vyre_lower::lower_verified(&p).map_err(|e| {
            err(
                "lower",
                e.message().to_string(),
                "vyre cannot lower this Program; the message names the construct",
            )
        })
    })?;
    let ptx = emit_descriptor(&lowered.descriptor, sm)?;
    let params = param_buffers(&ptx, program);
    let grid_sync = ptx.contains("_vyre_grid_barrier");
    Ok(VyrePtx {
        ptx,
        sm,
        params,
        grid_sync,
    })
}

/// vyre's PTX emitter on a lowered kernel (`vyre_emit_ptx::emit_with_options`) as vyre's CUDA
/// backend calls it: target `sm`, subgroup size 32, cooperative grid sync on and a ULP budget
/// of [`ULP_BUDGET`]. [`vyre_ptx`] and the megakernel target compile
/// ([`super::fused`]) both emit through it.
pub fn emit_descriptor(
    descriptor: &vyre_lower::KernelDescriptor,
    sm: u32,
) -> Result<String, VyrePtxError> {
    let options = PtxEmitOptions {
        target: ComputeCapability {
            major: sm / 10,
            minor: sm % 10,
        },
        subgroup_size: 32,
        ulp_budget: Some(ULP_BUDGET),
        cooperative_grid_sync: true,
    };
    guarded("emit", || {
        vyre_emit_ptx::emit_with_options(descriptor, options).map_err(|e| {
            err(
                "emit",
                e.to_string(),
                "vyre's PTX emitter does not support this Program; the message names the op",
            )
        })
    })
}

/// The host buffers behind vyre's `.param .u64 _arg_<name>` parameters, in order. vyre
/// writes a name's characters outside `[A-Za-z0-9_]` as `_`; our names are identifiers, so
/// the parameter name is the buffer name.
fn param_buffers(ptx: &str, program: &v::Program) -> Vec<String> {
    let names: Vec<&str> = program.buffers().iter().map(|b| b.name()).collect();
    ptx.lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',').trim_end_matches(')');
            let name = l.strip_prefix(".param .u64 _arg_")?;
            names.iter().find(|n| **n == name).map(|n| n.to_string())
        })
        .collect()
}

impl crate::util::HasFix for VyrePtxError {
    fn message(&self) -> String {
        format!("vyre's PTX ({}) failed: {}", self.stage, self.message)
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(VyrePtxError);
