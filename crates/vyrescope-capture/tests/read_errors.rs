//! Reading damaged captures: every case is an error naming the file, with a `Fix:`.

mod common;

use common::{random_bytes, xor_program, XorBackend};
use vyre_driver::backend::{DispatchConfig, VyreBackend};
use vyrescope_capture::format::Event;
use vyrescope_capture::{capture_boxed, Capture, CaptureOptions, ReadError};

/// A capture of two dispatches in a fresh temporary folder.
fn recorded() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cap");
    let b = capture_boxed(Box::new(XorBackend::new()), &dir, CaptureOptions::default());
    let p = xor_program(32);
    for s in [30, 40] {
        b.dispatch(
            &p,
            &[random_bytes(s, 128), random_bytes(s + 1, 128)],
            &DispatchConfig::default(),
        )
        .unwrap();
    }
    drop(b); // joins the writer
    (tmp, dir)
}

fn assert_fix(e: &ReadError, file: &str) {
    let text = e.to_string();
    assert!(text.contains("Fix:"), "no Fix: in {text}");
    assert!(text.contains(file), "{file} not named in {text}");
}

#[test]
fn a_truncated_record_is_reported_as_cut_short() {
    let (_tmp, dir) = recorded();
    let path = dir.join("records/00000001.json");
    let text = std::fs::read(&path).unwrap();
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    let cap = Capture::open(&dir).unwrap();
    let e = cap.load(1).unwrap_err();
    assert!(matches!(e, ReadError::Malformed { .. }), "{e:?}");
    assert!(e.to_string().contains("ends early"), "{e}");
    assert_fix(&e, "00000001.json");
    // The other record still loads.
    cap.load(0).unwrap();
}

#[test]
fn a_missing_buffer_file_is_named() {
    let (_tmp, dir) = recorded();
    let cap = Capture::open(&dir).unwrap();
    let r = cap.record(0).unwrap();
    let Event::Dispatch { outputs, .. } = &r.event else {
        panic!("not a dispatch")
    };
    let blob = cap.blob_path(&outputs[0]);
    std::fs::remove_file(&blob).unwrap();
    let e = cap.load(0).unwrap_err();
    assert!(matches!(e, ReadError::MissingFile { .. }), "{e:?}");
    assert_fix(&e, blob.file_name().unwrap().to_str().unwrap());
}

#[test]
fn a_missing_program_file_is_named() {
    let (_tmp, dir) = recorded();
    for f in std::fs::read_dir(dir.join("programs")).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    let e = Capture::open(&dir).unwrap().load(0).unwrap_err();
    assert!(matches!(e, ReadError::MissingFile { .. }), "{e:?}");
    assert_fix(&e, ".vyre");
}

#[test]
fn a_changed_buffer_is_corrupt() {
    let (_tmp, dir) = recorded();
    let cap = Capture::open(&dir).unwrap();
    let r = cap.record(1).unwrap();
    let Event::Dispatch { inputs, .. } = &r.event else {
        panic!("not a dispatch")
    };
    let blob = cap.blob_path(&inputs[0]);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[5] ^= 0x40;
    std::fs::write(&blob, &bytes).unwrap();
    let e = cap.load(1).unwrap_err();
    assert!(matches!(e, ReadError::Corrupt { .. }), "{e:?}");
    assert_fix(&e, blob.file_name().unwrap().to_str().unwrap());
}

#[test]
fn another_version_is_refused_by_version() {
    let (_tmp, dir) = recorded();
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"version\": 1", "\"version\": 99")).unwrap();
    let e = Capture::open(&dir).unwrap_err();
    assert!(
        matches!(e, ReadError::WrongVersion { found: 99, .. }),
        "{e:?}"
    );
    assert_fix(&e, "manifest.json");
}

#[test]
fn a_record_of_another_version_is_refused_by_version() {
    let (_tmp, dir) = recorded();
    let path = dir.join("records/00000000.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("\"version\": 1", "\"version\": 2", 1)).unwrap();
    let e = Capture::open(&dir).unwrap().record(0).unwrap_err();
    assert!(
        matches!(e, ReadError::WrongVersion { found: 2, .. }),
        "{e:?}"
    );
    assert_fix(&e, "00000000.json");
}

#[test]
fn a_folder_without_manifest_is_not_a_capture() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("vadd.json"), b"{}").unwrap();
    let e = Capture::open(tmp.path()).unwrap_err();
    assert!(matches!(e, ReadError::NotACapture { .. }), "{e:?}");
    assert_fix(&e, "manifest.json");
}

#[test]
fn a_manifest_of_another_format_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("manifest.json"),
        br#"{"format": "something-else", "version": 1}"#,
    )
    .unwrap();
    let e = Capture::open(tmp.path()).unwrap_err();
    assert!(matches!(e, ReadError::WrongFormat { .. }), "{e:?}");
    assert_fix(&e, "manifest.json");
}

#[test]
fn an_index_past_the_end_is_reported_with_the_count() {
    let (_tmp, dir) = recorded();
    let e = Capture::open(&dir).unwrap().load(7).unwrap_err();
    assert!(matches!(e, ReadError::NoRecord { count: 2, .. }), "{e:?}");
    assert_fix(&e, "00000007.json");
}

#[test]
fn garbage_program_bytes_are_refused_by_the_decoder() {
    let (_tmp, dir) = recorded();
    let e = vyrescope_capture::read::decode_program(&random_bytes(3, 200), &dir.join("x.vyre"))
        .unwrap_err();
    assert!(matches!(e, ReadError::BadProgram { .. }), "{e:?}");
    assert_fix(&e, "x.vyre");
}
