//! The focusable panes' own view state: the cursor and scroll offsets of the program list
//! and of the IR, PTX and SASS code panes, kept apart from the model they show (the files in
//! [`super::Programs`], the emission in [`super::CodeView`]). The detail panel's cursor is
//! the panel's, with its tabs' states ([`super::Detail`]). [`super::App::pane`] and
//! [`super::App::pane_mut`] reach any of them by [`super::Focus`].

use super::PaneState;

/// Cursor and scroll offsets of the list and code panes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Panes {
    /// Program list.
    pub list: PaneState,
    /// IR pane.
    pub ir: PaneState,
    /// PTX pane.
    pub ptx: PaneState,
    /// SASS pane.
    pub sass: PaneState,
}

impl Panes {
    /// A freshly opened program: the code panes at the top (the list stays where it is).
    pub fn reset_code(&mut self) {
        self.ir = PaneState::default();
        self.ptx = PaneState::default();
        self.sass = PaneState::default();
    }
}
