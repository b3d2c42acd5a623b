//! Dataflow synchronisation statements of fused persistent kernels.
//!
//! Only fusion makes them (`megakernel::fuse` with `--sync dataflow`); no Program file spells
//! them. They name words of the kernel's grid-sync scratch (`emit::grid_sync`), never cleared
//! between launches (`emit::dataflow` says why that is safe), laid out as [`ScratchLayout`]
//! says: one arrival counter per counted step, one completion flag per task (one virtual
//! workgroup of one step).
//!
//! Semantics (what the CPU interpreter relies on): a [`SyncOp`] never changes a buffer. A
//! Program containing one runs as one unit over the whole grid, statement by statement, so
//! every earlier statement is finished on every thread before a later one starts, which is
//! stronger than any wait; only [`SyncOp::Arrive`] has an observable effect (its variable).

/// The grid-sync scratch of one kernel: which of its `u32` words the grid barrier, the
/// dataflow counters and the dataflow flags use. Fusion places counters and flags by its
/// constants (`megakernel::fuse`), the emitter records what a kernel's statements touch
/// ([`ScratchLayout::barrier`], [`ScratchLayout::add`]) into the kernel's ABI, and the
/// runtime sizes the scratch and decides when to clear it from that record
/// (`runtime::scratch`).
///
/// Words `0..`[`ScratchLayout::BARRIER_WORDS`] belong to the grid barrier (`emit::grid_sync`);
/// from [`ScratchLayout::FIRST_COUNTER`] on, one arrival counter per counted step; from
/// [`ScratchLayout::FIRST_FLAG`] on (or after the counters, if there are more), one
/// completion flag per task. Serialised as the ABI's `grid_sync_words`, `sync_epoch`,
/// `sync_counters_end` and `sync_flags_start`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScratchLayout {
    /// Words the kernel uses: 0 when it takes no scratch, else at least
    /// [`ScratchLayout::BARRIER_WORDS`].
    #[serde(rename = "grid_sync_words")]
    pub words: u32,
    /// The kernel's flags hold the launch's epoch: it takes `param_sync_epoch`, which must
    /// differ from every earlier launch's since the scratch was last zeroed and never be 0.
    #[serde(rename = "sync_epoch", skip_serializing_if = "std::ops::Not::not")]
    pub epoch: bool,
    /// One past the highest word used as a dataflow counter (0: none). A counter's low 31
    /// bits must be clear when a launch starts (`emit::dataflow`).
    #[serde(rename = "sync_counters_end", skip_serializing_if = "is_zero")]
    pub counters_end: u32,
    /// The lowest word used as a dataflow flag, if any.
    #[serde(rename = "sync_flags_start", skip_serializing_if = "Option::is_none")]
    pub flags_start: Option<u32>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl ScratchLayout {
    /// Words of the grid barrier (the flip lowering uses word 0 only; the generation
    /// lowering uses both).
    pub const BARRIER_WORDS: u32 = 2;

    /// First word a dataflow statement may use: fusion's first counter.
    pub const FIRST_COUNTER: u32 = Self::BARRIER_WORDS;

    /// First word fusion gives to completion flags (counters come first, from
    /// [`ScratchLayout::FIRST_COUNTER`]): a flag holds an epoch, a counter needs its low bits
    /// clear, so a word is kept to one use across kernels and launches. A group with more
    /// counted steps than fit below puts its flags after its counters instead (the runtime
    /// then clears the scratch when a later kernel counts on a word that held a flag).
    pub const FIRST_FLAG: u32 = 2048;

    /// Words between the counters of a spread arrival ([`SyncOp::Arrive`] with `spread > 0`):
    /// one 128-byte line each, so arrivals on different counters do not meet in one L2 line.
    pub const SPREAD_STRIDE: u32 = 32;

    /// Counter word `j` (from 0) below the top counter `counter` of a spread arrival.
    pub fn spread_word(counter: u32, j: u32) -> u32 {
        counter.saturating_add(Self::SPREAD_STRIDE.saturating_mul(j.saturating_add(1)))
    }

    /// Whether the kernel takes the scratch (it then needs a cooperative launch).
    pub fn used(&self) -> bool {
        self.words > 0
    }

    /// Records a grid barrier: the kernel takes the scratch with the barrier's words.
    pub fn barrier(&mut self) {
        self.words = self.words.max(Self::BARRIER_WORDS);
    }

    /// Records the words dataflow statement `op` touches (the barrier's words come with
    /// them: the scratch and the cooperative launch are the grid barrier's ABI).
    pub fn add(&mut self, op: &SyncOp) {
        self.barrier();
        self.words = self.words.max(op.top_word().saturating_add(1));
        let (flags, counter) = op.words();
        if let Some(f) = flags {
            self.flags_start = Some(self.flags_start.map_or(f, |lo| lo.min(f)));
        }
        if counter.is_some() {
            self.counters_end = self.counters_end.max(op.counters_end());
        }
    }

    /// Whether a counter of this kernel sits on a word at or above `flags_low` (a word an
    /// earlier launch may have left an epoch in).
    pub fn counts_from(&self, flags_low: u32) -> bool {
        self.counters_end > flags_low
    }
}

/// One dataflow synchronisation statement (`{"sync": ..}` when printed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncOp {
    /// Thread 0 waits until every producer task in `on` has published completion, then the
    /// whole workgroup passes `bar.sync` (acquire at gpu scope, then cta ordering).
    Wait {
        /// Waiting step (pipeline step index; for messages and the schedule).
        consumer: u32,
        /// Step waited for.
        producer: u32,
        /// Which flags or which counter.
        on: WaitOn,
        /// `u32` variable holding the consumer's virtual workgroup id.
        workgroup: String,
        /// Consumer tasks the wait serves at once: virtual workgroups `workgroup ..
        /// workgroup + span - 1` (the sub-tasks of a packed step, which wait together, once
        /// per block trip: `megakernel::mixed`); 1 for one task. A window then covers the
        /// union of their windows, `workgroup + lo ..= workgroup + span - 1 + hi`.
        span: u32,
    },
    /// `bar.sync`, then thread 0 publishes that task `workgroup` of `step` finished: sets its
    /// flag (`flags + workgroup`) with release semantics, and/or adds one to the step's counter.
    /// With `tasks`, once after the block's last task of the step instead: the flags of all
    /// the block's tasks, behind one fence.
    Signal {
        /// The finished step.
        step: u32,
        /// First flag word of the step (one word per virtual workgroup), if anyone waits on flags.
        flags: Option<u32>,
        /// Counter word of the step, if anyone waits on the count of all its tasks.
        counter: Option<u32>,
        /// `u32` variable holding the virtual workgroup id (unused with `tasks`).
        workgroup: String,
        /// Publish every task of this block at once: the virtual workgroups `wgid.x + t *
        /// stride` below `count` (the loop over virtual workgroups' assignment).
        tasks: Option<BlockTasks>,
    },
    /// `bar.sync`, then thread 0 adds one to counter word `counter` (acquire-release); the bool
    /// variable `last` (declared before) becomes true, in every thread of the workgroup, in the
    /// workgroup whose arrival is the `total`-th: the last arriver, which then runs the fold.
    Arrive {
        /// The step whose tasks arrive.
        step: u32,
        /// The one-workgroup step the last arriver runs.
        fold: u32,
        /// Counter word (the top counter of a spread arrival).
        counter: u32,
        /// Arrivals per launch (the launch's blocks: each arrives once).
        total: u32,
        /// Bool variable set (or-ed) by the arrival.
        last: String,
        /// 0: every block arrives on `counter`. Otherwise block `b` arrives on counter
        /// [`ScratchLayout::spread_word`]`(counter, b % spread)`, and the last arriver of each of those
        /// arrives on `counter`: a few hundred atomics on each word instead of one per block
        /// on one word, which the L2 serialises (3.5 us for 4224 blocks on an H200, against
        /// 1.9 us spread; fusion spreads only grids of 1536 blocks or more).
        spread: u32,
    },
}

/// The tasks of one step that a block runs: virtual workgroups `(wgid.x + t * stride) * pack
/// + j` for `t = 0, 1, ...` and `j < pack` while below `count` (`pack` is 1 unless the step
/// is packed several workgroups to a block: `megakernel::mixed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTasks {
    /// The persistent grid's blocks.
    pub stride: u32,
    /// The step's workgroups.
    pub count: u32,
    /// The step's workgroups side by side in one block (1: one per block).
    pub pack: u32,
}

/// What a [`SyncOp::Wait`] waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WaitOn {
    /// Flags of producer workgroups `v + lo ..= v + hi` (`v` the consumer's workgroup), those
    /// inside `0..producers`.
    Window {
        /// First flag word of the producer step.
        flags: u32,
        /// Producer workgroups.
        producers: u32,
        /// Lowest offset.
        lo: i32,
        /// Highest offset.
        hi: i32,
    },
    /// Flags of producer workgroups `first ..= last` (clipped to `0..producers`).
    Range {
        /// First flag word of the producer step.
        flags: u32,
        /// Producer workgroups.
        producers: u32,
        /// First producer workgroup.
        first: u32,
        /// Last producer workgroup.
        last: u32,
    },
    /// The producer step's counter reaches `total` (every producer task finished).
    Count {
        /// Counter word.
        counter: u32,
        /// Tasks of the producer step.
        total: u32,
    },
}

impl SyncOp {
    /// Highest scratch word this statement touches.
    pub fn top_word(&self) -> u32 {
        match self {
            SyncOp::Wait { on, .. } => match *on {
                WaitOn::Window {
                    flags, producers, ..
                }
                | WaitOn::Range {
                    flags, producers, ..
                } => flags + producers.saturating_sub(1),
                WaitOn::Count { counter, .. } => counter,
            },
            SyncOp::Signal {
                flags,
                counter,
                workgroup: _,
                step: _,
                tasks,
            } => {
                let last_flag = match (flags, tasks) {
                    (Some(f), Some(t)) => f.saturating_add(t.count.saturating_sub(1)),
                    (f, _) => f.unwrap_or(0),
                };
                last_flag.max(counter.unwrap_or(0))
            }
            SyncOp::Arrive {
                counter, spread, ..
            } => {
                if *spread == 0 {
                    *counter
                } else {
                    ScratchLayout::spread_word(*counter, spread - 1)
                }
            }
        }
    }

    /// The first flag word and the counter word the statement uses (flags and counters are
    /// cleared differently between launches: `emit::dataflow`).
    pub fn words(&self) -> (Option<u32>, Option<u32>) {
        match self {
            SyncOp::Wait { on, .. } => match *on {
                WaitOn::Window { flags, .. } | WaitOn::Range { flags, .. } => (Some(flags), None),
                WaitOn::Count { counter, .. } => (None, Some(counter)),
            },
            SyncOp::Signal { flags, counter, .. } => (*flags, *counter),
            SyncOp::Arrive { counter, .. } => (None, Some(*counter)),
        }
    }

    /// One past the highest counter word the statement uses (0: none).
    pub fn counters_end(&self) -> u32 {
        match self {
            SyncOp::Arrive { .. } => self.top_word().saturating_add(1),
            _ => self.words().1.map_or(0, |c| c.saturating_add(1)),
        }
    }

    /// The variable the statement reads, and the one it assigns.
    pub fn vars(&self) -> (Option<&str>, Option<&str>) {
        match self {
            SyncOp::Signal { tasks: Some(_), .. } => (None, None),
            SyncOp::Wait { workgroup, .. } | SyncOp::Signal { workgroup, .. } => {
                (Some(workgroup), None)
            }
            SyncOp::Arrive { last, .. } => (Some(last), Some(last)),
        }
    }

    /// One line for printing and PTX comments.
    pub fn describe(&self) -> String {
        match self {
            SyncOp::Wait {
                consumer,
                producer,
                on,
                workgroup,
                span,
            } => {
                let what = match *on {
                    WaitOn::Window { lo, hi, .. } if *span > 1 => {
                        let top = i64::from(hi) + i64::from(*span) - 1;
                        format!(
                            "flags {workgroup}{lo:+}..{workgroup}{top:+} (its {span} sub-tasks)"
                        )
                    }
                    WaitOn::Window { lo, hi, .. } => {
                        format!("flags {workgroup}{lo:+}..{workgroup}{hi:+}")
                    }
                    WaitOn::Range { first, last, .. } => format!("flags {first}..={last}"),
                    WaitOn::Count { total, .. } => format!("counter = {total}"),
                };
                format!("step {consumer} waits for step {producer}: {what}")
            }
            SyncOp::Signal {
                step,
                flags,
                counter,
                workgroup,
                tasks,
            } => {
                let who = match tasks {
                    Some(t) if t.pack > 1 => format!(
                        "the block's tasks ((wgid.x + t*{})*{} + j below {})",
                        t.stride, t.pack, t.count
                    ),
                    Some(t) => format!(
                        "the block's tasks (wgid.x + t*{} below {})",
                        t.stride, t.count
                    ),
                    None => format!("workgroup {workgroup}"),
                };
                format!(
                    "step {step} {who} done:{}{}",
                    if flags.is_some() {
                        if tasks.is_some() {
                            " flags"
                        } else {
                            " flag"
                        }
                    } else {
                        ""
                    },
                    if counter.is_some() { " counter" } else { "" }
                )
            }
            SyncOp::Arrive {
                step,
                total,
                last,
                spread,
                ..
            } => {
                let over = if *spread > 0 {
                    format!(" through {spread} counters")
                } else {
                    String::new()
                };
                format!("step {step} arrives (of {total}{over}); last arriver sets {last}")
            }
        }
    }
}
