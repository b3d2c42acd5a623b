//! The screen sub-state: which pane has focus, zoom/expand, the terminal size, the status
//! message and the spinner's clock.

use super::{Focus, Level};
use crate::tui::action::{Action, Cmd, Command};

/// Pane arrangement and status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    /// Focused pane.
    pub focus: Focus,
    /// Focused pane maximized.
    pub zoom: bool,
    /// Detail panel expanded over the code panes.
    pub expand: bool,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// Last status message.
    pub message: Option<(Level, String)>,
    /// Ticks seen (spinner frame).
    pub ticks: u64,
    /// Ticks since the status message was set (it expires after [`MESSAGE_TICKS`]).
    pub message_age: u64,
}

/// Ticks a status message stays (the terminal ticks every 100 ms while one shows: 5 s).
pub const MESSAGE_TICKS: u64 = 50;

impl Default for Screen {
    fn default() -> Self {
        Screen {
            focus: Focus::Ir,
            zoom: false,
            expand: false,
            size: (80, 24),
            message: None,
            ticks: 0,
            message_age: 0,
        }
    }
}

impl Screen {
    /// Applies what concerns the screen alone: focus cycling, zoom/expand, Escape's reset,
    /// the terminal size, the spinner tick, a dead worker's message. Needs no command.
    pub fn update(&mut self, action: &Action) -> Vec<Cmd> {
        match action {
            Action::Command(Command::FocusNext) => self.cycle_focus(true),
            Action::Command(Command::FocusPrev) => self.cycle_focus(false),
            Action::Command(Command::Zoom) => self.toggle_zoom(),
            Action::Command(Command::Expand) => self.toggle_expand(),
            Action::Command(Command::Escape) => {
                self.message = None;
                self.restore();
            }
            Action::Resize(w, h) => self.size = (*w, *h),
            Action::Tick => {
                self.ticks = self.ticks.wrapping_add(1);
                self.message_age += 1;
                if self.message_age >= MESSAGE_TICKS {
                    self.message = None;
                }
            }
            Action::WorkerGone => self.error("worker thread stopped; restart the inspector"),
            _ => {}
        }
        Vec::new()
    }

    /// Shows an information message.
    pub fn info(&mut self, msg: impl Into<String>) {
        self.message = Some((Level::Info, msg.into()));
        self.message_age = 0;
    }

    /// Shows an error message.
    pub fn error(&mut self, msg: impl Into<String>) {
        self.message = Some((Level::Error, msg.into()));
        self.message_age = 0;
    }

    /// Moves the focus one pane along the Tab order (wrapping).
    pub fn cycle_focus(&mut self, forward: bool) {
        let n = Focus::ALL.len();
        let i = Focus::ALL
            .iter()
            .position(|f| *f == self.focus)
            .unwrap_or(0);
        self.focus = Focus::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }];
    }

    /// Maximizes the focused pane (toggle).
    pub fn toggle_zoom(&mut self) {
        self.zoom = !self.zoom;
        self.expand = false;
    }

    /// Expands the detail panel over the panes (toggle); expanding focuses it.
    pub fn toggle_expand(&mut self) {
        self.expand = !self.expand;
        self.zoom = false;
        if self.expand {
            self.focus = Focus::Detail;
        }
    }

    /// Back to the normal arrangement (no zoom, no expand).
    pub fn restore(&mut self) {
        self.zoom = false;
        self.expand = false;
    }
}
