//! Diagnostics tab: validator, launch, compile and performance findings; Enter on one jumps
//! to its IR node. The selected one's fix is shown below the list.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::diagnostics::Severity;
use crate::tui::app::{App, Focus};

/// Draws the list and the selected diagnostic's fix.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let diags = app.diagnostics();
    if app.doc.is_none() {
        let msg = app.doc_error.as_deref().unwrap_or("no program open");
        return super::empty_note(buf, area, t.error, msg);
    }
    if diags.is_empty() {
        return super::empty_note(
            buf,
            area,
            t.ok,
            "no diagnostics: validator, launch and performance checks found nothing to report",
        );
    }
    let list_h = area.height.saturating_sub(2).max(1);
    let lines: Vec<Line> = diags
        .iter()
        .enumerate()
        .skip(app.detail.scroll)
        .take(list_h as usize)
        .map(|(i, d)| {
            let (sev, style) = match d.severity {
                Severity::Error => ("error", t.error),
                Severity::Warning => ("warn ", t.warning),
                Severity::Info => ("info ", t.info),
            };
            let l = Line::from(vec![
                Span::styled(sev, style),
                Span::styled(format!(" {} ", d.code), t.dim),
                Span::styled(d.node.as_deref().unwrap_or("program").to_string(), t.gutter),
                Span::raw(": "),
                Span::raw(d.message.clone()),
            ]);
            if i == app.detail.cursor && app.focus == Focus::Detail {
                l.style(t.cursor)
            } else {
                l
            }
        })
        .collect();
    Paragraph::new(lines).render(Rect::new(area.x, area.y, area.width, list_h), buf);
    if area.height > list_h {
        if let Some(d) = diags.get(app.detail.cursor) {
            let fix = Rect::new(area.x, area.y + list_h, area.width, area.height - list_h);
            Paragraph::new(Line::from(vec![
                Span::styled("Fix: ", t.key),
                Span::raw(d.fix.clone()),
                Span::styled("  (Enter: go to node)", t.dim),
            ]))
            .wrap(Wrap { trim: true })
            .render(fix, buf);
        }
    }
}
