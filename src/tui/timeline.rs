//! The Timeline tab's model (pure, no terminal): a recorded capture decoded, checked and
//! summarised once ([`TimelineData`]), its slices grouped into one lane per SM, the view
//! window (zoom and pan) and the cursor on a slice ([`TimelineState`]), and how a lane
//! looks at a given zoom ([`cells`]). Captures come from the GPU worker after `r` (one extra,
//! instrumented round after the timed and verified one, so the timed figures are those of
//! the plain kernel: [`from_recorded`]) or from a record file (`--timeline REC.json`).

use std::path::Path;
use std::sync::Arc;

use crate::emit::EmitOptions;
use crate::ir::Program;
use crate::timeline::file::{RecordFile, RecordedForm};
use crate::timeline::{self, Capture, Decoded, Slice, Summary};
use crate::util::Problem;

use super::gpu::InputFolder;

/// One SM's lane: its slices (indices into [`Decoded::slices`], by start) and its times.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// SM id.
    pub sm: u32,
    /// Slices that ran on it, by start.
    pub slices: Vec<usize>,
    /// Step time (ns, union over its blocks).
    pub busy_ns: u64,
    /// Waiting time while none of its blocks worked (ns).
    pub wait_ns: u64,
}

/// One recorded form, decoded and summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineData {
    /// Form: empty for a Program, `separate` or `fused` for a pipeline.
    pub label: String,
    /// Where it came from (`recorded after r on ...`, or the file).
    pub origin: String,
    /// The capture.
    pub capture: Capture,
    /// Its slices.
    pub decoded: Decoded,
    /// Its summary.
    pub summary: Summary,
    /// The consistency check's problems (empty: consistent).
    pub problems: Vec<String>,
    /// First start (ns of `%globaltimer`).
    pub t0: u64,
    /// Last end less first start (ns, at least 1).
    pub span: u64,
    /// One lane per SM that ran a block, by SM id.
    pub lanes: Vec<Lane>,
}

impl TimelineData {
    /// Decodes, checks and summarises `capture`.
    pub fn build(label: &str, origin: &str, capture: Capture) -> Result<Self, Problem> {
        let decoded = timeline::decode(&capture)?;
        let summary = timeline::summarize(&capture, &decoded);
        let problems = timeline::check(&capture, &decoded);
        let t0 = decoded.slices.iter().map(|s| s.start_ns).min().unwrap_or(0);
        let t1 = decoded.slices.iter().map(|s| s.end_ns).max().unwrap_or(t0);
        let times = timeline::sm_times(&decoded);
        let mut lanes: Vec<Lane> = times
            .iter()
            .map(|(&sm, t)| Lane {
                sm,
                slices: Vec::new(),
                busy_ns: t.busy_ns,
                wait_ns: t.wait_ns,
            })
            .collect();
        for (i, s) in decoded.slices.iter().enumerate() {
            if let Ok(l) = lanes.binary_search_by_key(&s.sm, |l| l.sm) {
                lanes[l].slices.push(i);
            }
        }
        Ok(TimelineData {
            label: label.to_string(),
            origin: origin.to_string(),
            capture,
            decoded,
            summary,
            problems,
            t0,
            span: (t1 - t0).max(1),
            lanes,
        })
    }

    /// Slice `i` of lane `lane`.
    pub fn slice(&self, lane: usize, i: usize) -> Option<&Slice> {
        let idx = *self.lanes.get(lane)?.slices.get(i)?;
        self.decoded.slices.get(idx)
    }

    /// Start of `s` relative to the first record (ns).
    pub fn rel(&self, t: u64) -> u64 {
        t.saturating_sub(self.t0)
    }
}

/// Every form of a record file, built (the last form, a pipeline's fused one, first shown);
/// refused when it was recorded from none of the files `opened` (a record of another
/// Program would show kernels the open one does not have).
pub fn from_file(
    path: &Path,
    opened: &[std::path::PathBuf],
) -> Result<Vec<Arc<TimelineData>>, Problem> {
    let f = timeline::file::read(path)?;
    if !opened.iter().any(|o| f.recorded_from(o)) {
        let shown: Vec<String> = opened
            .iter()
            .take(3)
            .map(|o| o.display().to_string())
            .collect();
        return Err(Problem::new(
            format!(
                "{}: this timeline record was made from `{}`{}, not from {}{}",
                path.display(),
                f.source,
                if f.source_hash.is_some() {
                    " (its bytes when recorded)"
                } else {
                    ""
                },
                shown.join(", "),
                if opened.len() > 3 { ", ..." } else { "" }
            ),
            format!(
                "open the file it was recorded from, or record this one: `vyrescope run {} --backend cuda --timeline --timeline-out REC.json`",
                opened.first().map(|o| o.display().to_string()).unwrap_or_else(|| "FILE".into())
            ),
        ));
    }
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    build_all(f, &format!("file {name}"))
}

fn build_all(f: RecordFile, origin: &str) -> Result<Vec<Arc<TimelineData>>, Problem> {
    let origin = match &f.device {
        Some(d) => format!("{origin} ({d})"),
        None => origin.to_string(),
    };
    f.forms
        .into_iter()
        .map(|RecordedForm { label, capture }| {
            TimelineData::build(&label, &origin, capture).map(Arc::new)
        })
        .collect()
}

/// What to record on the GPU after `r` on a Program (a pipeline's timelines come with its
/// run: [`crate::tui::gpu::Gpu::run_pipeline`]).
pub struct Recording<'a> {
    /// The Program.
    pub program: &'a Program,
    /// Where its `file` inputs come from.
    pub files: &'a InputFolder,
    /// Emit options (workgroup size).
    pub opts: &'a EmitOptions,
}

/// Every form of a record file's `text` that the GPU worker recorded after `r`, built.
pub fn from_recorded(text: &str) -> Result<Vec<Arc<TimelineData>>, Problem> {
    let f = timeline::file::parse(text, "the GPU worker's records")?;
    let origin = match &f.device {
        Some(d) => format!("recorded after r on {d}"),
        None => "recorded after r".to_string(),
    };
    let file = RecordFile { device: None, ..f };
    build_all(file, &origin)
}

/// The view window and the cursor over the shown form.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimelineState {
    /// Recorded forms (a pipeline: separate, fused).
    pub forms: Vec<Arc<TimelineData>>,
    /// The form shown.
    pub form: usize,
    /// Why the last recording failed, if it did.
    pub error: Option<String>,
    /// First ns shown, after the first record.
    pub start: u64,
    /// Nanoseconds shown across the lanes' width; 0: the whole span (fit).
    pub len: u64,
    /// Cursor lane.
    pub lane: usize,
    /// Cursor slice within the lane.
    pub slice: usize,
    /// First lane shown.
    pub lane_scroll: usize,
}

/// Narrowest window zoom reaches (ns): about the `%globaltimer` tick.
pub const MIN_WINDOW_NS: u64 = 64;

impl TimelineState {
    /// The form shown.
    pub fn current(&self) -> Option<&Arc<TimelineData>> {
        self.forms.get(self.form)
    }

    /// Shows `forms` (the last first: a pipeline's fused form), fitted, the cursor on the
    /// first slice of the first lane.
    pub fn set(&mut self, forms: Vec<Arc<TimelineData>>) {
        *self = TimelineState {
            form: forms.len().saturating_sub(1),
            forms,
            ..TimelineState::default()
        };
    }

    /// The next recorded form, fitted.
    pub fn next_form(&mut self) {
        if self.forms.len() > 1 {
            let forms = std::mem::take(&mut self.forms);
            let form = (self.form + 1) % forms.len();
            self.set(forms);
            self.form = form;
        }
    }

    /// The window shown: (start, length) in ns after the first record.
    pub fn window(&self) -> (u64, u64) {
        let span = self.current().map_or(1, |d| d.span);
        if self.len == 0 || self.len >= span {
            return (0, span);
        }
        (self.start.min(span - self.len), self.len)
    }

    /// The slice under the cursor.
    pub fn cursor(&self) -> Option<&Slice> {
        self.current()?.slice(self.lane, self.slice)
    }

    /// Zooms in (`true`, twice as close) or out around the cursor slice when it is in
    /// view, else around the window's middle.
    pub fn zoom(&mut self, closer: bool) {
        let Some(d) = self.current() else { return };
        let span = d.span;
        let (start, len) = self.window();
        let mid = match self.cursor().map(|s| d.rel(s.start_ns) + s.dur_ns() / 2) {
            Some(m) if m >= start && m < start + len => m,
            _ => start + len / 2,
        };
        let new = if closer {
            (len / 2).max(MIN_WINDOW_NS.min(span))
        } else {
            len.saturating_mul(2)
        };
        if new >= span {
            return self.fit();
        }
        // Keep `mid` at the same place on screen.
        let frac = (mid - start) as f64 / len as f64;
        self.len = new;
        self.start = (mid as f64 - frac * new as f64).max(0.0) as u64;
        self.start = self.start.min(span - new);
    }

    /// Shows the whole span.
    pub fn fit(&mut self) {
        self.start = 0;
        self.len = 0;
    }

    /// Pans by `eighths` eighths of the window (negative: earlier).
    pub fn pan(&mut self, eighths: i64) {
        let Some(span) = self.current().map(|d| d.span) else {
            return;
        };
        let (start, len) = self.window();
        if len >= span {
            return;
        }
        let step = (len / 8).max(1) as i64 * eighths;
        let to = (start as i64 + step).clamp(0, (span - len) as i64);
        self.start = to as u64;
        self.len = len;
    }

    /// Moves the cursor `delta` lanes (keeping its time: the slice of the new lane nearest
    /// the old start), scrolling `page` lanes at a time into view.
    pub fn move_lane(&mut self, delta: isize, page: usize) {
        let Some(d) = self.current().cloned() else {
            return;
        };
        let n = d.lanes.len();
        if n == 0 {
            return;
        }
        let at = self.cursor().map(|s| s.start_ns);
        self.lane = (self.lane as isize + delta).clamp(0, n as isize - 1) as usize;
        self.slice = match at {
            Some(t) => nearest(&d, self.lane, t),
            None => 0,
        };
        self.keep_lane_visible(page);
        self.reveal();
    }

    /// Scrolls the lanes so the cursor's shows among `page` lanes.
    pub fn keep_lane_visible(&mut self, page: usize) {
        let page = page.max(1);
        if self.lane < self.lane_scroll {
            self.lane_scroll = self.lane;
        } else if self.lane >= self.lane_scroll + page {
            self.lane_scroll = self.lane + 1 - page;
        }
    }

    /// Moves the cursor `delta` slices along its lane (clamped) and pans it into view.
    pub fn move_slice(&mut self, delta: isize) {
        let Some(n) = self
            .current()
            .and_then(|d| d.lanes.get(self.lane))
            .map(|l| l.slices.len())
        else {
            return;
        };
        self.slice = (self.slice as isize + delta).clamp(0, n.saturating_sub(1) as isize) as usize;
        self.reveal();
    }

    /// Pans (not zooms) so that the cursor slice's start is in view.
    pub fn reveal(&mut self) {
        let (Some(d), Some(s)) = (self.current(), self.cursor()) else {
            return;
        };
        let (start, len) = self.window();
        let (a, span) = (d.rel(s.start_ns), d.span);
        if len >= span || (a >= start && a < start + len) {
            return;
        }
        self.start = a.saturating_sub(len / 8).min(span - len);
        self.len = len;
    }
}

/// Index in lane `lane` of the slice whose start is nearest `t` (ns of the timer).
fn nearest(d: &TimelineData, lane: usize, t: u64) -> usize {
    let Some(l) = d.lanes.get(lane) else { return 0 };
    l.slices
        .iter()
        .enumerate()
        .min_by_key(|(_, &i)| d.decoded.slices[i].start_ns.abs_diff(t))
        .map_or(0, |(k, _)| k)
}

/// What one column of a lane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// No block of the SM worked or waited.
    Idle,
    /// Its blocks mostly waited.
    Wait,
    /// Mostly this launch's step (`first`: the column where a run of it begins).
    Step {
        /// Launch index (a fused group; the plan's colour).
        launch: u32,
        /// Pipeline step, if any.
        step: Option<u32>,
        /// First column of a run of this step.
        first: bool,
    },
}

/// (launch, step): what a column of a lane is coloured and numbered by.
type StepKey = (u32, Option<u32>);

/// The `width` columns of lane `lane` over the window (`start`, `len`) ns after the first
/// record: each column is what the SM's blocks mostly did in its time.
pub fn cells(d: &TimelineData, lane: usize, start: u64, len: u64, width: usize) -> Vec<Cell> {
    let mut out = vec![Cell::Idle; width];
    let Some(l) = d.lanes.get(lane) else {
        return out;
    };
    if width == 0 || len == 0 {
        return out;
    }
    // Per column: wait time and time per (launch, step).
    let mut wait = vec![0u64; width];
    let mut work: Vec<Vec<(StepKey, u64)>> = vec![Vec::new(); width];
    let col_of = |t: u64| ((t as u128 * width as u128) / len as u128) as usize;
    let end = start + len;
    for &i in &l.slices {
        let s = &d.decoded.slices[i];
        let (a, b) = (
            d.rel(s.start_ns),
            d.rel(s.end_ns).max(d.rel(s.start_ns) + 1),
        );
        if b <= start || a >= end {
            continue;
        }
        let (a, b) = (a.max(start) - start, b.min(end) - start);
        for c in col_of(a)..=col_of(b - 1).min(width - 1) {
            let lo = (c as u128 * len as u128 / width as u128) as u64;
            let hi = ((c as u128 + 1) * len as u128 / width as u128) as u64;
            let t = b.min(hi).saturating_sub(a.max(lo)).max(1);
            if s.is_wait() {
                wait[c] += t;
            } else {
                let key = (s.launch, s.step);
                match work[c].iter_mut().find(|(k, _)| *k == key) {
                    Some((_, v)) => *v += t,
                    None => work[c].push((key, t)),
                }
            }
        }
    }
    let mut prev: Option<StepKey> = None;
    for c in 0..width {
        let total: u64 = work[c].iter().map(|(_, v)| v).sum();
        let col = ((c as u128 + 1) * len as u128 / width as u128
            - c as u128 * len as u128 / width as u128) as u64;
        let top = work[c].iter().max_by_key(|(_, v)| *v).map(|(k, _)| *k);
        // As in the bubble fraction, an SM works while any of its blocks does: a block
        // working through half the column outweighs the others waiting (a one-workgroup
        // fold while every other block waits is the one thing to see).
        let step = |k: StepKey| Cell::Step {
            launch: k.0,
            step: k.1,
            first: prev != Some(k),
        };
        out[c] = match top {
            Some(k) if 2 * total >= col => step(k),
            _ if wait[c] > 0 => Cell::Wait,
            Some(k) => step(k),
            None => Cell::Idle,
        };
        prev = match out[c] {
            Cell::Step { launch, step, .. } => Some((launch, step)),
            _ => None,
        };
    }
    out
}
