//! `selftest --fuzz`: differential testing of the whole GPU path against the interpreter.
//!
//! Generated Programs ([`crate::gen::Config::differential`]: valid by construction and free
//! of data races, so their results do not depend on thread order) are run twice, on the GPU
//! through the same path as `run --backend cuda --verify` and on the reference interpreter,
//! and compared by the parity rules (`runtime::parity`: bits, or a ULP bound for Programs
//! with transcendental operations). Every Program that disagrees, fails to JIT or faults is
//! written to a file, which `vyrescope run FILE --backend cuda` replays; Programs the
//! emitter or the interpreter refuses are counted as skipped with the reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::gen::{valid_program, Config};
use crate::ir::Program;
use crate::runtime::execute::RunRequest;
use crate::runtime::{Runtime, RuntimeError};
use crate::util::Problem;

/// What to fuzz.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    /// Programs to generate.
    pub count: u64,
    /// Seed of the first Program; Program `k` uses `seed + k`, so `--fuzz 1 --seed S`
    /// regenerates the Program a report names by seed `S`.
    pub seed: u64,
    /// Folder the failing Programs are written to.
    pub out: PathBuf,
    /// Per-launch timeout.
    pub timeout: Duration,
}

/// One Program that the GPU and the interpreter disagreed on, or that failed on the GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FuzzFinding {
    /// The Program's seed.
    pub seed: u64,
    /// "mismatch", "jit", "fault", "timeout" or "error".
    pub kind: String,
    /// What differed or failed (first line of the error, or the first differing element).
    pub detail: String,
    /// The Program file written for replay (None when it could not be written: see
    /// `detail`).
    pub file: Option<PathBuf>,
}

/// The outcome of a fuzz run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FuzzReport {
    /// Programs generated.
    pub programs: u64,
    /// Programs that ran on both sides and agreed.
    pub agreed: u64,
    /// Every disagreement or GPU failure.
    pub findings: Vec<FuzzFinding>,
    /// Programs not compared, by reason (emitter refused, interpreter out of fuel, ...).
    pub skipped: BTreeMap<String, u64>,
    /// Elements compared over all agreeing Programs.
    pub elements: u64,
    /// Where failing Programs are written.
    pub out: PathBuf,
    /// True when there is no finding.
    pub passed: bool,
}

/// The folder failing Programs go to by default: the user's cache folder
/// (`~/.cache/vyrescope/fuzz`), else the system's temp folder; never the working folder.
pub fn default_out_dir() -> PathBuf {
    dirs::cache_dir()
        .map(|d| d.join("vyrescope").join("fuzz"))
        .unwrap_or_else(|| std::env::temp_dir().join("vyrescope-fuzz"))
}

/// The Program with seed `seed`, as `selftest --fuzz` generates it.
pub fn fuzz_program(seed: u64) -> Program {
    valid_program(seed, &Config::differential())
}

/// Why a Program is not compared, when the error is a refusal rather than a failure: the
/// emitter does not lower a construct (a limit of the GPU backend), or the interpreter's
/// step budget ran out. The reason is a fixed text per kind, so the summary counts them.
/// Everything else (an invalid generated Program, an emitter invariant, an interpreter that
/// cannot run a valid Program, inputs) is a bug and counts as a finding.
pub fn skip_reason(e: &RuntimeError) -> Option<String> {
    match e {
        RuntimeError::Emit(crate::emit::EmitError::Unsupported(what)) => {
            // `what` names the construct first ("grid barrier in ...").
            let construct: String = what.split([':', '(']).next().unwrap_or(what).trim().into();
            Some(format!("emitter does not lower {construct}"))
        }
        RuntimeError::Emit(
            crate::emit::EmitError::Target(_) | crate::emit::EmitError::Workgroup(_),
        ) => Some("emitter refused the target or workgroup".into()),
        RuntimeError::Interp(i) if i.code == "I003" => {
            Some("interpreter step budget ran out (I003)".into())
        }
        _ => None,
    }
}

/// The finding kind of a GPU-side failure.
fn failure_kind(e: &RuntimeError) -> &'static str {
    match e {
        RuntimeError::Jit { .. } => "jit",
        RuntimeError::Fault { .. }
        | RuntimeError::FaultUnrecovered { .. }
        | RuntimeError::WorkerFault { .. } => "fault",
        RuntimeError::Timeout { .. } => "timeout",
        _ => "error",
    }
}

/// Writes `program` as `<dir>/fuzz_<seed>.json` (created if missing; atomic, so an existing
/// file of that name is replaced whole or not at all). The file holds the Program with its
/// `run` section, so `vyrescope run FILE --backend cuda` replays the launch exactly.
pub fn write_case(dir: &Path, seed: u64, program: &Program) -> Result<PathBuf, Problem> {
    let json = crate::ir::write::program_to_json(program)?;
    let fix = "pass --out DIR with a writable folder";
    std::fs::create_dir_all(dir)
        .map_err(|e| Problem::new(format!("cannot create {}: {e}", dir.display()), fix))?;
    let path = dir.join(format!("fuzz_{seed:016x}.json"));
    crate::util::write_atomic(&path, format!("{json}\n").as_bytes())
        .map_err(|e| Problem::new(format!("cannot write {}: {e}", path.display()), fix))?;
    Ok(path)
}

/// Runs the differential fuzz; `each` sees every finding as it happens (to print it at
/// once) and the count of Programs done.
pub fn fuzz(
    rt: &mut Runtime,
    o: &FuzzOptions,
    each: &mut dyn FnMut(u64, Option<&FuzzFinding>),
) -> FuzzReport {
    let mut rep = FuzzReport {
        programs: 0,
        agreed: 0,
        findings: Vec::new(),
        skipped: BTreeMap::new(),
        elements: 0,
        out: o.out.clone(),
        passed: true,
    };
    let req = RunRequest {
        repeat: 1,
        verify: true,
        timeout: Some(o.timeout),
        device_timing: false,
        ..RunRequest::default()
    };
    // Generated Programs read no files; the folder only anchors the (unused) file rule.
    let base = std::env::temp_dir();
    for k in 0..o.count {
        let seed = o.seed.wrapping_add(k);
        let program = fuzz_program(seed);
        rep.programs += 1;
        let found = match rt.run_program(&program, &base, &req) {
            Ok(run) => match run.parity {
                Some(p) if p.passed => {
                    rep.agreed += 1;
                    rep.elements += p.compared;
                    None
                }
                Some(p) => {
                    let first = p.first_text();
                    Some((
                        "mismatch",
                        format!(
                            "{} of {} elements differ ({}){first}",
                            p.mismatches, p.compared, p.mode
                        ),
                    ))
                }
                None => Some(("error", "the run was not verified".to_string())),
            },
            Err(e) => match skip_reason(&e) {
                Some(reason) => {
                    *rep.skipped.entry(reason).or_default() += 1;
                    None
                }
                None => {
                    let kind = failure_kind(&e);
                    let line = e.to_string().lines().next().unwrap_or_default().to_string();
                    let poisoned = matches!(
                        e,
                        RuntimeError::Poisoned(_) | RuntimeError::FaultUnrecovered { .. }
                    );
                    if poisoned {
                        // Nothing later can run in this process: report and stop.
                        rep.findings.push(FuzzFinding {
                            seed,
                            kind: kind.into(),
                            detail: format!("{line} (fuzzing stopped: restart to go on)"),
                            file: write_case(&o.out, seed, &program).ok(),
                        });
                        each(k + 1, rep.findings.last());
                        break;
                    }
                    Some((kind, line))
                }
            },
        };
        match found {
            Some((kind, detail)) => {
                let (file, detail) = match write_case(&o.out, seed, &program) {
                    Ok(f) => (Some(f), detail),
                    Err(w) => (None, format!("{detail} (not written: {w})")),
                };
                rep.findings.push(FuzzFinding {
                    seed,
                    kind: kind.into(),
                    detail,
                    file,
                });
                each(k + 1, rep.findings.last());
            }
            None => each(k + 1, None),
        }
    }
    rep.passed = rep.findings.is_empty();
    rep
}

/// The summary line: Programs, agreed, findings, and skipped Programs with their reasons.
pub fn summary(rep: &FuzzReport) -> String {
    let skipped: u64 = rep.skipped.values().sum();
    let mut s = format!(
        "fuzz: {} programs, {} agreed ({} elements compared), {} mismatches or failures, {} skipped",
        rep.programs,
        rep.agreed,
        rep.elements,
        rep.findings.len(),
        skipped
    );
    if skipped > 0 {
        let reasons: Vec<String> = rep
            .skipped
            .iter()
            .map(|(r, n)| format!("{n} x {r}"))
            .collect();
        s.push_str(&format!(" ({})", reasons.join("; ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Access, Expr, StmtKind};

    #[test]
    fn differential_programs_validate_and_run_on_the_interpreter() {
        let mut ran = 0;
        for seed in 0..300u64 {
            let p = fuzz_program(0xf00d_0000 + seed);
            let diags = crate::validate::validate(&p);
            assert!(crate::validate::is_valid(&diags), "seed {seed}: {diags:?}");
            let prepared = crate::inputs::prepare(&p, Path::new("."), None, None).unwrap();
            let mut bufs = prepared.buffers;
            if crate::interp::run(&p, &prepared.shape, &mut bufs).is_ok() {
                ran += 1;
            }
        }
        // Short loops only: (almost) every Program runs within the default fuel.
        assert!(ran >= 295, "only {ran} of 300 ran");
    }

    /// Every access to a buffer other threads may write is at the thread's own `i`, `i` is
    /// never assigned, and workgroups are one-dimensional: nothing is shared between threads.
    #[test]
    fn differential_programs_are_race_free() {
        for seed in 0..300u64 {
            let p = fuzz_program(seed);
            assert_eq!(&p.workgroup_size[1..], &[1, 1], "seed {seed}");
            let shared = |b: &str| {
                p.buffers
                    .iter()
                    .any(|d| d.name == b && d.access.is_writable())
            };
            let own = |e: &Expr| matches!(e, Expr::Var(v) if v == "i");
            let check = |e: &Expr| {
                e.visit(&mut |x| match x {
                    Expr::Load { buffer, index } | Expr::Atomic { buffer, index, .. } => {
                        assert!(!shared(buffer) || own(index), "seed {seed}: {x:?}")
                    }
                    _ => {}
                })
            };
            p.walk_stmts(&mut |s| {
                match &s.kind {
                    StmtKind::Store { buffer, index, .. } => {
                        assert!(!shared(buffer) || own(index), "seed {seed}: {s:?}")
                    }
                    StmtKind::Assign { name, .. } => assert_ne!(name, "i", "seed {seed}"),
                    _ => {}
                }
                s.exprs().for_each(check);
            });
            assert!(p.buffers.iter().any(|b| b.access == Access::ReadWrite));
        }
    }

    #[test]
    fn written_cases_parse_back_to_the_same_program() {
        let dir = tempfile::tempdir().unwrap();
        for seed in [1u64, 0xdead_beef, u64::MAX] {
            let p = fuzz_program(seed);
            let f = write_case(&dir.path().join("nested"), seed, &p).unwrap();
            assert_eq!(f.file_name().unwrap(), &*format!("fuzz_{seed:016x}.json"));
            // Compared as written text: a NaN literal makes `==` on Programs false.
            let text = |q: &Program| crate::ir::write::program_to_json(q).unwrap();
            let back = crate::ir::load_program(&f).unwrap();
            assert_eq!(text(&back), text(&p), "seed {seed}");
            assert_eq!(format!("{back:?}"), format!("{p:?}"), "seed {seed}");
            // Writing again replaces the file whole.
            write_case(&dir.path().join("nested"), seed, &p).unwrap();
            assert_eq!(text(&crate::ir::load_program(&f).unwrap()), text(&p));
        }
    }

    #[test]
    fn unwritable_out_dir_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, b"x").unwrap();
        let e = write_case(&file, 7, &fuzz_program(7))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("plain") && e.contains("Fix: pass --out DIR"),
            "{e}"
        );
    }

    #[test]
    fn refusals_are_skips_and_gpu_failures_are_findings() {
        let fuel = RuntimeError::Interp(crate::interp::InterpError {
            code: "I003",
            node: None,
            message: "out of steps".into(),
            fix: "raise --fuel".into(),
        });
        assert_eq!(
            skip_reason(&fuel).as_deref(),
            Some("interpreter step budget ran out (I003)")
        );
        let barrier = RuntimeError::Interp(crate::interp::InterpError {
            code: "I004",
            node: None,
            message: "barrier".into(),
            fix: "x".into(),
        });
        assert_eq!(skip_reason(&barrier), None);
        let internal = RuntimeError::Emit(crate::emit::EmitError::Internal("x".into()));
        assert_eq!(skip_reason(&internal), None);
        let unsupported = RuntimeError::Emit(crate::emit::EmitError::Unsupported(
            "f64 atomics: on sm_50".into(),
        ));
        assert_eq!(
            skip_reason(&unsupported).as_deref(),
            Some("emitter does not lower f64 atomics")
        );
        let t = RuntimeError::Timeout {
            kernel: "k".into(),
            timeout_ms: 5,
            recover_ms: 1.0,
        };
        assert_eq!(skip_reason(&t), None);
        assert_eq!(failure_kind(&t), "timeout");
        assert_eq!(
            failure_kind(&RuntimeError::Launch(crate::util::Problem::new("x", ""))),
            "error"
        );
    }

    #[test]
    fn summary_names_every_skip_reason() {
        let mut skipped = BTreeMap::new();
        skipped.insert("emit refused: too big".to_string(), 2);
        skipped.insert("interpreter: out of fuel".to_string(), 1);
        let rep = FuzzReport {
            programs: 10,
            agreed: 6,
            findings: vec![FuzzFinding {
                seed: 3,
                kind: "mismatch".into(),
                detail: "x".into(),
                file: None,
            }],
            skipped,
            elements: 600,
            out: PathBuf::from("/tmp/x"),
            passed: false,
        };
        let s = summary(&rep);
        assert!(s.contains("10 programs, 6 agreed (600 elements compared), 1 mismatches or failures, 3 skipped (2 x emit refused: too big; 1 x interpreter: out of fuel)"), "{s}");
    }
}
