//! The inspector's whole state. Only [`crate::tui::update::update`] changes it; views borrow
//! it to draw.

use std::path::PathBuf;
use std::sync::Arc;

use crate::diagnostics::{Diagnostic, Severity};
use crate::emit::EmitOptions;
use crate::occupancy::{DeviceCaps, KernelResources};

use super::analysis::{Document, Emission, PtxView, Resources};
use super::backend::{Counters, RunRecord, TuneRow, NO_RUNTIME};
use super::keymap::KeyMap;
use super::theme::Theme;
use super::worker::{Job, ResKey};

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
    /// Detail panel (tabs).
    Detail,
}

impl Focus {
    /// Tab order.
    pub const ALL: [Focus; 4] = [Focus::List, Focus::Ir, Focus::Ptx, Focus::Detail];

    /// Name for titles and export files.
    pub fn name(self) -> &'static str {
        match self {
            Focus::List => "programs",
            Focus::Ir => "ir",
            Focus::Ptx => "ptx",
            Focus::Detail => "detail",
        }
    }
}

/// Detail tabs. Adding one: a variant here (and in `ALL`), a view file under `views/`, one
/// arm in `views::tabs::draw_tab`, one in `views::tab_rows::lists` and one in
/// `export::tab_data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    /// Occupancy vs block size.
    Occupancy,
    /// Registers, spills, shared, const, stack.
    Resources,
    /// Validator, launch, compile and performance diagnostics.
    Diagnostics,
    /// Dispatch history and tune sweeps.
    Run,
    /// PTX and module caches.
    Cache,
    /// Runtime counters since start.
    Telemetry,
}

impl Tab {
    /// Tabs in display order (number keys follow it).
    pub const ALL: [Tab; 6] = [
        Tab::Occupancy,
        Tab::Resources,
        Tab::Diagnostics,
        Tab::Run,
        Tab::Cache,
        Tab::Telemetry,
    ];

    /// Title.
    pub fn title(self) -> &'static str {
        match self {
            Tab::Occupancy => "Occupancy",
            Tab::Resources => "Resources",
            Tab::Diagnostics => "Diagnostics",
            Tab::Run => "Run",
            Tab::Cache => "Cache",
            Tab::Telemetry => "Telemetry",
        }
    }

    /// Position in [`Tab::ALL`].
    pub fn index(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
}

/// Cursor and scroll offset of one list-like pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PaneState {
    /// Selected line (0-based).
    pub cursor: usize,
    /// First visible line.
    pub scroll: usize,
}

/// What a prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// Search text for the focused pane.
    Search,
    /// Workgroup `X,Y,Z`.
    Workgroup,
    /// A program file or directory to open.
    Open,
    /// Path to export to.
    ExportPath,
}

impl PromptKind {
    /// Prompt label.
    pub fn label(self) -> &'static str {
        match self {
            PromptKind::Search => "search",
            PromptKind::Workgroup => "workgroup X,Y,Z",
            PromptKind::Open => "open file",
            PromptKind::ExportPath => "export to",
        }
    }
}

/// A modal overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlay {
    /// Help, scrolled by this many lines.
    Help(usize),
    /// A one-line text prompt.
    Prompt(PromptKind, String),
}

/// One file of the program list.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Path as given (or found in a directory).
    pub path: PathBuf,
    /// Validation summary, or the load error.
    pub status: EntryStatus,
}

/// A program file's state in the list.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryStatus {
    /// Parsed; counts of validator errors and warnings.
    Checked {
        /// Errors.
        errors: usize,
        /// Warnings.
        warnings: usize,
    },
    /// Could not be loaded (message with Fix).
    Failed(String),
}

impl EntryStatus {
    /// Summary of validator findings.
    pub fn of(diags: &[Diagnostic]) -> Self {
        EntryStatus::Checked {
            errors: diags
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count(),
            warnings: diags
                .iter()
                .filter(|d| d.severity == Severity::Warning)
                .count(),
        }
    }
}

/// Work in progress, for the progress indicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Busy {
    /// What runs.
    pub label: &'static str,
    /// Steps done.
    pub done: usize,
    /// Total steps (0 = unknown: spinner only).
    pub total: usize,
}

/// Severity of a status message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Information.
    Info,
    /// Something failed.
    Error,
}

/// Live device or offline profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Devices {
    /// Probed device, once the probe succeeds.
    pub live: Option<DeviceCaps>,
    /// Why there is no live device (until probed: "probing...").
    pub live_error: String,
    /// Offline profiles (name, caps).
    pub profiles: Vec<(String, DeviceCaps)>,
    /// Selected profile when offline (index into `profiles`).
    pub profile: usize,
}

impl Devices {
    /// The device estimates are made for: live first, else the selected profile.
    pub fn current(&self) -> Option<&DeviceCaps> {
        self.live
            .as_ref()
            .or_else(|| self.profiles.get(self.profile).map(|p| &p.1))
    }

    /// Status-bar label: the live device's name or `offline: <profile>`.
    pub fn label(&self) -> String {
        match (&self.live, self.profiles.get(self.profile)) {
            (Some(d), _) => d.name.clone(),
            (None, Some((n, _))) => format!("offline: {n}"),
            (None, None) => "offline: no profile".into(),
        }
    }
}

/// Results of GPU work this session.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Dispatches, oldest first.
    pub runs: Vec<RunRecord>,
    /// Why the last dispatch failed (shown in the Run tab).
    pub run_error: Option<String>,
    /// Last tune sweep.
    pub tune: Option<Result<Vec<TuneRow>, String>>,
    /// Cache statistics, or why there are none.
    pub cache: Result<Counters, String>,
    /// Telemetry, or why there is none.
    pub telemetry: Result<Counters, String>,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            runs: Vec::new(),
            run_error: None,
            tune: None,
            cache: Err(NO_RUNTIME.into()),
            telemetry: Err(NO_RUNTIME.into()),
        }
    }
}

/// The inspector state.
#[derive(Debug)]
pub struct App {
    /// Program files.
    pub entries: Vec<Entry>,
    /// Program list cursor.
    pub list: PaneState,
    /// Index of the open program in `entries`.
    pub current: Option<usize>,
    /// The open program.
    pub doc: Option<Document>,
    /// Why the selected program could not be opened.
    pub doc_error: Option<String>,
    /// Emission for the current options (None while the worker emits).
    pub emission: Option<Emission>,
    /// Bumped on every new emission request; highlight cache key and stale-result filter.
    pub generation: u64,
    /// Focused pane.
    pub focus: Focus,
    /// Active detail tab.
    pub tab: Tab,
    /// IR pane.
    pub ir: PaneState,
    /// PTX pane.
    pub ptx: PaneState,
    /// Detail panel: the cursor counts through the active tab's lists in order (on the Run
    /// tab: the dispatches, then the tune candidates); `scroll` is the first list's offset.
    pub detail: PaneState,
    /// First visible row of the Run tab's tune table (it scrolls apart from the history).
    pub tune_scroll: usize,
    /// Active search text (applies to the pane it was typed in).
    pub search: Option<(Focus, String)>,
    /// Focused pane maximized.
    pub zoom: bool,
    /// Detail panel expanded over the code panes.
    pub expand: bool,
    /// Open overlay.
    pub overlay: Option<Overlay>,
    /// Workgroup override (None: the program's own).
    pub workgroup: Option<[u32; 3]>,
    /// Target sm.
    pub sm: u32,
    /// True once the user chose the target sm (`--sm` or `T`): a later live probe then
    /// leaves it alone instead of switching to the device's own sm.
    pub sm_pinned: bool,
    /// Devices.
    pub devices: Devices,
    /// GPU results.
    pub session: Session,
    /// Running work.
    pub busy: Option<Busy>,
    /// Jobs queued or running on the worker.
    pub pending: usize,
    /// Last status message.
    pub message: Option<(Level, String)>,
    /// Terminal size (columns, rows).
    pub size: (u16, u16),
    /// Key bindings.
    pub keymap: KeyMap,
    /// Styles.
    pub theme: Theme,
    /// Jobs for the worker, drained by the event loop (keeps `update` free of threads).
    pub outbox: Vec<Job>,
    /// Set by quit.
    pub quit: bool,
    /// Ticks seen (spinner frame).
    pub ticks: u64,
    /// Kernel resources measured so far (tuning back and forth reuses them).
    pub resources: std::collections::HashMap<ResKey, Resources>,
    /// Resources to assume for every kernel instead of measuring (tests, `--regs`).
    pub fixed_resources: Option<KernelResources>,
}

impl App {
    /// A fresh state over `paths` (already expanded), not yet loaded: call
    /// [`crate::tui::update::open_selected`] (the run loop does).
    pub fn new(paths: Vec<PathBuf>, keymap: KeyMap, theme: Theme) -> Self {
        App {
            entries: paths
                .into_iter()
                .map(|path| Entry {
                    path,
                    status: EntryStatus::Checked {
                        errors: 0,
                        warnings: 0,
                    },
                })
                .collect(),
            list: PaneState::default(),
            current: None,
            doc: None,
            doc_error: None,
            emission: None,
            generation: 0,
            focus: Focus::Ir,
            tab: Tab::Occupancy,
            ir: PaneState::default(),
            ptx: PaneState::default(),
            detail: PaneState::default(),
            tune_scroll: 0,
            search: None,
            zoom: false,
            expand: false,
            overlay: None,
            workgroup: None,
            sm: 90,
            sm_pinned: false,
            devices: Devices {
                live: None,
                live_error: "probing...".into(),
                profiles: Vec::new(),
                profile: 0,
            },
            session: Session::default(),
            busy: None,
            pending: 0,
            message: None,
            size: (80, 24),
            keymap,
            theme,
            outbox: Vec::new(),
            quit: false,
            ticks: 0,
            resources: Default::default(),
            fixed_resources: None,
        }
    }

    /// The workgroup size in effect.
    pub fn workgroup(&self) -> [u32; 3] {
        self.workgroup
            .or_else(|| self.doc.as_ref().map(|d| d.program.workgroup_size))
            .unwrap_or([256, 1, 1])
    }

    /// Emit options in effect.
    pub fn emit_options(&self) -> EmitOptions {
        EmitOptions {
            sm: self.sm,
            workgroup_size: self.workgroup(),
            lineinfo: false,
            unroll: true,
        }
    }

    /// The PTX view, when emission succeeded.
    pub fn ptx_view(&self) -> Option<&Arc<PtxView>> {
        self.emission.as_ref().and_then(|e| e.ptx.as_ref().ok())
    }

    /// Lines in the IR pane.
    pub fn ir_len(&self) -> usize {
        self.doc.as_ref().map_or(0, |d| d.ir.len())
    }

    /// Lines in the PTX pane.
    pub fn ptx_len(&self) -> usize {
        self.ptx_view().map_or(0, |p| p.len())
    }

    /// Node under the IR cursor.
    pub fn ir_node(&self) -> Option<&str> {
        self.doc.as_ref()?.ir.get(self.ir.cursor)?.node.as_deref()
    }

    /// Node of the PTX line under the PTX cursor.
    pub fn ptx_node(&self) -> Option<&str> {
        self.ptx_view()?.corr.node_at(self.ptx.cursor)
    }

    /// The node whose lines are correlated now: the focused code pane's cursor node (the
    /// IR cursor's otherwise).
    pub fn selected_node(&self) -> Option<&str> {
        match self.focus {
            Focus::Ptx => self.ptx_node(),
            _ => self.ir_node(),
        }
    }

    /// All diagnostics of the open program (validator first, then emission's).
    pub fn diagnostics(&self) -> Vec<&Diagnostic> {
        let mut v: Vec<&Diagnostic> = self.doc.iter().flat_map(|d| d.validation.iter()).collect();
        v.extend(self.emission.iter().flat_map(|e| e.diagnostics.iter()));
        v
    }

    /// Lines of the text in pane `f` (IR or PTX).
    pub fn pane_len(&self, f: Focus) -> usize {
        match f {
            Focus::List => self.entries.len(),
            Focus::Ir => self.ir_len(),
            Focus::Ptx => self.ptx_len(),
            Focus::Detail => super::views::tab_rows::row_count(self),
        }
    }

    /// Text of line `i` of pane `f`, for search.
    pub fn pane_line(&self, f: Focus, i: usize) -> Option<&str> {
        match f {
            Focus::Ir => self.doc.as_ref()?.ir.get(i).map(|l| l.code.as_str()),
            Focus::Ptx => self.ptx_view().filter(|p| i < p.len()).map(|p| p.line(i)),
            _ => None,
        }
    }

    /// Mutable pane state of `f`.
    pub fn pane_mut(&mut self, f: Focus) -> &mut PaneState {
        match f {
            Focus::List => &mut self.list,
            Focus::Ir => &mut self.ir,
            Focus::Ptx => &mut self.ptx,
            Focus::Detail => &mut self.detail,
        }
    }

    /// Pane state of `f`.
    pub fn pane(&self, f: Focus) -> PaneState {
        match f {
            Focus::List => self.list,
            Focus::Ir => self.ir,
            Focus::Ptx => self.ptx,
            Focus::Detail => self.detail,
        }
    }
}

/// Expands directories to their `*.json` files (sorted); files are kept as given.
pub fn expand_paths(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .map(|rd| {
                    rd.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|f| f.extension().is_some_and(|x| x == "json") && f.is_file())
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
