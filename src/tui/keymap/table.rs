//! The command table: every command's config name, help text, help section and default
//! keys, in help order. The keymap, the help overlay and the hints all read it.

use crate::tui::action::Command;

/// Help section a command is listed under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// Quit, help, focus, layout.
    General,
    /// Cursor and scrolling.
    Navigation,
    /// Search and correlation.
    Search,
    /// Workgroup, target, device.
    Tuning,
    /// GPU work, files, export.
    Actions,
}

impl Group {
    /// Section title.
    pub fn title(self) -> &'static str {
        match self {
            Group::General => "General",
            Group::Navigation => "Navigation",
            Group::Search => "Search and correlation",
            Group::Tuning => "Tuning (re-emits, re-maps, re-estimates at once)",
            Group::Actions => "Actions",
        }
    }
}

/// One command's row: config name, help text, help section, default keys and the word the
/// status bar's hint shows beside its key.
pub(super) type Row = (
    Command,
    &'static str,
    &'static str,
    Group,
    &'static [&'static str],
    &'static str,
);

/// Every command with its config name, help text, group, default keys and hint word.
pub(super) const TABLE: &[Row] = &[
    (
        Command::Quit,
        "quit",
        "quit",
        Group::General,
        &["q", "ctrl-c"],
        "quit",
    ),
    (
        Command::Help,
        "help",
        "help (this overlay)",
        Group::General,
        &["?", "f1"],
        "help",
    ),
    (
        Command::FocusNext,
        "focus_next",
        "focus next pane",
        Group::General,
        &["tab"],
        "focus_next",
    ),
    (
        Command::FocusPrev,
        "focus_prev",
        "focus previous pane",
        Group::General,
        &["backtab"],
        "focus_prev",
    ),
    (
        Command::SassPane,
        "sass",
        "SASS pane: cycle layout",
        Group::General,
        &["s"],
        "sass",
    ),
    (
        Command::VyreView,
        "vyre",
        "PTX pane: ours/vyre/diff",
        Group::General,
        &["v"],
        "vyre",
    ),
    (
        Command::Zoom,
        "zoom",
        "maximize focused pane",
        Group::General,
        &["z"],
        "zoom",
    ),
    (
        Command::Expand,
        "expand",
        "expand detail panel",
        Group::General,
        &["e"],
        "expand",
    ),
    (
        Command::NextTab,
        "next_tab",
        "next detail tab",
        Group::General,
        &[">"],
        "next_tab",
    ),
    (
        Command::PrevTab,
        "prev_tab",
        "previous detail tab",
        Group::General,
        &["<"],
        "prev_tab",
    ),
    (
        Command::Tab(1),
        "tab1",
        "detail tab 1",
        Group::General,
        &["1"],
        "tab1",
    ),
    (
        Command::Tab(2),
        "tab2",
        "detail tab 2",
        Group::General,
        &["2"],
        "tab2",
    ),
    (
        Command::Tab(3),
        "tab3",
        "detail tab 3",
        Group::General,
        &["3"],
        "tab3",
    ),
    (
        Command::Tab(4),
        "tab4",
        "detail tab 4",
        Group::General,
        &["4"],
        "tab4",
    ),
    (
        Command::Tab(5),
        "tab5",
        "detail tab 5",
        Group::General,
        &["5"],
        "tab5",
    ),
    (
        Command::Tab(6),
        "tab6",
        "detail tab 6",
        Group::General,
        &["6"],
        "tab6",
    ),
    (
        Command::Tab(7),
        "tab7",
        "detail tab 7",
        Group::General,
        &["7"],
        "tab7",
    ),
    (
        Command::Tab(8),
        "tab8",
        "detail tab 8",
        Group::General,
        &["8"],
        "tab8",
    ),
    (
        Command::Tab(9),
        "tab9",
        "detail tab 9",
        Group::General,
        &["9"],
        "tab9",
    ),
    (
        Command::Up,
        "up",
        "up",
        Group::Navigation,
        &["up", "k"],
        "up",
    ),
    (
        Command::Down,
        "down",
        "down",
        Group::Navigation,
        &["down", "j"],
        "down",
    ),
    (
        Command::Left,
        "left",
        "left / prev tab / scroll",
        Group::Navigation,
        &["left", "h"],
        "left",
    ),
    (
        Command::Right,
        "right",
        "right / next tab / scroll",
        Group::Navigation,
        &["right", "l"],
        "tab",
    ),
    (
        Command::ScrollLeft,
        "scroll_left",
        "scroll code pane left",
        Group::Navigation,
        &["H", "shift-left"],
        "scroll_left",
    ),
    (
        Command::ScrollRight,
        "scroll_right",
        "scroll code pane right",
        Group::Navigation,
        &["L", "shift-right"],
        "scroll",
    ),
    (
        Command::PageUp,
        "page_up",
        "page up",
        Group::Navigation,
        &["pgup", "ctrl-b"],
        "page_up",
    ),
    (
        Command::PageDown,
        "page_down",
        "page down",
        Group::Navigation,
        &["pgdn", "ctrl-f"],
        "page_down",
    ),
    (
        Command::Home,
        "home",
        "first line",
        Group::Navigation,
        &["home", "g"],
        "home",
    ),
    (
        Command::End,
        "end",
        "last line",
        Group::Navigation,
        &["end", "G"],
        "end",
    ),
    (
        Command::Enter,
        "enter",
        "open / jump to node",
        Group::Navigation,
        &["enter"],
        "open",
    ),
    (
        Command::Escape,
        "escape",
        "close / clear search",
        Group::Navigation,
        &["esc"],
        "escape",
    ),
    (
        Command::Search,
        "search",
        "search in pane",
        Group::Search,
        &["/"],
        "search",
    ),
    (
        Command::SearchNext,
        "search_next",
        "next match",
        Group::Search,
        &["n"],
        "next",
    ),
    (
        Command::SearchPrev,
        "search_prev",
        "previous match",
        Group::Search,
        &["N"],
        "search_prev",
    ),
    (
        Command::NextBlock,
        "next_block",
        "next correlated block",
        Group::Search,
        &["}"],
        "block",
    ),
    (
        Command::PrevBlock,
        "prev_block",
        "previous correlated block",
        Group::Search,
        &["{"],
        "prev_block",
    ),
    (
        Command::PrevStep,
        "prev_step",
        "previous pipeline step",
        Group::Search,
        &["("],
        "prev_step",
    ),
    (
        Command::NextStep,
        "next_step",
        "next pipeline step",
        Group::Search,
        &[")"],
        "step",
    ),
    (
        Command::WgHalve,
        "wg_halve",
        "workgroup x / 2",
        Group::Tuning,
        &["["],
        "wg/2",
    ),
    (
        Command::WgDouble,
        "wg_double",
        "workgroup x * 2",
        Group::Tuning,
        &["]"],
        "wg*2",
    ),
    (
        Command::WgMinus,
        "wg_minus",
        "workgroup x - 32",
        Group::Tuning,
        &["-"],
        "wg_minus",
    ),
    (
        Command::WgPlus,
        "wg_plus",
        "workgroup x + 32",
        Group::Tuning,
        &["+", "="],
        "wg_plus",
    ),
    (
        Command::WgPrompt,
        "wg_set",
        "type workgroup X,Y,Z",
        Group::Tuning,
        &["w"],
        "wg_set",
    ),
    (
        Command::CycleSm,
        "target_sm",
        "next target sm",
        Group::Tuning,
        &["T"],
        "target_sm",
    ),
    (
        Command::CycleDevice,
        "device",
        "next device profile",
        Group::Tuning,
        &["d"],
        "device",
    ),
    (
        Command::Unroll,
        "unroll",
        "unroll small loops on/off",
        Group::Tuning,
        &["u"],
        "unroll",
    ),
    (
        Command::Pin,
        "pin",
        "pin this lowering (again: unpin)",
        Group::Tuning,
        &["m"],
        "pin",
    ),
    (
        Command::PinDiff,
        "pin_diff",
        "PTX/SASS: diff against the pin",
        Group::Tuning,
        &["D"],
        "pin_diff",
    ),
    (
        Command::PinSwap,
        "pin_swap",
        "swap with the pinned lowering",
        Group::Tuning,
        &["P"],
        "pin_swap",
    ),
    (
        Command::PinBest,
        "pin_best",
        "pin the tune sweep's best",
        Group::Tuning,
        &["b"],
        "pin_best",
    ),
    (
        Command::Dispatch,
        "dispatch",
        "dispatch on GPU + verify",
        Group::Actions,
        &["r"],
        "run",
    ),
    (
        Command::Tune,
        "tune",
        "tune sweep (no GPU: estimate)",
        Group::Actions,
        &["t"],
        "tune",
    ),
    (
        Command::Profile,
        "profile",
        "profile per IR statement (offline: ESTIMATE)",
        Group::Actions,
        &["p"],
        "profile",
    ),
    (
        Command::Reload,
        "reload",
        "reload program",
        Group::Actions,
        &["R"],
        "reload",
    ),
    (
        Command::Export,
        "export",
        "export view as JSON",
        Group::Actions,
        &["x"],
        "export",
    ),
    (
        Command::ExportTo,
        "export_to",
        "export view to path",
        Group::Actions,
        &["X"],
        "export_to",
    ),
    (
        Command::Open,
        "open",
        "open file",
        Group::Actions,
        &["o"],
        "file",
    ),
    (
        Command::TimelineFit,
        "timeline_fit",
        "Timeline: fit",
        Group::Navigation,
        &["0"],
        "timeline_fit",
    ),
    (
        Command::TimelineForm,
        "timeline_form",
        "Timeline: next form",
        Group::Navigation,
        &["f"],
        "timeline_form",
    ),
    (
        Command::PlanVyre,
        "plan_vyre",
        "Plan: vyre's plan / ours",
        Group::Navigation,
        &["V"],
        "plan_vyre",
    ),
    (
        Command::CaptureSort,
        "capture_sort",
        "capture: sort by time",
        Group::Navigation,
        &["S"],
        "sort",
    ),
];

impl Command {
    fn row(self) -> Option<&'static Row> {
        TABLE.iter().find(|r| r.0 == self)
    }

    /// False for commands of a feature this build lacks (the vyre views without `vyre`):
    /// they get no key and no help line.
    pub fn available(self) -> bool {
        !matches!(self, Command::VyreView | Command::CaptureSort) || cfg!(feature = "vyre")
    }

    /// Name in the config file's `keys` object.
    pub fn name(self) -> &'static str {
        self.row().map_or("?", |r| r.1)
    }

    /// One-line help text.
    pub fn describe(self) -> &'static str {
        self.row().map_or("", |r| r.2)
    }

    /// Help section.
    pub fn group(self) -> Group {
        self.row().map_or(Group::General, |r| r.3)
    }

    /// The word the status bar's hint shows beside the command's key.
    pub fn hint(self) -> &'static str {
        self.row().map_or("?", |r| r.5)
    }

    /// Looks a command up by config name.
    pub fn from_name(name: &str) -> Option<Command> {
        TABLE.iter().find(|r| r.1 == name).map(|r| r.0)
    }
}
