//! Pipelines in the inspector (pure, no terminal): loading a pipeline file, its megakernel
//! plan for the current device profile, the fused kernel of the group holding the selected
//! step with its node ids mapped back to step-prefixed ids (`steps[1].body[2]`), and the
//! pipeline runs the Run tab charts (the reference interpreter, or the GPU's separate and
//! fused forms through [`crate::tui::gpu::Gpu::run_pipeline`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::diagnostic::Diagnostic;
use crate::emit::EmittedKernel;
use crate::inputs::pipeline::{pipeline_shapes_rooted, prepare_pipeline_rooted, PreparedPipeline};
use crate::inputs::LaunchShape;
use crate::ir::print::{print_program_prefixed, PrintedLine};
use crate::ir::Pipeline;
use crate::megakernel::cache::{plan_cached, Cached, PlanCache};
use crate::megakernel::plan::{Plan, PlanOptions, SyncMode};
use crate::megakernel::{fuse_group, FusedKernel};
use crate::occupancy::DeviceCaps;

/// A loaded pipeline file: the pipeline and its steps' launch shapes. Buffer contents are
/// built only for a run ([`PipelineFile::prepare`]): listing, planning and fusing depend on
/// shapes, not data, so a pipeline of gigabytes of buffers costs nothing to list or plan.
#[derive(Debug, Clone)]
pub struct PipelineFile {
    /// The parsed pipeline.
    pub pipeline: Arc<Pipeline>,
    /// Every step's launch shape, or why there is none (validation errors, a missing
    /// `file` input, buffers over the size limit).
    pub shapes: Result<Vec<LaunchShape>, String>,
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
    ) -> Result<(PipelineFile, Vec<Diagnostic>), String> {
        let loaded = crate::validate::pipeline::load_pipeline(path);
        let Some(pipeline) = loaded.pipeline else {
            return Err(loaded.diagnostics.first().map_or_else(
                || format!("{}: cannot load pipeline", path.display()),
                |d| d.to_string(),
            ));
        };
        let base = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let root = root.map_or_else(|| base.clone(), Path::to_path_buf);
        let shapes = if crate::validate::pipeline::has_error(&loaded.diagnostics) {
            Err("the pipeline has validation errors (see Diagnostics)".to_string())
        } else {
            let files = crate::inputs::FileRoot {
                base: &base,
                root: &root,
            };
            pipeline_shapes_rooted(&pipeline, files).map_err(|e| e.to_string())
        };
        Ok((
            PipelineFile {
                pipeline: Arc::new(pipeline),
                shapes,
                base,
                root,
            },
            loaded.diagnostics,
        ))
    }

    /// Every buffer's initial contents and every step's shape and bindings, for a run (on
    /// the worker: filling may take a while).
    pub fn prepare(&self) -> Result<PreparedPipeline, String> {
        self.shapes.as_ref().map_err(Clone::clone)?;
        let files = crate::inputs::FileRoot {
            base: &self.base,
            root: &self.root,
        };
        prepare_pipeline_rooted(&self.pipeline, files).map_err(|e| e.to_string())
    }

    /// The plan for `device`, through `cache` when given (the interactive inspector uses
    /// the user's plan cache, shared with `vyrescope plan`; replays plan in memory).
    pub fn plan(
        &self,
        device: Option<&DeviceCaps>,
        cache: Option<&PlanCache>,
    ) -> Result<Cached, String> {
        let Some(device) = device else {
            return Err(
                "no device: press d to pick a device profile (the plan depends on co-residency)"
                    .into(),
            );
        };
        let shapes = self.shapes.as_ref().map_err(Clone::clone)?;
        plan_cached(
            &self.pipeline,
            shapes,
            &PlanOptions::new(device.clone()),
            cache,
        )
        .map_err(|e| e.to_string())
    }

    /// The fused kernel of group `group` of `plan`, its waits lowered as `sync` says.
    pub fn fuse(&self, plan: &Plan, group: usize, sync: SyncMode) -> Result<FusedKernel, String> {
        let shapes = self.shapes.as_ref().map_err(Clone::clone)?;
        let g = plan
            .groups
            .get(group)
            .ok_or_else(|| format!("the plan has no group {group}"))?;
        fuse_group(&self.pipeline, shapes, &g.spec_for(sync)).map_err(|e| e.to_string())
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

/// Index of the group of `plan` that runs `step`.
pub fn group_of(plan: &Plan, step: usize) -> Option<usize> {
    plan.groups.iter().position(|g| g.steps.contains(&step))
}

/// Fused node id -> step-prefixed original node id (`steps[k].<id>`), for every statement of
/// the fused kernel that comes from a step; the PTX correlation is renamed with it so the
/// PTX pane and the step's IR pane share ids.
pub fn origin_names(fused: &FusedKernel) -> HashMap<String, String> {
    fused
        .node_origin
        .iter()
        .map(|(f, (k, id))| (f.to_string(), format!("steps[{k}].{id}")))
        .collect()
}

/// The pipeline state of an open pipeline document: which step is selected and the plan and
/// fused kernel computed for the current device.
#[derive(Debug, Clone)]
pub struct PipelineView {
    /// The file.
    pub file: Arc<PipelineFile>,
    /// Selected step (its Program is in the IR pane).
    pub step: usize,
    /// Device the plan below is for (`None`: no plan computed yet).
    pub planned_for: Option<String>,
    /// The plan, or why there is none.
    pub plan: Result<Arc<Plan>, String>,
    /// Group of the selected step.
    pub group: Option<usize>,
    /// The fused kernel of that group, or why there is none.
    pub fused: Result<Arc<FusedKernel>, String>,
    /// How fused persistent groups wait between steps (`--sync`): the PTX pane, the GPU
    /// run and its timeline all use it.
    pub sync: SyncMode,
}

impl PipelineView {
    /// A view on step 0 with nothing planned yet.
    pub fn new(file: Arc<PipelineFile>) -> Self {
        PipelineView {
            file,
            step: 0,
            planned_for: None,
            plan: Err("not planned yet".into()),
            group: None,
            fused: Err("not planned yet".into()),
            sync: SyncMode::default(),
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
            self.plan = Err(PLANNING.into());
        }
        self.group = None;
        self.fused = Err(PLANNING.into());
    }

    /// (Re)plans for `device` when it changed, and fuses the selected step's group.
    /// Returns the planning's cache outcome when it planned.
    pub fn refresh(
        &mut self,
        device: Option<&DeviceCaps>,
        cache: Option<&PlanCache>,
    ) -> Option<Cached> {
        let name = device.map(|d| d.name.clone());
        let mut planned = None;
        if self.planned_for != name || self.plan.is_err() {
            let r = self.file.plan(device, cache);
            self.plan = r
                .as_ref()
                .map(|c| Arc::new(c.plan.clone()))
                .map_err(Clone::clone);
            planned = r.ok();
            self.planned_for = name;
        }
        self.group = self.plan.as_ref().ok().and_then(|p| group_of(p, self.step));
        self.fused = match (&self.plan, self.group) {
            (Ok(p), Some(g)) => self.file.fuse(p, g, self.sync).map(Arc::new),
            (Ok(_), None) => Err(format!("step {} is in no group of the plan", self.step)),
            (Err(e), _) => Err(e.clone()),
        };
        planned
    }
}

/// What the plan and the PTX pane say while the worker plans and fuses.
pub const PLANNING: &str = "planning and fusing on the worker...";

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
/// step in order).
pub fn reference_run(
    pipeline: &Pipeline,
    prepared: &PreparedPipeline,
) -> Result<(PipelineRun, PreparedPipeline), String> {
    let mut out = prepared.clone();
    let t = Instant::now();
    crate::interp::pipeline::run_pipeline(pipeline, &mut out, &crate::interp::Options::default())
        .map_err(|e| e.to_string())?;
    let ms = t.elapsed().as_secs_f64() * 1e3;
    Ok((
        PipelineRun {
            pipeline: pipeline.name.clone(),
            backend: "reference interpreter".into(),
            separate_ms: None,
            fused_ms: None,
            launches: (pipeline.steps.len(), 0),
            reference_ms: Some(ms),
            verified: true,
            note: String::new(),
        },
        out,
    ))
}

/// Renames the source map of a fused kernel's emission to step-prefixed ids (entries of
/// statements the fusion made up keep their fused ids, which no IR line has).
pub fn rename_nodes(kernel: &mut EmittedKernel, names: &HashMap<String, String>) {
    for e in &mut kernel.source_map.entries {
        if let Some(n) = names.get(&e.node) {
            e.node = n.clone();
        }
    }
}

/// Repetitions per form of an inspector pipeline run (a quick look, not the speedup gate:
/// `vyrescope run PIPELINE --backend cuda --both --repeat 20` gives the gate's verdict).
pub const GPU_REPEAT: u32 = 5;

/// The pipeline buffers as the runtime takes them (all read-write, so all read back).
fn host_buffers(p: &PreparedPipeline) -> Vec<crate::inputs::HostBuffer> {
    p.buffers
        .iter()
        .enumerate()
        .map(|(i, b)| crate::inputs::HostBuffer {
            name: b.name.clone(),
            elem: b.elem,
            // Transient buffers are read by nobody afterwards and a fused kernel need not
            // write them, so they are not compared.
            access: if b.transient {
                crate::ir::Access::Read
            } else {
                crate::ir::Access::ReadWrite
            },
            binding: i as u32,
            data: b.data.clone(),
        })
        .collect()
}

/// Runs `pipeline` in-process on GPU 0 as separate launches and as `plan`'s fused kernels
/// ([`GPU_REPEAT`] times each; each cooperative group's persistent grid confirmed by the
/// driver), both checked against the reference interpreter.
pub fn gpu_run(
    pipeline: &Pipeline,
    prepared: &PreparedPipeline,
    plan: &Plan,
    sync: SyncMode,
) -> Result<PipelineRun, String> {
    use crate::megakernel::launch::separate_launches;
    use crate::runtime::dispatch::{DispatchOptions, TimingStats};
    use crate::runtime::parity::compare;
    use crate::runtime::JitOptions;
    let (_, reference) = reference_run(pipeline, prepared)?;
    let expected = host_buffers(&reference);
    let mut rt = crate::runtime::Runtime::open(0).map_err(|e| e.to_string())?;
    let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
    let separate = separate_launches(pipeline, &shapes).map_err(|e| e.to_string())?;
    let (fused, _) = crate::harness::pipeline::plan_launches(
        &mut rt,
        pipeline,
        &shapes,
        plan,
        None,
        &JitOptions::default(),
        sync,
    )?;
    let opts = DispatchOptions {
        timeout: Some(super::gpu::KERNEL_TIMEOUT),
        ..DispatchOptions::default()
    };
    let mut times = Vec::new();
    let mut verified = true;
    let mut note = String::new();
    for (name, launches) in [("separate", &separate), ("fused", &fused)] {
        let mut bufs = host_buffers(prepared);
        let rep = rt
            .run_pipeline(
                launches,
                &mut bufs,
                GPU_REPEAT,
                &opts,
                &JitOptions::default(),
            )
            .map_err(|e| e.to_string())?;
        let parity = compare(&bufs, &expected, None);
        if !parity.passed {
            verified = false;
            note = format!("{name} form differs from the reference interpreter");
        }
        times.push(TimingStats::of(&rep.samples_ms).median_ms);
    }
    Ok(PipelineRun {
        pipeline: pipeline.name.clone(),
        backend: rt.caps().name.clone(),
        separate_ms: times.first().copied(),
        fused_ms: times.get(1).copied(),
        launches: (separate.len(), fused.len()),
        reference_ms: None,
        verified,
        note,
    })
}
