//! `vyrescope tui FILE...` (and `vyrescope FILE...`): the inspector, interactive or replayed.

use std::path::PathBuf;

use crate::shape::ShapeError;
use crate::tui::{self, Options};
use crate::util::Problem;

/// Inspector options shared by `vyrescope FILE...` and `vyrescope tui`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct InspectorOpts {
    /// Theme: dark, light, high-contrast, or a .tmTheme file.
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// Device profile for offline estimates: a profile name or a JSON file from `probe --json`.
    #[arg(long, value_name = "NAME|FILE")]
    pub device: Option<String>,
    /// Target sm (70, 75, 80, 86, 89, 90); default: the device's, else 90.
    #[arg(long)]
    pub sm: Option<u32>,
    /// Workgroup size X,Y,Z (default: the program's).
    #[arg(long, value_name = "X,Y,Z", value_parser = crate::shape::parse_workgroup)]
    pub workgroup: Option<[u32; 3]>,
    /// Reload the open program when its file changes on disk.
    #[arg(long)]
    pub watch: bool,
    /// Allow `run.inputs.*.file` data files anywhere inside DIR (default: only inside each
    /// Program file's folder), for dispatches, reference runs, tune sweeps and pipelines.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Open a timeline record file (`run --backend cuda --timeline --timeline-out
    /// REC.json`) in the Timeline tab, no GPU needed.
    #[arg(long, value_name = "REC.json")]
    pub timeline: Option<PathBuf>,
    /// How a pipeline's fused persistent kernels wait between steps: `dataflow`
    /// (completion flags, counters and last-arriver folds; the default) or `barrier` (grid
    /// barriers), for the PTX pane, the GPU run (r) and its timeline, as `run --sync` does.
    #[arg(long, default_value = "dataflow", value_name = "FORM")]
    pub sync: crate::megakernel::plan::SyncMode,
}

/// Open the inspector; with --keys, replay keys headlessly and write the final screen.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  vyrescope tui fixtures/programs/\n  vyrescope tui fixtures/programs/vadd_f32.json --keys \"r t\" --snapshot run.txt\n\nKeys: press ? in the inspector. Config: ~/.config/vyrescope/config.json (see README, Inspector)."
)]
pub struct Args {
    /// Program files or directories (expanded to their *.json).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Inspector options.
    #[command(flatten)]
    pub opts: InspectorOpts,
    /// Keys to replay headlessly, space-separated (`j j Tab r`, `/ld.global Enter`); may
    /// start with `-` (`--keys "- -"`: `-` is the key that makes the workgroup 32 smaller).
    #[arg(long, value_name = "KEYS", allow_hyphen_values = true)]
    pub keys: Option<String>,
    /// Where the replay writes the final screen (default, or `-`: stdout).
    #[arg(long, value_name = "OUT.txt")]
    pub snapshot: Option<PathBuf>,
    /// Replay screen size.
    #[arg(long, value_name = "WxH", default_value = "120x40", value_parser = parse_size)]
    pub size: (u16, u16),
    /// Print speed figures as JSON (start to first frame, frame time, RSS) and exit.
    #[arg(long, hide = true, value_name = "N")]
    pub bench_frames: Option<usize>,
}

/// Largest replay screen side: a replay holds several full screens of cells (each some tens
/// of bytes), so 1000x1000 stays within tens of MiB while 65535x65535 would need hundreds of
/// GiB and abort.
pub const MAX_REPLAY_SIDE: u16 = 1000;

fn parse_size(s: &str) -> Result<(u16, u16), ShapeError> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| ShapeError::new("expected WxH, e.g. 120x40", ""))?;
    let p = |v: &str| {
        v.parse::<u16>()
            .ok()
            .filter(|v| (10..=MAX_REPLAY_SIDE).contains(v))
            .ok_or_else(|| {
                ShapeError::new(
                    format!("bad size `{s}`: use WxH with 10 <= W, H <= {MAX_REPLAY_SIDE}"),
                    "pass a size such as --size 120x40",
                )
            })
    };
    Ok((p(w)?, p(h)?))
}

fn options(files: &[PathBuf], o: &InspectorOpts) -> Options {
    Options {
        files: files.to_vec(),
        theme: o.theme.clone(),
        device: o.device.clone(),
        sm: o.sm,
        workgroup: o.workgroup,
        watch: o.watch,
        // `tui::run` turns it on for the interactive inspector; replays stay in memory.
        plan_cache: false,
        root: o.root.clone(),
        timeline: o.timeline.clone(),
        sync: o.sync,
    }
}

/// Opens the interactive inspector (the no-subcommand path).
pub fn open(files: &[PathBuf], o: &InspectorOpts) -> super::Outcome {
    // Without a terminal the inspector would write its escapes into a file or pipe.
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return Err(Problem::new(
            "the inspector needs a terminal, and standard output is not one",
            "run it in a terminal, or replay keys headlessly: `vyrescope tui FILE --keys \"...\" --snapshot OUT.txt`",
        ));
    }
    match tui::run(&options(files, o)) {
        Ok(()) => Ok(0),
        Err(e) => Err(Problem::from(e)),
    }
}

/// Runs `tui`.
pub fn run(a: &Args) -> super::Outcome {
    let opts = options(&a.files, &a.opts);
    if let Some(n) = a.bench_frames {
        return match tui::bench::run(&opts, n.max(1)) {
            Ok(f) => {
                outln!("{}", serde_json::to_string_pretty(&f).unwrap_or_default());
                Ok(0)
            }
            Err(e) => Err(Problem::from(e)),
        };
    }
    let Some(keys) = &a.keys else {
        if a.snapshot.is_some() {
            return Err(Problem::new(
                "--snapshot needs --keys (the keys to replay)",
                "add --keys \"\" for the first screen",
            ));
        }
        return open(&a.files, &a.opts);
    };
    tui::input::check_script(keys)?;
    let (mut app, hl, first) = tui::setup(&opts)?;
    let mut gpu = tui::gpu::WorkerGpu::new();
    let screen = tui::replay::replay(&mut app, &hl, &mut gpu, first, keys, a.size);
    match a.snapshot.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(p) => {
            crate::util::refuse_overwrite(p, a.files.iter().map(|f| f.as_path()), "--snapshot")?;
            if let Err(e) = tui::export::write_atomic(p, screen.as_bytes()) {
                return Err(Problem::from(tui::TuiError::Snapshot {
                    path: p.display().to_string(),
                    source: e,
                }));
            }
        }
        None => out!("{screen}"),
    }
    // The screen is written either way; a named file that could not be loaded still fails
    // the replay, so that a script does not take the error screen for a result.
    // So does a capture with a record that cannot be read.
    match failed_load(&app, &a.files).or_else(|| app.capture.as_ref()?.problem()) {
        Some(p) => Err(p),
        None => Ok(0),
    }
}

/// The load error of the first file named on the command line (not found in a named folder)
/// that could not be opened, as a problem at that file.
fn failed_load(app: &tui::app::App, named: &[PathBuf]) -> Option<Problem> {
    app.programs.entries.iter().find_map(|e| {
        let tui::app::programs::EntryStatus::Failed(text) = &e.status else {
            return None;
        };
        if !named.contains(&e.path) {
            return None;
        }
        let (message, fix) = text.split_once("\n  Fix: ").unwrap_or((text, ""));
        let fix = if fix.is_empty() {
            "check the path and the file's contents".to_string()
        } else {
            fix.to_string()
        };
        Some(Problem::new(message.to_string(), fix).at(e.path.display().to_string()))
    })
}
