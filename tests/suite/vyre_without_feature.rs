//! A build without the `vyre` feature recognises vyre files by their first bytes (no vyre
//! code needed) and says how to enable the feature, instead of a JSON error about UTF-8.

use std::path::PathBuf;
use std::process::Command;

use vyrescope::ir::load_program;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/vyre")
        .join(name)
}

#[test]
fn vyre_files_say_how_to_enable_the_feature() {
    for (name, kind) in [
        ("vadd_f32.vyre", "vyre wire file"),
        ("vadd_f32.vyre.txt", "vyre text file"),
    ] {
        let e = load_program(&fixture(name)).unwrap_err();
        assert!(e.message.contains(kind), "{e}");
        assert!(e.fix.contains("--features vyre"), "{e}");
        let loaded = vyrescope::validate::load(&fixture(name));
        assert_eq!(loaded.first_error().unwrap().code, "V000");
    }
    let t = tempfile::tempdir().unwrap();
    for args in [
        vec!["check"],
        vec!["import"],
        vec!["emit"],
        vec!["run", "--backend", "reference"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
            .args(&args[..1])
            .arg(fixture("saxpy_f32.vyre"))
            .args(&args[1..])
            .current_dir(t.path())
            .env("HOME", t.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}: {text}");
        assert!(
            text.contains("vyre wire file")
                && text.contains("cargo build --release --features vyre"),
            "{args:?}: {text}"
        );
        // A valid vyre file is never called invalid: this build cannot read it, and says so.
        assert!(!text.contains("INVALID"), "{args:?}: {text}");
        assert!(!text.contains("not a valid vyre file"), "{args:?}: {text}");
        if args[0] == "check" {
            assert!(text.contains("NOT CHECKED"), "{text}");
        }
    }
}

#[test]
fn plan_vyre_flags_say_how_to_enable_the_feature() {
    let t = tempfile::tempdir().unwrap();
    let pipeline = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/chain.json");
    for flags in [
        vec!["--vyre"],
        vec!["--vyre-budget", "5"],
        vec!["--vyre-candidates", "2", "--json"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
            .arg("plan")
            .arg(&pipeline)
            .args(&flags)
            .current_dir(t.path())
            .env("HOME", t.path())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(1), "{flags:?}: {text}");
        assert!(
            text.contains("--features vyre") && !text.contains("panicked"),
            "{flags:?}: {text}"
        );
    }
    // A graph file: the loader's error, with the same fix.
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .arg("plan")
        .arg(fixture("graphs/chain.vgr"))
        .current_dir(t.path())
        .env("HOME", t.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("Fix:") && err.contains("--features vyre"),
        "{err}"
    );
}

#[test]
fn inspector_plan_tab_v_says_how_to_enable_the_feature() {
    let t = tempfile::tempdir().unwrap();
    let pipeline = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/chain.json");
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .arg("tui")
        .arg(&pipeline)
        .args(["--keys", "7 V e", "--size", "80x24", "--snapshot", "-"])
        .current_dir(t.path())
        .env("HOME", t.path())
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{screen}");
    assert!(
        screen.contains("built without vyre")
            && screen.contains("Fix: rebuild with `cargo build --release --features vyre`"),
        "{screen}"
    );
}

/// A capture folder (its manifest names the capture format) opened by a build without vyre
/// support says how to get it, and a folder with an unrelated `manifest.json` still opens as
/// a folder of Programs.
#[test]
fn a_capture_folder_says_how_to_enable_the_feature() {
    let t = tempfile::tempdir().unwrap();
    let cap = t.path().join("cap");
    std::fs::create_dir_all(cap.join("records")).unwrap();
    std::fs::write(
        cap.join("manifest.json"),
        r#"{"format": "vyrescope-capture", "version": 1}"#,
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args([
            "tui",
            cap.to_str().unwrap(),
            "--keys",
            "",
            "--snapshot",
            "-",
        ])
        .env("HOME", t.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("vyre support") && err.contains("--features vyre"),
        "{err}"
    );
    // Not a capture: the manifest is some other JSON, next to a Program.
    let other = t.path().join("programs");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("manifest.json"), r#"{"name": "not a capture"}"#).unwrap();
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json"),
        other.join("vadd_f32.json"),
    )
    .unwrap();
    assert!(!vyrescope::tui::capture::is_capture_dir(&other));
    assert!(vyrescope::tui::capture::is_capture_dir(&cap));
}
