//! Launch lists of a pipeline execution: what the runtime runs, one entry per kernel launch,
//! either one per step (the pipeline's meaning) or one per fused group of a plan.

use crate::inputs::LaunchShape;
use crate::ir::{Pipeline, Program};

use super::FuseError;

/// One kernel launch of a pipeline execution.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineLaunch {
    /// What runs (a step's Program, or a fused Program).
    pub program: Program,
    /// Its launch shape.
    pub shape: LaunchShape,
    /// For each host buffer of `program`, in binding order: the index of the pipeline buffer
    /// (into the buffers given to `Runtime::run_pipeline`) bound to it.
    pub buffers: Vec<usize>,
}

/// One launch per step, as the pipeline means it: each step's Program over its bound
/// buffers, with `shapes[k]` the launch of step `k`. The buffer indices refer to
/// `pipeline.buffers` (pass the host buffers to `Runtime::run_pipeline` in that order).
pub fn separate_launches(
    pipeline: &Pipeline,
    shapes: &[LaunchShape],
) -> Result<Vec<PipelineLaunch>, FuseError> {
    if shapes.len() != pipeline.steps.len() {
        return Err(FuseError {
            message: format!(
                "pipeline `{}`: {} launch shapes for {} steps",
                pipeline.name,
                shapes.len(),
                pipeline.steps.len()
            ),
            fix: "pass one launch shape per step".into(),
        });
    }
    pipeline
        .steps
        .iter()
        .zip(shapes)
        .enumerate()
        .map(|(k, (step, shape))| {
            let buffers = step
                .program
                .host_buffers()
                .iter()
                .map(|b| {
                    step.bound(&b.name)
                        .and_then(|pb| pipeline.buffers.iter().position(|x| x.name == pb))
                        .ok_or_else(|| {
                            FuseError {
                                message: format!(
                                    "pipeline `{}` step {k}: buffer `{}` is not bound to a pipeline buffer",
                                    pipeline.name, b.name
                                ),
                                fix: "bind every host buffer of the step's Program".into(),
                            }
                        })
                })
                .collect::<Result<Vec<_>, FuseError>>()?;
            Ok(PipelineLaunch {
                program: step.program.clone(),
                shape: *shape,
                buffers,
            })
        })
        .collect()
}
