//! Where the time goes, per IR statement: the instrumented build ([`instrument`]), the hot
//! list built from its table or from PC samples ([`report`]), and the pure mapping of sampled
//! program counters through the SASS listing to PTX lines and IR statements ([`pc`]).
//!
//! Two sources feed one [`report::Profile`]:
//! - `instrumented`: a build of the Program that reads the clock around every statement and
//!   adds the elapsed cycles to a per-statement table (needs no profiling permission; the
//!   interpreter runs it with a statement counter in place of the clock, which gives the
//!   labelled *instruction-count estimate*, never a time);
//! - `pc`: CUPTI PC sampling of the plain kernel, samples per SASS instruction split by stall
//!   reason (the runtime collects them; this module only maps them).
//!
//! Docs: `docs/profile.md`.

pub mod estimate;
pub mod instrument;
pub mod pc;
pub mod report;

pub use instrument::{instrument, Instrumented, Slot};
pub use report::{HotStatement, Profile, Source};

/// Why a profile could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// The Program has no statement to time.
    Empty {
        /// Program name.
        program: String,
    },
    /// The instrumented build does not validate (a bug of the transform, reported as such).
    Invalid {
        /// Program name.
        program: String,
        /// The first error the validator reported.
        first: String,
    },
    /// The instrumented run did not return its table.
    NoTable {
        /// Table buffer name.
        table: String,
    },
}

impl crate::util::HasFix for ProfileError {
    fn message(&self) -> String {
        match self {
            ProfileError::Empty { program } => {
                format!("Program `{program}` has no statement to profile")
            }
            ProfileError::Invalid { program, first } => {
                format!("the instrumented build of `{program}` does not validate: {first}")
            }
            ProfileError::NoTable { table } => {
                format!("the instrumented run returned no profile table `{table}`")
            }
        }
    }

    fn fix(&self) -> String {
        match self {
            ProfileError::Empty { .. } => "add statements to the Program's body".into(),
            ProfileError::Invalid { .. } | ProfileError::NoTable { .. } => {
                "this is a vyrescope bug: report it with the Program file; `--source pc` profiles without instrumenting".into()
            }
        }
    }
}

crate::util::problem::into_problem!(ProfileError);
