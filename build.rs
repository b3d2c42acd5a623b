//! Build-time note: when no `ptxas` is found (`VYRESCOPE_PTXAS` or `PATH`, the same search as
//! `emit::ptxas::find_ptxas`), say so as a cargo warning. Cargo shows it on every
//! `cargo build`/`cargo test` (replayed from its cache), where a test's skip notice on stderr
//! would be captured and never seen.

use std::path::PathBuf;

fn ptxas_found() -> bool {
    if let Some(p) = std::env::var_os("VYRESCOPE_PTXAS").filter(|p| !p.is_empty()) {
        return PathBuf::from(p).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("ptxas").is_file()))
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=VYRESCOPE_PTXAS");
    println!("cargo:rerun-if-env-changed=PATH");
    if !ptxas_found() {
        println!(
            "cargo:warning=ptxas not found (VYRESCOPE_PTXAS unset, none on PATH): the tests that assemble PTX are skipped and `occupancy` estimates registers; run scripts/install-ptxas.sh and export VYRESCOPE_PTXAS=<the path it prints> for them"
        );
    }
}
