//! The interactive terminal: raw mode, alternate screen and mouse capture behind a guard
//! that restores the terminal on every way out (return, error, panic), and the event loop.
//!
//! Ctrl-C arrives as a key in raw mode (no signal), so quitting with it goes through the
//! same restore path as `q`. SIGTERM, SIGHUP and SIGINT (from `kill`, a closed terminal
//! window) only raise a flag (`signal-hook`'s safe flag API) that the loop checks at least
//! every 250 ms: the loop then ends the way `q` ends it, so the guard restores the
//! terminal.

use std::io::{stdout, Stdout};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant, SystemTime};

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::Terminal;

use super::action::{Action, Cmd};
use super::app::App;
use super::gpu::Gpu;
use super::highlight::Highlighter;
use super::input::event_action;
use super::update::update;
use super::views;
use super::worker::Worker;
use super::TuiError;

/// While busy the screen is redrawn at least this often (spinner, progress).
pub const BUSY_FRAME: Duration = Duration::from_millis(100);
/// How often `--watch` looks at the file's modification time.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);

/// Puts the terminal back: raw mode off, main screen, mouse released, cursor shown. Safe
/// to call more than once and when setup was only half done.
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        cursor::Show
    );
}

/// Owns the terminal modes; dropping it restores the terminal.
pub struct Guard {
    _private: (),
}

impl Guard {
    /// Enters raw mode, the alternate screen and mouse capture; on failure whatever was
    /// switched on is switched off again.
    pub fn enter() -> std::io::Result<Self> {
        install_panic_hook();
        let g = Guard { _private: () };
        enable_raw_mode()?;
        execute!(stdout(), EnterAlternateScreen, EnableMouseCapture)?;
        Ok(g)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Restores the terminal before the default panic message is printed, so the message is
/// readable and the shell is usable after a crash.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
        }));
    });
}

fn mtime(p: &PathBuf) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

/// The shell's side of the loop: hands jobs to the worker and remembers a quit.
struct Shell {
    worker: Worker,
    quit: bool,
}

impl Shell {
    /// Applies `action` and performs the commands it returns. A job the worker thread can
    /// no longer take (it panicked) comes back as [`Action::WorkerGone`], so the state
    /// says so instead of spinning.
    fn apply(&mut self, app: &mut App, action: Action) {
        let cmds = update(app, action);
        self.perform(app, cmds);
    }

    /// Performs `cmds` (see [`Shell::apply`]).
    fn perform(&mut self, app: &mut App, mut cmds: Vec<Cmd>) {
        while !cmds.is_empty() {
            let mut gone = false;
            for cmd in std::mem::take(&mut cmds) {
                match cmd {
                    Cmd::Quit => self.quit = true,
                    Cmd::Job(job) => gone |= !self.worker.submit(job),
                }
            }
            if gone {
                cmds = update(app, Action::WorkerGone);
            }
        }
    }
}

/// Runs the event loop until the user quits: `first` are the commands setup returned (open,
/// probe), `gpu` does the live work on the worker thread.
pub fn run(
    app: App,
    hl: Highlighter,
    first: Vec<Cmd>,
    gpu: Box<dyn Gpu>,
    watch: bool,
) -> Result<(), TuiError> {
    // Registered before the terminal changes, so a signal at any later point is seen.
    let signalled = Arc::new(AtomicBool::new(false));
    let mut sig_ids = Vec::new();
    for sig in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
    ] {
        sig_ids.push(signal_hook::flag::register(sig, Arc::clone(&signalled))?);
    }
    let result = event_loop(app, hl, first, gpu, watch, &signalled);
    // Back to the default actions once the terminal is restored.
    for id in sig_ids {
        signal_hook::low_level::unregister(id);
    }
    result
}

fn event_loop(
    mut app: App,
    hl: Highlighter,
    first: Vec<Cmd>,
    gpu: Box<dyn Gpu>,
    watch: bool,
    signalled: &AtomicBool,
) -> Result<(), TuiError> {
    let guard = Guard::enter()?;
    let mut terminal: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(stdout()))?;
    terminal.clear()?;
    let size = terminal.size()?;
    let mut shell = Shell {
        worker: Worker::spawn(gpu),
        quit: false,
    };
    shell.apply(&mut app, Action::Resize(size.width, size.height));
    shell.perform(&mut app, first);
    let mut dirty = true;
    let mut last_draw = Instant::now();
    let mut last_tick = Instant::now();
    let mut watched: Option<(PathBuf, Option<SystemTime>)> = None;
    let mut last_watch = Instant::now();
    loop {
        if dirty {
            terminal.draw(|f| views::draw(f, &app, &hl))?;
            dirty = false;
            last_draw = Instant::now();
        }
        if shell.quit || signalled.load(Ordering::Relaxed) {
            break;
        }
        // Ticks drive the spinner and expire the status message.
        let ticking = app.jobs.busy.is_some() || app.screen.message.is_some();
        let timeout = if ticking {
            BUSY_FRAME.saturating_sub(last_draw.elapsed())
        } else {
            Duration::from_millis(250)
        };
        if event::poll(timeout)? {
            // Drain everything that is already queued before the next frame, so fast key
            // repeat or a wheel burst does not lag behind the screen.
            loop {
                let ev = event::read()?;
                if let Some(a) = event_action(&app, &ev) {
                    shell.apply(&mut app, a);
                    dirty = true;
                }
                if shell.quit || !event::poll(Duration::ZERO)? {
                    break;
                }
            }
        }
        while let Ok(r) = shell.worker.replies.try_recv() {
            shell.apply(&mut app, Action::Worker(r));
            dirty = true;
        }
        if ticking && last_tick.elapsed() >= BUSY_FRAME {
            shell.apply(&mut app, Action::Tick);
            last_tick = Instant::now();
            dirty = true;
        }
        if watch && last_watch.elapsed() >= WATCH_EVERY {
            last_watch = Instant::now();
            let cur = app.programs.current_path().cloned();
            match (cur, &mut watched) {
                (Some(p), Some((wp, t))) if *wp == p => {
                    let now = mtime(&p);
                    if now != *t {
                        *t = now;
                        shell.apply(&mut app, Action::FileChanged);
                        dirty = true;
                    }
                }
                (Some(p), w) => *w = Some((p.clone(), mtime(&p))),
                (None, w) => *w = None,
            }
        }
    }
    drop(terminal);
    drop(guard);
    Ok(())
}
