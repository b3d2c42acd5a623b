//! One compile target per pipeline: what a pipeline is compiled for (the pipeline and its
//! launch shapes, the device, the sync form, how fusion is decided, the planner's register
//! and occupancy facts, and which plan cache records decisions), built by one function
//! ([`target`]) from whatever a front end holds (CLI arguments, the inspector's state, a
//! worker request), and compiled by one entry ([`compile`]).
//!
//! Why one: each front end used to assemble the planner's options itself, and they drifted:
//! `emit`, `sass` and `occupancy` planned without the plan cache, so a choice that
//! `run --decide measure` recorded was invisible to them, and each checked `--regs` or
//! `--decide` its own way. Now `run` (every backend and form), `plan`, `emit`, `sass`,
//! `occupancy`, `run --both` on a graph, `selftest`, the pipeline fuzzer, `--timeline`, the
//! inspector and the GPU worker's jobs all call [`compile`], which is the only caller of
//! [`CompiledPipeline::compile`] outside the megakernel layer; its result carries the
//! decision ([`DecisionReport`]) that every one of them prints the same way.
//!
//! A decision recorded once is found by all of them because every target of the same
//! pipeline, device and sync form plans under the same [`PlanOptions`] (the plan cache key):
//! `--decide measure` plans as the model and stores its measured plan under the model's
//! key ([`CompiledPipeline::decide_by_timing`]), and a default target looks that key up.

use std::sync::Arc;

use crate::harness::offline_fit::{fit_offline, OfflineFit};
use crate::inputs::LaunchShape;
use crate::ir::Pipeline;
use crate::megakernel::cache::{Cached, PlanCache};
use crate::megakernel::compiled::{CompiledPipeline, Residency};
use crate::megakernel::decision::{unsure, DecisionOrigin, DecisionReport};
use crate::megakernel::plan::{Decide, PlanOptions, SyncMode, MIN_OCCUPANCY_PCT};
use crate::occupancy::{profiles, DeviceCaps};
use crate::util::Problem;

/// The device a target is compiled for.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceChoice {
    /// A device profile: a bundled name or a DeviceCaps JSON file (`--device`, e.g. the
    /// output of `vyrescope probe --json`); `None`: the default profile, said so in the note.
    Profile(Option<String>),
    /// Capabilities in hand: a live GPU's probe, or the device the inspector has selected.
    Caps(DeviceCaps),
}

/// Which plan cache the target reads and writes.
#[derive(Debug, Clone, PartialEq)]
pub enum CacheUse {
    /// No cache: always planned afresh (replays, the fuzzer).
    Off,
    /// The user's plan cache, looked up only: the target shows a recorded decision (a
    /// `--decide measure` choice) but stores nothing (`emit`, `sass`, `occupancy`, `run` on
    /// the reference interpreter).
    Read,
    /// The user's plan cache, read and written (`plan`, GPU runs).
    ReadWrite,
    /// This cache (the inspector's session cache; tests).
    At(PlanCache),
}

/// What a front end asks for; [`target`] turns it into a [`PipelineTarget`].
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    /// The device.
    pub device: DeviceChoice,
    /// How fused persistent groups separate cross-workgroup dependences (`--sync`).
    pub sync: SyncMode,
    /// How fusion is decided (`--decide`).
    pub decide: Decide,
    /// Registers per thread of each step the planner assumes (`plan --regs`); empty: the
    /// planner's default for every step.
    pub registers: Vec<u32>,
    /// Occupancy threshold of fusion (`plan --min-occupancy`).
    pub min_occupancy_pct: f64,
    /// The plan cache.
    pub cache: CacheUse,
}

impl Default for TargetSpec {
    /// The default profile, the default sync form and decision, the planner's own register
    /// assumption and threshold, and the user's plan cache looked up only.
    fn default() -> TargetSpec {
        TargetSpec {
            device: DeviceChoice::Profile(None),
            sync: SyncMode::default(),
            decide: Decide::default(),
            registers: Vec::new(),
            min_occupancy_pct: MIN_OCCUPANCY_PCT,
            cache: CacheUse::Read,
        }
    }
}

/// A pipeline ready to compile: everything the plan, the fused kernels and the decision
/// depend on.
#[derive(Debug, Clone)]
pub struct PipelineTarget {
    /// The pipeline.
    pub pipeline: Arc<Pipeline>,
    /// Every step's launch shape.
    pub shapes: Vec<LaunchShape>,
    /// The device.
    pub device: DeviceCaps,
    /// Which device and why (`h200 (... no --device given)`), for reports.
    pub device_note: String,
    /// How fusion is decided, as asked (`measure` included).
    pub decide: Decide,
    /// The planner's options (the plan cache key): `decide` as the planner takes it
    /// ([`Decide::planner`]), the sync form, registers and threshold.
    pub plan_options: PlanOptions,
    /// The plan cache, if any.
    pub cache: Option<PlanCache>,
}

impl PipelineTarget {
    /// The sync form.
    pub fn sync(&self) -> SyncMode {
        self.plan_options.sync
    }

    /// The sm the device's kernels are emitted for offline (the device's own, at most 90:
    /// the newest target the emitter writes for every tool).
    pub fn default_sm(&self) -> u32 {
        (self.device.cc_major * 10 + self.device.cc_minor).min(90)
    }
}

/// The device profile `arg` names (a bundled name or a DeviceCaps file), else the default
/// profile, with a note saying which and why.
pub fn device_profile(arg: Option<&str>) -> Result<(DeviceCaps, String), profiles::ProfileError> {
    let name = arg.unwrap_or(profiles::DEFAULT_PROFILE);
    let caps = profiles::load(name)?;
    let how = match arg {
        Some(d) => format!("{}, --device {d}", profiles::label(d, &caps)),
        None => format!("{}: no --device given", profiles::label(name, &caps)),
    };
    let note = format!("{} ({how})", caps.name);
    Ok((caps, note))
}

/// The one builder of a compile target: checks what `spec` asks of `pipeline` (register
/// counts, the threshold) and resolves the device and the cache.
pub fn target(
    pipeline: Arc<Pipeline>,
    shapes: Vec<LaunchShape>,
    spec: &TargetSpec,
) -> Result<PipelineTarget, Problem> {
    if !(0.0..=100.0).contains(&spec.min_occupancy_pct) {
        return Err(Problem::new(
            format!(
                "--min-occupancy {} is not a percentage",
                spec.min_occupancy_pct
            ),
            "give a value from 0 to 100, e.g. --min-occupancy 25",
        ));
    }
    let r = &spec.registers;
    if r.len() > pipeline.steps.len() || r.iter().any(|&r| r == 0 || r > 255) {
        return Err(Problem::new(
            format!(
                "--regs {r:?}: expected at most {} counts (one per step) from 1 to 255",
                pipeline.steps.len()
            ),
            "give one register count per step in order, e.g. --regs 18,20",
        ));
    }
    let (device, device_note) = match &spec.device {
        DeviceChoice::Profile(arg) => device_profile(arg.as_deref())?,
        DeviceChoice::Caps(caps) => (caps.clone(), format!("{} ({})", caps.name, caps.source)),
    };
    let cache = match &spec.cache {
        CacheUse::Off => None,
        CacheUse::Read => PlanCache::user().map(PlanCache::read_only),
        CacheUse::ReadWrite => PlanCache::user(),
        CacheUse::At(c) => Some(c.clone()),
    };
    let plan_options = PlanOptions {
        registers: r.iter().map(|&r| Some(r)).collect(),
        min_occupancy_pct: spec.min_occupancy_pct,
        sync: spec.sync,
        decide: spec.decide.planner(),
        ..PlanOptions::new(device.clone())
    };
    Ok(PipelineTarget {
        pipeline,
        shapes,
        device,
        device_note,
        decide: spec.decide,
        plan_options,
        cache,
    })
}

/// How a compiled target is fitted to its device.
pub enum Fit<'a> {
    /// Planned and fused only (the reference run, the fuzzer, replays of a plan).
    Plan,
    /// Each group's kernel assembled offline and its figures written into the plan
    /// ([`fit_offline`]): for `sm` (`None`: [`PipelineTarget::default_sm`]), with `registers`
    /// per step reported instead of assembling where given.
    Offline {
        /// Target sm of the assembly.
        sm: Option<u32>,
        /// Registers per step to report instead of assembling.
        registers: Vec<Option<u32>>,
    },
    /// A live device: persistent grids fitted to what it keeps resident
    /// ([`CompiledPipeline::fit`]) and, with `--decide measure`, each run of fusable steps
    /// timed on it and the winner recorded in the target's cache.
    Device {
        /// The device (the runtime, on a GPU).
        device: &'a mut dyn Residency,
        /// Choose each persistent grid by timing (`--topology measure`).
        measure_topology: bool,
    },
}

/// A compiled target: the compiled pipeline and what decided it.
#[derive(Debug, Clone)]
pub struct CompiledTarget {
    /// The plan and every group's fused (and fitted) kernel.
    pub compiled: CompiledPipeline,
    /// The plan lookup before any measuring (cache hit or miss, evictions), for telemetry.
    pub planning: Cached,
    /// What decided the plan's fusion and with which figures: every front end prints
    /// [`DecisionReport::lines`].
    pub decision: DecisionReport,
    /// With [`Fit::Offline`], where the register figures come from.
    pub offline: Option<OfflineFit>,
    /// Plan cache problems to show (each with its `Fix:`); compiling never fails on them.
    pub warnings: Vec<String>,
}

/// The one compile entry: plans `target` (through its cache), fuses every group under its
/// sync form and fits the result as `fit` says. `--decide measure` needs [`Fit::Device`].
pub fn compile(target: &PipelineTarget, fit: Fit<'_>) -> Result<CompiledTarget, Problem> {
    if target.decide == Decide::Measure && !matches!(fit, Fit::Device { .. }) {
        return Err(Problem::usage(
            "`--decide measure` times the fused and separate forms on a GPU, and this command plans without one",
            "run `vyrescope run PIPELINE --backend cuda --decide measure` once; `plan`, `emit`, `sass`, `occupancy`, `run` and the inspector then use its choice from the plan cache",
        ));
    }
    let mut compiled = CompiledPipeline::compile(
        target.pipeline.clone(),
        target.shapes.clone(),
        &target.plan_options,
        target.sync(),
        target.cache.as_ref(),
    )?;
    let planning = compiled.planned.clone();
    let mut warnings: Vec<String> = planning.warning.iter().cloned().collect();
    let mut offline = None;
    let mut note = None;
    match fit {
        Fit::Plan => {}
        Fit::Offline { sm, registers } => {
            let sm = sm.unwrap_or_else(|| target.default_sm());
            offline = Some(fit_offline(&mut compiled, &target.device, sm, &registers)?);
        }
        Fit::Device {
            device,
            measure_topology,
        } => {
            compiled.fit(device, measure_topology)?;
            let auto = match target.decide {
                Decide::Measure => Some(AutoMeasure::Asked),
                Decide::Auto => auto_measure(compiled.plan()),
                _ => None,
            };
            if let Some(AutoMeasure::Asked | AutoMeasure::Unsure(_)) = &auto {
                compiled.decide_by_timing(
                    &target.plan_options,
                    device,
                    target.cache.as_ref(),
                    measure_topology,
                )?;
                warnings.extend(compiled.planned.warning.iter().cloned());
            }
            note = auto.and_then(AutoMeasure::note);
        }
    }
    let mut decision = DecisionReport::of(compiled.plan());
    decision.note = note;
    Ok(CompiledTarget {
        decision,
        compiled,
        planning,
        offline,
        warnings,
    })
}

/// Most device time the default may spend timing forms it is unsure of (predicted).
pub const AUTO_MEASURE_BUDGET_MS: f64 = 2000.0;

/// Rounds x forms x repetitions `decide_by_timing` launches a run of steps: 3 interleaved
/// rounds of up to 3 forms, 5 repetitions each.
const LAUNCHES_PER_MEASURE: f64 = 45.0;

/// Why a compile on a GPU times the forms (or, unsure, does not).
#[derive(Debug, Clone, PartialEq)]
enum AutoMeasure {
    /// `--decide measure`.
    Asked,
    /// The default, where the model is unsure: the reason.
    Unsure(String),
    /// Unsure, but timing would take longer than the budget.
    TooLong(String),
}

impl AutoMeasure {
    fn note(self) -> Option<String> {
        match self {
            AutoMeasure::Asked => None,
            AutoMeasure::Unsure(why) => Some(format!(
                "the default measured the forms once: the model was unsure, {why}"
            )),
            AutoMeasure::TooLong(why) => Some(format!(
                "the model was unsure, {why}, and timing the forms would take longer than {:.0} s: run `--decide measure` once to settle it",
                AUTO_MEASURE_BUDGET_MS / 1e3
            )),
        }
    }
}

/// The default's rule on a GPU: time the forms when the model's own plan (not a choice
/// read from the plan cache) holds a fused or split choice it is unsure of
/// ([`unsure`]), within [`AUTO_MEASURE_BUDGET_MS`] of predicted device time.
fn auto_measure(plan: &crate::megakernel::plan::Plan) -> Option<AutoMeasure> {
    if DecisionOrigin::of(plan) != DecisionOrigin::Model {
        return None;
    }
    let runs = unsure(plan);
    let passes: Vec<&crate::megakernel::halo::HaloPlan> =
        plan.groups.iter().filter_map(|g| g.halo.as_ref()).collect();
    let steps = |s: &[usize]| {
        s.iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join("+")
    };
    let why = match (runs.first(), passes.first()) {
        (Some(first), _) => format!(
            "{} of steps {} predicted {:.2}x over separate launches (under {:.1}x)",
            first.verdict(),
            steps(&first.steps),
            first.separate_us / first.chosen_us.max(f64::MIN_POSITIVE),
            crate::megakernel::plan::UNSURE_GAIN
        ),
        (None, Some(_)) => format!(
            "{} recomputed pass(es) chosen (its predictions for recomputation are not calibrated: such passes are always timed)",
            passes.len()
        ),
        (None, None) => return None,
    };
    let predicted_ms: f64 = runs
        .iter()
        .map(|d| d.separate_us.max(d.fused_us) * LAUNCHES_PER_MEASURE / 1e3)
        .chain(
            passes
                .iter()
                .map(|h| h.otherwise_us.max(h.predicted_us) * LAUNCHES_PER_MEASURE / 1e3),
        )
        .sum();
    Some(if predicted_ms > AUTO_MEASURE_BUDGET_MS {
        AutoMeasure::TooLong(why)
    } else {
        AutoMeasure::Unsure(why)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn softmax() -> (Arc<Pipeline>, Vec<LaunchShape>) {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/softmax.json");
        let p = crate::ir::load_pipeline(&file).unwrap();
        let shapes = crate::inputs::pipeline::pipeline_shapes(&p, file.parent().unwrap()).unwrap();
        (Arc::new(p), shapes)
    }

    #[test]
    fn measure_without_a_device_is_refused_with_a_fix() {
        let (p, s) = softmax();
        let spec = TargetSpec {
            decide: Decide::Measure,
            cache: CacheUse::Off,
            ..TargetSpec::default()
        };
        let t = target(p, s, &spec).unwrap();
        assert_eq!(t.plan_options.decide, Decide::Model);
        for fit in [
            Fit::Plan,
            Fit::Offline {
                sm: None,
                registers: Vec::new(),
            },
        ] {
            let e = compile(&t, fit).unwrap_err();
            assert!(e.message.contains("--decide measure"), "{e}");
            assert!(e.to_string().contains("Fix:"), "{e}");
        }
    }

    #[test]
    fn bad_registers_and_threshold_are_refused() {
        let (p, s) = softmax();
        let steps = p.steps.len();
        for spec in [
            TargetSpec {
                registers: vec![32; steps + 1],
                ..TargetSpec::default()
            },
            TargetSpec {
                registers: vec![0],
                ..TargetSpec::default()
            },
            TargetSpec {
                min_occupancy_pct: 101.0,
                ..TargetSpec::default()
            },
        ] {
            let e = target(p.clone(), s.clone(), &spec).unwrap_err();
            assert!(e.to_string().contains("Fix:"), "{e}");
        }
    }

    #[test]
    fn the_default_measures_what_the_model_is_unsure_of_within_its_budget() {
        let (p, s) = softmax();
        let spec = TargetSpec {
            cache: CacheUse::Off,
            ..TargetSpec::default()
        };
        let t = target(p, s, &spec).unwrap();
        let mut plan = compile(&t, Fit::Plan).unwrap().compiled.plan().clone();
        let i = plan
            .decisions
            .iter()
            .position(|d| d.verdict() != "separate")
            .expect("the model fuses some of softmax");
        let mut with = |separate_us: f64, chosen_us: f64| {
            plan.decisions[i].separate_us = separate_us;
            plan.decisions[i].chosen_us = chosen_us;
            plan.decisions[i].fused_us = chosen_us;
            auto_measure(&plan)
        };
        // A predicted gain of 2x is sure; 1.1x is not; 1.1x over 100 ms runs is too long.
        assert_eq!(with(20.0, 10.0), None);
        match with(11.0, 10.0) {
            Some(AutoMeasure::Unsure(why)) => assert!(why.contains("1.10x"), "{why}"),
            other => panic!("{other:?}"),
        }
        match with(110_000.0, 100_000.0) {
            Some(AutoMeasure::TooLong(why)) => {
                let note = AutoMeasure::TooLong(why).note().unwrap();
                assert!(note.contains("--decide measure"), "{note}");
            }
            other => panic!("{other:?}"),
        }
    }
}
