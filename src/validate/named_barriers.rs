//! V074: one hardware named barrier never waits for two thread counts at once.
//!
//! A `barrier(subtask, threads t)` is `bar.sync 1 + lid.x / t, t`: hardware barrier 1 serves
//! sub-task 0 of every size. Threads of one block run ahead of each other between
//! whole-workgroup barriers, so after a size-32 and a size-64 sub-task barrier, warp 1 can
//! reach `bar.sync 1, 64` while warp 0 has not yet passed `bar.sync 1, 32`: barrier 1 is in
//! flight with two counts, which the hardware does not allow (`CUDA_ERROR_ILLEGAL_INSTRUCTION`,
//! or compute-sanitizer's "Divergent thread(s) in block"). Fused kernels met this when a
//! packed step of one sub-task size followed one of another with no block barrier between.
//!
//! The rule: along every path, two sub-task barriers of different sizes have a workgroup (or
//! grid) barrier between them, which every thread of the block must pass first. Barriers of
//! one size are fine: the same threads arrive at the same ids in the same order.

use std::collections::{BTreeSet, HashSet};

use crate::ir::{BarrierScope, Program, Stmt, StmtKind};

use super::Sink;

/// Reports V074 at each sub-task barrier that some path reaches while a sub-task barrier of
/// another size may still be in flight.
pub fn check(p: &Program, sink: &mut Sink) {
    let mut walk = Walk::default();
    walk.list(&p.body, BTreeSet::new());
    for (node, threads, other) in walk.found {
        sink.error(
            "V074",
            Some(&node),
            format!(
                "sub-task barrier of {threads} threads may meet one of {other} threads with no \
                 workgroup barrier between: both use hardware barrier 1 (and up), and one \
                 barrier cannot wait for two thread counts"
            ),
            format!(
                "use one sub-task size, or put a `barrier(workgroup)` between the \
                 {other}-thread and the {threads}-thread sub-task barriers"
            ),
        );
    }
}

/// The sizes of the sub-task barriers a thread may have passed since the last workgroup
/// barrier, carried along the statements.
type InFlight = BTreeSet<u32>;

#[derive(Default)]
struct Walk {
    /// (node, its size, a conflicting size), once per node.
    found: Vec<(String, u32, u32)>,
    seen: HashSet<String>,
}

impl Walk {
    fn list(&mut self, list: &[Stmt], mut state: InFlight) -> InFlight {
        for s in list {
            state = self.stmt(s, state);
        }
        state
    }

    fn stmt(&mut self, s: &Stmt, mut state: InFlight) -> InFlight {
        match &s.kind {
            StmtKind::Barrier(BarrierScope::Workgroup | BarrierScope::Grid) => InFlight::new(),
            StmtKind::Barrier(BarrierScope::Subtask { threads }) => {
                if let Some(&other) = state.iter().find(|&&t| t != *threads) {
                    if self.seen.insert(s.id.to_string()) {
                        self.found.push((s.id.to_string(), *threads, other));
                    }
                }
                state.insert(*threads);
                state
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                let mut out = self.list(then, state.clone());
                out.extend(self.list(otherwise, state));
                out
            }
            StmtKind::Loop { body, .. } => {
                // Zero or more trips: iterate to the fixed point (the sizes only grow, and
                // there are finitely many in the Program).
                let mut entry = state;
                loop {
                    let out = self.list(body, entry.clone());
                    let next: InFlight = entry.union(&out).copied().collect();
                    if next == entry {
                        return entry;
                    }
                    entry = next;
                }
            }
            StmtKind::Block(b) => self.list(b, state),
            // A thread that returned reaches no later barrier.
            StmtKind::Return => InFlight::new(),
            StmtKind::Let { .. }
            | StmtKind::Assign { .. }
            | StmtKind::Store { .. }
            | StmtKind::Sync(_) => state,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::ir::parse_program;

    fn codes(body: &str, wg: u32) -> Vec<String> {
        let src = format!(
            r#"{{"format":1,"name":"t","workgroup_size":[{wg},1,1],
                "buffers":[{{"name":"out","binding":0,"access":"read_write","type":"u32"}}],
                "body":{body}}}"#
        );
        let p = parse_program(&src, "t.json").unwrap();
        crate::validate::validate(&p)
            .into_iter()
            .filter(|d| d.code == "V074")
            .map(|d| d.node.map(|n| n.to_string()).unwrap_or_default())
            .collect()
    }

    #[test]
    fn two_sizes_in_one_phase_are_refused_at_the_second() {
        let body = r#"[{"barrier":"subtask","threads":32},{"barrier":"subtask","threads":64}]"#;
        assert_eq!(codes(body, 256), vec!["body[1]".to_string()]);
    }

    #[test]
    fn a_workgroup_barrier_between_two_sizes_separates_them() {
        let body = r#"[{"barrier":"subtask","threads":32},{"barrier":"workgroup"},
                       {"barrier":"subtask","threads":64}]"#;
        assert!(codes(body, 256).is_empty());
    }

    #[test]
    fn one_size_repeated_is_fine() {
        let body = r#"[{"barrier":"subtask","threads":64},{"barrier":"subtask","threads":64}]"#;
        assert!(codes(body, 256).is_empty());
    }

    #[test]
    fn a_loop_carries_the_size_round_to_its_start() {
        // The second trip's 32-thread barrier may meet the first trip's 64-thread one.
        let body = r#"[{"loop":"k","from":0,"to":4,"body":[
                         {"barrier":"subtask","threads":32},
                         {"barrier":"subtask","threads":64}]}]"#;
        let found = codes(body, 256);
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn sizes_in_two_branches_meet_after_the_if() {
        let body = r#"[{"if":{"lt":[{"wgid":"x"},2]},
                          "then":[{"barrier":"subtask","threads":32}],
                          "else":[]},
                       {"barrier":"subtask","threads":128}]"#;
        assert_eq!(codes(body, 256), vec!["body[1]".to_string()]);
    }
}
