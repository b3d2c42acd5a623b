//! The help overlay's text and extent: every binding of the keymap by section (so help
//! shows the live bindings, user overrides included), the prompts' editing keys, then the
//! lines of the tabs that give keys a meaning of their own ([`super::tabs::TABS`]). The
//! overlay's scroll limit is measured here, so the state never asks a view.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::tabs::TABS;
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
                // The Plan tab's key only where there is a Plan tab (a pipeline is open).
                Command::PlanVyre if !tabs.iter().any(|tab| tab.title() == "Plan") => continue,
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
                // Two spaces at least: a long description must not run into the name
                // ("pin this lowering (again: unpin)pin").
                Span::raw(format!("{describe:<28}  ")),
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
    for tab in TABS {
        out.extend(tab.help(app));
    }
    out.push(Line::raw(""));
    let cfg = config_path().map_or("(no config dir)".into(), |p| p.display().to_string());
    out.push(Line::styled(
        format!("Overrides: {cfg}  (keys by command name, styles by field)"),
        t.dim,
    ));
    out
}

/// Where the overlay goes on a screen `area`: centered, at most 76 columns wide.
pub fn overlay_area(area: Rect) -> Rect {
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
