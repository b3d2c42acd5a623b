//! The pipeline model: an ordered list of dispatches ("steps") of Programs over named buffers
//! that persist from step to step (pipeline format version 1, `docs/pipeline-format.md`).
//!
//! Its meaning is always: run every step as its own dispatch, in order, each finishing before
//! the next starts. Megakernel plans (`crate::megakernel`) must reproduce exactly that.

use std::collections::HashMap;

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

    /// The declared length (`len`) of the pipeline buffer bound to the Program buffer
    /// `program_buffer` of step `step`: what `len(program_buffer)` is in every run of it.
    pub fn bound_len(&self, step: usize, program_buffer: &str) -> Option<u64> {
        let b = self.steps.get(step)?.bound(program_buffer)?;
        self.buffer(b)?.contents.len
    }

    /// [`Pipeline::bound_len`] of every bound Program buffer of step `step` that has one.
    pub fn bound_lens(&self, step: usize) -> HashMap<String, u64> {
        let Some(s) = self.steps.get(step) else {
            return HashMap::new();
        };
        s.bind
            .iter()
            .filter_map(|(p, _)| Some((p.clone(), self.bound_len(step, p)?)))
            .collect()
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
