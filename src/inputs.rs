//! Host buffer contents for a dispatch, from a Program's `run` section (fills, data, files).
//!
//! [`prepare`] turns a Program (+ overrides) into a [`LaunchShape`] and the host buffers in
//! binding order, as raw little-endian bytes; every backend (reference interpreter, CUDA)
//! starts from the same [`PreparedRun`].
//!
//! # Launch shape
//! - workgroup size: the override, else the Program's `workgroup_size`;
//! - grid: the override, else `run.grid`, else `run.elements` (`grid.x = ceil(elements /
//!   workgroup_size.x)`, y = z = 1), else the largest explicit length (`len`, `data`, `file`)
//!   of a `read_write`/`write` buffer taken as `elements`.
//!
//! # Buffer lengths
//! `len` if given; else the `data` length or the file's element count; else `elements`
//! (`run.elements`, or the derived value above); else, when the grid came from `run.grid` or an
//! override and nothing else says, the dispatch's invocation count. Host buffers without an
//! input spec are zeros of that default length. A length must fit `u32` (indices are `u32`)
//! and all host buffers together must stay within [`MAX_TOTAL_BYTES`].
//!
//! # Contents
//! - `zeros`, `ones`: the value 0 / 1 of the element type (`ones` of `f16` is `0x3c00`).
//! - `iota`: element `i` is `i` converted to the element type: integers wrap to their width
//!   (`u8` iota of 257 is 1), floats round to nearest even (`f16` overflows to +inf from 65520),
//!   `bool` alternates `i % 2` (false, true, false, ...).
//! - `random`: [SplitMix64](prng) seeded with `seed` (default 0), one 64-bit draw `r` per
//!   element in order. Floats: `lo + (hi - lo) * u` computed in `f64` with
//!   `u = (r >> 11) * 2^-53` in `[0, 1)`, then rounded to nearest even into the element type
//!   (so a value may round up to `hi`); default range `[-1, 1)`. Integers without `range`: the
//!   low bits of `r` (the whole type range); with `range: [lo, hi]` (integers, `hi` exclusive,
//!   within the type) `lo + floor(r * (hi - lo) / 2^64)` (multiply-shift; `lo == hi` gives
//!   `lo`). `bool`: `r >> 63` (`range` is rejected).
//! - `data`: each literal converted to the element type: integers must fit the type exactly
//!   (integral floats such as `3.0` are accepted for integer types), floats round to nearest
//!   even and must not overflow to infinity (`"inf"`/`"nan"` pass through), `true`/`false`
//!   only for `bool` (0/1 also accepted there).
//! - `file`: raw little-endian elements, path relative to the Program file's folder; the size
//!   must be a multiple of the element size. The file must be a regular file inside the
//!   Program's folder (or the folder given with `--root DIR`), see [`resolve_input_file`].

pub mod contents;
pub mod pipeline;
pub mod prng;

use std::path::{Path, PathBuf};

use crate::ir::{Access, ElemType, InputSource, Program};

/// Largest memory footprint of one dispatch's host side (8 GiB): the host buffers plus the
/// staging copy each one needs (the pinned upload/readback copy on the GPU path, the oracle's
/// copy under `--verify`), see [`FOOTPRINT_COPIES`].
pub const MAX_TOTAL_BYTES: u64 = 8 << 30;

/// How many copies of each host buffer a run holds at once (the buffer and its staging copy);
/// the footprint checked against [`MAX_TOTAL_BYTES`] is the buffers' size times this.
pub const FOOTPRINT_COPIES: u64 = 2;

/// Largest invocation count of one dispatch (2^40); beyond it no backend here can run or
/// verify the result in reasonable time.
pub use crate::shape::MAX_INVOCATIONS;

pub use crate::shape::LaunchShape;

impl LaunchShape {
    /// Checks that every dimension is positive, `gid` fits `u32` on every axis and the
    /// invocation count stays within [`MAX_INVOCATIONS`].
    pub fn check(&self) -> Result<(), InputError> {
        self.check_dispatch()
            .map_err(|(message, fix)| InputError { message, fix })
    }
}

/// Where a dispatch takes a host buffer's bytes from when it stages them to the device.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Staged<'a> {
    /// The buffer's own `data`, scanned first: an all-zero buffer is cleared on the device
    /// instead of copied.
    #[default]
    Held,
    /// The caller's slice, staged as it is (the buffer's `data` is empty and not read); a
    /// writable buffer gets its results in `data`.
    From(&'a [u8]),
    /// The buffer's own `data`, known to be zeros (a fresh output): cleared on the device
    /// and never read, so its untouched pages cost nothing until the results arrive.
    Zeros,
}

impl<'a> Staged<'a> {
    /// The caller's slice, when the bytes come from one.
    pub fn slice(self) -> Option<&'a [u8]> {
        match self {
            Staged::From(s) => Some(s),
            Staged::Held | Staged::Zeros => None,
        }
    }
}

/// One host buffer's contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostBuffer {
    /// Buffer name.
    pub name: String,
    /// Element type.
    pub elem: ElemType,
    /// Access mode.
    pub access: Access,
    /// Binding slot.
    pub binding: u32,
    /// Raw little-endian elements.
    pub data: Vec<u8>,
}

impl HostBuffer {
    /// Element count.
    pub fn len(&self) -> usize {
        self.data.len() / self.elem.size_bytes()
    }

    /// True when the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// True for buffers the kernel may write (`read_write`, `write`): the outputs of a run.
    pub fn is_output(&self) -> bool {
        self.access.is_writable()
    }
}

/// A dispatch ready to run on any backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedRun {
    /// Launch shape.
    pub shape: LaunchShape,
    /// Host buffers in binding order.
    pub buffers: Vec<HostBuffer>,
}

/// Why inputs could not be prepared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct InputError {
    /// What is wrong (names the buffer / file).
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// A buffer length known before the default (`elements`) is.
pub(crate) fn explicit_len(
    name: &str,
    elem: ElemType,
    src: &InputSource,
    len: Option<u64>,
    files: &FileRoot,
) -> Result<Option<u64>, InputError> {
    Ok(match (len, src) {
        (Some(n), _) => Some(n),
        (None, InputSource::Data(d)) => Some(d.len() as u64),
        (None, InputSource::File(f)) => {
            let path = files.resolve(f, &format!("input `{name}`"))?;
            Some(file_len(name, elem, &path)?)
        }
        (None, InputSource::Fill(_)) => None,
    })
}

/// Where `file` inputs are looked up (`base`, the Program's folder) and the folder they must
/// stay inside (`root`: the Program's folder, unless the user widened it with `--root DIR`).
#[derive(Debug, Clone, Copy)]
pub struct FileRoot<'a> {
    /// Folder relative paths resolve against.
    pub base: &'a Path,
    /// Folder every resolved file must lie inside (after following symbolic links).
    pub root: &'a Path,
}

impl<'a> FileRoot<'a> {
    /// Files resolve against `base` and must stay inside it.
    pub fn program_folder(base: &'a Path) -> Self {
        FileRoot { base, root: base }
    }

    /// Resolves `rel` with [`resolve_input_file`]; `what` names the input in messages.
    pub fn resolve(&self, rel: &str, what: &str) -> Result<PathBuf, InputError> {
        resolve_input_file(self.base, self.root, rel, what)
    }
}

/// The one check for a data file named inside a Program or pipeline file: `rel` is resolved
/// against `base` (the Program's folder), every symbolic link is followed, and the result must
/// lie inside `root` (the Program's folder unless the user passed `--root DIR`), must not be
/// under `/proc`, `/sys` or `/dev`, and must be a regular file (no FIFO, device or folder).
/// Returns the canonical path to read; `what` names the input in messages. (The rule itself
/// is `util::confine`, so that `ir` can apply it to pipeline files as well.)
pub fn resolve_input_file(
    base: &Path,
    root: &Path,
    rel: &str,
    what: &str,
) -> Result<PathBuf, InputError> {
    crate::util::confine(base, root, rel, what).map_err(|e| InputError {
        message: e.message,
        fix: e.fix,
    })
}

/// Element count of a raw input file (checked against the element size).
fn file_len(name: &str, elem: ElemType, path: &Path) -> Result<u64, InputError> {
    let meta = std::fs::metadata(path).map_err(|e| InputError {
        message: format!("input `{name}`: cannot read {}: {e}", path.display()),
        fix: "the path is relative to the folder of the Program (or pipeline) file; check that the file exists".into(),
    })?;
    let size = elem.size_bytes() as u64;
    if meta.len() % size != 0 {
        return Err(InputError {
            message: format!(
                "input `{name}`: {} has {} bytes, not a multiple of the {elem} element size {size}",
                path.display(),
                meta.len()
            ),
            fix: format!("write whole {elem} elements (raw little-endian) into the file"),
        });
    }
    Ok(meta.len() / size)
}

/// Builds the launch shape and host buffers for `program`; `base_dir` resolves `file` inputs,
/// which must stay inside it (see [`resolve_input_file`]).
pub fn prepare(
    program: &Program,
    base_dir: &Path,
    workgroup: Option<[u32; 3]>,
    grid: Option<[u32; 3]>,
) -> Result<PreparedRun, InputError> {
    prepare_rooted(program, FileRoot::program_folder(base_dir), workgroup, grid)
}

/// [`prepare`] with `file` inputs allowed anywhere inside `files.root` (`--root DIR`).
pub fn prepare_rooted(
    program: &Program,
    files: FileRoot,
    workgroup: Option<[u32; 3]>,
    grid: Option<[u32; 3]>,
) -> Result<PreparedRun, InputError> {
    let plan = plan_run(program, &files, workgroup, grid)?;
    let spec = program.run.clone().unwrap_or_default();
    let input_of = |name: &str| spec.inputs.iter().find(|(n, _)| n == name).map(|(_, s)| s);
    let host = program.host_buffers();
    let mut buffers = Vec::with_capacity(host.len());
    for (i, (b, &len)) in host.iter().zip(&plan.lens).enumerate() {
        let data = match input_of(&b.name) {
            None => {
                let mut v = contents::alloc_bytes(&b.name, len * b.elem.size_bytes())?;
                v.resize(len * b.elem.size_bytes(), 0);
                v
            }
            Some(s) => buffer_bytes(&b.name, b.elem, len, &s.source, &files)?,
        };
        buffers.push(HostBuffer {
            name: b.name.clone(),
            elem: b.elem,
            access: b.access,
            binding: b.binding.unwrap_or(i as u32),
            data,
        });
    }
    Ok(PreparedRun {
        shape: plan.shape,
        buffers,
    })
}

/// Every check `run` makes of a Program's `run` section (inputs, launch shape, lengths,
/// memory footprint, `data` values, `random` ranges, `file` sizes) without allocating any
/// buffer: what `check` reports, through the same functions [`prepare_rooted`] uses.
pub fn check_run(program: &Program, files: &FileRoot) -> Result<LaunchShape, InputError> {
    let plan = plan_run(program, files, None, None)?;
    let spec = program.run.clone().unwrap_or_default();
    for (b, &len) in program.host_buffers().iter().zip(&plan.lens) {
        if let Some((_, s)) = spec.inputs.iter().find(|(n, _)| *n == b.name) {
            check_source(&b.name, b.elem, len, &s.source, files)?;
        }
    }
    Ok(plan.shape)
}

/// A run's launch shape and host buffer lengths, every size checked, nothing allocated.
struct RunPlan {
    shape: LaunchShape,
    /// Element count of each of `program.host_buffers()`, in that order.
    lens: Vec<usize>,
}

/// The size checks of [`prepare_rooted`] and [`check_run`]: inputs name host buffers, the
/// launch shape is sound, lengths fit u32 and the footprint fits [`MAX_TOTAL_BYTES`].
fn plan_run(
    program: &Program,
    files: &FileRoot,
    workgroup: Option<[u32; 3]>,
    grid: Option<[u32; 3]>,
) -> Result<RunPlan, InputError> {
    let spec = program.run.clone().unwrap_or_default();
    for (name, _) in &spec.inputs {
        match program.buffer(name) {
            Some(b) if b.access.is_host() => {}
            Some(_) => {
                return Err(InputError {
                    message: format!(
                    "run.inputs.{name}: `{name}` is a workgroup buffer; it has no host contents"
                ),
                    fix: format!("remove `{name}` from run.inputs"),
                })
            }
            None => {
                return Err(InputError {
                    message: format!("run.inputs.{name}: no buffer named `{name}`"),
                    fix: "name a host buffer declared in `buffers`".into(),
                })
            }
        }
    }
    let host = program.host_buffers();
    let input_of = |name: &str| spec.inputs.iter().find(|(n, _)| n == name).map(|(_, s)| s);

    // Lengths known up front; they may decide `elements`.
    let mut explicit = Vec::with_capacity(host.len());
    for b in &host {
        explicit.push(match input_of(&b.name) {
            Some(s) => explicit_len(&b.name, b.elem, &s.source, s.len, files)?,
            None => None,
        });
    }
    let workgroup_size = workgroup.unwrap_or(program.workgroup_size);
    let elements = spec.elements.or_else(|| {
        host.iter()
            .zip(&explicit)
            .filter(|(b, _)| matches!(b.access, Access::ReadWrite | Access::Write))
            .filter_map(|(_, l)| *l)
            .max()
    });
    let grid = match grid.or(spec.grid) {
        Some(g) => g,
        None => {
            let Some(n) = elements else {
                return Err(InputError {
                    message: format!(
                        "program `{}`: cannot tell how many invocations to run (no run.grid, no run.elements, no writable buffer with a known length)",
                        program.name
                    ),
                    fix: "add \"run\": {\"elements\": N} to the Program, or pass --grid X,Y,Z".into(),
                });
            };
            grid_for_elements(n, workgroup_size[0])?
        }
    };
    let shape = LaunchShape {
        workgroup_size,
        grid,
    };
    shape.check()?;
    let default_len = elements.unwrap_or_else(|| shape.invocations());

    // Sizes first, so that absurd requests fail before anything is allocated.
    let mut lens = Vec::with_capacity(host.len());
    let mut total: u128 = 0;
    for (b, l) in host.iter().zip(&explicit) {
        let len = l.unwrap_or(default_len);
        if len > u32::MAX as u64 {
            return Err(InputError {
                message: format!(
                    "buffer `{}` would have {len} elements; indices are u32",
                    b.name
                ),
                fix: format!(
                    "give `{}` at most 4294967295 elements (run.inputs.{}.len or run.elements)",
                    b.name, b.name
                ),
            });
        }
        total += len as u128 * b.elem.size_bytes() as u128;
        lens.push(len as usize);
    }
    let footprint = total * FOOTPRINT_COPIES as u128;
    if footprint > MAX_TOTAL_BYTES as u128 {
        return Err(InputError {
            message: format!(
                "host buffers of `{}` would take {total} bytes; with a staging copy of each the run needs {footprint} bytes, more than the {} GiB limit",
                program.name,
                MAX_TOTAL_BYTES >> 30
            ),
            fix: "use fewer elements (run.elements, run.inputs.<buf>.len)".into(),
        });
    }

    Ok(RunPlan { shape, lens })
}

/// The raw bytes of one host buffer of `len` elements from its contents `source` (`file`
/// paths resolved and confined by `files`); `data` and `file` must hold exactly `len`
/// elements. Shared by Programs' `run.inputs` and pipeline buffers.
pub fn buffer_bytes(
    name: &str,
    elem: ElemType,
    len: usize,
    source: &InputSource,
    files: &FileRoot,
) -> Result<Vec<u8>, InputError> {
    let path = check_source(name, elem, len, source, files)?;
    Ok(match source {
        InputSource::Fill(f) => contents::fill_bytes(name, elem, len, *f)?,
        InputSource::Data(d) => contents::data_bytes(name, elem, d)?,
        InputSource::File(_) => {
            let path = path.unwrap_or_default();
            // Read no more than the length checked: a file that grows meanwhile (or a path
            // swapped for a FIFO) is refused, not followed.
            let want = len as u64 * elem.size_bytes() as u64;
            let bytes = crate::util::read_limited(&path, want, &format!("input `{name}`"))
                .map_err(|e| InputError {
                    message: e.message,
                    fix: e.fix,
                })?;
            if bytes.len() as u64 != want {
                return Err(InputError {
                    message: format!(
                        "input `{name}`: {} changed size while it was read ({} bytes, expected {want})",
                        path.display(),
                        bytes.len()
                    ),
                    fix: "do not modify input files during a run".into(),
                });
            }
            bytes
        }
    })
}

/// Checks one buffer's contents `source` against its type and length without building it:
/// `data` has `len` elements that fit `elem`, a `random` range suits `elem`, a `file` holds
/// `len` elements (its resolved path is returned).
pub fn check_source(
    name: &str,
    elem: ElemType,
    len: usize,
    source: &InputSource,
    files: &FileRoot,
) -> Result<Option<PathBuf>, InputError> {
    match source {
        InputSource::Fill(f) => {
            contents::check_fill(name, elem, *f)?;
            Ok(None)
        }
        InputSource::Data(d) => {
            if d.len() != len {
                return Err(InputError {
                    message: format!(
                        "input `{name}`: len is {len} but data has {} elements",
                        d.len()
                    ),
                    fix: "make `len` equal to the number of data elements, or drop `len`".into(),
                });
            }
            contents::check_data(name, elem, d)?;
            Ok(None)
        }
        InputSource::File(f) => {
            let path = files.resolve(f, &format!("input `{name}`"))?;
            let n = file_len(name, elem, &path)?;
            if n != len as u64 {
                return Err(InputError {
                    message: format!(
                        "input `{name}`: len is {len} but {} holds {n} {elem} elements",
                        path.display(),
                    ),
                    fix: "make `len` match the file, or drop `len`".into(),
                });
            }
            Ok(Some(path))
        }
    }
}

/// `grid.x = ceil(elements / workgroup_x)`, y = z = 1, refusing a count beyond `u32`.
pub fn grid_for_elements(elements: u64, workgroup_x: u32) -> Result<[u32; 3], InputError> {
    crate::shape::grid_for_elements(elements, workgroup_x)
        .map_err(|(message, fix)| InputError { message, fix })
}

/// Loads a Program file and prepares its run (`file` inputs relative to the file's folder).
///
/// The Program is returned as parsed (not validated).
pub fn prepare_file(
    path: &Path,
    workgroup: Option<[u32; 3]>,
    grid: Option<[u32; 3]>,
) -> Result<(Program, PreparedRun), crate::util::Problem> {
    let program = crate::ir::load_program(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let run = prepare(&program, base, workgroup, grid)?;
    Ok((program, run))
}

impl crate::util::HasFix for InputError {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(InputError);

#[cfg(test)]
mod tests;

/// The default grid and host buffer lengths from the Program's `run` section (lengths only:
/// nothing is allocated).
pub fn default_shape(program: &Program, wg: [u32; 3]) -> (LaunchShape, Vec<(String, u64)>) {
    let run = program.run.clone().unwrap_or_default();
    let explicit: Vec<(String, Option<u64>)> = run
        .inputs
        .iter()
        .map(|(name, spec)| {
            let len = spec.len.or(match &spec.source {
                InputSource::Data(d) => Some(d.len() as u64),
                _ => None,
            });
            (name.clone(), len)
        })
        .collect();
    let elements = run.elements.unwrap_or_else(|| {
        program
            .host_buffers()
            .iter()
            .filter(|b| b.access.is_writable())
            .filter_map(|b| {
                explicit
                    .iter()
                    .find(|(n, _)| *n == b.name)
                    .and_then(|(_, l)| *l)
            })
            .max()
            .unwrap_or(0)
    });
    let grid = run.grid.unwrap_or([
        u32::try_from(elements.div_ceil(u64::from(wg[0].max(1)))).unwrap_or(u32::MAX),
        1,
        1,
    ]);
    let lens = program
        .host_buffers()
        .iter()
        .map(|b| {
            let l = explicit
                .iter()
                .find(|(n, _)| *n == b.name)
                .and_then(|(_, l)| *l)
                .unwrap_or(elements);
            (b.name.clone(), l)
        })
        .collect();
    (
        LaunchShape {
            workgroup_size: wg,
            grid,
        },
        lens,
    )
}
