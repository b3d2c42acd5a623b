//! The grid barrier: every workgroup of a cooperative launch waits until all have arrived.
//!
//! Scratch (the kernel's grid-sync parameter, [`crate::ir::ScratchLayout::BARRIER_WORDS`] u32
//! words, zeroed when the runtime allocates it; both lowerings leave it ready for the next
//! barrier and the next launch, so it is not cleared between launches). Two lowerings, chosen
//! by [`GridBarrier`] (`EmitOptions::grid_barrier`):
//!
//! **Flip** (the default). Word 0 is an arrival counter whose top bit flips once per
//! barrier. Per barrier:
//!
//! 1. `bar.sync 0`: the whole block has arrived (its memory operations are ordered before
//!    thread 0's next ones at cta scope).
//! 2. Thread 0 (linear id 0) adds to word 0 with `atom.acq_rel.gpu`: workgroup 0 adds
//!    `0x80000000 - (blocks - 1)`, every other workgroup adds 1. The additions of one barrier
//!    sum to exactly `0x80000000`, and every partial sum short of the last arrival stays below
//!    it, so bit 31 changes exactly when the last workgroup arrives and the low bits come back
//!    to where they were. The release half publishes the block's writes at gpu scope; each
//!    arrival's acquire half reads the chain of earlier arrivals.
//! 3. Thread 0 spins on `ld.acquire.gpu` of word 0 until bit 31 differs from the value its own
//!    atomic returned (at once for the last arriver; with a short `nanosleep` between polls
//!    for the others). The value cannot flip back before this block arrives again, so no
//!    waiter can miss the flip.
//! 4. `bar.sync 0`: the rest of the block waits for thread 0; the acquire made every other
//!    block's pre-barrier writes visible.
//!
//! One atomic and one cache line per barrier and block, and nothing for the last arriver to
//! do after its atomic: the flip is the release. This is the scheme CUDA's cooperative groups
//! use for `grid.sync()`.
//!
//! **Generation** (the earlier lowering, kept to compare against: `run --grid-barrier
//! generation`). Word 0 counts arrivals, word 1 is a generation number. Thread 0 reads the
//! generation, `fence.acq_rel.gpu`, `atom.acq_rel.gpu.add` on the counter; the last arriver
//! resets the counter and bumps the generation with `red.release.gpu`; the others spin until
//! the generation changes. It costs one more load before the atomic and a second release
//! after it on the critical path of every barrier.
//!
//! In both, the scratch is back to a state that works again after every barrier, so a barrier
//! works any number of times, inside loops too. Blocks that `return` before a grid barrier
//! never arrive: the validator rejects such programs.

use serde::{Deserialize, Serialize};

use super::regs::{Reg, RegClass};
use super::writer::Writer;

/// PTX parameter name of the scratch pointer.
pub const GRID_SYNC_PARAM: &str = "param_grid_sync";

/// How a grid barrier is lowered (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GridBarrier {
    /// One flipping arrival counter (the default).
    #[default]
    Flip,
    /// Counter plus generation word (the earlier lowering).
    Generation,
}

impl GridBarrier {
    /// The lowering's name, as `--grid-barrier` spells it.
    pub fn name(self) -> &'static str {
        match self {
            GridBarrier::Flip => "flip",
            GridBarrier::Generation => "generation",
        }
    }
}

impl std::str::FromStr for GridBarrier {
    type Err = crate::util::Problem;
    fn from_str(s: &str) -> Result<Self, crate::util::Problem> {
        match s {
            "flip" => Ok(GridBarrier::Flip),
            "generation" => Ok(GridBarrier::Generation),
            _ => Err(crate::util::Problem::usage(
                format!("unknown grid barrier `{s}`"),
                "use `flip` (the default) or `generation`",
            )),
        }
    }
}

impl Writer<'_> {
    pub(super) fn grid_scratch(&mut self) -> Reg {
        if let Some(r) = &self.out.hoisted.grid_scratch {
            return r.clone();
        }
        let raw = self.reg_class(RegClass::B64);
        let g = self.reg_class(RegClass::B64);
        self.pro(format!("ld.param.u64 {raw}, [{GRID_SYNC_PARAM}]"));
        self.pro(format!("cvta.to.global.u64 {g}, {raw}"));
        self.out.hoisted.grid_scratch = Some(g.clone());
        g
    }

    pub(super) fn grid_blocks(&mut self) -> Reg {
        if let Some(r) = &self.out.hoisted.grid_blocks {
            return r.clone();
        }
        let (x, y, z) = (
            self.reg_class(RegClass::B32),
            self.reg_class(RegClass::B32),
            self.reg_class(RegClass::B32),
        );
        self.pro(format!("mov.u32 {x}, %nctaid.x"));
        self.pro(format!("mov.u32 {y}, %nctaid.y"));
        self.pro(format!("mov.u32 {z}, %nctaid.z"));
        let xy = self.reg_class(RegClass::B32);
        self.pro(format!("mul.lo.s32 {xy}, {x}, {y}"));
        let n = self.reg_class(RegClass::B32);
        self.pro(format!("mul.lo.s32 {n}, {xy}, {z}"));
        self.out.hoisted.grid_blocks = Some(n.clone());
        n
    }

    /// What this workgroup adds to the flip counter: `0x80000001 - blocks` for workgroup 0
    /// (all of `%ctaid` zero), 1 for the others. Computed once in the prologue.
    pub(super) fn grid_flip_increment(&mut self) -> Reg {
        if let Some(r) = &self.out.hoisted.grid_flip_inc {
            return r.clone();
        }
        let blocks = self.grid_blocks();
        let (x, y, z) = (
            self.reg_class(RegClass::B32),
            self.reg_class(RegClass::B32),
            self.reg_class(RegClass::B32),
        );
        self.pro(format!("mov.u32 {x}, %ctaid.x"));
        self.pro(format!("mov.u32 {y}, %ctaid.y"));
        self.pro(format!("mov.u32 {z}, %ctaid.z"));
        let any = self.reg_class(RegClass::B32);
        self.pro(format!("or.b32 {any}, {x}, {y}"));
        self.pro(format!("or.b32 {any}, {any}, {z}"));
        let master = self.reg_class(RegClass::Pred);
        self.pro(format!("setp.eq.u32 {master}, {any}, 0"));
        let offset = self.reg_class(RegClass::B32);
        self.pro(format!("sub.s32 {offset}, -2147483647, {blocks}"));
        let inc = self.reg_class(RegClass::B32);
        self.pro(format!("selp.b32 {inc}, {offset}, 1, {master}"));
        self.out.hoisted.grid_flip_inc = Some(inc.clone());
        inc
    }

    /// Emits one grid barrier in the lowering `EmitOptions::grid_barrier` names (see the
    /// module docs).
    pub fn grid_barrier(&mut self) {
        match self.opts.grid_barrier {
            GridBarrier::Flip => self.grid_barrier_flip(),
            GridBarrier::Generation => self.grid_barrier_generation(),
        }
        self.out.scratch.barrier();
    }

    fn grid_barrier_flip(&mut self) {
        let scratch = self.grid_scratch();
        let inc = self.grid_flip_increment();
        let tid = self.linear_tid();
        let out = self.fresh_label("gs_out");
        let spin = self.fresh_label("gs_spin");
        let poll = self.fresh_label("gs_poll");
        self.ins("bar.sync 0");
        let not_leader = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {not_leader}, {tid}, 0"));
        self.ins(format!("@{not_leader} bra {out}"));
        let old = self.reg_class(RegClass::B32);
        self.ins(format!(
            "atom.acq_rel.gpu.global.add.u32 {old}, [{scratch}], {inc}"
        ));
        self.ins(format!("bra.uni {poll}"));
        self.label(&spin);
        self.ins("nanosleep.u32 32");
        self.label(&poll);
        let now = self.reg_class(RegClass::B32);
        self.ins(format!("ld.acquire.gpu.global.u32 {now}, [{scratch}]"));
        let diff = self.reg_class(RegClass::B32);
        self.ins(format!("xor.b32 {diff}, {now}, {old}"));
        // Bit 31 of the difference still clear: the last workgroup has not arrived yet.
        let same = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ge.s32 {same}, {diff}, 0"));
        self.ins(format!("@{same} bra {spin}"));
        self.label(&out);
        self.ins("bar.sync 0");
    }

    fn grid_barrier_generation(&mut self) {
        let scratch = self.grid_scratch();
        let blocks = self.grid_blocks();
        let tid = self.linear_tid();
        let out = self.fresh_label("gs_out");
        let spin = self.fresh_label("gs_spin");
        self.ins("bar.sync 0");
        let not_leader = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {not_leader}, {tid}, 0"));
        self.ins(format!("@{not_leader} bra {out}"));
        let gen = self.reg_class(RegClass::B32);
        self.ins(format!("ld.relaxed.gpu.global.u32 {gen}, [{scratch}+4]"));
        self.ins("fence.acq_rel.gpu");
        let old = self.reg_class(RegClass::B32);
        self.ins(format!(
            "atom.acq_rel.gpu.global.add.u32 {old}, [{scratch}], 1"
        ));
        let last = self.reg_class(RegClass::B32);
        self.ins(format!("add.s32 {last}, {blocks}, -1"));
        let waiter = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {waiter}, {old}, {last}"));
        self.ins(format!("@{waiter} bra {spin}"));
        self.ins(format!("st.relaxed.gpu.global.u32 [{scratch}], 0"));
        self.ins(format!("red.release.gpu.global.add.u32 [{scratch}+4], 1"));
        self.ins(format!("bra.uni {out}"));
        self.label(&spin);
        self.ins("nanosleep.u32 32");
        let now = self.reg_class(RegClass::B32);
        self.ins(format!("ld.acquire.gpu.global.u32 {now}, [{scratch}+4]"));
        let same = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.eq.u32 {same}, {now}, {gen}"));
        self.ins(format!("@{same} bra {spin}"));
        self.label(&out);
        self.ins("bar.sync 0");
    }
}

#[cfg(test)]
mod tests {
    /// The flip lowering's arithmetic, as the emitted PTX does it in u32: workgroup 0 adds
    /// `0x80000001 - blocks` (`sub.s32 inc, -2147483647, blocks`), the others add 1.
    fn increment(block: u32, blocks: u32) -> u32 {
        if block == 0 {
            0x8000_0001u32.wrapping_sub(blocks)
        } else {
            1
        }
    }

    /// Over several consecutive barriers with arrivals in shuffled orders, bit 31 of the
    /// counter changes exactly at the last arrival of each barrier, and never before; every
    /// waiter's own `old` value differs from the final value in bit 31.
    #[test]
    fn bit_31_flips_exactly_at_the_last_arrival() {
        let mut rng = crate::inputs::prng::SplitMix64::new(7);
        for blocks in [1u32, 2, 3, 7, 132, 1056, 4096, 65_535] {
            let mut counter = 0u32;
            for _barrier in 0..5 {
                let mut order: Vec<u32> = (0..blocks).collect();
                for i in (1..order.len()).rev() {
                    let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                    order.swap(i, j);
                }
                let start = counter;
                let mut olds = Vec::with_capacity(order.len());
                for (k, &b) in order.iter().enumerate() {
                    let old = counter;
                    counter = counter.wrapping_add(increment(b, blocks));
                    olds.push(old);
                    let flipped = (counter ^ start) >> 31 == 1;
                    assert_eq!(
                        flipped,
                        k + 1 == order.len(),
                        "blocks {blocks}, arrival {k}"
                    );
                }
                for old in olds {
                    assert_eq!((counter ^ old) >> 31, 1, "a waiter would miss the flip");
                }
                assert_eq!(counter & 0x7fff_ffff, start & 0x7fff_ffff);
            }
        }
    }
}
