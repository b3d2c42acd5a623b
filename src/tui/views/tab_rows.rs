//! The scrollable lists of the detail tabs: how many rows each has, where it is drawn and how
//! far it is scrolled. One tab may hold several lists (the Run tab: the dispatch history, then
//! the tune table); the detail cursor counts through them in order, and each list keeps its
//! own scroll offset, so scrolling one leaves the other where it was. Each tab's component
//! says which lists it has ([`crate::tui::component::tabs::lists`]); drawing, paging, keeping
//! the cursor in view and mouse hits all use that, so they agree at every size.

use std::ops::Range;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

use super::run::RunState;
use crate::tui::app::{App, Detail, Focus};

/// Which scroll offset of the [`App`] a list uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offset {
    /// `app.detail.pane.scroll`: the tab's main list.
    Main,
    /// The Run tab's tune table ([`RunState::tune_scroll`], the tab's own state).
    Tune,
}

impl Offset {
    /// The stored offset.
    pub fn get(self, app: &App) -> usize {
        match self {
            Offset::Main => app.detail.pane.scroll,
            Offset::Tune => app
                .detail
                .states
                .get::<RunState>()
                .map_or(0, |s| s.tune_scroll),
        }
    }

    /// The stored offset in the detail panel's state, to change (None: the tab keeps no
    /// state of that type).
    pub fn get_mut(self, detail: &mut Detail) -> Option<&mut usize> {
        match self {
            Offset::Main => Some(&mut detail.pane.scroll),
            Offset::Tune => detail
                .states
                .get_mut::<RunState>()
                .map(|s| &mut s.tune_scroll),
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
}
