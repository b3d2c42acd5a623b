//! The grid-sync scratch between launches: what must happen to it before the next cooperative
//! launch. It is zeroed once, when allocated, and not before every launch: the grid barrier's
//! words come back to a working state after every barrier, a dataflow flag holds the epoch of
//! the launch that set it (each dataflow launch gets a fresh one), and a dataflow counter's
//! low bits come back to zero after every complete launch (`emit::dataflow`). What remains
//! is one conflict across kernels and one limit, both decided here:
//! - a counter needs its low 31 bits clear, so a kernel that counts on a word an earlier
//!   launch used as a flag (which holds an epoch) needs the scratch zeroed first;
//! - epochs are u32 and never 0: before one would wrap, the scratch is zeroed and they
//!   start again at 1.

use crate::ir::ScratchLayout;

/// How a cooperative kernel uses the scratch (from its `KernelAbi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SyncUse {
    /// Index in the launch's arguments of the `param_sync_epoch` slot, when it takes one.
    pub epoch_arg: Option<usize>,
    /// The words the kernel uses.
    pub scratch: ScratchLayout,
}

/// What the scratch has been used for since it was last zeroed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct ScratchState {
    /// The epoch the last dataflow launch got (0: none since the scratch was zeroed).
    pub epoch: u32,
    /// The lowest word any launch used as a flag since then.
    pub flags_low: Option<u32>,
}

/// What to do before one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Armed {
    /// Zero the scratch first.
    pub clear: bool,
    /// The launch's epoch, for its `param_sync_epoch`.
    pub epoch: Option<u32>,
}

impl ScratchState {
    /// The state of a freshly zeroed scratch.
    pub fn zeroed() -> Self {
        ScratchState::default()
    }

    /// Decides what the next launch of a kernel using the scratch as `u` needs, and records
    /// that launch.
    pub fn arm(&mut self, u: &SyncUse) -> Armed {
        let flag_under_counter = self.flags_low.is_some_and(|low| u.scratch.counts_from(low));
        let wraps = u.epoch_arg.is_some() && self.epoch == u32::MAX;
        let clear = flag_under_counter || wraps;
        if clear {
            *self = ScratchState::zeroed();
        }
        let epoch = u.epoch_arg.map(|_| {
            self.epoch += 1;
            self.epoch
        });
        if let Some(f) = u.scratch.flags_start {
            self.flags_low = Some(self.flags_low.map_or(f, |l| l.min(f)));
        }
        Armed { clear, epoch }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataflow(counters_end: u32, flags_start: Option<u32>) -> SyncUse {
        SyncUse {
            epoch_arg: flags_start.map(|_| 7),
            scratch: layout(counters_end, flags_start),
        }
    }

    /// The layout of a kernel counting below `counters_end`, flagging from `flags_start`.
    fn layout(counters_end: u32, flags_start: Option<u32>) -> ScratchLayout {
        let mut l = ScratchLayout::default();
        l.barrier();
        l.words = l.words.max(counters_end);
        l.epoch = flags_start.is_some();
        l.counters_end = counters_end;
        l.flags_start = flags_start;
        l
    }

    #[test]
    fn launches_of_one_kernel_get_rising_epochs_and_never_a_clear() {
        let mut s = ScratchState::zeroed();
        let k = dataflow(5, Some(2048));
        let epochs: Vec<Option<u32>> = (0..4).map(|_| s.arm(&k).epoch).collect();
        assert_eq!(epochs, vec![Some(1), Some(2), Some(3), Some(4)]);
        assert_eq!(s.flags_low, Some(2048));
        assert!(!s.arm(&k).clear);
    }

    #[test]
    fn a_grid_barrier_kernel_needs_nothing() {
        let mut s = ScratchState::zeroed();
        let barrier_only = SyncUse {
            epoch_arg: None,
            scratch: layout(0, None),
        };
        assert_eq!(
            s.arm(&barrier_only),
            Armed {
                clear: false,
                epoch: None
            }
        );
        assert_eq!(s, ScratchState::zeroed());
    }

    #[test]
    fn counting_on_a_word_that_held_a_flag_clears_first() {
        let mut s = ScratchState::zeroed();
        // A kernel with many counters put its flags low (after 40 counters).
        assert!(!s.arm(&dataflow(42, Some(42))).clear);
        // Another counts up to word 100: words 42..100 may hold epochs.
        let a = s.arm(&dataflow(100, Some(2048)));
        assert!(a.clear);
        // Epochs start again after a clear, and the flags seen since are the new ones only.
        assert_eq!(a.epoch, Some(1));
        assert_eq!(s.flags_low, Some(2048));
        // Counters below every flag: no clear.
        assert!(!s.arm(&dataflow(100, Some(2048))).clear);
        // A counter-only kernel (a fold, no flags) below the flags: no clear, no epoch.
        let fold_only = SyncUse {
            epoch_arg: None,
            scratch: layout(600, None),
        };
        assert_eq!(
            s.arm(&fold_only),
            Armed {
                clear: false,
                epoch: None
            }
        );
    }

    #[test]
    fn epochs_never_wrap_to_zero() {
        let mut s = ScratchState {
            epoch: u32::MAX - 1,
            flags_low: Some(2048),
        };
        let k = dataflow(3, Some(2048));
        let a = s.arm(&k);
        assert_eq!(
            a,
            Armed {
                clear: false,
                epoch: Some(u32::MAX)
            }
        );
        let b = s.arm(&k);
        assert_eq!(
            b,
            Armed {
                clear: true,
                epoch: Some(1)
            }
        );
    }
}
