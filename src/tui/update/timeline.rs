//! The Timeline tab's keys. While the tab is shown and the detail panel has the focus, the
//! keys users expect of a timeline act on it: `+`/`-` zoom (around the cursor slice), `0`
//! fits, Left/Right (`h`/`l`) pan a quarter of the window and `H`/`L` a whole one, Up/Down (`j`/`k`) and the page keys move between SM lanes, `{`/`}` to the previous
//! and next slice of the lane, Home/End to its first and last, `f` to the next recorded
//! form. A cursor that lands on another step of an open pipeline selects that step in the
//! IR and PTX panes; Enter also moves the focus there.

use std::sync::Arc;

use crate::tui::action::{Cmd, Command};
use crate::tui::app::{App, Focus};
use crate::tui::component::tabs::{self, TabComponent};
use crate::tui::timeline::{TimelineData, TimelineState};
use crate::tui::views::timeline::{lane_page, state, GUTTER};

use super::{nav, program};

/// Applies `c` if it is a Timeline key now; false: not taken (the ordinary meaning applies).
pub(crate) fn command(app: &mut App, c: Command, out: &mut Vec<Cmd>) -> bool {
    use Command::*;
    let on_tab = app.screen.focus == Focus::Detail && app.detail.tab == tabs::Timeline.id();
    let ours = matches!(
        c,
        WgPlus
            | WgMinus
            | Left
            | Right
            | ScrollLeft
            | ScrollRight
            | Up
            | Down
            | PageUp
            | PageDown
            | PrevBlock
            | NextBlock
            | Home
            | End
            | Enter
    );
    if !(matches!(c, TimelineFit | TimelineForm) || (on_tab && ours)) {
        return false;
    }
    if state(app).and_then(TimelineState::current).is_none() {
        app.screen.info(
            "no timeline yet: press r on a GPU machine, or open a record file with --timeline",
        );
        return true;
    }
    let page = lane_page(app);
    let Some(st) = app.detail.states.get_mut::<TimelineState>() else {
        return false;
    };
    let before = st.cursor().map(|s| s.step);
    match c {
        WgPlus => st.zoom(true),
        WgMinus => st.zoom(false),
        TimelineFit => st.fit(),
        Left => st.pan(-2),
        Right => st.pan(2),
        ScrollLeft => st.pan(-8),
        ScrollRight => st.pan(8),
        Up => st.move_lane(-1, page),
        Down => st.move_lane(1, page),
        PageUp => st.move_lane(-(page as isize), page),
        PageDown => st.move_lane(page as isize, page),
        PrevBlock => st.move_slice(-1),
        NextBlock => st.move_slice(1),
        Home => st.move_slice(isize::MIN / 2),
        End => st.move_slice(isize::MAX / 2),
        TimelineForm => {
            st.next_form();
            let what = st.current().map_or(String::new(), |d| d.label.clone());
            app.screen.info(format!("timeline: {what} form"));
        }
        Enter => {
            follow(app, out);
            app.screen.focus = Focus::Ir;
            return true;
        }
        _ => return false,
    }
    if state(app).and_then(TimelineState::cursor).map(|s| s.step) != before {
        follow(app, out);
    }
    true
}

/// Shows recorded `forms` on the Timeline tab (from the GPU after `r`, or a record file).
pub(crate) fn set(app: &mut App, forms: Vec<Arc<TimelineData>>) {
    if let Some(t) = app.detail.states.get_mut::<TimelineState>() {
        t.set(forms);
    }
}

/// A click at (`x`, `y`) on a lane of the Timeline tab: the cursor goes to that lane's
/// slice nearest the clicked time. False when the click is elsewhere.
pub(super) fn click(app: &mut App, x: u16, y: u16, out: &mut Vec<Cmd>) -> bool {
    if app.detail.tab != tabs::Timeline.id() {
        return false;
    }
    let a = crate::tui::layout::areas(app.screen.size.0, app.screen.size.1, app);
    let content = crate::tui::layout::detail_content(a.detail);
    let page = lane_page(app);
    let (top, left) = (content.y + 2, content.x + GUTTER);
    let width = content.width.saturating_sub(GUTTER);
    if y < top || x < left || width == 0 {
        return false;
    }
    let Some(st) = app.detail.states.get_mut::<TimelineState>() else {
        return false;
    };
    let lane = st.lane_scroll + usize::from(y - top);
    let Some(d) = st.current().cloned() else {
        return false;
    };
    if usize::from(y - top) >= page || lane >= d.lanes.len() {
        return false;
    }
    let (start, len) = st.window();
    let t = d.t0 + start + (u128::from(x - left) * u128::from(len) / u128::from(width)) as u64;
    let before = st.cursor().map(|s| s.step);
    st.lane = lane;
    st.slice = d.lanes[lane]
        .slices
        .iter()
        .enumerate()
        .min_by_key(|(_, &i)| {
            let s = &d.decoded.slices[i];
            // Inside a slice is nearest; otherwise the distance to its nearer end.
            if s.start_ns <= t && t < s.end_ns {
                0
            } else {
                s.start_ns.abs_diff(t).min(s.end_ns.abs_diff(t))
            }
        })
        .map_or(0, |(k, _)| k);
    if state(app).and_then(TimelineState::cursor).map(|s| s.step) != before {
        follow(app, out);
    }
    true
}

/// Moves the IR and PTX panes to the cursor slice's step: an open pipeline selects it (its
/// Program in the IR pane, the fused kernel holding it in the PTX pane); the IR cursor goes
/// to the step's first statement and the PTX pane follows.
fn follow(app: &mut App, out: &mut Vec<Cmd>) {
    let Some(step) = state(app)
        .and_then(TimelineState::cursor)
        .and_then(|s| s.step)
    else {
        return first_statement(app);
    };
    let current = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .map(|p| p.step);
    match current {
        Some(cur) if cur != step as usize => {
            program::step(app, step as isize - cur as isize, out);
        }
        _ => first_statement(app),
    }
}

fn first_statement(app: &mut App) {
    if let Some(line) = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.ir.iter().position(|l| l.node.is_some()))
    {
        nav::set_cursor(app, Focus::Ir, line as isize);
    }
}
