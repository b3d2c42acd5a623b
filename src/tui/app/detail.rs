//! The detail panel sub-state: the active tab, its cursor and the scroll offset of its
//! first list, and the tabs' own view states ([`TabStates`], built from the registry).

use super::{PaneState, Tab};
use crate::tui::action::{Action, Cmd, Command};
use crate::tui::component::state::TabStates;

/// Detail panel state.
#[derive(Debug)]
pub struct Detail {
    /// Active detail tab.
    pub tab: Tab,
    /// The cursor counts through the active tab's lists in order (on the Run tab: the
    /// dispatches, then the tune candidates); `scroll` is the first list's offset.
    pub pane: PaneState,
    /// A pipeline is open: the tabs shown only for one (Plan) are shown too.
    pub pipeline: bool,
    /// A capture is open: its tab (Capture) is shown, last.
    pub capture: bool,
    /// Each tab's own view state (what its component keeps beyond the cursor).
    pub states: TabStates,
}

impl Default for Detail {
    fn default() -> Self {
        let mut d = Detail {
            tab: Tab(""),
            pane: PaneState::default(),
            pipeline: false,
            capture: false,
            states: TabStates::default(),
        };
        d.switch(0);
        d
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
    pub fn tabs(&self) -> Vec<Tab> {
        Tab::visible(self.pipeline, self.capture)
    }

    /// Says whether a capture is open, and shows its tab when one is.
    pub fn set_capture(&mut self, capture: bool) {
        use crate::tui::component::tabs::{Capture, TabComponent};
        self.capture = capture;
        if capture {
            self.show(Capture.id());
        } else if !self.tabs().contains(&self.tab) {
            self.switch(0);
        }
    }

    /// Says whether a pipeline is open; closing one leaves a pipeline's tab for the first.
    pub fn set_pipeline(&mut self, pipeline: bool) {
        self.pipeline = pipeline;
        if !self.tabs().contains(&self.tab) {
            self.switch(0);
        }
    }

    /// Shows tab `i` of the shown tabs (clamped) from its top.
    pub fn switch(&mut self, i: usize) {
        let tabs = self.tabs();
        if let Some(t) = tabs.get(i.min(tabs.len().saturating_sub(1))) {
            self.tab = *t;
        }
        self.pane = PaneState::default();
        self.states.switched();
    }

    /// Shows tab `t` from its top, unless it is shown already (or not shown at all).
    pub fn show(&mut self, t: Tab) {
        if self.tab != t {
            if let Some(i) = self.tabs().iter().position(|s| *s == t) {
                self.switch(i);
            }
        }
    }

    /// The tab `step` places after the active one (wrapping; negative goes back).
    pub fn neighbour(&self, step: isize) -> usize {
        // Counted among the tabs shown: a Program's Timeline follows Telemetry there.
        let tabs = self.tabs();
        let here = tabs.iter().position(|t| *t == self.tab).unwrap_or(0);
        (here as isize + step).rem_euclid(tabs.len().max(1) as isize) as usize
    }
}
