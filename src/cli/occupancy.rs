//! `vyrescope occupancy`: the occupancy of a Program's kernel (`FILE`), or calculator mode
//! (`--regs N` without a file).
//!
//! Kernel resources come from `--regs N` when given, else `ptxas -v` (the same figures the
//! driver reports, which `vyrescope selftest` checks on a GPU), else an estimate from the
//! emitted PTX (`emit::reg_estimate`), labelled as such with how to get exact figures. The
//! device is `--device NAME|FILE` (a profile; the GPU ordinal of GPU commands is `--gpu N`),
//! else the bundled h200 profile (said so). The exit code is 1 when the kernel cannot launch
//! or a diagnostic is an error, in text and `--json` alike.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::diagnostics::{launch, perf, wg_dependence, Diagnostic};
use crate::emit::{emit_valid, validated, EmitOptions};
use crate::harness::offline::kernel_resources;
use crate::inputs::default_shape;
use crate::ir::load_program;
use crate::occupancy::{
    estimate, profiles, suggest_block_sizes, sweep_block_sizes, DeviceCaps, Estimate, FuncConfig,
    KernelResources, Suggestion, SweepRow,
};
use crate::util::Problem;

/// Show occupancy: of a Program's kernel, or for given resources (calculator mode).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope occupancy fixtures/programs/vadd_f32.json\n  vyrescope occupancy fixtures/programs/reduce_sum_f32.json --device a100 --workgroup 512,1,1\n  vyrescope occupancy --device h100-sxm --regs 40\n  vyrescope occupancy --device sm86 --regs 64 --static-smem 8192 --block 256 --json\n\nDevices: a100, sm86, sm89, h100-sxm, h200, or a DeviceCaps JSON file."
)]
pub struct Args {
    /// Program file, or a pipeline file (every plan group's fused kernel); omit for
    /// calculator mode with --regs.
    pub file: Option<PathBuf>,
    /// Device profile name or DeviceCaps JSON file (default: the bundled h200 profile).
    #[arg(long)]
    pub device: Option<String>,
    /// Workgroup size X,Y,Z for FILE (default: the Program's).
    #[arg(long, value_parser = crate::shape::parse_workgroup)]
    pub workgroup: Option<[u32; 3]>,
    /// Registers per thread: calculator mode without FILE; with FILE, overrides ptxas (or
    /// the estimate made without it).
    #[arg(long)]
    pub regs: Option<u32>,
    /// Calculator mode: static shared memory per block (bytes).
    #[arg(long, default_value_t = 0)]
    pub static_smem: u32,
    /// Dynamic shared memory per block (bytes).
    #[arg(long, default_value_t = 0)]
    pub dynamic_smem: u32,
    /// Calculator mode: one block size instead of the sweep.
    #[arg(long)]
    pub block: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
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

/// Runs `occupancy`.
pub fn run(a: &Args) -> super::Outcome {
    let (caps, device_note) = resolve_device(a.device.as_deref())?;
    match &a.file {
        None => calculator(a, &caps, &device_note),
        Some(f) => program_mode(a, f, &caps, &device_note),
    }
}

/// The `--device` profile (a bundled name or a DeviceCaps file), else the default profile;
/// with a note saying which and why (the compile target's own resolution).
pub(crate) fn resolve_device(
    arg: Option<&str>,
) -> Result<(DeviceCaps, String), profiles::ProfileError> {
    crate::harness::target::device_profile(arg)
}

fn row_json(r: &SweepRow) -> serde_json::Value {
    json!({
        "block_size": r.block_size,
        "blocks_per_sm": r.blocks_per_sm,
        "active_warps_per_sm": r.active_warps_per_sm,
        "occupancy_pct": r.occupancy_pct,
        "limiter": r.limiter.name(),
    })
}

fn estimate_json(e: &Estimate) -> serde_json::Value {
    let mut v = serde_json::to_value(e).unwrap_or(serde_json::Value::Null);
    if let serde_json::Value::Object(m) = &mut v {
        m.insert("block_size".into(), json!(e.block_threads));
    }
    v
}

fn print_json(v: &serde_json::Value) -> super::Outcome {
    match serde_json::to_string_pretty(v) {
        Ok(s) => {
            outln!("{s}");
            Ok(0)
        }
        Err(e) => Err(Problem::bug(e)),
    }
}

fn calculator(a: &Args, caps: &DeviceCaps, note: &str) -> super::Outcome {
    let Some(regs) = a.regs else {
        return Err(Problem::new(
            "calculator mode needs --regs N (or give a Program FILE)",
            "run `vyrescope occupancy --device h200 --regs 32`, or `vyrescope occupancy FILE`",
        ));
    };
    let res = KernelResources {
        regs_per_thread: regs,
        static_smem_bytes: a.static_smem,
        ..KernelResources::default()
    };
    if let Some(b) = a.block {
        let e = estimate(caps, &res, b, a.dynamic_smem);
        let code = if e.launchable.is_ok() { 0 } else { 1 };
        if a.json {
            return print_json(&estimate_json(&e)).map(|c| c.max(code));
        }
        outln!("device: {note}");
        outln!(
            "kernel: {regs} registers/thread, {} B static + {} B dynamic shared memory",
            a.static_smem,
            a.dynamic_smem
        );
        out!("{}", describe(&e));
        return Ok(code);
    }
    let rows = sweep_block_sizes(caps, &res, a.dynamic_smem, &FuncConfig::default());
    if a.json {
        return print_json(&serde_json::Value::Array(
            rows.iter().map(row_json).collect(),
        ));
    }
    outln!("device: {note}");
    outln!(
        "kernel: {regs} registers/thread, {} B static + {} B dynamic shared memory",
        a.static_smem,
        a.dynamic_smem
    );
    // Calculator mode has no Program: every size is accepted.
    let sg = suggest_block_sizes(&rows, None, &mut |_| None);
    out!("{}", sweep_table(&rows, sg.as_ref()));
    Ok(0)
}

/// One estimate explained: blocks, warps, the limits, headroom, or why it cannot launch.
pub fn describe(e: &Estimate) -> String {
    let mut s = String::new();
    if let Err(why) = &e.launchable {
        s.push_str(&format!(
            "block {}: cannot launch: {why}\n",
            e.block_threads
        ));
        return s;
    }
    s.push_str(&format!(
        "block {}: {} block{}/SM, {} of {} warps/SM = {:.1}% occupancy, limited by {}\n",
        e.block_threads,
        e.blocks_per_sm,
        if e.blocks_per_sm == 1 { "" } else { "s" },
        e.active_warps_per_sm,
        e.max_warps_per_sm,
        e.occupancy_pct,
        e.limiters
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(" = ")
    ));
    let lim = |v: Option<u32>| v.map_or("unlimited".to_string(), |b| b.to_string());
    s.push_str(&format!(
        "  blocks/SM by warps {}, registers {}, shared memory {}, block slots {}\n",
        e.limits.warps,
        lim(e.limits.registers),
        lim(e.limits.shared_memory),
        e.limits.blocks_per_sm
    ));
    s.push_str(&format!(
        "  allocated per block: {} registers ({} per warp), {} B shared memory; SM shared memory configured: {} B\n",
        e.regs_per_block, e.regs_per_warp, e.smem_per_block, e.smem_config_bytes
    ));
    for h in &e.headroom {
        s.push_str(&format!("  {}\n", h.text));
    }
    s
}

/// The block-size sweep as a table plus the suggestion and the sizes it passed over.
pub fn sweep_table(rows: &[SweepRow], suggestion: Option<&Suggestion>) -> String {
    let mut s = format!(
        "{:>6}  {:>9}  {:>9}  {:>9}  limiter\n",
        "block", "blocks/SM", "warps/SM", "occupancy"
    );
    for r in rows {
        s.push_str(&format!(
            "{:>6}  {:>9}  {:>9}  {:>8.1}%  {}\n",
            r.block_size, r.blocks_per_sm, r.active_warps_per_sm, r.occupancy_pct, r.limiter
        ));
    }
    match suggestion {
        Some(sg) => {
            s.push_str(&format!(
                "suggested: {} ({})\n",
                sg.block_size, sg.explanation
            ));
            for r in &sg.refused {
                s.push_str(&format!("not suggested: {} ({})\n", r.block_size, r.why));
            }
        }
        None => s.push_str("suggested: none (no block size launches)\n"),
    }
    s
}

/// The suggestion for `program`'s kernel: only sizes whose outputs match the Program's own
/// size on the reference interpreter (`harness::preserve`), with the inputs of `file`.
pub(crate) fn preserving_suggestion(
    rows: &[SweepRow],
    program: &crate::ir::Program,
    inputs: &crate::harness::preserve::Inputs,
) -> Option<Suggestion> {
    let own = program.workgroup_size;
    let own_block = own[0].saturating_mul(own[1]).saturating_mul(own[2]);
    suggest_block_sizes(rows, Some(own_block), &mut |b| {
        let Some(wg) = crate::occupancy::block_workgroup(b, own) else {
            return Some(format!(
                "not a whole number of {}x{} rows of the own workgroup",
                own[1], own[2]
            ));
        };
        let p = crate::harness::preserve::preserves(program, inputs, wg);
        (!p.is_preserved()).then(|| p.text())
    })
}

fn sm_of(caps: &DeviceCaps) -> u32 {
    caps.cc_major * 10 + caps.cc_minor
}

fn program_mode(a: &Args, file: &Path, caps: &DeviceCaps, note: &str) -> super::Outcome {
    if crate::ir::is_pipeline_file(file) {
        return pipeline_mode(a, file, note);
    }
    super::pipeline_kernels::refuse_sync_on_program(file, a.sync, a.decide)?;
    let program = load_program(file)?;
    let wg = a.workgroup.unwrap_or(program.workgroup_size);
    let sm = sm_of(caps);
    let opts = EmitOptions {
        sm,
        workgroup_size: wg,
        lineinfo: false,
        unroll: true,
        grid_barrier: Default::default(),
        version_bounds: false,
    };
    // Validated once: the emitter and the launch rules read the same facts.
    let info = validated(&program)?;
    let kernel = emit_valid(&info, &opts)?;
    let (res, res_source) = kernel_resources(&kernel, sm, a.regs)?;
    let threads = wg[0].saturating_mul(wg[1]).saturating_mul(wg[2]);
    let e = estimate(caps, &res, threads, a.dynamic_smem);
    // The PTX is emitted for one workgroup size (`.maxntid`); other sizes would be emitted
    // anew, so the sweep drops the kernel's own block limit and keeps its registers.
    let sweep_res = KernelResources {
        max_threads_per_block: 0,
        ..res.clone()
    };
    let rows = sweep_block_sizes(caps, &sweep_res, a.dynamic_smem, &FuncConfig::default());
    let inputs = crate::harness::preserve::Inputs::of_file(file, None);
    let suggestion = preserving_suggestion(&rows, &program, &inputs);
    let (shape, lens) = default_shape(&program, wg);
    let lens_ref: Vec<(&str, u64)> = lens.iter().map(|(n, l)| (n.as_str(), *l)).collect();
    let mut diags: Vec<Diagnostic> =
        launch::launch_diagnostics(&info, caps, Some(&res), wg, shape.grid, &lens_ref);
    diags.extend(perf::perf_diagnostics(
        &program,
        caps,
        Some(&res),
        Some(&e),
        &shape,
    ));
    diags.extend(wg_dependence::dependence(&program));
    if wg != program.workgroup_size {
        let p = crate::harness::preserve::preserves(&program, &inputs, wg);
        diags.extend(wg_dependence::size_verdict(&program, wg, &p));
    }
    let failed = e.launchable.is_err()
        || diags
            .iter()
            .any(|d| d.severity == crate::diagnostics::Severity::Error);
    let code = i32::from(failed);
    if a.json {
        return print_json(&json!({
            "program": program.name,
            "device": caps.name,
            "device_source": note,
            "resources_source": res_source.text,
            "resources_estimated": res_source.estimated,
            "resources": res,
            "workgroup": wg,
            "grid": shape.grid,
            "estimate": estimate_json(&e),
            "sweep": rows.iter().map(row_json).collect::<Vec<_>>(),
            "suggestion": suggestion,
            "diagnostics": diags,
        }))
        .map(|c| c.max(code));
    }
    outln!("program: {} ({})", program.name, file.display());
    outln!("device: {note}");
    outln!(
        "kernel: {} registers/thread, {} B static shared, {} B local/thread ({})",
        res.regs_per_thread,
        res.static_smem_bytes,
        res.local_bytes,
        if res_source.estimated {
            res_source.text.clone()
        } else {
            format!("from {}", res_source.text)
        }
    );
    outln!(
        "workgroup {}x{}x{}, grid {}x{}x{}",
        wg[0],
        wg[1],
        wg[2],
        shape.grid[0],
        shape.grid[1],
        shape.grid[2]
    );
    out!("{}", describe(&e));
    outln!(
        "\nsweep (same registers at every size; sizes change what ptxas allocates only slightly):"
    );
    out!("{}", sweep_table(&rows, suggestion.as_ref()));
    if !diags.is_empty() {
        outln!();
        for d in &diags {
            outln!("{d}");
        }
    }
    Ok(code)
}

/// `occupancy PIPELINE`: every plan group's fused kernel at its plan workgroup size, with
/// the resources from `--regs`, ptxas or the estimate (as for a Program). Exit code 1 when a
/// kernel cannot launch.
fn pipeline_mode(a: &Args, file: &Path, note: &str) -> super::Outcome {
    let how = super::pipeline_kernels::GroupEmit {
        sm: None,
        lineinfo: false,
        unroll: true,
        grid_barrier: Default::default(),
        version_bounds: false,
        sync: a.sync.unwrap_or_default(),
        decide: a.decide.unwrap_or_default(),
        timeline: false,
    };
    let pk = super::pipeline_kernels::load(file, a.device.as_deref(), a.workgroup, &how)?;
    let sm = sm_of(&pk.device).min(90);
    let mut failed = false;
    let mut groups = Vec::new();
    let mut text = format!(
        "pipeline: {} ({})\ndevice: {note}\n{}",
        pk.pipeline.name,
        file.display(),
        pk.decision_text("")
    );
    for g in &pk.groups {
        let (res, src) = kernel_resources(&g.kernel, sm, a.regs)?;
        let wg = g.group.workgroup_size;
        let threads = wg[0].saturating_mul(wg[1]).saturating_mul(wg[2]);
        let e = estimate(&pk.device, &res, threads, a.dynamic_smem);
        failed |= e.launchable.is_err();
        if a.json {
            groups.push(super::pipeline_kernels::merged(
                pk.group_json(g),
                json!({
                    "resources_source": src.text,
                    "resources_estimated": src.estimated,
                    "resources": res,
                    "estimate": estimate_json(&e),
                }),
            ));
            continue;
        }
        text.push_str(&format!(
            "\n{}\nkernel: {} registers/thread, {} B static shared, {} B local/thread ({})\n{}",
            pk.header(g),
            res.regs_per_thread,
            res.static_smem_bytes,
            res.local_bytes,
            if src.estimated {
                src.text.clone()
            } else {
                format!("from {}", src.text)
            },
            describe(&e)
        ));
    }
    let code = i32::from(failed);
    if a.json {
        let mut v = pk.wrap_json(groups);
        if let Some(o) = v.as_object_mut() {
            o.insert("device_source".into(), json!(note));
        }
        return print_json(&v).map(|c| c.max(code));
    }
    out!("{text}");
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_shape_follows_the_run_section() {
        let p = crate::ir::parse_program(
            r#"{"format":1,"name":"k","workgroup_size":[256,1,1],
            "buffers":[{"name":"a","binding":0,"access":"read","type":"f32"},
                       {"name":"c","binding":1,"access":"read_write","type":"f32"}],
            "body":[],
            "run":{"elements":1000,"inputs":{"a":{"len":2000,"fill":"zeros"},"c":{"fill":"zeros"}}}}"#,
            "k.json",
        )
        .unwrap();
        let (shape, lens) = default_shape(&p, [256, 1, 1]);
        assert_eq!(shape.grid, [4, 1, 1]);
        assert_eq!(lens, vec![("a".to_string(), 2000), ("c".to_string(), 1000)]);
    }
}
