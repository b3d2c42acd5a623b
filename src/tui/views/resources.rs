//! Resources tab: registers, spills, shared, const, stack, and the emitter's figures, each
//! with where it comes from.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Row, Table, Widget};

use crate::tui::app::{App, Focus};

/// Draws the resource table.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let Some(e) = app.emission.as_ref() else {
        return super::empty_note(buf, area, app.theme.dim, "no program open");
    };
    let rows: Vec<Row> = e
        .resources
        .iter()
        .enumerate()
        .skip(app.detail.scroll)
        .map(|(i, r)| {
            let row = Row::new(vec![r.name.clone(), r.value.clone(), r.source.clone()]);
            if i == app.detail.cursor && app.focus == Focus::Detail {
                row.style(app.theme.cursor)
            } else {
                row
            }
        })
        .collect();
    Table::new(
        rows,
        [
            Constraint::Length(31),
            Constraint::Length(10),
            Constraint::Fill(1),
        ],
    )
    .header(Row::new(vec!["resource", "value", "source"]).style(app.theme.title))
    .column_spacing(1)
    .render(area, buf);
}
