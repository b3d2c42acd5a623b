//! Key bindings as data: defaults, user overrides (per command), lookup, and the text the
//! help overlay and status bar show. Both read this table, so help never drifts from the
//! bindings.

use std::fmt;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Command;

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

/// Help section a command is listed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// Quit, help, focus, layout.
    General,
    /// Cursor and scrolling.
    Navigation,
    /// Search and correlation.
    Search,
    /// Workgroup, target, device.
    Tuning,
    /// GPU work, files, export.
    Actions,
}

impl Group {
    /// Section title.
    pub fn title(self) -> &'static str {
        match self {
            Group::General => "General",
            Group::Navigation => "Navigation",
            Group::Search => "Search and correlation",
            Group::Tuning => "Tuning (re-emits, re-maps, re-estimates at once)",
            Group::Actions => "Actions",
        }
    }
}

/// Every command with its config name, help text, group and default keys.
const TABLE: &[(Command, &str, &str, Group, &[&str])] = &[
    (
        Command::Quit,
        "quit",
        "quit",
        Group::General,
        &["q", "ctrl-c"],
    ),
    (
        Command::Help,
        "help",
        "help (this overlay)",
        Group::General,
        &["?", "f1"],
    ),
    (
        Command::FocusNext,
        "focus_next",
        "focus next pane",
        Group::General,
        &["tab"],
    ),
    (
        Command::FocusPrev,
        "focus_prev",
        "focus previous pane",
        Group::General,
        &["backtab"],
    ),
    (
        Command::SassPane,
        "sass",
        "SASS pane: cycle layout",
        Group::General,
        &["s"],
    ),
    (
        Command::VyreView,
        "vyre",
        "PTX pane: ours/vyre/diff",
        Group::General,
        &["v"],
    ),
    (
        Command::Zoom,
        "zoom",
        "maximize focused pane",
        Group::General,
        &["z"],
    ),
    (
        Command::Expand,
        "expand",
        "expand detail panel",
        Group::General,
        &["e"],
    ),
    (
        Command::NextTab,
        "next_tab",
        "next detail tab",
        Group::General,
        &[">"],
    ),
    (
        Command::PrevTab,
        "prev_tab",
        "previous detail tab",
        Group::General,
        &["<"],
    ),
    (
        Command::Tab(1),
        "tab1",
        "detail tab 1",
        Group::General,
        &["1"],
    ),
    (
        Command::Tab(2),
        "tab2",
        "detail tab 2",
        Group::General,
        &["2"],
    ),
    (
        Command::Tab(3),
        "tab3",
        "detail tab 3",
        Group::General,
        &["3"],
    ),
    (
        Command::Tab(4),
        "tab4",
        "detail tab 4",
        Group::General,
        &["4"],
    ),
    (
        Command::Tab(5),
        "tab5",
        "detail tab 5",
        Group::General,
        &["5"],
    ),
    (
        Command::Tab(6),
        "tab6",
        "detail tab 6",
        Group::General,
        &["6"],
    ),
    (
        Command::Tab(7),
        "tab7",
        "detail tab 7",
        Group::General,
        &["7"],
    ),
    (
        Command::Tab(8),
        "tab8",
        "detail tab 8",
        Group::General,
        &["8"],
    ),
    (
        Command::Tab(9),
        "tab9",
        "detail tab 9",
        Group::General,
        &["9"],
    ),
    (Command::Up, "up", "up", Group::Navigation, &["up", "k"]),
    (
        Command::Down,
        "down",
        "down",
        Group::Navigation,
        &["down", "j"],
    ),
    (
        Command::Left,
        "left",
        "left / prev tab / scroll",
        Group::Navigation,
        &["left", "h"],
    ),
    (
        Command::Right,
        "right",
        "right / next tab / scroll",
        Group::Navigation,
        &["right", "l"],
    ),
    (
        Command::ScrollLeft,
        "scroll_left",
        "scroll code pane left",
        Group::Navigation,
        &["H", "shift-left"],
    ),
    (
        Command::ScrollRight,
        "scroll_right",
        "scroll code pane right",
        Group::Navigation,
        &["L", "shift-right"],
    ),
    (
        Command::PageUp,
        "page_up",
        "page up",
        Group::Navigation,
        &["pgup", "ctrl-b"],
    ),
    (
        Command::PageDown,
        "page_down",
        "page down",
        Group::Navigation,
        &["pgdn", "ctrl-f"],
    ),
    (
        Command::Home,
        "home",
        "first line",
        Group::Navigation,
        &["home", "g"],
    ),
    (
        Command::End,
        "end",
        "last line",
        Group::Navigation,
        &["end", "G"],
    ),
    (
        Command::Enter,
        "enter",
        "open / jump to node",
        Group::Navigation,
        &["enter"],
    ),
    (
        Command::Escape,
        "escape",
        "close / clear search",
        Group::Navigation,
        &["esc"],
    ),
    (
        Command::Search,
        "search",
        "search in pane",
        Group::Search,
        &["/"],
    ),
    (
        Command::SearchNext,
        "search_next",
        "next match",
        Group::Search,
        &["n"],
    ),
    (
        Command::SearchPrev,
        "search_prev",
        "previous match",
        Group::Search,
        &["N"],
    ),
    (
        Command::NextBlock,
        "next_block",
        "next correlated block",
        Group::Search,
        &["}"],
    ),
    (
        Command::PrevBlock,
        "prev_block",
        "previous correlated block",
        Group::Search,
        &["{"],
    ),
    (
        Command::PrevStep,
        "prev_step",
        "previous pipeline step",
        Group::Search,
        &["("],
    ),
    (
        Command::NextStep,
        "next_step",
        "next pipeline step",
        Group::Search,
        &[")"],
    ),
    (
        Command::WgHalve,
        "wg_halve",
        "workgroup x / 2",
        Group::Tuning,
        &["["],
    ),
    (
        Command::WgDouble,
        "wg_double",
        "workgroup x * 2",
        Group::Tuning,
        &["]"],
    ),
    (
        Command::WgMinus,
        "wg_minus",
        "workgroup x - 32",
        Group::Tuning,
        &["-"],
    ),
    (
        Command::WgPlus,
        "wg_plus",
        "workgroup x + 32",
        Group::Tuning,
        &["+", "="],
    ),
    (
        Command::WgPrompt,
        "wg_set",
        "type workgroup X,Y,Z",
        Group::Tuning,
        &["w"],
    ),
    (
        Command::CycleSm,
        "target_sm",
        "next target sm",
        Group::Tuning,
        &["T"],
    ),
    (
        Command::CycleDevice,
        "device",
        "next device profile",
        Group::Tuning,
        &["d"],
    ),
    (
        Command::Unroll,
        "unroll",
        "unroll small loops on/off",
        Group::Tuning,
        &["u"],
    ),
    (
        Command::Pin,
        "pin",
        "pin this lowering (again: unpin)",
        Group::Tuning,
        &["p"],
    ),
    (
        Command::PinDiff,
        "pin_diff",
        "PTX/SASS: diff against the pin",
        Group::Tuning,
        &["D"],
    ),
    (
        Command::PinSwap,
        "pin_swap",
        "swap with the pinned lowering",
        Group::Tuning,
        &["P"],
    ),
    (
        Command::PinBest,
        "pin_best",
        "pin the tune sweep's best",
        Group::Tuning,
        &["b"],
    ),
    (
        Command::Dispatch,
        "dispatch",
        "dispatch on GPU + verify",
        Group::Actions,
        &["r"],
    ),
    (
        Command::Tune,
        "tune",
        "tune sweep on GPU",
        Group::Actions,
        &["t"],
    ),
    (
        Command::Reload,
        "reload",
        "reload program",
        Group::Actions,
        &["R"],
    ),
    (
        Command::Export,
        "export",
        "export view as JSON",
        Group::Actions,
        &["x"],
    ),
    (
        Command::ExportTo,
        "export_to",
        "export view to path",
        Group::Actions,
        &["X"],
    ),
    (Command::Open, "open", "open file", Group::Actions, &["o"]),
    (
        Command::TimelineFit,
        "timeline_fit",
        "Timeline: fit",
        Group::Navigation,
        &["0"],
    ),
    (
        Command::TimelineForm,
        "timeline_form",
        "Timeline: next form",
        Group::Navigation,
        &["f"],
    ),
];

impl Command {
    fn row(
        self,
    ) -> Option<&'static (
        Command,
        &'static str,
        &'static str,
        Group,
        &'static [&'static str],
    )> {
        TABLE.iter().find(|r| r.0 == self)
    }

    /// False for commands of a feature this build lacks (the vyre views without `vyre`):
    /// they get no key and no help line.
    pub fn available(self) -> bool {
        self != Command::VyreView || cfg!(feature = "vyre")
    }

    /// Name in the config file's `keys` object.
    pub fn name(self) -> &'static str {
        self.row().map_or("?", |r| r.1)
    }

    /// One-line help text.
    pub fn describe(self) -> &'static str {
        self.row().map_or("", |r| r.2)
    }

    /// Help section.
    pub fn group(self) -> Group {
        self.row().map_or(Group::General, |r| r.3)
    }

    /// Looks a command up by config name.
    pub fn from_name(name: &str) -> Option<Command> {
        TABLE.iter().find(|r| r.1 == name).map(|r| r.0)
    }
}

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
            .map(|(cmd, _, _, _, keys)| {
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

    #[test]
    fn default_table_parses_and_has_no_duplicate_keys() {
        for (cmd, name, _, _, keys) in TABLE {
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
