//! PTX emitter: Program + launch shape + target -> PTX text, source map, ABI and stats.
//!
//! [`emit_valid`] takes the validator's [`ProgramInfo`] (the Program with its literals typed
//! and its `let` types, proved once by the validator; [`emit`] validates first for callers
//! that hold a bare Program) and walks the typed Program with a [`writer::Writer`] that
//! records the owner of every PTX line (the source map). Emission is deterministic: the
//! same Program and options give byte-identical PTX and map.
//!
//! # Targets and PTX ISA versions
//!
//! Each target gets the oldest PTX ISA that knows it (so older drivers can JIT it); every
//! feature we use (`fence`/`ld.acquire`/`red.release` from 6.0, `nanosleep` 6.3, `redux.sync`
//! 7.0) is available there:
//!
//! | target | `.version` |
//! |---|---|
//! | sm_70, sm_75, sm_80 | 7.0 |
//! | sm_86 | 7.1 |
//! | sm_89, sm_90 | 7.8 |
//!
//! Tested with ptxas 13.0 (`tests/ptxas.rs`) for sm_80 and sm_90, with and without
//! `-lineinfo`. ptxas 13 cannot assemble for sm_70 any more; PTX for `.target sm_70` is
//! checked with `-arch=sm_75`.
//!
//! # Kernel ABI
//!
//! - The entry is named after the Program and declares `.maxntid X, Y, Z` (the workgroup
//!   size). The code uses the workgroup size as a compile-time constant (`gid = wgid * X +
//!   lid`), so it must be launched with exactly that block shape.
//! - Parameters, in binding order, per host buffer (`read`, `read_write`, `write`,
//!   `uniform`): `.param .u64 param_<name>_ptr` (device pointer) and `.param .u32
//!   param_<name>_len` (element count). Lengths never come from global memory.
//! - If the kernel has a grid barrier or dataflow waits (`ir::SyncOp`): one more `.param .u64
//!   param_grid_sync`, a pointer to `KernelAbi::scratch.words` u32 words ([`ScratchLayout`]),
//!   zeroed when allocated (2 for the grid barrier: arrival counter, generation; then the
//!   dataflow counters and flags); the launch must be cooperative. See [`grid_sync`] and `dataflow`.
//! - If the kernel has dataflow flags: then `.param .u32 param_sync_epoch`, the launch's
//!   epoch (never 0, one more than the previous launch's; `KernelAbi::scratch.epoch`).
//! - Workgroup buffers are static `.shared` arrays `wg_<name>` (no parameter).
//! - `read`/`uniform` buffers are loaded with `ld.global.nc`.
//!
//! # Semantics
//!
//! Identical to the reference interpreter (docs/semantics.md) bit for bit, except the
//! transcendental functions whose bounds are in [`precision`]. See `expr.rs` (operators),
//! `memory.rs` (bounds checks, atomics), `subgroup.rs`, `grid_sync.rs`, `math.rs`.
//!
//! # Optimisations
//!
//! All exact (the interpreter's results, bit for bit), each in its own module:
//! - [`unroll`]: loops with a small constant trip count become straight-line copies with
//!   the counter as a constant (`EmitOptions::unroll`, `emit --no-unroll` to compare);
//! - `fold.rs`: operations on constants are evaluated at emission time by the interpreter's
//!   own scalar operators, and exact integer identities (`x + 0`, `x * 1`) drop;
//! - [`crate::analysis::ranges`] + `bounds.rs`: value ranges of `u32` expressions and the facts of enclosing
//!   guards, early returns, loop bounds and `select` conditions prove accesses in bounds;
//!   unproven accesses keep their checks;
//! - `stmt.rs`: short `if` bodies are predicated (every access under the guard) unless an
//!   access in them keeps a check, then they are branched over;
//! - `address.rs`: constant index offsets go into the address operand (`[%r6+512]`);
//! - `cse.rs`: pure operations and addresses are computed once per scope;
//! - `subgroup.rs`: where every lane is surely active (whole-warp workgroup, no earlier
//!   `return`, outside any `if` or rolled loop: `Writer::full_warp`) warp operations take the
//!   constant full mask, shuffles need no inactive-source select and reductions no
//!   partial-warp path.

use serde::Serialize;

use crate::finding::Diagnostic;
use crate::ir::{ElemType, Program, ScratchLayout};
use crate::validate::ProgramInfo;

mod address;
mod bounds;
mod cse;
mod dataflow;
mod expr;
mod fold;
pub mod grid_sync;
mod math;
mod memory;
pub mod precision;
pub mod ptxas;
pub mod reg_estimate;
mod regs;
pub mod source_map;
mod stmt;
mod subgroup;
pub mod timeline;
pub mod unroll;
mod version;
mod writer;

use writer::{LineKind, Writer, EPILOGUE};

/// What to emit for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmitOptions {
    /// Target SM version: 70, 75, 80, 86, 89 or 90.
    pub sm: u32,
    /// Threads per workgroup (CUDA block); overrides the Program's default.
    pub workgroup_size: [u32; 3],
    /// Emit `.file`/`.loc` pointing at the IR printer's lines.
    pub lineinfo: bool,
    /// Fully unroll small constant-trip loops (see [`unroll`]); off gives the rolled loops,
    /// for comparison (`vyrescope emit --no-unroll`).
    pub unroll: bool,
    /// How grid barriers are lowered (see [`grid_sync`]); the default is the flip counter.
    pub grid_barrier: grid_sync::GridBarrier,
    /// Give a group of bounds-checked accesses one range test and an unchecked fast copy
    /// (see [`version`]) instead of one check per access. Off by default: on an H200 it
    /// measured no faster (stencil5_f32 1.012x, vadd_f32 1.006x the time of one check per
    /// access, BENCHMARKS.md); `emit --version-bounds` and `bench-kernel --version-bounds`
    /// turn it on for comparison.
    pub version_bounds: bool,
}

impl EmitOptions {
    /// sm_90, the Program's own workgroup size, no line info, unrolling on.
    pub fn for_program(program: &Program) -> Self {
        EmitOptions {
            sm: 90,
            workgroup_size: program.workgroup_size,
            lineinfo: false,
            unroll: true,
            grid_barrier: grid_sync::GridBarrier::default(),
            version_bounds: false,
        }
    }
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
    /// True when the kernel has a grid barrier or dataflow statements: it then takes one
    /// more `.u64` parameter, a pointer to a zeroed scratch of `scratch.words` u32 words, and
    /// must be launched cooperatively.
    pub grid_sync: bool,
    /// The scratch words the kernel uses (all zero without a grid barrier); with
    /// `scratch.epoch` it takes `param_sync_epoch` (`.u32`, after the scratch pointer).
    #[serde(flatten)]
    pub scratch: ScratchLayout,
    /// Block shape the kernel was emitted for (it must be launched with exactly this).
    pub workgroup_size: [u32; 3],
    /// Timeline records (`emit --timeline`): the kernel then takes one more `.u64`, the
    /// zeroed record buffer ([`timeline`]), after every other parameter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<timeline::TimelineSpec>,
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
///
/// The bounds-check counters count emitted accesses: each copy of an unrolled loop counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct EmitStats {
    /// Bounds checks emitted.
    pub bounds_checks_emitted: u32,
    /// Bounds checks proven unnecessary and left out (an access in a `select` arm whose
    /// condition proves it counts here too: it runs under that condition's predicate).
    pub bounds_checks_elided: u32,
    /// Accesses given a versioned fast path: one range test for a group of accesses, an
    /// unchecked copy of their statements where it passes and the checked copy elsewhere
    /// (those checks also count as emitted, the fast copies as elided).
    pub bounds_checks_versioned: u32,
    /// Loops fully unrolled (constant trip count within the [`unroll`] limits).
    pub loops_unrolled: u32,
    /// PTX instruction lines.
    pub instructions: u32,
    /// Registers declared per class (`%r` -> count), before ptxas allocation.
    pub virtual_registers: u32,
    /// Total PTX lines.
    pub lines: u32,
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
    /// The Program has validation errors: the first one, with its code and node.
    Invalid {
        /// The Program's name.
        program: String,
        /// Its first validation error.
        diagnostic: Box<Diagnostic>,
    },
    /// Unsupported target.
    Target(u32),
    /// Unusable workgroup size.
    Workgroup([u32; 3]),
    /// A construct the emitter does not lower.
    Unsupported(String),
    /// An emitter invariant broke (a bug, or a Program the validator should have rejected).
    Internal(String),
}

/// `ptx` (an emitted kernel) with `.minnctapersm blocks` after its `.maxntid`: ptxas then
/// keeps registers low enough for `blocks` blocks of that size per SM (spilling if it must),
/// as CUDA's `__launch_bounds__` second argument does. Unchanged when `blocks` is 0 or the
/// entry already has one.
pub fn with_min_blocks_per_sm(ptx: &str, blocks: u32) -> String {
    if blocks == 0 || ptx.contains(".minnctapersm") {
        return ptx.to_string();
    }
    let mut out = String::with_capacity(ptx.len() + 24);
    for line in ptx.split_inclusive('\n') {
        out.push_str(line);
        if line.starts_with(".maxntid ") {
            out.push_str(&format!(".minnctapersm {blocks}\n"));
        }
    }
    out
}

/// PTX entry symbol of the kernel named `name` (a valid kernel name, `[A-Za-z_][A-Za-z0-9_]*`).
/// PTX identifiers that start with `_` need a second character, and `WARP_SZ` is a predefined
/// PTX identifier, so those two names get a `_kernel` suffix; every other name is used as is.
pub(crate) fn entry_symbol(name: &str) -> String {
    if name == "_" || name == "WARP_SZ" {
        format!("{name}_kernel")
    } else {
        name.to_string()
    }
}

/// `text` made safe for a one-line PTX comment: ptxas reads ASCII only, so every character
/// outside printable ASCII (non-ASCII letters, control characters) is written as `\u{XXXX}`.
fn comment_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c == ' ' || c.is_ascii_graphic() {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:04x}}}", c as u32));
        }
    }
    out
}

/// The PTX ISA version for target `sm` (see the module docs).
pub fn ptx_isa(sm: u32) -> Result<&'static str, EmitError> {
    Ok(match sm {
        70 | 75 | 80 => "7.0",
        86 => "7.1",
        89 | 90 => "7.8",
        _ => return Err(EmitError::Target(sm)),
    })
}

/// Emits PTX for `program`, validating it first: the convenience for front ends that hold
/// a Program only. Stages that already hold the validator's [`ProgramInfo`] call
/// [`emit_valid`], so that nothing validates a Program twice.
pub fn emit(program: &Program, opts: &EmitOptions) -> Result<EmittedKernel, EmitError> {
    emit_valid(&validated(program)?, opts)
}

/// Emits PTX for the Program `info` describes (the validator accepted it; its typed literals
/// and `let` types are read from `info`, not derived again).
pub fn emit_valid(info: &ProgramInfo, opts: &EmitOptions) -> Result<EmittedKernel, EmitError> {
    emit_inner(info, opts, None)
}

/// Emits PTX for `program` instrumented to record the units of `spec` (see [`timeline`]),
/// validating it first (see [`emit`]).
pub fn emit_timeline(
    program: &Program,
    opts: &EmitOptions,
    spec: &timeline::TimelineSpec,
) -> Result<EmittedKernel, EmitError> {
    emit_timeline_valid(&validated(program)?, opts, spec)
}

/// [`emit_timeline`] for a Program the validator already accepted.
pub fn emit_timeline_valid(
    info: &ProgramInfo,
    opts: &EmitOptions,
    spec: &timeline::TimelineSpec,
) -> Result<EmittedKernel, EmitError> {
    let slots = spec.slots_per_block;
    if slots == 0 || !slots.is_power_of_two() || slots > timeline::MAX_SLOTS {
        return Err(EmitError::Internal(format!(
            "timeline of {slots} record slots per block (a power of two up to {} expected)",
            timeline::MAX_SLOTS
        )));
    }
    emit_inner(info, opts, Some(spec.clone()))
}

/// Validates `program` for emission: the validator's facts, or its first error as the
/// emitter reports it ([`EmitError::Invalid`]). For front ends that emit and then use the
/// same facts elsewhere (the launch rules), so the Program is validated once.
pub fn validated(program: &Program) -> Result<ProgramInfo, EmitError> {
    crate::validate::prove(program).map_err(|e| EmitError::Invalid {
        diagnostic: Box::new(e.first_error().cloned().unwrap_or_else(|| {
            Diagnostic::error(
                "V000",
                None,
                e.to_string(),
                "fix the Program's validation errors",
            )
        })),
        program: e.program,
    })
}

fn emit_inner(
    info: &ProgramInfo,
    opts: &EmitOptions,
    timeline: Option<timeline::TimelineSpec>,
) -> Result<EmittedKernel, EmitError> {
    let isa = ptx_isa(opts.sm)?;
    let [x, y, z] = opts.workgroup_size;
    if x == 0
        || y == 0
        || z == 0
        || z > 64
        || (x as u64 * y as u64 * z as u64) > 1024
        || x > 1024
        || y > 1024
    {
        return Err(EmitError::Workgroup(opts.workgroup_size));
    }
    let prog = info.typed();
    let printed = crate::ir::print::print_program_typed(info.program(), info.let_types());
    let mut w = Writer::new(prog, opts, printed);
    w.timeline = timeline.map(timeline::State::new);
    w.timeline_setup();
    w.stmts(&prog.body)?;
    w.leave_node(EPILOGUE);
    w.timeline_kernel_end(None);
    w.ins("ret");
    Ok(assemble(w, isa))
}

/// Lays out the module and builds the source map from the recorded line owners.
fn assemble(mut w: Writer<'_>, isa: &str) -> EmittedKernel {
    let prog = w.prog;
    let opts = w.opts;
    let scratch = w.out.scratch;
    let grid_sync = scratch.used();
    let timeline = w.timeline_spec().cloned();
    let hosts = prog.host_buffers();
    let params: Vec<AbiParam> = hosts
        .iter()
        .map(|b| AbiParam {
            buffer: b.name.clone(),
            binding: b.binding.unwrap_or(0),
            elem: b.elem.name().to_string(),
            ptr_param: memory::ptr_param(&b.name),
            len_param: memory::len_param(&b.name),
        })
        .collect();
    let shared: Vec<(String, ElemType, u32)> = prog
        .buffers
        .iter()
        .filter(|b| !b.access.is_host())
        .map(|b| (b.name.clone(), b.elem, b.count.unwrap_or(0)))
        .collect();
    let shared_bytes: u32 = shared
        .iter()
        .map(|(_, e, c)| e.size_bytes() as u32 * c)
        .sum();
    let entry = entry_symbol(&prog.name);
    let module = Module {
        prog,
        opts,
        isa,
        hosts: &hosts,
        params: &params,
        shared: &shared,
        scratch,
        timeline: timeline.as_ref(),
    };
    let mut out = module.header();
    out.extend(module.entry(&entry));
    let owned = body_lines(&mut w, &shared);
    let first = out.len() as u32 + 1;
    let mut instructions = 0u32;
    let mut attributions: Vec<(u32, usize)> = Vec::new();
    for (i, (text, owner, kind)) in owned.into_iter().enumerate() {
        if kind == LineKind::Instr {
            instructions += 1;
        }
        attributions.push((first + i as u32, owner));
        out.push(text);
    }
    out.push("}".into());
    let source_map = source_map::build(
        attributions
            .iter()
            .map(|(l, o)| (*l, w.owners.names[*o].as_str())),
    );
    let mut ptx = out.join("\n");
    ptx.push('\n');
    let virtual_registers = regs::RegClass::ALL
        .iter()
        .map(|c| w.out.regs.count(*c))
        .sum();
    let mut stats = w.out.stats.clone();
    stats.instructions = instructions;
    stats.virtual_registers = virtual_registers;
    stats.lines = out.len() as u32;
    EmittedKernel {
        kernel_name: entry,
        ptx,
        source_map,
        abi: KernelAbi {
            params,
            static_shared_bytes: shared_bytes,
            grid_sync,
            scratch,
            workgroup_size: opts.workgroup_size,
            timeline,
        },
        stats,
    }
}

/// What the lines around a kernel's body say: its Program, target, ABI and workgroup arrays.
struct Module<'a> {
    prog: &'a Program,
    opts: &'a EmitOptions,
    isa: &'a str,
    hosts: &'a [&'a crate::ir::BufferDecl],
    params: &'a [AbiParam],
    /// Workgroup arrays: name, element type, count.
    shared: &'a [(String, ElemType, u32)],
    scratch: ScratchLayout,
    timeline: Option<&'a timeline::TimelineSpec>,
}

impl Module<'_> {
    /// The comment block the module opens with: program, target, workgroup, the ABI's
    /// parameters in order and the workgroup arrays.
    fn header(&self) -> Vec<String> {
        let (prog, opts, isa, scratch) = (self.prog, self.opts, self.isa, self.scratch);
        let [wx, wy, wz] = opts.workgroup_size;
        let mut out: Vec<String> = Vec::new();
        out.push("//".into());
        out.push(format!(
            "// Generated by vyrescope {} (deterministic; do not edit)",
            env!("CARGO_PKG_VERSION")
        ));
        match &prog.doc {
            Some(d) => out.push(format!(
                "// program:   {} ({})",
                prog.name,
                comment_text(d.lines().next().unwrap_or(""))
            )),
            None => out.push(format!("// program:   {}", prog.name)),
        }
        out.push(format!("// target:    sm_{} (PTX ISA {isa})", opts.sm));
        out.push(format!(
            "// workgroup: {wx} x {wy} x {wz} (launch with exactly this block shape)"
        ));
        out.push("// ABI (kernel parameters, in order):".into());
        for (b, p) in self.hosts.iter().zip(self.params) {
            out.push(format!(
                "//   {:<24} .u64  {} buffer `{}` (binding {}, {})",
                p.ptr_param,
                b.elem,
                b.name,
                p.binding,
                b.access.name()
            ));
            out.push(format!(
                "//   {:<24} .u32  element count of `{}`",
                p.len_param, b.name
            ));
        }
        if scratch.used() {
            out.push(format!(
                "//   {:<24} .u64  grid-barrier scratch: {} zeroed u32 words; cooperative launch",
                grid_sync::GRID_SYNC_PARAM,
                scratch.words
            ));
        }
        if scratch.epoch {
            out.push(format!(
                "//   {:<24} .u32  launch epoch: what a dataflow flag holds once set",
                dataflow::SYNC_EPOCH_PARAM
            ));
        }
        if let Some(t) = self.timeline {
            out.push(format!(
                "//   {:<24} .u64  timeline records: {} x {} bytes per block, zeroed",
                timeline::TIMELINE_PARAM,
                t.slots_per_block,
                timeline::RECORD_BYTES
            ));
        }
        for (n, e, c) in self.shared {
            out.push(format!(
                "// shared:    {} {e}[{c}] ({} bytes)",
                memory::shared_symbol(n),
                e.size_bytes() as u32 * c
            ));
        }
        out.push("//".into());
        out.push(String::new());
        out
    }

    /// The module directives and the kernel's entry up to its opening brace: parameters in
    /// ABI order, then the block shape.
    fn entry(&self, entry: &str) -> Vec<String> {
        let (opts, scratch) = (self.opts, self.scratch);
        let [wx, wy, wz] = opts.workgroup_size;
        let mut out: Vec<String> = Vec::new();
        out.push(format!(".version {}", self.isa));
        out.push(format!(".target sm_{}", opts.sm));
        out.push(".address_size 64".into());
        if opts.lineinfo {
            out.push(String::new());
            out.push(format!(".file 1 \"{}.vir\"", self.prog.name));
        }
        out.push(String::new());
        out.push(format!(".visible .entry {entry}("));
        let mut plist: Vec<String> = Vec::new();
        for p in self.params {
            plist.push(format!("\t.param .u64 {}", p.ptr_param));
            plist.push(format!("\t.param .u32 {}", p.len_param));
        }
        if scratch.used() {
            plist.push(format!("\t.param .u64 {}", grid_sync::GRID_SYNC_PARAM));
        }
        if scratch.epoch {
            plist.push(format!("\t.param .u32 {}", dataflow::SYNC_EPOCH_PARAM));
        }
        if self.timeline.is_some() {
            plist.push(format!("\t.param .u64 {}", timeline::TIMELINE_PARAM));
        }
        let n = plist.len();
        for (i, p) in plist.into_iter().enumerate() {
            out.push(if i + 1 < n { format!("{p},") } else { p });
        }
        out.push(")".into());
        out.push(format!(".maxntid {wx}, {wy}, {wz}"));
        out.push("{".into());
        out
    }
}

/// The kernel body's lines with the node that owns each: register and workgroup-array
/// declarations and the hoisted prologue (owned by the prologue), then the statements.
fn body_lines(
    w: &mut Writer<'_>,
    shared: &[(String, ElemType, u32)],
) -> Vec<(String, usize, LineKind)> {
    let mut owned: Vec<(String, usize, LineKind)> = Vec::new();
    for d in w.out.regs.declarations() {
        owned.push((d, writer::PROLOGUE, LineKind::Directive));
    }
    for (n, e, c) in shared {
        let align = e.size_bytes().max(4);
        owned.push((
            format!(
                "\t.shared .align {align} .b8 {}[{}];",
                memory::shared_symbol(n),
                e.size_bytes() as u32 * c
            ),
            writer::PROLOGUE,
            LineKind::Directive,
        ));
    }
    if !w.prologue.is_empty() {
        owned.push((
            "\t// prologue: parameters, ids (hoisted)".into(),
            writer::PROLOGUE,
            LineKind::Comment,
        ));
    }
    let lines = std::mem::take(&mut w.prologue)
        .into_iter()
        .chain(std::mem::take(&mut w.body));
    for l in lines {
        owned.push((l.text, l.owner, l.kind));
    }
    owned
}

impl crate::util::HasFix for EmitError {
    fn message(&self) -> String {
        match self {
            Self::Invalid { program, diagnostic } => format!("program `{program}` is not valid (`vyrescope check` lists every error): {}", diagnostic.headline()),
            Self::Target(a0) => format!("unsupported target sm_{a0}"),
            Self::Workgroup(a0) => format!("workgroup size {a0:?} is not launchable (each axis >= 1, at most 1024 threads, z <= 64)"),
            Self::Unsupported(a0) => format!("cannot emit {a0}"),
            Self::Internal(a0) => format!("internal emitter error: {a0}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::Invalid { diagnostic, .. } => diagnostic.fix.clone(),
            Self::Target(_) => "use one of 70, 75, 80, 86, 89, 90".to_string(),
            Self::Workgroup(_) => "pass a workgroup size such as 256,1,1".to_string(),
            Self::Unsupported(_) => "rewrite the Program without it".to_string(),
            Self::Internal(_) => "report this with the Program file".to_string(),
        }
    }
}

crate::util::problem::into_problem!(EmitError);
