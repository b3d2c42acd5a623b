//! vyre's op catalogue as test cases: every operation of vyre-libs
//! (`operation_catalog::fixture_entries()`, default features) and every primitive of
//! vyre-primitives (all "lego" features) that registers fixture inputs and expected outputs,
//! converted to our Programs and bound the way vyre's reference interpreter binds them
//! (see `docs/vyre.md`, "The op catalogue"). Running and comparing is the harness's part
//! (`harness::vyre_catalog`): this module only prepares.
//!
//! Each case is bound as `vyre_reference::reference_eval` binds it ([`super::binding`], the
//! rule vyrescope's vyre backends use too); the expected outputs are vyre's outputs in order.

use std::ops::Range;
use std::panic::{catch_unwind, AssertUnwindSafe};

use vyre_foundation::ir::Program as VyreProgram;
use vyre_foundation::operation::{OperationRegistry, OperationTier, SemanticOperation};

use super::binding;
use crate::finding::Severity;
use crate::inputs::HostBuffer;
use crate::ir::Program;
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
    /// vyre's own Program and fixture as vyre registers them (what a vyre backend is
    /// given), when vyre could build them.
    pub fixture: Option<Fixture>,
}

/// vyre's Program for an operation and its fixture, as built by vyre.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The Program (`SemanticOperation::program`).
    pub program: VyreProgram,
    /// Per case, the input byte vectors (`test_inputs`).
    pub inputs: Vec<Vec<Vec<u8>>>,
    /// Per case, the expected outputs (`expected_output`).
    pub expected: Vec<Vec<Vec<u8>>>,
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

/// vyre's operation registry panicked while it was built (it does on a duplicate id); the
/// panic's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("vyre's operation registry panicked: {0}")]
pub struct RegistryPanic(pub String);

/// Every catalogue operation with fixtures: vyre-libs' `fixture_entries()` then
/// vyre-primitives' registered primitives, each sorted by id. `Err` when vyre's registry
/// cannot be built (it panics on a duplicate id).
pub fn operations() -> Result<Vec<(Source, SemanticOperation)>, RegistryPanic> {
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
    .map_err(|p| RegistryPanic(panic_text(&p)))
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
    let fixture = fixture(op);
    CatalogOp {
        id: op.id.to_string(),
        source,
        f32_ulp: op.tolerance.f32_ulp,
        outcome: fixture
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|f| prepare_op(op, f)),
        fixture: fixture.ok(),
    }
}

/// vyre's Program and fixture for `op` (a panic in vyre's builder is the refusal `VYC01`).
fn fixture(op: &SemanticOperation) -> Result<Fixture, Refusal> {
    let built = catch_unwind(AssertUnwindSafe(|| {
        let program = op.program()?;
        let inputs = (op.test_inputs?)();
        let expected = (op.expected_output?)();
        Some(Fixture {
            program,
            inputs,
            expected,
        })
    }));
    match built {
        Ok(Some(f)) => Ok(f),
        Ok(None) => Err(refusal(
            "VYC01",
            "vyre registers no Program or no fixtures for it".into(),
        )),
        Err(p) => Err(refusal(
            "VYC01",
            format!("vyre's builder or fixture panicked: {}", panic_text(&p)),
        )),
    }
}

fn prepare_op(op: &SemanticOperation, f: &Fixture) -> Result<PreparedOp, Refusal> {
    let (vp, inputs, expected) = (&f.program, &f.inputs, &f.expected);
    let name = super::import::identifier(op.id.rsplit("::").next().unwrap_or(op.id));
    let (vp, mut program) = import_for_reference(vp, &name)?;
    let cases: Vec<Result<CatalogCase, Refusal>> = if expected.len() == inputs.len() {
        inputs
            .iter()
            .zip(expected)
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
    let grid = grids
        .first()
        .filter(|first| grids.iter().all(|g| g == *first))
        .copied();
    validate_for_grid(&mut program, grid)?;
    Ok(PreparedOp { program, cases })
}

/// What vyre's reference interpreter runs for `vp` (composite calls inlined, single-rank
/// collectives lowered; a panic in vyre is the refusal `VYC01`), and its import as a Program
/// named `name`; an import error refuses it with the import's codes.
pub(crate) fn import_for_reference(
    vp: &VyreProgram,
    name: &str,
) -> Result<(VyreProgram, Program), Refusal> {
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
    let errors: Vec<&crate::finding::Diagnostic> = imported
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        return Err(refused_by(&errors));
    }
    Ok((vp, imported.program))
}

/// Validates `program` for a launch of `grid` workgroups (set as its `run.grid`, which the
/// validator's one-workgroup rule V064 reads; `None` leaves it as imported); validator
/// errors refuse it with their codes.
pub(crate) fn validate_for_grid(
    program: &mut Program,
    grid: Option<[u32; 3]>,
) -> Result<(), Refusal> {
    if let (Some(g), Some(run)) = (grid, program.run.as_mut()) {
        run.grid = Some(g);
    }
    let validation = crate::validate::validate(program);
    let errors: Vec<&crate::finding::Diagnostic> = validation
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        return Err(refused_by(&errors));
    }
    Ok(())
}

/// A refusal carrying every error's code and the first error's message.
fn refused_by(errors: &[&crate::finding::Diagnostic]) -> Refusal {
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

/// One case bound to our Program's buffers (same order as vyre's: the import keeps it), by
/// the rule of [`super::binding`].
fn bind(
    vp: &VyreProgram,
    ours: &Program,
    inputs: &[Vec<u8>],
    expected: &[Vec<u8>],
) -> Result<CatalogCase, Refusal> {
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let bound = binding::bind(vp, ours, &inputs, binding::LaunchChoice::default())
        .map_err(|m| refusal("VYC02", format!("vyre's fixture: {m}")))?;
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
        .map(|(slot, bytes)| Expected {
            buffer: slot.buffer,
            range: slot.range,
            bytes: bytes.clone(),
        })
        .collect();
    Ok(CatalogCase {
        shape: bound.shape,
        buffers: bound.buffers,
        expected,
    })
}
