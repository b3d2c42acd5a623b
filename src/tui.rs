//! The inspector: a terminal UI over Programs, their PTX, occupancy and live dispatches.
//!
//! The only user of `ratatui`, `crossterm` and `syntect`. Built as state + actions + views:
//!
//! - [`app::App`]: all state, composed of sub-states; [`action::Action`]: every possible
//!   change; [`update::update`]: the only function that applies one, returning
//!   [`action::Cmd`]s (worker jobs, quit) for the shell to perform.
//! - [`component`]: each pane and detail tab as a component: its own keys, its status-bar
//!   hints and its drawing; the tab registry. [`views`]: draw from `&App` only; [`layout`]
//!   places panes for draw, mouse and paging.
//! - [`background`]: slow work (loading, planning, large emissions, probe, dispatch, tune,
//!   profiles: [`profile`]) on
//!   two threads off the UI thread, reporting through a channel; [`gpu::Gpu`] is the one
//!   seam to the CUDA runtime (whose GPU work runs in the GPU worker process,
//!   `runtime::worker`), an instance made by [`run`] (or the replay's caller) and owned by
//!   the GPU thread.
//! - `terminal`: raw mode, alternate screen, mouse, the event loop and restoring the
//!   terminal on every exit path (including panics).
//! - [`replay`]: the same update and draw against a text backend for `--keys`/`--snapshot`.
//! - [`keymap`], `theme`, [`config`], [`highlight`]: data with defaults that the user
//!   config file overrides field by field.

use std::path::PathBuf;

pub mod action;
pub mod analysis;
pub mod app;
pub mod background;
pub(crate) mod bench;
pub mod capture;
pub mod component;
pub mod config;
pub(crate) mod export;
pub mod gpu;
pub mod highlight;
pub mod input;
pub mod keymap;
pub mod layout;
pub mod pin;
pub mod pipeline;
pub mod profile;
pub mod replay;
pub mod sass_view;
pub(crate) mod terminal;
pub(crate) mod theme;
pub mod timeline;
pub mod update;
pub mod views;
pub(crate) mod vyre_view;

use action::Cmd;
use app::App;
use highlight::Highlighter;

/// How to start the inspector.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Program files and directories.
    pub files: Vec<PathBuf>,
    /// Theme name or `.tmTheme` file (overrides the config's).
    pub theme: Option<String>,
    /// Device profile name or JSON file for offline estimates.
    pub device: Option<String>,
    /// Target sm (default: the device's, else 90).
    pub sm: Option<u32>,
    /// Workgroup override.
    pub workgroup: Option<[u32; 3]>,
    /// Reload the open program when its file changes.
    pub watch: bool,
    /// Plan pipelines through the user's plan cache (the interactive inspector does; the
    /// `--keys` replay leaves it off so that replays are repeatable and write nothing).
    pub plan_cache: bool,
    /// Folder `file` inputs may come from (`--root DIR`); `None`: each Program's own folder.
    pub root: Option<PathBuf>,
    /// A timeline record file (`run --timeline-out`) for the Timeline tab.
    pub timeline: Option<PathBuf>,
    /// Grid barriers or dataflow waits in a pipeline's fused persistent kernels (`--sync`).
    pub sync: crate::megakernel::plan::SyncMode,
}

/// Why the inspector could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// No program files.
    NoFiles,
    /// Bad config file.
    Config(#[from] config::ConfigError),
    /// Bad theme.
    Theme(#[from] theme::ThemeError),
    /// Bad device profile.
    Device(crate::util::Problem),
    /// A `--workgroup` the device cannot launch (refused before any analysis).
    Workgroup {
        /// The size given.
        wg: [u32; 3],
        /// Its thread count.
        threads: u64,
        /// The device's limit.
        max: u64,
        /// The device's name.
        device: String,
    },
    /// Terminal I/O.
    Io(#[from] std::io::Error),
    /// A timeline record file that cannot be read (the message names it).
    Timeline(crate::util::Problem),
    /// A capture folder that cannot be opened (the message names it).
    Capture(crate::util::Problem),
    /// Writing a snapshot failed.
    Snapshot {
        /// Target.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// True when `NO_COLOR` is set to a non-empty value (<https://no-color.org>).
pub fn no_color() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Reads the first program where [`update::start`] asks the worker to: in place, before the
/// terminal is taken over (Ctrl-C still ends the process there, as it does any command), so
/// the first frame shows it laid out as every later one. The commands its reply returns take
/// the load's place, in order; files opened or reloaded later are read on the worker.
fn read_first_file(app: &mut App, cmds: Vec<Cmd>) -> Vec<Cmd> {
    let mut out = Vec::new();
    for cmd in cmds {
        match cmd {
            Cmd::Job(job @ background::Job::Load { .. }) => {
                let mut replies = Vec::new();
                background::execute(job, &mut gpu::CpuOnly, &mut |r| replies.push(r));
                for r in replies {
                    out.extend(update::update(app, action::Action::Worker(r)));
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Builds the state for `opts`: config, keymap, theme, files, device; the first program is
/// opened. Returns the commands the shell performs first (the device probe, and any
/// emission or measurement that opening queued).
pub fn setup(opts: &Options) -> Result<(App, Highlighter, Vec<Cmd>), TuiError> {
    let cfg_path = config::config_path();
    let cfg = match &cfg_path {
        Some(p) => config::Config::load(p)?,
        None => config::Config::default(),
    };
    // Errors of the config's contents name the file they are in.
    let in_cfg = |mut e: config::ConfigError| {
        if e.path.is_empty() {
            e.path = cfg_path
                .as_ref()
                .map_or_else(|| "file".into(), |p| p.display().to_string());
        }
        e
    };
    let mut keymap = keymap::KeyMap::default();
    cfg.apply_keys(&mut keymap).map_err(in_cfg)?;
    let theme_name = opts
        .theme
        .clone()
        .or(cfg.theme.clone())
        .unwrap_or_else(|| "dark".into());
    let syn = theme::load_syntax_theme(&theme_name)?;
    let (mut ui, hl) = if no_color() {
        (theme::Theme::monochrome(), Highlighter::new(None))
    } else {
        (
            theme::Theme::from_syntax(&theme_name, &syn),
            Highlighter::new(Some(syn)),
        )
    };
    cfg.apply_styles(&mut ui).map_err(in_cfg)?;
    // A capture folder lists its dispatches (their record files), read before anything
    // starts: a capture that cannot be read is refused with the reader's reason.
    let capture = match capture::split(&opts.files).map_err(TuiError::Capture)? {
        Some(dir) => Some(capture::read::open(&dir).map_err(TuiError::Capture)?),
        None => None,
    };
    let files = match &capture {
        Some(c) => c.entries(),
        None => app::expand_paths(&opts.files),
    };
    if files.is_empty() && capture.is_none() {
        return Err(TuiError::NoFiles);
    }
    // Read before anything starts: a bad file, or a record of another file, is refused
    // with its reason.
    let recorded = match &opts.timeline {
        Some(p) => Some(timeline::from_file(p, &files).map_err(TuiError::Timeline)?),
        None => None,
    };
    let mut app = App::new(files, keymap, ui);
    if let Some(c) = capture {
        app.detail.set_capture(true);
        app.capture = Some(c);
    }
    app.programs.root = opts.root.clone();
    app.programs.sync = opts.sync;
    if opts.plan_cache {
        app.jobs.session.plan_cache = crate::megakernel::cache::PlanCache::user();
    }
    app.jobs.devices.profiles = gpu::device_profiles();
    app.jobs.devices.profile = gpu::default_profile(&app.jobs.devices.profiles);
    if let Some(d) = &opts.device {
        select_device(&mut app, d)?;
    }
    if let Some(sm) = opts.sm {
        app.code.sm = sm;
        app.code.sm_pinned = true;
    }
    if let Some(wg) = opts.workgroup {
        // Rejected before any analysis: a size no device launches would only make every
        // estimate say so.
        let threads = wg.iter().map(|v| u64::from(*v)).product::<u64>();
        let (max, device) = app
            .jobs
            .devices
            .current()
            .map_or((1024, "a CUDA device".to_string()), |d| {
                (u64::from(d.max_threads_per_block), d.name.clone())
            });
        if threads > max {
            return Err(TuiError::Workgroup {
                wg,
                threads,
                max,
                device,
            });
        }
    }
    if let Some(forms) = recorded {
        update::timeline::set(&mut app, forms);
    }
    let start = update::start(&mut app);
    let mut cmds = read_first_file(&mut app, start);
    if let Some(wg) = opts.workgroup {
        app.code.workgroup = Some(wg);
        cmds.extend(update::reanalyze(&mut app));
    }
    Ok((app, hl, cmds))
}

fn select_device(app: &mut App, d: &str) -> Result<(), TuiError> {
    if let Some(i) = app.jobs.devices.profiles.iter().position(|(n, _)| n == d) {
        app.jobs.devices.profile = i;
    } else {
        let caps = gpu::load_device_file(std::path::Path::new(d)).map_err(TuiError::Device)?;
        let name = std::path::Path::new(d)
            .file_stem()
            .map_or_else(|| d.to_string(), |s| s.to_string_lossy().into_owned());
        app.jobs.devices.profiles.insert(0, (name, caps));
        app.jobs.devices.profile = 0;
    }
    if let Some(c) = app.jobs.devices.current() {
        app.code.sm = (c.cc_major * 10 + c.cc_minor).min(90);
    }
    Ok(())
}

/// Opens the interactive inspector on the terminal; returns when the user quits.
pub fn run(opts: &Options) -> Result<(), TuiError> {
    let (app, hl, first) = setup(&Options {
        plan_cache: true,
        ..opts.clone()
    })?;
    let r = terminal::run(app, hl, first, Box::new(gpu::WorkerGpu::new()), opts.watch);
    // A worker thread may still wait on ptxas or nvdisasm: end them and remove their
    // folders, which the process's exit would leave behind.
    crate::emit::ptxas::stop_all();
    r
}

impl crate::util::HasFix for TuiError {
    fn message(&self) -> String {
        match self {
            Self::NoFiles => "no Program or pipeline files found in the given paths".to_string(),
            Self::Config(e) => crate::util::HasFix::message(e),
            Self::Theme(e) => crate::util::HasFix::message(e),
            Self::Device(e) => crate::util::HasFix::message(e),
            Self::Workgroup { wg, threads, max, device, .. } => format!("--workgroup {x},{y},{z}: {threads} threads per workgroup; {device} allows at most {max}", x = wg[0], y = wg[1], z = wg[2]),
            Self::Io(a0) => format!("terminal error: {a0}"),
            Self::Timeline(p) => format!("--timeline: {}", p.message),
            Self::Capture(p) => p.message.clone(),
            Self::Snapshot { path, source, .. } => format!("cannot write snapshot {path}: {source}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::NoFiles => {
                "pass .json Program or pipeline files, or directories holding them".to_string()
            }
            Self::Config(e) => crate::util::HasFix::fix(e),
            Self::Theme(e) => crate::util::HasFix::fix(e),
            Self::Device(e) => crate::util::HasFix::fix(e),
            Self::Workgroup { max, .. } => format!("pass a workgroup whose X*Y*Z is at most {max}"),
            Self::Io(_) => {
                "run in an interactive terminal (or use --keys/--snapshot for scripts)".to_string()
            }
            Self::Timeline(p) | Self::Capture(p) => p.fix.clone(),
            Self::Snapshot { .. } => "choose a writable path".to_string(),
        }
    }

    fn problem(&self) -> crate::util::Problem {
        match self {
            Self::Config(e) => crate::util::HasFix::problem(e),
            Self::Theme(e) => crate::util::HasFix::problem(e),
            Self::Device(e) => crate::util::HasFix::problem(e),
            _ => crate::util::Problem::located(self.message(), self.fix()),
        }
    }
}

crate::util::problem::into_problem!(TuiError);
