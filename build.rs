//! Build-time note: when no `ptxas` is found (`VYRESCOPE_PTXAS` or `PATH`, the same search as
//! `emit::ptxas::find_ptxas`), say so as a cargo warning. Cargo shows it on every
//! `cargo build`/`cargo test` (replayed from its cache), where a test's skip notice on stderr
//! would be captured and never seen. It also hashes the sources into `VYRESCOPE_BUILD_HASH`,
//! the build identity that cache keys hold.

use std::path::PathBuf;

fn ptxas_found() -> bool {
    if let Some(p) = std::env::var_os("VYRESCOPE_PTXAS").filter(|p| !p.is_empty()) {
        return PathBuf::from(p).is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("ptxas").is_file()))
}

/// FNV-1a over every file under `dir` (paths sorted, each path and its bytes): the build
/// hash that keys the plan and tuning caches, so that an entry written by another build of
/// the same version (another planner, another emitter) is never taken for this build's.
fn source_hash(dir: &std::path::Path, h: &mut u64) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            source_hash(&p, h);
        } else if let Ok(bytes) = std::fs::read(&p) {
            let name = p.to_string_lossy().into_owned();
            for b in name.bytes().chain(bytes) {
                *h = (*h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src");
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    source_hash(std::path::Path::new("src"), &mut h);
    println!("cargo:rustc-env=VYRESCOPE_BUILD_HASH={h:016x}");
    println!("cargo:rerun-if-env-changed=VYRESCOPE_PTXAS");
    println!("cargo:rerun-if-env-changed=PATH");
    if !ptxas_found() {
        println!(
            "cargo:warning=ptxas not found (VYRESCOPE_PTXAS unset, none on PATH): the tests that assemble PTX are skipped and `occupancy` estimates registers; run scripts/install-ptxas.sh and export VYRESCOPE_PTXAS=<the path it prints> for them"
        );
    }
}
