//! One compile target per pipeline: a fusion decision recorded once, by the `--decide
//! measure` path into the plan cache, is the decision `plan`, `emit`, `sass`, `occupancy`,
//! `run` (reference interpreter) and the inspector's Plan tab all report, in the same words,
//! and the kernels they show follow it. Without a GPU, the measuring device is a stand-in
//! whose timings (random, seeded and printed) make separate launches win where the cost
//! model fuses, so a front end that ignored the recorded decision would show the model's.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::support::cli;
use crate::tui_helpers::{app, press, screen};
use vyrescope::harness::target::{compile, target, CacheUse, DeviceChoice, Fit, TargetSpec};
use vyrescope::megakernel::cache::PlanCache;
use vyrescope::megakernel::compiled::Residency;
use vyrescope::megakernel::decision::DecisionOrigin;
use vyrescope::megakernel::launch::PipelineLaunch;
use vyrescope::megakernel::plan::Decide;
use vyrescope::megakernel::FusedKernel;
use vyrescope::tui::action::Command;
use vyrescope::util::Problem;

/// A device that keeps every persistent grid resident and times a launch list faster the
/// more launches it has (a random figure per call): separate launches always win.
struct SeparateWins {
    state: u64,
}

/// A time seed for the stand-in devices, printed so a failure can be replayed.
fn seed() -> u64 {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("seed {seed}");
    seed
}

/// xorshift64: the next figure in [0.5, 1.5) from `state`.
fn figure(state: &mut u64) -> f64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    0.5 + (*state >> 11) as f64 / (1u64 << 53) as f64
}

impl SeparateWins {
    fn next(&mut self) -> f64 {
        figure(&mut self.state)
    }
}

impl Residency for SeparateWins {
    fn resident_blocks(&mut self, _: &FusedKernel) -> Result<u32, Problem> {
        Ok(1 << 20)
    }

    fn time_launches(&mut self, launches: &[PipelineLaunch]) -> Result<f64, Problem> {
        // At most 1.5 / n ms for n launches, at least 0.5 ms for one: n >= 3 always wins.
        Ok(self.next() / launches.len().max(1) as f64)
    }

    fn sm_count(&self) -> u32 {
        132
    }
}

fn softmax() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/softmax.json")
}

/// The binary with `HOME` and the user cache inside `home`.
fn vyrescope(home: &Path, args: &[&str]) -> (i32, String, String) {
    cli::output(
        cli::in_root()
            .args(args)
            .env("HOME", home)
            .env("XDG_CACHE_HOME", home.join("cache")),
    )
}

/// Records a measured decision for softmax (default profile and sync form) in the plan
/// cache under `home`, through the `--decide measure` path; returns the decision's lines as
/// a later front end must print them.
fn record(home: &Path, seed: u64) -> Vec<String> {
    let file = softmax();
    let p = vyrescope::ir::load_pipeline(&file).unwrap();
    let shapes = vyrescope::inputs::pipeline::pipeline_shapes(&p, file.parent().unwrap()).unwrap();
    let steps = p.steps.len();
    let cache = PlanCache::at(home.join("cache/vyrescope/plan"));
    let spec = |decide| TargetSpec {
        device: DeviceChoice::Profile(None),
        decide,
        cache: CacheUse::At(cache.clone()),
        ..TargetSpec::default()
    };
    let p = Arc::new(p);
    // The model fuses softmax's steps into one kernel: the measurement must overturn that.
    let model = target(p.clone(), shapes.clone(), &spec(Decide::Model)).unwrap();
    let before = compile(&model, Fit::Plan).unwrap();
    assert_eq!(before.decision.origin, DecisionOrigin::Model);
    assert!(before.compiled.groups.len() < steps, "the model fuses");
    let measure = target(p.clone(), shapes.clone(), &spec(Decide::Measure)).unwrap();
    let mut gpu = SeparateWins { state: seed | 1 };
    let fit = Fit::Device {
        device: &mut gpu,
        measure_topology: false,
    };
    let measured = compile(&measure, fit).unwrap();
    assert_eq!(measured.decision.origin, DecisionOrigin::Measured);
    assert_eq!(
        measured.compiled.groups.len(),
        steps,
        "separate launches won"
    );
    // A default target now finds the recorded choice.
    let after = compile(&model, Fit::Plan).unwrap();
    assert_eq!(after.decision.origin, DecisionOrigin::MeasuredCached);
    assert_eq!(after.compiled.groups.len(), steps);
    let lines = after.decision.lines();
    assert!(lines[0].contains("measured (cached"), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(": separate [0] [1]") && l.contains("measured: fused")),
        "{lines:?}"
    );
    lines
}

fn has_all(out: &str, lines: &[String], prefix: &str, what: &str) {
    for l in lines {
        let want = format!("{prefix}{l}");
        assert!(out.contains(&want), "{what} lacks `{want}`:\n{out}");
    }
}

#[test]
fn a_recorded_decision_is_the_one_every_front_end_reports() {
    let seed = seed();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let lines = record(home, seed);
    let steps = 5;
    let f = softmax();
    let f = f.to_str().unwrap();

    let (code, out, err) = vyrescope(home, &["plan", f]);
    assert_eq!(code, 0, "{err}");
    has_all(&out, &lines, "", "plan");
    assert!(
        out.contains(&format!("{steps} steps -> {steps} launches")),
        "{out}"
    );
    let (code, out, err) = vyrescope(home, &["plan", f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"]["origin"], "measured_cached", "{out}");
    assert_eq!(v["launches"], steps);

    let (code, out, err) = vyrescope(home, &["emit", f]);
    assert_eq!(code, 0, "{err}");
    has_all(&out, &lines, "// ", "emit");
    assert_eq!(out.matches(".entry ").count(), steps, "one kernel per step");

    let (code, out, err) = vyrescope(home, &["occupancy", f]);
    assert_eq!(code, 0, "{err}");
    has_all(&out, &lines, "", "occupancy");
    let (code, out, err) = vyrescope(home, &["occupancy", f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["groups"].as_array().map(Vec::len), Some(steps), "{out}");
    assert_eq!(v["decision"]["origin"], "measured_cached");

    if crate::support::tools::sass_tools("sass on a pipeline with a recorded decision") {
        let (code, out, err) = vyrescope(home, &["sass", f]);
        assert_eq!(code, 0, "{err}");
        has_all(&out, &lines, "// ", "sass");
    }

    let (code, out, err) = vyrescope(home, &["run", f]);
    assert_eq!(code, 0, "{err}");
    has_all(&out, &lines, "  ", "run --backend reference");
    let (code, out, err) = vyrescope(home, &["run", f, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"]["origin"], "measured_cached", "{out}");

    // The inspector's Plan tab, planning through the same cache.
    let (mut a, hl) = app(&[softmax()], 240, 80);
    a.jobs.session.plan_cache = Some(PlanCache::at(home.join("cache/vyrescope/plan")));
    a.programs
        .doc
        .as_mut()
        .unwrap()
        .pipeline
        .as_mut()
        .unwrap()
        .planned_for = None;
    press(
        &mut a,
        &[Command::NextStep, Command::Tab(7), Command::Expand],
    );
    let plan = a.programs.doc.as_ref().unwrap().pipeline.as_ref().unwrap();
    assert_eq!(plan.plan.as_ref().unwrap().groups.len(), steps);
    let s = screen(&mut a, &hl);
    // The panel wraps its text and so drops a line's leading indent.
    let trimmed: Vec<String> = lines.iter().map(|l| l.trim_start().to_string()).collect();
    has_all(&s, &trimmed, "", "the Plan tab");
    assert!(a.jobs.session.plan_counts.hits >= 1, "read from the cache");
}

/// Without a recorded decision every front end says the decision is the model's prediction;
/// `--decide measure` where nothing can be timed is refused with a fix.
#[test]
fn without_a_record_the_decision_is_a_model_prediction() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let f = softmax();
    let f = f.to_str().unwrap();
    // `emit`, `occupancy` and the reference `run` only look the cache up; `plan` writes it.
    for cmd in ["emit", "occupancy", "run", "plan"] {
        let (code, out, err) = vyrescope(home, &[cmd, f]);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(
            out.contains("fusion decided by: model prediction"),
            "{cmd}: {out}"
        );
        let written = home.join("cache/vyrescope/plan").exists();
        assert_eq!(written, cmd == "plan", "{cmd}");
    }
    for cmd in ["plan", "emit", "occupancy", "run"] {
        let (code, _, err) = vyrescope(home, &[cmd, f, "--decide", "measure"]);
        assert_ne!(code, 0, "{cmd}");
        assert!(
            err.contains("--decide measure") && err.contains("Fix:"),
            "{cmd}: {err}"
        );
    }
}

/// `--decide auto` (the default) on a GPU times the forms exactly when the model's plan holds
/// a choice it is unsure of, and records the winner with a note saying why; `--decide model`
/// on the same device never times. Without a GPU, `auto` plans as the model.
#[test]
fn the_default_measures_on_a_gpu_only_where_the_model_is_unsure() {
    use vyrescope::megakernel::decision::unsure;
    let seed = seed();
    let mut unsure_seen = 0;
    for name in [
        "softmax",
        "reduce_normalize",
        "chain3_transient",
        "stencil_clamped",
    ] {
        let file =
            Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/pipelines/{name}.json"));
        let p = Arc::new(vyrescope::ir::load_pipeline(&file).unwrap());
        let shapes =
            vyrescope::inputs::pipeline::pipeline_shapes(&p, file.parent().unwrap()).unwrap();
        let home = tempfile::tempdir().unwrap();
        let cache = PlanCache::at(home.path().join("plan"));
        let spec = |decide| TargetSpec {
            device: DeviceChoice::Profile(None),
            decide,
            cache: CacheUse::At(cache.clone()),
            ..TargetSpec::default()
        };
        let offline = compile(
            &target(p.clone(), shapes.clone(), &spec(Decide::Auto)).unwrap(),
            Fit::Plan,
        )
        .unwrap();
        assert_eq!(
            offline.decision.origin,
            DecisionOrigin::of(offline.compiled.plan())
        );
        assert!(
            offline.decision.note.is_none(),
            "{name}: no GPU, no measuring"
        );
        let plan = offline.compiled.plan();
        let doubts = unsure(plan).len() + plan.groups.iter().filter(|g| g.halo.is_some()).count();
        unsure_seen += usize::from(doubts > 0);

        let mut gpu = SeparateWins { state: seed | 1 };
        let model = target(p.clone(), shapes.clone(), &spec(Decide::Model)).unwrap();
        let m = compile(
            &model,
            Fit::Device {
                device: &mut gpu,
                measure_topology: false,
            },
        )
        .unwrap();
        assert_ne!(
            m.decision.origin,
            DecisionOrigin::Measured,
            "{name}: `model` never times"
        );

        let auto = target(p.clone(), shapes.clone(), &spec(Decide::Auto)).unwrap();
        let a = compile(
            &auto,
            Fit::Device {
                device: &mut gpu,
                measure_topology: false,
            },
        )
        .unwrap();
        if doubts > 0 {
            assert_eq!(a.decision.origin, DecisionOrigin::Measured, "{name}");
            let note = a.decision.note.clone().unwrap_or_default();
            assert!(note.contains("the model was unsure"), "{name}: {note}");
            assert!(
                a.decision.lines()[1].contains("the default measured"),
                "{:?}",
                a.decision.lines()
            );
            // Recorded: a second default compile reads it back and does not time again.
            let again = compile(
                &auto,
                Fit::Device {
                    device: &mut gpu,
                    measure_topology: false,
                },
            )
            .unwrap();
            assert_eq!(
                again.decision.origin,
                DecisionOrigin::MeasuredCached,
                "{name}"
            );
            assert!(again.decision.note.is_none());
        } else {
            assert_eq!(
                a.decision.origin, m.decision.origin,
                "{name}: sure, so no timing"
            );
            assert!(a.decision.note.is_none(), "{name}");
        }
    }
    assert!(
        unsure_seen > 0,
        "at least one fixture must exercise the measuring path"
    );
}

/// A device on which fewer launches are always faster (a recomputed pass beats its steps
/// apart); random figures, seeded.
struct FewerWins {
    state: u64,
}

impl Residency for FewerWins {
    fn resident_blocks(&mut self, _: &FusedKernel) -> Result<u32, Problem> {
        Ok(1 << 20)
    }

    fn time_launches(&mut self, launches: &[PipelineLaunch]) -> Result<f64, Problem> {
        let t = figure(&mut self.state);
        // At least 0.5 ms per launch, at most 1.5: one launch always beats three.
        Ok(t * launches.len().max(1) as f64)
    }

    fn sm_count(&self) -> u32 {
        132
    }
}

/// The model's recomputed passes are always timed by the default on a GPU: a pass measured
/// slower than its steps apart keeps the chain out of recomputation (and a later command
/// reads that from the plan cache); a pass measured faster stays.
#[test]
fn the_default_times_recomputed_passes_and_drops_one_that_loses() {
    let seed = seed();
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/stencil_clamped.json");
    let p = Arc::new(vyrescope::ir::load_pipeline(&file).unwrap());
    let shapes = vyrescope::inputs::pipeline::pipeline_shapes(&p, file.parent().unwrap()).unwrap();
    let halos = |c: &vyrescope::harness::target::CompiledTarget| {
        c.compiled
            .plan()
            .groups
            .iter()
            .filter(|g| g.halo.is_some())
            .count()
    };
    for separate_wins in [true, false] {
        let home = tempfile::tempdir().unwrap();
        let spec = TargetSpec {
            device: DeviceChoice::Profile(None),
            decide: Decide::Auto,
            cache: CacheUse::At(PlanCache::at(home.path().join("plan"))),
            ..TargetSpec::default()
        };
        let t = target(p.clone(), shapes.clone(), &spec).unwrap();
        let offline = compile(&t, Fit::Plan).unwrap();
        assert!(halos(&offline) > 0, "the model recomputes stencil_clamped");
        let c = if separate_wins {
            let mut gpu = SeparateWins { state: seed | 1 };
            compile(
                &t,
                Fit::Device {
                    device: &mut gpu,
                    measure_topology: false,
                },
            )
            .unwrap()
        } else {
            let mut gpu = FewerWins { state: seed | 1 };
            compile(
                &t,
                Fit::Device {
                    device: &mut gpu,
                    measure_topology: false,
                },
            )
            .unwrap()
        };
        assert_eq!(c.decision.origin, DecisionOrigin::Measured);
        let lines = c.decision.lines();
        let pass_line = lines
            .iter()
            .find(|l| l.contains("recomputed pass of steps"))
            .unwrap_or_else(|| panic!("{lines:?}"));
        if separate_wins {
            assert_eq!(halos(&c), 0, "{lines:?}");
            assert!(
                pass_line.contains(": not recomputed (measured: pass"),
                "{pass_line}"
            );
        } else {
            assert_eq!(halos(&c), halos(&offline), "{lines:?}");
            assert!(
                pass_line.contains(": recomputed (measured: pass"),
                "{pass_line}"
            );
        }
        // Read back by a later command: the same plan, not timed again.
        let again = compile(&t, Fit::Plan).unwrap();
        assert_eq!(again.decision.origin, DecisionOrigin::MeasuredCached);
        assert_eq!(halos(&again), halos(&c));
    }
}
