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
