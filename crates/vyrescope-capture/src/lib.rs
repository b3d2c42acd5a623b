//! Record what a vyre application dispatches, and read the recording back.
//!
//! [`capture`] wraps any `vyre_driver::VyreBackend` (vyrescope's, vyre-driver-cuda's, a third
//! party's) in a [`CapturingBackend`] that forwards every call unchanged and records each call
//! that moves data into a capture folder: the Program in vyre's wire format, the inputs, the
//! `DispatchConfig`, the outputs, host time and (where the backend reports it) device time,
//! and for the resident API the handles, uploads and downloads. `vyrescope replay` and the
//! inspector read the folder through [`read::Capture`]. The folder layout is a versioned
//! format, specified in `docs/capture-format.md` and typed in [`format`].
//!
//! Rules an application can rely on:
//! - Off unless asked for: nothing records without [`capture`] (or [`capture_from_env`] with
//!   `VYRESCOPE_CAPTURE` set), and a backend that is not wrapped pays nothing.
//! - Results and errors of the wrapped backend pass through unchanged; recording happens
//!   after each call and only copies.
//! - Recording is off the calling thread: the call copies its bytes into a bounded queue and
//!   a writer thread encodes, hashes and writes.
//! - Identical Programs and identical buffers are stored once (blake3 content hash).
//! - Data is bounded by [`CaptureOptions::limit_bytes`] (`VYRESCOPE_CAPTURE_LIMIT`, default
//!   [`format::DEFAULT_LIMIT_BYTES`] = 1 GiB); past it records carry sizes only, say so
//!   (`"data": "metadata_only"`), and the manifest's state says from which record.
//! - Every file is written atomically (temporary file, then rename): a record that exists is
//!   complete, also when the application dies a moment after writing it.
//! - A capture failure (folder not writable, disk full) never changes what the application
//!   computes: it is reported once on stderr and recording stops.
//!
//! This crate does not depend on cudarc, so an application built on vyre-driver-cuda can
//! link it next to its own CUDA stack.

#![deny(missing_docs)]

mod backend;
pub mod format;
mod pending;
pub mod read;
mod recorder;
mod start;
mod writer;

pub use backend::{CaptureStatus, CapturingBackend};
pub use read::{is_capture, Capture, LoadedRecord, ReadError};
pub use start::{
    capture, capture_boxed, capture_from_env, try_capture, CaptureOptions, StartError,
};
