//! Pipelines in the inspector (pure, no terminal): loading a pipeline file, the compiled
//! pipeline for the current device profile (`megakernel::compiled`, the one every front end
//! uses), the fused kernel of the group holding the selected step with its node ids mapped
//! back to step-prefixed ids (`steps[1].body[2]`), and the pipeline runs the Run tab charts
//! (the reference interpreter, or the GPU worker's run of both forms through
//! [`crate::tui::gpu::Gpu::run_pipeline`], the one runner `run --backend cuda` uses).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::finding::Diagnostic;
use crate::harness::pipeline::PipelineGpuReport;
use crate::harness::target::{compile, target, CacheUse, DeviceChoice, Fit, TargetSpec};
use crate::inputs::pipeline::{pipeline_shapes_rooted, prepare_pipeline_rooted, PreparedPipeline};
use crate::inputs::LaunchShape;
use crate::ir::print::{print_program_prefixed, PrintedLine};
use crate::ir::Pipeline;
use crate::megakernel::cache::{Cached, PlanCache};
use crate::megakernel::compiled::CompiledPipeline;
use crate::megakernel::plan::{Plan, SyncMode};
use crate::megakernel::FusedKernel;
use crate::occupancy::DeviceCaps;
use crate::util::Problem;

/// A loaded pipeline file: the pipeline and its steps' launch shapes. Buffer contents are
/// built only for a run ([`PipelineFile::prepare`]): listing, planning and fusing depend on
/// shapes, not data, so a pipeline of gigabytes of buffers costs nothing to list or plan.
#[derive(Debug, Clone)]
pub struct PipelineFile {
    /// The parsed pipeline.
    pub pipeline: Arc<Pipeline>,
    /// Every step's launch shape, or why there is none (validation errors, a missing
    /// `file` input, buffers over the size limit).
    pub shapes: Result<Vec<LaunchShape>, Problem>,
    /// The file (the GPU worker reads and prepares it, as `run` does).
    pub path: PathBuf,
    /// Folder `file` inputs resolve against (the pipeline file's).
    base: PathBuf,
    /// Folder they must stay inside (`--root`, else `base`).
    root: PathBuf,
}

impl PipelineFile {
    /// Loads and validates `path`: the file and the validator's findings, or the load error.
    /// `file` inputs must stay inside `root` (the pipeline's folder when `None`).
    pub fn load(
        path: &Path,
        root: Option<&Path>,
    ) -> Result<(PipelineFile, Vec<Diagnostic>), Problem> {
        let loaded = crate::validate::pipeline::load_pipeline(path);
        let Some(pipeline) = loaded.pipeline else {
            return Err(loaded.diagnostics.first().map_or_else(
                || Problem::new(format!("{}: cannot load pipeline", path.display()), ""),
                |d| Problem::new(d.headline(), d.fix.clone()),
            ));
        };
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let root = root.map_or_else(|| base.clone(), Path::to_path_buf);
        let shapes = if crate::validate::pipeline::has_error(&loaded.diagnostics) {
            Err(Problem::new(
                "the pipeline has validation errors (see Diagnostics)",
                "",
            ))
        } else {
            let files = crate::inputs::FileRoot {
                base: &base,
                root: &root,
            };
            pipeline_shapes_rooted(&pipeline, files).map_err(Problem::from)
        };
        Ok((
            PipelineFile {
                pipeline: Arc::new(pipeline),
                shapes,
                path: path.to_path_buf(),
                base,
                root,
            },
            loaded.diagnostics,
        ))
    }

    /// Every buffer's initial contents and every step's shape and bindings, for a run (on
    /// the worker: filling may take a while).
    pub fn prepare(&self) -> Result<PreparedPipeline, Problem> {
        self.shapes.as_ref().map_err(Clone::clone)?;
        let files = crate::inputs::FileRoot {
            base: &self.base,
            root: &self.root,
        };
        Ok(prepare_pipeline_rooted(&self.pipeline, files)?)
    }

    /// The folder `file` inputs may come from when it is not the pipeline's own (`--root`).
    pub fn root(&self) -> Option<&Path> {
        (self.root != self.base).then_some(self.root.as_path())
    }

    /// The pipeline compiled for `device` under `sync` (planned through `cache` when given:
    /// the interactive inspector uses the user's plan cache, shared with `vyrescope plan`;
    /// replays plan in memory; every group fused).
    pub fn compile(
        &self,
        device: Option<&DeviceCaps>,
        sync: SyncMode,
        cache: Option<&PlanCache>,
        given_registers: Option<u32>,
    ) -> Result<CompiledPipeline, Problem> {
        let Some(device) = device else {
            return Err(Problem::new(
                "no device: press d to pick a device profile (the plan depends on co-residency)",
                "",
            ));
        };
        let shapes = self.shapes.as_ref().map_err(Clone::clone)?;
        let spec = TargetSpec {
            device: DeviceChoice::Caps(device.clone()),
            sync,
            cache: cache.map_or(CacheUse::Off, |c| CacheUse::At(c.clone())),
            ..TargetSpec::default()
        };
        let t = target(self.pipeline.clone(), shapes.clone(), &spec)?;
        // The Plan tab gives each kernel's own registers and a grid that fits them, the
        // figures `vyrescope plan` prints (a GPU run fits the grid to the driver again).
        let fit = Fit::Offline {
            sm: None,
            registers: vec![given_registers; self.pipeline.steps.len()],
        };
        Ok(compile(&t, fit)?.compiled)
    }

    /// Step `step`'s IR with node ids prefixed `steps[step].`.
    pub fn step_ir(&self, step: usize) -> Vec<PrintedLine> {
        self.pipeline.steps.get(step).map_or_else(Vec::new, |s| {
            print_program_prefixed(&s.program, &format!("steps[{step}]."))
                .lines
                .into_iter()
                .collect()
        })
    }
}

/// The pipeline state of an open pipeline document: which step is selected and the plan and
/// fused kernel computed for the current device.
#[derive(Debug, Clone)]
pub struct PipelineView {
    /// The file.
    pub file: Arc<PipelineFile>,
    /// Selected step (its Program is in the IR pane).
    pub step: usize,
    /// Device the compiled pipeline below is for (`None`: nothing compiled yet).
    pub planned_for: Option<String>,
    /// The compiled pipeline (plan and every group's fused kernel), or why there is none.
    pub compiled: Result<Arc<CompiledPipeline>, Problem>,
    /// Its plan, or why there is none.
    pub plan: Result<Arc<Plan>, Problem>,
    /// Group of the selected step.
    pub group: Option<usize>,
    /// The fused kernel of that group, or why there is none.
    pub fused: Result<Arc<FusedKernel>, Problem>,
    /// How fused persistent groups wait between steps (`--sync`): the PTX pane, the GPU
    /// run and its timeline all use it.
    pub sync: SyncMode,
    /// Registers per thread to report for every fused kernel instead of assembling it: the
    /// inspector's given resources (its tests), so the Plan tab agrees with the Occupancy
    /// tab; `None`: ptxas, else the PTX estimate.
    pub given_registers: Option<u32>,
}

impl PipelineView {
    /// A view on step 0 with nothing planned yet.
    pub fn new(file: Arc<PipelineFile>) -> Self {
        PipelineView {
            file,
            step: 0,
            planned_for: None,
            compiled: Err(not_yet(NOT_PLANNED)),
            plan: Err(not_yet(NOT_PLANNED)),
            group: None,
            fused: Err(not_yet(NOT_PLANNED)),
            sync: SyncMode::default(),
            given_registers: None,
        }
    }

    /// Steps in the pipeline.
    pub fn steps(&self) -> usize {
        self.file.pipeline.steps.len()
    }

    /// Selects step `step` (clamped) with its plan (when `device` differs from the one it
    /// was made for) and fused kernel pending: [`PipelineView::refresh`] on the worker
    /// makes them.
    pub fn begin(&mut self, step: usize, device: Option<&str>) {
        self.step = step.min(self.steps().saturating_sub(1));
        if self.planned_for.as_deref() != device {
            self.compiled = Err(not_yet(PLANNING));
            self.plan = Err(not_yet(PLANNING));
        }
        self.group = None;
        self.fused = Err(not_yet(PLANNING));
    }

    /// (Re)compiles for `device` when it changed, and picks the selected step's group and
    /// its fused kernel. Returns the planning's cache outcome when it planned.
    pub fn refresh(
        &mut self,
        device: Option<&DeviceCaps>,
        cache: Option<&PlanCache>,
    ) -> Option<Cached> {
        let name = device.map(|d| d.name.clone());
        let mut planned = None;
        if self.planned_for != name || self.compiled.is_err() {
            self.compiled = self
                .file
                .compile(device, self.sync, cache, self.given_registers)
                .map(Arc::new);
            self.plan = self
                .compiled
                .as_ref()
                .map(|c| Arc::new(c.plan().clone()))
                .map_err(Clone::clone);
            planned = self.compiled.as_ref().ok().map(|c| c.planned.clone());
            self.planned_for = name;
        }
        self.group = self
            .compiled
            .as_ref()
            .ok()
            .and_then(|c| c.group_of_step(self.step));
        self.fused = match (&self.compiled, self.group) {
            (Ok(c), Some(g)) => c.groups[g]
                .kernel
                .clone()
                .map(Arc::new)
                .map_err(Problem::from),
            (Ok(_), None) => Err(Problem::bug(format!(
                "step {} is in no group of the plan",
                self.step
            ))),
            (Err(e), _) => Err(e.clone()),
        };
        planned
    }
}

/// What the plan and the PTX pane say while the worker plans and fuses.
pub const PLANNING: &str = "planning and fusing on the worker...";

/// What they say before the first planning.
const NOT_PLANNED: &str = "not planned yet";

/// A plan or kernel not made yet: `why` is a state, not a failure, so there is no fix.
fn not_yet(why: &str) -> Problem {
    Problem::new(why, "")
}

/// One pipeline run as the Run tab charts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipelineRun {
    /// Pipeline name.
    pub pipeline: String,
    /// Where it ran (`reference interpreter` or the GPU's name).
    pub backend: String,
    /// Device time of the separate launches (median ms), on a GPU.
    pub separate_ms: Option<f64>,
    /// Device time of the fused plan (median ms), on a GPU.
    pub fused_ms: Option<f64>,
    /// Launches of each form (separate, fused).
    pub launches: (usize, usize),
    /// Wall time of the reference run (ms), without a GPU.
    pub reference_ms: Option<f64>,
    /// Every form's result equals the reference interpreter's.
    pub verified: bool,
    /// One line: what happened (why there is no GPU, mismatches).
    pub note: String,
}

/// Runs `pipeline` over a copy of `prepared` on the reference interpreter (the oracle: every
/// step in order, as `run --backend reference` runs it).
pub fn reference_run(
    pipeline: &Pipeline,
    prepared: &PreparedPipeline,
) -> Result<PipelineRun, Problem> {
    let mut out = prepared.clone();
    let (_, ms) =
        crate::harness::pipeline::reference(pipeline, &mut out, crate::interp::DEFAULT_FUEL)?;
    Ok(PipelineRun {
        pipeline: pipeline.name.clone(),
        backend: "reference interpreter".into(),
        separate_ms: None,
        fused_ms: None,
        launches: (pipeline.steps.len(), 0),
        reference_ms: Some(ms),
        verified: true,
        note: String::new(),
    })
}

/// Repetitions per form of an inspector pipeline run (a quick look, not the speedup gate:
/// `vyrescope run PIPELINE --backend cuda --both --repeat 20` gives the gate's verdict).
pub const GPU_REPEAT: u32 = 5;

impl PipelineRun {
    /// The Run tab's row of a GPU run of the one pipeline runner (`run --backend cuda
    /// --both`'s report): the same verdict, under the pipeline's one tolerance rule.
    pub fn from_report(r: &PipelineGpuReport) -> PipelineRun {
        let median = |f: &Option<crate::harness::pipeline::FormReport>| {
            f.as_ref().map(|f| f.device_ms.median_ms)
        };
        let launches =
            |f: &Option<crate::harness::pipeline::FormReport>| f.as_ref().map_or(0, |f| f.launches);
        let differs: Vec<String> = [("separate", &r.separate), ("fused", &r.megakernel)]
            .iter()
            .filter_map(|(name, f)| {
                let f = f.as_ref().filter(|f| !f.parity.passed)?;
                Some(format!(
                    "{name} form differs from the reference interpreter{}",
                    f.parity.first_text()
                ))
            })
            .collect();
        PipelineRun {
            pipeline: r.pipeline.clone(),
            backend: r.device.clone(),
            separate_ms: median(&r.separate),
            fused_ms: median(&r.megakernel),
            launches: (launches(&r.separate), launches(&r.megakernel)),
            reference_ms: None,
            verified: r.verified(),
            note: differs.join("; "),
        }
    }
}
