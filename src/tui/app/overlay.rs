//! The overlay sub-state: the help screen and the one-line prompts (search, workgroup, open,
//! export path), and the text typed into them.

use crate::tui::action::{Action, Cmd, Command};

/// What a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// Search text for the focused pane.
    Search,
    /// Workgroup `X,Y,Z`.
    Workgroup,
    /// A program file or directory to open.
    Open,
    /// Path to export to.
    ExportPath,
}

impl PromptKind {
    /// Prompt label.
    pub fn label(self) -> &'static str {
        match self {
            PromptKind::Search => "search",
            PromptKind::Workgroup => "workgroup X,Y,Z",
            PromptKind::Open => "open file",
            PromptKind::ExportPath => "export to",
        }
    }
}

/// A modal overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// Help, scrolled by this many lines.
    Help(usize),
    /// A one-line text prompt.
    Prompt(PromptKind, String),
}

/// What the overlay did with a command.
#[derive(Debug, Clone)]
pub enum Handled {
    /// Not open, or it lets the command through to the panes.
    Pass,
    /// Consumed (with these commands for the shell).
    Done(Vec<Cmd>),
    /// A prompt was submitted with this text (trimmed): the caller acts on it.
    Submit(PromptKind, String),
}

/// The open overlay, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overlays {
    /// Open overlay.
    pub open: Option<Overlay>,
}

impl Overlays {
    /// Opens a prompt with `text` pre-filled.
    pub fn prompt(&mut self, kind: PromptKind, text: String) {
        self.open = Some(Overlay::Prompt(kind, text));
    }

    /// True while a prompt takes the keys.
    pub fn prompting(&self) -> bool {
        matches!(self.open, Some(Overlay::Prompt(..)))
    }

    /// Applies text input (`Input`, `Backspace`) and, through its command table, the
    /// commands an open overlay takes; `help_max` is the help screen's last scroll offset.
    pub fn update(&mut self, action: &Action, help_max: usize) -> Handled {
        match action {
            Action::Input(ch) => {
                if let Some(Overlay::Prompt(_, text)) = &mut self.open {
                    text.push(*ch);
                }
                Handled::Done(Vec::new())
            }
            Action::Backspace => {
                if let Some(Overlay::Prompt(_, text)) = &mut self.open {
                    text.pop();
                }
                Handled::Done(Vec::new())
            }
            Action::Command(c) => self.command(*c, help_max),
            _ => Handled::Pass,
        }
    }

    /// An open prompt takes Enter/Escape (and Ctrl-C quits); help scrolls with navigation
    /// and closes on anything else (quit still quits).
    fn command(&mut self, c: Command, help_max: usize) -> Handled {
        let done = Handled::Done(Vec::new());
        match (&self.open, c) {
            (Some(Overlay::Prompt(..)), Command::Enter) => match self.open.take() {
                Some(Overlay::Prompt(kind, text)) => Handled::Submit(kind, text.trim().to_string()),
                _ => done,
            },
            (Some(Overlay::Prompt(..)), Command::Escape) => {
                self.open = None;
                done
            }
            (Some(Overlay::Prompt(..)), Command::Quit) => Handled::Done(vec![Cmd::Quit]),
            (Some(Overlay::Prompt(..)), _) => done,
            (Some(Overlay::Help(s)), Command::Down | Command::PageDown) => {
                // Stop at the last page, so the way back up is as long as the way down.
                let s = (s + if c == Command::Down { 1 } else { 10 }).min(help_max);
                self.open = Some(Overlay::Help(s));
                done
            }
            (Some(Overlay::Help(s)), Command::Up | Command::PageUp) => {
                let step = if c == Command::Up { 1 } else { 10 };
                self.open = Some(Overlay::Help(s.saturating_sub(step)));
                done
            }
            (Some(Overlay::Help(_)), Command::Quit) => Handled::Pass,
            (Some(Overlay::Help(_)), _) => {
                self.open = None;
                done
            }
            (None, _) => Handled::Pass,
        }
    }
}
