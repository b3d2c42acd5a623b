//! `vyrescope run FILE --backend reference|...`: a Program on the reference interpreter, or
//! handed to `run_cuda`, `run_timeline` or `run_pipeline`.

use std::path::Path;

use super::run_args::{dump, file_root};
pub use super::run_args::{Args, Backend, Topology};
use crate::inputs;

use crate::diagnostics::Severity;
use crate::harness::executor::{Execution, Executor};
use crate::ir::load_program;
use crate::report::RunReport;
use crate::util::Problem;

/// Runs `run`.
pub fn run(a: &Args) -> super::Outcome {
    if crate::ir::is_pipeline_file(&a.file) {
        return super::run_pipeline::run(a);
    }
    let program = load_program(&a.file)?;
    let diags = crate::validate::validate(&program);
    if diags.iter().any(|d| d.severity == Severity::Error) {
        return Err(Problem::invalid_file(&a.file, "Program", &diags));
    }
    for d in &diags {
        errln!("{}", crate::util::terminal_safe(&d.to_string()));
    }
    if let Some(note) = partial_grid_note(&program, a.grid, a.workgroup) {
        errln!("{note}");
    }
    if a.backend == Backend::Cuda {
        if a.wants_timeline() {
            return super::run_timeline::program(a, &program);
        }
        return super::run_cuda::run(a, &program);
    }
    if a.wants_timeline() {
        return Err(Problem::new(
            "--timeline and --trace record GPU time",
            "add --backend cuda",
        ));
    }
    let base = a.file.parent().unwrap_or(Path::new("."));
    if let Some(dir) = &a.dump {
        // The initial contents, prepared as the executor prepares them (seeded, so equal).
        let prepared = inputs::prepare_rooted(&program, file_root(a, base), a.workgroup, a.grid)?;
        dump(dir, &prepared.buffers, ".in.bin")?;
    }
    let req = super::run_cuda::request(a);
    let run = match Executor::Reference.run_program(&program, base, &req) {
        Ok(Execution::Reference(r)) => r,
        Ok(_) => {
            return Err(crate::util::Problem::bug(
                "internal: the reference executor ran elsewhere",
            ))
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(dir) = &a.dump {
        dump(dir, &run.buffers, ".bin")?;
    }
    let report = RunReport::new(
        &program.name,
        a.backend.name(),
        &run.shape,
        &run.buffers,
        run.elapsed_ms,
        Some(run.node_evals),
    );
    if a.json {
        match serde_json::to_string_pretty(&report) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        out!("{}", report.to_text(&run.buffers));
    }
    Ok(0)
}

/// A note when `--grid` launches fewer invocations than the Program's `run.elements` asks
/// for: the elements past them are never computed, which the outputs alone do not show.
fn partial_grid_note(
    program: &crate::ir::Program,
    grid: Option<[u32; 3]>,
    workgroup: Option<[u32; 3]>,
) -> Option<String> {
    let grid = grid?;
    let elements = program.run.as_ref()?.elements?;
    let wg = workgroup.unwrap_or(program.workgroup_size);
    let product = |v: [u32; 3]| v.iter().map(|&x| u64::from(x)).product::<u64>();
    let invocations = product(grid).saturating_mul(product(wg));
    (invocations < elements).then(|| {
        format!(
            "note: --grid {},{},{} with workgroup {},{},{} launches {invocations} invocations; the Program's run.elements is {elements}, so elements from {invocations} on are not computed (leave --grid out to cover them all)",
            grid[0], grid[1], grid[2], wg[0], wg[1], wg[2]
        )
    })
}
