//! Drawing: every view borrows the [`App`] (and the highlighter's cache) and writes into the
//! frame; nothing here changes state. [`draw`] is the whole screen (each pane drawn by its
//! component, [`super::component`]), used by the terminal loop, the headless replay and the
//! snapshot tests alike.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Widget};
use ratatui::Frame;

use super::app::{App, Focus};
use super::highlight::Highlighter;
use super::layout::areas;

pub mod cache;
pub mod capture;
pub mod code_view;
pub mod diagnostics;
pub mod help;
pub mod ir_pane;
pub mod occupancy;
pub mod pin_diff;
pub mod pipeline_run;
pub mod plan;
pub mod profile;
pub mod program_list;
pub mod prompt;
pub mod ptx_pane;
pub mod resources;
pub mod run;
pub mod sass_pane;
pub mod status_bar;
pub mod tab_rows;
pub mod tabs;
pub mod telemetry;
pub mod timeline;
pub mod wrap;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App, hl: &Highlighter) {
    let area = frame.area();
    let a = areas(area.width, area.height, app);
    let buf = frame.buffer_mut();
    buf.set_style(area, app.theme.text);
    if super::layout::too_small(area.width, area.height) {
        return too_small(buf, area, app);
    }
    // Each pane's component draws it (hidden panes have empty areas).
    for f in Focus::ALL {
        let r = a.of(f);
        if !r.is_empty() {
            super::component::pane(f).draw(frame, r, app, hl);
        }
    }
    status_bar::draw(frame.buffer_mut(), a.status, app);
    match &app.overlay.open {
        Some(super::app::Overlay::Help(scroll)) => {
            help::draw(frame.buffer_mut(), area, app, *scroll)
        }
        Some(super::app::Overlay::Prompt(p)) => prompt::draw(frame, a.status, app, p),
        Some(super::app::Overlay::ConfirmOverwrite(path)) => {
            prompt::confirm(frame.buffer_mut(), a.status, app, path)
        }
        None => {}
    }
}

/// The notice shown instead of the panes on a screen below [`super::layout::MIN_SIZE`].
fn too_small(buf: &mut Buffer, area: Rect, app: &App) {
    let (w, h) = super::layout::MIN_SIZE;
    let quit = app
        .keymap
        .first_key(super::action::Command::Quit)
        .map_or(String::new(), |k| format!(" ({k} quits)"));
    let msg = format!(
        "terminal too small: {}x{}, the inspector needs at least {w}x{h} - enlarge the window{quit}",
        area.width, area.height
    );
    empty_note(buf, area, app.theme.warning, &msg);
}

/// A pane's frame: borders (thick and accented when focused) and a title.
pub fn pane_block<'a>(app: &App, f: Focus, title: Line<'a>) -> Block<'a> {
    let focused = app.screen.focus == f;
    Block::default()
        .borders(Borders::ALL)
        .border_type(if focused {
            BorderType::Thick
        } else {
            BorderType::Plain
        })
        .border_style(if focused {
            app.theme.border_focus
        } else {
            app.theme.border
        })
        .title(title)
}

/// Draws pane `f`'s frame ([`pane_block`]) over `area`; returns the area inside it.
pub fn framed(buf: &mut Buffer, area: Rect, app: &App, f: Focus, title: Line<'_>) -> Rect {
    let block = pane_block(app, f, title);
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

/// A title line: `name` plus optional dim detail.
pub fn title<'a>(app: &App, name: &'a str, detail: String) -> Line<'a> {
    let mut spans = vec![Span::styled(format!(" {name} "), app.theme.title)];
    if !detail.is_empty() {
        spans.push(Span::styled(format!("{detail} "), app.theme.dim));
    }
    Line::from(spans)
}

/// Renders `msg` (wrapped) as the content of an empty panel: why it is empty.
pub fn empty_note(buf: &mut Buffer, area: Rect, style: Style, msg: &str) {
    use ratatui::widgets::{Paragraph, Wrap};
    Paragraph::new(msg.to_string())
        .style(style)
        .wrap(Wrap { trim: true })
        .render(area, buf);
}
