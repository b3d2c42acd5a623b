//! Key bindings as data: defaults, user overrides (per command), lookup, and the text the
//! help overlay and status bar show. Both read this table, so help never drifts from the
//! bindings.

mod key;
mod table;

pub use key::{KeyParseError, KeySpec};
pub use table::Group;

use table::TABLE;

use super::action::Command;

/// The active bindings: for every command, its keys (defaults, then user overrides).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyMap {
    /// Commands in help order with their keys.
    pub bindings: Vec<(Command, Vec<KeySpec>)>,
}

impl Default for KeyMap {
    fn default() -> Self {
        let bindings = TABLE
            .iter()
            .filter(|row| row.0.available())
            .map(|(cmd, _, _, _, keys, _)| {
                // The default table is written by hand and checked by a unit test, so a
                // bad entry there is a programming error caught in CI, not user input.
                (
                    *cmd,
                    keys.iter().filter_map(|k| KeySpec::parse(k).ok()).collect(),
                )
            })
            .collect();
        KeyMap { bindings }
    }
}

impl KeyMap {
    /// The command bound to `key`, if any. Later bindings (user overrides) do not shadow
    /// others: an override replaces a command's whole key list.
    pub fn lookup(&self, key: KeySpec) -> Option<Command> {
        self.bindings
            .iter()
            .find(|(_, keys)| keys.contains(&key))
            .map(|(c, _)| *c)
    }

    /// Keys of `cmd`, as shown to the user (`q/C-c`).
    pub fn keys_of(&self, cmd: Command) -> String {
        self.bindings
            .iter()
            .find(|(c, _)| *c == cmd)
            .map(|(_, ks)| {
                ks.iter()
                    .map(|k| k.to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .unwrap_or_default()
    }

    /// The first key of `cmd` (the one hints show), if it has any.
    pub fn first_key(&self, cmd: Command) -> Option<KeySpec> {
        self.bindings
            .iter()
            .find(|(c, _)| *c == cmd)
            .and_then(|(_, ks)| ks.first().copied())
    }

    /// The first key of `cmd` as help text shows it (`-` when it has none).
    pub fn key_text(&self, cmd: Command) -> String {
        self.first_key(cmd)
            .map_or_else(|| "-".to_string(), |k| k.to_string())
    }

    /// Replaces `cmd`'s keys; keys it takes are removed from other commands so a key means
    /// one thing.
    pub fn rebind(&mut self, cmd: Command, keys: Vec<KeySpec>) {
        for (c, ks) in &mut self.bindings {
            if *c != cmd {
                ks.retain(|k| !keys.contains(k));
            }
        }
        if let Some((_, ks)) = self.bindings.iter_mut().find(|(c, _)| *c == cmd) {
            *ks = keys;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    #[test]
    fn default_table_parses_and_has_no_duplicate_keys() {
        for (cmd, name, _, _, keys, _) in TABLE {
            assert_eq!(Command::from_name(name), Some(*cmd));
            for k in *keys {
                assert!(KeySpec::parse(k).is_ok(), "{k}");
            }
        }
        let km = KeyMap::default();
        let mut seen = std::collections::HashSet::new();
        for (_, ks) in &km.bindings {
            for k in ks {
                assert!(seen.insert(*k), "key {k} bound twice");
            }
        }
    }

    #[test]
    fn parse_and_display_round_trip() {
        for s in [
            "q",
            "C-c",
            "S-Tab",
            "PgDn",
            "F1",
            "G",
            "?",
            "Space",
            "M-x",
            "S-Left",
            "C-S-Right",
        ] {
            let k = KeySpec::parse(s).unwrap();
            assert_eq!(KeySpec::parse(&k.to_string()).unwrap(), k, "{s}");
        }
        assert!(KeySpec::parse("hyper-q").is_err());
        assert!(KeySpec::parse("f13").is_err());
        assert!(KeySpec::parse("shift-x").is_err());
        assert_eq!(
            KeySpec::parse("shift-left").unwrap(),
            KeySpec {
                code: KeyCode::Left,
                mods: KeyModifiers::SHIFT
            }
        );
        assert_eq!(KeySpec::parse("shift-tab").unwrap().code, KeyCode::BackTab);
    }

    #[test]
    fn events_normalize_shift() {
        let ev = KeyEvent::new(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(
            KeyMap::default().lookup(KeySpec::from_event(&ev)),
            Some(Command::End)
        );
        let ev = KeyEvent::new(KeyCode::Tab, KeyModifiers::SHIFT);
        assert_eq!(
            KeyMap::default().lookup(KeySpec::from_event(&ev)),
            Some(Command::FocusPrev)
        );
        let ev = KeyEvent::new(KeyCode::Right, KeyModifiers::SHIFT);
        assert_eq!(
            KeyMap::default().lookup(KeySpec::from_event(&ev)),
            Some(Command::ScrollRight)
        );
    }

    #[test]
    fn rebind_moves_a_key() {
        let mut km = KeyMap::default();
        km.rebind(Command::Quit, vec![KeySpec::ch('x')]);
        assert_eq!(km.lookup(KeySpec::ch('x')), Some(Command::Quit));
        assert_eq!(km.lookup(KeySpec::ch('q')), None);
    }
}
