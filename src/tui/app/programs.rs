//! The program list sub-state: the files, the list cursor, and the open program (or why it
//! could not be opened).

use std::path::PathBuf;

use crate::diagnostics::{Diagnostic, Severity};

use super::PaneState;
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
    /// A file not loaded yet (shown as clean until it is).
    pub fn unloaded(path: PathBuf) -> Self {
        Entry {
            pipeline: crate::ir::is_pipeline_file(&path),
            path,
            status: EntryStatus::Checked {
                errors: 0,
                warnings: 0,
            },
        }
    }
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
    /// Program list cursor.
    pub list: PaneState,
    /// Index of the open program in `entries`.
    pub current: Option<usize>,
    /// The open program.
    pub doc: Option<Document>,
    /// Why the selected program could not be opened.
    pub doc_error: Option<String>,
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

    /// Opens the entry under the list cursor: on failure the document is closed and the
    /// error kept for the panes to show.
    pub fn open_selected(&mut self) -> Loaded {
        let i = self.list.cursor;
        let Some(entry) = self.entries.get(i) else {
            return Loaded::Nothing;
        };
        let loaded = match Document::load(&entry.path) {
            Ok(doc) => {
                self.entries[i].status = EntryStatus::of(&doc.validation);
                self.doc = Some(doc);
                self.doc_error = None;
                Loaded::Ok
            }
            Err(e) => {
                self.entries[i].status = EntryStatus::Failed(e.clone());
                self.doc = None;
                self.doc_error = Some(e.clone());
                Loaded::Failed(e)
            }
        };
        self.current = Some(i);
        loaded
    }

    /// Reloads the open program from disk; on failure the last good version stays open.
    pub fn reload(&mut self) -> Loaded {
        let Some(i) = self.current else {
            return Loaded::Nothing;
        };
        match Document::load(&self.entries[i].path) {
            Ok(doc) => {
                self.entries[i].status = EntryStatus::of(&doc.validation);
                self.doc = Some(doc);
                self.doc_error = None;
                Loaded::Ok
            }
            Err(e) => {
                self.entries[i].status = EntryStatus::Failed(e.clone());
                Loaded::Failed(e)
            }
        }
    }

    /// Path of the open program.
    pub fn current_path(&self) -> Option<&PathBuf> {
        self.current
            .and_then(|i| self.entries.get(i))
            .map(|e| &e.path)
    }
}
