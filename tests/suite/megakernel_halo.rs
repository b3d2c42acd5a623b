//! The recomputed (halo) form of chains of window steps (`megakernel::halo`):
//!
//! - every stencil fixture (1-D clamped, periodic and zero-padded, mixed radii, a Jacobi
//!   chain with a global right-hand side, a 2-D 5-point stencil) plans recomputed passes under
//!   `--decide recompute`, and each pass's kernel, as emitted, runs on the interpreter to the
//!   same final buffers as the steps one by one, bit for bit, from random inputs (several
//!   seeds);
//! - a pass whose halo is smaller than a step's reads is refused by the validator with a
//!   `Fix:`, and never fuses; so is a pass that reads from global memory what it writes;
//! - ptxas accepts every recomputed kernel;
//! - steps that are not window steps are never recomputed.

use std::path::{Path, PathBuf};

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::gen::random_window_chain;
use vyrescope::harness::fuzz_pipelines::recomputed_on_interpreter;
use vyrescope::inputs::pipeline::prepare_pipeline;
use vyrescope::inputs::LaunchShape;
use vyrescope::ir::{Fill, InputSource, Pipeline};
use vyrescope::megakernel::fuse_group;
use vyrescope::megakernel::halo::{check, window_step, HaloSpec};
use vyrescope::megakernel::plan::{plan, Decide, Plan, PlanOptions};
use vyrescope::occupancy::profiles;
use vyrescope::validate::pipeline::load_pipeline;

/// The fixtures with chains of window steps, and the `k` of their longest pass under
/// `--decide recompute`.
const STENCILS: [(&str, usize); 8] = [
    ("stencil_clamped", 3),
    ("stencil_periodic", 3),
    ("stencil_halo4", 3),
    ("stencil_pingpong", 3),
    ("stencil_pingpong8", 7),
    ("stencil_mixed_radii", 4),
    ("jacobi1d_8", 7),
    ("stencil2d_5pt", 3),
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/pipelines/{name}.json"))
}

fn load(name: &str) -> (Pipeline, Vec<LaunchShape>) {
    let path = fixture(name);
    let p = load_pipeline(&path)
        .pipeline
        .unwrap_or_else(|| panic!("{name}: invalid"));
    let prepared = prepare_pipeline(&p, path.parent().unwrap()).expect("prepare");
    let shapes = prepared.steps.iter().map(|s| s.shape).collect();
    (p, shapes)
}

fn recompute_plan(p: &Pipeline, shapes: &[LaunchShape]) -> Plan {
    let opts = PlanOptions {
        decide: Decide::Recompute,
        ..PlanOptions::new(profiles::load("h100").expect("bundled h100"))
    };
    plan(p, shapes, &opts).expect("plan")
}

/// Every buffer refilled with random values from `seed` (floats in [-4, 4)).
fn randomise(p: &mut Pipeline, seed: u64) {
    for (i, b) in p.buffers.iter_mut().enumerate() {
        b.contents.source = InputSource::Fill(Fill::Random {
            seed: seed.wrapping_mul(31).wrapping_add(i as u64),
            range: Some((-4.0, 4.0)),
        });
    }
}

#[test]
fn every_stencil_fixture_runs_recomputed_like_its_steps() {
    let caps = profiles::load("h100").unwrap();
    for (name, k) in STENCILS {
        let (base, _) = load(name);
        for seed in [1u64, 0x5eed, 977] {
            let mut p = base.clone();
            randomise(&mut p, seed);
            let plan = recomputed_on_interpreter(&p, &caps)
                .unwrap_or_else(|e| panic!("{name} seed {seed}: {e}"));
            let longest = plan
                .groups
                .iter()
                .filter_map(|g| g.halo.as_ref().map(|h| h.k))
                .max();
            assert_eq!(longest, Some(k), "{name}: {:#?}", plan.groups);
            for g in plan.groups.iter().filter_map(|g| g.halo.as_ref()) {
                assert!(g.recomputed_fraction > 0.0 && g.recomputed_fraction < 1.0);
                assert_eq!(g.halo.len(), g.k);
                assert_eq!(
                    g.halo.last(),
                    Some(&[0, 0]),
                    "{name}: the last step computes the tile"
                );
            }
        }
    }
}

#[test]
fn a_halo_smaller_than_a_steps_reads_is_refused() {
    for (name, _) in STENCILS {
        let (p, shapes) = load(name);
        let plan = recompute_plan(&p, &shapes);
        let g = plan
            .groups
            .iter()
            .find(|g| g.halo.is_some())
            .unwrap_or_else(|| panic!("{name}: no recomputed group"));
        let spec = g.spec();
        let good = spec.halo.clone().expect("halo spec");
        check(&p, &shapes, &g.steps, &good).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(fuse_group(&p, &shapes, &spec).is_ok(), "{name}");
        // Shrink each radius of each later step along each axis by one.
        let mut refused = 0;
        for i in 1..good.radius.len() {
            for axis in 0..2 {
                if good.radius[i][axis] == 0 {
                    continue;
                }
                let mut bad: HaloSpec = good.clone();
                bad.radius[i][axis] -= 1;
                let e = check(&p, &shapes, &g.steps, &bad)
                    .expect_err(&format!("{name}: step {i} axis {axis} shrunk"));
                assert!(e.message.contains("halo"), "{name}: {}", e.message);
                assert!(e.fix.contains("radius of at least"), "{name}: {}", e.fix);
                let mut spec = spec.clone();
                spec.halo = Some(bad);
                let f = fuse_group(&p, &shapes, &spec).expect_err("a too-small halo fuses");
                assert!(
                    f.message.contains("recomputed form is refused"),
                    "{}",
                    f.message
                );
                refused += 1;
            }
        }
        assert!(refused > 0, "{name}: no radius to shrink");
    }
}

#[test]
fn a_pass_that_reads_what_it_writes_is_refused() {
    // The 4-step clamped ping-pong a -> b -> a -> b -> a as one pass: its first step reads
    // `a` from global memory and its last writes `a`.
    let (p, shapes) = load("stencil_clamped");
    let spec = HaloSpec {
        domain: [20000, 1],
        tile: [1024, 1],
        threads: 256,
        radius: vec![[0, 0], [1, 0], [1, 0], [1, 0]],
    };
    let e = check(&p, &shapes, &[0, 1, 2, 3], &spec).expect_err("a conflicting pass");
    assert!(e.message.contains("from global memory"), "{}", e.message);
    assert!(e.fix.contains("odd number of steps"), "{}", e.fix);
    // A window larger than the domain.
    let mut big = spec.clone();
    big.radius.truncate(3);
    big.tile = [20000, 1];
    let e = check(&p, &shapes, &[0, 1, 2], &big).expect_err("too large a window");
    assert!(e.fix.contains("smaller tile"), "{}", e.fix);
}

#[test]
fn steps_that_are_not_window_steps_are_not_recomputed() {
    for name in [
        "softmax",
        "hist_equalize",
        "scan_1024_middle",
        "workgroup_rotate",
    ] {
        let (p, shapes) = load(name);
        let plan = recompute_plan(&p, &shapes);
        assert!(
            plan.groups.iter().all(|g| g.halo.is_none()),
            "{name}: {:#?}",
            plan.groups
        );
    }
    // Why, in the step's terms.
    let (p, shapes) = load("scan_1024_middle");
    let s = (0..p.steps.len())
        .find(|&s| {
            p.steps[s]
                .program
                .buffers
                .iter()
                .any(|b| !b.access.is_host())
        })
        .expect("a step with workgroup memory");
    let e = window_step(&p, &shapes, s).expect_err("a workgroup-memory step");
    assert!(e.message.contains(&format!("step {s}")), "{}", e.message);
    assert!(e.message.contains("workgroup memory"), "{}", e.message);
}

#[test]
fn ptxas_accepts_every_recomputed_kernel() {
    // Without ptxas (outside CI) only the PTX text is checked.
    let ptxas = crate::support::tools::ptxas("assembling the recomputed kernels");
    for (name, _) in STENCILS {
        let (p, shapes) = load(name);
        let plan = recompute_plan(&p, &shapes);
        for g in plan.groups.iter().filter(|g| g.halo.is_some()) {
            let k = fuse_group(&p, &shapes, &g.spec()).unwrap_or_else(|e| panic!("{name}: {e}"));
            let e = emit(&k.program, &EmitOptions::for_program(&k.program))
                .unwrap_or_else(|e| panic!("{name}: emit: {e}"));
            assert!(
                e.ptx.contains(".shared"),
                "{name}: the window is in shared memory"
            );
            assert!(e.ptx.contains("bar.sync"), "{name}: steps are separated");
            if let Some(ptxas) = &ptxas {
                assemble(ptxas, &e.ptx, 90, false)
                    .unwrap_or_else(|err| panic!("{name}: ptxas: {err}"));
            }
        }
    }
}

/// The pipeline fuzzer's chains of window steps (random k, radii, boundaries, 1-D and 2-D,
/// ping-pong or transient intermediates, f32 or u32), recomputed on the interpreter against
/// the steps one by one. More seeds: `VYRESCOPE_CHAIN_COUNT=500 cargo test --test suite
/// generated_window_chains -- --nocapture`.
#[test]
fn generated_window_chains_run_recomputed_like_their_steps() {
    let count = std::env::var("VYRESCOPE_CHAIN_COUNT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(60u64);
    let caps = profiles::load("h100").unwrap();
    let (mut passes, mut two_d, mut long) = (0, 0, 0);
    let mut failures = Vec::new();
    for seed in 0..count {
        let p = random_window_chain(seed).unwrap();
        match recomputed_on_interpreter(&p, &caps) {
            Ok(plan) => {
                for h in plan.groups.iter().filter_map(|g| g.halo.as_ref()) {
                    passes += 1;
                    two_d += usize::from(h.spec.domain[1] > 1);
                    long += usize::from(h.k >= 4);
                }
            }
            Err(e) => {
                eprintln!("seed {seed}: {e}");
                failures.push(seed);
            }
        }
    }
    assert!(failures.is_empty(), "failing seeds: {failures:?}");
    // The generator reaches the form's shapes: passes, 2-D ones and long ones.
    assert!(passes >= count as usize / 2, "{passes} recomputed passes");
    assert!(
        two_d > 0 && long > 0,
        "{two_d} 2-D passes, {long} of 4 steps or more"
    );
}

/// The timeline of a recomputed pass: one unit per step of the pass (each block records its
/// steps one after another), no waits.
#[test]
fn the_timeline_records_each_step_of_a_pass() {
    use vyrescope::emit::timeline::UnitKind;
    use vyrescope::megakernel::timeline::fused_spec;
    for (name, _) in STENCILS {
        let (p, shapes) = load(name);
        let plan = recompute_plan(&p, &shapes);
        for g in plan.groups.iter().filter(|g| g.halo.is_some()) {
            let k = fuse_group(&p, &shapes, &g.spec()).expect("fuses");
            let spec = fused_spec(&k);
            let steps: Vec<u32> = spec
                .units
                .iter()
                .filter(|u| u.kind == UnitKind::Step)
                .filter_map(|u| u.step)
                .collect();
            let want: Vec<u32> = g.steps.iter().map(|&s| s as u32).collect();
            assert_eq!(steps, want, "{name}: {:?}", spec.units);
            assert!(
                spec.units.iter().all(|u| matches!(u.kind, UnitKind::Step)),
                "{name}: {:?}",
                spec.units
            );
        }
    }
}

/// `plan` shows a recomputed pass in text (its tile, halo per step, k and recomputed share,
/// and why) and in `--json` (`groups[].halo`); `--decide fuse` never recomputes.
#[test]
fn plan_shows_the_tile_the_halo_and_the_recomputed_fraction() {
    let f = fixture("stencil_mixed_radii");
    let f = f.to_str().unwrap();
    let (code, out, err) = crate::support::cli::run(&[
        "plan",
        f,
        "--no-cache",
        "--device",
        "h100",
        "--decide",
        "recompute",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("launch (recomputed: one block per tile)"),
        "{out}"
    );
    // Radii 2, 1, 3, 1: the halo each step computes is the sum of the later steps' radii.
    assert!(out.contains("recomputed: k = 4, tile "), "{out}");
    assert!(out.contains("halo per step [5, 4, 1, 0]"), "{out}");
    assert!(out.contains("% of cells recomputed"), "{out}");
    assert!(out.contains("why: 4 steps per pass over"), "{out}");
    let (code, out, err) = crate::support::cli::run(&[
        "plan",
        f,
        "--no-cache",
        "--device",
        "h100",
        "--decide",
        "recompute",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let h = &v["groups"][0]["halo"];
    assert_eq!(h["k"], 4, "{h}");
    assert_eq!(
        h["spec"]["radius"],
        serde_json::json!([[0, 0], [1, 0], [3, 0], [1, 0]])
    );
    assert_eq!(
        h["halo"],
        serde_json::json!([[5, 0], [4, 0], [1, 0], [0, 0]])
    );
    let frac = h["recomputed_fraction"].as_f64().expect("a fraction");
    assert!(frac > 0.0 && frac < 0.5, "{h}");
    assert_eq!(v["launches"], 1, "{v}");
    let (code, out, err) = crate::support::cli::run(&[
        "plan",
        f,
        "--no-cache",
        "--device",
        "h100",
        "--decide",
        "fuse",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g.get("halo").is_none()),
        "{v}"
    );
}

/// A cached recomputed plan is used again only when its pass still passes the validator: an
/// entry edited to a smaller halo is a miss, planned afresh.
#[test]
fn an_edited_recomputed_plan_in_the_cache_is_never_used() {
    use vyrescope::megakernel::cache::{plan_cached, plan_key, PlanCache};
    use vyrescope::megakernel::plan::CacheStatus;
    let t = tempfile::tempdir().unwrap();
    let cache = PlanCache::at(t.path().join("plan"));
    let (p, shapes) = load("stencil_clamped");
    let opts = PlanOptions {
        decide: Decide::Recompute,
        ..PlanOptions::new(profiles::load("h100").unwrap())
    };
    let first = plan_cached(&p, &shapes, &opts, Some(&cache)).unwrap();
    assert!(first.plan.groups.iter().any(|g| g.halo.is_some()));
    let again = plan_cached(&p, &shapes, &opts, Some(&cache)).unwrap();
    assert_eq!(again.plan.cache, CacheStatus::Hit);
    let file = cache.path(plan_key(&p, &shapes, &opts));
    let mut entry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    for g in entry["plan"]["groups"].as_array_mut().unwrap() {
        if let Some(r) = g["halo"]["spec"]["radius"].as_array_mut() {
            for x in r.iter_mut() {
                *x = serde_json::json!([0, 0]);
            }
        }
    }
    std::fs::write(&file, serde_json::to_vec(&entry).unwrap()).unwrap();
    let edited = plan_cached(&p, &shapes, &opts, Some(&cache)).unwrap();
    assert_eq!(
        edited.plan.cache,
        CacheStatus::Miss,
        "the edited entry was used"
    );
    assert_eq!(edited.plan.groups, first.plan.groups);
}
