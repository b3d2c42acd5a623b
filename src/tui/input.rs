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
}
