//! Dataflow synchronisation statements of fused persistent kernels.
//!
//! Only fusion makes them (`megakernel::fuse` with `--sync dataflow`); no Program file spells
//! them. They name words of the kernel's grid-sync scratch (`emit::grid_sync`), never cleared
//! between launches (`emit::dataflow` says why that is safe): words [`SYNC_FIRST_WORD`].. hold
//! one arrival counter per counted step, words [`SYNC_FLAG_FIRST_WORD`].. one completion flag
//! per task (one virtual workgroup of one step).
//!
//! Semantics (what the CPU interpreter relies on): a [`SyncOp`] never changes a buffer. A
//! Program containing one runs as one unit over the whole grid, statement by statement, so
//! every earlier statement is finished on every thread before a later one starts, which is
//! stronger than any wait; only [`SyncOp::Arrive`] has an observable effect (its variable).

/// First scratch word a dataflow statement may use (words 0 and 1 belong to the grid barrier).
pub const SYNC_FIRST_WORD: u32 = 2;

/// First scratch word fusion gives to completion flags (counters come first, from
/// [`SYNC_FIRST_WORD`]): a flag holds an epoch, a counter needs its low bits clear, so a word
/// is kept to one use across kernels and launches. A group with more counted steps than fit
/// below puts its flags after its counters instead (the runtime then clears the scratch when
/// a later kernel counts on a word that held a flag).
pub const SYNC_FLAG_FIRST_WORD: u32 = 2048;

/// Words between the counters of a spread arrival ([`SyncOp::Arrive`] with `spread > 0`): one
/// 128-byte line each, so arrivals on different counters do not meet in one L2 line.
pub const SPREAD_STRIDE: u32 = 32;

/// Counter word `j` (from 0) below the top counter `counter` of a spread arrival.
pub fn spread_word(counter: u32, j: u32) -> u32 {
    counter.saturating_add(SPREAD_STRIDE.saturating_mul(j.saturating_add(1)))
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
        /// [`spread_word`]`(counter, b % spread)`, and the last arriver of each of those
        /// arrives on `counter`: a few hundred atomics on each word instead of one per block
        /// on one word, which the L2 serialises (3.5 us for 4224 blocks on an H200, against
        /// 1.9 us spread; fusion spreads only grids of 1536 blocks or more).
        spread: u32,
    },
}

/// The tasks of one step that a block runs: virtual workgroups `wgid.x + t * stride` for
/// `t = 0, 1, ...` while below `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTasks {
    /// The persistent grid's blocks.
    pub stride: u32,
    /// The step's workgroups.
    pub count: u32,
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
                    spread_word(*counter, spread - 1)
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
            } => {
                let what = match *on {
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
