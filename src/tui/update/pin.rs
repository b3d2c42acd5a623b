//! Pinning a lowering and diffing against it (`m`, `D`, `P`, `b`), and the unrolling toggle
//! (`u`) that, with the workgroup size and the target sm, makes another lowering to compare.

use std::sync::Arc;

use super::{nav, program};
use crate::tui::action::{Cmd, Command};
use crate::tui::app::{App, Focus};
use crate::tui::background::{Job, ResKey};
use crate::tui::pin::{label, Pin, PinView};
use crate::tui::sass_view::{SassMode, SassState};

/// The current lowering's key and PTX, when emitted.
fn current(app: &App) -> Option<(ResKey, Arc<crate::tui::analysis::PtxView>)> {
    let doc = app.programs.doc.as_ref()?;
    let em = app.code.emission.as_ref()?;
    let ptx = em.ptx.as_ref().ok()?.clone();
    Some(((doc.id, em.opts.clone()), ptx))
}

/// The assembled SASS of `key`, if any.
fn sass_of(app: &App, key: &ResKey) -> Option<Arc<crate::tui::sass_view::SassView>> {
    match app.code.sass_listings.get(key)? {
        SassState::Ready(v) => Some(v.clone()),
        _ => None,
    }
}

/// Pins the current lowering (`m`); on the pinned lowering itself, unpins.
pub(super) fn pin(app: &mut App, out: &mut Vec<Cmd>) {
    let Some((key, ptx)) = current(app) else {
        return app
            .screen
            .error("nothing to pin: the kernel is not emitted (an error, or still emitting)");
    };
    if app.code.pin.as_ref().is_some_and(|p| p.key == key) {
        app.code.pin = None;
        app.code.pin_view = None;
        app.code.pin_diff = false;
        return app.screen.info("unpinned");
    }
    let name = app
        .programs
        .doc
        .as_ref()
        .map_or(String::new(), |d| d.program.name.clone());
    let pin = Pin {
        sass: sass_of(app, &key),
        key,
        name,
        workgroup: app.code.workgroup,
        ptx,
    };
    app.screen.info(format!(
        "pinned {}: change the workgroup ([ ] w), target (T) or unrolling (u); D shows the diff, P swaps back",
        pin.label()
    ));
    app.code.pin = Some(pin);
    refresh(app, out);
}

/// Pins the tune sweep's best candidate (`b`): switches to its workgroup size and pins the
/// lowering made for it.
pub(super) fn pin_best(app: &mut App, out: &mut Vec<Cmd>) {
    let best = app
        .jobs
        .session
        .tune
        .as_ref()
        .and_then(|t| t.as_ref().ok())
        .and_then(|rows| rows.iter().find(|r| r.note == "best"))
        .map(|r| r.workgroup);
    let Some(wg) = best else {
        return app
            .screen
            .error("no tune result with a best candidate: press t first (on the live GPU, or an offline estimate without one)");
    };
    if app.workgroup() == wg {
        app.code.pin = None;
        return pin(app, out);
    }
    app.code.pin_next = true;
    program::set_workgroup(app, wg, out);
}

/// Shows or hides the diff against the pin in the PTX and SASS panes (`D`).
pub(super) fn toggle_diff(app: &mut App, out: &mut Vec<Cmd>) {
    if app.code.pin.is_none() {
        let (pin, diff) = (
            app.keymap.key_text(Command::Pin),
            app.keymap.key_text(Command::PinDiff),
        );
        return app.screen.error(format!(
            "nothing pinned. Fix: press {pin} to pin this lowering, change it, then {diff}"
        ));
    }
    app.code.pin_diff = !app.code.pin_diff;
    // Row numbers mean other lines now: start at the selected statement again.
    app.panes.ptx.cursor = 0;
    app.panes.sass.cursor = 0;
    app.panes.ptx.scroll = 0;
    app.panes.sass.scroll = 0;
    refresh(app, out);
    let what = match (&app.code.pin_view, app.code.pin_diff) {
        (Some(v), true) => format!(
            "diff against {}: PTX +{} -{} lines",
            v.label, v.ptx.added, v.ptx.removed
        ),
        _ => "diff off".to_string(),
    };
    app.screen.info(what);
    // Whatever pane has focus, the PTX and SASS cursors go to the IR cursor's statement.
    nav::sync_from_ir(app);
}

/// Goes back to the pinned options and pins the current lowering (`P`), so pressing it again
/// returns.
pub(super) fn swap(app: &mut App, out: &mut Vec<Cmd>) {
    let Some(old) = app.code.pin.take() else {
        let pin = app.keymap.key_text(Command::Pin);
        return app.screen.error(format!(
            "nothing pinned. Fix: press {pin} to pin a lowering first"
        ));
    };
    if app.programs.doc.as_ref().map(|d| d.id) != Some(old.key.0) {
        let name = old.name.clone();
        app.code.pin = Some(old);
        let pin = app.keymap.key_text(Command::Pin);
        return app.screen.error(format!(
            "the pin is a lowering of {name}, not of the open Program. Fix: open it to swap back, or press {pin} to pin this one"
        ));
    }
    if let Some((key, ptx)) = current(app) {
        let name = old.name.clone();
        app.code.pin = Some(Pin {
            sass: sass_of(app, &key),
            key,
            name,
            workgroup: app.code.workgroup,
            ptx,
        });
    }
    app.code.workgroup = old.workgroup;
    app.code.sm = old.key.1.sm;
    app.code.sm_pinned = true;
    app.code.unroll = old.key.1.unroll;
    app.screen.info(format!("back to {}", label(&old.key)));
    program::reanalyze(app, out);
}

/// Unrolling of small constant-trip loops on or off (`u`).
pub(super) fn toggle_unroll(app: &mut App, out: &mut Vec<Cmd>) {
    app.code.unroll = !app.code.unroll;
    app.screen.info(if app.code.unroll {
        "unrolling small constant-trip loops"
    } else {
        "loops kept rolled (no unrolling)"
    });
    program::reanalyze(app, out);
}

/// Remakes the diff against the pin after either side changed (an emission, a SASS listing,
/// pinning); pins a pending best candidate; asks for the pin's SASS while the SASS pane shows
/// the diff and it is missing.
pub(super) fn refresh(app: &mut App, out: &mut Vec<Cmd>) {
    if std::mem::take(&mut app.code.pin_next) {
        app.code.pin = None;
        pin(app, out);
    }
    let Some(pin) = app.code.pin.as_mut() else {
        app.code.pin_view = None;
        return;
    };
    if pin.sass.is_none() {
        if let Some(SassState::Ready(v)) = app.code.sass_listings.get(&pin.key) {
            pin.sass = Some(v.clone());
        }
    }
    let want_sass = app.code.pin_diff && app.code.sass_mode != SassMode::Off;
    if want_sass && pin.sass.is_none() && !app.code.sass_listings.contains_key(&pin.key) {
        let job = Job::Sass {
            key: pin.key.clone(),
            ptx: pin.ptx.clone(),
        };
        app.code
            .sass_listings
            .insert(pin.key.clone(), SassState::Pending);
        out.push(app.jobs.queue(job));
    }
    let Some(pin) = app.code.pin.as_ref() else {
        return;
    };
    let now = app.ptx_view().cloned();
    let sass = app.sass_view().cloned();
    app.code.pin_view = now.map(|ptx| Arc::new(PinView::new(pin, &ptx, sass.as_deref())));
    app.code.pin_gen += 1;
    // The diff has its own rows: keep the cursors inside them.
    for f in [Focus::Ptx, Focus::Sass] {
        let len = app.pane_len(f);
        let p = app.pane_mut(f);
        p.cursor = p.cursor.min(len.saturating_sub(1));
        p.scroll = p.scroll.min(len.saturating_sub(1));
    }
}
