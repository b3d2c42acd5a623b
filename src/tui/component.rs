//! The inspector's panes and detail tabs as components, in the manner of gitui's: each one
//! says which keys it gives a meaning of its own (and applies them), which commands the
//! status bar hints while it has the focus, and draws itself. The component is the
//! behaviour; its view state is its own struct, apart from the shared model in [`App`]
//! (programs, emission, GPU session, results): the panes' cursors in
//! [`crate::tui::app::Panes`], the detail panel's cursor and active tab in
//! [`crate::tui::app::Detail`], and each tab's own state (the Timeline's zoom and lanes, the
//! Run tab's tune scroll) in [`state::TabStates`], built from the tab registry.
//!
//! - [`pane`]: the component of a focusable pane ([`Focus`]); the detail panel's hands on
//!   to the active tab's.
//! - [`tabs::TABS`]: the tab registry, the one list of tabs. A tab is one
//!   [`tabs::TabComponent`] there (title, when it is shown, keys, hints, drawing, scrollable
//!   rows, export, help lines, its own state); its identity ([`crate::tui::app::Tab`]) is
//!   its title, and the tab bar, the number keys, `<`/`>`, paging, mouse hits, export, help
//!   and the tab states all read the registry.
//! - [`state`]: the tabs' own view states, one container read by type.
//! - [`help`]: the help overlay's text: the keymap's bindings and the lines of the tabs
//!   that give keys their own meaning.
//!
//! [`crate::tui::update::update`] offers a command to the focused component first; what it
//! does not take gets the command's ordinary meaning.

use ratatui::layout::Rect;
use ratatui::Frame;
use serde_json::Value;

use super::action::{Cmd, Command};
use super::app::{App, Focus};
use super::highlight::Highlighter;

pub mod help;
pub mod panes;
pub mod state;
pub mod tabs;

/// A command the status bar hints, with the word shown beside its key.
pub type Hint = (Command, &'static str);

/// One pane of the screen.
pub trait Component: Sync {
    /// Applies `c` when it is one of this component's own keys now (it has the focus);
    /// false: not taken, the command's ordinary meaning applies.
    fn command(&self, _app: &mut App, _c: Command, _out: &mut Vec<Cmd>) -> bool {
        false
    }

    /// What the status bar hints while this has the focus.
    fn hints(&self, app: &App) -> Vec<Hint>;

    /// Draws the pane into `area`.
    fn draw(&self, frame: &mut Frame, area: Rect, app: &App, hl: &Highlighter);

    /// Name of what it shows, in export file names (`<program>.<name>.json`).
    fn export_name(&self, app: &App) -> String;

    /// What `x` exports while it has the focus.
    fn data(&self, app: &App) -> Value;
}

/// The component of pane `f`.
pub fn pane(f: Focus) -> &'static dyn Component {
    match f {
        Focus::List => &panes::List,
        Focus::Ir => &panes::Ir,
        Focus::Ptx => &panes::Ptx,
        Focus::Sass => &panes::Sass,
        Focus::Detail => &panes::Detail,
    }
}

/// The component that has the focus now.
pub fn focused(app: &App) -> &'static dyn Component {
    pane(app.screen.focus)
}

/// `cmds` with the keymap's hint words.
pub fn words(cmds: &[Command]) -> Vec<Hint> {
    cmds.iter().map(|c| (*c, c.hint())).collect()
}

/// A pane's own hints followed by the ones of the commands that work everywhere (workgroup,
/// run, tune), or on a pipeline its step key first and no workgroup or tune key: a
/// pipeline's fused kernels use the plan's workgroup sizes.
pub fn with_global(app: &App, own: &[Command]) -> Vec<Hint> {
    use Command::*;
    let mut v = own.to_vec();
    v.extend([WgHalve, WgDouble, Dispatch, Tune]);
    if app
        .programs
        .doc
        .as_ref()
        .is_some_and(|d| d.pipeline.is_some())
    {
        v.insert(0, NextStep);
        v.retain(|c| !matches!(c, WgHalve | WgDouble | Tune));
    }
    words(&v)
}
