//! Worker replies: emission and resource results, the device probe, dispatches and tune
//! sweeps land in the state here.

use crate::tui::action::Cmd;
use crate::tui::analysis::Estimated;
use crate::tui::app::{App, Focus};
use crate::tui::component::tabs::{self, TabComponent};
use crate::tui::gpu::TuneRow;
use crate::tui::pipeline::PipelineRun;
use crate::tui::timeline::{TimelineData, TimelineState};
use crate::util::Problem;
use std::sync::Arc;

use crate::tui::background::Reply;
use crate::tui::sass_view::{SassState, SassView};
use crate::tui::vyre_view::VyreState;

use super::timeline::set as set_timeline;
use super::{nav, program};

/// Applies worker reply `r`; a final reply (not progress, which
/// [`crate::tui::app::Jobs::update`] took) counts one job as done.
pub(super) fn reply(app: &mut App, r: Reply, out: &mut Vec<Cmd>) {
    match r {
        Reply::Started(..) | Reply::Progress(..) => return,
        // Part of a dispatch or pipeline job, whose own reply follows.
        Reply::Timeline(r) => {
            timeline(app, r);
            return;
        }
        Reply::Validated(i, path, status, pipeline) => {
            app.programs.checked(i, &path, status, pipeline);
            return;
        }
        Reply::ValidationDone => {}
        Reply::Loaded(file) => program::loaded(app, *file, out),
        Reply::Expanded(found) => program::expanded(app, found, out),
        Reply::Estimated(id, est) => {
            if id == app.code.estimate_gen {
                estimated(app, *est);
            }
        }
        Reply::Analyzed(generation, e) => {
            if generation == app.code.generation {
                app.code.emission = Some(*e);
                program::after_emission(app, out);
            }
        }
        Reply::Planned(generation, p) => program::planned(app, generation, *p, out),
        Reply::Resources(key, r) => {
            app.code.resources.insert(key, r);
            program::refresh_estimate(app, out);
        }
        Reply::Sass(key, r) => {
            let state = match r {
                Ok(l) => SassState::Ready(Arc::new(SassView::new(*l))),
                Err(e) => SassState::Failed(e.to_string()),
            };
            app.code.sass_listings.insert(key, state);
            assembled(app, out);
        }
        Reply::Vyre(key, r) => {
            let state = match r {
                Ok(t) => VyreState::Ready(Arc::new(*t)),
                Err(e) => VyreState::Failed(e.to_string()),
            };
            app.code.vyre_views.insert(key, state);
            nav::keep_visible(app, Focus::Ptx);
        }
        Reply::Probed(Ok(caps)) => {
            app.screen.info(format!("live device: {}", caps.name));
            if !app.code.sm_pinned {
                app.code.sm = (caps.cc_major * 10 + caps.cc_minor).min(90);
            }
            app.jobs.devices.live = Some(caps);
            program::reanalyze(app, out);
        }
        Reply::Probed(Err(e)) => no_device(app, &e),
        Reply::Dispatched(r, stats) => {
            // Counters first: the Run tab's rows are clamped with them in place.
            app.jobs.session.take_stats(*stats);
            dispatched(app, r);
        }
        Reply::Referenced(r) => dispatched(app, r),
        Reply::PipelineRan(r) => pipeline_ran(app, r),
        Reply::Replayed(index, r) => super::capture::replayed(app, index, r),
        Reply::Profiled(key, r) => super::profile::profiled(app, *key, r),
        Reply::TunedOffline(r) => tuned_offline(app, r),
        Reply::Tuned(r, stats) => {
            if let Err(e) = &r {
                app.screen.error(
                    e.message
                        .lines()
                        .next()
                        .unwrap_or("tune failed")
                        .to_string(),
                );
            } else {
                app.screen.info("tune sweep done");
            }
            app.jobs.session.tune = Some(r);
            app.jobs.session.take_stats(*stats);
            // A re-run keeps the cursor and the tables' offsets (clamped to the new rows).
            nav::keep_visible(app, Focus::Detail);
        }
    }
    // A final reply: one job fewer in flight.
    app.jobs.finished();
}

/// A recorded timeline (part of a dispatch or pipeline job), or why there is none.
fn timeline(app: &mut App, r: Result<Vec<Arc<TimelineData>>, Problem>) {
    match r {
        Ok(forms) => set_timeline(app, forms),
        Err(e) => {
            set_timeline(app, Vec::new());
            if let Some(t) = app.detail.states.get_mut::<TimelineState>() {
                t.error = Some(e.to_string());
            }
        }
    }
}

/// The current emission's estimate arrived. A workgroup size that changes the Program's
/// results is said at once, in the status bar, as well as in the Diagnostics tab.
fn estimated(app: &mut App, est: Estimated) {
    let changed = est
        .diagnostics
        .iter()
        .find(|d| d.code == "L014" && d.severity == crate::finding::Severity::Error)
        // The finding without its long tail, so it fits the status bar.
        .map(|d| {
            let m = d.message.split(" (at ").next().unwrap_or(&d.message);
            m.replacen("workgroup size ", "wg ", 1)
        });
    if let Some(em) = app.code.emission.as_mut() {
        em.set_estimate(est);
    }
    if let Some(m) = changed {
        app.screen.error(m);
    }
    nav::keep_visible(app, Focus::Detail);
}

/// A SASS listing was assembled (or failed): either side of a diff against the pin may be
/// it, and the panes' cursors follow the focused one.
fn assembled(app: &mut App, out: &mut Vec<Cmd>) {
    super::pin::refresh(app, out);
    nav::keep_visible(app, Focus::Sass);
    match app.screen.focus {
        Focus::Sass => nav::sync_from_sass(app),
        Focus::Ptx => nav::sync_from_ptx(app),
        _ => nav::sync_from_ir(app),
    }
}

/// The probe found no device: the live tabs say why they are empty, with the probe's own
/// one-line reason.
fn no_device(app: &mut App, e: &Problem) {
    let first = e.message.lines().next().unwrap_or("").to_string();
    app.jobs.session.cache = Err(Problem::new(
        format!("{first} - press r on a machine with a GPU"),
        "",
    ));
    app.jobs.session.telemetry = app.jobs.session.cache.clone();
    app.jobs.devices.live_error = e.to_string();
}

/// A pipeline run finished: the status bar gives its times (or why it failed) and the Run
/// tab lists it.
fn pipeline_ran(app: &mut App, r: Result<PipelineRun, Problem>) {
    match r {
        Ok(run) => {
            app.screen.info(match (run.separate_ms, run.fused_ms) {
                (Some(s), Some(f)) => format!(
                    "pipeline on {}: separate {s:.4} ms, {} {f:.4} ms{}",
                    run.backend,
                    app.programs.sync.fused_label(),
                    if run.verified { "" } else { " - MISMATCH" }
                ),
                _ => format!(
                    "no GPU: ran the reference interpreter ({:.1} ms wall)",
                    run.reference_ms.unwrap_or(0.0)
                ),
            });
            app.jobs.session.pipeline_runs.push(run);
            app.jobs.session.run_error = None;
        }
        Err(e) => {
            app.screen.error(
                e.message
                    .lines()
                    .next()
                    .unwrap_or("pipeline run failed")
                    .to_string(),
            );
            app.jobs.session.run_error = Some(e.to_string());
        }
    }
    nav::keep_visible(app, Focus::Detail);
}

/// The offline tune sweep finished: the status bar names the suggested workgroup.
fn tuned_offline(app: &mut App, r: Result<Vec<TuneRow>, Problem>) {
    match &r {
        Err(e) => app.screen.error(format!("offline tune: {e}")),
        Ok(rows) => {
            let best = rows.iter().find(|r| r.note == "best").map(|r| r.workgroup);
            app.screen.info(match best {
                Some(w) => format!(
                    "offline tune (estimate, nothing timed - no GPU): suggested workgroup {},{},{}; P pins it",
                    w[0], w[1], w[2]
                ),
                None => "offline tune (estimate, no GPU): no candidate launches and keeps the results".into(),
            });
        }
    }
    app.jobs.session.tune = Some(r);
    nav::keep_visible(app, Focus::Detail);
}

/// A dispatch (or offline reference run) finished: the Run tab lists it and selects it.
fn dispatched(app: &mut App, r: Result<crate::tui::gpu::RunRecord, Problem>) {
    match r {
        Ok(run) => {
            let ok = run.parity.as_ref().is_none_or(|p| p.ok);
            app.screen
                .info(if run.backend == crate::tui::gpu::GPU_BACKEND {
                    format!(
                        "dispatched: {:.3} ms, parity {}",
                        run.device_ms,
                        if ok { "ok" } else { "FAILED" }
                    )
                } else {
                    format!(
                        "no GPU: ran the reference interpreter ({:.1} ms wall)",
                        run.device_ms
                    )
                });
            app.jobs.session.runs.push(run);
            app.jobs.session.run_error = None;
            if app.detail.tab == tabs::Run.id() {
                // Select the new dispatch (the history's rows come first).
                app.detail.pane.cursor = app.jobs.session.runs.len() - 1;
            }
        }
        Err(e) => {
            app.screen.error(
                e.message
                    .lines()
                    .next()
                    .unwrap_or("dispatch failed")
                    .to_string(),
            );
            app.jobs.session.run_error = Some(e.to_string());
        }
    }
    nav::keep_visible(app, Focus::Detail);
}
