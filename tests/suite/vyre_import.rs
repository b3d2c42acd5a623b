//! vyre import (feature `vyre`): Programs built with vyre's own builder API, written to
//! `fixtures/vyre/` as wire (`.vyre`) and text (`.vyre.txt`) files (compared with the committed
//! files; `VYRESCOPE_BLESS=1` rewrites them), opened through the one Program loader, converted,
//! validated, emitted (ptxas judges the PTX) and run by the reference interpreter; the JSON the
//! import writes must read back to the same Program and give the same results. Unsupported
//! constructs and hostile bytes give errors with a `Fix:`, never a panic.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use vyre_foundation::ir::{
    BufferDecl as VB, DataType as DT, Expr as E, Ident, MemoryOrdering, Node as N, Program as VP,
};

use vyrescope::finding::{Diagnostic, Severity};
use vyrescope::inputs::{prepare, HostBuffer};
use vyrescope::ir::{load_program, parse_program, program_to_json, Program};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/vyre")
}

fn region(generator: &str, body: Vec<N>) -> N {
    N::Region {
        generator: Ident::from(generator),
        source_region: None,
        body: Arc::new(body),
    }
}

/// `if gid < len(buf) { body }` with `let i = gid` first.
fn guarded(buf: &str, body: Vec<N>) -> Vec<N> {
    vec![
        N::let_bind("i", E::gid_x()),
        N::if_then(E::lt(E::var("i"), E::buf_len(buf)), body),
    ]
}

fn vadd() -> VP {
    VP::wrapped(
        vec![
            VB::read("a", 0, DT::F32).with_count(1000),
            VB::read("b", 1, DT::F32).with_count(1000),
            VB::output("out", 2, DT::F32).with_count(1000),
        ],
        [256, 1, 1],
        guarded(
            "out",
            vec![N::store(
                "out",
                E::var("i"),
                E::add(E::load("a", E::var("i")), E::load("b", E::var("i"))),
            )],
        ),
    )
}

fn saxpy() -> VP {
    // No guard: vyre's early exit and its load clamp are what keep it in range.
    VP::wrapped(
        vec![
            VB::uniform("alpha", 0, DT::F32).with_count(1),
            VB::read("x", 1, DT::F32).with_count(3000),
            VB::read("y", 2, DT::F32).with_count(3000),
            VB::output("out", 3, DT::F32).with_count(3000),
        ],
        [128, 1, 1],
        vec![N::store(
            "out",
            E::gid_x(),
            E::fma(
                E::load("alpha", E::u32(0)),
                E::load("x", E::gid_x()),
                E::load("y", E::gid_x()),
            ),
        )],
    )
}

fn reduce() -> VP {
    let lid = || E::var("lid");
    VP::wrapped(
        vec![
            VB::read("input", 0, DT::U32).with_count(4096),
            VB::output("partial", 1, DT::U32).with_count(64),
            VB::workgroup("tile", 64, DT::U32),
        ],
        [64, 1, 1],
        vec![
            N::let_bind("lid", E::local_x()),
            N::let_bind("v", E::load("input", E::gid_x())),
            // The sum of v's four bytes, through an assigned accumulator.
            N::let_bind("acc", E::u32(0)),
            N::loop_for(
                "k",
                E::u32(0),
                E::u32(4),
                vec![N::assign(
                    "acc",
                    E::add(
                        E::var("acc"),
                        E::bitand(
                            E::shr(E::var("v"), E::mul(E::var("k"), E::u32(8))),
                            E::u32(255),
                        ),
                    ),
                )],
            ),
            N::store("tile", lid(), E::var("acc")),
            N::barrier(),
            N::loop_for(
                "s",
                E::u32(0),
                E::u32(6),
                vec![
                    N::let_bind("stride", E::shr(E::u32(32), E::var("s"))),
                    N::if_then(
                        E::lt(lid(), E::var("stride")),
                        vec![N::store(
                            "tile",
                            lid(),
                            E::add(
                                E::load("tile", lid()),
                                E::load("tile", E::add(lid(), E::var("stride"))),
                            ),
                        )],
                    ),
                    N::barrier(),
                ],
            ),
            N::if_then(
                E::eq(lid(), E::u32(0)),
                vec![N::store(
                    "partial",
                    E::workgroup_x(),
                    E::load("tile", E::u32(0)),
                )],
            ),
        ],
    )
}

fn histogram() -> VP {
    VP::wrapped(
        vec![
            VB::read("data", 0, DT::U32).with_count(4096),
            VB::output("bins", 1, DT::U32).with_count(256),
        ],
        [256, 1, 1],
        guarded(
            "data",
            vec![
                N::let_bind("bin", E::bitand(E::load("data", E::var("i")), E::u32(255))),
                N::let_bind("old", E::atomic_add("bins", E::var("bin"), E::u32(1))),
            ],
        ),
    )
}

fn subgroup() -> VP {
    VP::wrapped(
        vec![
            VB::read("input", 0, DT::U32).with_count(1024),
            VB::output("out", 1, DT::U32).with_count(1024),
        ],
        [128, 1, 1],
        vec![
            N::let_bind("v", E::load("input", E::gid_x())),
            N::let_bind("sum", E::subgroup_add(E::var("v"))),
            N::let_bind(
                "nb",
                E::subgroup_shuffle(E::var("v"), E::bitxor(E::subgroup_local_id(), E::u32(1))),
            ),
            N::let_bind(
                "mask",
                E::subgroup_ballot(E::gt(E::var("v"), E::u32(0x8000_0000))),
            ),
            N::store(
                "out",
                E::gid_x(),
                E::add(
                    E::bitxor(E::bitxor(E::var("sum"), E::var("nb")), E::var("mask")),
                    E::subgroup_size(),
                ),
            ),
        ],
    )
}

fn branchy() -> VP {
    let x = || E::var("x");
    VP::wrapped(
        vec![
            VB::read("input", 0, DT::I32).with_count(2048),
            VB::output("out", 1, DT::F32).with_count(2048),
            // vyre allows one output buffer; the second result is a plain read_write one.
            VB::read_write("quot", 2, DT::U32).with_count(2048),
        ],
        [256, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            region(
                "demo.branchy",
                vec![
                    N::let_bind("x", E::load("input", E::var("i"))),
                    N::if_then_else(
                        E::gt(x(), E::i32(0)),
                        vec![N::store("out", E::var("i"), E::cast(DT::F32, x()))],
                        vec![N::store(
                            "out",
                            E::var("i"),
                            E::select(
                                E::lt(x(), E::i32(-1000)),
                                E::f32(-1.0),
                                E::mul(E::cast(DT::F32, E::sub(E::i32(0), x())), E::f32(0.5)),
                            ),
                        )],
                    ),
                    // u32 division by a divisor that is 0 for one input in eight.
                    N::let_bind("u", E::cast(DT::U32, x())),
                    N::store(
                        "quot",
                        E::var("i"),
                        E::div(E::var("u"), E::bitand(E::var("u"), E::u32(7))),
                    ),
                ],
            ),
        ],
    )
}

fn grid_sync() -> VP {
    VP::wrapped(
        vec![
            VB::read_write("a", 0, DT::U32).with_count(1024),
            VB::output("b", 1, DT::U32).with_count(1024),
        ],
        [256, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::store(
                "a",
                E::var("i"),
                E::add(E::mul(E::var("i"), E::u32(3)), E::u32(1)),
            ),
            N::barrier_with_ordering(MemoryOrdering::GridSync),
            N::store(
                "b",
                E::var("i"),
                E::load("a", E::rem(E::add(E::var("i"), E::u32(1)), E::buf_len("a"))),
            ),
        ],
    )
}

fn unsupported() -> VP {
    VP::wrapped(
        vec![
            VB::read("src", 0, DT::U32).with_count(256),
            VB::output("out", 1, DT::U32).with_count(256),
            VB::workgroup("tile", 64, DT::U32),
        ],
        [64, 1, 1],
        vec![
            N::let_bind("i", E::gid_x()),
            N::async_load_gpu_driven("src", "tile", E::u32(0), E::u32(64), "t0"),
            N::async_wait("t0"),
            N::store("out", E::var("i"), E::load("tile", E::local_x())),
        ],
    )
}

/// (file stem, Program, vyrescope-supported).
fn fixtures() -> Vec<(&'static str, VP, bool)> {
    vec![
        ("vadd_f32", vadd(), true),
        ("saxpy_f32", saxpy(), true),
        ("reduce_sum_u32", reduce(), true),
        ("histogram_u32", histogram(), true),
        ("subgroup_ops", subgroup(), true),
        ("branch_select_cast", branchy(), true),
        ("grid_sync_u32", grid_sync(), true),
        ("unsupported_async", unsupported(), false),
    ]
}

/// Compares `bytes` with the committed file (or writes it when blessing).
fn check_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    crate::support::snapshot::check_bytes(
        path,
        bytes,
        "what vyre's builder writes",
        "--features vyre --test suite vyre_import::",
    )
}

fn errors(d: &[Diagnostic]) -> Vec<String> {
    d.iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect()
}

#[test]
fn fixtures_are_what_vyres_builder_writes() {
    let mut failures = Vec::new();
    for (stem, p, supported) in fixtures() {
        if supported {
            let mut v = vyre_foundation::ir::validate(&p);
            // Without a backend in hand, vyre's validator cannot know that CUDA has subgroups.
            v.retain(|e| !format!("{e:?}").contains("require backend subgroup-ops support"));
            assert!(v.is_empty(), "{stem}: vyre's validator objects: {v:?}");
        }
        let wire = p.to_wire().expect("to_wire");
        let text = p.to_text().expect("to_text");
        assert!(wire.starts_with(b"VYRE") && text.starts_with("vyre_ir v0.1\n"));
        for (path, bytes) in [
            (dir().join(format!("{stem}.vyre")), wire),
            (dir().join(format!("{stem}.vyre.txt")), text.into_bytes()),
        ] {
            if let Err(e) = check_file(&path, &bytes) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `p` on the reference interpreter with its own `run` section.
fn interp(p: &Program) -> Vec<HostBuffer> {
    let prepared = prepare(p, &dir(), None, None).unwrap_or_else(|e| panic!("{}: {e}", p.name));
    let mut bufs = prepared.buffers;
    vyrescope::interp::run(p, &prepared.shape, &mut bufs).unwrap_or_else(|e| panic!("{e}"));
    bufs
}

fn u32s(b: &HostBuffer) -> Vec<u32> {
    b.data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn buf<'a>(bufs: &'a [HostBuffer], name: &str) -> &'a HostBuffer {
    bufs.iter().find(|b| b.name == name).unwrap()
}

#[test]
fn supported_fixtures_convert_validate_assemble_and_round_trip() {
    vyrescope::vyre::install();
    let ptxas = crate::support::tools::ptxas("assembling the imported fixtures");
    for (stem, _, supported) in fixtures() {
        if !supported {
            continue;
        }
        let wire = dir().join(format!("{stem}.vyre"));
        let text = dir().join(format!("{stem}.vyre.txt"));
        let loaded = vyrescope::validate::load(&wire);
        let p = loaded
            .program
            .clone()
            .unwrap_or_else(|| panic!("{stem}: {:?}", loaded.diagnostics));
        assert!(
            errors(&loaded.diagnostics).is_empty(),
            "{stem}: {:?}",
            loaded.diagnostics
        );
        assert_eq!(p.name, stem);
        // The text envelope and the strict loader give the same Program.
        assert_eq!(
            load_program(&text).unwrap(),
            p,
            "{stem}: wire and text differ"
        );
        assert_eq!(load_program(&wire).unwrap(), p);
        // The JSON the import writes reads back to the same Program.
        let json = program_to_json(&p).unwrap();
        let back = parse_program(&json, "import.json").unwrap();
        assert_eq!(back, p, "{stem}: JSON round trip");
        assert!(vyrescope::validate::is_valid(
            &vyrescope::validate::validate(&back)
        ));
        // Same results from the imported Program and the JSON one, with random inputs.
        let (a, b) = (interp(&p), interp(&back));
        assert_eq!(a, b, "{stem}: results differ");
        let inputs_random = a.iter().any(|h| h.data.iter().any(|&x| x != 0));
        assert!(inputs_random, "{stem}: no data");
        let k = vyrescope::emit::emit(&p, &vyrescope::emit::EmitOptions::for_program(&p))
            .unwrap_or_else(|e| panic!("{stem}: {e}"));
        if let Some(bin) = &ptxas {
            vyrescope::emit::ptxas::assemble(bin, &k.ptx, 90, false)
                .unwrap_or_else(|e| panic!("{stem}: ptxas: {e}"));
        }
    }
}

fn imported(stem: &str) -> (Program, Vec<Diagnostic>, Vec<HostBuffer>) {
    vyrescope::vyre::install();
    let loaded = vyrescope::validate::load(&dir().join(format!("{stem}.vyre")));
    let p = loaded.program.unwrap();
    let after = interp(&p);
    (p, loaded.diagnostics, after)
}

fn f32s(b: &HostBuffer) -> Vec<f32> {
    u32s(b).into_iter().map(f32::from_bits).collect()
}

#[test]
fn results_are_what_vyres_kernels_compute() {
    // vadd: every element, the early exit leaving nothing past the 1000 elements.
    let (p, d, after) = imported("vadd_f32");
    let before = prepare(&p, &dir(), None, None).unwrap().buffers;
    let (a, b) = (f32s(buf(&before, "a")), f32s(buf(&before, "b")));
    let out = f32s(buf(&after, "out"));
    assert_eq!(out.len(), 1000);
    for i in 0..1000 {
        assert_eq!(out[i].to_bits(), (a[i] + b[i]).to_bits(), "vadd[{i}]");
    }
    assert!(d.iter().any(|d| d.code == "VY012"), "{d:?}");
    // The guard `i < len(out)` proves the store in range; the loads of `a` and `b` keep
    // vyre's clamp (nothing in the Program ties their lengths to `out`'s).
    let note = d.iter().find(|d| d.code == "VY011").expect("clamp note");
    assert!(note.message.contains("2 global load(s)"), "{note}");
    assert!(!note.message.contains("store"), "{note}");

    // saxpy: unguarded loads get vyre's clamp, and the results are still a*x+y.
    let (p, d, after) = imported("saxpy_f32");
    let before = prepare(&p, &dir(), None, None).unwrap().buffers;
    let alpha = f32s(buf(&before, "alpha"))[0];
    let (x, y) = (f32s(buf(&before, "x")), f32s(buf(&before, "y")));
    let out = f32s(buf(&after, "out"));
    for i in 0..3000 {
        assert_eq!(
            out[i].to_bits(),
            alpha.mul_add(x[i], y[i]).to_bits(),
            "saxpy[{i}]"
        );
    }
    assert!(
        d.iter()
            .any(|d| d.code == "VY011" && d.message.contains("2 global load")),
        "{d:?}"
    );

    // reduction: partial[w] is the sum of the bytes of input[64w .. 64w+64].
    let (p, _, after) = imported("reduce_sum_u32");
    let input = u32s(buf(
        &prepare(&p, &dir(), None, None).unwrap().buffers,
        "input",
    ));
    let partial = u32s(buf(&after, "partial"));
    for (w, got) in partial.iter().enumerate() {
        let want: u32 = input[w * 64..w * 64 + 64]
            .iter()
            .map(|v| v.to_le_bytes().iter().map(|&b| u32::from(b)).sum::<u32>())
            .sum();
        assert_eq!(*got, want, "partial[{w}]");
    }

    // histogram: the counts of the low bytes; vyre's unchecked atomic is a warning.
    let (p, d, after) = imported("histogram_u32");
    let data = u32s(buf(
        &prepare(&p, &dir(), None, None).unwrap().buffers,
        "data",
    ));
    let mut want = vec![0u32; 256];
    for v in data {
        want[(v & 255) as usize] += 1;
    }
    assert_eq!(u32s(buf(&after, "bins")), want);
    let w = d
        .iter()
        .find(|d| d.code == "VY010")
        .expect("atomic warning");
    assert_eq!(w.severity, Severity::Warning);
    assert!(w.message.contains("entry[0].body[1].then[1].value"), "{w}");

    // branches, select, casts and vyre's u32 division by zero (u32::MAX).
    let (p, d, after) = imported("branch_select_cast");
    let input: Vec<i32> = u32s(buf(
        &prepare(&p, &dir(), None, None).unwrap().buffers,
        "input",
    ))
    .into_iter()
    .map(|v| v as i32)
    .collect();
    let (out, quot) = (f32s(buf(&after, "out")), u32s(buf(&after, "quot")));
    let mut zero_divisors = 0;
    for (i, &x) in input.iter().enumerate() {
        let want = if x > 0 {
            x as f32
        } else if x < -1000 {
            -1.0
        } else {
            (x.wrapping_neg() as f32) * 0.5
        };
        assert_eq!(out[i].to_bits(), want.to_bits(), "out[{i}] for {x}");
        let u = x as u32;
        let q = u.checked_div(u & 7).unwrap_or(u32::MAX);
        zero_divisors += usize::from(u & 7 == 0);
        assert_eq!(quot[i], q, "quot[{i}]");
    }
    assert!(zero_divisors > 0, "the inputs never divide by zero");
    assert!(
        p.doc.as_deref().unwrap().contains("demo.branchy"),
        "{:?}",
        p.doc
    );
    assert!(d.iter().any(|d| d.message.contains("division")), "{d:?}");

    // grid barrier: b[i] = a[i+1] as written before the barrier.
    let (p, _, after) = imported("grid_sync_u32");
    assert!(p.body.iter().any(|s| matches!(
        s.kind,
        vyrescope::ir::StmtKind::Barrier(vyrescope::ir::BarrierScope::Grid)
    )));
    let b = u32s(buf(&after, "b"));
    for (i, v) in b.iter().enumerate() {
        assert_eq!(*v, ((i as u32 + 1) % 1024) * 3 + 1, "b[{i}]");
    }
}

#[test]
fn unsupported_constructs_are_errors_naming_the_vyre_node() {
    vyrescope::vyre::install();
    let path = dir().join("unsupported_async.vyre");
    let loaded = vyrescope::validate::load(&path);
    let errs: Vec<&Diagnostic> = loaded
        .diagnostics
        .iter()
        .filter(|d| d.code == "VY001")
        .collect();
    assert_eq!(errs.len(), 2, "{:?}", loaded.diagnostics);
    assert!(errs[0].message.contains("entry[0].body[1]") && errs[0].message.contains("async_load"));
    assert!(errs[1].message.contains("entry[0].body[2]") && errs[1].message.contains("async_wait"));
    assert!(errs
        .iter()
        .all(|d| d.severity == Severity::Error && !d.fix.is_empty()));
    assert!(!loaded.is_valid());
    let e = load_program(&path).unwrap_err();
    assert!(e.message.contains("2 construct(s)"), "{e}");
    assert!(e.to_string().contains("Fix: "), "{e}");
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn hostile_vyre_files_give_errors_with_a_fix() {
    vyrescope::vyre::install();
    let t = scratch();
    let wire = std::fs::read(dir().join("vadd_f32.vyre")).unwrap();
    let text = std::fs::read_to_string(dir().join("vadd_f32.vyre.txt")).unwrap();
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("magic only", b"VYRE".to_vec()),
        ("header only", wire[..40].to_vec()),
        ("truncated", wire[..wire.len() / 2].to_vec()),
        ("bad version", {
            let mut w = wire.clone();
            w[4] = 99;
            w
        }),
        ("flipped body byte", {
            let mut w = wire.clone();
            let n = w.len() - 3;
            w[n] ^= 0x5a;
            w
        }),
        ("bad hex", {
            let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
            lines[2].replace_range(0..1, "g");
            (lines.join("\n") + "\n").into_bytes()
        }),
        ("odd hex line", format!("{}a\n", text).into_bytes()),
        (
            "huge declared length",
            "vyre_ir v0.1\nwire_bytes 99999999999999\n00\n"
                .as_bytes()
                .to_vec(),
        ),
        (
            "length mismatch",
            text.replacen("wire_bytes ", "wire_bytes 1", 1).into_bytes(),
        ),
        ("not utf-8 text", b"vyre_ir v0.1\n\xff\xfe".to_vec()),
        ("empty .vyre", Vec::new()),
    ];
    // A seeded walk of one-byte corruptions and cuts: errors or valid Programs, never a panic.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for k in 0..200 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut w = wire.clone();
        let at = (seed as usize) % w.len();
        if k % 3 == 0 {
            w.truncate(at);
        } else {
            w[at] = (seed >> 32) as u8;
        }
        cases.push(("mutated", w));
    }
    for (i, (what, bytes)) in cases.iter().enumerate() {
        let path = t.path().join(format!("case{i}.vyre"));
        std::fs::write(&path, bytes).unwrap();
        match load_program(&path) {
            Err(e) => {
                assert!(!e.fix.trim().is_empty(), "{what}: no fix in {e}");
                assert!(
                    e.to_string().contains(&path.display().to_string()),
                    "{what}: {e}"
                );
            }
            Ok(_) => assert_eq!(*what, "mutated", "{what} was accepted"),
        }
        let loaded = vyrescope::validate::load(&path);
        assert!(loaded.program.is_some() || loaded.first_error().is_some());
    }
}

fn cli(args: &[&str], cwd: &Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(args)
        .current_dir(cwd)
        .env("HOME", cwd)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn commands_open_vyre_files_and_import_writes_json() {
    let t = scratch();
    let fx = dir();
    let wire = fx.join("histogram_u32.vyre");
    let text = fx.join("histogram_u32.vyre.txt");
    let out = t.path().join("hist.json");
    let (code, _, err) = cli(
        &[
            "import",
            wire.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("VY010"), "{err}");
    let json = std::fs::read_to_string(&out).unwrap();
    let back = parse_program(&json, "hist.json").unwrap();
    vyrescope::vyre::install();
    assert_eq!(back, load_program(&wire).unwrap());
    // --json: one object with the Program as written.
    let (code, stdout, _) = cli(&["import", text.to_str().unwrap(), "--json"], t.path());
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["program"]["name"], "histogram_u32");
    // Other commands take the vyre file as it is.
    let (code, stdout, err) = cli(&["check", wire.to_str().unwrap()], t.path());
    assert_eq!(code, 0, "{stdout}{err}");
    assert!(stdout.contains("VY010"), "{stdout}");
    let (code, stdout, err) = cli(&["print", text.to_str().unwrap()], t.path());
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("atomic"), "{stdout}");
    let (code, stdout, err) = cli(&["emit", wire.to_str().unwrap()], t.path());
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains(".visible .entry histogram_u32"), "{stdout}");
    let (code, stdout, err) = cli(
        &[
            "run",
            wire.to_str().unwrap(),
            "--backend",
            "reference",
            "--json",
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{stdout}{err}");
    // The inspector opens a folder of vyre files (wire and text), the unsupported one too.
    let (code, stdout, err) = cli(
        &[
            "tui",
            fx.to_str().unwrap(),
            "--keys",
            "q",
            "--snapshot",
            "-",
        ],
        t.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("Programs 16"), "{stdout}");
    // An unsupported file: import refuses to write, check lists the errors.
    let bad = fx.join("unsupported_async.vyre");
    let (code, _, err) = cli(
        &["import", bad.to_str().unwrap(), "-o", out.to_str().unwrap()],
        t.path(),
    );
    assert_eq!(code, 1);
    assert!(err.contains("VY001") && err.contains("Fix:"), "{err}");
    let (code, stdout, _) = cli(&["check", bad.to_str().unwrap()], t.path());
    assert_eq!(code, 1);
    assert!(stdout.contains("entry[0].body[1]"), "{stdout}");
    // A JSON Program needs no import.
    let prog = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs/vadd_f32.json");
    let (code, _, err) = cli(&["import", prog.to_str().unwrap()], t.path());
    assert_eq!(code, 1);
    assert!(err.contains("not a vyre file"), "{err}");
}

#[test]
fn constructs_map_and_refusals_name_the_vyre_node() {
    use vyre_foundation::ir::AtomicOp as VA;
    use vyrescope::ir::{AtomicOp, AtomicOrder, Expr as X, StmtKind};
    let lru = E::Atomic {
        op: VA::LruUpdate,
        buffer: Ident::from("h-ist"),
        index: Box::new(E::u32(1)),
        expected: None,
        value: Box::new(E::u32(9)),
        ordering: MemoryOrdering::Relaxed,
    };
    let p = VP::wrapped(
        vec![
            VB::read_write("h-ist", 0, DT::U32).with_count(16),
            VB::read("w", 0, DT::U32).with_count(16),
            VB::read("bad", 2, DT::BF16).with_count(4),
            VB::read("rt", 3, DT::U32),
        ],
        [32, 1, 1],
        vec![
            region(
                "a",
                vec![
                    N::let_bind("x.y", E::u64(7)),
                    N::let_bind(
                        "c",
                        E::atomic_compare_exchange_ordered(
                            "h-ist",
                            E::u32(3),
                            E::u32(0),
                            E::u32(5),
                            MemoryOrdering::Acquire,
                        ),
                    ),
                    N::let_bind("m", lru),
                    N::let_bind("s", E::call("foo", vec![])),
                    N::let_bind(
                        "g",
                        E::atomic_add_ordered(
                            "h-ist",
                            E::u32(0),
                            E::u32(1),
                            MemoryOrdering::GridSync,
                        ),
                    ),
                ],
            ),
            region(
                "b",
                vec![
                    N::let_bind("q", E::cast(DT::U8, E::u32(1))),
                    N::let_bind(
                        "sat",
                        E::BinOp {
                            op: vyre_foundation::ir::BinOp::Shuffle,
                            left: Box::new(E::u32(1)),
                            right: Box::new(E::u32(2)),
                        },
                    ),
                    N::barrier(),
                ],
            ),
        ],
    );
    let got = vyrescope::vyre::import_program(&p, "mapped");
    let (prog, d) = (got.program, got.diagnostics);
    let has = |code: &str, text: &str| d.iter().any(|x| x.code == code && x.message.contains(text));
    // Buffers: renamed, a colliding binding moved on, an element type refused, a default length.
    let names: Vec<(&str, Option<u32>)> = prog
        .buffers
        .iter()
        .map(|b| (b.name.as_str(), b.binding))
        .collect();
    assert_eq!(names, [("h_ist", Some(0)), ("w", Some(1)), ("rt", Some(3))]);
    assert!(has("VY003", "buffers[2]"), "{d:?}");
    assert!(has("VY013", "`rt`"), "{d:?}");
    let rt = &prog.run.as_ref().unwrap().inputs;
    assert_eq!(
        rt.iter().find(|(n, _)| n == "rt").unwrap().1.len,
        Some(1024)
    );
    assert!(
        has("VY014", "`h-ist` -> `h_ist`") && has("VY014", "`x.y` -> `x_y`"),
        "{d:?}"
    );
    // Two top-level regions: two blocks, their generators in the doc; a barrier: no early exit.
    assert_eq!(prog.body.len(), 2);
    let doc = prog.doc.as_deref().unwrap();
    assert!(doc.contains("body[0]: vyre region `a` (entry[0])"), "{doc}");
    assert!(doc.contains("body[1]: vyre region `b` (entry[1])"), "{doc}");
    let StmtKind::Block(a) = &prog.body[0].kind else {
        panic!("{:?}", prog.body[0])
    };
    // let x_y, let c, let m survive; the call and the GridSync atomic are refused.
    assert_eq!(a.len(), 3, "{a:?}");
    assert!(matches!(&a[0].kind, StmtKind::Let { name, value: X::Lit(_) } if name == "x_y"));
    match &a[1].kind {
        StmtKind::Let {
            value:
                X::Atomic {
                    op: AtomicOp::Cas,
                    order: AtomicOrder::Acquire,
                    expected: Some(_),
                    ..
                },
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &a[2].kind,
        StmtKind::Let {
            value: X::Atomic {
                op: AtomicOp::Max,
                order: AtomicOrder::Relaxed,
                ..
            },
            ..
        }
    ));
    assert!(
        has("VY002", "entry[0].body[3]") && has("VY002", "foo"),
        "{d:?}"
    );
    assert!(
        has("VY002", "entry[0].body[4]") && has("VY002", "GridSync"),
        "{d:?}"
    );
    assert!(has("VY002", "entry[1].body[0]"), "{d:?}");
    assert!(
        has("VY002", "entry[1].body[1]") && has("VY002", "Shuffle"),
        "{d:?}"
    );
    let StmtKind::Block(b) = &prog.body[1].kind else {
        panic!()
    };
    assert!(matches!(
        b[..],
        [vyrescope::ir::Stmt {
            kind: StmtKind::Barrier(vyrescope::ir::BarrierScope::Workgroup),
            ..
        }]
    ));
    assert!(d
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .all(|x| !x.fix.is_empty()));
}

/// A seeded generator of random vyre Programs, well typed or not, with supported and
/// unsupported constructs mixed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        // SplitMix64.
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn pick(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn expr(&mut self, depth: u32) -> E {
        let leaf = depth == 0 || self.pick(3) == 0;
        if leaf {
            return match self.pick(7) {
                0 => E::u32(self.next() as u32 % 64),
                1 => E::i32(self.next() as i32),
                2 => E::f32((self.next() % 1000) as f32 / 7.0),
                3 => E::var(["v0", "v1", "v2", "x.y"][self.pick(4)]),
                4 => E::gid_x(),
                5 => E::buf_len(["inp", "out", "wg"][self.pick(3)]),
                _ => E::subgroup_local_id(),
            };
        }
        let d = depth - 1;
        match self.pick(12) {
            0 => E::load(["inp", "out", "wg", "nope"][self.pick(4)], self.expr(d)),
            1 | 2 => {
                let ops = [
                    E::add,
                    E::sub,
                    E::mul,
                    E::div,
                    E::rem,
                    E::shl,
                    E::shr,
                    E::bitand,
                    E::lt,
                    E::ge,
                    E::and,
                    E::min,
                    E::max,
                    E::rotate_left,
                    E::saturating_add,
                ];
                ops[self.pick(ops.len())](self.expr(d), self.expr(d))
            }
            3 => {
                let ops = [
                    E::negate,
                    E::bitnot,
                    E::not,
                    E::sqrt,
                    E::sin,
                    E::acos,
                    E::popcount,
                ];
                ops[self.pick(ops.len())](self.expr(d))
            }
            4 => E::select(self.expr(d), self.expr(d), self.expr(d)),
            5 => {
                let t = [DT::U32, DT::I32, DT::F32, DT::U8, DT::Bool][self.pick(5)].clone();
                E::cast(t, self.expr(d))
            }
            6 => E::fma(self.expr(d), self.expr(d), self.expr(d)),
            7 => E::atomic_add("out", self.expr(d), self.expr(d)),
            8 => E::subgroup_add(self.expr(d)),
            9 => E::subgroup_shuffle(self.expr(d), self.expr(d)),
            10 => E::u64(self.next()),
            _ => E::call("f", vec![self.expr(d)]),
        }
    }

    fn body(&mut self, depth: u32, n: usize) -> Vec<N> {
        (0..n).map(|_| self.node(depth)).collect()
    }

    fn node(&mut self, depth: u32) -> N {
        let nested = depth > 0;
        match self.pick(if nested { 11 } else { 6 }) {
            0 => N::let_bind(["v0", "v1", "v2", "x.y"][self.pick(4)], self.expr(3)),
            1 => N::assign(["v0", "v1"][self.pick(2)], self.expr(3)),
            2 => N::store(
                ["out", "wg", "inp"][self.pick(3)],
                self.expr(2),
                self.expr(3),
            ),
            3 => N::barrier_with_ordering(
                [MemoryOrdering::SeqCst, MemoryOrdering::GridSync][self.pick(2)],
            ),
            4 => N::Return,
            5 => N::async_wait("t"),
            6 => {
                let cond = self.expr(2);
                let then = self.body(depth - 1, 2);
                let k = self.pick(2);
                N::if_then_else(cond, then, self.body(depth - 1, k))
            }
            7 => N::loop_for("k", E::u32(0), self.expr(1), self.body(depth - 1, 2)),
            8 => N::Block(self.body(depth - 1, 2)),
            9 => region("gen.region", self.body(depth - 1, 2)),
            _ => N::if_then(
                E::lt(E::gid_x(), E::buf_len("out")),
                self.body(depth - 1, 2),
            ),
        }
    }
}

#[test]
fn random_vyre_programs_import_without_panics_and_round_trip() {
    vyrescope::vyre::install();
    let t = scratch();
    let mut g = Gen(0x5eed);
    let (mut complete, mut refused) = (0, 0);
    for case in 0..300 {
        let mut buffers = vec![
            VB::read("inp", 0, DT::U32).with_count(64),
            VB::output("out", 1, DT::U32).with_count(64),
        ];
        if g.pick(2) == 0 {
            buffers.push(VB::workgroup("wg", 32, DT::U32));
        }
        let n = 1 + g.pick(5);
        let p = VP::wrapped(buffers, [32, 1, 1], g.body(3, n));
        let got = vyrescope::vyre::import_program(&p, "fuzz");
        // The validator and the printer take whatever the import made.
        let _ = vyrescope::validate::validate(&got.program);
        let _ = vyrescope::ir::print::print_program(&got.program);
        let import_errors = got
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error);
        if import_errors {
            refused += 1;
        } else {
            complete += 1;
            let json = program_to_json(&got.program).unwrap();
            let back = parse_program(&json, "fuzz.json")
                .unwrap_or_else(|e| panic!("case {case}: {e}\n{json}"));
            assert_eq!(back, got.program, "case {case}");
        }
        // Through vyre's own wire format and our loader: the same Program.
        if let Ok(wire) = p.to_wire() {
            let f = t.path().join("fuzz.vyre");
            std::fs::write(&f, &wire).unwrap();
            let loaded = vyrescope::validate::load(&f);
            if let Some(q) = loaded.program {
                assert_eq!(q.body, got.program.body, "case {case}");
            }
        }
    }
    // Both kinds occur, so the property is not vacuous.
    assert!(
        complete >= 20 && refused >= 20,
        "{complete} complete, {refused} refused"
    );
}

#[test]
fn a_left_out_early_exit_changes_no_result_past_the_count() {
    // Where the import proves vyre's early exit redundant and leaves it out, running the
    // Program with the exit put back, on a grid two workgroups larger than the dispatch
    // count (invocations past it exist), must give the same buffers byte for byte.
    use vyrescope::ir::StmtKind;
    vyrescope::vyre::install();
    let mut dropped = 0;
    for (stem, vp, supported) in fixtures() {
        if !supported {
            continue;
        }
        let Some(cond) = vyrescope::vyre::import::dispatch_exit(&vp) else {
            continue;
        };
        let p = vyrescope::vyre::import_program(&vp, stem).program;
        let has_exit = matches!(
            p.body.first().map(|s| &s.kind),
            Some(StmtKind::If { cond: c, .. }) if *c == cond
        );
        if has_exit {
            continue;
        }
        dropped += 1;
        let with_exit = crate::support::vyre::with_exit_first(&p, cond);
        let with_exit = parse_program(&program_to_json(&with_exit).unwrap(), "exit.json")
            .unwrap_or_else(|e| panic!("{stem}: {e}"));
        let base = prepare(&p, &dir(), None, None).unwrap_or_else(|e| panic!("{stem}: {e}"));
        let mut grid = base.shape.grid;
        grid[0] += 2;
        let run = |q: &Program| {
            let prepared =
                prepare(q, &dir(), None, Some(grid)).unwrap_or_else(|e| panic!("{stem}: {e}"));
            let mut bufs = prepared.buffers;
            vyrescope::interp::run(q, &prepared.shape, &mut bufs)
                .unwrap_or_else(|e| panic!("{stem}: {e}"));
            bufs
        };
        let (a, b) = (run(&p), run(&with_exit));
        assert!(
            a.iter().any(|h| h.data.iter().any(|&x| x != 0)),
            "{stem}: no data"
        );
        assert_eq!(a, b, "{stem}: the left-out exit changes results");
    }
    // vadd and saxpy at least (their stores index the counted buffer with gid.x).
    assert!(dropped >= 2, "{dropped} imports left the exit out");
}

/// `check` of a vyre file prints its informational import notes (VY011, VY012) only under
/// `--verbose`, and says how many it left out; `--json` always lists them (issue 36).
#[test]
fn check_shows_import_notes_with_verbose_only() {
    let run = |args: &[&str]| {
        let o = crate::support::cli::in_root().args(args).output().unwrap();
        crate::support::cli::parts(&o)
    };
    let file = "fixtures/vyre/saxpy_f32.vyre";
    let (code, quiet, _) = run(&["check", file]);
    assert_eq!(code, 0, "{quiet}");
    assert!(!quiet.contains("info[VY"), "{quiet}");
    assert!(quiet.contains("--verbose shows them"), "{quiet}");
    let (_, loud, _) = run(&["check", file, "--verbose"]);
    assert!(loud.contains("info[VY011]"), "{loud}");
    assert!(!loud.contains("not shown"), "{loud}");
    let (_, json, _) = run(&["check", file, "--json"]);
    assert!(json.contains("\"VY011\""), "{json}");
}
