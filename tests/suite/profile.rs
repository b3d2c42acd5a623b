//! The per-statement profile (issue 50): the instrumented build of every Program fixture
//! validates, assembles and computes exactly what the plain build computes on the reference
//! interpreter, with reseeded random inputs; its table attributes the interpreter's
//! statement ticks to the right statements on hand-checked Programs.

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::{emit, EmitOptions};
use vyrescope::inputs::prng::SplitMix64;
use vyrescope::inputs::{prepare, HostBuffer};
use vyrescope::interp::{run_with, Options};
use vyrescope::ir::{parse_program, Fill, InputSource, Program};
use vyrescope::profile::report::{from_table, Lowering};
use vyrescope::profile::{instrument, Source};
use vyrescope::validate::validate;

use crate::support::fixtures::fixtures;

/// The fixture with every `random` fill given a new seed from `rng`.
fn reseeded(p: &Program, rng: &mut SplitMix64) -> Program {
    let mut p = p.clone();
    if let Some(run) = p.run.as_mut() {
        for (_, spec) in run.inputs.iter_mut() {
            if let InputSource::Fill(Fill::Random { seed, .. }) = &mut spec.source {
                *seed = rng.next_u64();
            }
        }
    }
    p
}

/// Runs `program` sequentially (float atomics then sum in one order) over `buffers`.
fn interpret(
    program: &Program,
    shape: &vyrescope::inputs::LaunchShape,
    buffers: &mut [HostBuffer],
) {
    let opts = Options {
        parallel: false,
        ..Options::default()
    };
    run_with(program, shape, buffers, &opts).unwrap_or_else(|e| panic!("{}: {e}", program.name));
}

#[test]
fn instrumented_build_of_every_fixture_validates_assembles_and_matches_the_plain_build() {
    let mut rng = SplitMix64::new(0x5eed_0050);
    let ptxas = crate::support::tools::ptxas("assembling the instrumented PTX");
    let mut checked = 0;
    for (path, fixture) in fixtures() {
        let p = reseeded(&fixture, &mut rng);
        let base = path.parent().expect("folder");
        let prepared = prepare(&p, base, None, None).expect("prepare");
        // Every workgroup timed, and a stride that skips some, must both leave outputs alone.
        for stride in [1, 3] {
            let inst = instrument(&p, stride).expect("instrument");
            let errors: Vec<_> = validate(&inst.program)
                .into_iter()
                .filter(|d| d.severity == vyrescope::finding::Severity::Error)
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", path.display());
            let mut plain = prepared.buffers.clone();
            interpret(&p, &prepared.shape, &mut plain);
            let mut with = prepared.buffers.clone();
            with.push(inst.table_buffer());
            interpret(&inst.program, &prepared.shape, &mut with);
            let table = inst.read_table(&with).expect("table");
            with.retain(|b| b.name != inst.table);
            assert_eq!(
                with,
                plain,
                "{}: outputs differ (stride {stride})",
                path.display()
            );
            assert!(
                table.iter().any(|&t| t > 0),
                "{}: no statement was timed",
                path.display()
            );
            if stride == 1 {
                let o = EmitOptions {
                    workgroup_size: prepared.shape.workgroup_size,
                    ..EmitOptions::for_program(&inst.program)
                };
                let k = emit(&inst.program, &o).expect("emit instrumented");
                assert!(k.ptx.contains("%clock64"), "{}", path.display());
                if let Some(ptxas) = &ptxas {
                    if let Err(e) = assemble(ptxas, &k.ptx, 90, false) {
                        panic!(
                            "{}: ptxas refused the instrumented PTX: {e}",
                            path.display()
                        );
                    }
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} fixtures");
}

/// A loop of known trip count: the table holds, per sampled thread, one tick per run of each
/// statement, the loop's slot holds its whole body, and the report's own shares follow.
#[test]
fn the_table_attributes_ticks_to_the_right_statements() {
    let mut rng = SplitMix64::new(0x0050_7ab1e);
    for _ in 0..4 {
        let trips = 1 + rng.next_u64() % 9;
        let threads = 32 * (1 + rng.next_u64() % 3);
        let groups = 1 + rng.next_u64() % 4;
        let stride = 1 + (rng.next_u64() % 2) as u32;
        let text = format!(
            r#"{{"format": 1, "name": "loop_known", "workgroup_size": [{threads}, 1, 1],
            "buffers": [{{"name": "out", "binding": 0, "access": "read_write", "type": "u32"}}],
            "body": [
              {{"let": "acc", "value": {{"gid": "x"}}}},
              {{"loop": "i", "from": 0, "to": {trips}, "body": [
                {{"assign": "acc", "value": {{"mul": ["acc", 3]}}}},
                {{"assign": "acc", "value": {{"add": ["acc", "i"]}}}}
              ]}},
              {{"if": {{"lt": [{{"gid": "x"}}, 5]}}, "then": [
                {{"store": "out", "index": {{"gid": "x"}}, "value": "acc"}}
              ]}},
              {{"store": "out", "index": {{"gid": "x"}}, "value": {{"add": ["acc", 1]}}}}
            ],
            "run": {{"grid": [{groups}, 1, 1], "inputs": {{"out": {{"fill": "random", "seed": 7}}}}}}}}"#
        );
        let p = parse_program(&text, "loop_known.json").expect("parse");
        let prepared = prepare(&p, std::path::Path::new("."), None, None).expect("prepare");
        let inst = instrument(&p, stride).expect("instrument");
        let mut bufs = prepared.buffers.clone();
        bufs.push(inst.table_buffer());
        interpret(&inst.program, &prepared.shape, &mut bufs);
        let table = inst.read_table(&bufs).expect("table");
        let nodes: Vec<&str> = inst.slots.iter().map(|s| s.node.as_str()).collect();
        assert_eq!(
            nodes,
            [
                "body[0]",
                "body[1]",
                "body[1].body[0]",
                "body[1].body[1]",
                "body[2]",
                "body[2].then[0]",
                "body[3]"
            ]
        );
        let sampled_groups = (0..groups).filter(|g| g % stride as u64 == 0).count() as u64;
        let t = threads * sampled_groups;
        // Threads with gid < 5 (all in workgroup 0, which is always sampled) take the branch.
        let taken = 5.min(threads);
        assert_eq!(
            table,
            vec![
                t,
                t * (1 + 2 * trips),
                t * trips,
                t * trips,
                t + taken,
                taken,
                t
            ],
            "trips {trips}, threads {threads}, groups {groups}, stride {stride}"
        );
        let profile = from_table(&p, &inst, &table, Source::Estimate, Lowering::default());
        let total = t * (1 + 1 + 2 * trips + 1 + 1) + taken;
        assert_eq!(profile.total, total);
        let lp = profile.statement("body[1]").expect("loop");
        assert_eq!((lp.self_value, lp.total_value), (t, t * (1 + 2 * trips)));
        let body0 = profile.statement("body[1].body[0]").expect("body");
        assert!((body0.self_share - (t * trips) as f64 / total as f64).abs() < 1e-12);
        assert!(profile.render(10).contains("ESTIMATE"));
    }
}

/// `profile` without a GPU says so with a `Fix:` naming `--estimate` and exits 1; with
/// `--estimate` it prints the labelled estimate, and its JSON shares add up.
#[test]
fn profile_without_a_gpu_says_so_and_estimate_is_labelled() {
    let fixture = "fixtures/programs/stencil5_f32.json";
    let (code, stdout, stderr) =
        crate::support::cli::output(crate::support::cli::in_root().args(["profile", fixture]));
    assert!(!stderr.contains("panicked"), "{stderr}");
    if stderr.contains("none could be opened") {
        assert_eq!(code, 1);
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.contains("\n  Fix: ") && stderr.contains("--estimate"),
            "{stderr}"
        );
    } else {
        // A machine with a GPU: the cycles profile, with its overhead.
        assert_eq!(code, 0, "{stderr}");
        assert!(
            stdout.contains("overhead of the instrumented build"),
            "{stdout}"
        );
    }
    let (code, stdout, stderr) =
        crate::support::cli::output(crate::support::cli::in_root().args([
            "profile",
            fixture,
            "--estimate",
        ]));
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("instruction-count ESTIMATE"), "{stdout}");
    assert!(!stdout.contains("cycles"), "{stdout}");
    for file in [fixture, "fixtures/pipelines/chain.json"] {
        let (code, stdout, stderr) =
            crate::support::cli::output(crate::support::cli::in_root().args([
                "profile",
                file,
                "--estimate",
                "--json",
            ]));
        assert_eq!(code, 0, "{stderr}");
        let v: serde_json::Value = serde_json::from_str(&stdout).expect("json");
        let profiles = v["profiles"].as_array().expect("profiles");
        assert!(!profiles.is_empty());
        for p in profiles {
            assert_eq!(p["source"], "estimate");
            assert_eq!(p["unit"], "statements");
            let shares: f64 = p["statements"]
                .as_array()
                .expect("statements")
                .iter()
                .map(|s| s["self_share"].as_f64().expect("share"))
                .sum();
            assert!(
                (shares - 1.0).abs() < 1e-9,
                "{file}: shares sum to {shares}"
            );
        }
    }
}

/// Sampled PCs map through a real SASS listing (ptxas + nvdisasm of a fixture): samples
/// built here from the listing's own addresses, with seeded random counts and reasons, land
/// on the instruction's statement; other functions and non-instruction offsets are unmapped.
/// (No CUPTI buffer recorded on a GPU is among the fixtures yet.)
#[test]
fn sampled_pcs_map_through_the_sass_listing_to_statements() {
    use vyrescope::profile::pc::{is_memory_stall, map_samples, profile, PcSample};
    if crate::support::tools::ptxas("the PC mapping test").is_none()
        || crate::support::tools::nvdisasm("the PC mapping test").is_none()
    {
        return;
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/programs/matmul_tiled_f32.json");
    let p = vyrescope::ir::load_program(&path).expect("fixture");
    let opts = EmitOptions {
        lineinfo: true,
        ..EmitOptions::for_program(&p)
    };
    let k = emit(&p, &opts).expect("emit");
    let listing = vyrescope::sass::disassemble(&k, 90).expect("sass");
    let reasons = [
        "smsp__pcsamp_warps_issue_stalled_long_scoreboard",
        "smsp__pcsamp_warps_issue_stalled_math_pipe_throttle",
        "smsp__pcsamp_warps_issue_stalled_barrier",
        "smsp__pcsamp_warps_issue_stalled_selected",
    ];
    let mut rng = SplitMix64::new(0x50_9c);
    let mut samples = Vec::new();
    let mut want: std::collections::HashMap<String, u64> = Default::default();
    let mut want_reason: std::collections::HashMap<(String, String), u64> = Default::default();
    let mut unowned = 0;
    for i in &listing.instructions {
        if rng.next_u64().is_multiple_of(3) {
            continue;
        }
        let n = 1 + rng.next_u64() % 50;
        let reason = reasons[(rng.next_u64() % 4) as usize];
        samples.push(PcSample {
            function: listing.kernel.clone(),
            pc_offset: u64::from(i.address),
            stall_reason: reason.to_string(),
            samples: n,
        });
        match &i.node {
            Some(node) => {
                *want.entry(node.clone()).or_default() += n;
                let short = reason.trim_start_matches("smsp__pcsamp_warps_issue_stalled_");
                *want_reason
                    .entry((node.clone(), short.to_string()))
                    .or_default() += n;
            }
            None => unowned += n,
        }
    }
    let last = listing.instructions.last().expect("instructions").address;
    let stray = [
        ("other_kernel", 0u64, 7u64),
        (listing.kernel.as_str(), u64::from(last) + 4096, 5),
        (listing.kernel.as_str(), 2, 3),
    ];
    for (f, pc, n) in stray {
        samples.push(PcSample {
            function: f.to_string(),
            pc_offset: pc,
            stall_reason: reasons[0].to_string(),
            samples: n,
        });
    }
    let m = map_samples(&listing, &samples);
    assert_eq!(m.other_function, 7);
    assert_eq!(m.no_instruction, 8);
    assert_eq!(m.unmapped(), 15);
    assert_eq!(m.unowned, unowned);
    let got: std::collections::HashMap<String, u64> = m
        .per_node
        .iter()
        .map(|(n, e)| (n.clone(), e.self_value))
        .collect();
    assert_eq!(got, want);
    for ((node, reason), n) in &want_reason {
        assert_eq!(
            m.per_node[node].stalls.get(reason),
            Some(n),
            "{node} {reason}"
        );
    }
    let prof = profile(
        &p,
        &m,
        Lowering {
            kernel: Some(&k),
            sass: Some(&listing),
        },
    );
    assert_eq!(prof.total, want.values().sum::<u64>());
    assert_eq!(prof.unmapped, 15);
    // The body's top-level statements' totals hold every mapped sample.
    let top: u64 = p
        .body
        .iter()
        .filter_map(|s| prof.statement(&s.id))
        .map(|s| s.total_value)
        .sum();
    assert_eq!(top, prof.total);
    let hottest = &prof.statements[0];
    assert!(!hottest.sass.is_empty() && !hottest.stalls.is_empty());
    assert!(is_memory_stall(reasons[0]) && !is_memory_stall(reasons[1]));
    // A record survives its JSON form (the form recorded buffers will be saved in).
    let text = serde_json::to_string(&samples[0]).expect("json");
    assert_eq!(
        serde_json::from_str::<PcSample>(&text).expect("parse"),
        samples[0]
    );
}

/// The GPU check's loop Program (benches/gpu/profile.sh) is valid, and on the interpreter
/// its loop holds well over 70% of the statements executed: the GPU threshold is about time,
/// but a loop that did not dominate the work could not dominate the time either.
/// A bench Program, parsed and free of validation errors.
fn valid_bench(name: &str) -> (std::path::PathBuf, Program) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/gpu")
        .join(name);
    let p = vyrescope::ir::load_program(&path).expect("bench program");
    let errors: Vec<_> = validate(&p)
        .into_iter()
        .filter(|d| d.severity == vyrescope::finding::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}");
    (path, p)
}

#[test]
fn the_gpu_check_loop_program_puts_its_work_in_the_loop() {
    let (path, p) = valid_bench("profile_chain_f32.json");
    let prepared =
        prepare(&p, path.parent().expect("folder"), None, Some([2, 1, 1])).expect("prepare");
    let prof = vyrescope::profile::estimate::estimate(&p, &prepared, Lowering::default())
        .expect("estimate");
    let lp = prof.statement("body[3]").expect("the loop");
    assert!(lp.total_share > 0.99, "{}", prof.render(10));
    valid_bench("profile_copy_f32.json");
}
