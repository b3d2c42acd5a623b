//! Recording: what the capturing backend writes, and that it never changes results.

mod common;

use std::sync::Arc;

use common::{random_bytes, xor_program, XorBackend};
use vyre_driver::backend::{DispatchConfig, VyreBackend};
use vyrescope_capture::format::{CallResult, CaptureState, DataState, Event, ResourceRef};
use vyrescope_capture::{capture_boxed, Capture, CaptureOptions, CaptureStatus, ReadError};

fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn records_dispatches_and_reads_them_back() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let b = capture_boxed(Box::new(XorBackend::new()), &dir, CaptureOptions::default());
    assert_eq!(b.status(), CaptureStatus::Recording);
    let p = xor_program(64);
    let a = random_bytes(1, 256);
    let c = random_bytes(2, 256);
    let d = random_bytes(3, 256);
    let mut cfg = DispatchConfig::default();
    cfg.grid_override = Some([1, 1, 1]);
    cfg.label = Some("first".into());
    let r0 = b.dispatch(&p, &[a.clone(), c.clone()], &cfg).unwrap();
    let r1 = b
        .dispatch_borrowed(&p, &[&a, &d], &DispatchConfig::default())
        .unwrap();
    let r2 = b
        .dispatch_borrowed_timed(&p, &[&a, &c], &DispatchConfig::default())
        .unwrap();
    // The wrapped backend's answers, unchanged.
    let plain = XorBackend::new();
    assert_eq!(
        r0,
        plain.dispatch(&p, &[a.clone(), c.clone()], &cfg).unwrap()
    );
    assert_eq!(
        r1,
        plain.dispatch(&p, &[a.clone(), d.clone()], &cfg).unwrap()
    );
    assert_eq!(r2.outputs, r0);
    assert_eq!(b.id(), "xor-test");
    b.flush_capture();

    let cap = Capture::open(&dir).unwrap();
    assert_eq!(cap.manifest().backend.id, "xor-test");
    assert_eq!(cap.manifest().backend.version, "9.9.9");
    assert_eq!(cap.manifest().state, CaptureState::Full);
    assert_eq!(cap.indices().unwrap(), vec![0, 1, 2]);
    let l0 = cap.load(0).unwrap();
    assert_eq!(l0.record.call, "dispatch");
    assert_eq!(l0.inputs, vec![a.clone(), c.clone()]);
    assert_eq!(l0.outputs, r0);
    let Event::Dispatch { config, .. } = &l0.record.event else {
        panic!("not a dispatch")
    };
    assert_eq!(config.to_config().unwrap(), cfg);
    assert_eq!(l0.program(&cap).unwrap(), p);
    let l1 = cap.load(1).unwrap();
    assert_eq!(l1.record.call, "dispatch_borrowed");
    assert_eq!(l1.inputs, vec![a.clone(), d.clone()]);
    assert_eq!(l1.outputs, r1);
    let l2 = cap.load(2).unwrap();
    assert_eq!(l2.record.timing.backend_wall_ns, Some(r2.wall_ns));
    assert!(l2.record.timing.host_ns > 0);
    // One Program; blobs a, c, d, a^c, a^d: identical contents stored once.
    assert_eq!(files_in(&dir.join("programs")), 1);
    assert_eq!(files_in(&dir.join("blobs")), 5);
    // No temporary files left behind.
    assert_eq!(files_in(&dir.join("records")), 3);
}

#[test]
fn errors_pass_through_and_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let b = capture_boxed(Box::new(XorBackend::new()), &dir, CaptureOptions::default());
    let mut cfg = DispatchConfig::default();
    cfg.label = Some("fail".into());
    let p = xor_program(4);
    let inputs = [random_bytes(4, 16), random_bytes(5, 16)];
    let got = b.dispatch(&p, &inputs, &cfg).unwrap_err();
    let want = XorBackend::new().dispatch(&p, &inputs, &cfg).unwrap_err();
    assert_eq!(got, want);
    b.flush_capture();
    let r = Capture::open(&dir).unwrap().record(0).unwrap();
    let CallResult::Error { code, message } = r.result else {
        panic!("recorded as ok")
    };
    assert_eq!(code, 1005);
    assert!(message.contains("asked to fail"), "{message}");
}

#[test]
fn resident_calls_are_recorded_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let b = capture_boxed(Box::new(XorBackend::new()), &dir, CaptureOptions::default());
    let p = xor_program(16);
    let a = random_bytes(6, 64);
    let c = random_bytes(7, 64);
    let ra = b.allocate_resident(64).unwrap();
    let rc = b.allocate_resident(64).unwrap();
    let ro = b.allocate_resident(64).unwrap();
    b.upload_resident(&ra, &a).unwrap();
    b.upload_resident_at(&rc, 0, &c).unwrap();
    let t = b
        .dispatch_resident_timed(
            &p,
            &[ra.clone(), rc.clone(), ro.clone()],
            &DispatchConfig::default(),
        )
        .unwrap();
    assert_eq!(t.device_ns, Some(3));
    let out = b.download_resident(&ro).unwrap();
    let want: Vec<u8> = a.iter().zip(&c).map(|(x, y)| x ^ y).collect();
    assert_eq!(out, want);
    b.free_resident(ro.clone()).unwrap();
    b.flush_capture();

    let cap = Capture::open(&dir).unwrap();
    let kinds: Vec<String> = cap
        .indices()
        .unwrap()
        .into_iter()
        .map(|i| cap.record(i).unwrap().call)
        .collect();
    assert_eq!(
        kinds,
        [
            "allocate_resident",
            "allocate_resident",
            "allocate_resident",
            "upload_resident",
            "upload_resident_at",
            "dispatch_resident_timed",
            "download_resident",
            "free_resident"
        ]
    );
    let Event::Allocate {
        resource: Some(ResourceRef::Resident { handle: h_out, .. }),
        ..
    } = cap.record(2).unwrap().event
    else {
        panic!("allocation without a handle")
    };
    let Event::Download { reads } = cap.record(6).unwrap().event else {
        panic!("not a download")
    };
    assert!(matches!(reads[0].resource, ResourceRef::Resident { handle, .. } if handle == h_out));
    assert_eq!(cap.blob(reads[0].data.as_ref().unwrap()).unwrap(), want);
    let rd = cap.record(5).unwrap();
    assert_eq!(rd.timing.device_ns, Some(3));
    let Event::ResidentDispatch { resources, .. } = rd.event else {
        panic!("not a resident dispatch")
    };
    assert_eq!(resources.len(), 3);
}

#[test]
fn async_dispatch_is_recorded_when_awaited() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let b = capture_boxed(Box::new(XorBackend::new()), &dir, CaptureOptions::default());
    let p = xor_program(8);
    let inputs = vec![random_bytes(8, 32), random_bytes(9, 32)];
    let pending = b
        .dispatch_async(&p, &inputs, &DispatchConfig::default())
        .unwrap();
    let out = pending.await_result().unwrap();
    b.flush_capture();
    let l = Capture::open(&dir).unwrap().load(0).unwrap();
    assert_eq!(l.record.call, "dispatch_async");
    assert_eq!(l.inputs, inputs);
    assert_eq!(l.outputs, out);
}

#[test]
fn many_threads_record_every_call() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let b = Arc::new(capture_boxed(
        Box::new(XorBackend::new()),
        &dir,
        CaptureOptions::default(),
    ));
    let p = xor_program(8);
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            let b = b.clone();
            let p = p.clone();
            std::thread::spawn(move || {
                for k in 0..25u64 {
                    let ins = vec![random_bytes(t * 100 + k, 32), random_bytes(7, 32)];
                    b.dispatch(&p, &ins, &DispatchConfig::default()).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    b.flush_capture();
    let cap = Capture::open(&dir).unwrap();
    assert_eq!(cap.indices().unwrap(), (0..100).collect::<Vec<u64>>());
    for i in 0..100 {
        let l = cap.load(i).unwrap();
        let want: Vec<u8> = l.inputs[0]
            .iter()
            .zip(&l.inputs[1])
            .map(|(x, y)| x ^ y)
            .collect();
        assert_eq!(l.outputs, vec![want]);
    }
}

#[test]
fn past_the_limit_records_carry_metadata_only() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let p = xor_program(64);
    let wire = p.to_wire().unwrap().len() as u64;
    // Room for the Program and the first dispatch's three buffers, not for a fourth.
    let limit = wire + 3 * 256 + 100;
    let b = capture_boxed(
        Box::new(XorBackend::new()),
        &dir,
        CaptureOptions { limit_bytes: limit },
    );
    let r0 = b
        .dispatch(
            &p,
            &[random_bytes(10, 256), random_bytes(11, 256)],
            &DispatchConfig::default(),
        )
        .unwrap();
    let r1 = b
        .dispatch(
            &p,
            &[random_bytes(12, 256), random_bytes(13, 256)],
            &DispatchConfig::default(),
        )
        .unwrap();
    b.flush_capture();
    assert_eq!(b.status(), CaptureStatus::MetadataOnly);
    let r2 = b
        .dispatch(
            &p,
            &[random_bytes(14, 256), random_bytes(15, 256)],
            &DispatchConfig::default(),
        )
        .unwrap();
    // A small record that would still fit under the limit stays without data too (the
    // writer's own check is pinned by a unit test in writer.rs).
    b.dispatch(
        &p,
        &[random_bytes(22, 4), random_bytes(23, 4)],
        &DispatchConfig::default(),
    )
    .unwrap();
    assert_eq!(r0[0].len(), 256);
    assert_eq!(r1[0].len(), 256);
    assert_eq!(r2[0].len(), 256);
    b.flush_capture();
    let cap = Capture::open(&dir).unwrap();
    assert_eq!(
        cap.manifest().state,
        CaptureState::LimitReached {
            first_metadata_only: 1
        }
    );
    assert_eq!(cap.record(0).unwrap().data, DataState::Full);
    assert_eq!(cap.record(3).unwrap().data, DataState::MetadataOnly);
    for i in [1, 2] {
        let r = cap.record(i).unwrap();
        assert_eq!(r.data, DataState::MetadataOnly);
        let Event::Dispatch {
            program, inputs, ..
        } = &r.event
        else {
            panic!("not a dispatch")
        };
        assert_eq!(program.hash, None);
        assert_eq!(inputs[0].bytes, 256);
        let e = cap.load(i).unwrap_err();
        assert!(matches!(e, ReadError::NoData { .. }), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("Fix:") && text.contains("VYRESCOPE_CAPTURE_LIMIT"),
            "{text}"
        );
    }
}

#[test]
fn an_unwritable_folder_leaves_results_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    // A folder below a regular file cannot be created (whoever runs the test, root too).
    let file = tmp.path().join("plain-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let b = capture_boxed(
        Box::new(XorBackend::new()),
        file.join("cap"),
        CaptureOptions::default(),
    );
    assert!(matches!(b.status(), CaptureStatus::Off(ref r) if r.contains("Fix:")));
    let p = xor_program(16);
    let ins = vec![random_bytes(16, 64), random_bytes(17, 64)];
    let plain = XorBackend::new().dispatch(&p, &ins, &DispatchConfig::default());
    assert_eq!(b.dispatch(&p, &ins, &DispatchConfig::default()), plain);
}

#[test]
fn a_write_failure_stops_recording_and_keeps_results() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let b = capture_boxed(Box::new(XorBackend::new()), &dir, CaptureOptions::default());
    let p = xor_program(16);
    let ins = vec![random_bytes(18, 64), random_bytes(19, 64)];
    b.dispatch(&p, &ins, &DispatchConfig::default()).unwrap();
    b.flush_capture();
    // The blobs folder becomes a file: the next new content cannot be written.
    std::fs::remove_dir_all(dir.join("blobs")).unwrap();
    std::fs::write(dir.join("blobs"), b"in the way").unwrap();
    let ins2 = vec![random_bytes(20, 64), random_bytes(21, 64)];
    let plain = XorBackend::new().dispatch(&p, &ins2, &DispatchConfig::default());
    assert_eq!(b.dispatch(&p, &ins2, &DispatchConfig::default()), plain);
    b.flush_capture();
    assert_eq!(b.status(), CaptureStatus::Stopped);
    // Later calls still answer, and are not recorded.
    assert_eq!(b.dispatch(&p, &ins2, &DispatchConfig::default()), plain);
    b.flush_capture();
    let cap = Capture::open(&dir).unwrap();
    assert!(matches!(
        cap.manifest().state,
        CaptureState::Stopped {
            last_written: Some(0),
            ..
        }
    ));
    assert_eq!(cap.indices().unwrap(), vec![0]);
}

#[test]
fn a_folder_with_files_is_not_reused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("keep.txt"), b"mine").unwrap();
    let b = capture_boxed(
        Box::new(XorBackend::new()),
        tmp.path(),
        CaptureOptions::default(),
    );
    assert!(matches!(b.status(), CaptureStatus::Off(ref r) if r.contains("not empty")));
    assert_eq!(std::fs::read(tmp.path().join("keep.txt")).unwrap(), b"mine");
}
