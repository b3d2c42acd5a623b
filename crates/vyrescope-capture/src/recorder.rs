//! The calling thread's half of recording: numbering calls, copying their bytes (or only
//! their sizes past the limit) and handing them to the writer thread.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use vyre_driver::backend::Resource;
use vyre_foundation::ir::Program;

use crate::format::{CallResult, Event, ResourceRef, Timing};
use crate::writer::{Payload, Pending, Writer};

/// A live capture: the writer and the call counter.
pub(crate) struct Recorder {
    pub writer: Writer,
    pub dir: PathBuf,
    next: AtomicU64,
}

/// A call in progress: its number and when it started.
pub(crate) struct Call {
    pub index: u64,
    pub unix_ms: u64,
    pub started: Instant,
}

impl Call {
    /// Nanoseconds since the call started.
    pub fn host_ns(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl Recorder {
    pub fn new(writer: Writer, dir: PathBuf) -> Recorder {
        Recorder {
            writer,
            dir,
            next: AtomicU64::new(0),
        }
    }

    /// False once recording stopped after a failure.
    pub fn active(&self) -> bool {
        !self.writer.shared.stopped.load(Ordering::SeqCst)
    }

    /// Numbers a call and notes its start.
    pub fn begin(&self) -> Call {
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        Call {
            index: self.next.fetch_add(1, Ordering::SeqCst),
            unix_ms,
            started: Instant::now(),
        }
    }

    /// The bytes to hand over: a copy, or only the length past the limit.
    pub fn payload(&self, bytes: &[u8]) -> Payload {
        if self.writer.shared.metadata_only.load(Ordering::Relaxed) {
            Payload::Size(bytes.len() as u64)
        } else {
            Payload::Data(bytes.to_vec())
        }
    }

    /// Many buffers.
    pub fn payloads<T: AsRef<[u8]>>(&self, bufs: &[T]) -> Vec<Payload> {
        bufs.iter().map(|b| self.payload(b.as_ref())).collect()
    }

    /// A resource as recorded.
    pub fn resource(&self, r: &Resource) -> ResourceRef<Payload> {
        match r {
            Resource::Resident(h) => ResourceRef::Resident {
                handle: h.id(),
                owner: h.owner().get(),
            },
            Resource::Borrowed(bytes) => ResourceRef::Borrowed {
                data: self.payload(bytes),
            },
        }
    }

    /// Hands a finished call to the writer.
    pub fn finish(
        &self,
        call: &Call,
        name: &'static str,
        event: Event<Program, Payload>,
        timing: Timing,
        result: CallResult,
    ) {
        self.send(call, name, event, timing, result, false);
    }

    /// As [`Recorder::finish`], for a call whose data cannot be captured.
    pub fn finish_not_captured(
        &self,
        call: &Call,
        name: &'static str,
        event: Event<Program, Payload>,
        timing: Timing,
        result: CallResult,
    ) {
        self.send(call, name, event, timing, result, true);
    }

    fn send(
        &self,
        call: &Call,
        name: &'static str,
        event: Event<Program, Payload>,
        timing: Timing,
        result: CallResult,
        not_captured: bool,
    ) {
        self.writer.send(Pending {
            index: call.index,
            call: name,
            unix_ms: call.unix_ms,
            not_captured,
            event,
            timing,
            result,
        });
    }
}

/// Timing with the host time only.
pub(crate) fn host_timing(call: &Call) -> Timing {
    Timing {
        host_ns: call.host_ns(),
        ..Timing::default()
    }
}
