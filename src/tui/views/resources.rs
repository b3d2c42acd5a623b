//! Resources tab: registers, spills, shared, const, stack, and the emitter's figures, each
//! with where it comes from.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Row, Table, Widget};

use crate::tui::app::App;

/// Draws the resource table (scrolled to the detail cursor; the header stays).
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let (Some(e), Some(list)) = (
        app.code.emission.as_ref(),
        crate::tui::component::tabs::lists(app, area)
            .into_iter()
            .next(),
    ) else {
        return super::empty_note(buf, area, app.theme.dim, "no program open");
    };
    let rows: Vec<Row> = list
        .visible(app)
        .filter_map(|i| {
            let r = e.resources.get(i)?;
            Some(
                Row::new(vec![r.name.clone(), r.value.clone(), r.source.clone()])
                    .style(list.row_style(app, i, Style::new())),
            )
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
    .render(list.body(), buf);
    list.draw_scrollbar(buf, app);
}
