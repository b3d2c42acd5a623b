//! vyre's `ProgramGraph` (vyre-foundation's composition of Programs, wire form `VGR0`) as a
//! pipeline: every graph value becomes a pipeline buffer, every node a step whose Program is
//! converted as a single vyre Program is ([`super::import_program`]). The reverse is
//! [`crate::vyre::export::graph`].
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

use crate::finding::{Diagnostic, Severity};
use crate::ir::foreign::GraphBindings;
use crate::ir::{Fill, InputSource, InputSpec, NodeId, ParseError, Pipeline, PipelineBuffer, Step};

use super::{elem_type, identifier, import_program, DEFAULT_RUNTIME_LEN};

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
    let (buffer_of, buffers) = value_buffers(graph, bindings, &mut diagnostics);
    let mut steps = Vec::new();
    let mut node_names = Vec::new();
    let mut step_names = HashSet::new();
    for (i, node) in graph.nodes().iter().enumerate() {
        let mut pname = identifier(&node.name);
        while !step_names.insert(pname.clone()) {
            pname.push('_');
        }
        steps.push(node_step(
            i,
            node,
            &pname,
            (&buffer_of, &buffers),
            &mut diagnostics,
        ));
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

/// The pipeline buffers of `graph`'s values and the buffer of each value (by value id): a
/// retained successor shares its prior's buffer. What has no equivalent is reported in
/// `diagnostics` (`VY020`, `VY021`).
fn value_buffers(
    graph: &ProgramGraph,
    bindings: &GraphBindings,
    diagnostics: &mut Vec<Diagnostic>,
) -> (Vec<usize>, Vec<PipelineBuffer>) {
    let values = graph.values();
    let unbound = unbound_symbols(graph, bindings);
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
        let len = value_len(&v.contract.shape, &at, bindings, &unbound, diagnostics);
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
    (buffer_of, buffers)
}

/// Elements of a value of shape `shape` (`at` names it): symbols take their `bindings`; an
/// unbound one is reported (`VY021`, naming every symbol `unbound` in the graph) and counts as
/// [`DEFAULT_RUNTIME_LEN`].
fn value_len(
    shape: &[ShapeDim],
    at: &str,
    bindings: &GraphBindings,
    unbound: &[String],
    diagnostics: &mut Vec<Diagnostic>,
) -> u64 {
    let mut len: u64 = 1;
    for d in shape {
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
    len
}

/// Graph node `i` as pipeline step `pname`: its Program converted, its buffers bound to the
/// buffers of the values on its ports (`values`: each value's buffer, and the buffers).
/// The conversion's findings and unbound buffers (`VY022`) go to `diagnostics`, under
/// `steps[i]`.
fn node_step(
    i: usize,
    node: &vyre_foundation::ir::ProgramGraphNode,
    pname: &str,
    values: (&[usize], &[PipelineBuffer]),
    diagnostics: &mut Vec<Diagnostic>,
) -> Step {
    let (buffer_of, buffers) = values;
    let imported = import_program(&node.program, pname);
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
    let elements = dispatch_elements(&imported.count_buffers, &bind, buffers);
    let mut program = imported.program;
    // The pipeline's buffers decide the contents; the Program's own `run` section would
    // only repeat vyre's counts.
    program.run = None;
    Step {
        program,
        program_path: None,
        bind,
        workgroup_size: None,
        grid: None,
        elements: Some(elements),
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
/// the graph it was compiled from, [`crate::vyre::artifact`]), with the notes of the rebuilding.
pub fn read_graph(
    path: &Path,
    bytes: &[u8],
) -> Result<(ProgramGraph, Vec<Diagnostic>), ParseError> {
    if crate::vyre::artifact::is_artifact(path, bytes) {
        let a = crate::vyre::artifact::decode_artifact(path, bytes)?;
        return crate::vyre::artifact::artifact_graph(path, &a);
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
