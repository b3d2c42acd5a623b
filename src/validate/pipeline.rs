//! Static checks of a pipeline: every step's Program (its findings prefixed `steps[i].`, the
//! same ids the pipeline printer shows) and the bindings between steps and pipeline buffers.
//! Like [`super::validate`] it never fails and returns every finding at once.
//!
//! | code | severity | rule |
//! |---|---|---|
//! | V100 | error | `bind` names something that is not a host buffer of the step's Program |
//! | V101 | error | a host buffer of the step's Program is not bound |
//! | V102 | error | `bind` names a pipeline buffer that does not exist |
//! | V103 | error | bound buffers have different element types |
//! | V104 | error | one pipeline buffer is bound twice in one step (aliasing inside a dispatch) |
//! | V105 | error | a transient buffer is read before any step writes it |
//! | V106 | error | a step's `grid` is beyond CUDA's grid limits, or runs more invocations than `run` accepts |
//! | V107 | info | a step's Program has `run.inputs`; the pipeline's buffers replace them |
//! | V108 | warning | a pipeline buffer no step binds |
//!
//! A step's `workgroup_size` override is checked by validating the Program with the override
//! in place, so an oversized workgroup is `V009` at `steps[i].workgroup_size`.

use std::collections::HashMap;
use std::path::Path;

use crate::finding::{Diagnostic, Severity};
use crate::ir::{
    load_pipeline as parse_file, Access, Expr, NodeId, Pipeline, PipelineBuffer, Program, StmtKind,
};
use crate::shape::MAX_GRID_DIMS;

use super::limits::{expr_children, preorder, stmt_exprs};

/// A pipeline file after parsing and validation.
#[derive(Debug, Clone)]
pub struct LoadedPipeline {
    /// The parsed pipeline; `None` when the file (or a Program it names) did not parse.
    pub pipeline: Option<Pipeline>,
    /// Every finding: one `V000` error for a parse failure, else the validator's diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

impl LoadedPipeline {
    /// True when the pipeline parsed and has no validation error.
    pub fn is_valid(&self) -> bool {
        self.pipeline.is_some() && super::is_valid(&self.diagnostics)
    }
}

/// Reads, parses and validates the pipeline file at `path`; a parse error becomes one `V000`
/// error whose node is the JSON path of the offending value (as for Program files).
pub fn load_pipeline(path: &Path) -> LoadedPipeline {
    match parse_file(path) {
        Ok(p) => {
            let diagnostics = validate_pipeline(&p);
            LoadedPipeline {
                pipeline: Some(p),
                diagnostics,
            }
        }
        Err(e) => LoadedPipeline {
            pipeline: None,
            diagnostics: vec![Diagnostic::error(
                "V000",
                (!e.path.is_empty()).then(|| NodeId::from(e.path.clone())),
                format!("{}: {}", e.place(), e.message),
                e.fix,
            )],
        },
    }
}

/// Checks `pipeline`; no error (warnings and notes are fine) means it can run.
pub fn validate_pipeline(pipeline: &Pipeline) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let index = Index::of(pipeline);
    for (i, step) in pipeline.steps.iter().enumerate() {
        let at = |rest: &str| Some(NodeId::new(format!("steps[{i}].{rest}")));
        // The Program as it will run: with the step's workgroup size.
        let mut program = step.program.clone();
        program.workgroup_size = step.workgroup();
        for mut d in super::validate(&program) {
            d.node = Some(match &d.node {
                Some(n) => NodeId::new(format!("steps[{i}].{n}")),
                None => NodeId::new(format!("steps[{i}]")),
            });
            out.push(d);
        }
        if let Some(g) = step.grid {
            if let Some(axis) = (0..3).find(|&a| g[a] > MAX_GRID_DIMS[a]) {
                out.push(Diagnostic::error(
                    "V106",
                    at("grid"),
                    format!(
                        "step {i}: grid {g:?} has {} workgroups along {}; CUDA allows at most {}",
                        g[axis],
                        ["x", "y", "z"][axis],
                        MAX_GRID_DIMS[axis]
                    ),
                    "use a smaller grid (or `elements` and a larger workgroup_size)",
                ));
            } else {
                // What `run` and `plan` refuse, `check` refuses too.
                let shape = crate::shape::LaunchShape {
                    workgroup_size: step.workgroup(),
                    grid: g,
                };
                if let Err((message, fix)) = shape.check_dispatch() {
                    out.push(Diagnostic::error(
                        "V106",
                        at("grid"),
                        format!("step {i}: {message}"),
                        &fix,
                    ));
                }
            }
        }
        if let (None, Some(n)) = (step.grid, step.elements) {
            // The grid `run` and `plan` make of `elements`, refused here as there.
            let wg = step.workgroup();
            let shape = crate::shape::grid_for_elements(n, wg[0]).and_then(|grid| {
                crate::shape::LaunchShape {
                    workgroup_size: wg,
                    grid,
                }
                .check_dispatch()
            });
            if let Err((message, fix)) = shape {
                out.push(Diagnostic::error(
                    "V106",
                    at("elements"),
                    format!("step {i}: {message}"),
                    &fix,
                ));
            }
        }
        if step
            .program
            .run
            .as_ref()
            .is_some_and(|r| !r.inputs.is_empty())
        {
            out.push(Diagnostic::info(
                "V107",
                at("program"),
                format!(
                    "step {i}: Program `{}` has run.inputs; in a pipeline the bound pipeline buffers give the contents",
                    step.program.name
                ),
                "nothing to do; move the contents to the pipeline's `buffers` if they matter",
            ));
        }
        check_bindings(pipeline, &index, i, &mut out);
    }
    check_transients(pipeline, &index, &mut out);
    for b in &pipeline.buffers {
        if !index.binders.contains_key(b.name.as_str()) {
            out.push(Diagnostic::warning(
                "V108",
                Some(NodeId::new(format!("buffers.{}", b.name))),
                format!("pipeline buffer `{}` is bound by no step", b.name),
                "bind it in a step or remove it",
            ));
        }
    }
    out
}

/// The pipeline's buffers by name and the bindings of each, found once: looked up per step
/// (or per buffer over all steps), checking a long pipeline was quadratic in its steps.
struct Index<'p> {
    buffers: HashMap<&'p str, &'p PipelineBuffer>,
    /// Pipeline buffer -> (step, Program buffer) of every binding of it, in step order.
    binders: HashMap<&'p str, Vec<(usize, &'p str)>>,
}

impl<'p> Index<'p> {
    fn of(pipeline: &'p Pipeline) -> Self {
        let mut buffers = HashMap::new();
        for b in &pipeline.buffers {
            buffers.entry(b.name.as_str()).or_insert(b);
        }
        let mut binders: HashMap<&str, Vec<(usize, &str)>> = HashMap::new();
        for (i, step) in pipeline.steps.iter().enumerate() {
            for (k, t) in &step.bind {
                binders.entry(t.as_str()).or_default().push((i, k.as_str()));
            }
        }
        Index { buffers, binders }
    }
}

/// V100-V104 for step `i`.
fn check_bindings(pipeline: &Pipeline, index: &Index, i: usize, out: &mut Vec<Diagnostic>) {
    let step = &pipeline.steps[i];
    let p = &step.program;
    let bind_at = |k: &str| Some(NodeId::new(format!("steps[{i}].bind.{k}")));
    for (k, target) in &step.bind {
        match p.buffer(k) {
            None => out.push(Diagnostic::error(
                "V100",
                bind_at(k),
                format!("step {i}: Program `{}` has no buffer `{k}`", p.name),
                format!("bind only the Program's host buffers ({})", host_names(p)),
            )),
            Some(b) if !b.access.is_host() => out.push(Diagnostic::error(
                "V100",
                bind_at(k),
                format!(
                    "step {i}: `{k}` is a workgroup buffer of `{}`; it belongs to the step",
                    p.name
                ),
                format!("remove `{k}` from steps[{i}].bind"),
            )),
            Some(b) => match index.buffers.get(target.as_str()).copied() {
                None => out.push(Diagnostic::error(
                    "V102",
                    bind_at(k),
                    format!("step {i}: no pipeline buffer `{target}`"),
                    format!(
                        "bind a buffer declared in `buffers` ({})",
                        pipeline
                            .buffers
                            .iter()
                            .map(|b| b.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
                Some(pb) if pb.elem != b.elem => out.push(Diagnostic::error(
                    "V103",
                    bind_at(k),
                    format!(
                        "step {i}: `{k}` of `{}` is {} but pipeline buffer `{target}` is {}",
                        p.name, b.elem, pb.elem
                    ),
                    format!(
                        "bind a {} pipeline buffer, or change the types to match",
                        b.elem
                    ),
                )),
                Some(_) => {}
            },
        }
    }
    for b in p.host_buffers() {
        if step.bound(&b.name).is_none() {
            out.push(Diagnostic::error(
                "V101",
                Some(NodeId::new(format!("steps[{i}].bind"))),
                format!(
                    "step {i}: host buffer `{}` of `{}` is not bound",
                    b.name, p.name
                ),
                format!("add \"{}\": \"PIPELINE_BUFFER\" to steps[{i}].bind", b.name),
            ));
        }
    }
    // Aliasing among real host-buffer bindings only (a binding of a non-buffer is V100 already).
    let host: Vec<&(String, String)> = step
        .bind
        .iter()
        .filter(|(k, _)| p.buffer(k).is_some_and(|b| b.access.is_host()))
        .collect();
    for (n, (k, target)) in host.iter().map(|kt| (&kt.0, &kt.1)).enumerate() {
        if let Some((first, _)) = host[..n]
            .iter()
            .map(|kt| (&kt.0, &kt.1))
            .find(|(_, t)| *t == target)
        {
            out.push(Diagnostic::error(
                "V104",
                bind_at(k),
                format!("step {i}: pipeline buffer `{target}` is bound to both `{first}` and `{k}`"),
                "bind each pipeline buffer at most once per step (no aliasing inside a dispatch); copy it in an earlier step if both are needed",
            ));
        }
    }
}

fn host_names(p: &Program) -> String {
    p.host_buffers()
        .iter()
        .map(|b| b.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// V105: walks the steps in order; a transient buffer is "written" once a step stores to it
/// (or updates it atomically) and "read" by a step that binds it `read`/`uniform` or loads it.
fn check_transients(pipeline: &Pipeline, index: &Index, out: &mut Vec<Diagnostic>) {
    for b in pipeline.buffers.iter().filter(|b| b.transient) {
        let mut last = None;
        for &(i, k) in index.binders.get(b.name.as_str()).into_iter().flatten() {
            // The first binding of each step, as a search of its list finds.
            if last == Some(i) {
                continue;
            }
            last = Some(i);
            let step = &pipeline.steps[i];
            let Some(decl) = step.program.buffer(k) else {
                continue;
            };
            let (reads, writes) = use_of(&step.program, k);
            let reads = reads || matches!(decl.access, Access::Read | Access::Uniform);
            if reads {
                out.push(Diagnostic::error(
                    "V105",
                    Some(NodeId::new(format!("steps[{i}].bind.{k}"))),
                    format!(
                        "step {i}: transient buffer `{}` is read before any step writes it",
                        b.name
                    ),
                    format!("write `{}` in an earlier step, or drop \"transient\": true from buffers.{}", b.name, b.name),
                ));
                break;
            }
            if writes && decl.access.is_writable() {
                break;
            }
        }
    }
}

/// Whether `program`'s body loads (or atomically reads) `buffer`, and whether it stores to it
/// (or updates it atomically). Iterative, so deep Programs cannot overflow the stack.
fn use_of(program: &Program, buffer: &str) -> (bool, bool) {
    let (mut reads, mut writes) = (false, false);
    for s in preorder(program) {
        if let StmtKind::Store { buffer: b, .. } = &s.kind {
            writes |= b == buffer;
        }
        let mut stack: Vec<&Expr> = stmt_exprs(s).into_iter().map(|(_, e)| e).collect();
        while let Some(e) = stack.pop() {
            match e {
                Expr::Load { buffer: b, .. } => reads |= b == buffer,
                Expr::Atomic { buffer: b, .. } if b == buffer => {
                    reads = true;
                    writes = true;
                }
                _ => {}
            }
            stack.extend(expr_children(e));
        }
    }
    (reads, writes)
}

/// True when `diagnostics` hold an error.
pub fn has_error(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(|d| d.severity == Severity::Error)
}
