//! `vyrescope emit --vyre FILE` and `vyrescope emit --compare-vyre FILE [--json]`: vyre's
//! own PTX for a Program, and its comparison with ours (feature `vyre`).

use crate::ir::Program;

/// The error of a vyre command in a build without the feature.
pub const FEATURE_OFF: &str = "this vyrescope was built without vyre support\n  Fix: build with `cargo build --release --features vyre` (see docs/vyre.md)";

/// vyre's PTX for `p` at `sm`.
#[cfg(feature = "vyre")]
pub fn vyre_text(p: &Program, sm: u32) -> Result<String, String> {
    let vp = crate::vyre::export(p).map_err(|e| e.to_string())?;
    crate::vyre::vyre_ptx(&vp, sm)
        .map(|k| k.ptx)
        .map_err(|e| e.to_string())
}

/// The comparison of `ours` with vyre's PTX for `p`: a table and the diff, or JSON.
#[cfg(feature = "vyre")]
pub fn compare_text(p: &Program, ours: &str, sm: u32, json: bool) -> Result<String, String> {
    let theirs = vyre_text(p, sm)?;
    let c = crate::vyre::compare::compare(ours, &theirs);
    if json {
        serde_json::to_string_pretty(&c)
            .map(|s| s + "\n")
            .map_err(|e| format!("{e}\n  Fix: report this bug"))
    } else {
        Ok(format!("{}\n{}", crate::vyre::compare::table(&c), c.diff))
    }
}

/// Without the feature: the error saying how to turn it on.
#[cfg(not(feature = "vyre"))]
pub fn vyre_text(_p: &Program, _sm: u32) -> Result<String, String> {
    Err(FEATURE_OFF.to_string())
}

/// Without the feature: the error saying how to turn it on.
#[cfg(not(feature = "vyre"))]
pub fn compare_text(_p: &Program, _ours: &str, _sm: u32, _json: bool) -> Result<String, String> {
    Err(FEATURE_OFF.to_string())
}
