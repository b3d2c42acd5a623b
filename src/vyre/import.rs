//! vyre `Program` -> vyrescope [`Program`] plus diagnostics (see `docs/vyre.md`).
//!
//! Buffers, statements and expressions map one to one where the format has the same
//! construct. Where vyre's CUDA backend computes something else than the format defines, the
//! import writes what vyre computes explicitly, so that the reference interpreter gives the
//! result vyre's own kernel gives:
//!
//! - a global load (and, in kernels without shared memory or barriers, a global store) with a
//!   runtime index clamps an out-of-range index to element 0: `load(b, select(i < len(b), i, 0))`
//!   unless an enclosing `if i < len(b)` or an earlier `if i >= len(b) { return }` proves it;
//! - kernels without shared memory or barriers end invocations past vyre's dispatch element
//!   count at once: a leading `if gid.x >= max(len(..)) { return }`;
//! - 32-bit shift amounts are taken modulo 32, and `u32` division by zero gives `u32::MAX`.
//!
//! Global atomics that vyre leaves unchecked are a warning. Anything without an equivalent is
//! an error diagnostic naming the vyre node by its position (`entry[0].body[2].then[0]`) and is
//! left out of the Program, never silently dropped.

use std::collections::{BTreeSet, HashMap, HashSet};

use vyre_foundation::ir::{
    BufferAccess, BufferDecl as VyreBuffer, DataType, MemoryKind, Node as VNode,
    Program as VyreProgram,
};

use crate::finding::Diagnostic;
use crate::ir::{
    Access, BarrierScope, BinOp, BufferDecl, Builtin, ElemType, Expr, Fill, InputSource, InputSpec,
    Literal, NodeId, Program, RunSpec, Scalar, ScalarType, Stmt, StmtKind,
};

mod exit;
mod expr;
mod forms;
pub mod graph;
mod guards;
mod shifts;
mod size;
mod stmt;

/// The most statement and expression nodes an imported Program may have (error `VY004`
/// beyond): far above any real kernel, far below what would exhaust memory later.
pub const MAX_IMPORTED_NODES: usize = 1_000_000;

/// Element count given to runtime-sized buffers (vyre `count` 0) in the imported `run`
/// section; `vyrescope run --len`-style overrides or an edited `run` section change it.
pub const DEFAULT_RUNTIME_LEN: u64 = 1024;

/// The generator name vyre gives the region wrapping a whole Program's entry.
const ROOT_REGION: &str = "vyre.program.root";

/// A converted Program and the findings of the conversion.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The Program; statements that could not be converted are left out (each one is an
    /// error in `diagnostics`).
    pub program: Program,
    /// Errors for constructs without an equivalent, warnings and notes on semantics.
    pub diagnostics: Vec<Diagnostic>,
    /// vyre buffer name -> the Program's (renamed where vyre's is not an identifier).
    pub buffer_names: HashMap<String, String>,
    /// The host buffers (our names) whose lengths set vyre's dispatch element count: the
    /// largest of them is the count (the rule of vyre's early exit).
    pub count_buffers: Vec<String>,
}

/// Converts `vyre` into a Program named `name` (an identifier).
pub fn import_program(vyre: &VyreProgram, name: &str) -> Imported {
    let mut cx = Cx::new(vyre);
    cx.buffers(vyre);
    let mut body = Vec::new();
    if !cx.full_workgroup {
        body.push(cx.early_exit());
    }
    let entry: &[VNode] = &vyre.entry;
    match entry {
        [VNode::Region {
            generator, body: b, ..
        }] if generator.as_str() == ROOT_REGION => {
            cx.list(b, "entry[0].body", "body", &mut body);
        }
        _ => cx.list(entry, "entry", "body", &mut body),
    }
    // The amounts range analysis proves below 32 need no mask (the export's own proof).
    let program_wg = vyre.workgroup_size.map(|d| d.max(1));
    let unmasked = shifts::settle(&cx.scratch, program_wg, &mut body);
    cx.masked_shifts = cx.masked_shifts.saturating_sub(unmasked);
    // The exit repeats what the Program does when nothing past the count has an effect:
    // leave it out then, so an import after an export gives the exported Program back.
    let mut exit_kept = !cx.full_workgroup;
    if exit_kept {
        let counted: Vec<String> = cx.count_buffers().iter().map(|b| b.name.clone()).collect();
        if body.len() > 1 && exit::redundant(&cx.scratch, program_wg, &body[1..], &counted) {
            body.remove(0);
            exit_kept = false;
            cx.diags.retain(|d| d.code != "VY012");
            cx.info(
                "VY012",
                "vyre's kernel ends every invocation whose global x id is at least the dispatch \
                 element count; no such invocation has an effect here (each store and atomic \
                 is guarded by gid.x < len of a counted buffer, or indexes one at or above \
                 gid.x without wrapping), so the Program needs no early exit of its own"
                    .into(),
                "nothing to do; the results equal vyre's",
            );
        }
    }
    crate::ir::parse::assign_ids(&mut body, "body");
    let nodes = size::program_nodes(&body);
    if nodes > MAX_IMPORTED_NODES {
        cx.error(
            "VY004",
            None,
            format!(
                "the converted Program would have {nodes} statement and expression nodes, more \
                 than the {MAX_IMPORTED_NODES} an import accepts"
            ),
            "split the vyre Program into smaller kernels, or bind repeated sub-expressions \
             with `let` in vyre",
        );
        body.clear();
    }
    let run = cx.run_section();
    let mut doc = format!(
        "Imported from a vyre Program (vyre 0.7.2 wire format); statement ids differ from vyre's \
         entry positions{}.",
        if exit_kept {
            " (body[0] is vyre's early exit past the dispatch element count)"
        } else {
            ""
        }
    );
    for (ours, generator, theirs) in &cx.regions {
        doc.push_str(&format!(" {ours}: vyre region `{generator}` ({theirs})."));
    }
    cx.summary_notes();
    let count_buffers = cx.count_buffers().iter().map(|b| b.name.clone()).collect();
    let program = Program {
        name: name.to_string(),
        doc: Some(doc),
        workgroup_size: vyre.workgroup_size.map(|d| d.max(1)),
        buffers: cx.scratch.buffers.clone(),
        body,
        run: Some(run),
    };
    Imported {
        program,
        diagnostics: cx.diags,
        buffer_names: cx.buffer_names,
        count_buffers,
    }
}

/// The condition of the early exit the import puts first in `vyre`'s converted body (`None`
/// when vyre's kernel keeps every lane alive and has none): the export leaves out a first
/// statement `if cond { return }`, since vyre's kernel does the same by itself.
pub fn dispatch_exit(vyre: &VyreProgram) -> Option<Expr> {
    let mut cx = Cx::new(vyre);
    cx.buffers(vyre);
    (!cx.full_workgroup).then(|| cx.exit_cond())
}

/// `if cond { return }` with node id `id` (its `return` gets its id when ids are assigned).
fn return_if(cond: Expr, id: String) -> Stmt {
    Stmt {
        id: NodeId::new(id),
        kind: StmtKind::If {
            cond,
            then: vec![Stmt {
                id: NodeId::new(String::new()),
                kind: StmtKind::Return,
            }],
            otherwise: Vec::new(),
            has_else: false,
        },
    }
}

/// `s` as an identifier `[A-Za-z_][A-Za-z0-9_]*`: other characters become `_`, a leading digit
/// gets a `_` in front.
pub fn identifier(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// Conversion state.
struct Cx {
    /// The Program so far (buffers only), for expression types.
    scratch: Program,
    /// vyre buffer name -> ours.
    buffer_names: HashMap<String, String>,
    /// vyre variable name -> ours.
    var_names: HashMap<String, String>,
    /// Our names in use (variables), so that two vyre names never share one.
    used_vars: HashSet<String>,
    /// Our variable types.
    var_types: HashMap<String, ScalarType>,
    /// vyre variable names that some `Assign` changes (their facts do not hold later).
    assigned: HashSet<String>,
    /// The kernel keeps every lane alive (shared memory or a barrier): vyre predicates global
    /// stores and atomics instead of clamping them, and has no early exit.
    full_workgroup: bool,
    /// The Program has shared memory, atomics or subgroup operations: vyre's driver then
    /// counts its dispatch over every host buffer, not only the writable ones.
    count_all: bool,
    /// Facts `index < len(buffer)` that hold where the current statement runs.
    facts: Vec<(Expr, String)>,
    /// (our block id, generator, vyre path) of every region kept as a block.
    regions: Vec<(String, String, String)>,
    /// vyre's static element count per host buffer (our name; 0 = runtime-sized).
    vyre_counts: HashMap<String, u32>,
    /// Host buffers vyre marks as outputs (our names): zero-filled in the `run` section.
    vyre_outputs: HashSet<String>,
    /// Counters for the summary notes.
    clamped_loads: usize,
    clamped_stores: usize,
    masked_shifts: usize,
    guarded_divisions: usize,
    renamed: BTreeSet<String>,
    diags: Vec<Diagnostic>,
    /// `let` statements binding a guarded expression once (see [`Cx::bind_once`]), waiting to
    /// be placed before the statement being converted.
    hoisted: Vec<Stmt>,
    /// Variables made by [`Cx::bind_once`] so far (for fresh names).
    bound: usize,
    /// How often each vyre variable is read (see [`guards::bound_store`]).
    var_uses: HashMap<String, usize>,
}

impl Cx {
    fn new(vyre: &VyreProgram) -> Self {
        let mut assigned = HashSet::new();
        let mut barrier = false;
        let mut special = false;
        stmt::scan(&vyre.entry, &mut assigned, &mut barrier, &mut special);
        let mut var_uses = HashMap::new();
        guards::var_uses(&vyre.entry, &mut var_uses);
        let shared = vyre
            .buffers
            .iter()
            .any(|b| b.kind == MemoryKind::Shared || b.access == BufferAccess::Workgroup);
        Cx {
            scratch: Program {
                name: "scratch".into(),
                doc: None,
                workgroup_size: [1, 1, 1],
                buffers: Vec::new(),
                body: Vec::new(),
                run: None,
            },
            buffer_names: HashMap::new(),
            var_names: HashMap::new(),
            used_vars: HashSet::new(),
            var_types: HashMap::new(),
            assigned,
            full_workgroup: shared || barrier,
            count_all: shared || special,
            facts: Vec::new(),
            regions: Vec::new(),
            vyre_counts: HashMap::new(),
            vyre_outputs: HashSet::new(),
            clamped_loads: 0,
            clamped_stores: 0,
            masked_shifts: 0,
            guarded_divisions: 0,
            renamed: BTreeSet::new(),
            diags: Vec::new(),
            hoisted: Vec::new(),
            bound: 0,
            var_uses,
        }
    }

    fn error(&mut self, code: &'static str, node: Option<&str>, message: String, fix: &str) {
        self.diags.push(Diagnostic::error(
            code,
            node.map(NodeId::from),
            message,
            fix,
        ));
    }

    fn warning(&mut self, code: &'static str, node: Option<&str>, message: String, fix: &str) {
        self.diags.push(Diagnostic::warning(
            code,
            node.map(NodeId::from),
            message,
            fix,
        ));
    }

    fn info(&mut self, code: &'static str, message: String, fix: &str) {
        self.diags.push(Diagnostic::info(code, None, message, fix));
    }

    /// Our declarations for vyre's buffers, in vyre's order.
    fn buffers(&mut self, vyre: &VyreProgram) {
        let mut bindings = HashSet::new();
        let mut names = HashSet::new();
        for (i, b) in vyre.buffers.iter().enumerate() {
            let place = format!("buffers[{i}]");
            let Some(access) = self.access(b, &place) else {
                continue;
            };
            let Some(elem) = elem_type(&b.element) else {
                self.error(
                    "VY003",
                    None,
                    format!(
                        "vyre {place} (`{}`): element type `{}` has no vyrescope equivalent \
                         (element types: bool u8 i8 u16 i16 u32 i32 u64 i64 f16 f32 f64)",
                        b.name, b.element
                    ),
                    "store the data in one of those element types in the vyre Program",
                );
                continue;
            };
            let mut name = identifier(&b.name);
            while !names.insert(name.clone()) {
                name.push('_');
            }
            if name != *b.name {
                self.renamed
                    .insert(format!("buffer `{}` -> `{name}`", b.name));
            }
            self.buffer_names.insert(b.name.to_string(), name.clone());
            let (binding, count) = if access == Access::Workgroup {
                if b.count == 0 {
                    self.error(
                        "VY003",
                        None,
                        format!(
                            "vyre {place} (`{}`): a workgroup buffer without a count",
                            b.name
                        ),
                        "give the workgroup buffer its element count (`BufferDecl::workgroup`)",
                    );
                    continue;
                }
                (None, Some(b.count))
            } else {
                // vyre's lowering moves a binding that collides to the next free slot.
                let mut slot = b.binding;
                while !bindings.insert(slot) {
                    slot = slot.saturating_add(1);
                }
                self.vyre_counts.insert(name.clone(), b.count);
                if b.is_output {
                    self.vyre_outputs.insert(name.clone());
                }
                (Some(slot), None)
            };
            self.scratch.buffers.push(BufferDecl {
                name,
                binding,
                access,
                elem,
                count,
            });
        }
    }

    /// Our access mode for a vyre buffer, as vyre's lowering classifies it.
    fn access(&mut self, b: &VyreBuffer, place: &str) -> Option<Access> {
        let refuse = |why: &str| {
            format!(
                "vyre {place} (`{}`): memory kind {:?} {why}",
                b.name, b.kind
            )
        };
        match b.kind {
            MemoryKind::Shared => return Some(Access::Workgroup),
            MemoryKind::Local => {
                let m = refuse("(per-invocation scratch) has no vyrescope equivalent; vyre's PTX backend refuses it too");
                self.error(
                    "VY003",
                    None,
                    m,
                    "use variables (`let`) or a workgroup buffer",
                );
                return None;
            }
            MemoryKind::Persistent => {
                let m = refuse("has no vyrescope equivalent; vyre's lowering refuses it too");
                self.error("VY003", None, m, "declare it as a storage buffer");
                return None;
            }
            MemoryKind::Uniform | MemoryKind::Push => return Some(Access::Uniform),
            MemoryKind::Readonly => return Some(Access::Read),
            _ => {}
        }
        match &b.access {
            BufferAccess::ReadOnly => Some(Access::Read),
            BufferAccess::ReadWrite => Some(Access::ReadWrite),
            BufferAccess::WriteOnly => Some(Access::Write),
            BufferAccess::Uniform => Some(Access::Uniform),
            BufferAccess::Workgroup => Some(Access::Workgroup),
            other => {
                let m = format!(
                    "vyre {place} (`{}`): access {other:?} has no vyrescope equivalent",
                    b.name
                );
                self.error(
                    "VY003",
                    None,
                    m,
                    "use read, read_write, write, uniform or workgroup",
                );
                None
            }
        }
    }

    /// Host buffers vyre's driver takes its dispatch element count from: all of them when the
    /// kernel has shared memory, atomics or subgroup operations, else the writable ones (all
    /// if none is).
    fn count_buffers(&self) -> Vec<&BufferDecl> {
        let host: Vec<&BufferDecl> = self
            .scratch
            .buffers
            .iter()
            .filter(|b| b.access.is_host())
            .collect();
        if self.count_all {
            return host;
        }
        let writable: Vec<&BufferDecl> = host
            .iter()
            .copied()
            .filter(|b| matches!(b.access, Access::ReadWrite | Access::Write))
            .collect();
        if writable.is_empty() {
            host
        } else {
            writable
        }
    }

    /// `gid.x >= max(len(..))`: the condition of [`Cx::early_exit`].
    fn exit_cond(&self) -> Expr {
        let count = self
            .count_buffers()
            .iter()
            .map(|b| Expr::Len(b.name.clone()))
            .reduce(|a, b| Expr::Binary(BinOp::Max, Box::new(a), Box::new(b)))
            .unwrap_or(Expr::Lit(Literal::Typed(Scalar::U32(1))));
        Expr::Binary(
            BinOp::Ge,
            Box::new(Expr::Builtin(Builtin::GlobalId(crate::ir::Axis::X))),
            Box::new(count),
        )
    }

    /// `if gid.x >= max(len(..)) { return }`: vyre's kernels without shared memory or barriers
    /// end invocations past the dispatch element count first thing.
    fn early_exit(&mut self) -> Stmt {
        let cond = self.exit_cond();
        self.info(
            "VY012",
            "vyre's kernel has no shared memory and no barrier, so it ends every invocation whose \
             global x id is at least the dispatch element count (the largest length of the \
             buffers vyre counts); body[0] does the same"
                .into(),
            "nothing to do; it keeps the results equal to vyre's",
        );
        return_if(cond, String::new())
    }

    /// A `run` section: one invocation per element of the largest counted buffer, inputs
    /// random, outputs zero; buffers of count 0 get [`DEFAULT_RUNTIME_LEN`] elements.
    fn run_section(&mut self) -> RunSpec {
        let mut inputs = Vec::new();
        let mut defaulted = Vec::new();
        for (i, b) in self.scratch.buffers.iter().enumerate() {
            if !b.access.is_host() {
                continue;
            }
            let len = self.vyre_counts.get(&b.name).copied().unwrap_or(0);
            let len = if len == 0 {
                defaulted.push(b.name.clone());
                DEFAULT_RUNTIME_LEN
            } else {
                u64::from(len)
            };
            let fill = if matches!(b.access, Access::Write) || self.vyre_outputs.contains(&b.name) {
                Fill::Zeros
            } else {
                Fill::Random {
                    seed: i as u64 + 1,
                    range: None,
                }
            };
            inputs.push((
                b.name.clone(),
                InputSpec {
                    len: Some(len),
                    source: InputSource::Fill(fill),
                },
            ));
        }
        let elements = self
            .count_buffers()
            .iter()
            .filter_map(|b| inputs.iter().find(|(n, _)| *n == b.name))
            .filter_map(|(_, s)| s.len)
            .max()
            .unwrap_or(1);
        if !defaulted.is_empty() {
            self.info(
                "VY013",
                format!(
                    "runtime-sized vyre buffer(s) {} (count 0) get {DEFAULT_RUNTIME_LEN} elements \
                     in the imported `run` section",
                    defaulted
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "edit `run.inputs.<buffer>.len` in the imported JSON for other sizes",
            );
        }
        RunSpec {
            grid: None,
            elements: Some(elements),
            inputs,
        }
    }

    /// Info notes summing up the semantic rewrites.
    fn summary_notes(&mut self) {
        let mut parts = Vec::new();
        if self.clamped_loads > 0 {
            parts.push(format!(
                "{} global load(s) clamp an out-of-range index to element 0",
                self.clamped_loads
            ));
        }
        if self.clamped_stores > 0 {
            parts.push(format!(
                "{} global store(s) clamp an out-of-range index to element 0",
                self.clamped_stores
            ));
        }
        if self.masked_shifts > 0 {
            parts.push(format!(
                "{} 32-bit shift(s) take the amount modulo 32",
                self.masked_shifts
            ));
        }
        if self.guarded_divisions > 0 {
            parts.push(format!(
                "{} u32 division(s) by zero give 4294967295",
                self.guarded_divisions
            ));
        }
        if !parts.is_empty() {
            self.info(
                "VY011",
                format!(
                    "written out as vyre's CUDA backend computes them: {}",
                    parts.join("; ")
                ),
                "nothing to do; see docs/vyre.md for each difference",
            );
        }
        if !self.renamed.is_empty() {
            let list: Vec<String> = self.renamed.iter().cloned().collect();
            self.info(
                "VY014",
                format!("renamed to identifiers: {}", list.join(", ")),
                "nothing to do; vyrescope names are `[A-Za-z_][A-Za-z0-9_]*`",
            );
        }
    }

    /// Our name for vyre variable `v` (the same one every time).
    fn var(&mut self, v: &str) -> String {
        if let Some(n) = self.var_names.get(v) {
            return n.clone();
        }
        let mut name = identifier(v);
        while !self.used_vars.insert(name.clone()) {
            name.push('_');
        }
        if name != v {
            self.renamed.insert(format!("variable `{v}` -> `{name}`"));
        }
        self.var_names.insert(v.to_string(), name.clone());
        name
    }

    /// The type of one of our expressions, from the buffers and the variables seen so far.
    fn type_of(&self, e: &Expr) -> Option<ScalarType> {
        let vars = &self.var_types;
        crate::ir::expr_type(&self.scratch, e, &|n| vars.get(n).copied())
    }
}

/// Our element type for a vyre element type.
pub(crate) fn elem_type(t: &DataType) -> Option<ElemType> {
    Some(match t {
        DataType::Bool => ElemType::Bool,
        DataType::U8 => ElemType::U8,
        DataType::I8 => ElemType::I8,
        DataType::U16 => ElemType::U16,
        DataType::I16 => ElemType::I16,
        DataType::U32 => ElemType::U32,
        DataType::I32 => ElemType::I32,
        DataType::U64 => ElemType::U64,
        DataType::I64 => ElemType::I64,
        DataType::F16 => ElemType::F16,
        DataType::F32 => ElemType::F32,
        DataType::F64 => ElemType::F64,
        _ => return None,
    })
}

/// Our value type for a vyre cast target.
fn scalar_type(t: &DataType) -> Option<ScalarType> {
    Some(match t {
        DataType::Bool => ScalarType::Bool,
        DataType::U32 => ScalarType::U32,
        DataType::I32 => ScalarType::I32,
        DataType::U64 => ScalarType::U64,
        DataType::I64 => ScalarType::I64,
        DataType::F32 => ScalarType::F32,
        DataType::F64 => ScalarType::F64,
        _ => return None,
    })
}
