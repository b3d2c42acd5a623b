//! GPU work in a replaceable child process: the client side ([`GpuWorker`]), the protocol
//! ([`protocol`]) and the worker's request loop ([`server`], run by the hidden
//! `vyrescope gpu-worker` subcommand).
//!
//! Why a process: on current drivers (580 / CUDA 13) a sticky kernel fault (illegal address,
//! trap, ...) poisons the CUDA state of the whole process; neither a primary-context reset
//! nor a fresh `cuCtxCreate` works afterwards. So the inspector and the fault check do their
//! GPU work in a worker process: after a sticky fault the worker replies with the fault and
//! exits, and the next request starts a fresh worker (the context is recreated in a new
//! process), so later dispatches work. Timeouts recover inside the worker.
//!
//! The client starts the worker lazily, reads its replies on a thread (so it can give up on a
//! worker that hangs past the request's timeout plus a margin, and kill it), reports a worker
//! that died (end of output, a signal) with its exit status and last stderr lines, and kills
//! and reaps its child on drop. Without a CUDA driver, requests fail with the worker's
//! `no CUDA driver found ...` error, the same line an in-process [`super::Runtime`] gives.

pub(crate) mod client;
mod process;
pub mod protocol;
#[cfg(test)]
mod protocol_tests;
pub mod server;

pub use client::*;
pub use process::{mark_this_binary, worker_exe, WORKER_EXE_ENV};
