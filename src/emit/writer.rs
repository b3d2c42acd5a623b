//! The kernel writer: owns the output lines, the register allocator, variable scopes and the
//! per-kernel caches; `expr.rs`, `stmt.rs`, `memory.rs` and friends add `impl Writer` blocks
//! with one method per IR construct (the naga back-end layout).
//!
//! Every line is recorded with its owner (a statement node id, `prologue` or `epilogue`), so
//! the source map falls out of assembly: no line is written without an owner.

use std::collections::{HashMap, HashSet};

use super::cse::Cache;
use super::regs::{Reg, RegAlloc, RegClass};
use super::{EmitError, EmitOptions, EmitStats};
use crate::analysis::ranges::Facts;
use crate::analysis::ranges::Range;
use crate::ir::print::Printed;
use crate::ir::{Builtin, Program, Scalar, ScalarType, ScratchLayout, WaitOn};

/// Owner index of prologue lines.
pub(super) const PROLOGUE: usize = 0;
/// Owner index of epilogue lines.
pub(super) const EPILOGUE: usize = 1;

/// What a body line is (for the instruction count and the map checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum LineKind {
    /// A PTX instruction.
    Instr,
    /// A `//` comment.
    Comment,
    /// A `$L_...:` label.
    Label,
    /// A directive (`.loc`, `.reg`, `.shared`).
    Directive,
}

/// One body line.
#[derive(Debug, Clone)]
pub(super) struct Line {
    pub text: String,
    pub owner: usize,
    pub kind: LineKind,
}

/// An expression's value: a register or an immediate.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val {
    /// A register; `fresh` when no variable or cache refers to it (a `let` may adopt it).
    Reg {
        name: Reg,
        ty: ScalarType,
        fresh: bool,
    },
    /// A compile-time constant.
    Imm(Scalar),
}

impl Val {
    /// The value's type.
    pub fn ty(&self) -> ScalarType {
        match self {
            Val::Reg { ty, .. } => *ty,
            Val::Imm(s) => s.ty(),
        }
    }

    /// Operand text: the register name or the PTX immediate.
    pub fn text(&self) -> String {
        match self {
            Val::Reg { name, .. } => name.to_string(),
            Val::Imm(s) => imm_text(*s),
        }
    }

    /// The immediate, if this is one.
    pub fn imm(&self) -> Option<Scalar> {
        match self {
            Val::Imm(s) => Some(*s),
            Val::Reg { .. } => None,
        }
    }
}

/// PTX spelling of an immediate (`0f3F800000` for floats, so that the value is exact).
pub(super) fn imm_text(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => (b as u32).to_string(),
        Scalar::U32(v) => v.to_string(),
        Scalar::I32(v) => v.to_string(),
        Scalar::U64(v) => v.to_string(),
        Scalar::I64(v) => v.to_string(),
        Scalar::F32(v) => format!("0f{:08X}", v.to_bits()),
        Scalar::F64(v) => format!("0d{:016X}", v.to_bits()),
    }
}

/// A variable in scope.
#[derive(Debug, Clone)]
pub(super) struct VarInfo {
    /// Register holding it (empty for a constant).
    pub reg: Reg,
    /// Its type.
    pub ty: ScalarType,
    /// Range proven for its value when it was bound (u32 variables that are never assigned).
    pub range: Option<Range>,
    /// Its value, when it is a compile-time constant (a never-assigned `let` of a constant,
    /// or the counter of an unrolled loop copy): uses are immediates, it has no register.
    pub konst: Option<Scalar>,
}

impl VarInfo {
    /// A variable held in register `reg`.
    pub fn reg(reg: Reg, ty: ScalarType, range: Option<Range>) -> Self {
        VarInfo {
            reg,
            ty,
            range,
            konst: None,
        }
    }

    /// A compile-time constant.
    pub fn constant(v: Scalar) -> Self {
        VarInfo {
            reg: Reg::default(),
            ty: v.ty(),
            range: (v.ty() == ScalarType::U32).then(|| Range::point(v.to_bits())),
            konst: Some(v),
        }
    }
}

/// Values computed once in the prologue (or once per kernel), found again by what they hold.
#[derive(Debug, Clone, Default)]
pub(super) struct Hoisted {
    /// Builtin ids (`%tid.x`, the global id, ...).
    pub builtins: HashMap<Builtin, Reg>,
    /// Generic-to-global pointer of each host buffer.
    pub buf_ptr: HashMap<String, Reg>,
    /// Element count of each host buffer.
    pub buf_len: HashMap<String, Reg>,
    /// Base address of each workgroup buffer.
    pub shared_base: HashMap<String, Reg>,
    /// Linear thread id in the block ([`Writer::linear_tid`]).
    pub linear_tid: Option<Reg>,
    /// Linear workgroup id (`dataflow`).
    pub linear_ctaid: Option<Reg>,
    /// Global address of the grid-sync scratch (`grid_sync`).
    pub grid_scratch: Option<Reg>,
    /// Number of workgroups in the grid (`grid_sync`).
    pub grid_blocks: Option<Reg>,
    /// What this workgroup adds to a flip counter (`grid_sync`).
    pub grid_flip_inc: Option<Reg>,
    /// The launch's epoch (`dataflow`).
    pub sync_epoch: Option<Reg>,
}

/// Everything emitting code changes besides the lines themselves: what
/// [`Writer::rollback`] restores from a [`Checkpoint`] (one clone of this; the lines are
/// append-only, so a checkpoint keeps only their lengths).
#[derive(Debug, Clone, Default)]
pub(super) struct Produced {
    /// Registers handed out.
    pub regs: RegAlloc,
    /// Counters about the code.
    pub stats: EmitStats,
    /// Per-owner counter for helper labels (`$L_body2_k3`).
    label_seq: HashMap<usize, u32>,
    /// The `.loc` line last written.
    loc_current: Option<usize>,
    /// Values computed once in the prologue.
    pub hoisted: Hoisted,
    /// The grid-sync scratch words the code uses (the kernel's launch interface beyond its
    /// buffers).
    pub scratch: ScratchLayout,
    /// Dataflow counters: the register in which thread 0 keeps what its arrival returned.
    pub counter_base: HashMap<u32, Reg>,
    /// Dataflow waits that are the same for every task of a step (a count, a fixed range of
    /// flags): the predicate "this block has seen it complete", one per wait statement, so
    /// that the copies of an unrolled task loop share it (`emit::dataflow`).
    pub wait_done: HashMap<(WaitOn, String), Reg>,
    /// Load results that are zero exactly where the predicate is false: (register, predicate).
    pub zero_unless: HashMap<Reg, String>,
    /// Registers that are written after their definition (assigned variables).
    pub mutable: HashSet<Reg>,
    /// Accesses whose bounds check had to be combined with [`Context::guard`].
    pub guard_checks: u32,
}

/// The owners of lines: `prologue`, `epilogue`, then node ids in first-emission order.
pub(super) struct Owners {
    /// Owner names, by owner index.
    pub names: Vec<String>,
    /// Index of each name.
    index: HashMap<String, usize>,
    /// IR printer line per owner (for `.loc`).
    line: Vec<Option<usize>>,
}

/// Where the code being written sits: what the enclosing statements make true of it.
#[derive(Debug, Clone, Default)]
pub(super) struct Context {
    /// Predicates of the enclosing `select` arms (register, negated) under which the
    /// conditional facts hold.
    pub cond_preds: Vec<(Reg, bool)>,
    /// Suffix of labels written inside unrolled loop copies (`_u3`), keeping them unique.
    pub copy_tag: String,
    /// Product of the trip counts of the unrolled loops around the code being written: what
    /// one more unrolled IR node costs in emitted copies (see `unroll.rs`).
    pub unroll_factor: usize,
    /// Predicate guarding side effects of a predicated short body.
    pub guard: Option<String>,
    /// Depth of the statements being emitted under control flow that lanes may take apart
    /// (`if` bodies, rolled loops); see [`Writer::full_warp`].
    pub divergent: u32,
    /// Whether a `return` was emitted before this point (its lanes may have left).
    pub returned: bool,
}

/// State of one kernel emission.
pub(super) struct Writer<'p> {
    pub prog: &'p Program,
    pub opts: &'p EmitOptions,
    pub printed: Printed,
    pub prologue: Vec<Line>,
    pub body: Vec<Line>,
    /// What the code emitted so far changed (rolled back as one).
    pub out: Produced,
    /// Owners of the lines.
    pub owners: Owners,
    /// Current owner of body lines.
    pub owner: usize,
    pub scopes: Vec<HashMap<String, VarInfo>>,
    /// Variables assigned anywhere (never aliased, never used in proofs).
    pub assigned: HashSet<String>,
    /// Variable names read anywhere in the Program (a `let` whose name is not here is dead).
    pub read_vars: HashSet<String>,
    /// Set by a dead `let` of an atomic whose old value nobody reads: the atomic may lower to
    /// `red` (see `memory.rs`). Taken (reset) by the atomic before its operands are emitted.
    pub discard_result: bool,
    pub facts: Facts,
    /// Value and address caches per scope (see `cse.rs`).
    pub caches: Vec<Cache>,
    /// Where the code being written sits.
    pub at: Context,
    /// What the run being emitted as a versioned fast path may rely on (`version.rs`).
    pub fast: Option<super::version::FastPath>,
    /// Timeline instrumentation (`emit --timeline`); None for plain emission.
    pub timeline: Option<super::timeline::State>,
}

impl<'p> Writer<'p> {
    /// Whether every lane of every warp is surely active here: the workgroup is whole warps
    /// (so no warp is short), no `return` came before, and no enclosing `if` or rolled loop
    /// could have split the warp. Warp operations then use the full member mask as a
    /// constant instead of `activemask`, and a shuffle needs no inactive-source select.
    pub fn full_warp(&self) -> bool {
        let [x, y, z] = self.opts.workgroup_size;
        let threads = x as u64 * y as u64 * z as u64;
        threads.is_multiple_of(32)
            && self.at.divergent == 0
            && !self.at.returned
            && self.at.guard.is_none()
    }

    /// A writer for the elaborated `prog`.
    pub fn new(prog: &'p Program, opts: &'p EmitOptions, printed: Printed) -> Self {
        let mut assigned = HashSet::new();
        let mut read_vars = HashSet::new();
        prog.walk_stmts(&mut |s| {
            use crate::ir::StmtKind as K;
            if let K::Assign { name, .. } = &s.kind {
                assigned.insert(name.clone());
            }
            if let K::Sync(op) = &s.kind {
                let (read, written) = op.vars();
                assigned.extend(written.map(str::to_string));
                read_vars.extend(read.map(str::to_string));
            }
            for e in s.exprs() {
                e.visit(&mut |e| {
                    if let crate::ir::Expr::Var(n) = e {
                        read_vars.insert(n.clone());
                    }
                });
            }
        });
        Writer {
            prog,
            opts,
            printed,
            prologue: Vec::new(),
            body: Vec::new(),
            out: Produced::default(),
            owners: Owners {
                names: vec!["prologue".into(), "epilogue".into()],
                index: HashMap::new(),
                line: vec![None, None],
            },
            owner: PROLOGUE,
            scopes: vec![HashMap::new()],
            assigned,
            read_vars,
            discard_result: false,
            facts: Facts::default(),
            caches: vec![Cache::default()],
            at: Context {
                unroll_factor: 1,
                ..Context::default()
            },
            fast: None,
            timeline: None,
        }
    }

    // ---- owners and lines -------------------------------------------------------------

    /// Makes `node` the owner of the following lines; returns the previous owner.
    pub fn enter_node(&mut self, node: &str) -> usize {
        let idx = match self.owners.index.get(node) {
            Some(i) => *i,
            None => {
                let i = self.owners.names.len();
                self.owners.names.push(node.to_string());
                self.owners.index.insert(node.to_string(), i);
                self.owners.line.push(self.printed.line_of(node));
                i
            }
        };
        std::mem::replace(&mut self.owner, idx)
    }

    /// Restores an owner returned by [`Writer::enter_node`].
    pub fn leave_node(&mut self, prev: usize) {
        self.owner = prev;
    }

    /// Label-safe spelling of the current owner (`body[1].then[0]` -> `body1_then0`).
    pub fn owner_tag(&self) -> String {
        self.owners.names[self.owner]
            .chars()
            .filter_map(|c| match c {
                '[' | ']' => None,
                '.' => Some('_'),
                c if c.is_ascii_alphanumeric() || c == '_' => Some(c),
                _ => Some('_'),
            })
            .collect()
    }

    /// A label named after the current node: `$L_<node>_<what>` (plus the copy tag inside
    /// unrolled loops).
    pub fn label_name(&self, what: &str) -> String {
        format!("$L_{}_{}{}", self.owner_tag(), what, self.at.copy_tag)
    }

    /// A fresh helper label in the current node: `$L_<node>_<what><n>`.
    pub fn fresh_label(&mut self, what: &str) -> String {
        let n = self.out.label_seq.entry(self.owner).or_insert(0);
        *n += 1;
        let n = *n;
        format!("$L_{}_{}{}", self.owner_tag(), what, n)
    }

    /// Writes `.loc` for the current owner when line info is on and the line changed.
    fn sync_loc(&mut self) {
        if !self.opts.lineinfo || self.owner == PROLOGUE {
            return;
        }
        let Some(line) = self.owners.line.get(self.owner).copied().flatten() else {
            return;
        };
        if self.out.loc_current != Some(line) {
            self.out.loc_current = Some(line);
            self.body.push(Line {
                text: format!("\t.loc\t1 {line} 0"),
                owner: self.owner,
                kind: LineKind::Directive,
            });
        }
    }

    /// Appends an instruction (`text` without indentation and semicolon).
    pub fn ins(&mut self, text: impl AsRef<str>) {
        self.sync_loc();
        let owner = self.owner;
        self.body.push(Line {
            text: format!("\t{};", text.as_ref()),
            owner,
            kind: LineKind::Instr,
        });
    }

    /// Appends an instruction under predicate `pred` (`%p1` or `!%p1`), if any.
    pub fn ins_pred(&mut self, pred: Option<&str>, text: impl AsRef<str>) {
        match pred {
            Some(p) => self.ins(format!("@{p} {}", text.as_ref())),
            None => self.ins(text),
        }
    }

    /// Appends a comment line.
    pub fn comment(&mut self, text: impl AsRef<str>) {
        let owner = self.owner;
        self.body.push(Line {
            text: format!("\t// {}", text.as_ref()),
            owner,
            kind: LineKind::Comment,
        });
    }

    /// Appends a label line.
    pub fn label(&mut self, name: &str) {
        let owner = self.owner;
        self.body.push(Line {
            text: format!("{name}:"),
            owner,
            kind: LineKind::Label,
        });
    }

    /// Appends an instruction to the prologue (hoisted, runs once at kernel entry).
    pub fn pro(&mut self, text: impl AsRef<str>) {
        self.prologue.push(Line {
            text: format!("\t{};", text.as_ref()),
            owner: PROLOGUE,
            kind: LineKind::Instr,
        });
    }

    /// Saves the state that emitting code changes, for [`Writer::rollback`].
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            out: self.out.clone(),
            prologue: self.prologue.len(),
            body: self.body.len(),
        }
    }

    /// Forgets everything emitted since `cp` was taken (lines, registers, prologue values,
    /// counters), so that the same statements can be emitted another way. Variable, fact
    /// and cache scopes are not restored: take checkpoints outside the scopes they cover.
    pub fn rollback(&mut self, cp: Checkpoint) {
        self.out = cp.out;
        self.prologue.truncate(cp.prologue);
        self.body.truncate(cp.body);
    }

    // ---- registers and values -----------------------------------------------------------

    /// A fresh register for a value of type `ty`.
    pub fn reg(&mut self, ty: ScalarType) -> Reg {
        self.out.regs.fresh(RegClass::of(ty))
    }

    /// A fresh register of class `c`.
    pub fn reg_class(&mut self, c: RegClass) -> Reg {
        self.out.regs.fresh(c)
    }

    /// A fresh register value.
    pub fn fresh(&mut self, ty: ScalarType) -> Val {
        Val::Reg {
            name: self.reg(ty),
            ty,
            fresh: true,
        }
    }

    /// `v` in a register (immediates are moved into a fresh one).
    pub fn in_reg(&mut self, v: &Val) -> Reg {
        match v {
            Val::Reg { name, .. } => name.clone(),
            Val::Imm(s) => {
                let r = self.reg(s.ty());
                self.ins(format!("mov{} {r}, {}", mov_suffix(s.ty()), imm_text(*s)));
                r
            }
        }
    }

    /// The register of a builtin id, computed once in the prologue.
    pub fn builtin(&mut self, b: Builtin) -> Reg {
        if let Some(r) = self.out.hoisted.builtins.get(&b) {
            return r.clone();
        }
        let wg = self.opts.workgroup_size;
        let r = match b {
            Builtin::LocalId(a) => self.special_reg(&format!("%tid.{}", a.name())),
            Builtin::WorkgroupId(a) => self.special_reg(&format!("%ctaid.{}", a.name())),
            Builtin::NumWorkgroups(a) => self.special_reg(&format!("%nctaid.{}", a.name())),
            Builtin::Lane => self.special_reg("%laneid"),
            Builtin::SubgroupSize => {
                let r = self.reg(ScalarType::U32);
                self.pro(format!("mov.u32 {r}, 32"));
                r
            }
            Builtin::GlobalId(a) => {
                // gid = wgid * workgroup_size + lid; the workgroup size is a compile-time
                // constant (the kernel is emitted for one block shape, see .maxntid).
                let c = self.builtin(Builtin::WorkgroupId(a));
                let t = self.builtin(Builtin::LocalId(a));
                let r = self.reg(ScalarType::U32);
                self.pro(format!("mad.lo.s32 {r}, {c}, {}, {t}", wg[a.index()]));
                r
            }
        };
        self.out.hoisted.builtins.insert(b, r.clone());
        r
    }

    fn special_reg(&mut self, sreg: &str) -> Reg {
        let r = self.reg(ScalarType::U32);
        self.pro(format!("mov.u32 {r}, {sreg}"));
        r
    }

    /// Linear thread id in the block (`lid.x + lid.y*X + lid.z*X*Y`), computed once.
    pub fn linear_tid(&mut self) -> Reg {
        if let Some(r) = &self.out.hoisted.linear_tid {
            return r.clone();
        }
        let [x, y, z] = self.opts.workgroup_size;
        let tx = self.builtin(Builtin::LocalId(crate::ir::Axis::X));
        let r = if y == 1 && z == 1 {
            tx
        } else {
            let ty = self.builtin(Builtin::LocalId(crate::ir::Axis::Y));
            let r = self.reg(ScalarType::U32);
            self.pro(format!("mad.lo.s32 {r}, {ty}, {x}, {tx}"));
            if z == 1 {
                r
            } else {
                let tz = self.builtin(Builtin::LocalId(crate::ir::Axis::Z));
                let r2 = self.reg(ScalarType::U32);
                self.pro(format!("mad.lo.s32 {r2}, {tz}, {}, {r}", x * y));
                r2
            }
        };
        self.out.hoisted.linear_tid = Some(r.clone());
        r
    }

    // ---- scopes -----------------------------------------------------------------------

    /// Looks a variable up.
    pub fn var(&self, name: &str) -> Result<&VarInfo, EmitError> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.get(name))
            .ok_or_else(|| EmitError::Internal(format!("unknown variable `{name}`")))
    }

    /// Declares a variable in the innermost scope.
    pub fn declare(&mut self, name: &str, info: VarInfo) {
        if let Some(top) = self.scopes.last_mut() {
            top.insert(name.to_string(), info);
        }
    }

    /// Runs `f` in a nested variable, fact and value-cache scope (a branch body).
    pub fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.caches.push(Cache::default());
        let r = self.scoped_vars(f);
        self.caches.pop();
        r
    }

    /// Runs `f` in a nested variable and fact scope that shares the enclosing value caches
    /// (a copy of an unrolled loop body: straight-line code after what precedes it).
    pub fn scoped_vars<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(HashMap::new());
        self.facts.push();
        let r = f(self);
        self.facts.pop();
        self.scopes.pop();
        r
    }
}

/// Writer state saved by [`Writer::checkpoint`].
pub(super) struct Checkpoint {
    out: Produced,
    prologue: usize,
    body: usize,
}

impl Checkpoint {
    /// The guard-combined check count when it was taken.
    pub fn guard_checks(&self) -> u32 {
        self.out.guard_checks
    }
}

/// Suffix of `mov` for a value type.
pub(super) fn mov_suffix(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::Bool => ".pred",
        ScalarType::U32 | ScalarType::I32 => ".b32",
        ScalarType::U64 | ScalarType::I64 => ".b64",
        ScalarType::F32 => ".f32",
        ScalarType::F64 => ".f64",
    }
}

/// Arithmetic type suffix (`u32`, `s32`, `f64`, ...).
pub(super) fn arith(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::Bool => "pred",
        ScalarType::U32 => "u32",
        ScalarType::I32 => "s32",
        ScalarType::U64 => "u64",
        ScalarType::I64 => "s64",
        ScalarType::F32 => "f32",
        ScalarType::F64 => "f64",
    }
}

/// Bit type suffix (`b32`, `b64`, `pred`).
pub(super) fn bits(ty: ScalarType) -> &'static str {
    match ty {
        ScalarType::Bool => "pred",
        ScalarType::U32 | ScalarType::I32 | ScalarType::F32 => "b32",
        ScalarType::U64 | ScalarType::I64 | ScalarType::F64 => "b64",
    }
}

/// The zero of a type.
pub(super) fn zero(ty: ScalarType) -> Scalar {
    match ty {
        ScalarType::Bool => Scalar::Bool(false),
        ScalarType::U32 => Scalar::U32(0),
        ScalarType::I32 => Scalar::I32(0),
        ScalarType::U64 => Scalar::U64(0),
        ScalarType::I64 => Scalar::I64(0),
        ScalarType::F32 => Scalar::F32(0.0),
        ScalarType::F64 => Scalar::F64(0.0),
    }
}

/// An integer constant of type `ty` (wrapping), or a float one.
pub(super) fn konst(ty: ScalarType, v: i64) -> Scalar {
    match ty {
        ScalarType::Bool => Scalar::Bool(v != 0),
        ScalarType::U32 => Scalar::U32(v as u32),
        ScalarType::I32 => Scalar::I32(v as i32),
        ScalarType::U64 => Scalar::U64(v as u64),
        ScalarType::I64 => Scalar::I64(v),
        ScalarType::F32 => Scalar::F32(v as f32),
        ScalarType::F64 => Scalar::F64(v as f64),
    }
}
