//! Timeline runs of pipelines: which launches each form records ([`pipeline_launches`]) and
//! the recording of a compiled pipeline's forms checked against the reference interpreter
//! ([`record_pipeline`]). The run itself is the runtime's: the timeline mode of its launch
//! list ([`Runtime::run_timeline`]), whose types are re-exported here.

use serde::Serialize;

use crate::emit::timeline::TimelineSpec;
use crate::inputs::pipeline::PreparedPipeline;
use crate::megakernel::compiled::CompiledPipeline;
use crate::megakernel::timeline::fused_spec;
use crate::runtime::dispatch::DispatchOptions;
use crate::runtime::jit::JitOptions;
use crate::runtime::parity::{compare, ParityReport};
use crate::runtime::Runtime;
use crate::util::Problem;

pub use crate::runtime::timeline::{instrumented_kernel, Overhead, TimelineLaunch, TimelineRun};

/// Which form of a pipeline a timeline run records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineForm {
    /// One launch per step.
    Separate,
    /// The compiled plan: one launch per fused group.
    Fused,
}

/// The timeline launches of `compiled` in `form`: each step as a plain kernel (block
/// lifetimes tagged with the step), or each fitted group's fused kernel (steps, virtual
/// workgroups and waits): exactly the kernels a run of the same compiled pipeline launches.
pub fn pipeline_launches(
    compiled: &CompiledPipeline,
    form: PipelineForm,
) -> std::result::Result<Vec<TimelineLaunch>, Problem> {
    if form == PipelineForm::Separate {
        let launches = compiled.separate_launches()?;
        return Ok(launches
            .into_iter()
            .enumerate()
            .map(|(k, l)| TimelineLaunch {
                spec: TimelineSpec::kernel(Some(k as u32)),
                program: l.program,
                shape: l.shape,
                buffers: l.buffers,
            })
            .collect());
    }
    let launches = compiled.fused_launches()?;
    Ok(compiled
        .groups
        .iter()
        .zip(launches)
        .filter_map(|(g, l)| {
            let k = g.kernel.as_ref().ok()?;
            Some(TimelineLaunch {
                spec: fused_spec(k),
                program: l.program,
                shape: l.shape,
                buffers: l.buffers,
            })
        })
        .collect())
}

/// One recorded form of a pipeline.
#[derive(Debug, Clone)]
pub struct RecordedPipelineForm {
    /// `separate`, or the fused form's label (`fused`, `dataflow`: [`crate::megakernel::plan::SyncMode::fused_label`]).
    pub label: &'static str,
    /// The run.
    pub run: TimelineRun,
    /// The instrumented kernels' results against the reference interpreter, under the
    /// pipeline's tolerance (transient buffers skipped).
    pub parity: ParityReport,
}

/// Records `forms` of `compiled` (separate launches and/or its fitted fused kernels) over the
/// pipeline's initial contents `prepared`, each `rounds` instrumented rounds and
/// `plain_rounds` plain ones (the overhead), and checks each form's results against the
/// reference interpreter: the instrumented kernels must compute what the plain ones do.
pub fn record_pipeline(
    rt: &mut Runtime,
    compiled: &CompiledPipeline,
    prepared: &PreparedPipeline,
    forms: &[PipelineForm],
    (rounds, plain_rounds): (u32, u32),
    opts: &DispatchOptions,
    jit: &JitOptions,
) -> std::result::Result<Vec<RecordedPipelineForm>, Problem> {
    let expected =
        super::pipeline::expected(&compiled.pipeline, prepared, crate::interp::DEFAULT_FUEL)?;
    let tol = super::pipeline::pipeline_tolerance(&compiled.pipeline);
    let initial = super::pipeline::host_buffers(prepared);
    let mut out = Vec::new();
    for &form in forms {
        let launches = pipeline_launches(compiled, form)?;
        let mut bufs = initial.clone();
        let run = rt.run_timeline(&launches, &mut bufs, rounds, plain_rounds, opts, jit)?;
        let parity = compare(&super::pipeline::comparable(prepared, bufs), &expected, tol);
        let label = match form {
            PipelineForm::Separate => "separate",
            PipelineForm::Fused => compiled.sync.fused_label(),
        };
        out.push(RecordedPipelineForm { label, run, parity });
    }
    Ok(out)
}
