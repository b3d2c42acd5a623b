//! The status bar: device (or `offline: <profile>`), target sm, workgroup size, work in
//! progress, the last message, and key hints for the focused pane from the keymap.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::action::Command;
use crate::tui::app::{App, Focus, Level};

const SPINNER: [&str; 8] = ["⣾", "⣽", "⣻", "⢿", "⡿", "⣟", "⣯", "⣷"];

/// Commands worth a hint for the focused pane (the keys come from the keymap). Help and
/// quit are not here: they always lead the bar ([`draw`]).
pub fn hints(app: &App) -> Vec<Command> {
    use Command::*;
    let mut v = match app.screen.focus {
        Focus::List => vec![Enter, Open, Reload],
        Focus::Ir | Focus::Ptx => vec![Search, SearchNext, NextBlock, ScrollRight, Zoom],
        Focus::Sass => vec![NextBlock, Search, SassPane, Zoom],
        Focus::Detail if app.detail.tab == crate::tui::app::Tab::Diagnostics => {
            vec![Enter, Right, Expand]
        }
        // Zoom, pan, lanes, slices: the tab's own keys (`update::timeline`).
        Focus::Detail if app.detail.tab == crate::tui::app::Tab::Timeline => {
            return vec![
                WgPlus,
                WgMinus,
                TimelineFit,
                Right,
                Down,
                NextBlock,
                Enter,
                TimelineForm,
                Expand,
            ];
        }
        Focus::Detail => vec![Right, Expand, Export],
    };
    v.extend([WgHalve, WgDouble, Dispatch, Tune]);
    if app
        .programs
        .doc
        .as_ref()
        .is_some_and(|d| d.pipeline.is_some())
    {
        // A pipeline's steps are what the code panes move between; its fused kernels'
        // workgroups are the plan's, so the workgroup and tune keys do not apply.
        v.insert(0, NextStep);
        v.retain(|c| !matches!(c, WgHalve | WgDouble | Tune));
    }
    v
}

/// `KEY word` spans for `cmd` (its first key), or nothing when it is unbound.
fn hint(app: &App, cmd: Command, lead: &str) -> Vec<Span<'static>> {
    let t = &app.theme;
    let on_timeline =
        app.screen.focus == Focus::Detail && app.detail.tab == crate::tui::app::Tab::Timeline;
    match app.keymap.first_key(cmd) {
        Some(k) => vec![
            Span::styled(format!("{lead}{k}"), t.key),
            Span::styled(
                format!(
                    " {}",
                    if on_timeline {
                        timeline_short(cmd)
                    } else {
                        short(cmd)
                    }
                ),
                t.dim,
            ),
        ],
        None => Vec::new(),
    }
}

/// Draws the bar into `area` (one row): help and quit first (so they show on the narrowest
/// screen), then the device, target and workgroup, work in progress, and the last message
/// or, without one, the focused pane's key hints.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    if area.is_empty() {
        return;
    }
    let t = &app.theme;
    let wg = app.workgroup();
    let mut spans = hint(app, Command::Help, " ");
    spans.extend(hint(app, Command::Quit, "  "));
    spans.push(Span::raw(" "));
    spans.extend([
        Span::styled(format!(" {} ", app.jobs.devices.label()), t.status),
        Span::styled(format!(" sm_{} ", app.code.sm), t.key),
        Span::raw(format!("wg {},{},{} ", wg[0], wg[1], wg[2])),
    ]);
    if let Some(b) = &app.jobs.busy {
        let frame = SPINNER[(app.screen.ticks as usize) % SPINNER.len()];
        const W: usize = 10;
        let progress = match (b.done * W).checked_div(b.total) {
            Some(fill) => {
                let fill = fill.min(W);
                let bar = format!("{}{}", "█".repeat(fill), "·".repeat(W - fill));
                format!(" {} {}/{} [{bar}]", b.label, b.done, b.total)
            }
            None => format!(" {}", b.label),
        };
        spans.push(Span::styled(format!("{frame}{progress} "), t.warning));
    }
    if let Some((level, msg)) = &app.screen.message {
        let style = if *level == Level::Error {
            t.error
        } else {
            t.info
        };
        spans.push(Span::styled(format!("│ {msg} "), style));
    } else {
        spans.push(Span::styled("│", t.dim));
        for c in hints(app) {
            spans.extend(hint(app, c, " "));
        }
    }
    Paragraph::new(Line::from(spans))
        .style(t.text)
        .render(area, buf);
}

/// One-word hint text.
fn short(c: Command) -> &'static str {
    match c {
        Command::Enter => "open",
        Command::Open => "file",
        Command::Reload => "reload",
        Command::NextBlock => "block",
        Command::NextStep => "step",
        Command::Search => "search",
        Command::SearchNext => "next",
        Command::Zoom => "zoom",
        Command::Right => "tab",
        Command::Expand => "expand",
        Command::Export => "export",
        Command::WgHalve => "wg/2",
        Command::WgDouble => "wg*2",
        Command::Dispatch => "run",
        Command::Tune => "tune",
        Command::ScrollRight => "scroll",
        Command::Help => "help",
        Command::Quit => "quit",
        other => other.name(),
    }
}

/// Hint words of the Timeline tab's keys (`update::timeline`).
fn timeline_short(c: Command) -> &'static str {
    match c {
        Command::WgPlus => "zoom",
        Command::WgMinus => "out",
        Command::TimelineFit => "fit",
        Command::Right => "pan",
        Command::Down => "SM",
        Command::NextBlock => "slice",
        Command::Enter => "IR",
        Command::TimelineForm => "form",
        other => short(other),
    }
}
