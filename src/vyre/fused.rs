//! vyre-megakernel's plan as something vyrescope runs: the "vyre form" of a graph.
//!
//! vyre's target compilation (`compile_selected_modules`) turns each fusion group of the
//! artifact's selected plan into one kernel: the members' canonical Programs, in ascending node
//! order, merged by `merge_programs_shared` (buffers joined by *name*, a `Barrier` or
//! `GridSync` after each arm a later arm depends on by name), lowered and emitted. This module
//! forms the same fused Program per group through the same vyre calls, imports it into our IR
//! as any vyre Program is ([`super::import_program`]), and binds its buffers to the pipeline
//! the graph opens as ([`super::import::graph::import_graph`]): the result is a pipeline over the same
//! buffers with one step (one launch) per vyre group, in vyre's stage order, which the
//! pipeline run path verifies and times like any other form.
//!
//! Binding: the fused Program's buffer `b` carries the graph values that the members' ports
//! named `b` carry. When those are two different pipeline buffers (the bundled `chain.vgr`:
//! `dst` is `y` in `double` and `out` in `inc`), vyre's fused Program conflates two values
//! and cannot be bound; the group is refused with the reason, a reported fact about vyre.
//!
//! Dispatch: each step dispatches vyre's logical element count for the group (what
//! `compile_selected_modules` hands its emitter: the largest value the group writes, or the
//! largest it touches when the group has atomics or subgroup operations). Where the target
//! compile stopped before reaching a group, the import's rule for a single Program is used
//! (the largest counted buffer), and [`FusedGroup::dispatch`] says which.
//!
//! vyre's own CUDA target compile is run as well, as a fact to report: `compile_selected_modules`
//! with vyre's PTX emitter ([`super::ptx::emit_descriptor`]) as the emitter, each module's entry
//! point named as vyre's PTX names it (`main`). In 0.7.2 every artifact of two or more groups
//! fails when the payload is formed (`MKC017_MALFORMED_TARGET_PAYLOAD`: duplicate entry name
//! `main`), and a group whose Program buffer names differ from the graph's value names fails
//! earlier (`InvalidArtifact`: a descriptor binding with no canonical artifact resource).
//! Either is kept as vyre said it ([`TargetVerdict`]), not an error of ours.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use serde::Serialize;
use vyre_foundation::execution_plan::fusion::merge_programs_shared;
use vyre_foundation::ir::{Program as VyreProgram, ProgramGraph};
use vyre_megakernel::{
    compile_selected_modules, Artifact, EmittedTargetModule, SelectedLowering, TargetCompileError,
    TargetPayloadFormat, TargetProfile,
};

use crate::finding::Severity;
use crate::ir::{Pipeline, PipelineBuffer, Step};
use crate::util::Problem;

use super::import::graph::{dispatch_elements, graph_name, import_graph, ImportedGraph};
use super::plan::{compile_graph, Budget, PlanSource};

/// One fusion group of vyre's selected plan as a step of the vyre form.
#[derive(Debug, Clone, Serialize)]
pub struct FusedGroup {
    /// vyre's group id.
    pub id: u32,
    /// vyre's dependency stage.
    pub stage: u32,
    /// Member node ids, in the order vyre merges them (ascending).
    pub members: Vec<u32>,
    /// The members' node names.
    pub member_names: Vec<String>,
    /// The step's kernel name (`vyre_g<id>`).
    pub kernel: String,
    /// The fused Program's workgroup size (vyre's merge: the largest arm's, per axis).
    pub workgroup_size: [u32; 3],
    /// Program buffer -> pipeline buffer.
    pub bind: Vec<(String, String)>,
    /// Invocations the step dispatches.
    pub elements: u64,
    /// Where `elements` comes from: `vyre_target` (vyre's logical element count for the
    /// group) or `import_rule` (the target compile did not reach the group; the import's
    /// rule for one Program).
    pub dispatch: String,
    /// The barriers vyre's merge put between the arms, as `after -> before: ordering`.
    pub barriers: Vec<String>,
    /// What the import of the fused Program noted (`VY...` codes), as text.
    pub findings: Vec<String>,
    /// Why the group cannot run as vyre formed it (merge refused, import error, a buffer
    /// that carries two values or none), when it cannot.
    pub refused: Option<String>,
    /// Lines of vyre's PTX for the fused Program (`vyre-emit-ptx`), when vyre emits it.
    pub ptx_lines: Option<usize>,
    /// Why vyre's PTX emitter refused the fused Program, when it did.
    pub ptx_error: Option<String>,
    /// vyre's PTX for the fused Program.
    #[serde(skip)]
    pub ptx: Option<String>,
    /// The fused Program imported into our IR (when it imports and binds).
    #[serde(skip)]
    pub program: Option<crate::ir::Program>,
}

/// vyre's own CUDA target compile of the artifact (`compile_selected_modules` with vyre's
/// PTX emitter): succeeded, or vyre's code and message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TargetVerdict {
    /// True when vyre formed the target payload.
    pub ok: bool,
    /// vyre's code: an `MKC0xx` diagnostic code, or the `TargetCompileError` kind
    /// (`InvalidArtifact`, `Unsupported`, `Emission`, `ModuleBundle`).
    pub code: Option<String>,
    /// vyre's message (with the place it names).
    pub message: Option<String>,
    /// vyre's advice, when it gives one.
    pub fix: Option<String>,
    /// The entry points vyre's payload declares (when it formed one).
    pub entry_points: Vec<String>,
    /// The target: `sm_N` through vyre-emit-ptx 0.7.2.
    pub target: String,
}

impl TargetVerdict {
    /// One line: `ok, N entry points` or `CODE: message`.
    pub fn text(&self) -> String {
        if self.ok {
            let n = self.entry_points.len();
            format!(
                "ok ({n} entry point{}: {})",
                if n == 1 { "" } else { "s" },
                self.entry_points.join(", ")
            )
        } else {
            format!(
                "failed: [{}] {}",
                self.code.as_deref().unwrap_or("?"),
                self.message.as_deref().unwrap_or("")
            )
        }
    }
}

/// A graph's vyre form: vyre's plan, group by group, as a pipeline vyrescope runs.
#[derive(Debug, Clone, Serialize)]
pub struct VyreForm {
    /// Whether vyre's plan was computed now or read from an artifact file.
    pub source: PlanSource,
    /// The groups in launch order (vyre's stage, then group id).
    pub groups: Vec<FusedGroup>,
    /// Why the vyre form cannot run (the first refused group's reason), when it cannot.
    pub refused: Option<String>,
    /// vyre's own target compile of the same artifact.
    pub target: TargetVerdict,
    /// The vyre form: the graph's pipeline buffers, one step per group; `None` when refused.
    #[serde(skip)]
    pub pipeline: Option<Pipeline>,
}

/// The graph or artifact at `path` (`bytes`) as its pipeline and its vyre form. A graph is
/// planned by vyre now under `budget`; an artifact's recorded plan is used as it is. `sm`
/// is the target of vyre's PTX. vyre refusing to plan the graph is the error (with vyre's
/// code and a `Fix:`).
pub fn open(
    path: &Path,
    bytes: &[u8],
    budget: Budget,
    sm: u32,
) -> Result<(ImportedGraph, VyreForm), Problem> {
    let name = graph_name(path);
    let (graph, _) = super::import::graph::read_graph(path, bytes)?;
    let (artifact, source) = if super::artifact::is_artifact(path, bytes) {
        (
            super::artifact::decode_artifact(path, bytes)?,
            PlanSource::Artifact,
        )
    } else {
        // vyre's compile consumes the graph; the ports come from the one the loader reads.
        let (fresh, _) = super::import::graph::read_graph(path, bytes)?;
        (compile_graph(fresh, budget, &name)?.0, PlanSource::Computed)
    };
    let imported = import_graph(&graph, &name);
    if let Some(e) = imported.errors().next() {
        return Err(Problem::new(
            format!(
                "{}: the graph does not convert to a pipeline: [{}] {}",
                path.display(),
                e.code,
                e.message
            ),
            e.fix.clone(),
        ));
    }
    let form = vyre_form(&artifact, &graph, &imported, source, sm);
    Ok((imported, form))
}

/// The vyre form of `artifact`'s selected plan over `imported` (the pipeline of `graph`, the
/// graph the artifact was compiled from), with vyre's target compile for `sm`.
pub fn vyre_form(
    artifact: &Artifact,
    graph: &ProgramGraph,
    imported: &ImportedGraph,
    source: PlanSource,
    sm: u32,
) -> VyreForm {
    let (target, counts) = target_compile(artifact, sm);
    let mut fusion: Vec<_> = artifact.fusion().iter().collect();
    fusion.sort_by_key(|f| (f.stage, f.id.0));
    let groups: Vec<FusedGroup> = fusion
        .iter()
        .map(|f| {
            let mut members: Vec<u32> = f.members.iter().map(|m| m.0).collect();
            members.sort_unstable();
            fused_group(
                artifact,
                graph,
                imported,
                f.id.0,
                f.stage,
                members,
                counts.get(&f.id.0).copied(),
                sm,
            )
        })
        .collect();
    let mut refused = groups
        .iter()
        .find_map(|g| g.refused.as_ref().map(|r| format!("group {}: {r}", g.id)));
    let mut pipeline = None;
    if refused.is_none() {
        let p = form_pipeline(imported, &groups);
        let diags = crate::validate::pipeline::validate_pipeline(&p);
        match diags.iter().find(|d| d.severity == Severity::Error) {
            Some(d) => {
                refused = Some(format!(
                    "vyrescope's validator refuses the vyre form: [{}] {}",
                    d.code, d.message
                ))
            }
            None => pipeline = Some(p),
        }
    }
    VyreForm {
        source,
        groups,
        refused,
        target,
        pipeline,
    }
}

/// The pipeline of the vyre form: `imported`'s buffers, one step per group.
fn form_pipeline(imported: &ImportedGraph, groups: &[FusedGroup]) -> Pipeline {
    Pipeline {
        name: format!("{}_vyre", imported.pipeline.name),
        doc: Some(format!(
            "vyre-megakernel's plan of `{}`: one launch per vyre fusion group, each running \
             the Program vyre's merge_programs_shared forms from the group's nodes.",
            imported.pipeline.name
        )),
        // Not transient: a value vyre keeps inside a group is written and read by the same
        // launch, which the pipeline validator's rule for transient buffers (read only after
        // an earlier step wrote it) does not model. The comparison still skips the graph's
        // transient buffers (they are the original pipeline's).
        buffers: imported
            .pipeline
            .buffers
            .iter()
            .map(|b| PipelineBuffer {
                transient: false,
                ..b.clone()
            })
            .collect(),
        steps: groups
            .iter()
            .filter_map(|g| {
                Some(Step {
                    program: g.program.clone()?,
                    program_path: None,
                    bind: g.bind.clone(),
                    workgroup_size: None,
                    grid: None,
                    elements: Some(g.elements),
                })
            })
            .collect(),
    }
}

/// One group: vyre's merge of the members' canonical Programs, imported and bound.
#[allow(clippy::too_many_arguments)]
fn fused_group(
    artifact: &Artifact,
    graph: &ProgramGraph,
    imported: &ImportedGraph,
    id: u32,
    stage: u32,
    members: Vec<u32>,
    vyre_count: Option<u32>,
    sm: u32,
) -> FusedGroup {
    let kernel = format!("vyre_g{id}");
    let member_names: Vec<String> = members
        .iter()
        .map(|&m| {
            graph
                .nodes()
                .get(m as usize)
                .map_or_else(|| format!("node {m}"), |n| n.name.clone())
        })
        .collect();
    let mut g = FusedGroup {
        id,
        stage,
        members: members.clone(),
        member_names: member_names.clone(),
        kernel: kernel.clone(),
        workgroup_size: [1, 1, 1],
        bind: Vec::new(),
        elements: 1,
        dispatch: "import_rule".into(),
        barriers: Vec::new(),
        findings: Vec::new(),
        refused: None,
        ptx_lines: None,
        ptx_error: None,
        ptx: None,
        program: None,
    };
    // The members' Programs as the artifact holds them (vyre's canonical form), which is
    // what compile_selected_modules merges.
    let mut programs = Vec::new();
    for &m in &members {
        let Some(record) = artifact.nodes().iter().find(|n| n.id.0 == m) else {
            g.refused = Some(format!("the artifact has no node {m}"));
            return g;
        };
        match catch_unwind(AssertUnwindSafe(|| VyreProgram::from_wire(&record.program))) {
            Ok(Ok(p)) => programs.push(p),
            Ok(Err(e)) => {
                g.refused = Some(format!("vyre cannot decode node `{}`: {e}", record.name));
                return g;
            }
            Err(_) => {
                g.refused = Some(format!("vyre's decoder panicked on node `{}`", record.name));
                return g;
            }
        }
    }
    let fused = match catch_unwind(AssertUnwindSafe(|| merge_programs_shared(&programs))) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            g.refused = Some(format!(
                "vyre's merge_programs_shared refuses the group: {e}"
            ));
            return g;
        }
        Err(_) => {
            g.refused = Some("vyre's merge_programs_shared panicked".into());
            return g;
        }
    };
    g.workgroup_size = fused.workgroup_size;
    g.barriers = super::plan::kernel_barriers(&members, &programs.iter().collect::<Vec<_>>())
        .0
        .iter()
        .map(|b| {
            let name = |n: u32| {
                members
                    .iter()
                    .position(|&m| m == n)
                    .map_or_else(|| format!("node {n}"), |k| member_names[k].clone())
            };
            format!("{} -> {}: {}", name(b.after), name(b.before), b.ordering)
        })
        .collect();
    match target_ptx(&fused, sm) {
        Ok(p) => {
            g.ptx_lines = Some(p.lines().count());
            g.ptx = Some(p);
        }
        Err(e) => g.ptx_error = Some(e.to_string()),
    }
    let ours = super::import_program(&fused, &kernel);
    g.findings = ours.diagnostics.iter().map(|d| d.to_string()).collect();
    if let Some(e) = ours
        .diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
    {
        g.refused = Some(format!(
            "the fused Program does not import: [{}] {}",
            e.code, e.message
        ));
        return g;
    }
    // Every pipeline buffer that each fused Program buffer (by vyre's name) carries.
    let mut carried: HashMap<&str, Vec<(String, String)>> = HashMap::new();
    for (k, &m) in members.iter().enumerate() {
        let Some(node) = graph.nodes().get(m as usize) else {
            continue;
        };
        let ports = node
            .inputs
            .iter()
            .map(|p| (p.buffer.as_str(), p.value))
            .chain(
                node.output_ports
                    .iter()
                    .zip(&node.outputs)
                    .map(|(p, v)| (p.buffer.as_str(), *v)),
            );
        for (buffer, value) in ports {
            let Some(pb) = imported.value_buffers.get(value.0 as usize) else {
                continue;
            };
            let value_name = graph
                .values()
                .get(value.0 as usize)
                .map_or_else(|| format!("value {}", value.0), |v| v.name.clone());
            let list = carried.entry(buffer).or_default();
            if !list.iter().any(|(b, _)| b == pb) {
                list.push((
                    pb.clone(),
                    format!("`{value_name}` in `{}`", member_names[k]),
                ));
            }
        }
    }
    for b in ours.program.buffers.iter().filter(|b| b.access.is_host()) {
        let vyre_name = ours
            .buffer_names
            .iter()
            .find(|(_, o)| **o == b.name)
            .map_or(b.name.as_str(), |(v, _)| v.as_str());
        match carried.get(vyre_name).map(Vec::as_slice) {
            Some([(pb, _)]) => g.bind.push((b.name.clone(), pb.clone())),
            Some(many) if many.len() > 1 => {
                let what: Vec<&str> = many.iter().map(|(_, w)| w.as_str()).collect();
                g.refused = Some(format!(
                    "the fused Program's buffer `{vyre_name}` carries {} values ({}): vyre's \
                     merge joins the arms' buffers by name, so one buffer stands for values \
                     the graph keeps apart",
                    many.len(),
                    what.join(", ")
                ));
                return g;
            }
            _ => {
                g.refused = Some(format!(
                    "the fused Program's buffer `{vyre_name}` is bound to no graph value"
                ));
                return g;
            }
        }
    }
    match vyre_count {
        Some(n) => {
            g.elements = u64::from(n.max(1));
            g.dispatch = "vyre_target".into();
        }
        None => {
            g.elements = dispatch_elements(&ours.count_buffers, &g.bind, &imported.pipeline.buffers)
        }
    }
    let mut program = ours.program;
    // The pipeline's buffers decide the contents (as for a graph node's step).
    program.run = None;
    g.program = Some(program);
    g
}

/// Why vyre's PTX for a fused Program could not be made (the group's `ptx_error`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum TargetPtxError {
    /// vyre's lowering panicked.
    #[error("vyre's lowering panicked")]
    LoweringPanicked,
    /// vyre's lowering refused the Program.
    #[error("vyre's lowering failed: {}", .0.message())]
    Lowering(Box<vyre_lower::LowerVerifiedError>),
    /// vyre's PTX emitter failed on the lowered kernel.
    #[error("{}", crate::util::HasFix::message(&**.0))]
    Emit(Box<super::ptx::VyrePtxError>),
}

/// vyre's PTX for a group's fused Program as `compile_selected_modules` makes it:
/// `vyre_lower::lower_verified` (no validator: vyre's own validator refuses merged Programs
/// with two output buffers, V022, which the target compile never asks), then vyre's emitter.
fn target_ptx(program: &VyreProgram, sm: u32) -> Result<String, TargetPtxError> {
    let lowered = catch_unwind(AssertUnwindSafe(|| vyre_lower::lower_verified(program)))
        .map_err(|_| TargetPtxError::LoweringPanicked)?
        .map_err(|e| TargetPtxError::Lowering(Box::new(e)))?;
    super::ptx::emit_descriptor(&lowered.descriptor, sm)
        .map_err(|e| TargetPtxError::Emit(Box::new(e)))
}

/// vyre's CUDA target compile of `artifact` for `sm`: the verdict, and vyre's logical
/// element count of each group it lowered (by group id).
// The large error is vyre's `TargetCompileError` (and `CompileError`), fixed by the signature
// `compile_selected_modules` asks of its emitter.
#[allow(clippy::result_large_err)]
fn target_compile(artifact: &Artifact, sm: u32) -> (TargetVerdict, HashMap<u32, u32>) {
    let mut verdict = TargetVerdict {
        ok: false,
        code: None,
        message: None,
        fix: None,
        entry_points: Vec::new(),
        target: format!("sm_{sm} (vyre-emit-ptx 0.7.2)"),
    };
    let mut counts = HashMap::new();
    let setup = TargetPayloadFormat::new("vyrescope.vyre-emit-ptx", 1).and_then(|f| {
        TargetProfile::new(
            format!("cuda-sm{sm}"),
            1,
            [1024, 1024, 64],
            1024,
            48 * 1024,
            32,
        )
        .map(|p| (f, p))
    });
    let (format, profile) = match setup {
        Ok(fp) => fp,
        Err(e) => {
            diagnostic_verdict(&mut verdict, &e.diagnostic);
            return (verdict, counts);
        }
    };
    let emit = |sel: &SelectedLowering,
                _: &TargetProfile|
     -> Result<EmittedTargetModule, TargetCompileError> {
        counts.insert(sel.group.0, sel.logical_element_count);
        let ptx = super::ptx::emit_descriptor(&sel.descriptor, sm)
            .map_err(|e| TargetCompileError::Emission(e.message))?;
        let wg = sel.descriptor.dispatch.workgroup_size;
        let count = sel.logical_element_count.max(1);
        Ok(EmittedTargetModule {
            entry_point: entry_name(&ptx),
            grid_size: [count.div_ceil(wg[0].max(1)), 1, 1],
            dynamic_shared_bytes: 0,
            workgroup_size: wg,
            resource_bindings: sel.canonical_bindings.clone(),
            bytes: ptx.into_bytes(),
        })
    };
    let result = catch_unwind(AssertUnwindSafe(|| {
        compile_selected_modules(artifact, format, profile, emit)
    }));
    match result {
        Ok(Ok(payload)) => {
            verdict.ok = true;
            verdict.entry_points = payload.entries().iter().map(|e| e.name.clone()).collect();
        }
        Ok(Err(TargetCompileError::Payload(e))) => diagnostic_verdict(&mut verdict, &e.diagnostic),
        Ok(Err(e)) => {
            verdict.code = Some(
                match &e {
                    TargetCompileError::InvalidArtifact(_) => "InvalidArtifact",
                    TargetCompileError::Unsupported(_) => "Unsupported",
                    TargetCompileError::Emission(_) => "Emission",
                    TargetCompileError::ModuleBundle(_) => "ModuleBundle",
                    _ => "TargetCompileError",
                }
                .into(),
            );
            verdict.message = Some(e.to_string());
        }
        Err(_) => {
            verdict.code = Some("panic".into());
            verdict.message = Some("vyre's compile_selected_modules panicked".into());
        }
    }
    (verdict, counts)
}

/// vyre's diagnostic (code, message at its place, advice) into `verdict`.
fn diagnostic_verdict(verdict: &mut TargetVerdict, d: &vyre_megakernel::Diagnostic) {
    let place = d
        .location
        .as_ref()
        .and_then(|l| l.path.clone())
        .map(|p| format!(" at {p}"))
        .unwrap_or_default();
    verdict.code = Some(d.code.to_string());
    verdict.message = Some(format!("{}{place}", d.message));
    verdict.fix = d
        .suggested_fix
        .as_deref()
        .map(|f| f.trim().to_string())
        .filter(|f| !f.is_empty());
}

/// The `.entry` name of vyre's PTX (`main` for every kernel vyre-emit-ptx 0.7.2 writes).
fn entry_name(ptx: &str) -> String {
    ptx.lines()
        .find_map(|l| {
            let rest = l.trim().split(".entry ").nth(1)?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            (!name.is_empty()).then_some(name)
        })
        .unwrap_or_else(|| "main".into())
}
