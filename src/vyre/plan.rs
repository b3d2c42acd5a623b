//! vyre-megakernel's own plan of a ProgramGraph, read from vyre's planner: the graph is
//! compiled in-process on the CPU (`CompileRequest::validate` then `vyre_megakernel::compile`,
//! no device) and the resulting `Artifact`'s selected plan is described: fusion groups and
//! their stages, every pruned producer-consumer edge with its `MKL0xx` code, the launch
//! boundaries between stages, materializations with their reasons, resource live ranges and
//! `peak_live_bytes`, the open cost model's terms and how much of the search budget was used.
//! An artifact file (`.vmk`) already holds such a plan, which is described as recorded.
//!
//! The artifact does not say what vyre puts *inside* a fused kernel. That comes from
//! `merge_programs_shared`, which vyre's target compilation runs on each group's Programs
//! (`compile_selected_modules`): a `Barrier` (workgroup `SeqCst`) or `GridSync` after each arm
//! whose buffers a later arm reads or overwrites, decided by buffer *names* alone (no index
//! analysis). [`describe`] runs the same merge on the same Programs and reports each barrier
//! after the node it follows.
//!
//! Every vyre call runs under `catch_unwind`; vyre's refusals become [`VyrePlanError`]s that
//! keep vyre's code and advice.

use std::panic::{catch_unwind, AssertUnwindSafe};

use serde::{Deserialize, Serialize};
use vyre_foundation::execution_plan::fusion::merge_programs_shared;
use vyre_foundation::ir::{Node, Program as VyreProgram, ProgramGraph, ValueLifetime};
use vyre_foundation::memory_model::MemoryOrdering;
use vyre_megakernel::legality::FusionRejectionReason;
use vyre_megakernel::{
    compile, Artifact, CompileRequest, DependencyEndpoint, DependencyKind, Digest, ExternalFacts,
    MaterializationReason, ResourceLifetime, SearchBudget, ValidatedCompileRequest,
};

/// The search bounds given to vyre's planner (`SearchBudget`); the target-compilation and
/// measurement bounds stay 0 (the planner in 0.7.2 uses neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// Most candidate plans scored by vyre's cost model (the unfused baseline counts).
    pub max_candidates: u32,
    /// Most abstract work units: one per producer-consumer edge examined, one for the
    /// combined candidate. Edges past it are not examined and so not fused (vyre says
    /// nothing about them).
    pub max_cpu_work: u64,
}

impl Default for Budget {
    /// Room for every edge of any graph vyrescope opens: vyre's own tests use 64 candidates.
    fn default() -> Self {
        Budget {
            max_candidates: 64,
            max_cpu_work: 1_000_000,
        }
    }
}

/// Where the described plan came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanSource {
    /// Computed now by vyre-megakernel's planner.
    Computed,
    /// Recorded in a megakernel artifact file.
    Artifact,
}

/// One graph node as vyre's plan sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanNode {
    /// Node id (= step index of the converted pipeline).
    pub id: u32,
    /// vyre's node name.
    pub name: String,
    /// The Program's workgroup size.
    pub workgroup_size: [u32; 3],
    /// Semantic work: vyre's node count of the Program (the cost model's term).
    pub semantic_work: u64,
}

/// A barrier vyre's fused kernel has between two arms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelBarrier {
    /// The node after whose arm the barrier sits.
    pub after: u32,
    /// The next arm's node.
    pub before: u32,
    /// `grid_sync` (every thread of the dispatch) or `seq_cst` (a workgroup barrier).
    pub ordering: String,
}

/// One fusion group of vyre's plan: one kernel launch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanGroup {
    /// Group id.
    pub id: u32,
    /// Dependency stage (groups of one stage may run concurrently).
    pub stage: u32,
    /// Member nodes in emission order (ascending id).
    pub members: Vec<u32>,
    /// What `merge_programs_shared` puts between the arms (empty for one member).
    pub kernel_barriers: Vec<KernelBarrier>,
    /// Values that connect two members but are bound to differently named Program buffers:
    /// vyre's merge matches buffers by name, so it sees no dependence through them.
    pub unlinked_values: Vec<String>,
    /// Why `merge_programs_shared` refuses to form the group's kernel, when it does.
    pub merge_error: Option<String>,
}

/// A producer-consumer edge vyre's planner refused to fuse.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrunedEdge {
    /// Producer node.
    pub from: u32,
    /// Consumer node.
    pub to: u32,
    /// The connecting value's name.
    pub value: String,
    /// vyre's code (`MKL005_WORKGROUP_MISMATCH`, ...).
    pub code: String,
    /// What the code means.
    pub meaning: String,
}

/// A dependency edge that crosses a launch boundary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundaryEdge {
    /// Producer node.
    pub from: u32,
    /// Consumer node.
    pub to: u32,
    /// The value (`data`) or retained state (`retained`) it carries.
    pub value: Option<String>,
    /// `data` or `retained`.
    pub kind: String,
}

/// A launch boundary: stage `before_stage` completes before `after_stage` starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchBoundary {
    /// The stage that completes.
    pub before_stage: u32,
    /// The stage admitted after it.
    pub after_stage: u32,
    /// The dependency edges that require it.
    pub edges: Vec<BoundaryEdge>,
}

/// A value vyre keeps in memory past its producing group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Materialization {
    /// The value's name.
    pub value: String,
    /// Producing group.
    pub group: u32,
    /// Stage at which it exists.
    pub stage: u32,
    /// `cross_group_use`, `output` or `retained`.
    pub reason: String,
}

/// One value's memory and live range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// The value's name.
    pub value: String,
    /// Packed bytes.
    pub bytes: u64,
    /// `constant`, `invocation`, `retained` or `output`.
    pub lifetime: String,
    /// First stage that needs it.
    pub first_stage: u32,
    /// Last stage that needs it.
    pub last_stage: u32,
}

/// The open cost model's terms for the selected plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cost {
    /// Sum of the nodes' semantic work.
    pub semantic_work: u64,
    /// Kernel launches (groups).
    pub launches: u64,
    /// Data edges crossing a group boundary.
    pub materialized_edges: u64,
    /// `semantic_work + 1000 * launches + 100 * materialized_edges`.
    pub total: u64,
}

/// How much of the search budget vyre's planner used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetUse {
    /// The bounds.
    pub budget: Budget,
    /// Candidate plans scored.
    pub candidates_explored: u32,
    /// Work units spent.
    pub cpu_work: u64,
    /// Producer-consumer edges in the graph.
    pub edges: u64,
    /// Edges examined before the budget ran out; the rest were never considered for fusion.
    pub edges_examined: u64,
}

/// vyre-megakernel's plan of one graph (`plan --json`'s `vyre` object).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VyrePlan {
    /// `computed` now, or read from an `artifact`.
    pub source: PlanSource,
    /// The vyre-megakernel version that made the plan.
    pub compiler_version: String,
    /// The graph's nodes.
    pub nodes: Vec<PlanNode>,
    /// Fusion groups, one launch each.
    pub groups: Vec<PlanGroup>,
    /// Every producer-consumer (data) edge between two nodes.
    pub data_edges: Vec<BoundaryEdge>,
    /// Edges refused for fusion, with vyre's codes.
    pub pruned: Vec<PrunedEdge>,
    /// Boundaries between stages.
    pub launch_boundaries: Vec<LaunchBoundary>,
    /// Values kept past their group.
    pub materializations: Vec<Materialization>,
    /// Per value: bytes and live stages.
    pub resources: Vec<Resource>,
    /// Sum of all values' bytes.
    pub total_bytes: u64,
    /// Most bytes live in any one stage.
    pub peak_live_bytes: u64,
    /// The cost of the selected plan.
    pub cost: Cost,
    /// Budget and use.
    pub budget: BudgetUse,
}

impl VyrePlan {
    /// The group of node `id`.
    pub fn group_of(&self, id: u32) -> Option<&PlanGroup> {
        self.groups.iter().find(|g| g.members.contains(&id))
    }

    /// The node's name, or `node N`.
    pub fn node_name(&self, id: u32) -> String {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .map_or_else(|| format!("node {id}"), |n| n.name.clone())
    }
}

/// vyre's planner refusing a graph (or failing): vyre's code, where, and its advice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VyrePlanError {
    /// What vyre said, with its code and the place it names.
    pub message: String,
    /// What to do.
    pub fix: String,
}

impl crate::util::HasFix for VyrePlanError {
    fn message(&self) -> String {
        self.message.clone()
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(VyrePlanError);

/// What an `MKL0xx` rejection means.
pub fn rejection_meaning(reason: FusionRejectionReason) -> &'static str {
    match reason {
        FusionRejectionReason::UnknownGraphMember => {
            "a node or value of the edge is not in the graph"
        }
        FusionRejectionReason::NotProducerConsumer => {
            "the value does not connect this producer to this consumer"
        }
        FusionRejectionReason::LifecycleBoundary => {
            "the value is not an invocation temporary (constant, retained or output): it must \
             exist outside the kernel"
        }
        FusionRejectionReason::MultipleConsumers => {
            "more than one node consumes the value (vyre fuses only single-consumer edges)"
        }
        FusionRejectionReason::WorkgroupMismatch => {
            "the two Programs have different workgroup sizes"
        }
        FusionRejectionReason::SynchronizationBoundary => {
            "one of the Programs contains a barrier (vyre never fuses across one)"
        }
        FusionRejectionReason::DependencyCycle => {
            "fusing the edge would make the group graph cyclic"
        }
        _ => "a reason this vyrescope does not know",
    }
}

/// Compiles `graph` with vyre-megakernel's planner under `budget` (validated and compiled
/// in-process, no device) and describes the plan. `name` names the graph in errors.
pub fn plan_graph(
    graph: ProgramGraph,
    budget: Budget,
    name: &str,
) -> Result<VyrePlan, VyrePlanError> {
    let (artifact, request) = compile_graph(graph, budget, name)?;
    describe(&artifact, request.graph(), PlanSource::Computed, name)
}

/// vyre-megakernel's artifact of `graph` under `budget` (`CompileRequest::validate`, then
/// `vyre_megakernel::compile`; in-process, no device) and the request vyre validated (its
/// `graph()` is the graph compiled).
/// `name` names the graph in errors; vyre's refusals keep its code and advice.
pub fn compile_graph(
    graph: ProgramGraph,
    budget: Budget,
    name: &str,
) -> Result<(Artifact, ValidatedCompileRequest), VyrePlanError> {
    if budget.max_candidates == 0 || budget.max_cpu_work == 0 {
        return Err(VyrePlanError {
            message: format!(
                "vyre's planner needs a positive search budget (got {} candidates, {} work units)",
                budget.max_candidates, budget.max_cpu_work
            ),
            fix: "give --vyre-budget and --vyre-candidates values of 1 or more".into(),
        });
    }
    // vyre needs a content identity for every constant value; a graph file carries none,
    // and the plan does not depend on it (only the artifact's request digest does).
    let constants = graph
        .values()
        .iter()
        .filter(|v| v.contract.lifetime == ValueLifetime::Constant)
        .map(|v| {
            let mut d = [0u8; 32];
            d[..4].copy_from_slice(&v.id.0.to_le_bytes());
            (v.id, Digest(d))
        })
        .collect();
    // The symbols the user bound (`--bind`), as vyre's planner needs them too.
    let mut facts = ExternalFacts::new(
        Digest([0; 32]),
        crate::ir::foreign::graph_bindings().clone(),
    );
    facts.constant_identities = constants;
    // The elapsed bound counts the same deterministic units as the work bound in 0.7.2; it
    // is set so that the work bound is the one that binds.
    let search = SearchBudget::new(
        budget.max_candidates,
        budget.max_cpu_work,
        0,
        0,
        budget.max_cpu_work.saturating_add(1),
    );
    let refused = |e: vyre_megakernel::CompileError| compile_error(name, &e.diagnostic);
    let compiled = catch_unwind(AssertUnwindSafe(move || {
        let request = CompileRequest::new(graph, facts, search, u64::MAX)
            .validate()
            .map_err(refused)?;
        let artifact = compile(&request).map_err(refused)?;
        Ok((artifact, request))
    }));
    match compiled {
        Ok(r) => r,
        Err(_) => Err(VyrePlanError {
            message: format!("vyre-megakernel's planner panicked on graph `{name}`"),
            fix: "report this to vyre with the graph file; `vyrescope plan` without the vyre \
                  comparison still plans it"
                .into(),
        }),
    }
}

/// vyre's diagnostic as our error: its code, message and the place it names, and its advice.
fn compile_error(name: &str, d: &vyre_megakernel::Diagnostic) -> VyrePlanError {
    let place = d
        .location
        .as_ref()
        .and_then(|l| l.path.clone())
        .map(|p| format!(" at {p}"))
        .unwrap_or_default();
    let vyre_fix = d
        .suggested_fix
        .as_deref()
        .unwrap_or("")
        .trim()
        .trim_end_matches('.');
    let ours = "`vyrescope check` on the graph lists what vyrescope finds; for vyrescope's plan \
                alone, `vyrescope import GRAPH -o DIR` and plan the pipeline it writes";
    VyrePlanError {
        message: format!(
            "vyre-megakernel refuses to plan graph `{name}`{place}: [{}] {}",
            d.code, d.message
        ),
        fix: if vyre_fix.is_empty() {
            ours.to_string()
        } else {
            format!("{vyre_fix} (vyre's advice); {ours}")
        },
    }
}

/// The plan `artifact` records, with the barriers vyre's merge puts inside each group;
/// `graph` (the one compiled, or the one rebuilt from the artifact) gives the port bindings.
pub fn describe(
    artifact: &Artifact,
    graph: &ProgramGraph,
    source: PlanSource,
    name: &str,
) -> Result<VyrePlan, VyrePlanError> {
    let decode_failed = |what: String| VyrePlanError {
        message: format!("graph `{name}`: vyre cannot decode {what}"),
        fix: "compile the graph again with vyre-megakernel 0.7.2".into(),
    };
    let programs: Vec<VyreProgram> = artifact
        .nodes()
        .iter()
        .map(|n| {
            catch_unwind(AssertUnwindSafe(|| VyreProgram::from_wire(&n.program)))
                .map_err(|_| decode_failed(format!("node `{}`'s Program (panicked)", n.name)))?
                .map_err(|e| decode_failed(format!("node `{}`'s Program: {e}", n.name)))
        })
        .collect::<Result<_, _>>()?;
    let nodes: Vec<PlanNode> = artifact
        .nodes()
        .iter()
        .zip(&programs)
        .map(|(n, p)| PlanNode {
            id: n.id.0,
            name: n.name.clone(),
            workgroup_size: p.workgroup_size,
            semantic_work: u64::try_from(p.stats().node_count).unwrap_or(u64::MAX),
        })
        .collect();
    let value_name = |id: u32| {
        artifact
            .resources()
            .iter()
            .find(|r| r.value.0 == id)
            .map_or_else(|| format!("value {id}"), |r| r.name.clone())
    };
    let plan = artifact.selected_plan();
    let groups = plan
        .fusion
        .iter()
        .map(|f| {
            let mut members: Vec<u32> = f.members.iter().map(|m| m.0).collect();
            members.sort_unstable();
            let arms: Vec<&VyreProgram> = members
                .iter()
                .filter_map(|&m| programs.get(m as usize))
                .collect();
            let (kernel_barriers, merge_error) = kernel_barriers(&members, &arms);
            PlanGroup {
                id: f.id.0,
                stage: f.stage,
                unlinked_values: unlinked_values(graph, &members),
                members,
                kernel_barriers,
                merge_error,
            }
        })
        .collect();
    let pruned = plan
        .pruned_fusions
        .iter()
        .map(|p| PrunedEdge {
            from: p.from.0,
            to: p.to.0,
            value: value_name(p.value.0),
            code: p.reason.code().to_string(),
            meaning: rejection_meaning(p.reason).to_string(),
        })
        .collect();
    let deps = artifact.dependencies();
    let edge = |d: &vyre_megakernel::DependencyEdge| match (d.from, d.to) {
        (DependencyEndpoint::Node(from), DependencyEndpoint::Node(to)) => Some(BoundaryEdge {
            from: from.0,
            to: to.0,
            value: d.value.map(|v| value_name(v.0)),
            kind: match d.kind {
                DependencyKind::Data => "data",
                DependencyKind::Retained => "retained",
                DependencyKind::Materialization => "materialization",
            }
            .into(),
        }),
        _ => None,
    };
    let launch_boundaries = plan
        .barriers
        .iter()
        .map(|b| LaunchBoundary {
            before_stage: b.before_stage,
            after_stage: b.after_stage,
            edges: b
                .dependencies
                .iter()
                .filter_map(|&i| deps.get(i as usize))
                .filter_map(edge)
                .collect(),
        })
        .collect();
    let data_edges: Vec<BoundaryEdge> = deps
        .iter()
        .filter(|d| d.kind == DependencyKind::Data)
        .filter_map(edge)
        .collect();
    let materializations = plan
        .materializations
        .iter()
        .map(|m| Materialization {
            value: value_name(m.value.0),
            group: m.producer.0,
            stage: m.stage,
            reason: match m.reason {
                MaterializationReason::CrossGroupUse => "cross_group_use",
                MaterializationReason::Output => "output",
                MaterializationReason::Retained => "retained",
            }
            .into(),
        })
        .collect();
    let resources = artifact
        .resources()
        .iter()
        .map(|r| Resource {
            value: r.name.clone(),
            bytes: r.byte_count,
            lifetime: match r.lifetime {
                ResourceLifetime::Constant => "constant",
                ResourceLifetime::Invocation => "invocation",
                ResourceLifetime::Retained => "retained",
                ResourceLifetime::Output => "output",
            }
            .into(),
            first_stage: r.first_stage,
            last_stage: r.last_stage,
        })
        .collect();
    let edges = data_edges.len() as u64;
    let budget = Budget {
        max_candidates: plan.search_budget.max_candidates,
        max_cpu_work: plan.search_budget.max_cpu_work,
    };
    // The planner spends one unit per edge while both bounds have room (`search::explore`).
    let per_edge_bound = plan
        .search_budget
        .max_cpu_work
        .min(plan.search_budget.max_elapsed_ns);
    let cost = plan.selection_cost;
    Ok(VyrePlan {
        source,
        compiler_version: artifact.provenance().compiler_version.clone(),
        nodes,
        groups,
        data_edges,
        pruned,
        launch_boundaries,
        materializations,
        resources,
        total_bytes: artifact.resource_envelope().total_bytes,
        peak_live_bytes: artifact.resource_envelope().peak_live_bytes,
        cost: Cost {
            semantic_work: cost.semantic_work,
            launches: cost.launches,
            materialized_edges: cost.materializations,
            total: cost.total,
        },
        budget: BudgetUse {
            budget,
            candidates_explored: plan.candidates_explored,
            cpu_work: plan.search_work.cpu_work,
            edges,
            edges_examined: edges.min(per_edge_bound),
        },
    })
}

/// The barriers `merge_programs_shared` puts between the arms of one group (`members`, whose
/// Programs are `arms`), or why it refuses the group.
pub(crate) fn kernel_barriers(
    members: &[u32],
    arms: &[&VyreProgram],
) -> (Vec<KernelBarrier>, Option<String>) {
    if arms.len() < 2 {
        return (Vec::new(), None);
    }
    let owned: Vec<VyreProgram> = arms.iter().map(|p| (*p).clone()).collect();
    let merged = match catch_unwind(AssertUnwindSafe(|| merge_programs_shared(&owned))) {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return (Vec::new(), Some(e.to_string())),
        Err(_) => return (Vec::new(), Some("vyre's merge panicked".into())),
    };
    // The merge splices each arm's top-level statements (a root region's body) flat, then
    // a barrier after an arm that needs one; the whole is wrapped in one root region.
    let root = VyreProgram::ROOT_REGION_GENERATOR;
    let top_level = |p: &VyreProgram| -> usize {
        p.entry()
            .iter()
            .map(|n| match n {
                Node::Region {
                    generator, body, ..
                } if generator.as_str() == root => body.len(),
                _ => 1,
            })
            .sum()
    };
    let entry = merged.entry();
    let body: &[Node] = match entry {
        [Node::Region {
            generator, body, ..
        }] if generator.as_str() == root => body,
        _ => entry,
    };
    let mut out = Vec::new();
    let mut arm = 0usize;
    let mut left = top_level(arms[0]);
    for n in body {
        if let Node::Barrier { ordering } = n {
            if left == 0 && arm + 1 < arms.len() {
                out.push(KernelBarrier {
                    after: members[arm],
                    before: members[arm + 1],
                    ordering: match ordering {
                        MemoryOrdering::GridSync => "grid_sync",
                        _ => "seq_cst",
                    }
                    .into(),
                });
                continue;
            }
        }
        while left == 0 && arm + 1 < arms.len() {
            arm += 1;
            left = top_level(arms[arm]);
        }
        left = left.saturating_sub(1);
    }
    (out, None)
}

/// The values connecting two of `members` that the producer writes and the consumer reads
/// under different Program buffer names (the graph's ports say which): vyre's merge links
/// arms by buffer name only, so it sees no dependence through such a value.
fn unlinked_values(graph: &ProgramGraph, members: &[u32]) -> Vec<String> {
    let mut out = Vec::new();
    for v in graph.values() {
        let Some(producer) = v.producer.filter(|p| members.contains(&p.0)) else {
            continue;
        };
        let Some(written) = graph.nodes().get(producer.0 as usize).and_then(|n| {
            n.outputs
                .iter()
                .position(|o| *o == v.id)
                .and_then(|k| n.output_ports.get(k))
                .map(|p| p.buffer.clone())
        }) else {
            continue;
        };
        let renamed = v
            .consumers
            .iter()
            .filter(|c| members.contains(&c.0))
            .filter_map(|c| graph.nodes().get(c.0 as usize))
            .flat_map(|n| n.inputs.iter().filter(|i| i.value == v.id))
            .any(|i| i.buffer != written);
        if renamed {
            out.push(v.name.clone());
        }
    }
    out
}
