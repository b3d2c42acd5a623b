//! Asynchronous dispatches: the wrapped backend's pending handle, wrapped so that the call is
//! recorded when the application collects its result (its outputs exist only then).
//!
//! A handle the application drops without awaiting leaves no record (its call number is
//! skipped): the outputs were never seen.

use std::sync::Arc;

use vyre_driver::backend::{
    private, BackendError, OutputBuffers, PendingDispatch, TimedDispatchResult,
};
use vyre_foundation::ir::Program;

use crate::format::{CallResult, ConfigRecord, Event, ResourceRef, Timing};
use crate::recorder::{Call, Recorder};
use crate::writer::Payload;

/// What the call was, minus its outputs.
pub(crate) enum PendingKind {
    /// `dispatch_async`, `dispatch_borrowed_async`.
    Host {
        program: Program,
        config: ConfigRecord,
        inputs: Vec<Payload>,
    },
    /// `dispatch_resident_async`.
    Resident {
        program: Program,
        config: ConfigRecord,
        resources: Vec<ResourceRef<Payload>>,
    },
}

/// A pending dispatch that records itself when awaited.
pub(crate) struct CapturedPending {
    inner: Box<dyn PendingDispatch>,
    rec: Arc<Recorder>,
    call: Call,
    name: &'static str,
    kind: PendingKind,
}

impl CapturedPending {
    /// Wraps the wrapped backend's answer; a start failure is recorded at once.
    pub fn wrap(
        rec: Arc<Recorder>,
        call: Call,
        name: &'static str,
        kind: PendingKind,
        r: Result<Box<dyn PendingDispatch>, BackendError>,
    ) -> Result<Box<dyn PendingDispatch>, BackendError> {
        match r {
            Ok(inner) => Ok(Box::new(CapturedPending {
                inner,
                rec,
                call,
                name,
                kind,
            })),
            Err(e) => {
                let timing = Timing {
                    host_ns: call.host_ns(),
                    ..Timing::default()
                };
                let event = event(kind, Vec::new());
                rec.finish(&call, name, event, timing, CallResult::error(&e));
                Err(e)
            }
        }
    }
}

/// What a finished call is recorded with: the recorder, the call, its name and kind.
type Parts = (Arc<Recorder>, Call, &'static str, PendingKind);

/// Records a finished call.
fn done(parts: Parts, outputs: Option<&[Vec<u8>]>, timing: Timing, result: CallResult) {
    let (rec, call, name, kind) = parts;
    let outputs = outputs.map(|o| rec.payloads(o)).unwrap_or_default();
    rec.finish(&call, name, event(kind, outputs), timing, result);
}

/// Host timing of a call, with the backend's figures when it gave a timed result.
fn timing_of(call: &Call, timed: Option<&TimedDispatchResult>) -> Timing {
    let mut t = Timing {
        host_ns: call.host_ns(),
        ..Timing::default()
    };
    if let Some(r) = timed {
        t.backend_wall_ns = Some(r.wall_ns);
        t.device_ns = r.device_ns;
        t.enqueue_ns = r.enqueue_ns;
        t.wait_ns = r.wait_ns;
    }
    t
}

impl CapturedPending {
    fn split(self) -> (Box<dyn PendingDispatch>, Parts) {
        (self.inner, (self.rec, self.call, self.name, self.kind))
    }
}

fn event(kind: PendingKind, outputs: Vec<Payload>) -> Event<Program, Payload> {
    match kind {
        PendingKind::Host {
            program,
            config,
            inputs,
        } => Event::Dispatch {
            program,
            config,
            inputs,
            outputs,
        },
        PendingKind::Resident {
            program,
            config,
            resources,
        } => Event::ResidentDispatch {
            program,
            config,
            resources,
            outputs,
        },
    }
}

impl private::Sealed for CapturedPending {}

impl PendingDispatch for CapturedPending {
    fn is_ready(&self) -> bool {
        self.inner.is_ready()
    }

    fn await_result(self: Box<Self>) -> Result<Vec<Vec<u8>>, BackendError> {
        let (inner, parts) = self.split();
        let r = inner.await_result();
        let timing = timing_of(&parts.1, None);
        done(parts, r.as_deref().ok(), timing, CallResult::of(&r));
        r
    }

    fn await_timed_result(self: Box<Self>) -> Result<TimedDispatchResult, BackendError> {
        let (inner, parts) = self.split();
        let r = inner.await_timed_result();
        let timing = timing_of(&parts.1, r.as_ref().ok());
        let outputs = r.as_ref().ok().map(|t| t.outputs.as_slice());
        done(parts, outputs, timing, CallResult::of(&r));
        r
    }

    fn await_result_into(self: Box<Self>, outputs: &mut OutputBuffers) -> Result<(), BackendError> {
        let (inner, parts) = self.split();
        let r = inner.await_result_into(outputs);
        let timing = timing_of(&parts.1, None);
        done(
            parts,
            r.as_ref().ok().map(|_| outputs.as_slice()),
            timing,
            CallResult::of(&r),
        );
        r
    }
}
