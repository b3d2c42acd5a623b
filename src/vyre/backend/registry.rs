//! Registration in vyre's backend registry (`inventory` submissions of vyre-driver's
//! `BackendRegistration`, `BackendPrecedence` and `BackendCapability`). This module
//! registers `vyrescope-reference`; `runtime::vyre_device` registers `vyrescope-cuda` with
//! [`registration`].
//!
//! | field | `vyrescope-cuda` | `vyrescope-reference` |
//! |---|---|---|
//! | `id`, `target_id` | `vyrescope-cuda` | `vyrescope-reference` |
//! | `payload_format`, `target_compiler`, `materializer` | none: no megakernel-artifact compiler (raw Programs only) | none |
//! | `reference_oracle` | false | true (never chosen by `acquire_preferred_dispatch_backend`) |
//! | `supported_ops` | [`supported_ops`] | the same |
//! | `semantic_operations` | empty (no target compiler, so no target facets) | empty |
//! | precedence rank | 4: ahead of vyre's own `cuda` (5) when both are linked, as the faster dispatch path for the same bytes | 1000 |
//! | `dispatches` | true | true |

use std::collections::HashSet;
use std::sync::OnceLock;

use vyre_driver::backend::{
    BackendCapability, BackendError, BackendPrecedence, BackendRegistration, VyreBackend,
};
use vyre_foundation::ir::OpId;
use vyre_foundation::operation::TargetId;

use super::reference::ReferenceDevice;
use super::VyrescopeBackend;

/// The CUDA backend's id.
pub const CUDA_ID: &str = "vyrescope-cuda";
/// The reference backend's id.
pub const REFERENCE_ID: &str = "vyrescope-reference";
/// `vyrescope-cuda`'s precedence rank (lower wins; vyre's `cuda` has 5).
pub const CUDA_RANK: u32 = 4;
/// `vyrescope-reference`'s precedence rank.
pub const REFERENCE_RANK: u32 = 1000;

/// Statement kinds vyre's registry may route to us: vyre-driver's core set without the ones
/// the import refuses (`IndirectDispatch`, `AsyncLoad`, `AsyncWait`; docs/vyre.md).
pub fn supported_ops() -> &'static HashSet<OpId> {
    static OPS: OnceLock<HashSet<OpId>> = OnceLock::new();
    OPS.get_or_init(|| {
        let refused = [
            "vyre.node.indirect_dispatch",
            "vyre.node.async_load",
            "vyre.node.async_wait",
        ];
        vyre_driver::backend::core_supported_ops()
            .iter()
            .filter(|op| !refused.contains(&op.as_ref()))
            .cloned()
            .collect::<HashSet<OpId>>()
    })
}

/// No semantic operations: without a target compiler there is no target facet to offer.
pub fn no_semantic_operations() -> &'static HashSet<OpId> {
    static NONE: OnceLock<HashSet<OpId>> = OnceLock::new();
    NONE.get_or_init(HashSet::new)
}

/// A registration for backend `id` (see the module table).
pub const fn registration(
    id: &'static str,
    reference_oracle: bool,
    factory: fn() -> Result<Box<dyn VyreBackend>, BackendError>,
) -> BackendRegistration {
    BackendRegistration {
        id,
        target_id: TargetId::expect_valid(id),
        payload_format: None,
        reference_oracle,
        factory,
        supported_ops,
        semantic_operations: no_semantic_operations,
        target_compiler: None,
        materializer: None,
    }
}

/// Builds `vyrescope-reference`.
pub fn reference_factory() -> Result<Box<dyn VyreBackend>, BackendError> {
    // `VYRESCOPE_CAPTURE=DIR` records every call (docs/capture.md); unset, the backend as is.
    Ok(vyrescope_capture::capture_from_env(Box::new(
        VyrescopeBackend::new(REFERENCE_ID, ReferenceDevice::default())?,
    )))
}

inventory::submit! {
    registration(REFERENCE_ID, true, reference_factory)
}

inventory::submit! {
    BackendPrecedence { id: REFERENCE_ID, rank: REFERENCE_RANK }
}

inventory::submit! {
    BackendCapability { id: REFERENCE_ID, dispatches: true }
}

/// Keeps this module's registrations in the final binary (a linker drops object files
/// nothing refers to); returns the id. `runtime::vyre_device::link` calls it.
pub fn link() -> &'static str {
    std::hint::black_box(reference_factory as fn() -> _);
    REFERENCE_ID
}
