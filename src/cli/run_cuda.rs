//! The CUDA half of `vyrescope run --backend cuda`: dispatch on the live GPU, verify against
//! the reference interpreter, print the reference report plus device figures.

use std::path::Path;
use std::time::Duration;

use super::run_args::Args;
use crate::harness::executor::{Execution, Executor};
use crate::ir::Program;
use crate::report::RunReport;
use crate::runtime::execute::RunRequest;
use crate::util::Problem;

/// The GPU run `a` asks for; `--fuel` goes to the reference run that `--verify` makes.
pub fn request(a: &Args) -> RunRequest {
    RunRequest {
        root: a.root.clone(),
        workgroup: a.workgroup,
        grid: a.grid,
        repeat: a.repeat.max(1),
        verify: a.verify,
        timeout: a.timeout_ms.map(Duration::from_millis),
        lineinfo: a.lineinfo,
        sm: a.sm,
        device_timing: !a.no_device_timing,
        fuel: a.fuel,
    }
}

/// Runs `program` on the GPU as `a` asks; returns the exit code (1 on parity failure).
pub fn run(a: &Args, program: &Program) -> super::Outcome {
    let base = a.file.parent().unwrap_or(Path::new("."));
    let mut rt = a.gpu.open()?;
    if let Some(dir) = &a.dump {
        match crate::inputs::prepare_rooted(
            program,
            super::run_args::file_root(a, base),
            a.workgroup,
            a.grid,
        ) {
            Ok(p) => {
                super::run_args::dump(dir, &p.buffers, ".in.bin")?;
            }
            Err(e) => return Err(Problem::from(e)),
        }
    }
    let req = request(a);
    let run = match Executor::InProcess(&mut rt).run_program(program, base, &req) {
        Ok(Execution::InProcess(r)) => r,
        Ok(_) => {
            return Err(crate::util::Problem::bug(
                "internal: the in-process executor ran elsewhere",
            ))
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(dir) = &a.dump {
        super::run_args::dump(dir, &run.buffers, ".bin")?;
        let ptx = dir.join(format!("{}.ptx", run.compiled.emitted.kernel_name));
        let log = dir.join("jit.log");
        super::run_args::dump_file(&ptx, run.compiled.emitted.ptx.as_bytes()).and_then(|_| {
            super::run_args::dump_file(&log, run.compiled.info.info_log.as_bytes())
        })?;
    }
    let report = RunReport::new(
        &program.name,
        "cuda",
        &run.shape,
        &run.buffers,
        run.report.full_ms,
        None,
    );
    let passed = run.parity.as_ref().is_none_or(|p| p.passed);
    if a.json {
        let mut v = serde_json::to_value(&report).map_err(Problem::bug)?;
        if let Some(obj) = v.as_object_mut() {
            let caps = rt.caps();
            obj.insert("device".into(), serde_json::json!({"name": caps.name, "cc": format!("{}.{}", caps.cc_major, caps.cc_minor), "sm_count": caps.sm_count, "driver_version": caps.driver_version}));
            obj.insert("device_ms".into(), serde_json::json!(run.report.device_ms));
            // The cold first launch and the warm rest, told apart (`device_ms` covers all).
            let cw = crate::runtime::ColdWarm::of(&run.report.device_samples_ms);
            obj.insert(
                "first_launch_ms".into(),
                serde_json::json!(cw.as_ref().map(|c| c.first_ms)),
            );
            obj.insert("warm_ms".into(), serde_json::json!(cw.and_then(|c| c.warm)));
            obj.insert("jit_ms".into(), serde_json::json!(run.compiled.info.jit_ms));
            obj.insert(
                "resources".into(),
                serde_json::json!({
                    "regs_per_thread": run.compiled.info.resources.regs_per_thread,
                    "static_smem_bytes": run.compiled.info.resources.static_smem_bytes,
                    "local_bytes": run.compiled.info.resources.local_bytes,
                    "const_bytes": run.compiled.info.resources.const_bytes,
                    "max_threads_per_block": run.compiled.info.resources.max_threads_per_block,
                    "ptx_version": run.compiled.info.ptx_version,
                    "binary_version": run.compiled.info.binary_version,
                }),
            );
            obj.insert("parity".into(), serde_json::json!(run.parity));
            obj.insert("dispatch".into(), serde_json::json!(run.report));
            obj.insert("cache".into(), serde_json::json!(rt.cache_report()));
            obj.insert("telemetry".into(), serde_json::json!(rt.telemetry()));
        }
        match serde_json::to_string_pretty(&v) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        out!("{}", report.to_text(&run.buffers));
        let r = &run.compiled.info.resources;
        let device_sm = rt.caps().cc_major * 10 + rt.caps().cc_minor;
        outln!(
            "device: {} (sm_{device_sm}); PTX emitted for sm_{}",
            rt.caps().name,
            a.sm.unwrap_or(device_sm)
        );
        let device = match crate::runtime::ColdWarm::of(&run.report.device_samples_ms) {
            Some(crate::runtime::ColdWarm {
                first_ms,
                warm: Some(w),
            }) => format!(
                "warm median {:.4} ms (min {:.4}, max {:.4}, {} launches after the first); first launch {first_ms:.4} ms (cold: module load, first touch)",
                w.median_ms, w.min_ms, w.max_ms, w.count
            ),
            Some(c) => format!(
                "{:.4} ms (one launch: a cold figure with module load and first-touch costs; the default --repeat {} gives a warm median)",
                c.first_ms,
                super::run_args::DEFAULT_REPEAT
            ),
            None => format!(
                "not measured (--no-device-timing, {} launches)",
                a.repeat.max(1)
            ),
        };
        outln!(
            "device time: {device}; upload {:.2} ms, readback {:.2} ms, JIT {:.1} ms{}",
            run.report.upload_ms,
            run.report.readback_ms,
            run.compiled.info.jit_ms,
            if run.compiled.info.cached {
                " (module cached)"
            } else {
                ""
            }
        );
        outln!(
            "resources: {} regs/thread, {} B static shared, {} B local (spills), max {} threads/block",
            r.regs_per_thread, r.static_smem_bytes, r.local_bytes, r.max_threads_per_block
        );
        match &run.parity {
            Some(p) if p.passed => outln!("parity: ok ({}, {} elements)", p.mode, p.compared),
            Some(p) => {
                outln!(
                    "parity: FAILED ({}): {} of {} elements differ",
                    p.mode,
                    p.mismatches,
                    p.compared
                );
                for m in &p.first {
                    outln!(
                        "  {}[{}]: gpu {} reference {}",
                        m.buffer,
                        m.index,
                        m.gpu,
                        m.reference
                    );
                }
            }
            None => outln!("parity: not checked (add --verify)"),
        }
    }
    if passed {
        Ok(0)
    } else {
        Ok(1)
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn fuel_reaches_the_reference_run_of_verify() {
        let parse = |args: &[&str]| {
            let cli = crate::cli::Cli::try_parse_from(args).unwrap();
            match cli.command {
                Some(crate::cli::Command::Run(a)) => a,
                other => panic!("{other:?}"),
            }
        };
        let a = parse(&[
            "vyrescope",
            "run",
            "p.json",
            "--backend",
            "cuda",
            "--verify",
            "--fuel",
            "123456789012",
        ]);
        let req = super::request(&a);
        assert!(req.verify);
        assert_eq!(req.fuel, Some(123_456_789_012));
        assert_eq!(req.reference_options().fuel, 123_456_789_012);
        let a = parse(&[
            "vyrescope",
            "run",
            "p.json",
            "--backend",
            "cuda",
            "--verify",
        ]);
        assert_eq!(
            super::request(&a).reference_options().fuel,
            crate::interp::DEFAULT_FUEL
        );
    }
}
