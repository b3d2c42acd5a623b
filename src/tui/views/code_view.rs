//! The gutter-and-highlight rendering the IR and PTX panes share: a gutter, syntax-highlighted
//! text of the visible lines only, the cursor line, correlated lines and the pane's search
//! matches. A pane says what its lines, gutter and marks are ([`CodeView`]); where it is
//! scrolled to and what is searched come from the pane's state in the [`App`].

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::tui::app::{App, Focus};
use crate::tui::highlight::{Highlighter, Lang};

/// How one line is marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// Nothing.
    None,
    /// Correlated with the other pane's selection.
    Correlated,
    /// The cursor line.
    Cursor,
}

impl Mark {
    /// The mark of a line that is (or is not) the cursor line and correlated; the cursor wins.
    pub fn of(cursor: bool, correlated: bool) -> Mark {
        if cursor {
            Mark::Cursor
        } else if correlated {
            Mark::Correlated
        } else {
            Mark::None
        }
    }
}

/// What a code view shows; the closures answer per visible line only.
pub struct CodeView<'a> {
    /// The pane it is drawn in (its scroll offset and search apply).
    pub pane: Focus,
    /// Language for highlighting.
    pub lang: Lang,
    /// Generation of the text (highlight cache key).
    pub generation: u64,
    /// Total lines.
    pub len: usize,
    /// Gutter width in columns (without the separator).
    pub gutter_width: usize,
    /// Text of line `i`.
    pub line: &'a dyn Fn(usize) -> &'a str,
    /// Gutter text of line `i`.
    pub gutter: &'a dyn Fn(usize) -> String,
    /// Mark of line `i`.
    pub mark: &'a dyn Fn(usize) -> Mark,
    /// With a profile: the own share of line `i`'s statement (the heat gutter, drawn before
    /// the gutter in the share's colour; `None` for a line of no profiled statement).
    pub heat: Option<&'a dyn Fn(usize) -> Option<f64>>,
}

/// Columns the heat gutter takes: the share and a space.
pub const HEAT_COLUMNS: usize = crate::tui::profile::HEAT_WIDTH + 1;

/// Expands tabs to 4-column stops, tracking the column across spans.
fn expand_tabs(s: &str, col: &mut usize) -> String {
    if !s.contains('\t') {
        *col += s.chars().count();
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == '\t' {
            let n = 4 - *col % 4;
            out.extend(std::iter::repeat_n(' ', n));
            *col += n;
        } else {
            out.push(c);
            *col += 1;
        }
    }
    out
}

/// Byte ranges of `needle` in `hay` (smart case: case-insensitive unless it has capitals).
fn matches(hay: &str, needle: &str) -> Vec<std::ops::Range<usize>> {
    if needle.is_empty() {
        return Vec::new();
    }
    let fold = !needle.chars().any(char::is_uppercase);
    let (h, n) = if fold {
        (hay.to_ascii_lowercase(), needle.to_ascii_lowercase())
    } else {
        (hay.to_string(), needle.to_string())
    };
    h.match_indices(&n).map(|(i, m)| i..i + m.len()).collect()
}

/// Draws `view` into `inner` (the area inside the pane's borders).
pub fn draw(buf: &mut Buffer, inner: Rect, app: &App, hl: &Highlighter, view: &CodeView<'_>) {
    let t = &app.theme;
    let scroll = app.pane(view.pane).scroll;
    let hscroll = app.pane(view.pane).hscroll;
    // The search underlines matches only in the pane it was typed in.
    let search = app
        .panes
        .search
        .as_ref()
        .filter(|(f, _)| *f == view.pane)
        .map(|(_, q)| q.as_str());
    let rows = inner.height as usize;
    let end = (scroll + rows).min(view.len);
    let mut lines = Vec::with_capacity(rows);
    for i in scroll..end {
        let text = (view.line)(i);
        let mark = (view.mark)(i);
        let line_style = match mark {
            Mark::Cursor => t.cursor,
            Mark::Correlated => t.correlated,
            Mark::None => Style::new(),
        };
        let mut spans = Vec::new();
        let mut text_spans = Vec::new();
        let found = search.map(|q| matches(text, q)).unwrap_or_default();
        let mut col = 0usize;
        for (range, style) in hl.pieces(view.lang, view.generation, i, text) {
            // Split each highlighted piece at search-match borders.
            let mut at = range.start;
            while at < range.end {
                let inside = found.iter().find(|m| m.start <= at && at < m.end);
                let stop = match inside {
                    Some(m) => m.end.min(range.end),
                    None => found
                        .iter()
                        .map(|m| m.start)
                        .filter(|s| *s > at)
                        .min()
                        .unwrap_or(range.end)
                        .min(range.end),
                };
                let Some(piece) = text.get(at..stop) else {
                    break;
                };
                let s = if inside.is_some() {
                    style.patch(t.search_match)
                } else {
                    style
                };
                text_spans.push(Span::styled(expand_tabs(piece, &mut col), s));
                at = stop;
            }
        }
        if let Some(heat) = view.heat {
            spans.push(match heat(i) {
                Some(share) => Span::styled(
                    format!("{} ", crate::tui::profile::heat_text(share)),
                    t.heat(share),
                ),
                None => Span::styled(" ".repeat(HEAT_COLUMNS), t.gutter),
            });
        }
        // The gutter stays; the text scrolls sideways.
        if view.gutter_width > 0 {
            let g = (view.gutter)(i);
            let mark = if hscroll > 0 { '‹' } else { '│' };
            spans.push(Span::styled(
                format!("{g:>w$}{mark}", w = view.gutter_width),
                t.gutter,
            ));
        }
        spans.extend(skip_columns(text_spans, hscroll));
        // Mark the whole row, not just the text: short lines stay visibly selected.
        let row = Rect::new(inner.x, inner.y + (i - scroll) as u16, inner.width, 1);
        buf.set_style(row, line_style);
        lines.push(Line::from(spans));
    }
    Paragraph::new(lines).render(inner, buf);
}

/// ` col N` for a pane scrolled sideways (its title says where the text starts), else "".
pub fn hscroll_note(app: &App, f: Focus) -> String {
    match app.pane(f).hscroll {
        0 => String::new(),
        h => format!(" col {}", h + 1),
    }
}

/// Drops the first `n` columns (characters, tabs already expanded) of `spans`.
fn skip_columns(spans: Vec<Span<'static>>, mut n: usize) -> Vec<Span<'static>> {
    let mut out = Vec::with_capacity(spans.len());
    for sp in spans {
        let len = sp.content.chars().count();
        if n >= len {
            n -= len;
            continue;
        }
        if n > 0 {
            let rest: String = sp.content.chars().skip(n).collect();
            n = 0;
            out.push(Span::styled(rest, sp.style));
        } else {
            out.push(sp);
        }
    }
    out
}

/// Columns needed for the decimal line numbers of `len` lines.
pub fn digits(len: usize) -> usize {
    len.max(1).to_string().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tabs_expand_to_stops_across_pieces() {
        let mut col = 0;
        assert_eq!(expand_tabs("\tab", &mut col), "    ab");
        assert_eq!(expand_tabs("c\td", &mut col), "c d");
        assert_eq!(col, 9);
    }

    #[test]
    fn skipping_columns_cuts_across_spans_and_keeps_styles() {
        let bold = Style::new().add_modifier(ratatui::style::Modifier::BOLD);
        let spans = vec![Span::raw("abc"), Span::styled("défg", bold), Span::raw("h")];
        let text = |v: &[Span]| v.iter().map(|s| s.content.to_string()).collect::<String>();
        assert_eq!(text(&skip_columns(spans.clone(), 0)), "abcdéfgh");
        let cut = skip_columns(spans.clone(), 4);
        assert_eq!(text(&cut), "éfgh");
        assert_eq!(cut[0].style, bold);
        assert_eq!(text(&skip_columns(spans.clone(), 3)), "défgh");
        assert!(skip_columns(spans, 99).is_empty());
    }

    #[test]
    fn the_cursor_mark_wins_over_correlation() {
        assert_eq!(Mark::of(true, true), Mark::Cursor);
        assert_eq!(Mark::of(true, false), Mark::Cursor);
        assert_eq!(Mark::of(false, true), Mark::Correlated);
        assert_eq!(Mark::of(false, false), Mark::None);
    }

    #[test]
    fn smart_case_matches() {
        assert_eq!(matches("Ld ld LD", "ld"), vec![0..2, 3..5, 6..8]);
        assert_eq!(matches("Ld ld LD", "LD"), vec![6..8]);
        assert!(matches("x", "").is_empty());
    }
}
