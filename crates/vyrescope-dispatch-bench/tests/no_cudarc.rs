//! The crate must not depend on cudarc, directly or through a dependency: vyrescope (cudarc
//! 0.19.10) and the race binary on vyre-driver-cuda (cudarc =0.19.0) both link it.

use std::process::Command;

#[test]
fn no_cudarc_in_the_dependency_tree() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--locked",
            "-p",
            "vyrescope-dispatch-bench",
            "-e",
            "normal,build",
            "--prefix",
            "none",
            "--manifest-path",
            concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
        ])
        .output()
        .expect("cargo runs");
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{tree}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<&str> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // The tree is the real one: vyre's backend contract is in it.
    assert!(names.contains(&"vyre-driver"), "{tree}");
    for banned in ["cudarc", "vyre-driver-cuda", "vyrescope"] {
        assert!(!names.contains(&banned), "{banned} in:\n{tree}");
    }
}
