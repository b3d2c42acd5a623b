//! `x`: the data behind the current view as JSON, written atomically (a temp file in the
//! target directory, then rename) under the user's data folder
//! (`$XDG_DATA_HOME/vyrescope/exports/`, by default `~/.local/share/vyrescope/exports/`),
//! never into the folder of the open Programs; `X` writes to a typed path. An existing file
//! is replaced only after the user confirms; a device, FIFO, link or folder never is
//! ([`write_atomic`] refuses them).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::app::App;
use super::component::focused;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Nothing to export.
    Nothing,
    /// No data folder to export to.
    NoDir,
    /// Writing failed.
    Io {
        /// Target.
        path: String,
        /// Cause.
        source: std::io::Error,
    },
}

/// Name of the current view (part of the default file name): the focused component's.
pub fn view_name(app: &App) -> String {
    focused(app).export_name(app)
}

/// Where exports go by default: `<data dir>/vyrescope/exports` (the data dir follows
/// `XDG_DATA_HOME`, else `~/.local/share` on Linux); `None` without a home.
pub fn export_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("vyrescope").join("exports"))
}

/// `<export dir>/<program stem>.<view>.json` (see [`export_dir`]; the App carries it).
pub fn default_path(app: &App) -> Option<PathBuf> {
    let doc = app.programs.doc.as_ref()?;
    let stem = doc.path.file_stem()?.to_string_lossy().into_owned();
    Some(
        app.export_dir
            .as_ref()?
            .join(format!("{stem}.{}.json", view_name(app))),
    )
}

/// The JSON of the current view: the options, and the data of the focused component.
pub fn view_data(app: &App) -> Value {
    let opts = app.emit_options();
    let mut v = json!({
        "view": view_name(app),
        "program": app.programs.doc.as_ref().map(|d| d.program.name.clone()),
        "file": app.programs.doc.as_ref().map(|d| d.path.display().to_string()),
        "sm": opts.sm,
        "workgroup_size": opts.workgroup_size,
        "device": app.jobs.devices.label(),
    });
    v["data"] = focused(app).data(app);
    v
}

/// A result as JSON: the value, or `{"unavailable": why}`.
pub fn result<T: serde::Serialize, E: std::fmt::Display>(r: &Result<T, E>) -> Value {
    match r {
        Ok(v) => json!(v),
        Err(e) => json!({"unavailable": e.to_string()}),
    }
}

/// The counters as a JSON object.
pub fn counters_json(c: &[(String, String)]) -> Value {
    let mut m = serde_json::Map::new();
    for (k, v) in c {
        m.insert(
            k.clone(),
            serde_json::from_str(v).unwrap_or_else(|_| Value::String(v.clone())),
        );
    }
    Value::Object(m)
}

pub use crate::util::write_atomic;

/// Where `x` exports now (the default path), or why it cannot.
pub fn target(app: &App) -> Result<PathBuf, ExportError> {
    if app.programs.doc.is_none() {
        return Err(ExportError::Nothing);
    }
    default_path(app).ok_or(ExportError::NoDir)
}

/// True when writing `path` would replace a file that is there (the caller asks first).
pub fn exists(path: &std::path::Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// An export for the shell to write ([`crate::tui::action::Cmd::Export`]): `update` makes
/// the text, the shell does the file work and answers with
/// [`crate::tui::action::Action::Exported`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportJob {
    /// Where it goes.
    pub path: PathBuf,
    /// The JSON text.
    pub text: String,
    /// The default export folder, to create first when the path is inside it.
    pub folder: Option<PathBuf>,
    /// The user agreed to replace a file that is there.
    pub replace: bool,
    /// The files the inspector has open: an export never replaces one of them, asked or
    /// not (`-o`, `--snapshot` and `--timeline-out` refuse their inputs alike).
    pub inputs: Vec<PathBuf>,
}

/// What writing an export did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exported {
    /// Written there.
    Written(PathBuf),
    /// Not written: a file is there and the user was not asked yet.
    Exists(PathBuf),
    /// Not written (message with Fix).
    Failed(String),
}

/// The export of the current view to `path` (`replace`: the user agreed to replace a file
/// that is there).
pub fn job(app: &App, path: PathBuf, replace: bool) -> ExportJob {
    let folder = app.export_dir.clone().filter(|d| path.starts_with(d));
    let mut text = serde_json::to_string_pretty(&view_data(app)).unwrap_or_default();
    text.push('\n');
    ExportJob {
        path,
        text,
        folder,
        replace,
        inputs: app
            .programs
            .entries
            .iter()
            .map(|e| e.path.clone())
            .collect(),
    }
}

/// Writes `job` (the shell's side): asks back when a file is there and the user did not
/// agree yet, creates the default export folder when the path is in it.
pub fn write(job: ExportJob) -> Exported {
    if let Err(p) =
        crate::util::refuse_overwrite(&job.path, job.inputs.iter().map(PathBuf::as_path), "export")
    {
        return Exported::Failed(p.to_string());
    }
    if !job.replace && exists(&job.path) {
        return Exported::Exists(job.path);
    }
    let failed = |source| {
        Exported::Failed(
            ExportError::Io {
                path: job.path.display().to_string(),
                source,
            }
            .to_string(),
        )
    };
    if let Some(dir) = &job.folder {
        if let Err(e) = std::fs::create_dir_all(dir) {
            return failed(e);
        }
    }
    match write_atomic(&job.path, job.text.as_bytes()) {
        Ok(()) => Exported::Written(job.path),
        Err(e) => failed(e),
    }
}

impl crate::util::HasFix for ExportError {
    fn message(&self) -> String {
        match self {
            Self::Nothing => "nothing to export: no program open".to_string(),
            Self::NoDir => "no data folder for exports (no home directory)".to_string(),
            Self::Io { path, source, .. } => format!("cannot write {path}: {source}"),
        }
    }

    fn fix(&self) -> String {
        match self {
            Self::Nothing => "open a program first (o)".to_string(),
            Self::NoDir => "set XDG_DATA_HOME or HOME, or export to a path with X".to_string(),
            Self::Io { .. } => "choose a writable path with X".to_string(),
        }
    }
}

crate::util::problem::into_problem!(ExportError);
