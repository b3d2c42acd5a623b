//! Screens that tell the truth (issue 14 items 5-9): the program list's honest validation
//! marks, the status line's key hints and expiring messages, sideways scrolling, the folded
//! program list, the too-small notice, prompts that replace their pre-filled value and edit
//! like readline, and a help screen that lists only the tabs that exist.

use crate::tui_helpers as helpers;

use helpers::*;
use vyrescope::tui::action::{Action, Cmd, Command};
use vyrescope::tui::app::screen::MESSAGE_TICKS;
use vyrescope::tui::app::{Edit, EntryStatus, Focus, Overlay};
use vyrescope::tui::background::Job;
use vyrescope::tui::input::key_action;
use vyrescope::tui::keymap::KeySpec;
use vyrescope::tui::layout::{areas, MIN_SIZE};
use vyrescope::tui::replay::perform;
use vyrescope::tui::{setup, Options};

fn last_row(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

#[test]
fn the_program_list_checks_every_file_in_the_background() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::copy(fixture("vadd_f32.json"), d.join("a_good.json")).unwrap();
    // Broken JSON, and a Program that parses but does not validate.
    std::fs::write(d.join("b_broken.json"), "{\"name\": ").unwrap();
    let invalid = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/invalid/assign_type_change.json"),
    )
    .unwrap();
    std::fs::write(d.join("c_invalid.json"), invalid).unwrap();
    std::fs::copy(fixture("saxpy_f32.json"), d.join("d_good.json")).unwrap();
    std::env::set_var(
        "VYRESCOPE_CONFIG",
        "/nonexistent/vyrescope-test-config.json",
    );
    let opts = Options {
        files: vec![d.to_path_buf()],
        theme: Some("dark".into()),
        device: Some("h200".into()),
        ..Options::default()
    };
    let (mut a, hl, mut first) = setup(&opts).unwrap();
    first.retain(|c| !matches!(c, Cmd::Job(Job::Probe | Job::Resources { .. })));
    // The jobs taken out above no longer count as in flight.
    a.jobs.pending = first.len();
    // Nothing but the opened file is claimed before the check ran: the rest is pending,
    // and the check is worker work (a job), not done on the UI thread.
    let statuses: Vec<EntryStatus> = a
        .programs
        .entries
        .iter()
        .map(|e| e.status.clone())
        .collect();
    assert_eq!(
        statuses[0],
        EntryStatus::Checked {
            errors: 0,
            warnings: 0
        }
    );
    assert!(
        statuses[1..].iter().all(|s| *s == EntryStatus::Pending),
        "{statuses:?}"
    );
    let job = first.iter().find_map(|c| match c {
        Cmd::Job(Job::Validate { files, .. }) => Some(files.clone()),
        _ => None,
    });
    assert_eq!(job.map(|f| f.len()), Some(3));
    a.code.fixed_resources = Some(resources());
    a.screen.size = (100, 30);
    a.screen.focus = Focus::List;
    let s = screen(&mut a, &hl);
    for name in ["b_broken", "c_invalid", "d_good"] {
        assert!(s.contains(&format!("… {name}")), "{name} not pending:\n{s}");
    }
    perform(&mut a, &mut NoGpu, first);
    let s = screen(&mut a, &hl);
    for (mark, name) in [
        ("✓", "a_good"),
        ("✗", "b_broken"),
        ("✗", "c_invalid"),
        ("✓", "d_good"),
    ] {
        assert!(
            s.contains(&format!("{mark} {name}")),
            "{name} not {mark}:\n{s}"
        );
    }
    assert!(matches!(
        a.programs.entries[1].status,
        EntryStatus::Failed(_)
    ));
    assert!(
        matches!(a.programs.entries[2].status, EntryStatus::Checked { errors, .. } if errors > 0)
    );
    assert_eq!(a.jobs.pending, 0);
}

#[test]
fn the_status_line_leads_with_help_and_quit_and_messages_expire() {
    let (mut a, hl) = app(
        &[fixture("vadd_f32.json"), fixture("saxpy_f32.json")],
        80,
        24,
    );
    let s = screen(&mut a, &hl);
    let bar = last_row(&s);
    assert!(bar.starts_with(" ? help  q quit"), "{bar}");
    // The search key is shown whole (it once was cut at its own `/`).
    assert!(bar.contains("/ search"), "{bar}");
    // A message replaces the hints for a while ...
    press(&mut a, &[Command::CycleSm]);
    let bar = last_row(&screen(&mut a, &hl)).to_string();
    assert!(
        bar.contains("target sm_70") && bar.starts_with(" ? help  q quit"),
        "{bar}"
    );
    for _ in 0..MESSAGE_TICKS - 1 {
        update(&mut a, Action::Tick);
    }
    assert!(a.screen.message.is_some());
    update(&mut a, Action::Tick);
    assert!(a.screen.message.is_none(), "the message outlived its time");
    assert!(last_row(&screen(&mut a, &hl)).contains("/ search"));
    // ... or until the next action.
    a.screen.error("something failed");
    press(&mut a, &[Command::Down]);
    assert!(a.screen.message.is_none());
    assert_eq!(a.screen.message_age, 0);
}

#[test]
fn code_panes_scroll_sideways() {
    let (mut a, hl) = app(&[fixture("matmul_tiled_f32.json")], 80, 24);
    a.screen.focus = Focus::Ptx;
    let ar = areas(80, 24, &a);
    let width = a.pane_width(Focus::Ptx);
    assert!(width > ar.ptx.width as usize, "fixture lines fit: {width}");
    let row_of = |s: &str, r: u16| -> String {
        s.lines()
            .nth(r as usize)
            .unwrap_or("")
            .chars()
            .skip(ar.ptx.x as usize)
            .take(ar.ptx.width as usize)
            .collect()
    };
    let before = screen(&mut a, &hl);
    press(&mut a, &[Command::ScrollRight]);
    assert_eq!(a.panes.ptx.hscroll, 8);
    let after = screen(&mut a, &hl);
    assert!(after.lines().next().unwrap().contains("col 9"), "{after}");
    // Every text row moved 8 columns left; the line-number gutter stayed.
    let line = a.panes.ptx.scroll;
    let text = a.ptx_view().unwrap().line(line).replace('\t', "    ");
    let shown = row_of(&after, ar.ptx.y + 1);
    let gutter = shown.find('‹').expect("scrolled gutter mark");
    let body: String = shown[gutter + '‹'.len_utf8()..].chars().collect();
    let want: String = text
        .chars()
        .skip(8)
        .take(body.trim_end_matches('│').chars().count())
        .collect();
    assert!(body.starts_with(want.trim_end()), "{body:?} vs {want:?}");
    assert_ne!(row_of(&before, ar.ptx.y + 1), shown);
    // Right/Left (h/l) scroll the code panes too; the end is clamped, the start is 0.
    for _ in 0..1000 {
        press(&mut a, &[Command::Right]);
    }
    assert_eq!(a.panes.ptx.hscroll, width - 8);
    press(&mut a, &[Command::Left, Command::ScrollLeft]);
    assert_eq!(a.panes.ptx.hscroll, width - 24);
    for _ in 0..1000 {
        press(&mut a, &[Command::ScrollLeft]);
    }
    assert_eq!(a.panes.ptx.hscroll, 0);
    // A search match past the right edge is scrolled into view.
    let longest = (0..a.ptx_len())
        .max_by_key(|i| {
            a.ptx_view()
                .unwrap()
                .line(*i)
                .replace('\t', "    ")
                .chars()
                .count()
        })
        .unwrap();
    let text = a.ptx_view().unwrap().line(longest).replace('\t', "    ");
    let q: String = text
        .trim_end()
        .chars()
        .rev()
        .take(6)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let visible =
        ar.ptx.width as usize - 2 - vyrescope::tui::views::code_view::digits(a.ptx_len()) - 1;
    press(&mut a, &[Command::Home, Command::Search]);
    for c in q.chars() {
        update(&mut a, Action::Input(c));
    }
    press(&mut a, &[Command::Enter]);
    let line = a
        .ptx_view()
        .unwrap()
        .line(a.panes.ptx.cursor)
        .replace('\t', "    ");
    let fold = !q.chars().any(char::is_uppercase);
    let (hay, needle) = if fold {
        (line.to_ascii_lowercase(), q.to_ascii_lowercase())
    } else {
        (line.clone(), q.clone())
    };
    let start = hay[..hay.find(&needle).expect("cursor on a match")]
        .chars()
        .count();
    let h = a.panes.ptx.hscroll;
    assert!(
        h <= start && start + q.chars().count() <= h + visible,
        "match {q:?} at column {start} not in view (scrolled to {h}, {visible} columns)"
    );
    press(&mut a, &[Command::Escape]);
    for _ in 0..1000 {
        press(&mut a, &[Command::ScrollLeft]);
    }
    // Shift + wheel over the IR pane scrolls it sideways.
    let ir = areas(80, 24, &a).ir;
    update(&mut a, Action::HWheel(ir.x + 3, ir.y + 3, 1));
    assert!(a.panes.ir.hscroll > 0 || a.pane_width(Focus::Ir) <= 8);
    // The detail panel keeps Left/Right for its tabs.
    a.screen.focus = Focus::Detail;
    press(&mut a, &[Command::Right]);
    assert_eq!(a.detail.tab.index(), 1);
    assert_eq!(a.detail.pane.hscroll, 0);
}

#[test]
fn the_list_folds_with_one_file_and_small_terminals_get_a_notice() {
    let (mut a, hl) = app(&[fixture("vadd_f32.json")], 80, 24);
    let ar = areas(80, 24, &a);
    assert!(ar.list.is_empty());
    assert_eq!(ar.ir.x, 0, "the IR pane takes the list's columns");
    assert!(!screen(&mut a, &hl).contains("Programs"));
    // Opening a second file brings the list back.
    press(&mut a, &[Command::Open]);
    for c in fixture("saxpy_f32.json").to_str().unwrap().chars() {
        update(&mut a, Action::Input(c));
    }
    press(&mut a, &[Command::Enter]);
    assert!(!areas(80, 24, &a).list.is_empty());
    assert!(screen(&mut a, &hl).contains("Programs 2"));
    // Below the minimum size only a notice shows, and clicks hit nothing.
    let (w, h) = MIN_SIZE;
    for (cw, ch) in [(w - 1, h), (w, h - 1), (20, 5)] {
        update(&mut a, Action::Resize(cw, ch));
        let s = screen(&mut a, &hl);
        assert!(s.contains("terminal too small"), "{cw}x{ch}:\n{s}");
        assert!(s.contains(&format!("{w}x{h}")), "{s}");
        let focus = a.screen.focus;
        update(&mut a, Action::Click(1, 1));
        assert_eq!(a.screen.focus, focus);
    }
    update(&mut a, Action::Resize(w, h));
    let s = screen(&mut a, &hl);
    assert!(
        !s.contains("terminal too small") && s.contains("PTX"),
        "{s}"
    );
}

#[test]
fn prompts_replace_the_prefilled_value_and_edit_like_readline() {
    let (mut a, _) = app(&[fixture("vadd_f32.json")], 120, 40);
    // Typing replaces the pre-filled workgroup (it used to append: `256,1,164,2,1`).
    press(&mut a, &[Command::WgPrompt]);
    match &a.overlay.open {
        Some(Overlay::Prompt(p)) => assert!(p.selected && p.text == "256,1,1", "{p:?}"),
        other => panic!("{other:?}"),
    }
    for c in "64,2,1".chars() {
        update(&mut a, Action::Input(c));
    }
    press(&mut a, &[Command::Enter]);
    assert_eq!(a.workgroup(), [64, 2, 1]);
    // The keys reach the prompt as edits: Ctrl-U clears, Ctrl-W drops a word, Home/End and
    // Left/Right move.
    press(&mut a, &[Command::WgPrompt]);
    let key = |a: &vyrescope::tui::app::App, k: &str| key_action(a, KeySpec::parse(k).unwrap());
    assert!(matches!(
        key(&a, "ctrl-u"),
        Some(Action::Edit(Edit::KillToStart))
    ));
    assert!(matches!(
        key(&a, "ctrl-w"),
        Some(Action::Edit(Edit::KillWord))
    ));
    assert!(matches!(key(&a, "home"), Some(Action::Edit(Edit::Home))));
    assert!(matches!(key(&a, "end"), Some(Action::Edit(Edit::End))));
    assert!(matches!(key(&a, "left"), Some(Action::Edit(Edit::Left))));
    assert!(matches!(key(&a, "q"), Some(Action::Input('q'))));
    for k in ["end", "left", "left", "backspace"] {
        let act = key(&a, k).unwrap();
        update(&mut a, act);
    }
    update(&mut a, Action::Input('4'));
    match &a.overlay.open {
        Some(Overlay::Prompt(p)) => assert_eq!(p.text, "64,4,1"),
        other => panic!("{other:?}"),
    }
    // Ctrl-U deletes what is before the cursor (readline's rule).
    let act = key(&a, "ctrl-u").unwrap();
    update(&mut a, act);
    match &a.overlay.open {
        Some(Overlay::Prompt(p)) => assert_eq!((p.text.as_str(), p.cursor), (",1", 0)),
        other => panic!("{other:?}"),
    }
    for k in ["end", "ctrl-u"] {
        let act = key(&a, k).unwrap();
        update(&mut a, act);
    }
    for c in "32,1,1".chars() {
        update(&mut a, Action::Input(c));
    }
    press(&mut a, &[Command::Enter]);
    assert_eq!(a.workgroup(), [32, 1, 1]);
}

#[test]
fn help_lists_only_the_tabs_that_exist() {
    let text = |a: &vyrescope::tui::app::App| -> String {
        vyrescope::tui::views::help::lines(a)
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.to_string())
                    .collect::<String>()
                    + "\n"
            })
            .collect()
    };
    let (a, _) = app(&[fixture("vadd_f32.json")], 120, 40);
    let t = text(&a);
    assert!(t.contains("detail tab: Telemetry"), "{t}");
    assert!(
        t.contains("detail tab: Timeline") && t.contains("tab7"),
        "{t}"
    );
    assert!(
        t.contains("detail tab: Profile") && t.contains("tab8"),
        "{t}"
    );
    for gone in ["tab9", "Plan"] {
        assert!(!t.contains(gone), "help lists {gone} for a Program:\n{t}");
    }
    let pipeline =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pipelines/chain.json");
    let (a, _) = app(&[pipeline], 120, 40);
    let t = text(&a);
    assert!(t.contains("detail tab: Plan") && t.contains("tab7"), "{t}");
    assert!(t.contains("plan_vyre"), "{t}");
    assert!(
        t.contains("detail tab: Timeline") && t.contains("tab8"),
        "{t}"
    );
    assert!(
        t.contains("detail tab: Profile") && t.contains("tab9"),
        "{t}"
    );
}

#[test]
fn offline_r_runs_the_reference_interpreter_and_says_so() {
    let (mut a, hl) = app(
        &[fixture("vadd_f32.json"), fixture("saxpy_f32.json")],
        120,
        40,
    );
    assert!(a.jobs.devices.live.is_none());
    press(&mut a, &[Command::Dispatch]);
    let runs = &a.jobs.session.runs;
    assert_eq!(runs.len(), 1, "{:?}", a.jobs.session.run_error);
    let r = runs[0].clone();
    assert_eq!(r.backend, vyrescope::tui::gpu::REFERENCE_BACKEND);
    assert!(r.parity.is_none() && r.device_ms >= 0.0);
    assert_eq!(r.workgroup, a.workgroup());
    assert!(r.grid[0] > 0);
    let msg = a.screen.message.clone().unwrap();
    assert!(msg.1.contains("reference interpreter"), "{msg:?}");
    let s = screen(&mut a, &hl);
    assert!(s.contains("interpreter (no GPU)"), "{s}");
    assert!(!s.contains("no CUDA driver found"), "{s}");
    // The interpreter's wall time is not a device time: the device column shows `-`, the
    // parity column says it was CPU time, and the sparkline has no GPU runs to draw.
    let row = s
        .lines()
        .find(|l| l.contains("interpreter (no GPU)"))
        .unwrap();
    assert!(row.contains("ms CPU"), "{row}");
    let device_ms = format!("{:.4}", r.device_ms);
    assert!(
        !row.contains(&device_ms),
        "device column shows the CPU time: {row}"
    );
    assert!(s.contains("device µs: no GPU runs"), "{s}");
    // Cache and Telemetry say why they are empty in a few words, not the loader's whole
    // message.
    for (tab, what) in [(5, "cache statistics"), (6, "telemetry")] {
        press(&mut a, &[Command::Tab(tab)]);
        let s = screen(&mut a, &hl);
        assert!(
            s.contains(&format!(
                "{what} empty: no CUDA driver found (libcuda.so.1)"
            )),
            "{s}"
        );
        assert!(!s.contains("test machine"), "{s}");
    }
    // Without a GPU a tune sweep is the offline estimate, labelled so (nothing timed).
    press(&mut a, &[Command::Tune]);
    let rows = match &a.jobs.session.tune {
        Some(Ok(rows)) => rows.clone(),
        other => panic!("{other:?}"),
    };
    assert!(rows
        .iter()
        .all(|r| r.median_ms.is_none() && r.occupancy_pct.is_some()));
    assert_eq!(
        rows.iter().filter(|r| r.note == "best").count(),
        1,
        "{rows:?}"
    );
    let msg = a.screen.message.clone().unwrap();
    assert!(msg.1.contains("estimate, nothing timed"), "{msg:?}");
    let s = screen(&mut a, &hl);
    assert!(s.contains("estimate, nothing timed"), "{s}");
}

#[test]
fn analysis_runs_as_worker_jobs_and_absurd_workgroups_are_refused_first() {
    let (mut a, _) = app(
        &[fixture("vadd_f32.json"), fixture("saxpy_f32.json")],
        120,
        40,
    );
    // A tuning key re-emits (small Program: inline) but leaves the occupancy sweep and the
    // performance diagnostics to the worker: `update` returns the job and estimates nothing.
    let cmds = vyrescope::tui::update::update(&mut a, Action::Command(Command::WgDouble));
    let estimate = cmds
        .iter()
        .filter(|c| matches!(c, Cmd::Job(Job::Estimate { .. })))
        .count();
    assert_eq!(estimate, 1, "{cmds:?}");
    let em = a.code.emission.as_ref().unwrap();
    assert_eq!(em.opts.workgroup_size, [512, 1, 1]);
    assert!(em.occupancy.is_err(), "estimated on the UI thread");
    perform(&mut a, &mut NoGpu, cmds);
    let occ = a
        .code
        .emission
        .as_ref()
        .unwrap()
        .occupancy
        .as_ref()
        .unwrap();
    assert_eq!(occ.current, 512);
    // A stale estimate (an older request) is dropped.
    let old = a.code.estimate_gen;
    let cmds = vyrescope::tui::update::update(&mut a, Action::Command(Command::WgHalve));
    let stale = vyrescope::tui::background::Reply::Estimated(
        old,
        Box::new(vyrescope::tui::analysis::Estimated {
            occupancy: Err(vyrescope::tui::analysis::Unavailable::Pending("stale")),
            resources: vec![],
            diagnostics: vec![],
        }),
    );
    a.jobs.pending += 1;
    update(&mut a, Action::Worker(stale));
    perform(&mut a, &mut NoGpu, cmds);
    let occ = a
        .code
        .emission
        .as_ref()
        .unwrap()
        .occupancy
        .as_ref()
        .unwrap();
    assert_eq!(occ.current, 256);
    // --workgroup beyond the device's limit is refused before anything is analysed.
    let opts = Options {
        files: vec![fixture("vadd_f32.json")],
        device: Some("h200".into()),
        workgroup: Some([1024, 1024, 64]),
        ..Options::default()
    };
    let e = match setup(&opts) {
        Ok(_) => panic!("--workgroup 1024,1024,64 accepted"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("67108864 threads") && e.contains("Fix:"), "{e}");
}

#[test]
fn the_binary_exports_under_the_data_folder_and_asks_before_replacing() {
    let tmp = tempfile::tempdir().unwrap();
    let progs = tmp.path().join("programs");
    std::fs::create_dir_all(&progs).unwrap();
    let file = progs.join("vadd_f32.json");
    std::fs::copy(fixture("vadd_f32.json"), &file).unwrap();
    let data = tmp.path().join("data");
    let run = |keys: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_vyrescope"))
            .args([
                "tui",
                file.to_str().unwrap(),
                "--keys",
                keys,
                "--device",
                "h200",
            ])
            .env("HOME", tmp.path())
            .env("XDG_DATA_HOME", &data)
            .env("VYRESCOPE_CONFIG", "/nonexistent/config.json")
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let screen = run("x");
    let target = data.join("vyrescope/exports/vadd_f32.ptx.json");
    assert!(target.is_file(), "{screen}");
    assert!(screen.contains("exported"), "{screen}");
    let names: Vec<_> = std::fs::read_dir(&progs)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "the Program folder got {names:?}");
    std::fs::write(&target, "mine").unwrap();
    let screen = run("x");
    assert!(screen.contains("exists - replace it?"), "{screen}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    run("x n");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
    run("x y");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(v["view"], "ptx");
}

#[test]
fn the_occupancy_axis_label_keeps_apart_from_the_text() {
    for (w, h) in [(80, 24), (100, 30), (120, 40)] {
        let (mut a, hl) = app(&[fixture("vadd_f32.json"), fixture("saxpy_f32.json")], w, h);
        let s = screen(&mut a, &hl);
        // The x axis' labels row ends with the largest block size; text follows only after
        // a gap (it once read `1024100.0%` / `1024per SM`).
        let row = s
            .lines()
            .find(|l| l.contains(" 512 ") && l.contains("1024"))
            .unwrap_or_else(|| panic!("{w}x{h}: no axis labels:\n{s}"));
        let after = &row[row.find("1024").unwrap() + 4..];
        assert!(
            after.starts_with("  "),
            "{w}x{h}: label runs into text: {row:?}"
        );
    }
}
