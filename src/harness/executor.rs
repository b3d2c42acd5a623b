//! The one Executor seam: where a Program or a pipeline runs (the reference interpreter, the
//! CUDA runtime in this process, or a GPU worker process) is chosen by the [`Executor`] a
//! caller hands in, and every executor takes the same [`RunRequest`] (the worker protocol's
//! `RunJob` carries it as is). `run` (Programs and pipelines) and the inspector's dispatches
//! go through it, so a backend is chosen in one place and runs the same way for each.

use std::path::Path;
use std::time::Instant;

use crate::inputs::pipeline::PreparedPipeline;
use crate::inputs::{self, HostBuffer, LaunchShape};
use crate::interp::pipeline::StepRun;
use crate::ir::{Pipeline, Program};
use crate::runtime::execute::{ProgramRun, RunRequest};
use crate::runtime::worker::protocol::RunOutcome;
use crate::runtime::{GpuWorker, Runtime, RuntimeError};
use crate::util::Problem;

use super::pipeline::{run_pipeline_forms, PipelineGpuOptions, PipelineGpuReport};

/// Where work runs. Holds the backend's resources by reference: the caller owns the runtime
/// or the worker client (and keeps using it for probes, caches and telemetry).
pub enum Executor<'a> {
    /// The CPU reference interpreter (the oracle); needs no GPU.
    Reference,
    /// The CUDA runtime in this process: nothing to start, so the fastest path for one-shot
    /// commands, but a sticky kernel fault ends the process's CUDA context.
    InProcess(&'a mut Runtime),
    /// A replaceable `vyrescope gpu-worker` process: a fault ends that worker only and the
    /// next request starts a fresh one (the inspector, the fault check).
    Worker(&'a mut GpuWorker),
}

/// A Program run on the reference interpreter.
#[derive(Debug, Clone)]
pub struct ReferenceRun {
    /// Launch shape used.
    pub shape: LaunchShape,
    /// Buffers after the run.
    pub buffers: Vec<HostBuffer>,
    /// Interpreter wall time (ms).
    pub elapsed_ms: f64,
    /// Node evaluations.
    pub node_evals: u64,
}

/// What one Program run produced, by executor: the in-process and reference runs keep their
/// buffers, the worker sends summaries (checksums, first elements) back over its pipe.
#[derive(Debug, Clone)]
pub enum Execution {
    /// See [`Executor::Reference`].
    Reference(ReferenceRun),
    /// See [`Executor::InProcess`].
    InProcess(Box<ProgramRun>),
    /// See [`Executor::Worker`].
    Worker(Box<RunOutcome>),
}

/// What one pipeline run produced.
#[derive(Debug, Clone)]
pub enum PipelineExecution {
    /// The steps in order on the reference interpreter.
    Reference {
        /// Per step.
        steps: Vec<StepRun>,
        /// Interpreter wall time of all steps (ms).
        elapsed_ms: f64,
    },
    /// Separate launches and/or the megakernel plan on the GPU, each verified.
    Gpu(Box<PipelineGpuReport>),
}

impl Executor<'_> {
    /// Runs `program` (inputs from its `run` section, `file` inputs relative to `base`) as
    /// `req` asks. The reference interpreter uses the request's shape overrides, `root` and
    /// `fuel`; the GPU executors all of it.
    pub fn run_program(
        &mut self,
        program: &Program,
        base: &Path,
        req: &RunRequest,
    ) -> Result<Execution, RuntimeError> {
        match self {
            Executor::Reference => {
                let files = inputs::FileRoot {
                    base,
                    root: req.root.as_deref().unwrap_or(base),
                };
                let mut prepared = inputs::prepare_rooted(program, files, req.workgroup, req.grid)?;
                let t = Instant::now();
                let stats = crate::interp::run_with(
                    program,
                    &prepared.shape,
                    &mut prepared.buffers,
                    &req.reference_options(),
                )?;
                Ok(Execution::Reference(ReferenceRun {
                    shape: prepared.shape,
                    buffers: prepared.buffers,
                    elapsed_ms: t.elapsed().as_secs_f64() * 1e3,
                    node_evals: stats.node_evals,
                }))
            }
            Executor::InProcess(rt) => Ok(Execution::InProcess(Box::new(
                rt.run_program(program, base, req)?,
            ))),
            Executor::Worker(w) => Ok(Execution::Worker(Box::new(
                w.run_program(program, base, req)?,
            ))),
        }
    }

    /// Runs `pipeline` over `prepared` (which receives the final contents: of the reference
    /// run, or of the last GPU form run). The reference interpreter uses `opts.fuel` only.
    /// The worker protocol carries single Programs, so a worker refuses pipelines.
    pub fn run_pipeline(
        &mut self,
        pipeline: &Pipeline,
        prepared: &mut PreparedPipeline,
        opts: &PipelineGpuOptions,
    ) -> Result<PipelineExecution, Problem> {
        match self {
            Executor::Reference => {
                let (steps, elapsed_ms) =
                    super::pipeline::reference(pipeline, prepared, opts.fuel)?;
                Ok(PipelineExecution::Reference { steps, elapsed_ms })
            }
            Executor::InProcess(rt) => Ok(PipelineExecution::Gpu(Box::new(run_pipeline_forms(
                rt, pipeline, prepared, opts,
            )?))),
            Executor::Worker(_) => Err(Problem::new(
                "the GPU worker runs single Programs, not pipelines",
                "run the pipeline in-process (`run --backend cuda`)",
            )),
        }
    }
}
