//! Replaying the resident API's records: in call order, on a backend that has the resident
//! API. Each captured handle gets a new one from the replaying backend's own allocation, every
//! upload writes the recorded bytes, a resident dispatch runs on the mapped resources and is
//! compared with its captured outputs, and every read is compared with the bytes the
//! application read. A resident sequence runs as one call again (its prefix, its repeated
//! steps the captured number of times, each step with its own grid and workgroup overrides)
//! and its reads are compared.
//!
//! The records depend on each other, so they replay only as a whole capture (not with
//! `--only`), and a resident record without data (past the limit) ends the resident replay:
//! later reads could not be trusted.

use std::collections::HashMap;
use std::num::TryFromIntError;

use vyre_driver::backend::{
    BackendError, ResidentDispatchStep, ResidentReadRange, Resource, VyreBackend,
};
use vyrescope_capture::format::{
    BufferRef, CallResult, DataState, Event, ProgramRef, ReadRef, Record, ResourceRef, StepRef,
};
use vyrescope_capture::{Capture, ReadError};

use super::{failed, first_divergence, one_line, skipped, Divergence, RecordReplay, Verdict};
use crate::vyre::replay::{decode, output_slots, DecodeError, OutputSlot};

/// The resident replay's state: captured handle -> the replaying backend's resource.
pub(super) struct Session<'a> {
    backend: &'a dyn VyreBackend,
    handles: HashMap<(u64, u64), Resource>,
    /// Why resident records are not replayed, once that is so.
    off: Option<String>,
}

/// Why a resident record could not be replayed (the row's detail).
#[derive(Debug, thiserror::Error)]
enum ResidentError {
    /// A record names a handle no earlier allocation made.
    #[error(
        "resident handle {handle} of instance {owner} was not allocated earlier in the capture"
    )]
    Unallocated {
        /// The captured handle.
        handle: u64,
        /// The backend instance that owned it.
        owner: u64,
    },
    /// The capture's files could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A captured length or offset does not fit this machine's address space.
    #[error(transparent)]
    Size(#[from] TryFromIntError),
    /// The captured Program does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The captured dispatch configuration has a value vyre-driver gives no meaning.
    #[error("{0}")]
    Config(String),
    /// The replaying backend refused a call.
    #[error("{backend} failed: {error}")]
    Backend {
        /// The replaying backend's id.
        backend: String,
        /// Its error.
        error: Box<BackendError>,
    },
    /// The record is not one of the resident API's.
    #[error("not a resident record")]
    NotResident,
}

/// A sequence step made ready to run: its Program decoded and its resources mapped.
struct ReadyStep {
    program: crate::vyre::replay::VyreProgram,
    resources: Vec<Resource>,
    grid_override: Option<[u32; 3]>,
    workgroup_override: Option<[u32; 3]>,
}

impl ReadyStep {
    fn step(&self) -> ResidentDispatchStep<'_> {
        ResidentDispatchStep {
            program: &self.program,
            resources: &self.resources,
            grid_override: self.grid_override,
            workgroup_override: self.workgroup_override,
        }
    }
}

/// What a resident record's replay gave.
enum Ran {
    /// It ran; nothing to compare (an allocation, upload, free).
    Done,
    /// It ran and its bytes were compared: the first divergence, if any.
    Compared(Option<Divergence>),
}

impl<'a> Session<'a> {
    /// A session on `backend`; `whole` is false under `--only`.
    pub fn new(backend: &'a dyn VyreBackend, whole: bool) -> Self {
        let off = if !whole {
            Some("resident records replay only with the whole capture (run without --only)".into())
        } else if !backend.supports_resident_dispatch() {
            Some(format!(
                "{} has no resident API; replay on a backend that has one",
                backend.id()
            ))
        } else {
            None
        };
        Session {
            backend,
            handles: HashMap::new(),
            off,
        }
    }

    /// Replays one resident record (allocate, upload, download, free, resident dispatch).
    pub fn replay(&mut self, cap: &Capture, rec: &Record, mut row: RecordReplay) -> RecordReplay {
        if let Some(why) = &self.off {
            return skipped(row, why.clone());
        }
        if let CallResult::Error { code, message } = &rec.result {
            return skipped(
                row,
                format!("the captured call failed ({code}): {}", one_line(message)),
            );
        }
        if rec.data != DataState::Full {
            self.off = Some(format!(
                "record {} carries no data, so later resident records cannot replay (Fix: record again with a larger VYRESCOPE_CAPTURE_LIMIT)",
                rec.index
            ));
            return skipped(row, self.off.clone().unwrap_or_default());
        }
        row.replayed_on = Some(self.backend.id().to_string());
        match self.run(cap, rec) {
            Ok(Ran::Done) => {
                row.verdict = Verdict::Replayed;
                row
            }
            Ok(Ran::Compared(None)) => {
                row.verdict = Verdict::Verified;
                row
            }
            Ok(Ran::Compared(Some(d))) => {
                row.verdict = Verdict::Diverged;
                row.divergence = Some(d);
                row
            }
            Err(e) => failed(row, e.to_string()),
        }
    }

    fn resource(
        &self,
        cap: &Capture,
        r: &ResourceRef<BufferRef>,
    ) -> Result<Resource, ResidentError> {
        match r {
            ResourceRef::Resident { handle, owner } => self
                .handles
                .get(&(*owner, *handle))
                .cloned()
                .ok_or(ResidentError::Unallocated {
                    handle: *handle,
                    owner: *owner,
                }),
            ResourceRef::Borrowed { data } => Ok(Resource::Borrowed(cap.blob(data)?)),
        }
    }

    /// A captured sequence step with its Program decoded and its resources mapped.
    fn ready(
        &self,
        cap: &Capture,
        s: &StepRef<ProgramRef, BufferRef>,
    ) -> Result<ReadyStep, ResidentError> {
        Ok(ReadyStep {
            program: decode(&cap.program_wire(&s.program)?)?,
            resources: s
                .resources
                .iter()
                .map(|r| self.resource(cap, r))
                .collect::<Result<_, _>>()?,
            grid_override: s.grid_override,
            workgroup_override: s.workgroup_override,
        })
    }

    fn run(&mut self, cap: &Capture, rec: &Record) -> Result<Ran, ResidentError> {
        let b = self.backend;
        let id = b.id();
        let backend_failed = |error: BackendError| ResidentError::Backend {
            backend: id.to_string(),
            error: Box::new(error),
        };
        match &rec.event {
            Event::Allocate { byte_len, resource } => {
                let len = usize::try_from(*byte_len)?;
                let res = b.allocate_resident(len).map_err(backend_failed)?;
                if let Some(ResourceRef::Resident { handle, owner }) = resource {
                    self.handles.insert((*owner, *handle), res);
                }
                Ok(Ran::Done)
            }
            Event::Upload { writes } => {
                for w in writes {
                    let res = self.resource(cap, &w.resource)?;
                    let bytes = cap.blob(&w.data)?;
                    let offset = usize::try_from(w.offset)?;
                    let r = if offset == 0 && !rec.call.contains("_at") {
                        b.upload_resident(&res, &bytes)
                    } else {
                        b.upload_resident_at(&res, offset, &bytes)
                    };
                    r.map_err(backend_failed)?;
                }
                Ok(Ran::Done)
            }
            Event::Download { reads } => {
                let mut got = Vec::with_capacity(reads.len());
                for rd in reads {
                    let res = self.resource(cap, &rd.resource)?;
                    let offset = usize::try_from(rd.offset)?;
                    got.push(
                        match rd.len {
                            Some(l) => {
                                let l = usize::try_from(l)?;
                                b.download_resident_range(&res, offset, l)
                            }
                            None => b.download_resident(&res),
                        }
                        .map_err(backend_failed)?,
                    );
                }
                compare_reads(cap, reads, &got)
            }
            Event::Sequence {
                prefix,
                repeated,
                repeat_count,
                reads,
            } => {
                let ready = |steps: &[StepRef<ProgramRef, BufferRef>]| {
                    steps
                        .iter()
                        .map(|s| self.ready(cap, s))
                        .collect::<Result<Vec<_>, _>>()
                };
                let (prefix, repeated) = (ready(prefix)?, ready(repeated)?);
                let prefix: Vec<_> = prefix.iter().map(ReadyStep::step).collect();
                let repeated: Vec<_> = repeated.iter().map(ReadyStep::step).collect();
                let mut ranges = Vec::with_capacity(reads.len());
                let mut res = Vec::with_capacity(reads.len());
                for rd in reads {
                    res.push(self.resource(cap, &rd.resource)?);
                }
                for (rd, r) in reads.iter().zip(&res) {
                    let byte_len = match rd.len {
                        Some(l) => usize::try_from(l)?,
                        None => return Err(ResidentError::Config(
                            "a sequence read without a length (vyre's read ranges always have one): the record was edited or written by another tool".into(),
                        )),
                    };
                    ranges.push(ResidentReadRange {
                        resource: r,
                        byte_offset: usize::try_from(rd.offset)?,
                        byte_len,
                    });
                }
                let mut got = vec![Vec::new(); reads.len()];
                let mut outs: Vec<&mut Vec<u8>> = got.iter_mut().collect();
                // The captured call's own form: a repeated sequence only when it had one.
                if repeated.is_empty() && *repeat_count == 0 {
                    b.dispatch_resident_sequence_read_ranges_into(&prefix, &ranges, &mut outs)
                } else {
                    b.dispatch_resident_repeated_sequence_read_ranges_into(
                        &prefix,
                        &repeated,
                        *repeat_count,
                        &ranges,
                        &mut outs,
                    )
                }
                .map_err(backend_failed)?;
                compare_reads(cap, reads, &got)
            }
            Event::ResidentDispatch {
                config, resources, ..
            } => {
                let loaded = cap.load(rec.index)?;
                let vp = decode(&loaded.program_wire)?;
                let res = resources
                    .iter()
                    .map(|r| self.resource(cap, r))
                    .collect::<Result<Vec<_>, _>>()?;
                let cfg = config.to_config().map_err(ResidentError::Config)?;
                let out = b
                    .dispatch_resident_timed(&vp, &res, &cfg)
                    .map_err(backend_failed)?
                    .outputs;
                if out.is_empty() && loaded.outputs.is_empty() {
                    return Ok(Ran::Done);
                }
                Ok(Ran::Compared(first_divergence(
                    &output_slots(&vp),
                    &loaded.outputs,
                    &out,
                )))
            }
            Event::Free { resource } => {
                let res = self.resource(cap, resource)?;
                if let ResourceRef::Resident { handle, owner } = resource {
                    self.handles.remove(&(*owner, *handle));
                }
                b.free_resident(res).map_err(backend_failed)?;
                Ok(Ran::Done)
            }
            _ => Err(ResidentError::NotResident),
        }
    }
}

/// Compares what the replay read (`got`, one per read) with the bytes the application read:
/// the first divergence names the read and its handle.
fn compare_reads(
    cap: &Capture,
    reads: &[ReadRef<BufferRef>],
    got: &[Vec<u8>],
) -> Result<Ran, ResidentError> {
    for (k, (rd, got)) in reads.iter().zip(got).enumerate() {
        let Some(data) = &rd.data else { continue };
        let want = cap.blob(data)?;
        let name = match rd.resource {
            ResourceRef::Resident { handle, .. } => format!("read {k} (handle {handle})"),
            ResourceRef::Borrowed { .. } => format!("read {k}"),
        };
        let slot = [OutputSlot { name, elem: None }];
        if let Some(mut d) = first_divergence(&slot, &[want], std::slice::from_ref(got)) {
            d.output = k;
            return Ok(Ran::Compared(Some(d)));
        }
    }
    Ok(Ran::Compared(None))
}
