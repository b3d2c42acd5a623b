//! The module layers hold: a module imports only modules of lower layers (a source scan of
//! `crate::<module>` paths), and each outside crate with a boundary stays inside its module
//! (cudarc and `runtime::driver` in `runtime`, ratatui/crossterm/syntect in `tui`, clap in
//! `cli`; `unsafe` only in `runtime/driver` and `util/os.rs`). docs/architecture.md shows the
//! same table.

use std::path::{Path, PathBuf};

/// Layer of each top-level module; a module may import only strictly lower layers.
const LAYERS: &[(&str, u32)] = &[
    ("util", 0),
    ("ir", 1),
    ("finding", 2),
    ("semantics", 2),
    ("shape", 2),
    ("validate", 3),
    ("analysis", 3),
    ("inputs", 3),
    ("occupancy", 3),
    ("interp", 4),
    ("emit", 4),
    ("gen", 4),
    ("report", 4),
    ("diagnostics", 5),
    ("sass", 5),
    ("timeline", 5),
    ("vyre", 5),
    ("megakernel", 6),
    ("diff", 6),
    ("profile", 6),
    ("runtime", 7),
    ("harness", 8),
    ("tui", 9),
    ("cli", 10),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// (top-level module, file text without comments) for every source file but lib.rs/main.rs.
fn sources() -> Vec<(String, PathBuf, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let code: String = text
            .lines()
            .map(|l| match l.find("//") {
                Some(i) => &l[..i],
                None => l,
            })
            .collect::<Vec<_>>()
            .join("\n");
        out.push((module, rel.to_path_buf(), code));
    }
    out
}

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

#[test]
fn every_module_has_a_layer() {
    for (module, file, _) in sources() {
        assert!(
            layer(&module).is_some(),
            "{}: module `{module}` is missing from the LAYERS table (and docs/architecture.md)",
            file.display()
        );
    }
}

#[test]
fn modules_import_only_lower_layers() {
    let mut bad = Vec::new();
    for (module, file, code) in sources() {
        let Some(own) = layer(&module) else { continue };
        for (i, _) in code.match_indices("crate::") {
            let rest = &code[i + "crate::".len()..];
            let target: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if target == module || target.is_empty() {
                continue;
            }
            match layer(&target) {
                Some(l) if l < own => {}
                _ => bad.push(format!(
                    "{}: `{module}` imports `crate::{target}`",
                    file.display()
                )),
            }
        }
    }
    bad.sort();
    bad.dedup();
    assert!(bad.is_empty(), "layer violations:\n{}", bad.join("\n"));
}

#[test]
fn outside_crates_stay_behind_their_boundary() {
    let rules: &[(&str, &[&str])] = &[
        ("cudarc::", &["runtime"]),
        // Driver handles stay inside the runtime: harnesses use its API, not its FFI layer.
        ("runtime::driver", &["runtime"]),
        ("ratatui::", &["tui"]),
        ("crossterm::", &["tui"]),
        ("signal_hook::", &["tui"]),
        ("syntect::", &["tui"]),
        ("clap::", &["cli"]),
        ("vyre_foundation::", &["vyre"]),
        ("vyre_lower::", &["vyre"]),
        ("vyre_emit_ptx::", &["vyre"]),
    ];
    let mut bad = Vec::new();
    for (module, file, code) in sources() {
        for (needle, allowed) in rules {
            if code.contains(needle) && !allowed.contains(&module.as_str()) {
                bad.push(format!(
                    "{}: uses {needle} outside {allowed:?}",
                    file.display()
                ));
            }
        }
        let in_driver =
            file.starts_with("runtime/driver") || file == Path::new("runtime/driver.rs");
        // util/os.rs: the libc calls std lacks (PR_SET_PDEATHSIG, poll + FIONREAD on the
        // terminal), each behind a safe function.
        let in_os = file == Path::new("util/os.rs");
        if code.contains("unsafe ") && !in_driver && !in_os {
            bad.push(format!(
                "{}: `unsafe` outside runtime/driver and util/os.rs",
                file.display()
            ));
        }
    }
    assert!(bad.is_empty(), "boundary violations:\n{}", bad.join("\n"));
}

/// Whether the source file `name` belongs to the module of the file `home` (`home` itself or
/// one of its child modules, `a/b.rs` -> `a/b/...`).
fn in_module(name: &str, home: &str) -> bool {
    name == home || name.starts_with(&format!("{}/", home.trim_end_matches(".rs")))
}

/// One compiled pipeline: planning (`plan_cached`), fusing (`fuse_group`) and re-deriving a
/// group's spec (`spec_for`) happen only in `megakernel/compiled.rs` (and in the module where
/// each is defined), so every front end (`plan`, `emit`, `run`, `--timeline`, `selftest`, the
/// fuzzer, the inspector) launches and shows the same kernels. And the inspector opens no CUDA
/// runtime of its own: its GPU work goes through the worker process.
#[test]
fn pipelines_are_planned_and_fused_only_by_the_compiled_pipeline() {
    let defined_in: &[(&str, &str)] = &[
        ("fuse_group(", "megakernel/fuse.rs"),
        ("plan_cached(", "megakernel/cache.rs"),
        ("spec_for(", "megakernel/plan.rs"),
    ];
    let mut bad = Vec::new();
    let mut seen = 0;
    for (module, file, code) in sources() {
        // Unit tests of the planner and fuser may call them directly.
        let code = code.split("#[cfg(test)]").next().unwrap_or("");
        let name = file.to_string_lossy().replace('\\', "/");
        let is_test = name.ends_with("_tests.rs") || name.ends_with("test_support.rs");
        for (call, home) in defined_in {
            if !code.contains(call) {
                continue;
            }
            if name == "megakernel/compiled.rs" {
                seen += 1;
            } else if !in_module(&name, home) && !is_test {
                bad.push(format!(
                    "{name}: calls {call}..) outside megakernel/compiled.rs"
                ));
            }
        }
        if module == "tui" && code.contains("Runtime::open") {
            bad.push(format!(
                "{name}: the inspector opens a CUDA runtime of its own"
            ));
        }
    }
    assert_eq!(
        seen, 3,
        "megakernel/compiled.rs must plan, fuse and derive specs"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The runtime owns launching: only `runtime/` adds methods to `Runtime` (the harnesses are
/// free functions over its public API), and only the runtime's launch list builds launches
/// from prepared arguments (`prepare_launch` and `launch_core` are named nowhere else, so a
/// second launch loop cannot grow outside it).
#[test]
fn only_the_runtime_extends_the_runtime_and_launches() {
    let mut bad = Vec::new();
    let mut impls = 0;
    for (module, file, code) in sources() {
        let name = file.to_string_lossy().replace('\\', "/");
        let extends =
            code.contains("impl Runtime {") || code.contains("impl crate::runtime::Runtime {");
        if module == "runtime" {
            impls += usize::from(extends);
            continue;
        }
        if extends {
            bad.push(format!("{name}: `impl Runtime` outside runtime/"));
        }
        for internal in ["prepare_launch", "launch_core", "arm_grid_sync", ".sess()"] {
            if code.contains(internal) {
                bad.push(format!("{name}: uses the runtime's internal `{internal}`"));
            }
        }
    }
    assert!(
        impls > 5,
        "the scan found only {impls} runtime files extending Runtime"
    );
    assert!(
        bad.is_empty(),
        "launching outside the runtime:\n{}",
        bad.join("\n")
    );
}

/// One compile target per pipeline: outside the megakernel layer only
/// `harness::target::compile` compiles a pipeline, and the GPU run options are written out
/// in one builder (`PipelineGpuOptions::new`); one `--decide` enum.
#[test]
fn pipelines_compile_through_one_target_and_one_options_builder() {
    let mut bad = Vec::new();
    let mut compiles = 0;
    let mut builders = 0;
    for (module, file, code) in sources() {
        let name = file.to_string_lossy().replace('\\', "/");
        if module != "megakernel" && code.contains("CompiledPipeline::compile(") {
            if name == "harness/target.rs" {
                compiles += code.matches("CompiledPipeline::compile(").count();
            } else {
                bad.push(format!(
                    "{name}: compiles a pipeline outside harness::target"
                ));
            }
        }
        // A struct literal, not the type in a signature, a definition or an impl header.
        let literals = code
            .match_indices("PipelineGpuOptions {")
            .filter(|(i, _)| {
                let before = code[..*i].trim_end();
                !["->", "struct", "impl"].iter().any(|k| before.ends_with(k))
            })
            .count();
        if name == "harness/pipeline.rs" {
            builders += literals;
        } else if literals > 0 {
            bad.push(format!("{name}: writes PipelineGpuOptions out itself"));
        }
        if code.contains("DecideMode") {
            bad.push(format!("{name}: a second decide enum"));
        }
    }
    assert_eq!(compiles, 1, "harness/target.rs compiles once");
    assert_eq!(
        builders, 1,
        "PipelineGpuOptions::new writes the options out"
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
