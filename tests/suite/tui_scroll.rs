//! Every list of the inspector scrolls at the smallest supported size (80x24): the tune table,
//! the dispatch history, Diagnostics, Resources, Cache, Telemetry, the Occupancy explanation,
//! the program list and help. For each, rows beyond the first screen are walked to with the
//! keys the other lists use, and the screen (not the state) must show the selected row with
//! the cursor style while headers stay on top.

use crate::tui_helpers as helpers;

use helpers::*;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use vyrescope::tui::action::{Action, Command};
use vyrescope::tui::app::{App, Focus, Overlay};
use vyrescope::tui::background::{Reply, Stats};
use vyrescope::tui::component::tabs as tab_rows;
use vyrescope::tui::gpu::{Counters, RunRecord};
use vyrescope::tui::highlight::Highlighter;
use vyrescope::tui::layout::areas;
use vyrescope::tui::replay::render;
use vyrescope::tui::views::tab_rows::{Offset, RowList};

const W: u16 = 80;
const H: u16 = 24;

/// Text of screen row `y` within `area`.
fn row_text(buf: &Buffer, area: Rect, y: u16) -> String {
    (area.x..area.x + area.width)
        .map(|x| buf[(x, y)].symbol())
        .collect()
}

/// Screen rows of `area` holding `needle`.
fn rows_with(buf: &Buffer, area: Rect, needle: &str) -> Vec<u16> {
    (area.y..area.y + area.height)
        .filter(|y| row_text(buf, area, *y).contains(needle))
        .collect()
}

/// Whether screen row `y` of `area` is drawn with the cursor style.
fn is_cursor_row(app: &App, buf: &Buffer, area: Rect, y: u16) -> bool {
    buf[(area.x, y)].bg == app.theme.cursor.bg.unwrap()
}

/// The only screen row of `area` with the cursor style.
fn cursor_rows(app: &App, buf: &Buffer, area: Rect) -> Vec<u16> {
    (area.y..area.y + area.height)
        .filter(|y| is_cursor_row(app, buf, area, *y))
        .collect()
}

fn list(app: &App, offset: Offset) -> RowList {
    tab_rows::current(app)
        .into_iter()
        .find(|l| l.offset == offset)
        .expect("list on screen")
}

fn focus_detail(a: &mut App) {
    while a.screen.focus != Focus::Detail {
        press(a, &[Command::FocusNext]);
    }
}

/// Moves the detail cursor down to position `k`, one key at a time.
fn down_to(a: &mut App, k: usize) {
    while a.detail.pane.cursor < k {
        press(a, &[Command::Down]);
    }
}

fn vadd() -> (App, Highlighter) {
    app(&[fixture("vadd_f32.json")], W, H)
}

fn dims(v: [u32; 3]) -> String {
    format!("{},{},{}", v[0], v[1], v[2])
}

/// Screen row of tune candidate `wg` (matched on the row's start: "64,1,1" is not "264,1,1").
fn tune_row_at(buf: &Buffer, l: &RowList, wg: [u32; 3]) -> Option<u16> {
    let r = l.rows();
    let want = format!("{} ", dims(wg));
    (r.y..r.y + r.height).find(|y| row_text(buf, r, *y).starts_with(&want))
}

#[test]
fn tune_table_scrolls_to_every_candidate_keeps_header_best_and_survives_reruns() {
    let (mut a, hl) = vadd();
    press(&mut a, &[Command::Tab(4)]);
    fake_dispatch(&mut a, 0.0123, true);
    let rows = tune_rows(&a, 384);
    let n = rows.len();
    fake_tune_rows(&mut a, rows.clone());
    focus_detail(&mut a);
    let tune = list(&a, Offset::Tune);
    assert!(
        n > tune.page(),
        "{n} candidates must not fit {} rows at 80x24",
        tune.page()
    );
    let buf = render(&mut a, &hl, W, H);
    let last = rows[n - 1].workgroup;
    assert!(
        tune_row_at(&buf, &tune, last).is_none(),
        "the last candidate starts off screen"
    );
    // Walk from the history into the tune table and down every candidate.
    let runs = a.jobs.session.runs.len();
    for (k, row) in rows.iter().enumerate() {
        down_to(&mut a, runs + k);
        let buf = render(&mut a, &hl, W, H);
        let tune = list(&a, Offset::Tune);
        let y = tune_row_at(&buf, &tune, row.workgroup)
            .unwrap_or_else(|| panic!("candidate {k} not on screen"));
        assert_eq!(cursor_rows(&a, &buf, tune.area), vec![y], "candidate {k}");
        assert!(row_text(&buf, tune.area, tune.area.y).starts_with("tune wg"));
        let hist = list(&a, Offset::Main);
        assert!(row_text(&buf, hist.area, hist.area.y).starts_with("#   grid"));
        // The best candidate keeps its color wherever it is shown, selected or not.
        if let Some(by) = tune_row_at(&buf, &tune, [384, 1, 1]) {
            assert_eq!(buf[(tune.area.x, by)].fg, a.theme.ok.fg.unwrap());
        }
    }
    let buf = render(&mut a, &hl, W, H);
    assert!(tune_row_at(&buf, &tune, last).is_some());
    assert!(tune_row_at(&buf, &tune, rows[0].workgroup).is_none());
    // The scroll bar: its thumb sits at the bottom of the tune rows.
    let bar_x = tune.area.x + tune.area.width - 1;
    let bottom = tune.rows().y + tune.rows().height - 1;
    assert_eq!(buf[(bar_x, bottom)].symbol(), "┃");
    assert_eq!(buf[(bar_x, tune.rows().y)].symbol(), "│");

    // Re-running the tune sweep keeps the selection and the scroll position.
    let before = (a.detail.pane.cursor, tune_scroll(&a));
    press(&mut a, &[Command::PageUp]);
    let mid = (a.detail.pane.cursor, tune_scroll(&a));
    assert!(
        mid.0 < before.0 && mid.1 < before.1,
        "{before:?} -> {mid:?}"
    );
    fake_tune_rows(&mut a, rows.clone());
    assert_eq!((a.detail.pane.cursor, tune_scroll(&a)), mid);
    // A dispatch selects the new run; the tune table stays where it was.
    fake_dispatch(&mut a, 0.02, true);
    assert_eq!(a.detail.pane.cursor, a.jobs.session.runs.len() - 1);
    assert_eq!(tune_scroll(&a), mid.1);

    // End / Home reach both ends; a click selects the candidate under it.
    press(&mut a, &[Command::End]);
    assert_eq!(a.detail.pane.cursor, a.jobs.session.runs.len() + n - 1);
    let buf = render(&mut a, &hl, W, H);
    let tune = list(&a, Offset::Tune);
    let y = tune_row_at(&buf, &tune, rows[n - 2].workgroup).unwrap();
    update(&mut a, Action::Click(tune.area.x + 2, y));
    assert_eq!(a.detail.pane.cursor, a.jobs.session.runs.len() + n - 2);
    update(&mut a, Action::Click(tune.area.x + 2, tune.area.y));
    assert_eq!(
        a.detail.pane.cursor,
        a.jobs.session.runs.len() + n - 2,
        "the header is not a row"
    );
    press(&mut a, &[Command::Home]);
    assert_eq!(a.detail.pane.cursor, 0);
}

#[test]
fn tune_table_alone_scrolls_and_resizing_keeps_the_cursor_in_view() {
    let (mut a, hl) = vadd();
    let rows = tune_rows(&a, 64);
    press(&mut a, &[Command::Tab(4)]);
    fake_tune_rows(&mut a, rows.clone());
    focus_detail(&mut a);
    press(&mut a, &[Command::End]);
    let buf = render(&mut a, &hl, W, H);
    let tune = list(&a, Offset::Tune);
    let y = tune_row_at(&buf, &tune, rows[rows.len() - 1].workgroup).unwrap();
    assert_eq!(cursor_rows(&a, &buf, tune.area), vec![y]);
    // Growing the terminal shows more rows, the cursor still on screen and selected.
    let buf = render(&mut a, &hl, 120, 40);
    let tune = list(&a, Offset::Tune);
    let y = tune_row_at(&buf, &tune, rows[rows.len() - 1].workgroup).unwrap();
    assert_eq!(cursor_rows(&a, &buf, tune.area), vec![y]);
    let buf = render(&mut a, &hl, W, H);
    let tune = list(&a, Offset::Tune);
    assert!(tune_row_at(&buf, &tune, rows[rows.len() - 1].workgroup).is_some());
}

#[test]
fn dispatch_history_keeps_the_newest_run_in_view() {
    let (mut a, hl) = vadd();
    press(&mut a, &[Command::Tab(4)]);
    focus_detail(&mut a);
    for k in 0..12 {
        fake_dispatch(&mut a, 0.01 + k as f64 / 1000.0, k % 3 != 0);
        let buf = render(&mut a, &hl, W, H);
        let hist = list(&a, Offset::Main);
        let want = format!("{:<4}", k + 1);
        let y = rows_with(&buf, hist.rows(), &format!("{want}4096,1,1"));
        assert_eq!(y.len(), 1, "run {} not on screen", k + 1);
        assert_eq!(cursor_rows(&a, &buf, hist.area), y);
        assert!(row_text(&buf, hist.area, hist.area.y).starts_with("#   grid"));
    }
    press(&mut a, &[Command::Home]);
    let buf = render(&mut a, &hl, W, H);
    let hist = list(&a, Offset::Main);
    assert_eq!(rows_with(&buf, hist.rows(), "1   4096").len(), 1);
}

/// A copy of vadd whose body stores to an undeclared buffer `n` times: `n` errors, one per
/// statement; in a temporary folder removed when the returned handle drops.
fn many_errors(n: usize) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let stores: Vec<String> = (0..n)
        .map(|k| format!(r#"{{"store": "nope{k}", "index": "i", "value": 1.0}}"#))
        .collect();
    let text = std::fs::read_to_string(fixture("vadd_f32.json"))
        .unwrap()
        .replace(
            r#"{"let": "i", "value": {"gid": "x"}},"#,
            &format!(
                r#"{{"let": "i", "value": {{"gid": "x"}}}}, {},"#,
                stores.join(", ")
            ),
        );
    let file = dir.join("many_errors.json");
    std::fs::write(&file, text).unwrap();
    (tmp, file)
}

#[test]
fn diagnostics_scroll_to_every_finding_and_enter_jumps_to_it() {
    let (_tmp, file) = many_errors(14);
    let (mut a, hl) = app(&[file], W, H);
    press(&mut a, &[Command::Tab(3)]);
    focus_detail(&mut a);
    let diags: Vec<_> = a.diagnostics().into_iter().cloned().collect();
    assert!(diags.len() >= 14, "{diags:#?}");
    let l = list(&a, Offset::Main);
    assert!(diags.len() > l.page());
    for (k, d) in diags.iter().enumerate() {
        down_to(&mut a, k);
        let buf = render(&mut a, &hl, W, H);
        let l = list(&a, Offset::Main);
        let node = d.node.as_deref().unwrap_or("program");
        let label = format!("{} {node}:", d.code);
        let y = cursor_rows(&a, &buf, l.area);
        assert_eq!(y.len(), 1, "finding {k}");
        assert!(
            row_text(&buf, l.area, y[0]).contains(&label),
            "finding {k}: {label}"
        );
        // Its fix is shown under the list.
        let below = Rect::new(l.area.x, l.area.y + l.area.height, l.area.width, 2);
        let fix_start: String = d.fix.chars().take(20).collect();
        assert_eq!(rows_with(&buf, below, &fix_start).len(), 1, "fix of {k}");
    }
    // Enter on the last one goes to its statement.
    let last = diags.last().unwrap();
    press(&mut a, &[Command::Enter]);
    if let Some(node) = &last.node {
        assert_eq!(a.screen.focus, Focus::Ir);
        assert_eq!(a.ir_node(), Some(node.as_str()));
    }
    // A click on a row selects the finding drawn there.
    focus_detail(&mut a);
    press(&mut a, &[Command::PageDown]);
    let buf = render(&mut a, &hl, W, H);
    let l = list(&a, Offset::Main);
    let y = l.rows().y + 1;
    update(&mut a, Action::Click(l.area.x + 3, y));
    let d = &a.diagnostics()[a.detail.pane.cursor];
    let label = format!("{} {}:", d.code, d.node.as_deref().unwrap_or("program"));
    assert!(row_text(&buf, l.area, y).contains(&label));
}

#[test]
fn resources_scroll_with_the_header_on_top() {
    let (mut a, hl) = vadd();
    press(&mut a, &[Command::Tab(2)]);
    focus_detail(&mut a);
    let names: Vec<String> = a
        .code
        .emission
        .as_ref()
        .unwrap()
        .resources
        .iter()
        .map(|r| r.name.clone())
        .collect();
    assert!(names.len() > list(&a, Offset::Main).page());
    for (k, name) in names.iter().enumerate() {
        down_to(&mut a, k);
        let buf = render(&mut a, &hl, W, H);
        let l = list(&a, Offset::Main);
        let y = rows_with(&buf, l.rows(), &format!("{name} "));
        assert_eq!(y.len(), 1, "{name} not on screen");
        assert_eq!(cursor_rows(&a, &buf, l.area), y, "{name}");
        assert!(row_text(&buf, l.area, l.area.y).starts_with("resource"));
    }
}

/// A dispatch whose cache and telemetry have `n` counters each.
fn dispatch_with_counters(a: &mut App, n: usize) -> Counters {
    let counters: Counters = (0..n)
        .map(|k| (format!("counter_{k:02}"), format!("{}", k * 7)))
        .collect();
    let run = RunRecord {
        program: "vadd_f32".into(),
        grid: [4096, 1, 1],
        workgroup: [256, 1, 1],
        sm: 90,
        device_ms: 0.01,
        jit_ms: 1.0,
        parity: None,
        backend: vyrescope::tui::gpu::GPU_BACKEND.into(),
    };
    a.jobs.pending += 1;
    let stats = Stats {
        cache: Ok(counters.clone()),
        telemetry: Ok(counters.clone()),
    };
    update(
        a,
        Action::Worker(Reply::Dispatched(Ok(run), Box::new(stats))),
    );
    counters
}

#[test]
fn cache_and_telemetry_scroll_to_every_counter() {
    let (mut a, hl) = vadd();
    let counters = dispatch_with_counters(&mut a, 15);
    for tab in [5, 6] {
        press(&mut a, &[Command::Tab(tab)]);
        focus_detail(&mut a);
        assert!(counters.len() > list(&a, Offset::Main).page());
        for (k, (name, value)) in counters.iter().enumerate() {
            down_to(&mut a, k);
            let buf = render(&mut a, &hl, W, H);
            let l = list(&a, Offset::Main);
            let y = rows_with(&buf, l.rows(), &format!("{name}  {value}"));
            assert_eq!(y.len(), 1, "tab {tab}: {name}");
            assert_eq!(cursor_rows(&a, &buf, l.area), y, "tab {tab}: {name}");
        }
        // A counter list that shrinks (a later dispatch) clamps the cursor into it.
        dispatch_with_counters(&mut a, 3);
        assert_eq!(a.detail.pane.cursor, 2);
        assert_eq!(a.detail.pane.scroll, 0);
        dispatch_with_counters(&mut a, 15);
    }
}

fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[test]
fn occupancy_explanation_scrolls_to_its_last_line() {
    let (mut a, hl) = vadd();
    press(&mut a, &[Command::Tab(1)]);
    focus_detail(&mut a);
    let occ = a.code.emission.as_ref().map(|e| e.occupancy.clone());
    let occ = occ.unwrap().unwrap();
    let tail = words(&format!("{} · {}", occ.device, occ.basis));
    let shown = |a: &mut App| {
        let buf = render(a, &hl, W, H);
        let l = list(a, Offset::Main);
        let text: Vec<String> = (l.area.y..l.area.y + l.area.height)
            .map(|y| row_text(&buf, l.body(), y))
            .collect();
        words(&text.join(" "))
    };
    let first = shown(&mut a);
    assert!(first.starts_with("block 256:"), "{first}");
    assert!(!first.contains(&tail), "{first}");
    let steps = list(&a, Offset::Main).positions();
    assert!(steps > 1);
    for _ in 0..steps + 3 {
        press(&mut a, &[Command::Down]);
    }
    let last = shown(&mut a);
    assert!(last.ends_with(&tail), "{last}\nwant the end: {tail}");
    // Every headroom line was on screen at some scroll position.
    press(&mut a, &[Command::Home]);
    let mut seen = String::new();
    for _ in 0..steps {
        seen.push_str(&shown(&mut a));
        seen.push(' ');
        press(&mut a, &[Command::Down]);
    }
    for h in &occ.headroom {
        let start: String = words(h).chars().take(25).collect();
        assert!(seen.contains(&start), "{h}");
    }
}

#[test]
fn program_list_scrolls_to_the_last_file() {
    let mut files: Vec<_> = std::fs::read_dir(fixture(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let (mut a, hl) = app(&files, W, H);
    let area = areas(W, H, &a).list;
    assert!(files.len() > areas(W, H, &a).page(Focus::List));
    press(&mut a, &[Command::FocusPrev, Command::End]);
    assert_eq!(a.screen.focus, Focus::List);
    let buf = render(&mut a, &hl, W, H);
    let inner = Rect::new(area.x + 1, area.y + 1, area.width - 2, area.height - 2);
    let stem = files.last().unwrap().file_stem().unwrap().to_string_lossy();
    let shown: String = stem.chars().take(inner.width as usize - 3).collect();
    let y = rows_with(&buf, inner, &shown);
    assert_eq!(y.len(), 1, "{stem}");
    assert_eq!(cursor_rows(&a, &buf, inner), y);
}

#[test]
fn help_stops_at_its_last_page() {
    let (mut a, hl) = vadd();
    press(&mut a, &[Command::Help]);
    for _ in 0..30 {
        press(&mut a, &[Command::PageDown]);
    }
    let Some(Overlay::Help(max)) = a.overlay.open.clone() else {
        panic!("help closed");
    };
    assert!(max > 0);
    let screen_text = vyrescope::tui::replay::buffer_text(&render(&mut a, &hl, W, H));
    assert!(screen_text.contains("Overrides:"), "{screen_text}");
    // One step up moves at once (the offset did not run past the end).
    press(&mut a, &[Command::Up]);
    assert!(matches!(a.overlay.open, Some(Overlay::Help(s)) if s == max - 1));
}
