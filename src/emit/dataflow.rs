//! Dataflow synchronisation of fused persistent kernels ([`SyncOp`]): completion flags and
//! arrival counters in the grid-sync scratch (`grid_sync`). Nothing clears them between
//! launches (a memset before every launch cost about 1.4 us of the fused kernel's device
//! time on an H200): a flag holds the number of the launch that set it, and a counter flips
//! its top bit once per launch, so a value left by an earlier launch never satisfies a wait.
//!
//! - **Flags.** The runtime passes every dataflow launch a fresh epoch (`param_sync_epoch`,
//!   never 0, one more than the last launch's). A task publishes its flag by storing the
//!   epoch; a waiter waits for its producers' flags to equal the epoch.
//! - **Counters** count like the grid barrier's flip word (`grid_sync`): workgroup 0 adds
//!   `0x80000001 - blocks`, every other workgroup 1. One launch's arrivals sum to exactly
//!   2^31, so bit 31 changes exactly when the last block arrives and the low bits come back
//!   to where they were. Every block arrives on a counter (after its last task of the step)
//!   before any of its tasks waits on it, so the value its own atomic returned tells it
//!   which bit 31 means "not yet" in this launch. The runtime keeps the low bits of a
//!   counter word at zero between launches (it clears the scratch before a launch that
//!   counts on a word an earlier kernel used as a flag).
//!
//! Memory model (PTX ISA, "Memory Consistency Model"):
//! - **Publish** (`Signal`): `bar.sync 0` orders every thread's writes of the task before
//!   thread 0's next operations at cta scope; thread 0 then does `st.release.gpu` of the flag
//!   (and/or `atom.release.gpu.add` on the counter). Release is cumulative over what thread 0
//!   observed through the barrier, so the whole block's writes happen before the flag.
//! - **Wait**: thread 0 polls each producer's flag (or the counter) with `ld.acquire.gpu`
//!   (with `nanosleep` between polls) until it is set; the acquire synchronises with the
//!   producer's release (for a counter, with every arrival: read-modify-writes on one word
//!   form a release sequence). `bar.sync 0` then orders the acquire before every thread's
//!   next reads.
//! - **Arrive** (last-arriver fold): `bar.sync 0`, thread 0 `atom.acq_rel.gpu.add` on the
//!   counter: release publishes the block's task, acquire reads the chain of earlier arrivals,
//!   so the block whose add flips bit 31 has seen every producer's writes. `bar.red.or.pred`
//!   hands the verdict to every thread (it is a `bar.sync` too). That block runs the fold.

use super::regs::{Reg, RegClass};
use super::writer::Writer;
use super::EmitError;
use crate::ir::{Axis, BlockTasks, Builtin, Expr, ScratchLayout, SyncOp, WaitOn};

/// PTX parameter name of the launch's epoch (a `.u32` after the grid-sync scratch).
pub const SYNC_EPOCH_PARAM: &str = "param_sync_epoch";

type R<T> = Result<T, EmitError>;

/// Nanoseconds a waiting thread sleeps between polls.
const POLL_SLEEP_NS: u32 = 32;

/// Widest window whose flags are polled all at once (loads in flight together, one round
/// trip per poll); wider windows poll flag after flag.
const PARALLEL_WINDOW: i32 = 5;

impl Writer<'_> {
    /// Emits one dataflow statement (see the module docs).
    pub(super) fn sync_op(&mut self, op: &SyncOp) -> R<()> {
        self.out.scratch.add(op);
        self.comment(format!("dataflow: {}", op.describe()));
        match op {
            SyncOp::Wait {
                on,
                workgroup,
                span,
                ..
            } => self.sync_wait(*on, workgroup, *span),
            SyncOp::Signal {
                flags,
                counter,
                tasks: Some(tasks),
                ..
            } => self.sync_signal_block(*flags, *counter, *tasks),
            SyncOp::Signal {
                flags,
                counter,
                workgroup,
                tasks: None,
                ..
            } => self.sync_signal(*flags, *counter, workgroup),
            SyncOp::Arrive {
                counter,
                last,
                spread,
                ..
            } => self.sync_arrive(*counter, last, *spread),
        }
    }

    /// Address of scratch word `word + index` (`index` a u32 register or None).
    fn sync_addr(&mut self, word: u32, index: Option<&str>) -> Reg {
        let scratch = self.grid_scratch();
        let a = self.reg_class(RegClass::B64);
        match index {
            Some(i) => {
                let w = self.reg_class(RegClass::B32);
                self.ins(format!("add.s32 {w}, {i}, {word}"));
                self.ins(format!("mad.wide.u32 {a}, {w}, 4, {scratch}"));
            }
            None => self.ins(format!("add.s64 {a}, {scratch}, {}", u64::from(word) * 4)),
        }
        a
    }

    fn workgroup_reg(&mut self, var: &str) -> R<Reg> {
        let v = self.expr(&Expr::Var(var.to_string()))?;
        Ok(self.in_reg(&v))
    }

    /// The launch's epoch (loaded once in the prologue).
    fn sync_epoch(&mut self) -> Reg {
        if let Some(r) = &self.out.hoisted.sync_epoch {
            return r.clone();
        }
        let e = self.reg_class(RegClass::B32);
        self.pro(format!("ld.param.u32 {e}, [{SYNC_EPOCH_PARAM}]"));
        self.out.hoisted.sync_epoch = Some(e.clone());
        self.out.scratch.epoch = true;
        e
    }

    /// The register in which thread 0 keeps what its arrival on counter word `counter`
    /// returned (bit 31 before this launch's flip), for the block's later waits on it.
    fn counter_base(&mut self, counter: u32) -> Reg {
        if let Some(r) = self.out.counter_base.get(&counter) {
            return r.clone();
        }
        let r = self.reg_class(RegClass::B32);
        self.out.counter_base.insert(counter, r.clone());
        r
    }

    /// Skips to `out` unless this is thread 0.
    fn leader_only(&mut self, out: &str) {
        let tid = self.linear_tid();
        let p = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {p}, {tid}, 0"));
        self.ins(format!("@{p} bra {out}"));
    }

    /// Opens a poll loop: jumps to the first poll, which the caller emits next, and places
    /// the `nanosleep` before each later one. Returns the label a failed poll branches to.
    fn spin_head(&mut self) -> String {
        let spin = self.fresh_label("df_spin");
        let poll = self.fresh_label("df_poll");
        self.ins(format!("bra.uni {poll}"));
        self.label(&spin);
        self.ins(format!("nanosleep.u32 {POLL_SLEEP_NS}"));
        self.label(&poll);
        spin
    }

    /// Thread 0 polls the u32 at `addr` until it equals `want` (a register).
    fn poll_equal(&mut self, addr: &str, want: &str) {
        let spin = self.spin_head();
        let now = self.reg_class(RegClass::B32);
        self.ins(format!("ld.acquire.gpu.global.u32 {now}, [{addr}]"));
        let wait = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {wait}, {now}, {want}"));
        self.ins(format!("@{wait} bra {spin}"));
    }

    fn sync_wait(&mut self, on: WaitOn, workgroup: &str, span: u32) -> R<()> {
        // A packed trip's sub-tasks wait together: the union of their windows. Only a lone
        // task skips its own producer (`window_at_once`); a trip polls all of its own too
        // (published before, by this block: one load each, in parallel).
        let (on, own) = match on {
            WaitOn::Window {
                flags,
                producers,
                lo,
                hi,
            } if span > 1 => {
                let top = i64::from(hi) + i64::from(span) - 1;
                let hi = i32::try_from(top).map_err(|_| {
                    EmitError::Internal(format!(
                        "a dataflow window up to {top} past the task does not fit s32"
                    ))
                })?;
                (
                    WaitOn::Window {
                        flags,
                        producers,
                        lo,
                        hi,
                    },
                    false,
                )
            }
            _ => (on, true),
        };
        let out = self.fresh_label("df_waited");
        let passed = self.fresh_label("df_passed");
        let v = match on {
            WaitOn::Window { .. } => Some(self.workgroup_reg(workgroup)?),
            _ => None,
        };
        // A count or a fixed range is the same for every task of the step: once this block
        // has seen it complete (in this launch), its later tasks skip the wait. `done` is
        // false at kernel entry and set by every thread after the `bar.sync`, so the skip
        // is uniform in the block. It belongs to the wait statement, not to this copy of
        // it: the copies of an unrolled task loop share it, so only the block's first task
        // of the step polls (each poll is an L2 round trip, about 0.4 us on an H200).
        let done = match on {
            WaitOn::Window { .. } => None,
            _ => {
                let key = (on, workgroup.to_string());
                let d = match self.out.wait_done.get(&key) {
                    Some(d) => d.clone(),
                    None => {
                        let tid = self.linear_tid();
                        let d = self.reg_class(RegClass::Pred);
                        self.pro(format!("setp.ne.u32 {d}, {tid}, {tid}"));
                        self.out.wait_done.insert(key, d.clone());
                        d
                    }
                };
                self.ins(format!("@{d} bra {passed}"));
                Some(d)
            }
        };
        self.leader_only(&out);
        match on {
            WaitOn::Count { counter, .. } => {
                let base = self
                    .out
                    .counter_base
                    .get(&counter)
                    .cloned()
                    .ok_or_else(|| {
                        EmitError::Internal(format!(
                            "a dataflow wait on counter word {counter} comes before the block's own arrival on it"
                        ))
                    })?;
                let addr = self.sync_addr(counter, None);
                let spin = self.spin_head();
                let now = self.reg_class(RegClass::B32);
                self.ins(format!("ld.acquire.gpu.global.u32 {now}, [{addr}]"));
                let diff = self.reg_class(RegClass::B32);
                self.ins(format!("xor.b32 {diff}, {now}, {base}"));
                // Bit 31 as this block found it: not every block has arrived yet.
                let same = self.reg_class(RegClass::Pred);
                self.ins(format!("setp.ge.s32 {same}, {diff}, 0"));
                self.ins(format!("@{same} bra {spin}"));
            }
            WaitOn::Window {
                flags,
                producers,
                lo,
                hi,
            } if i64::from(hi) - i64::from(lo) < i64::from(PARALLEL_WINDOW) => {
                let v = v.unwrap_or_default();
                self.window_at_once(flags, producers, (lo, hi), &v, own);
            }
            WaitOn::Window {
                flags,
                producers,
                lo,
                hi,
            } => {
                let v = v.unwrap_or_default();
                // Producers max(v + lo, 0) ..= min(v + hi, producers - 1), in s32 (workgroup
                // counts stay far below 2^31).
                let (a, b) = (self.reg_class(RegClass::B32), self.reg_class(RegClass::B32));
                self.ins(format!("add.s32 {a}, {v}, {lo}"));
                self.ins(format!("max.s32 {a}, {a}, 0"));
                self.ins(format!("add.s32 {b}, {v}, {hi}"));
                self.ins(format!("min.s32 {b}, {b}, {}", producers.saturating_sub(1)));
                // The task's own workgroup of the producer ran on this block, before.
                self.flag_loop(flags, &a, &b, own.then_some(&*v));
            }
            WaitOn::Range {
                flags,
                producers,
                first,
                last,
            } => {
                let (a, b) = (self.reg_class(RegClass::B32), self.reg_class(RegClass::B32));
                self.ins(format!("mov.u32 {a}, {first}"));
                self.ins(format!(
                    "mov.u32 {b}, {}",
                    last.min(producers.saturating_sub(1))
                ));
                self.flag_loop(flags, &a, &b, None);
            }
        }
        self.label(&out);
        self.ins("bar.sync 0");
        if let Some(d) = done {
            let tid = self.linear_tid();
            self.ins(format!("setp.eq.u32 {d}, {tid}, {tid}"));
        }
        self.label(&passed);
        Ok(())
    }

    /// Thread 0 waits for the flags of producers `v + lo ..= v + hi` inside `0..producers`,
    /// but `v` itself when `skip_own` (it ran earlier on this block): every flag is loaded
    /// before any is tested, so one poll costs one round trip however wide the window.
    fn window_at_once(
        &mut self,
        flags: u32,
        producers: u32,
        (lo, hi): (i32, i32),
        v: &str,
        skip_own: bool,
    ) {
        let mut slots = Vec::new();
        for o in (lo..=hi).filter(|&o| o != 0 || !skip_own) {
            let p = self.reg_class(RegClass::B32);
            self.ins(format!("add.s32 {p}, {v}, {o}"));
            // Below 0 wraps to a huge u32: one unsigned test covers both ends.
            let inside = self.reg_class(RegClass::Pred);
            self.ins(format!("setp.lt.u32 {inside}, {p}, {producers}"));
            let addr = self.sync_addr(flags, Some(&p));
            slots.push((inside, addr, self.reg_class(RegClass::B32)));
        }
        if slots.is_empty() {
            return;
        }
        let epoch = self.sync_epoch();
        let spin = self.spin_head();
        for (inside, addr, r) in &slots {
            self.ins(format!("mov.u32 {r}, {epoch}"));
            self.ins(format!("@{inside} ld.acquire.gpu.global.u32 {r}, [{addr}]"));
        }
        let unset = self.reg_class(RegClass::Pred);
        for (i, (_, _, r)) in slots.iter().enumerate() {
            if i == 0 {
                self.ins(format!("setp.ne.u32 {unset}, {r}, {epoch}"));
            } else {
                let z = self.reg_class(RegClass::Pred);
                self.ins(format!("setp.ne.u32 {z}, {r}, {epoch}"));
                self.ins(format!("or.pred {unset}, {unset}, {z}"));
            }
        }
        self.ins(format!("@{unset} bra {spin}"));
    }

    /// Thread 0 waits for flags `flags + a ..= flags + b` (signed registers; none if a > b),
    /// except `own` (a producer task that ran earlier on this very block).
    fn flag_loop(&mut self, flags: u32, a: &str, b: &str, own: Option<&str>) {
        let head = self.fresh_label("df_flag");
        let done = self.fresh_label("df_flags_done");
        let p = self.reg_class(RegClass::B32);
        self.ins(format!("mov.u32 {p}, {a}"));
        self.label(&head);
        let past = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.gt.s32 {past}, {p}, {b}"));
        self.ins(format!("@{past} bra {done}"));
        let skip = self.fresh_label("df_flag_next");
        if let Some(own) = own {
            let mine = self.reg_class(RegClass::Pred);
            self.ins(format!("setp.eq.s32 {mine}, {p}, {own}"));
            self.ins(format!("@{mine} bra {skip}"));
        }
        let addr = self.sync_addr(flags, Some(&p));
        let epoch = self.sync_epoch();
        self.poll_equal(&addr, &epoch);
        self.label(&skip);
        self.ins(format!("add.s32 {p}, {p}, 1"));
        self.ins(format!("bra.uni {head}"));
        self.label(&done);
    }

    fn sync_signal(&mut self, flags: Option<u32>, counter: Option<u32>, workgroup: &str) -> R<()> {
        let out = self.fresh_label("df_signalled");
        let v = match flags {
            Some(_) => Some(self.workgroup_reg(workgroup)?),
            None => None,
        };
        let epoch = flags.map(|_| self.sync_epoch());
        let inc = counter.map(|_| self.grid_flip_increment());
        self.ins("bar.sync 0");
        self.leader_only(&out);
        if let (Some(f), Some(v), Some(epoch)) = (flags, v, epoch) {
            let addr = self.sync_addr(f, Some(&v));
            self.ins(format!("st.release.gpu.global.u32 [{addr}], {epoch}"));
        }
        if let (Some(c), Some(inc)) = (counter, inc) {
            self.count_block(c, &inc);
        }
        self.label(&out);
        Ok(())
    }

    /// A block's tasks of a step published together: one `bar.sync`, one fence by thread 0,
    /// then a relaxed store of the epoch to each task's flag. A fence followed by a strong
    /// store is a release pattern, so every flag publishes the whole block's writes (all its
    /// tasks are done) with one memory barrier instead of one per task.
    fn sync_signal_block(
        &mut self,
        flags: Option<u32>,
        counter: Option<u32>,
        tasks: BlockTasks,
    ) -> R<()> {
        let out = self.fresh_label("df_signalled");
        let epoch = flags.map(|_| self.sync_epoch());
        let inc = counter.map(|_| self.grid_flip_increment());
        let block = self.expr(&Expr::Builtin(Builtin::WorkgroupId(Axis::X)))?;
        let block = self.in_reg(&block);
        self.ins("bar.sync 0");
        self.leader_only(&out);
        if let (Some(f), Some(epoch)) = (flags, epoch) {
            self.ins("fence.acq_rel.gpu");
            // Packed: the block's trip t ran virtual workgroups (block + t * stride) * P + j.
            let pack = tasks.pack.max(1);
            let first = if pack > 1 {
                let r = self.reg_class(RegClass::B32);
                self.ins(format!("mul.lo.u32 {r}, {block}, {pack}"));
                r
            } else {
                block.clone()
            };
            let lanes = u64::from(tasks.stride.max(1)) * u64::from(pack);
            let trips = u64::from(tasks.count).div_ceil(lanes);
            for (t, j) in (0..trips).flat_map(|t| (0..u64::from(pack)).map(move |j| (t, j))) {
                let v = self.reg_class(RegClass::B32);
                // Below 2^32: fusion checks that the trips' virtual ids fit u32.
                self.ins(format!("add.u32 {v}, {first}, {}", (t * lanes + j) as u32));
                let has = self.reg_class(RegClass::Pred);
                self.ins(format!("setp.lt.u32 {has}, {v}, {}", tasks.count));
                let addr = self.sync_addr(f, Some(&v));
                self.ins(format!(
                    "@{has} st.relaxed.gpu.global.u32 [{addr}], {epoch}"
                ));
            }
        }
        if let (Some(c), Some(inc)) = (counter, inc) {
            self.count_block(c, &inc);
        }
        self.label(&out);
        Ok(())
    }

    /// Thread 0 counts its block on counter word `counter` (release: after the block's
    /// writes), keeping what the add returned for the block's later waits on it.
    fn count_block(&mut self, counter: u32, inc: &str) {
        let addr = self.sync_addr(counter, None);
        let base = self.counter_base(counter);
        self.ins(format!(
            "atom.release.gpu.global.add.u32 {base}, [{addr}], {inc}"
        ));
    }

    fn sync_arrive(&mut self, counter: u32, last: &str, spread: u32) -> R<()> {
        let reg = self.var(last)?.reg.clone();
        let tid = self.linear_tid();
        let out = self.fresh_label("df_arrived");
        let mine = self.reg_class(RegClass::Pred);
        // False in every thread until thread 0 learns it arrived last.
        self.ins(format!("setp.ne.u32 {mine}, {tid}, {tid}"));
        if spread == 0 {
            let inc = self.grid_flip_increment();
            self.ins("bar.sync 0");
            self.leader_only(&out);
            let addr = self.sync_addr(counter, None);
            // Kept for the block's later waits on the same counter (a step both folded and
            // waited for in full).
            let old = self.counter_base(counter);
            self.flip_add(&addr, &inc, &old, &mine);
        } else {
            let block = self.linear_ctaid();
            self.ins("bar.sync 0");
            self.leader_only(&out);
            // Block b arrives on sub-counter g = b % spread, shared by the blocks
            // g, g + spread, ...: n_g = (total - g + spread - 1) / spread of them; block g
            // (the first) adds the flip complement.
            let g = self.reg_class(RegClass::B32);
            self.ins(format!("rem.u32 {g}, {block}, {spread}"));
            let blocks = self.grid_blocks();
            let n = self.reg_class(RegClass::B32);
            self.ins(format!("add.u32 {n}, {blocks}, {}", spread - 1));
            self.ins(format!("sub.u32 {n}, {n}, {g}"));
            self.ins(format!("div.u32 {n}, {n}, {spread}"));
            let first = self.reg_class(RegClass::Pred);
            self.ins(format!("setp.lt.u32 {first}, {block}, {spread}"));
            let inc = self.reg_class(RegClass::B32);
            self.ins(format!("sub.s32 {inc}, -2147483647, {n}"));
            self.ins(format!("selp.b32 {inc}, {inc}, 1, {first}"));
            let word = self.reg_class(RegClass::B32);
            self.ins(format!(
                "mad.lo.s32 {word}, {g}, {}, {}",
                ScratchLayout::SPREAD_STRIDE,
                ScratchLayout::spread_word(counter, 0)
            ));
            let scratch = self.grid_scratch();
            let addr = self.reg_class(RegClass::B64);
            self.ins(format!("mad.wide.u32 {addr}, {word}, 4, {scratch}"));
            let old = self.reg_class(RegClass::B32);
            let last_of_group = self.reg_class(RegClass::Pred);
            self.flip_add(&addr, &inc, &old, &last_of_group);
            self.ins(format!("@!{last_of_group} bra {out}"));
            // The last of its group arrives on the top counter, for all `groups` groups;
            // group 0's last adds the complement. Its acquire above saw its whole group, and
            // this release passes that on (release is cumulative).
            let groups = self.reg_class(RegClass::B32);
            self.ins(format!("min.u32 {groups}, {blocks}, {spread}"));
            let g0 = self.reg_class(RegClass::Pred);
            self.ins(format!("setp.eq.u32 {g0}, {g}, 0"));
            let top_inc = self.reg_class(RegClass::B32);
            self.ins(format!("sub.s32 {top_inc}, -2147483647, {groups}"));
            self.ins(format!("selp.b32 {top_inc}, {top_inc}, 1, {g0}"));
            let top = self.sync_addr(counter, None);
            let top_old = self.reg_class(RegClass::B32);
            self.flip_add(&top, &top_inc, &top_old, &mine);
        }
        self.label(&out);
        // Every thread gets thread 0's verdict (and waits for it).
        let all = self.reg_class(RegClass::Pred);
        self.ins(format!("bar.red.or.pred {all}, 0, {mine}"));
        self.ins(format!("or.pred {reg}, {reg}, {all}"));
        Ok(())
    }

    /// `atom.acq_rel.gpu.add` of `inc` at `addr` into `old`; `flipped` becomes whether this
    /// add changed bit 31 (the flip that completes a launch's arrivals).
    fn flip_add(&mut self, addr: &str, inc: &str, old: &str, flipped: &str) {
        self.ins(format!(
            "atom.acq_rel.gpu.global.add.u32 {old}, [{addr}], {inc}"
        ));
        let new = self.reg_class(RegClass::B32);
        self.ins(format!("add.s32 {new}, {old}, {inc}"));
        let flip = self.reg_class(RegClass::B32);
        self.ins(format!("xor.b32 {flip}, {new}, {old}"));
        self.ins(format!("setp.lt.s32 {flipped}, {flip}, 0"));
    }

    /// The linear workgroup id (`x + nx * (y + ny * z)`, read once in the prologue).
    fn linear_ctaid(&mut self) -> Reg {
        if let Some(r) = &self.out.hoisted.linear_ctaid {
            return r.clone();
        }
        let r: Vec<Reg> = (0..5).map(|_| self.reg_class(RegClass::B32)).collect();
        self.pro(format!("mov.u32 {}, %ctaid.z", r[0]));
        self.pro(format!("mov.u32 {}, %nctaid.y", r[1]));
        self.pro(format!("mov.u32 {}, %ctaid.y", r[2]));
        self.pro(format!("mad.lo.s32 {}, {}, {}, {}", r[3], r[0], r[1], r[2]));
        self.pro(format!("mov.u32 {}, %nctaid.x", r[1]));
        self.pro(format!("mov.u32 {}, %ctaid.x", r[2]));
        self.pro(format!("mad.lo.s32 {}, {}, {}, {}", r[4], r[3], r[1], r[2]));
        self.out.hoisted.linear_ctaid = Some(r[4].clone());
        r[4].clone()
    }
}
