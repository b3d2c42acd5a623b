//! Syntax highlighting with syntect, for visible lines only, with a cache.
//!
//! The PTX and IR syntaxes keep no state across lines (see `themes/ptx.sublime-syntax`), so
//! each line is highlighted on its own: scrolling to line 19 000 of a large PTX costs the
//! same as line 1, and nothing above the view is ever parsed. Results are cached per
//! (language, text generation, line); the cache is cleared when a new text arrives or it
//! grows past [`CACHE_LINES`]. Views only borrow the highlighter: the cache sits behind a
//! `RefCell`, the one piece of draw-time mutability.

use std::cell::RefCell;
use std::collections::HashMap;

use ratatui::style::{Color, Modifier, Style};
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme as SynTheme};
use syntect::parsing::{SyntaxDefinition, SyntaxSet, SyntaxSetBuilder};

/// Most cached lines before the cache is dropped and rebuilt from what is visible.
pub const CACHE_LINES: usize = 8_192;

/// Which text a line belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// The IR printer's text.
    Ir,
    /// PTX.
    Ptx,
    /// SASS (no syntax: plain text).
    Sass,
}

const PTX_SYNTAX: &str = include_str!("../../themes/ptx.sublime-syntax");
const IR_SYNTAX: &str = include_str!("../../themes/ir.sublime-syntax");

/// One styled piece of a line: byte range and style.
pub type Piece = (std::ops::Range<usize>, Style);

/// The highlighter: syntaxes, the syntax theme (none without color) and the line cache.
pub struct Highlighter {
    set: SyntaxSet,
    theme: Option<SynTheme>,
    cache: RefCell<Cache>,
}

#[derive(Default)]
struct Cache {
    /// Generation currently cached per language (IR, PTX).
    generation: [Option<u64>; 3],
    lines: HashMap<(Lang, usize), Vec<Piece>>,
}

impl std::fmt::Debug for Highlighter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Highlighter")
            .field("color", &self.theme.is_some())
            .field("cached", &self.cache.borrow().lines.len())
            .finish()
    }
}

impl Highlighter {
    /// A highlighter using `theme`; `None` turns highlighting off (NO_COLOR).
    pub fn new(theme: Option<SynTheme>) -> Self {
        let mut b = SyntaxSetBuilder::new();
        // The syntaxes are compiled into the binary and tested, so a parse failure here is
        // a build defect; the inspector then still works, just without colors.
        if let Ok(def) = SyntaxDefinition::load_from_str(PTX_SYNTAX, true, None) {
            b.add(def);
        }
        if let Ok(def) = SyntaxDefinition::load_from_str(IR_SYNTAX, true, None) {
            b.add(def);
        }
        Highlighter {
            set: b.build(),
            theme,
            cache: RefCell::new(Cache::default()),
        }
    }

    /// True when a syntax for `lang` is loaded and colors are on.
    pub fn active(&self, lang: Lang) -> bool {
        self.theme.is_some() && self.syntax(lang).is_some()
    }

    fn syntax(&self, lang: Lang) -> Option<&syntect::parsing::SyntaxReference> {
        match lang {
            Lang::Ptx => self.set.find_syntax_by_extension("ptx"),
            Lang::Ir => self.set.find_syntax_by_extension("vyir"),
            Lang::Sass => None,
        }
    }

    /// Styled pieces of `text`, line `line` of generation `generation` of `lang`.
    pub fn pieces(&self, lang: Lang, generation: u64, line: usize, text: &str) -> Vec<Piece> {
        let slot = lang as usize;
        {
            let cache = self.cache.borrow();
            if cache.generation[slot] == Some(generation) {
                // The pieces must cover this very text: a stale entry (a caller that kept
                // its generation for a new text) is recomputed rather than cutting the line.
                if let Some(p) = cache.lines.get(&(lang, line)) {
                    if p.last().map_or(text.is_empty(), |r| r.0.end == text.len()) {
                        return p.clone();
                    }
                }
            }
        }
        let pieces = self.compute(lang, text);
        let mut cache = self.cache.borrow_mut();
        if cache.generation[slot] != Some(generation) {
            cache.lines.retain(|k, _| k.0 != lang);
            cache.generation[slot] = Some(generation);
        }
        if cache.lines.len() >= CACHE_LINES {
            cache.lines.clear();
        }
        cache.lines.insert((lang, line), pieces.clone());
        pieces
    }

    /// Number of cached lines (for tests and the benchmark).
    pub fn cached(&self) -> usize {
        self.cache.borrow().lines.len()
    }

    fn compute(&self, lang: Lang, text: &str) -> Vec<Piece> {
        let (Some(theme), Some(syntax)) = (self.theme.as_ref(), self.syntax(lang)) else {
            return vec![(0..text.len(), Style::new())];
        };
        let mut h = HighlightLines::new(syntax, theme);
        let Ok(regions) = h.highlight_line(text, &self.set) else {
            return vec![(0..text.len(), Style::new())];
        };
        let mut at = 0;
        regions
            .into_iter()
            .map(|(st, s)| {
                let r = at..at + s.len();
                at = r.end;
                let mut style = Style::new().fg(Color::Rgb(
                    st.foreground.r,
                    st.foreground.g,
                    st.foreground.b,
                ));
                if st.font_style.contains(FontStyle::BOLD) {
                    style = style.add_modifier(Modifier::BOLD);
                }
                if st.font_style.contains(FontStyle::ITALIC) {
                    style = style.add_modifier(Modifier::ITALIC);
                }
                if st.font_style.contains(FontStyle::UNDERLINE) {
                    style = style.add_modifier(Modifier::UNDERLINED);
                }
                (r, style)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::theme::load_syntax_theme;

    #[test]
    fn ptx_syntax_colors_instructions_registers_and_comments_differently() {
        let h = Highlighter::new(Some(load_syntax_theme("dark").unwrap()));
        assert!(h.active(Lang::Ptx));
        let line = "\tld.global.nc.f32 %f1, [%rd4]; // body[1]";
        let p = h.pieces(Lang::Ptx, 1, 0, line);
        let style_at = |needle: &str| {
            let i = line.find(needle).unwrap();
            p.iter().find(|(r, _)| r.contains(&i)).unwrap().1
        };
        let (ins, reg, com) = (style_at("ld.global"), style_at("%f1"), style_at("// body"));
        assert_ne!(ins.fg, reg.fg);
        assert_ne!(ins.fg, com.fg);
        // Pieces cover the line exactly, in order.
        assert_eq!(p.first().unwrap().0.start, 0);
        assert_eq!(p.last().unwrap().0.end, line.len());
        assert!(p.windows(2).all(|w| w[0].0.end == w[1].0.start));
    }

    #[test]
    fn cache_is_keyed_by_generation_and_bounded() {
        let h = Highlighter::new(Some(load_syntax_theme("dark").unwrap()));
        for i in 0..10 {
            h.pieces(Lang::Ptx, 1, i, "mov.u32 %r1, 0;");
        }
        assert_eq!(h.cached(), 10);
        h.pieces(Lang::Ptx, 2, 0, "ret;");
        assert_eq!(h.cached(), 1, "a new generation drops the old lines");
        for i in 0..CACHE_LINES + 5 {
            h.pieces(Lang::Ptx, 2, i, "ret;");
        }
        assert!(h.cached() <= CACHE_LINES);
    }

    /// A line whose text changed under the same generation (a step switch that kept the
    /// id, issue 24 item 16) is highlighted afresh, never cut to the old line's pieces.
    #[test]
    fn a_changed_line_under_one_generation_is_not_cut() {
        let h = Highlighter::new(Some(load_syntax_theme("dark").unwrap()));
        h.pieces(Lang::Ir, 7, 0, "let i: u32 = gid.x");
        let line = "let stride: u32 = 128 >> s";
        let p = h.pieces(Lang::Ir, 7, 0, line);
        assert_eq!(p.last().unwrap().0.end, line.len());
    }

    #[test]
    fn ir_syntax_colors_keywords_and_types() {
        let h = Highlighter::new(Some(load_syntax_theme("dark").unwrap()));
        assert!(h.active(Lang::Ir));
        let line = "let i: u32 = gid.x";
        let p = h.pieces(Lang::Ir, 1, 0, line);
        let style_at = |i: usize| p.iter().find(|(r, _)| r.contains(&i)).unwrap().1;
        assert_ne!(style_at(0).fg, style_at(line.find("u32").unwrap()).fg);
    }

    #[test]
    fn no_theme_means_plain_text() {
        let h = Highlighter::new(None);
        assert!(!h.active(Lang::Ptx));
        let p = h.pieces(Lang::Ptx, 0, 0, "ret;");
        assert_eq!(p, vec![(0..4, Style::new())]);
    }
}
