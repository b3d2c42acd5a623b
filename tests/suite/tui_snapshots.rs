//! Rendering snapshots of every panel and of the narrow 80x24 layout, on ratatui's
//! TestBackend. Expected screens live in tests/snapshots/tui/*.txt; regenerate them with
//! `VYRESCOPE_BLESS=1 cargo test --test suite tui_snapshots::` and review the diff.

use crate::tui_helpers as helpers;

use helpers::*;
use ratatui::style::Modifier;
use vyrescope::tui::action::Command;
use vyrescope::tui::app::{App, Focus};
use vyrescope::tui::highlight::Highlighter;
use vyrescope::tui::layout::areas;
use vyrescope::tui::replay::render;

fn check(name: &str, got: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/snapshots/tui/{name}.txt"));
    if let Err(e) = crate::support::snapshot::check(&path, got, "rendered screen", "tui_snapshots")
    {
        panic!("snapshot {name}: {e}\n--- got ---\n{got}");
    }
}

fn vadd(w: u16, h: u16) -> (App, Highlighter) {
    app(
        &[
            fixture("vadd_f32.json"),
            fixture("saxpy_f32.json"),
            fixture("reduce_sum_f32.json"),
        ],
        w,
        h,
    )
}

#[test]
fn layout_80x24() {
    let (mut a, hl) = vadd(80, 24);
    let s = screen(&mut a, &hl);
    for needle in [
        "Programs",
        "IR vadd_f32",
        "PTX",
        "Occupancy",
        // Inactive tabs are shortened when the bar is too narrow for all titles.
        "6 Tel…",
        "offline: h200",
        "sm_90",
    ] {
        assert!(s.contains(needle), "80x24 lacks {needle}:\n{s}");
    }
    check("layout_80x24", &s);
    // Key styles: the focused pane has a bold border; the IR cursor line uses the cursor
    // style and the correlated PTX line the correlated style.
    let buf = render(&mut a, &hl, 80, 24);
    let ar = areas(80, 24, &a);
    let ir_border = &buf[(ar.ir.x, ar.ir.y)];
    assert!(ir_border.modifier.contains(Modifier::BOLD));
    let cur_row = ar.ir.y + 1 + (a.panes.ir.cursor - a.panes.ir.scroll) as u16;
    assert_eq!(
        buf[(ar.ir.x + ar.ir.width - 3, cur_row)].bg,
        a.theme.cursor.bg.unwrap()
    );
    let ptx_row = ar.ptx.y + 1 + (a.panes.ptx.cursor - a.panes.ptx.scroll) as u16;
    assert_eq!(
        buf[(ar.ptx.x + ar.ptx.width - 3, ptx_row)].bg,
        a.theme.correlated.bg.unwrap()
    );
}

#[test]
fn layout_120x40_ptx_focus() {
    let (mut a, hl) = vadd(120, 40);
    press(&mut a, &[Command::FocusNext, Command::Down, Command::Down]);
    assert_eq!(a.screen.focus, Focus::Ptx);
    check("layout_120x40_ptx_focus", &screen(&mut a, &hl));
}

#[test]
fn program_list_focus() {
    let (mut a, hl) = vadd(100, 30);
    press(&mut a, &[Command::FocusPrev, Command::Down]);
    check("program_list", &screen(&mut a, &hl));
}

#[test]
fn tab_occupancy() {
    let (mut a, hl) = vadd(100, 30);
    press(&mut a, &[Command::Tab(1)]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("block 256: 100.0%"), "{s}");
    check("tab_occupancy", &s);
}

#[test]
fn tab_resources() {
    let (mut a, hl) = vadd(100, 30);
    press(&mut a, &[Command::Tab(2)]);
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("registers / thread") && s.contains("given resources"),
        "{s}"
    );
    check("tab_resources", &s);
}

#[test]
fn tab_diagnostics() {
    // A small grid (fewer blocks than SMs) and a block that is not a multiple of 32: two
    // performance findings with fixes.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let text = std::fs::read_to_string(fixture("vadd_f32.json"))
        .unwrap()
        .replace("\"elements\": 1048576", "\"elements\": 1000")
        .replace("[256, 1, 1]", "[100, 1, 1]");
    let file = dir.join("small.json");
    std::fs::write(&file, text).unwrap();
    let (mut a, hl) = app(&[file], 100, 30);
    press(&mut a, &[Command::Tab(3), Command::Expand]);
    let diags = a.diagnostics().len();
    assert!(diags >= 2, "expected perf findings, got {diags}");
    let s = screen(&mut a, &hl);
    assert!(s.contains("Fix:"), "{s}");
    check("tab_diagnostics", &s);
    // Enter jumps to the node of a diagnostic that has one.
    let with_node = a.diagnostics().iter().position(|d| d.node.is_some());
    if let Some(i) = with_node {
        let node = a.diagnostics()[i].node.clone().unwrap();
        a.detail.pane.cursor = i;
        press(&mut a, &[Command::Enter]);
        assert_eq!(a.screen.focus, Focus::Ir);
        assert_eq!(a.ir_node(), Some(node.as_str()));
    }
}

#[test]
fn tab_run_empty_says_why() {
    let (mut a, hl) = vadd(100, 30);
    press(&mut a, &[Command::Tab(4)]);
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("no CUDA driver found") && s.contains("libcuda.so.1"),
        "{s}"
    );
    check("tab_run_empty", &s);
    press(&mut a, &[Command::Tab(5)]);
    assert!(screen(&mut a, &hl).contains("no CUDA driver found"));
    press(&mut a, &[Command::Tab(6)]);
    assert!(screen(&mut a, &hl).contains("no CUDA driver found"));
}

#[test]
fn tab_run_cache_telemetry_filled() {
    let (mut a, hl) = vadd(100, 30);
    press(&mut a, &[Command::Tab(4)]);
    fake_dispatch(&mut a, 0.0123, true);
    fake_dispatch(&mut a, 0.0150, false);
    fake_tune(&mut a);
    let s = screen(&mut a, &hl);
    assert!(
        s.contains("2 mismatches") && s.contains("c[7]: gpu=1 ref=2") && s.contains("best"),
        "{s}"
    );
    check("tab_run", &s);
    press(&mut a, &[Command::Tab(5)]);
    check("tab_cache", &screen(&mut a, &hl));
    press(&mut a, &[Command::Tab(6)]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("launches") && s.contains("10"), "{s}");
    check("tab_telemetry", &s);
}

#[test]
fn tab_run_tune_table_scrolled_at_80x24() {
    // 12 candidates in a 3-row table: End scrolls to the last ones under the kept header,
    // with the scroll bar's thumb at the bottom.
    let (mut a, hl) = vadd(80, 24);
    press(&mut a, &[Command::Tab(4)]);
    fake_dispatch(&mut a, 0.0123, false);
    let rows = tune_rows(&a, 384);
    fake_tune_rows(&mut a, rows);
    press(
        &mut a,
        &[Command::FocusNext, Command::FocusNext, Command::End],
    );
    assert_eq!(a.screen.focus, Focus::Detail);
    let s = screen(&mut a, &hl);
    assert!(s.contains("tune wg") && s.contains("1024,1,1"), "{s}");
    assert!(!s.contains("\n│32,1,1"), "{s}");
    check("tab_run_tune_scrolled_80x24", &s);
}

#[test]
fn help_overlay_lists_every_binding() {
    let (mut a, hl) = vadd(100, 40);
    press(&mut a, &[Command::Help]);
    let s = screen(&mut a, &hl);
    assert!(s.contains("Help - keys"));
    // The vyre build has one more binding (`v`, the vyre views of the PTX pane).
    check(
        if cfg!(feature = "vyre") {
            "help_vyre"
        } else {
            "help"
        },
        &s,
    );
    // Generated from the keymap: every command's description is in the help lines.
    let text: String = vyrescope::tui::views::help::lines(&a)
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.to_string())
                .collect::<String>()
                + "\n"
        })
        .collect();
    let tabs = a.detail.tabs();
    for (cmd, keys) in &a.keymap.bindings {
        // Tab keys are listed by tab name, and only for the tabs that exist.
        if let Command::Tab(n) = cmd {
            let line = text
                .lines()
                .find(|l| l.contains(&format!(" {}", cmd.name())));
            match tabs.get(*n as usize - 1) {
                Some(t) => assert!(
                    line.is_some_and(|l| l.contains(&format!("detail tab: {}", t.title()))),
                    "help lacks tab {n} ({})",
                    t.title()
                ),
                None => assert!(line.is_none(), "help lists tab {n}, which does not exist"),
            }
            continue;
        }
        // The Plan tab's own key is listed only where there is a Plan tab (a pipeline).
        if *cmd == Command::PlanVyre && !tabs.iter().any(|t| t.title() == "Plan") {
            assert!(
                !text.contains(cmd.name()),
                "help lists plan_vyre without a Plan tab"
            );
            continue;
        }
        if !keys.is_empty() {
            assert!(text.contains(cmd.describe()), "help lacks {}", cmd.name());
            assert!(
                text.contains(&keys[0].to_string()),
                "help lacks key of {}",
                cmd.name()
            );
        }
    }
}

#[test]
fn zoom_and_search_prompt() {
    let (mut a, hl) = vadd(80, 24);
    press(
        &mut a,
        &[Command::FocusNext, Command::Zoom, Command::Search],
    );
    for c in "ld.global".chars() {
        update(&mut a, vyrescope::tui::action::Action::Input(c));
    }
    check("zoom_search_prompt", &screen(&mut a, &hl));
}

/// Issue 36 item 7: at 80x24 every tab is reachable and legible. The tab bar shows every tab
/// (inactive titles shortened when they do not all fit, the active one whole), and the status
/// bar's key hints are whole, never cut mid-word. One snapshot per tab, for a Program and
/// for a pipeline (which adds Plan).
#[test]
fn every_tab_at_80x24() {
    let pipeline = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pipelines/workgroup_rotate.json");
    for (name, file) in [
        ("program", fixture("reduce_sum_f32.json")),
        ("pipeline", pipeline),
    ] {
        let (mut a, hl) = app(&[file], 80, 24);
        let tabs = a.detail.tabs();
        assert!(tabs.len() >= 7, "{name}: {tabs:?}");
        let hints: Vec<String> = {
            let s = screen(&mut a, &hl);
            let status = s.lines().last().unwrap().to_string();
            status
                .split('│')
                .nth(1)
                .unwrap_or("")
                .split_whitespace()
                .map(str::to_string)
                .collect()
        };
        for (i, tab) in tabs.iter().enumerate() {
            press(&mut a, &[Command::Tab(i as u8 + 1)]);
            assert_eq!(a.detail.tab, *tab);
            let s = screen(&mut a, &hl);
            let bar = s
                .lines()
                .find(|l| l.contains(" 1 ") && l.contains(" 2 "))
                .unwrap_or_else(|| panic!("{name}: no tab bar\n{s}"));
            for n in 1..=tabs.len() {
                assert!(
                    bar.contains(&format!(" {n} ")),
                    "{name}: tab {n} hidden: {bar}"
                );
            }
            assert!(
                bar.contains(&format!(" {} {} ", i + 1, tab.title())),
                "{name}: the active tab {} is not legible: {bar}",
                tab.title()
            );
            // The status bar: every hint word it shows is one of the whole hints.
            let status = s.lines().last().unwrap();
            if let Some(shown) = status.split('│').nth(1) {
                for w in shown.split_whitespace() {
                    assert!(
                        hints.iter().any(|h| h == w) || w.chars().count() <= 2,
                        "{name}: hint cut mid-word: `{w}` in {status}"
                    );
                }
            }
            let slug = tab.title().to_lowercase().replace(' ', "_");
            check(&format!("tab_{slug}_{name}_80x24"), &s);
        }
    }
}
