//! Helpers shared by the integration tests.

pub mod fixtures;
pub mod snapshot;
