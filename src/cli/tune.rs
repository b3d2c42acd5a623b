//! `vyrescope tune FILE`: time candidate workgroup sizes on the live GPU (each verified
//! against the reference interpreter); results are cached per (program, device). A size
//! whose outputs differ from the Program's own size's on the reference interpreter is refused
//! untimed (`harness::preserve`). `--offline` (no GPU) sweeps the same candidates for
//! registers, occupancy on a device profile, instruction mix and result preservation,
//! labelled as an estimate (`harness::offline`).

use std::path::{Path, PathBuf};

use crate::harness::tune::TuneRequest;
use crate::occupancy::tune::{parse_candidates, render_json, render_text, CacheMode};
use crate::util::Problem;

/// Time candidate workgroup sizes on the GPU and report the fastest.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope tune fixtures/programs/vadd_f32.json\n  vyrescope tune fixtures/programs/reduce_sum_f32.json --candidates 64,128,256,512 --repeat 20 --json\n  vyrescope tune fixtures/programs/saxpy_f32.json --offline --device a100\n\nWithout a GPU, --offline estimates each candidate (registers from ptxas or the PTX, occupancy on --device or the bundled h200 profile, instruction mix, and whether it keeps the Program's results); nothing is timed."
)]
pub struct Args {
    /// Program file.
    pub file: PathBuf,
    /// Candidate workgroup sizes: a range of multiples of 32 (`32..1024`), a list, or 2-D sizes.
    #[arg(long, default_value = "32..1024")]
    pub candidates: String,
    /// Timed launches per candidate (median reported).
    #[arg(long, default_value_t = 10)]
    pub repeat: u32,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Ignore (and overwrite) cached results.
    #[arg(long)]
    pub fresh: bool,
    /// Allow `run.inputs.*.file` data files anywhere inside DIR (default: only inside the
    /// Program file's folder).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// No GPU: estimate each candidate instead of timing it (registers, occupancy on the
    /// `--device` profile, default h200, instruction mix, result preservation).
    #[arg(long)]
    pub offline: bool,
    /// GPU ordinal (`--gpu N`); with `--offline`, `--device NAME|FILE` names the profile.
    #[command(flatten)]
    pub gpu: super::gpu_arg::GpuArg,
}

/// Runs `tune`.
pub fn run(a: &Args) -> super::Outcome {
    let text = {
        let b =
            crate::util::read_limited(&a.file, crate::ir::parse::MAX_FILE_BYTES, "Program file")?;
        String::from_utf8_lossy(&b).into_owned()
    };
    super::refuse_pipeline(&a.file, "tune", PIPELINE_INSTEAD)?;
    let program = crate::ir::parse_program(&text, &a.file.display().to_string())?;
    let candidates = parse_candidates(&a.candidates)?;
    if a.offline {
        return offline(a, &program, &candidates);
    }
    let mut rt = a.gpu.open().map_err(|mut p| {
        // No GPU here: the offline sweep is what can be done instead.
        p.fix = format!(
            "{}; without a GPU, `vyrescope tune {} --offline` estimates every candidate (registers, occupancy, instruction mix, and whether it keeps the results)",
            p.fix,
            a.file.display()
        );
        p
    })?;
    let req = TuneRequest {
        program: &program,
        program_text: &text,
        base: a.file.parent().unwrap_or(Path::new(".")),
        root: a.root.as_deref(),
        candidates,
        repeat: a.repeat,
        mode: if a.fresh {
            CacheMode::Fresh
        } else {
            CacheMode::Use
        },
        cache: None,
    };
    match crate::harness::tune::tune(&mut rt, &req) {
        Ok(r) => {
            if a.json {
                outln!("{}", render_json(&r));
            } else {
                out!("{}", render_text(&r));
            }
            Ok(0)
        }
        Err(e) => Err(Problem::from(e)),
    }
}

/// What to use instead of `tune` on a pipeline file.
const PIPELINE_INSTEAD: &str = "tune one step's Program file (the pipeline's `programs/` folder), or time the pipeline's forms with `vyrescope run PIPELINE --megakernel` and see its plan with `vyrescope plan PIPELINE`";

/// `tune --offline`: the estimate sweep, as a table or JSON.
fn offline(a: &Args, program: &crate::ir::Program, candidates: &[[u32; 3]]) -> super::Outcome {
    let (caps, note) = super::occupancy::resolve_device(a.gpu.device.as_deref())?;
    let inputs = crate::harness::preserve::Inputs::of_file(&a.file, a.root.as_deref());
    let progress = SweepProgress::new();
    let report = |done: usize, all: usize| progress.report(done, all);
    let t = crate::harness::offline::tune_offline(
        program,
        &inputs,
        candidates,
        &caps,
        &note,
        Some(&report),
    );
    if a.json {
        match serde_json::to_string_pretty(&t) {
            Ok(s) => outln!("{s}"),
            Err(e) => return Err(Problem::bug(e)),
        }
    } else {
        out!("{}", offline_text(&t));
    }
    Ok(0)
}

/// Progress of a long offline sweep on stderr: nothing for the first second (a short sweep
/// stays quiet), then a line at most every second and one when the sweep is done.
struct SweepProgress {
    start: std::time::Instant,
    /// Seconds since `start` of the last line, when one was written.
    last: std::sync::Mutex<Option<f64>>,
}

impl SweepProgress {
    fn new() -> SweepProgress {
        SweepProgress {
            start: std::time::Instant::now(),
            last: std::sync::Mutex::new(None),
        }
    }

    fn report(&self, done: usize, all: usize) {
        if let Some(line) = self.line_at(done, all, self.start.elapsed().as_secs_f64()) {
            crate::util::stderr_line(&line);
        }
    }

    /// The line due `now` seconds into the sweep, if one is.
    fn line_at(&self, done: usize, all: usize, now: f64) -> Option<String> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let due = match *last {
            None => now >= 1.0,
            Some(t) => now - t >= 1.0 || done == all,
        };
        if !due {
            return None;
        }
        *last = Some(now);
        Some(format!(
            "tune --offline: {done}/{all} candidates estimated ({now:.1} s)"
        ))
    }
}

/// The offline sweep as a table: one line per candidate, then the suggestion and the label.
pub fn offline_text(t: &crate::harness::offline::OfflineTune) -> String {
    let wg = |w: [u32; 3]| format!("{}x{}x{}", w[0], w[1], w[2]);
    let mut s = format!(
        "tune {} OFFLINE on {} (estimate: nothing timed), own workgroup {}
registers: {}
instruction mix: {}
",
        t.program,
        t.device,
        wg(t.default_workgroup),
        t.registers_source,
        t.mix_source
    );
    s.push_str(&format!(
        "{:>12}  {:>4}  {:>9}  {:>5}  {:>5}  {:>5}  {:>5}  {:>5}  results\n",
        "workgroup", "regs", "occupancy", "mem", "arith", "ctrl", "conv", "spec"
    ));
    for r in &t.rows {
        let m = r.mix.unwrap_or_default();
        let regs = r.registers.map_or("-".into(), |x| x.to_string());
        let mut results = r.results.text();
        if let Some(why) = &r.cannot_launch {
            // No results verdict for a size that cannot run.
            results = format!("cannot launch: {why}");
        }
        let mut marks = String::new();
        if Some(r.workgroup) == t.suggested {
            marks.push_str(" <- suggested");
        }
        if r.workgroup == t.default_workgroup {
            marks.push_str(" (own)");
        }
        s.push_str(&format!(
            "{:>12}  {:>4}  {:>8.1}%  {:>5}  {:>5}  {:>5}  {:>5}  {:>5}  {results}{marks}\n",
            wg(r.workgroup),
            regs,
            r.occupancy_pct,
            m.memory,
            m.arithmetic,
            m.control,
            m.conversion,
            m.special
        ));
    }
    match t.suggested {
        Some(w) => s.push_str(&format!(
            "suggested (estimate): workgroup {} - the highest estimated occupancy among sizes that keep the results\n",
            wg(w)
        )),
        None => s.push_str("suggested: none (no candidate launches and keeps the results)\n"),
    }
    s.push_str(&format!("note: {}\n", t.label));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_quiet_for_a_second_then_a_line_a_second_and_the_last() {
        let p = SweepProgress::new();
        assert_eq!(p.line_at(1, 40, 0.2), None);
        assert_eq!(p.line_at(2, 40, 0.9), None);
        let first = p.line_at(3, 40, 1.3).expect("after a second");
        assert!(first.contains("3/40") && first.contains("1.3 s"), "{first}");
        assert_eq!(p.line_at(4, 40, 2.0), None);
        assert!(p.line_at(9, 40, 2.4).is_some_and(|l| l.contains("9/40")));
        assert!(p.line_at(40, 40, 2.5).is_some_and(|l| l.contains("40/40")));
        // A sweep done within its first second says nothing.
        let q = SweepProgress::new();
        assert_eq!(q.line_at(32, 32, 0.8), None);
    }
}
