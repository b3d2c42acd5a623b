//! [`VyreReference`]: vyre's own reference interpreter (`vyre_reference`) behind vyre's
//! backend trait (`replay --backend vyre-reference`, and what a dispatch our import refuses
//! replays on). The launch follows the configuration as far as vyre's interpreter lets it:
//! `dispatch_grid` or `grid_override` as the grid, `dispatch_elements` as the invocation
//! floor; otherwise it infers from the buffers. It has no workgroup override.

use std::sync::Arc;

use vyre_driver::backend::{private, BackendError, DispatchConfig, VyreBackend};
use vyre_foundation::ir::Program as VyreProgram;
use vyre_reference::value::Value;

/// vyre's reference interpreter behind vyre's backend trait.
#[derive(Debug, Default, Clone, Copy)]
pub struct VyreReference;

/// The `VyreBackend::id` of [`VyreReference`].
pub const VYRE_REFERENCE_ID: &str = "vyre-reference";

impl private::Sealed for VyreReference {}

impl VyreBackend for VyreReference {
    fn id(&self) -> &'static str {
        VYRE_REFERENCE_ID
    }

    fn version(&self) -> &'static str {
        "0.7.2"
    }

    fn dispatch(
        &self,
        program: &VyreProgram,
        inputs: &[Vec<u8>],
        config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        let values: Vec<Value> = inputs
            .iter()
            .map(|b| Value::Bytes(Arc::from(b.as_slice())))
            .collect();
        // vyre's error is large (clippy's result_large_err): boxed.
        let run = || {
            match (
                config.dispatch_grid.or(config.grid_override),
                config.dispatch_elements,
            ) {
                (Some(grid), _) => vyre_reference::reference_eval_with_grid(program, &values, grid),
                (None, Some(n)) => {
                    vyre_reference::reference_eval_with_dispatch(program, &values, n)
                }
                (None, None) => vyre_reference::reference_eval(program, &values),
            }
            .map_err(Box::new)
        };
        let outputs = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
            Ok(r) => r.map_err(|e| BackendError::DispatchFailed {
                code: None,
                message: format!(
                    "vyre's reference interpreter refused the dispatch: {e}. Fix: see vyre's message"
                ),
            })?,
            Err(_) => {
                return Err(BackendError::DispatchFailed {
                    code: None,
                    message: "vyre's reference interpreter panicked. Fix: replay on another backend (--backend reference)".into(),
                })
            }
        };
        Ok(outputs.iter().map(Value::to_bytes).collect())
    }
}
