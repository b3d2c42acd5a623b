//! vyre files built to exhaust the import (feature `vyre`): a guard that copied its index
//! doubled the Program at every level of `a[a[...a[i]]]`; the import now binds a large index
//! (or divisor) once with `let`, and a Program that still converts too large is an error.

use std::path::{Path, PathBuf};
use std::process::Command;

use vyre_foundation::ir::{
    BinOp as VBin, BufferDecl as VB, DataType as DT, Expr as E, Node as N, Program as VP,
};

use vyrescope::inputs::prepare;
use vyrescope::ir::print::print_program;
use vyrescope::ir::{program_to_json, Program};

const LEN: u32 = 1000;

/// `out[gid] = a[a[...a[gid]]]` (`depth` loads), every index clamped by vyre.
fn nested_loads(depth: usize) -> VP {
    let mut index = E::gid_x();
    for _ in 0..depth {
        index = E::load("a", index);
    }
    VP::wrapped(
        vec![
            VB::read("a", 0, DT::U32).with_count(LEN),
            VB::output("out", 1, DT::U32).with_count(LEN),
        ],
        [64, 1, 1],
        vec![N::store("out", E::gid_x(), index)],
    )
}

/// `out[gid] = a[gid] / (a[..] / (... / a[gid]))`: u32 divisions by nested quotients.
fn nested_divisions(depth: usize) -> VP {
    let mut d = E::load("a", E::gid_x());
    for _ in 0..depth {
        d = E::BinOp {
            op: VBin::Div,
            left: Box::new(E::load("a", E::gid_x())),
            right: Box::new(d),
        };
    }
    VP::wrapped(
        vec![
            VB::read("a", 0, DT::U32).with_count(LEN),
            VB::output("out", 1, DT::U32).with_count(LEN),
        ],
        [64, 1, 1],
        vec![N::store("out", E::gid_x(), d)],
    )
}

/// Writes `vp` as wire bytes in `dir` and opens it through the one Program loader.
fn open(vp: &VP, dir: &Path, name: &str) -> Program {
    vyrescope::vyre::install();
    let bytes = vyrescope::vyre::files::encode(vp, false).expect("vyre encodes");
    let path = dir.join(format!("{name}.vyre"));
    std::fs::write(&path, bytes).unwrap();
    let loaded = vyrescope::validate::load(&path);
    assert!(loaded.first_error().is_none(), "{:?}", loaded.diagnostics);
    loaded.program.expect("imported")
}

/// Seeded values below `limit`.
fn seeded(n: usize, limit: u32, mut seed: u64) -> Vec<u32> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 16) as u32 % limit
        })
        .collect()
}

/// Runs `p` with `a` = `a_values`; `out`'s values.
fn run(p: &Program, a_values: &[u32], dir: &Path) -> Vec<u32> {
    let prepared = prepare(p, dir, None, None).expect("inputs");
    let mut bufs = prepared.buffers;
    let a = bufs.iter_mut().find(|b| b.name == "a").unwrap();
    a.data = a_values.iter().flat_map(|v| v.to_le_bytes()).collect();
    vyrescope::interp::run(p, &prepared.shape, &mut bufs).expect("runs");
    let out = bufs.iter().find(|b| b.name == "out").unwrap();
    out.data
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

#[test]
fn nested_clamped_loads_import_linear_in_depth_and_keep_vyres_result() {
    let t = tempfile::tempdir().unwrap();
    let p = open(&nested_loads(24), t.path(), "deep");
    // Each level adds one `let` and one clamp: linear, where copying doubled it (2^24).
    let json = program_to_json(&p).unwrap();
    assert!(json.len() < 40_000, "{} bytes of JSON", json.len());
    let text = print_program(&p).text();
    // One `let` per level or two (a small index is copied), never a copy per level.
    let lets = text.matches("let _vy").count();
    assert!((8..=24).contains(&lets), "{lets} lets\n{text}");
    // vyre's result: every out-of-range index reads element 0. A tenth of the values are
    // out of range, so both the clamp and the chain are exercised.
    let a = seeded(LEN as usize, LEN + LEN / 10, 0x5eed_0003);
    let out = run(&p, &a, t.path());
    for (i, &got) in out.iter().enumerate() {
        let mut v = i as u32;
        for _ in 0..24 {
            v = if v < LEN { a[v as usize] } else { a[0] };
        }
        assert_eq!(got, v, "out[{i}]");
    }
}

#[test]
fn nested_u32_divisions_bind_the_divisor_once_and_keep_vyres_result() {
    let t = tempfile::tempdir().unwrap();
    let p = open(&nested_divisions(24), t.path(), "divs");
    let json = program_to_json(&p).unwrap();
    assert!(json.len() < 40_000, "{} bytes of JSON", json.len());
    // Small values, so quotients (and divisions by zero) happen all along the chain.
    let a = seeded(LEN as usize, 7, 0x5eed_0004);
    let out = run(&p, &a, t.path());
    for (i, (&x, &got)) in a.iter().zip(&out).enumerate() {
        let mut d = x;
        for _ in 0..24 {
            d = x.checked_div(d).unwrap_or(u32::MAX);
        }
        assert_eq!(got, d, "out[{i}]");
    }
}

#[test]
fn import_refuses_to_write_over_its_input() {
    let t = tempfile::tempdir().unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/vyre/vadd_f32.vyre");
    let file = t.path().join("x.vyre");
    std::fs::copy(&src, &file).unwrap();
    let before = std::fs::read(&file).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(["import", "x.vyre", "-o", "x.vyre"])
        .current_dir(t.path())
        .env("HOME", t.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("is the input file") && err.contains("Fix: "),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
}
