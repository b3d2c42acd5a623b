//! The PTX or SASS pane as a line diff against the pinned lowering (`D`): every line of both
//! lowerings in order, those only in the pin marked `-` (error colour), those only in the
//! current lowering `+` (ok colour), with each side's line number in the gutter; the rows of
//! the selected statement are marked as in the plain panes.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::code_view::{self, CodeView, Mark};
use crate::tui::app::{App, Focus};
use crate::tui::highlight::{Highlighter, Lang};
use crate::tui::pin::{LineDiff, Tag};

/// Draws `diff` into `inner` of pane `pane`.
pub fn draw(
    buf: &mut Buffer,
    inner: Rect,
    app: &App,
    hl: &Highlighter,
    pane: Focus,
    diff: &LineDiff,
) {
    let node = app.selected_node();
    let focused = app.screen.focus == pane;
    let cursor = app.pane(pane).cursor;
    let line = |i: usize| diff.rows.get(i).map_or("", |r| r.text.as_str());
    let digits = code_view::digits(diff.rows.iter().map(|r| r.line + 1).max().unwrap_or(1));
    let gutter = |i: usize| match diff.rows.get(i) {
        Some(r) => {
            let sign = match r.tag {
                Tag::Same => ' ',
                Tag::Removed => '-',
                Tag::Added => '+',
            };
            format!("{sign}{:>digits$}", r.line + 1)
        }
        None => String::new(),
    };
    let mark = |i: usize| {
        let of_node = node.is_some() && diff.rows.get(i).and_then(|r| r.node.as_deref()) == node;
        Mark::of(focused && i == cursor, of_node)
    };
    let (lang, salt) = match pane {
        Focus::Sass => (Lang::Sass, 5u64 << 58),
        _ => (Lang::Ptx, 6u64 << 58),
    };
    code_view::draw(
        buf,
        inner,
        app,
        hl,
        &CodeView {
            pane,
            lang,
            // Its own text: its own highlight-cache generation.
            generation: app.code.pin_gen ^ salt,
            len: diff.rows.len(),
            gutter_width: digits + 1,
            line: &line,
            gutter: &gutter,
            mark: &mark,
            heat: None,
        },
    );
    // Changed rows take their side's colour over the syntax colours (the cursor and
    // correlation backgrounds stay).
    let scroll = app.pane(pane).scroll;
    let t = &app.theme;
    for (row, i) in (scroll..diff.rows.len())
        .take(inner.height as usize)
        .enumerate()
    {
        let style = match diff.rows[i].tag {
            Tag::Same => continue,
            Tag::Removed => t.error,
            Tag::Added => t.ok,
        };
        let fg = ratatui::style::Style {
            fg: style.fg,
            ..Default::default()
        };
        let area = Rect::new(inner.x, inner.y + row as u16, inner.width, 1);
        buf.set_style(area, fg);
    }
}

/// `diff vs LABEL +A -R · now sm_X wg X,Y,Z` for a pane title: what is compared first, as
/// narrow panes cut titles from the right.
pub fn title(app: &App, diff: &LineDiff) -> String {
    let label = app
        .code
        .pin_view
        .as_ref()
        .map_or(String::new(), |v| v.label.clone());
    let now = crate::tui::pin::label(&(0, app.emit_options()));
    format!(
        "diff vs {label} +{} -{} · now {now}",
        diff.added, diff.removed
    )
}
