//! The program list: the files given on the command line with their validation status.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::app::{App, EntryStatus, Focus};

/// Draws the list into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let inner = super::framed(
        buf,
        area,
        app,
        Focus::List,
        super::title(
            app,
            if app.capture.is_some() {
                "Dispatches"
            } else {
                "Programs"
            },
            app.programs.entries.len().to_string(),
        ),
    );
    if app.programs.entries.is_empty() {
        return super::empty_note(buf, inner, t.dim, "no files - press o to open one");
    }
    let rows = inner.height as usize;
    let lines: Vec<Line> = app
        .programs
        .entries
        .iter()
        .enumerate()
        .skip(app.panes.list.scroll)
        .take(rows)
        .map(|(i, e)| {
            let (badge, style) = match &e.status {
                EntryStatus::Checked {
                    errors: 0,
                    warnings: 0,
                } => ("✓", t.ok),
                EntryStatus::Checked { errors: 0, .. } => ("!", t.warning),
                EntryStatus::Checked { .. } => ("✗", t.error),
                EntryStatus::Failed(_) => ("✗", t.error),
                // Not checked yet: no claim either way.
                EntryStatus::Pending => ("…", t.dim),
            };
            let name = match app.capture.as_ref().and_then(|c| c.row_of(&e.path)) {
                // A dispatch: its index and Program, and the codes of an import refusal.
                Some(r) => match &r.opens {
                    crate::tui::capture::Opens::Refused { codes, .. } => {
                        format!("#{} {} {}", r.index, r.name, codes.join(","))
                    }
                    _ => format!("#{} {}", r.index, r.name),
                },
                None => e.path.file_stem().map_or_else(
                    || e.path.display().to_string(),
                    |s| s.to_string_lossy().into_owned(),
                ),
            };
            let open = if app.programs.current == Some(i) {
                "▸"
            } else {
                " "
            };
            let mut line = Line::from(vec![
                Span::raw(open),
                Span::styled(badge, style),
                // Pipelines are marked; a Program's line is unchanged.
                Span::styled(if e.pipeline { "⇶" } else { " " }, t.title),
                Span::raw(name),
            ]);
            if i == app.panes.list.cursor && app.screen.focus == Focus::List {
                line = line.style(t.cursor);
            }
            line
        })
        .collect();
    Paragraph::new(lines).render(inner, buf);
}
