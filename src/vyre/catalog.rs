//! vyre's op catalogue as test cases: every operation of vyre-libs
//! (`operation_catalog::fixture_entries()`, default features) and every primitive of
//! vyre-primitives (all "lego" features) that registers fixture inputs and expected outputs,
//! converted to our Programs and bound the way vyre's reference interpreter binds them
//! (see `docs/vyre.md`, "The op catalogue"). Running and comparing is the harness's part
//! (`harness::vyre_catalog`): this module only prepares.
//!
//! Binding, as `vyre_reference::reference_eval` does it:
//! - a case holds one byte vector per *input*: every non-workgroup buffer that is not a
//!   backend-allocated output (`is_output`, `WriteOnly`, or live-out `ReadWrite`), in
//!   declaration order; a case with one vector per non-workgroup buffer (vyre's "legacy"
//!   form) also gives the outputs, whose contents are then ignored;
//! - backend-allocated outputs are zero-filled with their static size (`count` elements);
//! - the expected outputs are the backend-allocated outputs and the `ReadWrite` buffers in
//!   declaration order, each cut to its `output_byte_range` when it has one;
//! - the dispatch covers the largest output (or, with workgroup memory, atomics or no
//!   output, the largest buffer) in elements, `ceil(elements / workgroup threads)`
//!   workgroups spread evenly over the workgroup's axes larger than 1.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use vyre_foundation::ir::{BufferAccess, Program as VyreProgram};
use vyre_foundation::operation::{OperationRegistry, OperationTier, SemanticOperation};

use crate::diagnostic::Severity;
use crate::inputs::HostBuffer;
use crate::ir::{Access, Program};
use crate::shape::LaunchShape;

/// Which vyre crate an operation comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `vyre-libs` (library compositions).
    VyreLibs,
    /// `vyre-primitives` (registered primitives).
    VyrePrimitives,
}

impl Source {
    /// The crate's name.
    pub fn name(self) -> &'static str {
        match self {
            Source::VyreLibs => "vyre-libs",
            Source::VyrePrimitives => "vyre-primitives",
        }
    }
}

/// One catalogue operation, prepared.
#[derive(Debug, Clone)]
pub struct CatalogOp {
    /// vyre's stable operation id (`vyre-libs::nn::relu`).
    pub id: String,
    /// The crate it comes from.
    pub source: Source,
    /// vyre's f32 tolerance in ULPs (0: byte identity).
    pub f32_ulp: u32,
    /// The converted Program and its cases, or why there is none.
    pub outcome: Result<PreparedOp, Refusal>,
}

/// Why an operation is not run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    /// Stable codes: the import's (`VY...`), the validator's (`V...`), or `VYC01` (vyre's own
    /// builder or fixture panicked), `VYC02` (vyre's fixture cannot be bound).
    pub codes: Vec<String>,
    /// The first reason, in one line.
    pub message: String,
}

/// A converted operation with its fixture cases.
#[derive(Debug, Clone)]
pub struct PreparedOp {
    /// Our Program.
    pub program: Program,
    /// One entry per fixture case: the bound buffers, or why vyre's reference would refuse
    /// the case too.
    pub cases: Vec<Result<CatalogCase, Refusal>>,
}

/// One fixture case, bound.
#[derive(Debug, Clone)]
pub struct CatalogCase {
    /// The launch vyre's reference infers.
    pub shape: LaunchShape,
    /// Our Program's host buffers with the case's contents (outputs zeroed).
    pub buffers: Vec<HostBuffer>,
    /// vyre's expected output per reference output, in order.
    pub expected: Vec<Expected>,
}

/// One expected output buffer.
#[derive(Debug, Clone)]
pub struct Expected {
    /// Index into [`CatalogCase::buffers`].
    pub buffer: usize,
    /// The bytes of the buffer vyre returns (`output_byte_range`), `None` = all.
    pub range: Option<Range<usize>>,
    /// vyre's expected bytes.
    pub bytes: Vec<u8>,
}

/// Every catalogue operation with fixtures: vyre-libs' `fixture_entries()` then
/// vyre-primitives' registered primitives, each sorted by id. `Err` when vyre's registry
/// cannot be built (it panics on a duplicate id).
pub fn operations() -> Result<Vec<(Source, SemanticOperation)>, String> {
    // Referencing both crates keeps their registrations linked into the binary.
    let _ = vyre_primitives::wire::pack_u32_slice(&[]);
    catch_unwind(|| {
        let mut out: Vec<(Source, SemanticOperation)> =
            vyre_libs::operation_catalog::fixture_entries()
                .map(|e| (Source::VyreLibs, e))
                .collect();
        let mut prims: Vec<(Source, SemanticOperation)> = OperationRegistry::global()
            .iter()
            .filter(|e| {
                e.tier == OperationTier::Primitive
                    && e.test_inputs.is_some()
                    && e.expected_output.is_some()
            })
            .map(|e| (Source::VyrePrimitives, e))
            .collect();
        out.sort_by_key(|(_, e)| e.id);
        prims.sort_by_key(|(_, e)| e.id);
        out.extend(prims);
        out
    })
    .map_err(|p| format!("vyre's operation registry panicked: {}", panic_text(&p)))
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

fn refusal(code: &str, message: String) -> Refusal {
    Refusal {
        codes: vec![code.to_string()],
        message,
    }
}

/// Builds `op`'s Program, converts and validates it, and binds its fixture cases.
pub fn prepare(source: Source, op: &SemanticOperation) -> CatalogOp {
    CatalogOp {
        id: op.id.to_string(),
        source,
        f32_ulp: op.tolerance.f32_ulp,
        outcome: prepare_op(op),
    }
}

fn prepare_op(op: &SemanticOperation) -> Result<PreparedOp, Refusal> {
    let built = catch_unwind(AssertUnwindSafe(|| {
        let vp = op.program()?;
        let inputs = (op.test_inputs?)();
        let expected = (op.expected_output?)();
        Some((vp, inputs, expected))
    }));
    let (vp, inputs, expected) = match built {
        Ok(Some(x)) => x,
        Ok(None) => {
            return Err(refusal(
                "VYC01",
                "vyre registers no Program or no fixtures for it".into(),
            ))
        }
        Err(p) => {
            return Err(refusal(
                "VYC01",
                format!("vyre's builder or fixture panicked: {}", panic_text(&p)),
            ))
        }
    };
    let name = super::import::identifier(op.id.rsplit("::").next().unwrap_or(op.id));
    let (vp, mut program) = convert(&vp, &name)?;
    let cases: Vec<Result<CatalogCase, Refusal>> = if expected.len() == inputs.len() {
        inputs
            .iter()
            .zip(&expected)
            .map(|(i, e)| bind(&vp, &program, i, e))
            .collect()
    } else {
        vec![Err(refusal(
            "VYC02",
            format!(
                "vyre's fixture has {} input cases but {} expected outputs",
                inputs.len(),
                expected.len()
            ),
        ))]
    };
    // The Program's dispatch is the one vyre infers for its cases: the validator's
    // one-workgroup rule (V064) depends on it.
    let grids: Vec<[u32; 3]> = cases
        .iter()
        .filter_map(|c| c.as_ref().ok().map(|c| c.shape.grid))
        .collect();
    let grid = match grids.first() {
        Some(first) if grids.iter().all(|g| g == first) => Some(*first),
        _ => None,
    };
    validate_for(&mut program, grid)?;
    Ok(PreparedOp { program, cases })
}

/// `vp` made what vyre's reference interpreter runs (collectives lowered, composite calls
/// inlined; a panic in vyre is the refusal `VYC01`) and converted to our Program named
/// `name`; an import error refuses it with its codes. Returns both: binding needs vyre's
/// buffer declarations.
pub fn convert(vp: &VyreProgram, name: &str) -> Result<(VyreProgram, Program), Refusal> {
    let vp = match catch_unwind(AssertUnwindSafe(|| for_reference(vp))) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return Err(e),
        Err(p) => {
            return Err(refusal(
                "VYC01",
                format!("vyre's call inlining panicked: {}", panic_text(&p)),
            ))
        }
    };
    let imported = super::import_program(&vp, name);
    let errors: Vec<&crate::diagnostic::Diagnostic> = imported
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        return Err(refused_by(&errors));
    }
    Ok((vp, imported.program))
}

/// Validates a converted Program for a dispatch of `grid` workgroups (when known: the
/// validator's one-workgroup rule, V064, depends on it); a validator error refuses it.
pub fn validate_for(program: &mut Program, grid: Option<[u32; 3]>) -> Result<(), Refusal> {
    if let (Some(g), Some(run)) = (grid, program.run.as_mut()) {
        run.grid = Some(g);
    }
    let validation = crate::validate::validate(program);
    let errors: Vec<&crate::diagnostic::Diagnostic> = validation
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        return Err(refused_by(&errors));
    }
    Ok(())
}

/// A refusal carrying every error's code and the first error's message.
fn refused_by(errors: &[&crate::diagnostic::Diagnostic]) -> Refusal {
    let mut codes: Vec<String> = errors.iter().map(|d| d.code.to_string()).collect();
    codes.sort();
    codes.dedup();
    let first = errors[0];
    Refusal {
        codes,
        message: match &first.node {
            Some(n) => format!("{n}: {}", first.message),
            None => first.message.clone(),
        },
    }
}

/// The Program vyre's reference interpreter runs for `vp`: single-rank collectives lowered
/// and composite calls inlined (`vyre_reference`'s `program_for_interpreter`).
fn for_reference(vp: &VyreProgram) -> Result<VyreProgram, Refusal> {
    let lowered = vyre_foundation::transform::collectives::lower_single_rank_collectives(vp)
        .map_err(|e| refusal("VYC01", format!("vyre's collective lowering failed: {e}")))?;
    let p = lowered.as_ref().unwrap_or(vp);
    vyre_foundation::ir::inline_composite_calls(p)
        .map_err(|e| refusal("VYC01", format!("vyre's call inlining failed: {e}")))
}

/// vyre's `is_reference_input`: the caller supplies this buffer.
fn is_input(d: &vyre_foundation::ir::BufferDecl) -> bool {
    d.access() != BufferAccess::Workgroup && !d.is_backend_allocated_output()
}

/// vyre's `is_reference_output`: the reference returns this buffer.
fn is_output(d: &vyre_foundation::ir::BufferDecl) -> bool {
    d.is_backend_allocated_output() || d.access() == BufferAccess::ReadWrite
}

/// One case bound to our Program's buffers (same order as vyre's: the import keeps it).
fn bind(
    vp: &VyreProgram,
    ours: &Program,
    inputs: &[Vec<u8>],
    expected: &[Vec<u8>],
) -> Result<CatalogCase, Refusal> {
    let bound = bind_inputs(vp, ours, inputs)?;
    if bound.outputs.len() != expected.len() {
        return Err(refusal(
            "VYC02",
            format!(
                "vyre's fixture expects {} outputs, the Program returns {}",
                expected.len(),
                bound.outputs.len()
            ),
        ));
    }
    let expected = bound
        .outputs
        .into_iter()
        .zip(expected)
        .map(|((buffer, range), bytes)| Expected {
            buffer,
            range,
            bytes: bytes.clone(),
        })
        .collect();
    Ok(CatalogCase {
        shape: bound.shape,
        buffers: bound.buffers,
        expected,
    })
}

/// A dispatch's inputs bound to our Program's buffers, the way vyre's reference binds them.
#[derive(Debug, Clone)]
pub struct Bound {
    /// The launch vyre's reference infers from the buffers.
    pub shape: LaunchShape,
    /// Our Program's host buffers (declaration order) with the inputs; outputs zeroed.
    pub buffers: Vec<HostBuffer>,
    /// vyre's outputs in order: index into `buffers` and the byte range vyre returns
    /// (`output_byte_range`; `None` = the whole buffer).
    pub outputs: Vec<(usize, Option<Range<usize>>)>,
}

/// Binds vyre's inputs of one dispatch (one byte vector per input buffer in declaration
/// order, or one per host buffer, see the module docs) to our converted Program `ours`; a
/// dispatch vyre's reference would refuse is the refusal `VYC02`.
pub fn bind_inputs(vp: &VyreProgram, ours: &Program, inputs: &[Vec<u8>]) -> Result<Bound, Refusal> {
    let bad = |m: String| refusal("VYC02", m);
    let decls = vp.buffers();
    if decls.len() != ours.buffers.len() {
        return Err(bad(format!(
            "the converted Program has {} buffers, vyre's {}",
            ours.buffers.len(),
            decls.len()
        )));
    }
    let host = decls
        .iter()
        .filter(|d| d.access() != BufferAccess::Workgroup)
        .count();
    let logical = decls.iter().filter(|d| is_input(d)).count();
    let legacy = inputs.len() == host && inputs.len() != logical;
    let mut next = 0usize;
    let mut buffers = Vec::new();
    let mut out_expected = Vec::new();
    let (mut max_out, mut max_in) = (0u64, 1u64);
    let mut graph_nodes = 0u64;
    let mut has_outputs = false;
    for (d, b) in decls.iter().zip(&ours.buffers) {
        if d.access() == BufferAccess::Workgroup || b.access == Access::Workgroup {
            continue;
        }
        let size = b.elem.size_bytes();
        let declared = d.count() as usize * size;
        if d.binding() == 0 && d.name() == "pg_nodes" {
            graph_nodes = u64::from(d.count());
        }
        let mut data = if is_input(d) {
            let Some(v) = inputs.get(next) else {
                return Err(bad(format!(
                    "vyre's fixture gives {} inputs; buffer `{}` has none",
                    inputs.len(),
                    d.name()
                )));
            };
            next += 1;
            if v.len() < declared {
                return Err(bad(format!(
                    "vyre's fixture gives buffer `{}` {} bytes, less than its {declared}",
                    d.name(),
                    v.len()
                )));
            }
            v.clone()
        } else {
            if legacy {
                next += 1;
            }
            if d.count() == 0 && d.output_byte_range().is_none() {
                return Err(bad(format!(
                    "output `{}` has no static size (vyre's reference refuses it too)",
                    d.name()
                )));
            }
            vec![0u8; declared]
        };
        // Whole elements only (a trailing partial element is not addressable).
        data.resize(data.len().div_ceil(size) * size, 0);
        let elements = (data.len() / size) as u64;
        if is_output(d) {
            has_outputs = true;
            max_out = max_out.max(elements);
            out_expected.push((buffers.len(), d.output_byte_range()));
        } else {
            max_in = max_in.max(elements);
        }
        buffers.push(HostBuffer {
            name: b.name.clone(),
            elem: b.elem,
            access: b.access,
            binding: b.binding.unwrap_or(0),
            data,
        });
    }
    if next != inputs.len() {
        return Err(bad(format!(
            "vyre's fixture gives {} inputs, the Program takes {next}",
            inputs.len()
        )));
    }
    let wg = vp.workgroup_size().map(|d| d.max(1));
    let threads = wg.iter().map(|&d| u64::from(d)).product::<u64>().max(1);
    let full_span = decls.iter().any(|d| d.access() == BufferAccess::Workgroup)
        || vp.stats().atomic_op_count > 0;
    let elements = max_out
        .max(graph_nodes)
        .max(1)
        .max(if !has_outputs || full_span { max_in } else { 1 });
    let groups = elements.div_ceil(threads).max(1);
    let active: Vec<usize> = (0..3).filter(|&a| wg[a] > 1).collect();
    let mut grid = [1u32; 3];
    if active.is_empty() {
        grid[0] = u32::try_from(groups).unwrap_or(u32::MAX);
    } else {
        let base = (groups as f64).powf(1.0 / active.len() as f64).ceil() as u32;
        for a in active {
            grid[a] = base.max(1);
        }
    }
    Ok(Bound {
        shape: LaunchShape {
            workgroup_size: wg,
            grid,
        },
        buffers,
        outputs: out_expected,
    })
}
