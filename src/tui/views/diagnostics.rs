//! Diagnostics tab: validator, launch, compile and performance findings; Enter on one jumps
//! to its IR node. The selected one's fix is shown below the list.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::tab_rows::{Offset, RowList};
use crate::diagnostics::Severity;
use crate::tui::app::App;

/// Rows under the list kept for the selected diagnostic's fix.
const FIX_ROWS: u16 = 2;

/// The findings list in `area` (the rest below it shows the fix), when there are findings.
pub fn list(app: &App, area: Rect) -> Option<RowList> {
    let n = app.diagnostics().len();
    if app.programs.doc.is_none() || n == 0 {
        return None;
    }
    let h = area.height.saturating_sub(FIX_ROWS).max(1).min(area.height);
    let at = Rect { height: h, ..area };
    Some(RowList::rows_in(at, false, n, Offset::Main))
}

/// Draws the list and the selected diagnostic's fix.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let diags = app.diagnostics();
    if app.programs.doc.is_none() {
        let msg = app
            .programs
            .doc_error
            .as_deref()
            .unwrap_or("no program open");
        return super::empty_note(buf, area, t.error, msg);
    }
    let Some(list) = list(app, area) else {
        return super::empty_note(
            buf,
            area,
            t.ok,
            "no diagnostics: validator, launch and performance checks found nothing to report",
        );
    };
    let lines: Vec<Line> = list
        .visible(app)
        .filter_map(|i| {
            let d = diags.get(i)?;
            let (sev, style) = match d.severity {
                Severity::Error => ("error", t.error),
                Severity::Warning => ("warn ", t.warning),
                Severity::Info => ("info ", t.info),
            };
            let mut spans = vec![
                Span::styled(sev, style),
                Span::styled(format!(" {} ", d.code), t.dim),
                Span::styled(d.node.as_deref().unwrap_or("program").to_string(), t.gutter),
                Span::raw(": "),
            ];
            // One row per finding: a message longer than the row ends in `…` (the whole
            // text is in the export and `vyrescope check`); the first line only.
            let used = Line::from(spans.clone()).width();
            let room = (list.body().width as usize).saturating_sub(used);
            let first = d.message.lines().next().unwrap_or("");
            let cut = d.message.len() > first.len();
            let msg = if cut && first.chars().count() < room {
                format!("{first} …")
            } else {
                super::wrap::ellipsize(first, room)
            };
            spans.push(Span::raw(msg));
            let l = Line::from(spans);
            Some(l.style(list.row_style(app, i, Style::new())))
        })
        .collect();
    Paragraph::new(lines).render(list.body(), buf);
    list.draw_scrollbar(buf, app);
    let list_h = list.area.height;
    if area.height > list_h {
        if let Some(d) = diags.get(app.detail.pane.cursor) {
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
