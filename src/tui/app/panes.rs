//! The focusable panes' own view state: the cursor and scroll offsets of the program list
//! and of the IR, PTX and SASS code panes and the search typed in one of them, kept apart from the model they show (the files in
//! [`super::Programs`], the emission in [`super::CodeView`]). The detail panel's cursor is
//! the panel's, with its tabs' states ([`super::Detail`]). [`super::App::pane`] and
//! [`super::App::pane_mut`] reach any of them by [`super::Focus`].

use super::{Focus, PaneState};

/// Cursor and scroll offsets of the list and code panes, and the search.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Panes {
    /// Program list.
    pub list: PaneState,
    /// IR pane.
    pub ir: PaneState,
    /// PTX pane.
    pub ptx: PaneState,
    /// SASS pane.
    pub sass: PaneState,
    /// Active search text (applies to the pane it was typed in).
    pub search: Option<(Focus, String)>,
}

impl Panes {
    /// A freshly opened program: the code panes at the top and no search (the list stays
    /// where it is).
    pub fn reset_code(&mut self) {
        self.search = None;
        self.ir = PaneState::default();
        self.ptx = PaneState::default();
        self.sass = PaneState::default();
    }
}
