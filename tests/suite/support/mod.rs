//! Helpers shared by the integration tests.

#[cfg(feature = "vyre")]
pub mod capture;
pub mod cli;
pub mod fixtures;
pub mod script;
pub mod snapshot;
pub mod tools;
#[cfg(feature = "vyre")]
pub mod vyre;
