//! Capture and replay (issue 46, feature `vyre`): a test application records real vyre
//! Programs with random inputs on vyre's own reference interpreter through the capturing
//! backend; `vyrescope replay` (our import and interpreter) finds no divergence; an output
//! edited by one element is reported at exactly that buffer and element; damaged captures
//! and usage errors give their exit codes and a `Fix:`; `--export` writes a Program folder
//! that `vyrescope run` reproduces.

use vyre_driver::backend::{DispatchConfig, VyreBackend};
use vyre_foundation::ir::Program as VP;
use vyrescope::harness::replay::{replay, Replayer};
use vyrescope::vyre::replay::VyreReference;
use vyrescope_capture::{capture_boxed, CaptureOptions};

use crate::support;
use crate::support::capture::{
    accumulate_program, edit_output, edit_read, json, ours, record_app, tmp_capture, u32_bytes,
    words, xor_program,
};

#[test]
fn a_recorded_application_replays_without_divergence() {
    let (_t, dir) = tmp_capture();
    let n = record_app(&dir, 1 << 30);
    // In the library, on both backends.
    let ours = ours();
    for backend in [ours.as_ref() as &dyn VyreBackend, &VyreReference] {
        let rep = replay(
            &dir,
            &Replayer {
                backend,
                fallback: Some(&VyreReference),
            },
            None,
        )
        .unwrap();
        assert_eq!(rep.totals.records as u64, n, "{rep:?}");
        assert_eq!(rep.totals.verified as u64, n, "{rep:?}");
        assert!(rep.passed);
    }
    // Through the binary.
    let d = dir.to_str().unwrap();
    let (code, out, err) = support::cli::run(&["replay", d]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("0 diverged, 0 failed"), "{out}");
    let (code, out, _) = support::cli::run(&["replay", d, "--json"]);
    assert_eq!(code, 0);
    let v = json(&out);
    assert_eq!(v["passed"], true);
    assert_eq!(v["totals"]["verified"], n);
    assert_eq!(v["recorded_on"], "vyre-reference");
    assert_eq!(v["backend"], "vyrescope-reference");
}

#[test]
fn an_edited_output_element_is_reported_exactly() {
    let (_t, dir) = tmp_capture();
    record_app(&dir, 1 << 30);
    // u32 element 517 of record 0's `out`.
    edit_output(&dir, 0, 0, |b| b[517 * 4] ^= 0x10);
    // f32 element 42 of record 1's `y`, one ulp up.
    edit_output(&dir, 1, 0, |b| {
        let w = u32::from_le_bytes(b[168..172].try_into().unwrap()) + 1;
        b[168..172].copy_from_slice(&w.to_le_bytes());
    });
    let d = dir.to_str().unwrap();
    let (code, out, err) = support::cli::run(&["replay", d]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("output 0 `out` element 517 (u32)"), "{out}");
    assert!(out.contains("output 0 `y` element 42 (f32)"), "{out}");
    assert!(out.contains("2 diverged"), "{out}");
    let (code, out, _) = support::cli::run(&["replay", d, "--only", "1", "--json"]);
    assert_eq!(code, 1);
    let v = json(&out);
    let div = &v["records"][0]["divergence"];
    assert_eq!(v["records"][0]["verdict"], "diverged");
    assert_eq!(div["buffer"], "y");
    assert_eq!(div["element"], 42);
    assert_eq!(div["ulps"], 1);
    assert_ne!(div["captured"], div["replayed"]);
    // The other records still verify.
    let (code, _, _) = support::cli::run(&["replay", d, "--only", "2"]);
    assert_eq!(code, 0);
}

#[test]
fn damaged_captures_fail_with_a_fix() {
    let (_t, dir) = tmp_capture();
    record_app(&dir, 1 << 30);
    let d = dir.to_str().unwrap();
    // A record cut short.
    let rec = dir.join("records/00000002.json");
    let text = std::fs::read(&rec).unwrap();
    std::fs::write(&rec, &text[..text.len() / 3]).unwrap();
    let (code, out, _) = support::cli::run(&["replay", d]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("00000002.json") && out.contains("ends early") && out.contains("Fix:"),
        "{out}"
    );
    std::fs::write(&rec, &text).unwrap();
    // A missing content file.
    let r0 = json(&std::fs::read_to_string(dir.join("records/00000000.json")).unwrap());
    let blob = format!("{}.bin", r0["event"]["inputs"][1]["hash"].as_str().unwrap());
    let saved = std::fs::read(dir.join("blobs").join(&blob)).unwrap();
    std::fs::remove_file(dir.join("blobs").join(&blob)).unwrap();
    let (code, out, _) = support::cli::run(&["replay", d, "--only", "0"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains(&blob) && out.contains("is missing") && out.contains("Fix:"),
        "{out}"
    );
    std::fs::write(dir.join("blobs").join(&blob), saved).unwrap();
    // Another format version.
    let m = dir.join("manifest.json");
    let text = std::fs::read_to_string(&m).unwrap();
    std::fs::write(&m, text.replace("\"version\": 1", "\"version\": 7")).unwrap();
    let (code, out, err) = support::cli::run(&["replay", d]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("version 7") && err.contains("Fix:"), "{err}");
    // Not a capture at all.
    let (code, _, err) = support::cli::run(&["replay", "fixtures/programs"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("not a capture") && err.contains("Fix:"),
        "{err}"
    );
}

#[test]
fn a_capture_past_its_limit_says_so_and_skips_with_a_fix() {
    let (_t, dir) = tmp_capture();
    // Room for the first dispatch only (its Program and three 4000-byte buffers).
    let n = record_app(&dir, 4 * 4000);
    let (code, out, err) = support::cli::run(&["replay", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("capture state: limit of 16000 bytes reached: records from 1 on"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "{n} records: 1 verified, 0 replayed, 0 diverged, 0 failed, {} skipped",
            n - 1
        )),
        "{out}"
    );
    assert!(
        out.contains("metadata only") && out.contains("VYRESCOPE_CAPTURE_LIMIT"),
        "{out}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let (_t, dir) = tmp_capture();
    record_app(&dir, 1 << 30);
    let d = dir.to_str().unwrap();
    for args in [
        vec!["replay", d, "--only", "99"],
        vec!["replay", d, "--backend", "warp-drive"],
        vec!["replay", d, "--export", "/nonexistent-never-written"],
    ] {
        let (code, out, err) = support::cli::run(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
    }
}

#[test]
fn an_exported_dispatch_runs_to_the_captured_outputs() {
    let (t, dir) = tmp_capture();
    record_app(&dir, 1 << 30);
    let out_dir = t.path().join("bug-0");
    let (code, out, err) = support::cli::run(&[
        "replay",
        dir.to_str().unwrap(),
        "--only",
        "2",
        "--export",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let program = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("a Program file");
    let dump = t.path().join("dump");
    let (code, out, err) = support::cli::run(&[
        "run",
        program.to_str().unwrap(),
        "--backend",
        "reference",
        "--dump",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let got = std::fs::read(dump.join("acc.bin")).unwrap();
    let want = std::fs::read(out_dir.join("expected/acc.bin")).unwrap();
    assert_eq!(got, want);
    // An export never replaces files.
    let (code, _, err) = support::cli::run(&[
        "replay",
        dir.to_str().unwrap(),
        "--only",
        "2",
        "--export",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
}

/// A host backend with the resident API: buffers in host memory; a resident dispatch writes
/// the XOR of every resource but the last into the last.
struct HostResident {
    owner: vyre_driver::backend::ResidentOwner,
    buffers: std::sync::Mutex<std::collections::HashMap<u64, Vec<u8>>>,
}

impl HostResident {
    fn new() -> Self {
        HostResident {
            owner: vyre_driver::backend::ResidentOwner::new().unwrap(),
            buffers: Default::default(),
        }
    }

    fn id_of(
        &self,
        r: &vyre_driver::backend::Resource,
    ) -> Result<u64, vyre_driver::backend::BackendError> {
        match r {
            vyre_driver::backend::Resource::Resident(h) => self.owner.resolve(*h, "host-resident"),
            _ => Err(vyre_driver::backend::BackendError::new(
                "Fix: resident only",
            )),
        }
    }
}

impl vyre_driver::backend::private::Sealed for HostResident {}

impl VyreBackend for HostResident {
    fn id(&self) -> &'static str {
        "host-resident"
    }

    fn dispatch(
        &self,
        _p: &VP,
        _i: &[Vec<u8>],
        _c: &DispatchConfig,
    ) -> Result<Vec<Vec<u8>>, vyre_driver::backend::BackendError> {
        Err(vyre_driver::backend::BackendError::new(
            "Fix: resident only",
        ))
    }

    fn supports_resident_dispatch(&self) -> bool {
        true
    }

    fn allocate_resident(
        &self,
        len: usize,
    ) -> Result<vyre_driver::backend::Resource, vyre_driver::backend::BackendError> {
        let mut m = self.buffers.lock().unwrap();
        let id = m.len() as u64 + 100;
        m.insert(id, vec![0; len]);
        Ok(vyre_driver::backend::Resource::Resident(
            self.owner.handle(id),
        ))
    }

    fn upload_resident(
        &self,
        r: &vyre_driver::backend::Resource,
        bytes: &[u8],
    ) -> Result<(), vyre_driver::backend::BackendError> {
        let id = self.id_of(r)?;
        let mut m = self.buffers.lock().unwrap();
        let b = m.get_mut(&id).unwrap();
        b[..bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    fn download_resident_into(
        &self,
        r: &vyre_driver::backend::Resource,
        out: &mut Vec<u8>,
    ) -> Result<(), vyre_driver::backend::BackendError> {
        let id = self.id_of(r)?;
        out.clear();
        out.extend_from_slice(&self.buffers.lock().unwrap()[&id]);
        Ok(())
    }

    fn free_resident(
        &self,
        r: vyre_driver::backend::Resource,
    ) -> Result<(), vyre_driver::backend::BackendError> {
        let id = self.id_of(&r)?;
        self.buffers.lock().unwrap().remove(&id);
        Ok(())
    }

    fn dispatch_resident_timed(
        &self,
        _p: &VP,
        resources: &[vyre_driver::backend::Resource],
        _c: &DispatchConfig,
    ) -> Result<vyre_driver::backend::TimedDispatchResult, vyre_driver::backend::BackendError> {
        let ids = resources
            .iter()
            .map(|r| self.id_of(r))
            .collect::<Result<Vec<_>, _>>()?;
        let mut m = self.buffers.lock().unwrap();
        let (last, ins) = ids.split_last().unwrap();
        let mut acc = vec![0u8; m[last].len()];
        for i in ins {
            for (a, x) in acc.iter_mut().zip(&m[i]) {
                *a ^= x;
            }
        }
        m.insert(*last, acc);
        Ok(vyre_driver::backend::TimedDispatchResult {
            outputs: Vec::new(),
            wall_ns: 1,
            device_ns: None,
            enqueue_ns: None,
            wait_ns: None,
        })
    }
}

#[test]
fn a_resident_sequence_replays_and_a_changed_read_diverges() {
    let (_t, dir) = tmp_capture();
    let b = capture_boxed(
        Box::new(HostResident::new()),
        &dir,
        CaptureOptions::default(),
    );
    let p = xor_program(64);
    let (a, c) = (u32_bytes(&words(40, 64)), u32_bytes(&words(41, 64)));
    let ra = b.allocate_resident(256).unwrap();
    let rc = b.allocate_resident(256).unwrap();
    let ro = b.allocate_resident(256).unwrap();
    b.upload_resident(&ra, &a).unwrap();
    b.upload_resident(&rc, &c).unwrap();
    b.dispatch_resident_timed(&p, &[ra, rc, ro.clone()], &DispatchConfig::default())
        .unwrap();
    let got = b.download_resident(&ro).unwrap();
    assert_eq!(
        got,
        a.iter().zip(&c).map(|(x, y)| x ^ y).collect::<Vec<u8>>()
    );
    b.free_resident(ro).unwrap();
    drop(b);
    let fresh = HostResident::new();
    let on = |backend: &dyn VyreBackend| replay_whole(&dir, backend);
    let rep = on(&fresh);
    assert!(rep.passed, "{rep:?}");
    assert_eq!(rep.totals.records, 8);
    assert_eq!(rep.totals.verified, 1, "the read is compared: {rep:?}");
    assert_eq!(rep.totals.replayed, 7, "{rep:?}");
    // vyrescope-reference (acquired from vyre's registry) has the resident API too: the
    // same records replay on it.
    let ours = ours();
    let rep = on(ours.as_ref());
    assert!(rep.passed, "{rep:?}");
    assert_eq!(rep.totals.skipped, 0, "{rep:?}");
    assert_eq!(rep.totals.verified, 1, "the read is compared: {rep:?}");
    // A read that differs (byte 9 of the downloaded buffer) is a divergence at that byte.
    edit_read(&dir, 6, 0, |b| b[9] ^= 1);
    let rep = on(&HostResident::new());
    assert!(!rep.passed);
    let d = rep.records[6].divergence.as_ref().expect("a divergence");
    assert_eq!(d.element, 9);
    assert!(d.buffer.starts_with("read 0"), "{d:?}");
}

/// Resident sequences replay as one call again, each step with its captured grid and
/// workgroup overrides and the repeated steps the captured number of times; their reads are
/// compared, and a changed read is a divergence at its byte.
#[test]
fn resident_sequences_replay_with_their_overrides_and_a_changed_read_diverges() {
    use vyre_driver::backend::{ResidentDispatchStep, ResidentReadRange};
    let (_t, dir) = tmp_capture();
    let b = recording_reference(&dir);
    let (a, x) = (words(50, 256), words(51, 256));
    let acc = b.allocate_resident(1024).unwrap();
    let ra = b.allocate_resident(1024).unwrap();
    b.upload_resident(&acc, &u32_bytes(&a)).unwrap();
    b.upload_resident(&ra, &u32_bytes(&x)).unwrap();
    // acc += x, once at the Program's own workgroup, once at 32 x 8.
    let p = accumulate_program();
    let res = [acc.clone(), ra.clone()];
    let steps = [
        ResidentDispatchStep {
            program: &p,
            resources: &res,
            grid_override: None,
            workgroup_override: None,
        },
        ResidentDispatchStep {
            program: &p,
            resources: &res,
            grid_override: Some([8, 1, 1]),
            workgroup_override: Some([32, 1, 1]),
        },
    ];
    let read = [ResidentReadRange {
        resource: &acc,
        byte_offset: 16,
        byte_len: 512,
    }];
    let after = |times: u32| -> Vec<u8> {
        let v: Vec<u32> = a
            .iter()
            .zip(&x)
            .map(|(a, x)| a.wrapping_add(x.wrapping_mul(times)))
            .collect();
        u32_bytes(&v[4..132])
    };
    let mut got = Vec::new();
    b.dispatch_resident_sequence_read_ranges_into(&steps, &read, &mut [&mut got])
        .unwrap();
    assert_eq!(got, after(2));
    let mut got = Vec::new();
    b.dispatch_resident_repeated_sequence_read_ranges_into(
        &steps[..1],
        &steps[1..],
        3,
        &read,
        &mut [&mut got],
    )
    .unwrap();
    assert_eq!(got, after(6));
    b.free_resident(acc).unwrap();
    b.free_resident(ra).unwrap();
    drop(b);
    for i in [4, 5] {
        let rec = json(&std::fs::read_to_string(dir.join(format!("records/{i:08}.json"))).unwrap());
        assert_eq!(rec["event"]["kind"], "sequence", "{rec}");
    }
    let on = |backend: &dyn VyreBackend| replay_whole(&dir, backend);
    let ours = ours();
    let rep = on(ours.as_ref());
    assert!(rep.passed, "{rep:?}");
    assert_eq!(rep.totals.records, 8, "{rep:?}");
    assert_eq!(rep.totals.skipped, 0, "{rep:?}");
    assert_eq!(
        rep.totals.verified, 2,
        "both sequences' reads compared: {rep:?}"
    );
    // The repeated sequence's read with its byte 5 changed: a divergence at that byte.
    edit_read(&dir, 5, 0, |b| b[5] ^= 0x40);
    let rep = on(ours.as_ref());
    assert!(!rep.passed);
    assert_eq!(rep.totals.verified, 1, "{rep:?}");
    let d = rep.records[5].divergence.as_ref().expect("a divergence");
    assert_eq!(d.element, 5);
    assert!(d.buffer.starts_with("read 0"), "{d:?}");
}

/// The application the race binary records on vyre-driver-cuda (`--capture DIR`), recorded
/// here on `vyrescope-reference`: every call replays on our backend, its dispatches, resident
/// dispatches and sequence reads compared, none skipped.
#[test]
fn the_race_binarys_recorded_application_replays_whole() {
    let (_t, dir) = tmp_capture();
    let b = recording_reference(&dir);
    let w = vyrescope_dispatch_bench::record_workload(&b).unwrap();
    assert!(w.verified, "{w:?}");
    assert_eq!(w.dispatches, 6);
    assert_eq!(
        w.resident_calls, 10,
        "vyrescope-reference has the resident API"
    );
    b.flush_capture();
    drop(b);
    let rep = replay_whole(&dir, ours().as_ref());
    assert!(rep.passed, "{rep:?}");
    assert_eq!(rep.totals.records, 16, "{rep:?}");
    assert_eq!(rep.totals.skipped, 0, "{rep:?}");
    // Six dispatches, the download after the resident dispatch and the sequence's read (a
    // resident dispatch returns no outputs of its own: it is `replayed`).
    assert_eq!(rep.totals.verified, 8, "{rep:?}");
}

/// `vyrescope-reference` (from vyre's registry) recording into `dir`.
fn recording_reference(dir: &std::path::Path) -> vyrescope_capture::CapturingBackend {
    vyrescope::runtime::vyre_device::link();
    let inner = vyre_driver::backend::acquire("vyrescope-reference").unwrap();
    capture_boxed(inner, dir, CaptureOptions::default())
}

/// The whole capture in `dir` replayed on `backend`, without a fallback.
fn replay_whole(
    dir: &std::path::Path,
    backend: &dyn VyreBackend,
) -> vyrescope::harness::replay::ReplayReport {
    replay(
        dir,
        &Replayer {
            backend,
            fallback: None,
        },
        None,
    )
    .unwrap()
}
