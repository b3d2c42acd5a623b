//! The detail tabs as components, and [`TABS`], the registry: the one list of tabs. The tab
//! bar, the number keys, Left/Right and Tab cycling, paging, mouse hits, export, help and
//! the tabs' own view states ([`super::state::TabStates`]) all read it, and a tab's identity
//! ([`Tab`]) is the title its component gives. Adding a tab: one [`TabComponent`] here,
//! listed in [`TABS`] where it goes in the bar (its drawing may live in a view module under
//! `views/`, which the component names).

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::Frame;
use serde_json::{json, Value};

use super::state::TabState;
use super::{with_global, words, Hint};
use crate::tui::action::{Cmd, Command};
use crate::tui::app::{App, Tab};
use crate::tui::export::{counters_json, result};
use crate::tui::layout::{areas, detail_content};
use crate::tui::timeline::TimelineState;
use crate::tui::update::{program, timeline};
use crate::tui::views;
use crate::tui::views::run::RunState;
use crate::tui::views::tab_rows::{Offset, RowList};

/// One detail tab.
pub trait TabComponent: Sync {
    /// Title (tab bar, help, export file names); it is also the tab's identity.
    fn title(&self) -> &'static str;

    /// The tab's identity.
    fn id(&self) -> Tab {
        Tab(self.title())
    }

    /// Whether the tab is shown for a pipeline (`pipeline`) or for a Program.
    fn shown(&self, _pipeline: bool) -> bool {
        true
    }

    /// Shown only while a capture is open.
    fn capture_only(&self) -> bool {
        false
    }

    /// A fresh view state of the tab's own, when it keeps one beyond the panel's cursor
    /// (held in [`super::state::TabStates`], read back by its type).
    fn state(&self) -> Option<Box<dyn TabState>> {
        None
    }

    /// Applies `c` when it is one of the tab's own keys now (the detail panel has the
    /// focus and this tab is shown); false: not taken.
    fn command(&self, _app: &mut App, _c: Command, _out: &mut Vec<Cmd>) -> bool {
        false
    }

    /// What the status bar hints while the tab has the focus.
    fn hints(&self, app: &App) -> Vec<Hint> {
        use Command::*;
        with_global(app, &[Right, Expand, Export])
    }

    /// Draws the tab's content into `area` (inside the panel, below the tab bar).
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App);

    /// The tab's scrollable lists when its content is drawn in `content`, in cursor order
    /// (their first positions are numbered by [`lists`]).
    fn lists(&self, _app: &App, _content: Rect) -> Vec<RowList> {
        Vec::new()
    }

    /// What `x` exports on this tab.
    fn data(&self, app: &App) -> Value;

    /// Lines the help overlay shows about the tab's own keys (after the keymap's).
    fn help(&self, _app: &App) -> Vec<Line<'static>> {
        Vec::new()
    }
}

/// Every tab, in the order of the tab bar and the number keys.
pub const TABS: &[&dyn TabComponent] = &[
    &Occupancy,
    &Resources,
    &Diagnostics,
    &Run,
    &Cache,
    &Telemetry,
    &Plan,
    &Timeline,
    &Capture,
    &Profile,
];

/// The component of tab `t`.
pub fn tab(t: Tab) -> &'static dyn TabComponent {
    TABS.iter()
        .copied()
        .find(|c| c.id() == t)
        .unwrap_or(TABS[0])
}

/// The active tab's lists when its content is drawn in `content`, in cursor order, each
/// knowing the detail-cursor position of its first row.
pub fn lists(app: &App, content: Rect) -> Vec<RowList> {
    let mut v = tab(app.detail.tab).lists(app, content);
    let mut first = 0;
    for l in &mut v {
        l.first = first;
        first += l.positions();
    }
    v
}

/// The active tab's lists where the layout puts the detail panel now.
pub fn current(app: &App) -> Vec<RowList> {
    let panel = areas(app.screen.size.0, app.screen.size.1, app).detail;
    lists(app, detail_content(panel))
}

/// Detail-cursor positions of the active tab.
pub fn row_count(app: &App) -> usize {
    current(app).iter().map(RowList::positions).sum()
}

fn counter_list(
    data: &Result<Vec<(String, String)>, crate::util::Problem>,
    content: Rect,
) -> Vec<RowList> {
    match data {
        Ok(r) if !r.is_empty() => vec![RowList::rows_in(content, false, r.len(), Offset::Main)],
        _ => Vec::new(),
    }
}

/// Occupancy vs block size: text that scrolls.
pub struct Occupancy;

impl TabComponent for Occupancy {
    fn title(&self) -> &'static str {
        "Occupancy"
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::occupancy::draw(frame, area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        views::occupancy::text_list(app, content)
            .into_iter()
            .collect()
    }
    fn data(&self, app: &App) -> Value {
        app.code
            .emission
            .as_ref()
            .map_or(Value::Null, |e| result(&e.occupancy))
    }
}

/// Registers, spills, shared, const and stack of the kernel.
pub struct Resources;

impl TabComponent for Resources {
    fn title(&self) -> &'static str {
        "Resources"
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::resources::draw(frame.buffer_mut(), area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        app.code
            .emission
            .as_ref()
            .map(|e| RowList::rows_in(content, true, e.resources.len(), Offset::Main))
            .into_iter()
            .collect()
    }
    fn data(&self, app: &App) -> Value {
        app.code
            .emission
            .as_ref()
            .map_or(Value::Null, |e| json!(e.resources))
    }
}

/// Validator, launch, compile and performance diagnostics: Enter jumps to the node.
pub struct Diagnostics;

impl TabComponent for Diagnostics {
    fn title(&self) -> &'static str {
        "Diagnostics"
    }
    fn command(&self, app: &mut App, c: Command, _: &mut Vec<Cmd>) -> bool {
        if c != Command::Enter {
            return false;
        }
        program::jump_to_diagnostic(app);
        true
    }
    fn hints(&self, app: &App) -> Vec<Hint> {
        use Command::*;
        with_global(app, &[Enter, Right, Expand])
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::diagnostics::draw(frame.buffer_mut(), area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        views::diagnostics::list(app, content).into_iter().collect()
    }
    fn data(&self, app: &App) -> Value {
        json!(app.diagnostics())
    }
}

/// Dispatch history and tune sweeps (two lists).
pub struct Run;

impl TabComponent for Run {
    fn title(&self) -> &'static str {
        "Run"
    }
    fn state(&self) -> Option<Box<dyn TabState>> {
        Some(Box::<RunState>::default())
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::run::draw(frame, area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        views::run::row_lists(app, content)
    }
    fn data(&self, app: &App) -> Value {
        let s = &app.jobs.session;
        json!({
            "runs": s.runs,
            "pipeline_runs": s.pipeline_runs,
            "last_error": s.run_error,
            "tune": s.tune.as_ref().map(result),
        })
    }
}

/// PTX and module caches.
pub struct Cache;

impl TabComponent for Cache {
    fn title(&self) -> &'static str {
        "Cache"
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::cache::draw(frame.buffer_mut(), area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        counter_list(&app.jobs.session.cache_rows(), content)
    }
    fn data(&self, app: &App) -> Value {
        let c = app.jobs.session.cache.as_ref();
        result(&c.map(|c| counters_json(c)).map_err(Clone::clone))
    }
}

/// Runtime counters since start.
pub struct Telemetry;

impl TabComponent for Telemetry {
    fn title(&self) -> &'static str {
        "Telemetry"
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::telemetry::draw(frame.buffer_mut(), area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        counter_list(&app.jobs.session.telemetry_rows(), content)
    }
    fn data(&self, app: &App) -> Value {
        let c = app.jobs.session.telemetry.as_ref();
        result(&c.map(|c| counters_json(c)).map_err(Clone::clone))
    }
}

/// A pipeline's megakernel plan.
pub struct Plan;

impl TabComponent for Plan {
    fn title(&self) -> &'static str {
        "Plan"
    }
    fn shown(&self, pipeline: bool) -> bool {
        pipeline
    }
    fn state(&self) -> Option<Box<dyn TabState>> {
        Some(Box::<views::plan::PlanState>::default())
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::plan::draw(frame.buffer_mut(), area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        views::plan::list(app, content).into_iter().collect()
    }
    fn data(&self, app: &App) -> Value {
        app.programs
            .doc
            .as_ref()
            .and_then(|d| d.pipeline.as_ref())
            .map_or(Value::Null, |p| match &p.plan {
                Ok(plan) => json!(**plan),
                Err(e) => json!({ "error": e.to_string() }),
            })
    }
}

/// Whether the Plan tab shows vyre's plan, and its text.
impl TabState for views::plan::PlanState {}

/// Zoom, pan, the cursor lane and slice, and the recorded forms they show.
impl TabState for TimelineState {}

/// Per-SM lanes of a recorded timeline: zoom, pan, lanes and slices have keys of their own
/// (`update::timeline`); the lanes keep their own cursor, so nothing here is a row list.
pub struct Timeline;

impl TabComponent for Timeline {
    fn title(&self) -> &'static str {
        "Timeline"
    }
    fn state(&self) -> Option<Box<dyn TabState>> {
        Some(Box::<TimelineState>::default())
    }
    fn command(&self, app: &mut App, c: Command, out: &mut Vec<Cmd>) -> bool {
        timeline::command(app, c, out)
    }
    fn hints(&self, _: &App) -> Vec<Hint> {
        use Command::*;
        let mut v = vec![
            (WgPlus, "zoom"),
            (WgMinus, "out"),
            (TimelineFit, "fit"),
            (Right, "pan"),
            (Down, "SM"),
            (NextBlock, "slice"),
            (Enter, "IR"),
            (TimelineForm, "form"),
        ];
        v.extend(words(&[Expand]));
        v
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::timeline::draw(frame.buffer_mut(), area, app);
    }
    fn data(&self, app: &App) -> Value {
        // Every recorded form's summary and check (the lanes are the records themselves:
        // `run --timeline-out` writes those).
        let forms = app.detail.states.get::<TimelineState>().map(|s| &s.forms);
        json!(forms
            .into_iter()
            .flatten()
            .map(|d| json!({
                "form": d.label,
                "origin": d.origin,
                "timeline": d.summary,
                "check": {"passed": d.problems.is_empty(), "problems": d.problems},
            }))
            .collect::<Vec<_>>())
    }
    fn help(&self, app: &App) -> Vec<Line<'static>> {
        let k = |c: Command| app.keymap.key_text(c);
        vec![
            Line::raw(""),
            Line::styled(
                "Timeline tab (detail panel focused)".to_string(),
                app.theme.title,
            ),
            Line::raw(format!(
                "  {}/{} zoom in/out, {} fit; {}/{} pan, {}/{} pan a window",
                k(Command::WgPlus),
                k(Command::WgMinus),
                k(Command::TimelineFit),
                k(Command::Left),
                k(Command::Right),
                k(Command::ScrollLeft),
                k(Command::ScrollRight)
            )),
            Line::raw(format!(
                "  {}/{} SM lane, {}/{} slice, {}/{} first/last; Enter: step in IR",
                k(Command::Up),
                k(Command::Down),
                k(Command::PrevBlock),
                k(Command::NextBlock),
                k(Command::Home),
                k(Command::End)
            )),
        ]
    }
}

/// An open capture: its summary, the dispatch list and the open dispatch's replay; Enter
/// opens the dispatch under the cursor.
pub struct Capture;

impl TabComponent for Capture {
    fn title(&self) -> &'static str {
        "Capture"
    }
    fn capture_only(&self) -> bool {
        true
    }
    fn command(&self, app: &mut App, c: Command, out: &mut Vec<Cmd>) -> bool {
        c == Command::Enter && views::capture::open_under_cursor(app, out)
    }
    fn hints(&self, app: &App) -> Vec<Hint> {
        use Command::*;
        with_global(app, &[Enter, Dispatch, CaptureSort, Expand])
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::capture::draw(frame.buffer_mut(), area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        views::capture::list(app, content).into_iter().collect()
    }
    fn data(&self, app: &App) -> Value {
        views::capture::data(app)
    }
    fn help(&self, app: &App) -> Vec<Line<'static>> {
        views::capture::help(app)
    }
}

/// The per-statement profile (`p`): the hot statements, hottest first; the cursor row
/// selects its statement in the code panes (`update::nav` hands row moves to
/// [`crate::tui::update::profile`]).
pub struct Profile;

impl TabComponent for Profile {
    fn title(&self) -> &'static str {
        "Profile"
    }
    fn hints(&self, app: &App) -> Vec<Hint> {
        use Command::*;
        with_global(app, &[Down, Command::Profile, Right, Expand, Export])
    }
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App) {
        views::profile::draw(frame.buffer_mut(), area, app);
    }
    fn lists(&self, app: &App, content: Rect) -> Vec<RowList> {
        views::profile::list(app, content).into_iter().collect()
    }
    fn data(&self, app: &App) -> Value {
        views::profile::data(app)
    }
    fn help(&self, app: &App) -> Vec<Line<'static>> {
        let k = |c: Command| app.keymap.key_text(c);
        vec![
            Line::raw(""),
            Line::styled("Profile tab".to_string(), app.theme.title),
            Line::raw(format!(
                "  {}/{} hot statements: the code panes select the row's statement; {} profiles again",
                k(Command::Up),
                k(Command::Down),
                k(Command::Profile)
            )),
        ]
    }
}

#[cfg(test)]
mod tests;
