//! The components of the five focusable panes: the program list, the IR, PTX and SASS code
//! panes, and the detail panel (which hands keys, hints and drawing on to the active tab).

use ratatui::layout::Rect;
use ratatui::Frame;
use serde_json::{json, Value};

use super::{tabs, with_global, Component, Hint};
use crate::tui::action::{Cmd, Command};
use crate::tui::app::{App, Focus};
use crate::tui::highlight::Highlighter;
use crate::tui::sass_view::SassState;
use crate::tui::update::{nav, program};
use crate::tui::views;

/// The program list: Enter opens the file under the cursor.
pub struct List;

impl Component for List {
    fn command(&self, app: &mut App, c: Command, out: &mut Vec<Cmd>) -> bool {
        if c != Command::Enter {
            return false;
        }
        program::open_selected(app, out);
        true
    }

    fn hints(&self, app: &App) -> Vec<Hint> {
        use Command::*;
        with_global(app, &[Enter, Open, Reload])
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, _: &Highlighter) {
        views::program_list::draw(frame.buffer_mut(), area, app);
    }

    fn export_name(&self, _: &App) -> String {
        "programs".into()
    }

    fn data(&self, app: &App) -> Value {
        json!(app
            .programs
            .entries
            .iter()
            .map(|e| json!({"file": e.path.display().to_string(), "status": format!("{:?}", e.status)}))
            .collect::<Vec<_>>())
    }
}

/// The emitted kernel as the IR and PTX panes export it: PTX, source map, ABI and stats.
fn ptx_data(app: &App) -> Value {
    match app.code.emission.as_ref().map(|e| &e.ptx) {
        Some(Ok(p)) => json!({
            "kernel": p.kernel.kernel_name,
            "ptx": p.kernel.ptx,
            "map": p.kernel.source_map.entries,
            "abi": p.kernel.abi,
            "stats": p.kernel.stats,
        }),
        Some(Err(e)) => json!({"error": e.to_string()}),
        None => json!({"error": "emission in progress"}),
    }
}

/// Left/Right (and the whole-step ScrollLeft/ScrollRight) scroll code pane `f` sideways.
fn hscroll_keys(app: &mut App, f: Focus, c: Command) -> bool {
    let steps = match c {
        Command::Left | Command::ScrollLeft => -1,
        Command::Right | Command::ScrollRight => 1,
        _ => return false,
    };
    nav::hscroll(app, f, steps);
    true
}

/// Hints of the IR and PTX panes.
const CODE_HINTS: [Command; 5] = [
    Command::Search,
    Command::SearchNext,
    Command::NextBlock,
    Command::ScrollRight,
    Command::Zoom,
];

/// The IR pane: scrolls sideways.
pub struct Ir;

impl Component for Ir {
    fn command(&self, app: &mut App, c: Command, _: &mut Vec<Cmd>) -> bool {
        hscroll_keys(app, Focus::Ir, c)
    }

    fn hints(&self, app: &App) -> Vec<Hint> {
        with_global(app, &CODE_HINTS)
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, hl: &Highlighter) {
        views::ir_pane::draw(frame.buffer_mut(), area, app, hl);
    }

    fn export_name(&self, _: &App) -> String {
        "ptx".into()
    }

    fn data(&self, app: &App) -> Value {
        ptx_data(app)
    }
}

/// The PTX pane: scrolls sideways.
pub struct Ptx;

impl Component for Ptx {
    fn command(&self, app: &mut App, c: Command, _: &mut Vec<Cmd>) -> bool {
        hscroll_keys(app, Focus::Ptx, c)
    }

    fn hints(&self, app: &App) -> Vec<Hint> {
        with_global(app, &CODE_HINTS)
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, hl: &Highlighter) {
        views::ptx_pane::draw(frame.buffer_mut(), area, app, hl);
    }

    fn export_name(&self, _: &App) -> String {
        "ptx".into()
    }

    fn data(&self, app: &App) -> Value {
        ptx_data(app)
    }
}

/// The SASS pane (its rows do not scroll sideways: they fit their columns).
pub struct Sass;

impl Component for Sass {
    fn hints(&self, app: &App) -> Vec<Hint> {
        use Command::*;
        with_global(app, &[NextBlock, Search, SassPane, Zoom])
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, hl: &Highlighter) {
        views::sass_pane::draw(frame.buffer_mut(), area, app, hl);
    }

    fn export_name(&self, _: &App) -> String {
        "sass".into()
    }

    fn data(&self, app: &App) -> Value {
        match app.code.sass_state() {
            Some(SassState::Ready(v)) => v.listing.to_json(),
            Some(SassState::Failed(e)) => json!({"error": e}),
            _ => json!({"error": "SASS not assembled (yet)"}),
        }
    }
}

/// The detail panel: the active tab takes keys first; Left/Right otherwise go to the
/// neighbouring tab, which then sees the key too (arriving on the Timeline tab with one
/// says what it has).
pub struct Detail;

impl Component for Detail {
    fn command(&self, app: &mut App, c: Command, out: &mut Vec<Cmd>) -> bool {
        if tabs::tab(app.detail.tab).command(app, c, out) {
            return true;
        }
        let step = match c {
            Command::Left => -1,
            Command::Right => 1,
            _ => return false,
        };
        app.detail.switch(app.detail.neighbour(step));
        tabs::tab(app.detail.tab).command(app, c, out);
        true
    }

    fn hints(&self, app: &App) -> Vec<Hint> {
        tabs::tab(app.detail.tab).hints(app)
    }

    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, _: &Highlighter) {
        views::tabs::draw(frame, area, app);
    }

    fn export_name(&self, app: &App) -> String {
        app.detail.tab.title().to_lowercase()
    }

    fn data(&self, app: &App) -> Value {
        tabs::tab(app.detail.tab).data(app)
    }
}
