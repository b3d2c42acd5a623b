//! IR printer snapshots and the IR syntax definition.
//!
//! Every Program in `fixtures/programs/` is printed (with its node-id gutter) and compared with
//! `tests/snapshots/ir/<file stem>.txt`. After an intended printer change, regenerate the
//! snapshots with
//!
//! ```text
//! VYRESCOPE_BLESS=1 cargo test --test suite ir_print::
//! ```
//!
//! and review the diff before committing. Without the variable a missing or different snapshot
//! fails the test.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use syntect::parsing::{ParseState, ScopeStack, SyntaxDefinition, SyntaxSet, SyntaxSetBuilder};
use vyrescope::ir::{load_program, print::print_program};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture_files() -> Vec<PathBuf> {
    let dir = root().join("fixtures/programs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn check_snapshot(path: &Path, actual: &str) -> Result<(), String> {
    crate::support::snapshot::check(path, actual, "printed IR", "ir_print")
}

#[test]
fn printed_fixtures_match_snapshots() {
    let files = fixture_files();
    assert!(!files.is_empty());
    let mut failures = Vec::new();
    for f in &files {
        let p = load_program(f).unwrap_or_else(|e| panic!("{e}"));
        let printed = print_program(&p);
        // Determinism: printing twice gives the same lines.
        assert_eq!(printed, print_program(&p), "{}", f.display());
        // Every statement opens exactly one line.
        p.walk_stmts(&mut |s| {
            let n = printed
                .lines
                .iter()
                .filter(|l| l.node.as_deref() == Some(s.id.as_str()))
                .count();
            assert_eq!(n, 1, "{}: {}", f.display(), s.id);
        });
        let stem = f
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let snap = root()
            .join("tests/snapshots/ir")
            .join(format!("{stem}.txt"));
        if let Err(e) = check_snapshot(&snap, &printed.text_with_gutter()) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `themes/ir.sublime-syntax`, loaded once.
fn syntax_set() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(|| {
        let path = root().join("themes/ir.sublime-syntax");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let def = SyntaxDefinition::load_from_str(&text, true, None)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(def.scope.to_string(), "source.vyrescope-ir");
        let mut b = SyntaxSetBuilder::new();
        b.add(def);
        b.build()
    })
}

/// Each token of `line` with its innermost scope under the IR syntax.
fn scopes_of(line: &str) -> Vec<(String, String)> {
    let set = syntax_set();
    let syntax = set
        .find_syntax_by_name("vyrescope IR")
        .unwrap_or_else(|| panic!("syntax not found by name"));
    let mut state = ParseState::new(syntax);
    let line = format!("{line}\n");
    let ops = state
        .parse_line(&line, set)
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stack = ScopeStack::new();
    let mut out = Vec::new();
    for (range, op) in syntect::easy::ScopeRangeIterator::new(&ops, &line) {
        stack.apply(op).unwrap_or_else(|e| panic!("{e:?}"));
        let tok = &line[range];
        if tok.trim().is_empty() {
            continue;
        }
        let scope = stack
            .as_slice()
            .last()
            .map(|s| s.build_string())
            .unwrap_or_default();
        out.push((tok.to_string(), scope));
    }
    out
}

fn scope_of(line: &str, token: &str) -> String {
    let all = scopes_of(line);
    all.iter()
        .find(|(t, _)| t == token)
        .map(|(_, s)| s.clone())
        .unwrap_or_else(|| panic!("token {token:?} not found in {all:?}"))
}

#[test]
fn ir_syntax_loads_and_highlights() {
    let l = "body[2].then[0] |   let x: u64 = atomic_add(h[i + 1], 7u64) // note";
    assert_eq!(
        scope_of(l, "body[2].then[0]"),
        "constant.other.node-id.vyrescope-ir"
    );
    assert_eq!(scope_of(l, "let"), "keyword.control.vyrescope-ir");
    assert_eq!(scope_of(l, "u64"), "storage.type.vyrescope-ir");
    assert_eq!(
        scope_of(l, "atomic_add"),
        "support.function.parallel.vyrescope-ir"
    );
    assert_eq!(scope_of(l, "7u64"), "constant.numeric.integer.vyrescope-ir");
    assert_eq!(scope_of(l, "+"), "keyword.operator.vyrescope-ir");
    assert_eq!(
        scope_of(l, "// note"),
        "comment.line.double-slash.vyrescope-ir"
    );
    assert_eq!(scope_of(l, "x"), "variable.other.vyrescope-ir");

    let l = "for k in 0..n { y = select(isnan(v), inf_f64, 1.5f64) + f32(gid.x) }";
    assert_eq!(scope_of(l, "for"), "keyword.control.vyrescope-ir");
    assert_eq!(scope_of(l, ".."), "keyword.operator.vyrescope-ir");
    assert_eq!(
        scope_of(l, "select"),
        "support.function.builtin.vyrescope-ir"
    );
    assert_eq!(
        scope_of(l, "inf_f64"),
        "constant.language.float.vyrescope-ir"
    );
    assert_eq!(scope_of(l, "1.5f64"), "constant.numeric.float.vyrescope-ir");
    assert_eq!(scope_of(l, "f32"), "support.function.cast.vyrescope-ir");
    assert_eq!(
        scope_of(l, "gid.x"),
        "variable.language.builtin.vyrescope-ir"
    );

    let l = "kernel vadd_f32 workgroup(256,1,1)";
    assert_eq!(
        scope_of(l, "kernel"),
        "keyword.declaration.kernel.vyrescope-ir"
    );
    assert_eq!(
        scope_of(l, "vadd_f32"),
        "entity.name.function.kernel.vyrescope-ir"
    );
    let l = "  @2  read_write  f16  c";
    assert_eq!(scope_of(l, "@2"), "constant.numeric.binding.vyrescope-ir");
    assert_eq!(
        scope_of(l, "read_write"),
        "storage.modifier.access.vyrescope-ir"
    );
    assert_eq!(scope_of(l, "f16"), "storage.type.vyrescope-ir");
    let l = "barrier(grid)";
    assert_eq!(
        scope_of(l, "barrier"),
        "keyword.control.barrier.vyrescope-ir"
    );
    assert_eq!(scope_of(l, "grid"), "storage.modifier.scope.vyrescope-ir");
    let l = "let o: u32 = atomic_add.relaxed(hist[b], 1)";
    assert_eq!(
        scope_of(l, "atomic_add"),
        "support.function.parallel.vyrescope-ir"
    );
    assert_eq!(
        scope_of(l, "relaxed"),
        "storage.modifier.order.vyrescope-ir"
    );
    let l = "let b: u32 = bitcast<u32>(f) >> 3";
    assert_eq!(
        scope_of(l, "bitcast"),
        "support.function.builtin.vyrescope-ir"
    );
    assert_eq!(scope_of(l, ">>"), "keyword.operator.vyrescope-ir");
}

#[test]
fn ir_syntax_covers_every_printed_fixture_line() {
    // Every printed token of every fixture gets a scope of its own, none falls through.
    for f in fixture_files() {
        let p = load_program(&f).unwrap_or_else(|e| panic!("{e}"));
        for line in print_program(&p).text_with_gutter().lines() {
            for (tok, scope) in scopes_of(line) {
                assert!(
                    scope != "source.vyrescope-ir",
                    "{}: token {tok:?} of {line:?} has no scope",
                    f.display()
                );
            }
        }
    }
}
