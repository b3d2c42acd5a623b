//! [`ImportInterp`]: a `VyreBackend` that runs a vyre Program on our reference interpreter
//! after converting it with our import (`replay --backend reference`).
//!
//! The dispatch binds its inputs the way vyre's reference does ([`bind_inputs`]); the launch
//! is the `DispatchConfig`'s when it gives one (`workgroup_override`; then `dispatch_grid`,
//! `grid_override`, or `dispatch_elements` over the workgroup's x), else the one vyre's
//! reference infers from the buffers.

use vyre_driver::backend::{private, BackendError, DispatchConfig, VyreBackend};
use vyre_foundation::ir::Program as VyreProgram;

use crate::shape::LaunchShape;
use crate::vyre::catalog::{bind_inputs, convert, validate_for, Refusal};

/// Our import and reference interpreter behind vyre's backend trait.
#[derive(Debug, Default, Clone, Copy)]
pub struct ImportInterp;

/// The `VyreBackend::id` of [`ImportInterp`].
pub const IMPORT_INTERP_ID: &str = "vyrescope-import-interp";

fn refused(r: Refusal) -> BackendError {
    BackendError::UnsupportedFeature {
        name: format!("[{}] {}", r.codes.join(","), r.message),
        backend: IMPORT_INTERP_ID.to_string(),
    }
}

/// The launch of a dispatch: the configuration's, else `inferred`.
fn launch(inferred: &LaunchShape, config: &DispatchConfig) -> LaunchShape {
    let workgroup_size = config
        .workgroup_override
        .map(|w| w.map(|d| d.max(1)))
        .unwrap_or(inferred.workgroup_size);
    let grid = config
        .dispatch_grid
        .or(config.grid_override)
        .or_else(|| {
            config
                .dispatch_elements
                .map(|e| [e.div_ceil(workgroup_size[0]).max(1), 1, 1])
        })
        .unwrap_or(inferred.grid)
        .map(|d| d.max(1));
    LaunchShape {
        workgroup_size,
        grid,
    }
}

impl private::Sealed for ImportInterp {}

impl VyreBackend for ImportInterp {
    fn id(&self) -> &'static str {
        IMPORT_INTERP_ID
    }

    fn version(&self) -> &'static str {
        env!("CARGO_PKG_VERSION")
    }

    fn dispatch(
        &self,
        program: &VyreProgram,
        inputs: &[Vec<u8>],
        config: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, BackendError> {
        let name = crate::vyre::import::identifier(program.entry_op_id().unwrap_or("captured"));
        let (vp, mut ours) = convert(program, &name).map_err(refused)?;
        let bound = bind_inputs(&vp, &ours, inputs).map_err(|r| BackendError::InvalidProgram {
            fix: format!(
                "Fix: the inputs do not fit the Program ({}): {}",
                r.codes.join(","),
                r.message
            ),
        })?;
        let shape = launch(&bound.shape, config);
        validate_for(&mut ours, Some(shape.grid)).map_err(refused)?;
        let mut buffers = bound.buffers;
        crate::interp::run_with(
            &ours,
            &shape,
            &mut buffers,
            &crate::interp::Options::default(),
        )
        .map_err(|e| BackendError::DispatchFailed {
            code: None,
            message: format!(
                "the reference interpreter stopped: {e}. Fix: see the message; the Program is replayed as captured"
            ),
        })?;
        Ok(bound
            .outputs
            .iter()
            .map(|(i, range)| {
                let data = &buffers[*i].data;
                match range {
                    Some(r) if r.start <= r.end && r.end <= data.len() => data[r.clone()].to_vec(),
                    _ => data.clone(),
                }
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configuration_chooses_the_launch() {
        let inferred = LaunchShape {
            workgroup_size: [64, 1, 1],
            grid: [5, 1, 1],
        };
        let mut c = DispatchConfig::default();
        assert_eq!(launch(&inferred, &c), inferred);
        c.dispatch_elements = Some(1000);
        assert_eq!(launch(&inferred, &c).grid, [16, 1, 1]);
        c.grid_override = Some([7, 2, 1]);
        assert_eq!(launch(&inferred, &c).grid, [7, 2, 1]);
        c.dispatch_grid = Some([3, 3, 3]);
        c.workgroup_override = Some([32, 0, 1]);
        assert_eq!(
            launch(&inferred, &c),
            LaunchShape {
                workgroup_size: [32, 1, 1],
                grid: [3, 3, 3]
            }
        );
    }
}
