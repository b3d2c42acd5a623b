//! Build-time note: when no `ptxas` is found (`VYRESCOPE_PTXAS` or `PATH`, the same search as
//! `emit::ptxas::find_ptxas`), say so as a cargo warning. Cargo shows it on every
//! `cargo build`/`cargo test` (replayed from its cache), where a test's skip notice on stderr
//! would be captured and never seen. It also hashes the sources into `VYRESCOPE_BUILD_HASH`,
//! the build identity that cache keys hold.

use std::path::PathBuf;

/// `tool` as the crate finds it at run time: the env var, else (nvdisasm) beside ptxas, else
/// `PATH` (`emit::ptxas::find_ptxas`, `sass::find_nvdisasm`).
fn tool_path(var: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(var).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn nvdisasm_found(ptxas: Option<&PathBuf>) -> bool {
    if std::env::var_os("VYRESCOPE_NVDISASM").is_some_and(|p| !p.is_empty()) {
        return tool_path("VYRESCOPE_NVDISASM", "nvdisasm").is_some();
    }
    ptxas
        .and_then(|p| p.parent())
        .is_some_and(|d| d.join("nvdisasm").is_file())
        || tool_path("VYRESCOPE_NVDISASM", "nvdisasm").is_some()
}

/// The tests of `tests/suite` that skip without `tool`: the functions that ask
/// `support::tools` for it (`tools::ptxas(`, `tools::nvdisasm(`, `tools::sass_tools(`), as
/// `file::function`. Read from the sources so that the build warning names them without a
/// list to keep in step.
fn tests_needing(calls: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("tests/suite") else {
        return found;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        let (Some(stem), Ok(text)) = (
            p.file_stem().and_then(|s| s.to_str()),
            std::fs::read_to_string(&p),
        ) else {
            continue;
        };
        let mut current = None;
        for line in text.lines() {
            let t = line.trim_start();
            if let Some(rest) = ["fn ", "pub fn ", "pub(crate) fn "]
                .iter()
                .find_map(|p| t.strip_prefix(p))
            {
                current = rest.split(['(', '<']).next().map(str::to_string);
            }
            if calls.iter().any(|c| line.contains(c)) {
                if let Some(f) = &current {
                    let name = format!("{stem}::{f}");
                    if !found.contains(&name) {
                        found.push(name);
                    }
                }
            }
        }
    }
    found
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
    println!("cargo:rerun-if-env-changed=VYRESCOPE_NVDISASM");
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo:rerun-if-changed=tests/suite");
    let ptxas = tool_path("VYRESCOPE_PTXAS", "ptxas");
    let nvdisasm = nvdisasm_found(ptxas.as_ref());
    let mut calls = Vec::new();
    if ptxas.is_none() {
        calls.extend(["tools::ptxas(", "tools::sass_tools("]);
    }
    if !nvdisasm {
        calls.extend(["tools::nvdisasm(", "tools::sass_tools("]);
    }
    if !calls.is_empty() {
        let missing = match (ptxas.is_none(), nvdisasm) {
            (true, false) => "ptxas and nvdisasm",
            (true, true) => "ptxas",
            _ => "nvdisasm",
        };
        let skipped = tests_needing(&calls);
        println!(
            "cargo:warning={missing} not found (VYRESCOPE_PTXAS / VYRESCOPE_NVDISASM unset, none on PATH): {} tests skip their check with a NOTICE and `occupancy` estimates registers; scripts/install-ptxas.sh and scripts/install-nvdisasm.sh install them (export the paths they print)",
            skipped.len()
        );
        println!("cargo:warning=skipped without them: {}", skipped.join(", "));
    }
}
