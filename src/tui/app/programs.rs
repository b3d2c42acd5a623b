//! The program list sub-state: the files, the list cursor, and the open program (or why it
//! could not be opened). Files are read on the worker ([`crate::tui::background::Job::Load`]);
//! this state only takes what it read.

use std::path::PathBuf;

use crate::diagnostics::{Diagnostic, Severity};
use crate::util::Problem;

use crate::tui::analysis::Document;

/// One file of the program list.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Path as given (or found in a directory).
    pub path: PathBuf,
    /// Validation summary, or the load error.
    pub status: EntryStatus,
    /// A pipeline file (marked `⇶` in the list), not a Program.
    pub pipeline: bool,
}

impl Entry {
    /// A file not checked yet: [`EntryStatus::Pending`] until the background check (or
    /// opening it) says how it is. The pipeline mark comes with the check too, so building
    /// the list reads no file.
    pub fn unloaded(path: PathBuf) -> Self {
        Entry {
            pipeline: false,
            path,
            status: EntryStatus::Pending,
        }
    }
}

/// A program file's state in the list.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryStatus {
    /// Not checked yet (the worker validates every listed file in the background).
    Pending,
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
    /// Loads and validates `path` as opening it would (Program or pipeline): its status and
    /// whether it is a pipeline. Pure; runs on the worker.
    pub fn check(path: &std::path::Path, root: Option<&std::path::Path>) -> (Self, bool) {
        let pipeline = crate::ir::is_pipeline_file(path);
        let status = match crate::tui::analysis::Document::load(path, root) {
            Ok(doc) => EntryStatus::of(&doc.validation),
            Err(e) => EntryStatus::Failed(e.to_string()),
        };
        (status, pipeline)
    }

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

/// What a load is for: they differ in what a failure leaves open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadKind {
    /// Open the file (a failure closes the open program and shows why).
    Open,
    /// Reload the open program (a failure keeps the last good version).
    Reload {
        /// The file changed on disk (`--watch`), rather than `R`.
        from_watch: bool,
    },
}

/// How a (re)load went, for the caller's status message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loaded {
    /// The document is open.
    Ok,
    /// It could not be loaded (message with Fix).
    Failed(String),
    /// Nothing to load (no such entry, no program open).
    Nothing,
}

/// The program list and the open program.
#[derive(Debug, Default)]
pub struct Programs {
    /// Program files.
    pub entries: Vec<Entry>,
    /// Index of the open program in `entries`.
    pub current: Option<usize>,
    /// The open program.
    pub doc: Option<Document>,
    /// Why the selected program could not be opened.
    pub doc_error: Option<String>,
    /// Folder every Program's `file` inputs must stay inside (`--root`); `None`: each
    /// Program's own folder.
    pub root: Option<PathBuf>,
    /// How pipelines opened here fuse (`--sync`): set on each pipeline document as it opens.
    pub sync: crate::megakernel::plan::SyncMode,
    /// Request number of the newest load (open or reload) handed to the worker.
    pub load_id: u64,
    /// The entry being loaded now (the background check leaves it to the load).
    pub loading: Option<usize>,
}

impl Programs {
    /// A list over `paths` (already expanded), nothing open yet.
    pub fn new(paths: Vec<PathBuf>) -> Self {
        Programs {
            entries: paths.into_iter().map(Entry::unloaded).collect(),
            ..Programs::default()
        }
    }

    /// Appends `paths`; returns the index of the first one.
    pub fn add(&mut self, paths: Vec<PathBuf>) -> usize {
        let first = self.entries.len();
        self.entries.extend(paths.into_iter().map(Entry::unloaded));
        first
    }

    /// Starts a load of entry `i` (the worker reads it): its request number and path, or
    /// `None` when there is no such entry. An older load still in flight becomes stale.
    pub fn request_load(&mut self, i: usize) -> Option<(u64, PathBuf)> {
        let path = self.entries.get(i)?.path.clone();
        self.load_id += 1;
        self.loading = Some(i);
        Some((self.load_id, path))
    }

    /// Whether a load's reply answers the newest request (older ones are dropped).
    pub fn is_current_load(&mut self, id: u64) -> bool {
        if id != self.load_id {
            return false;
        }
        self.loading = None;
        true
    }

    /// Opens entry `i` as the worker loaded it: on failure the document is closed and the
    /// error kept for the panes to show.
    pub fn opened(&mut self, i: usize, doc: Result<Document, Problem>) -> Loaded {
        if i >= self.entries.len() {
            return Loaded::Nothing;
        }
        let loaded = match doc.map(|d| d.with_sync(self.sync)) {
            Ok(doc) => {
                self.entries[i].status = EntryStatus::of(&doc.validation);
                self.entries[i].pipeline = doc.pipeline.is_some();
                self.doc = Some(doc);
                self.doc_error = None;
                Loaded::Ok
            }
            Err(e) => {
                let e = e.to_string();
                self.entries[i].status = EntryStatus::Failed(e.clone());
                self.doc = None;
                self.doc_error = Some(e.clone());
                Loaded::Failed(e)
            }
        };
        self.current = Some(i);
        loaded
    }

    /// Takes entry `i` as the worker reloaded it; on failure the last good version stays
    /// open.
    pub fn reloaded(&mut self, i: usize, doc: Result<Document, Problem>) -> Loaded {
        if self.current != Some(i) || i >= self.entries.len() {
            return Loaded::Nothing;
        }
        match doc.map(|d| d.with_sync(self.sync)) {
            Ok(doc) => {
                self.entries[i].status = EntryStatus::of(&doc.validation);
                self.doc = Some(doc);
                self.doc_error = None;
                Loaded::Ok
            }
            Err(e) => {
                let e = e.to_string();
                self.entries[i].status = EntryStatus::Failed(e.clone());
                Loaded::Failed(e)
            }
        }
    }

    /// Records the background check of entry `i` (when it still lists `path`; an entry
    /// that was opened meanwhile keeps the status its load gave).
    pub fn checked(
        &mut self,
        i: usize,
        path: &std::path::Path,
        status: EntryStatus,
        pipeline: bool,
    ) {
        if let Some(e) = self.entries.get_mut(i).filter(|e| e.path == path) {
            if e.status == EntryStatus::Pending {
                e.status = status;
                e.pipeline = pipeline;
            }
        }
    }

    /// The entries from `first` on with their indices, for a background check.
    pub fn to_check(&self, first: usize) -> Vec<(usize, PathBuf)> {
        self.entries
            .iter()
            .enumerate()
            .skip(first)
            .filter(|(i, e)| e.status == EntryStatus::Pending && self.loading != Some(*i))
            .map(|(i, e)| (i, e.path.clone()))
            .collect()
    }

    /// Path of the open program.
    pub fn current_path(&self) -> Option<&PathBuf> {
        self.current
            .and_then(|i| self.entries.get(i))
            .map(|e| &e.path)
    }
}
