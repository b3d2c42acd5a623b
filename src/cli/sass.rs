//! `vyrescope sass FILE [--sm 90] [--workgroup X,Y,Z] [--json] [--no-unroll]`

use std::path::PathBuf;

use crate::emit::{emit, EmitOptions};
use crate::ir::load_program;
use crate::sass;

/// Show a Program's SASS (machine code) with the PTX line and IR node of every instruction.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Needs NVIDIA's ptxas and nvdisasm (no GPU): scripts/install-ptxas.sh and scripts/install-nvdisasm.sh install them; export VYRESCOPE_PTXAS / VYRESCOPE_NVDISASM to the paths they print.\n\nExamples:\n  vyrescope sass fixtures/programs/vadd_f32.json\n  vyrescope sass fixtures/programs/matmul_tiled_f32.json --sm 80 --workgroup 16,16,1\n  vyrescope sass fixtures/programs/vadd_f32.json --json"
)]
pub struct Args {
    /// Program file.
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
}

/// Runs `sass`.
pub fn run(a: &Args) -> i32 {
    let p = match load_program(&a.file) {
        Ok(p) => p,
        Err(e) => return super::fail(e),
    };
    // The same PTX as `emit --lineinfo`, so the IR lines come along with the PTX lines.
    let opts = EmitOptions {
        sm: a.sm,
        workgroup_size: a.workgroup.unwrap_or(p.workgroup_size),
        lineinfo: true,
        unroll: !a.no_unroll,
        grid_barrier: Default::default(),
        version_bounds: false,
    };
    let k = match emit(&p, &opts) {
        Ok(k) => k,
        Err(e) => return super::fail(e),
    };
    let listing = match sass::disassemble(&k, a.sm) {
        Ok(l) => l,
        Err(e) => return super::fail(e),
    };
    let text = if a.json {
        match serde_json::to_string_pretty(&listing.to_json()) {
            Ok(s) => s + "\n",
            Err(e) => return super::fail(format!("{e}\n  Fix: report this bug")),
        }
    } else {
        sass::render::text(&listing)
    };
    super::write_stdout(&crate::util::terminal_safe(&text));
    0
}
