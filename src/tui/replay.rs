//! Headless replay: `vyrescope tui FILE --keys "r t" --snapshot OUT.txt` runs the same
//! `update` and `draw` as the terminal against ratatui's `TestBackend`, with worker jobs run
//! inline after each key (so the final screen is deterministic), and writes the final
//! screen as text.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use super::action::Action;
use super::app::App;
use super::highlight::Highlighter;
use super::input::{key_action, script_keys};
use super::update::update;
use super::views;
use super::worker::execute;

/// Runs every queued worker job to completion, feeding replies through `update`.
pub fn drain_jobs(app: &mut App) {
    while !app.outbox.is_empty() {
        let jobs: Vec<_> = app.outbox.drain(..).collect();
        for job in jobs {
            let mut replies = Vec::new();
            execute(job, &mut |r| replies.push(r));
            for r in replies {
                update(app, Action::Worker(r));
            }
        }
    }
}

/// Applies a `--keys` script; stops early when a key quits.
pub fn play(app: &mut App, script: &str) {
    drain_jobs(app);
    for key in script_keys(script) {
        if let Some(a) = key_action(app, key) {
            update(app, a);
        }
        drain_jobs(app);
        if app.quit {
            break;
        }
    }
}

/// Draws the screen at `width` x `height` and returns the buffer.
pub fn render(app: &mut App, hl: &Highlighter, width: u16, height: u16) -> Buffer {
    if app.size != (width, height) {
        update(app, Action::Resize(width, height));
    }
    let mut term = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(never) => match never {},
    };
    let drawn = term.draw(|f| views::draw(f, app, hl));
    if let Err(never) = drawn {
        match never {}
    }
    term.backend().buffer().clone()
}

/// The buffer as text: one line per row, trailing spaces trimmed.
pub fn buffer_text(buf: &Buffer) -> String {
    let w = buf.area.width as usize;
    let mut out = String::new();
    for (i, cell) in buf.content.iter().enumerate() {
        out.push_str(cell.symbol());
        if (i + 1) % w == 0 {
            let trimmed = out.trim_end_matches(' ').len();
            out.truncate(trimmed);
            out.push('\n');
        }
    }
    out
}

/// Replays `script` and returns the final screen as text.
pub fn replay(app: &mut App, hl: &Highlighter, script: &str, width: u16, height: u16) -> String {
    update(app, Action::Resize(width, height));
    play(app, script);
    buffer_text(&render(app, hl, width, height))
}
