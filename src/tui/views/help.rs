//! The help overlay, generated from the keymap (so it always shows the live bindings,
//! including user overrides) grouped by section.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use crate::tui::action::Command;
use crate::tui::app::App;
use crate::tui::config::config_path;
use crate::tui::keymap::Group;

/// The help text lines (also used by tests).
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out = Vec::new();
    let mut groups: Vec<Group> = app.keymap.bindings.iter().map(|(c, _)| c.group()).collect();
    groups.sort();
    groups.dedup();
    for g in groups {
        out.push(Line::styled(g.title().to_string(), t.title));
        let tabs = app.detail.tabs();
        for (cmd, keys) in app.keymap.bindings.iter().filter(|(c, _)| c.group() == g) {
            // Only the tabs that exist now are listed, each by its name (the same table the
            // tab bar draws).
            let describe = match cmd {
                Command::Tab(n) => match tabs.get((*n as usize).wrapping_sub(1)) {
                    Some(tab) => format!("detail tab: {}", tab.title()),
                    None => continue,
                },
                c => c.describe().to_string(),
            };
            if keys.is_empty() {
                continue;
            }
            let k = keys
                .iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(" ");
            out.push(Line::from(vec![
                Span::styled(format!("  {k:<14}"), t.key),
                Span::raw(format!("{describe:<28}")),
                Span::styled(cmd.name().to_string(), t.dim),
            ]));
        }
    }
    out.push(Line::raw(""));
    out.push(Line::styled("Prompts (/ w X o)".to_string(), t.title));
    out.push(Line::raw(
        "  typing replaces a pre-filled value; Enter ok, Esc cancel".to_string(),
    ));
    out.push(Line::raw(
        "  Left Right Home End (C-a C-e) move; C-u C-k delete to start/end; C-w a word".to_string(),
    ));
    out.push(Line::raw(""));
    out.push(Line::styled(
        "Timeline tab (detail panel focused)".to_string(),
        t.title,
    ));
    let k = |c: Command| {
        app.keymap
            .first_key(c)
            .map_or_else(|| "-".to_string(), |k| k.to_string())
    };
    out.push(Line::raw(format!(
        "  {}/{} zoom in/out, {} fit; {}/{} pan, {}/{} pan a window",
        k(Command::WgPlus),
        k(Command::WgMinus),
        k(Command::TimelineFit),
        k(Command::Left),
        k(Command::Right),
        k(Command::ScrollLeft),
        k(Command::ScrollRight)
    )));
    out.push(Line::raw(format!(
        "  {}/{} SM lane, {}/{} slice, {}/{} first/last; Enter: step in IR",
        k(Command::Up),
        k(Command::Down),
        k(Command::PrevBlock),
        k(Command::NextBlock),
        k(Command::Home),
        k(Command::End)
    )));
    out.push(Line::raw(""));
    let cfg = config_path().map_or("(no config dir)".into(), |p| p.display().to_string());
    out.push(Line::styled(
        format!("Overrides: {cfg}  (keys by command name, styles by field)"),
        t.dim,
    ));
    out
}

/// Where the overlay goes on a screen `area`: centered, at most 76 columns wide.
fn overlay_area(area: Rect) -> Rect {
    let w = area.width.min(76);
    let h = area.height.saturating_sub(2).max(3);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + area.height.saturating_sub(h) / 2,
        w,
        h,
    )
}

/// The largest scroll offset on a `width` x `height` screen: the last page of help shows
/// whole.
pub fn max_scroll(app: &App, width: u16, height: u16) -> usize {
    let inside = overlay_area(Rect::new(0, 0, width, height))
        .height
        .saturating_sub(2);
    lines(app).len().saturating_sub(inside as usize)
}

/// Draws the overlay centered in `area`, scrolled by `scroll` lines.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App, scroll: usize) {
    let r = overlay_area(area);
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
