//! Validator: every static check of a Program; never fails, returns all diagnostics.
//!
//! [`validate`] returns every finding at once, in program order (declarations first, then
//! statements in the order they appear in the file). It never panics and never recurses
//! deeper than the nesting limits: a Program beyond [`MAX_STMT_DEPTH`], [`MAX_EXPR_DEPTH`] or
//! [`MAX_NODES`] only gets its declaration checks and the limit errors, because the deeper
//! checks (and the interpreter and emitter after them) walk the tree recursively.
//!
//! The passes, one submodule each:
//! - [`limits`]: nesting depth and node count (iterative, runs first);
//! - [`buffers`]: kernel name, buffer table, shared memory, workgroup size, `run.inputs`;
//! - [`types`]: scoping, literal typing (through [`crate::ir::typing::elaborate`], so the
//!   validator accepts exactly what the interpreter and emitter will see), operand rules of
//!   `docs/semantics.md`, buffer access rules, atomics;
//! - [`divergence`]: barrier uniformity (a real divergence analysis, once per barrier scope)
//!   and subgroup operations under non-uniform control flow; the shape of sub-task barriers.
//!
//! Each [`Diagnostic`] has a stable code, the node id of the statement (its JSON path; for
//! declarations the JSON path of the declaration, e.g. `buffers[2]`; `None` = the whole
//! Program), a message (problems inside an expression start with "in `value.add[1]`:",
//! the operand's path below the statement) and a fix.
//!
//! | code | severity | rule |
//! |---|---|---|
//! | V000 | error | the file could not be parsed (reported by `vyrescope check`) |
//! | V001 | error | a kernel, buffer or variable name is not an identifier |
//! | V002 | error | two buffers have the same name |
//! | V003 | error | a host buffer has no `binding` |
//! | V004 | error | two host buffers share a `binding` |
//! | V005 | error | a workgroup buffer has no `count` or `count` 0 |
//! | V006 | error | a workgroup buffer has a `binding` |
//! | V007 | error | a host buffer has a `count` (its length is chosen at run time) |
//! | V008 | error | workgroup buffers need more than 227 KiB of shared memory |
//! | V009 | error | `workgroup_size` beyond CUDA's block limits (1024 threads, z <= 64) |
//! | V010 | error | `run.inputs` names no host buffer |
//! | V011 | error | the `run` section cannot run: lengths, footprint, `data` values, `random` ranges, `file` sizes (reported by `vyrescope check` through `inputs::check_run`, the checks `run` makes) |
//! | V020 | error | undefined variable |
//! | V021 | error | `let` or loop counter shadows a visible variable |
//! | V022 | error | `assign` to a loop counter |
//! | V023 | error | `assign` with a value of another type |
//! | V030 | error | unknown buffer |
//! | V031 | error | `store` to a buffer that is not writable |
//! | V032 | error | `store` value type differs from the buffer's value type |
//! | V033 | warning | `load` from a `write` buffer |
//! | V040 | error | operands of one operation have different types |
//! | V041 | error | operator does not take operands of this type |
//! | V042 | error | implicit conversion of a bare literal (e.g. `1` as `f32`, `1.5` as `u32`) |
//! | V043 | error | literal out of range of its type |
//! | V044 | error | operand of the wrong type (index, condition, bound, shift amount, lane...) |
//! | V045 | error | `bitcast` between types of different widths (or of `bool`) |
//! | V050 | error | atomic on a buffer that is not `read_write` or `workgroup` |
//! | V051 | error | atomic on an element type it does not support |
//! | V052 | error | `expected` missing on `cas` or given on another atomic op |
//! | V060 | error | barrier under control flow that differs between threads of its scope |
//! | V061 | error | barrier after a `return` that only some threads of its scope take |
//! | V062 | warning | subgroup operation under non-uniform control flow |
//! | V063 | info | grid barrier: needs a cooperative launch |
//! | V064 | info | barriers that are uniform only because `run` dispatches one workgroup (V060/V061 relaxed) |
//! | V070 | error | statements nested deeper than [`MAX_STMT_DEPTH`] |
//! | V071 | error | expression nested deeper than [`MAX_EXPR_DEPTH`] |
//! | V072 | error | more than [`MAX_NODES`] statements and expressions |
//! | V073 | error | `barrier(subtask)` of 0 threads, not a multiple of 32, not dividing a one-dimensional workgroup, or more than 15 sub-tasks |
//! | V074 | error | sub-task barriers of two sizes with no workgroup barrier between them on some path (one hardware named barrier would wait for two thread counts) |

use std::collections::{HashMap, HashSet};

use crate::finding::{Diagnostic, Severity};
use crate::ir::{NodeId, Program};

pub mod buffers;
pub mod divergence;
pub mod info;
pub mod limits;
pub mod load;
pub mod named_barriers;
pub mod pipeline;
pub mod scope;
pub mod types;

pub use info::{InvalidProgram, ProgramInfo, Validation};
pub use limits::{MAX_EXPR_DEPTH, MAX_NODES, MAX_STMT_DEPTH};
pub use load::{load, Loaded};

/// Shared memory the workgroup buffers of one workgroup may use, bytes: CUDA's static
/// `.shared` limit (48 KiB), which every target accepts without an opt-in. The emitter declares
/// workgroup buffers as static `.shared` arrays, and ptxas rejects more than this; larger
/// tiles would need dynamic shared memory with the per-kernel opt-in attribute, which the
/// runtime does not set, so `check` rejects them instead of letting ptxas fail.
pub const MAX_SHARED_BYTES: u64 = 48 * 1024;

/// Checks `program`; an empty result (or warnings only) means it is valid. For the facts
/// the checks proved, use [`analyze`] or [`prove`].
pub fn validate(program: &Program) -> Vec<Diagnostic> {
    analyze(program).diagnostics
}

/// Checks `program` and, when no finding is an error, returns what the checks proved (a
/// [`ProgramInfo`], the argument of every later stage) with the findings.
pub fn analyze(program: &Program) -> Validation {
    #[cfg(test)]
    info::runs::record(program.fingerprint());
    let mut sink = Sink::default();
    buffers::check(program, &mut sink);
    let mut typed = None;
    if limits::check(program, &mut sink) {
        let elaborated = crate::ir::elaborate(program);
        let let_types = types::check(program, &elaborated, &mut sink);
        divergence::check(program, &mut sink);
        divergence::check_subtask_barriers(program, &mut sink);
        named_barriers::check(program, &mut sink);
        typed = Some((elaborated, let_types));
    }
    let diagnostics = sink.finish(program);
    let info = match typed {
        Some((elaborated, let_types)) if is_valid(&diagnostics) => Some(ProgramInfo::new(
            program,
            elaborated,
            let_types,
            diagnostics.clone(),
        )),
        _ => None,
    };
    Validation { diagnostics, info }
}

/// The facts the validator proves about `program`, or every finding when one is an error.
pub fn prove(program: &Program) -> Result<ProgramInfo, InvalidProgram> {
    analyze(program).into_result(&program.name)
}

/// True when `diagnostics` hold no error (warnings and notes are fine).
pub fn is_valid(diagnostics: &[Diagnostic]) -> bool {
    !diagnostics.iter().any(|d| d.severity == Severity::Error)
}

/// Collects diagnostics from the passes.
#[derive(Debug, Default)]
pub struct Sink {
    diags: Vec<Diagnostic>,
}

impl Sink {
    /// Records one diagnostic.
    pub fn push(
        &mut self,
        severity: Severity,
        code: &'static str,
        node: Option<&str>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.diags.push(Diagnostic {
            severity,
            code,
            node: node.map(NodeId::from),
            message: message.into(),
            fix: fix.into(),
        });
    }

    /// Records an error.
    pub fn error(
        &mut self,
        code: &'static str,
        node: Option<&str>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.push(Severity::Error, code, node, message, fix);
    }

    /// Moves `other`'s diagnostics into this sink.
    pub fn extend(&mut self, other: Sink) {
        self.diags.extend(other.diags);
    }

    /// Diagnostics so far.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diags
    }

    /// Sorts into program order (stable: within a statement, pass order) and drops exact
    /// duplicates (the divergence pass may visit a loop body twice).
    fn finish(self, program: &Program) -> Vec<Diagnostic> {
        let order: HashMap<&str, usize> = limits::preorder(program)
            .into_iter()
            .enumerate()
            .map(|(i, s)| (s.id.as_str(), i + 1))
            .collect();
        let mut seen = HashSet::new();
        let mut out: Vec<Diagnostic> = self
            .diags
            .into_iter()
            .filter(|d| seen.insert((d.code, d.node.clone(), d.message.clone())))
            .collect();
        out.sort_by_key(|d| {
            d.node
                .as_deref()
                .and_then(|id| order.get(id))
                .copied()
                .unwrap_or(0)
        });
        out
    }
}

#[cfg(test)]
mod tests;
