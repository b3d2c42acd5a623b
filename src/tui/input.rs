//! Terminal events and replayed keys -> [`Action`]s. Reads the state (is a prompt open?)
//! but never changes it.

use ratatui::crossterm::event::{
    Event, KeyCode, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};

use super::action::{Action, Command};
use super::app::{App, Edit};
use super::keymap::KeySpec;

/// The action for one key.
pub fn key_action(app: &App, key: KeySpec) -> Option<Action> {
    if app.overlay.prompting() {
        let ctrl = key.mods.contains(KeyModifiers::CONTROL);
        return match key.code {
            KeyCode::Char('c') if ctrl => Some(Action::Command(Command::Quit)),
            KeyCode::Char('u') if ctrl => Some(Action::Edit(Edit::KillToStart)),
            KeyCode::Char('w') if ctrl => Some(Action::Edit(Edit::KillWord)),
            KeyCode::Char('k') if ctrl => Some(Action::Edit(Edit::KillToEnd)),
            KeyCode::Char('a') if ctrl => Some(Action::Edit(Edit::Home)),
            KeyCode::Char('e') if ctrl => Some(Action::Edit(Edit::End)),
            KeyCode::Char(c) if !ctrl => Some(Action::Input(c)),
            KeyCode::Backspace => Some(Action::Backspace),
            KeyCode::Delete => Some(Action::Edit(Edit::Delete)),
            KeyCode::Left => Some(Action::Edit(Edit::Left)),
            KeyCode::Right => Some(Action::Edit(Edit::Right)),
            KeyCode::Home => Some(Action::Edit(Edit::Home)),
            KeyCode::End => Some(Action::Edit(Edit::End)),
            KeyCode::Enter => Some(Action::Command(Command::Enter)),
            KeyCode::Esc => Some(Action::Command(Command::Escape)),
            _ => None,
        };
    }
    app.keymap.lookup(key).map(Action::Command)
}

/// The action for one terminal event.
pub fn event_action(app: &App, ev: &Event) -> Option<Action> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => key_action(app, KeySpec::from_event(k)),
        Event::Mouse(m) => match m.kind {
            MouseEventKind::Down(MouseButton::Left) => Some(Action::Click(m.column, m.row)),
            // Shift + wheel scrolls sideways, as in most terminals' programs.
            MouseEventKind::ScrollUp if m.modifiers.contains(KeyModifiers::SHIFT) => {
                Some(Action::HWheel(m.column, m.row, -1))
            }
            MouseEventKind::ScrollDown if m.modifiers.contains(KeyModifiers::SHIFT) => {
                Some(Action::HWheel(m.column, m.row, 1))
            }
            MouseEventKind::ScrollUp => Some(Action::Wheel(m.column, m.row, -1)),
            MouseEventKind::ScrollDown => Some(Action::Wheel(m.column, m.row, 1)),
            MouseEventKind::ScrollLeft => Some(Action::HWheel(m.column, m.row, -1)),
            MouseEventKind::ScrollRight => Some(Action::HWheel(m.column, m.row, 1)),
            _ => None,
        },
        Event::Resize(w, h) => Some(Action::Resize(*w, *h)),
        _ => None,
    }
}

/// Splits a `--keys` script into keys: space-separated tokens, each a key name (`Tab`,
/// `C-c`, `PgDn`, `j`) or, when it is not one, text typed character by character
/// (`/ld.global Enter` searches).
pub fn script_keys(script: &str) -> Vec<KeySpec> {
    let mut out = Vec::new();
    for tok in script.split_whitespace() {
        match KeySpec::parse(tok) {
            Ok(k) => out.push(k),
            Err(_) => out.extend(tok.chars().map(KeySpec::ch)),
        }
    }
    out
}

/// Key names a `--keys` script may use (besides single characters and the `C-`, `M-`,
/// `S-` prefixes): the list a misspelt name is compared with.
pub const KEY_NAMES: &[&str] = &[
    "Tab",
    "S-Tab",
    "Enter",
    "Esc",
    "Up",
    "Down",
    "Left",
    "Right",
    "PgUp",
    "PgDn",
    "Home",
    "End",
    "Space",
    "Backspace",
    "Delete",
    "F1",
    "F2",
    "F3",
    "F4",
    "F5",
    "F6",
    "F7",
    "F8",
    "F9",
    "F10",
    "F11",
    "F12",
];

/// True when `tok` can only be meant as a key name: a capital letter followed by letters,
/// digits or `-` (`Tabb`, `PgDown`), or a modifier prefix (`C-`, `Ctrl-`, `M-`, `Alt-`, `S-`,
/// `Shift-`). Other tokens (`/ld.global`, `abc`) are text to type.
fn looks_like_key_name(tok: &str) -> bool {
    let mut chars = tok.chars();
    let capital = chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && tok.len() > 1
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-');
    let lower = tok.to_ascii_lowercase();
    let prefixed = ["c-", "ctrl-", "m-", "alt-", "s-", "shift-"]
        .iter()
        .any(|p| lower.starts_with(p) && lower.len() > p.len());
    capital || prefixed
}

/// Checks a `--keys` script before it is played: a token that looks like a key name but is
/// none (`Tabb`, `PgDown`, `C-xx`) is refused with the closest names, instead of being typed
/// letter by letter.
pub fn check_script(script: &str) -> Result<(), crate::util::Problem> {
    for tok in script.split_whitespace() {
        if KeySpec::parse(tok).is_err() && looks_like_key_name(tok) {
            let lower = tok.to_ascii_lowercase();
            let mut names: Vec<&str> = KEY_NAMES.to_vec();
            names.sort_by_key(|n| strsim::osa_distance(&lower, &n.to_ascii_lowercase()));
            return Err(crate::util::Problem::new(
                format!("--keys: `{}` is not a key name", crate::util::terminal_safe(tok)),
                format!(
                    "use one of {} (closest first), C-x / M-x for Ctrl / Alt with a key, or a single character; text to type must not start with a capital letter followed by letters",
                    names[..6].join(", ")
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_mix_names_and_text() {
        let k = script_keys("r  t /ld.g Enter C-c");
        assert_eq!(k[0], KeySpec::ch('r'));
        assert_eq!(k[1], KeySpec::ch('t'));
        assert_eq!(k[2], KeySpec::ch('/'));
        assert_eq!(k[3], KeySpec::ch('l'));
        assert_eq!(k.len(), 2 + 5 + 2);
        assert_eq!(k[7], KeySpec::key(KeyCode::Enter));
        assert_eq!(k[8], KeySpec::ctrl('c'));
    }

    #[test]
    fn misspelt_key_names_are_refused() {
        for bad in ["Tabb", "PgDonw", "Entr", "C-xx", "F13"] {
            let e = check_script(&format!("j {bad} k")).unwrap_err().to_string();
            assert!(e.contains(&format!("`{bad}` is not a key name")), "{e}");
        }
        let e = check_script("Tabb").unwrap_err().to_string();
        assert!(e.contains("Tab,"), "{e}");
        for good in [
            "Tab S-Tab PgDn PgDown C-c Esc j G /ld.global Enter",
            "- - +",
            "F5",
        ] {
            assert_eq!(check_script(good), Ok(()), "{good}");
        }
    }
}
