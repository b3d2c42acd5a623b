//! The PTX pane's vyre views (feature `vyre`): vyre's own PTX for the open Program, or the
//! comparison of ours with it (counts by instruction class, register declarations, the line
//! diff). Made on the CPU worker lane ([`crate::tui::background::Job::Vyre`]) like the SASS
//! listing; without the feature the key is not bound and nothing here is ever shown.

use std::sync::Arc;

/// What the PTX pane shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VyreMode {
    /// Our PTX (the normal pane).
    #[default]
    Off,
    /// vyre's PTX.
    Ptx,
    /// The comparison: counts, registers, diff.
    Compare,
}

impl VyreMode {
    /// The next mode of the `v` cycle.
    pub fn next(self) -> VyreMode {
        match self {
            VyreMode::Off => VyreMode::Ptx,
            VyreMode::Ptx => VyreMode::Compare,
            VyreMode::Compare => VyreMode::Off,
        }
    }

    /// Pane title suffix.
    pub fn title(self) -> &'static str {
        match self {
            VyreMode::Off => "",
            VyreMode::Ptx => "vyre's PTX",
            VyreMode::Compare => "vyrescope vs vyre",
        }
    }
}

/// vyre's PTX and the comparison text, split in lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VyreText {
    /// vyre's PTX.
    pub ptx: Vec<String>,
    /// The comparison table, then the diff.
    pub compare: Vec<String>,
}

impl VyreText {
    /// Splits `ptx` and `compare` in lines.
    pub fn new(ptx: &str, compare: &str) -> Self {
        VyreText {
            ptx: ptx.lines().map(str::to_string).collect(),
            compare: compare.lines().map(str::to_string).collect(),
        }
    }

    /// The lines of `mode` (none for [`VyreMode::Off`]).
    pub fn lines(&self, mode: VyreMode) -> &[String] {
        match mode {
            VyreMode::Off => &[],
            VyreMode::Ptx => &self.ptx,
            VyreMode::Compare => &self.compare,
        }
    }
}

/// A vyre view being made, made, or failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VyreState {
    /// Queued on the worker.
    Pending,
    /// Ready.
    Ready(Arc<VyreText>),
    /// Why vyre's PTX could not be made (the export refused, or vyre did).
    Failed(String),
}

/// Makes the vyre view of `program` for `sm` against our `ptx` (the worker's half).
#[cfg(feature = "vyre")]
pub fn make(
    program: &crate::ir::Program,
    ours: &str,
    sm: u32,
) -> Result<VyreText, crate::util::Problem> {
    let vp = crate::vyre::export(program)?;
    let k = crate::vyre::vyre_ptx(&vp, sm)?;
    let c = crate::vyre::ptx_diff::compare(ours, &k.ptx);
    let text = format!("{}\n{}", crate::vyre::ptx_diff::table(&c), c.diff);
    Ok(VyreText::new(&k.ptx, &text))
}

/// Without the feature there is no vyre view.
#[cfg(not(feature = "vyre"))]
pub fn make(
    _program: &crate::ir::Program,
    _ours: &str,
    _sm: u32,
) -> Result<VyreText, crate::util::Problem> {
    Err(crate::util::Problem::new(
        "built without vyre support",
        "build with `--features vyre`",
    ))
}
