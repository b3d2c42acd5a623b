//! The grid barrier: a reusable arrival counter with a generation word.
//!
//! Scratch (the kernel's last parameter, [`GRID_SYNC_WORDS`] u32 words, zeroed before the
//! launch): word 0 = arrival counter, word 1 = generation. The kernel must be launched
//! cooperatively (all blocks resident). Per barrier:
//!
//! 1. `bar.sync 0`: the whole block has arrived (and its memory operations are ordered
//!    before thread 0's next ones at cta scope).
//! 2. Thread 0 (linear id 0) reads the generation `g` (relaxed; it cannot have moved yet,
//!    because it only moves once every block, this one included, has arrived), then
//!    `fence.acq_rel.gpu` and `atom.acq_rel.gpu.add` on the counter: the block's writes are
//!    released at gpu scope.
//! 3. The last arriver (old value = blocks - 1) resets the counter to 0 and bumps the
//!    generation with `red.release.gpu`; the others spin on `ld.acquire.gpu` of the
//!    generation until it differs from `g` (with a short `nanosleep` between polls).
//! 4. `bar.sync 0`: the rest of the block waits for thread 0; the acquire made every other
//!    block's pre-barrier writes visible.
//!
//! The counter is back to 0 after every barrier and the generation only grows, so the
//! barrier works any number of times, inside loops too. Blocks that `return` before a grid
//! barrier never arrive: the validator rejects such programs.

use super::regs::RegClass;
use super::writer::Writer;

/// u32 words of grid-barrier scratch.
pub const GRID_SYNC_WORDS: u32 = 2;

/// PTX parameter name of the scratch pointer.
pub const GRID_SYNC_PARAM: &str = "param_grid_sync";

impl Writer<'_> {
    fn grid_scratch(&mut self) -> String {
        if let Some(r) = self.special.get("grid_scratch") {
            return r.clone();
        }
        let raw = self.reg_class(RegClass::B64);
        let g = self.reg_class(RegClass::B64);
        self.pro(format!("ld.param.u64 {raw}, [{GRID_SYNC_PARAM}]"));
        self.pro(format!("cvta.to.global.u64 {g}, {raw}"));
        self.special.insert("grid_scratch", g.clone());
        g
    }

    fn grid_blocks(&mut self) -> String {
        if let Some(r) = self.special.get("grid_blocks") {
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
        self.special.insert("grid_blocks", n.clone());
        n
    }

    /// Emits one grid barrier (see the module docs).
    pub fn grid_barrier(&mut self) {
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
        self.special.insert("has_grid_barrier", String::new());
    }
}
