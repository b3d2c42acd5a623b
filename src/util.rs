//! Small, dependency-free helpers that every layer may use: the one stable hash and the one
//! atomic file write. They import nothing from the crate.

pub mod atomic_write;
pub mod hash;

pub use atomic_write::write_atomic;
pub use hash::{fnv1a, hash_parts};
