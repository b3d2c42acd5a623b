//! Helpers shared by the integration tests.

pub mod fixtures;
pub mod gen;
pub mod snapshot;
