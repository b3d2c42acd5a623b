//! The one-line prompt (search, workgroup, open, export path), drawn over the status bar.

use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Widget};
use ratatui::Frame;

use crate::tui::app::{App, PromptKind};

/// Draws the prompt in `area` and places the terminal cursor after the text.
pub fn draw(frame: &mut Frame, area: Rect, app: &App, kind: PromptKind, text: &str) {
    if area.is_empty() {
        return;
    }
    let label = format!(" {}: ", kind.label());
    let x = area.x + (label.chars().count() + text.chars().count()) as u16;
    Clear.render(area, frame.buffer_mut());
    Paragraph::new(Line::from(vec![
        Span::styled(label, app.theme.key),
        Span::raw(text.to_string()),
        Span::styled("  (Enter ok, Esc cancel)", app.theme.dim),
    ]))
    .style(app.theme.text)
    .render(area, frame.buffer_mut());
    frame.set_cursor_position(Position::new(x.min(area.right().saturating_sub(1)), area.y));
}
