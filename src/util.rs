//! Small, dependency-free helpers that every layer may use: the one stable hash, the one
//! atomic file write, the one bounded read of a user-named file, the one rule for files named
//! inside input files (`confine`), the one duplicate-key check of JSON input, the one
//! non-panicking write to stderr, the one parallel copy of large buffers, the one
//! terminal-safe rendering of Program text and
//! [`Problem`], the error type every layer returns. They
//! import nothing from the crate.

pub mod atomic_write;
pub mod confine;
pub mod hash;
pub mod json_keys;
pub mod os;
pub mod par_copy;
pub mod problem;
pub mod read_limited;
pub mod same_file;
pub mod stderr;
pub mod terminal;

pub use atomic_write::write_atomic;
pub use confine::{confine, ConfineError};
pub use hash::{build_id, fnv1a, hash_parts};
pub use json_keys::{find_duplicate_key, DuplicateKey};
pub use par_copy::{par_copy, par_to_vec};
pub use problem::{ExitClass, Findings, HasFix, Problem};
pub use read_limited::{read_limited, ReadError, ReadErrorKind};
pub use same_file::{refuse_overwrite, same_file};
pub use stderr::{stderr_line, write_stderr};
pub use terminal::terminal_safe;
