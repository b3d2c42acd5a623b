//! Helpers shared by the integration tests.

pub mod cli;
pub mod fixtures;
pub mod snapshot;
pub mod tools;
#[cfg(feature = "vyre")]
pub mod vyre;
