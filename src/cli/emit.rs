//! `vyrescope emit FILE [--sm 90] [--workgroup X,Y,Z] [--lineinfo] [--no-unroll] [--timeline] [-o OUT] [--map] [--resources]`

use std::path::PathBuf;

use crate::emit::grid_sync::GridBarrier;
use crate::emit::{emit, ptxas, source_map, EmitOptions};
use crate::ir::load_program;
use crate::util::Problem;

/// Emit a Program's PTX (or its source map / ptxas resources).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope emit fixtures/programs/vadd_f32.json\n  vyrescope emit fixtures/programs/vadd_f32.json --sm 80 --workgroup 128,1,1 --lineinfo -o vadd.ptx\n  vyrescope emit fixtures/programs/vadd_f32.json --map\n  vyrescope emit fixtures/programs/vadd_f32.json --resources\n  vyrescope emit fixtures/programs/reduce_sum_f32.json --no-unroll\n  vyrescope emit fixtures/pipelines/reduce_total_normalize.json\n  vyrescope emit fixtures/pipelines/softmax.json --timeline --sync barrier\n  vyrescope emit fixtures/pipelines/stencil_clamped.json --decide fuse"
)]
pub struct Args {
    /// Program file, or a pipeline file (every plan group's fused kernel).
    pub file: PathBuf,
    /// Target SM version (70, 75, 80, 86, 89, 90).
    #[arg(long, default_value_t = 90)]
    pub sm: u32,
    /// Workgroup size X,Y,Z (default: the Program's).
    #[arg(long, value_parser = crate::shape::parse_workgroup)]
    pub workgroup: Option<[u32; 3]>,
    /// Emit `.file`/`.loc` line info pointing at the IR printer's lines.
    #[arg(long)]
    pub lineinfo: bool,
    /// Write the output here instead of stdout.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
    /// Print JSON {"kernel","ptx","map","stats","abi"} instead of the PTX.
    #[arg(long)]
    pub map: bool,
    /// Assemble with ptxas -v and print its resource figures (needs ptxas).
    #[arg(long)]
    pub resources: bool,
    /// Keep every loop rolled (no unrolling of small constant-trip loops), for comparison.
    #[arg(long)]
    pub no_unroll: bool,
    /// Versioned bounds checks (one range test per group of accesses and an unchecked fast
    /// copy) instead of one check per access, for comparison.
    #[arg(long)]
    pub version_bounds: bool,
    /// Lowering of grid barriers: `flip` (one flipping arrival counter, the default) or
    /// `generation` (counter plus generation word, the earlier lowering), for comparison.
    #[arg(long, default_value = "flip", value_name = "KIND")]
    pub grid_barrier: GridBarrier,
    /// Print vyre's own PTX for the Program (exported to vyre, then lowered and emitted by
    /// vyre's crates) instead of ours (needs the `vyre` feature).
    #[arg(long, conflicts_with_all = ["compare_vyre", "map", "resources", "lineinfo"])]
    pub vyre: bool,
    /// Compare our PTX with vyre's: instruction counts by class, register declarations,
    /// lines, and a line diff (needs the `vyre` feature).
    #[arg(long, conflicts_with_all = ["map", "resources"])]
    pub compare_vyre: bool,
    /// With --compare-vyre: one JSON object {"ours","vyre","diff"} instead of text.
    #[arg(long, requires = "compare_vyre")]
    pub json: bool,
    /// Instrument the kernel for `run --timeline`: thread 0 of each block stamps
    /// `%globaltimer`/`%smid` at its start and end into one more parameter,
    /// `param_timeline` (see docs/timeline.md). On a pipeline: every fused kernel as
    /// `run --timeline` records it (each step, virtual workgroup and wait).
    #[arg(long, conflicts_with_all = ["vyre", "compare_vyre"])]
    pub timeline: bool,
    /// On a pipeline: how persistent groups separate cross-workgroup dependences, `dataflow`
    /// (completion flags, counters and last-arriver folds; the default) or `barrier` (grid
    /// barriers), as `run --megakernel --sync` runs them.
    #[arg(long, value_name = "FORM")]
    pub sync: Option<crate::megakernel::plan::SyncMode>,
    /// On a pipeline: how fusion is decided, as `plan --decide` does: `model` (the cost model;
    /// the default), `fuse` (fuse whatever may legally fuse, to study a fused kernel the model
    /// declines) or `recompute` (chains of window
    /// steps as recomputed passes).
    #[arg(long, value_name = "HOW")]
    pub decide: Option<crate::megakernel::plan::Decide>,
}

/// Runs `emit`.
pub fn run(a: &Args) -> super::Outcome {
    if crate::ir::is_pipeline_file(&a.file) {
        return pipeline(a);
    }
    super::pipeline_kernels::refuse_sync_on_program(&a.file, a.sync, a.decide)?;
    let p = load_program(&a.file)?;
    let opts = EmitOptions {
        sm: a.sm,
        workgroup_size: a.workgroup.unwrap_or(p.workgroup_size),
        lineinfo: a.lineinfo,
        unroll: !a.no_unroll,
        grid_barrier: a.grid_barrier,
        version_bounds: a.version_bounds,
    };
    // vyre's kernel is made for the same workgroup size as ours.
    let mut for_vyre = p.clone();
    for_vyre.workgroup_size = opts.workgroup_size;
    if a.vyre {
        return match super::vyre_emit::vyre_text(&for_vyre, a.sm) {
            Ok(text) => output(a, text),
            Err(e) => Err(e.context(a.file.display())),
        };
    }
    let emitted = if a.timeline {
        crate::emit::emit_timeline(
            &p,
            &opts,
            &crate::emit::timeline::TimelineSpec::kernel(None),
        )
    } else {
        emit(&p, &opts)
    };
    let k = emitted?;
    if a.compare_vyre {
        return match super::vyre_emit::compare_text(&for_vyre, &k.ptx, a.sm, a.json) {
            Ok(text) => output(a, text),
            Err(e) => Err(e.context(a.file.display())),
        };
    }
    let text = if a.resources {
        match ptxas::offline_resources(&k.ptx, a.sm) {
            Ok(r) => format!(
                "kernel {} ({}): {} registers, {} bytes stack frame, {} bytes spill stores, {} bytes spill loads, {} bytes shared, {} bytes constant, {} barriers\n",
                k.kernel_name, r.arch, r.registers, r.stack_frame, r.spill_stores, r.spill_loads, r.shared_bytes, r.constant_bytes, r.barriers
            ),
            Err(e) => return Err(Problem::from(e)),
        }
    } else if a.map {
        match serde_json::to_string_pretty(&source_map::to_json(&k)) {
            Ok(s) => s + "\n",
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        k.ptx
    };
    output(a, text)
}

/// `emit PIPELINE`: every plan group's fused kernel (h200 profile), each PTX module after a
/// `// ` line naming the group; `--map` gives `{"pipeline","device","groups":[...]}` with each
/// group's map, `--resources` one line per group. `--timeline`: the instrumented fused
/// kernels, as `run --timeline` builds them for the same plan and `--sync` form.
fn pipeline(a: &Args) -> super::Outcome {
    if a.vyre || a.compare_vyre {
        let file = a.file.display();
        return Err(Problem::new(
            format!("{file}: --vyre and --compare-vyre take one Program, and this is a pipeline"),
            "give one step's Program file, or drop the option to see the fused kernels",
        )
        .at(file.to_string()));
    }
    let how = super::pipeline_kernels::GroupEmit {
        sm: Some(a.sm),
        lineinfo: a.lineinfo,
        unroll: !a.no_unroll,
        grid_barrier: a.grid_barrier,
        version_bounds: a.version_bounds,
        sync: a.sync.unwrap_or_default(),
        decide: a.decide.unwrap_or_default(),
        timeline: a.timeline,
    };
    let pk = super::pipeline_kernels::load(&a.file, None, a.workgroup, &how)?;
    // `--resources` stays one line per group; PTX says what decided its kernels in comments.
    let mut text = match a.resources || a.map {
        true => String::new(),
        false => pk.decision_text("// "),
    };
    let mut groups = Vec::new();
    for g in &pk.groups {
        let k = &g.kernel;
        if a.resources {
            match ptxas::offline_resources(&k.ptx, a.sm) {
                Ok(r) => text.push_str(&format!(
                    "group {} kernel {} ({}): {} registers, {} bytes stack frame, {} bytes spill stores, {} bytes spill loads, {} bytes shared, {} bytes constant, {} barriers\n",
                    g.index, k.kernel_name, r.arch, r.registers, r.stack_frame, r.spill_stores, r.spill_loads, r.shared_bytes, r.constant_bytes, r.barriers
                )),
                Err(e) => return Err(Problem::from(e)),
            }
        } else if a.map {
            groups.push(super::pipeline_kernels::merged(
                pk.group_json(g),
                source_map::to_json(k),
            ));
        } else {
            text.push_str(&format!("// {}\n{}", pk.header(g), k.ptx));
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    if a.map {
        text = match serde_json::to_string_pretty(&pk.wrap_json(groups)) {
            Ok(s) => s + "\n",
            Err(e) => return Err(Problem::bug(e)),
        };
    }
    output(a, text)
}

/// Writes `text` to `-o` or stdout.
fn output(a: &Args, text: String) -> super::Outcome {
    match &a.output {
        Some(path) => {
            crate::util::refuse_overwrite(path, [a.file.as_path()], "-o")?;
            // Atomic: a failed write leaves a previous file whole (see util::atomic_write).
            if let Err(e) = crate::util::write_atomic(path, text.as_bytes()) {
                return Err(Problem::new(
                    format!("cannot write {}: {e}", path.display()),
                    "check the folder exists and is writable, and that the path names a regular file",
                ));
            }
        }
        // The PTX carries the Program's `doc` in a comment: no raw control characters to a
        // terminal.
        None => super::write_stdout(&crate::util::terminal_safe(&text)),
    }
    Ok(0)
}
