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

/// A one-line text prompt with a cursor. A pre-filled value starts selected: the first
/// typed character replaces it (Backspace or Ctrl-U clears it), a cursor key keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// What it asks for.
    pub kind: PromptKind,
    /// The text so far.
    pub text: String,
    /// Cursor position, in characters from the start.
    pub cursor: usize,
    /// The whole text is selected (the pre-filled value, until the first key).
    pub selected: bool,
}

impl Prompt {
    /// A prompt showing `text` (selected when not empty) with the cursor at its end.
    pub fn new(kind: PromptKind, text: String) -> Self {
        Prompt {
            kind,
            cursor: text.chars().count(),
            selected: !text.is_empty(),
            text,
        }
    }

    /// Byte offset of character `i`.
    fn byte(&self, i: usize) -> usize {
        self.text
            .char_indices()
            .nth(i)
            .map_or(self.text.len(), |(b, _)| b)
    }

    /// Drops the selected text, if any.
    fn take_selection(&mut self) -> bool {
        if self.selected {
            self.selected = false;
            self.text.clear();
            self.cursor = 0;
            return true;
        }
        false
    }

    /// Removes characters `from..to` and puts the cursor at `from`.
    fn remove(&mut self, from: usize, to: usize) {
        let (a, b) = (self.byte(from), self.byte(to));
        self.text.replace_range(a..b, "");
        self.cursor = from;
    }

    /// Types `c` at the cursor (replacing a selection).
    pub fn insert(&mut self, c: char) {
        self.take_selection();
        let at = self.byte(self.cursor);
        self.text.insert(at, c);
        self.cursor += 1;
    }

    /// Applies one editing key.
    pub fn edit(&mut self, e: Edit) {
        let len = self.text.chars().count();
        match e {
            Edit::Backspace | Edit::KillToStart | Edit::KillWord if self.take_selection() => {}
            Edit::Backspace if self.cursor > 0 => self.remove(self.cursor - 1, self.cursor),
            Edit::Delete if self.selected => {
                self.take_selection();
            }
            Edit::Delete if self.cursor < len => self.remove(self.cursor, self.cursor + 1),
            Edit::KillToStart => self.remove(0, self.cursor),
            Edit::KillToEnd => {
                self.selected = false;
                self.remove(self.cursor, len)
            }
            Edit::KillWord => {
                // Back over separators, then over the word: `a/b/c` loses `c`, then `b/`.
                let chars: Vec<char> = self.text.chars().collect();
                let sep = |c: char| c.is_whitespace() || matches!(c, '/' | ',' | '.' | '-' | '_');
                let mut i = self.cursor;
                while i > 0 && sep(chars[i - 1]) {
                    i -= 1;
                }
                while i > 0 && !sep(chars[i - 1]) {
                    i -= 1;
                }
                self.remove(i, self.cursor);
            }
            Edit::Left => {
                self.selected = false;
                self.cursor = self.cursor.saturating_sub(1);
            }
            Edit::Right => {
                self.selected = false;
                self.cursor = (self.cursor + 1).min(len);
            }
            Edit::Home => {
                self.selected = false;
                self.cursor = 0;
            }
            Edit::End => {
                self.selected = false;
                self.cursor = len;
            }
            Edit::Backspace | Edit::Delete => {}
        }
    }
}

/// An editing key in a prompt (readline's basics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// Delete the character before the cursor (Backspace).
    Backspace,
    /// Delete the character under the cursor (Delete).
    Delete,
    /// Delete from the start to the cursor (Ctrl-U).
    KillToStart,
    /// Delete from the cursor to the end (Ctrl-K).
    KillToEnd,
    /// Delete the word before the cursor (Ctrl-W).
    KillWord,
    /// Cursor one left.
    Left,
    /// Cursor one right.
    Right,
    /// Cursor to the start (Home, Ctrl-A).
    Home,
    /// Cursor to the end (End, Ctrl-E).
    End,
}

/// A modal overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// Help, scrolled by this many lines.
    Help(usize),
    /// A one-line text prompt.
    Prompt(Prompt),
    /// Asks whether to replace this existing file with an export (`y` replaces, any other
    /// key keeps it).
    ConfirmOverwrite(std::path::PathBuf),
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
    /// The user answered the overwrite question: replace the file (true) or keep it.
    Overwrite(std::path::PathBuf, bool),
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
        self.open = Some(Overlay::Prompt(Prompt::new(kind, text)));
    }

    /// True while a prompt (or the overwrite question) takes the keys as text.
    pub fn prompting(&self) -> bool {
        matches!(
            self.open,
            Some(Overlay::Prompt(..) | Overlay::ConfirmOverwrite(_))
        )
    }

    /// Applies text input (`Input`, `Backspace`) and, through its command table, the
    /// commands an open overlay takes; `help_max` is the help screen's last scroll offset.
    pub fn update(&mut self, action: &Action, help_max: usize) -> Handled {
        if let Some(Overlay::ConfirmOverwrite(path)) = &self.open {
            // Only an explicit `y` replaces; Enter, Esc and any other key keep the file
            // (Ctrl-C still quits).
            let path = path.clone();
            return match action {
                Action::Command(Command::Quit) => Handled::Done(vec![Cmd::Quit]),
                Action::Input(c) => {
                    self.open = None;
                    Handled::Overwrite(path, matches!(c, 'y' | 'Y'))
                }
                Action::Command(_) | Action::Backspace | Action::Edit(_) => {
                    self.open = None;
                    Handled::Overwrite(path, false)
                }
                _ => Handled::Pass,
            };
        }
        match action {
            Action::Input(ch) => {
                if let Some(Overlay::Prompt(p)) = &mut self.open {
                    p.insert(*ch);
                }
                Handled::Done(Vec::new())
            }
            Action::Backspace => {
                if let Some(Overlay::Prompt(p)) = &mut self.open {
                    p.edit(Edit::Backspace);
                }
                Handled::Done(Vec::new())
            }
            Action::Edit(e) => {
                if let Some(Overlay::Prompt(p)) = &mut self.open {
                    p.edit(*e);
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
                Some(Overlay::Prompt(p)) => Handled::Submit(p.kind, p.text.trim().to_string()),
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
            // Answered in `update` before commands get here.
            (Some(Overlay::ConfirmOverwrite(_)), _) => done,
            (None, _) => Handled::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(p: &mut Prompt, s: &str) {
        for c in s.chars() {
            p.insert(c);
        }
    }

    #[test]
    fn typing_replaces_the_prefilled_value() {
        let mut p = Prompt::new(PromptKind::Workgroup, "256,1,1".into());
        typed(&mut p, "32,1,1");
        assert_eq!(p.text, "32,1,1");
        // A cursor key keeps the value and edits it in place.
        let mut p = Prompt::new(PromptKind::Workgroup, "256,1,1".into());
        p.edit(Edit::Home);
        p.edit(Edit::Delete);
        typed(&mut p, "1");
        assert_eq!(p.text, "156,1,1");
        p.edit(Edit::End);
        p.edit(Edit::Left);
        p.edit(Edit::Backspace);
        assert_eq!(p.text, "156,11");
        // Backspace on the selection clears it all.
        let mut p = Prompt::new(PromptKind::ExportPath, "/tmp/x.json".into());
        p.edit(Edit::Backspace);
        assert_eq!((p.text.as_str(), p.cursor), ("", 0));
    }

    #[test]
    fn readline_kills() {
        let mut p = Prompt::new(PromptKind::Open, String::new());
        typed(&mut p, "dir/sub/file.json");
        p.edit(Edit::KillWord);
        assert_eq!(p.text, "dir/sub/file.");
        p.edit(Edit::KillWord);
        assert_eq!(p.text, "dir/sub/");
        p.edit(Edit::KillWord);
        assert_eq!(p.text, "dir/");
        p.edit(Edit::Left);
        p.edit(Edit::Left);
        p.edit(Edit::KillToEnd);
        assert_eq!(p.text, "di");
        typed(&mut p, "é!");
        p.edit(Edit::Left);
        p.edit(Edit::KillToStart);
        assert_eq!((p.text.as_str(), p.cursor), ("!", 0));
        let mut p = Prompt::new(PromptKind::Workgroup, "1,2,3".into());
        p.edit(Edit::KillToStart);
        assert_eq!(p.text, "");
    }
}
