//! Our plan against vyre-megakernel's (feature `vyre`): where the two put different group
//! boundaries, where vyre's fused kernel has a barrier that our dependence analysis proves
//! unnecessary (or lacks one we prove necessary), and what else differs; and the text form of
//! vyre's plan that `vyrescope plan` prints beside ours.
//!
//! Node `i` of the graph is step `i` of the pipeline: a graph converts to a pipeline and a
//! pipeline exports to a graph one node per step, in order.

use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ir::Pipeline;
use crate::util::Problem;
use crate::vyre::plan::{describe, plan_graph, Budget, PlanSource, VyrePlan};

use super::plan::Plan;
use super::DepKind;

/// One way the two plans differ (`plan --json`'s `differences`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Difference {
    /// `group_boundary`, `kernel_barrier`, `unlinked_value`, `merge_refused` or `launches`.
    pub kind: String,
    /// The nodes (= steps) it is about.
    pub nodes: Vec<u32>,
    /// What vyre does there.
    pub vyre: String,
    /// What vyrescope does there, with its reason.
    pub vyrescope: String,
}

/// Step `s`'s (group, wave) in our plan.
fn place(plan: &Plan, s: usize) -> Option<(usize, usize)> {
    plan.groups.iter().enumerate().find_map(|(gi, g)| {
        g.waves
            .iter()
            .position(|w| w.contains(&s))
            .map(|wi| (gi, wi))
    })
}

/// Barrier strength on one scale: 0 none, 1 workgroup, 2 grid.
fn our_strength(k: DepKind) -> u8 {
    match k {
        DepKind::None | DepKind::Invocation => 0,
        DepKind::Workgroup => 1,
        DepKind::Grid => 2,
    }
}

fn vyre_strength(ordering: Option<&str>) -> u8 {
    match ordering {
        None => 0,
        Some("grid_sync") => 2,
        Some(_) => 1,
    }
}

/// The separation our plan puts between steps `a < b` of one group: the strongest at the wave
/// boundaries between them, as (kind, reason); `none` within one wave.
pub fn our_separation(plan: &Plan, a: usize, b: usize) -> Option<(DepKind, String)> {
    let (ga, wa) = place(plan, a)?;
    let (gb, wb) = place(plan, b)?;
    if ga != gb {
        return None;
    }
    if wa == wb {
        return Some((DepKind::None, "same wave: no dependence".into()));
    }
    let g = &plan.groups[ga];
    g.barriers
        .get(wa.min(wb)..wa.max(wb))
        .and_then(|bs| bs.iter().max_by_key(|s| our_strength(s.kind)))
        .map(|s| (s.kind, s.reason.clone()))
}

fn describe_ours(kind: DepKind, reason: &str) -> String {
    match kind {
        DepKind::Grid | DepKind::Workgroup => format!("{} barrier: {reason}", kind.name()),
        DepKind::Invocation | DepKind::None => format!("no barrier ({}): {reason}", kind.name()),
    }
}

fn describe_vyre_barrier(ordering: Option<&str>) -> String {
    match ordering {
        Some("grid_sync") => "GridSync (every thread of the dispatch waits)".into(),
        Some(_) => "Barrier{SeqCst} (a workgroup barrier)".into(),
        None => "no barrier".into(),
    }
}

/// Every difference between vyre's plan `v` and ours `ours` of the same graph; `name(i)`
/// names node/step `i`.
pub fn differences(v: &VyrePlan, ours: &Plan, name: &dyn Fn(u32) -> String) -> Vec<Difference> {
    let mut out = Vec::new();
    let label = |i: u32| format!("{i} ({})", name(i));
    // Group boundaries: along every producer-consumer edge, and between consecutive nodes
    // (our groups are consecutive steps; vyre's follow edges).
    let mut pairs: Vec<(u32, u32)> = v
        .data_edges
        .iter()
        .map(|e| (e.from.min(e.to), e.from.max(e.to)))
        .collect();
    let n = v.nodes.len() as u32;
    pairs.extend((1..n).map(|i| (i - 1, i)));
    pairs.sort_unstable();
    pairs.dedup();
    for &(a, b) in &pairs {
        let vyre_group = |i: u32| v.group_of(i).map(|g| g.id);
        let vyre_same = vyre_group(a).is_some() && vyre_group(a) == vyre_group(b);
        let our_group = |i: u32| place(ours, i as usize).map(|p| p.0);
        let ours_same = our_group(a).is_some() && our_group(a) == our_group(b);
        if vyre_same == ours_same {
            continue;
        }
        let vyre_text = if vyre_same {
            format!("fuses them in group {}", vyre_group(a).map_or(0, |g| g))
        } else if let Some(p) = v
            .pruned
            .iter()
            .find(|p| (p.from.min(p.to), p.from.max(p.to)) == (a, b))
        {
            format!(
                "separate launches: edge `{}` pruned with {} ({})",
                p.value, p.code, p.meaning
            )
        } else if v
            .data_edges
            .iter()
            .any(|e| (e.from.min(e.to), e.from.max(e.to)) == (a, b))
        {
            "separate launches: the edge was not fused (past the search budget, or the cost \
             model chose separate launches)"
                .into()
        } else {
            format!(
                "separate launches (groups {} and {}): no producer-consumer edge between them, \
                 and vyre fuses only along such edges",
                vyre_group(a).map_or(0, |g| g),
                vyre_group(b).map_or(0, |g| g)
            )
        };
        let ours_text = if ours_same {
            let (kind, reason) = our_separation(ours, a as usize, b as usize)
                .unwrap_or((DepKind::Grid, String::new()));
            format!(
                "fuses them in group {}, separated by {}",
                our_group(a).map_or(0, |g| g),
                describe_ours(kind, &reason)
            )
        } else {
            let why = ours
                .fusion_breaks
                .iter()
                .find(|f| f.step > a as usize && f.step <= b as usize)
                .map_or_else(
                    || "a launch boundary".to_string(),
                    |f| format!("fusion break before step {}: {}", f.step, f.reason),
                );
            format!("separate launches ({why})")
        };
        out.push(Difference {
            kind: "group_boundary".into(),
            nodes: vec![a, b],
            vyre: vyre_text,
            vyrescope: ours_text,
        });
    }
    // Barriers inside the kernels both plans fuse: between consecutive arms of each vyre group
    // that our plan also keeps in one group.
    for g in &v.groups {
        if let Some(e) = &g.merge_error {
            out.push(Difference {
                kind: "merge_refused".into(),
                nodes: g.members.clone(),
                vyre: format!(
                    "plans group {} but merge_programs_shared refuses to form its kernel: {e}",
                    g.id
                ),
                vyrescope: "n/a".into(),
            });
            continue;
        }
        for w in g.members.windows(2) {
            let (a, b) = (w[0], w[1]);
            let Some((kind, reason)) = our_separation(ours, a as usize, b as usize) else {
                continue;
            };
            let barrier = g
                .kernel_barriers
                .iter()
                .find(|k| k.after == a)
                .map(|k| k.ordering.as_str());
            let (vs, os) = (vyre_strength(barrier), our_strength(kind));
            if vs == os {
                continue;
            }
            let verdict = if vs > os {
                "stronger than the dependence needs"
            } else {
                "weaker than the dependence needs"
            };
            out.push(Difference {
                kind: "kernel_barrier".into(),
                nodes: vec![a, b],
                vyre: format!(
                    "{} between {} and {} in group {} ({verdict})",
                    describe_vyre_barrier(barrier),
                    label(a),
                    label(b),
                    g.id
                ),
                vyrescope: describe_ours(kind, &reason),
            });
        }
        for value in &g.unlinked_values {
            out.push(Difference {
                kind: "unlinked_value".into(),
                nodes: g.members.clone(),
                vyre: format!(
                    "group {}: value `{value}` is written and read under different Program \
                     buffer names; vyre's merge links arms by buffer name, so its fused kernel \
                     does not order or connect them through `{value}`",
                    g.id
                ),
                vyrescope: "binds each step's buffers to the value (pipeline buffer) itself".into(),
            });
        }
    }
    if v.groups.len() != ours.launches {
        out.push(Difference {
            kind: "launches".into(),
            nodes: Vec::new(),
            vyre: format!(
                "{} launch{} ({} stage{})",
                v.groups.len(),
                plural_es(v.groups.len()),
                v.launch_boundaries.len() + 1,
                plural_s(v.launch_boundaries.len() + 1)
            ),
            vyrescope: format!(
                "{} launch{}, {} grid barrier{}",
                ours.launches,
                plural_es(ours.launches),
                ours.grid_barriers,
                plural_s(ours.grid_barriers)
            ),
        });
    }
    out
}

fn plural_es(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "es"
    }
}

fn plural_s(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// vyre's plan as text: groups with their stages and in-kernel barriers, pruned edges, launch
/// boundaries, materializations, resources, cost and budget.
pub fn render_vyre(v: &VyrePlan) -> String {
    let mut o = String::new();
    let name = |i: u32| v.node_name(i);
    let _ = writeln!(
        o,
        "vyre-megakernel {} plan ({}): {} node{} -> {} launch{}",
        v.compiler_version,
        match v.source {
            PlanSource::Computed => "computed in-process by vyre's planner",
            PlanSource::Artifact => "as recorded in the artifact",
        },
        v.nodes.len(),
        plural_s(v.nodes.len()),
        v.groups.len(),
        plural_es(v.groups.len())
    );
    for g in &v.groups {
        let members: Vec<String> = g
            .members
            .iter()
            .map(|&m| {
                let wg = v
                    .nodes
                    .iter()
                    .find(|n| n.id == m)
                    .map_or([0; 3], |n| n.workgroup_size);
                format!("{m} {} [{}x{}x{}]", name(m), wg[0], wg[1], wg[2])
            })
            .collect();
        let _ = writeln!(
            o,
            "  group {} (stage {}): {}",
            g.id,
            g.stage,
            members.join(", ")
        );
        for k in &g.kernel_barriers {
            let _ = writeln!(
                o,
                "    in-kernel {} after {} (before {})",
                if k.ordering == "grid_sync" {
                    "GridSync"
                } else {
                    "Barrier{SeqCst}"
                },
                name(k.after),
                name(k.before)
            );
        }
        if g.members.len() > 1 && g.kernel_barriers.is_empty() && g.merge_error.is_none() {
            let _ = writeln!(o, "    in-kernel: no barrier (merge_programs_shared)");
        }
        for value in &g.unlinked_values {
            let _ = writeln!(
                o,
                "    value `{value}` has other buffer names in producer and consumer: not linked by the merge"
            );
        }
        if let Some(e) = &g.merge_error {
            let _ = writeln!(o, "    merge_programs_shared refuses: {e}");
        }
    }
    if v.pruned.is_empty() {
        let _ = writeln!(o, "  pruned edges: none");
    } else {
        let _ = writeln!(o, "  pruned edges:");
        for p in &v.pruned {
            let _ = writeln!(
                o,
                "    {} -> {} (`{}`): {}: {}",
                name(p.from),
                name(p.to),
                p.value,
                p.code,
                p.meaning
            );
        }
    }
    for b in &v.launch_boundaries {
        let edges: Vec<String> = b
            .edges
            .iter()
            .map(|e| {
                format!(
                    "{} -> {}{}",
                    name(e.from),
                    name(e.to),
                    e.value
                        .as_ref()
                        .map_or(String::new(), |v| format!(" (`{v}`, {})", e.kind))
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "  launch boundary stage {} | {}: {}",
            b.before_stage,
            b.after_stage,
            edges.join(", ")
        );
    }
    let mats: Vec<String> = v
        .materializations
        .iter()
        .map(|m| format!("{} ({}, group {})", m.value, m.reason, m.group))
        .collect();
    let _ = writeln!(
        o,
        "  materialized: {}",
        if mats.is_empty() {
            "none".to_string()
        } else {
            mats.join(", ")
        }
    );
    let res: Vec<String> = v
        .resources
        .iter()
        .map(|r| {
            format!(
                "{} {} B {} s{}..{}",
                r.value, r.bytes, r.lifetime, r.first_stage, r.last_stage
            )
        })
        .collect();
    let _ = writeln!(o, "  resources: {}", res.join("; "));
    let _ = writeln!(
        o,
        "  peak_live_bytes {} of {} B total",
        v.peak_live_bytes, v.total_bytes
    );
    let c = v.cost;
    let _ = writeln!(
        o,
        "  cost {} = semantic work {} + 1000 x {} launch{} + 100 x {} materialized edge{}",
        c.total,
        c.semantic_work,
        c.launches,
        plural_es(c.launches as usize),
        c.materialized_edges,
        plural_s(c.materialized_edges as usize)
    );
    let b = v.budget;
    let _ = writeln!(
        o,
        "  budget: {} of {} candidates, {} of {} work units; {} of {} edge{} examined{}",
        b.candidates_explored,
        b.budget.max_candidates,
        b.cpu_work,
        b.budget.max_cpu_work,
        b.edges_examined,
        b.edges,
        plural_s(b.edges as usize),
        if b.edges_examined < b.edges {
            format!(" ({} never considered)", b.edges - b.edges_examined)
        } else {
            String::new()
        }
    );
    o
}

/// The differences as text, one per line (`differences: none` when there are none).
pub fn render_differences(diffs: &[Difference], name: &dyn Fn(u32) -> String) -> String {
    let mut o = String::new();
    if diffs.is_empty() {
        let _ = writeln!(o, "differences: none");
        return o;
    }
    let _ = writeln!(o, "differences ({}):", diffs.len());
    for d in diffs {
        let nodes: Vec<String> = d
            .nodes
            .iter()
            .map(|&i| format!("{i} {}", name(i)))
            .collect();
        let _ = writeln!(
            o,
            "  {}{}:\n    vyre:      {}\n    vyrescope: {}",
            d.kind,
            if nodes.is_empty() {
                String::new()
            } else {
                format!(" [{}]", nodes.join(", "))
            },
            d.vyre,
            d.vyrescope
        );
    }
    o
}

/// What was asked of vyre's planner (`plan --vyre --vyre-budget N --vyre-candidates N`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ask {
    /// Compare a pipeline file too (exported as a ProgramGraph); a graph or artifact file is
    /// always compared.
    pub pipeline: bool,
    /// `SearchBudget::max_cpu_work`, when given.
    pub max_cpu_work: Option<u64>,
    /// `SearchBudget::max_candidates`, when given.
    pub max_candidates: Option<u32>,
}

/// vyre's plan and the differences from ours, ready to print.
#[derive(Debug, Clone)]
pub struct Beside {
    /// vyre's plan.
    pub vyre: VyrePlan,
    /// Where the plans differ.
    pub differences: Vec<Difference>,
    /// Node (= step) names.
    pub names: Vec<String>,
}

impl Beside {
    /// Node `i`'s name.
    pub fn name(&self, i: u32) -> String {
        self.names
            .get(i as usize)
            .cloned()
            .unwrap_or_else(|| format!("node {i}"))
    }

    /// `{"vyre", "vyrescope", "differences"}` with `ours` (the plan JSON of `plan --json`).
    pub fn json(&self, ours: serde_json::Value) -> Result<serde_json::Value, Problem> {
        Ok(serde_json::json!({
            "vyre": serde_json::to_value(&self.vyre).map_err(Problem::bug)?,
            "vyrescope": ours,
            "differences": serde_json::to_value(&self.differences).map_err(Problem::bug)?,
        }))
    }

    /// vyre's plan, then ours (`ours`, the text `plan` prints), then the differences.
    pub fn text(&self, ours: String) -> String {
        format!(
            "{}\nvyrescope plan:\n{}\n{}",
            render_vyre(&self.vyre),
            ours,
            self.differences_text()
        )
    }

    /// The differences as text.
    pub fn differences_text(&self) -> String {
        render_differences(&self.differences, &|i| self.name(i))
    }
}

/// vyre's plan of the graph or artifact at `path` (or, when `ask.pipeline`, of `pipeline`
/// exported as a graph) and the differences from `ours`, the plan of `pipeline` (the file's
/// pipeline); `None` for a pipeline file not asked for. An artifact's recorded plan is
/// described unless a budget is given, which plans its graph again.
pub fn beside(
    path: &Path,
    pipeline: &Pipeline,
    ours: &Plan,
    ask: Ask,
) -> Result<Option<Beside>, Problem> {
    let bytes = std::fs::read(path).map_err(|e| {
        Problem::new(
            format!("cannot read {}: {e}", path.display()),
            "check the path and its permissions",
        )
    })?;
    let graph_file = crate::ir::foreign::is_vyre_graph(path, &bytes);
    if !graph_file && !ask.pipeline {
        return Ok(None);
    }
    let defaults = Budget::default();
    let budget = Budget {
        max_candidates: ask.max_candidates.unwrap_or(defaults.max_candidates),
        max_cpu_work: ask.max_cpu_work.unwrap_or(defaults.max_cpu_work),
    };
    let replan = ask.max_cpu_work.is_some() || ask.max_candidates.is_some();
    let name = &pipeline.name;
    let vyre = if graph_file {
        let artifact = crate::vyre::artifact::is_artifact(path, &bytes);
        let (graph, _) = crate::vyre::import::graph::read_graph(path, &bytes)?;
        if artifact && !replan {
            let recorded = crate::vyre::artifact::decode_artifact(path, &bytes)?;
            describe(&recorded, &graph, PlanSource::Artifact, name)?
        } else {
            plan_graph(graph, budget, name)?
        }
    } else {
        let graph = crate::vyre::export::graph::export_pipeline(pipeline).map_err(|e| {
            let p: Problem = e.into();
            Problem::new(
                format!("--vyre: {}", p.message),
                format!(
                    "{}; or plan without --vyre (vyre's planner needs the pipeline as a \
                     ProgramGraph)",
                    p.fix
                ),
            )
        })?;
        plan_graph(graph, budget, name)?
    };
    let names: Vec<String> = vyre.nodes.iter().map(|n| n.name.clone()).collect();
    let name_of = |i: u32| {
        names
            .get(i as usize)
            .cloned()
            .unwrap_or_else(|| format!("node {i}"))
    };
    let differences = differences(&vyre, ours, &name_of);
    Ok(Some(Beside {
        vyre,
        differences,
        names,
    }))
}
