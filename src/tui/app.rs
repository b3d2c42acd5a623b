//! The inspector's whole state, composed of sub-states (one file each under `app/`): the
//! shared model (the program list and open program, the emission and its options, the GPU
//! session and results) and the view state of the components that show it (the list and
//! code panes' cursors, the detail panel with its tabs' own states, the overlay, the
//! screen). Only [`crate::tui::update::update`] changes it; views borrow it to draw.

use std::path::PathBuf;
use std::sync::Arc;

use crate::diagnostics::Diagnostic;
use crate::emit::EmitOptions;

use super::analysis::PtxView;
use super::component::tabs;
use super::keymap::KeyMap;
use super::sass_view::{SassMode, SassState, SassView, THREE_WAY_MIN_WIDTH};
use super::theme::Theme;
use super::vyre_view::VyreMode;

pub mod code;
pub mod detail;
pub mod jobs;
pub mod overlay;
pub mod panes;
pub mod programs;
pub mod screen;

pub use code::CodeView;
pub use detail::Detail;
pub use jobs::{Busy, Devices, Jobs, Session};
pub use overlay::{Edit, Overlay, Overlays, Prompt, PromptKind};
pub use panes::Panes;
pub use programs::{Entry, EntryStatus, Programs};
pub use screen::Screen;

/// Target sm versions `T` cycles through.
pub const SM_TARGETS: &[u32] = &[70, 75, 80, 86, 89, 90];

/// A focusable pane, in Tab order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Focus {
    /// Program list.
    List,
    /// IR text.
    Ir,
    /// PTX text.
    Ptx,
    /// SASS listing (when shown: `s`).
    Sass,
    /// Detail panel (tabs).
    Detail,
}

impl Focus {
    /// Tab order.
    pub const ALL: [Focus; 5] = [
        Focus::List,
        Focus::Ir,
        Focus::Ptx,
        Focus::Sass,
        Focus::Detail,
    ];

    /// Name for titles and export files.
    pub fn name(self) -> &'static str {
        match self {
            Focus::List => "programs",
            Focus::Ir => "ir",
            Focus::Ptx => "ptx",
            Focus::Sass => "sass",
            Focus::Detail => "detail",
        }
    }
}

/// A detail tab's identity: the title its component in
/// [`crate::tui::component::tabs::TABS`] gives it. The registry is the one list of tabs (their
/// order, titles, keys, rows, drawing, export and help); this is only a handle on one of
/// them, so adding a tab does not touch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tab(pub &'static str);

impl Tab {
    /// Title (tab bar, help, export file names).
    pub fn title(self) -> &'static str {
        self.0
    }

    /// Every registered tab, in display order (number keys follow the shown ones).
    pub fn all() -> Vec<Tab> {
        tabs::TABS.iter().map(|c| c.id()).collect()
    }

    /// Position in the registry.
    pub fn index(self) -> usize {
        tabs::TABS.iter().position(|c| c.id() == self).unwrap_or(0)
    }

    /// Tabs shown: those whose component shows for a pipeline (`pipeline`) or a Program,
    /// and the capture's tabs while a capture is open.
    pub fn visible(pipeline: bool, capture: bool) -> Vec<Tab> {
        tabs::TABS
            .iter()
            .filter(|c| c.shown(pipeline) && (capture || !c.capture_only()))
            .map(|c| c.id())
            .collect()
    }
}

/// Cursor and scroll offset of one list-like pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PaneState {
    /// Selected line (0-based).
    pub cursor: usize,
    /// First visible line.
    pub scroll: usize,
    /// First visible column of the text (code panes scroll sideways; others ignore it).
    pub hscroll: usize,
}

/// Severity of a status message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Information.
    Info,
    /// Something failed.
    Error,
}

/// The inspector state.
#[derive(Debug)]
pub struct App {
    /// Program files and the open program.
    pub programs: Programs,
    /// The emission the code panes show, and its options.
    pub code: CodeView,
    /// The list and code panes' cursors and scroll offsets.
    pub panes: Panes,
    /// Detail panel.
    pub detail: Detail,
    /// Help and prompts.
    pub overlay: Overlays,
    /// Focus, zoom, size, status message.
    pub screen: Screen,
    /// Devices, GPU results, jobs in flight.
    pub jobs: Jobs,
    /// Key bindings.
    pub keymap: KeyMap,
    /// Styles.
    pub theme: Theme,
    /// Where `x` exports (by default `tui::export::export_dir`; tests point it elsewhere).
    pub export_dir: Option<PathBuf>,
    /// The capture whose dispatches the program list holds (`vyrescope CAPTURE_DIR`).
    pub capture: Option<super::capture::CaptureView>,
}

impl App {
    /// A fresh state over `paths` (already expanded), not yet loaded: call
    /// [`crate::tui::update::start`] (setup does).
    pub fn new(paths: Vec<PathBuf>, keymap: KeyMap, theme: Theme) -> Self {
        App {
            programs: Programs::new(paths),
            code: CodeView::default(),
            panes: Panes::default(),
            detail: Detail::default(),
            overlay: Overlays::default(),
            screen: Screen::default(),
            jobs: Jobs::default(),
            keymap,
            theme,
            export_dir: super::export::export_dir(),
            capture: None,
        }
    }

    /// The workgroup size in effect.
    pub fn workgroup(&self) -> [u32; 3] {
        // A fused kernel's workgroup is the plan's; an override would emit another kernel.
        if let Some(d) = self.programs.doc.as_ref().filter(|d| d.pipeline.is_some()) {
            return d.program.workgroup_size;
        }
        self.code
            .workgroup
            .or_else(|| self.programs.doc.as_ref().map(|d| d.program.workgroup_size))
            .unwrap_or([256, 1, 1])
    }

    /// Emit options in effect.
    pub fn emit_options(&self) -> EmitOptions {
        EmitOptions {
            sm: self.code.sm,
            workgroup_size: self.workgroup(),
            lineinfo: false,
            unroll: self.code.unroll,
            grid_barrier: Default::default(),
            version_bounds: false,
        }
    }

    /// The PTX view, when emission succeeded.
    pub fn ptx_view(&self) -> Option<&Arc<PtxView>> {
        self.code
            .emission
            .as_ref()
            .and_then(|e| e.ptx.as_ref().ok())
    }

    /// Lines in the IR pane.
    pub fn ir_len(&self) -> usize {
        self.programs.doc.as_ref().map_or(0, |d| d.ir.len())
    }

    /// Lines in the PTX pane.
    pub fn ptx_len(&self) -> usize {
        if let Some(d) = self.code.pin_ptx() {
            return d.rows.len();
        }
        if self.code.vyre_mode != VyreMode::Off {
            return self.code.vyre_lines().map_or(0, |l| l.len());
        }
        self.ptx_view().map_or(0, |p| p.len())
    }

    /// Node under the IR cursor.
    pub fn ir_node(&self) -> Option<&str> {
        self.programs
            .doc
            .as_ref()?
            .ir
            .get(self.panes.ir.cursor)?
            .node
            .as_deref()
    }

    /// The SASS listing of the current emission, when assembled.
    pub fn sass_view(&self) -> Option<&Arc<SassView>> {
        match self.code.sass_state()? {
            SassState::Ready(v) => Some(v),
            _ => None,
        }
    }

    /// Whether pane `f` is on screen in the normal layout (the SASS pane only when shown,
    /// the PTX pane not while the SASS pane replaces it).
    pub fn pane_shown(&self, f: Focus) -> bool {
        let three_way = self.screen.size.0 >= THREE_WAY_MIN_WIDTH;
        match (f, self.code.sass_mode) {
            (Focus::Sass, SassMode::Off) => false,
            (Focus::Ptx, SassMode::Replace) => false,
            (Focus::Ptx, SassMode::Beside) => three_way,
            _ => true,
        }
    }

    /// Node of the SASS row under the SASS cursor.
    pub fn sass_node(&self) -> Option<&str> {
        if let Some(d) = self.code.pin_sass() {
            return d.rows.get(self.panes.sass.cursor)?.node.as_deref();
        }
        self.sass_view()?.node_at(self.panes.sass.cursor)
    }

    /// Node of the PTX line under the PTX cursor.
    pub fn ptx_node(&self) -> Option<&str> {
        if let Some(d) = self.code.pin_ptx() {
            return d.rows.get(self.panes.ptx.cursor)?.node.as_deref();
        }
        // vyre's lines have no source map.
        if self.code.vyre_mode != VyreMode::Off {
            return None;
        }
        self.ptx_view()?.corr.node_at(self.panes.ptx.cursor)
    }

    /// The node whose lines are correlated now: the focused code pane's cursor node (the
    /// IR cursor's otherwise).
    pub fn selected_node(&self) -> Option<&str> {
        match self.screen.focus {
            Focus::Ptx => self.ptx_node(),
            Focus::Sass => self.sass_node(),
            _ => self.ir_node(),
        }
    }

    /// All diagnostics of the open program (validator first, then emission's).
    pub fn diagnostics(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self
            .programs
            .doc
            .iter()
            .flat_map(|d| d.validation.iter())
            .collect();
        v.extend(self.code.emission.iter().flat_map(|e| e.diagnostics.iter()));
        v
    }

    /// Columns of the longest line of code pane `f` (0 for the other panes); tabs count as
    /// the four columns they expand to at most.
    pub fn pane_width(&self, f: Focus) -> usize {
        let width = |s: &str| {
            s.chars()
                .map(|c| if c == '\t' { 4 } else { 1 })
                .sum::<usize>()
        };
        match f {
            Focus::Ir => self.programs.doc.as_ref().map_or(0, |d| {
                d.ir.iter().map(|l| width(&l.code)).max().unwrap_or(0)
            }),
            Focus::Ptx if self.code.pin_ptx().is_some() => self.code.pin_ptx().map_or(0, |d| {
                d.rows.iter().map(|r| width(&r.text)).max().unwrap_or(0) + 2
            }),
            Focus::Ptx if self.code.vyre_mode != VyreMode::Off => self
                .code
                .vyre_lines()
                .map_or(0, |l| l.iter().map(|s| width(s)).max().unwrap_or(0)),
            Focus::Ptx => self.ptx_view().map_or(0, |p| {
                (0..p.len()).map(|i| width(p.line(i))).max().unwrap_or(0)
            }),
            _ => 0,
        }
    }

    /// Lines of pane `f` (the list's files, the code panes' lines; 0 for the detail panel,
    /// whose rows its tab's component measures).
    pub fn pane_len(&self, f: Focus) -> usize {
        match f {
            Focus::List => self.programs.entries.len(),
            Focus::Ir => self.ir_len(),
            Focus::Ptx => self.ptx_len(),
            Focus::Sass => match self.code.pin_sass() {
                Some(d) => d.rows.len(),
                None => self.sass_view().map_or(0, |v| v.len()),
            },
            // The detail panel's rows are its active tab's, which the tab's component
            // measures at the current layout (`component::tabs::row_count`).
            Focus::Detail => 0,
        }
    }

    /// Text of line `i` of pane `f`, for search.
    pub fn pane_line(&self, f: Focus, i: usize) -> Option<&str> {
        match f {
            Focus::Ir => self
                .programs
                .doc
                .as_ref()?
                .ir
                .get(i)
                .map(|l| l.code.as_str()),
            Focus::Ptx if self.code.pin_ptx().is_some() => {
                self.code.pin_ptx()?.rows.get(i).map(|r| r.text.as_str())
            }
            Focus::Ptx if self.code.vyre_mode != VyreMode::Off => {
                self.code.vyre_lines()?.get(i).map(String::as_str)
            }
            Focus::Ptx => self.ptx_view().filter(|p| i < p.len()).map(|p| p.line(i)),
            Focus::Sass if self.code.pin_sass().is_some() => {
                self.code.pin_sass()?.rows.get(i).map(|r| r.text.as_str())
            }
            Focus::Sass => self.sass_view().filter(|v| i < v.len()).map(|v| v.line(i)),
            _ => None,
        }
    }

    /// Mutable pane state of `f`.
    pub fn pane_mut(&mut self, f: Focus) -> &mut PaneState {
        match f {
            Focus::List => &mut self.panes.list,
            Focus::Ir => &mut self.panes.ir,
            Focus::Ptx => &mut self.panes.ptx,
            Focus::Sass => &mut self.panes.sass,
            Focus::Detail => &mut self.detail.pane,
        }
    }

    /// Pane state of `f`.
    pub fn pane(&self, f: Focus) -> PaneState {
        match f {
            Focus::List => self.panes.list,
            Focus::Ir => self.panes.ir,
            Focus::Ptx => self.panes.ptx,
            Focus::Sass => self.panes.sass,
            Focus::Detail => self.detail.pane,
        }
    }
}

/// Expands directories to their `*.json` files (sorted), and their vyre files (`*.vyre`,
/// `*.vyre.txt`) in a build that opens those; files are kept as given.
pub fn expand_paths(paths: &[PathBuf]) -> Vec<PathBuf> {
    let vyre = crate::ir::foreign::importer_installed();
    let wanted = |f: &std::path::Path| {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default();
        f.extension().is_some_and(|x| x == "json")
            || (vyre && (name.ends_with(".vyre") || name.ends_with(".vyre.txt")))
    };
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map(|rd| {
                    rd.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|f| wanted(f) && f.is_file())
                        .collect()
                })
                .unwrap_or_default();
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    out
}
