//! Headless replay: `vyrescope tui FILE --keys "r t" --snapshot OUT.txt` runs the same
//! `update` and `draw` as the terminal against ratatui's `TestBackend`, with the commands
//! `update` returns performed inline after each key (worker jobs run to completion on the
//! given [`Gpu`], so the final screen is deterministic), and writes the final screen as
//! text.

use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;

use super::action::{Action, Cmd};
use super::app::App;
use super::background::execute;
use super::gpu::Gpu;
use super::highlight::Highlighter;
use super::input::{key_action, script_keys};
use super::update::update;
use super::views;

/// Performs `cmds` inline: every worker job runs to completion on `gpu` and its replies go
/// through `update`, until no job is left (jobs that replies queue run too). Returns true
/// when a command asked to quit.
pub fn perform(app: &mut App, gpu: &mut dyn Gpu, cmds: Vec<Cmd>) -> bool {
    let mut quit = false;
    let mut queue = cmds;
    while !queue.is_empty() {
        for cmd in std::mem::take(&mut queue) {
            match cmd {
                Cmd::Quit => quit = true,
                Cmd::Export(job) => {
                    let done = super::export::write(job);
                    queue.extend(update(app, Action::Exported(done)));
                }
                Cmd::Job(job) => {
                    let mut replies = Vec::new();
                    execute(job, gpu, &mut |r| replies.push(r));
                    for r in replies {
                        queue.extend(update(app, Action::Worker(r)));
                    }
                }
            }
        }
    }
    quit
}

/// Applies `action` and performs what it returns (see [`perform`]); true when it quits.
pub fn apply(app: &mut App, gpu: &mut dyn Gpu, action: Action) -> bool {
    let cmds = update(app, action);
    perform(app, gpu, cmds)
}

/// Applies a `--keys` script; stops early when a key quits.
pub fn play(app: &mut App, gpu: &mut dyn Gpu, script: &str) {
    for key in script_keys(script) {
        if let Some(a) = key_action(app, key) {
            if apply(app, gpu, a) {
                break;
            }
        }
    }
}

/// Draws the screen at `width` x `height` and returns the buffer.
pub fn render(app: &mut App, hl: &Highlighter, width: u16, height: u16) -> Buffer {
    if app.screen.size != (width, height) {
        // A resize only moves cursors and offsets: it returns no commands.
        let _ = update(app, Action::Resize(width, height));
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

/// Performs the first commands (`start`'s: open, probe), replays `script` and returns the
/// final screen as text.
pub fn replay(
    app: &mut App,
    hl: &Highlighter,
    gpu: &mut dyn Gpu,
    first: Vec<Cmd>,
    script: &str,
    (width, height): (u16, u16),
) -> String {
    let mut cmds = update(app, Action::Resize(width, height));
    cmds.extend(first);
    if !perform(app, gpu, cmds) {
        play(app, gpu, script);
    }
    buffer_text(&render(app, hl, width, height))
}
