//! `emit`, `sass` and `occupancy` on a pipeline file: the plan's fused kernels, one per group,
//! as the inspector's Plan tab and PTX pane show them (planned in memory for the device
//! profile, each group fused and emitted for the group's own workgroup size, its source map
//! renamed to the steps' node ids `steps[k].<id>`).

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::emit::{EmitOptions, EmittedKernel};
use crate::harness::target::{compile, target, CompiledTarget, DeviceChoice, Fit, TargetSpec};
use crate::harness::timeline_run::{instrumented_kernel, pipeline_launches, PipelineForm};
use crate::inputs::pipeline::pipeline_shapes;
use crate::ir::Pipeline;
use crate::megakernel::decision::DecisionReport;
use crate::megakernel::plan::{Group, GroupKind, SyncMode};
use crate::occupancy::DeviceCaps;
use crate::util::Problem;

/// One plan group's kernel.
pub(crate) struct GroupKernel {
    /// Group index in the plan.
    pub index: usize,
    /// The plan's group.
    pub group: Group,
    /// The emitted fused kernel, node ids renamed to `steps[k].<id>`; with
    /// [`GroupEmit::timeline`], the instrumented kernel exactly as `run --timeline` JITs it
    /// (fused node ids, the ids its records name).
    pub kernel: EmittedKernel,
}

/// A pipeline's plan as kernels.
pub(crate) struct PipelineKernels {
    /// The pipeline.
    pub pipeline: Pipeline,
    /// The device profile it was planned for.
    pub device: DeviceCaps,
    /// What decided the plan's fusion (printed by `emit`, `sass` and `occupancy` as every
    /// front end prints it).
    pub decision: DecisionReport,
    /// One kernel per group, in plan order.
    pub groups: Vec<GroupKernel>,
}

/// Options of one group's emission.
pub(crate) struct GroupEmit {
    /// Target sm; `None`: the device profile's (at most 90).
    pub sm: Option<u32>,
    /// `.loc` line info.
    pub lineinfo: bool,
    /// Unroll small constant loops.
    pub unroll: bool,
    /// Grid barrier lowering.
    pub grid_barrier: crate::emit::grid_sync::GridBarrier,
    /// Versioned bounds checks.
    pub version_bounds: bool,
    /// How persistent groups separate cross-workgroup dependences (grid barriers or dataflow
    /// waits), as `run --megakernel --sync` runs them.
    pub sync: SyncMode,
    /// How fusion is decided (`--decide`): the cost model's plan, or fusion as far as legal.
    pub decide: crate::megakernel::plan::Decide,
    /// Each group's kernel instrumented for the timeline, through the run path's own
    /// launches and emission (`harness::timeline_run`), so it is what `run --timeline`
    /// records for the same plan and sync form.
    pub timeline: bool,
}

/// Refuses `--sync` and `--decide` on a Program file: they choose how a pipeline's steps fuse
/// and wait, and a Program's kernel would silently come out the same whatever was asked for.
pub(crate) fn refuse_sync_on_program(
    file: &Path,
    sync: Option<SyncMode>,
    decide: Option<crate::megakernel::plan::Decide>,
) -> Result<(), Problem> {
    let flag = match (sync, decide) {
        (Some(s), _) => format!("--sync {}", s.name()),
        (None, Some(_)) => "--decide".to_string(),
        (None, None) => return Ok(()),
    };
    Err(Problem::new(
        format!(
            "{}: {flag} applies to pipelines: it chooses how a pipeline's steps fuse into kernels and wait between steps, and a Program is one kernel",
            file.display(),
        ),
        "drop --sync and --decide, or give a pipeline file",
    ))
}

/// Plans `file` for `device` (default profile when `None`) and emits every group's kernel.
/// `workgroup` must be `None`: a fused kernel's workgroup is the plan's.
pub(crate) fn load(
    file: &Path,
    device: Option<&str>,
    workgroup: Option<[u32; 3]>,
    how: &GroupEmit,
) -> Result<PipelineKernels, Problem> {
    if workgroup.is_some() {
        return Err(Problem::new(
            format!("{}: --workgroup does not apply to a pipeline: each fused kernel runs with its plan group's workgroup size", file.display()),
            "drop --workgroup, or give one step's Program file instead",
        ));
    }
    let pipeline = super::plan::load(file)?;
    let base = file.parent().unwrap_or(Path::new("."));
    let shapes = pipeline_shapes(&pipeline, base)?;
    // The plan cache is looked up, never written: a decision `run --decide measure`
    // recorded for this pipeline, device and sync form is the one these kernels follow.
    let spec = TargetSpec {
        device: DeviceChoice::Profile(device.map(str::to_string)),
        sync: how.sync,
        decide: how.decide,
        ..TargetSpec::default()
    };
    let t = target(Arc::new(pipeline), shapes, &spec)?;
    let caps = t.device.clone();
    let sm = how.sm.unwrap_or_else(|| t.default_sm());
    // The kernels as a run launches them: each persistent grid fitted to what the kernel's
    // own registers keep resident (as `plan` and the Plan tab report it).
    let fit = Fit::Offline {
        sm: Some(sm),
        registers: Vec::new(),
    };
    let CompiledTarget {
        compiled,
        decision,
        warnings,
        ..
    } = compile(&t, fit).map_err(|e| e.context(file.display()))?;
    for w in &warnings {
        errln!("warning: {w}");
    }
    let eopts = EmitOptions {
        sm,
        workgroup_size: [1, 1, 1],
        lineinfo: how.lineinfo,
        unroll: how.unroll,
        grid_barrier: how.grid_barrier,
        version_bounds: how.version_bounds,
    };
    // The timeline's launches are the run path's: one per group, each with the units its
    // records name (the first group that cannot be fused is the error, by index).
    let launches = match how.timeline {
        true => Some(
            pipeline_launches(&compiled, PipelineForm::Fused)
                .map_err(|e| e.context(file.display()))?,
        ),
        false => None,
    };
    let mut groups = Vec::with_capacity(compiled.groups.len());
    for (index, g) in compiled.groups.iter().enumerate() {
        let kernel = match &launches {
            Some(all) => all
                .get(index)
                .ok_or_else(|| Problem::bug(format!("no timeline launch for group {index}")))
                .and_then(|l| instrumented_kernel(l, &eopts).map_err(Problem::from)),
            None => compiled.emit_group(index, &eopts),
        }
        .map_err(|e| e.context(format_args!("{}: group {index}", file.display())))?;
        groups.push(GroupKernel {
            index,
            group: g.group.clone(),
            kernel,
        });
    }
    Ok(PipelineKernels {
        pipeline: (*compiled.pipeline).clone(),
        device: caps,
        decision,
        groups,
    })
}

impl PipelineKernels {
    /// One line naming group `g`: kind, steps with their Programs, workgroup and grids.
    pub fn header(&self, g: &GroupKernel) -> String {
        let steps: Vec<String> = g
            .group
            .steps
            .iter()
            .map(|&s| {
                let name = self
                    .pipeline
                    .steps
                    .get(s)
                    .map_or("?", |st| st.program.name.as_str());
                format!("{s} {name}")
            })
            .collect();
        let wg = g.group.workgroup_size;
        format!(
            "pipeline {}, group {} of {} ({}): steps {}; kernel {}, workgroup {}x{}x{}",
            self.pipeline.name,
            g.index,
            self.groups.len(),
            kind(g),
            steps.join(", "),
            g.kernel.kernel_name,
            wg[0],
            wg[1],
            wg[2]
        )
    }

    /// The fields every group's JSON object starts with.
    pub fn group_json(&self, g: &GroupKernel) -> Value {
        json!({
            "group": g.index,
            "kind": g.group.kind,
            "steps": g.group.steps,
            "kernel": g.kernel.kernel_name,
            "workgroup": g.group.workgroup_size,
        })
    }

    /// `{"pipeline", "device", "decision", "groups": [...]}` around per-group objects.
    pub fn wrap_json(&self, groups: Vec<Value>) -> Value {
        json!({
            "pipeline": self.pipeline.name,
            "device": self.device.name,
            "decision": self.decision,
            "groups": groups,
        })
    }

    /// The decision's lines ([`DecisionReport::lines`]), each after `prefix` (`// ` in PTX).
    pub fn decision_text(&self, prefix: &str) -> String {
        self.decision
            .lines()
            .iter()
            .map(|l| format!("{prefix}{l}\n"))
            .collect()
    }
}

/// The group's kind in the words `plan` uses.
fn kind(g: &GroupKernel) -> &'static str {
    match g.group.kind {
        GroupKind::Megakernel => "megakernel",
        GroupKind::Launch => "launch",
    }
}

/// Merges `extra`'s fields into object `base` (the group fields first).
pub(crate) fn merged(mut base: Value, extra: Value) -> Value {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        for (k, v) in e {
            b.entry(k).or_insert(v);
        }
    }
    base
}
