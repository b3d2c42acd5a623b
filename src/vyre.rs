//! Interop with the vyre GPU compiler (feature `vyre`): vyre Programs stored as wire bytes
//! (`VYRE` header) or the `vyre_ir v0.1` hex text envelope are converted to and from
//! vyrescope Programs, and vyre's own PTX for a Program is produced for comparison with ours.
//!
//! This module is the only user of the vyre crates; it is compiled only with `--features vyre`
//! so the default build stays lean.

pub mod artifact;
pub mod backend;
pub mod binding;
pub mod catalog;
pub mod export;
pub mod files;
pub mod fused;
pub mod import;
pub mod plan;
pub mod ptx;
pub mod ptx_diff;
pub mod replay;

pub use export::{export, ExportError};
pub use files::install;
pub use import::{import_program, Imported};
pub use ptx::{vyre_ptx, VyrePtx, VyrePtxError};
