//! vyre's `ProgramGraph` (vyre-foundation's composition of Programs, wire form `VGR0`) as a
//! pipeline: every graph value becomes a pipeline buffer, every node a step whose Program is
//! converted as a single vyre Program is ([`super::import::import_program`]).
//!
//! The mapping, value by value: a value and the retained values that succeed it
//! (`retained_successor_of`) are one buffer, since vyre updates retained state in place; a graph
//! input (no producer) gets seeded random contents, a produced value zeros; a produced value of
//! lifetime `Invocation` is an intermediate and so `transient` (nobody reads it after the
//! pipeline). Each step dispatches as vyre's kernel does: the element count is the largest
//! length among the buffers vyre counts for that Program (the same rule as a single import).
//!
//! What has no equivalent is an error finding with a `VY02x` code (a symbolic dimension, an
//! element type the format lacks, a Program buffer bound to no graph value); the pipeline is
//! still built where it can be, for `check` to list every finding at once.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use vyre_foundation::ir::{ProgramGraph, ShapeDim, ValueLifetime};

use crate::diagnostic::{Diagnostic, Severity};
use crate::ir::foreign::GraphBindings;
use crate::ir::{Fill, InputSource, InputSpec, NodeId, ParseError, Pipeline, PipelineBuffer, Step};
use crate::util::HasFix;

use super::import::{elem_type, identifier, import_program, DEFAULT_RUNTIME_LEN};

/// A converted graph and the findings of the conversion (each step's, with `steps[i].` in
/// front of its node, and the graph's own).
#[derive(Debug, Clone)]
pub struct ImportedGraph {
    /// The pipeline; steps and buffers that could not be converted are still present with
    /// placeholders, each with an error in `diagnostics`.
    pub pipeline: Pipeline,
    /// Errors for what has no equivalent, notes on what the mapping chose.
    pub diagnostics: Vec<Diagnostic>,
    /// Per step, the graph node's name (vyre's, before it was made an identifier).
    pub node_names: Vec<String>,
    /// Per graph value (by value id), the name of the pipeline buffer that holds it (a
    /// retained value and its successors share one).
    pub value_buffers: Vec<String>,
}

impl ImportedGraph {
    /// The error findings.
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
    }
}

/// Decodes `ProgramGraph::to_wire` bytes; `path` names the file in errors. A panic inside
/// vyre's decoder on hostile bytes is reported like any other decode error.
pub fn decode_graph(path: &Path, bytes: &[u8]) -> Result<ProgramGraph, ParseError> {
    // vyre's error is large (clippy's result_large_err): boxed until it is formatted.
    let failure = match catch_unwind(AssertUnwindSafe(|| {
        ProgramGraph::from_wire(bytes).map_err(Box::new)
    })) {
        Ok(Ok(graph)) => return Ok(graph),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "vyre's decoder panicked on these bytes".to_string(),
    };
    Err(ParseError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        path: String::new(),
        message: format!(
            "a vyre ProgramGraph file (`VGR0` header) that vyre cannot read: {failure}"
        ),
        fix: "write the graph again with vyre 0.7.2 (`ProgramGraph::to_wire`, graph wire \
              version 2), which is the version this vyrescope reads"
            .into(),
    })
}

/// Converts `graph` into a pipeline named `name` (made an identifier), its symbolic
/// dimensions bound by this process's `--bind` values
/// ([`crate::ir::foreign::graph_bindings`]).
pub fn import_graph(graph: &ProgramGraph, name: &str) -> ImportedGraph {
    import_graph_bound(graph, name, crate::ir::foreign::graph_bindings())
}

/// The symbolic dimensions of `graph`'s values that `bindings` leaves unbound, each once,
/// sorted.
pub fn unbound_symbols(graph: &ProgramGraph, bindings: &GraphBindings) -> Vec<String> {
    let mut out: Vec<String> = graph
        .values()
        .iter()
        .flat_map(|v| v.contract.shape.iter())
        .filter_map(|d| match d {
            ShapeDim::Symbol(s) if !bindings.contains_key(s.as_str()) => Some(s.to_string()),
            _ => None,
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// [`import_graph`] with the symbol values `bindings`.
pub fn import_graph_bound(
    graph: &ProgramGraph,
    name: &str,
    bindings: &GraphBindings,
) -> ImportedGraph {
    let mut diagnostics = Vec::new();
    let values = graph.values();
    let unbound = unbound_symbols(graph, bindings);
    // Buffer of each value (by value id): a retained successor shares its prior's.
    let mut buffer_of: Vec<usize> = Vec::with_capacity(values.len());
    let mut buffers: Vec<PipelineBuffer> = Vec::new();
    let mut used = HashSet::new();
    for v in values {
        if let Some(prior) = v.retained_successor_of {
            // vyre checked that the prior is earlier and type-preserving.
            if let Some(&b) = buffer_of.get(prior.0 as usize) {
                buffer_of.push(b);
                continue;
            }
        }
        let mut bname = identifier(&v.name);
        while !used.insert(bname.clone()) {
            bname.push('_');
        }
        let at = format!("value `{}`", v.name);
        let elem = match elem_type(&v.contract.dtype) {
            Some(e) => e,
            None => {
                diagnostics.push(Diagnostic::error(
                    "VY020",
                    None,
                    format!(
                        "{at}: element type `{}` has no vyrescope equivalent",
                        v.contract.dtype
                    ),
                    "store the value in one of bool u8 i8 u16 i16 u32 i32 u64 i64 f16 f32 f64",
                ));
                crate::ir::ElemType::U32
            }
        };
        let mut len: u64 = 1;
        for d in &v.contract.shape {
            match d {
                ShapeDim::Known(n) => len = len.saturating_mul(*n),
                ShapeDim::Symbol(s) => match bindings.get(s.as_str()) {
                    Some(&n) => len = len.saturating_mul(n),
                    None => {
                        diagnostics.push(Diagnostic::error(
                            "VY021",
                            None,
                            format!(
                                "{at}: dimension `{s}` is a configuration symbol with no value \
                                 (unbound in this graph: {}); a pipeline buffer has a fixed \
                                 length",
                                unbound.join(", ")
                            ),
                            format!(
                                "bind each symbol on the command line, e.g. {}",
                                unbound
                                    .iter()
                                    .map(|u| format!("`--bind {u}=N`"))
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            ),
                        ));
                        len = len.saturating_mul(DEFAULT_RUNTIME_LEN);
                    }
                },
            }
        }
        let fill = if v.producer.is_none() && v.contract.lifetime != ValueLifetime::Output {
            // Seeded by the name, not the position: a graph written again (by an export, with
            // its values in another order) gets the same inputs.
            Fill::Random {
                seed: crate::util::hash::fnv1a(bname.as_bytes()),
                range: None,
            }
        } else {
            Fill::Zeros
        };
        let transient = v.producer.is_some() && v.contract.lifetime == ValueLifetime::Invocation;
        buffer_of.push(buffers.len());
        buffers.push(PipelineBuffer {
            name: bname,
            elem,
            contents: InputSpec {
                len: Some(len),
                source: InputSource::Fill(fill),
            },
            transient,
        });
    }
    let mut steps = Vec::new();
    let mut node_names = Vec::new();
    let mut step_names = HashSet::new();
    for (i, node) in graph.nodes().iter().enumerate() {
        let mut pname = identifier(&node.name);
        while !step_names.insert(pname.clone()) {
            pname.push('_');
        }
        let imported = import_program(&node.program, &pname);
        for mut d in imported.diagnostics {
            d.node = Some(match &d.node {
                Some(n) => NodeId::new(format!("steps[{i}].{n}")),
                None => NodeId::new(format!("steps[{i}]")),
            });
            diagnostics.push(d);
        }
        // Port of each vyre buffer: an input value, else the output value at its position.
        let port = |vyre_buffer: &str| {
            node.inputs
                .iter()
                .find(|p| p.buffer == vyre_buffer)
                .map(|p| p.value)
                .or_else(|| {
                    node.output_ports
                        .iter()
                        .position(|p| p.buffer == vyre_buffer)
                        .and_then(|k| node.outputs.get(k).copied())
                })
        };
        let mut bind = Vec::new();
        for b in imported
            .program
            .buffers
            .iter()
            .filter(|b| b.access.is_host())
        {
            let vyre_name = imported
                .buffer_names
                .iter()
                .find(|(_, ours)| **ours == b.name)
                .map(|(theirs, _)| theirs.clone())
                .unwrap_or_else(|| b.name.clone());
            match port(&vyre_name).and_then(|v| buffer_of.get(v.0 as usize)) {
                Some(&k) => bind.push((b.name.clone(), buffers[k].name.clone())),
                None => diagnostics.push(Diagnostic::error(
                    "VY022",
                    Some(NodeId::new(format!("steps[{i}]"))),
                    format!(
                        "node `{}`: its Program's buffer `{vyre_name}` is bound to no graph value",
                        node.name
                    ),
                    "connect the buffer in the graph (an input port or an output port of the node)",
                )),
            }
        }
        let elements = dispatch_elements(&imported.count_buffers, &bind, &buffers);
        let mut program = imported.program;
        // The pipeline's buffers decide the contents; the Program's own `run` section would
        // only repeat vyre's counts.
        program.run = None;
        steps.push(Step {
            program,
            program_path: None,
            bind,
            workgroup_size: None,
            grid: None,
            elements: Some(elements),
        });
        node_names.push(node.name.clone());
    }
    if steps.is_empty() {
        diagnostics.push(Diagnostic::error(
            "VY023",
            None,
            "the graph has no nodes",
            "add at least one Program node to the graph",
        ));
    }
    let pipeline = Pipeline {
        name: identifier(name),
        doc: Some(format!(
            "Imported from a vyre ProgramGraph (wire format VGR0): {} node(s), {} value(s); a \
             retained value and its successors are one buffer.",
            graph.nodes().len(),
            values.len()
        )),
        buffers,
        steps,
    };
    ImportedGraph {
        value_buffers: buffer_of
            .iter()
            .map(|&k| pipeline.buffers[k].name.clone())
            .collect(),
        pipeline,
        diagnostics,
        node_names,
    }
}

/// The element count vyre's driver dispatches an imported Program with: the largest length
/// among the pipeline buffers bound (`bind`: Program buffer -> pipeline buffer) to the
/// Program buffers vyre counts (`count_buffers`, from the import); 1 when none is bound.
pub fn dispatch_elements(
    count_buffers: &[String],
    bind: &[(String, String)],
    buffers: &[PipelineBuffer],
) -> u64 {
    count_buffers
        .iter()
        .filter_map(|c| bind.iter().find(|(p, _)| p == c))
        .filter_map(|(_, pb)| buffers.iter().find(|b| b.name == *pb))
        .filter_map(|b| b.contents.len)
        .max()
        .unwrap_or(1)
}

/// The pipeline name for a graph read from `path`: the file name without `.vgr` or `.vmk`.
pub fn graph_name(path: &Path) -> String {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = [".vgr", ".vmk"]
        .iter()
        .find_map(|ext| file.strip_suffix(ext))
        .unwrap_or(&file);
    if stem.is_empty() {
        "vyre_graph".into()
    } else {
        identifier(stem)
    }
}

/// The graph in a graph file (`VGR0`) or a megakernel artifact (`VMK0`, or a `*.vmk` name:
/// the graph it was compiled from, [`super::artifact`]), with the notes of the rebuilding.
pub fn read_graph(
    path: &Path,
    bytes: &[u8],
) -> Result<(ProgramGraph, Vec<Diagnostic>), ParseError> {
    if super::artifact::is_artifact(path, bytes) {
        let a = super::artifact::decode_artifact(path, bytes)?;
        return super::artifact::artifact_graph(path, &a);
    }
    Ok((decode_graph(path, bytes)?, Vec::new()))
}

/// Decodes and converts a graph or artifact file, failing on the first error finding (naming
/// how many there are): the pipeline loader's hook
/// ([`crate::ir::foreign::install_graph_importer`]).
pub fn import_graph_file(path: &Path, bytes: &[u8]) -> Result<Pipeline, ParseError> {
    let (graph, _) = read_graph(path, bytes)?;
    let imported = import_graph(&graph, &graph_name(path));
    let errors: Vec<&Diagnostic> = imported.errors().collect();
    let Some(first) = errors.first() else {
        return Ok(imported.pipeline);
    };
    Err(ParseError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        path: first
            .node
            .as_ref()
            .map(|n| n.to_string())
            .unwrap_or_default(),
        message: format!(
            "a vyre ProgramGraph that cannot be converted: {} finding(s) have no vyrescope \
             equivalent; first: [{}] {}",
            errors.len(),
            first.code,
            first.message
        ),
        fix: first.fix.clone(),
    })
}

/// Why a pipeline has no ProgramGraph form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct GraphExportError {
    /// The pipeline's name.
    pub pipeline: String,
    /// What cannot be expressed, naming the step and buffer.
    pub what: String,
    /// What to do instead.
    pub fix: String,
}

impl crate::util::HasFix for GraphExportError {
    fn message(&self) -> String {
        format!(
            "cannot export pipeline `{}` as a vyre ProgramGraph: {}",
            self.pipeline, self.what
        )
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(GraphExportError);

/// The reverse of [`import_graph`]: `pipeline` as a ProgramGraph, every step Program exported
/// as a single Program is ([`super::export`]). Each write of a buffer makes a new value (the
/// first keeps the buffer's name, later ones are `<name>_v<k>`); the last value of a buffer
/// that outlives the pipeline is an `Output`, earlier ones and transient ones `Invocation`
/// values. A buffer a step reads and writes in place is `Retained`: its value and each
/// in-place update are one retained chain, which vyre requires to be updated in place only.
pub fn export_pipeline(pipeline: &Pipeline) -> Result<ProgramGraph, GraphExportError> {
    use vyre_foundation::ir::{BufferAccess, GraphInput, GraphOutput, GraphValueId, ValueContract};

    use crate::ir::Access;
    let fail = |what: String, fix: &str| GraphExportError {
        pipeline: pipeline.name.clone(),
        what,
        fix: fix.to_string(),
    };
    // vyre dispatches a graph node by its element count, in one dimension: a step launched
    // on a 2-D or 3-D grid would come back with every `gid.y` and `wgid.y` past the first
    // row lost, computing something else.
    if let Some((i, g)) = pipeline
        .steps
        .iter()
        .enumerate()
        .find_map(|(i, s)| s.grid.filter(|g| g[1] > 1 || g[2] > 1).map(|g| (i, g)))
    {
        return Err(fail(
            format!(
                "steps[{i}] launches a {}x{}x{} grid; a vyre graph dispatches each node by its element count, in one dimension",
                g[0], g[1], g[2]
            ),
            "give the step a one-dimensional grid (index rows with gid.x / width), or export its Program on its own",
        ));
    }
    // How each buffer is written: counts of plain writes and of in-place updates.
    let mut writes = vec![(0usize, 0usize); pipeline.buffers.len()];
    let index = |name: &str| pipeline.buffers.iter().position(|b| b.name == name);
    for (i, step) in pipeline.steps.iter().enumerate() {
        for (port, buffer) in &step.bind {
            let Some(decl) = step.program.buffers.iter().find(|b| b.name == *port) else {
                continue;
            };
            let Some(k) = index(buffer) else {
                return Err(fail(
                    format!("steps[{i}] binds `{port}` to `{buffer}`, which is not a buffer"),
                    "run `vyrescope check` on the pipeline first",
                ));
            };
            match decl.access {
                Access::ReadWrite if reads_buffer(&step.program, port) => writes[k].1 += 1,
                Access::Write | Access::ReadWrite => writes[k].0 += 1,
                _ => {}
            }
        }
    }
    if let Some(k) = (0..writes.len()).find(|&k| writes[k].0 > 0 && writes[k].1 > 0) {
        return Err(fail(
            format!(
                "buffer `{}` is written both as a step's output and in place (read_write); vyre \
                 updates a value in place only along a retained chain",
                pipeline.buffers[k].name
            ),
            "give the in-place updates a buffer of their own, or write the output to a new buffer",
        ));
    }
    let mut graph = ProgramGraph::new();
    let contract = |k: usize,
                    lifetime: ValueLifetime,
                    access: BufferAccess|
     -> Result<ValueContract, GraphExportError> {
        let b = &pipeline.buffers[k];
        let dtype = super::export::data_type(b.elem, &format!("buffers.{}", b.name))
            .map_err(|e| fail(HasFix::message(&e), &e.fix))?;
        let Some(len) = b.contents.len else {
            return Err(fail(
                format!(
                    "buffer `{}` takes its length from its file; a graph value has a fixed shape",
                    b.name
                ),
                "give the buffer an explicit `len` in the pipeline",
            ));
        };
        Ok(ValueContract {
            dtype,
            shape: vec![ShapeDim::Known(len)],
            access,
            lifetime,
        })
    };
    let vyre_err = |e: vyre_foundation::ir::ProgramGraphError| {
        fail(
            format!("vyre refuses the graph: {e}"),
            "vyre's graph cannot express this pipeline as written (its message says what); \
             bind each buffer to one port per step",
        )
    };
    // The current value of each buffer, its lifetime, and how many versions it has had.
    let mut current: Vec<Option<(GraphValueId, ValueLifetime)>> =
        vec![None; pipeline.buffers.len()];
    let mut versions = vec![0usize; pipeline.buffers.len()];
    let mut written = vec![0usize; pipeline.buffers.len()];
    // Graph inputs first: vyre's wire form lists external values before every node's, and
    // renumbers them so (an external added after a node would change the ids its ports name).
    for (k, b) in pipeline.buffers.iter().enumerate() {
        if !first_use_reads(pipeline, k, &index) {
            continue;
        }
        let retained = writes[k].1 > 0;
        let (lifetime, access) = if retained {
            (ValueLifetime::Retained, BufferAccess::ReadWrite)
        } else {
            (ValueLifetime::Invocation, BufferAccess::ReadOnly)
        };
        let id = graph
            .add_external_value(&b.name, contract(k, lifetime, access)?)
            .map_err(vyre_err)?;
        versions[k] = 1;
        current[k] = Some((id, lifetime));
    }
    for (i, step) in pipeline.steps.iter().enumerate() {
        let program = super::export(&step.program)
            .map_err(|e| fail(format!("steps[{i}]: {}", HasFix::message(&e)), &e.fix))?;
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (port, buffer) in &step.bind {
            let (Some(decl), Some(k)) = (
                step.program.buffers.iter().find(|b| b.name == *port),
                index(buffer),
            ) else {
                continue;
            };
            let retained = writes[k].1 > 0;
            if binding_reads(&step.program, port, decl.access) || retained {
                let Some((value, lifetime)) = current[k] else {
                    return Err(fail(
                        format!("steps[{i}] reads `{buffer}` before any step writes it"),
                        "run `vyrescope check` on the pipeline first",
                    ));
                };
                let access = match decl.access {
                    Access::ReadWrite => BufferAccess::ReadWrite,
                    Access::Uniform => BufferAccess::Uniform,
                    _ => BufferAccess::ReadOnly,
                };
                inputs.push(GraphInput {
                    buffer: port.clone(),
                    value,
                    contract: contract(k, lifetime, access)?,
                });
            }
            if matches!(decl.access, Access::Write | Access::ReadWrite) {
                let last = written[k] + 1 == writes[k].0;
                let (lifetime, access, successor_of) = if retained {
                    (
                        ValueLifetime::Retained,
                        BufferAccess::ReadWrite,
                        current[k].map(|(v, _)| v),
                    )
                } else if last && !pipeline.buffers[k].transient {
                    (ValueLifetime::Output, BufferAccess::WriteOnly, None)
                } else {
                    (ValueLifetime::Invocation, BufferAccess::WriteOnly, None)
                };
                let name = if versions[k] == 0 {
                    pipeline.buffers[k].name.clone()
                } else {
                    format!("{}_v{}", pipeline.buffers[k].name, versions[k] + 1)
                };
                outputs.push((
                    k,
                    lifetime,
                    GraphOutput {
                        buffer: port.clone(),
                        name,
                        contract: contract(k, lifetime, access)?,
                        retained_successor_of: successor_of,
                    },
                ));
            }
        }
        let node_name = format!("s{i}_{}", step.program.name);
        let (_, ids) = graph
            .add_node(
                node_name,
                program,
                inputs,
                outputs.iter().map(|(_, _, o)| o.clone()).collect(),
            )
            .map_err(vyre_err)?;
        for ((k, lifetime, _), id) in outputs.into_iter().zip(ids) {
            versions[k] += 1;
            written[k] += 1;
            current[k] = Some((id, lifetime));
        }
    }
    Ok(graph)
}

/// True when `program` reads its buffer `name` (a load or an atomic): a `read_write` buffer
/// that is only stored to is an output, not an in-place update.
fn reads_buffer(program: &crate::ir::Program, name: &str) -> bool {
    use crate::ir::Expr;
    let mut reads = false;
    program.walk_exprs(&mut |e| {
        if let Expr::Load { buffer, .. } | Expr::Atomic { buffer, .. } = e {
            reads |= buffer == name;
        }
    });
    reads
}

/// True when the binding of `port` (declared with `access`) reads the buffer.
fn binding_reads(program: &crate::ir::Program, port: &str, access: crate::ir::Access) -> bool {
    use crate::ir::Access;
    match access {
        Access::Read | Access::Uniform => true,
        Access::ReadWrite => reads_buffer(program, port),
        Access::Write | Access::Workgroup => false,
    }
}

/// True when the first step that touches pipeline buffer `k` reads it: its contents come from
/// outside the graph (an external value), not from a node.
fn first_use_reads(pipeline: &Pipeline, k: usize, index: &dyn Fn(&str) -> Option<usize>) -> bool {
    for step in &pipeline.steps {
        let mut touched = false;
        for (port, buffer) in &step.bind {
            let Some(decl) = step.program.buffers.iter().find(|b| b.name == *port) else {
                continue;
            };
            if index(buffer) != Some(k) {
                continue;
            }
            if binding_reads(&step.program, port, decl.access) {
                return true;
            }
            touched = true;
        }
        if touched {
            return false;
        }
    }
    false
}

/// `graph`'s wire bytes (`ProgramGraph::to_wire`), checked by decoding them again with vyre's
/// own decoder, so that a graph vyre would refuse is refused here with vyre's reason.
/// `pipeline` names it in errors.
pub fn encode_graph(graph: &ProgramGraph, pipeline: &str) -> Result<Vec<u8>, GraphExportError> {
    let refuse = |why: &dyn std::fmt::Display| GraphExportError {
        pipeline: pipeline.into(),
        what: format!("vyre cannot read the graph back: {why}"),
        fix: "report this with the pipeline file".into(),
    };
    let bytes = catch_unwind(AssertUnwindSafe(|| graph.to_wire().map_err(Box::new)))
        .map_err(|_| refuse(&"vyre's encoder panicked"))?
        .map_err(|e| refuse(&e))?;
    match catch_unwind(AssertUnwindSafe(|| {
        ProgramGraph::from_wire(&bytes)
            .map(|_| ())
            .map_err(Box::new)
    })) {
        Ok(Ok(())) => Ok(bytes),
        Ok(Err(e)) => Err(refuse(&e)),
        Err(_) => Err(refuse(&"vyre's decoder panicked on it")),
    }
}
