//! What decided a plan's fusion, said one way everywhere: `plan`, `emit`, `sass`,
//! `occupancy`, `run` (every backend), the inspector's Plan tab and the timeline all print
//! [`DecisionReport::lines`] of the plan they show, so a decision recorded once (a
//! `run --decide measure` kept in the plan cache) reads the same in each of them.
//!
//! The report is derived from the plan alone: each [`Decision`] says what decided its run of
//! steps and with which figures, and the plan's cache status says whether a measured choice
//! was timed now or read back from an earlier run.

use serde::{Deserialize, Serialize};

use super::cost::{Decision, DecisionSource};
use super::plan::{CacheStatus, Plan, UNSURE_GAIN};

/// Where a plan's fusion decisions came from, as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionOrigin {
    /// No run of two or more steps may legally fuse: there was nothing to decide.
    Nothing,
    /// The cost model's prediction (no measured choice is recorded for this pipeline,
    /// device and sync form).
    Model,
    /// Timed on the GPU by this run (`--decide measure`).
    Measured,
    /// Timed on the GPU by an earlier `--decide measure` run and read from the plan cache.
    MeasuredCached,
    /// Fusion forced whatever it costs (`--decide fuse`).
    Forced,
}

impl DecisionOrigin {
    /// The origin of `plan`'s decisions: measured when any run was timed (cached when the
    /// plan came from the cache), else forced when any was forced, else the model's.
    pub fn of(plan: &Plan) -> DecisionOrigin {
        let any = |s: DecisionSource| plan.decisions.iter().any(|d| d.source == s);
        if plan.decisions.is_empty() && plan.recompute_measured.is_empty() {
            DecisionOrigin::Nothing
        } else if any(DecisionSource::Measured) || !plan.recompute_measured.is_empty() {
            match plan.cache {
                CacheStatus::Hit => DecisionOrigin::MeasuredCached,
                CacheStatus::Miss => DecisionOrigin::Measured,
            }
        } else if any(DecisionSource::Forced) {
            DecisionOrigin::Forced
        } else {
            DecisionOrigin::Model
        }
    }

    /// In words, as every front end prints it.
    pub fn text(self) -> &'static str {
        match self {
            DecisionOrigin::Nothing => "nothing to decide (no run of steps may fuse)",
            DecisionOrigin::Model => "model prediction (no measured choice recorded)",
            DecisionOrigin::Measured => "measured now (recorded in the plan cache)",
            DecisionOrigin::MeasuredCached => "measured (cached, by an earlier --decide measure)",
            DecisionOrigin::Forced => "forced (--decide fuse)",
        }
    }
}

/// A plan's fusion decision as a result: where it came from and, per run of fusable steps,
/// what was chosen with the figures that chose it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionReport {
    /// Where the decisions came from.
    pub origin: DecisionOrigin,
    /// [`DecisionOrigin::text`].
    pub summary: String,
    /// One line per run of fusable steps ([`Decision::describe`]).
    pub runs: Vec<String>,
    /// Why the default (`--decide auto`) measured, or why it did not where the model was
    /// unsure; printed after the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The runs of steps whose model decision is unsure: a fused or split choice the cost model
/// made (not measured, not forced) with a predicted gain over separate launches under
/// [`UNSURE_GAIN`]. A choice of separate launches is never unsure: it cannot lose to them.
pub fn unsure(plan: &Plan) -> Vec<&Decision> {
    plan.decisions
        .iter()
        .filter(|d| {
            d.source == DecisionSource::Model
                && d.verdict() != "separate"
                && d.separate_us < UNSURE_GAIN * d.chosen_us
        })
        .collect()
}

impl DecisionReport {
    /// The report of `plan`.
    pub fn of(plan: &Plan) -> DecisionReport {
        let origin = DecisionOrigin::of(plan);
        DecisionReport {
            origin,
            summary: origin.text().to_string(),
            runs: plan
                .decisions
                .iter()
                .map(Decision::describe)
                .chain(plan.recompute_measured.iter().map(|m| {
                    format!(
                        "recomputed pass of steps {}: {} (measured: pass {:.4} ms, separate {:.4} ms)",
                        m.steps
                            .iter()
                            .map(|s| s.to_string())
                            .collect::<Vec<_>>()
                            .join("+"),
                        if m.recompute_lost() {
                            "not recomputed"
                        } else {
                            "recomputed"
                        },
                        m.forms.fused_ms,
                        m.forms.separate_ms
                    )
                }))
                .collect(),
            note: None,
        }
    }

    /// The report as text lines: `fusion decided by: ...`, then each run indented. The one
    /// wording of every front end (a caller only adds its own prefix, e.g. `// ` in PTX).
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("fusion decided by: {}", self.summary)];
        out.extend(self.note.iter().map(|n| format!("  ({n})")));
        out.extend(self.runs.iter().map(|r| format!("  {r}")));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::megakernel::cost::MeasuredForms;
    use crate::megakernel::plan::{plan_measured, Measurement, PlanOptions};
    use crate::megakernel::test_support::{copy, pipeline, shape};
    use crate::occupancy::profiles;

    const GID: &str = r#"{"gid": "x"}"#;

    #[test]
    fn origin_follows_the_decisions_and_the_cache_status() {
        let p = pipeline(vec![
            (
                copy("a", [256, 1, 1], GID, GID),
                &[("src", "x"), ("dst", "y")],
            ),
            (
                copy("b", [256, 1, 1], GID, GID),
                &[("src", "y"), ("dst", "z")],
            ),
        ]);
        let s = vec![shape([256, 1, 1], [64, 1, 1]); 2];
        let opts = PlanOptions::new(profiles::load("h200").unwrap());
        let model = plan_measured(&p, &s, &opts, &[]).unwrap();
        assert_eq!(DecisionOrigin::of(&model), DecisionOrigin::Model);
        // Separate launches measured faster than the fused kernel: the plan follows the
        // measurement, and a plan read back from the cache says so.
        let m = Measurement {
            steps: vec![0, 1],
            forms: MeasuredForms {
                fused_ms: 0.731,
                separate_ms: 0.402,
                model_ms: None,
            },
            recomputed: false,
        };
        let mut measured = plan_measured(&p, &s, &opts, &[m]).unwrap();
        assert_eq!(DecisionOrigin::of(&measured), DecisionOrigin::Measured);
        measured.cache = CacheStatus::Hit;
        let r = DecisionReport::of(&measured);
        assert_eq!(r.origin, DecisionOrigin::MeasuredCached);
        let lines = r.lines();
        assert!(
            lines[0].starts_with("fusion decided by: measured (cached"),
            "{lines:?}"
        );
        assert!(
            lines[1].contains("separate [0] [1] (measured: fused 0.7310 ms, separate 0.4020 ms"),
            "{lines:?}"
        );
    }
}
