//! The code view sub-state: the emission the IR, PTX and SASS panes show (their cursors and
//! the search are the panes' own, [`super::Panes`]), what the PTX and SASS panes show of it,
//! and the options it was emitted for (workgroup override, target sm) with the kernel
//! resources measured so far.

use std::collections::HashMap;

use crate::occupancy::KernelResources;
use crate::tui::analysis::{Emission, Resources};
use crate::tui::background::ResKey;
use crate::tui::pin::{Pin, PinView};
use crate::tui::sass_view::{SassMode, SassState};
use crate::tui::vyre_view::{VyreMode, VyreState};

/// The emission and its options.
#[derive(Debug)]
pub struct CodeView {
    /// Emission for the current options (None while the worker emits).
    pub emission: Option<Emission>,
    /// Bumped on every new emission request; highlight cache key and stale-result filter.
    pub generation: u64,
    /// Where the SASS pane goes.
    pub sass_mode: SassMode,
    /// SASS listings per (document, emit options), assembled on the worker.
    pub sass_listings: HashMap<ResKey, SassState>,
    /// The key of the current emission (set with it), for [`CodeView::sass_state`].
    pub sass_key: Option<ResKey>,
    /// What the PTX pane shows: ours, vyre's PTX, or the comparison (feature `vyre`).
    pub vyre_mode: VyreMode,
    /// vyre views per (document, emit options), made on the worker.
    pub vyre_views: HashMap<ResKey, VyreState>,
    /// Workgroup override (None: the program's own).
    pub workgroup: Option<[u32; 3]>,
    /// Target sm.
    pub sm: u32,
    /// True once the user chose the target sm (`--sm` or `T`): a later live probe then
    /// leaves it alone instead of switching to the device's own sm.
    pub sm_pinned: bool,
    /// Kernel resources measured so far (tuning back and forth reuses them).
    pub resources: HashMap<ResKey, Resources>,
    /// Resources to assume for every kernel instead of measuring (tests, `--regs`).
    pub fixed_resources: Option<KernelResources>,
    /// Bumped on every estimate request; an estimate that comes back for an older one is
    /// dropped.
    pub estimate_gen: u64,
    /// Unroll small constant-trip loops (`u` toggles).
    pub unroll: bool,
    /// The pinned lowering (`m`).
    pub pin: Option<Pin>,
    /// The PTX and SASS panes show the diff against the pin (`D`).
    pub pin_diff: bool,
    /// The diff of the current lowering against the pin (made when either side changes).
    pub pin_view: Option<std::sync::Arc<PinView>>,
    /// Pin the next emission when it arrives (the tune sweep's best candidate, `b`).
    pub pin_next: bool,
    /// Bumped whenever the diff against the pin is remade (its highlight-cache generation).
    pub pin_gen: u64,
}

impl Default for CodeView {
    fn default() -> Self {
        CodeView {
            emission: None,
            generation: 0,
            sass_mode: SassMode::Off,
            sass_listings: HashMap::new(),
            vyre_mode: VyreMode::Off,
            vyre_views: HashMap::new(),
            sass_key: None,
            workgroup: None,
            sm: 90,
            sm_pinned: false,
            resources: HashMap::new(),
            fixed_resources: None,
            estimate_gen: 0,
            unroll: true,
            pin: None,
            pin_diff: false,
            pin_view: None,
            pin_next: false,
            pin_gen: 0,
        }
    }
}

impl CodeView {
    /// A freshly opened program: the program's own workgroup (the panes' cursors and the
    /// search are [`super::Panes::reset_code`]'s).
    pub fn reset_for_new_program(&mut self) {
        self.workgroup = None;
    }

    /// The vyre view of the current emission (None: not asked for).
    pub fn vyre_state(&self) -> Option<&VyreState> {
        self.vyre_views.get(self.sass_key.as_ref()?)
    }

    /// The lines the PTX pane shows in a vyre mode (None in ours, or while not ready).
    pub fn vyre_lines(&self) -> Option<&[String]> {
        match (self.vyre_mode, self.vyre_state()?) {
            (VyreMode::Off, _) => None,
            (m, VyreState::Ready(t)) => Some(t.lines(m)),
            _ => None,
        }
    }

    /// The PTX diff rows while the PTX pane shows the diff against the pin.
    pub fn pin_ptx(&self) -> Option<&crate::tui::pin::LineDiff> {
        self.pin_view
            .as_ref()
            .filter(|_| self.pin_diff)
            .map(|v| &v.ptx)
    }

    /// The SASS diff rows while the SASS pane shows the diff (None until both are assembled).
    pub fn pin_sass(&self) -> Option<&crate::tui::pin::LineDiff> {
        self.pin_view
            .as_ref()
            .filter(|_| self.pin_diff)
            .and_then(|v| v.sass.as_ref())
    }

    /// The SASS state of the current emission.
    pub fn sass_state(&self) -> Option<&SassState> {
        self.sass_listings.get(self.sass_key.as_ref()?)
    }
}
