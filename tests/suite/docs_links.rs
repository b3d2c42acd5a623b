//! Documentation links: every Markdown file cited by the README, the pages in `docs/` and the
//! Rust sources (`src/`, `tests/`, `benches/`) must exist in the repository, and none of them
//! may point outside it at the project's private planning folder.
//!
//! A citation is any word ending in `.md` (`docs/semantics.md`, `[abi](abi.md)`,
//! `../README.md`). It resolves relative to the citing file's folder (how Markdown links work)
//! or to the repository root (how the sources name files). A stale name such as an old
//! top-level semantics page fails here instead of sending a reader nowhere.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder outside the repository that the docs must never cite (built from two parts so
/// this file does not trip its own check).
fn forbidden() -> String {
    ["shared", "/"].concat()
}

/// Every file under `dir` (recursively) whose name ends in `ext`, sorted.
fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            files_under(&p, ext, out);
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

/// The files whose citations are checked (all but this one, whose examples are made up).
fn scanned() -> Vec<PathBuf> {
    let root = root();
    let mut v = vec![root.join("README.md")];
    files_under(&root.join("docs"), "md", &mut v);
    for dir in ["src", "tests", "benches"] {
        files_under(&root.join(dir), "rs", &mut v);
    }
    v.retain(|p| !p.ends_with("tests/suite/docs_links.rs"));
    v
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')
}

/// The `.md` paths cited in `text`, with their 1-based line numbers. A citation is the
/// longest run of path characters ending in `.md` that is not followed by another name
/// character; URLs (`scheme://...`) are skipped.
fn citations(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i + 3 <= chars.len() {
            let is_md = chars[i] == '.'
                && chars[i + 1] == 'm'
                && chars[i + 2] == 'd'
                && chars
                    .get(i + 3)
                    .is_none_or(|&c| !(c.is_ascii_alphanumeric() || c == '_'));
            if !is_md {
                i += 1;
                continue;
            }
            let mut start = i;
            while start > 0 && is_name_char(chars[start - 1]) {
                start -= 1;
            }
            let name: String = chars[start..i + 3].iter().collect();
            let url = start > 0 && chars[start - 1] == ':';
            // `foo.md` needs a name before the dot; a bare `.md` (an extension) is no citation.
            let has_stem = i > start && chars[i - 1] != '/' && chars[i - 1] != '.';
            if has_stem && !url {
                out.push((n + 1, name));
            }
            i += 3;
        }
    }
    out
}

/// True when `cited` names an existing file, relative to `from`'s folder or to the root.
fn resolves(root: &Path, from: &Path, cited: &str) -> bool {
    if cited.starts_with('/') {
        return false;
    }
    let beside = from.parent().map(|d| d.join(cited));
    beside.is_some_and(|p| p.is_file()) || root.join(cited).is_file()
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root).unwrap_or(p).display().to_string()
}

#[test]
fn every_cited_markdown_file_exists() {
    let root = root();
    let files = scanned();
    assert!(
        files.iter().any(|f| f.ends_with("docs/semantics.md")),
        "docs/semantics.md is missing from the scanned files: {files:?}"
    );
    let mut broken = Vec::new();
    let mut seen = 0;
    for f in &files {
        let text = std::fs::read_to_string(f).expect("readable source or doc file");
        for (line, cited) in citations(&text) {
            seen += 1;
            if !resolves(&root, f, &cited) {
                broken.push(format!("{}:{line}: `{cited}`", rel(&root, f)));
            }
        }
    }
    // The README and the docs index cite several pages; finding none means the scan broke.
    assert!(
        seen >= 10,
        "only {seen} citations found; is the scanner broken?"
    );
    assert!(
        broken.is_empty(),
        "cited Markdown files that do not exist (write the page or fix the name; \
         project docs live in docs/):\n{}",
        broken.join("\n")
    );
}

#[test]
fn nothing_cites_the_private_planning_folder() {
    let root = root();
    let needle = forbidden();
    let mut hits = Vec::new();
    for f in scanned() {
        let text = std::fs::read_to_string(&f).expect("readable source or doc file");
        for (n, line) in text.lines().enumerate() {
            if line.contains(&needle) {
                hits.push(format!("{}:{}: {}", rel(&root, &f), n + 1, line.trim()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "these lines mention `{needle}`, which is not part of the repository; cite the \
         page under docs/ instead:\n{}",
        hits.join("\n")
    );
}

#[test]
fn the_scanner_finds_and_resolves_citations() {
    let text = "see docs/semantics.md, [abi](abi.md#grid-barrier) and `../README.md`;\n\
                not https://example.com/x.md nor the extension .md or a.mdx";
    let got: Vec<String> = citations(text).into_iter().map(|(_, c)| c).collect();
    assert_eq!(got, ["docs/semantics.md", "abi.md", "../README.md"]);
    let root = root();
    let page = root.join("docs").join("abi.md");
    assert!(resolves(&root, &page, "semantics.md"));
    assert!(resolves(&root, &page, "../README.md"));
    assert!(resolves(
        &root,
        &root.join("src").join("lib.rs"),
        "docs/abi.md"
    ));
    assert!(!resolves(&root, &page, "no-such-page.md"));
    assert!(!resolves(&root, &page, "/abs/path.md"));
}

/// Every `diff` side the README, the docs and the command's help give as an example
/// (`FILE.json@OPTION`) names a file that exists, so that it can be run as written (issue 36:
/// the README's `saxpy.json@wg=64` named no file).
#[test]
fn diff_examples_name_files_that_exist() {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("src/diff/variant.rs")];
    files_under(&root.join("docs"), "md", &mut files);
    files.push(root.join("src/cli/diff.rs"));
    let mut seen = 0;
    for f in files {
        let mut text = std::fs::read_to_string(&f).unwrap();
        if f.ends_with("variant.rs") {
            // Its tests parse made-up names; the help text is what users read.
            text = text
                .lines()
                .filter(|l| l.contains("SPEC_HELP: &str"))
                .collect();
        }
        for (i, _) in text.match_indices(".json@") {
            let start = text[..i]
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
                .map_or(0, |s| s + 1);
            let name = &text[start..i + 5];
            // Placeholders in capitals (`STEP.json@wg=64`) are not examples.
            if name.chars().any(|c| c.is_ascii_uppercase()) {
                continue;
            }
            seen += 1;
            assert!(
                root.join(name).is_file(),
                "{}: the diff example `{name}` names no file",
                f.display()
            );
        }
    }
    assert!(seen >= 3, "only {seen} examples found");
}

/// The README's key list names every one-character default key of the inspector's key table
/// (issue 36: `p D P b u f` were missing); the number keys are named as a range.
#[test]
fn readme_names_every_inspector_key() {
    let root = root();
    let table = std::fs::read_to_string(root.join("src/tui/keymap/table.rs")).unwrap();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut missing = Vec::new();
    let mut seen = 0;
    for list in table.split("&[").skip(1) {
        let list = list.split(']').next().unwrap_or("");
        for key in list.split(',').map(|k| k.trim().trim_matches('"')) {
            if key.chars().count() != 1 || key.chars().all(|c| c.is_ascii_digit()) {
                continue;
            }
            seen += 1;
            if !readme.contains(&format!("`{key}`")) {
                missing.push(key.to_string());
            }
        }
    }
    assert!(seen > 30, "only {seen} keys read from the table");
    assert!(missing.is_empty(), "README lacks the keys {missing:?}");
}
