//! Dataflow synchronisation of fused persistent kernels ([`SyncOp`]): completion flags and
//! arrival counters in the grid-sync scratch (`grid_sync`), zeroed by the runtime before every
//! launch, so a set flag or a count always belongs to this launch.
//!
//! Memory model (PTX ISA, "Memory Consistency Model"):
//! - **Publish** (`Signal`): `bar.sync 0` orders every thread's writes of the task before
//!   thread 0's next operations at cta scope; thread 0 then does `st.release.gpu` of the flag
//!   (and/or `red.release.gpu.add` of the counter). Release is cumulative over what thread 0
//!   observed through the barrier, so the whole block's writes happen before the flag.
//! - **Wait**: thread 0 polls each producer's flag with `ld.acquire.gpu` (with `nanosleep`
//!   between polls) until it is set; the acquire synchronises with the producer's release.
//!   `bar.sync 0` then orders the acquire before every thread's next reads.
//! - **Arrive** (last-arriver fold): `bar.sync 0`, thread 0 `atom.acq_rel.gpu.add` on the
//!   counter: release publishes the block's task, acquire reads the chain of earlier arrivals
//!   (an RMW chain is a release sequence), so the block whose add returns `total - 1` has seen
//!   every producer's writes. `bar.red.or.pred` hands the verdict to every thread (it is a
//!   `bar.sync` too). That block runs the fold.

use super::regs::RegClass;
use super::writer::Writer;
use super::EmitError;
use crate::ir::{Expr, SyncOp, WaitOn};

type R<T> = Result<T, EmitError>;

/// Nanoseconds a waiting thread sleeps between polls.
const POLL_SLEEP_NS: u32 = 32;

/// Widest window whose flags are polled all at once (loads in flight together, one round
/// trip per poll); wider windows poll flag after flag.
const PARALLEL_WINDOW: i32 = 5;

impl Writer<'_> {
    /// Emits one dataflow statement (see the module docs).
    pub(super) fn sync_op(&mut self, op: &SyncOp) -> R<()> {
        let top = op.top_word();
        let words = self
            .special
            .get("sync_words")
            .and_then(|w| w.parse::<u32>().ok())
            .unwrap_or(0)
            .max(top.saturating_add(1));
        self.special.insert("sync_words", words.to_string());
        // The scratch and the cooperative launch come with the grid barrier's ABI.
        self.special.insert("has_grid_barrier", String::new());
        self.comment(format!("dataflow: {}", op.describe()));
        match op {
            SyncOp::Wait { on, workgroup, .. } => self.sync_wait(*on, workgroup),
            SyncOp::Signal {
                flags,
                counter,
                workgroup,
                ..
            } => self.sync_signal(*flags, *counter, workgroup),
            SyncOp::Arrive {
                counter,
                total,
                last,
                ..
            } => self.sync_arrive(*counter, *total, last),
        }
    }

    /// Address of scratch word `word + index` (`index` a u32 register or None).
    fn sync_addr(&mut self, word: u32, index: Option<&str>) -> String {
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

    fn workgroup_reg(&mut self, var: &str) -> R<String> {
        let v = self.expr(&Expr::Var(var.to_string()))?;
        Ok(self.in_reg(&v))
    }

    /// Skips to `out` unless this is thread 0.
    fn leader_only(&mut self, out: &str) {
        let tid = self.linear_tid();
        let p = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.ne.u32 {p}, {tid}, 0"));
        self.ins(format!("@{p} bra {out}"));
    }

    /// Thread 0 polls the u32 at `addr` until `ready` (a `setp` comparison with `value`).
    fn poll(&mut self, addr: &str, cmp: &str, value: u32) {
        let spin = self.fresh_label("df_spin");
        let poll = self.fresh_label("df_poll");
        self.ins(format!("bra.uni {poll}"));
        self.label(&spin);
        self.ins(format!("nanosleep.u32 {POLL_SLEEP_NS}"));
        self.label(&poll);
        let now = self.reg_class(RegClass::B32);
        self.ins(format!("ld.acquire.gpu.global.u32 {now}, [{addr}]"));
        let wait = self.reg_class(RegClass::Pred);
        self.ins(format!("setp.{cmp}.u32 {wait}, {now}, {value}"));
        self.ins(format!("@{wait} bra {spin}"));
    }

    fn sync_wait(&mut self, on: WaitOn, workgroup: &str) -> R<()> {
        let out = self.fresh_label("df_waited");
        let passed = self.fresh_label("df_passed");
        let v = match on {
            WaitOn::Window { .. } => Some(self.workgroup_reg(workgroup)?),
            _ => None,
        };
        // A count or a fixed range is the same for every task of the step: once this block
        // has seen it complete (in this launch), its later tasks skip the wait. `done` is
        // false at kernel entry and set by every thread after the `bar.sync`, so the skip
        // is uniform in the block.
        let done = match on {
            WaitOn::Window { .. } => None,
            _ => {
                let tid = self.linear_tid();
                let d = self.reg_class(RegClass::Pred);
                self.pro(format!("setp.ne.u32 {d}, {tid}, {tid}"));
                self.ins(format!("@{d} bra {passed}"));
                Some(d)
            }
        };
        self.leader_only(&out);
        match on {
            WaitOn::Count { counter, total } => {
                let addr = self.sync_addr(counter, None);
                // Not yet every producer: the count is below `total`.
                self.poll(&addr, "lt", total);
            }
            WaitOn::Window {
                flags,
                producers,
                lo,
                hi,
            } if i64::from(hi) - i64::from(lo) < i64::from(PARALLEL_WINDOW) => {
                let v = v.unwrap_or_default();
                self.window_at_once(flags, producers, (lo, hi), &v);
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
                self.flag_loop(flags, &a, &b, Some(&v));
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
    /// but `v` itself (it ran earlier on this block): every flag is loaded before any is
    /// tested, so one poll costs one round trip however wide the window.
    fn window_at_once(&mut self, flags: u32, producers: u32, (lo, hi): (i32, i32), v: &str) {
        let mut slots = Vec::new();
        for o in (lo..=hi).filter(|&o| o != 0) {
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
        let spin = self.fresh_label("df_spin");
        let poll = self.fresh_label("df_poll");
        self.ins(format!("bra.uni {poll}"));
        self.label(&spin);
        self.ins(format!("nanosleep.u32 {POLL_SLEEP_NS}"));
        self.label(&poll);
        for (inside, addr, r) in &slots {
            self.ins(format!("mov.u32 {r}, 1"));
            self.ins(format!("@{inside} ld.acquire.gpu.global.u32 {r}, [{addr}]"));
        }
        let unset = self.reg_class(RegClass::Pred);
        for (i, (_, _, r)) in slots.iter().enumerate() {
            if i == 0 {
                self.ins(format!("setp.eq.u32 {unset}, {r}, 0"));
            } else {
                let z = self.reg_class(RegClass::Pred);
                self.ins(format!("setp.eq.u32 {z}, {r}, 0"));
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
        self.poll(&addr, "eq", 0);
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
        self.ins("bar.sync 0");
        self.leader_only(&out);
        if let (Some(f), Some(v)) = (flags, v) {
            let addr = self.sync_addr(f, Some(&v));
            self.ins(format!("st.release.gpu.global.u32 [{addr}], 1"));
        }
        if let Some(c) = counter {
            let addr = self.sync_addr(c, None);
            self.ins(format!("red.release.gpu.global.add.u32 [{addr}], 1"));
        }
        self.label(&out);
        Ok(())
    }

    fn sync_arrive(&mut self, counter: u32, total: u32, last: &str) -> R<()> {
        let reg = self.var(last)?.reg.clone();
        let out = self.fresh_label("df_arrived");
        let tid = self.linear_tid();
        let mine = self.reg_class(RegClass::Pred);
        // False in every thread until thread 0 learns it arrived last.
        self.ins(format!("setp.ne.u32 {mine}, {tid}, {tid}"));
        self.ins("bar.sync 0");
        self.leader_only(&out);
        let addr = self.sync_addr(counter, None);
        let old = self.reg_class(RegClass::B32);
        self.ins(format!(
            "atom.acq_rel.gpu.global.add.u32 {old}, [{addr}], 1"
        ));
        self.ins(format!(
            "setp.eq.u32 {mine}, {old}, {}",
            total.saturating_sub(1)
        ));
        self.label(&out);
        // Every thread gets thread 0's verdict (and waits for it).
        let all = self.reg_class(RegClass::Pred);
        self.ins(format!("bar.red.or.pred {all}, 0, {mine}"));
        self.ins(format!("or.pred {reg}, {reg}, {all}"));
        Ok(())
    }
}
