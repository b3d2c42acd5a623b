//! A capture opened in the inspector (`vyrescope CAPTURE_DIR`, issue 46): the dispatches the
//! application made, listed with their Program, backend, launch, bytes and times, the time
//! by Program, and the verdict of each dispatch's replay (`r`).
//!
//! Each dispatch is an entry of the program list (its record file): opening it opens the
//! dispatch as a Program ([`crate::vyre::replay::dispatches`]), so every view (IR, PTX, SASS,
//! occupancy, tuning, diagnostics) works on it. The state here is plain data, the same with
//! or without vyre support; reading a capture and replaying need the `vyre` feature
//! ([`read`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::util::Problem;

pub mod read;

/// The file that marks a folder as a capture (the capture format's manifest; named here too
/// so that a build without vyre support recognises a capture and says what it needs).
pub const MANIFEST_FILE: &str = "manifest.json";

/// Whether `path` is a capture folder (it holds a capture manifest). Other folders open as
/// folders of Programs.
pub fn is_capture_dir(path: &Path) -> bool {
    let manifest = path.join(MANIFEST_FILE);
    path.is_dir()
        && manifest.is_file()
        // Only the capture format's manifest: a folder of Programs may hold a file of that
        // name too.
        && std::fs::read(&manifest)
            .map(|b| {
                let head = &b[..b.len().min(4096)];
                String::from_utf8_lossy(head).contains("\"vyrescope-capture\"")
            })
            .unwrap_or(false)
}

/// Whether a listed dispatch opens as one of our Programs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opens {
    /// It opens.
    Yes,
    /// Our import refuses its Program: the codes and the first reason (`r` replays it on
    /// vyre's reference interpreter).
    Refused {
        /// Stable codes (`VY...`, `V...`).
        codes: Vec<String>,
        /// The first reason.
        message: String,
    },
    /// It cannot open (no data, resident buffers, a damaged file): the reason with its `Fix:`.
    No(String),
}

/// One dispatch of the capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// The record's index.
    pub index: u64,
    /// The record file (the program list's entry).
    pub path: PathBuf,
    /// The `VyreBackend` method called.
    pub call: String,
    /// The Program's name: the last part of its op id, else `dispatch_N`.
    pub name: String,
    /// vyre's op id, when the Program has one.
    pub op: Option<String>,
    /// The Program's content hash (distinct Programs are counted by it).
    pub program_hash: Option<String>,
    /// The backend it was recorded on.
    pub backend: String,
    /// Threads per workgroup (the captured override, else the Program's).
    pub workgroup: [u32; 3],
    /// Workgroups: the captured grid, else the one vyre's binding infers (when it opens).
    pub grid: Option<[u32; 3]>,
    /// Input bytes.
    pub bytes_in: u64,
    /// Output bytes.
    pub bytes_out: u64,
    /// Host time of the call (ns).
    pub host_ns: u64,
    /// Device time, when the backend reported it (ns).
    pub device_ns: Option<u64>,
    /// The call's error, when it failed as recorded.
    pub call_error: Option<String>,
    /// Whether it opens as our Program.
    pub opens: Opens,
}

/// Time spent in one Program over the capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramTotal {
    /// The Program's name.
    pub name: String,
    /// Its op id.
    pub op: Option<String>,
    /// Its dispatches.
    pub dispatches: usize,
    /// Host time, summed (ns).
    pub host_ns: u64,
    /// Device time summed over the dispatches that report one (ns), if any did.
    pub device_ns: Option<u64>,
}

/// The order of the dispatch list (`S` cycles it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// Call order.
    #[default]
    Index,
    /// Longest host time first.
    HostTime,
    /// Longest device time first (dispatches without one last, in call order).
    DeviceTime,
}

impl SortKey {
    /// The next order of the cycle.
    pub fn next(self) -> SortKey {
        match self {
            SortKey::Index => SortKey::HostTime,
            SortKey::HostTime => SortKey::DeviceTime,
            SortKey::DeviceTime => SortKey::Index,
        }
    }

    /// In words.
    pub fn label(self) -> &'static str {
        match self {
            SortKey::Index => "call order",
            SortKey::HostTime => "host time, longest first",
            SortKey::DeviceTime => "device time, longest first",
        }
    }
}

/// A replay's outcome: the record's line of `vyrescope replay`'s report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// `verified`, `DIVERGED: output 0 `y` element 42 (f32): ...`, `FAILED`, `skipped`: the
    /// words `replay` prints.
    pub line: String,
    /// Why it failed or was skipped, or a note (a refused import's fallback).
    pub detail: String,
    /// Nothing diverged or failed.
    pub passed: bool,
    /// The backend it ran on, when it ran.
    pub replayed_on: Option<String>,
}

/// A dispatch's replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayState {
    /// On the worker.
    Running,
    /// Done.
    Done(Verdict),
    /// The replay could not run (message with its `Fix:`).
    Failed(String),
}

/// A record that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// Its index.
    pub index: u64,
    /// Its file (the program list's entry).
    pub path: PathBuf,
    /// The reader's message, with its `Fix:`.
    pub message: String,
}

/// The open capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureView {
    /// The capture folder.
    pub dir: PathBuf,
    /// The backend it was recorded on.
    pub recorded_on: String,
    /// Its state (`full`, or why records carry no data, with a `Fix:`).
    pub state: String,
    /// One row per dispatch, in call order.
    pub rows: Vec<Row>,
    /// Records that could not be read.
    pub unreadable: Vec<Unreadable>,
    /// Distinct Programs dispatched.
    pub distinct_programs: usize,
    /// Time by Program, the most first.
    pub by_program: Vec<ProgramTotal>,
    /// The list's order.
    pub sort: SortKey,
    /// Replays by record index.
    pub replays: HashMap<u64, ReplayState>,
}

impl CaptureView {
    /// The row of the record file `path`.
    pub fn row_of(&self, path: &Path) -> Option<&Row> {
        self.rows.iter().find(|r| r.path == path)
    }

    /// The rows in the list's order.
    pub fn sorted(&self) -> Vec<&Row> {
        let mut v: Vec<&Row> = self.rows.iter().collect();
        match self.sort {
            SortKey::Index => v.sort_by_key(|r| r.index),
            SortKey::HostTime => v.sort_by_key(|r| (std::cmp::Reverse(r.host_ns), r.index)),
            SortKey::DeviceTime => v.sort_by_key(|r| {
                (
                    r.device_ns.is_none(),
                    std::cmp::Reverse(r.device_ns.unwrap_or(0)),
                    r.index,
                )
            }),
        }
        v
    }

    /// Total host time of the dispatches (ns).
    pub fn host_total(&self) -> u64 {
        self.rows.iter().map(|r| r.host_ns).sum()
    }

    /// The program list's entries: every record file, dispatches and unreadable records, in
    /// call order.
    pub fn entries(&self) -> Vec<PathBuf> {
        let mut v: Vec<(u64, &PathBuf)> = self
            .rows
            .iter()
            .map(|r| (r.index, &r.path))
            .chain(self.unreadable.iter().map(|u| (u.index, &u.path)))
            .collect();
        v.sort_by_key(|(i, _)| *i);
        v.into_iter().map(|(_, p)| p.clone()).collect()
    }

    /// The first unreadable record as a problem (a headless run fails on it).
    pub fn problem(&self) -> Option<Problem> {
        self.unreadable.first().map(|u| {
            let (m, f) = u
                .message
                .split_once("\n  Fix: ")
                .unwrap_or((&u.message, ""));
            Problem::new(format!("record {}: {m}", u.index), f.trim_end_matches('.'))
        })
    }
}

/// Bytes in B, KiB, MiB or GiB.
pub fn bytes_text(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Nanoseconds in ns, µs, ms or s.
pub fn time_text(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns} ns"),
        10_000..=9_999_999 => format!("{:.1} µs", ns as f64 / 1e3),
        10_000_000..=9_999_999_999 => format!("{:.1} ms", ns as f64 / 1e6),
        _ => format!("{:.2} s", ns as f64 / 1e9),
    }
}

/// `X,Y,Z`.
pub fn dims(d: [u32; 3]) -> String {
    format!("{},{},{}", d[0], d[1], d[2])
}

/// Splits the command line's paths into the capture folder (at most one, and then nothing
/// else) and the other files; `Err` says what to do instead.
pub fn split(paths: &[PathBuf]) -> Result<Option<PathBuf>, Problem> {
    let captures: Vec<&PathBuf> = paths.iter().filter(|p| is_capture_dir(p)).collect();
    match captures.as_slice() {
        [] => Ok(None),
        [one] if paths.len() == 1 => Ok(Some((*one).clone())),
        _ => Err(Problem::new(
            format!(
                "{} is a capture: a capture opens on its own, not with {} other path(s)",
                captures[0].display(),
                paths.len() - 1
            ),
            "open one capture at a time: `vyrescope CAPTURE_DIR`",
        )),
    }
}
