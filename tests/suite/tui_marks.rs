//! Marks that say there is more than the panel shows (issue 24, item 19): a diagnostic whose
//! message is longer than its row ends in `…`, and the help overlay names the sections below
//! its fold. Snapshots at 80x24, the smallest comfortable screen.

use crate::tui_helpers as helpers;

use std::path::Path;

use helpers::*;
use vyrescope::tui::action::Command;

fn check(name: &str, got: &str) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/snapshots/tui/{name}.txt"));
    if let Err(e) = crate::support::snapshot::check(&path, got, "rendered screen", "tui_marks") {
        panic!("snapshot {name}: {e}\n--- got ---\n{got}");
    }
}

/// The detail panel's rows of a screen (from its top border to the status bar).
fn detail_rows(s: &str) -> Vec<&str> {
    let top = s.lines().position(|l| l.contains("Details")).unwrap_or(0);
    s.lines().skip(top).collect()
}

#[test]
fn long_diagnostic_messages_end_with_an_ellipsis_at_the_panel_edge() {
    let (mut a, hl) = app(&[fixture("int_edge_cases.json")], 80, 24);
    press(&mut a, &[Command::Tab(3)]);
    let s = screen(&mut a, &hl);
    let rows: Vec<&str> = detail_rows(&s)
        .into_iter()
        .filter(|l| l.contains(" P0"))
        .collect();
    assert!(rows.len() >= 3, "{s}");
    for r in &rows {
        // Every message here is longer than 80 columns: cut, it must say so.
        let inner = r.trim_end_matches('│').trim_end_matches('┃').trim_end();
        assert!(inner.ends_with('…'), "cut without a mark: {r:?}\n{s}");
    }
    check("diagnostics_ellipsis_80x24", &s);
}

#[test]
fn help_overlay_names_the_sections_below_the_fold() {
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 80, 24);
    press(&mut a, &[Command::Help]);
    let s = screen(&mut a, &hl);
    let mark = s
        .lines()
        .find(|l| l.contains("↓ more:"))
        .unwrap_or_else(|| panic!("no scroll mark:\n{s}"));
    assert!(mark.contains("Actions"), "{mark}");
    assert!(
        !s.contains("dispatch on the GPU"),
        "Actions are below the fold here:\n{s}"
    );
    check(
        if cfg!(feature = "vyre") {
            // The vyre build binds one more key (`v`), which shifts the overlay's rows.
            "help_scroll_mark_vyre_80x24"
        } else {
            "help_scroll_mark_80x24"
        },
        &s,
    );
    // Scrolled to the end, nothing is below any more and the mark goes.
    press(&mut a, &[Command::PageDown; 6]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("Overrides"), "{s}");
    assert!(!s.contains("↓ more"), "{s}");
}

fn pipeline(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pipelines")
        .join(name)
}

/// Item 17: at 80x24 the Plan diagram of a chain wider than the panel (softmax: a stencil
/// chain now runs as recomputed passes, with no grid barrier to show) keeps its three box
/// rows whole (no wrapping), scrolls sideways with `›`/`‹` marks, the arrows name the barrier
/// in `plan --json`'s words and the buffer, and what is below the panel has a mark.
#[test]
fn plan_diagram_scrolls_sideways_and_marks_what_is_below() {
    let (mut a, hl) = app(&[pipeline("softmax.json")], 80, 24);
    press(&mut a, &[Command::Tab(7)]);
    let s = screen(&mut a, &hl);
    let rows = detail_rows(&s);
    assert!(rows.iter().any(|l| l.contains("─grid bmax─▶")), "{s}");
    assert!(
        rows.iter().any(|l| l.trim_end_matches('│').ends_with('›')),
        "{s}"
    );
    assert!(
        rows.iter()
            .any(|l| l.contains("↓") && l.contains("more lines below")),
        "{s}"
    );
    // No diagram row wrapped: the row after a top edge is a name row.
    let top = rows.iter().position(|l| l.contains("┌───")).unwrap();
    assert!(rows[top + 1].contains("0 block_max_f32"), "{s}");
    check("plan_scroll_80x24", &s);

    // Expanded, with the third boundary selected: scrolled right, the reason names the
    // buffer.
    press(
        &mut a,
        &[
            Command::FocusNext,
            Command::FocusNext,
            Command::Down,
            Command::Down,
            Command::Expand,
        ],
    );
    let s = screen(&mut a, &hl);
    assert!(s.contains("‹"), "{s}");
    assert!(s.contains("boundary after step 2: grid"), "{s}");
    assert!(s.contains("`bsum`"), "{s}");
    check("plan_scrolled_expanded_80x24", &s);
}

/// Item 17: the Plan tab's registers and occupancy for the selected step's group are the
/// Occupancy tab's estimate of that kernel.
#[test]
fn plan_tab_figures_are_the_occupancy_tabs() {
    let (mut a, hl) = app(&[pipeline("reduce_total_normalize.json")], 120, 40);
    press(&mut a, &[Command::Tab(7)]);
    let s = screen(&mut a, &hl);
    let occ = a
        .code
        .emission
        .as_ref()
        .and_then(|e| e.occupancy.as_ref().ok())
        .expect("an estimate")
        .clone();
    let pct = occ.current_row.as_ref().expect("launchable").occupancy_pct;
    let want = format!("{} regs, {pct:.0}% occupancy", occ.registers);
    assert!(s.contains(&want), "{want}:\n{s}");
    press(&mut a, &[Command::Tab(1)]);
    let s = screen(&mut a, &hl);
    assert!(
        s.contains(&format!("block {}: {pct:.1}%", occ.current)),
        "{s}"
    );
    assert!(occ
        .basis
        .starts_with(&format!("{} regs/thread", occ.registers)));
}

/// Item 17: one vocabulary: `plan` text, `plan --json` and the inspector name separations
/// `none`/`invocation`/`workgroup`/`grid` and groups `megakernel`/`launch`.
#[test]
fn plan_text_json_and_tab_share_their_words() {
    let f = pipeline("workgroup_rotate.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args([
            "plan",
            f.to_str().unwrap(),
            "--no-cache",
            "--device",
            "h200",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("-- workgroup barrier after step 0"), "{text}");
    assert!(text.contains("group 0: launch"), "{text}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
        .args([
            "plan",
            f.to_str().unwrap(),
            "--no-cache",
            "--device",
            "h200",
            "--json",
        ])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["groups"][0]["kind"], "launch");
    assert_eq!(v["groups"][0]["barriers"][0]["kind"], "workgroup");
    let (mut a, hl) = app(&[f], 120, 40);
    press(&mut a, &[Command::Tab(7)]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("group 0: launch wg"), "{s}");
    assert!(s.contains("─workgroup y─▶"), "{s}");
    assert!(s.contains("boundary after step 0: workgroup"), "{s}");
}
