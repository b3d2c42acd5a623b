//! A capture's dispatches opened as our Programs (issue 46): the inspector opens a record
//! file (`DIR/records/00000003.json`) as the Program of that dispatch, with its captured
//! inputs as the Program's `run` inputs (the capture's content files, read in place).
//!
//! A dispatch's Program is converted by the one path `replay --export` takes
//! ([`super::export::dispatch_program`]), so the inspector shows exactly what an exported
//! reproducer would hold.

use std::path::{Path, PathBuf};

use vyrescope_capture::format::{record_index, DataState, Event, Record, BLOBS_DIR, RECORDS_DIR};
use vyrescope_capture::read::{event_kind, is_capture};
use vyrescope_capture::Capture;

use super::export::{dispatch_program, CapturedDispatch, DispatchRefusal};
use super::read_problem;
use crate::ir::{Fill, InputSource, InputSpec, Program};
use crate::util::Problem;

/// The Program name of a dispatch: the last part of `op`, else `dispatch_N`.
pub fn name_of(op: Option<&str>, index: u64) -> String {
    op.and_then(|id| id.rsplit("::").next())
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| format!("dispatch_{index}"))
}

/// The capture folder and record index of a record file (`DIR/records/00000003.json` in a
/// folder with a capture manifest), or `None` for any other path.
pub fn record_at(path: &Path) -> Option<(PathBuf, u64)> {
    let index = record_index(path.file_name()?.to_str()?)?;
    let records = path.parent()?;
    if records.file_name()? != RECORDS_DIR {
        return None;
    }
    let dir = records.parent()?;
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    is_capture(dir).then(|| (dir.to_path_buf(), index))
}

/// Why a record does not open: our import's refusal (listed with its codes), or anything
/// else (said with its `Fix:`).
#[derive(Debug, Clone)]
pub enum Refused {
    /// Our import refuses the Program (or its inputs do not bind).
    Import(DispatchRefusal),
    /// No data, not a host-buffer dispatch, or a damaged record.
    Other(Problem),
}

impl From<DispatchRefusal> for Refused {
    fn from(e: DispatchRefusal) -> Self {
        Refused::Import(e)
    }
}

impl From<Refused> for Problem {
    fn from(e: Refused) -> Problem {
        match e {
            Refused::Import(r) => r.into(),
            Refused::Other(p) => p,
        }
    }
}

/// Opens dispatch `index` of the capture in `dir` as our Program: vyre's Program converted by
/// our import, the captured launch, and a `run` section whose inputs are the capture's own
/// content files (`../blobs/<hash>.bin`, relative to the record file, which the inspector
/// opens with the capture folder as its root); outputs start zeroed.
pub fn open_dispatch(dir: &Path, index: u64) -> Result<Program, Problem> {
    let cap = Capture::open(dir).map_err(|e| read_problem(&e))?;
    let rec = cap.record(index).map_err(|e| read_problem(&e))?;
    program_of(&cap, &rec).map_err(Problem::from)
}

/// Record `rec` of `cap` as our Program (see [`open_dispatch`]).
pub fn program_of(cap: &Capture, rec: &Record) -> Result<Program, Refused> {
    let at = |m: String, fix: &str| {
        Refused::Other(Problem::new(
            format!("{}: {m}", cap.record_path(rec.index).display()),
            fix,
        ))
    };
    let Event::Dispatch { config, inputs, .. } = &rec.event else {
        return Err(at(
            format!(
                "record {} is a {} (resident buffers): only host-buffer dispatches open as a Program",
                rec.index,
                event_kind(&rec.event)
            ),
            "replay it with `vyrescope replay DIR`, which replays resident records in call order",
        ));
    };
    if rec.data != DataState::Full {
        // The reader's own message says why and what to do.
        return Err(Refused::Other(match cap.load(rec.index) {
            Err(e) => read_problem(&e),
            Ok(_) => Problem::new("the record carries no data", "record again"),
        }));
    }
    let loaded = cap
        .load(rec.index)
        .map_err(|e| Refused::Other(read_problem(&e)))?;
    let config = config.to_config().map_err(|e| at(e, "record again"))?;
    let vp = super::decode(&loaded.program_wire).map_err(|e| at(e.to_string(), "record again"))?;
    let d = CapturedDispatch {
        program: &vp,
        inputs: &loaded.inputs,
        outputs: &loaded.outputs,
        config: &config,
    };
    let (mut ours, bound) = dispatch_program(&d, &name_of(vp.entry_op_id(), rec.index))?;
    let mut run = ours.run.take().unwrap_or_default();
    for (b, source) in bound.buffers.iter().zip(&bound.sources) {
        let source = match source.and_then(|k| inputs.get(k)) {
            // Read in place: the capture's content file of that input.
            Some(blob) => InputSource::File(format!(
                "../{}/{}.bin",
                BLOBS_DIR,
                blob.hash.as_deref().unwrap_or("-")
            )),
            None if b.data.iter().all(|&x| x == 0) => InputSource::Fill(Fill::Zeros),
            None => {
                return Err(at(
                    format!(
                        "input `{}` is not a whole number of {} elements, which a Program's file input cannot hold",
                        b.name, b.elem
                    ),
                    "export the dispatch (`vyrescope replay DIR --only N --export OUT`): the export pads it",
                ))
            }
        };
        // A file input's length is the file's; a fill needs its own.
        let len = matches!(source, InputSource::Fill(_))
            .then(|| (b.data.len() / b.elem.size_bytes()) as u64);
        run.inputs.push((b.name.clone(), InputSpec { len, source }));
    }
    ours.run = Some(run);
    Ok(ours)
}
