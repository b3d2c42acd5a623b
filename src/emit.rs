//! PTX emitter: Program + launch shape + target -> PTX text, source map, ABI and stats.
//!
//! CONTRACT (the emitter work fills this in; keep these public types stable, add fields freely).

use serde::Serialize;

use crate::ir::{ElemType, Program};

/// What to emit for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmitOptions {
    /// Target SM version: 70, 75, 80, 86, 89 or 90.
    pub sm: u32,
    /// Threads per workgroup (CUDA block); overrides the Program's default.
    pub workgroup_size: [u32; 3],
    /// Emit `.file`/`.loc` pointing at the IR printer's lines.
    pub lineinfo: bool,
}

/// One kernel parameter pair of the ABI: a host buffer's pointer and its element count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AbiParam {
    /// Buffer name.
    pub buffer: String,
    /// Binding slot.
    pub binding: u32,
    /// Element type.
    pub elem: String,
    /// `.param` name of the `.u64` pointer.
    pub ptr_param: String,
    /// `.param` name of the `.u32` element count.
    pub len_param: String,
}

/// The kernel's launch interface.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct KernelAbi {
    /// Host buffers in binding order; each contributes (`.u64` pointer, `.u32` count).
    pub params: Vec<AbiParam>,
    /// Bytes of static `.shared` memory (workgroup buffers and emitter scratch).
    pub static_shared_bytes: u32,
    /// True when the kernel has a grid barrier: it then takes one more `.u64` parameter, a
    /// pointer to a zeroed scratch of [`KernelAbi::grid_sync_words`] u32 words, and must be
    /// launched cooperatively.
    pub grid_sync: bool,
    /// Scratch words the grid barrier needs (0 without one).
    pub grid_sync_words: u32,
}

/// Where the PTX lines of one node came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MapEntry {
    /// Node id (`body[1]`), or `prologue` / `epilogue`.
    pub node: String,
    /// 1-based inclusive PTX line ranges.
    pub lines: Vec<[u32; 2]>,
}

/// IR <-> PTX source map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct SourceMap {
    /// One entry per node that produced lines, in first-line order.
    pub entries: Vec<MapEntry>,
}

/// Counters about the emitted code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct EmitStats {
    /// Bounds checks emitted.
    pub bounds_checks_emitted: u32,
    /// Bounds checks proven unnecessary and left out.
    pub bounds_checks_elided: u32,
    /// PTX instruction lines.
    pub instructions: u32,
}

/// The emitter's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EmittedKernel {
    /// `.entry` name (the Program name).
    pub kernel_name: String,
    /// PTX module text.
    pub ptx: String,
    /// IR <-> PTX map.
    pub source_map: SourceMap,
    /// Launch interface.
    pub abi: KernelAbi,
    /// Counters.
    pub stats: EmitStats,
}

/// Why emission failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmitError {
    /// The Program has validation errors.
    #[error("program `{0}` is not valid; run `vyrescope check` for details\n  Fix: fix the reported diagnostics first")]
    Invalid(String),
    /// Unsupported target.
    #[error("unsupported target sm_{0}\n  Fix: use one of 70, 75, 80, 86, 89, 90")]
    Target(u32),
}

/// Emits PTX for `program` (validated and elaborated inside).
pub fn emit(program: &Program, opts: &EmitOptions) -> Result<EmittedKernel, EmitError> {
    let _ = (program, opts, ElemType::F32);
    Err(EmitError::Invalid(program.name.clone()))
}
