//! The detail panel: a tab bar and the active tab's view. The tab set is the registry's
//! ([`crate::tui::component::tabs::TABS`], those shown now); each tab draws itself through
//! its component there.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use ratatui::Frame;

use crate::tui::app::{App, Focus};
use crate::tui::layout::tab_labels;

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
    Paragraph::new(bar_line(app, bar.width)).render(bar, frame.buffer_mut());
    let content = crate::tui::layout::detail_content(area);
    if !content.is_empty() {
        draw_tab(frame, content, app);
    }
}

fn bar_line(app: &App, width: u16) -> Line<'static> {
    let mut spans = Vec::new();
    let tabs = app.detail.tabs();
    for (t, label) in tabs.iter().zip(tab_labels(width, &tabs, app.detail.tab)) {
        let style = if *t == app.detail.tab {
            app.theme.tab_active
        } else {
            app.theme.tab
        };
        spans.push(Span::styled(label, style));
        spans.push(Span::styled("│", app.theme.border));
    }
    Line::from(spans)
}

fn draw_tab(frame: &mut Frame, area: Rect, app: &App) {
    crate::tui::component::tabs::tab(app.detail.tab).draw(frame, area, app);
}

/// A two-column list of named counters (scrolled like every tab list), or why there are none.
pub fn counters(
    buf: &mut Buffer,
    area: Rect,
    app: &App,
    data: &Result<Vec<(String, String)>, crate::util::Problem>,
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
            let e = crate::tui::gpu::short_gpu_error(&e.to_string());
            return super::empty_note(buf, area, app.theme.dim, &format!("{what} empty: {e}"));
        }
    };
    let Some(list) = crate::tui::component::tabs::lists(app, area)
        .into_iter()
        .next()
    else {
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
