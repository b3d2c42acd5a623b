//! Word wrapping of styled lines to a width, done before drawing so a wrapped text's line
//! count is known: a text that scrolls needs it to know how far it can go.

use ratatui::text::{Line, Span};

/// Columns `s` takes on screen.
fn width(s: &str) -> usize {
    Span::raw(s).width()
}

/// Splits `s` after at most `cols` columns (at least one character, so it always advances).
fn split_at_cols(s: &str, cols: usize) -> (&str, &str) {
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w > cols && i > 0 {
            return s.split_at(i);
        }
        used += w;
    }
    (s, "")
}

/// Wraps each of `lines` at word boundaries to `cols` columns (words longer than a line are
/// cut); spans keep their styles, wrapped lines keep their line's style, and spaces at the
/// start and end of wrapped lines are dropped.
pub fn wrap(lines: &[Line<'_>], cols: usize) -> Vec<Line<'static>> {
    let cols = cols.max(1);
    let mut out = Vec::new();
    for line in lines {
        let mut cur: Vec<Span<'static>> = Vec::new();
        let mut used = 0usize;
        let flush = |cur: &mut Vec<Span<'static>>, used: &mut usize, out: &mut Vec<Line>| {
            // Drop the spaces the line ends with, across spans.
            while let Some(last) = cur.last_mut() {
                let kept = last.content.trim_end().to_string();
                if kept.is_empty() {
                    cur.pop();
                } else {
                    last.content = kept.into();
                    break;
                }
            }
            out.push(Line::from(std::mem::take(cur)).style(line.style));
            *used = 0;
        };
        for span in &line.spans {
            for word in span.content.split_inclusive(' ') {
                if used > 0 && used + width(word.trim_end()) > cols {
                    flush(&mut cur, &mut used, &mut out);
                }
                let mut rest = if used == 0 { word.trim_start() } else { word };
                // Only a word longer than a whole line is cut.
                while width(rest.trim_end()) > cols.saturating_sub(used) {
                    let (head, tail) = split_at_cols(rest, cols.saturating_sub(used));
                    cur.push(Span::styled(head.to_string(), span.style));
                    flush(&mut cur, &mut used, &mut out);
                    rest = tail;
                }
                if !rest.is_empty() {
                    cur.push(Span::styled(rest.to_string(), span.style));
                    used += width(rest);
                }
            }
        }
        flush(&mut cur, &mut used, &mut out);
    }
    out
}

/// `text` cut to `cols` display columns, ending in `…` when it was cut (a row that cannot
/// wrap says that it goes on).
pub fn ellipsize(text: &str, cols: usize) -> String {
    let width = |s: &str| ratatui::text::Span::raw(s).width();
    if width(text) <= cols {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = width(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > cols {
            break;
        }
        used += w;
        out.push(c);
    }
    if cols > 0 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::style::Style;

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn wraps_at_words_and_keeps_span_styles() {
        let bold = Style::new().bold();
        let l = Line::from(vec![
            Span::styled("limiter: ", bold),
            Span::raw("warps = registers per thread"),
        ]);
        let w = wrap(&[l], 16);
        assert_eq!(text(&w), ["limiter: warps =", "registers per", "thread"]);
        assert_eq!(w[0].spans[0].style, bold);
        assert_eq!(w[0].spans[1].style, Style::new());
        assert!(w.iter().all(|l| l.width() <= 16));
    }

    #[test]
    fn long_words_are_cut_and_empty_lines_kept() {
        let w = wrap(&[Line::raw("abcdefghij xy"), Line::raw("")], 4);
        assert_eq!(text(&w), ["abcd", "efgh", "ij", "xy", ""]);
    }

    #[test]
    fn every_word_survives_in_order() {
        let words: Vec<String> = (0..40).map(|i| "w".repeat(1 + i % 7)).collect();
        let joined = words.join(" ");
        for cols in 1..30 {
            let w = wrap(&[Line::raw(joined.clone())], cols);
            assert!(w.iter().all(|l| l.width() <= cols), "cols {cols}");
            let back: String = text(&w).concat();
            assert_eq!(
                back.replace(' ', ""),
                joined.replace(' ', ""),
                "cols {cols}"
            );
        }
    }

    #[test]
    fn ellipsize_marks_a_cut() {
        assert_eq!(super::ellipsize("short", 10), "short");
        assert_eq!(super::ellipsize("abcdefghij", 5), "abcd…");
        assert_eq!(super::ellipsize("abc", 0), "");
    }
}
