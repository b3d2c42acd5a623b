//! `vyrescope sass FILE [--sm 90] [--workgroup X,Y,Z] [--json] [--no-unroll]`

use std::path::PathBuf;

use crate::emit::{emit, EmitOptions};
use crate::ir::load_program;
use crate::sass;
use crate::util::Problem;

/// Show a Program's SASS (machine code) with the PTX line and IR node of every instruction.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Needs NVIDIA's ptxas and nvdisasm (no GPU): scripts/install-ptxas.sh and scripts/install-nvdisasm.sh install them; export VYRESCOPE_PTXAS / VYRESCOPE_NVDISASM to the paths they print.\n\nExamples:\n  vyrescope sass fixtures/programs/vadd_f32.json\n  vyrescope sass fixtures/programs/matmul_tiled_f32.json --sm 80 --workgroup 16,16,1\n  vyrescope sass fixtures/programs/vadd_f32.json --json"
)]
pub struct Args {
    /// Program file, or a pipeline file (every plan group's fused kernel).
    pub file: PathBuf,
    /// Target SM version (70, 75, 80, 86, 89, 90); sm_70 is assembled as sm_75.
    #[arg(long, default_value_t = 90)]
    pub sm: u32,
    /// Workgroup size X,Y,Z (default: the Program's).
    #[arg(long, value_parser = crate::shape::parse_workgroup)]
    pub workgroup: Option<[u32; 3]>,
    /// Print JSON {"sm","kernel","instructions":[{"address","text","ptx_line","node",..}],..}.
    #[arg(long)]
    pub json: bool,
    /// Keep every loop rolled (as `emit --no-unroll`).
    #[arg(long)]
    pub no_unroll: bool,
    /// Device profile for the register-pressure lints (h200, h100-sxm, a100, sm86, sm89 or
    /// a DeviceCaps JSON file; default h200).
    #[arg(long)]
    pub device: Option<String>,
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

/// Runs `sass`.
pub fn run(a: &Args) -> super::Outcome {
    if crate::ir::is_pipeline_file(&a.file) {
        return pipeline(a);
    }
    super::pipeline_kernels::refuse_sync_on_program(&a.file, a.sync, a.decide)?;
    let p = load_program(&a.file)?;
    // The same PTX as `emit --lineinfo`, so the IR lines come along with the PTX lines.
    let opts = EmitOptions {
        sm: a.sm,
        workgroup_size: a.workgroup.unwrap_or(p.workgroup_size),
        lineinfo: true,
        unroll: !a.no_unroll,
        grid_barrier: Default::default(),
        version_bounds: false,
    };
    let k = emit(&p, &opts)?;
    let listing = sass::disassemble(&k, a.sm)?;
    let (caps, _) = super::occupancy::resolve_device(a.device.as_deref())?;
    let wg = opts.workgroup_size;
    let block = wg[0].saturating_mul(wg[1]).saturating_mul(wg[2]);
    let lints = sass::pressure::lint(&listing, &caps, block, listing.resources.shared_bytes);
    let text = if a.json {
        let mut v = listing.to_json();
        if let Some(o) = v.as_object_mut() {
            o.insert("lints".into(), serde_json::json!(lints));
        }
        match serde_json::to_string_pretty(&v) {
            Ok(s) => s + "\n",
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        sass::render::text(&listing) + &lint_text(&lints)
    };
    super::write_stdout(&crate::util::terminal_safe(&text));
    Ok(0)
}

/// `sass PIPELINE`: every plan group's fused kernel (planned for `--device`), each listing
/// after a `// ` line naming the group; `--json` gives `{"pipeline","device","groups":[...]}`.
fn pipeline(a: &Args) -> super::Outcome {
    let how = super::pipeline_kernels::GroupEmit {
        sm: Some(a.sm),
        lineinfo: true,
        unroll: !a.no_unroll,
        grid_barrier: Default::default(),
        version_bounds: false,
        sync: a.sync.unwrap_or_default(),
        decide: a.decide.unwrap_or_default(),
        timeline: false,
    };
    let pk = super::pipeline_kernels::load(&a.file, a.device.as_deref(), a.workgroup, &how)?;
    let mut text = pk.decision_text("// ");
    let mut groups = Vec::new();
    for g in &pk.groups {
        let listing = match sass::disassemble(&g.kernel, a.sm) {
            Ok(l) => l,
            Err(e) => return Err(Problem::from(e).context(format_args!("group {}", g.index))),
        };
        let wg = g.group.workgroup_size;
        let block = wg[0].saturating_mul(wg[1]).saturating_mul(wg[2]);
        let lints =
            sass::pressure::lint(&listing, &pk.device, block, listing.resources.shared_bytes);
        if a.json {
            let mut v = listing.to_json();
            if let Some(o) = v.as_object_mut() {
                o.insert("lints".into(), serde_json::json!(lints));
            }
            groups.push(super::pipeline_kernels::merged(pk.group_json(g), v));
        } else {
            text.push_str(&format!("// {}\n", pk.header(g)));
            text.push_str(&sass::render::text(&listing));
            text.push_str(&lint_text(&lints));
        }
    }
    if a.json {
        text = match serde_json::to_string_pretty(&pk.wrap_json(groups)) {
            Ok(s) => s + "\n",
            Err(e) => return Err(Problem::bug(e)),
        };
    }
    super::write_stdout(&crate::util::terminal_safe(&text));
    Ok(0)
}

/// The register-pressure lints as `//` comment lines.
fn lint_text(lints: &[crate::finding::Diagnostic]) -> String {
    let mut t = String::new();
    for d in lints {
        let node = d
            .node
            .as_ref()
            .map_or("program".to_string(), |n| n.to_string());
        t.push_str(&format!(
            "// {} {} at {node}: {}\n//   Fix: {}\n",
            format!("{:?}", d.severity).to_lowercase(),
            d.code,
            d.message,
            d.fix
        ));
    }
    t
}
