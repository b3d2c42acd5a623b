//! The pipeline model: an ordered list of dispatches ("steps") of Programs over named buffers
//! that persist from step to step (pipeline format version 1, `docs/pipeline-format.md`).
//!
//! Its meaning is always: run every step as its own dispatch, in order, each finishing before
//! the next starts. Megakernel plans (`crate::megakernel`) must reproduce exactly that.

use super::ast::Program;
use super::run_spec::InputSpec;
use super::types::ElemType;

/// A parsed pipeline file.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    /// Pipeline name (same rules as a Program's name).
    pub name: String,
    /// Free text.
    pub doc: Option<String>,
    /// Pipeline buffers in file order.
    pub buffers: Vec<PipelineBuffer>,
    /// Steps in execution order (at least one).
    pub steps: Vec<Step>,
}

/// One buffer that lives across the steps of a pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct PipelineBuffer {
    /// Name, unique within the pipeline.
    pub name: String,
    /// Element type (any host element type of the Program format).
    pub elem: ElemType,
    /// Length and initial contents, exactly as a Program's `run.inputs` entry.
    pub contents: InputSpec,
    /// Nobody reads the buffer after the pipeline ends: `--dump` writes no final contents and a
    /// fused kernel may skip writing it.
    pub transient: bool,
}

/// One dispatch of a Program.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The step's Program (loaded from `program_path`, or inline).
    pub program: Program,
    /// The path as written in the file (relative to the pipeline file); `None` when inline.
    pub program_path: Option<String>,
    /// For every host buffer of the Program (by name), the pipeline buffer bound to it,
    /// in the Program's buffer order.
    pub bind: Vec<(String, String)>,
    /// The explicit `workgroup_size` override, if any.
    pub workgroup_size: Option<[u32; 3]>,
    /// The explicit `grid`, if any.
    pub grid: Option<[u32; 3]>,
    /// The explicit `elements`, if any.
    pub elements: Option<u64>,
}

impl Pipeline {
    /// The pipeline buffer called `name`.
    pub fn buffer(&self, name: &str) -> Option<&PipelineBuffer> {
        self.buffers.iter().find(|b| b.name == name)
    }
}

impl Step {
    /// The pipeline buffer bound to the Program's buffer `program_buffer`.
    pub fn bound(&self, program_buffer: &str) -> Option<&str> {
        self.bind
            .iter()
            .find(|(p, _)| p == program_buffer)
            .map(|(_, b)| b.as_str())
    }

    /// The workgroup size this step runs with: the override, else the Program's own.
    pub fn workgroup(&self) -> [u32; 3] {
        self.workgroup_size.unwrap_or(self.program.workgroup_size)
    }
}
