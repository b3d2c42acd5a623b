//! The inspector's SASS pane: the three-way IR/PTX/SASS view at 160x48 and the SASS pane in
//! place of the PTX pane at 80x24 (snapshots in tests/snapshots/tui/, compared only with the
//! pinned ptxas and nvdisasm, a failure in CI with others), the correlation between the three panes and
//! block jumps in the SASS pane, and the pane's note when a tool is missing.
//!
//! The tests that assemble need ptxas and nvdisasm (see `sass_map`); the missing-tool note
//! needs neither.

use crate::tui_helpers as helpers;

use helpers::*;
use vyrescope::tui::action::{Action, Command};
use vyrescope::tui::app::{App, Focus};
use vyrescope::tui::background::Reply;
use vyrescope::tui::layout::areas;
use vyrescope::tui::replay::render;
use vyrescope::tui::sass_view::SassMode;

fn check(name: &str, a: &App, got: &str) {
    let l = &a.sass_view().expect("a SASS listing").listing;
    if !crate::support::tools::sass_snapshots_comparable(&l.tools.ptxas, &l.tools.nvdisasm, name) {
        return;
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/snapshots/tui/{name}.txt"));
    if let Err(e) = crate::support::snapshot::check(&path, got, "rendered screen", "sass_tui") {
        panic!("snapshot {name}: {e}\n--- got ---\n{got}");
    }
}

/// Moves the IR cursor down to the line of `node`.
fn ir_to(a: &mut App, node: &str) {
    for _ in 0..40 {
        if a.ir_node() == Some(node) {
            return;
        }
        press(a, &[Command::Down]);
    }
    panic!("no IR line for {node}");
}

#[test]
fn three_way_view_at_160x48_marks_the_statement_in_all_three_panes() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 160, 48);
    press(&mut a, &[Command::SassPane]);
    assert_eq!(a.code.sass_mode, SassMode::Beside);
    ir_to(&mut a, "body[1].then[0]");
    let ar = areas(160, 48, &a);
    assert!(!ar.ir.is_empty() && !ar.ptx.is_empty() && !ar.sass.is_empty());
    let s = screen(&mut a, &hl);
    for needle in [
        "IR vadd_f32",
        "PTX sm_90",
        "SASS body[1].then[0]: 20 of 30 instr",
    ] {
        assert!(s.contains(needle), "lacks {needle}:\n{s}");
    }
    // Every SASS row of the statement is marked, and no other.
    let v = a.sass_view().unwrap().clone();
    let buf = render(&mut a, &hl, 160, 48);
    let corr = a.theme.correlated.bg.unwrap();
    let (scroll, page) = (a.panes.sass.scroll, ar.page(Focus::Sass));
    let mut marked = 0;
    for row in scroll..(scroll + page).min(v.len()) {
        let y = ar.sass.y + 1 + (row - scroll) as u16;
        let bg = buf[(ar.sass.x + ar.sass.width - 3, y)].bg;
        let of_node = v.node_at(row) == Some("body[1].then[0]");
        assert_eq!(bg == corr, of_node, "row {row} `{}`", v.line(row));
        marked += usize::from(of_node);
    }
    assert!(marked >= 10, "{marked}");
    // The cost column in the IR gutter: 20 instructions, 8 of them memory, 9 registers live
    // at the peak.
    assert!(s.contains("20/8m 9r"), "{s}");
    a.screen.message = None;
    let s = screen(&mut a, &hl);
    check("sass_three_way_160x48", &a, &s);
}

#[test]
fn sass_pane_at_80x24_replaces_ptx_and_drives_the_other_panes() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 80, 24);
    press(&mut a, &[Command::SassPane]);
    // Too narrow for three panes: SASS stands in for PTX, and Tab skips the hidden pane.
    let ar = areas(80, 24, &a);
    assert!(ar.ptx.is_empty() && !ar.sass.is_empty());
    press(&mut a, &[Command::FocusNext]);
    assert_eq!(a.screen.focus, Focus::Sass);
    press(&mut a, &[Command::FocusNext]);
    assert_eq!(a.screen.focus, Focus::Detail);
    press(&mut a, &[Command::FocusPrev]);
    assert_eq!(a.screen.focus, Focus::Sass);
    // `}` walks the blocks of instructions; each lands the IR cursor on its statement and
    // the PTX cursor on the instruction's own line.
    press(&mut a, &[Command::Home]);
    let mut seen = Vec::new();
    loop {
        let at = a.panes.sass.cursor;
        press(&mut a, &[Command::NextBlock]);
        if a.panes.sass.cursor == at {
            break;
        }
        let v = a.sass_view().unwrap().clone();
        let row = &v.rows[a.panes.sass.cursor];
        let node = row.node.clone().expect("a block has a statement");
        assert_eq!(a.ir_node(), Some(node.as_str()));
        assert_eq!(Some(a.panes.ptx.cursor as u32 + 1), row.ptx_line);
        seen.push(node);
    }
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] != w[1]), "{seen:?}");
    // `{` goes back to the first row of the previous block.
    let before = a.panes.sass.cursor;
    press(&mut a, &[Command::PrevBlock]);
    assert!(a.panes.sass.cursor < before);
    // The IR cursor drives the SASS cursor to the statement's first instruction.
    press(&mut a, &[Command::FocusPrev]);
    assert_eq!(a.screen.focus, Focus::Ir);
    press(&mut a, &[Command::Home]);
    ir_to(&mut a, "body[1]");
    let v = a.sass_view().unwrap().clone();
    assert_eq!(v.span_of("body[1]").map(|s| s.0), Some(a.panes.sass.cursor));
    // Back to the top for the snapshot, SASS focused.
    press(&mut a, &[Command::FocusNext, Command::Home]);
    a.screen.message = None;
    let s = screen(&mut a, &hl);
    assert!(s.contains(" SASS ") && !s.contains("PTX sm_90"), "{s}");
    check("sass_pane_80x24", &a, &s);
    // `s` again: SASS instead of PTX; once more: off, and the PTX pane is back.
    press(&mut a, &[Command::SassPane, Command::SassPane]);
    assert_eq!(a.code.sass_mode, SassMode::Off);
    assert!(!areas(80, 24, &a).ptx.is_empty());
    assert_ne!(a.screen.focus, Focus::Sass);
}

#[test]
fn a_missing_tool_is_a_note_in_the_pane_and_the_other_panes_work() {
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 160, 48);
    a.code.sass_mode = SassMode::Beside;
    // What the worker reports when nvdisasm is missing (the message the library gives).
    let key = (
        a.programs.doc.as_ref().unwrap().id,
        a.code.emission.as_ref().unwrap().opts.clone(),
    );
    a.code.sass_key = Some(key.clone());
    update(
        &mut a,
        Action::Worker(Reply::Sass(
            key,
            Err(vyrescope::sass::SassError::NvdisasmNotFound.into()),
        )),
    );
    let s = screen(&mut a, &hl);
    assert!(s.contains("no SASS: nvdisasm not found"), "{s}");
    assert!(s.contains("install-nvdisasm.sh"), "{s}");
    assert!(
        s.contains("ld.global.nc.f32"),
        "the PTX pane still shows:\n{s}"
    );
    assert!(
        s.contains("c[i] = a[i] + b[i]"),
        "the IR pane still shows:\n{s}"
    );
}

#[test]
fn the_replayed_binary_says_what_to_install() {
    let tmp = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args(["tui", "--keys", "s", "--size", "160x40"])
        .arg(fixture("vadd_f32.json"))
        .env("VYRESCOPE_NVDISASM", tmp.path().join("none"))
        .env(
            "VYRESCOPE_CONFIG",
            "/nonexistent/vyrescope-test-config.json",
        )
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("no SASS:"), "{s}");
    assert!(s.contains("not found"), "{s}");
    assert!(s.contains("Fix: run"), "{s}");
}

#[test]
fn a_wide_sass_pane_shows_control_bits_and_live_registers() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 160, 40);
    press(&mut a, &[Command::SassPane, Command::SassPane]);
    assert_eq!(a.code.sass_mode, SassMode::Replace);
    let ar = areas(160, 40, &a);
    assert!(ar.sass.width >= vyrescope::tui::sass_view::ANNOTATED_MIN_WIDTH + 2);
    ir_to(&mut a, "body[1].then[0]");
    let s = screen(&mut a, &hl);
    // The IMAD that combines the two S2R results waits on their scoreboard 0 and yields.
    assert!(s.contains("B0-----:R-:W-:Y:S05"), "{s}");
    // The selected statement's live-register peak is in the title.
    assert!(s.contains("8 mem, 9 live"), "{s}");
    check("sass_annotated_160x40", &a, &s);
    // Narrow: the plain rows.
    let (mut n, hl) = app(&[fixture("vadd_f32.json")], 80, 24);
    press(&mut n, &[Command::SassPane]);
    let s = screen(&mut n, &hl);
    assert!(!s.contains(":R-:W"), "{s}");
}
