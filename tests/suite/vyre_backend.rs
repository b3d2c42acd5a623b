//! vyrescope as a vyre backend (feature `vyre`), seen as a vyre application sees it: both
//! backends are in vyre's registry with their ranks and flags; `vyrescope-reference`,
//! acquired by id, dispatches vyre Programs (one-shot, borrowed, timed, into, async), keeps
//! resident buffers and runs resident sequences honouring each step's workgroup, recovers,
//! and refuses bad Programs and inputs with a `Fix:`. Methods vyre's registry wrapper does
//! not forward are called on our own type. All data is random.

use std::sync::Arc;

use vyre_driver::backend::{
    acquire, backend_dispatches, backend_precedence, registered_backends, BackendError,
    DispatchConfig, ResidentDispatchStep, ResidentReadRange, Resource, VyreBackend,
};
use vyre_foundation::ir::{
    BufferDecl as VB, DataType as DT, Expr as E, Ident, MemoryOrdering, Node as N, Program as VP,
};

use vyrescope::inputs::prng::SplitMix64;
use vyrescope::vyre::backend::reference::ReferenceDevice;
use vyrescope::vyre::backend::registry::{CUDA_ID, REFERENCE_ID};
use vyrescope::vyre::backend::VyrescopeBackend;

fn reference() -> Box<dyn VyreBackend> {
    vyrescope::runtime::vyre_device::link();
    acquire(REFERENCE_ID).expect("vyrescope-reference is registered and needs no GPU")
}

fn random_f32(rng: &mut SplitMix64, n: usize) -> Vec<f32> {
    (0..n)
        .map(|_| ((rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32) * 200.0 - 100.0)
        .collect()
}

fn random_u32(rng: &mut SplitMix64, n: usize) -> Vec<u32> {
    (0..n).map(|_| rng.next_u64() as u32).collect()
}

fn bytes_f32(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn bytes_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// `out[i] = a[i] + b[i]` over `n` f32 elements: the dispatch benchmark's own Program.
fn vadd(n: u32) -> VP {
    vyrescope::vyre::backend::samples::vadd_f32(n)
}

/// `data[i] = data[i] * 3 + 1` (u32, wrapping): a ReadWrite buffer, so an input and an
/// output at once.
fn scale(n: u32) -> VP {
    VP::wrapped(
        vec![VB::read_write("data", 0, DT::U32).with_count(n)],
        [64, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(
                E::lt(E::var("i"), E::buf_len("data")),
                vec![N::store(
                    "data",
                    E::var("i"),
                    E::add(E::mul(E::load("data", E::var("i")), E::u32(3)), E::u32(1)),
                )],
            ),
        ],
    )
}

/// `ids[i] = local id x`: its result shows the workgroup size the dispatch used.
fn local_ids(n: u32) -> VP {
    VP::wrapped(
        vec![VB::output("ids", 0, DT::U32).with_count(n)],
        [256, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::if_then(
                E::lt(E::var("i"), E::buf_len("ids")),
                vec![N::store("ids", E::var("i"), E::local_x())],
            ),
        ],
    )
}

fn has_fix(e: &BackendError) -> String {
    let text = e.to_string();
    assert!(text.contains("Fix:"), "no `Fix:` in {text:?}");
    text
}

#[test]
fn both_backends_are_in_vyres_registry_with_rank_oracle_flag_and_dispatch() {
    assert_eq!(
        vyrescope::runtime::vyre_device::link(),
        [CUDA_ID, REFERENCE_ID]
    );
    let regs = registered_backends().expect("vyre's registry builds");
    let ids: Vec<&str> = regs.iter().map(|r| r.id).collect();
    for id in [CUDA_ID, REFERENCE_ID] {
        assert!(ids.contains(&id), "{id} missing from {ids:?}");
        assert!(backend_dispatches(id).unwrap(), "{id}");
    }
    let cuda = regs.iter().find(|r| r.id == CUDA_ID).unwrap();
    let reference = regs.iter().find(|r| r.id == REFERENCE_ID).unwrap();
    assert!(!cuda.reference_oracle && reference.reference_oracle);
    assert_eq!(cuda.target_id.as_str(), CUDA_ID);
    assert!(cuda.payload_format.is_none() && cuda.target_compiler.is_none());
    // Ahead of vyre's own `cuda` (rank 5); the oracle last.
    assert_eq!(backend_precedence(CUDA_ID).unwrap(), 4);
    assert_eq!(backend_precedence(REFERENCE_ID).unwrap(), 1000);
    // The ops we route exclude what the import refuses.
    let ops = (cuda.supported_ops)();
    assert!(ops.contains("vyre.node.store") && ops.contains("vyre.node.barrier"));
    assert!(!ops.contains("vyre.node.async_load"));
}

#[test]
fn the_cuda_backend_without_a_gpu_fails_to_acquire_with_a_fix() {
    vyrescope::runtime::vyre_device::link();
    if vyrescope::runtime::load_driver().is_ok() {
        return; // a machine with a GPU: the lead's GPU run covers it
    }
    let e = acquire(CUDA_ID).err().expect("no CUDA driver here");
    let text = has_fix(&e);
    assert!(text.contains(CUDA_ID), "{text}");
}

#[test]
fn the_reference_backend_acquired_by_id_dispatches_random_vectors_every_way() {
    let be = reference();
    assert_eq!(be.id(), REFERENCE_ID);
    assert_eq!(be.max_workgroup_size(), [1024, 1024, 64]);
    assert!(be.supports_resident_dispatch() && be.supports_subgroup_ops());
    let mut rng = SplitMix64::new(45);
    let n = 1000;
    let (a, b) = (random_f32(&mut rng, n), random_f32(&mut rng, n));
    let want: Vec<u8> = bytes_f32(&a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<_>>());
    let p = vadd(n as u32);
    let inputs = vec![bytes_f32(&a), bytes_f32(&b)];
    let cfg = DispatchConfig::default();

    let out = be.dispatch(&p, &inputs, &cfg).unwrap();
    assert_eq!(out, vec![want.clone()]);

    let borrowed: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    assert_eq!(
        be.dispatch_borrowed(&p, &borrowed, &cfg).unwrap(),
        vec![want.clone()]
    );

    let timed = be.dispatch_borrowed_timed(&p, &borrowed, &cfg).unwrap();
    assert_eq!(timed.outputs, vec![want.clone()]);
    assert!(timed.wall_ns > 0);
    assert_eq!(timed.device_ns, None, "the interpreter has no device clock");

    let mut into = vec![vec![7u8; 3], vec![1u8]];
    be.dispatch_borrowed_into(&p, &borrowed, &cfg, &mut into)
        .unwrap();
    assert_eq!(into, vec![want.clone()]);

    let pending = be.dispatch_async(&p, &inputs, &cfg).unwrap();
    assert_eq!(pending.await_result().unwrap(), vec![want.clone()]);

    // The legacy form (one vector per buffer, outputs ignored) gives the same.
    let legacy = vec![bytes_f32(&a), bytes_f32(&b), vec![0xAB; n * 4]];
    assert_eq!(be.dispatch(&p, &legacy, &cfg).unwrap(), vec![want]);
}

#[test]
fn a_read_write_buffer_is_both_input_and_output_and_fixpoint_iterations_repeat() {
    let be = reference();
    let mut rng = SplitMix64::new(7);
    let data = random_u32(&mut rng, 300);
    let p = scale(300);
    let once: Vec<u32> = data
        .iter()
        .map(|x| x.wrapping_mul(3).wrapping_add(1))
        .collect();
    let out = be
        .dispatch(&p, &[bytes_u32(&data)], &DispatchConfig::default())
        .unwrap();
    assert_eq!(u32s(&out[0]), once);
    let mut cfg = DispatchConfig::default();
    cfg.fixpoint_iterations = Some(3);
    let thrice: Vec<u32> = data
        .iter()
        .map(|&x| (0..3).fold(x, |v, _| v.wrapping_mul(3).wrapping_add(1)))
        .collect();
    let out = be.dispatch(&p, &[bytes_u32(&data)], &cfg).unwrap();
    assert_eq!(u32s(&out[0]), thrice);
}

#[test]
fn workgroup_and_grid_overrides_are_honoured() {
    let be = reference();
    let p = local_ids(512);
    let out = be.dispatch(&p, &[], &DispatchConfig::default()).unwrap();
    assert_eq!(
        u32s(&out[0]),
        (0..512u32).map(|i| i % 256).collect::<Vec<_>>()
    );
    let mut cfg = DispatchConfig::default();
    cfg.workgroup_override = Some([64, 1, 1]);
    let out = be.dispatch(&p, &[], &cfg).unwrap();
    assert_eq!(
        u32s(&out[0]),
        (0..512u32).map(|i| i % 64).collect::<Vec<_>>()
    );
    // A grid of 2 workgroups of 64 covers 128 elements; the rest stay zero.
    cfg.grid_override = Some([2, 1, 1]);
    let out = be.dispatch(&p, &[], &cfg).unwrap();
    let want: Vec<u32> = (0..512u32)
        .map(|i| if i < 128 { i % 64 } else { 0 })
        .collect();
    assert_eq!(u32s(&out[0]), want);
}

#[test]
fn the_resident_api_works_through_the_acquired_handle() {
    let be = reference();
    let mut rng = SplitMix64::new(99);
    let n = 700usize;
    let (a, b) = (random_f32(&mut rng, n), random_f32(&mut rng, n));
    let ra = be.allocate_resident(n * 4).unwrap();
    let rb = be.allocate_resident(n * 4).unwrap();
    let rout = be.allocate_resident(n * 4).unwrap();
    // Fresh buffers read back zeroed.
    assert_eq!(be.download_resident(&rout).unwrap(), vec![0u8; n * 4]);
    be.upload_resident_many(&[(&ra, &bytes_f32(&a)), (&rb, &bytes_f32(&b))])
        .unwrap();
    let p = vadd(n as u32);
    let res = [ra.clone(), rb.clone(), rout.clone()];
    let t = be
        .dispatch_resident_timed(&p, &res, &DispatchConfig::default())
        .unwrap();
    assert!(t.outputs.is_empty(), "results stay resident");
    let sum: Vec<f32> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(be.download_resident(&rout).unwrap(), bytes_f32(&sum));

    // A ranged upload changes only its range; ranged downloads read parts.
    let patch = random_f32(&mut rng, 10);
    be.upload_resident_at(&ra, 40, &bytes_f32(&patch)).unwrap();
    let mut a2 = a.clone();
    a2[10..20].copy_from_slice(&patch);
    be.dispatch_resident_timed(&p, &res, &DispatchConfig::default())
        .unwrap();
    let sum2: Vec<f32> = a2.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(
        be.download_resident_range(&rout, 8, 100).unwrap(),
        bytes_f32(&sum2)[8..108].to_vec()
    );
    let (mut x, mut y) = (Vec::new(), vec![1u8; 5]);
    be.download_resident_ranges_into(&[(&rout, 0, 4), (&ra, 40, 40)], &mut [&mut x, &mut y])
        .unwrap();
    assert_eq!(x, bytes_f32(&sum2)[..4].to_vec());
    assert_eq!(y, bytes_f32(&patch));

    // A sequence: each step keeps its own workgroup (local ids show it), then reads.
    let ids = local_ids(n as u32);
    let rids = be.allocate_resident(n * 4).unwrap();
    let rids_res = [rids.clone()];
    let steps = [
        ResidentDispatchStep {
            program: &p,
            resources: &res,
            grid_override: None,
            workgroup_override: None,
        },
        ResidentDispatchStep {
            program: &ids,
            resources: &rids_res,
            grid_override: Some([(n as u32).div_ceil(32), 1, 1]),
            workgroup_override: Some([32, 1, 1]),
        },
    ];
    let reads = [
        ResidentReadRange {
            resource: &rids,
            byte_offset: 0,
            byte_len: n * 4,
        },
        ResidentReadRange {
            resource: &rout,
            byte_offset: 0,
            byte_len: n * 4,
        },
    ];
    let (mut got_ids, mut got_sum) = (Vec::new(), Vec::new());
    be.dispatch_resident_sequence_read_ranges_into(
        &steps,
        &reads,
        &mut [&mut got_ids, &mut got_sum],
    )
    .unwrap();
    assert_eq!(
        u32s(&got_ids),
        (0..n as u32).map(|i| i % 32).collect::<Vec<_>>()
    );
    assert_eq!(got_sum, bytes_f32(&sum2));

    // The repeated form: `scale` three times over resident data.
    let data = random_u32(&mut rng, 64);
    let rd = be.allocate_resident(64 * 4).unwrap();
    be.upload_resident(&rd, &bytes_u32(&data)).unwrap();
    let sp = scale(64);
    let rd_res = [rd.clone()];
    let rep = [ResidentDispatchStep {
        program: &sp,
        resources: &rd_res,
        grid_override: None,
        workgroup_override: None,
    }];
    let read = [ResidentReadRange {
        resource: &rd,
        byte_offset: 0,
        byte_len: 64 * 4,
    }];
    let mut got = Vec::new();
    be.dispatch_resident_repeated_sequence_read_ranges_into(&[], &rep, 3, &read, &mut [&mut got])
        .unwrap();
    let want: Vec<u32> = data
        .iter()
        .map(|&x| (0..3).fold(x, |v, _| v.wrapping_mul(3).wrapping_add(1)))
        .collect();
    assert_eq!(u32s(&got), want);

    // Misuse is refused with a Fix: wrong lengths, ranges, freed and foreign handles.
    has_fix(&be.upload_resident(&rd, &[1, 2, 3]).unwrap_err());
    has_fix(&be.upload_resident_at(&rd, 250, &[0; 8]).unwrap_err());
    has_fix(&be.download_resident_range(&rd, 200, 100).unwrap_err());
    has_fix(&be.allocate_resident(0).unwrap_err());
    has_fix(
        &be.dispatch_resident_timed(&sp, &[rd.clone(), rd.clone()], &DispatchConfig::default())
            .unwrap_err(),
    );
    has_fix(
        &be.dispatch_resident_timed(
            &sp,
            &[Resource::Borrowed(vec![0; 256])],
            &DispatchConfig::default(),
        )
        .unwrap_err(),
    );
    be.free_resident(rd.clone()).unwrap();
    has_fix(&be.download_resident(&rd).unwrap_err());
    has_fix(&be.free_resident(rd).unwrap_err());
    let other = reference();
    let text = has_fix(&other.download_resident(&ra).unwrap_err());
    assert!(text.contains("backend instance"), "{text}");
    for r in [ra, rb, rout, rids] {
        be.free_resident(r).unwrap();
    }
}

#[test]
fn try_recover_through_the_acquired_handle_leaves_a_working_backend() {
    let be = reference();
    assert!(!be.device_lost());
    be.prepare().unwrap();
    let mut rng = SplitMix64::new(3);
    let data = random_u32(&mut rng, 100);
    let r = be.allocate_resident(400).unwrap();
    be.upload_resident(&r, &bytes_u32(&data)).unwrap();
    be.try_recover().unwrap();
    assert!(!be.device_lost());
    // The interpreter keeps its buffers across a recovery; dispatch works after it.
    assert_eq!(be.download_resident(&r).unwrap(), bytes_u32(&data));
    let out = be
        .dispatch(&scale(100), &[bytes_u32(&data)], &DispatchConfig::default())
        .unwrap();
    assert_eq!(
        u32s(&out[0]),
        data.iter()
            .map(|x| x.wrapping_mul(3).wrapping_add(1))
            .collect::<Vec<_>>()
    );
    be.flush().unwrap();
    be.shutdown().unwrap();
    has_fix(&be.download_resident(&r).unwrap_err());
}

#[test]
fn bad_programs_and_inputs_give_backend_errors_with_a_fix() {
    let be = reference();
    let mut rng = SplitMix64::new(11);
    let a = bytes_f32(&random_f32(&mut rng, 64));
    let cfg = DispatchConfig::default();
    let p = vadd(64);
    // Wrong input count and a short input.
    let text = has_fix(&be.dispatch(&p, std::slice::from_ref(&a), &cfg).unwrap_err());
    assert!(text.contains("input"), "{text}");
    let text = has_fix(
        &be.dispatch(&p, &[a.clone(), a[..100].to_vec()], &cfg)
            .unwrap_err(),
    );
    assert!(text.contains("100 bytes"), "{text}");
    // A construct the import refuses names its code.
    let async_load = VP::wrapped(
        vec![
            VB::read("src", 0, DT::U32).with_count(64),
            VB::output("dst", 1, DT::U32).with_count(64),
            VB::workgroup("tile", 64, DT::U32),
        ],
        [64, 1, 1],
        vec![
            N::async_load_gpu_driven("src", "tile", E::u32(0), E::u32(64), Ident::from("t")),
            N::async_wait(Ident::from("t")),
            N::store("dst", E::gid_x(), E::load("tile", E::local_x())),
        ],
    );
    let text = has_fix(
        &be.dispatch(&async_load, std::slice::from_ref(&a), &cfg)
            .unwrap_err(),
    );
    assert!(text.contains("VY001"), "{text}");
    // A validator error (a barrier under a divergent branch) names the V code.
    let divergent = VP::wrapped(
        vec![
            VB::output("o", 0, DT::U32).with_count(64),
            VB::workgroup("t", 64, DT::U32),
        ],
        [64, 1, 1],
        vec![N::if_then(
            E::lt(E::local_x(), E::u32(3)),
            vec![N::barrier_with_ordering(MemoryOrdering::SeqCst)],
        )],
    );
    let text = has_fix(&be.dispatch(&divergent, &[], &cfg).unwrap_err());
    assert!(text.contains("[V"), "{text}");
    // Configuration the backend does not honour.
    let mut bad = DispatchConfig::default();
    bad.fixpoint_iterations = Some(0);
    has_fix(&be.dispatch(&p, &[a.clone(), a.clone()], &bad).unwrap_err());
    let mut bad = DispatchConfig::default();
    bad.workgroup_override = Some([2048, 1, 1]);
    has_fix(&be.dispatch(&p, &[a.clone(), a.clone()], &bad).unwrap_err());
    let mut bad = DispatchConfig::default();
    bad.max_output_bytes = Some(16);
    has_fix(&be.dispatch(&p, &[a.clone(), a], &bad).unwrap_err());
}

/// vyre's registry wrapper does not forward these; on our own type they are ours.
#[test]
fn methods_the_registry_wrapper_does_not_forward_work_on_our_type() {
    let be = VyrescopeBackend::new(REFERENCE_ID, ReferenceDevice::default()).unwrap();
    let n = 300usize;
    let ids = local_ids(n as u32);
    let r = be.allocate_resident(n * 4).unwrap();
    let res = [r.clone()];
    let steps = [ResidentDispatchStep {
        program: &ids,
        resources: &res,
        grid_override: Some([(n as u32).div_ceil(16), 1, 1]),
        workgroup_override: Some([16, 1, 1]),
    }];
    let read = [ResidentReadRange {
        resource: &r,
        byte_offset: 0,
        byte_len: n * 4,
    }];
    let mut got = Vec::new();
    let timing = be
        .dispatch_resident_sequence_read_ranges_timed_into(&steps, &read, &mut [&mut got])
        .unwrap();
    assert!(timing.wall_ns > 0);
    assert_eq!(
        u32s(&got),
        (0..n as u32).map(|i| i % 16).collect::<Vec<_>>()
    );

    let pending = be
        .dispatch_resident_async(&ids, &res, &DispatchConfig::default())
        .unwrap();
    assert!(pending.await_result().unwrap().is_empty());
    assert_eq!(
        u32s(&be.download_resident(&r).unwrap()),
        (0..n as u32).map(|i| i % 256).collect::<Vec<_>>()
    );

    // A grid barrier runs natively on the interpreter and fits (no residency limit).
    let grid = VP::wrapped(
        vec![VB::output("o", 0, DT::U32).with_count(64)],
        [32, 1, 1],
        vec![N::barrier_with_ordering(MemoryOrdering::GridSync)],
    );
    assert!(be
        .cooperative_grid_sync_fits(&grid, &[], &DispatchConfig::default())
        .unwrap());
    assert!(!be
        .cooperative_grid_sync_fits(&ids, &[], &DispatchConfig::default())
        .unwrap());
    let arc: Arc<dyn VyreBackend> = Arc::new(be);
    assert!(!arc.allows_host_grid_sync_split());
}

/// The op catalogue through vyre's contract: every entry's own vyre Program and fixture go
/// to `vyrescope-reference` acquired by id; every imported entry must give vyre's expected
/// bytes, and the refused ones must be exactly the documented refusals, refused by the
/// backend too (`InvalidProgram`, 1006).
#[test]
fn the_catalogue_through_vyres_registry_matches_every_importable_entry() {
    use vyrescope::harness::vyre_catalog::{run_catalog, CatalogBackend, Status};
    let be = reference();
    let rep = run_catalog(&mut CatalogBackend::Vyre(be.as_ref()), None).unwrap();
    assert_eq!(rep.backend, REFERENCE_ID);
    assert!(rep.totals.entries >= 240, "{:?}", rep.totals);
    let mut refused = std::collections::BTreeMap::new();
    for e in &rep.entries {
        if e.status == Status::Refused {
            assert!(e.detail.contains("backend error 1006"), "{e:?}");
            assert!(e.detail.contains("Fix:"), "{e:?}");
            refused.insert(e.id.clone(), e.codes.join(","));
            continue;
        }
        assert_eq!(e.status, Status::Matched, "{}: {}", e.id, e.detail);
        assert!(e.cases >= 1 && e.matched_cases == e.cases, "{e:?}");
    }
    assert_eq!(refused, super::vyre_catalog::documented_refusals());
    assert_eq!(rep.totals.matched, rep.totals.imported);
    assert!(rep.passed);
}

#[test]
fn selftest_vyre_backend_prints_the_catalogue_acquired_by_id() {
    let (code, out, err) = crate::support::cli::run(&[
        "selftest",
        "--vyre-backend",
        "--backend",
        "reference",
        "--only",
        "nn::relu",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["backend"], REFERENCE_ID);
    assert!(v["totals"]["matched"].as_u64().unwrap() >= 1, "{v}");
    assert_eq!(v["passed"], true);
    let (code, out, err) = crate::support::cli::run(&[
        "selftest",
        "--vyre-backend",
        "--backend",
        "reference",
        "--only",
        "nn::relu",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("selftest --vyre-backend PASSED"), "{out}");
    assert!(out.contains("acquired from vyre's registry"), "{out}");
}

/// The dispatch benchmark's code path (the workspace crate `vyrescope-dispatch-bench`) on the
/// interpreter acquired by id (small sizes, no timing claims): every result verified, rows
/// for each size and the reduction, the timed split as the interpreter reports it (wall time
/// only: it has no device clock), and the same in the table.
#[test]
fn selftest_vyre_dispatch_runs_verified_on_the_reference_backend() {
    let (code, out, err) = crate::support::cli::run(&[
        "selftest",
        "--vyre-dispatch",
        "--backend",
        "reference",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["backend"], REFERENCE_ID);
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    let sizes: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["program"].as_str().unwrap(),
                r["elements"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        [
            ("vadd_f32", 1 << 10),
            ("vadd_f32", 1 << 14),
            ("reduce_sum_u32", 1 << 14)
        ]
    );
    for r in rows {
        assert_eq!(r["verified"], true, "{r}");
        assert!(r["median_us"].as_f64().unwrap() > 0.0, "{r}");
        // No bandwidth without a device: no limit.
        assert!(r["limit_us"].is_null() && r["vs_limit"].is_null(), "{r}");
        let split = &r["split"];
        assert!(split["wall_us"].as_f64().unwrap() > 0.0, "{r}");
        for part in ["before_wait_us", "device_us", "after_wait_us"] {
            assert!(split[part].is_null(), "{part}: {r}");
        }
        assert!(r["resident_device_us"].is_null(), "{r}");
    }
    assert!(v["h2d_gbps"].is_null());
    assert_eq!(v["passed"], true);
    // Our own backend type, phase by phase, over the same cases.
    let phases = v["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), rows.len(), "{v}");
    for (p, r) in phases.iter().zip(rows) {
        assert_eq!(p["program"], r["program"], "{p}");
        assert_eq!(p["verified"], true, "{p}");
        assert!(p["wall_us"].as_f64().unwrap() > 0.0, "{p}");
    }
    // What recording costs: every dispatch recorded in full, every output right.
    let cap = &v["capture"];
    assert_eq!(cap["verified"], true, "{cap}");
    assert!(
        cap["records"].as_u64().unwrap() >= cap["repeats"].as_u64().unwrap(),
        "{cap}"
    );
    let (plain, captured) = (
        cap["plain_us"].as_f64().unwrap(),
        cap["captured_us"].as_f64().unwrap(),
    );
    assert!(plain > 0.0 && captured > 0.0, "{cap}");
    assert!(
        (cap["ratio"].as_f64().unwrap() - captured / plain).abs() < 1e-9,
        "{cap}"
    );
    let (code, out, err) =
        crate::support::cli::run(&["selftest", "--vyre-dispatch", "--backend", "reference"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("`{REFERENCE_ID}` acquired from vyre's registry")),
        "{out}"
    );
    // Three rows of the race table, the capture line, three rows of the phase table.
    assert_eq!(out.matches("verified").count(), 7, "{out}");
    assert!(out.contains("where a timed dispatch's time goes"), "{out}");
    assert!(
        out.contains(&format!("where {REFERENCE_ID}'s own dispatch time goes")),
        "{out}"
    );
    assert!(out.contains("capture overhead (vadd_f32"), "{out}");
    assert!(out.contains("selftest --vyre-dispatch PASSED"), "{out}");
}

/// On a machine with a GPU (skipped without a CUDA driver): `vyrescope-cuda`, acquired by
/// id, gives the reference backend's bytes for every dispatch form, a resident sequence with
/// a step's own workgroup, and recovers: after `try_recover` the old resident handles report
/// themselves stale with a `Fix:` and new work runs.
#[test]
fn on_a_gpu_the_cuda_backend_gives_the_reference_bytes_and_recovers() {
    vyrescope::runtime::vyre_device::link();
    if vyrescope::runtime::load_driver().is_err() {
        return;
    }
    let gpu = acquire(CUDA_ID).expect("a CUDA driver is present");
    let cpu = reference();
    assert!(gpu.supports_resident_dispatch());
    assert_eq!(gpu.device_profile().subgroup_size, 32);
    let mut rng = SplitMix64::new(2024);
    let cfg = DispatchConfig::default();
    for n in [1usize, 1000, 1 << 20] {
        let inputs = vec![
            bytes_f32(&random_f32(&mut rng, n)),
            bytes_f32(&random_f32(&mut rng, n)),
        ];
        let p = vadd(n as u32);
        let want = cpu.dispatch(&p, &inputs, &cfg).unwrap();
        assert_eq!(gpu.dispatch(&p, &inputs, &cfg).unwrap(), want, "{n}");
        let borrowed: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
        let t = gpu.dispatch_borrowed_timed(&p, &borrowed, &cfg).unwrap();
        assert_eq!(t.outputs, want);
        assert!(t.device_ns.is_some_and(|d| d > 0), "{t:?}");
    }
    let data = random_u32(&mut rng, 5000);
    let mut cfg3 = DispatchConfig::default();
    cfg3.fixpoint_iterations = Some(3);
    assert_eq!(
        gpu.dispatch(&scale(5000), &[bytes_u32(&data)], &cfg3)
            .unwrap(),
        cpu.dispatch(&scale(5000), &[bytes_u32(&data)], &cfg3)
            .unwrap()
    );
    // Resident: a sequence whose second step runs at workgroup 32.
    let n = 4096usize;
    let ids = local_ids(n as u32);
    let r = gpu.allocate_resident(n * 4).unwrap();
    let res = [r.clone()];
    let steps = [ResidentDispatchStep {
        program: &ids,
        resources: &res,
        grid_override: Some([(n as u32) / 32, 1, 1]),
        workgroup_override: Some([32, 1, 1]),
    }];
    let read = [ResidentReadRange {
        resource: &r,
        byte_offset: 0,
        byte_len: n * 4,
    }];
    let mut got = Vec::new();
    gpu.dispatch_resident_sequence_read_ranges_into(&steps, &read, &mut [&mut got])
        .unwrap();
    assert_eq!(
        u32s(&got),
        (0..n as u32).map(|i| i % 32).collect::<Vec<_>>()
    );
    let t = gpu
        .dispatch_resident_timed(&ids, &res, &DispatchConfig::default())
        .unwrap();
    assert!(t.device_ns.is_some(), "{t:?}");
    // Recovery: a fresh context; the old handle is stale, new work runs.
    gpu.try_recover().unwrap();
    assert!(!gpu.device_lost());
    has_fix(&gpu.download_resident(&r).unwrap_err());
    let inputs = vec![
        bytes_f32(&random_f32(&mut rng, 777)),
        bytes_f32(&random_f32(&mut rng, 777)),
    ];
    assert_eq!(
        gpu.dispatch(&vadd(777), &inputs, &cfg).unwrap(),
        cpu.dispatch(&vadd(777), &inputs, &cfg).unwrap()
    );
    gpu.free_resident(r).unwrap();
}

/// A device that reports a small memory (the interpreter underneath): outputs and resident
/// buffers past it are `DeviceOutOfMemory` before anything is allocated.
struct SmallDevice(ReferenceDevice);

impl vyrescope::vyre::backend::device::Device for SmallDevice {
    type Buffer = u64;
    fn limits(&self) -> vyrescope::vyre::backend::device::Limits {
        let mut l = self.0.limits();
        l.max_buffer_bytes = 4096;
        l
    }
    fn run(
        &mut self,
        key: u64,
        program: &vyrescope::ir::Program,
        shape: &vyrescope::shape::LaunchShape,
        buffers: &mut [vyrescope::inputs::HostBuffer],
        sources: &[vyrescope::inputs::Staged<'_>],
        opts: vyrescope::vyre::backend::device::RunOptions,
    ) -> vyrescope::vyre::backend::device::DeviceResult<vyrescope::vyre::backend::device::RunTimes>
    {
        self.0.run(key, program, shape, buffers, sources, opts)
    }
    fn alloc(&mut self, bytes: usize) -> vyrescope::vyre::backend::device::DeviceResult<u64> {
        self.0.alloc(bytes)
    }
    fn write(
        &mut self,
        b: &u64,
        offset: usize,
        bytes: &[u8],
    ) -> vyrescope::vyre::backend::device::DeviceResult<()> {
        self.0.write(b, offset, bytes)
    }
    fn read(
        &mut self,
        b: &u64,
        offset: usize,
        out: &mut [u8],
    ) -> vyrescope::vyre::backend::device::DeviceResult<()> {
        self.0.read(b, offset, out)
    }
    fn free(&mut self, b: u64) {
        self.0.free(b)
    }
    fn run_resident(
        &mut self,
        key: u64,
        program: &vyrescope::ir::Program,
        shape: &vyrescope::shape::LaunchShape,
        args: &[vyrescope::vyre::backend::device::ResidentArg<'_, u64>],
        opts: vyrescope::vyre::backend::device::RunOptions,
    ) -> vyrescope::vyre::backend::device::DeviceResult<vyrescope::vyre::backend::device::RunTimes>
    {
        self.0.run_resident(key, program, shape, args, opts)
    }
    fn finish(&mut self) -> vyrescope::vyre::backend::device::DeviceResult<()> {
        self.0.finish()
    }
    fn recover(&mut self) -> vyrescope::vyre::backend::device::DeviceResult<()> {
        self.0.recover()
    }
    fn lost(&self) -> bool {
        self.0.lost()
    }
    fn cache_counts(&self) -> Option<(u64, u64)> {
        self.0.cache_counts()
    }
    fn metrics(&self) -> Vec<(&'static str, u64)> {
        self.0.metrics()
    }
}

#[test]
fn outputs_and_buffers_larger_than_the_device_are_out_of_memory() {
    let be = VyrescopeBackend::new("small-test", SmallDevice(ReferenceDevice::default())).unwrap();
    assert_eq!(be.max_storage_buffer_bytes(), 4096);
    let mut rng = SplitMix64::new(5);
    let cfg = DispatchConfig::default();
    // 1024 f32 = 4096 bytes fits; 1025 does not.
    let ok = vec![
        bytes_f32(&random_f32(&mut rng, 1024)),
        bytes_f32(&random_f32(&mut rng, 1024)),
    ];
    assert_eq!(be.dispatch(&vadd(1024), &ok, &cfg).unwrap()[0].len(), 4096);
    let big = vec![
        bytes_f32(&random_f32(&mut rng, 1025)),
        bytes_f32(&random_f32(&mut rng, 1025)),
    ];
    let e = be.dispatch(&vadd(1025), &big, &cfg).unwrap_err();
    assert!(
        matches!(
            e,
            BackendError::DeviceOutOfMemory {
                requested: 4100,
                available: 4096
            }
        ),
        "{e:?}"
    );
    has_fix(&e);
    let e = be.allocate_resident(4097).unwrap_err();
    assert!(matches!(e, BackendError::DeviceOutOfMemory { .. }), "{e:?}");
    assert!(be.allocate_resident(4096).is_ok());
}
