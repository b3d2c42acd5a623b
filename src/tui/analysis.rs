//! What the inspector shows for one program, computed from the library (pure, no terminal):
//! the printed IR, the emitted PTX with its IR<->PTX correlation, diagnostics, occupancy and
//! resources. [`analyze`] is called inline for small programs and on the worker thread for
//! large ones, so it must stay free of UI state.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::diagnostics::{launch, perf, Diagnostic, Severity};
use crate::emit::{emit, EmitOptions, EmittedKernel, SourceMap};
use crate::harness::preserve::{self, Inputs};
use crate::inputs::default_shape;
use crate::ir::print::{print_program, PrintedLine};
use crate::ir::Program;
use crate::occupancy::{
    estimate, suggest_block_sizes, sweep_block_sizes, DeviceCaps, FuncConfig, KernelResources,
    SweepRow,
};
use crate::util::Problem;
use crate::validate::validate;

use super::pipeline::{PipelineFile, PipelineView};

/// Programs with more statements than this are emitted on the worker thread.
pub const INLINE_EMIT_MAX_STMTS: usize = 2_000;

/// What the Occupancy tab says while the analysis worker estimates.
pub const ESTIMATING: &str = "estimating...";

/// What the Occupancy tab says while the worker measures the kernel's resources.
pub const MEASURING: &str = "measuring kernel resources (live driver or ptxas)...";

/// Why the inspector has no PTX, occupancy estimate or kernel resources to show; a pane
/// prints it in their place. Typed rather than a sentence so that waiting is told from
/// failing, and a stage's problem keeps its `Fix:` line as the command line prints it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// Still being computed on the analysis worker ([`ESTIMATING`], [`MEASURING`]).
    #[error("{0}")]
    Pending(&'static str),
    /// Something the figures need is missing (a device, a way to measure); `fix` says how
    /// to supply it, on the same line.
    #[error("{what} - {fix}")]
    Missing {
        /// What is missing.
        what: String,
        /// How to supply it.
        fix: String,
    },
    /// A stage failed (emission, a pipeline step, ptxas): its problem, `message` then
    /// `Fix:` when there is advice.
    #[error("{0}")]
    Failed(Problem),
}

impl From<Problem> for Unavailable {
    fn from(p: Problem) -> Self {
        Unavailable::Failed(p)
    }
}

/// IR <-> PTX correlation built from the emitter's source map.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Correlation {
    /// Node ids that produced lines (map order).
    pub nodes: Vec<String>,
    /// Per node, its 1-based inclusive PTX line ranges.
    pub ranges: Vec<Vec<[u32; 2]>>,
    /// Per 0-based PTX line, the index into `nodes` of the node that produced it.
    pub owner: Vec<Option<u32>>,
    index: HashMap<String, u32>,
}

impl Correlation {
    /// Builds the correlation for a PTX text of `line_count` lines.
    pub fn new(map: &SourceMap, line_count: usize) -> Self {
        let mut c = Correlation {
            owner: vec![None; line_count],
            ..Correlation::default()
        };
        for (i, e) in map.entries.iter().enumerate() {
            let i = i as u32;
            c.nodes.push(e.node.clone());
            c.ranges.push(e.lines.clone());
            c.index.insert(e.node.clone(), i);
            for [a, b] in &e.lines {
                // Map lines are 1-based and inclusive; clamp so a bad map cannot panic us.
                let lo = (*a as usize).saturating_sub(1);
                let hi = (*b as usize).min(line_count);
                for slot in c.owner.iter_mut().take(hi).skip(lo) {
                    *slot = Some(i);
                }
            }
        }
        c
    }

    /// PTX line ranges (1-based, inclusive) produced by `node`.
    pub fn lines_of(&self, node: &str) -> &[[u32; 2]] {
        self.index
            .get(node)
            .map_or(&[][..], |&i| &self.ranges[i as usize][..])
    }

    /// Node that produced 0-based PTX line `line`.
    pub fn node_at(&self, line: usize) -> Option<&str> {
        self.owner
            .get(line)
            .copied()
            .flatten()
            .map(|i| self.nodes[i as usize].as_str())
    }

    /// True when 0-based PTX line `line` belongs to `node`.
    pub fn is_line_of(&self, line: usize, node: &str) -> bool {
        self.node_at(line) == Some(node)
    }
}

/// The PTX side: the kernel, its lines and the correlation.
#[derive(Debug, Clone, PartialEq)]
pub struct PtxView {
    /// Emitter output (the PTX text lives here).
    pub kernel: EmittedKernel,
    /// Byte offset where each line starts in `kernel.ptx`.
    starts: Vec<usize>,
    /// IR <-> PTX correlation.
    pub corr: Correlation,
}

impl PtxView {
    /// Wraps an emitted kernel.
    pub fn new(kernel: EmittedKernel) -> Self {
        let mut starts = vec![0];
        starts.extend(kernel.ptx.match_indices('\n').map(|(i, _)| i + 1));
        if starts.last() == Some(&kernel.ptx.len()) && starts.len() > 1 {
            starts.pop();
        }
        let corr = Correlation::new(&kernel.source_map, starts.len());
        PtxView {
            kernel,
            starts,
            corr,
        }
    }

    /// Number of lines.
    pub fn len(&self) -> usize {
        if self.kernel.ptx.is_empty() {
            0
        } else {
            self.starts.len()
        }
    }

    /// True for an empty PTX text.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Line `i` (0-based) without its newline.
    pub fn line(&self, i: usize) -> &str {
        let Some(&a) = self.starts.get(i) else {
            return "";
        };
        let b = self
            .starts
            .get(i + 1)
            .map_or(self.kernel.ptx.len(), |&b| b - 1);
        let line = self.kernel.ptx.get(a..b.max(a)).unwrap_or("");
        let line = line.strip_suffix('\n').unwrap_or(line);
        line.strip_suffix('\r').unwrap_or(line)
    }
}

/// One row of the occupancy sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OccRow {
    /// Threads per block.
    pub block_size: u32,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// Active warps per SM.
    pub active_warps_per_sm: u32,
    /// Occupancy in percent.
    pub occupancy_pct: f64,
    /// What limits it.
    pub limiter: String,
}

/// The Occupancy tab's data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OccupancyView {
    /// Device the estimate is for.
    pub device: String,
    /// Sweep over block sizes.
    pub rows: Vec<OccRow>,
    /// Current block size (threads).
    pub current: u32,
    /// Row of the current size.
    pub current_row: Option<OccRow>,
    /// Headroom of the non-limiting resources, one sentence each.
    pub headroom: Vec<String>,
    /// Where the kernel's resource figures came from.
    pub basis: String,
    /// Registers per thread the estimate used (the Plan tab shows the same figure).
    pub registers: u32,
}

/// One row of the Resources tab.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceRow {
    /// What.
    pub name: String,
    /// Value with unit, or `-` when unknown.
    pub value: String,
    /// Where it comes from (or why it is unknown).
    pub source: String,
}

/// Everything that depends on the emit options and the device.
#[derive(Debug, Clone)]
pub struct Emission {
    /// Options used.
    pub opts: EmitOptions,
    /// PTX, or why there is none.
    pub ptx: Result<Arc<PtxView>, Unavailable>,
    /// Occupancy, or why there is none.
    pub occupancy: Result<OccupancyView, Unavailable>,
    /// Kernel resources.
    pub resources: Vec<ResourceRow>,
    /// Diagnostics beyond the validator's (compile, launch, performance).
    pub diagnostics: Vec<Diagnostic>,
}

/// A loaded program.
#[derive(Debug, Clone)]
pub struct Document {
    /// File it came from.
    pub path: PathBuf,
    /// Parsed program.
    pub program: Arc<Program>,
    /// Printed IR lines with their nodes.
    pub ir: Vec<PrintedLine>,
    /// Validator findings.
    pub validation: Vec<Diagnostic>,
    /// Statement count (decides inline vs worker emission).
    pub stmt_count: usize,
    /// Unique per load (highlight cache key of the IR text).
    pub id: u64,
    /// For a pipeline file: the pipeline, the selected step, its plan and fused kernel.
    /// `program` is then the fused kernel of the selected step's group (the selected step's
    /// Program until it is planned) and `ir` the selected step's IR.
    pub pipeline: Option<PipelineView>,
    /// Folder `file` inputs must stay inside (`--root`); `None`: the file's own folder.
    pub root: Option<PathBuf>,
}

impl Document {
    /// Loads, prints and validates `path`; its `file` inputs must stay inside `root` (or its
    /// own folder when `None`).
    pub fn load(path: &Path, root: Option<&Path>) -> Result<Self, Problem> {
        // A capture's record file opens as its dispatch: the Program with its captured
        // inputs, read from the capture folder (its root).
        #[cfg(feature = "vyre")]
        if let Some((dir, index)) = crate::vyre::replay::dispatches::record_at(path) {
            let program = crate::vyre::replay::dispatches::open_dispatch(&dir, index)?;
            return Ok(Document {
                root: Some(dir),
                ..Self::from_program(path.to_path_buf(), program)
            });
        }
        if crate::ir::is_pipeline_file(path) {
            return Self::load_pipeline(path, root);
        }
        let loaded = crate::validate::load(path);
        match loaded.program {
            Some(program) => Ok(Document {
                root: root.map(Path::to_path_buf),
                ..Self::from_validated(path.to_path_buf(), program, loaded.diagnostics)
            }),
            None => Err(loaded.first_error().map_or_else(
                || Problem::new("cannot load", ""),
                |d| Problem::new(d.headline(), d.fix.clone()),
            )),
        }
    }

    /// Prints and validates an already parsed program.
    pub fn from_program(path: PathBuf, program: Program) -> Self {
        let validation = validate(&program);
        Self::from_validated(path, program, validation)
    }

    /// Prints a Program whose validation is already known.
    fn from_validated(path: PathBuf, program: Program, validation: Vec<Diagnostic>) -> Self {
        let ir = print_program(&program).lines;
        let mut stmt_count = 0usize;
        program.walk_stmts(&mut |_| stmt_count += 1);
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Document {
            path,
            program: Arc::new(program),
            ir,
            validation,
            stmt_count,
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            pipeline: None,
            root: None,
        }
    }

    /// This document with its pipeline's fused kernels waiting as `sync` says (`--sync`;
    /// a Program document is unchanged).
    pub fn with_sync(mut self, sync: crate::megakernel::plan::SyncMode) -> Self {
        if let Some(pv) = self.pipeline.as_mut() {
            pv.sync = sync;
        }
        self
    }

    /// Loads a pipeline file: step 0 selected, not planned yet (planning needs the device,
    /// which the caller knows: see [`Document::select_step`]).
    fn load_pipeline(path: &Path, root: Option<&Path>) -> Result<Self, Problem> {
        let (file, validation) = PipelineFile::load(path, root)?;
        let first = file
            .pipeline
            .steps
            .first()
            .map(|s| s.program.clone())
            .ok_or_else(|| {
                Problem::new(format!("{}: the pipeline has no steps", path.display()), "")
            })?;
        let mut doc = Self::from_validated(path.to_path_buf(), first, validation);
        doc.pipeline = Some(PipelineView::new(Arc::new(file)));
        doc.root = root.map(Path::to_path_buf);
        doc.show_step();
        Ok(doc)
    }

    /// For a pipeline: selects step `step` (clamped) and shows its IR; the plan (when the
    /// device `device` changed) and the fused kernel are left pending for the worker
    /// ([`crate::tui::background::Job::Plan`]), so the UI thread never plans or fuses.
    pub fn begin_step(&mut self, step: usize, device: Option<&str>) {
        let Some(pv) = self.pipeline.as_mut() else {
            return;
        };
        pv.begin(step, device);
        self.show_step();
    }

    /// Points `program`/`ir` at the selected step (and its fused kernel when there is one).
    pub(crate) fn show_step(&mut self) {
        let Some(pv) = self.pipeline.as_ref() else {
            return;
        };
        self.ir = pv.file.step_ir(pv.step);
        let program = match (&pv.fused, pv.file.pipeline.steps.get(pv.step)) {
            (Ok(f), _) => f.program.clone(),
            (Err(_), Some(s)) => s.program.clone(),
            (Err(_), None) => return,
        };
        // A new id even when the program is the same (steps of one fused group share their
        // kernel): the IR text changed, and the highlight cache is keyed by this id, so
        // keeping it painted the previous step's line pieces over this step's lines in a
        // live terminal (issue 24, item 16).
        let mut stmt_count = 0usize;
        program.walk_stmts(&mut |_| stmt_count += 1);
        self.stmt_count = stmt_count;
        self.program = Arc::new(program);
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 40);
        self.id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// 0-based IR line that opens `node`.
    pub fn ir_line_of(&self, node: &str) -> Option<usize> {
        self.ir.iter().position(|l| l.node.as_deref() == Some(node))
    }

    /// Where `file` inputs come from: relative to the Program's folder, confined to
    /// `--root` when the inspector was given one.
    pub fn input_folder(&self) -> super::gpu::InputFolder {
        super::gpu::InputFolder {
            base: self
                .path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
            root: self.root.clone(),
        }
    }

    /// True when the validator found errors.
    pub fn has_errors(&self) -> bool {
        self.validation
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Kernel resources and where they came from (`live driver`, `ptxas -v for sm_90`), or why
/// there are none.
pub type Resources = Result<(KernelResources, String), Unavailable>;

/// Emits `program` for `opts` (pure; safe on any thread). Occupancy, resources and launch
/// and performance diagnostics are filled in by [`estimate_into`] once the kernel's
/// resources are known.
pub fn analyze(program: &Program, opts: &EmitOptions) -> Emission {
    emission_of(emit(program, opts).map_err(Problem::from), opts)
}

/// The [`Emission`] of a kernel already emitted with `opts` (or why it could not be): a
/// pipeline group's fused kernel comes from the emitter's own
/// [`crate::megakernel::compiled::CompiledPipeline::emit_group`], as `vyrescope emit` prints
/// it. Estimates follow as for [`analyze`].
pub fn emission_of(kernel: Result<EmittedKernel, Problem>, opts: &EmitOptions) -> Emission {
    let ptx = kernel
        .map(|k| Arc::new(PtxView::new(k)))
        .map_err(Unavailable::Failed);
    let resources = resource_rows(ptx.as_ref().ok().map(|p| &p.kernel), None);
    Emission {
        opts: opts.clone(),
        ptx,
        occupancy: Err(Unavailable::Pending(ESTIMATING)),
        resources,
        diagnostics: Vec::new(),
    }
}

/// What an estimate changes in an [`Emission`] (computed on the worker, see
/// [`estimate_emission`]).
#[derive(Debug, Clone)]
pub struct Estimated {
    /// Occupancy, or why there is none.
    pub occupancy: Result<OccupancyView, Unavailable>,
    /// Kernel resource rows.
    pub resources: Vec<ResourceRow>,
    /// Launch and performance diagnostics.
    pub diagnostics: Vec<Diagnostic>,
}

/// [`estimate_into`] on a copy of what it needs, for the worker: occupancy sweep, resource
/// rows and launch/performance diagnostics of the kernel `ptx` emitted with `opts`.
pub fn estimate_emission(
    ptx: Result<Arc<PtxView>, Unavailable>,
    opts: &EmitOptions,
    program: &Program,
    device: Option<&DeviceCaps>,
    res: Option<&Resources>,
    inputs: Option<&Inputs>,
) -> Estimated {
    let mut e = Emission {
        opts: opts.clone(),
        ptx,
        occupancy: Err(Unavailable::Pending(ESTIMATING)),
        resources: Vec::new(),
        diagnostics: Vec::new(),
    };
    estimate_into(&mut e, program, device, res, inputs);
    Estimated {
        occupancy: e.occupancy,
        resources: e.resources,
        diagnostics: e.diagnostics,
    }
}

impl Emission {
    /// Takes an estimate made on the worker.
    pub fn set_estimate(&mut self, est: Estimated) {
        self.occupancy = est.occupancy;
        self.resources = est.resources;
        self.diagnostics = est.diagnostics;
    }
}

/// Threads per block of a workgroup size.
pub fn threads(wg: [u32; 3]) -> u32 {
    wg[0].saturating_mul(wg[1]).saturating_mul(wg[2])
}

/// Re-estimates occupancy, resource rows and launch/performance diagnostics of `e` for
/// `device` and `res`. With `inputs` (the Program's `run` inputs; none for a pipeline's fused
/// kernel) a workgroup size other than the Program's own is compared with it on the
/// reference interpreter (`L014`) and the suggestion keeps only sizes that preserve the
/// results ([`crate::harness::preserve`], cached): this runs on the analysis worker, never
/// on the UI thread.
pub fn estimate_into(
    e: &mut Emission,
    program: &Program,
    device: Option<&DeviceCaps>,
    res: Option<&Resources>,
    inputs: Option<&Inputs>,
) {
    let kernel = e.ptx.as_ref().ok().map(|p| &p.kernel);
    let known = res.and_then(|r| r.as_ref().ok());
    e.resources = resource_rows(kernel, known);
    e.diagnostics.clear();
    let wg = e.opts.workgroup_size;
    e.diagnostics
        .extend(crate::diagnostics::wg_dependence::dependence(program));
    if let Some(inputs) = inputs.filter(|_| wg != program.workgroup_size) {
        let p = preserve::preserves(program, inputs, wg);
        e.diagnostics
            .extend(crate::diagnostics::wg_dependence::size_verdict(
                program, wg, &p,
            ));
    }
    let Some(device) = device else {
        // The workgroup-overrun rule needs no device (it is part of the launch rules below).
        e.diagnostics
            .extend(crate::diagnostics::wg_overrun::workgroup_overruns(
                program, wg,
            ));
        e.occupancy = Err(Unavailable::Missing {
            what: "no device: no live GPU and no device profile".into(),
            fix: "press d to pick a profile or start with --device NAME|FILE".into(),
        });
        return;
    };
    let (shape, lens) = default_shape(program, wg);
    let lens_ref: Vec<(&str, u64)> = lens.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    // The launch rules read the validator's facts; an invalid Program has no kernel to
    // launch (its validation errors are shown instead).
    if let Ok(info) = crate::validate::prove(program) {
        e.diagnostics.extend(launch::launch_diagnostics(
            &info,
            device,
            known.map(|k| &k.0),
            wg,
            shape.grid,
            &lens_ref,
        ));
    }
    let Some((kr, source)) = known else {
        e.diagnostics
            .extend(perf::perf_diagnostics(program, device, None, None, &shape));
        // `known` is `None` here, so `res` is absent (still measuring) or an error.
        e.occupancy = Err(match res {
            Some(Err(why)) => why.clone(),
            _ => Unavailable::Pending(MEASURING),
        });
        return;
    };
    let est = estimate(device, kr, threads(wg), 0);
    e.diagnostics.extend(perf::perf_diagnostics(
        program,
        device,
        Some(kr),
        Some(&est),
        &shape,
    ));
    let row = |r: &SweepRow| OccRow {
        block_size: r.block_size,
        blocks_per_sm: r.blocks_per_sm,
        active_warps_per_sm: r.active_warps_per_sm,
        occupancy_pct: r.occupancy_pct,
        limiter: r.limiter.name().to_string(),
    };
    let rows: Vec<OccRow> = sweep_block_sizes(device, kr, 0, &FuncConfig::default())
        .iter()
        .map(row)
        .collect();
    let current_row = est.launchable.is_ok().then(|| OccRow {
        block_size: est.block_threads,
        blocks_per_sm: est.blocks_per_sm,
        active_warps_per_sm: est.active_warps_per_sm,
        occupancy_pct: est.occupancy_pct,
        limiter: est
            .limiters
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(" = "),
    });
    let mut headroom: Vec<String> = est.headroom.iter().map(|h| h.text.clone()).collect();
    if let Err(why) = &est.launchable {
        headroom.insert(0, why.to_string().lines().next().unwrap_or("").to_string());
    }
    // Only sizes that keep the Program's results; without its inputs, only its own size.
    let own = program.workgroup_size;
    let suggestion = suggest_block_sizes(
        &sweep_block_sizes(device, kr, 0, &FuncConfig::default()),
        Some(threads(own)),
        &mut |b| {
            let Some(inputs) = inputs else {
                return Some("results not checked: no run inputs".into());
            };
            let Some(w) = crate::occupancy::block_workgroup(b, own) else {
                return Some(format!("not a whole number of {}x{} rows", own[1], own[2]));
            };
            let p = preserve::preserves(program, inputs, w);
            (!p.is_preserved()).then(|| p.text())
        },
    );
    if let Some(sg) = suggestion {
        headroom.push(format!(
            "suggested block {}: {}",
            sg.block_size, sg.explanation
        ));
        for r in &sg.refused {
            headroom.push(format!("not suggested: {} ({})", r.block_size, r.why));
        }
    }
    e.occupancy = Ok(OccupancyView {
        device: format!("{} ({})", device.name, device.source),
        rows,
        current: threads(wg),
        current_row,
        headroom,
        basis: format!(
            "{} regs/thread, {} B static shared, from {source}",
            kr.regs_per_thread, kr.static_smem_bytes
        ),
        registers: kr.regs_per_thread,
    });
}

fn resource_rows(
    kernel: Option<&EmittedKernel>,
    res: Option<&(KernelResources, String)>,
) -> Vec<ResourceRow> {
    let row = |name: &str, value: Option<String>, source: &str| ResourceRow {
        name: name.into(),
        value: value.unwrap_or_else(|| "-".into()),
        source: source.into(),
    };
    let (src, r) = match res {
        Some((r, s)) => (s.as_str(), Some(r)),
        None => ("needs the live driver or ptxas (VYRESCOPE_PTXAS)", None),
    };
    let mut rows = vec![
        row(
            "registers / thread",
            r.map(|r| r.regs_per_thread.to_string()),
            src,
        ),
        row(
            "local (spill + stack) / thread",
            r.map(|r| format!("{} B", r.local_bytes)),
            src,
        ),
        row(
            "static shared / block",
            r.map(|r| format!("{} B", r.static_smem_bytes)),
            src,
        ),
        row("constant", r.map(|r| format!("{} B", r.const_bytes)), src),
        row(
            "max threads / block",
            r.map(|r| match r.max_threads_per_block {
                0 => "device limit".to_string(),
                n => n.to_string(),
            }),
            src,
        ),
    ];
    if let Some(k) = kernel {
        rows.push(row(
            "ABI static shared",
            Some(format!("{} B", k.abi.static_shared_bytes)),
            "emitter ABI",
        ));
        rows.push(row(
            "kernel parameters",
            Some((k.abi.params.len() * 2 + usize::from(k.abi.grid_sync)).to_string()),
            "emitter ABI",
        ));
        rows.push(row(
            "grid barrier (cooperative)",
            Some(k.abi.grid_sync.to_string()),
            "emitter ABI",
        ));
        rows.push(row(
            "PTX instructions",
            Some(k.stats.instructions.to_string()),
            "emitter",
        ));
        rows.push(row(
            "bounds checks emitted / elided",
            Some(format!(
                "{} / {}",
                k.stats.bounds_checks_emitted, k.stats.bounds_checks_elided
            )),
            "emitter",
        ));
        rows.push(row(
            "loops unrolled",
            Some(k.stats.loops_unrolled.to_string()),
            "emitter",
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emit::{KernelAbi, MapEntry};

    pub(crate) fn kernel(ptx: &str, map: &[(&str, &[[u32; 2]])]) -> EmittedKernel {
        EmittedKernel {
            kernel_name: "k".into(),
            ptx: ptx.into(),
            source_map: SourceMap {
                entries: map
                    .iter()
                    .map(|(n, l)| MapEntry {
                        node: n.to_string(),
                        lines: l.to_vec(),
                    })
                    .collect(),
            },
            abi: KernelAbi::default(),
            stats: Default::default(),
        }
    }

    #[test]
    fn ptx_lines_split_like_str_lines() {
        for text in ["", "a", "a\n", "a\nb", "a\n\nb\n", "\n"] {
            let v = PtxView::new(kernel(text, &[]));
            let want: Vec<&str> = text.lines().collect();
            let got: Vec<&str> = (0..v.len()).map(|i| v.line(i)).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn correlation_maps_both_ways_and_clamps() {
        let v = PtxView::new(kernel(
            "l1\nl2\nl3\nl4\nl5\n",
            &[("prologue", &[[1, 1]]), ("body[0]", &[[2, 3], [5, 9]])],
        ));
        assert_eq!(v.corr.node_at(0), Some("prologue"));
        assert_eq!(v.corr.node_at(1), Some("body[0]"));
        assert_eq!(v.corr.node_at(3), None);
        assert_eq!(v.corr.node_at(4), Some("body[0]"));
        assert_eq!(v.corr.node_at(99), None);
        assert_eq!(v.corr.lines_of("body[0]"), &[[2, 3], [5, 9]]);
        assert!(v.corr.lines_of("nope").is_empty());
    }
}
