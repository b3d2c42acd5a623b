//! The detail panel: a tab bar and the active tab's view. The tab set is [`Tab::ALL`]; each
//! tab is one file in `views/` and one arm in [`draw_tab`] and [`row_count`].

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
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
    let content = Rect::new(inner.x, inner.y + 1, inner.width, inner.height - 1);
    if !content.is_empty() {
        draw_tab(frame, content, app);
    }
}

fn label(i: usize, t: Tab) -> String {
    format!(" {} {} ", i + 1, t.title())
}

fn bar_line(app: &App) -> Line<'static> {
    let mut spans = Vec::new();
    for (i, t) in Tab::ALL.iter().enumerate() {
        let style = if *t == app.tab {
            app.theme.tab_active
        } else {
            app.theme.tab
        };
        spans.push(Span::styled(label(i, *t), style));
        spans.push(Span::styled("│", app.theme.border));
    }
    Line::from(spans)
}

/// Index of the tab whose title is at column `x` of the bar in panel `area`.
pub fn tab_at(area: Rect, x: u16) -> Option<usize> {
    let mut at = area.x + 1;
    for (i, t) in Tab::ALL.iter().enumerate() {
        let w = label(i, *t).chars().count() as u16;
        if x >= at && x < at + w {
            return Some(i);
        }
        at += w + 1;
    }
    None
}

fn draw_tab(frame: &mut Frame, area: Rect, app: &App) {
    match app.tab {
        Tab::Occupancy => super::occupancy::draw(frame, area, app),
        Tab::Resources => super::resources::draw(frame.buffer_mut(), area, app),
        Tab::Diagnostics => super::diagnostics::draw(frame.buffer_mut(), area, app),
        Tab::Run => super::run::draw(frame, area, app),
        Tab::Cache => super::cache::draw(frame.buffer_mut(), area, app),
        Tab::Telemetry => super::telemetry::draw(frame.buffer_mut(), area, app),
    }
}

/// Selectable rows of the active tab (for the detail cursor).
pub fn row_count(app: &App) -> usize {
    match app.tab {
        Tab::Occupancy => app
            .emission
            .as_ref()
            .and_then(|e| e.occupancy.as_ref().ok())
            .map_or(0, |o| o.rows.len()),
        Tab::Resources => app.emission.as_ref().map_or(0, |e| e.resources.len()),
        Tab::Diagnostics => app.diagnostics().len(),
        Tab::Run => app.session.runs.len(),
        Tab::Cache => app.session.cache.as_ref().map_or(0, Vec::len),
        Tab::Telemetry => app.session.telemetry.as_ref().map_or(0, Vec::len),
    }
}

/// A two-column table of named counters, or why there are none.
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
    let w = rows
        .iter()
        .map(|r| r.0.len())
        .max()
        .unwrap_or(0)
        .min(area.width as usize / 2);
    let lines: Vec<Line> = rows
        .iter()
        .enumerate()
        .skip(app.detail.scroll)
        .take(area.height as usize)
        .map(|(i, (k, v))| {
            let l = Line::from(vec![
                Span::styled(format!("{k:<w$}  "), app.theme.dim),
                Span::styled(v.clone(), app.theme.text),
            ]);
            if i == app.detail.cursor && app.focus == Focus::Detail {
                l.style(app.theme.cursor)
            } else {
                l
            }
        })
        .collect();
    Paragraph::new(lines).render(area, buf);
}
