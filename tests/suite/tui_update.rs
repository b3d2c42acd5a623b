//! `update` as seen from outside: navigation, IR<->PTX selection sync, search and tuning.
//! Expectations are computed independently from the emitter's source map and the printer's
//! node ids, over every fixture.

use crate::tui_helpers as helpers;

use helpers::*;
use vyrescope::tui::action::{Action, Command};
use vyrescope::tui::app::{Focus, Level, Overlay};
use vyrescope::tui::background::Reply;
use vyrescope::tui::component::tabs::{self, TabComponent};
use vyrescope::tui::layout::areas;

fn all_fixtures() -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// A small deterministic PRNG (xorshift) so the sampled lines vary but reproduce.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

#[test]
fn ir_cursor_selects_every_statements_ptx_and_scrolls_to_it() {
    for f in all_fixtures() {
        let (mut a, _) = app(std::slice::from_ref(&f), 120, 40);
        let Some(view) = a.ptx_view().cloned() else {
            continue;
        };
        let page = areas(120, 40, &a).page(Focus::Ptx);
        let doc_lines: Vec<Option<String>> = a
            .programs
            .doc
            .as_ref()
            .unwrap()
            .ir
            .iter()
            .map(|l| l.node.as_ref().map(|n| n.to_string()))
            .collect();
        press(&mut a, &[Command::Home]);
        for (i, node) in doc_lines.iter().enumerate() {
            assert_eq!(a.panes.ir.cursor, i, "{}", f.display());
            if let Some(node) = node {
                // Independently: the first line of the node's first map range.
                let entry = view
                    .kernel
                    .source_map
                    .entries
                    .iter()
                    .find(|e| &e.node == node);
                if let Some(e) = entry {
                    let first = e.lines.iter().map(|r| r[0]).min().unwrap() as usize - 1;
                    assert_eq!(a.panes.ptx.cursor, first, "{} {node}", f.display());
                    assert!(
                        a.panes.ptx.scroll <= first && first < a.panes.ptx.scroll + page,
                        "{} {node}: not in view",
                        f.display()
                    );
                    assert_eq!(a.selected_node(), Some(node.as_str()));
                }
            }
            press(&mut a, &[Command::Down]);
        }
    }
}

#[test]
fn ptx_cursor_selects_the_producing_statement() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for f in all_fixtures() {
        let (mut a, _) = app(std::slice::from_ref(&f), 120, 40);
        let Some(view) = a.ptx_view().cloned() else {
            continue;
        };
        press(&mut a, &[Command::FocusNext]);
        assert_eq!(a.screen.focus, Focus::Ptx);
        for _ in 0..40 {
            let target = rng.below(view.len());
            press(&mut a, &[Command::Home]);
            for _ in 0..target {
                update(&mut a, Action::Command(Command::Down));
            }
            assert_eq!(a.panes.ptx.cursor, target);
            // Independently: which map entry covers this 1-based line?
            let line = target as u32 + 1;
            let owner = view
                .kernel
                .source_map
                .entries
                .iter()
                .find(|e| e.lines.iter().any(|r| r[0] <= line && line <= r[1]))
                .map(|e| e.node.clone());
            assert_eq!(
                a.ptx_node().map(str::to_string),
                owner,
                "{} line {line}",
                f.display()
            );
            if let Some(node) = owner {
                let ir_line = a.programs.doc.as_ref().unwrap().ir_line_of(&node);
                if let Some(l) = ir_line {
                    assert_eq!(a.panes.ir.cursor, l, "{} {node}", f.display());
                    assert_eq!(a.ir_node(), Some(node.as_str()));
                }
            }
        }
    }
}

#[test]
fn next_block_visits_distinct_statements_in_order() {
    let (mut a, _) = app(&[fixture("reduce_sum_f32.json")], 120, 40);
    press(&mut a, &[Command::FocusNext, Command::Home]);
    let mut seen = Vec::new();
    let mut last = usize::MAX;
    for _ in 0..200 {
        press(&mut a, &[Command::NextBlock]);
        if a.panes.ptx.cursor == last {
            break;
        }
        assert!(last == usize::MAX || a.panes.ptx.cursor > last);
        last = a.panes.ptx.cursor;
        let node = a.ptx_node().map(str::to_string);
        assert!(node.is_some());
        // A block starts where the owner changes.
        let v = a.ptx_view().unwrap();
        assert_ne!(
            v.corr.node_at(a.panes.ptx.cursor.wrapping_sub(1)),
            node.as_deref()
        );
        seen.push(node);
    }
    assert!(seen.len() >= 3, "{seen:?}");
    // And back.
    let here = a.panes.ptx.cursor;
    press(&mut a, &[Command::PrevBlock]);
    assert!(a.panes.ptx.cursor < here);
}

#[test]
fn navigation_is_clamped_and_paged() {
    let (mut a, _) = app(&[fixture("matmul_tiled_f32.json")], 80, 24);
    press(&mut a, &[Command::FocusNext]);
    let len = a.ptx_len();
    let page = areas(80, 24, &a).page(Focus::Ptx);
    press(&mut a, &[Command::Home, Command::Up]);
    assert_eq!((a.panes.ptx.cursor, a.panes.ptx.scroll), (0, 0));
    press(&mut a, &[Command::PageDown]);
    assert_eq!(a.panes.ptx.cursor, page);
    assert!(
        a.panes.ptx.scroll <= a.panes.ptx.cursor && a.panes.ptx.cursor < a.panes.ptx.scroll + page
    );
    press(&mut a, &[Command::End, Command::Down]);
    assert_eq!(a.panes.ptx.cursor, len - 1);
    assert_eq!(a.panes.ptx.scroll, len - page);
    press(&mut a, &[Command::PageUp]);
    assert_eq!(a.panes.ptx.cursor, len - 1 - page);
    // Focus cycles through the three panes and back: with one file open the program list is
    // folded away and takes no focus.
    let start = a.screen.focus;
    let mut order = vec![];
    for _ in 0..3 {
        press(&mut a, &[Command::FocusNext]);
        order.push(a.screen.focus);
    }
    assert_eq!(a.screen.focus, start);
    assert!(!order.contains(&Focus::List), "{order:?}");
    assert!(areas(80, 24, &a).list.is_empty());
    press(&mut a, &[Command::FocusPrev]);
    assert_eq!(a.screen.focus, Focus::Ir);
    // Tabs: number keys and left/right on the detail panel.
    press(&mut a, &[Command::Tab(3)]);
    assert_eq!(a.detail.tab.index(), 2);
    a.screen.focus = Focus::Detail;
    press(
        &mut a,
        &[
            Command::Right,
            Command::Right,
            Command::Right,
            Command::Right,
        ],
    );
    // The last tab, Timeline, keeps Left/Right for panning its lanes; `>` goes on.
    assert_eq!(a.detail.tab, tabs::Timeline.id());
    press(&mut a, &[Command::Right, Command::NextTab]);
    assert_eq!(a.detail.tab, tabs::Profile.id());
    press(&mut a, &[Command::Right]);
    assert_eq!(a.detail.tab.index(), 0, "wraps after the last tab");
    press(&mut a, &[Command::Left]);
    assert_eq!(a.detail.tab, tabs::Profile.id(), "wraps back");
    press(&mut a, &[Command::Left]);
    assert_eq!(a.detail.tab, tabs::Timeline.id());
    press(&mut a, &[Command::PrevTab]);
    assert_eq!(a.detail.tab.index(), 5);
}

#[test]
fn search_finds_matches_in_order_and_wraps() {
    let (mut a, _) = app(&[fixture("saxpy_f32.json")], 120, 40);
    press(
        &mut a,
        &[Command::FocusNext, Command::Home, Command::Search],
    );
    for c in "ld.global".chars() {
        update(&mut a, Action::Input(c));
    }
    press(&mut a, &[Command::Enter]);
    let v = a.ptx_view().unwrap().clone();
    let want: Vec<usize> = (0..v.len())
        .filter(|&i| v.line(i).contains("ld.global"))
        .collect();
    assert!(want.len() >= 2);
    let mut got = vec![a.panes.ptx.cursor];
    for _ in 1..want.len() {
        press(&mut a, &[Command::SearchNext]);
        got.push(a.panes.ptx.cursor);
    }
    assert_eq!(got, want);
    press(&mut a, &[Command::SearchNext]);
    assert_eq!(a.panes.ptx.cursor, want[0], "wraps to the first match");
    press(&mut a, &[Command::SearchPrev]);
    assert_eq!(a.panes.ptx.cursor, *want.last().unwrap());
}

#[test]
fn tuning_keys_reemit_and_reestimate_at_once() {
    let (mut a, _) = app(&[fixture("vadd_f32.json")], 120, 40);
    let threads =
        |a: &vyrescope::tui::app::App| a.code.emission.as_ref().unwrap().opts.workgroup_size[0];
    let current = |a: &vyrescope::tui::app::App| {
        a.code
            .emission
            .as_ref()
            .unwrap()
            .occupancy
            .as_ref()
            .unwrap()
            .current
    };
    let header = |a: &vyrescope::tui::app::App, x: u32| {
        a.ptx_view()
            .unwrap()
            .kernel
            .ptx
            .contains(&format!("workgroup: {x} x 1 x 1"))
    };
    assert_eq!(threads(&a), 256);
    let cases: &[(Command, u32)] = &[
        (Command::WgDouble, 512),
        (Command::WgDouble, 1024),
        (Command::WgDouble, 1024), // device limit
        (Command::WgHalve, 512),
        (Command::WgMinus, 480),
        (Command::WgPlus, 512),
        (Command::WgHalve, 256),
        (Command::WgHalve, 128),
    ];
    for (cmd, want) in cases {
        let gen = a.code.generation;
        press(&mut a, &[*cmd]);
        assert_eq!(a.workgroup()[0], *want, "{cmd:?}");
        assert_eq!(threads(&a), *want, "re-emitted for {cmd:?}");
        assert!(header(&a, *want), "PTX header says {want}");
        assert_eq!(current(&a), *want, "re-estimated for {cmd:?}");
        if a.code.generation != gen {
            assert!(a.ptx_view().is_some());
        }
    }
    // Typed workgroup.
    press(&mut a, &[Command::WgPrompt]);
    assert!(matches!(a.overlay.open, Some(Overlay::Prompt(..))));
    for _ in 0..12 {
        update(&mut a, Action::Backspace);
    }
    for c in "64,2,1".chars() {
        update(&mut a, Action::Input(c));
    }
    press(&mut a, &[Command::Enter]);
    assert_eq!(a.workgroup(), [64, 2, 1]);
    assert_eq!(current(&a), 128);
    // Target sm cycles and re-emits.
    press(&mut a, &[Command::CycleSm]);
    assert_eq!(a.code.sm, 70);
    assert!(a.ptx_view().unwrap().kernel.ptx.contains(".target sm_70"));
    // Device profile switches and re-estimates for that device.
    let before = a.jobs.devices.label();
    press(&mut a, &[Command::CycleDevice]);
    assert_ne!(a.jobs.devices.label(), before);
    let dev = a
        .code
        .emission
        .as_ref()
        .unwrap()
        .occupancy
        .as_ref()
        .unwrap()
        .device
        .clone();
    assert!(
        dev.starts_with(&a.jobs.devices.current().unwrap().name),
        "{dev}"
    );
}

#[test]
fn reload_keeps_cursor_tab_and_picks_up_changes() {
    let dir = std::env::temp_dir().join(format!("vyrescope-reload-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("p.json");
    let text = std::fs::read_to_string(fixture("saxpy_f32.json")).unwrap();
    std::fs::write(&file, &text).unwrap();
    let (mut a, _) = app(std::slice::from_ref(&file), 120, 40);
    press(&mut a, &[Command::Down, Command::Tab(2)]);
    let (cursor, tab) = (a.panes.ir.cursor, a.detail.tab);
    std::fs::write(
        &file,
        text.replace("\"name\": \"saxpy_f32\"", "\"name\": \"saxpy_renamed\""),
    )
    .unwrap();
    press(&mut a, &[Command::Reload]);
    assert_eq!(
        a.programs.doc.as_ref().unwrap().program.name,
        "saxpy_renamed"
    );
    assert_eq!((a.panes.ir.cursor, a.detail.tab), (cursor, tab));
    // A broken file keeps the last good version and says why.
    std::fs::write(&file, "{").unwrap();
    update(&mut a, Action::FileChanged);
    assert_eq!(
        a.programs.doc.as_ref().unwrap().program.name,
        "saxpy_renamed"
    );
    assert!(a.screen.message.as_ref().is_some_and(|m| !m.1.is_empty()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn export_writes_the_current_view_as_json() {
    use std::os::unix::fs::FileTypeExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("programs");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("v.json");
    std::fs::copy(fixture("vadd_f32.json"), &file).unwrap();
    let (mut a, _) = app(std::slice::from_ref(&file), 120, 40);
    // Exports go to the data folder (sandboxed here), never beside the Programs.
    let exports = tmp.path().join("xdg-data/vyrescope/exports");
    a.export_dir = Some(exports.clone());
    press(&mut a, &[Command::Export]);
    assert!(
        !dir.join("v.ptx.json").exists(),
        "export polluted the Program folder"
    );
    let out: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(exports.join("v.ptx.json")).unwrap())
            .unwrap();
    assert_eq!(
        out["data"]["ptx"].as_str(),
        Some(a.ptx_view().unwrap().kernel.ptx.as_str())
    );
    assert_eq!(
        out["data"]["map"].as_array().unwrap().len(),
        a.ptx_view().unwrap().kernel.source_map.entries.len()
    );
    a.screen.focus = Focus::Detail;
    press(&mut a, &[Command::Tab(1), Command::Export]);
    let occ: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(exports.join("v.occupancy.json")).unwrap())
            .unwrap();
    let rows = occ["data"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 1024 / 32);
    assert_eq!(rows[7]["block_size"], 256);
    // Exporting again asks first: any key but `y` keeps the file.
    let target = exports.join("v.occupancy.json");
    std::fs::write(&target, "precious").unwrap();
    press(&mut a, &[Command::Export]);
    assert!(matches!(a.overlay.open, Some(Overlay::ConfirmOverwrite(_))));
    update(&mut a, Action::Input('n'));
    assert!(a.overlay.open.is_none());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    press(&mut a, &[Command::Export, Command::Enter]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    press(&mut a, &[Command::Export]);
    update(&mut a, Action::Input('y'));
    assert!(std::fs::read_to_string(&target)
        .unwrap()
        .contains("\"rows\""));
    // A typed path: typing replaces the pre-filled default; a device, a link or a folder is
    // never replaced by a plain file.
    let real = tmp.path().join("real.json");
    std::fs::write(&real, "keep").unwrap();
    let link = tmp.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    for typed in ["/dev/null", link.to_str().unwrap(), dir.to_str().unwrap()] {
        press(&mut a, &[Command::ExportTo]);
        for c in typed.chars() {
            update(&mut a, Action::Input(c));
        }
        press(&mut a, &[Command::Enter]);
        if matches!(a.overlay.open, Some(Overlay::ConfirmOverwrite(_))) {
            update(&mut a, Action::Input('y'));
        }
        let msg = a.screen.message.clone().unwrap();
        assert_eq!(msg.0, Level::Error, "{typed}: {msg:?}");
        assert!(
            msg.1.contains("refusing") && msg.1.contains("Fix:"),
            "{msg:?}"
        );
    }
    assert!(std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_char_device());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "keep");
    assert!(dir.is_dir());
    // A new typed path is written.
    let fresh = tmp.path().join("fresh.json");
    press(&mut a, &[Command::ExportTo]);
    for c in fresh.to_str().unwrap().chars() {
        update(&mut a, Action::Input(c));
    }
    press(&mut a, &[Command::Enter]);
    assert!(fresh.is_file());
}

#[test]
fn mouse_click_focuses_and_selects_wheel_scrolls() {
    let (mut a, _) = app(&[fixture("matmul_tiled_f32.json")], 120, 40);
    let ar = areas(120, 40, &a);
    update(&mut a, Action::Click(ar.ptx.x + 5, ar.ptx.y + 4));
    assert_eq!(a.screen.focus, Focus::Ptx);
    assert_eq!(a.panes.ptx.cursor, a.panes.ptx.scroll + 3);
    let before = a.panes.ptx.cursor;
    update(&mut a, Action::Wheel(ar.ptx.x + 5, ar.ptx.y + 4, 1));
    assert_eq!(a.panes.ptx.cursor, before + 3);
    // Tab bar click.
    let x = ar.detail.x + 1 + " 1 Occupancy ".len() as u16 + 2;
    update(&mut a, Action::Click(x, ar.detail.y + 1));
    assert_eq!(a.detail.tab.index(), 1);
    update(&mut a, Action::Click(ar.ir.x + 3, ar.ir.y + 2));
    assert_eq!(a.screen.focus, Focus::Ir);
    assert_eq!(a.panes.ir.cursor, a.panes.ir.scroll + 1);
}

#[test]
fn quit_and_help_and_escape() {
    let (mut a, _) = app(&[fixture("vadd_f32.json")], 80, 24);
    press(&mut a, &[Command::Help]);
    assert!(matches!(a.overlay.open, Some(Overlay::Help(0))));
    press(&mut a, &[Command::Down]);
    assert!(matches!(a.overlay.open, Some(Overlay::Help(1))));
    press(&mut a, &[Command::Escape]);
    assert!(a.overlay.open.is_none());
    // Quitting is a command for the shell.
    let cmds = vyrescope::tui::update::update(&mut a, Action::Command(Command::Quit));
    assert!(matches!(cmds[..], [vyrescope::tui::action::Cmd::Quit]));
}

#[test]
fn live_probe_sets_the_target_sm_unless_the_user_chose_one() {
    let profiles = vyrescope::tui::gpu::device_profiles();
    let caps = |name: &str| {
        profiles
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| c.clone())
            .unwrap()
    };
    // Nothing chosen: the probed device's sm becomes the target.
    let (mut a, _) = app(&[fixture("vadd_f32.json")], 120, 40);
    assert_eq!(a.code.sm, 90);
    update(&mut a, Action::Worker(Reply::Probed(Ok(caps("a100")))));
    assert_eq!(a.code.sm, 80);
    // `T` pins the choice: a later probe leaves it alone.
    press(&mut a, &[Command::CycleSm]);
    let chosen = a.code.sm;
    assert_ne!(chosen, 80);
    update(&mut a, Action::Worker(Reply::Probed(Ok(caps("h200")))));
    assert_eq!(a.code.sm, chosen);
    // So does `--sm` on the command line.
    std::env::set_var(
        "VYRESCOPE_CONFIG",
        "/nonexistent/vyrescope-test-config.json",
    );
    let opts = vyrescope::tui::Options {
        files: vec![fixture("vadd_f32.json")],
        theme: Some("dark".into()),
        sm: Some(80),
        ..vyrescope::tui::Options::default()
    };
    let (mut b, _, _) = vyrescope::tui::setup(&opts).unwrap();
    update(&mut b, Action::Worker(Reply::Probed(Ok(caps("h200")))));
    assert_eq!(b.code.sm, 80);
    assert!(b.jobs.devices.live.is_some());
}

#[test]
fn files_are_read_and_exports_written_outside_update() {
    use vyrescope::tui::action::Cmd;
    use vyrescope::tui::background::Job;
    use vyrescope::tui::replay::perform;
    let (mut a, _) = app(
        &[fixture("vadd_f32.json"), fixture("saxpy_f32.json")],
        120,
        40,
    );
    let name = |a: &vyrescope::tui::app::App| a.programs.doc.as_ref().unwrap().program.name.clone();
    assert_eq!(name(&a), "vadd_f32");
    // Enter on the list asks the worker to read the file; the state waits for its reply.
    a.screen.focus = Focus::List;
    a.panes.list.cursor = 1;
    let first = vyrescope::tui::update::update(&mut a, Action::Command(Command::Enter));
    assert!(matches!(
        first.as_slice(),
        [Cmd::Job(Job::Load { index: 1, .. })]
    ));
    assert_eq!(name(&a), "vadd_f32");
    // A newer request makes the older one stale: its reply changes nothing.
    a.panes.list.cursor = 0;
    let second = vyrescope::tui::update::update(&mut a, Action::Command(Command::Enter));
    perform(&mut a, &mut NoGpu, first);
    assert_eq!(name(&a), "vadd_f32");
    a.panes.list.cursor = 1;
    perform(&mut a, &mut NoGpu, second);
    assert_eq!(
        (name(&a), a.programs.current),
        ("vadd_f32".to_string(), Some(0))
    );
    // An export is a command for the shell: nothing is written until it is performed.
    let tmp = tempfile::tempdir().unwrap();
    a.export_dir = Some(tmp.path().to_path_buf());
    a.screen.focus = Focus::Ptx;
    let cmds = vyrescope::tui::update::update(&mut a, Action::Command(Command::Export));
    assert!(matches!(cmds.as_slice(), [Cmd::Export(_)]));
    assert!(!tmp.path().join("vadd_f32.ptx.json").exists());
    perform(&mut a, &mut NoGpu, cmds);
    assert!(tmp.path().join("vadd_f32.ptx.json").is_file());
    assert_eq!(a.screen.message.as_ref().map(|m| m.0), Some(Level::Info));
}

/// `T` to sm_70 says its SASS is sm_75's (the pinned ptxas has no sm_70 target), rather than
/// showing sm_75 SASS as sm_70's silently; other targets say nothing more.
#[test]
fn cycling_to_sm_70_says_the_sass_is_sm_75() {
    let (mut a, _hl) = app(&[fixture("vadd_f32.json")], 120, 40);
    let mut seen_70 = false;
    for _ in 0..8 {
        press(&mut a, &[Command::CycleSm]);
        let msg = a.screen.message.clone().map(|m| m.1).unwrap_or_default();
        if a.code.sm == 70 {
            seen_70 = true;
            assert!(msg.contains("SASS is for sm_75"), "{msg}");
        } else {
            assert_eq!(msg, format!("target sm_{}", a.code.sm));
        }
    }
    assert!(seen_70, "T never reached sm_70");
}
