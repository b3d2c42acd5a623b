//! The open capture's commands: `r` on a dispatch replays it (the worker compares its
//! outputs with the captured ones), `S` orders the dispatch list by call or by time, and
//! the replay's verdict lands here.

use crate::tui::action::Cmd;
use crate::tui::app::App;
use crate::tui::background::Job;
use crate::tui::capture::{ReplayState, Verdict};
use crate::tui::component::tabs::{self, TabComponent};
use crate::util::Problem;

use super::program;

/// The open entry's dispatch (record index), when a capture is open and it is one.
fn open_dispatch(app: &App) -> Option<u64> {
    let path = app.programs.current_path()?;
    app.capture.as_ref()?.row_of(path).map(|r| r.index)
}

/// `r`: replays the open dispatch when a capture is open (false: not a dispatch, the
/// caller dispatches the Program as usual). On the GPU worker when a device was probed,
/// else on the reference interpreter; a Program our import refuses runs on vyre's
/// reference interpreter either way.
pub(super) fn replay(app: &mut App, out: &mut Vec<Cmd>) -> bool {
    let Some(index) = open_dispatch(app) else {
        return false;
    };
    let Some(cap) = app.capture.as_mut() else {
        return false;
    };
    let job = Job::ReplayCapture {
        dir: cap.dir.clone(),
        index,
        gpu: app.jobs.devices.live.is_some(),
    };
    cap.replays.insert(index, ReplayState::Running);
    app.detail.show(tabs::Capture.id());
    out.push(app.jobs.queue(job));
    true
}

/// A replay finished: its verdict, and the same words in the status bar.
pub(super) fn replayed(app: &mut App, index: u64, r: Result<Verdict, Problem>) {
    let Some(cap) = app.capture.as_mut() else {
        return;
    };
    let state = match r {
        Ok(v) => {
            let on = v.replayed_on.as_deref().unwrap_or("-");
            let text = format!("replay of dispatch #{index} on {on}: {}", v.line);
            if v.passed {
                app.screen.info(text);
            } else {
                app.screen.error(text);
            }
            ReplayState::Done(v)
        }
        Err(e) => {
            app.screen.error(format!(
                "replay of dispatch #{index}: {}",
                e.message.lines().next().unwrap_or("failed")
            ));
            ReplayState::Failed(e.to_string())
        }
    };
    cap.replays.insert(index, state);
}

/// `S`: the next order of the dispatch list (call order, host time, device time). The
/// program list follows it; the open dispatch and the cursor stay on their dispatches.
pub(super) fn cycle_sort(app: &mut App, out: &mut Vec<Cmd>) {
    let Some(cap) = app.capture.as_mut() else {
        return app.screen.info(
            "S orders a capture's dispatches: open a capture folder (vyrescope CAPTURE_DIR)",
        );
    };
    cap.sort = cap.sort.next();
    let order: Vec<std::path::PathBuf> = cap.sorted().iter().map(|r| r.path.clone()).collect();
    let label = cap.sort.label();
    let p = &mut app.programs;
    let path_at = |i: Option<usize>, p: &crate::tui::app::Programs| {
        i.and_then(|i| p.entries.get(i)).map(|e| e.path.clone())
    };
    let (current, loading) = (path_at(p.current, p), path_at(p.loading, p));
    let cursor = path_at(Some(app.panes.list.cursor), p);
    // Unreadable records (not rows) keep their places after the dispatches.
    let rank = |e: &crate::tui::app::Entry| {
        order
            .iter()
            .position(|o| *o == e.path)
            .unwrap_or(usize::MAX)
    };
    p.entries.sort_by_key(rank);
    let find = |path: Option<std::path::PathBuf>, p: &crate::tui::app::Programs| {
        path.and_then(|path| p.entries.iter().position(|e| e.path == path))
    };
    p.current = find(current, p);
    if let Some(c) = find(cursor, p) {
        app.panes.list.cursor = c;
    }
    if loading.is_some() {
        // The load in flight names the entry by its old place: ask again (the old reply
        // is then stale and dropped).
        if let Some(i) = find(loading, &app.programs) {
            let saved = app.panes.list.cursor;
            app.panes.list.cursor = i;
            program::open_selected(app, out);
            app.panes.list.cursor = saved;
        }
    }
    // Background checks in flight name entries by place too: check what is still pending.
    program::check_files(app, 0, out);
    super::nav::keep_visible(app, crate::tui::app::Focus::List);
    app.screen.info(format!("dispatches in {label}"));
}
