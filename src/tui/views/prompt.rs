//! The one-line prompt (search, workgroup, open, export path), drawn over the status bar:
//! a pre-filled value shows selected (typing replaces it), the terminal cursor sits at the
//! prompt's cursor.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};
use ratatui::Frame;

use crate::tui::app::{App, Prompt};

/// Draws `p` in `area` and places the terminal cursor at its cursor.
pub fn draw(frame: &mut Frame, area: Rect, app: &App, p: &Prompt) {
    if area.is_empty() {
        return;
    }
    let label = format!(" {}: ", p.kind.label());
    let x = area.x + (label.chars().count() + p.cursor) as u16;
    Clear.render(area, frame.buffer_mut());
    let text_style = if p.selected {
        app.theme.text.add_modifier(Modifier::REVERSED)
    } else {
        app.theme.text
    };
    let hint = if p.selected {
        "  (typing replaces; Enter ok, Esc cancel)"
    } else {
        "  (Enter ok, Esc cancel, C-u clear)"
    };
    Paragraph::new(Line::from(vec![
        Span::styled(label, app.theme.key),
        Span::styled(p.text.clone(), text_style),
        Span::styled(hint, app.theme.dim),
    ]))
    .style(app.theme.text)
    .render(area, frame.buffer_mut());
    frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
}

/// Draws the overwrite question for `path` in `area`.
pub fn confirm(buf: &mut Buffer, area: Rect, app: &App, path: &std::path::Path) {
    if area.is_empty() {
        return;
    }
    Clear.render(area, buf);
    Paragraph::new(Line::from(vec![
        Span::styled(
            format!(" {} exists - replace it? ", path.display()),
            app.theme.warning,
        ),
        Span::styled("y replaces, any other key keeps it", app.theme.dim),
    ]))
    .style(app.theme.text)
    .render(area, buf);
}
