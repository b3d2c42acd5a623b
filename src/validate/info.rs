//! What the validator proved about a Program, as a value later stages take instead of
//! validating again.
//!
//! [`super::prove`] (or [`super::analyze`]) is the only way to get a [`ProgramInfo`]: its
//! fields are private and its constructor is visible to the validator alone, so holding one
//! is the proof that the validator ran on the Program and found no error. The emitter, the
//! fuser, the interpreter's checked entry and the launch lints take it as their argument.
//!
//! The info owns the Program it describes (as written, and with every literal typed). A stage
//! reads the Program through the info, so it cannot be handed the facts of one Program and
//! the statements of another: there is no second argument that could disagree. Owning costs
//! one copy of the Program per validation, which is small beside the validation itself (a
//! divergence analysis per barrier scope); comparing a recorded fingerprint at every stage
//! would have cost a walk of the Program per stage and still left the mismatch a run-time
//! error instead of an impossibility.

use std::collections::HashMap;

use crate::finding::{Diagnostic, Severity};
use crate::ir::{BarrierScope, NodeId, Program, ScalarType, StmtKind};

/// The facts the validator proved about one valid Program (see the module docs).
#[derive(Debug, Clone)]
pub struct ProgramInfo {
    /// The Program as validated (as written: bare literals stay bare).
    program: Program,
    /// The same Program with every bare literal given the type its context chose (what the
    /// validator type-checked, and what the emitter and interpreter execute).
    typed: Program,
    /// The type of the variable each `let` introduces, by the `let`'s node id.
    let_types: HashMap<NodeId, ScalarType>,
    /// Every barrier, in program order, with its scope.
    barriers: Vec<(NodeId, BarrierScope)>,
    /// True when some barrier is uniform only because the `run` section dispatches one
    /// workgroup (`V064`): on a larger grid its threads could disagree.
    needs_one_workgroup: bool,
    /// The validator's warnings and notes (there are no errors, by construction).
    findings: Vec<Diagnostic>,
}

impl ProgramInfo {
    /// Built by the validator only, once every pass accepted `program`.
    pub(super) fn new(
        program: &Program,
        typed: Program,
        let_types: HashMap<NodeId, ScalarType>,
        findings: Vec<Diagnostic>,
    ) -> ProgramInfo {
        let mut barriers = Vec::new();
        program.walk_stmts(&mut |s| {
            if let StmtKind::Barrier(scope) = &s.kind {
                barriers.push((s.id.clone(), *scope));
            }
        });
        debug_assert!(findings.iter().all(|d| d.severity != Severity::Error));
        ProgramInfo {
            program: program.clone(),
            typed,
            let_types,
            barriers,
            needs_one_workgroup: findings.iter().any(|d| d.code == "V064"),
            findings,
        }
    }

    /// The Program as validated.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The Program with every literal typed: what runs.
    pub fn typed(&self) -> &Program {
        &self.typed
    }

    /// The type of the variable each `let` introduces, by the `let`'s node id.
    pub fn let_types(&self) -> &HashMap<NodeId, ScalarType> {
        &self.let_types
    }

    /// Every barrier in program order, with its scope.
    pub fn barriers(&self) -> &[(NodeId, BarrierScope)] {
        &self.barriers
    }

    /// True when the Program has a grid barrier (it needs a cooperative launch).
    pub fn has_grid_barrier(&self) -> bool {
        self.barriers.iter().any(|(_, s)| *s == BarrierScope::Grid)
    }

    /// True when some barrier is uniform only on a grid of one workgroup (`V064`).
    pub fn needs_one_workgroup(&self) -> bool {
        self.needs_one_workgroup
    }

    /// The validator's warnings and notes.
    pub fn findings(&self) -> &[Diagnostic] {
        &self.findings
    }
}

/// Two infos are equal when they describe equal Programs: the facts are a function of the
/// Program (the validator is deterministic), so comparing them again would add nothing.
impl PartialEq for ProgramInfo {
    fn eq(&self, other: &Self) -> bool {
        self.program == other.program
    }
}

/// A Program the validator refused: its name and every finding (at least one error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Program `{program}` is invalid: {}", first_error(.diagnostics))]
pub struct InvalidProgram {
    /// The Program's name.
    pub program: String,
    /// Every finding of the validator, errors first found first.
    pub diagnostics: Vec<Diagnostic>,
}

impl InvalidProgram {
    /// The first error (there is always one).
    pub fn first_error(&self) -> Option<&Diagnostic> {
        self.diagnostics
            .iter()
            .find(|d| d.severity == Severity::Error)
    }
}

fn first_error(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .find(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .unwrap_or_else(|| "no error recorded".into())
}

/// One validator run: every finding, and the proved facts when none is an error.
#[derive(Debug, Clone)]
pub struct Validation {
    /// Every finding in program order.
    pub diagnostics: Vec<Diagnostic>,
    /// The facts, when the Program is valid.
    pub info: Option<ProgramInfo>,
}

impl Validation {
    /// The facts, or the findings as an [`InvalidProgram`] naming `program`.
    pub fn into_result(self, program: &str) -> Result<ProgramInfo, InvalidProgram> {
        self.info.ok_or_else(|| InvalidProgram {
            program: program.to_string(),
            diagnostics: self.diagnostics,
        })
    }
}

/// How often the validator ran on each Program in this thread (tests count re-validation).
#[cfg(test)]
pub(crate) mod runs {
    use std::cell::RefCell;
    use std::collections::HashMap;

    thread_local! {
        static RUNS: RefCell<HashMap<u64, usize>> = RefCell::new(HashMap::new());
    }

    /// Counts one run on the Program with `fingerprint`.
    pub(crate) fn record(fingerprint: u64) {
        RUNS.with(|r| *r.borrow_mut().entry(fingerprint).or_default() += 1);
    }

    /// Forgets every count.
    pub(crate) fn reset() {
        RUNS.with(|r| r.borrow_mut().clear());
    }

    /// Runs per Program fingerprint since the last [`reset`].
    pub(crate) fn counts() -> HashMap<u64, usize> {
        RUNS.with(|r| r.borrow().clone())
    }
}
