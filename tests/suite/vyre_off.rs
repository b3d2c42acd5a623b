//! Without the `vyre` feature the vyre commands exist but say how to turn the feature on.

use std::process::Command;

#[test]
fn vyre_commands_explain_the_feature() {
    let vadd = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/programs/vadd_f32.json"
    );
    for args in [
        vec!["export", "--vyre", vadd, "--text"],
        vec!["emit", "--vyre", vadd],
        vec!["emit", "--compare-vyre", vadd],
        vec!["selftest", "--vyre"],
        vec!["selftest", "--vyre-backend", "--backend", "reference"],
        vec!["selftest", "--vyre-dispatch", "--backend", "reference"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("built without vyre support"),
            "{args:?}: {err}"
        );
        assert!(err.contains("--features vyre"), "{args:?}: {err}");
    }
}
