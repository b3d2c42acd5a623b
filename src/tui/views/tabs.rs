//! The detail panel: a tab bar and the active tab's view. The tab set is [`Tab::ALL`]; each
//! tab is one file in `views/`, one arm in [`draw_tab`] and one in
//! [`super::tab_rows::lists`] (its scrollable rows).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use ratatui::Frame;

use crate::tui::app::{App, Focus, Tab};

/// Draws the panel (bar + content) into `area`.
pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let inner = super::framed(
        frame.buffer_mut(),
        area,
        app,
        Focus::Detail,
        super::title(app, "Details", String::new()),
    );
    if inner.height == 0 {
        return;
    }
    let bar = Rect::new(inner.x, inner.y, inner.width, 1);
    Paragraph::new(bar_line(app)).render(bar, frame.buffer_mut());
    let content = super::tab_rows::content(area);
    if !content.is_empty() {
        draw_tab(frame, content, app);
    }
}

fn label(i: usize, t: Tab) -> String {
    format!(" {} {} ", i + 1, t.title())
}

fn bar_line(app: &App) -> Line<'static> {
    let mut spans = Vec::new();
    for (i, t) in app.detail.tabs().iter().enumerate() {
        let style = if *t == app.detail.tab {
            app.theme.tab_active
        } else {
            app.theme.tab
        };
        spans.push(Span::styled(label(i, *t), style));
        spans.push(Span::styled("│", app.theme.border));
    }
    Line::from(spans)
}

/// Index of the tab (of `tabs`, the ones shown) whose title is at column `x` of the bar in
/// panel `area`.
pub fn tab_at(area: Rect, x: u16, tabs: &[Tab]) -> Option<usize> {
    let mut at = area.x + 1;
    for (i, t) in tabs.iter().enumerate() {
        let w = label(i, *t).chars().count() as u16;
        if x >= at && x < at + w {
            return Some(i);
        }
        at += w + 1;
    }
    None
}

fn draw_tab(frame: &mut Frame, area: Rect, app: &App) {
    match app.detail.tab {
        Tab::Occupancy => super::occupancy::draw(frame, area, app),
        Tab::Resources => super::resources::draw(frame.buffer_mut(), area, app),
        Tab::Diagnostics => super::diagnostics::draw(frame.buffer_mut(), area, app),
        Tab::Run => super::run::draw(frame, area, app),
        Tab::Cache => super::cache::draw(frame.buffer_mut(), area, app),
        Tab::Telemetry => super::telemetry::draw(frame.buffer_mut(), area, app),
        Tab::Plan => super::plan::draw(frame.buffer_mut(), area, app),
        Tab::Timeline => super::timeline::draw(frame.buffer_mut(), area, app),
    }
}

/// A two-column list of named counters (scrolled like every tab list), or why there are none.
pub fn counters(
    buf: &mut Buffer,
    area: Rect,
    app: &App,
    data: &Result<Vec<(String, String)>, String>,
    what: &str,
) {
    let rows = match data {
        Ok(r) if !r.is_empty() => r,
        Ok(_) => {
            return super::empty_note(
                buf,
                area,
                app.theme.dim,
                &format!("no {what} yet - press r to dispatch"),
            )
        }
        Err(e) => {
            return super::empty_note(buf, area, app.theme.dim, &format!("{what} empty: {e}"))
        }
    };
    let Some(list) = super::tab_rows::lists(app, area).into_iter().next() else {
        return;
    };
    let w = rows
        .iter()
        .map(|r| r.0.len())
        .max()
        .unwrap_or(0)
        .min(area.width as usize / 2);
    let lines: Vec<Line> = list
        .visible(app)
        .filter_map(|i| {
            let (k, v) = rows.get(i)?;
            let l = Line::from(vec![
                Span::styled(format!("{k:<w$}  "), app.theme.dim),
                Span::styled(v.clone(), app.theme.text),
            ]);
            Some(l.style(list.row_style(app, i, Style::new())))
        })
        .collect();
    Paragraph::new(lines).render(list.body(), buf);
    list.draw_scrollbar(buf, app);
}
