//! The bundled Program fixtures, parsed, for tests that check a property over all of them.

use std::path::PathBuf;

use vyrescope::ir::{load_program, Program};

/// Every `fixtures/programs/*.json`, sorted by path, with its parsed Program.
pub fn fixtures() -> Vec<(PathBuf, Program)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures/programs exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v.into_iter()
        .map(|f| {
            let p = load_program(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
            (f, p)
        })
        .collect()
}
