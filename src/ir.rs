//! The Program model: types, statements and expressions, the JSON parser (the only serde
//! boundary for Programs) and the IR printer.
//!
//! A Program is parsed from format version 1 (`docs/program-format.md`). Every statement
//! carries its node id, the JSON path of the statement in the file (`body[1].then[0]`).
//! [`walk`] holds the one definition of a statement's expressions and of their visiting order.

pub mod ast;
pub mod data;
pub mod foreign;
pub mod node_id;
pub mod ops;
pub mod parse;
pub mod pipeline;
pub mod pipeline_parse;
pub mod pipeline_print;
pub mod print;
pub mod run_spec;
pub mod sync;
pub mod types;
pub mod typing;
pub mod walk;
pub mod write;

pub use ast::*;
pub use data::{DataArray, DataBuilder, DataIter};
pub use parse::{load_program, load_source, parse_program, ParseError, Source};
pub use pipeline::{Pipeline, PipelineBuffer, Step};
pub use pipeline_parse::{is_pipeline_file, load_pipeline, looks_like_pipeline, parse_pipeline};
pub use run_spec::*;
pub use sync::{BlockTasks, ScratchLayout, SyncOp, WaitOn};
pub use types::*;
pub use typing::{elaborate, expr_type, is_bare};
pub use walk::walk_exprs;
pub use write::{pipeline_to_json, program_to_json};
