//! Colors and styles: a `.tmTheme` (dark, light, high-contrast built in, or a file) gives
//! both the syntax colors and the UI palette; the user config overrides single styles field
//! by field; `NO_COLOR` turns every color off and keeps only bold/reverse/underline.

use std::io::Cursor;
use std::path::Path;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use syntect::highlighting::{Theme as SynTheme, ThemeSet};

/// Built-in themes: name and `.tmTheme` text.
pub const BUILTIN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.tmTheme")),
    ("light", include_str!("../../themes/light.tmTheme")),
    (
        "high-contrast",
        include_str!("../../themes/high-contrast.tmTheme"),
    ),
];

/// Why a theme could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ThemeError {
    /// Name or path given.
    pub name: String,
    /// What went wrong.
    pub reason: String,
}

/// The fix for a bad `styles` entry: the names it may use.
const STYLE_NAMES: &str = "style names: text dim border border_focus title gutter cursor correlated search_match tab tab_active status key error warning info ok chart marker";

/// Every style the views use. Field names are the keys of `styles` in the config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Theme {
    /// Theme name (or file).
    pub name: String,
    /// False under `NO_COLOR`: syntax highlighting is off too.
    pub color: bool,
    /// Plain text (and the background everything sits on).
    pub text: Style,
    /// Secondary text.
    pub dim: Style,
    /// Pane borders.
    pub border: Style,
    /// Border of the focused pane.
    pub border_focus: Style,
    /// Pane titles.
    pub title: Style,
    /// Line numbers and node-id gutters.
    pub gutter: Style,
    /// The cursor line of the focused pane.
    pub cursor: Style,
    /// Lines correlated with the other pane's cursor.
    pub correlated: Style,
    /// Search matches.
    pub search_match: Style,
    /// Inactive tab titles.
    pub tab: Style,
    /// Active tab title.
    pub tab_active: Style,
    /// Status bar.
    pub status: Style,
    /// Keys in the status bar and help.
    pub key: Style,
    /// Errors.
    pub error: Style,
    /// Warnings.
    pub warning: Style,
    /// Info.
    pub info: Style,
    /// Success (parity passed, valid program).
    pub ok: Style,
    /// Chart lines and gauges.
    pub chart: Style,
    /// The current-size marker in charts.
    pub marker: Style,
}

/// One style override from the config file; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StyleOverride {
    /// Foreground: `#rrggbb`, a color name (`red`, `lightblue`, ...) or `reset`.
    pub fg: Option<String>,
    /// Background, same forms.
    pub bg: Option<String>,
    /// Bold on/off.
    pub bold: Option<bool>,
    /// Italic on/off.
    pub italic: Option<bool>,
    /// Underline on/off.
    pub underline: Option<bool>,
    /// Reverse video on/off.
    pub reversed: Option<bool>,
}

/// Parses `#rrggbb` or a color name.
pub fn parse_color(s: &str) -> Option<Color> {
    if let Some(hex) = s.strip_prefix('#') {
        if hex.len() == 6 {
            let v = u32::from_str_radix(hex, 16).ok()?;
            return Some(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        return None;
    }
    s.parse::<Color>().ok()
}

fn rgb(c: syntect::highlighting::Color) -> Color {
    Color::Rgb(c.r, c.g, c.b)
}

/// Loads a built-in theme by name or a `.tmTheme` file.
pub fn load_syntax_theme(name_or_file: &str) -> Result<SynTheme, ThemeError> {
    let err = |reason: String| ThemeError {
        name: name_or_file.to_string(),
        reason,
    };
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_file) {
        return ThemeSet::load_from_reader(&mut Cursor::new(text.as_bytes()))
            .map_err(|e| err(e.to_string()));
    }
    let path = Path::new(name_or_file);
    if !path.exists() {
        return Err(err("no built-in theme by that name and no such file".into()));
    }
    // Read like every other input: a regular file, bounded (a FIFO must not hang the
    // inspector, a link to /dev/zero must not fill memory).
    let bytes = crate::util::read_limited(path, MAX_THEME_BYTES, "theme file")
        .map_err(|e| err(e.message))?;
    // The plist reader recurses once per nested element: bound the depth before parsing,
    // so 60,000 nested arrays are an error rather than a stack overflow.
    if let Some(line) = too_deep(&bytes, MAX_THEME_DEPTH) {
        return Err(err(format!(
            "elements nested more than {MAX_THEME_DEPTH} deep at line {line} (a theme nests a few levels)"
        )));
    }
    ThemeSet::load_from_reader(&mut Cursor::new(bytes)).map_err(|e| err(e.to_string()))
}

/// Largest `.tmTheme` file read (real ones are a few KiB to a few dozen).
pub const MAX_THEME_BYTES: u64 = 1 << 20;

/// Deepest element nesting of a `.tmTheme` file read (real ones nest about five levels).
pub const MAX_THEME_DEPTH: usize = 64;

/// Whether `name` is a built-in theme rather than a file.
pub fn is_builtin(name: &str) -> bool {
    BUILTIN.iter().any(|(n, _)| *n == name)
}

/// The 1-based line where the XML text `b` first opens an element more than `max` deep, if
/// it does. A plain scan (no parsing): comments, `<?..?>`, `<!..>` and CDATA are skipped,
/// `<x/>` opens nothing, `</x>` closes one; quoted attribute values may hold `>`.
fn too_deep(b: &[u8], max: usize) -> Option<usize> {
    let (mut depth, mut line, mut i) = (0usize, 1usize, 0usize);
    let skip_to = |from: usize, end: &[u8]| {
        b[from..]
            .windows(end.len())
            .position(|w| w == end)
            .map_or(b.len(), |k| from + k + end.len())
    };
    while i < b.len() {
        if b[i] == b'\n' {
            line += 1;
        }
        if b[i] != b'<' {
            i += 1;
            continue;
        }
        let rest = &b[i..];
        let next = if rest.starts_with(b"<!--") {
            skip_to(i, b"-->")
        } else if rest.starts_with(b"<![CDATA[") {
            skip_to(i, b"]]>")
        } else if rest.starts_with(b"<?") || rest.starts_with(b"<!") {
            skip_to(i, b">")
        } else if rest.starts_with(b"</") {
            depth = depth.saturating_sub(1);
            skip_to(i, b">")
        } else {
            // An opening tag: to its `>` outside quotes; `/>` closes it at once.
            let mut j = i + 1;
            let mut quote = None;
            while j < b.len() {
                match (quote, b[j]) {
                    (None, q @ (b'"' | b'\'')) => quote = Some(q),
                    (Some(q), c) if c == q => quote = None,
                    (None, b'>') => break,
                    _ => {}
                }
                j += 1;
            }
            if b.get(j.wrapping_sub(1)) != Some(&b'/') {
                depth += 1;
                if depth > max {
                    return Some(line);
                }
            }
            j + 1
        };
        // Lines inside what was skipped still count.
        line += b[i + 1..next.min(b.len())]
            .iter()
            .filter(|&&c| c == b'\n')
            .count();
        i = next;
    }
    None
}

/// Lower bounds of the heat grades (own share): hot, warm, mild; below the last is cold.
pub const HEAT_GRADES: [f64; 3] = [0.25, 0.10, 0.02];

impl Theme {
    /// The UI palette of a syntax theme.
    pub fn from_syntax(name: &str, t: &SynTheme) -> Self {
        let s = &t.settings;
        let fg = s.foreground.map(rgb).unwrap_or(Color::Reset);
        let bg = s.background.map(rgb).unwrap_or(Color::Reset);
        let dark = s
            .background
            .is_none_or(|c| (c.r as u32 * 3 + c.g as u32 * 6 + c.b as u32) / 10 < 128);
        let accent = s
            .caret
            .map(rgb)
            .unwrap_or(if dark { Color::Cyan } else { Color::Blue });
        let sel = s.selection.map(rgb).unwrap_or(Color::DarkGray);
        let line_hl = s.line_highlight.map(rgb).unwrap_or(Color::Gray);
        let find = s.find_highlight.map(rgb).unwrap_or(Color::Yellow);
        let gutter = s.gutter_foreground.map(rgb).unwrap_or(Color::DarkGray);
        let (red, yellow, green, blue) = if dark {
            (
                Color::Rgb(255, 110, 110),
                Color::Rgb(240, 200, 90),
                Color::Rgb(120, 220, 120),
                Color::Rgb(120, 170, 255),
            )
        } else {
            (
                Color::Rgb(180, 0, 0),
                Color::Rgb(150, 100, 0),
                Color::Rgb(0, 120, 0),
                Color::Rgb(0, 70, 180),
            )
        };
        let text = Style::new().fg(fg).bg(bg);
        Theme {
            name: name.to_string(),
            color: true,
            text,
            dim: Style::new().fg(gutter),
            border: Style::new().fg(gutter),
            border_focus: Style::new().fg(accent).add_modifier(Modifier::BOLD),
            title: Style::new().fg(fg).add_modifier(Modifier::BOLD),
            gutter: Style::new().fg(gutter),
            cursor: Style::new().bg(sel).add_modifier(Modifier::BOLD),
            correlated: Style::new().bg(line_hl),
            search_match: Style::new()
                .bg(find)
                .fg(bg)
                .add_modifier(Modifier::UNDERLINED),
            tab: Style::new().fg(gutter),
            tab_active: Style::new()
                .fg(accent)
                .add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
            status: Style::new().fg(bg).bg(fg),
            key: Style::new().fg(accent).add_modifier(Modifier::BOLD),
            error: Style::new().fg(red).add_modifier(Modifier::BOLD),
            warning: Style::new().fg(yellow),
            info: Style::new().fg(blue),
            ok: Style::new().fg(green),
            chart: Style::new().fg(blue),
            marker: Style::new().fg(yellow).add_modifier(Modifier::BOLD),
        }
    }

    /// The style of a profile's heat gutter cell for an own share `share` (0..=1): four
    /// grades from the palette, hottest in the error colour (bold, so that it also stands
    /// out without colours), then warning, info and dim.
    pub fn heat(&self, share: f64) -> Style {
        if share >= HEAT_GRADES[0] {
            self.error.add_modifier(Modifier::BOLD)
        } else if share >= HEAT_GRADES[1] {
            self.warning
        } else if share >= HEAT_GRADES[2] {
            self.info
        } else {
            self.dim
        }
    }

    /// No colors at all (`NO_COLOR`): emphasis only through modifiers.
    pub fn monochrome() -> Self {
        let b = Style::new().add_modifier(Modifier::BOLD);
        Theme {
            name: "no-color".into(),
            color: false,
            text: Style::new(),
            dim: Style::new().add_modifier(Modifier::DIM),
            border: Style::new(),
            border_focus: b,
            title: b,
            gutter: Style::new().add_modifier(Modifier::DIM),
            cursor: Style::new().add_modifier(Modifier::REVERSED),
            correlated: Style::new().add_modifier(Modifier::UNDERLINED),
            search_match: Style::new().add_modifier(Modifier::UNDERLINED | Modifier::BOLD),
            tab: Style::new(),
            tab_active: Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            status: Style::new().add_modifier(Modifier::REVERSED),
            key: b,
            error: b,
            warning: b,
            info: Style::new(),
            ok: Style::new(),
            chart: Style::new(),
            marker: b,
        }
    }

    fn slot(&mut self, name: &str) -> Option<&mut Style> {
        Some(match name {
            "text" => &mut self.text,
            "dim" => &mut self.dim,
            "border" => &mut self.border,
            "border_focus" => &mut self.border_focus,
            "title" => &mut self.title,
            "gutter" => &mut self.gutter,
            "cursor" => &mut self.cursor,
            "correlated" => &mut self.correlated,
            "search_match" => &mut self.search_match,
            "tab" => &mut self.tab,
            "tab_active" => &mut self.tab_active,
            "status" => &mut self.status,
            "key" => &mut self.key,
            "error" => &mut self.error,
            "warning" => &mut self.warning,
            "info" => &mut self.info,
            "ok" => &mut self.ok,
            "chart" => &mut self.chart,
            "marker" => &mut self.marker,
            _ => return None,
        })
    }

    /// Applies one override; colors are ignored without color support. Errors name the
    /// bad field or value (the caller names the file).
    pub fn apply(
        &mut self,
        name: &str,
        o: &StyleOverride,
    ) -> Result<(), super::config::ConfigError> {
        let bad = |message: String| super::config::ConfigError {
            path: String::new(),
            message,
            fix: STYLE_NAMES.into(),
        };
        let color = self.color;
        let slot = self
            .slot(name)
            .ok_or_else(|| bad(format!("unknown style `{name}`")))?;
        let col = |v: &Option<String>| -> Result<Option<Color>, super::config::ConfigError> {
            match v {
                None => Ok(None),
                Some(s) => parse_color(s).map(Some).ok_or_else(|| {
                    bad(format!(
                        "style `{name}`: bad color `{s}` (use #rrggbb or a name)"
                    ))
                }),
            }
        };
        let (fg, bg) = (col(&o.fg)?, col(&o.bg)?);
        if color {
            if let Some(c) = fg {
                *slot = slot.fg(c);
            }
            if let Some(c) = bg {
                *slot = slot.bg(c);
            }
        }
        for (flag, m) in [
            (o.bold, Modifier::BOLD),
            (o.italic, Modifier::ITALIC),
            (o.underline, Modifier::UNDERLINED),
            (o.reversed, Modifier::REVERSED),
        ] {
            match flag {
                Some(true) => *slot = slot.add_modifier(m),
                Some(false) => *slot = slot.remove_modifier(m),
                None => {}
            }
        }
        Ok(())
    }
}

impl crate::util::HasFix for ThemeError {
    fn message(&self) -> String {
        format!("cannot load theme `{}`: {}", self.name, self.reason)
    }

    fn fix(&self) -> String {
        "use dark, light, high-contrast or a path to a .tmTheme file".to_string()
    }
}

crate::util::problem::into_problem!(ThemeError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_grades_go_from_dim_to_the_error_colour_at_their_bounds() {
        let t = Theme::from_syntax("dark", &load_syntax_theme("dark").unwrap());
        let hot = t.error.add_modifier(Modifier::BOLD);
        for (share, want) in [
            (1.0, hot),
            (0.25, hot),
            (0.2499, t.warning),
            (0.10, t.warning),
            (0.0999, t.info),
            (0.02, t.info),
            (0.0199, t.dim),
            (0.0, t.dim),
        ] {
            assert_eq!(t.heat(share), want, "share {share}");
        }
        // Four distinct grades, so the gutter tells them apart.
        let mut styles = vec![t.heat(0.5), t.heat(0.15), t.heat(0.05), t.heat(0.01)];
        styles.dedup();
        assert_eq!(styles.len(), 4);
    }

    #[test]
    fn builtin_themes_load_with_distinct_palettes() {
        let mut seen = Vec::new();
        for (name, _) in BUILTIN {
            let t = load_syntax_theme(name).unwrap();
            let ui = Theme::from_syntax(name, &t);
            assert!(ui.text.bg.is_some() && ui.cursor.bg.is_some());
            assert_ne!(ui.cursor.bg, ui.text.bg, "{name}: cursor must stand out");
            seen.push(ui.text);
        }
        seen.dedup();
        assert_eq!(seen.len(), BUILTIN.len());
    }

    #[test]
    fn override_changes_only_given_fields() {
        let t = load_syntax_theme("dark").unwrap();
        let mut ui = Theme::from_syntax("dark", &t);
        let before = ui.cursor;
        ui.apply(
            "cursor",
            &StyleOverride {
                fg: Some("#010203".into()),
                underline: Some(true),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ui.cursor.fg, Some(Color::Rgb(1, 2, 3)));
        assert_eq!(ui.cursor.bg, before.bg);
        assert!(ui
            .cursor
            .add_modifier
            .contains(Modifier::UNDERLINED | Modifier::BOLD));
        assert!(ui.apply("nope", &StyleOverride::default()).is_err());
        let bad = StyleOverride {
            bg: Some("#12".into()),
            ..Default::default()
        };
        assert!(ui.apply("text", &bad).is_err());
    }

    #[test]
    fn monochrome_has_no_colors() {
        let mut m = Theme::monochrome();
        m.apply(
            "error",
            &StyleOverride {
                fg: Some("red".into()),
                ..Default::default()
            },
        )
        .unwrap();
        for s in [m.text, m.cursor, m.error, m.correlated, m.status] {
            assert!(s.fg.is_none() && s.bg.is_none());
        }
    }

    #[cfg(unix)]
    #[test]
    fn fifo_device_and_huge_theme_files_are_refused_without_reading() {
        let t = tempfile::tempdir().unwrap();
        let fifo = t.path().join("fifo.tmTheme");
        // The mkfifo tool rather than libc: `unsafe` stays in runtime/driver and util/os.rs.
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", fifo.display());
        let zero = t.path().join("zero.tmTheme");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let huge = t.path().join("huge.tmTheme");
        let f = std::fs::File::create(&huge).unwrap();
        f.set_len(MAX_THEME_BYTES + 1).unwrap();
        for p in [&fifo, &zero, &huge] {
            let e = load_syntax_theme(p.to_str().unwrap())
                .unwrap_err()
                .to_string();
            assert!(e.contains("Fix:"), "{e}");
            assert!(
                e.contains("not a regular file") || e.contains("limit") || e.contains("bytes"),
                "{e}"
            );
        }
    }

    #[test]
    fn nesting_is_bounded_before_parsing() {
        let real = BUILTIN.iter().map(|(_, t)| t.as_bytes());
        for t in real {
            assert_eq!(too_deep(t, 8), None);
        }
        let deep = |n: usize| {
            format!(
                "<plist>\n{}{}</plist>",
                "<array>".repeat(n),
                "</array>".repeat(n)
            )
        };
        assert_eq!(
            too_deep(deep(MAX_THEME_DEPTH - 1).as_bytes(), MAX_THEME_DEPTH),
            None
        );
        assert_eq!(
            too_deep(deep(MAX_THEME_DEPTH).as_bytes(), MAX_THEME_DEPTH),
            Some(2)
        );
        // Self-closing tags, comments and quoted `>` open nothing.
        let flat = format!("<a x=\"/>\">{}<!-- <b><b> --></a>", "<c/>".repeat(100));
        assert_eq!(too_deep(flat.as_bytes(), 1), None);
    }

    #[test]
    fn missing_theme_file_is_an_error_with_fix() {
        let e = load_syntax_theme("/nonexistent/x.tmTheme").unwrap_err();
        assert!(e.to_string().contains("Fix:"));
    }
}
