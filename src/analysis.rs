//! Static analyses of Program expressions, shared by the layers above: the one home of each.
//!
//! - [`affine`]: index expressions as linear forms over the thread ids plus a uniform part
//!   (coalescing and bank conflicts for `diagnostics`, tile proofs for `megakernel`).
//! - [`ranges`]: value ranges of `u32` expressions and the facts conditions imply (bounds
//!   proofs and versioned fast paths for `emit`, the interval proofs of the vyre export).
//! - [`wg_dependence`]: the statements that tie a Program to its workgroup size (shared
//!   tiles sized to it, literal strides and lane counts, one output per workgroup) for the
//!   `L013` diagnostic. The one exception to "sound or silent" below: it is a detector whose
//!   findings say where to look; whether a size changes the outputs is decided by running the
//!   reference interpreter (`harness::preserve`), never by this analysis.
//!
//! Invariants:
//! - Pure functions of the IR: no emission, no device, no diagnostics. An analysis answers a
//!   question about expressions; what to do with the answer (drop a bounds check, report a
//!   finding, fuse two steps) belongs to the caller.
//! - Sound or silent: an answer is only given when it holds for every execution under the
//!   spec's semantics (wrapping `u32` arithmetic, the interpreter's operators from
//!   `semantics`); anything not proven is `Varying` / `None` / the full range, never a guess.
//! - One implementation each: callers with a simpler question (the vyre export's proofs, the
//!   exact mode of the megakernel) use the same analysis in another mode, not a copy.
//! - Layer 3: imports only `ir`, `semantics` and `util`, so `emit`, `diagnostics`, `vyre` and
//!   `megakernel` can all depend on it.

pub mod affine;
pub mod ranges;
pub mod wg_dependence;
