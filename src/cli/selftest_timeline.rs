//! `selftest`'s timeline check: every pipeline fixture once in each form (separate launches,
//! the plan's fused kernels with grid barriers, and with dataflow waits; a plan without a
//! dataflow group fuses the same in both) with the timeline recorded, and the consistency check on each
//! capture: every (step, workgroup) slice exactly once, no slice ending before it starts,
//! waits inside their kernel's span, no record dropped.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::harness::pipeline::{run_forms, Forms, PipelineGpuOptions};
use crate::harness::timeline_run::{record_pipeline, PipelineForm};
use crate::megakernel::dataflow::SyncMode;
use crate::runtime::dispatch::DispatchOptions;
use crate::runtime::jit::JitOptions;
use crate::runtime::Runtime;
use crate::util::Problem;

/// One form of one fixture, recorded and checked.
#[derive(Debug, Clone, Serialize)]
pub struct TimelineCheck {
    /// Pipeline file.
    pub file: PathBuf,
    /// `separate`, `fused` (grid barriers) or `dataflow` (fused with dataflow waits).
    pub form: &'static str,
    /// Launches recorded.
    pub launches: usize,
    /// Slices decoded.
    pub slices: usize,
    /// Kernel time, first stamp to last (ms).
    pub kernel_ms: f64,
    /// Groups launched without loads ahead of their waits (the residency fallback).
    pub no_prefetch: usize,
    /// The check's problems, or the error that stopped the recording.
    pub problems: Vec<String>,
}

impl TimelineCheck {
    /// Whether the capture is consistent.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Records and checks every pipeline fixture of `dir` (none when `dir` is missing).
pub fn run(rt: &mut Runtime, dir: &Path, root: Option<&Path>) -> Vec<TimelineCheck> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        for (label, form, sync) in [
            ("separate", PipelineForm::Separate, SyncMode::Barrier),
            ("fused", PipelineForm::Fused, SyncMode::Barrier),
            ("dataflow", PipelineForm::Fused, SyncMode::Dataflow),
        ] {
            let mut c = TimelineCheck {
                file: f.clone(),
                form: label,
                launches: 0,
                slices: 0,
                kernel_ms: 0.0,
                no_prefetch: 0,
                problems: Vec::new(),
            };
            if let Err(e) = one(rt, &f, root, (form, sync), &mut c) {
                c.problems.push(e.to_string());
            }
            out.push(c);
        }
    }
    out
}

fn one(
    rt: &mut Runtime,
    f: &Path,
    root: Option<&Path>,
    (form, sync): (PipelineForm, SyncMode),
    c: &mut TimelineCheck,
) -> Result<(), Problem> {
    let (pipeline, mut prepared) = super::selftest::load_fixture(f, root)?;
    let initial = prepared.clone();
    let jit = JitOptions::default();
    let opts = DispatchOptions {
        timeout: Some(std::time::Duration::from_secs(10)),
        ..DispatchOptions::default()
    };
    // The fused form as `run --megakernel` launches it (once), then its timeline from the
    // same compiled pipeline: the recorded kernels must be the launched ones (a group that
    // fell back to its kernel without prefetch included).
    let run = PipelineGpuOptions::new(Forms::Megakernel, 1)
        .with_timeout(opts.timeout)
        .with_sync(sync);
    let (report, compiled) = run_forms(rt, &pipeline, &mut prepared, &run)?;
    let compiled = compiled.ok_or_else(|| Problem::bug("the fused form was not compiled"))?;
    let recorded = record_pipeline(rt, &compiled, &initial, &[form], (1, 0), &opts, &jit)?;
    let rec = recorded
        .into_iter()
        .next()
        .ok_or_else(|| Problem::bug("no form recorded"))?;
    let d = crate::timeline::decode(&rec.run.capture)?;
    c.launches = rec.run.capture.launches.len();
    c.slices = d.slices.len();
    c.kernel_ms = crate::timeline::summarize(&rec.run.capture, &d).kernel_ms;
    c.no_prefetch = compiled.topology.iter().filter(|t| t.no_prefetch).count();
    c.problems = crate::timeline::check(&rec.run.capture, &d);
    if !rec.parity.passed {
        c.problems.push(format!(
            "the instrumented {} form differs from the reference interpreter: {}",
            rec.label,
            rec.parity.first_text()
        ));
    }
    if form == PipelineForm::Fused {
        let launched = report
            .megakernel
            .as_ref()
            .map(|m| m.fingerprints.clone())
            .unwrap_or_default();
        let recorded: Vec<u64> = rec
            .run
            .capture
            .launches
            .iter()
            .map(|l| l.program.unwrap_or(0))
            .collect();
        if launched != recorded {
            c.problems.push(format!(
                "the timeline recorded other kernels than the run launched (fingerprints {recorded:x?} vs {launched:x?})"
            ));
        }
    }
    Ok(())
}

/// The report's lines (text mode).
pub fn text(checks: &[TimelineCheck]) -> String {
    let mut s = String::from(
        "\ntimeline (each pipeline fixture once per form, instrumented; every (step, workgroup) slice once, none reversed, waits inside their kernel):\n",
    );
    for c in checks {
        let name = c.file.file_name().map_or_else(
            || c.file.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        s.push_str(&format!(
            "  {:4}  {:<28} {:<8} {:>2} launch{} {:>6} slices {:>10.4} ms{}\n",
            if c.ok() { "ok" } else { "FAIL" },
            name,
            c.form,
            c.launches,
            if c.launches == 1 { " " } else { "es" },
            c.slices,
            c.kernel_ms,
            match c.no_prefetch {
                0 => String::new(),
                n => format!(
                    " ({n} group{} without prefetch, recorded as launched)",
                    if n == 1 { "" } else { "s" }
                ),
            }
        ));
        for p in &c.problems {
            s.push_str(&format!("        {}\n", crate::util::terminal_safe(p)));
        }
    }
    s
}
