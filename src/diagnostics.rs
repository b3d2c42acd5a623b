//! Diagnostics: the rule sets over the shared [`Diagnostic`] type (defined in
//! [`crate::finding`] so the validator can report without importing this layer).
//!
//! The rule sets: [`launch`] (will this launch run on this device: `L...`), [`compile`]
//! (ptxas / driver JIT logs mapped back to IR nodes: `C...`) and [`perf`] (lints on why it may
//! be slow: `P...`); [`wg_overrun`] (`L012`, part of the launch rules) proves
//! workgroup-buffer writes past their count; [`wg_dependence`] (`L013`, `L014`) names the
//! statements that tie a Program to its workgroup size and reports sizes that change its
//! results. The index analysis the launch and performance
//! rules share is [`crate::analysis::affine`], one layer down.

pub use crate::finding::{Diagnostic, Severity};

pub mod compile;
pub mod launch;
pub mod perf;
pub mod wg_dependence;
pub mod wg_overrun;
