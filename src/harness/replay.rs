//! `vyrescope replay` (feature `vyre`): every captured dispatch (or one) run again on a
//! backend and its outputs compared with the captured ones, byte for byte (vyre's contract:
//! a backend's result equals the reference's exactly). The first differing element of a
//! dispatch is its divergence: the output buffer, the element index, both values and, for
//! floats, the distance in ULPs.
//!
//! The backend is anything implementing vyre's backend trait ([`Replayer::backend`]); a
//! dispatch the backend refuses as unsupported (our import refusing a Program) runs on
//! [`Replayer::fallback`] when one is given, and the report says so.
//!
//! The resident API's records (allocate, upload, download, free, resident dispatch) replay in
//! call order on a backend that has the resident API ([`resident`]): reads and dispatch
//! outputs are compared, the other calls are `replayed`.
//!
//! Records that cannot be compared are listed as skipped with the reason: past the capture's
//! limit (sizes only), calls that failed when captured, opaque device-buffer dispatches, and
//! resident records (sequences among them) on a backend without the resident API or under
//! `--only`.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use vyre_driver::backend::{BackendError, VyreBackend};
use vyrescope_capture::format::{CallResult, CaptureState, Event, Record};
use vyrescope_capture::read::event_kind;
use vyrescope_capture::{Capture, ReadError};

use crate::ir::ElemType;
use crate::runtime::parity;
use crate::util::Problem;
pub use crate::vyre::replay::read_problem;
use crate::vyre::replay::{
    decode, import_refusal, output_slots, program_label, OutputSlot, VyreProgram,
};

mod resident;

pub use super::replay_record::{verdict_text, Divergence, RecordReplay, Verdict};

/// Where dispatches are replayed.
pub struct Replayer<'a> {
    /// The backend every dispatch runs on.
    pub backend: &'a dyn VyreBackend,
    /// Runs a dispatch `backend` refuses as unsupported (`UnsupportedFeature`), if given.
    pub fallback: Option<&'a dyn VyreBackend>,
}

/// Totals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Records looked at.
    pub records: usize,
    /// Verified.
    pub verified: usize,
    /// Ran with nothing to compare.
    pub replayed: usize,
    /// Diverged.
    pub diverged: usize,
    /// Failed.
    pub failed: usize,
    /// Skipped.
    pub skipped: usize,
}

/// A capture's replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReplayReport {
    /// The capture folder.
    pub capture: String,
    /// The backend the capture was recorded on.
    pub recorded_on: String,
    /// The backend replayed on.
    pub backend: String,
    /// The capture's state (`full`, or why some records carry no data), with a `Fix:`.
    pub state: String,
    /// One entry per record.
    pub records: Vec<RecordReplay>,
    /// Totals.
    pub totals: Totals,
    /// True when nothing diverged or failed.
    pub passed: bool,
}

/// One line of an error (a backend's or the reader's).
fn one_line(text: &str) -> String {
    crate::util::terminal_safe(&text.split_whitespace().collect::<Vec<_>>().join(" ")).to_string()
}

/// The capture's state in words.
pub(crate) fn state_text(c: &Capture) -> String {
    match &c.manifest().state {
        CaptureState::Full => "full".into(),
        CaptureState::LimitReached {
            first_metadata_only,
        } => format!(
            "limit of {} bytes reached: records from {first_metadata_only} on carry sizes only (Fix: record again with a larger VYRESCOPE_CAPTURE_LIMIT)",
            c.manifest().limit_bytes
        ),
        CaptureState::Stopped {
            last_written,
            reason,
        } => format!(
            "recording stopped after {}: {reason} (Fix: free disk space or record into a writable folder)",
            last_written.map_or("no record".to_string(), |i| format!("record {i}"))
        ),
    }
}

/// Replays the capture in `dir` (record `only`, or all) on `r`. `Err` when the folder is not
/// a readable capture, or `only` names no record (a usage error).
pub fn replay(dir: &Path, r: &Replayer<'_>, only: Option<u64>) -> Result<ReplayReport, Problem> {
    let cap = Capture::open(dir).map_err(|e| read_problem(&e))?;
    let indices = cap.indices().map_err(|e| read_problem(&e))?;
    let chosen: Vec<u64> = match only {
        Some(n) if indices.contains(&n) => vec![n],
        Some(n) => {
            return Err(Problem::usage(
                format!(
                    "--only {n}: the capture has no record {n} ({} records{})",
                    indices.len(),
                    match (indices.first(), indices.last()) {
                        (Some(a), Some(b)) => format!(", {a}..={b}"),
                        _ => String::new(),
                    }
                ),
                "pick an index `vyrescope replay DIR` lists",
            ))
        }
        None => indices,
    };
    let mut session = resident::Session::new(r.backend, only.is_none());
    let records: Vec<RecordReplay> = chosen
        .iter()
        .map(|&i| replay_one(&cap, r, i, &mut session))
        .collect();
    let mut t = Totals {
        records: records.len(),
        ..Totals::default()
    };
    for x in &records {
        match x.verdict {
            Verdict::Verified => t.verified += 1,
            Verdict::Replayed => t.replayed += 1,
            Verdict::Diverged => t.diverged += 1,
            Verdict::Failed => t.failed += 1,
            Verdict::Skipped => t.skipped += 1,
        }
    }
    Ok(ReplayReport {
        capture: dir.display().to_string(),
        recorded_on: cap.manifest().backend.id.clone(),
        backend: r.backend.id().to_string(),
        state: state_text(&cap),
        passed: t.diverged == 0 && t.failed == 0,
        records,
        totals: t,
    })
}

/// vyrescope's vyre backend `id` (`vyrescope-reference` or `vyrescope-cuda`), acquired from
/// vyre's registry by id as a vyre application would (`replay --backend`, `selftest
/// --vyre-backend`, the inspector's `r` on a captured dispatch).
pub fn acquire_vyrescope(id: &str) -> Result<Box<dyn VyreBackend>, Problem> {
    crate::runtime::vyre_device::link();
    vyre_driver::backend::acquire(id).map_err(|e| {
        Problem::new(
            format!("vyre's registry could not acquire `{id}`: {e}"),
            "use --backend reference on a machine without a GPU",
        )
    })
}

/// Replays record `index` on vyrescope's backend `id` acquired from vyre's registry, a
/// Program our import refuses on vyre's reference interpreter: the line `replay --only N
/// --backend reference|cuda` reports.
pub fn replay_on(dir: &Path, id: &str, index: u64) -> Result<RecordReplay, Problem> {
    let ours = acquire_vyrescope(id)?;
    let theirs = crate::vyre::replay::VyreReference;
    let r = Replayer {
        backend: ours.as_ref(),
        fallback: Some(&theirs),
    };
    replay_record(dir, &r, index)
}

/// Replays record `index` alone (`replay --only N`): its line of the report.
pub fn replay_record(dir: &Path, r: &Replayer<'_>, index: u64) -> Result<RecordReplay, Problem> {
    let mut rep = replay(dir, r, Some(index))?;
    rep.records
        .pop()
        .ok_or_else(|| Problem::bug("replay --only returned no record"))
}

fn blank(index: u64) -> RecordReplay {
    RecordReplay {
        index,
        call: String::new(),
        kind: String::new(),
        program: String::new(),
        replayed_on: None,
        verdict: Verdict::Failed,
        detail: String::new(),
        divergence: None,
        captured_host_ns: 0,
        captured_device_ns: None,
        replay_ns: None,
    }
}

fn skipped(mut row: RecordReplay, why: String) -> RecordReplay {
    row.verdict = Verdict::Skipped;
    row.detail = why;
    row
}

fn failed(mut row: RecordReplay, why: String) -> RecordReplay {
    row.verdict = Verdict::Failed;
    row.detail = one_line(&why);
    row
}

/// Replays record `index`.
fn replay_one(
    cap: &Capture,
    r: &Replayer<'_>,
    index: u64,
    session: &mut resident::Session<'_>,
) -> RecordReplay {
    let row = blank(index);
    let rec: Record = match cap.record(index) {
        Ok(x) => x,
        Err(e) => return failed(row, e.to_string()),
    };
    let label = match &rec.event {
        Event::Dispatch { program, .. } | Event::ResidentDispatch { program, .. } => {
            program.entry_op_id.clone().unwrap_or_else(|| "-".into())
        }
        _ => "-".into(),
    };
    let mut row = RecordReplay {
        program: label,
        call: rec.call.clone(),
        kind: event_kind(&rec.event).to_string(),
        captured_host_ns: rec.timing.host_ns,
        captured_device_ns: rec.timing.device_ns,
        ..row
    };
    match &rec.event {
        Event::Dispatch { .. } => {}
        Event::DeviceBufferDispatch { .. } => {
            return skipped(
                row,
                "dispatch on opaque device buffers: not captured".into(),
            )
        }
        _ => return session.replay(cap, &rec, row),
    }
    if let CallResult::Error { code, message } = &rec.result {
        return skipped(
            row,
            format!("the captured call failed ({code}): {}", one_line(message)),
        );
    }
    let loaded = match cap.load(index) {
        Ok(l) => l,
        Err(e @ ReadError::NoData { .. }) => return skipped(row, one_line(&e.to_string())),
        Err(e) => return failed(row, e.to_string()),
    };
    let vp = match decode(&loaded.program_wire) {
        Ok(p) => p,
        Err(e) => return failed(row, e.to_string()),
    };
    row.program = program_label(&vp);
    let Event::Dispatch { config, .. } = &loaded.record.event else {
        return failed(row, "the record changed while it was read".into());
    };
    let config = match config.to_config() {
        Ok(c) => c,
        Err(e) => {
            let path = cap.record_path(index);
            return failed(row, format!("{}: {e}", path.display()));
        }
    };
    let started = Instant::now();
    let mut ran_on = r.backend;
    let mut result = r.backend.dispatch(&vp, &loaded.inputs, &config);
    if let (Some(why), Some(fb)) = (
        result.as_ref().err().and_then(|e| refused(e, &vp)),
        r.fallback,
    ) {
        row.detail = format!(
            "{} refused it ({}); replayed on {}",
            r.backend.id(),
            one_line(&why),
            fb.id()
        );
        ran_on = fb;
        result = fb.dispatch(&vp, &loaded.inputs, &config);
    }
    row.replay_ns = Some(u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX));
    row.replayed_on = Some(ran_on.id().to_string());
    let outputs = match result {
        Ok(o) => o,
        Err(e) => return failed(row, format!("{} failed: {e}", ran_on.id())),
    };
    match first_divergence(&output_slots(&vp), &loaded.outputs, &outputs) {
        None => row.verdict = Verdict::Verified,
        Some(d) => {
            row.verdict = Verdict::Diverged;
            row.divergence = Some(d);
        }
    }
    row
}

/// Why a backend's error `e` is a refusal of the Program itself, which the fallback runs
/// instead: an unsupported feature, or an invalid-Program error for a Program our import
/// refuses (vyrescope's backends say so with its codes). Other errors are the replay's.
fn refused(e: &BackendError, vp: &VyreProgram) -> Option<String> {
    match e {
        BackendError::UnsupportedFeature { name, .. } => Some(name.clone()),
        BackendError::InvalidProgram { .. } => import_refusal(vp),
        _ => None,
    }
}

/// Element `i` of `data` as raw bits (little-endian, zero-extended); `None` past the end.
fn element(data: &[u8], size: usize, i: usize) -> Option<u64> {
    let bytes = data.get(i * size..i * size + size)?;
    let mut b = [0u8; 8];
    b[..size].copy_from_slice(bytes);
    Some(u64::from_le_bytes(b))
}

/// The first element where `replayed` differs from `captured`, byte-exactly.
pub fn first_divergence(
    slots: &[OutputSlot],
    captured: &[Vec<u8>],
    replayed: &[Vec<u8>],
) -> Option<Divergence> {
    let n = captured.len().max(replayed.len());
    for k in 0..n {
        let slot = slots.get(k);
        let buffer = slot.map_or_else(|| format!("output {k}"), |s| s.name.clone());
        let (Some(c), Some(r)) = (captured.get(k), replayed.get(k)) else {
            return Some(Divergence {
                output: k,
                buffer,
                element: 0,
                elem_type: "-".into(),
                captured: format!("{} outputs", captured.len()),
                replayed: format!("{} outputs", replayed.len()),
                ulps: None,
            });
        };
        if c == r {
            continue;
        }
        let elem = slot.and_then(|s| s.elem);
        let size = elem.map_or(1, |e| e.size_bytes());
        let elements = c.len().max(r.len()).div_ceil(size);
        for i in 0..elements {
            let (a, b) = (element(c, size, i), element(r, size, i));
            if a == b {
                continue;
            }
            let show = |v: Option<u64>| match (v, elem) {
                (None, _) => "(past the end)".to_string(),
                (Some(x), Some(e)) => parity::show(e, x),
                (Some(x), None) => format!("0x{x:02x}"),
            };
            let ulps = match (a, b, elem) {
                (Some(x), Some(y), Some(e))
                    if matches!(e, ElemType::F16 | ElemType::F32 | ElemType::F64) =>
                {
                    Some(parity::distance(e, x, y)).filter(|&d| d != u64::MAX)
                }
                _ => None,
            };
            return Some(Divergence {
                output: k,
                buffer,
                element: i as u64,
                elem_type: elem.map_or("bytes".to_string(), |e| e.to_string()),
                captured: show(a),
                replayed: show(b),
                ulps,
            });
        }
        // Same elements but different lengths within the last element (a partial one).
        return Some(Divergence {
            output: k,
            buffer,
            element: elements as u64,
            elem_type: elem.map_or("bytes".to_string(), |e| e.to_string()),
            captured: format!("{} bytes", c.len()),
            replayed: format!("{} bytes", r.len()),
            ulps: None,
        });
    }
    None
}

/// The report as text: one line per record, then the totals.
pub fn replay_table(rep: &ReplayReport) -> String {
    let mut s = format!(
        "capture {} (recorded on {}), replayed on {}\n",
        rep.capture, rep.recorded_on, rep.backend
    );
    if rep.state != "full" {
        s.push_str(&format!("capture state: {}\n", rep.state));
    }
    for x in &rep.records {
        let what = verdict_text(x);
        s.push_str(&format!(
            "  #{:<5} {:<26} {:<40} {}\n",
            x.index,
            x.call,
            crate::util::terminal_safe(&x.program),
            what
        ));
        if !x.detail.is_empty() {
            s.push_str(&format!(
                "         {}\n",
                crate::util::terminal_safe(&x.detail)
            ));
        }
    }
    let t = &rep.totals;
    s.push_str(&format!(
        "\n{} records: {} verified, {} replayed, {} diverged, {} failed, {} skipped\n",
        t.records, t.verified, t.replayed, t.diverged, t.failed, t.skipped
    ));
    s
}
