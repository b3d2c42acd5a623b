//! The timeline (issue 23): ptxas accepts the instrumented PTX of every Program fixture, every
//! pipeline step and every fused kernel of the pipeline fixtures' plans; plain emission does
//! not change; the fused spec lists each step and each wait; decoding, the check, the
//! summary and the Chrome trace work on recorded buffers written here from seeded random
//! data, with records out of order in their rings, wrapped rings and malformed records.

use std::path::Path;
use std::sync::Arc;

use vyrescope::emit::ptxas::assemble;
use vyrescope::emit::timeline::{
    TimelineSpec, TimelineUnit, UnitKind, WaitKind, NO_WORKGROUP, RECORD_BYTES,
};
use vyrescope::emit::{emit, emit_timeline, EmitOptions};
use vyrescope::harness::timeline_run::{instrumented_kernel, pipeline_launches, PipelineForm};
use vyrescope::inputs::pipeline::prepare_pipeline;
use vyrescope::inputs::prng::SplitMix64;
use vyrescope::inputs::LaunchShape;
use vyrescope::megakernel::compiled::CompiledPipeline;
use vyrescope::megakernel::plan::{plan, PlanOptions, SyncMode};
use vyrescope::megakernel::timeline::fused_spec;
use vyrescope::megakernel::{fuse_group, FusedKernel};
use vyrescope::occupancy::profiles;
use vyrescope::timeline::{check, decode, summarize, trace, Capture, LaunchRecords};
use vyrescope::validate::pipeline::load_pipeline;

use crate::support::fixtures::fixtures;

fn pipeline_fixtures() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir("fixtures/pipelines")
        .expect("fixtures/pipelines")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// Every fused kernel of the fixture's plan on the bundled H200 profile.
fn fused_kernels(path: &Path) -> Vec<FusedKernel> {
    let loaded = load_pipeline(path);
    let p = loaded.pipeline.expect("valid pipeline fixture");
    let prepared = prepare_pipeline(&p, path.parent().expect("folder")).expect("prepare");
    let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
    let opts = PlanOptions::new(profiles::load("h200").expect("bundled h200"));
    let pl = plan(&p, &shapes, &opts).expect("plan");
    pl.groups
        .iter()
        .map(|g| fuse_group(&p, &shapes, &g.spec()).expect("fuse"))
        .collect()
}

fn opts_for(p: &vyrescope::ir::Program, wg: [u32; 3]) -> EmitOptions {
    EmitOptions {
        workgroup_size: wg,
        ..EmitOptions::for_program(p)
    }
}

#[test]
fn instrumented_ptx_assembles_for_every_fixture_and_plain_ptx_is_unchanged() {
    let mut kernels: Vec<(String, String)> = Vec::new();
    for (path, p) in fixtures() {
        let o = EmitOptions::for_program(&p);
        let plain = emit(&p, &o).expect("emit");
        let k = emit_timeline(&p, &o, &TimelineSpec::kernel(None)).expect("timeline emit");
        assert!(
            k.ptx.contains(".param .u64 param_timeline"),
            "{}",
            path.display()
        );
        assert!(k.ptx.contains("%globaltimer") && k.ptx.contains("%smid"));
        assert_eq!(k.abi.timeline, Some(TimelineSpec::kernel(None)));
        // Emitting the instrumented kernel leaves no trace in the plain one.
        assert_eq!(emit(&p, &o).expect("emit").ptx, plain.ptx);
        assert!(!plain.ptx.contains("globaltimer") && plain.abi.timeline.is_none());
        kernels.push((path.display().to_string(), k.ptx));
    }
    let mut fused_units = 0;
    for path in pipeline_fixtures() {
        let loaded = load_pipeline(&path);
        let pipe = loaded.pipeline.expect("valid");
        let prepared = prepare_pipeline(&pipe, path.parent().expect("folder")).expect("prepare");
        for (k, (step, ps)) in pipe.steps.iter().zip(&prepared.steps).enumerate() {
            let o = opts_for(&step.program, ps.shape.workgroup_size);
            let spec = TimelineSpec::kernel(Some(k as u32));
            let e = emit_timeline(&step.program, &o, &spec).expect("step");
            kernels.push((format!("{} step {k}", path.display()), e.ptx));
        }
        for f in fused_kernels(&path) {
            let spec = fused_spec(&f);
            fused_units += spec.units.len();
            let o = opts_for(&f.program, f.shape.workgroup_size);
            let e = emit_timeline(&f.program, &o, &spec).expect("fused");
            assert_eq!(e.abi.timeline.as_ref(), Some(&spec));
            kernels.push((
                format!("{} fused {}", path.display(), f.program.name),
                e.ptx,
            ));
        }
    }
    assert!(fused_units > 0);
    let Some(ptxas) = crate::support::tools::ptxas("assembling the instrumented PTX") else {
        return;
    };
    for (what, ptx) in &kernels {
        if let Err(e) = assemble(&ptxas, ptx, 90, false) {
            panic!("{what}: ptxas refused the instrumented PTX: {e}");
        }
    }
}

#[test]
fn fused_spec_lists_every_step_and_grid_barrier() {
    let path = Path::new("fixtures/pipelines/reduce_total_normalize.json");
    let kernels = fused_kernels(path);
    let loaded = load_pipeline(path);
    let steps = loaded.pipeline.expect("valid").steps.len();
    let mut seen_steps = Vec::new();
    let mut waits = 0;
    let mut barriers = 0;
    for f in &kernels {
        let spec = fused_spec(f);
        for u in &spec.units {
            match u.kind {
                UnitKind::Step => seen_steps.push(u.step.expect("step unit has a step")),
                UnitKind::Wait(WaitKind::GridBarrier) => waits += 1,
                UnitKind::Wait(WaitKind::FlagWait | WaitKind::CounterWait) => {
                    panic!("no dataflow wait in a barrier-form kernel")
                }
                UnitKind::Kernel => panic!("no kernel unit in a fused kernel"),
            }
        }
        f.program.walk_stmts(&mut |s| {
            barriers += vyrescope::emit::timeline::wait_kind(&s.kind).is_some() as usize
        });
        assert!(spec.slots_per_block.is_power_of_two());
        assert!(spec.slots_per_block as usize >= spec.units.len());
    }
    seen_steps.sort();
    assert_eq!(seen_steps, (0..steps as u32).collect::<Vec<_>>());
    assert_eq!(waits, barriers);
    assert!(
        waits > 0,
        "the fixture separates its steps by grid barriers"
    );
}

/// A packed step runs `P` workgroups per block: its unit says so, the block keeps a record
/// slot for each sub-task, and thread 0 stores `P` records (ids `v..v + P`) where it closes the
/// unit. Before, it stored only its own sub-task's, and the GPU check found half of the
/// 128-wide step's workgroups of independent_pair missing.
#[test]
fn a_packed_step_records_every_sub_task() {
    let path = Path::new("fixtures/pipelines/independent_pair.json");
    let kernels = fused_kernels(path);
    let mut packed_units = 0;
    for f in &kernels {
        let spec = fused_spec(f);
        for (i, &k) in f.steps.iter().enumerate() {
            let Some(p) = f.layouts[i].packed() else {
                continue;
            };
            let unit = spec
                .units
                .iter()
                .find(|u| u.kind == UnitKind::Step && u.step == Some(k as u32))
                .expect("a unit for the packed step");
            assert_eq!(unit.packed, Some(p), "{unit:?}");
            assert!(p >= 2);
            packed_units += 1;
        }
        let records: u64 = spec
            .units
            .iter()
            .filter(|u| u.kind == UnitKind::Step)
            .map(|u| u64::from(u.packed.unwrap_or(1)))
            .sum();
        assert!(u64::from(spec.slots_per_block) >= records, "{spec:?}");
        let plain = emit_timeline(
            &f.program,
            &opts_for(&f.program, f.shape.workgroup_size),
            &TimelineSpec {
                units: spec
                    .units
                    .iter()
                    .map(|u| vyrescope::emit::timeline::TimelineUnit {
                        packed: None,
                        ..u.clone()
                    })
                    .collect(),
                slots_per_block: spec.slots_per_block,
            },
        )
        .expect("emit");
        let with = emit_timeline(
            &f.program,
            &opts_for(&f.program, f.shape.workgroup_size),
            &spec,
        )
        .expect("emit");
        let stores = |ptx: &str| ptx.matches("st.global.v4.u32").count();
        let extra: usize = spec
            .units
            .iter()
            .map(|u| u.packed.unwrap_or(1) as usize - 1)
            .sum();
        assert_eq!(stores(&with.ptx), stores(&plain.ptx) + extra);
    }
    assert!(packed_units > 0, "independent_pair packs its 128-wide step");
}

#[test]
fn fused_spec_lists_dataflow_waits_as_waits() {
    use vyrescope::megakernel::plan::SyncMode;
    // Softmax under `--sync dataflow`: the exp and divide steps wait on their fold's flag
    // inside every task; the stencil waits on its neighbours' flags.
    for (file, want) in [
        ("fixtures/pipelines/softmax.json", WaitKind::FlagWait),
        ("fixtures/pipelines/stencil_halo4.json", WaitKind::FlagWait),
        (
            "fixtures/pipelines/reduce_normalize.json",
            WaitKind::CounterWait,
        ),
        // Several tasks per block: the fixed wait before the task loop (with loads ahead
        // of it), the stencil's flags published per block after the loop.
        (
            "fixtures/pipelines/hist_equalize_shared.json",
            WaitKind::FlagWait,
        ),
        (
            "fixtures/pipelines/stencil_halo4_2p20.json",
            WaitKind::FlagWait,
        ),
    ] {
        let path = Path::new(file);
        let p = load_pipeline(path).pipeline.expect("valid");
        let prepared = prepare_pipeline(&p, path.parent().expect("folder")).expect("prepare");
        let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
        // Fused as far as legal (the cost model may keep some of these steps apart).
        let mut opts = PlanOptions::new(profiles::load("h200").expect("bundled h200"));
        opts.decide = vyrescope::megakernel::plan::Decide::Fuse;
        let pl = plan(&p, &shapes, &opts).expect("plan");
        let g = &pl.groups[0];
        let k = fuse_group(&p, &shapes, &g.spec_for(SyncMode::Dataflow)).expect("fuse");
        let spec = fused_spec(&k);
        let waits: Vec<WaitKind> = spec
            .units
            .iter()
            .filter_map(|u| match u.kind {
                UnitKind::Wait(w) => Some(w),
                _ => None,
            })
            .collect();
        assert!(waits.contains(&want), "{file}: {waits:?}");
        assert!(!waits.contains(&WaitKind::GridBarrier), "{file}: {waits:?}");
        // A one-workgroup step (a fold, run by the last arriver under dataflow) is expected
        // once, not once per block: the capture check counts its workgroups from this.
        for u in spec.units.iter().filter(|u| u.kind == UnitKind::Step) {
            let st = u.step.expect("step unit has a step") as usize;
            if shapes[st].workgroups() == 1 {
                assert_eq!(u.workgroups, Some(1), "{file}: step {st} at {}", u.node);
                assert!(u.workgroup_var.is_some(), "{file}: step {st}");
            }
        }
        // Every step on virtual workgroups records each task, whatever its block holds
        // around the task loop.
        for u in spec.units.iter().filter(|u| u.kind == UnitKind::Step) {
            let st = u.step.expect("step unit has a step") as usize;
            assert_eq!(
                u.workgroups.map(u64::from),
                Some(shapes[st].workgroups()),
                "{file}: step {st} at {} is recorded per block",
                u.node
            );
        }
        // Every wait statement is a unit.
        let mut stmts = 0;
        k.program.walk_stmts(&mut |s| {
            stmts += vyrescope::emit::timeline::wait_kind(&s.kind).is_some() as usize
        });
        assert_eq!(stmts, waits.len(), "{file}");
        // The instrumented kernel assembles.
        if let Some(ptxas) =
            crate::support::tools::ptxas("assembling instrumented dataflow kernels")
        {
            let e = emit_timeline(&k.program, &EmitOptions::for_program(&k.program), &spec)
                .expect("timeline emit");
            assemble(&ptxas, &e.ptx, 90, false).unwrap_or_else(|e| panic!("{file}: {e}"));
        }
    }
}

/// Writes record `(unit, wg, sm, seq, start, end)` into slot `slot` of `block`'s ring.
fn put(buf: &mut [u8], slots: u32, block: u32, slot: u32, r: (u32, u32, u32, u32, u64, u64)) {
    let at = ((block * slots + slot) * RECORD_BYTES) as usize;
    let words = [
        r.4 as u32,
        (r.4 >> 32) as u32,
        r.5 as u32,
        (r.5 >> 32) as u32,
        r.0,
        r.1,
        r.2,
        r.3,
    ];
    for (i, w) in words.iter().enumerate() {
        buf[at + i * 4..at + i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
}

/// A fused launch of `blocks` blocks: step 0 on virtual workgroups (`vwg` of them), a grid
/// barrier, step 1 once per block. Records are written with seeded random times, each
/// block's records at shuffled slots.
fn recorded(seed: u64, blocks: u32, vwg: u32) -> (Capture, u64) {
    let trips = vwg.div_ceil(blocks);
    let records = trips + 2;
    let spec = TimelineSpec {
        units: vec![
            TimelineUnit {
                node: "body[0].body[1]".into(),
                kind: UnitKind::Step,
                step: Some(0),
                workgroup_var: Some("f0_v".into()),
                workgroups: Some(vwg),
                packed: None,
            },
            TimelineUnit {
                node: "body[1]".into(),
                kind: UnitKind::Wait(WaitKind::GridBarrier),
                step: Some(0),
                workgroup_var: None,
                workgroups: None,
                packed: None,
            },
            TimelineUnit {
                node: "body[2]".into(),
                kind: UnitKind::Step,
                step: Some(1),
                workgroup_var: None,
                workgroups: None,
                packed: None,
            },
        ],
        slots_per_block: TimelineSpec::slots_for(records as u64),
    };
    let slots = spec.slots_per_block;
    let mut rng = SplitMix64::new(seed);
    let base = 1_700_000_000_000_000_000u64 + rng.next_u64() % 1_000_000;
    let mut bytes = vec![0u8; spec.buffer_bytes(blocks as u64) as usize];
    let mut last_end = 0;
    for b in 0..blocks {
        let sm = b % 7;
        let mut t = base + rng.next_u64() % 500;
        let mut recs = Vec::new();
        for trip in 0..trips {
            let d = 100 + rng.next_u64() % 900;
            recs.push((0, trip * blocks + b, sm, 0, t, t + d));
            t += d + rng.next_u64() % 50;
        }
        // Every block leaves the barrier at the same instant.
        let leave = base + 1_000_000;
        recs.push((1, NO_WORKGROUP, sm, 0, t, leave));
        let d = 200 + rng.next_u64() % 300;
        recs.push((2, NO_WORKGROUP, sm, 0, leave + 10, leave + 10 + d));
        last_end = last_end.max(leave + 10 + d);
        // Shuffle the slot order (records are decoded by time, not by slot).
        let mut order: Vec<u32> = (0..recs.len() as u32).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        for (seq, r) in recs.into_iter().enumerate() {
            let r = (r.0, r.1, r.2, seq as u32, r.4, r.5);
            put(&mut bytes, slots, b, order[seq], r);
        }
    }
    let capture = Capture {
        launches: vec![LaunchRecords {
            program: None,
            kernel: "p_fused_0_1".into(),
            spec,
            grid: [blocks, 1, 1],
            device_ms: Some(1.0),
            bytes,
        }],
        host: vec![],
        device_sms: Some(8),
    };
    (capture, last_end - base)
}

#[test]
fn decode_check_and_summary_of_recorded_buffers() {
    for seed in [1u64, 2, 3, 99] {
        let (cap, _) = recorded(seed, 12, 40);
        let d = decode(&cap).expect("decode");
        // 40 virtual workgroups of step 0 (the 8 idle iterations dropped), 12 waits, 12 of step 1.
        assert_eq!(d.slices.len(), 40 + 12 + 12, "seed {seed}");
        assert!(d.slices.windows(2).all(|w| w[0].start_ns <= w[1].start_ns));
        assert_eq!((d.dropped, d.malformed), (0, 0));
        assert_eq!(check(&cap, &d), Vec::<String>::new(), "seed {seed}");
        let s = summarize(&cap, &d);
        assert_eq!(s.steps.len(), 2);
        assert_eq!(s.steps[0].slices, 40);
        assert_eq!(s.steps[1].slices, 12);
        assert_eq!(s.waits.len(), 1);
        assert_eq!(s.waits[0].blocks, 12);
        assert_eq!(s.sms, 7);
        assert_eq!(s.sms_counted, 8);
        // Step 1's slices start after every wait ended.
        assert!(s.steps[1].start_us >= s.steps[0].end_us);
        // The summed step-0 time equals its slices' durations (no nested waits).
        let sum0: u64 = d
            .slices
            .iter()
            .filter(|x| x.step == Some(0) && !x.is_wait())
            .map(|x| x.dur_ns())
            .sum();
        assert!((s.steps[0].busy_us - sum0 as f64 / 1e3).abs() < 1e-6);
        assert!(s.bubble_pct > 0.0 && s.bubble_pct < 100.0);
        assert!(s.waves.is_none());
    }
}

#[test]
fn bubble_fraction_of_a_known_layout() {
    // Two SMs, one block each: SM 0 works 0..100 ns, SM 1 works 0..50 and waits 50..100.
    let spec = TimelineSpec {
        units: vec![
            TimelineUnit {
                node: "body[0]".into(),
                kind: UnitKind::Step,
                step: Some(0),
                workgroup_var: None,
                workgroups: None,
                packed: None,
            },
            TimelineUnit {
                node: "body[1]".into(),
                kind: UnitKind::Wait(WaitKind::GridBarrier),
                step: Some(0),
                workgroup_var: None,
                workgroups: None,
                packed: None,
            },
        ],
        slots_per_block: 2,
    };
    let mut bytes = vec![0u8; spec.buffer_bytes(2) as usize];
    let t = 5_000;
    put(&mut bytes, 2, 0, 0, (0, NO_WORKGROUP, 0, 0, t, t + 100));
    put(&mut bytes, 2, 1, 1, (0, NO_WORKGROUP, 1, 0, t, t + 50));
    put(
        &mut bytes,
        2,
        1,
        0,
        (1, NO_WORKGROUP, 1, 1, t + 50, t + 100),
    );
    let cap = Capture {
        launches: vec![LaunchRecords {
            program: None,
            kernel: "k".into(),
            spec,
            grid: [2, 1, 1],
            device_ms: None,
            bytes,
        }],
        host: vec![],
        device_sms: Some(4),
    };
    let d = decode(&cap).expect("decode");
    let s = summarize(&cap, &d);
    // Busy 150 of 4 SMs x 100 ns.
    assert!((s.bubble_pct - 62.5).abs() < 1e-9, "{}", s.bubble_pct);
    assert_eq!(s.timer_step_ns, Some(50));
}

/// A wait may start before the kernel's first work slice (a block with nothing to do first
/// can be scheduled ahead of the producer's block), but must end inside the work's span.
#[test]
fn waits_may_start_before_the_work_but_must_end_inside_it() {
    let spec = TimelineSpec {
        units: vec![
            TimelineUnit {
                node: "body[0]".into(),
                kind: UnitKind::Wait(WaitKind::FlagWait),
                step: Some(1),
                workgroup_var: None,
                workgroups: None,
                packed: None,
            },
            TimelineUnit {
                node: "body[1]".into(),
                kind: UnitKind::Step,
                step: Some(1),
                workgroup_var: None,
                workgroups: None,
                packed: None,
            },
        ],
        slots_per_block: 2,
    };
    let t = 50_000;
    let capture = |wait_end: u64| {
        let mut bytes = vec![0u8; spec.buffer_bytes(2) as usize];
        // Block 0 works first; block 1 waits from 30 ns before that, then works.
        put(&mut bytes, 2, 0, 0, (1, NO_WORKGROUP, 0, 0, t, t + 100));
        put(
            &mut bytes,
            2,
            1,
            0,
            (0, NO_WORKGROUP, 1, 0, t - 30, wait_end),
        );
        put(
            &mut bytes,
            2,
            1,
            1,
            (1, NO_WORKGROUP, 1, 1, t + 100, t + 150),
        );
        Capture {
            launches: vec![LaunchRecords {
                program: None,
                kernel: "k".into(),
                spec: spec.clone(),
                grid: [2, 1, 1],
                device_ms: None,
                bytes,
            }],
            host: vec![],
            device_sms: Some(2),
        }
    };
    let ok = capture(t + 100);
    assert_eq!(
        check(&ok, &decode(&ok).expect("decode")),
        Vec::<String>::new()
    );
    let early = capture(t - 10);
    let problems = check(&early, &decode(&early).expect("decode"));
    assert!(
        problems
            .iter()
            .any(|p| p.contains("outside the kernel's span")),
        "{problems:?}"
    );
}

#[test]
fn wrapped_reversed_and_foreign_records_are_reported() {
    let (mut cap, _) = recorded(7, 4, 4);
    let slots = cap.launches[0].spec.slots_per_block;
    // Block 0 wrote twice its slots: the counter in its latest record says so.
    put(
        &mut cap.launches[0].bytes,
        slots,
        0,
        0,
        (2, NO_WORKGROUP, 0, 2 * slots - 1, 10_000, 10_500),
    );
    // Block 1: one record ending before it starts, block 2: a unit the spec lacks.
    put(
        &mut cap.launches[0].bytes,
        slots,
        1,
        0,
        (0, 1, 1, 0, 9_000, 8_000),
    );
    put(
        &mut cap.launches[0].bytes,
        slots,
        2,
        0,
        (9, 2, 2, 0, 9_000, 9_100),
    );
    let d = decode(&cap).expect("decode");
    assert_eq!(d.dropped, slots as u64);
    assert_eq!(d.reversed, 1);
    assert_eq!(d.malformed, 2);
    let problems = check(&cap, &d);
    assert!(
        problems.iter().any(|p| p.contains("dropped")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("end before")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("name no unit")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("missing")),
        "{problems:?}"
    );
    // A buffer of the wrong size is an error naming the launch, with a fix.
    cap.launches[0].bytes.pop();
    let e = decode(&cap).expect_err("short buffer").to_string();
    assert!(e.contains("launch 0") && e.contains("Fix:"), "{e}");
}

#[test]
fn single_program_waves() {
    // 10 blocks, at most 4 at once: 3 waves, the last half full.
    let spec = TimelineSpec::kernel(None);
    let mut bytes = vec![0u8; spec.buffer_bytes(10) as usize];
    for b in 0..10u32 {
        let wave = (b / 4) as u64;
        let t = 1_000 + wave * 100;
        put(&mut bytes, 1, b, 0, (0, NO_WORKGROUP, b % 4, 0, t, t + 100));
    }
    let cap = Capture {
        launches: vec![LaunchRecords {
            program: None,
            kernel: "k".into(),
            spec,
            grid: [10, 1, 1],
            device_ms: None,
            bytes,
        }],
        host: vec![],
        device_sms: None,
    };
    let d = decode(&cap).expect("decode");
    assert!(check(&cap, &d).is_empty());
    let w = summarize(&cap, &d)
        .waves
        .expect("waves of a single Program");
    assert_eq!((w.blocks, w.resident, w.waves), (10, 4, 3));
    assert!((w.last_wave_occupancy - 0.5).abs() < 1e-9);
}

#[test]
fn chrome_trace_has_one_slice_per_record_on_sm_slot_tracks() {
    let (cap, span) = recorded(11, 9, 30);
    let d = decode(&cap).expect("decode");
    let v = trace::chrome_trace(&cap, &d);
    let text = serde_json::to_string(&v).expect("json");
    let back: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let ev = back["traceEvents"].as_array().expect("events");
    let slices: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(slices.len(), d.slices.len());
    for e in &slices {
        assert!(e["dur"].as_f64().expect("dur") >= 0.0);
        let end = e["ts"].as_f64().expect("ts") + e["dur"].as_f64().expect("dur");
        assert!(end <= span as f64 / 1e3 + 1e-6);
    }
    assert_eq!(
        slices.iter().filter(|e| e["cat"] == "wait").count(),
        9,
        "one wait per block"
    );
    assert!(slices
        .iter()
        .any(|e| e["name"] == "step 0 wg 29" && e["args"]["step"] == 0));
    // Every track a slice uses is named `SM n slot k`, and blocks of one SM that overlap
    // sit on different slots.
    for e in &slices {
        let tid = &e["tid"];
        assert!(ev.iter().any(|m| m["ph"] == "M"
            && m["name"] == "thread_name"
            && &m["tid"] == tid
            && m["args"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("SM "))));
    }
    let slots = trace::block_slots(&d);
    for a in &d.slices {
        for b in &d.slices {
            let overlap = a.start_ns < b.end_ns && b.start_ns < a.end_ns;
            if a.sm == b.sm && a.block != b.block && overlap {
                assert_ne!(slots[&(a.launch, a.block)], slots[&(b.launch, b.block)]);
            }
        }
    }
}

fn cli(args: &[&str], home: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(args)
        .env("HOME", home)
        .env("XDG_CACHE_HOME", home.join("cache"))
        .output()
        .expect("run vyrescope")
}

#[test]
fn cli_emit_timeline_and_refusals() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let f = "fixtures/programs/vadd_f32.json";
    let out = cli(&["emit", f, "--timeline"], tmp.path());
    let ptx = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(ptx.contains("param_timeline") && ptx.contains("%globaltimer"));
    let plain = cli(&["emit", f], tmp.path());
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("globaltimer"));
    // A timeline needs the GPU backend.
    let out = cli(&["run", f, "--timeline"], tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--backend cuda") && err.contains("Fix:"));
    let out = cli(
        &["run", "fixtures/pipelines/chain.json", "--trace", "t.json"],
        tmp.path(),
    );
    assert!(!out.status.success());
    // The trace never overwrites the input file (checked before any GPU work).
    let copy = tmp.path().join("p.json");
    std::fs::copy(f, &copy).expect("copy");
    let c = copy.to_str().expect("utf-8 path");
    let before = std::fs::read(&copy).expect("read");
    let out = cli(&["run", c, "--backend", "cuda", "--trace", c], tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("input file"), "{err}");
    assert_eq!(std::fs::read(&copy).expect("read"), before);
    // Nor does the record file, and the two never share a file.
    let out = cli(
        &["run", c, "--backend", "cuda", "--timeline-out", c],
        tmp.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("input file"), "{err}");
    assert_eq!(std::fs::read(&copy).expect("read"), before);
    let t = tmp.path().join("t.json");
    let t = t.to_str().expect("utf-8 path");
    let out = cli(
        &[
            "run",
            c,
            "--backend",
            "cuda",
            "--trace",
            t,
            "--timeline-out",
            t,
        ],
        tmp.path(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("both name"), "{err}");
    // --timeline-out needs the GPU backend too.
    let out = cli(&["run", f, "--timeline-out", t], tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--backend cuda"),
        "{err}"
    );
}

/// `emit --timeline PIPELINE` (issue 33): in both sync forms, one instrumented kernel per plan
/// group after the line naming the group, each byte for byte what the run path builds (the
/// compiled pipeline's fused timeline launches, each emitted by `instrumented_kernel` with
/// the options `run --timeline` uses on a device of the same profile), and ptxas accepts
/// them. `--map` carries each kernel's timeline spec; `--vyre` stays refused.
#[test]
fn cli_emit_timeline_on_a_pipeline_is_what_run_timeline_builds() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let ptxas = crate::support::tools::ptxas("assembling emit --timeline on a pipeline");
    let opts = PlanOptions::new(profiles::load("h200").expect("bundled h200"));
    for fixture in [
        "fixtures/pipelines/softmax.json",
        "fixtures/pipelines/stencil_pingpong.json",
    ] {
        let path = Path::new(fixture);
        let p = load_pipeline(path)
            .pipeline
            .expect("valid pipeline fixture");
        let prepared = prepare_pipeline(&p, path.parent().expect("folder")).expect("prepare");
        let shapes: Vec<LaunchShape> = prepared.steps.iter().map(|s| s.shape).collect();
        let mut printed = Vec::new();
        // Whether a group of the plan runs differently in the two sync forms (softmax's
        // fused group; the stencil's steps run as a recomputed pass, which has no waits).
        let mut forms_differ = false;
        for sync in [SyncMode::Barrier, SyncMode::Dataflow] {
            let out = cli(
                &["emit", fixture, "--timeline", "--sync", sync.name()],
                tmp.path(),
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{fixture} {sync:?}: {err}");
            let text = String::from_utf8(out.stdout).expect("utf-8 PTX");
            let mut compiled =
                CompiledPipeline::compile(Arc::new(p.clone()), shapes.clone(), &opts, sync, None)
                    .expect("compile");
            // Without a GPU the CLI fits each persistent grid to the kernel's own registers
            // (ptxas, else the estimate) as a GPU run fits it to the driver's answer.
            vyrescope::harness::offline_fit::fit_offline(&mut compiled, &opts.device, 90, &[])
                .expect("offline fit");
            let launches = pipeline_launches(&compiled, PipelineForm::Fused).expect("launches");
            let n = compiled.plan().groups.len();
            forms_differ |= compiled.plan().groups.iter().any(|g| g.runs_dataflow());
            assert_eq!(launches.len(), n, "{fixture}: one launch per plan group");
            // The printed kernels, split at the lines naming their groups.
            let mut kernels: Vec<(String, String)> = Vec::new();
            for line in text.split_inclusive('\n') {
                match line.strip_prefix("// pipeline ") {
                    Some(h) if h.contains(", group ") => {
                        kernels.push((h.to_string(), String::new()))
                    }
                    // Before the first group: what decided the plan, as comments.
                    _ if kernels.is_empty() => assert!(line.starts_with("// "), "{line}"),
                    _ => kernels
                        .last_mut()
                        .expect("a group line first")
                        .1
                        .push_str(line),
                }
            }
            assert_eq!(
                kernels.len(),
                n,
                "{fixture} {sync:?}: one kernel per plan group"
            );
            for (g, (l, (header, ptx))) in launches.iter().zip(&kernels).enumerate() {
                // `run --timeline` emits with the device's sm (90 on an H200) and the default
                // grid barrier lowering, the emitter's defaults otherwise.
                let base = EmitOptions {
                    sm: 90,
                    ..EmitOptions::for_program(&l.program)
                };
                let k = instrumented_kernel(l, &base).expect("instrumented kernel");
                assert_eq!(
                    ptx, &k.ptx,
                    "{fixture} {sync:?} group {g}: not the run path's PTX"
                );
                assert!(
                    header.starts_with(&format!("{}, group {g} of {n} (", p.name))
                        && header.contains(&format!("kernel {}", k.kernel_name)),
                    "{header}"
                );
                let steps = &compiled.groups[g].group.steps;
                let first = &p.steps[steps[0]].program.name;
                assert!(
                    header.contains(&format!("steps {} {first}", steps[0])),
                    "{header}"
                );
                assert!(
                    ptx.contains(".param .u64 param_timeline")
                        && ptx.contains("%globaltimer")
                        && ptx.contains("%smid")
                        && ptx.contains("st.global.v2.u64"),
                    "{fixture} {sync:?} group {g}: no timeline parameter or record stores"
                );
                assert_eq!(k.abi.timeline.as_ref(), Some(&l.spec));
                // A step the plan launches alone records one unit.
                assert!(
                    l.spec.units.len() > 1 || steps.len() == 1,
                    "a fused kernel records steps and waits"
                );
                if let Some(bin) = &ptxas {
                    if let Err(e) = assemble(bin, ptx, 90, false) {
                        panic!("{fixture} {sync:?} group {g}: ptxas refused it: {e}");
                    }
                }
            }
            // The kernels, without the decision's lines (its predicted times depend on what
            // a boundary costs in each sync form).
            let first = text.find("// pipeline ").expect("a group line");
            printed.push(text[first..].to_string());
        }
        if forms_differ {
            assert_ne!(printed[0], printed[1], "{fixture}: the sync forms differ");
        } else {
            assert_eq!(printed[0], printed[1], "{fixture}: no group waits");
        }
    }
    // --map: each group's object carries its timeline spec.
    let f = "fixtures/pipelines/stencil_pingpong.json";
    let out = cli(&["emit", f, "--timeline", "--map"], tmp.path());
    assert!(out.status.success());
    let map: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let groups = map["groups"].as_array().expect("groups");
    assert!(!groups.is_empty());
    for g in groups {
        assert!(
            g["abi"]["timeline"]["slots_per_block"].as_u64() > Some(0),
            "{g}"
        );
        assert!(g["group"].is_u64() && g["steps"].is_array());
    }
    // vyre's PTX still takes one Program.
    let out = cli(&["emit", f, "--vyre"], tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("take one Program") && !err.contains("--timeline"),
        "{err}"
    );
}
