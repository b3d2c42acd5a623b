//! Comparing two lowerings of a Program statement by statement (`vyrescope diff`).
//!
//! Each side is a Program file with variant options after `@` (`fixtures/programs/saxpy_f32.json@wg=64@sm=80`,
//! [`variant`]). Both are emitted (and, when ptxas and nvdisasm are there, assembled and
//! disassembled); statements are aligned by node id when both sides are the same Program
//! (same printed IR), else through a line diff of the printed IR ([`align`]); per statement
//! the PTX instruction count, the SASS instruction mix and the peak of live registers, the
//! kernel totals, and a unified line diff at the chosen level with statement headers
//! ([`hunks`]).
//!
//! Invariant: the totals of a side are the figures `emit` and `sass --json` report for that
//! side alone (they come from the same emission and listing).

use crate::util::HasFix;
use std::path::Path;

use serde::Serialize;

use crate::emit::{emit, EmitOptions, EmittedKernel};
use crate::ir::print::{print_program, Printed};
use crate::ir::Program;
use crate::occupancy::estimate::estimate;
use crate::occupancy::{DeviceCaps, KernelResources};
use crate::sass::{Mix, SassError, SassListing};

pub mod align;
pub mod hunks;
pub mod variant;

pub use variant::{Variant, VariantError};

/// The level of the line diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// The printed IR.
    Ir,
    /// The emitted PTX.
    Ptx,
    /// The SASS instructions (addresses left out: they shift with every change).
    Sass,
}

/// Why two lowerings could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// A side's spec is malformed.
    Variant(#[from] VariantError),
    /// A side's file could not be loaded (the message names the file).
    Load(crate::util::Problem),
    /// A side could not be emitted.
    Emit {
        /// The side's label.
        side: String,
        /// The emitter's error.
        source: crate::emit::EmitError,
    },
    /// `--level sass` without the tools, or a failed disassembly.
    Sass {
        /// The side's label.
        side: String,
        /// What failed.
        source: SassError,
    },
}

/// One lowered side.
#[derive(Debug, Clone)]
pub struct Side {
    /// The spec as given (`saxpy.json@wg=64`).
    pub label: String,
    /// The Program.
    pub program: Program,
    /// Its printed IR.
    pub printed: Printed,
    /// The options it was emitted with.
    pub opts: EmitOptions,
    /// The emitted kernel.
    pub kernel: EmittedKernel,
    /// Its SASS, when ptxas and nvdisasm are there.
    pub sass: Option<SassListing>,
}

/// Per-statement figures of one side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
pub struct StatementFigures {
    /// The statement's node id on this side.
    pub node: String,
    /// PTX instructions it produced.
    pub ptx: u32,
    /// SASS instructions it owns (null without the tools).
    pub sass: Option<u32>,
    /// Their classes.
    pub mix: Option<Mix>,
    /// Most live general registers at its instructions.
    pub peak_live: Option<u32>,
}

/// One row of the per-statement table: the statement on either side (absent where it was
/// added or removed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StatementRow {
    /// The node id the row is known by (the old side's, else the new side's).
    pub node: String,
    /// Old side.
    pub old: Option<StatementFigures>,
    /// New side.
    pub new: Option<StatementFigures>,
}

/// Kernel totals of one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    /// Target SM.
    pub sm: u32,
    /// Workgroup size.
    pub workgroup: [u32; 3],
    /// PTX instructions (what `emit` counts: every instruction line of the kernel).
    pub ptx_instructions: u32,
    /// SASS instructions (`sass --json`'s `instructions`).
    pub sass_instructions: Option<u32>,
    /// Registers per thread (`ptxas -v`).
    pub registers: Option<u32>,
    /// Spill bytes stored plus loaded.
    pub spill_bytes: Option<u32>,
    /// Static shared memory per block (bytes).
    pub shared_bytes: Option<u32>,
    /// Peak of live registers.
    pub peak_live: Option<u32>,
    /// Occupancy at the chosen device, percent.
    pub occupancy_pct: Option<f64>,
    /// True when `registers`, `shared_bytes` and `occupancy_pct` are estimated from the PTX
    /// (no SASS: ptxas or nvdisasm not installed), as `occupancy` estimates them.
    pub estimated: bool,
}

/// A whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Old side's label.
    pub old: String,
    /// New side's label.
    pub new: String,
    /// How statements were aligned: `node_id` or `ir_diff`.
    pub aligned_by: &'static str,
    /// The level of `hunks`.
    pub level: Level,
    /// The device the occupancy is estimated for.
    pub device: String,
    /// Per statement, in the new side's order with removed statements where they were.
    pub statements: Vec<StatementRow>,
    /// `{"old": Totals, "new": Totals}`.
    pub totals: TotalsPair,
    /// The unified line diff.
    pub hunks: Vec<hunks::Hunk>,
}

/// The totals of both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TotalsPair {
    /// Old side.
    pub old: Totals,
    /// New side.
    pub new: Totals,
}

/// Whether a side is assembled and disassembled for its SASS figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SassFigures {
    /// Not at all (`--no-sass`): the SASS columns are null. ptxas and nvdisasm cost far more
    /// than the rest of a comparison on a long Program (minutes at thousands of statements).
    Skip,
    /// When ptxas and nvdisasm are there; null figures otherwise.
    IfAvailable,
    /// Always (`--level sass`): missing tools or a failed disassembly are an error.
    Required,
}

/// Loads and lowers one side; `sm` is the target unless the spec names one.
pub fn lower(v: &Variant, sm: u32, sass: SassFigures) -> Result<Side, DiffError> {
    let program = crate::ir::load_program(&v.file).map_err(|e| DiffError::Load(e.into()))?;
    let opts = EmitOptions {
        sm: v.sm.unwrap_or(sm),
        workgroup_size: v.workgroup.unwrap_or(program.workgroup_size),
        lineinfo: true,
        unroll: v.unroll.unwrap_or(true),
        version_bounds: v.version_bounds,
        ..EmitOptions::for_program(&program)
    };
    let kernel = emit(&program, &opts).map_err(|e| DiffError::Emit {
        side: v.label.clone(),
        source: e,
    })?;
    let sass = match sass {
        SassFigures::Skip => None,
        mode => match crate::sass::disassemble(&kernel, opts.sm) {
            Ok(l) => Some(l),
            Err(e) if mode == SassFigures::Required => {
                return Err(DiffError::Sass {
                    side: v.label.clone(),
                    source: e,
                })
            }
            Err(_) => None,
        },
    };
    Ok(Side {
        label: v.label.clone(),
        printed: print_program(&program),
        program,
        opts,
        kernel,
        sass,
    })
}

/// Whether a PTX line is an instruction (not a directive, label, brace or comment).
pub fn is_ptx_instruction(line: &str) -> bool {
    let t = line.trim();
    !(t.is_empty()
        || t.starts_with("//")
        || t.starts_with('.')
        || t.starts_with('{')
        || t.starts_with('}')
        || t.ends_with(':')
        || t.starts_with(')')
        || t.starts_with('('))
}

/// PTX instructions of `node` in `k`.
pub fn ptx_count(k: &EmittedKernel, node: &str) -> u32 {
    Index::of(k, None).ptx_count(node)
}

/// One side's figures by node, built once: the PTX instruction lines, the source map's
/// ranges and the SASS costs. Looking each statement up in the PTX text and the map anew
/// made `diff` quadratic in statements (a 16,000-statement Program took minutes).
struct Index<'a> {
    /// Per PTX line (index 0 is line 1): whether it is an instruction.
    instruction: Vec<bool>,
    ranges: std::collections::HashMap<&'a str, &'a [[u32; 2]]>,
    costs: std::collections::HashMap<&'a str, &'a crate::sass::NodeCost>,
}

impl<'a> Index<'a> {
    fn of(k: &'a EmittedKernel, sass: Option<&'a crate::sass::SassListing>) -> Self {
        Index {
            instruction: k.ptx.lines().map(is_ptx_instruction).collect(),
            ranges: k.source_map.by_node(),
            costs: sass.map_or_else(Default::default, |l| {
                let mut m = std::collections::HashMap::new();
                for c in &l.costs {
                    m.entry(c.node.as_str()).or_insert(c);
                }
                m
            }),
        }
    }

    fn ptx_count(&self, node: &str) -> u32 {
        self.ranges
            .get(node)
            .into_iter()
            .flat_map(|rs| rs.iter())
            .flat_map(|r| r[0]..=r[1])
            .filter(|&l| {
                l.checked_sub(1)
                    .and_then(|i| self.instruction.get(i as usize))
                    .is_some_and(|&b| b)
            })
            .count() as u32
    }
}

fn figures(side: &Side, idx: &Index, node: &str) -> StatementFigures {
    let cost = idx.costs.get(node).copied();
    StatementFigures {
        node: node.to_string(),
        ptx: idx.ptx_count(node),
        sass: side.sass.as_ref().map(|_| cost.map_or(0, |c| c.total)),
        mix: side
            .sass
            .as_ref()
            .map(|_| cost.map_or_else(Mix::default, |c| c.mix)),
        peak_live: cost.and_then(|c| c.peak_live),
    }
}

/// The totals of `side` on `caps`.
pub fn totals(side: &Side, caps: &DeviceCaps) -> Totals {
    let ptx = side
        .kernel
        .ptx
        .lines()
        .filter(|l| is_ptx_instruction(l))
        .count() as u32;
    let l = side.sass.as_ref();
    let wg = side.opts.workgroup_size;
    let block = wg[0].saturating_mul(wg[1]).saturating_mul(wg[2]);
    // The assembled kernel's figures, else (no ptxas) the same estimate from the PTX that
    // `occupancy` shows, labelled as such.
    let res = match l {
        Some(l) => KernelResources {
            regs_per_thread: l.resources.registers,
            static_smem_bytes: l.resources.shared_bytes,
            ..Default::default()
        },
        None => crate::emit::reg_estimate::estimate_resources(&side.kernel.ptx),
    };
    Totals {
        sm: side.opts.sm,
        workgroup: wg,
        ptx_instructions: ptx,
        sass_instructions: l.map(|l| l.instructions.len() as u32),
        registers: Some(res.regs_per_thread),
        spill_bytes: l.map(|l| l.resources.spill_stores + l.resources.spill_loads),
        shared_bytes: Some(res.static_smem_bytes),
        peak_live: l.and_then(|l| l.peak_live),
        occupancy_pct: Some(estimate(caps, &res, block, 0).occupancy_pct),
        estimated: l.is_none(),
    }
}

/// Compares two lowered sides.
pub fn compare(old: &Side, new: &Side, level: Level, caps: &DeviceCaps) -> Comparison {
    let (pairs, aligned_by) = align::statements(&old.printed, &new.printed);
    let (io, inew) = (
        Index::of(&old.kernel, old.sass.as_ref()),
        Index::of(&new.kernel, new.sass.as_ref()),
    );
    let statements = pairs
        .into_iter()
        .map(|(o, n)| StatementRow {
            node: o.clone().or_else(|| n.clone()).unwrap_or_default(),
            old: o.map(|o| figures(old, &io, &o)),
            new: n.map(|n| figures(new, &inew, &n)),
        })
        .collect();
    Comparison {
        old: old.label.clone(),
        new: new.label.clone(),
        aligned_by,
        level,
        device: caps.name.clone(),
        statements,
        totals: TotalsPair {
            old: totals(old, caps),
            new: totals(new, caps),
        },
        hunks: hunks::of(&hunks::lines(old, level), &hunks::lines(new, level)),
    }
}

/// Loads, lowers and compares `old` and `new` (specs as on the command line). `sass` is
/// raised to [`SassFigures::Required`] at `--level sass`.
pub fn run(
    old: &str,
    new: &str,
    level: Level,
    sm: u32,
    sass: SassFigures,
    caps: &DeviceCaps,
) -> Result<Comparison, DiffError> {
    let (o, n) = (Variant::parse(old)?, Variant::parse(new)?);
    let sass = if level == Level::Sass {
        SassFigures::Required
    } else {
        sass
    };
    // The two sides are independent and each may wait on ptxas and nvdisasm for most of the
    // comparison's time, so they are lowered side by side.
    let (old, new) = std::thread::scope(|s| {
        let new = s.spawn(|| lower(&n, sm, sass));
        let old = lower(&o, sm, sass);
        (old, new.join())
    });
    let new = new.unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
    Ok(compare(&old?, &new, level, caps))
}

/// The file part of a spec, for messages.
pub fn file_of(spec: &str) -> &Path {
    Path::new(variant::split(spec).0)
}

impl HasFix for DiffError {
    fn message(&self) -> String {
        match self {
            Self::Variant(e) => crate::util::HasFix::message(e),
            Self::Load(e) => crate::util::HasFix::message(e),
            Self::Emit { side, source } => format!("{side}: {}", source.message()),
            Self::Sass { side, source } => format!("{side}: {}", source.message()),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::Variant(e) => crate::util::HasFix::fix(e),
            Self::Load(e) => crate::util::HasFix::fix(e),
            Self::Emit { source, .. } => source.fix(),
            Self::Sass { source, .. } => source.fix(),
        }
    }

    fn problem(&self) -> crate::util::Problem {
        match self {
            Self::Variant(e) => crate::util::HasFix::problem(e),
            Self::Load(e) => crate::util::HasFix::problem(e),
            _ => crate::util::Problem::located(self.message(), self.fix()),
        }
    }
}

crate::util::problem::into_problem!(DiffError);
