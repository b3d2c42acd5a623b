//! `vyrescope emit --vyre FILE` and `vyrescope emit --compare-vyre FILE [--json]`: vyre's
//! own PTX for a Program, and its comparison with ours (feature `vyre`).

use crate::ir::Program;
use crate::util::Problem;

/// The error of a vyre command in a build without the feature.
#[cfg(not(feature = "vyre"))]
pub fn feature_off() -> Problem {
    Problem::new(
        "this vyrescope was built without vyre support",
        "build with `cargo build --release --features vyre` (see docs/vyre.md)",
    )
}

/// vyre's PTX for `p` at `sm`.
#[cfg(feature = "vyre")]
pub fn vyre_text(p: &Program, sm: u32) -> Result<String, Problem> {
    let vp = crate::vyre::export(p)?;
    Ok(crate::vyre::vyre_ptx(&vp, sm)?.ptx)
}

/// The comparison of `ours` with vyre's PTX for `p`: a table and the diff, or JSON.
#[cfg(feature = "vyre")]
pub fn compare_text(p: &Program, ours: &str, sm: u32, json: bool) -> Result<String, Problem> {
    let theirs = vyre_text(p, sm)?;
    let c = crate::vyre::ptx_diff::compare(ours, &theirs);
    if json {
        serde_json::to_string_pretty(&c)
            .map(|s| s + "\n")
            .map_err(Problem::bug)
    } else {
        Ok(format!("{}\n{}", crate::vyre::ptx_diff::table(&c), c.diff))
    }
}

/// Without the feature: the error saying how to turn it on.
#[cfg(not(feature = "vyre"))]
pub fn vyre_text(_p: &Program, _sm: u32) -> Result<String, Problem> {
    Err(feature_off())
}

/// Without the feature: the error saying how to turn it on.
#[cfg(not(feature = "vyre"))]
pub fn compare_text(_p: &Program, _ours: &str, _sm: u32, _json: bool) -> Result<String, Problem> {
    Err(feature_off())
}
