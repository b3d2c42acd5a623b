//! vyre's host I/O binding of a Program, as `vyre_reference::reference_eval` binds it: the
//! one rule shared by the op catalogue (`vyre::catalog`) and vyrescope's vyre backends
//! (`vyre::backend`), so that both see the buffers, outputs and launch vyre's reference sees.
//!
//! - The caller gives one byte vector per *input*: every non-workgroup buffer that is not a
//!   backend-allocated output (`is_output`, `WriteOnly`, or live-out `ReadWrite`), in
//!   declaration order; one vector per non-workgroup buffer (vyre's "legacy" form) also
//!   gives the outputs, whose contents are then ignored.
//! - Backend-allocated outputs are zero-filled with their static size (`count` elements).
//! - The outputs are the backend-allocated outputs and the `ReadWrite` buffers in
//!   declaration order, each cut to its `output_byte_range` when it has one.
//! - The dispatch covers the largest output (or, with workgroup memory, atomics or no
//!   output, the largest buffer) in elements, `ceil(elements / workgroup threads)`
//!   workgroups spread evenly over the workgroup's axes larger than 1. A caller's grid
//!   (`DispatchConfig::grid_override`) replaces the inference; a caller's workgroup
//!   (`workgroup_override`) replaces the Program's.
//!
//! Resident dispatches bind one resource per non-workgroup buffer in binding-number order
//! (vyre-driver's `BindingPlan` order), each buffer as long as its resource.

use std::ops::Range;

use vyre_foundation::ir::{BufferAccess, BufferDecl, Program as VyreProgram};

use crate::inputs::HostBuffer;
use crate::ir::{Access, Program};
use crate::shape::LaunchShape;

/// One buffer vyre returns after a dispatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSlot {
    /// Index into [`Bound::buffers`].
    pub buffer: usize,
    /// The bytes vyre returns (`output_byte_range`); `None` = the whole buffer.
    pub range: Option<Range<usize>>,
}

impl OutputSlot {
    /// The bytes of `data` this output returns (all of them when the range does not fit).
    pub fn bytes<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        match &self.range {
            Some(r) if r.start <= r.end && r.end <= data.len() => &data[r.clone()],
            _ => data,
        }
    }
}

/// Caller choices that replace vyre's inference.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchChoice {
    /// Threads per workgroup instead of the Program's.
    pub workgroup: Option<[u32; 3]>,
    /// Workgroups instead of the inferred grid.
    pub grid: Option<[u32; 3]>,
    /// At least this many invocations (vyre's `dispatch_elements` coverage floor).
    pub min_elements: Option<u32>,
}

/// A dispatch bound to our Program's host buffers.
#[derive(Debug, Clone)]
pub struct Bound {
    /// The launch.
    pub shape: LaunchShape,
    /// Our Program's non-workgroup buffers, in declaration order, with their contents.
    pub buffers: Vec<HostBuffer>,
    /// vyre's outputs, in vyre's order.
    pub outputs: Vec<OutputSlot>,
    /// Per buffer, the caller's input whose bytes stand for its contents when the buffer
    /// was bound without a copy ([`bind_borrowed`]; its `data` is then empty).
    pub sources: Vec<Option<usize>>,
    /// Per buffer, true when its `data` was bound as zeros (an output the backend
    /// allocates), so a device need not read it to know.
    pub zeroed: Vec<bool>,
}

/// A resident dispatch bound: which buffer each resource is, and the launch.
#[derive(Debug, Clone)]
pub struct ResidentBound {
    /// The launch.
    pub shape: LaunchShape,
    /// Per resource (binding-number order): the index of its buffer among our Program's
    /// non-workgroup buffers in declaration order (the order of [`Bound::buffers`]).
    pub buffer_of_resource: Vec<usize>,
}

/// vyre's `is_reference_input`: the caller supplies this buffer.
pub fn is_input(d: &BufferDecl) -> bool {
    d.access() != BufferAccess::Workgroup && !d.is_backend_allocated_output()
}

/// vyre's `is_reference_output`: the reference returns this buffer.
pub fn is_output(d: &BufferDecl) -> bool {
    d.is_backend_allocated_output() || d.access() == BufferAccess::ReadWrite
}

fn is_host(d: &BufferDecl, ours: &crate::ir::BufferDecl) -> bool {
    d.access() != BufferAccess::Workgroup && ours.access != Access::Workgroup
}

/// Declaration indices of the buffers a dispatch binds (every non-workgroup buffer), in
/// declaration order: position `k` of [`Bound::buffers`] is buffer `host_buffers(..)[k]`.
pub fn host_buffers(vp: &VyreProgram, ours: &Program) -> Vec<usize> {
    vp.buffers()
        .iter()
        .zip(&ours.buffers)
        .enumerate()
        .filter(|(_, (d, b))| is_host(d, b))
        .map(|(i, _)| i)
        .collect()
}

/// How many input vectors a dispatch of `vp` takes (the short form).
pub fn input_count(vp: &VyreProgram) -> usize {
    vp.buffers().iter().filter(|d| is_input(d)).count()
}

/// Why a dispatch's inputs or resources do not bind to a Program (one line, naming the
/// input, resource or buffer at fault).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BindingError {
    /// The converted Program and vyre's declare different numbers of buffers.
    #[error("the converted Program has {ours} buffers, vyre's {vyre}")]
    BufferCount {
        /// Buffers of our Program.
        ours: usize,
        /// Buffers of vyre's Program.
        vyre: usize,
    },
    /// Fewer inputs than the Program takes: input `index` (buffer `buffer`) is missing.
    #[error("{given} input buffers given, but the Program takes {takes} (buffer `{buffer}` is input {index})")]
    MissingInput {
        /// Inputs given.
        given: usize,
        /// Inputs the Program takes.
        takes: usize,
        /// The missing buffer's name.
        buffer: String,
        /// Its position among the inputs.
        index: usize,
    },
    /// An input shorter than its buffer's declared size.
    #[error("input {index} (buffer `{buffer}`) has {bytes} bytes, less than its declared {declared} ({count} elements of {elem_bytes} bytes)")]
    ShortInput {
        /// The input's position.
        index: usize,
        /// Its buffer's name.
        buffer: String,
        /// Bytes given.
        bytes: usize,
        /// Bytes declared.
        declared: usize,
        /// Elements declared.
        count: u32,
        /// Bytes per element.
        elem_bytes: usize,
    },
    /// A backend-allocated output without a static size.
    #[error("output `{0}` has no static size (vyre's reference refuses it too)")]
    UnsizedOutput(String),
    /// More inputs than the Program takes, in either form.
    #[error("{given} input buffers given, but the Program takes {takes} (or {with_outputs} with its outputs)")]
    InputCount {
        /// Inputs given.
        given: usize,
        /// Inputs the Program takes (the short form).
        takes: usize,
        /// Vectors of the legacy form (inputs and outputs).
        with_outputs: usize,
    },
    /// Not one resource per non-workgroup buffer.
    #[error("{given} resources given, but the Program binds {buffers} non-workgroup buffers (one resource each, in binding order)")]
    ResourceCount {
        /// Resources given.
        given: usize,
        /// Non-workgroup buffers of the Program.
        buffers: usize,
    },
    /// A resource shorter than its buffer's declared size.
    #[error("resource {index} (buffer `{buffer}`, binding {binding}) has {bytes} bytes, less than its declared {declared}")]
    ShortResource {
        /// The resource's position (binding order).
        index: usize,
        /// Its buffer's name.
        buffer: String,
        /// The buffer's binding number.
        binding: u32,
        /// Bytes of the resource.
        bytes: usize,
        /// Bytes declared.
        declared: usize,
    },
    /// A caller's grid with a zero dimension.
    #[error("grid {0:?} has a zero dimension")]
    ZeroGrid([u32; 3]),
    /// The inferred grid needs more workgroups than a 32-bit dimension holds.
    #[error("{0} workgroups do not fit a 32-bit grid")]
    GridTooLarge(u64),
}

fn same_buffers(vp: &VyreProgram, ours: &Program) -> Result<(), BindingError> {
    if vp.buffers().len() != ours.buffers.len() {
        return Err(BindingError::BufferCount {
            ours: ours.buffers.len(),
            vyre: vp.buffers().len(),
        });
    }
    Ok(())
}

/// Binds `inputs` (see the module docs) to `ours`, the import of `vp` (same buffers in the
/// same order), copying them into the buffers. The error says which input is missing or
/// short.
pub fn bind(
    vp: &VyreProgram,
    ours: &Program,
    inputs: &[&[u8]],
    choice: LaunchChoice,
) -> Result<Bound, BindingError> {
    bind_inner(vp, ours, inputs, choice, true)
}

/// [`bind`] without copying the inputs: an input of whole elements leaves its buffer's
/// `data` empty and names the input in [`Bound::sources`] (a device stages it from the
/// caller's slice).
pub fn bind_borrowed(
    vp: &VyreProgram,
    ours: &Program,
    inputs: &[&[u8]],
    choice: LaunchChoice,
) -> Result<Bound, BindingError> {
    bind_inner(vp, ours, inputs, choice, false)
}

fn bind_inner(
    vp: &VyreProgram,
    ours: &Program,
    inputs: &[&[u8]],
    choice: LaunchChoice,
    copy: bool,
) -> Result<Bound, BindingError> {
    same_buffers(vp, ours)?;
    let decls = vp.buffers();
    let host = decls
        .iter()
        .zip(&ours.buffers)
        .filter(|(d, b)| is_host(d, b))
        .count();
    let logical = input_count(vp);
    let legacy = inputs.len() == host && inputs.len() != logical;
    let mut next = 0usize;
    let mut buffers = Vec::new();
    let mut outputs = Vec::new();
    let mut sources = Vec::new();
    let mut zeroed = Vec::new();
    let mut span = Span::default();
    for (d, b) in decls.iter().zip(&ours.buffers) {
        if !is_host(d, b) {
            continue;
        }
        let size = b.elem.size_bytes();
        let declared = d.count() as usize * size;
        let mut source = None;
        let fresh = !is_input(d);
        let mut data = if is_input(d) {
            let Some(v) = inputs.get(next) else {
                return Err(BindingError::MissingInput {
                    given: inputs.len(),
                    takes: logical,
                    buffer: d.name().to_string(),
                    index: next,
                });
            };
            next += 1;
            if v.len() < declared {
                return Err(BindingError::ShortInput {
                    index: next - 1,
                    buffer: d.name().to_string(),
                    bytes: v.len(),
                    declared,
                    count: d.count(),
                    elem_bytes: size,
                });
            }
            if !copy && v.len() % size == 0 {
                source = Some(next - 1);
                Vec::new()
            } else {
                // Large inputs are copied on all cores (a vyre dispatch of 2^26 f32
                // elements binds 512 MB).
                crate::util::par_to_vec(v)
            }
        } else {
            if legacy {
                next += 1;
            }
            if d.count() == 0 && d.output_byte_range().is_none() {
                return Err(BindingError::UnsizedOutput(d.name().to_string()));
            }
            vec![0u8; declared]
        };
        // Whole elements only (a trailing partial element is not addressable).
        data.resize(data.len().div_ceil(size) * size, 0);
        let bytes = match source.and_then(|i| inputs.get(i)) {
            Some(v) => v.len(),
            None => data.len(),
        };
        span.add(d, (bytes / size) as u64);
        sources.push(source);
        zeroed.push(fresh);
        if is_output(d) {
            outputs.push(OutputSlot {
                buffer: buffers.len(),
                range: d.output_byte_range(),
            });
        }
        buffers.push(HostBuffer {
            name: b.name.clone(),
            elem: b.elem,
            access: b.access,
            binding: b.binding.unwrap_or(0),
            data,
        });
    }
    if next != inputs.len() {
        return Err(BindingError::InputCount {
            given: inputs.len(),
            takes: logical,
            with_outputs: host,
        });
    }
    Ok(Bound {
        shape: span.shape(vp, choice)?,
        buffers,
        outputs,
        sources,
        zeroed,
    })
}

/// Binds resident resources of `byte_lens` bytes (one per non-workgroup buffer, in
/// binding-number order) to `ours`, the import of `vp`. Each buffer is as long as its
/// resource in whole elements; a resource shorter than its buffer's declared count is an
/// error.
pub fn bind_resident(
    vp: &VyreProgram,
    ours: &Program,
    byte_lens: &[usize],
    choice: LaunchChoice,
) -> Result<ResidentBound, BindingError> {
    same_buffers(vp, ours)?;
    // Host buffers in declaration order, then sorted by binding number (stable, as vyre's
    // BindingPlan sorts).
    let host = host_buffers(vp, ours);
    let mut by_binding: Vec<(usize, usize)> = host.iter().copied().enumerate().collect();
    by_binding.sort_by_key(|&(_, i)| vp.buffers()[i].binding());
    if byte_lens.len() != host.len() {
        return Err(BindingError::ResourceCount {
            given: byte_lens.len(),
            buffers: host.len(),
        });
    }
    let mut span = Span::default();
    let mut buffer_of_resource = Vec::with_capacity(host.len());
    for (&(pos, i), &bytes) in by_binding.iter().zip(byte_lens) {
        let d = &vp.buffers()[i];
        let size = ours.buffers[i].elem.size_bytes();
        let declared = d.count() as usize * size;
        if bytes < declared {
            return Err(BindingError::ShortResource {
                index: buffer_of_resource.len(),
                buffer: d.name().to_string(),
                binding: d.binding(),
                bytes,
                declared,
            });
        }
        span.add(d, (bytes / size) as u64);
        buffer_of_resource.push(pos);
    }
    Ok(ResidentBound {
        shape: span.shape(vp, choice)?,
        buffer_of_resource,
    })
}

/// The element counts vyre's dispatch inference looks at.
#[derive(Default)]
struct Span {
    max_out: u64,
    max_in: u64,
    graph_nodes: u64,
    has_outputs: bool,
}

impl Span {
    fn add(&mut self, d: &BufferDecl, elements: u64) {
        if d.binding() == 0 && d.name() == "pg_nodes" {
            self.graph_nodes = u64::from(d.count());
        }
        if is_output(d) {
            self.has_outputs = true;
            self.max_out = self.max_out.max(elements);
        } else {
            self.max_in = self.max_in.max(elements);
        }
    }

    fn shape(&self, vp: &VyreProgram, choice: LaunchChoice) -> Result<LaunchShape, BindingError> {
        let wg = choice
            .workgroup
            .unwrap_or_else(|| vp.workgroup_size())
            .map(|d| d.max(1));
        if let Some(grid) = choice.grid {
            if grid.contains(&0) {
                return Err(BindingError::ZeroGrid(grid));
            }
            return Ok(LaunchShape {
                workgroup_size: wg,
                grid,
            });
        }
        let threads = wg.iter().map(|&d| u64::from(d)).product::<u64>().max(1);
        let full_span = vp
            .buffers()
            .iter()
            .any(|d| d.access() == BufferAccess::Workgroup)
            || vp.stats().atomic_op_count > 0;
        let elements = self
            .max_out
            .max(self.graph_nodes)
            .max(choice.min_elements.map_or(1, u64::from))
            .max(1)
            .max(if !self.has_outputs || full_span {
                self.max_in.max(1)
            } else {
                1
            });
        let groups = elements.div_ceil(threads).max(1);
        let active: Vec<usize> = (0..3).filter(|&a| wg[a] > 1).collect();
        let mut grid = [1u32; 3];
        if active.is_empty() {
            grid[0] = u32::try_from(groups).map_err(|_| BindingError::GridTooLarge(groups))?;
        } else {
            let base = (groups as f64).powf(1.0 / active.len() as f64).ceil() as u32;
            for a in active {
                grid[a] = base.max(1);
            }
        }
        Ok(LaunchShape {
            workgroup_size: wg,
            grid,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::Rng;
    use crate::vyre::backend::samples::vadd_f32;

    /// vyre's vector add of `n` f32 (inputs `a`, `b`; output `out`) and our import of it.
    fn vadd(n: u32) -> (VyreProgram, Program) {
        let vp = vadd_f32(n);
        let ours = crate::vyre::import_program(&vp, "vadd").program;
        (vp, ours)
    }

    fn random_bytes(rng: &mut Rng, len: usize) -> Vec<u8> {
        (0..len).map(|_| rng.next_u64() as u8).collect()
    }

    #[test]
    fn inputs_that_fit_bind_and_each_misfit_has_its_own_error() {
        let mut rng = Rng::new(0xb1d);
        for _ in 0..8 {
            let n = 1 + (rng.next_u64() % 5000) as u32;
            let bytes = 4 * n as usize;
            let (vp, ours) = vadd(n);
            let a = random_bytes(&mut rng, bytes);
            let b = random_bytes(&mut rng, bytes);
            let choice = LaunchChoice::default();

            let bound = bind(&vp, &ours, &[&a, &b], choice).unwrap();
            assert_eq!(bound.buffers[0].data, a);
            assert_eq!(bound.buffers[1].data, b);
            assert_eq!(bound.shape.grid, [n.div_ceil(256), 1, 1]);

            let e = bind(&vp, &ours, &[&a], choice).unwrap_err();
            assert_eq!(
                e,
                BindingError::MissingInput {
                    given: 1,
                    takes: 2,
                    buffer: "b".into(),
                    index: 1
                }
            );
            assert_eq!(
                e.to_string(),
                "1 input buffers given, but the Program takes 2 (buffer `b` is input 1)"
            );

            let short = (rng.next_u64() % bytes as u64) as usize;
            let e = bind(&vp, &ours, &[&a, &b[..short]], choice).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "input 1 (buffer `b`) has {short} bytes, less than its declared {bytes} ({n} elements of 4 bytes)"
                )
            );
            assert!(matches!(e, BindingError::ShortInput { index: 1, .. }));

            let e = bind(&vp, &ours, &[&a, &b, &a, &b], choice).unwrap_err();
            assert_eq!(
                e,
                BindingError::InputCount {
                    given: 4,
                    takes: 2,
                    with_outputs: 3
                }
            );

            let zero = LaunchChoice {
                grid: Some([1 + n % 7, 0, 1]),
                ..choice
            };
            let e = bind(&vp, &ours, &[&a, &b], zero).unwrap_err();
            assert_eq!(e, BindingError::ZeroGrid([1 + n % 7, 0, 1]));
            assert!(e.to_string().ends_with("has a zero dimension"));
        }
    }

    #[test]
    fn resident_resources_that_misfit_are_told_apart() {
        let mut rng = Rng::new(0x7e5);
        for _ in 0..8 {
            let n = 1 + (rng.next_u64() % 5000) as u32;
            let bytes = 4 * n as usize;
            let (vp, ours) = vadd(n);
            let choice = LaunchChoice::default();
            let extra = (rng.next_u64() % 64) as usize * 4;
            let rb = bind_resident(&vp, &ours, &[bytes + extra; 3], choice).unwrap();
            assert_eq!(rb.buffer_of_resource, vec![0, 1, 2]);

            let e = bind_resident(&vp, &ours, &[bytes; 2], choice).unwrap_err();
            assert_eq!(
                e,
                BindingError::ResourceCount {
                    given: 2,
                    buffers: 3
                }
            );

            let short = (rng.next_u64() % bytes as u64) as usize;
            let e = bind_resident(&vp, &ours, &[bytes, bytes, short], choice).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "resource 2 (buffer `out`, binding 2) has {short} bytes, less than its declared {bytes}"
                )
            );

            let mut fewer = ours.clone();
            fewer.buffers.pop();
            let e = bind_resident(&vp, &fewer, &[bytes; 3], choice).unwrap_err();
            assert_eq!(e, BindingError::BufferCount { ours: 2, vyre: 3 });
        }
    }
}
