//! The scrollable lists of the detail tabs: how many rows each has, where it is drawn and how
//! far it is scrolled. One tab may hold several lists (the Run tab: the dispatch history, then
//! the tune table); the detail cursor counts through them in order, and each list keeps its
//! own scroll offset, so scrolling one leaves the other where it was. Drawing, paging,
//! keeping the cursor in view and mouse hits all use [`lists`], so they agree at every size.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use crate::tui::app::{App, Focus, Tab};
use crate::tui::layout::areas;

/// Which scroll offset of the [`App`] a list uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offset {
    /// `app.detail.pane.scroll`: the tab's main list.
    Main,
    /// `app.detail.tune_scroll`: the Run tab's tune table.
    Tune,
}

impl Offset {
    /// The stored offset.
    pub fn get(self, app: &App) -> usize {
        match self {
            Offset::Main => app.detail.pane.scroll,
            Offset::Tune => app.detail.tune_scroll,
        }
    }

    /// The stored offset, to change.
    pub fn get_mut(self, app: &mut App) -> &mut usize {
        match self {
            Offset::Main => &mut app.detail.pane.scroll,
            Offset::Tune => &mut app.detail.tune_scroll,
        }
    }
}

/// One scrollable list of the active tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowList {
    /// Where it is drawn, header included.
    pub area: Rect,
    /// The first row of `area` is a header that stays while the rows scroll.
    pub header: bool,
    /// Rows (for text: its wrapped lines).
    pub len: usize,
    /// Rows can be selected; otherwise it is text that the cursor scrolls (one cursor
    /// position per first line shown).
    pub select: bool,
    /// Detail-cursor position of its first row.
    pub first: usize,
    /// The scroll offset it uses.
    pub offset: Offset,
}

impl RowList {
    /// A list of selectable rows.
    pub fn rows_in(area: Rect, header: bool, len: usize, offset: Offset) -> Self {
        RowList {
            area,
            header,
            len,
            select: true,
            first: 0,
            offset,
        }
    }

    /// Text of `len` (wrapped) lines that only scrolls.
    pub fn text_in(area: Rect, len: usize) -> Self {
        RowList {
            select: false,
            ..RowList::rows_in(area, false, len, Offset::Main)
        }
    }

    /// Where the rows go (below the header).
    pub fn rows(&self) -> Rect {
        let h = u16::from(self.header).min(self.area.height);
        Rect::new(
            self.area.x,
            self.area.y + h,
            self.area.width,
            self.area.height - h,
        )
    }

    /// Rows shown at once (at least one, so paging always moves).
    pub fn page(&self) -> usize {
        (self.rows().height as usize).max(1)
    }

    /// More rows than fit: a scroll bar takes the last column.
    pub fn overflows(&self) -> bool {
        self.len > self.rows().height as usize
    }

    /// Where the content is drawn: the area less the scroll bar's column.
    pub fn body(&self) -> Rect {
        let bar = u16::from(self.overflows() && self.area.width > 1);
        Rect {
            width: self.area.width - bar,
            ..self.area
        }
    }

    /// Detail-cursor positions it takes: one per row, or one per scroll step of text.
    pub fn positions(&self) -> usize {
        match (self.select, self.len) {
            (true, n) => n,
            (false, 0) => 0,
            (false, n) => n.saturating_sub(self.page()) + 1,
        }
    }

    /// Whether detail-cursor position `cursor` is in this list.
    pub fn holds(&self, cursor: usize) -> bool {
        cursor >= self.first && cursor < self.first + self.positions()
    }

    /// The largest useful scroll offset.
    pub fn max_scroll(&self) -> usize {
        self.len.saturating_sub(self.page())
    }

    /// First row shown (the stored offset, clamped to the rows there are now).
    pub fn scroll(&self, app: &App) -> usize {
        self.offset.get(app).min(self.max_scroll())
    }

    /// Indices of the rows in view.
    pub fn visible(&self, app: &App) -> Range<usize> {
        let s = self.scroll(app);
        s..(s + self.rows().height as usize).min(self.len)
    }

    /// Style of row `i`: `base`, with the cursor style on top when it is the selected row
    /// of the focused panel (so a row's own color, e.g. the best tune row's, still shows).
    pub fn row_style(&self, app: &App, i: usize, base: Style) -> Style {
        if self.select
            && app.screen.focus == Focus::Detail
            && app.detail.pane.cursor == self.first + i
        {
            base.patch(app.theme.cursor)
        } else {
            base
        }
    }

    /// Draws the scroll bar in the last column of the rows, when they do not all fit.
    pub fn draw_scrollbar(&self, buf: &mut Buffer, app: &App) {
        let rows = self.rows();
        if !self.overflows() || rows.is_empty() || self.area.width < 2 {
            return;
        }
        let (h, len) = (rows.height as usize, self.len);
        let thumb = (h * h / len).clamp(1, h);
        let at = (self.scroll(app) * (h - thumb))
            .checked_div(self.max_scroll())
            .unwrap_or(0);
        let x = rows.x + rows.width - 1;
        for r in 0..h {
            let (sym, style) = if r >= at && r < at + thumb {
                ("┃", app.theme.border_focus)
            } else {
                ("│", app.theme.border)
            };
            buf[(x, rows.y + r as u16)].set_symbol(sym).set_style(style);
        }
    }
}

/// The detail panel's content area (inside its borders, below the tab bar).
pub fn content(panel: Rect) -> Rect {
    if panel.width < 2 || panel.height < 3 {
        return Rect::new(panel.x, panel.y, 0, 0);
    }
    Rect::new(panel.x + 1, panel.y + 2, panel.width - 2, panel.height - 3)
}

/// The active tab's lists when its content is drawn in `content`, in cursor order.
pub fn lists(app: &App, content: Rect) -> Vec<RowList> {
    let mut v = match app.detail.tab {
        Tab::Occupancy => super::occupancy::text_list(app, content)
            .into_iter()
            .collect(),
        Tab::Resources => app
            .code
            .emission
            .as_ref()
            .map(|e| RowList::rows_in(content, true, e.resources.len(), Offset::Main))
            .into_iter()
            .collect(),
        Tab::Diagnostics => super::diagnostics::list(app, content).into_iter().collect(),
        Tab::Run => super::run::row_lists(app, content),
        Tab::Cache => counter_list(&app.jobs.session.cache_rows(), content),
        Tab::Telemetry => counter_list(&app.jobs.session.telemetry_rows(), content),
        Tab::Plan => super::plan::list(app, content).into_iter().collect(),
        // The lanes keep their own cursor (`app.timeline`); nothing here scrolls.
        Tab::Timeline => Vec::new(),
    };
    let mut first = 0;
    for l in &mut v {
        l.first = first;
        first += l.positions();
    }
    v
}

fn counter_list(data: &Result<Vec<(String, String)>, String>, content: Rect) -> Vec<RowList> {
    match data {
        Ok(r) if !r.is_empty() => vec![RowList::rows_in(content, false, r.len(), Offset::Main)],
        _ => Vec::new(),
    }
}

/// The active tab's lists where the layout puts the detail panel now.
pub fn current(app: &App) -> Vec<RowList> {
    let panel = areas(app.screen.size.0, app.screen.size.1, app).detail;
    lists(app, content(panel))
}

/// Detail-cursor positions of the active tab.
pub fn row_count(app: &App) -> usize {
    current(app).iter().map(RowList::positions).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_below_the_header_and_a_bar_column_only_on_overflow() {
        let l = RowList::rows_in(Rect::new(2, 5, 40, 4), true, 3, Offset::Main);
        assert_eq!(l.rows(), Rect::new(2, 6, 40, 3));
        assert_eq!((l.page(), l.max_scroll(), l.positions()), (3, 0, 3));
        assert!(!l.overflows());
        assert_eq!(l.body().width, 40);
        let l = RowList { len: 12, ..l };
        assert!(l.overflows());
        assert_eq!((l.body().width, l.max_scroll(), l.positions()), (39, 9, 12));
    }

    #[test]
    fn text_takes_one_position_per_scroll_step() {
        let t = RowList::text_in(Rect::new(0, 0, 20, 4), 10);
        assert_eq!(t.positions(), 7);
        assert_eq!(RowList::text_in(Rect::new(0, 0, 20, 4), 3).positions(), 1);
        assert_eq!(RowList::text_in(Rect::new(0, 0, 20, 4), 0).positions(), 0);
    }

    #[test]
    fn content_is_inside_the_borders_below_the_tab_bar() {
        assert_eq!(content(Rect::new(0, 14, 80, 9)), Rect::new(1, 16, 78, 6));
        assert!(content(Rect::new(0, 0, 80, 2)).is_empty());
    }
}
