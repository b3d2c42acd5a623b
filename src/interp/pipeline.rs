//! Reference run of a pipeline: every step as its own interpreted dispatch, in order, with the
//! pipeline buffers carried from step to step. This is the meaning of a pipeline, so it is the
//! oracle that every megakernel plan's results are compared with.

use std::time::Instant;

use super::{run_with, InterpError, InterpStats, Options};
use crate::inputs::pipeline::PreparedPipeline;
use crate::inputs::LaunchShape;
use crate::ir::{NodeId, Pipeline};

/// What one step did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct StepRun {
    /// Index into `Pipeline::steps`.
    pub step: usize,
    /// The step Program's name.
    pub program: String,
    /// Grid, x/y/z.
    pub grid: [u32; 3],
    /// Threads per workgroup, x/y/z.
    pub workgroup_size: [u32; 3],
    /// Interpreter counters.
    pub stats: InterpStats,
    /// Wall time of the step's dispatch, milliseconds.
    pub elapsed_ms: f64,
}

/// Runs every step of `pipeline` in order over `prepared`'s buffers, in place: afterwards
/// `prepared.buffers` hold the final contents. Returns one [`StepRun`] per step.
///
/// `options.fuel` is the budget of the whole pipeline, not of each step: every step gets what
/// the steps before it left, so a pipeline's total work is bounded as a Program's is.
///
/// On an error the buffers hold the contents after the last step that succeeded, and the
/// error's message names the step (`steps[1] (add1): ...`) and its node id is prefixed
/// `steps[1].`.
pub fn run_pipeline(
    pipeline: &Pipeline,
    prepared: &mut PreparedPipeline,
    options: &Options,
) -> Result<Vec<StepRun>, InterpError> {
    if prepared.steps.len() != pipeline.steps.len() {
        return Err(InterpError::launch(
            format!(
                "the prepared pipeline has {} steps but `{}` has {}",
                prepared.steps.len(),
                pipeline.name,
                pipeline.steps.len()
            ),
            "prepare the buffers with `inputs::pipeline::prepare_pipeline` for this pipeline",
        ));
    }
    let mut runs = Vec::with_capacity(pipeline.steps.len());
    let mut spent = 0u64;
    for (i, step) in pipeline.steps.iter().enumerate() {
        let shape: LaunchShape = prepared.steps[i].shape;
        let mut host = prepared.take_step_buffers(i);
        let t = Instant::now();
        let left = Options {
            fuel: options.fuel.saturating_sub(spent),
            ..*options
        };
        let result = run_with(&step.program, &shape, &mut host, &left);
        let elapsed_ms = t.elapsed().as_secs_f64() * 1e3;
        // The bytes go back whether or not the step ran: a failed dispatch leaves them as
        // they were (the interpreter writes back only on success).
        prepared.put_back(i, host);
        let stats = result.map_err(|e| {
            let budget = if e.code == "I003" {
                format!(
                    " (the pipeline's fuel {} is one budget for all its steps; steps before this one spent {spent})",
                    options.fuel
                )
            } else {
                String::new()
            };
            InterpError {
                code: e.code,
                node: e.node.map(|n| NodeId::new(format!("steps[{i}].{n}"))),
                message: format!("steps[{i}] ({}): {}{budget}", step.program.name, e.message),
                fix: e.fix,
            }
        })?;
        spent = spent.saturating_add(stats.fuel_used);
        runs.push(StepRun {
            step: i,
            program: step.program.name.clone(),
            grid: shape.grid,
            workgroup_size: shape.workgroup_size,
            stats,
            elapsed_ms,
        });
    }
    Ok(runs)
}
