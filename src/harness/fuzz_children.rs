//! `selftest --fuzz-pipelines` across processes: a fused kernel that faults leaves the CUDA
//! context unusable, so the pipelines run in a child process (`selftest --fuzz-pipelines N
//! --fuzz-child`) that reports each pipeline as a JSON line on its stdout. When a child stops
//! at a fault or a timeout (or dies without its report), the next child starts at the seed
//! after the failing one, so one fault no longer hides every later result.

use std::ffi::OsString;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use super::fuzz_pipelines::{
    write_pipeline_case, PipelineFinding, PipelineFuzzOptions, PipelineFuzzReport,
};
use crate::gen::random_pipeline;
use crate::util::Problem;

/// One line a fuzz child writes on its stdout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildEvent {
    /// The GPU the child runs on (its first line).
    Device(String),
    /// Pipelines the child has finished, counted from its first seed.
    Done(u64),
    /// A pipeline that failed.
    Finding(PipelineFinding),
    /// The child's totals (its last line).
    Report(PipelineFuzzReport),
}

impl ChildEvent {
    /// The event as one line of JSON (no newline).
    pub fn line(&self) -> String {
        // An enum of plain data: serialising it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// What the supervisor tells its caller as the run goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress<'a> {
    /// The GPU name a child reported.
    Device(&'a str),
    /// Pipelines finished over the whole run.
    Done(u64),
    /// A failure (faults and timeouts included), in seed order.
    Finding(&'a PipelineFinding),
}

/// Runs `o.count` pipelines from `o.seed` in children of `exe`; `child_args(seed, count)` are
/// the arguments of a child that fuzzes `count` pipelines from `seed` (they must include
/// `--fuzz-child`). Returns the merged report.
pub fn supervise(
    exe: &Path,
    o: &PipelineFuzzOptions,
    child_args: &dyn Fn(u64, u64) -> Vec<OsString>,
    each: &mut dyn FnMut(Progress),
) -> Result<PipelineFuzzReport, Problem> {
    let mut rep = PipelineFuzzReport::empty(o.out.clone());
    let mut left = o.count;
    let mut seed = o.seed;
    while left > 0 {
        let mut child = Command::new(exe)
            .args(child_args(seed, left))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                Problem::new(
                    format!("cannot start the fuzz worker {}: {e}", exe.display()),
                    "run vyrescope from a path it can re-run itself from",
                )
            })?;
        let mut done = 0u64;
        let mut report = None;
        if let Some(out) = child.stdout.take() {
            for line in std::io::BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                // Anything else on stdout (there should be nothing) is not ours to read.
                let Ok(event) = serde_json::from_str::<ChildEvent>(&line) else {
                    continue;
                };
                match event {
                    ChildEvent::Device(d) => each(Progress::Device(&d)),
                    ChildEvent::Done(n) => {
                        done = n;
                        each(Progress::Done(rep.pipelines + n));
                    }
                    ChildEvent::Finding(f) => each(Progress::Finding(&f)),
                    ChildEvent::Report(r) => report = Some(r),
                }
            }
        }
        let status = child.wait().map_err(Problem::bug)?;
        let (ran, stopped_at) = match report {
            Some(r) => {
                let stopped_at = r
                    .findings
                    .last()
                    .filter(|f| f.kind == "fault" || f.kind == "timeout")
                    .map(|f| f.seed);
                rep.agreed += r.agreed;
                rep.separate_launches += r.separate_launches;
                rep.fused_launches += r.fused_launches;
                rep.mixed_groups += r.mixed_groups;
                rep.findings.extend(r.findings);
                (r.pipelines, stopped_at)
            }
            None if done == 0 && rep.pipelines == 0 => {
                // Stopped before its first pipeline (no GPU, a bad option): it said why on
                // stderr; repeating that for every seed would help no one.
                return Err(Problem::new(
                    format!("the fuzz worker stopped before its first pipeline ({status})"),
                    "see its message above (`vyrescope probe` tells whether a GPU is there)",
                ));
            }
            None => {
                // The child died inside pipeline `done`: that pipeline is the finding.
                let at = seed.wrapping_add(done);
                let file = random_pipeline(at)
                    .ok()
                    .and_then(|p| write_pipeline_case(&o.out, at, &p, None).ok());
                let f = PipelineFinding::new(
                    at,
                    "fault",
                    format!("the fuzz worker process died ({status}) running this pipeline"),
                    file,
                    o.sync,
                );
                each(Progress::Finding(&f));
                rep.findings.push(f);
                (done + 1, Some(at))
            }
        };
        rep.pipelines += ran;
        left = left.saturating_sub(ran.max(1));
        match stopped_at {
            Some(at) => seed = at.wrapping_add(1),
            None => break,
        }
    }
    rep.passed = rep.findings.is_empty();
    Ok(rep)
}
