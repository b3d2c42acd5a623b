//! Workgroup-size dependence: `L013` (the statements that tie a Program to the workgroup
//! size it was written for, from [`crate::analysis::wg_dependence`]) and `L014` (a size other
//! than the Program's own changes its outputs on the reference interpreter, or could not be
//! compared). [`Preservation`] is the answer of the one check behind every workgroup-size
//! suggestion (`harness::preserve`): the occupancy suggestion, the inspector's tuning keys,
//! `tune` and `diff @wg=`.

use serde::Serialize;

use super::Diagnostic;
use crate::analysis::wg_dependence::workgroup_ties;
use crate::ir::Program;

/// Does running at another workgroup size give the outputs of the Program's own size?
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Preservation {
    /// Same outputs, by the parity rules and the Program's tolerance.
    Preserved,
    /// Different outputs: the first difference (`partial[3] 12.0 vs 9.5`, the candidate's
    /// value first) and how many elements differ (0 when the run itself failed).
    Changed {
        /// The first difference, or why the run at that size failed.
        first: String,
        /// Differing elements.
        mismatches: u64,
    },
    /// Not compared, and why (`too large: ...`): no claim either way.
    NotChecked {
        /// Why.
        why: String,
    },
}

impl Preservation {
    /// True only when the outputs were compared and are the same.
    pub fn is_preserved(&self) -> bool {
        matches!(self, Preservation::Preserved)
    }

    /// True when the outputs differ (a suggestion must never offer this size).
    pub fn changes(&self) -> bool {
        matches!(self, Preservation::Changed { .. })
    }

    /// One phrase: `same results as the own size`, `changes results: out[3] 12.0 vs 9.5`,
    /// `results not checked: too large (...)`.
    pub fn text(&self) -> String {
        match self {
            Preservation::Preserved => "same results as the own size".into(),
            Preservation::Changed { first, .. } => format!("changes results: {first}"),
            Preservation::NotChecked { why } => format!("results not checked: {why}"),
        }
    }

    /// A short form for table cells: `same`, `CHANGES`, `not checked`.
    pub fn cell(&self) -> &'static str {
        match self {
            Preservation::Preserved => "same",
            Preservation::Changed { .. } => "CHANGES",
            Preservation::NotChecked { .. } => "not checked",
        }
    }
}

/// `L013`: one warning at the first statement that ties `program` to its workgroup size,
/// naming every such statement; `None` when the analysis finds none.
pub fn dependence(program: &Program) -> Option<Diagnostic> {
    let ties = workgroup_ties(program);
    let first = ties.first()?;
    let [x, y, z] = program.workgroup_size;
    let list: Vec<String> = ties
        .iter()
        .map(|t| format!("{} ({})", t.node, t.why))
        .collect();
    Some(Diagnostic::warning(
        "L013",
        Some(first.node.clone()),
        format!(
            "results may depend on the workgroup size {x}x{y}x{z} it is written for: {}",
            list.join("; ")
        ),
        "keep this workgroup size, or size these statements from the launch (e.g. loop to the workgroup's thread count instead of a literal); every size vyrescope suggests is first compared with this one on the reference interpreter",
    ))
}

/// How to keep the results at another size: the run section's fixed grid (which covers other
/// threads at another workgroup size), the statements `L013` names, or the own size.
fn changed_fix(program: &Program, wg: [u32; 3]) -> String {
    let own = program.workgroup_size;
    let mut ways = vec![format!(
        "keep the workgroup size {}x{}x{}",
        own[0], own[1], own[2]
    )];
    if let Some(g) = program.run.as_ref().and_then(|r| r.grid) {
        let cover =
            |w: [u32; 3]| -> u64 { (0..3).map(|i| u64::from(g[i]) * u64::from(w[i])).product() };
        ways.push(format!(
            "the `run` section fixes the grid at {}x{}x{}, so {}x{}x{} runs {} threads instead of {}: give `run.elements` instead (the grid then follows the workgroup size) or pass a matching --grid",
            g[0], g[1], g[2], wg[0], wg[1], wg[2], cover(wg), cover(own)
        ));
    }
    if !workgroup_ties(program).is_empty() {
        ways.push("rewrite the statements `L013` names so they follow the launch".into());
    }
    ways.join("; or ")
}

/// `L014` for running `program` at `wg` instead of its own size: an error when the outputs
/// change, a note when they were not compared; `None` at the own size or when they match.
pub fn size_verdict(program: &Program, wg: [u32; 3], p: &Preservation) -> Option<Diagnostic> {
    let own = program.workgroup_size;
    if wg == own {
        return None;
    }
    let at = format!("{}x{}x{}", wg[0], wg[1], wg[2]);
    let own_s = format!("{}x{}x{}", own[0], own[1], own[2]);
    match p {
        Preservation::Preserved => None,
        Preservation::Changed { first, .. } => Some(Diagnostic::error(
            "L014",
            None,
            format!(
                "workgroup size {at} changes results: {first} (at {at} vs the Program's own {own_s}, reference interpreter, same inputs)"
            ),
            changed_fix(program, wg),
        )),
        Preservation::NotChecked { why } => Some(Diagnostic::info(
            "L014",
            None,
            format!("results at workgroup size {at} not compared with the own {own_s}: {why}"),
            "compare them yourself: `vyrescope run FILE --workgroup X,Y,Z` against `vyrescope run FILE` (checksums)",
        )),
    }
}
