//! vyre-megakernel's compiled `Artifact` (bytes `VMK0`, `Artifact::from_bytes`) as the
//! ProgramGraph it was compiled from, so that it opens wherever a graph does.
//!
//! An artifact keeps every node's Program (in vyre's canonical form: buffers sorted, operands
//! of commutative operators ordered), every value's name, element count, element type, access
//! and lifetime, each node's input and output values in port order, and the retained
//! transitions as dependency edges. It does not keep which Program buffer each port binds,
//! nor a value's shape beyond its element count. The rebuilt graph binds a port to the buffer
//! named like its value, else to the first compatible buffer by binding number (outputs
//! preferring vyre's output buffers, inputs read-only ones), and gives each value the shape
//! `[count]`; note `VY025` says so. vyre's own graph checks then judge the binding: an
//! artifact whose ports cannot be bound that way is refused (`VY024`), with the advice to open
//! the graph the artifact was compiled from.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use vyre_foundation::ir::{
    BufferAccess, GraphInput, GraphOutput, GraphValueId, Program as VyreProgram, ProgramGraph,
    ShapeDim, ValueContract, ValueLifetime,
};
use vyre_megakernel::{AbiAccess, Artifact, DependencyEndpoint, DependencyKind, ResourceLifetime};

use crate::finding::Diagnostic;
use crate::ir::ParseError;

/// The first bytes of a vyre-megakernel artifact.
pub const ARTIFACT_MAGIC: &[u8; 4] = b"VMK0";

/// True when the file is a megakernel artifact: `VMK0` bytes, or a `*.vmk` name (so that a
/// damaged one gets the artifact decoder's error).
pub fn is_artifact(path: &Path, bytes: &[u8]) -> bool {
    bytes.starts_with(ARTIFACT_MAGIC)
        || path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("vmk"))
}

/// Decodes `Artifact::to_bytes` bytes; `path` names the file in errors. vyre's diagnostic (its
/// `MKC0xx` code and advice) is kept; a panic in vyre's decoder is reported as an error.
pub fn decode_artifact(path: &Path, bytes: &[u8]) -> Result<Artifact, ParseError> {
    // vyre's error is large (clippy's result_large_err): boxed until it is formatted.
    let failure = match catch_unwind(AssertUnwindSafe(|| {
        Artifact::from_bytes(bytes).map_err(Box::new)
    })) {
        Ok(Ok(a)) => return Ok(a),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "vyre's decoder panicked on these bytes".to_string(),
    };
    Err(file_error(
        path,
        format!("a vyre megakernel artifact (`VMK0` header) that vyre cannot read: {failure}"),
        "compile the graph again with vyre-megakernel 0.7.2 (`Artifact::to_bytes`, schema 4), \
         or open the ProgramGraph (.vgr) it was compiled from",
    ))
}

fn file_error(path: &Path, message: String, fix: &str) -> ParseError {
    ParseError {
        file: path.display().to_string(),
        line: 0,
        column: 0,
        path: String::new(),
        message,
        fix: fix.into(),
    }
}

/// The graph `artifact` was compiled from, as far as the artifact records it (see the module
/// doc), and the note on how ports were bound; an error where the records do not make a
/// graph vyre accepts.
pub fn artifact_graph(
    path: &Path,
    artifact: &Artifact,
) -> Result<(ProgramGraph, Vec<Diagnostic>), ParseError> {
    let refuse = |what: String| {
        file_error(
            path,
            format!("[VY024] the megakernel artifact cannot be opened as a graph: {what}"),
            "open the ProgramGraph (.vgr, `ProgramGraph::to_wire`) the artifact was compiled \
             from: an artifact does not record which Program buffer each port binds",
        )
    };
    let abi = artifact.abi();
    let count = abi.resources.len();
    // Every value's contract and name, by id.
    let mut values: Vec<Option<(String, ValueContract)>> = vec![None; count];
    for r in &abi.resources {
        let id = r.value.0 as usize;
        let rec = artifact
            .resources()
            .iter()
            .find(|x| x.value == r.value)
            .ok_or_else(|| refuse(format!("value {id} has no resource record")))?;
        let slot = values
            .get_mut(id)
            .ok_or_else(|| refuse(format!("value id {id} is past the {count} values")))?;
        *slot = Some((
            rec.name.clone(),
            ValueContract {
                dtype: r.dtype.clone(),
                shape: vec![ShapeDim::Known(rec.element_count)],
                access: match r.access {
                    AbiAccess::ReadOnly => BufferAccess::ReadOnly,
                    AbiAccess::WriteOnly => BufferAccess::WriteOnly,
                    AbiAccess::ReadWrite => BufferAccess::ReadWrite,
                    AbiAccess::Uniform => BufferAccess::Uniform,
                },
                lifetime: match rec.lifetime {
                    ResourceLifetime::Constant => ValueLifetime::Constant,
                    ResourceLifetime::Invocation => ValueLifetime::Invocation,
                    ResourceLifetime::Retained => ValueLifetime::Retained,
                    ResourceLifetime::Output => ValueLifetime::Output,
                },
            },
        ));
    }
    let produced: HashSet<u32> = abi
        .entries
        .iter()
        .flat_map(|e| e.outputs.iter().map(|v| v.0))
        .collect();
    let mut graph = ProgramGraph::new();
    let vyre_err = |e: vyre_foundation::ir::ProgramGraphError| refuse(e.to_string());
    // Values get their ids in the order they are added: externals up to each node's first
    // output, then the node, as the graph was built.
    let add_externals_below = |graph: &mut ProgramGraph, end: usize| {
        while graph.values().len() < end.min(count) {
            let id = graph.values().len() as u32;
            if produced.contains(&id) {
                return Err(refuse(format!(
                    "value {id} is produced by no node before it is needed"
                )));
            }
            let (name, contract) = lookup(&values, id)
                .map_err(|e| refuse(e.to_string()))?
                .clone();
            graph.add_external_value(name, contract).map_err(vyre_err)?;
        }
        Ok(())
    };
    for (n, record) in artifact.nodes().iter().enumerate() {
        let entry = abi
            .entries
            .iter()
            .find(|e| e.node == record.id)
            .ok_or_else(|| refuse(format!("node `{}` has no ABI entry", record.name)))?;
        let program = catch_unwind(AssertUnwindSafe(|| VyreProgram::from_wire(&record.program)))
            .map_err(|_| refuse(format!("node `{}`: vyre's decoder panicked", record.name)))?
            .map_err(|e| refuse(format!("node `{}` Program: {e}", record.name)))?;
        // The node's outputs get the ids after every value added so far; a node without
        // outputs needs only its inputs to exist.
        let target = match entry.outputs.first() {
            Some(v) => v.0 as usize,
            None => entry
                .inputs
                .iter()
                .map(|v| v.0 as usize + 1)
                .max()
                .unwrap_or(0),
        };
        add_externals_below(&mut graph, target)?;
        let (inputs, outputs) = ports(artifact, &program, entry, &values)
            .map_err(|why| refuse(format!("node `{}` (nodes[{n}]): {why}", record.name)))?;
        let (_, ids) = graph
            .add_node(record.name.clone(), program, inputs, outputs)
            .map_err(vyre_err)?;
        if ids
            .iter()
            .map(|v| v.0)
            .ne(entry.outputs.iter().map(|v| v.0))
        {
            return Err(refuse(format!(
                "node `{}` produces values {:?}, which are not the next ids in order",
                record.name,
                entry.outputs.iter().map(|v| v.0).collect::<Vec<_>>()
            )));
        }
    }
    add_externals_below(&mut graph, count)?;
    let note = Diagnostic::info(
        "VY025",
        None,
        format!(
            "rebuilt from a megakernel artifact ({} node(s), {} value(s)): Programs in vyre's \
             canonical form, each value's shape its element count, each port bound to the \
             buffer named like its value, else the first compatible one by binding",
            artifact.nodes().len(),
            count
        ),
        "open the ProgramGraph the artifact was compiled from to keep its own port bindings",
    );
    Ok((graph, vec![note]))
}

type Ports = (Vec<GraphInput>, Vec<GraphOutput>);

/// Why a node's ports cannot be rebuilt from the artifact's records (the `VY024` reason).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
enum PortError {
    /// A value the node names has no ABI resource record.
    #[error("value {0} has no ABI record")]
    NoRecord(u32),
    /// A retained output's prior is not among the node's inputs.
    #[error("retained output `{0}` does not consume its prior")]
    PriorNotConsumed(String),
    /// A retained value whose node has no input it replaces.
    #[error("retained value {0} replaces no input of its node")]
    NoReplacedInput(u32),
    /// No unused buffer of the Program fits the port.
    #[error(
        "no {} buffer of element type {dtype:?} is left for value `{value}`",
        if *.output { "writable" } else { "readable" }
    )]
    NoBuffer {
        /// An output port (needs a writable buffer).
        output: bool,
        /// The value's element type.
        dtype: vyre_foundation::ir::DataType,
        /// The value's name.
        value: String,
    },
}

/// The ports of one node: each value of `entry` bound to a buffer of `program`.
fn ports(
    artifact: &Artifact,
    program: &VyreProgram,
    entry: &vyre_megakernel::EntryAbiRecord,
    values: &[Option<(String, ValueContract)>],
) -> Result<Ports, PortError> {
    let mut host: Vec<_> = program
        .buffers()
        .iter()
        .filter(|b| b.access() != BufferAccess::Workgroup)
        .collect();
    host.sort_by_key(|b| b.binding());
    let mut used: HashSet<String> = HashSet::new();
    let get = |id: u32| lookup(values, id);
    // Outputs first: fewer buffers can take them.
    let mut outputs = Vec::new();
    for v in &entry.outputs {
        let (name, contract) = get(v.0)?;
        // The prior a retained successor replaces: the edge names it, or its producer.
        let prior = retained_prior(artifact, entry, v.0, values)?;
        let buffer = match prior {
            // Bound later, with the prior's input port.
            Some(_) => String::new(),
            None => pick(&host, &mut used, name, contract, true)?,
        };
        outputs.push(GraphOutput {
            buffer,
            name: name.to_string(),
            contract: contract.clone(),
            retained_successor_of: prior.map(GraphValueId),
        });
    }
    // Inputs that need a read_write buffer (retained state) first: fewer buffers take them.
    let mut order: Vec<usize> = (0..entry.inputs.len()).collect();
    let replaced = |id: u32| {
        outputs
            .iter()
            .any(|o| o.retained_successor_of == Some(GraphValueId(id)))
    };
    order.sort_by_key(|&k| !replaced(entry.inputs[k].0));
    let mut inputs: Vec<Option<GraphInput>> = vec![None; entry.inputs.len()];
    for k in order {
        let v = entry.inputs[k];
        let (name, contract) = get(v.0)?;
        // Only state the node replaces needs a read_write buffer; a value merely read may
        // be bound to any readable one.
        let need = ValueContract {
            access: if replaced(v.0) {
                BufferAccess::ReadWrite
            } else {
                BufferAccess::ReadOnly
            },
            ..contract.clone()
        };
        let buffer = pick(&host, &mut used, name, &need, false)?;
        let access = host
            .iter()
            .find(|b| b.name() == buffer)
            .map(|b| b.access())
            .unwrap_or(BufferAccess::ReadOnly);
        // The port asks for what its buffer gives: vyre checks the buffer against it.
        let access = match access {
            BufferAccess::ReadWrite if replaced(v.0) => BufferAccess::ReadWrite,
            BufferAccess::Uniform => BufferAccess::Uniform,
            _ => BufferAccess::ReadOnly,
        };
        inputs[k] = Some(GraphInput {
            buffer,
            value: GraphValueId(v.0),
            contract: ValueContract {
                access,
                ..contract.clone()
            },
        });
    }
    let inputs: Vec<GraphInput> = inputs.into_iter().flatten().collect();
    for o in &mut outputs {
        if let Some(prior) = o.retained_successor_of {
            o.buffer = inputs
                .iter()
                .find(|i| i.value == prior)
                .map(|i| i.buffer.clone())
                .ok_or_else(|| PortError::PriorNotConsumed(o.name.clone()))?;
        }
    }
    Ok((inputs, outputs))
}

/// The value a retained output `out` of `entry`'s node replaces, if it is a successor.
fn retained_prior(
    artifact: &Artifact,
    entry: &vyre_megakernel::EntryAbiRecord,
    out: u32,
    values: &[Option<(String, ValueContract)>],
) -> Result<Option<u32>, PortError> {
    let Some(edge) = artifact
        .dependencies()
        .iter()
        .find(|d| d.kind == DependencyKind::Retained && d.value.map(|v| v.0) == Some(out))
    else {
        return Ok(None);
    };
    match edge.from {
        DependencyEndpoint::Value(v) => Ok(Some(v.0)),
        DependencyEndpoint::Node(n) => {
            // The retained input of this node produced by node `n`.
            let producer = |id: u32| {
                artifact
                    .abi()
                    .entries
                    .iter()
                    .find(|e| e.outputs.iter().any(|o| o.0 == id))
                    .map(|e| e.node)
            };
            for v in &entry.inputs {
                let (_, c) = lookup(values, v.0)?;
                if c.lifetime == ValueLifetime::Retained && producer(v.0) == Some(n) {
                    return Ok(Some(v.0));
                }
            }
            Err(PortError::NoReplacedInput(out))
        }
    }
}

/// The name and contract of value `id`.
fn lookup(
    values: &[Option<(String, ValueContract)>],
    id: u32,
) -> Result<&(String, ValueContract), PortError> {
    values
        .get(id as usize)
        .and_then(Option::as_ref)
        .ok_or(PortError::NoRecord(id))
}

/// The buffer for a port of value `name` (`output`: an output port): the one named like the
/// value, else the first unused compatible one by binding (vyre's output buffers first for an
/// output, read-only ones first for an input).
fn pick(
    host: &[&vyre_foundation::ir::BufferDecl],
    used: &mut HashSet<String>,
    name: &str,
    contract: &ValueContract,
    output: bool,
) -> Result<String, PortError> {
    // What vyre's graph check accepts for the port: a read_write or uniform value needs a
    // buffer of that access; any other input a readable buffer, an output a writable one.
    let fits = |b: &&&vyre_foundation::ir::BufferDecl| {
        !used.contains(b.name())
            && b.element() == contract.dtype
            && match (b.access(), &contract.access) {
                (_, BufferAccess::ReadWrite) => b.access() == BufferAccess::ReadWrite,
                (BufferAccess::ReadWrite, _) => true,
                (BufferAccess::WriteOnly, _) => output,
                (BufferAccess::ReadOnly | BufferAccess::Uniform, _) => !output,
                _ => false,
            }
    };
    let preferred = |b: &&&vyre_foundation::ir::BufferDecl| {
        if output {
            b.is_output() || b.access() == BufferAccess::WriteOnly
        } else {
            b.access() != BufferAccess::ReadWrite
        }
    };
    let chosen = host
        .iter()
        .filter(fits)
        .find(|b| b.name() == name)
        .or_else(|| host.iter().filter(fits).find(preferred))
        .or_else(|| host.iter().find(fits))
        .map(|b| b.name().to_string())
        .ok_or_else(|| PortError::NoBuffer {
            output,
            dtype: contract.dtype.clone(),
            value: name.to_string(),
        })?;
    used.insert(chosen.clone());
    Ok(chosen)
}
