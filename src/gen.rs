//! Random Program generators, driven by a `u64` seed so that every case is reproducible: the
//! property tests (validator, interpreter, emitter, fuzz harness) and `selftest --fuzz` (the
//! differential GPU check against the interpreter) draw from the same generators.
//!
//! - [`valid_program`]: well-typed Programs the validator must accept: every rule of the
//!   Program format and of the semantics is respected by construction (types, literal
//!   contexts, scoping without shadowing, writable stores, atomics, barriers only where every
//!   thread of the workgroup reaches them). With [`Config::default`] loops are short and
//!   bounded, so interpreting one is cheap; [`Config::interp`] makes Programs to run: a `run`
//!   section, odd workgroup sizes (partial warps), a variable of every type from the start,
//!   and loops that may outrun an interpreter's fuel.
//! - [`wild_program`]: structurally anything the model can hold (random names, types,
//!   buffers, operators, nesting), mostly invalid; for "never panics" properties.
//! - [`mutate`]: a valid Program with one random change that is likely to break a rule.
//! - [`random_pipeline`]: race-free pipelines of several steps (mixed workgroup sizes,
//!   reductions, neighbour reads, clamped and periodic stencils, ping-pong runs, histograms)
//!   for the fused-versus-separate checks.
//! - [`random_window_chain`]: chains of window steps (mixed radii, clamped, periodic and open
//!   boundaries, 1-D and 2-D) for the recomputed (halo) form's checks.

mod chain;
mod mutate;
mod pipeline;
mod valid;
mod wild;

pub use chain::random_window_chain;
pub use mutate::{mutate, mutate_with};
pub use pipeline::random_pipeline;
pub use valid::{standard_buffers, valid_program, valid_program_with};
pub use wild::{wild_program, wild_program_with};

use crate::inputs::prng::SplitMix64;
use crate::ir::*;
/// Test-case randomness: the crate's own SplitMix64 (the generator behind `"fill": "random"`)
/// with a few drawing helpers, optionally fed from a byte string first.
///
/// [`Rng::from_bytes`] makes a generator whose draws come from the given bytes (8 per draw)
/// until they run out, then from SplitMix64: a fuzzer that shrinks the bytes (proptest's
/// `Vec<u8>` strategy) shrinks the decisions of the generator with them, so a failing
/// Program shrinks toward a small one while every byte string still gives a Program.
#[derive(Debug, Clone)]
pub struct Rng {
    bytes: Vec<u8>,
    pos: usize,
    mix: SplitMix64,
}

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Rng {
            bytes: Vec::new(),
            pos: 0,
            mix: SplitMix64::new(seed),
        }
    }

    /// A generator that draws from `bytes` first (see the type's docs).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        Rng {
            bytes: bytes.to_vec(),
            pos: 0,
            mix: SplitMix64::new(bytes.len() as u64 ^ 0x5eed_b17e),
        }
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        if self.pos < self.bytes.len() {
            let end = (self.pos + 8).min(self.bytes.len());
            let mut b = [0u8; 8];
            b[..end - self.pos].copy_from_slice(&self.bytes[self.pos..end]);
            self.pos = end;
            return u64::from_le_bytes(b);
        }
        self.mix.next_u64()
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next_u64() % den < num
    }

    /// A random element.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// Limits of the valid generator.
#[derive(Debug, Clone)]
pub struct Config {
    /// Deepest statement nesting.
    pub max_stmt_depth: usize,
    /// Deepest expression nesting.
    pub max_expr_depth: usize,
    /// Most statements per list.
    pub max_stmts: usize,
    /// Emit workgroup barriers (at the top level, before any `return`).
    pub barriers: bool,
    /// Emit `shuffle`, `subgroup_reduce` and `ballot`.
    pub subgroup_ops: bool,
    /// Emit atomics.
    pub atomics: bool,
    /// Emit stores/loads/atomics on the workgroup buffer `tile` (racy between threads).
    pub workgroup_memory: bool,
    /// Workgroup sizes to pick from.
    pub workgroups: Vec<[u32; 3]>,
    /// Give the Program a `run` section (a grid of 1 to 4 workgroups over 100 elements and
    /// fills for the read buffers), so it runs as generated.
    pub run: bool,
    /// Start with one `let` of every value type (`p_u32`, ...): every type has a variable
    /// from the first statement on, and every invocation evaluates at least 16 nodes
    /// (8 statements and their expressions) before anything can return.
    pub prologue: bool,
    /// Loop bounds may also be `e & LIT` for any `u32` expression `e` and literal: some
    /// loops then run longer than an interpreter's fuel, exercising that error path.
    pub long_loops: bool,
    /// No data races: every access to a buffer other threads may write (read-write and
    /// workgroup buffers) is at the thread's own element `i`, which is never reassigned, and
    /// workgroups are one-dimensional so that `i` (the global x id) is unique per thread.
    /// The results then do not depend on the order threads run in, which a comparison of
    /// the GPU with the interpreter needs.
    pub race_free: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_stmt_depth: 4,
            max_expr_depth: 4,
            max_stmts: 6,
            barriers: true,
            subgroup_ops: true,
            atomics: true,
            workgroup_memory: true,
            workgroups: vec![[64, 1, 1], [32, 2, 1], [128, 1, 1], [16, 4, 2]],
            run: false,
            prologue: false,
            long_loops: false,
            race_free: false,
        }
    }
}

impl Config {
    /// Programs for running (the interpreter's property test): everything of the default,
    /// plus a `run` section, the prologue, long loops, and workgroup sizes that leave warps
    /// partly empty (1, 7, 48 threads) or spread over y and z.
    pub fn interp() -> Self {
        Config {
            workgroups: vec![
                [1, 1, 1],
                [7, 1, 1],
                [32, 1, 1],
                [48, 1, 1],
                [64, 1, 1],
                [8, 2, 2],
                [32, 2, 1],
                [16, 4, 2],
            ],
            max_stmt_depth: 5,
            max_stmts: 12,
            run: true,
            prologue: true,
            long_loops: true,
            ..Config::default()
        }
    }

    /// Programs for differential testing (`selftest --fuzz`): those of [`Config::interp`]
    /// without data races (see [`Config::race_free`]) and without loops that outrun fuel,
    /// so that the GPU and the interpreter must agree on every element.
    pub fn differential() -> Self {
        Config {
            workgroups: vec![
                [1, 1, 1],
                [7, 1, 1],
                [32, 1, 1],
                [48, 1, 1],
                [64, 1, 1],
                [96, 1, 1],
            ],
            long_loops: false,
            race_free: true,
            ..Config::interp()
        }
    }
}

/// Every value type, in the model's order.
const VALUE_TYPES: [ScalarType; 7] = ScalarType::ALL;

fn st(kind: StmtKind) -> Stmt {
    Stmt {
        id: Default::default(),
        kind,
    }
}

fn bx(e: Expr) -> Box<Expr> {
    Box::new(e)
}
