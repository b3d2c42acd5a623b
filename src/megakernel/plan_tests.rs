//! Unit tests of the planner: grouping, waves, barriers, fusion breaks and the JSON keys.

use super::*;
use crate::ir::Program;
use crate::megakernel::test_support::{copy, pipeline, program, shape};
use crate::occupancy::profiles;

const WG: [u32; 3] = [256, 1, 1];
const S: LaunchShape = LaunchShape {
    workgroup_size: WG,
    grid: [16, 1, 1],
};
const GID: &str = r#"{"gid": "x"}"#;
const NEXT: &str = r#"{"add": [{"gid": "x"}, 1]}"#;

fn h200() -> PlanOptions {
    PlanOptions::new(profiles::load("h200").expect("bundled h200"))
}

/// [`h200`] fusing as far as legal: the cost model runs chains of neighbour reads as
/// recomputed passes (`super::halo`), and these tests study the grouping of fused kernels.
fn h200_fused() -> PlanOptions {
    PlanOptions {
        decide: Decide::Fuse,
        ..h200()
    }
}

type StepDef<'a> = (Program, &'a [(&'a str, &'a str)]);

fn plan_of(steps: Vec<StepDef>, shapes: &[LaunchShape], opts: &PlanOptions) -> Plan {
    let p = pipeline(steps);
    plan(&p, shapes, opts).expect("plan")
}

/// A step with a workgroup buffer of `words` u32 staged through shared memory.
fn staged(name: &str, words: u32) -> Program {
    let mut p = program(
        name,
        WG,
        &[("src", "read"), ("dst", "read_write"), ("t", "workgroup")],
        r#"[{"store": "t", "index": {"lid": "x"}, "value": {"load": "src", "index": {"gid": "x"}}},
            {"barrier": "workgroup"},
            {"store": "dst", "index": {"gid": "x"}, "value": {"load": "t", "index": {"lid": "x"}}}]"#,
    );
    for b in &mut p.buffers {
        if b.name == "t" {
            b.count = Some(words);
        }
    }
    p
}

#[test]
fn elementwise_chain_is_one_launch_without_barriers() {
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, GID, GID), &[("src", "y"), ("dst", "z")]),
            (copy("c", WG, GID, GID), &[("src", "z"), ("dst", "w")]),
        ],
        &[S; 3],
        &h200(),
    );
    assert_eq!(plan.launches, 1);
    assert_eq!(plan.grid_barriers, 0);
    let g = &plan.groups[0];
    assert_eq!(g.kind, GroupKind::Launch);
    assert_eq!(g.waves, vec![vec![0], vec![1], vec![2]]);
    assert!(g.barriers.iter().all(|b| b.kind == DepKind::Invocation));
    assert_eq!(g.barriers[0].after_step, 0);
    assert!(plan.fusion_breaks.is_empty());
    let spec = g.spec();
    assert_eq!(spec.steps, vec![0, 1, 2]);
    assert_eq!(spec.separations.len(), 2);
    assert_eq!(spec.persistent_blocks, None);
}

#[test]
fn neighbour_read_needs_a_grid_barrier_in_a_megakernel() {
    let opts = h200_fused();
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, NEXT, GID), &[("src", "y"), ("dst", "z")]),
        ],
        &[S; 2],
        &opts,
    );
    assert_eq!(plan.launches, 1);
    assert_eq!(plan.grid_barriers, 1);
    let g = &plan.groups[0];
    assert_eq!(g.kind, GroupKind::Megakernel);
    assert_eq!(g.barriers[0].kind, DepKind::Grid);
    assert!(
        g.barriers[0].reason.contains("gid.x + 1"),
        "{}",
        g.barriers[0].reason
    );
    // 256 threads at 32 registers: 8 blocks per SM on the H200's 132 SMs.
    assert_eq!(g.coresident_blocks, 8 * opts.device.sm_count);
    assert_eq!(plan.coresident_blocks, g.coresident_blocks);
    assert_eq!(g.spec().persistent_blocks, Some(g.coresident_blocks));
}

#[test]
fn independent_steps_share_a_wave_and_grid_barriers_are_minimal() {
    // 0: x -> y; 1: y[gid+1] -> z (grid on 0); 2: x -> w (independent of both);
    // 3: reads z and w at gid (invocation on 1 and 2).
    let join = program(
        "d",
        WG,
        &[("p", "read"), ("q", "read"), ("dst", "read_write")],
        r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"add": [
            {"load": "p", "index": {"gid": "x"}}, {"load": "q", "index": {"gid": "x"}}]}}]"#,
    );
    let mut p = pipeline(vec![
        (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
        (copy("b", WG, NEXT, GID), &[("src", "y"), ("dst", "z")]),
        (copy("c", WG, GID, GID), &[("src", "x"), ("dst", "w")]),
        (join, &[("p", "z"), ("q", "w"), ("dst", "x")]),
    ]);
    p.buffers[0].transient = false;
    let plan = plan(&p, &[S; 4], &h200()).unwrap();
    assert_eq!(plan.grid_barriers, 1, "{plan:#?}");
    let g = &plan.groups[0];
    // Steps run in pipeline order; step 2 (independent of 1) shares step 1's wave. Step 3
    // writes x, which steps 0 and 2 read at gid: invocation, same segment as step 1.
    assert_eq!(g.waves, vec![vec![0], vec![1, 2], vec![3]]);
    assert_eq!(g.steps, vec![0, 1, 2, 3]);
    assert_eq!(g.barriers[0].kind, DepKind::Grid);
    assert_eq!(g.barriers[0].after_step, 0);
    assert_eq!(g.barriers[1].kind, DepKind::Invocation);
    assert_eq!(g.barriers[1].after_step, 2);
    let spec = g.spec();
    let kinds: Vec<DepKind> = spec.separations.iter().map(|s| s.kind).collect();
    assert_eq!(
        kinds,
        vec![DepKind::Grid, DepKind::None, DepKind::Invocation]
    );
}

#[test]
fn reversed_tile_gets_a_workgroup_barrier() {
    let rev = r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"sub": [255, {"lid": "x"}]}]}"#;
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, rev, GID), &[("src", "y"), ("dst", "z")]),
        ],
        &[S; 2],
        &h200(),
    );
    let g = &plan.groups[0];
    assert_eq!(g.kind, GroupKind::Launch);
    assert_eq!(g.barriers.len(), 1);
    assert_eq!(g.barriers[0].kind, DepKind::Workgroup);
    assert_eq!(plan.grid_barriers, 0);
}

#[test]
fn workgroup_barriers_are_shared_by_overlapping_dependences() {
    // 0 -> 1 invocation, 1 -> 2 invocation, 0 -> 2 workgroup (2 reads 0's output reversed):
    // one workgroup barrier (before step 2) covers it; 0 -> 1 needs none.
    let rev = r#"{"add": [{"mul": [{"wgid": "x"}, 256]}, {"sub": [255, {"lid": "x"}]}]}"#;
    let last = program(
        "c",
        WG,
        &[("p", "read"), ("q", "read"), ("dst", "read_write")],
        &format!(
            r#"[{{"store": "dst", "index": {GID}, "value": {{"add": [
            {{"load": "p", "index": {rev}}}, {{"load": "q", "index": {GID}}}]}}}}]"#
        ),
    );
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, GID, GID), &[("src", "y"), ("dst", "z")]),
            (last, &[("p", "y"), ("q", "z"), ("dst", "w")]),
        ],
        &[S; 3],
        &h200(),
    );
    let kinds: Vec<DepKind> = plan.groups[0].barriers.iter().map(|b| b.kind).collect();
    assert_eq!(kinds, vec![DepKind::Invocation, DepKind::Workgroup]);
}

#[test]
fn different_workgroup_sizes_share_one_launch() {
    let small = [128, 1, 1];
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", small, GID, GID), &[("src", "y"), ("dst", "z")]),
        ],
        &[S, shape(small, [32, 1, 1])],
        &h200(),
    );
    assert_eq!(plan.launches, 1, "{:?}", plan.fusion_breaks);
    let g = &plan.groups[0];
    assert!(g.mixed_workgroup_sizes());
    assert_eq!(g.workgroup_size, [256, 1, 1]);
    assert_eq!(g.step_workgroup_sizes, vec![WG, small]);
    // Steps of different launch shapes: the dependence is `grid`, so is the separation.
    assert_eq!(g.barriers.len(), 1);
    assert_eq!(g.barriers[0].kind, DepKind::Grid);
    assert_eq!(g.kind, GroupKind::Megakernel);
    // The spec fused emission gets keeps that grid barrier.
    assert_eq!(g.spec().separations[0].kind, DepKind::Grid);
}

#[test]
fn mixed_sizes_without_dependence_need_no_barrier() {
    let small = [32, 1, 1];
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", small, GID, GID), &[("src", "z"), ("dst", "w")]),
        ],
        &[S, shape(small, [4, 1, 1])],
        &h200(),
    );
    assert_eq!(plan.launches, 1);
    assert_eq!(plan.grid_barriers, 0);
    assert_eq!(plan.groups[0].kind, GroupKind::Launch);
    assert!(plan.groups[0].mixed_workgroup_sizes());
}

#[test]
fn unmappable_mixed_sizes_break_fusion() {
    // A multi-dimensional workgroup next to a one-dimensional one.
    let square = [16, 16, 1];
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", square, "0", "0"), &[("src", "y"), ("dst", "z")]),
        ],
        &[S, shape(square, [1, 1, 1])],
        &h200(),
    );
    assert_eq!(plan.launches, 2);
    assert_eq!(plan.fusion_breaks[0].step, 1);
    assert!(
        plan.fusion_breaks[0].reason.contains("multi-dimensional"),
        "{}",
        plan.fusion_breaks[0].reason
    );
    // A 48-thread step with a subgroup reduction in a block of 256.
    let sub = program(
        "sub",
        [48, 1, 1],
        &[("src", "read"), ("dst", "read_write")],
        r#"[{"store": "dst", "index": {"gid": "x"}, "value": {"subgroup_reduce": "add", "value": {"load": "src", "index": {"gid": "x"}}}}]"#,
    );
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (sub, &[("src", "y"), ("dst", "z")]),
        ],
        &[S, shape([48, 1, 1], [10, 1, 1])],
        &h200(),
    );
    assert_eq!(plan.launches, 2);
    let why = &plan.fusion_breaks[0].reason;
    assert!(why.contains("step 1") && why.contains("subgroup"), "{why}");
}

#[test]
fn shared_memory_over_the_block_limit_breaks_fusion() {
    // Two steps of 120 KiB each: together beyond the H200's 227 KiB per block.
    let words = 120 * 1024 / 4;
    let plan = plan_of(
        vec![
            (staged("a", words), &[("src", "x"), ("dst", "y")]),
            (staged("b", words), &[("src", "y"), ("dst", "z")]),
        ],
        &[S; 2],
        &h200(),
    );
    assert_eq!(plan.launches, 2);
    assert!(
        plan.fusion_breaks[0].reason.contains("shared memory"),
        "{:?}",
        plan.fusion_breaks
    );
    assert_eq!(plan.shared_bytes, 120 * 1024);
}

#[test]
fn occupancy_cut_breaks_fusion_but_an_already_low_step_does_not() {
    // 60 KiB each: 3 blocks per SM alone (37.5%), 1 block fused (12.5%) -> break.
    let words = 60 * 1024 / 4;
    let plan = plan_of(
        vec![
            (staged("a", words), &[("src", "x"), ("dst", "y")]),
            (staged("b", words), &[("src", "y"), ("dst", "z")]),
        ],
        &[S; 2],
        &h200(),
    );
    assert_eq!(plan.launches, 2, "{plan:#?}");
    assert!(
        plan.fusion_breaks[0].reason.contains("occupancy"),
        "{:?}",
        plan.fusion_breaks
    );
}

#[test]
fn heavy_registers_break_fusion_with_a_light_step_but_not_with_another_heavy_one() {
    let steps = || -> Vec<StepDef> {
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, GID, GID), &[("src", "y"), ("dst", "z")]),
        ]
    };
    // 255 registers x 256 threads: one block per SM (12.5%); the light step alone 100%.
    let mut opts = h200();
    opts.registers = vec![Some(24), Some(255)];
    let plan = plan_of(steps(), &[S; 2], &opts);
    assert_eq!(plan.launches, 2);
    let why = &plan.fusion_breaks[0].reason;
    assert!(
        why.contains("12.5%") && why.contains("255 registers"),
        "{why}"
    );
    // Both heavy: each already at 12.5% alone, fusing loses nothing.
    opts.registers = vec![Some(255), Some(255)];
    let plan = plan_of(steps(), &[S; 2], &opts);
    assert_eq!(plan.launches, 1, "{:?}", plan.fusion_breaks);
    assert_eq!(plan.groups[0].registers, 255);
    // A lower threshold accepts the light + heavy fusion.
    opts.registers = vec![Some(24), Some(255)];
    opts.min_occupancy_pct = 10.0;
    assert_eq!(plan_of(steps(), &[S; 2], &opts).launches, 1);
}

#[test]
fn a_step_with_its_own_grid_barrier_stays_alone() {
    let gb = program(
        "g",
        WG,
        &[("src", "read"), ("dst", "read_write")],
        r#"[{"store": "dst", "index": {"gid": "x"}, "value": 1},
            {"barrier": "grid"},
            {"store": "dst", "index": {"gid": "x"}, "value": {"load": "src", "index": {"gid": "x"}}}]"#,
    );
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (gb, &[("src", "y"), ("dst", "z")]),
            (copy("c", WG, GID, GID), &[("src", "z"), ("dst", "w")]),
        ],
        &[S; 3],
        &h200(),
    );
    assert_eq!(plan.launches, 3);
    assert_eq!(plan.fusion_breaks.len(), 2);
    assert!(plan
        .fusion_breaks
        .iter()
        .all(|b| b.reason.contains("own grid barrier")));
}

#[test]
fn no_cooperative_launch_breaks_at_grid_dependences() {
    let mut opts = h200_fused();
    opts.device.cooperative_launch = false;
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, GID, GID), &[("src", "y"), ("dst", "z")]),
            (copy("c", WG, NEXT, GID), &[("src", "z"), ("dst", "w")]),
        ],
        &[S; 3],
        &opts,
    );
    assert_eq!(plan.launches, 2);
    assert_eq!(plan.groups[0].steps, vec![0, 1]);
    assert!(plan.fusion_breaks[0].reason.contains("cooperative"));
    assert_eq!(plan.grid_barriers, 0);
}

#[test]
fn json_has_the_spec_keys() {
    let plan = plan_of(
        vec![
            (copy("a", WG, GID, GID), &[("src", "x"), ("dst", "y")]),
            (copy("b", WG, NEXT, GID), &[("src", "y"), ("dst", "z")]),
        ],
        &[S; 2],
        &h200_fused(),
    );
    let v = serde_json::to_value(&plan).unwrap();
    for key in [
        "pipeline",
        "groups",
        "grid_barriers",
        "launches",
        "fusion_breaks",
        "coresident_blocks",
        "shared_bytes",
        "cache",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["cache"], "miss");
    assert_eq!(v["grid_barriers"], 1);
    let g = &v["groups"][0];
    assert_eq!(g["kind"], "megakernel");
    assert_eq!(g["steps"], serde_json::json!([0, 1]));
    assert_eq!(g["waves"], serde_json::json!([[0], [1]]));
    assert_eq!(g["barriers"][0]["after_step"], 0);
    assert_eq!(g["barriers"][0]["kind"], "grid");
    assert!(g["barriers"][0]["reason"].as_str().unwrap().contains("y"));
    let back: Plan = serde_json::from_value(v).unwrap();
    assert_eq!(back, plan);
}

#[test]
fn empty_pipeline_and_wrong_shapes_are_errors() {
    let mut p = pipeline(vec![(
        copy("a", WG, GID, GID),
        &[("src", "x"), ("dst", "y")],
    )]);
    let e = plan(&p, &[S, S], &h200()).unwrap_err();
    assert!(e.to_string().contains("Fix:"), "{e}");
    p.steps.clear();
    let e = plan(&p, &[], &h200()).unwrap_err();
    assert!(matches!(e, PlanError::Empty(_)));
}

/// Every (src, dst) binding of two different pipeline buffers.
const PAIRS: [[(&str, &str); 2]; 12] = [
    [("src", "x"), ("dst", "y")],
    [("src", "x"), ("dst", "z")],
    [("src", "x"), ("dst", "w")],
    [("src", "y"), ("dst", "x")],
    [("src", "y"), ("dst", "z")],
    [("src", "y"), ("dst", "w")],
    [("src", "z"), ("dst", "x")],
    [("src", "z"), ("dst", "y")],
    [("src", "z"), ("dst", "w")],
    [("src", "w"), ("dst", "x")],
    [("src", "w"), ("dst", "y")],
    [("src", "w"), ("dst", "z")],
];

#[test]
fn random_plans_separate_every_dependence_enough() {
    use crate::inputs::prng::SplitMix64;
    let idx = [
        GID,
        NEXT,
        r#"{"add": [{"mul": [{"wgid": "x"}, 128]}, {"sub": [127, {"lid": "x"}]}]}"#,
    ];
    let mut grid_seen = 0;
    for seed in 0..300u64 {
        let mut rng = SplitMix64::new(seed);
        let mut pick = |n: usize| (rng.next_u64() % n as u64) as usize;
        let n = 2 + pick(5);
        let mut steps: Vec<StepDef> = Vec::new();
        let mut shapes = Vec::new();
        for i in 0..n {
            // Mostly 128-thread workgroups so that groups get long; some 64 to break them.
            let wgx = if pick(6) == 0 { 64 } else { 128 };
            let bind: &[(&str, &str)] = &PAIRS[pick(PAIRS.len())];
            steps.push((
                copy(&format!("s{i}"), [wgx, 1, 1], idx[pick(3)], idx[pick(3)]),
                bind,
            ));
            // Some steps cover only half the buffer: another grid, the same workgroup size.
            let groups = if pick(5) == 0 { 2048 / wgx } else { 4096 / wgx };
            shapes.push(shape([wgx, 1, 1], [groups, 1, 1]));
        }
        let p = pipeline(steps);
        let deps = analyse(&p, &shapes).unwrap();
        let plan = plan(&p, &shapes, &h200()).unwrap();
        // Groups cover the steps in order, each a contiguous range.
        let mut covered: Vec<usize> = Vec::new();
        for g in &plan.groups {
            let mut s = g.steps.clone();
            s.sort();
            assert_eq!(s.first().copied(), Some(covered.len()), "seed {seed}");
            covered.extend(s);
        }
        assert_eq!(covered, (0..n).collect::<Vec<_>>(), "seed {seed}");
        let mut grid = 0;
        for g in &plan.groups {
            let spec = g.spec();
            assert_eq!(spec.separations.len() + 1, spec.steps.len());
            // Fused emission accepts every group the planner makes.
            if let Err(e) = crate::megakernel::fuse_group(&p, &shapes, &spec) {
                panic!("seed {seed}: fuse_group refused {spec:?}: {e:?}");
            }
            grid += spec
                .separations
                .iter()
                .filter(|s| s.kind == DepKind::Grid)
                .count();
            let pos = |s: usize| spec.steps.iter().position(|&x| x == s).unwrap();
            for (ia, &a) in g.steps.iter().enumerate() {
                for &b in &g.steps[ia + 1..] {
                    let (a, b) = (a.min(b), a.max(b));
                    let k = deps.kind(a, b);
                    if k == DepKind::None {
                        continue;
                    }
                    let (pa, pb) = (pos(a), pos(b));
                    assert!(
                        pa < pb,
                        "seed {seed}: step {b} runs before {a} it depends on"
                    );
                    let strongest = spec.separations[pa..pb]
                        .iter()
                        .map(|s| s.kind)
                        .max()
                        .unwrap_or(DepKind::None);
                    let needed = if k == DepKind::Invocation {
                        DepKind::None
                    } else {
                        k
                    };
                    assert!(
                        strongest >= needed,
                        "seed {seed}: {a} -> {b} is {k:?} but only {strongest:?} between them: {plan:#?}"
                    );
                }
            }
        }
        assert_eq!(grid, plan.grid_barriers, "seed {seed}");
        grid_seen += grid;
    }
    assert!(
        grid_seen > 20,
        "the random pipelines never needed a grid barrier"
    );
}

/// A 256-wide step after a 1024-wide one: packed 4 to a block it has four workgroups in
/// flight per resident block, so the model predicts the fused kernel faster than with the
/// same step masked (here kept from packing by reading `lane`, which costs nothing else).
#[test]
fn a_packed_step_is_predicted_faster_than_a_masked_one() {
    let big = [1024, 1, 1];
    let opts = PlanOptions {
        sync: SyncMode::Barrier,
        decide: Decide::Fuse,
        ..h200()
    };
    let with = |src: &str| {
        plan_of(
            vec![
                (copy("a", big, GID, GID), &[("src", "x"), ("dst", "y")]),
                (copy("b", WG, src, GID), &[("src", "y"), ("dst", "z")]),
            ],
            &[shape(big, [4, 1, 1]), shape(WG, [4096, 1, 1])],
            &opts,
        )
    };
    let packed = with(NEXT);
    let masked = with(r#"{"add": [{"gid": "x"}, {"lane": {}}]}"#);
    let layout = |p: &Plan| p.groups[0].step_layouts[1].clone();
    assert_eq!(layout(&packed).packed(), Some(4), "{:?}", layout(&packed));
    assert!(
        matches!(&layout(&masked), super::super::mixed::StepLayout::Masked { reason, .. } if reason.contains("lane")),
        "{:?}",
        layout(&masked)
    );
    let (p, m) = (packed.decisions[0].fused_us, masked.decisions[0].fused_us);
    // 4096 workgroups over 264 resident 1024-thread blocks: 16 waves masked, 4 packed.
    assert!(p + 10.0 < m, "packed {p} us, masked {m} us");
}
