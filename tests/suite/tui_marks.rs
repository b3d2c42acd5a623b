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
    check("help_scroll_mark_80x24", &s);
    // Scrolled to the end, nothing is below any more and the mark goes.
    press(&mut a, &[Command::PageDown; 6]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("Overrides"), "{s}");
    assert!(!s.contains("↓ more"), "{s}");
}
