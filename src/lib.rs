//! vyrescope: a CUDA/PTX backend for vyre-style compute Programs and a terminal inspector.
#![deny(missing_docs)]

pub mod analysis;
pub mod cli;
pub mod diagnostics;
pub mod diff;
pub mod emit;
pub mod finding;
pub mod gen;
pub mod harness;
pub mod inputs;
pub mod interp;
pub mod ir;
pub mod megakernel;
pub mod occupancy;
pub mod profile;
pub mod report;
pub mod runtime;
pub mod sass;
pub mod semantics;
pub mod shape;
pub mod timeline;
pub mod tui;
pub mod util;
pub mod validate;
#[cfg(feature = "vyre")]
pub mod vyre;
