//! The help overlay: draws the text [`crate::tui::component::help`] makes from the keymap
//! and the components' own keys, scrolled, with a mark for what is below the fold.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::app::App;

pub use crate::tui::component::help::{lines, max_scroll};

/// Draws the overlay centered in `area`, scrolled by `scroll` lines.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App, scroll: usize) {
    let r = crate::tui::component::help::overlay_area(area);
    Clear.render(r, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(app.theme.border_focus)
        .title(Line::styled(
            " Help - keys (Esc closes, j/k scroll) ",
            app.theme.title,
        ));
    let scroll = scroll.min(max_scroll(app, area.width, area.height));
    let all = lines(app);
    let inside = r.height.saturating_sub(2) as usize;
    let below = below_fold(&all, scroll + inside);
    let block = match below {
        Some(mark) => block.title_bottom(Line::styled(mark, app.theme.key)),
        None => block,
    };
    Paragraph::new(all.into_iter().skip(scroll).collect::<Vec<_>>())
        .style(app.theme.text)
        .block(block)
        .render(r, buf);
}

/// The scroll mark for help lines from `first` on when some are below the fold: the
/// sections they hold (`↓ more: Tuning, Actions (j, PgDn) `), or just that more follows.
pub fn below_fold(all: &[Line<'_>], first: usize) -> Option<String> {
    if first >= all.len() {
        return None;
    }
    // Section titles are the lines that do not start indented (and are not the blank
    // separators or the closing note about overrides).
    let sections: Vec<String> = all
        .iter()
        .skip(first)
        .filter_map(|l| {
            let text: String = l.spans.iter().map(|s| s.content.as_ref()).collect();
            let t = text.trim_end();
            (!t.is_empty() && !t.starts_with(' ') && !t.starts_with("Overrides"))
                .then(|| t.split(" (").next().unwrap_or(t).to_string())
        })
        .collect();
    Some(if sections.is_empty() {
        " ↓ more below (j, PgDn) ".to_string()
    } else {
        format!(" ↓ more: {} (j, PgDn) ", sections.join(", "))
    })
}
