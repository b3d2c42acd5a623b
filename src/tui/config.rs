//! The user's config file: key and style overrides on top of the defaults, field by field.
//!
//! Location: `$VYRESCOPE_CONFIG` if set, else `<config dir>/vyrescope/config.json`
//! (`~/.config/vyrescope/config.json` on Linux). Every field is optional:
//!
//! ```json
//! {
//!   "theme": "light",
//!   "keys": { "quit": ["q", "ctrl-q"], "dispatch": ["r", "f5"] },
//!   "styles": { "cursor": { "bg": "#334455", "bold": true } }
//! }
//! ```
//!
//! `keys` maps a command name (the help overlay lists them) to its full key list; a key
//! taken by it is removed from other commands. `styles` overrides single fields (`fg`, `bg`,
//! `bold`, `italic`, `underline`, `reversed`) of a named style. `--theme` beats `theme`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::action::Command;
use super::keymap::{KeyMap, KeySpec};
use super::theme::{StyleOverride, Theme};

/// The config file's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Theme name or `.tmTheme` path.
    pub theme: Option<String>,
    /// Command name -> keys.
    #[serde(default)]
    pub keys: BTreeMap<String, Vec<String>>,
    /// Style name -> override.
    #[serde(default)]
    pub styles: BTreeMap<String, StyleOverride>,
}

/// Why the config file could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    /// File.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

/// Where the config file is looked for.
pub fn config_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("VYRESCOPE_CONFIG") {
        return Some(PathBuf::from(p));
    }
    dirs::config_dir().map(|d| d.join("vyrescope").join("config.json"))
}

impl Config {
    /// Reads `path`; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        // Only a regular file of at most 1 MiB (util::read_limited).
        let text = match crate::util::read_limited(path, 1 << 20, "config file") {
            Ok(b) => String::from_utf8_lossy(&b).into_owned(),
            Err(e) if e.kind == crate::util::ReadErrorKind::NotFound => {
                return Ok(Config::default())
            }
            Err(e) => {
                return Err(ConfigError {
                    path: path.display().to_string(),
                    message: e.message,
                    fix: "make it a readable regular file of at most 1 MiB, or remove it".into(),
                })
            }
        };
        let mut cfg = Self::parse(&text).map_err(|mut e| {
            e.path = path.display().to_string();
            e
        })?;
        // A theme file named relative to the config is beside the config, not in whatever
        // folder the inspector was started from.
        if let (Some(t), Some(dir)) = (&cfg.theme, path.parent()) {
            if !super::theme::is_builtin(t) && Path::new(t).is_relative() {
                cfg.theme = Some(dir.join(t).display().to_string());
            }
        }
        Ok(cfg)
    }

    /// Parses config text.
    pub fn parse(text: &str) -> Result<Self, ConfigError> {
        if let Some(d) = crate::util::find_duplicate_key(text) {
            return Err(ConfigError {
                path: String::new(),
                message: format!("at `{}` (line {}): {}", d.path, d.line, d.message()),
                fix: d.fix(),
            });
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(de).map_err(|e| ConfigError {
            path: String::new(),
            message: format!("at `{}`: {}", e.path(), e.inner()),
            fix: "see the Inspector section of the README for the fields".into(),
        })
    }

    /// Applies the `keys` overrides.
    pub fn apply_keys(&self, km: &mut KeyMap) -> Result<(), ConfigError> {
        for (name, keys) in &self.keys {
            let cmd = Command::from_name(name).ok_or_else(|| ConfigError {
                path: String::new(),
                message: format!("unknown command `{name}` in `keys`"),
                fix: "use a command name from the help overlay (?)".into(),
            })?;
            let specs = keys
                .iter()
                .map(|k| KeySpec::parse(k))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ConfigError {
                    path: String::new(),
                    message: format!("keys.{name}: {}", e.0),
                    fix: "use names like q, ctrl-c, shift-tab, pgdn, f5".into(),
                })?;
            km.rebind(cmd, specs);
        }
        // Without a quit key the only ways out would be signals: refuse such a config.
        if km.first_key(Command::Quit).is_none() {
            return Err(ConfigError {
                path: String::new(),
                message: "no key is left to quit (`keys` unbinds or takes every key of `quit`)"
                    .into(),
                fix: "give `quit` a key, e.g. \"keys\": {\"quit\": [\"q\", \"ctrl-c\"]}".into(),
            });
        }
        Ok(())
    }

    /// Applies the `styles` overrides.
    pub fn apply_styles(&self, theme: &mut Theme) -> Result<(), ConfigError> {
        for (name, o) in &self.styles {
            theme.apply(name, o)?;
        }
        Ok(())
    }
}

impl crate::util::HasFix for ConfigError {
    fn message(&self) -> String {
        format!("config {}: {}", self.path, self.message)
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(ConfigError);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::load_syntax_theme;

    #[test]
    fn overrides_apply_field_by_field() {
        let c = Config::parse(
            r##"{"keys": {"quit": ["ctrl-q"], "dispatch": ["f5", "r"]},
                "styles": {"cursor": {"fg": "#ff0000"}}}"##,
        )
        .unwrap();
        let mut km = KeyMap::default();
        c.apply_keys(&mut km).unwrap();
        assert_eq!(km.lookup(KeySpec::ctrl('q')), Some(Command::Quit));
        assert_eq!(km.lookup(KeySpec::ch('q')), None);
        assert_eq!(km.lookup(KeySpec::ch('r')), Some(Command::Dispatch));
        // Untouched commands keep their defaults.
        assert_eq!(km.lookup(KeySpec::ch('j')), Some(Command::Down));
        let mut t = Theme::from_syntax("dark", &load_syntax_theme("dark").unwrap());
        let bg = t.cursor.bg;
        c.apply_styles(&mut t).unwrap();
        assert_eq!(t.cursor.fg, Some(ratatui::style::Color::Rgb(255, 0, 0)));
        assert_eq!(t.cursor.bg, bg);
    }

    #[test]
    fn errors_name_the_field_and_have_a_fix() {
        let e = Config::parse(r#"{"keys": {"quit": [3]}}"#).unwrap_err();
        assert!(e.message.contains("keys.quit"), "{e}");
        let e = Config::parse(r#"{"colour": 1}"#).unwrap_err();
        assert!(e.to_string().contains("Fix:"));
        let c = Config::parse(r#"{"keys": {"frobnicate": ["x"]}}"#).unwrap();
        assert!(c.apply_keys(&mut KeyMap::default()).is_err());
        let c = Config::parse(r#"{"keys": {"quit": ["hyper-x"]}}"#).unwrap();
        assert!(c.apply_keys(&mut KeyMap::default()).is_err());
    }

    #[test]
    fn a_config_without_a_quit_key_is_refused() {
        for text in [
            r#"{"keys": {"quit": []}}"#,
            r#"{"keys": {"dispatch": ["q", "ctrl-c"]}}"#,
        ] {
            let c = Config::parse(text).unwrap();
            let e = c.apply_keys(&mut KeyMap::default()).unwrap_err();
            assert!(e.message.contains("quit") && e.fix.contains("quit"), "{e}");
        }
        // Taking one of the two keys leaves the other.
        let c = Config::parse(r#"{"keys": {"dispatch": ["q"]}}"#).unwrap();
        let mut km = KeyMap::default();
        c.apply_keys(&mut km).unwrap();
        assert_eq!(km.first_key(Command::Quit), Some(KeySpec::ctrl('c')));
    }

    #[test]
    fn missing_file_is_empty_config() {
        let p = std::env::temp_dir().join("vyrescope-no-such-config.json");
        assert_eq!(Config::load(&p).unwrap(), Config::default());
    }
}
