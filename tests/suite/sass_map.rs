//! The SASS view's three-way map (SASS instruction -> PTX line -> IR node) on every fixture,
//! for sm_90 and sm_80, and the SASS text of a few fixtures against snapshots
//! (`tests/snapshots/sass/`, made with the ptxas and nvdisasm that `scripts/install-*.sh` pin:
//! other versions schedule differently, so the snapshots are only compared with those versions,
//! and CI, which installs them, fails on any other).
//!
//! Needs ptxas and nvdisasm (`scripts/install-ptxas.sh`, `scripts/install-nvdisasm.sh`):
//! without them the tests print a notice and pass, except in CI (`CI=true`), where a missing
//! tool is a failure.

use std::path::Path;

use crate::support;
use support::fixtures::fixtures;

use vyrescope::emit::{emit, EmitOptions, EmittedKernel};
use vyrescope::sass::{disassemble, render, Class, Mix, SassListing};

/// Whether both tools are there (a NOTICE when not; a failure in CI).
pub fn tools_present() -> bool {
    support::tools::sass_tools("the SASS checks")
}

pub fn kernel(p: &vyrescope::ir::Program, sm: u32) -> EmittedKernel {
    let opts = EmitOptions {
        sm,
        lineinfo: true,
        ..EmitOptions::for_program(p)
    };
    emit(p, &opts).unwrap()
}

/// Why `i` (no node) is allowed to have none, or an error.
fn unowned_reason(k: &EmittedKernel, ptx_line: u32) -> Result<&'static str, String> {
    match k.source_map.node_at(ptx_line) {
        Some("prologue") => Ok("prologue"),
        Some("epilogue") => Ok("epilogue"),
        Some(n) => Err(format!("line {ptx_line} belongs to {n} yet has no node")),
        None => {
            let text = k.ptx.lines().nth(ptx_line as usize - 1).unwrap_or("");
            if text.trim() == "{" {
                Ok("entry")
            } else {
                Err(format!("PTX line {ptx_line} `{text}` has no owner"))
            }
        }
    }
}

fn check_map(name: &str, k: &EmittedKernel, l: &SassListing) -> Vec<String> {
    let mut errs = Vec::new();
    let ptx_lines = k.ptx.lines().count() as u32;
    let mut mix = Mix::default();
    for i in &l.instructions {
        let at = format!("{name} sm_{} {:04x} `{}`", l.sm, i.address, i.text);
        let Some(line) = i.ptx_line else {
            errs.push(format!("{at}: no PTX line"));
            continue;
        };
        if line == 0 || line > ptx_lines {
            errs.push(format!("{at}: PTX line {line} out of 1..={ptx_lines}"));
            continue;
        }
        match &i.node {
            Some(n) => {
                if k.source_map.node_at(line) != Some(n.as_str()) {
                    errs.push(format!("{at}: node {n} does not own PTX line {line}"));
                }
                mix.add(i.class);
            }
            None => {
                let trap = i.text.starts_with("BRA ")
                    && l.labels.iter().any(|lab| lab.address == i.address);
                if !trap {
                    if let Err(e) = unowned_reason(k, line) {
                        errs.push(format!("{at}: {e}"));
                    }
                }
            }
        }
        if i.routine.is_some() && i.node.is_none() {
            errs.push(format!("{at}: subroutine instruction without a node"));
        }
    }
    let owned: u32 = l.costs.iter().map(|c| c.total).sum();
    if owned + l.unowned.total() != l.instructions.len() as u32 || owned != mix.total() {
        errs.push(format!("{name}: the mix does not add up"));
    }
    for c in &l.costs {
        if c.mix.total() != c.total {
            errs.push(format!("{name}: {} total {} != mix", c.node, c.total));
        }
    }
    if l.costs.is_empty() {
        errs.push(format!("{name}: no instruction has a node"));
    }
    if l.resources.registers == 0 {
        errs.push(format!("{name}: no register count"));
    }
    errs
}

#[test]
fn every_fixture_maps_sass_to_ptx_lines_and_ir_nodes() {
    if !tools_present() {
        return;
    }
    let mut errs = Vec::new();
    let mut counted = 0;
    for (path, p) in fixtures() {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        for sm in [90, 80] {
            let k = kernel(&p, sm);
            match disassemble(&k, sm) {
                Ok(l) => {
                    counted += l.instructions.len();
                    errs.extend(check_map(&name, &k, &l));
                }
                Err(e) => errs.push(format!("{name} sm_{sm}: {e}")),
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    assert!(
        counted > 1000,
        "only {counted} instructions over all fixtures"
    );
}

#[test]
fn memory_and_control_instructions_land_on_the_statements_that_do_them() {
    if !tools_present() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/programs");
    let p = vyrescope::ir::load_program(&dir.join("vadd_f32.json")).unwrap();
    let k = kernel(&p, 90);
    let l = disassemble(&k, 90).unwrap();
    // c[i] = a[i] + b[i] owns the two global loads, the add and the store.
    let store = l.cost_of("body[1].then[0]").expect("the store statement");
    let owned: Vec<&str> = l
        .instructions
        .iter()
        .filter(|i| i.node.as_deref() == Some("body[1].then[0]"))
        .map(|i| i.text.as_str())
        .collect();
    assert_eq!(owned.iter().filter(|t| t.contains("LDG")).count(), 2);
    assert_eq!(owned.iter().filter(|t| t.starts_with("STG")).count(), 1);
    assert!(owned.iter().any(|t| t.starts_with("FADD")), "{owned:?}");
    assert!(store.mix.get(Class::Memory) >= 3);
    // The bounds check `if i < len(c)` owns the early exit.
    let guard: Vec<&str> = l
        .instructions
        .iter()
        .filter(|i| i.node.as_deref() == Some("body[1]"))
        .map(|i| i.text.as_str())
        .collect();
    assert!(guard.iter().any(|t| t.ends_with("EXIT")), "{guard:?}");
    // A 64-bit division's ptxas subroutine is charged to the statement that divides.
    let p = vyrescope::ir::load_program(&dir.join("u64_f64_arith.json")).unwrap();
    let k = kernel(&p, 90);
    let l = disassemble(&k, 90).unwrap();
    let sub: Vec<_> = l
        .instructions
        .iter()
        .filter(|i| i.routine.is_some())
        .collect();
    assert!(
        !sub.is_empty(),
        "u64_f64_arith should call ptxas subroutines"
    );
    assert!(sub.iter().all(|i| i.node.is_some()));
}

#[test]
fn sass_text_snapshots() {
    if !tools_present() {
        return;
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut errs = Vec::new();
    for name in ["vadd_f32", "reduce_sum_f32", "histogram_u8"] {
        let p = vyrescope::ir::load_program(&dir.join(format!("fixtures/programs/{name}.json")))
            .unwrap();
        let l = disassemble(&kernel(&p, 90), 90).unwrap();
        if !support::tools::sass_snapshots_comparable(
            &l.tools.ptxas,
            &l.tools.nvdisasm,
            "the SASS text snapshots",
        ) {
            return;
        }
        let path = dir.join(format!("tests/snapshots/sass/{name}.txt"));
        if let Err(e) = support::snapshot::check(&path, &render::text(&l), "SASS text", "sass_map")
        {
            errs.push(e);
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}
