//! Pinning a lowering in the inspector and diffing against it: `p` pins, `[`/`]`/`T`/`u` make
//! another lowering, `D` shows the PTX (and SASS) panes as a line diff against the pin with
//! the per-statement change in the IR gutter, `P` swaps back, `b` pins the tune sweep's best.

use crate::tui_helpers as helpers;

use helpers::*;
use vyrescope::tui::action::Command;
use vyrescope::tui::app::{App, Focus};
use vyrescope::tui::layout::areas;
use vyrescope::tui::pin::Tag;
use vyrescope::tui::replay::render;

/// Moves the IR cursor to the line of `node`.
fn ir_to(a: &mut App, node: &str) {
    a.screen.focus = Focus::Ir;
    press(a, &[Command::Home]);
    for _ in 0..60 {
        if a.ir_node() == Some(node) {
            return;
        }
        press(a, &[Command::Down]);
    }
    panic!("no IR line of {node}");
}

fn message(a: &App) -> String {
    a.screen
        .message
        .as_ref()
        .map_or(String::new(), |m| m.1.clone())
}

#[test]
fn a_pinned_workgroup_change_shows_as_a_ptx_diff_with_statement_deltas() {
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 120, 36);
    press(&mut a, &[Command::Pin]);
    assert!(
        message(&a).contains("pinned vadd_f32 sm_90 wg 256,1,1"),
        "{}",
        message(&a)
    );
    press(&mut a, &[Command::WgHalve, Command::PinDiff]);
    assert_eq!(a.workgroup(), [128, 1, 1]);
    let v = a.code.pin_view.clone().expect("a diff against the pin");
    // The block shape is in `.maxntid` and in the global id's multiply: both change.
    let removed: Vec<&str> = v
        .ptx
        .rows
        .iter()
        .filter(|r| r.tag == Tag::Removed)
        .map(|r| r.text.as_str())
        .collect();
    let added: Vec<&str> = v
        .ptx
        .rows
        .iter()
        .filter(|r| r.tag == Tag::Added)
        .map(|r| r.text.as_str())
        .collect();
    assert!(
        removed.iter().any(|l| l.contains(".maxntid 256, 1, 1")),
        "{removed:?}"
    );
    assert!(
        added.iter().any(|l| l.contains(".maxntid 128, 1, 1")),
        "{added:?}"
    );
    assert_eq!((v.ptx.added, v.ptx.removed), (added.len(), removed.len()));
    // Every line of both sides is there once.
    let pin_len = a.code.pin.as_ref().unwrap().ptx.len();
    let now_len = a.ptx_view().unwrap().len();
    assert_eq!(v.ptx.rows.len() - v.ptx.added, pin_len);
    assert_eq!(v.ptx.rows.len() - v.ptx.removed, now_len);
    // The PTX pane is the diff; the cursor walks its rows.
    assert_eq!(a.ptx_len(), v.ptx.rows.len());
    let s = screen(&mut a, &hl);
    assert!(s.contains("PTX diff vs vadd_f32 sm_90 wg 256,1,1 +"), "{s}");
    // Removed rows are drawn in the error colour, added ones in the ok colour.
    let buf = render(&mut a, &hl, 120, 36);
    let ar = areas(120, 36, &a);
    let scroll = a.panes.ptx.scroll;
    for (i, r) in v.ptx.rows.iter().enumerate().skip(scroll).take(8) {
        let y = ar.ptx.y + 1 + (i - scroll) as u16;
        let fg = buf[(ar.ptx.x + 12, y)].fg;
        match r.tag {
            Tag::Removed => assert_eq!(Some(fg), a.theme.error.fg, "row {i} {}", r.text),
            Tag::Added => assert_eq!(Some(fg), a.theme.ok.fg, "row {i} {}", r.text),
            Tag::Same => {}
        }
    }
    // The IR gutter names each statement's change in PTX lines.
    for (node, d) in &v.ptx_lines {
        let g = v.gutter(node);
        if d.pinned == d.now {
            assert!(g == "=" || g.starts_with('s'), "{node}: {g}");
        } else {
            assert!(g.starts_with(&format!("p{:+}", d.now as i64 - d.pinned as i64)));
        }
    }
    // The snapshot shows the first change, with the PTX pane focused on it.
    let first = v.ptx.rows.iter().position(|r| r.tag != Tag::Same).unwrap();
    a.screen.focus = Focus::Ptx;
    press(&mut a, &[Command::Home]);
    for _ in 0..first {
        press(&mut a, &[Command::Down]);
    }
    assert_eq!(a.panes.ptx.cursor, first);
    a.screen.message = None;
    let s = screen(&mut a, &hl);
    crate::support::snapshot::check(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/snapshots/tui/pin_diff_120x36.txt"),
        &s,
        "rendered screen",
        "tui_pin",
    )
    .unwrap_or_else(|e| panic!("{e}\n{s}"));
}

#[test]
fn the_ir_cursor_and_the_diff_rows_follow_each_other() {
    let (mut a, _hl) = app(&[fixture("reduce_sum_f32.json")], 120, 36);
    press(&mut a, &[Command::Pin, Command::Unroll, Command::PinDiff]);
    assert!(!a.emit_options().unroll);
    let v = a.code.pin_view.clone().unwrap();
    // Rolled loops: far fewer lines than the unrolled pin.
    assert!(
        v.ptx.removed > v.ptx.added,
        "{} {}",
        v.ptx.added,
        v.ptx.removed
    );
    let node = v
        .ptx_lines
        .iter()
        .find(|(_, d)| d.pinned != d.now)
        .map(|(n, _)| n.clone())
        .expect("a statement whose lowering changed");
    ir_to(&mut a, &node);
    let (first, last) = v.ptx.span_of(&node).unwrap();
    assert_eq!(a.panes.ptx.cursor, first);
    assert_eq!(a.ptx_node(), Some(node.as_str()));
    assert!(last >= first);
    // From the PTX pane, the IR cursor follows the row's statement.
    a.screen.focus = Focus::Ptx;
    press(&mut a, &[Command::Home]);
    let mut seen = 0;
    for _ in 0..v.ptx.rows.len() {
        press(&mut a, &[Command::NextBlock]);
        // Rows of statements that have an IR line (not the prologue) move the IR cursor there.
        let n = a.ptx_node().map(str::to_string);
        let line = n
            .as_deref()
            .and_then(|n| a.programs.doc.as_ref().unwrap().ir_line_of(n));
        if let Some(line) = line {
            assert_eq!(
                a.panes.ir.cursor, line,
                "row {} of {n:?}",
                a.panes.ptx.cursor
            );
            seen += 1;
        }
        if a.panes.ptx.cursor + 1 >= v.ptx.rows.len() {
            break;
        }
    }
    assert!(seen >= 2, "{seen}");
}

#[test]
fn swap_flips_between_the_two_lowerings_and_p_on_the_pin_unpins() {
    let (mut a, _hl) = app(&[fixture("vadd_f32.json")], 100, 30);
    press(&mut a, &[Command::PinDiff]);
    assert!(message(&a).contains("nothing pinned"), "{}", message(&a));
    press(&mut a, &[Command::PinSwap]);
    assert!(message(&a).contains("nothing pinned"), "{}", message(&a));
    press(&mut a, &[Command::Pin, Command::WgDouble, Command::CycleSm]);
    let changed = (a.workgroup(), a.code.sm);
    assert_eq!(changed.0, [512, 1, 1]);
    assert_ne!(changed.1, 90);
    press(&mut a, &[Command::PinSwap]);
    assert_eq!((a.workgroup(), a.code.sm), ([256, 1, 1], 90));
    let label = a.code.pin.as_ref().unwrap().label();
    assert!(label.contains("wg 512,1,1"), "{label}");
    press(&mut a, &[Command::PinSwap]);
    assert_eq!((a.workgroup(), a.code.sm), changed);
    // `p` pins the lowering on screen in place of the pin; again on it, unpins.
    press(&mut a, &[Command::Pin]);
    let label = a.code.pin.as_ref().unwrap().label();
    assert!(
        label.contains("wg 512,1,1") && !label.contains("sm_90"),
        "{label}"
    );
    press(&mut a, &[Command::Pin]);
    assert!(a.code.pin.is_none());
    assert!(message(&a).contains("unpinned"), "{}", message(&a));
}

#[test]
fn the_tune_sweeps_best_candidate_can_be_pinned() {
    let (mut a, _hl) = app(&[fixture("vadd_f32.json")], 100, 30);
    press(&mut a, &[Command::PinBest]);
    assert!(message(&a).contains("no tune result"), "{}", message(&a));
    fake_tune(&mut a);
    press(&mut a, &[Command::PinBest]);
    assert_eq!(a.workgroup(), [64, 1, 1]);
    let label = a.code.pin.as_ref().expect("pinned").label();
    assert!(label.ends_with("wg 64,1,1"), "{label}");
    press(&mut a, &[Command::WgDouble, Command::PinDiff]);
    let v = a.code.pin_view.clone().unwrap();
    assert!(v.ptx.added > 0 && v.ptx.removed > 0);
}

#[test]
fn the_sass_pane_diffs_against_the_pinned_sass() {
    if !crate::sass_map::tools_present() {
        return;
    }
    let (mut a, hl) = app(&[fixture("reduce_sum_f32.json")], 160, 40);
    press(
        &mut a,
        &[
            Command::SassPane,
            Command::Pin,
            Command::Unroll,
            Command::PinDiff,
        ],
    );
    let v = a.code.pin_view.clone().unwrap();
    let sass = v.sass.as_ref().expect("both sides assembled");
    assert!(sass.added + sass.removed > 0);
    assert!(!v.sass_instr.is_empty());
    // SASS rows are compared without their addresses.
    assert!(sass.rows.iter().all(|r| !r.text.starts_with("00")));
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("SASS diff vs reduce_sum_f32 sm_90 wg 256,1,1 +"),
        "{s}"
    );
    assert!(s.contains(" s-") || s.contains(" s+"), "{s}");
    // The SASS cursor follows the IR cursor into the diff.
    let node = v
        .sass_instr
        .iter()
        .find(|(_, d)| d.pinned != d.now && d.now > 0)
        .map(|(n, _)| n.clone())
        .unwrap();
    ir_to(&mut a, &node);
    assert_eq!(a.panes.sass.cursor, sass.span_of(&node).unwrap().0);
}
