//! Reading a capture for the inspector and replaying one of its dispatches (feature `vyre`;
//! without it each says so, with a `Fix:`).
//!
//! The list comes from the capture reader (`vyrescope_capture`), each dispatch opened as
//! our Program by the one conversion the export and the program list use
//! ([`crate::vyre::replay::dispatches::program_of`]); a replay is `vyrescope replay --only N`'s
//! own ([`crate::harness::replay::replay_on`]), so the verdict is the one `replay` prints.

use std::path::Path;

use super::{CaptureView, Verdict};
use crate::util::Problem;

#[cfg(not(feature = "vyre"))]
fn feature_off() -> Problem {
    Problem::new(
        "opening a capture needs vyre support, and this vyrescope was built without it",
        "build with `cargo build --features vyre`",
    )
}

/// Lists the capture in `dir`. `Err` when it is not a readable capture (no manifest,
/// another format version, no records folder): the reader's message with its `Fix:`.
#[cfg(not(feature = "vyre"))]
pub fn open(_dir: &Path) -> Result<CaptureView, Problem> {
    Err(feature_off())
}

/// Replays dispatch `index` on `vyrescope-reference` (in this process: no GPU).
#[cfg(not(feature = "vyre"))]
pub fn replay_reference(_dir: &Path, _index: u64) -> Result<Verdict, Problem> {
    Err(feature_off())
}

/// Lists the capture in `dir`. `Err` when it is not a readable capture (no manifest,
/// another format version, no records folder): the reader's message with its `Fix:`.
#[cfg(feature = "vyre")]
pub fn open(dir: &Path) -> Result<CaptureView, Problem> {
    use vyrescope_capture::Capture;

    use crate::harness::replay::{read_problem, state_text};

    let cap = Capture::open(dir).map_err(|e| read_problem(&e))?;
    let mut rows = Vec::new();
    let mut unreadable = Vec::new();
    for index in cap.indices().map_err(|e| read_problem(&e))? {
        match cap.record(index) {
            Ok(rec) => rows.extend(row(&cap, &rec)),
            Err(e) => unreadable.push(super::Unreadable {
                index,
                path: cap.record_path(index),
                message: e.to_string(),
            }),
        }
    }
    let (distinct_programs, by_program) = totals(&rows);
    Ok(CaptureView {
        dir: dir.to_path_buf(),
        recorded_on: cap.manifest().backend.id.clone(),
        state: state_text(&cap),
        rows,
        unreadable,
        distinct_programs,
        by_program,
        sort: super::SortKey::Index,
        replays: Default::default(),
    })
}

/// The row of a dispatch record (`None` for the resident API's other calls).
#[cfg(feature = "vyre")]
fn row(
    cap: &vyrescope_capture::Capture,
    rec: &vyrescope_capture::format::Record,
) -> Option<super::Row> {
    use vyrescope_capture::format::{BufferRef, CallResult, Event, ResourceRef};

    use super::Opens;
    use crate::vyre::replay::dispatches::{name_of, program_of, Refused};
    use crate::vyre::replay::export::DispatchRefusal;

    let sum = |b: &[BufferRef]| b.iter().map(|b| b.bytes).sum::<u64>();
    let (program, config, bytes_in, bytes_out) = match &rec.event {
        Event::Dispatch {
            program,
            config,
            inputs,
            outputs,
        } => (program, config, sum(inputs), sum(outputs)),
        Event::ResidentDispatch {
            program,
            config,
            resources,
            outputs,
        } => {
            let borrowed = resources
                .iter()
                .map(|r| match r {
                    ResourceRef::Borrowed { data } => data.bytes,
                    ResourceRef::Resident { .. } => 0,
                })
                .sum();
            (program, config, borrowed, sum(outputs))
        }
        Event::DeviceBufferDispatch {
            program, config, ..
        } => (program, config, 0, 0),
        _ => return None,
    };
    let op = program.entry_op_id.clone();
    let mut grid = config.dispatch_grid.or(config.grid_override);
    let opens = match program_of(cap, rec) {
        Ok(p) => {
            grid = grid.or(p.run.as_ref().and_then(|r| r.grid));
            Opens::Yes
        }
        Err(Refused::Import(DispatchRefusal::Import { codes, message })) => {
            Opens::Refused { codes, message }
        }
        Err(e) => Opens::No(Problem::from(e).to_string()),
    };
    Some(super::Row {
        index: rec.index,
        path: cap.record_path(rec.index),
        call: rec.call.clone(),
        name: name_of(op.as_deref(), rec.index),
        op,
        program_hash: program.hash.clone(),
        backend: rec.backend.clone(),
        workgroup: config.workgroup_override.unwrap_or(program.workgroup_size),
        grid,
        bytes_in,
        bytes_out,
        host_ns: rec.timing.host_ns,
        device_ns: rec.timing.device_ns,
        call_error: match &rec.result {
            CallResult::Ok => None,
            CallResult::Error { code, message } => Some(format!("{code}: {message}")),
        },
        opens,
    })
}

/// Distinct Programs (by content hash) and the time by Program, the most first: device time
/// where the backend measured it, then host time.
#[cfg(feature = "vyre")]
fn totals(rows: &[super::Row]) -> (usize, Vec<super::ProgramTotal>) {
    use std::collections::{BTreeMap, HashSet};

    let mut distinct = HashSet::new();
    let mut by: BTreeMap<String, super::ProgramTotal> = BTreeMap::new();
    for r in rows {
        distinct.insert(r.program_hash.clone().unwrap_or_else(|| r.name.clone()));
        let t = by
            .entry(r.op.clone().unwrap_or_else(|| r.name.clone()))
            .or_insert_with(|| super::ProgramTotal {
                name: r.name.clone(),
                op: r.op.clone(),
                dispatches: 0,
                host_ns: 0,
                device_ns: None,
            });
        t.dispatches += 1;
        t.host_ns += r.host_ns;
        if let Some(d) = r.device_ns {
            t.device_ns = Some(t.device_ns.unwrap_or(0) + d);
        }
    }
    let mut v: Vec<super::ProgramTotal> = by.into_values().collect();
    v.sort_by_key(|t| std::cmp::Reverse((t.device_ns.unwrap_or(0), t.host_ns)));
    (distinct.len(), v)
}

/// Replays dispatch `index` on `vyrescope-reference` (in this process: no GPU), a Program
/// our import refuses on vyre's reference interpreter.
#[cfg(feature = "vyre")]
pub fn replay_reference(dir: &Path, index: u64) -> Result<Verdict, Problem> {
    use crate::vyre::backend::registry::REFERENCE_ID;
    let line = crate::harness::replay::replay_on(dir, REFERENCE_ID, index)?;
    Ok(verdict(&line))
}

/// A replayed record's line of `replay --json` (from the GPU worker, or this process) as the
/// capture view's verdict.
pub fn verdict(line: &crate::harness::replay_record::RecordReplay) -> Verdict {
    use crate::harness::replay_record::{verdict_text, Verdict as V};
    Verdict {
        line: verdict_text(line),
        detail: line.detail.clone(),
        passed: !matches!(line.verdict, V::Diverged | V::Failed),
        replayed_on: line.replayed_on.clone(),
    }
}
