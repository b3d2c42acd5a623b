//! JSON -> vyre -> JSON as a fixed point (feature `vyre`): the import recognises the guards
//! the export writes (and the export leaves out guards that range analysis proves), so that
//! `import(export(p))` prints as `p` does for every exportable fixture, and a vyre file
//! imported, exported and imported again prints as its first import. Name, doc and `run` are
//! set aside: the import names the Program, documents where it came from and writes a `run`
//! section of its own.

use std::path::{Path, PathBuf};

use vyrescope::diagnostic::Severity;
use vyrescope::ir::print::print_program;
use vyrescope::ir::{elaborate, Program};
use vyrescope::vyre::{export, import_program};

use crate::support::fixtures::fixtures;

/// Fixtures whose trip cannot give the Program back exactly, each with the reason; they must
/// still come back the same from a second trip (no growth on any trip).
const NOT_EXACT: &[(&str, &str)] = &[
    (
        "bounds_fast_path",
        "the import keeps vyre's dispatch early exit `if gid.x >= max(len(..)) { return }`: the proof that invocations past the count have no effect (src/vyre/import/exit.rs) takes stores guarded by, or indexed with, gid.x on a counted buffer, and this Program's are neither",
    ),
    (
        "math_f32",
        "the import keeps vyre's dispatch early exit: the stores index `out` with `i * 16 + k` and the Program's own guard is on `x`, which vyre does not count, so the proof (src/vyre/import/exit.rs) does not cover them",
    ),
    (
        "stencil5_f32",
        "the import keeps vyre's dispatch early exit: the Program's guard compares with values from `dims`, not with a counted buffer's length, so the proof (src/vyre/import/exit.rs) does not cover its stores",
    ),
    (
        "subgroup_ops",
        "the import keeps vyre's dispatch early exit `if gid.x >= max(len(..)) { return }` (the proof in src/vyre/import/exit.rs does not cover this Program's stores); a store of a subgroup operation whose index is not proven comes back with its value bound first (`let vs_value_<node> = ..`: the export evaluates it before the store's guard, in every lane, as our format does)",
    ),
    (
        "warp_scan_u32",
        "the import keeps vyre's dispatch early exit `if gid.x >= max(len(..)) { return }` (the proof in src/vyre/import/exit.rs does not cover this Program's stores); a shift proven below 32 comes back masked (`k & 31`)",
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The printed Program with name, doc and `run` set aside.
fn printed(p: &Program) -> String {
    let mut q = p.clone();
    q.name = "p".into();
    q.doc = None;
    q.run = None;
    print_program(&q).text()
}

/// `import(export(p))`, failing on an export refusal or an import error.
fn trip(p: &Program, what: &str) -> Program {
    let v = export(p).unwrap_or_else(|e| panic!("{what}: export: {e}"));
    let got = import_program(&v, &p.name);
    let errors: Vec<String> = got
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect();
    assert!(errors.is_empty(), "{what}: import: {errors:?}");
    got.program
}

fn stem(f: &Path) -> String {
    f.file_stem().unwrap().to_string_lossy().into_owned()
}

#[test]
fn import_after_export_gives_every_exportable_fixture_back() {
    let mut exact = 0;
    let mut failures = Vec::new();
    for (f, p) in fixtures() {
        let name = stem(&f);
        if export(&p).is_err() {
            continue;
        }
        let once = trip(&p, &name);
        let twice = trip(&once, &format!("{name} (second trip)"));
        if printed(&twice) != printed(&once) {
            failures.push(format!(
                "{name}: the second trip changed the Program\n--- first\n{}\n--- second\n{}",
                printed(&once),
                printed(&twice)
            ));
            continue;
        }
        let want = printed(&elaborate(&p));
        let listed = NOT_EXACT.iter().any(|(n, _)| *n == name);
        match (printed(&once) == want, listed) {
            (true, false) => exact += 1,
            (false, true) => {}
            (true, true) => failures.push(format!(
                "{name}: listed in NOT_EXACT but comes back exactly; take it off the list"
            )),
            (false, false) => failures.push(format!(
                "{name}: import(export(p)) != p\n--- p\n{want}\n--- import(export(p))\n{}",
                printed(&once)
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(exact >= 9, "only {exact} fixtures came back exactly");
}

#[test]
fn vyre_files_imported_exported_and_imported_again_come_back_the_same() {
    vyrescope::vyre::install();
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/vyre"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vyre"))
        .collect();
    files.sort();
    for f in files {
        let loaded = vyrescope::validate::load(&f);
        let Some(first) = loaded.program else {
            continue;
        };
        if loaded
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
        {
            // A file with constructs the import leaves out (unsupported_async) has nothing
            // to give back.
            continue;
        }
        let name = stem(&f);
        let again = trip(&first, &name);
        if printed(&again) != printed(&first) {
            failures.push(format!(
                "{name}: import(export(import(f))) != import(f)\n--- first import\n{}\n--- again\n{}",
                printed(&first),
                printed(&again)
            ));
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(checked >= 7, "only {checked} vyre files checked");
}
