//! Where every pane goes for a terminal size and the zoom/expand state, the detail panel's
//! content area and its tab bar's labels. Drawing, mouse hit tests and page sizes all use
//! these, so they always agree.

use ratatui::layout::Rect;

use super::app::{App, Focus, Tab};

/// Screen regions; a hidden pane has a zero-sized rect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    /// Program list.
    pub list: Rect,
    /// IR pane.
    pub ir: Rect,
    /// PTX pane.
    pub ptx: Rect,
    /// SASS pane (zero-sized while hidden).
    pub sass: Rect,
    /// Detail panel (tab bar inside its first row).
    pub detail: Rect,
    /// Status bar.
    pub status: Rect,
}

impl Areas {
    /// Rect of pane `f`.
    pub fn of(&self, f: Focus) -> Rect {
        match f {
            Focus::List => self.list,
            Focus::Ir => self.ir,
            Focus::Ptx => self.ptx,
            Focus::Sass => self.sass,
            Focus::Detail => self.detail,
        }
    }

    /// Lines of content pane `f` shows (inside borders; the detail panel also loses its tab
    /// bar row).
    pub fn page(&self, f: Focus) -> usize {
        let r = self.of(f);
        let chrome = if f == Focus::Detail { 3 } else { 2 };
        (r.height as usize).saturating_sub(chrome).max(1)
    }

    /// The pane under (column, row).
    pub fn hit(&self, x: u16, y: u16) -> Option<Focus> {
        Focus::ALL.into_iter().find(|f| {
            let r = self.of(*f);
            x >= r.x && x < r.x + r.width && y >= r.y && y < r.y + r.height
        })
    }
}

/// The detail panel's content area (inside its borders, below the tab bar).
pub fn detail_content(panel: Rect) -> Rect {
    if panel.width < 2 || panel.height < 3 {
        return Rect::new(panel.x, panel.y, 0, 0);
    }
    Rect::new(panel.x + 1, panel.y + 2, panel.width - 2, panel.height - 3)
}

/// The label of tab `t`, shown `i`-th in the tab bar.
pub fn tab_label(i: usize, t: Tab) -> String {
    format!(" {} {} ", i + 1, t.title())
}

/// The tab bar's labels for a bar `width` columns wide (each label followed by a one-column
/// separator), so that every tab stays reachable and the active one legible: whole titles
/// when they fit; else the inactive titles cut to the longest common length that fits
/// (`Occu…`), the active one whole; at worst the inactive tabs by number alone.
pub fn tab_labels(width: u16, tabs: &[Tab], active: Tab) -> Vec<String> {
    let full: Vec<String> = tabs
        .iter()
        .enumerate()
        .map(|(i, t)| tab_label(i, *t))
        .collect();
    let total = |v: &[String]| v.iter().map(|l| l.chars().count() + 1).sum::<usize>();
    if total(&full) <= usize::from(width) {
        return full;
    }
    let longest = tabs
        .iter()
        .map(|t| t.title().chars().count())
        .max()
        .unwrap_or(0);
    let cut = |n: usize| -> Vec<String> {
        tabs.iter()
            .enumerate()
            .map(|(i, t)| {
                let title = t.title();
                if *t == active || title.chars().count() <= n {
                    tab_label(i, *t)
                } else if n == 0 {
                    format!(" {} ", i + 1)
                } else {
                    let short: String = title.chars().take(n).collect();
                    format!(" {} {short}… ", i + 1)
                }
            })
            .collect()
    };
    (0..longest)
        .rev()
        .map(cut)
        .find(|v| total(v) <= usize::from(width))
        .unwrap_or_else(|| cut(0))
}

/// Index of the tab (of `tabs`, the ones shown, `active` among them) whose label is at
/// column `x` of the tab bar of the detail panel in `area`.
pub fn tab_at(area: Rect, x: u16, tabs: &[Tab], active: Tab) -> Option<usize> {
    let mut at = area.x + 1;
    for (i, label) in tab_labels(area.width.saturating_sub(2), tabs, active)
        .iter()
        .enumerate()
    {
        let w = label.chars().count() as u16;
        if x >= at && x < at + w {
            return Some(i);
        }
        at += w + 1;
    }
    None
}

/// The smallest screen the inspector draws its panes on (columns, rows); below it only a
/// notice shows (see [`too_small`]).
pub const MIN_SIZE: (u16, u16) = (60, 16);

/// True when a `width` x `height` screen is below [`MIN_SIZE`].
pub fn too_small(width: u16, height: u16) -> bool {
    width < MIN_SIZE.0 || height < MIN_SIZE.1
}

/// True when the program list is folded away: it lists a single file, which is open (the
/// code panes get its columns). `o` adds files and brings it back.
pub fn list_collapsed(app: &App) -> bool {
    app.programs.entries.len() <= 1 && app.programs.current.is_some()
}

/// Computes the layout of a `width` x `height` screen. Below [`MIN_SIZE`] every pane is
/// hidden (nothing to click or page through; the screen shows a notice).
pub fn areas(width: u16, height: u16, app: &App) -> Areas {
    if too_small(width, height) {
        return Areas::default();
    }
    let full = Rect::new(0, 0, width, height);
    let status = Rect::new(0, height.saturating_sub(1), width, height.min(1));
    let main = Rect::new(0, 0, width, height.saturating_sub(1));
    let mut a = Areas {
        status,
        ..Areas::default()
    };
    if full.is_empty() {
        return a;
    }
    if app.screen.expand {
        a.detail = main;
        return a;
    }
    let collapsed = list_collapsed(app);
    if app.screen.zoom {
        match app.screen.focus {
            Focus::List => a.list = main,
            Focus::Ir => a.ir = main,
            Focus::Ptx => a.ptx = main,
            Focus::Sass => a.sass = main,
            Focus::Detail => a.detail = main,
        }
        return a;
    }
    // The detail panel takes 2/5 of the height, at least 8 rows, and leaves the code panes
    // at least 6 rows (4 lines of code) on a 24-row terminal.
    let detail_h = (main.height * 2 / 5)
        .max(8)
        .min(main.height.saturating_sub(6));
    let top_h = main.height - detail_h;
    a.detail = Rect::new(0, top_h, width, detail_h);
    let list_w = if collapsed {
        0
    } else {
        (width / 6).clamp(14, 30).min(width / 3)
    };
    a.list = Rect::new(0, 0, list_w, top_h);
    let rest = width - list_w;
    let (ptx, sass) = (app.pane_shown(Focus::Ptx), app.pane_shown(Focus::Sass));
    if ptx && sass {
        // Three-way: IR, PTX and SASS share the width.
        let w = rest / 3;
        a.ir = Rect::new(list_w, 0, w, top_h);
        a.ptx = Rect::new(list_w + w, 0, w, top_h);
        a.sass = Rect::new(list_w + 2 * w, 0, rest - 2 * w, top_h);
        return a;
    }
    let ir_w = rest / 2;
    a.ir = Rect::new(list_w, 0, ir_w, top_h);
    let right = Rect::new(list_w + ir_w, 0, rest - ir_w, top_h);
    if sass {
        a.sass = right;
    } else {
        a.ptx = right;
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_inside_the_borders_below_the_tab_bar() {
        assert_eq!(
            detail_content(Rect::new(0, 14, 80, 9)),
            Rect::new(1, 16, 78, 6)
        );
        assert!(detail_content(Rect::new(0, 0, 80, 2)).is_empty());
    }
}
