//! Static analyses of Program expressions, shared by the layers above: the one home of each.
//!
//! - [`affine`]: index expressions as linear forms over the thread ids plus a uniform part
//!   (coalescing and bank conflicts for `diagnostics`, tile proofs for `megakernel`).
//! - [`ranges`]: value ranges of `u32` expressions and the facts conditions imply (bounds
//!   proofs and versioned fast paths for `emit`, the interval proofs of the vyre export).
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
