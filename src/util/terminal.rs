//! Text from a Program (its `doc`, names, comments) may hold escape sequences that a terminal
//! would obey: moving the cursor, retitling the window, hiding text. Before such text reaches
//! a terminal it goes through [`terminal_safe`], which shows every control character as a
//! visible `\u{..}` escape instead of sending it.

use std::borrow::Cow;

/// True for characters a terminal may interpret: C0 controls other than newline and tab,
/// DEL and the C1 controls (U+0080..=U+009F, which some terminals treat like ESC sequences).
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

/// `text` with every terminal control character (see above) replaced by its visible
/// `\u{..}` escape; newlines and tabs are kept. Borrowed when nothing needed replacing.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_controls_and_keeps_layout() {
        assert!(matches!(terminal_safe("plain\ttext\n"), Cow::Borrowed(_)));
        let s = terminal_safe("a\x1b]0;pwned\x07b\u{9b}2Jc\r\x7f");
        assert_eq!(s, "a\\u{1b}]0;pwned\\u{7}b\\u{9b}2Jc\\u{d}\\u{7f}");
        assert!(!s.chars().any(is_unsafe));
    }
}
