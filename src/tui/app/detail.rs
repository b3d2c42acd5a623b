//! The detail panel sub-state: the active tab, its cursor and the scroll offsets of its
//! lists.

use super::{Focus, PaneState, Tab};
use crate::tui::action::{Action, Cmd, Command};

/// Detail panel state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detail {
    /// Active detail tab.
    pub tab: Tab,
    /// The cursor counts through the active tab's lists in order (on the Run tab: the
    /// dispatches, then the tune candidates); `scroll` is the first list's offset.
    pub pane: PaneState,
    /// First visible row of the Run tab's tune table (it scrolls apart from the history).
    pub tune_scroll: usize,
}

impl Default for Detail {
    fn default() -> Self {
        Detail {
            tab: Tab::Occupancy,
            pane: PaneState::default(),
            tune_scroll: 0,
        }
    }
}

impl Detail {
    /// Applies the tab commands: next/previous tab (Left/Right too while the panel has
    /// `focus`), or a tab by number. Needs no command.
    pub fn update(&mut self, action: &Action, focus: Focus) -> Vec<Cmd> {
        let Action::Command(c) = action else {
            return Vec::new();
        };
        let on_panel = focus == Focus::Detail;
        match c {
            Command::PrevTab => self.switch(self.neighbour(-1)),
            Command::Left if on_panel => self.switch(self.neighbour(-1)),
            Command::NextTab => self.switch(self.neighbour(1)),
            Command::Right if on_panel => self.switch(self.neighbour(1)),
            Command::Tab(n) if (1..=Tab::ALL.len()).contains(&(*n as usize)) => {
                self.switch(*n as usize - 1)
            }
            _ => {}
        }
        Vec::new()
    }

    /// Shows tab `i` of [`Tab::ALL`] (clamped) from its top.
    pub fn switch(&mut self, i: usize) {
        self.tab = Tab::ALL[i.min(Tab::ALL.len() - 1)];
        self.pane = PaneState::default();
        self.tune_scroll = 0;
    }

    /// The tab `step` places after the active one (wrapping; negative goes back).
    pub fn neighbour(&self, step: isize) -> usize {
        let n = Tab::ALL.len() as isize;
        (self.tab.index() as isize + step).rem_euclid(n) as usize
    }
}
