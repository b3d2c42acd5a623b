//! The interactive terminal: raw mode, alternate screen and mouse capture behind a guard
//! that restores the terminal on every way out (return, error, panic), and the event loop.
//!
//! Ctrl-C arrives as a key in raw mode (no signal), so quitting with it goes through the
//! same restore path as `q`. SIGTERM, SIGHUP, SIGINT and SIGQUIT (from `kill`, a closed
//! terminal window) and a closed terminal (its input hung up or at end of file) end the loop
//! the way `q` does, so the guard restores the terminal. The loop waits on the terminal
//! itself (poll, then asks how many bytes wait) before crossterm reads: crossterm's reader
//! loops forever on a read that returns 0 or an error, so it is never entered on a dead
//! terminal. A watchdog thread enforces the quarter second: when a signal came or the
//! terminal closed and the loop has not ended 250 ms later (busy in a long computation),
//! it restores what it can and exits the process (the GPU worker child dies with it, see
//! `util::os::die_with_parent`).

use std::io::{stdout, IsTerminal, Stdout, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
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
use super::background::Background;
use super::gpu::Gpu;
use super::highlight::Highlighter;
use super::input::event_action;
use super::update::update;
use super::views;
use super::TuiError;
use crate::util::os::{terminal_input, InputState};

/// Time the loop gets to end by itself after a signal or a closed terminal before the
/// watchdog ends the process.
pub const END_WITHIN: Duration = Duration::from_millis(250);
/// Longest wait for input while idle.
const IDLE_WAIT: Duration = Duration::from_millis(100);
/// How often the watchdog looks for a signal or a closed terminal.
const WATCH_TICK: Duration = Duration::from_millis(25);

/// While busy the screen is redrawn at least this often (spinner, progress).
pub const BUSY_FRAME: Duration = Duration::from_millis(100);
/// How often `--watch` looks at the file's modification time.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);

/// Puts the terminal back: raw mode off, main screen, mouse released, cursor shown. Safe
/// to call more than once and when setup was only half done.
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = restore_screen(&mut stdout());
}

fn restore_screen(w: &mut impl Write) -> std::io::Result<()> {
    execute!(w, DisableMouseCapture, LeaveAlternateScreen, cursor::Show)
}

/// The terminal crossterm reads keys from: standard input when it is a terminal, else
/// `/dev/tty` (crossterm's own rule), kept open so the loop can watch it.
enum TtyInput {
    Stdin(std::io::Stdin),
    Tty(std::fs::File),
    None,
}

impl TtyInput {
    fn open() -> Self {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return TtyInput::Stdin(stdin);
        }
        std::fs::File::open("/dev/tty").map_or(TtyInput::None, TtyInput::Tty)
    }

    fn fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            TtyInput::Stdin(s) => Some(s.as_fd()),
            TtyInput::Tty(f) => Some(f.as_fd()),
            TtyInput::None => None,
        }
    }

    /// Waits up to `timeout` for input. Without a descriptor to watch, crossterm's own
    /// poll decides (it then has no terminal that could hang up under it).
    fn wait(&self, timeout: Duration) -> std::io::Result<InputState> {
        match self.fd() {
            Some(fd) => Ok(terminal_input(fd, timeout)),
            None => Ok(if event::poll(timeout)? {
                InputState::Ready
            } else {
                InputState::Idle
            }),
        }
    }
}

/// Why the loop must end without a key: a signal (its number) or a closed terminal (0).
struct EndFlag {
    flag: Arc<AtomicBool>,
    signal: Arc<AtomicI32>,
}

/// Watches for termination signals and a closed terminal; sets `end` and, when the loop
/// does not report its end on `done` within [`END_WITHIN`], restores the terminal as far as
/// it can without the (possibly held) stdout lock and exits the process.
fn spawn_watchdog(
    end: &EndFlag,
    tty: Option<std::os::fd::OwnedFd>,
) -> std::io::Result<(Sender<()>, signal_hook::iterator::Handle)> {
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGQUIT,
    ])?;
    let handle = signals.handle();
    let (done_tx, done_rx) = channel::<()>();
    let flag = Arc::clone(&end.flag);
    let signal = Arc::clone(&end.signal);
    std::thread::Builder::new()
        .name("vyrescope-watchdog".into())
        .spawn(move || loop {
            let sig = signals.pending().next();
            let closed = tty
                .as_ref()
                .is_some_and(|fd| terminal_input(fd.as_fd(), Duration::ZERO) == InputState::Closed);
            if sig.is_some() || closed {
                signal.store(sig.unwrap_or(0), Ordering::Relaxed);
                flag.store(true, Ordering::Relaxed);
                match done_rx.recv_timeout(END_WITHIN) {
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                    Err(RecvTimeoutError::Timeout) => {
                        let _ = disable_raw_mode();
                        if let Ok(mut t) = std::fs::OpenOptions::new().write(true).open("/dev/tty")
                        {
                            let _ = restore_screen(&mut t);
                        }
                        std::process::exit(128 + sig.unwrap_or(signal_hook::consts::SIGHUP));
                    }
                }
            }
            match done_rx.recv_timeout(WATCH_TICK) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {}
            }
        })?;
    Ok((done_tx, handle))
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
        // An abort (a failed allocation) runs neither the hook nor `Drop`.
        #[cfg(unix)]
        {
            use std::os::fd::AsFd;
            crate::util::os::restore_terminal_on_abort(std::io::stdout().as_fd());
        }
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
    worker: Background,
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
            let mut next = Vec::new();
            for cmd in std::mem::take(&mut cmds) {
                match cmd {
                    Cmd::Quit => self.quit = true,
                    Cmd::Job(job) => gone |= !self.worker.submit(job),
                    // A small write: done here, its outcome goes back through `update`.
                    Cmd::Export(job) => {
                        let done = super::export::write(job);
                        next.extend(update(app, Action::Exported(done)));
                    }
                }
            }
            if gone {
                next.extend(update(app, Action::WorkerGone));
            }
            cmds = next;
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
    let end = EndFlag {
        flag: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicI32::new(0)),
    };
    let input = TtyInput::open();
    let watched = input.fd().and_then(|fd| fd.try_clone_to_owned().ok());
    let (done, handle) = spawn_watchdog(&end, watched)?;
    let result = event_loop(app, hl, first, gpu, watch, &end.flag, &input);
    // The loop ended by itself: the watchdog stands down, and the signals get their
    // default actions back once the terminal is restored.
    let _ = done.send(());
    handle.close();
    result
}

fn event_loop(
    mut app: App,
    hl: Highlighter,
    first: Vec<Cmd>,
    gpu: Box<dyn Gpu>,
    watch: bool,
    signalled: &AtomicBool,
    input: &TtyInput,
) -> Result<(), TuiError> {
    let guard = Guard::enter()?;
    let mut terminal: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(stdout()))?;
    terminal.clear()?;
    let size = terminal.size()?;
    let mut shell = Shell {
        worker: Background::spawn(gpu),
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
            // Short enough that a signal's flag is seen well within END_WITHIN.
            IDLE_WAIT
        };
        match input.wait(timeout)? {
            // A closed terminal ends the inspector like a hang-up signal would.
            InputState::Closed => break,
            InputState::Idle => {}
            InputState::Ready => {
                // Drain everything that is already queued before the next frame, so fast
                // key repeat or a wheel burst does not lag behind the screen.
                while event::poll(Duration::ZERO)? {
                    let ev = event::read()?;
                    if let Some(a) = event_action(&app, &ev) {
                        shell.apply(&mut app, a);
                        dirty = true;
                    }
                    if shell.quit {
                        break;
                    }
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
