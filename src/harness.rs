//! Command harnesses: the GPU-side halves of the commands that orchestrate many runs
//! (`selftest`, `selftest --fuzz`, `selftest --fuzz-pipelines`, `selftest --vyre`, `tune`,
//! `bench-kernel`, `occupancy-record`, timelines, pipeline runs), built on the runtime's
//! API one layer down.
//!
//! - [`executor`]: the one Executor seam (reference interpreter, in-process CUDA, GPU
//!   worker process) that `run` and the inspector dispatch through.
//! - [`selftest`]: every fixture on the live GPU, the occupancy estimator against the driver,
//!   the fault-recovery check; [`occupancy_record`]: the driver's occupancy table.
//! - [`fuzz`] and [`fuzz_pipelines`]: differential fuzzing of generated Programs and pipelines
//!   against the reference interpreter.
//! - [`replay`] (feature `vyre`): a capture of a vyre application's dispatches
//!   (`vyrescope-capture`) replayed on a backend, each output compared byte for byte.
//! - [`offline`]: tuning without a GPU (`tune --offline`): per candidate registers,
//!   occupancy, instruction mix and result preservation, all labelled as estimates; and the
//!   one place a kernel's resources come from without a GPU (`--regs`, ptxas, estimate);
//!   [`offline_fit`]: a compiled pipeline's persistent grids fitted to those figures, which
//!   then replace the planner's assumed ones (`plan`, `occupancy`, the Plan tab).
//! - [`preserve`]: does a workgroup size preserve a Program's results (reference
//!   interpreter at its own size and at the other, same inputs): the one check behind every
//!   workgroup-size suggestion.
//! - [`bench`]: kernel and dispatch-overhead benchmarks; [`tune`]: timed workgroup sizes with
//!   the tune cache; [`vyre_race`] (feature `vyre`): our kernel against vyre's;
//!   [`vyre_catalog`] (feature `vyre`): vyre's op catalogue against vyre's expected outputs,
//!   also through a `VyreBackend` acquired from vyre's registry (dispatch speed through that
//!   trait is the workspace crate `vyrescope-dispatch-bench`, shared with the race binary on
//!   vyre-driver-cuda).
//! - [`target`]: the one compile target of a pipeline (device, sync form, decision, plan
//!   cache) and the one `compile` every pipeline front end calls, with the decision it
//!   carries.
//! - [`pipeline`]: a pipeline as separate launches and/or its megakernel plan, each form
//!   checked against the interpreter and judged by the speedup gate (the launch list itself
//!   runs in `runtime::launch_list`); [`timeline_run`]: which launches each form of a pipeline
//!   records, and the recorded forms checked against the interpreter (the run is the
//!   runtime's `run_timeline`, the record mode of its launch list).
//! - [`worker_messages`]: the harness's jobs of the GPU worker protocol (a pipeline's forms,
//!   a timeline, a capture replay) and what they answer, typed; [`worker_jobs`] runs them in
//!   the `gpu-worker` process; [`replay_record`]: a replayed record's line, which one carries.
//!
//! Invariants:
//! - A harness decides *what* to run and how to judge it; *how* a kernel is compiled,
//!   launched, timed and recovered after a fault is the runtime's. Harnesses hold no driver
//!   handles of their own and never use `cudarc` or `unsafe` (the layers test checks both).
//! - Every GPU result a harness reports as correct was compared with the reference
//!   interpreter by the runtime's parity rules (`runtime::parity`); a harness never has its
//!   own notion of "close enough".
//! - Harnesses return data (reports, tables, findings), never print: the `cli` and the `tui`
//!   render them, so both show the same figures.
//! - Harnesses are free functions over the runtime's public API (`fn selftest(rt: &mut
//!   Runtime, ..)`); only `runtime/` adds methods to `Runtime`, and only the runtime builds
//!   and enqueues launches (the layers test checks both).
//! - Layer 8: above `runtime` (and everything below it), below `tui` and `cli`.

pub mod bench;
#[cfg(feature = "vyre")]
pub mod dispatch_phases;
pub mod executor;
pub mod fuzz;
pub mod fuzz_children;
pub mod fuzz_pipelines;
pub mod occupancy_record;
pub mod offline;
pub mod offline_fit;
pub mod pipeline;
pub mod preserve;
pub mod profile_run;
#[cfg(feature = "vyre")]
pub mod replay;
pub mod replay_record;
pub mod selftest;
pub mod target;
pub mod timeline_run;
pub mod tune;
#[cfg(feature = "vyre")]
pub mod vyre_catalog;
#[cfg(feature = "vyre")]
pub mod vyre_race;
pub mod worker_jobs;
pub mod worker_messages;
