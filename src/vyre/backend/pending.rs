//! Asynchronous dispatch: the work runs on its own thread (holding the backend's state by
//! `Arc`), so `dispatch_async` returns at once and `is_ready` polls without blocking.

use std::sync::Mutex;
use std::thread::JoinHandle;

use vyre_driver::backend::{private, BackendError, PendingDispatch, TimedDispatchResult};

/// A dispatch running on a worker thread.
pub struct ThreadPending {
    handle: Mutex<Option<JoinHandle<Result<TimedDispatchResult, BackendError>>>>,
    backend: &'static str,
}

impl ThreadPending {
    /// Starts `work` on a new thread.
    pub fn spawn(
        backend: &'static str,
        work: impl FnOnce() -> Result<TimedDispatchResult, BackendError> + Send + 'static,
    ) -> Result<Self, BackendError> {
        let handle = std::thread::Builder::new()
            .name(format!("{backend}-dispatch"))
            .spawn(work)
            .map_err(|e| {
                super::errors::invalid(
                    format!("{backend}: could not start a dispatch thread: {e}"),
                    "use the synchronous dispatch, or lower the number of dispatches in flight",
                )
            })?;
        Ok(ThreadPending {
            handle: Mutex::new(Some(handle)),
            backend,
        })
    }
}

impl private::Sealed for ThreadPending {}

impl PendingDispatch for ThreadPending {
    fn is_ready(&self) -> bool {
        self.handle
            .lock()
            .map_or(true, |h| h.as_ref().is_none_or(|h| h.is_finished()))
    }

    fn await_result(self: Box<Self>) -> Result<Vec<Vec<u8>>, BackendError> {
        self.await_timed_result().map(|r| r.outputs)
    }

    fn await_timed_result(self: Box<Self>) -> Result<TimedDispatchResult, BackendError> {
        let backend = self.backend;
        let handle = self
            .handle
            .into_inner()
            .map_err(|_| super::errors::poisoned(backend))?;
        match handle.map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(BackendError::DispatchFailed {
                code: None,
                message: format!("{backend}: the dispatch thread panicked (a vyrescope bug; please report it with the Program)"),
            }),
            None => Err(super::errors::invalid(
                format!("{backend}: this pending dispatch was already awaited"),
                "await each pending dispatch once",
            )),
        }
    }
}
