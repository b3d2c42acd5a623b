//! Navigation: cursors and scrolling of every pane, the IR <-> PTX correlation, block
//! jumps, search, and the mouse.

use ratatui::layout::Position;

use crate::tui::action::Cmd;
use crate::tui::app::{App, Focus};
use crate::tui::component::tabs::{self as tab_rows, TabComponent};
use crate::tui::layout::{areas, tab_at, Areas};
use crate::tui::views::tab_rows::RowList;

use super::program;

fn layout(app: &App) -> Areas {
    areas(app.screen.size.0, app.screen.size.1, app)
}

/// Lines a page moves in pane `f`: its height, or in the detail panel the height of the
/// list that holds the cursor.
pub(super) fn page(app: &App, f: Focus) -> usize {
    if f == Focus::Detail {
        let cur = app.detail.pane.cursor;
        if let Some(l) = tab_rows::current(app).iter().find(|l| l.holds(cur)) {
            return l.page();
        }
    }
    layout(app).page(f)
}

/// Moves the focused pane's cursor by `delta` lines (clamped), then syncs the other pane.
pub(super) fn move_cursor(app: &mut App, delta: isize) {
    let f = app.screen.focus;
    set_cursor(app, f, app.pane(f).cursor as isize + delta);
}

/// Lines (cursor positions) of pane `f`: the detail panel's are its active tab's rows.
fn len(app: &App, f: Focus) -> usize {
    match f {
        Focus::Detail => tab_rows::row_count(app),
        _ => app.pane_len(f),
    }
}

/// Puts pane `f`'s cursor on `line` (clamped), keeps it visible and syncs the other pane.
pub(super) fn set_cursor(app: &mut App, f: Focus, line: isize) {
    let len = len(app, f);
    let cur = line.clamp(0, len.saturating_sub(1) as isize) as usize;
    app.pane_mut(f).cursor = cur;
    keep_visible(app, f);
    match f {
        Focus::Ir => sync_from_ir(app),
        Focus::Ptx => sync_from_ptx(app),
        Focus::Sass => sync_from_sass(app),
        // A row of the Profile tab selects its statement in the code panes.
        Focus::Detail if app.detail.tab == tab_rows::Profile.id() => {
            super::profile::select_row(app)
        }
        _ => {}
    }
}

/// Scrolls pane `f` just enough to show its cursor.
pub(super) fn keep_visible(app: &mut App, f: Focus) {
    if f == Focus::Detail {
        return keep_detail_visible(app);
    }
    let page = layout(app).page(f);
    let len = app.pane_len(f);
    let p = app.pane_mut(f);
    p.cursor = p.cursor.min(len.saturating_sub(1));
    if p.cursor < p.scroll {
        p.scroll = p.cursor;
    } else if p.cursor >= p.scroll + page {
        p.scroll = p.cursor + 1 - page;
    }
    p.scroll = p.scroll.min(len.saturating_sub(page));
}

/// Clamps the detail cursor to the active tab's rows and scrolls the list that holds it just
/// enough to show it (a text list scrolls to it); the other lists keep their offsets,
/// clamped to their rows.
fn keep_detail_visible(app: &mut App) {
    let lists = tab_rows::current(app);
    let total: usize = lists.iter().map(RowList::positions).sum();
    app.detail.pane.cursor = app.detail.pane.cursor.min(total.saturating_sub(1));
    let cur = app.detail.pane.cursor;
    for l in &lists {
        let page = l.page();
        let max = l.max_scroll();
        let Some(s) = l.offset.get_mut(&mut app.detail) else {
            continue;
        };
        if l.holds(cur) {
            let row = cur - l.first;
            if !l.select || row < *s {
                *s = row;
            } else if row >= *s + page {
                *s = row + 1 - page;
            }
        }
        *s = (*s).min(max);
    }
}

/// Scrolls pane `f` so lines `first..=last` are in view, preferring a third from the top
/// when they are not (the eye finds them where it expects).
fn reveal(app: &mut App, f: Focus, first: usize, last: usize) {
    let page = layout(app).page(f);
    let len = app.pane_len(f);
    let p = app.pane_mut(f);
    if first < p.scroll || last >= p.scroll + page {
        p.scroll = if last - first + 1 >= page {
            first
        } else {
            first.saturating_sub(page / 3)
        };
        p.scroll = p.scroll.min(len.saturating_sub(page));
    }
}

/// IR cursor moved: the PTX cursor goes to the first line of the node's PTX and the pane
/// scrolls to show its lines.
pub fn sync_from_ir(app: &mut App) {
    let Some(node) = app.ir_node().map(str::to_string) else {
        return;
    };
    if pin_sync(app, &node, Focus::Ir) {
        return;
    }
    let Some(view) = app.ptx_view().cloned() else {
        return;
    };
    let ranges = view.corr.lines_of(&node);
    let (Some(first), Some(last)) = (
        ranges.iter().map(|r| r[0] as usize).min(),
        ranges.iter().map(|r| r[1] as usize).max(),
    ) else {
        return;
    };
    let (first, last) = (
        first.saturating_sub(1),
        last.saturating_sub(1).min(view.len().saturating_sub(1)),
    );
    app.panes.ptx.cursor = first;
    reveal(app, Focus::Ptx, first, last.max(first));
    sass_to_node(app, &node);
}

/// The SASS cursor goes to the first instruction of `node` and the pane scrolls to show
/// its instructions.
fn sass_to_node(app: &mut App, node: &str) {
    let Some((first, last)) = app.sass_view().and_then(|v| v.span_of(node)) else {
        return;
    };
    app.panes.sass.cursor = first;
    reveal(app, Focus::Sass, first, last);
}

/// SASS cursor moved: the IR cursor goes to the instruction's statement, the PTX cursor to
/// the instruction's own PTX line.
pub fn sync_from_sass(app: &mut App) {
    if app.code.pin_sass().is_some() {
        if let Some(node) = app.sass_node().map(str::to_string) {
            pin_sync(app, &node, Focus::Sass);
        }
        return;
    }
    let Some(view) = app.sass_view().cloned() else {
        return;
    };
    let Some(row) = view.rows.get(app.panes.sass.cursor) else {
        return;
    };
    if let Some(line) = row.ptx_line {
        let l = (line as usize).saturating_sub(1);
        if l < app.ptx_len() {
            app.panes.ptx.cursor = l;
            reveal(app, Focus::Ptx, l, l);
        }
    }
    let Some(line) = row
        .node
        .as_deref()
        .and_then(|n| app.programs.doc.as_ref()?.ir_line_of(n))
    else {
        return;
    };
    app.panes.ir.cursor = line;
    reveal(app, Focus::Ir, line, line);
}

/// PTX cursor moved: the IR cursor goes to the statement that produced the line.
pub fn sync_from_ptx(app: &mut App) {
    let Some(node) = app.ptx_node().map(str::to_string) else {
        return;
    };
    if pin_sync(app, &node, Focus::Ptx) {
        return;
    }
    let Some(line) = app.programs.doc.as_ref().and_then(|d| d.ir_line_of(&node)) else {
        return;
    };
    app.panes.ir.cursor = line;
    reveal(app, Focus::Ir, line, line);
    // The SASS of the PTX line itself when it has any, else of its statement.
    let row = app
        .sass_view()
        .and_then(|v| v.row_of_ptx_line(app.panes.ptx.cursor as u32 + 1));
    match row {
        Some(r) => {
            app.panes.sass.cursor = r;
            reveal(app, Focus::Sass, r, r);
        }
        None => sass_to_node(app, &node),
    }
}

/// While the panes show the diff against the pin, moves every pane but `from` to `node`
/// (its rows in the diffs, its line in the IR); false when no diff is shown.
fn pin_sync(app: &mut App, node: &str, from: Focus) -> bool {
    let Some(v) = app.code.pin_view.clone().filter(|_| app.code.pin_diff) else {
        return false;
    };
    if from != Focus::Ptx {
        if let Some((a, b)) = v.ptx.span_of(node) {
            app.panes.ptx.cursor = a;
            reveal(app, Focus::Ptx, a, b);
        }
    }
    if from != Focus::Sass {
        match v.sass.as_ref() {
            Some(d) => {
                if let Some((a, b)) = d.span_of(node) {
                    app.panes.sass.cursor = a;
                    reveal(app, Focus::Sass, a, b);
                }
            }
            // The pin's SASS is not assembled yet: the pane shows the plain listing.
            None => sass_to_node(app, node),
        }
    }
    if from != Focus::Ir {
        if let Some(line) = app.programs.doc.as_ref().and_then(|d| d.ir_line_of(node)) {
            app.panes.ir.cursor = line;
            reveal(app, Focus::Ir, line, line);
        }
    }
    true
}

pub(super) fn jump_block(app: &mut App, forward: bool) {
    let f = app.screen.focus;
    let len = app.pane_len(f);
    let cur = app.pane(f).cursor;
    let key = |app: &App, i: usize| -> Option<String> {
        match f {
            Focus::Ir => {
                let node = app.programs.doc.as_ref()?.ir.get(i)?.node.clone()?;
                let has = app
                    .ptx_view()
                    .is_some_and(|v| !v.corr.lines_of(&node).is_empty());
                has.then_some(node.to_string())
            }
            Focus::Ptx => match app.code.pin_ptx() {
                Some(d) => d.rows.get(i)?.node.clone(),
                None => app.ptx_view()?.corr.node_at(i).map(str::to_string),
            },
            Focus::Sass => match app.code.pin_sass() {
                Some(d) => d.rows.get(i)?.node.clone(),
                None => app.sass_view()?.node_at(i).map(str::to_string),
            },
            _ => None,
        }
    };
    if !matches!(f, Focus::Ir | Focus::Ptx | Focus::Sass) || len == 0 {
        return;
    }
    let here = key(app, cur);
    let mut i = cur;
    loop {
        if forward {
            if i + 1 >= len {
                return app.screen.info("no further correlated block");
            }
            i += 1;
        } else {
            if i == 0 {
                return app.screen.info("no earlier correlated block");
            }
            i -= 1;
        }
        let k = key(app, i);
        if k.is_some() && k != here {
            // Backwards, land on the first line of that block.
            if !forward {
                while i > 0 && key(app, i - 1) == k {
                    i -= 1;
                }
            }
            return set_cursor(app, f, i as isize);
        }
    }
}

fn smart_match(hay: &str, needle: &str) -> bool {
    if needle.chars().any(char::is_uppercase) {
        hay.contains(needle)
    } else {
        hay.to_lowercase().contains(needle)
    }
}

/// Moves to the next (or previous) match; `inclusive` also accepts the cursor line.
pub(super) fn search_step(app: &mut App, forward: bool, inclusive: bool) {
    let Some((f, q)) = app.panes.search.clone() else {
        return app.screen.info("no search: press / first");
    };
    let len = app.pane_len(f);
    if len == 0 {
        return;
    }
    let cur = app.pane(f).cursor;
    for k in 0..len {
        let step = if inclusive { k } else { k + 1 };
        let i = if forward {
            (cur + step) % len
        } else {
            (cur + len * 2 - step) % len
        };
        if app.pane_line(f, i).is_some_and(|l| smart_match(l, &q)) {
            app.screen.focus = f;
            if (forward && i < cur) || (!forward && i > cur) {
                app.screen.info(format!("search wrapped: {q}"));
            }
            set_cursor(app, f, i as isize);
            return reveal_match(app, f, i, &q);
        }
    }
    app.screen.error(format!("not found: {q}"));
}

/// Columns of text code pane `f` shows beside its gutter (as the views draw it).
fn text_columns(app: &App, f: Focus) -> usize {
    let inner = (layout(app).of(f).width as usize).saturating_sub(2);
    let gutter = match f {
        Focus::Ir => app.programs.doc.as_ref().map_or(0, |d| {
            d.ir.iter()
                .filter_map(|l| l.node.as_ref().map(|n| n.len()))
                .max()
                .unwrap_or(0)
                .min(inner / 3)
        }),
        _ => crate::tui::views::code_view::digits(app.pane_len(f)),
    };
    inner.saturating_sub(gutter + 1).max(1)
}

/// Scrolls code pane `f` sideways so that the first match of `q` on line `i` shows (a match
/// past the right edge would otherwise be found but not seen).
fn reveal_match(app: &mut App, f: Focus, i: usize, q: &str) {
    let Some(line) = app.pane_line(f, i) else {
        return;
    };
    let line = line.replace('\t', "    ");
    let fold = !q.chars().any(char::is_uppercase);
    let (hay, needle) = if fold {
        (line.to_ascii_lowercase(), q.to_ascii_lowercase())
    } else {
        (line.clone(), q.to_string())
    };
    let Some(byte) = hay.find(&needle) else {
        return;
    };
    let start = hay[..byte].chars().count();
    let end = start + needle.chars().count();
    let width = text_columns(app, f);
    let h = app.pane(f).hscroll;
    if start < h || end > h + width {
        // Leave some context on the left, in whole scroll steps.
        let to = start.saturating_sub(width / 4) / HSCROLL_STEP * HSCROLL_STEP;
        app.pane_mut(f).hscroll = if end <= width { 0 } else { to };
    }
}

pub(super) fn click(app: &mut App, x: u16, y: u16, out: &mut Vec<Cmd>) {
    if app.overlay.open.is_some() {
        app.overlay.open = None;
        return;
    }
    let a = layout(app);
    let Some(f) = a.hit(x, y) else { return };
    app.screen.focus = f;
    let r = a.of(f);
    if f == Focus::Detail {
        if y == r.y + 1 {
            if let Some(i) = tab_at(r, x, &app.detail.tabs(), app.detail.tab) {
                app.detail.switch(i);
            }
            return;
        }
        // A click on a Timeline lane puts the cursor on the slice there.
        if super::timeline::click(app, x, y, out) {
            return;
        }
        // A click on a list's row selects it (headers and text are not rows).
        let hit = tab_rows::current(app).into_iter().find_map(|l| {
            let rows = l.rows();
            if !l.select || !rows.contains(Position::new(x, y)) {
                return None;
            }
            let row = l.scroll(app) + usize::from(y - rows.y);
            (row < l.len).then_some(l.first + row)
        });
        if let Some(i) = hit {
            set_cursor(app, f, i as isize);
        }
        return;
    }
    if y > r.y && y + 1 < r.y + r.height {
        let line = app.pane(f).scroll + (y - r.y - 1) as usize;
        if line < app.pane_len(f) {
            set_cursor(app, f, line as isize);
            if f == Focus::List {
                program::open_selected(app, out);
            }
        }
    }
}

/// Columns one sideways step moves.
pub const HSCROLL_STEP: usize = 8;

/// Scrolls code pane `f` sideways by `steps` steps of [`HSCROLL_STEP`] columns, stopping
/// where the longest line's last few columns still show. Other panes do not scroll
/// sideways.
pub(crate) fn hscroll(app: &mut App, f: Focus, steps: isize) {
    if !matches!(f, Focus::Ir | Focus::Ptx) {
        return;
    }
    let max = app.pane_width(f).saturating_sub(HSCROLL_STEP);
    let p = app.pane_mut(f);
    let to = p.hscroll as isize + steps * HSCROLL_STEP as isize;
    p.hscroll = (to.max(0) as usize).min(max);
}

/// Horizontal wheel (or Shift + wheel) over a pane: scrolls it sideways.
pub(super) fn hwheel(app: &mut App, x: u16, y: u16, delta: i32) {
    if let Some(f) = layout(app).hit(x, y) {
        hscroll(app, f, delta as isize);
    }
}

pub(super) fn wheel(app: &mut App, x: u16, y: u16, delta: i32) {
    let Some(f) = layout(app).hit(x, y) else {
        return;
    };
    app.screen.focus = f;
    move_cursor(app, delta as isize * 3);
}
