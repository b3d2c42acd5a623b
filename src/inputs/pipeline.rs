//! A pipeline ready to run: every pipeline buffer's initial bytes and, per step, its launch
//! shape and which pipeline buffer each of its Program's host buffers is.
//!
//! Contents come from the same fill/data/file code as a Program's `run.inputs`
//! ([`super::buffer_bytes`]); `file` paths are relative to the pipeline file's folder.
//!
//! A step's grid, in order of precedence: the step's `grid`; the step's `elements`
//! (`grid.x = ceil(elements / workgroup_size.x)`); the Program's own `run.grid`, then
//! `run.elements`; else the length of the longest pipeline buffer the step binds to a
//! writable (`read_write`/`write`) Program buffer, taken as `elements`. The workgroup size is
//! the step's override, else the Program's.

use std::collections::HashMap;
use std::path::Path;

use super::{
    buffer_bytes, explicit_len, grid_for_elements, FileRoot, HostBuffer, InputError, LaunchShape,
    FOOTPRINT_COPIES, MAX_TOTAL_BYTES,
};
use crate::ir::{Access, ElemType, Pipeline, Step};

/// One pipeline buffer with its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineData {
    /// Buffer name.
    pub name: String,
    /// Element type.
    pub elem: ElemType,
    /// Nobody reads it after the pipeline ends (no final dump, fused kernels may skip it).
    pub transient: bool,
    /// Raw little-endian elements.
    pub data: Vec<u8>,
}

impl PipelineData {
    /// Element count.
    pub fn len(&self) -> usize {
        self.data.len() / self.elem.size_bytes()
    }

    /// True when the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

/// One step's launch and bindings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedStep {
    /// Workgroup size and grid of the step's dispatch.
    pub shape: LaunchShape,
    /// For every host buffer of the step's Program, in the Program's binding order: (its
    /// name, its access, its binding slot, the index into [`PreparedPipeline::buffers`]).
    pub binding: Vec<StepBinding>,
}

/// One Program host buffer of a step and the pipeline buffer behind it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepBinding {
    /// The Program's buffer name.
    pub name: String,
    /// Its access mode in this Program.
    pub access: Access,
    /// Its binding slot.
    pub binding: u32,
    /// Index of the pipeline buffer in [`PreparedPipeline::buffers`].
    pub buffer: usize,
}

/// A pipeline ready to run on any backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedPipeline {
    /// Pipeline buffers in file order, with their initial contents.
    pub buffers: Vec<PipelineData>,
    /// Steps in execution order.
    pub steps: Vec<PreparedStep>,
}

impl PreparedPipeline {
    /// Step `step`'s host buffers as a Program run sees them (name, access, binding of the
    /// Program; contents of the bound pipeline buffer), taking the bytes out of the pipeline
    /// buffers without copying. Give them back with [`PreparedPipeline::put_back`].
    pub fn take_step_buffers(&mut self, step: usize) -> Vec<HostBuffer> {
        let Some(s) = self.steps.get(step) else {
            return Vec::new();
        };
        s.binding
            .iter()
            .map(|b| {
                let pb = &mut self.buffers[b.buffer];
                HostBuffer {
                    name: b.name.clone(),
                    elem: pb.elem,
                    access: b.access,
                    binding: b.binding,
                    data: std::mem::take(&mut pb.data),
                }
            })
            .collect()
    }

    /// Returns the bytes taken by [`PreparedPipeline::take_step_buffers`] to their pipeline
    /// buffers.
    pub fn put_back(&mut self, step: usize, host: Vec<HostBuffer>) {
        let Some(s) = self.steps.get(step) else {
            return;
        };
        for (b, h) in s.binding.iter().zip(host) {
            self.buffers[b.buffer].data = h.data;
        }
    }
}

/// Builds every pipeline buffer's contents and every step's launch shape and bindings.
/// `base_dir` (the pipeline file's folder) resolves `file` contents. Errors name the buffer or
/// `steps[i]`; an unvalidated pipeline yields errors, never a panic.
pub fn prepare_pipeline(
    pipeline: &Pipeline,
    base_dir: &Path,
) -> Result<PreparedPipeline, InputError> {
    // `file` contents stay inside the pipeline file's folder (util::confine).
    prepare_pipeline_rooted(pipeline, FileRoot::program_folder(base_dir))
}

/// [`prepare_pipeline`] with `file` contents resolved against `files.base` and allowed
/// anywhere inside `files.root` (`--root DIR`).
pub fn prepare_pipeline_rooted(
    pipeline: &Pipeline,
    files: FileRoot<'_>,
) -> Result<PreparedPipeline, InputError> {
    let (lens, steps) = lengths_and_steps(pipeline, &files)?;
    check_footprint(pipeline, &lens)?;
    let mut buffers = Vec::with_capacity(pipeline.buffers.len());
    for (b, len) in pipeline.buffers.iter().zip(lens) {
        let data = buffer_bytes(&b.name, b.elem, len, &b.contents.source, &files)?;
        buffers.push(PipelineData {
            name: b.name.clone(),
            elem: b.elem,
            transient: b.transient,
            data,
        });
    }
    Ok(PreparedPipeline { buffers, steps })
}

/// Every step's launch shape, as [`prepare_pipeline`] computes it, without building any
/// buffer's contents: a plan depends on shapes, not on data, so planning (or listing) a
/// pipeline of gigabytes of buffers allocates nothing of them. The same errors as
/// [`prepare_pipeline`] for lengths, bindings and shapes.
pub fn pipeline_shapes(
    pipeline: &Pipeline,
    base_dir: &Path,
) -> Result<Vec<LaunchShape>, InputError> {
    pipeline_shapes_rooted(pipeline, FileRoot::program_folder(base_dir))
}

/// [`pipeline_shapes`] with `file` inputs resolved against `files.base` and allowed anywhere
/// inside `files.root` (`--root DIR`), as [`prepare_pipeline_rooted`] resolves them.
pub fn pipeline_shapes_rooted(
    pipeline: &Pipeline,
    files: FileRoot<'_>,
) -> Result<Vec<LaunchShape>, InputError> {
    let (_, steps) = lengths_and_steps(pipeline, &files)?;
    Ok(steps.into_iter().map(|s| s.shape).collect())
}

/// Refuses buffers whose contents (with a staging copy of each) would pass
/// [`MAX_TOTAL_BYTES`]: asked before they are built, and only where they are (planning
/// builds none, so it plans pipelines of any size).
fn check_footprint(pipeline: &Pipeline, lens: &[usize]) -> Result<(), InputError> {
    let total: u128 = pipeline
        .buffers
        .iter()
        .zip(lens)
        .map(|(b, &len)| len as u128 * b.elem.size_bytes() as u128)
        .sum();
    let footprint = total * FOOTPRINT_COPIES as u128;
    if footprint > MAX_TOTAL_BYTES as u128 {
        return Err(InputError {
            message: format!(
                "the buffers of pipeline `{}` would take {total} bytes; with a staging copy of each the run needs {footprint} bytes, more than the {} GiB limit",
                pipeline.name,
                MAX_TOTAL_BYTES >> 30
            ),
            fix: "use shorter buffers (`len`)".into(),
        });
    }
    Ok(())
}

/// Each buffer's length (checked against the u32 index limit before anything is allocated)
/// and each step's launch shape and bindings.
fn lengths_and_steps(
    pipeline: &Pipeline,
    files: &FileRoot<'_>,
) -> Result<(Vec<usize>, Vec<PreparedStep>), InputError> {
    // Lengths first, so that absurd requests fail before anything is allocated.
    let mut lens = Vec::with_capacity(pipeline.buffers.len());
    for b in &pipeline.buffers {
        let c = &b.contents;
        let Some(len) = explicit_len(&b.name, b.elem, &c.source, c.len, files)? else {
            return Err(InputError {
                message: format!("buffers.{}: no length (`len` is missing)", b.name),
                fix: format!("add \"len\": N to buffers.{}", b.name),
            });
        };
        if len > u32::MAX as u64 {
            return Err(InputError {
                message: format!("buffers.{}: {len} elements; indices are u32", b.name),
                fix: format!("give `{}` at most 4294967295 elements", b.name),
            });
        }
        lens.push(len as usize);
    }

    // Pipeline buffers by name, indexed once (searched per step binding, a long chain's
    // shapes were quadratic in steps).
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (k, b) in pipeline.buffers.iter().enumerate() {
        index.entry(b.name.as_str()).or_insert(k);
    }
    let mut steps = Vec::with_capacity(pipeline.steps.len());
    for (i, s) in pipeline.steps.iter().enumerate() {
        let binding = bindings(pipeline, &index, i, s)?;
        let shape = step_shape(i, s, &binding, &lens)?;
        steps.push(PreparedStep { shape, binding });
    }
    Ok((lens, steps))
}

/// The pipeline buffer behind every host buffer of step `i`'s Program.
fn bindings(
    pipeline: &Pipeline,
    by_name: &HashMap<&str, usize>,
    i: usize,
    s: &Step,
) -> Result<Vec<StepBinding>, InputError> {
    let mut out = Vec::new();
    for (slot, b) in s.program.host_buffers().into_iter().enumerate() {
        let Some(target) = s.bound(&b.name) else {
            return Err(InputError {
                message: format!("steps[{i}].bind: Program buffer `{}` is not bound", b.name),
                fix: format!("add \"{}\": \"PIPELINE_BUFFER\" to steps[{i}].bind", b.name),
            });
        };
        let Some(&index) = by_name.get(target) else {
            return Err(InputError {
                message: format!("steps[{i}].bind.{}: no pipeline buffer `{target}`", b.name),
                fix: "bind a buffer declared in the pipeline's `buffers`".into(),
            });
        };
        let pb = &pipeline.buffers[index];
        if pb.elem != b.elem {
            return Err(InputError {
                message: format!(
                    "steps[{i}].bind.{}: pipeline buffer `{target}` holds {} but the Program declares {}",
                    b.name, pb.elem, b.elem
                ),
                fix: "bind a pipeline buffer of the same element type".into(),
            });
        }
        if out.iter().any(|o: &StepBinding| o.buffer == index) {
            return Err(InputError {
                message: format!(
                    "steps[{i}].bind.{}: pipeline buffer `{target}` is bound twice in one step",
                    b.name
                ),
                fix: "bind each pipeline buffer at most once per step (no aliasing inside a dispatch)".into(),
            });
        }
        out.push(StepBinding {
            name: b.name.clone(),
            access: b.access,
            binding: b.binding.unwrap_or(slot as u32),
            buffer: index,
        });
    }
    Ok(out)
}

/// Step `i`'s launch shape (precedence in the module docs).
fn step_shape(
    i: usize,
    s: &Step,
    binding: &[StepBinding],
    lens: &[usize],
) -> Result<LaunchShape, InputError> {
    let workgroup_size = s.workgroup();
    let run = s.program.run.as_ref();
    let grid = if let Some(g) = s.grid {
        g
    } else if let Some(n) = s.elements {
        grid_for_elements(n, workgroup_size[0])?
    } else if let Some(g) = run.and_then(|r| r.grid) {
        g
    } else if let Some(n) = run.and_then(|r| r.elements) {
        grid_for_elements(n, workgroup_size[0])?
    } else {
        let longest = binding
            .iter()
            .filter(|b| matches!(b.access, Access::ReadWrite | Access::Write))
            .map(|b| lens[b.buffer])
            .max();
        match longest {
            Some(n) if n > 0 => grid_for_elements(n as u64, workgroup_size[0])?,
            _ => {
                return Err(InputError {
                    message: format!(
                        "steps[{i}]: cannot tell how many invocations to run (no grid or elements on the step or in its Program, and it writes no non-empty buffer)"
                    ),
                    fix: format!("add \"elements\": N or \"grid\": [X, Y, Z] to steps[{i}]"),
                })
            }
        }
    };
    let shape = LaunchShape {
        workgroup_size,
        grid,
    };
    shape.check().map_err(|e| InputError {
        message: format!("steps[{i}]: {}", e.message),
        fix: e.fix,
    })?;
    Ok(shape)
}
