//! A pipeline as a vyre `ProgramGraph` (wire form `VGR0`): the reverse of
//! [`crate::vyre::import::graph`]. Every step Program is exported as a single Program is
//! ([`super::export()`]); buffers become graph values, written in place where vyre requires it.

use std::panic::{catch_unwind, AssertUnwindSafe};

use vyre_foundation::ir::{
    BufferAccess, GraphInput, GraphOutput, GraphValueId, ProgramGraph, ShapeDim, ValueContract,
    ValueLifetime,
};

use crate::ir::{Access, Pipeline, Step};
use crate::util::HasFix;

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

/// The reverse of [`crate::vyre::import::graph::import_graph`]: `pipeline` as a
/// ProgramGraph, every step Program exported as a single Program is ([`super::export()`]).
/// Each write of a buffer makes a new value (the first keeps the buffer's name, later ones
/// are `<name>_v<k>`); the last value of a buffer that outlives the pipeline is an `Output`,
/// earlier ones and transient ones `Invocation` values. A buffer a step reads and writes in
/// place is `Retained`: its value and each in-place update are one retained chain, which
/// vyre requires to be updated in place only.
pub fn export_pipeline(pipeline: &Pipeline) -> Result<ProgramGraph, GraphExportError> {
    let writes = write_counts(pipeline)?;
    let mut e = Exporter {
        pipeline,
        current: vec![None; pipeline.buffers.len()],
        versions: vec![0; pipeline.buffers.len()],
        written: vec![0; pipeline.buffers.len()],
        writes,
        graph: ProgramGraph::new(),
    };
    e.add_externals()?;
    for (i, step) in pipeline.steps.iter().enumerate() {
        e.add_step(i, step)?;
    }
    Ok(e.graph)
}

fn fail(pipeline: &Pipeline, what: String, fix: &str) -> GraphExportError {
    GraphExportError {
        pipeline: pipeline.name.clone(),
        what,
        fix: fix.to_string(),
    }
}

/// Index of pipeline buffer `name`.
fn index(pipeline: &Pipeline, name: &str) -> Option<usize> {
    pipeline.buffers.iter().position(|b| b.name == name)
}

/// How each buffer is written, as counts of plain writes and of in-place updates; refuses
/// what a graph cannot express (a 2-D or 3-D grid, a buffer written both ways, a binding to
/// no buffer).
fn write_counts(pipeline: &Pipeline) -> Result<Vec<(usize, usize)>, GraphExportError> {
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
            pipeline,
            format!(
                "steps[{i}] launches a {}x{}x{} grid; a vyre graph dispatches each node by its element count, in one dimension",
                g[0], g[1], g[2]
            ),
            "give the step a one-dimensional grid (index rows with gid.x / width), or export its Program on its own",
        ));
    }
    let mut writes = vec![(0usize, 0usize); pipeline.buffers.len()];
    for (i, step) in pipeline.steps.iter().enumerate() {
        for (port, buffer) in &step.bind {
            let Some(decl) = step.program.buffers.iter().find(|b| b.name == *port) else {
                continue;
            };
            let Some(k) = index(pipeline, buffer) else {
                return Err(fail(
                    pipeline,
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
            pipeline,
            format!(
                "buffer `{}` is written both as a step's output and in place (read_write); vyre \
                 updates a value in place only along a retained chain",
                pipeline.buffers[k].name
            ),
            "give the in-place updates a buffer of their own, or write the output to a new buffer",
        ));
    }
    Ok(writes)
}

/// The graph as it is built, with each buffer's current value.
struct Exporter<'a> {
    pipeline: &'a Pipeline,
    /// Per buffer: plain writes and in-place updates ([`write_counts`]).
    writes: Vec<(usize, usize)>,
    /// The current value of each buffer and its lifetime.
    current: Vec<Option<(GraphValueId, ValueLifetime)>>,
    /// How many versions each buffer has had.
    versions: Vec<usize>,
    /// Plain writes of each buffer so far.
    written: Vec<usize>,
    graph: ProgramGraph,
}

impl Exporter<'_> {
    /// The contract of a value of buffer `k`.
    fn contract(
        &self,
        k: usize,
        lifetime: ValueLifetime,
        access: BufferAccess,
    ) -> Result<ValueContract, GraphExportError> {
        let b = &self.pipeline.buffers[k];
        let dtype = super::data_type(b.elem, &format!("buffers.{}", b.name))
            .map_err(|e| fail(self.pipeline, HasFix::message(&e), &e.fix))?;
        let Some(len) = b.contents.len else {
            return Err(fail(
                self.pipeline,
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
    }

    fn vyre_err(&self, e: vyre_foundation::ir::ProgramGraphError) -> GraphExportError {
        fail(
            self.pipeline,
            format!("vyre refuses the graph: {e}"),
            "vyre's graph cannot express this pipeline as written (its message says what); \
             bind each buffer to one port per step",
        )
    }

    /// Graph inputs first: vyre's wire form lists external values before every node's, and
    /// renumbers them so (an external added after a node would change the ids its ports name).
    fn add_externals(&mut self) -> Result<(), GraphExportError> {
        let pipeline = self.pipeline;
        for (k, b) in pipeline.buffers.iter().enumerate() {
            if !first_use_reads(pipeline, k, &|name| index(pipeline, name)) {
                continue;
            }
            let retained = self.writes[k].1 > 0;
            let (lifetime, access) = if retained {
                (ValueLifetime::Retained, BufferAccess::ReadWrite)
            } else {
                (ValueLifetime::Invocation, BufferAccess::ReadOnly)
            };
            let contract = self.contract(k, lifetime, access)?;
            let id = self
                .graph
                .add_external_value(&b.name, contract)
                .map_err(|e| self.vyre_err(e))?;
            self.versions[k] = 1;
            self.current[k] = Some((id, lifetime));
        }
        Ok(())
    }

    /// Step `i` as a node: its ports read the buffers' current values, and each buffer it
    /// writes gets a new value.
    fn add_step(&mut self, i: usize, step: &Step) -> Result<(), GraphExportError> {
        let pipeline = self.pipeline;
        let program = super::export(&step.program).map_err(|e| {
            fail(
                pipeline,
                format!("steps[{i}]: {}", HasFix::message(&e)),
                &e.fix,
            )
        })?;
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (port, buffer) in &step.bind {
            let (Some(decl), Some(k)) = (
                step.program.buffers.iter().find(|b| b.name == *port),
                index(pipeline, buffer),
            ) else {
                continue;
            };
            let retained = self.writes[k].1 > 0;
            if binding_reads(&step.program, port, decl.access) || retained {
                let Some((value, lifetime)) = self.current[k] else {
                    return Err(fail(
                        pipeline,
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
                    contract: self.contract(k, lifetime, access)?,
                });
            }
            if matches!(decl.access, Access::Write | Access::ReadWrite) {
                let (lifetime, output) = self.output(k, port, retained)?;
                outputs.push((k, lifetime, output));
            }
        }
        let node_name = format!("s{i}_{}", step.program.name);
        let (_, ids) = self
            .graph
            .add_node(
                node_name,
                program,
                inputs,
                outputs.iter().map(|(_, _, o)| o.clone()).collect(),
            )
            .map_err(|e| self.vyre_err(e))?;
        for ((k, lifetime, _), id) in outputs.into_iter().zip(ids) {
            self.versions[k] += 1;
            self.written[k] += 1;
            self.current[k] = Some((id, lifetime));
        }
        Ok(())
    }

    /// The new value a write of buffer `k` through `port` makes: a retained update, the
    /// buffer's output (its last write, when it outlives the pipeline) or an intermediate.
    fn output(
        &self,
        k: usize,
        port: &str,
        retained: bool,
    ) -> Result<(ValueLifetime, GraphOutput), GraphExportError> {
        let buffer = &self.pipeline.buffers[k];
        let last = self.written[k] + 1 == self.writes[k].0;
        let (lifetime, access, successor_of) = if retained {
            (
                ValueLifetime::Retained,
                BufferAccess::ReadWrite,
                self.current[k].map(|(v, _)| v),
            )
        } else if last && !buffer.transient {
            (ValueLifetime::Output, BufferAccess::WriteOnly, None)
        } else {
            (ValueLifetime::Invocation, BufferAccess::WriteOnly, None)
        };
        let name = if self.versions[k] == 0 {
            buffer.name.clone()
        } else {
            format!("{}_v{}", buffer.name, self.versions[k] + 1)
        };
        let output = GraphOutput {
            buffer: port.to_string(),
            name,
            contract: self.contract(k, lifetime, access)?,
            retained_successor_of: successor_of,
        };
        Ok((lifetime, output))
    }
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
fn binding_reads(program: &crate::ir::Program, port: &str, access: Access) -> bool {
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
