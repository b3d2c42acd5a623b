//! The detail panel sub-state: the active tab, its cursor and the scroll offsets of its
//! lists.

use super::{PaneState, Tab};
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
    /// A pipeline is open: the Plan tab is shown too.
    pub pipeline: bool,
}

impl Default for Detail {
    fn default() -> Self {
        Detail {
            tab: Tab::Occupancy,
            pane: PaneState::default(),
            tune_scroll: 0,
            pipeline: false,
        }
    }
}

impl Detail {
    /// Applies the tab commands: next/previous tab, or a tab by number (Left/Right on the
    /// focused panel are its component's: `component::panes::Detail`). Needs no command.
    pub fn update(&mut self, action: &Action) -> Vec<Cmd> {
        let Action::Command(c) = action else {
            return Vec::new();
        };
        match c {
            Command::PrevTab => self.switch(self.neighbour(-1)),
            Command::NextTab => self.switch(self.neighbour(1)),
            Command::Tab(n) if (1..=self.tabs().len()).contains(&(*n as usize)) => {
                self.switch(*n as usize - 1)
            }
            _ => {}
        }
        Vec::new()
    }

    /// The tabs shown now ([`Tab::visible`]).
    pub fn tabs(&self) -> &'static [Tab] {
        Tab::visible(self.pipeline)
    }

    /// Says whether a pipeline is open; closing one leaves the Plan tab for the first.
    pub fn set_pipeline(&mut self, pipeline: bool) {
        self.pipeline = pipeline;
        if !self.tabs().contains(&self.tab) {
            self.switch(0);
        }
    }

    /// Shows tab `i` of the shown tabs (clamped) from its top.
    pub fn switch(&mut self, i: usize) {
        let tabs = self.tabs();
        self.tab = tabs[i.min(tabs.len() - 1)];
        self.pane = PaneState::default();
        self.tune_scroll = 0;
    }

    /// The tab `step` places after the active one (wrapping; negative goes back).
    pub fn neighbour(&self, step: isize) -> usize {
        // Counted among the tabs shown: a Program's Timeline follows Telemetry there.
        let tabs = self.tabs();
        let here = tabs.iter().position(|t| *t == self.tab).unwrap_or(0);
        (here as isize + step).rem_euclid(tabs.len() as isize) as usize
    }
}
