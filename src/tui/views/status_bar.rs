//! The status bar: device (or `offline: <profile>`), target sm, workgroup size, work in
//! progress, the last message, and key hints for the focused pane: the commands its
//! component hints, with the keys from the keymap.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::action::Command;
use crate::tui::app::{App, Level};
use crate::tui::component::{focused, Hint};

const SPINNER: [&str; 8] = ["⣾", "⣽", "⣻", "⢿", "⡿", "⣟", "⣯", "⣷"];

/// Commands worth a hint for the focused pane: what its component hints (the keys come from
/// the keymap). Help and quit are not here: they always lead the bar ([`draw`]).
pub fn hints(app: &App) -> Vec<Command> {
    focused(app)
        .hints(app)
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// `KEY word` spans for `cmd` (its first key), or nothing when it is unbound.
fn hint(app: &App, (cmd, word): Hint, lead: &str) -> Vec<Span<'static>> {
    let t = &app.theme;
    match app.keymap.first_key(cmd) {
        Some(k) => vec![
            Span::styled(format!("{lead}{k}"), t.key),
            Span::styled(format!(" {word}"), t.dim),
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
    let mut spans = hint(app, (Command::Help, Command::Help.hint()), " ");
    spans.extend(hint(app, (Command::Quit, Command::Quit.hint()), "  "));
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
    let used = |spans: &[Span]| {
        spans
            .iter()
            .map(|s| s.content.chars().count())
            .sum::<usize>()
    };
    let width = usize::from(area.width);
    if let Some((level, msg)) = &app.screen.message {
        let style = if *level == Level::Error {
            t.error
        } else {
            t.info
        };
        // Cut at a word, with a mark, never mid-word.
        let room = width.saturating_sub(used(&spans) + 3);
        spans.push(Span::styled(format!("│ {} ", fit_words(msg, room)), style));
    } else {
        spans.push(Span::styled("│", t.dim));
        // Whole hints only: one that does not fit is left out rather than cut mid-word.
        for h in focused(app).hints(app) {
            let more = hint(app, h, " ");
            if used(&spans) + used(&more) > width {
                break;
            }
            spans.extend(more);
        }
    }
    Paragraph::new(Line::from(spans))
        .style(t.text)
        .render(area, buf);
}

/// `text` cut to at most `room` columns at a word boundary, with `…` when cut. A path that
/// does not fit keeps its end (`…/dir/file.ptx`): the file name is what the message is for.
fn fit_words(text: &str, room: usize) -> String {
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut out = String::new();
    for word in text.split(' ') {
        let next = if out.is_empty() {
            word.chars().count()
        } else {
            out.chars().count() + 1 + word.chars().count()
        };
        if next + 1 > room {
            let used = out.chars().count() + usize::from(!out.is_empty());
            let left = room.saturating_sub(used + 1);
            if word.contains('/') && left >= 8 {
                let chars: Vec<char> = word.chars().collect();
                let tail: String = chars[chars.len() - left..].iter().collect();
                // From a folder boundary when there is one, so no name is cut.
                let tail = match tail.find('/') {
                    Some(i) if i + 1 < tail.len() => tail[i..].to_string(),
                    _ => tail,
                };
                if !out.is_empty() {
                    out.push(' ');
                }
                out.push('…');
                out.push_str(&tail);
                return out;
            }
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::fit_words;

    #[test]
    fn a_path_that_does_not_fit_keeps_its_file_name() {
        let msg = "exported /home/someone/projects/vyrescope/out/a_rather_long_kernel_name.ptx";
        let got = fit_words(msg, 50);
        assert!(got.chars().count() <= 50, "{got}");
        assert!(got.starts_with("exported …/"), "{got}");
        assert!(got.ends_with("a_rather_long_kernel_name.ptx"), "{got}");
        // Words that are not paths are cut as before, and what fits stays whole.
        assert_eq!(fit_words("one two three four", 10), "one two…");
        assert_eq!(fit_words(msg, 200), msg);
    }
}
