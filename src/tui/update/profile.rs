//! `p`: profile the open Program per IR statement, and what a finished profile (or a reload
//! of the profiled file) does to the state. The work runs on the worker
//! ([`crate::tui::background::Job::Profile`]); the numbers are `vyrescope profile`'s.

use std::sync::Arc;

use crate::profile::Profile;
use crate::tui::action::Cmd;
use crate::tui::app::{App, Focus};
use crate::tui::background::Job;
use crate::tui::component::tabs::{self, TabComponent};
use crate::tui::profile::{summary, ProfileKey, ProfileView};
use crate::util::Problem;

use super::nav;

/// `p`: queues the profile of the open file (every kernel: a pipeline's steps in order, so
/// each step runs on what the one before it wrote) on the GPU worker with a live GPU, else
/// the interpreter's estimate. Refused, with the reason, when there is nothing to profile.
pub(super) fn request(app: &mut App, out: &mut Vec<Cmd>) {
    let Some(doc) = app.programs.doc.as_ref() else {
        return app
            .screen
            .error("no program open to profile. Fix: open one from the list (Enter) or with o, then press p");
    };
    if doc.has_errors() {
        return app
            .screen
            .error("the Program has validation errors, so it cannot run. Fix: correct them (the Diagnostics tab lists them), then press p");
    }
    let key = ProfileKey::of(doc);
    let gpu = app.jobs.devices.live.is_some();
    app.detail.show(tabs::Profile.id());
    out.push(app.jobs.queue(Job::Profile {
        key: Box::new(key),
        gpu,
    }));
}

/// A profile came back: kept for the file it is of; stale at once when the open file
/// changed meanwhile.
pub(super) fn profiled(app: &mut App, key: ProfileKey, r: Result<Vec<Profile>, Problem>) {
    let step = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .map(|p| p.step);
    // The profile is of the file as `vyrescope profile` runs it: its own workgroup size.
    let other_wg = step.is_none()
        && app
            .code
            .workgroup
            .is_some_and(|w| key.programs.first().is_some_and(|p| p.workgroup_size != w));
    match &r {
        Ok(p) if other_wg => app.screen.info(format!(
            "{} (at the file's own workgroup size, not the tuned one)",
            summary(p, step)
        )),
        Ok(p) => app.screen.info(summary(p, step)),
        // One line: the message and its fix (the Profile tab shows them whole).
        Err(e) if e.fix.is_empty() => app.screen.error(format!("profile failed: {}", e.message)),
        Err(e) => app
            .screen
            .error(format!("profile failed: {} Fix: {}", e.message, e.fix)),
    }
    let mut view = ProfileView {
        key,
        result: r.map(Arc::new),
        stale: false,
    };
    view.check(app.programs.doc.as_ref());
    if view.stale && view.result.is_ok() {
        app.screen
            .info("the Program changed while it was profiled: press p to profile it again");
    }
    app.jobs.session.profile = Some(view);
    app.detail.show(tabs::Profile.id());
    app.detail.pane.cursor = 0;
}

/// A file was opened or reloaded: a profile of other contents goes stale (its heat is
/// hidden, the Profile tab says so).
pub(super) fn after_load(app: &mut App) {
    let doc = app.programs.doc.as_ref();
    if let Some(v) = app.jobs.session.profile.as_mut() {
        v.check(doc);
    }
}

/// The Profile tab's cursor moved to row `row`: the IR cursor goes to that statement (and
/// the PTX and SASS panes follow it, as when the IR cursor moves).
pub(crate) fn select_row(app: &mut App) {
    let Some((p, prefix)) = crate::tui::profile::current(app) else {
        return;
    };
    let Some(s) = p.statements.get(app.detail.pane.cursor) else {
        return;
    };
    let node = format!("{prefix}{}", s.node);
    let Some(line) = app.programs.doc.as_ref().and_then(|d| d.ir_line_of(&node)) else {
        return app
            .screen
            .error(format!("node {node} is not in the IR text"));
    };
    app.panes.ir.cursor = line;
    nav::keep_visible(app, Focus::Ir);
    nav::sync_from_ir(app);
}
