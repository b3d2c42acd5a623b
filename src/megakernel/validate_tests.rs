//! The validator accepts the round-robin schedules of real plans and refuses every mutation
//! that breaks the semantics: a dropped wait, a producer set too small, tasks reordered
//! against their waits, a wait on a later step, counters that are not reset.

use super::*;
use crate::inputs::prng::SplitMix64;
use crate::megakernel::plan::{plan, PlanOptions};
use crate::megakernel::test_support::{copy, pipeline, program, shape};
use crate::megakernel::tiles::SyncLabel;
use crate::occupancy::profiles;

fn dep(from: usize, to: usize, producers: ProducerSet) -> TileDep {
    TileDep {
        from,
        to,
        producers,
        label: SyncLabel::Counter,
        reason: "test".to_string(),
        node: None,
    }
}

/// A 4-step stencil (halo w-1..w+1 on the previous step) over 40 workgroups, then a fold
/// (one workgroup after all of step 3) and a broadcast of its result to 40 workgroups.
fn stencil_fold_broadcast() -> (Vec<(usize, u64)>, Vec<TileDep>) {
    let halo = ProducerSet::Window { lo: -1, hi: 1 };
    let steps = vec![(0, 40), (1, 40), (2, 40), (3, 40), (4, 1), (5, 40)];
    let deps = vec![
        dep(0, 1, halo),
        dep(1, 2, halo),
        dep(2, 3, halo),
        dep(3, 4, ProducerSet::All),
        dep(4, 5, ProducerSet::Range { first: 0, last: 0 }),
    ];
    (steps, deps)
}

#[test]
fn round_robin_schedules_pass_for_every_grid_and_reset() {
    let (steps, deps) = stencil_fold_broadcast();
    for blocks in [1, 2, 7, 40, 64] {
        for reset in [CounterReset::Zeroed, CounterReset::Epoch] {
            let s = Schedule::round_robin(&steps, blocks, &deps, reset);
            validate(&s, &deps).unwrap_or_else(|e| panic!("{blocks} blocks, {reset:?}: {e}"));
        }
    }
}

#[test]
fn dropping_any_wait_is_refused() {
    let (steps, deps) = stencil_fold_broadcast();
    let good = Schedule::round_robin(&steps, 7, &deps, CounterReset::Zeroed);
    for i in 0..good.waits.len() {
        let mut s = good.clone();
        let w = s.waits.remove(i);
        let e = validate(&s, &deps).expect_err("a dropped wait must be refused");
        assert!(e.message.contains("no wait covers"), "wait {w:?}: {e}");
    }
}

#[test]
fn producer_sets_too_small_are_refused() {
    let (steps, deps) = stencil_fold_broadcast();
    let good = Schedule::round_robin(&steps, 7, &deps, CounterReset::Zeroed);
    let smaller = [
        ProducerSet::Window { lo: 0, hi: 1 },
        ProducerSet::Window { lo: -1, hi: 0 },
        ProducerSet::Range { first: 0, last: 38 },
        ProducerSet::Range { first: 1, last: 1 },
        ProducerSet::Empty,
    ];
    for i in 0..good.waits.len() {
        for &p in &smaller {
            let mut s = good.clone();
            let before = s.waits[i].producers;
            s.waits[i].producers = p;
            // Only mutations that really drop a needed producer must be refused.
            let ga = steps
                .iter()
                .find(|x| x.0 == s.waits[i].producer)
                .map_or(0, |x| x.1);
            let gb = steps
                .iter()
                .find(|x| x.0 == s.waits[i].consumer)
                .map_or(0, |x| x.1);
            let loses = (0..gb).any(|q| {
                let now = p.producers_of(q, ga);
                before.producers_of(q, ga).any(|x| !now.contains(&x))
            });
            let r = validate(&s, &deps);
            assert_eq!(r.is_err(), loses, "wait {i} as {p:?}: {r:?}");
        }
    }
}

#[test]
fn a_consumer_before_its_producer_on_the_same_block_is_a_deadlock() {
    let (steps, deps) = stencil_fold_broadcast();
    let mut s = Schedule::round_robin(&steps, 7, &deps, CounterReset::Zeroed);
    // Block 0 runs workgroup 0 of step 0, then (7, 14, ...), then step 1's. Move step 1
    // workgroup 0 to the front: it needs step 0 workgroups 0 and 1, 0 being its own later.
    let pos = s.blocks[0]
        .iter()
        .position(|t| {
            *t == Task {
                step: 1,
                workgroup: 0,
            }
        })
        .expect("task");
    let t = s.blocks[0].remove(pos);
    s.blocks[0].insert(0, t);
    let e = validate(&s, &deps).expect_err("must deadlock");
    assert!(e.message.contains("deadlock"), "{e}");
    assert!(e.message.contains("same block"), "{e}");
}

#[test]
fn random_task_reorders_are_refused_exactly_when_they_invert_a_wait() {
    let (steps, deps) = stencil_fold_broadcast();
    let good = Schedule::round_robin(&steps, 5, &deps, CounterReset::Zeroed);
    let mut rng = SplitMix64::new(2201);
    let mut refused = 0;
    for _ in 0..200 {
        let mut s = good.clone();
        let b = (rng.next_u64() % 5) as usize;
        let n = s.blocks[b].len() as u64;
        let (i, j) = ((rng.next_u64() % n) as usize, (rng.next_u64() % n) as usize);
        let (i, j) = (i.min(j), i.max(j));
        s.blocks[b].swap(i, j);
        // Inverted: the task now first needs (directly or not) a task now after it on this
        // block. Steps are a chain here, so a later step's task after an earlier one's
        // inverts exactly when the earlier one is among its transitive producers; the
        // simulation decides, and a refusal must be a deadlock.
        match validate(&s, &deps) {
            Ok(()) => {}
            Err(e) => {
                refused += 1;
                assert!(e.message.contains("deadlock"), "{e}");
                assert!(s.blocks[b][i].step > s.blocks[b][j].step, "{e}");
            }
        }
    }
    assert!(refused > 0, "no random reorder was refused");
}

#[test]
fn waiting_on_a_later_step_or_a_missing_task_is_refused() {
    let (steps, deps) = stencil_fold_broadcast();
    let good = Schedule::round_robin(&steps, 7, &deps, CounterReset::Zeroed);
    let mut s = good.clone();
    s.waits.push(Wait {
        consumer: 1,
        producer: 2,
        producers: ProducerSet::All,
    });
    assert!(validate(&s, &deps).is_err());
    let mut s = good.clone();
    s.blocks[3].pop();
    assert!(validate(&s, &deps)
        .expect_err("missing")
        .message
        .contains("tasks are assigned"));
    let mut s = good;
    let t = s.blocks[1][0];
    s.blocks[2].push(t);
    assert!(validate(&s, &deps)
        .expect_err("twice")
        .message
        .contains("twice"));
}

#[test]
fn counters_left_from_the_previous_launch_are_refused() {
    let (steps, deps) = stencil_fold_broadcast();
    let s = Schedule::round_robin(&steps, 7, &deps, CounterReset::Kept);
    let e = validate(&s, &deps).expect_err("stale counters");
    assert!(e.message.contains("previous launch"), "{e}");
}

#[test]
fn the_plans_own_waits_validate() {
    // Neighbour read, then a one-workgroup total, then a broadcast of it: the plan's dataflow
    // waits, scheduled round robin, pass; each with one wait dropped does not.
    let next = r#"{"add": [{"gid": "x"}, 1]}"#;
    let gid = r#"{"gid": "x"}"#;
    let wg = [64u32, 1, 1];
    let scale = program(
        "scale",
        wg,
        &[("s", "read"), ("src", "read"), ("dst", "read_write")],
        r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"add": [
            {"load": "src", "index": {"gid": "x"}}, {"load": "s", "index": 0}]}}]"#,
    );
    let p = pipeline(vec![
        (copy("a", wg, gid, gid), &[("src", "x"), ("dst", "y")]),
        (copy("b", wg, next, gid), &[("src", "y"), ("dst", "z")]),
        (copy("t", wg, "5", "0"), &[("src", "z"), ("dst", "w")]),
        (scale, &[("s", "w"), ("src", "z"), ("dst", "x")]),
    ]);
    let g = shape(wg, [64, 1, 1]);
    let shapes = [g, g, shape(wg, [1, 1, 1]), g];
    let opts = PlanOptions::new(profiles::load("h200").expect("h200"));
    let pl = plan(&p, &shapes, &opts).expect("plan");
    assert_eq!(pl.groups.len(), 1);
    let grp = &pl.groups[0];
    let labels: Vec<SyncLabel> = grp.dataflow.boundaries.iter().map(|b| b.label).collect();
    assert!(labels.contains(&SyncLabel::Counter), "{labels:?}");
    let deps: Vec<TileDep> = grp
        .dataflow
        .boundaries
        .iter()
        .flat_map(|b| b.waits.clone())
        .collect();
    let steps: Vec<(usize, u64)> = grp
        .steps
        .iter()
        .map(|&s| (s, shapes[s].workgroups()))
        .collect();
    let s = Schedule::round_robin(&steps, grp.dataflow.blocks, &deps, CounterReset::Zeroed);
    validate(&s, &deps).expect("the plan's schedule");
    for i in 0..s.waits.len() {
        let mut m = s.clone();
        m.waits.remove(i);
        assert!(validate(&m, &deps).is_err(), "wait {i} dropped");
    }
}

/// The same pipeline with step 4 run by the last arriver of step 3 (no wait of its own).
fn with_fold(blocks: u32, reset: CounterReset) -> (Schedule, Vec<TileDep>) {
    let (steps, deps) = stencil_fold_broadcast();
    let emitted: Vec<TileDep> = deps.iter().filter(|d| d.to != 4).cloned().collect();
    let folds = [Fold { step: 4, after: 3 }];
    let s = Schedule::round_robin_with_folds(&steps, blocks, &emitted, reset, &folds);
    (s, deps)
}

#[test]
fn last_arriver_folds_pass_and_their_mutations_are_refused() {
    for blocks in [1, 2, 7, 40, 64] {
        let (s, deps) = with_fold(blocks, CounterReset::Zeroed);
        validate(&s, &deps).unwrap_or_else(|e| panic!("{blocks} blocks: {e}"));
        assert!(
            s.blocks.iter().flatten().all(|t| t.step != 4),
            "the fold has no block"
        );
        // Counters kept between launches: the second launch's fold never comes (or its
        // consumers pass on the first launch's flag).
        let mut kept = s.clone();
        kept.reset = CounterReset::Kept;
        let e = validate(&kept, &deps).expect_err("kept counters must be refused");
        assert!(
            e.message.contains("previous launch") || e.message.contains("never runs"),
            "{e}"
        );
        // No fold and no wait: step 4 is run by nobody.
        let mut none = s.clone();
        none.folds.clear();
        assert!(
            validate(&none, &deps).is_err(),
            "{blocks} blocks: a fold nobody runs"
        );
        // A fold after the wrong producer step does not cover step 4's dependence on step 3.
        let mut wrong = s.clone();
        wrong.folds[0].after = 2;
        assert!(
            validate(&wrong, &deps).is_err(),
            "{blocks} blocks: fold after step 2"
        );
        // A fold of a step with more than one workgroup.
        let mut wide = s.clone();
        wide.folds[0] = Fold { step: 5, after: 4 };
        assert!(
            validate(&wide, &deps).is_err(),
            "{blocks} blocks: fold of 40 workgroups"
        );
        // The fold also assigned to a block.
        let mut twice = s.clone();
        twice.blocks[0].push(Task {
            step: 4,
            workgroup: 0,
        });
        assert!(
            validate(&twice, &deps).is_err(),
            "{blocks} blocks: fold assigned twice"
        );
    }
}
