//! `vyrescope plan PIPELINE.json [--device D] [--json]`: the megakernel plan of a pipeline
//! (fused groups, waves, barriers and fusion breaks), from the plan cache when unchanged.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::harness::target::{
    compile, target, CacheUse, CompiledTarget, DeviceChoice, Fit, TargetSpec,
};
use crate::inputs::pipeline::pipeline_shapes;
use crate::ir::Pipeline;
use crate::megakernel::compiled::CompiledPipeline;
use crate::megakernel::decision::DecisionReport;
use crate::megakernel::plan::{GroupKind, Plan, SyncMode, DEFAULT_REGISTERS};
use crate::megakernel::DepKind;
use crate::util::Problem;

/// Plan a pipeline's fused execution: groups, waves, barriers and fusion breaks.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope plan fixtures/pipelines/chain.json\n  vyrescope plan fixtures/pipelines/reduce_normalize.json --device a100 --json\n  vyrescope plan fixtures/pipelines/chain.json --regs 18,20\n  vyrescope plan fixtures/vyre/graphs/named_chain.vgr            (vyre's plan beside ours; feature vyre)\n  vyrescope plan fixtures/pipelines/chain.json --vyre --json\n\nDevices: a100, sm86, sm89, h100-sxm, h200, or a DeviceCaps JSON file."
)]
pub struct Args {
    /// Pipeline file.
    pub file: PathBuf,
    /// Device profile (bundled name or DeviceCaps JSON file); default h200.
    #[arg(long)]
    pub device: Option<String>,
    /// Print the plan as JSON (`pipeline`, `groups`, `grid_barriers`, `launches`,
    /// `fusion_breaks`, `coresident_blocks`, `shared_bytes`, `cache`, ...).
    #[arg(long)]
    pub json: bool,
    /// Registers per thread of each step, comma-separated in step order (e.g. from
    /// `vyrescope emit --resources`); steps without one assume 32.
    #[arg(long, value_delimiter = ',')]
    pub regs: Vec<u32>,
    /// Occupancy (percent) below which fusion is refused when a part reaches it alone.
    #[arg(long, default_value_t = crate::megakernel::plan::MIN_OCCUPANCY_PCT)]
    pub min_occupancy: f64,
    /// Neither read nor write the plan cache.
    #[arg(long)]
    pub no_cache: bool,
    /// How fused persistent groups separate cross-workgroup dependences: `dataflow`
    /// (completion flags, counters and last-arriver folds; the default) or `barrier` (grid
    /// barriers). The plan then lists what each boundary runs as, read from the fused kernel.
    #[arg(long, default_value = "dataflow", value_name = "FORM")]
    pub sync: SyncMode,
    /// How fusion is decided: `auto` (the default; without a GPU the same as `model`, and a
    /// choice that `run` timed on this device comes from the plan cache), `model` (the cost
    /// model: never a form it predicts slower than separate launches), `fuse` (fuse whatever may legally fuse) or `recompute`
    /// (run every chain of window steps as recomputed passes: halo recomputation). A plan
    /// that `run --decide measure` timed on this device comes from the plan cache.
    #[arg(long, default_value = "auto", value_name = "HOW")]
    pub decide: crate::megakernel::plan::Decide,
    /// Also plan the pipeline with vyre-megakernel's own planner (feature `vyre`; the pipeline
    /// is exported as a vyre ProgramGraph) and list where the plans differ. Always on for a
    /// vyre graph (.vgr) or artifact (.vmk). With --json the output is then
    /// `{"vyre": {...}, "vyrescope": {...}, "differences": [...]}`.
    #[arg(long)]
    pub vyre: bool,
    /// vyre planner search budget in work units (`SearchBudget::max_cpu_work`: one per
    /// producer-consumer edge examined, one for the combined candidate; edges past it are
    /// never fused). Default 1000000. For an artifact, re-plans the graph it holds.
    #[arg(long, value_name = "N")]
    pub vyre_budget: Option<u64>,
    /// Most candidate plans vyre's planner scores (`SearchBudget::max_candidates`, the unfused
    /// baseline included). Default 64. For an artifact, re-plans the graph it holds.
    #[arg(long, value_name = "N")]
    pub vyre_candidates: Option<u32>,
}

/// Runs `plan`.
pub fn run(a: &Args) -> super::Outcome {
    beside::check_flags(a)?;
    let pipeline = load(&a.file)?;
    let base = a.file.parent().unwrap_or(Path::new("."));
    // Shapes only: a plan never looks at the buffers' contents.
    let shapes = pipeline_shapes(&pipeline, base)?;
    let spec = TargetSpec {
        device: DeviceChoice::Profile(a.device.clone()),
        sync: a.sync,
        decide: a.decide,
        registers: a.regs.clone(),
        min_occupancy_pct: a.min_occupancy,
        cache: match a.no_cache {
            true => CacheUse::Off,
            false => CacheUse::ReadWrite,
        },
    };
    let t = target(std::sync::Arc::new(pipeline), shapes, &spec)?;
    // Decided with the registers assumed per step; reported with each kernel's own.
    let fit = Fit::Offline {
        sm: None,
        registers: t.plan_options.registers.clone(),
    };
    let CompiledTarget {
        compiled,
        decision,
        offline,
        warnings,
        ..
    } = compile(&t, fit)?;
    for w in &warnings {
        errln!("warning: {w}");
    }
    let fit = offline.ok_or_else(|| Problem::bug("an offline fit gave no register note"))?;
    let device_note = t.device_note;
    let runs = runs_as(&compiled);
    let cached = &compiled.planned;
    let vyre = beside::vyre_beside(a, &compiled.pipeline, &cached.plan)?;
    let pipeline = &compiled.pipeline;
    let text = if a.json {
        let mut v = serde_json::to_value(&cached.plan).map_err(Problem::bug)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("sync".into(), serde_json::json!(a.sync.name()));
            obj.insert("decision".into(), serde_json::json!(decision));
            obj.insert("runs_as".into(), serde_json::json!(runs));
            obj.insert("registers_note".into(), serde_json::json!(fit.note));
            obj.insert(
                "registers_estimated".into(),
                serde_json::json!(fit.estimated),
            );
        }
        if let Some(theirs) = &vyre {
            v = theirs.json(v)?;
        }
        match serde_json::to_string_pretty(&v) {
            Ok(s) => s + "\n",
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        let mut t = render(
            &cached.plan,
            pipeline,
            &device_note,
            a.regs.len(),
            &fit.note,
        );
        t.push_str(&render_runs_as(&runs, a.sync));
        if let Some(theirs) = &vyre {
            t = theirs.text(t);
        }
        t
    };
    // A closed stdout (`| head`) is not worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    Ok(0)
}

/// Parses and validates the pipeline; on failure a problem that lists the error diagnostics.
pub(crate) fn load(path: &Path) -> Result<Pipeline, Problem> {
    if !crate::ir::is_pipeline_file(path) && crate::ir::load_program(path).is_ok() {
        return Err(Problem::new(
            format!("{} is a Program, not a pipeline", path.display()),
            "plan a pipeline file (top-level `pipeline` and `steps`, see fixtures/pipelines/); for one Program use `vyrescope occupancy` or `vyrescope run`",
        ));
    }
    let loaded = crate::validate::pipeline::load_pipeline(path);
    let ok = crate::validate::is_valid(&loaded.diagnostics);
    match loaded.pipeline {
        Some(p) if ok => Ok(p),
        _ => {
            let mut msg = format!("{} cannot be planned:", path.display());
            let errors = loaded
                .diagnostics
                .iter()
                .filter(|d| d.severity == crate::finding::Severity::Error);
            for d in errors.clone() {
                let _ = write!(msg, "\n  {}", d.to_string().replace('\n', "\n  "));
            }
            // Several findings, each with its own `Fix:` line, in one message; the JSON form
            // gives the whole text and the first finding's fix.
            let first_fix = errors.map(|d| d.fix.clone()).next().unwrap_or_default();
            let mut p = Problem::located(msg.clone(), "");
            p.findings = Some(Box::new(crate::util::Findings {
                notes: Vec::new(),
                first: Some((msg, first_fix)),
            }));
            Err(p)
        }
    }
}

/// The human-readable plan: a summary line, then per group its waves with the separation
/// after each, then the fusion breaks.
pub fn render(
    plan: &Plan,
    pipeline: &Pipeline,
    device_note: &str,
    regs_given: usize,
    registers_note: &str,
) -> String {
    let mut o = String::new();
    let name = |s: usize| {
        pipeline
            .steps
            .get(s)
            .map_or(String::new(), |st| st.program.name.clone())
    };
    let _ = writeln!(o, "pipeline {} on {device_note}", plan.pipeline);
    let _ = writeln!(
        o,
        "{} steps -> {} launch{}, {} grid barrier{}, {} fusion break{} (plan cache: {})",
        pipeline.steps.len(),
        plan.launches,
        if plan.launches == 1 { "" } else { "es" },
        plan.grid_barriers,
        if plan.grid_barriers == 1 { "" } else { "s" },
        plan.fusion_breaks.len(),
        if plan.fusion_breaks.len() == 1 {
            ""
        } else {
            "s"
        },
        match plan.cache {
            crate::megakernel::plan::CacheStatus::Hit => "hit",
            crate::megakernel::plan::CacheStatus::Miss => "miss",
        }
    );
    // The groups below give the kernels' own figures; the fusion decisions were made with
    // the planner's assumption, and the reader should know both.
    let _ = writeln!(o, "{registers_note}");
    if regs_given < pipeline.steps.len() {
        let _ = writeln!(
            o,
            "fusion decided with {DEFAULT_REGISTERS} registers per thread assumed for steps without --regs"
        );
    }
    for (gi, g) in plan.groups.iter().enumerate() {
        let wg = g.workgroup_size;
        let _ = writeln!(
            o,
            "\ngroup {gi}: {} | workgroup {}x{}x{} | {} regs | {} B shared | {} co-resident blocks ({:.1}% occupancy)",
            match g.kind {
                GroupKind::Megakernel => "megakernel (cooperative, persistent)",
                GroupKind::Launch if g.halo.is_some() => "launch (recomputed: one block per tile)",
                GroupKind::Launch => "launch",
            },
            wg[0],
            wg[1],
            wg[2],
            g.registers,
            g.shared_bytes,
            g.coresident_blocks,
            g.occupancy_pct
        );
        if let Some(h) = &g.halo {
            let _ = writeln!(o, "  {}", h.describe());
            let _ = writeln!(
                o,
                "    why: {} against {:.1} us as separate launches",
                h.reason, h.otherwise_us
            );
        }
        if g.mixed_workgroup_sizes() {
            let sizes: Vec<String> = g
                .steps
                .iter()
                .zip(&g.step_workgroup_sizes)
                .map(|(s, w)| format!("step {s} {}x{}x{}", w[0], w[1], w[2]))
                .collect();
            let _ = writeln!(
                o,
                "  mixed workgroup sizes in one launch ({}): smaller steps pack into the block or mask its extra threads",
                sizes.join(", ")
            );
            for (s, l) in g.steps.iter().zip(&g.step_layouts) {
                if *l != crate::megakernel::mixed::StepLayout::Whole {
                    let _ = writeln!(o, "    step {s}: {}", l.describe(wg[0]));
                }
            }
        }
        if g.dataflow.blocks > 0 {
            let _ = writeln!(
                o,
                "  dataflow grid: {} blocks ({})",
                g.dataflow.blocks, g.dataflow.blocks_reason
            );
        }
        for (wi, wave) in g.waves.iter().enumerate() {
            let steps: Vec<String> = wave.iter().map(|&s| format!("{s} ({})", name(s))).collect();
            let _ = writeln!(o, "  wave {wi}: step {}", steps.join(", step "));
            if let Some(b) = g.barriers.get(wi) {
                // The separation's name as `plan --json` and the inspector give it.
                let what = match b.kind {
                    DepKind::Grid | DepKind::Workgroup => format!("{} barrier", b.kind.name()),
                    DepKind::Invocation | DepKind::None => {
                        format!("{} (no barrier)", b.kind.name())
                    }
                };
                let _ = writeln!(o, "    -- {what} after step {}: {}", b.after_step, b.reason);
                if let Some(d) = g.dataflow.boundaries.get(wi) {
                    let _ = writeln!(o, "       dataflow: {}", d.describe());
                }
            }
        }
    }
    // What decided fusion, in the words every front end uses.
    let _ = writeln!(o);
    for l in DecisionReport::of(plan).lines() {
        let _ = writeln!(o, "{l}");
    }
    if !plan.fusion_breaks.is_empty() {
        let _ = writeln!(o, "\nfusion breaks:");
        for b in &plan.fusion_breaks {
            let _ = writeln!(o, "  before step {}: {}", b.step, b.reason);
        }
    }
    o
}

/// Per group, what the compiled pipeline's fused kernel does at each cross-workgroup
/// dependence (read back from the kernel's statements, so it is what would run): one line
/// per wait, arrival or grid barrier; an error line when the group cannot be fused.
pub fn runs_as(compiled: &CompiledPipeline) -> Vec<Vec<String>> {
    use crate::ir::{StmtKind, SyncOp, WaitOn};
    compiled
        .groups
        .iter()
        .map(|g| {
            let spec = &g.spec;
            let kernel = match &g.kernel {
                Ok(k) => k,
                Err(e) => return vec![format!("not fused: {}", e.message)],
            };
            let mut lines: Vec<String> = crate::megakernel::emitted::sync_ops(kernel)
                .into_iter()
                .filter_map(|op| match op {
                    SyncOp::Wait {
                        consumer,
                        producer,
                        on,
                        span,
                        ..
                    } => Some(match on {
                        // A packed step's trip: its sub-tasks w..w+span-1 wait together.
                        WaitOn::Window { lo, hi, .. } if *span > 1 => format!(
                            "step {consumer} sub-tasks w..w+{} (one trip of a packed block) wait together for the flags of step {producer} workgroups w{lo:+}..w{:+} (counter)",
                            *span - 1,
                            i64::from(*hi) + i64::from(*span) - 1
                        ),
                        WaitOn::Count { total, .. } => format!(
                            "step {consumer} waits for step {producer}'s counter to reach {total} (counter)"
                        ),
                        WaitOn::Window { lo, hi, .. } => format!(
                            "step {consumer} workgroup w waits for the flags of step {producer} workgroups w{lo:+}..w{hi:+} (counter)"
                        ),
                        WaitOn::Range { first, last, .. } if first == last => format!(
                            "step {consumer} waits for the flag of step {producer} workgroup {first} (broadcast)"
                        ),
                        WaitOn::Range { first, last, .. } => format!(
                            "step {consumer} waits for the flags of step {producer} workgroups {first}..={last} (counter)"
                        ),
                    }),
                    SyncOp::Arrive { step, fold, .. } => Some(format!(
                        "the last arriving workgroup of step {step} runs step {fold} (last_arriver_fold)"
                    )),
                    SyncOp::Signal { .. } => None,
                })
                .collect();
            let barriers = kernel
                .program
                .body
                .iter()
                .filter(|s| matches!(s.kind, StmtKind::Barrier(crate::ir::BarrierScope::Grid)))
                .count();
            if barriers > 0 {
                lines.push(format!(
                    "{barriers} grid barrier{} (all_to_all)",
                    if barriers == 1 { "" } else { "s" }
                ));
            }
            if let Some(p) = spec.persistent_blocks {
                lines.insert(0, format!("persistent grid {p} blocks"));
            }
            lines
        })
        .collect()
}

fn render_runs_as(runs: &[Vec<String>], sync: SyncMode) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "\nsync: {}", sync.name());
    for (gi, lines) in runs.iter().enumerate() {
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(o, "  group {gi}:");
        for l in lines {
            let _ = writeln!(o, "    {l}");
        }
    }
    o
}

/// vyre-megakernel's plan beside ours (feature `vyre`).
#[cfg(feature = "vyre")]
mod beside {
    use crate::ir::Pipeline;
    use crate::megakernel::against_vyre::{beside, Ask, Beside};
    use crate::megakernel::plan::Plan;
    use crate::util::Problem;

    /// Nothing to refuse: every flag works in this build.
    pub fn check_flags(_a: &super::Args) -> Result<(), Problem> {
        Ok(())
    }

    /// vyre's plan of the graph `a.file` holds (or of the pipeline exported as a graph, with
    /// `--vyre`), and the differences from `ours`; `None` when not asked for.
    pub fn vyre_beside(
        a: &super::Args,
        pipeline: &Pipeline,
        ours: &Plan,
    ) -> Result<Option<Beside>, Problem> {
        let ask = Ask {
            pipeline: a.vyre,
            max_cpu_work: a.vyre_budget,
            max_candidates: a.vyre_candidates,
        };
        beside(&a.file, pipeline, ours, ask)
    }
}

/// Without the `vyre` feature: `--vyre` and the vyre budget flags are refused with how to get
/// them; a vyre graph file is refused by the loader the same way.
#[cfg(not(feature = "vyre"))]
mod beside {
    use crate::ir::Pipeline;
    use crate::megakernel::plan::Plan;
    use crate::util::Problem;

    /// Never built: there is no vyre plan without the feature.
    pub enum Beside {}

    impl Beside {
        pub fn json(&self, _ours: serde_json::Value) -> Result<serde_json::Value, Problem> {
            match *self {}
        }

        pub fn text(&self, _ours: String) -> String {
            match *self {}
        }
    }

    /// Refuses the vyre flags in a build without vyre.
    pub fn check_flags(a: &super::Args) -> Result<(), Problem> {
        if a.vyre || a.vyre_budget.is_some() || a.vyre_candidates.is_some() {
            return Err(Problem::new(
                "--vyre, --vyre-budget and --vyre-candidates need vyre-megakernel, and this \
                 vyrescope was built without vyre support",
                "rebuild with `cargo build --release --features vyre` (see docs/vyre.md), or plan \
                 without the vyre flags",
            ));
        }
        Ok(())
    }

    pub fn vyre_beside(
        _a: &super::Args,
        _pipeline: &Pipeline,
        _ours: &Plan,
    ) -> Result<Option<Beside>, Problem> {
        Ok(None)
    }
}
