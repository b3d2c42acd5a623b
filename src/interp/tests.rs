//! Interpreter tests: operator edge cases against hand-computed values, memory rules,
//! barriers, warps, atomics, grid barriers, fuel.

mod ops_edge;
mod programs;
