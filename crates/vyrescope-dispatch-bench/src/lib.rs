//! How fast a vyre backend's `dispatch` is, measured through vyre's backend contract.
//!
//! The same vyre Programs ([`samples`]) and pageable `Vec<u8>` inputs a vyre application would
//! pass go through a `&dyn VyreBackend`: vector add f32 at several sizes and one reduction,
//! each verified against the host once, then timed ([`run_dispatch_bench`]): the median wall
//! time of `dispatch`, where a timed dispatch's time goes (`dispatch_borrowed_timed`), and
//! `dispatch_resident_timed` with its device time. The copy limit is the bytes a dispatch
//! must move divided by the pinned host<->device bandwidth, which the caller measures and
//! passes in: no dispatch of pageable inputs can beat it.
//!
//! This crate does not depend on cudarc (directly or through a dependency), so both sides of
//! the race link the very same benchmark: vyrescope's `selftest --vyre-dispatch` and the race
//! binary on vyre-driver-cuda (`benches/gpu/vyre-driver-race`), whose cudarc builds cannot
//! share one process.

mod bench;
mod capture;
mod report;
pub mod samples;
mod workload;

pub use bench::{
    for_each_case, median, repeats_for, run_dispatch_bench, BenchCase, BenchSizes,
    DispatchBenchError,
};
pub use capture::{capture_overhead, CaptureOverhead};
pub use report::{dispatch_table, DispatchBench, DispatchRow, DispatchSplit};
pub use workload::{record_workload, Workload};
