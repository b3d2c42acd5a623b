//! Everything that can change the inspector's state (user commands bound to keys, text
//! input for prompts, mouse events, terminal resizes, worker replies) and what the state
//! asks the shell to do in return ([`Cmd`]).
//!
//! [`crate::tui::update::update`] is the only function that applies an [`Action`]; the
//! shell (terminal loop, headless replay) performs the [`Cmd`]s it returns.

use super::background::{Job, Reply};

/// A user command: what a key binding maps to. Names (`Command::name`) are the keys of the
/// `keys` object in the user config file, so they are part of the documented interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    /// Quit the inspector.
    Quit,
    /// Show or hide the help overlay.
    Help,
    /// Focus the next pane.
    FocusNext,
    /// Focus the previous pane.
    FocusPrev,
    /// Move the cursor up one line.
    Up,
    /// Move the cursor down one line.
    Down,
    /// Move left (previous detail tab when the detail panel has focus).
    Left,
    /// Move right (next detail tab when the detail panel has focus).
    Right,
    /// Scroll the focused code pane left.
    ScrollLeft,
    /// Scroll the focused code pane right.
    ScrollRight,
    /// One page up.
    PageUp,
    /// One page down.
    PageDown,
    /// First line.
    Home,
    /// Last line.
    End,
    /// Activate the item under the cursor (open program, jump to diagnostic's node).
    Enter,
    /// Close the overlay or clear the search.
    Escape,
    /// Jump to the next block of lines that map to another statement.
    NextBlock,
    /// Jump to the previous block of lines that map to another statement.
    PrevBlock,
    /// Previous step of an open pipeline (its Program in the IR pane).
    PrevStep,
    /// Next step of an open pipeline.
    NextStep,
    /// Start a search in the focused pane.
    Search,
    /// Next search match.
    SearchNext,
    /// Previous search match.
    SearchPrev,
    /// Maximize the focused pane (toggle).
    Zoom,
    /// Expand the detail panel over the panes (toggle).
    Expand,
    /// Next detail tab.
    NextTab,
    /// Previous detail tab.
    PrevTab,
    /// Show detail tab 1..9 directly.
    Tab(u8),
    /// Halve workgroup x.
    WgHalve,
    /// Double workgroup x.
    WgDouble,
    /// Workgroup x minus 32.
    WgMinus,
    /// Workgroup x plus 32.
    WgPlus,
    /// Type an exact workgroup size `X,Y,Z`.
    WgPrompt,
    /// Dispatch on the live GPU with verification.
    Dispatch,
    /// Run the tune sweep over workgroup sizes.
    Tune,
    /// Profile the open Program per IR statement (GPU worker, else the interpreter's
    /// instruction-count estimate): the heat gutter and the Profile tab.
    Profile,
    /// Pin the current lowering to diff against (again on the pinned one: unpin).
    Pin,
    /// Pin the tune sweep's best candidate (switches to its workgroup size).
    PinBest,
    /// Show the PTX and SASS panes as a diff against the pin (toggle).
    PinDiff,
    /// Go back to the pinned lowering's options, pinning the current ones.
    PinSwap,
    /// Unroll small constant-trip loops (toggle).
    Unroll,
    /// Cycle the SASS pane: beside the PTX pane, instead of it, hidden.
    SassPane,
    /// Cycle the PTX pane: ours, vyre's PTX, the comparison (feature `vyre`).
    VyreView,
    /// Switch the target sm.
    CycleSm,
    /// Switch the device profile.
    CycleDevice,
    /// Reload the current program from disk.
    Reload,
    /// Export the current view's data as JSON next to the program.
    Export,
    /// Export the current view's data as JSON to a typed path.
    ExportTo,
    /// Open another program file.
    Open,
    /// Timeline tab: show the whole span.
    TimelineFit,
    /// Timeline tab: show the next recorded form (a pipeline's separate launches / fused).
    TimelineForm,
    /// Plan tab: vyre-megakernel's plan of the pipeline and where it differs from ours, or
    /// ours again (feature `vyre`).
    PlanVyre,
    /// An open capture: order its dispatches by call, host time or device time.
    CaptureSort,
}

/// One state change.
#[derive(Debug)]
pub enum Action {
    /// A bound user command.
    Command(Command),
    /// A character typed into the open prompt.
    Input(char),
    /// Delete the character before the prompt's cursor.
    Backspace,
    /// Another editing key in the open prompt (cursor moves, Ctrl-U, Ctrl-W...).
    Edit(super::app::Edit),
    /// The terminal now has this size (columns, rows).
    Resize(u16, u16),
    /// Left click at (column, row).
    Click(u16, u16),
    /// Mouse wheel at (column, row): negative scrolls up.
    Wheel(u16, u16, i32),
    /// Horizontal wheel (or Shift + wheel) at (column, row): negative scrolls left.
    HWheel(u16, u16, i32),
    /// A reply from the worker thread.
    Worker(Reply),
    /// The worker thread is gone (it panicked): nothing is in flight any more.
    WorkerGone,
    /// The current program's file changed on disk (from `--watch`).
    FileChanged,
    /// Time passed (spinner, expiring status messages).
    Tick,
    /// What the shell's write of a [`Cmd::Export`] did.
    Exported(super::export::Exported),
}

/// Work for the shell, returned by [`crate::tui::update::update`] (which itself touches no
/// file, thread, GPU or terminal).
#[derive(Debug, Clone)]
pub enum Cmd {
    /// Run this job on the worker; its replies come back as [`Action::Worker`].
    Job(Job),
    /// Write an export (the shell answers with [`Action::Exported`]).
    Export(super::export::ExportJob),
    /// Leave the inspector.
    Quit,
}
