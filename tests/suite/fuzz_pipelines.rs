//! The pipeline generator of `selftest --fuzz-pipelines` and its CPU-side check: generated
//! pipelines are the same for the same seed, validate, plan, and their fused kernels run on
//! the reference interpreter (in barrier and in dataflow form) end bit for bit like the steps
//! run one by one; their clamped, periodic and ping-pong stencils get `window+boundary` and
//! implied waits. Also the `hist_equalize` fixture: one launch of mixed workgroup sizes,
//! equal to the host result.

use std::path::Path;

use vyrescope::gen::random_pipeline;
use vyrescope::harness::fuzz_pipelines::{
    fused_on_interpreter, fused_on_interpreter_in, pipeline_json, write_pipeline_case,
};
use vyrescope::inputs::pipeline::prepare_pipeline;
use vyrescope::interp;
use vyrescope::ir::{load_pipeline, parse_pipeline, Pipeline, StmtKind, SyncOp};
use vyrescope::megakernel::dataflow::SyncMode;
use vyrescope::megakernel::fuse_group;
use vyrescope::megakernel::mixed::packing_needs;
use vyrescope::megakernel::plan::Plan;
use vyrescope::occupancy::profiles;
use vyrescope::validate::pipeline::has_error;
use vyrescope::validate::pipeline::validate_pipeline;

#[test]
fn generator_is_deterministic_per_seed() {
    for seed in [0u64, 1, 77, u64::MAX] {
        let a = pipeline_json(&random_pipeline(seed).unwrap()).unwrap();
        let b = pipeline_json(&random_pipeline(seed).unwrap()).unwrap();
        assert_eq!(a, b, "seed {seed}");
    }
    let a = pipeline_json(&random_pipeline(5).unwrap()).unwrap();
    let b = pipeline_json(&random_pipeline(6).unwrap()).unwrap();
    assert_ne!(a, b);
}

/// Groups of `plan` in dataflow form: (those whose kernel issues loads ahead of a wait
/// (`fN_preJ_T` lets), those where a packed step waits once for all its sub-tasks (a wait
/// whose span is above 1)).
fn dataflow_features(p: &Pipeline, plan: &Plan) -> (usize, usize) {
    let prepared = prepare_pipeline(p, &std::env::temp_dir()).expect("prepare");
    let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
    let (mut prefetching, mut packed_waits) = (0, 0);
    for g in plan.groups.iter().filter(|g| g.runs_dataflow()) {
        let k = fuse_group(p, &shapes, &g.spec_for(SyncMode::Dataflow)).expect("fuses");
        let (mut pre, mut packed) = (false, false);
        k.program.walk_stmts(&mut |s| match &s.kind {
            StmtKind::Let { name, .. } => pre |= name.starts_with('f') && name.contains("_pre"),
            StmtKind::Sync(SyncOp::Wait { span, .. }) => packed |= *span > 1,
            _ => {}
        });
        prefetching += usize::from(pre);
        packed_waits += usize::from(packed);
    }
    (prefetching, packed_waits)
}

#[test]
fn generated_pipelines_validate_plan_and_fuse_exactly() {
    let caps = profiles::load("h200").unwrap();
    let (mut mixed, mut fused_steps, mut steps, mut barriers) = (0, 0, 0, 0);
    let (mut dataflow, mut prefetched, mut packed_waits) = (0, 0, 0);
    let (mut stencils, mut stencils_dataflow) = (0, 0);
    for seed in 0..240u64 {
        let p = random_pipeline(0xfeed_0000 + seed).unwrap();
        let has_stencil = (0..p.steps.len()).any(|s| stencil_kind(&p, s).is_some());
        let diags = validate_pipeline(&p);
        assert!(!has_error(&diags), "seed {seed}: {diags:?}");
        let plan = fused_on_interpreter(&p, &caps).unwrap_or_else(|e| {
            panic!(
                "seed {seed}: {e}\n{}",
                pipeline_json(&p).unwrap_or_default()
            )
        });
        steps += p.steps.len();
        fused_steps += plan
            .groups
            .iter()
            .filter(|g| g.steps.len() > 1)
            .map(|g| g.steps.len())
            .sum::<usize>();
        mixed += plan
            .groups
            .iter()
            .filter(|g| g.mixed_workgroup_sizes())
            .count();
        barriers += plan.grid_barriers;
        stencils += usize::from(has_stencil);
        // The same groups in dataflow form: counters, flags and last-arriver folds, and the
        // stencils' window+boundary and implied waits.
        if seed % 2 == 0 && plan.groups.iter().any(|g| g.runs_dataflow()) {
            let df = fused_on_interpreter_in(&p, &caps, SyncMode::Dataflow).unwrap_or_else(|e| {
                panic!(
                    "seed {seed}: {e}\n{}",
                    pipeline_json(&p).unwrap_or_default()
                )
            });
            dataflow += 1;
            stencils_dataflow += usize::from(has_stencil);
            let (pre, packed) = dataflow_features(&p, &df);
            prefetched += pre;
            packed_waits += packed;
        }
    }
    eprintln!(
        "{steps} steps, {fused_steps} fused, {mixed} mixed-size groups, {barriers} grid \
         barriers; {dataflow} pipelines in dataflow form ({prefetched} prefetching groups, \
         {packed_waits} with packed steps that wait); {stencils} pipelines with stencils, \
         {stencils_dataflow} of them in dataflow form"
    );
    assert!(
        dataflow >= 40,
        "only {dataflow} pipelines ran in dataflow form"
    );
    assert!(
        stencils >= 120 && stencils_dataflow >= 50,
        "{stencils} pipelines with a clamped, periodic or ping-pong stencil, \
         {stencils_dataflow} of them in dataflow form"
    );
    // Loads issued ahead of a wait (fuse/prefetch.rs) are in some of them, so the exact
    // comparison above covers that rewrite too.
    assert!(prefetched >= 20, "only {prefetched} groups prefetch");
    // Packed steps in dataflow form wait at trip level, once for all their sub-tasks
    // (`SyncOp::Wait::span`): the exact comparison above covers those windows too.
    assert!(
        packed_waits >= 30,
        "only {packed_waits} dataflow groups with a packed step that waits"
    );
    // The generator must exercise what it is for: fusion, mixed sizes, grid barriers.
    assert!(mixed >= 100, "only {mixed} mixed-size groups");
    assert!(
        fused_steps * 2 >= steps,
        "{fused_steps} of {steps} steps fused"
    );
    assert!(barriers >= 100, "{barriers} grid barriers");
}

#[test]
fn written_pipelines_read_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let caps = profiles::load("h200").unwrap();
    for seed in [3u64, 0xdead_beef] {
        let p = random_pipeline(seed).unwrap();
        let plan = fused_on_interpreter(&p, &caps).unwrap();
        let f = write_pipeline_case(&dir.path().join("out"), seed, &p, Some(&plan)).unwrap();
        let back = load_pipeline(&f).unwrap();
        assert_eq!(pipeline_json(&back).unwrap(), pipeline_json(&p).unwrap());
        let plan_file = f.with_extension("plan.json");
        let text = std::fs::read_to_string(&plan_file).unwrap();
        assert!(text.contains("\"groups\""), "{text}");
        // Unwritable destination: a clear error with a fix.
        let file = dir.path().join("plain");
        std::fs::write(&file, b"x").unwrap();
        let e = write_pipeline_case(&file, seed, &p, None).unwrap_err();
        assert!(e.to_string().contains("Fix: pass --out DIR"), "{e}");
        assert_eq!(e.fix, "pass --out DIR with a writable folder");
    }
}

#[test]
fn hist_equalize_fixture_is_one_mixed_launch_and_exact() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/hist_equalize.json");
    let p = load_pipeline(&path).unwrap();
    let caps = profiles::load("h200").unwrap();
    let plan = fused_on_interpreter(&p, &caps).unwrap();
    assert_eq!(plan.launches, 1, "{:?}", plan.fusion_breaks);
    assert!(plan.groups[0].mixed_workgroup_sizes());
    assert_eq!(plan.groups[0].workgroup_size, [256, 1, 1]);

    // The host computation from the fixture's (random) input.
    let mut done = prepare_pipeline(&p, path.parent().unwrap()).unwrap();
    let u32s = |name: &str, pp: &vyrescope::inputs::pipeline::PreparedPipeline| -> Vec<u32> {
        let b = pp.buffers.iter().find(|b| b.name == name).unwrap();
        b.data
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    let x = u32s("x", &done);
    assert_eq!(x.len(), 1 << 20);
    assert!(x.iter().any(|&v| v > 1 << 20), "random input expected");
    interp::pipeline::run_pipeline(&p, &mut done, &interp::Options::default()).unwrap();
    let mut hist = [0u32; 256];
    for &v in &x {
        hist[(v & 255) as usize] += 1;
    }
    assert_eq!(u32s("hist", &done), hist.to_vec());
    let mut cdf = [0u32; 256];
    let mut acc = 0;
    for (c, h) in cdf.iter_mut().zip(hist) {
        acc += h;
        *c = acc;
    }
    assert_eq!(u32s("cdf", &done), cdf.to_vec());
    let want: Vec<u32> = x
        .iter()
        .map(|&v| cdf[(v & 255) as usize].wrapping_mul(255) / x.len() as u32)
        .collect();
    assert_eq!(u32s("y", &done), want);
    // Parses again from its own text (the inline form `selftest` writes is not used here).
    let text = std::fs::read_to_string(&path).unwrap();
    parse_pipeline(&text, "hist_equalize.json", path.parent().unwrap()).unwrap();
}

/// `scan_1024_middle` fused whole (steps of 256, 1024 and 256 threads): its first step (a
/// shared-memory scan with workgroup barriers, packed with sub-task barriers and a tile per
/// sub-task) and its last (elementwise) run packed 4 x 256 in both sync forms, and both forms
/// end bit for bit like the steps one by one on the interpreter.
#[test]
fn scan_1024_middle_fixture_fused_with_a_packed_step_is_exact() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/scan_1024_middle.json");
    let p = load_pipeline(&path).unwrap();
    let caps = profiles::load("h200").unwrap();
    for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
        let plan = fused_on_interpreter_in(&p, &caps, sync).unwrap();
        assert_eq!(plan.launches, 1, "{sync:?}: {:?}", plan.fusion_breaks);
        let packed: Vec<Option<u32>> = plan.groups[0]
            .step_layouts
            .iter()
            .map(|l| l.packed())
            .collect();
        assert_eq!(packed, vec![Some(4), None, Some(4)], "{sync:?}");
    }
}

/// A last-arriver fold runs on whichever block arrives last, not on the block its virtual
/// workgroup 0 would have: every dependence on or of a fold step must therefore be a real
/// wait (or the fold itself), never left block-local. Generated pipelines 12, 24, 246, 347,
/// 391 and 490 (seed 1 of `selftest --fuzz-pipelines 500` on an H200) had a fold followed by
/// a one-workgroup step with a workgroup dependence on it that ran on block 0 without
/// waiting, and differed on the GPU; the interpreter, which runs a dataflow kernel as one
/// whole-grid unit, could not see it.
#[test]
fn megakernel_dataflow_folds_wait_for_their_block_local_dependences() {
    use vyrescope::harness::fuzz_pipelines::plan_for;
    use vyrescope::ir::SyncOp;
    use vyrescope::megakernel::emitted::sync_ops;
    use vyrescope::megakernel::fuse_group;
    let caps = profiles::load("h200").unwrap();
    let mut folds_seen = 0;
    let seeds = [12u64, 24, 246, 347, 391, 490].into_iter().chain(0..160);
    for seed in seeds {
        let p = random_pipeline(seed).unwrap();
        let prepared = prepare_pipeline(&p, &std::env::temp_dir()).unwrap();
        let plan = plan_for(&p, &prepared, &caps).unwrap();
        let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
        for g in plan.groups.iter().filter(|g| g.runs_dataflow()) {
            let k = fuse_group(&p, &shapes, &g.spec_for(SyncMode::Dataflow)).unwrap();
            let mut waits = Vec::new();
            let mut folds = Vec::new();
            for op in sync_ops(&k) {
                match *op {
                    SyncOp::Wait {
                        consumer, producer, ..
                    } => waits.push((producer as usize, consumer as usize)),
                    SyncOp::Arrive { step, fold, .. } => folds.push((step as usize, fold as usize)),
                    SyncOp::Signal { .. } => {}
                }
            }
            folds_seen += folds.len();
            let is_fold = |s: usize| folds.iter().any(|f| f.1 == s);
            for d in plan
                .dependences
                .iter()
                .filter(|d| g.steps.contains(&d.from) && g.steps.contains(&d.to) && d.from < d.to)
            {
                if !(is_fold(d.from) || is_fold(d.to)) {
                    continue;
                }
                assert!(
                    chained(&waits, &folds, d.from, d.to),
                    "seed {seed}: step {} depends on step {} ({:?}: {}), one of them is a \
                     last-arriver fold, but it does not wait for it",
                    d.to,
                    d.from,
                    d.kind,
                    d.reason
                );
            }
        }
    }
    assert!(
        folds_seen > 6,
        "only {folds_seen} folds: the check saw too little"
    );
}

/// True when step `to` waits for step `from` in the emitted kernel, directly or through a
/// chain of waits and last-arriver folds (`from -> x -> ... -> to`): a dependence the plan's
/// transitive reduction leaves implied is ordered by such a chain whichever block runs each
/// step (the emitted-schedule check, run on every dataflow kernel, proves the producer sets
/// are covered). Generated pipeline 23 has one: a one-workgroup fold of a 3-workgroup step
/// followed by two one-workgroup steps, each the fold of the one before.
fn chained(waits: &[(usize, usize)], folds: &[(usize, usize)], from: usize, to: usize) -> bool {
    let edges: Vec<&(usize, usize)> = waits.iter().chain(folds).collect();
    let mut seen = vec![from];
    let mut todo = vec![from];
    while let Some(x) = todo.pop() {
        for &&(a, b) in &edges {
            if a == x && b <= to && !seen.contains(&b) {
                if b == to {
                    return true;
                }
                seen.push(b);
                todo.push(b);
            }
        }
    }
    false
}

/// The generator's stencils (its step names end in `clamped`, `periodic`, `shifted`; a
/// ping-pong run's start with `pingpong_`), by step.
fn stencil_kind(p: &Pipeline, s: usize) -> Option<&'static str> {
    let name = &p.steps[s].program.name;
    ["clamped", "periodic", "shifted"]
        .into_iter()
        .find(|k| name.ends_with(k))
}

fn in_ping_pong(p: &Pipeline, s: usize) -> bool {
    p.steps[s].program.name.contains("_pingpong_")
}

/// The generator covers the index forms the megakernel's dependence analysis reads as a
/// window plus boundary workgroups, and the plan reads them so: a clamped or periodic stencil
/// over an earlier step's output at the same workgroup size (equal tiles, more than one
/// workgroup) waits for a window plus boundary workgroups, never for all of the producer's
/// workgroups (labelled `window+boundary` where that is fewer than all of them); and the waits along a ping-pong run fused into one kernel are reduced (waits
/// two or more steps back are implied by the chain of waits between neighbours).
#[test]
fn generated_stencils_get_window_boundary_and_implied_waits() {
    use vyrescope::harness::fuzz_pipelines::plan_for;
    use vyrescope::megakernel::tiles::{ProducerSet, SyncLabel};
    let caps = profiles::load("h200").unwrap();
    let (mut clamped, mut periodic, mut runs, mut long_runs) = (0, 0, 0, 0);
    let (mut wb_clamped, mut wb_periodic) = (0, 0);
    let (mut implied_in_runs, mut reduced_runs, mut runs_alone) = (0, 0, 0);
    for seed in 0..160u64 {
        let p = random_pipeline(seed).unwrap();
        let prepared = prepare_pipeline(&p, &std::env::temp_dir()).unwrap();
        let shape = |s: usize| prepared.steps[s].shape;
        let run: Vec<usize> = (0..p.steps.len())
            .filter(|&s| in_ping_pong(&p, s))
            .collect();
        for s in 0..p.steps.len() {
            match stencil_kind(&p, s) {
                Some("clamped") => clamped += 1,
                Some("periodic") => periodic += 1,
                _ => {}
            }
        }
        if !run.is_empty() {
            runs += 1;
            assert!(
                (2..=8).contains(&run.len()),
                "seed {seed}: a ping-pong run of {} steps",
                run.len()
            );
            // Consecutive steps, alternating between two buffers.
            for w in run.windows(2) {
                let (a, b) = (&p.steps[w[0]], &p.steps[w[1]]);
                assert_eq!(w[1], w[0] + 1, "seed {seed}: the run is not consecutive");
                assert_eq!(a.bound("src"), b.bound("dst"), "seed {seed}: steps {w:?}");
                assert_eq!(a.bound("dst"), b.bound("src"), "seed {seed}: steps {w:?}");
            }
        }
        // Race-free steps: a stencil never reads the buffer it writes.
        for s in (0..p.steps.len()).filter(|&s| stencil_kind(&p, s).is_some()) {
            let st = &p.steps[s];
            assert_ne!(st.bound("src"), st.bound("dst"), "seed {seed}: step {s}");
            assert_ne!(st.bound("c"), st.bound("dst"), "seed {seed}: step {s}");
        }
        let plan = plan_for(&p, &prepared, &caps).unwrap();
        // The last step before `s` writing `buf`.
        let writer = |s: usize, buf: &str| {
            (0..s).rev().find(|&w| {
                let st = &p.steps[w];
                st.program.buffers.iter().any(|b| {
                    b.access != vyrescope::ir::Access::Read && st.bound(&b.name) == Some(buf)
                })
            })
        };
        let mut run_groups = std::collections::BTreeSet::new();
        let mut implied_here = 0;
        for (gi, g) in plan.groups.iter().enumerate() {
            for b in &g.dataflow.boundaries {
                for t in b.waits.iter().chain(&b.implied) {
                    let Some(kind @ ("clamped" | "periodic")) = stencil_kind(&p, t.to) else {
                        continue;
                    };
                    let src = p.steps[t.to].bound("src").unwrap();
                    let same_tiles = shape(t.from) == shape(t.to) && shape(t.to).grid[0] > 1;
                    if writer(t.to, src) != Some(t.from) || !same_tiles {
                        continue;
                    }
                    assert!(
                        matches!(t.producers, ProducerSet::WindowBoundary { .. }),
                        "seed {seed}: step {} ({kind}) reads what step {} wrote with the same \
                         tiles, but waits for {} ({})",
                        t.to,
                        t.from,
                        t.producers.describe(),
                        t.reason
                    );
                    // A window and edges that cover every producer workgroup (a grid of a
                    // few workgroups) are a barrier after all.
                    if t.label != SyncLabel::WindowBoundary {
                        continue;
                    }
                    if kind == "clamped" {
                        wb_clamped += 1;
                    } else {
                        wb_periodic += 1;
                    }
                }
                for t in &b.implied {
                    if run.contains(&t.from) && run.contains(&t.to) {
                        assert!(t.to >= t.from + 2, "seed {seed}: {t:?} implied");
                        implied_here += 1;
                        run_groups.insert(gi);
                    }
                }
            }
        }
        implied_in_runs += implied_here;
        // A run of 4 or more steps of one size in one kernel: step k + 3 reads what step k
        // wrote, a wait the chain k+3 -> k+2 -> k+1 -> k implies.
        let one_size = run.iter().all(|&s| shape(s) == shape(run[0]));
        let one_group = plan
            .groups
            .iter()
            .any(|g| g.runs_dataflow() && run.iter().all(|s| g.steps.contains(s)));
        if run.len() >= 4 && one_size && one_group && shape(run[0]).grid[0] > 1 {
            long_runs += 1;
            reduced_runs += usize::from(implied_here > 0);
            // The run alone: every step waits for the one before only.
            check_run_alone(seed, &p, &run, &caps);
            runs_alone += 1;
        }
    }
    eprintln!(
        "{clamped} clamped, {periodic} periodic stencil steps; {runs} ping-pong runs \
         ({long_runs} of 4+ steps in one dataflow kernel, {reduced_runs} with implied waits, \
         {implied_in_runs} implied waits); window+boundary waits: {wb_clamped} clamped, \
         {wb_periodic} periodic"
    );
    assert!(
        clamped >= 40 && periodic >= 40,
        "{clamped} clamped, {periodic} periodic"
    );
    assert!(runs >= 25, "only {runs} ping-pong runs");
    assert!(
        wb_clamped >= 10,
        "only {wb_clamped} clamped window+boundary waits"
    );
    assert!(
        wb_periodic >= 10,
        "only {wb_periodic} periodic window+boundary waits"
    );
    assert!(long_runs >= 10, "only {long_runs} long runs in one kernel");
    assert_eq!(runs_alone, long_runs);
    // In the whole pipeline the transitive reduction may spend its budget on the waits of
    // the steps before the run (all-to-all waits make its chain walk expensive) and keep
    // the rest; most runs are still reduced there.
    assert!(
        reduced_runs * 3 >= long_runs * 2,
        "{reduced_runs} of {long_runs} long ping-pong runs in one kernel have implied waits"
    );
}

/// The ping-pong run `run` of `p` as a pipeline of its own: one dataflow kernel in which each
/// step waits for the step before only (the waits further back are implied), and with at
/// least one implied wait.
fn check_run_alone(
    seed: u64,
    p: &Pipeline,
    run: &[usize],
    caps: &vyrescope::occupancy::DeviceCaps,
) {
    use vyrescope::harness::fuzz_pipelines::plan_for;
    let steps: Vec<_> = run.iter().map(|&s| p.steps[s].clone()).collect();
    let used = |name: &str| steps.iter().any(|s| s.bind.iter().any(|(_, b)| b == name));
    let alone = Pipeline {
        name: format!("{}_run", p.name),
        doc: None,
        buffers: p
            .buffers
            .iter()
            .filter(|b| used(&b.name))
            .cloned()
            .collect(),
        steps,
    };
    let prepared = prepare_pipeline(&alone, &std::env::temp_dir()).unwrap();
    let plan = plan_for(&alone, &prepared, caps).unwrap();
    assert_eq!(
        plan.groups.len(),
        1,
        "seed {seed}: the run alone is not one kernel"
    );
    let g = &plan.groups[0];
    assert!(
        g.runs_dataflow(),
        "seed {seed}: the run alone has no dataflow waits"
    );
    let mut implied = 0;
    for b in &g.dataflow.boundaries {
        for t in &b.waits {
            assert_eq!(
                t.from + 1,
                t.to,
                "seed {seed}: in the run alone, step {} waits for step {} (boundaries: {:?})",
                t.to,
                t.from,
                g.dataflow
                    .boundaries
                    .iter()
                    .map(|b| b.describe())
                    .collect::<Vec<_>>()
            );
        }
        implied += b.implied.len();
    }
    assert!(implied > 0, "seed {seed}: no implied wait in the run alone");
}

/// `selftest --fuzz-pipelines` without a GPU: the pipelines of seeds `S .. S + N` (the seeds
/// the selftest uses for `--seed S`; `VYRESCOPE_PIPELINE_SEED`, default 2001, and
/// `VYRESCOPE_PIPELINE_COUNT`, default 20), every fused kernel of the plan run on the
/// interpreter in barrier and in dataflow form against the steps one by one. CI runs 20 seeds
/// past the ones checked by hand (1-2000; 300 seeds take about 45 s on one core); more with
/// `VYRESCOPE_PIPELINE_COUNT=300 cargo test --test suite fuzz_pipelines_on_the_interpreter --
/// --nocapture`. Prints every failing seed, then fails.
#[test]
fn fuzz_pipelines_on_the_interpreter() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(default)
    };
    let (first, count) = (
        env("VYRESCOPE_PIPELINE_SEED", 2001),
        env("VYRESCOPE_PIPELINE_COUNT", 20),
    );
    let caps = profiles::load("h200").unwrap();
    let mut failures = Vec::new();
    let (mut dataflow, mut stencils, mut packed, mut packed_shared) = (0, 0, 0, 0);
    for seed in first..first.saturating_add(count) {
        let p = random_pipeline(seed).unwrap();
        stencils += usize::from((0..p.steps.len()).any(|s| stencil_kind(&p, s).is_some()));
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            match fused_on_interpreter_in(&p, &caps, sync) {
                Ok(plan) => {
                    dataflow += usize::from(
                        sync == SyncMode::Dataflow && plan.groups.iter().any(|g| g.runs_dataflow()),
                    );
                    // Steps that ran packed several workgroups to a block, and those of
                    // them with workgroup barriers or shared memory (sub-task barriers and a
                    // copy of each buffer per sub-task, `fuse::pack`).
                    for g in &plan.groups {
                        for (&k, l) in g.steps.iter().zip(&g.step_layouts) {
                            if l.packed().is_none() {
                                continue;
                            }
                            packed += 1;
                            let needs = packing_needs(&p.steps[k].program);
                            packed_shared += usize::from(needs.barriers || needs.shared_bytes > 0);
                        }
                    }
                }
                Err(e) => {
                    eprintln!("seed {seed} ({sync:?}): {e}");
                    failures.push((seed, sync));
                }
            }
        }
    }
    eprintln!(
        "{count} pipelines from seed {first} ({stencils} with stencils, {dataflow} with a \
         dataflow group, {packed} packed steps over both forms, {packed_shared} of them with \
         barriers or shared memory), {} mismatches or failures",
        failures.len()
    );
    assert!(failures.is_empty(), "failing: {failures:?}");
    // The block reductions (a shared tile, workgroup barriers) of the generator pack when a
    // larger step shares their group; 20 seeds hold several (a longer run scales).
    assert!(
        packed_shared * 20 >= count as usize * 2,
        "only {packed_shared} packed steps with barriers or shared memory in {count} pipelines"
    );
}

/// The three pipelines whose fused kernels faulted on an H100 (`CUDA_ERROR_ILLEGAL_INSTRUCTION`,
/// synccheck: "Divergent thread(s) in block"): packed steps of different sub-task sizes shared
/// hardware named barriers with no block barrier between them. Fused as the fuzzer fused them
/// (`--decide fuse`, the saved plan's groups), every kernel must now pass the validator (V074
/// refuses the old shape, so before the fix these groups failed to fuse) and equal the steps
/// run one by one on the interpreter.
#[test]
fn the_faulting_reproducers_fuse_validly_and_exactly() {
    let caps = profiles::load("h100").unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/megakernel-faults");
    for (name, sync) in [
        ("seed-20261226-dataflow", SyncMode::Dataflow),
        ("seed-20261450-dataflow", SyncMode::Dataflow),
        ("seed-20261333-barrier", SyncMode::Barrier),
    ] {
        let p = load_pipeline(&dir.join(format!("{name}.pipeline.json"))).unwrap();
        let saved: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.plan.json"))).unwrap(),
        )
        .unwrap();
        let plan =
            fused_on_interpreter_in(&p, &caps, sync).unwrap_or_else(|e| panic!("{name}: {e}"));
        let groups: Vec<Vec<usize>> = plan.groups.iter().map(|g| g.steps.clone()).collect();
        let want: Vec<Vec<usize>> = saved["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| serde_json::from_value(g["steps"].clone()).unwrap())
            .collect();
        assert_eq!(groups, want, "{name}: not the plan that faulted");
        // The faulting kernel's packed steps of different sizes are now separated.
        let prepared = prepare_pipeline(&p, &std::env::temp_dir()).expect("prepare");
        let shapes: Vec<_> = prepared.steps.iter().map(|s| s.shape).collect();
        for g in &plan.groups {
            let k = fuse_group(&p, &shapes, &g.spec_for(sync)).expect("fuses");
            let diags = vyrescope::validate::validate(&k.program);
            assert!(!diags.iter().any(|d| d.code == "V074"), "{name}: {diags:?}");
        }
    }
}
