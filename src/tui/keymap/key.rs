//! One key chord: parsing the names the config file and `--keys` use, normalizing terminal
//! events, and the short form help and hints show.

use std::fmt;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// One key chord, e.g. `ctrl-c`, `shift-tab`, `G`, `pgdn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeySpec {
    /// The key.
    pub code: KeyCode,
    /// Modifiers other than shift on character keys (the character already says it).
    pub mods: KeyModifiers,
}

/// Why a key name in the config file could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown key `{0}`\n  Fix: use a character (`q`, `G`, `?`), a name (tab, backtab, enter, esc, up, down, left, right, pgup, pgdn, home, end, space, backspace, f1..f12) or a ctrl-/alt- prefix (shift- on named keys: shift-left)")]
pub struct KeyParseError(pub String);

impl KeySpec {
    /// A plain character key.
    pub const fn ch(c: char) -> Self {
        KeySpec {
            code: KeyCode::Char(c),
            mods: KeyModifiers::NONE,
        }
    }

    /// A named key without modifiers.
    pub const fn key(code: KeyCode) -> Self {
        KeySpec {
            code,
            mods: KeyModifiers::NONE,
        }
    }

    /// Ctrl + character.
    pub const fn ctrl(c: char) -> Self {
        KeySpec {
            code: KeyCode::Char(c),
            mods: KeyModifiers::CONTROL,
        }
    }

    /// Normalizes a terminal key event: shift is dropped for characters (the character is
    /// already upper-case or `?`), and shift-tab becomes backtab.
    pub fn from_event(ev: &KeyEvent) -> Self {
        let mut mods =
            ev.modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        let code = match ev.code {
            KeyCode::Tab if mods.contains(KeyModifiers::SHIFT) => KeyCode::BackTab,
            c => c,
        };
        if matches!(code, KeyCode::Char(_) | KeyCode::BackTab) {
            mods.remove(KeyModifiers::SHIFT);
        }
        KeySpec { code, mods }
    }

    /// Parses a key name as written in the config file and in `--keys`.
    pub fn parse(s: &str) -> Result<Self, KeyParseError> {
        let err = || KeyParseError(s.to_string());
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            let lower = rest.to_ascii_lowercase();
            if rest.chars().count() > 2 && (lower.starts_with("ctrl-") || lower.starts_with("c-")) {
                mods |= KeyModifiers::CONTROL;
                rest = &rest[rest.find('-').map_or(0, |i| i + 1)..];
            } else if rest.chars().count() > 2
                && (lower.starts_with("alt-") || lower.starts_with("m-"))
            {
                mods |= KeyModifiers::ALT;
                rest = &rest[rest.find('-').map_or(0, |i| i + 1)..];
            } else if rest.chars().count() > 3
                && (lower.starts_with("shift-") || lower.starts_with("s-"))
                && !matches!(lower.as_str(), "shift-tab" | "s-tab")
            {
                // Shift only means something on named keys (a character is already
                // upper-case); shift-tab stays the backtab name.
                mods |= KeyModifiers::SHIFT;
                rest = &rest[rest.find('-').map_or(0, |i| i + 1)..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        if mods.contains(KeyModifiers::SHIFT) && rest.chars().count() == 1 {
            return Err(err());
        }
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(if mods.contains(KeyModifiers::CONTROL) {
                c.to_ascii_lowercase()
            } else {
                c
            }),
            _ => match rest.to_ascii_lowercase().as_str() {
                "tab" => KeyCode::Tab,
                "backtab" | "shift-tab" | "s-tab" => KeyCode::BackTab,
                "enter" | "return" | "cr" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "pgup" | "pageup" => KeyCode::PageUp,
                "pgdn" | "pgdown" | "pagedown" => KeyCode::PageDown,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "space" => KeyCode::Char(' '),
                "backspace" | "bs" => KeyCode::Backspace,
                "delete" | "del" => KeyCode::Delete,
                f if f.starts_with('f') => {
                    let n: u8 = f[1..].parse().map_err(|_| err())?;
                    if !(1..=12).contains(&n) {
                        return Err(err());
                    }
                    KeyCode::F(n)
                }
                _ => return Err(err()),
            },
        };
        Ok(KeySpec { code, mods })
    }
}

impl fmt::Display for KeySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.mods.contains(KeyModifiers::CONTROL) {
            f.write_str("C-")?;
        }
        if self.mods.contains(KeyModifiers::ALT) {
            f.write_str("M-")?;
        }
        if self.mods.contains(KeyModifiers::SHIFT) {
            f.write_str("S-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("S-Tab"),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Up => f.write_str("Up"),
            KeyCode::Down => f.write_str("Down"),
            KeyCode::Left => f.write_str("Left"),
            KeyCode::Right => f.write_str("Right"),
            KeyCode::PageUp => f.write_str("PgUp"),
            KeyCode::PageDown => f.write_str("PgDn"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Del"),
            KeyCode::F(n) => write!(f, "F{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}
