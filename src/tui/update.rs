//! `update(&mut App, Action)`: the only place the inspector's state changes.
//!
//! Small named functions per concern (navigation, selection sync, search, tuning, worker
//! replies); none of them touch the terminal. Work that may be slow is queued in
//! `app.outbox` for the worker thread.

use ratatui::layout::Position;

use super::action::{Action, Command};
use super::analysis::{analyze, estimate_into, Document, INLINE_EMIT_MAX_STMTS};
use super::app::{
    expand_paths, App, Busy, Entry, EntryStatus, Focus, Level, Overlay, PromptKind, Tab, SM_TARGETS,
};
use super::export;
use super::layout::{areas, Areas};
use super::views::tab_rows::{self, RowList};
use super::views::{help, tabs};
use super::worker::{Job, Reply, ResKey};

/// Applies one action.
pub fn update(app: &mut App, action: Action) {
    match action {
        Action::Command(c) => command(app, c),
        Action::Input(ch) => {
            if let Some(Overlay::Prompt(_, text)) = &mut app.overlay {
                text.push(ch);
            }
        }
        Action::Backspace => {
            if let Some(Overlay::Prompt(_, text)) = &mut app.overlay {
                text.pop();
            }
        }
        Action::Resize(w, h) => {
            app.size = (w, h);
            for f in Focus::ALL {
                keep_visible(app, f);
            }
        }
        Action::Click(x, y) => click(app, x, y),
        Action::Wheel(x, y, delta) => wheel(app, x, y, delta),
        Action::Worker(r) => reply(app, r),
        Action::FileChanged => reload(app, true),
        Action::Tick => app.ticks = app.ticks.wrapping_add(1),
    }
}

fn layout(app: &App) -> Areas {
    areas(app.size.0, app.size.1, app)
}

fn info(app: &mut App, msg: impl Into<String>) {
    app.message = Some((Level::Info, msg.into()));
}

fn error(app: &mut App, msg: impl Into<String>) {
    app.message = Some((Level::Error, msg.into()));
}

fn command(app: &mut App, c: Command) {
    // An open prompt takes Enter/Escape; help closes on anything that is not navigation.
    match (&app.overlay, c) {
        (Some(Overlay::Prompt(..)), Command::Enter) => return submit_prompt(app),
        (Some(Overlay::Prompt(..)), Command::Escape) => {
            app.overlay = None;
            return;
        }
        (Some(Overlay::Prompt(..)), Command::Quit) => {
            app.quit = true;
            return;
        }
        (Some(Overlay::Prompt(..)), _) => return,
        (Some(Overlay::Help(s)), Command::Down | Command::PageDown) => {
            // Stop at the last page, so the way back up is as long as the way down.
            let max = help::max_scroll(app, app.size.0, app.size.1);
            let s = (s + if c == Command::Down { 1 } else { 10 }).min(max);
            app.overlay = Some(Overlay::Help(s));
            return;
        }
        (Some(Overlay::Help(s)), Command::Up | Command::PageUp) => {
            app.overlay = Some(Overlay::Help(s.saturating_sub(if c == Command::Up {
                1
            } else {
                10
            })));
            return;
        }
        (Some(Overlay::Help(_)), Command::Quit) => {}
        (Some(Overlay::Help(_)), _) => {
            app.overlay = None;
            return;
        }
        (None, _) => {}
    }
    match c {
        Command::Quit => app.quit = true,
        Command::Help => app.overlay = Some(Overlay::Help(0)),
        Command::FocusNext | Command::FocusPrev => cycle_focus(app, c == Command::FocusNext),
        Command::Up => move_cursor(app, -1),
        Command::Down => move_cursor(app, 1),
        Command::PageUp => {
            let p = page(app, app.focus) as isize;
            move_cursor(app, -p)
        }
        Command::PageDown => {
            let p = page(app, app.focus) as isize;
            move_cursor(app, p)
        }
        Command::Home => move_cursor(app, isize::MIN / 2),
        Command::End => move_cursor(app, isize::MAX / 2),
        Command::Left | Command::PrevTab if c == Command::PrevTab || app.focus == Focus::Detail => {
            switch_tab(app, (app.tab.index() + Tab::ALL.len() - 1) % Tab::ALL.len())
        }
        Command::Right | Command::NextTab
            if c == Command::NextTab || app.focus == Focus::Detail =>
        {
            switch_tab(app, (app.tab.index() + 1) % Tab::ALL.len())
        }
        Command::Left | Command::Right | Command::PrevTab | Command::NextTab => {}
        Command::Tab(n) => {
            if (n as usize) >= 1 && (n as usize) <= Tab::ALL.len() {
                switch_tab(app, n as usize - 1);
            }
        }
        Command::Enter => enter(app),
        Command::Escape => {
            app.overlay = None;
            app.search = None;
            app.message = None;
            app.zoom = false;
            app.expand = false;
        }
        Command::NextBlock => jump_block(app, true),
        Command::PrevBlock => jump_block(app, false),
        Command::Search => app.overlay = Some(Overlay::Prompt(PromptKind::Search, String::new())),
        Command::SearchNext => search_step(app, true, false),
        Command::SearchPrev => search_step(app, false, false),
        Command::Zoom => {
            app.zoom = !app.zoom;
            app.expand = false;
        }
        Command::Expand => {
            app.expand = !app.expand;
            app.zoom = false;
            if app.expand {
                app.focus = Focus::Detail;
            }
        }
        Command::WgHalve => tune_x(app, |x| (x / 2).max(1)),
        Command::WgDouble => tune_x(app, |x| x.saturating_mul(2)),
        Command::WgMinus => tune_x(app, |x| if x > 32 { (x - 1) / 32 * 32 } else { x }),
        Command::WgPlus => tune_x(app, |x| (x / 32 + 1) * 32),
        Command::WgPrompt => {
            let [x, y, z] = app.workgroup();
            app.overlay = Some(Overlay::Prompt(
                PromptKind::Workgroup,
                format!("{x},{y},{z}"),
            ));
        }
        Command::CycleSm => {
            let i = SM_TARGETS
                .iter()
                .position(|s| *s == app.sm)
                .map_or(0, |i| (i + 1) % SM_TARGETS.len());
            app.sm = SM_TARGETS[i];
            app.sm_pinned = true;
            info(app, format!("target sm_{}", app.sm));
            reanalyze(app);
        }
        Command::CycleDevice => cycle_device(app),
        Command::Dispatch => gpu_job(app, false),
        Command::Tune => gpu_job(app, true),
        Command::Reload => reload(app, false),
        Command::Export => export_view(app, None),
        Command::ExportTo => {
            let default = export::default_path(app)
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            app.overlay = Some(Overlay::Prompt(PromptKind::ExportPath, default));
        }
        Command::Open => app.overlay = Some(Overlay::Prompt(PromptKind::Open, String::new())),
    }
}

fn cycle_focus(app: &mut App, forward: bool) {
    let n = Focus::ALL.len();
    let i = Focus::ALL.iter().position(|f| *f == app.focus).unwrap_or(0);
    app.focus = Focus::ALL[if forward {
        (i + 1) % n
    } else {
        (i + n - 1) % n
    }];
}

fn switch_tab(app: &mut App, i: usize) {
    app.tab = Tab::ALL[i.min(Tab::ALL.len() - 1)];
    app.detail = Default::default();
    app.tune_scroll = 0;
}

/// Lines a page moves in pane `f`: its height, or in the detail panel the height of the
/// list that holds the cursor.
fn page(app: &App, f: Focus) -> usize {
    if f == Focus::Detail {
        let cur = app.detail.cursor;
        if let Some(l) = tab_rows::current(app).iter().find(|l| l.holds(cur)) {
            return l.page();
        }
    }
    layout(app).page(f)
}

/// Moves the focused pane's cursor by `delta` lines (clamped), then syncs the other pane.
fn move_cursor(app: &mut App, delta: isize) {
    let f = app.focus;
    set_cursor(app, f, app.pane(f).cursor as isize + delta);
}

/// Puts pane `f`'s cursor on `line` (clamped), keeps it visible and syncs the other pane.
fn set_cursor(app: &mut App, f: Focus, line: isize) {
    let len = app.pane_len(f);
    let cur = line.clamp(0, len.saturating_sub(1) as isize) as usize;
    app.pane_mut(f).cursor = cur;
    keep_visible(app, f);
    match f {
        Focus::Ir => sync_from_ir(app),
        Focus::Ptx => sync_from_ptx(app),
        _ => {}
    }
}

/// Scrolls pane `f` just enough to show its cursor.
fn keep_visible(app: &mut App, f: Focus) {
    if f == Focus::Detail {
        return keep_detail_visible(app);
    }
    let page = layout(app).page(f);
    let len = app.pane_len(f);
    let p = app.pane_mut(f);
    p.cursor = p.cursor.min(len.saturating_sub(1));
    if p.cursor < p.scroll {
        p.scroll = p.cursor;
    } else if p.cursor >= p.scroll + page {
        p.scroll = p.cursor + 1 - page;
    }
    p.scroll = p.scroll.min(len.saturating_sub(page));
}

/// Clamps the detail cursor to the active tab's rows and scrolls the list that holds it just
/// enough to show it (a text list scrolls to it); the other lists keep their offsets,
/// clamped to their rows.
fn keep_detail_visible(app: &mut App) {
    let lists = tab_rows::current(app);
    let total: usize = lists.iter().map(RowList::positions).sum();
    app.detail.cursor = app.detail.cursor.min(total.saturating_sub(1));
    let cur = app.detail.cursor;
    for l in &lists {
        let page = l.page();
        let max = l.max_scroll();
        let s = l.offset.get_mut(app);
        if l.holds(cur) {
            let row = cur - l.first;
            if !l.select || row < *s {
                *s = row;
            } else if row >= *s + page {
                *s = row + 1 - page;
            }
        }
        *s = (*s).min(max);
    }
}

/// Scrolls pane `f` so lines `first..=last` are in view, preferring a third from the top
/// when they are not (the eye finds them where it expects).
fn reveal(app: &mut App, f: Focus, first: usize, last: usize) {
    let page = layout(app).page(f);
    let len = app.pane_len(f);
    let p = app.pane_mut(f);
    if first < p.scroll || last >= p.scroll + page {
        p.scroll = if last - first + 1 >= page {
            first
        } else {
            first.saturating_sub(page / 3)
        };
        p.scroll = p.scroll.min(len.saturating_sub(page));
    }
}

/// IR cursor moved: the PTX cursor goes to the first line of the node's PTX and the pane
/// scrolls to show its lines.
pub fn sync_from_ir(app: &mut App) {
    let Some(node) = app.ir_node().map(str::to_string) else {
        return;
    };
    let Some(view) = app.ptx_view().cloned() else {
        return;
    };
    let ranges = view.corr.lines_of(&node);
    let (Some(first), Some(last)) = (
        ranges.iter().map(|r| r[0] as usize).min(),
        ranges.iter().map(|r| r[1] as usize).max(),
    ) else {
        return;
    };
    let (first, last) = (
        first.saturating_sub(1),
        last.saturating_sub(1).min(view.len().saturating_sub(1)),
    );
    app.ptx.cursor = first;
    reveal(app, Focus::Ptx, first, last.max(first));
}

/// PTX cursor moved: the IR cursor goes to the statement that produced the line.
pub fn sync_from_ptx(app: &mut App) {
    let Some(node) = app.ptx_node().map(str::to_string) else {
        return;
    };
    let Some(line) = app.doc.as_ref().and_then(|d| d.ir_line_of(&node)) else {
        return;
    };
    app.ir.cursor = line;
    reveal(app, Focus::Ir, line, line);
}

fn jump_block(app: &mut App, forward: bool) {
    let f = app.focus;
    let len = app.pane_len(f);
    let cur = app.pane(f).cursor;
    let key = |app: &App, i: usize| -> Option<String> {
        match f {
            Focus::Ir => {
                let node = app.doc.as_ref()?.ir.get(i)?.node.clone()?;
                let has = app
                    .ptx_view()
                    .is_some_and(|v| !v.corr.lines_of(&node).is_empty());
                has.then_some(node.to_string())
            }
            Focus::Ptx => app.ptx_view()?.corr.node_at(i).map(str::to_string),
            _ => None,
        }
    };
    if !matches!(f, Focus::Ir | Focus::Ptx) || len == 0 {
        return;
    }
    let here = key(app, cur);
    let mut i = cur;
    loop {
        if forward {
            if i + 1 >= len {
                return info(app, "no further correlated block");
            }
            i += 1;
        } else {
            if i == 0 {
                return info(app, "no earlier correlated block");
            }
            i -= 1;
        }
        let k = key(app, i);
        if k.is_some() && k != here {
            // Backwards, land on the first line of that block.
            if !forward {
                while i > 0 && key(app, i - 1) == k {
                    i -= 1;
                }
            }
            return set_cursor(app, f, i as isize);
        }
    }
}

fn smart_match(hay: &str, needle: &str) -> bool {
    if needle.chars().any(char::is_uppercase) {
        hay.contains(needle)
    } else {
        hay.to_lowercase().contains(needle)
    }
}

/// Moves to the next (or previous) match; `inclusive` also accepts the cursor line.
fn search_step(app: &mut App, forward: bool, inclusive: bool) {
    let Some((f, q)) = app.search.clone() else {
        return info(app, "no search: press / first");
    };
    let len = app.pane_len(f);
    if len == 0 {
        return;
    }
    let cur = app.pane(f).cursor;
    for k in 0..len {
        let step = if inclusive { k } else { k + 1 };
        let i = if forward {
            (cur + step) % len
        } else {
            (cur + len * 2 - step) % len
        };
        if app.pane_line(f, i).is_some_and(|l| smart_match(l, &q)) {
            app.focus = f;
            if (forward && i < cur) || (!forward && i > cur) {
                info(app, format!("search wrapped: {q}"));
            }
            return set_cursor(app, f, i as isize);
        }
    }
    error(app, format!("not found: {q}"));
}

fn submit_prompt(app: &mut App) {
    let Some(Overlay::Prompt(kind, text)) = app.overlay.take() else {
        return;
    };
    let text = text.trim().to_string();
    match kind {
        PromptKind::Search => {
            if text.is_empty() {
                app.search = None;
                return;
            }
            let f = if matches!(app.focus, Focus::Ir | Focus::Ptx) {
                app.focus
            } else {
                Focus::Ptx
            };
            app.search = Some((f, text));
            search_step(app, true, true);
        }
        PromptKind::Workgroup => match crate::shape::parse_workgroup(&text) {
            Ok(wg) => set_workgroup(app, wg),
            Err(e) => error(app, e),
        },
        PromptKind::Open => {
            let path = std::path::PathBuf::from(&text);
            if !path.exists() {
                return error(app, format!("{text}: no such file or directory"));
            }
            let new = expand_paths(&[path]);
            if new.is_empty() {
                return error(app, format!("{text}: no *.json files there"));
            }
            let first = app.entries.len();
            app.entries.extend(new.into_iter().map(|path| Entry {
                path,
                status: EntryStatus::Checked {
                    errors: 0,
                    warnings: 0,
                },
            }));
            app.list.cursor = first;
            keep_visible(app, Focus::List);
            open_selected(app);
        }
        PromptKind::ExportPath => export_view(app, Some(std::path::PathBuf::from(text))),
    }
}

fn max_threads(app: &App) -> u32 {
    app.devices
        .current()
        .map_or(1024, |d| d.max_threads_per_block.max(1))
}

fn tune_x(app: &mut App, f: impl Fn(u32) -> u32) {
    let [x, y, z] = app.workgroup();
    let limit = (max_threads(app) / (y * z).max(1)).max(1);
    let nx = f(x).clamp(1, limit);
    if nx == x {
        return info(
            app,
            format!("workgroup x stays {x} (limit {limit} threads along x)"),
        );
    }
    set_workgroup(app, [nx, y, z]);
}

fn set_workgroup(app: &mut App, wg: [u32; 3]) {
    let threads = wg.iter().map(|v| *v as u64).product::<u64>();
    let max = max_threads(app) as u64;
    if threads > max {
        return error(
            app,
            format!("workgroup {wg:?} has {threads} threads; the device allows {max} per block"),
        );
    }
    app.workgroup = Some(wg);
    info(
        app,
        format!(
            "workgroup {},{},{} ({threads} threads)",
            wg[0], wg[1], wg[2]
        ),
    );
    reanalyze(app);
}

fn cycle_device(app: &mut App) {
    let n = app.devices.profiles.len();
    if n == 0 {
        return error(
            app,
            "no device profiles in this build; start with --device FILE",
        );
    }
    if app.devices.live.is_some() {
        // A live device shadows profiles; `d` then switches to offline estimates.
        app.devices.live = None;
        app.devices.live_error = "offline by choice (d)".into();
        app.devices.profile = 0;
    } else {
        app.devices.profile = (app.devices.profile + 1) % n;
    }
    if let Some(d) = app.devices.current() {
        app.sm = d.cc_major * 10 + d.cc_minor;
        if !SM_TARGETS.contains(&app.sm) {
            app.sm = *SM_TARGETS
                .iter()
                .rev()
                .find(|s| **s <= app.sm)
                .unwrap_or(&90);
        }
    }
    let label = app.devices.label();
    info(app, format!("device: {label}"));
    reanalyze(app);
}

fn queue(app: &mut App, job: Job) {
    if app.busy.is_none() {
        app.busy = Some(Busy {
            label: job.label(),
            done: 0,
            total: 0,
        });
    }
    app.pending += 1;
    app.outbox.push(job);
}

fn gpu_job(app: &mut App, tune: bool) {
    let Some(doc) = app.doc.as_ref() else {
        return error(app, "no program open");
    };
    if doc.has_errors() {
        return error(app, "the program has validation errors (see Diagnostics)");
    }
    let (program, base_dir, opts) = (doc.program.clone(), doc.base_dir(), app.emit_options());
    // Re-running from the Run tab keeps its cursor and scroll offsets.
    if app.tab != Tab::Run {
        switch_tab(app, Tab::Run.index());
    }
    let job = if tune {
        Job::Tune {
            program,
            base_dir,
            opts,
        }
    } else {
        Job::Dispatch {
            program,
            base_dir,
            opts,
        }
    };
    queue(app, job);
}

/// Re-emits, re-maps and re-estimates for the current options: inline for small programs
/// (the result is visible at once), on the worker for large ones.
pub fn reanalyze(app: &mut App) {
    app.generation += 1;
    let Some(doc) = app.doc.as_ref() else {
        app.emission = None;
        return;
    };
    let opts = app.emit_options();
    if doc.stmt_count <= INLINE_EMIT_MAX_STMTS {
        app.emission = Some(analyze(&doc.program, &opts));
        after_emission(app);
    } else {
        app.emission = None;
        let job = Job::Analyze {
            generation: app.generation,
            program: doc.program.clone(),
            opts,
        };
        queue(app, job);
    }
}

/// Re-estimates occupancy and diagnostics for the current device and the kernel's
/// resources; asks the worker to measure the resources when they are not known yet.
pub fn refresh_estimate(app: &mut App) {
    let (Some(doc), Some(em)) = (app.doc.as_ref(), app.emission.as_ref()) else {
        return;
    };
    let key: ResKey = (doc.id, em.opts.clone());
    let program = doc.program.clone();
    let ptx = em.ptx.clone();
    let res = match (&app.fixed_resources, app.resources.get(&key)) {
        (Some(r), _) => Some(Ok((r.clone(), "given resources".to_string()))),
        (None, Some(r)) => Some(r.clone()),
        (None, None) => None,
    };
    if res.is_none() {
        if let Ok(ptx) = ptx {
            let job = Job::Resources {
                key: key.clone(),
                ptx,
            };
            // Mark as requested so a burst of redraws does not queue it twice.
            app.resources.insert(
                key,
                Err("measuring kernel resources (live driver or ptxas)...".into()),
            );
            queue(app, job);
        }
    }
    let device = app.devices.current().cloned();
    if let Some(em) = app.emission.as_mut() {
        estimate_into(em, &program, device.as_ref(), res.as_ref());
    }
}

fn after_emission(app: &mut App) {
    refresh_estimate(app);
    keep_visible(app, Focus::Ptx);
    keep_visible(app, Focus::Detail);
    if app.focus == Focus::Ptx {
        sync_from_ptx(app);
    } else {
        sync_from_ir(app);
    }
}

/// First actions of a session: open the first program and probe the device (on the worker).
pub fn start(app: &mut App) {
    open_selected(app);
    queue(app, Job::Probe);
}

/// Opens the program under the list cursor (resets the code panes).
pub fn open_selected(app: &mut App) {
    let i = app.list.cursor;
    let Some(entry) = app.entries.get(i) else {
        return;
    };
    match Document::load(&entry.path) {
        Ok(doc) => {
            app.entries[i].status = EntryStatus::of(&doc.validation);
            app.doc = Some(doc);
            app.doc_error = None;
        }
        Err(e) => {
            app.entries[i].status = EntryStatus::Failed(e.clone());
            app.doc = None;
            app.doc_error = Some(e);
        }
    }
    app.current = Some(i);
    app.workgroup = None;
    app.ir = Default::default();
    app.ptx = Default::default();
    app.detail = Default::default();
    app.search = None;
    // Start on the first statement, so the PTX correlation shows from the first frame.
    app.ir.cursor = app
        .doc
        .as_ref()
        .and_then(|d| d.ir.iter().position(|l| l.node.is_some()))
        .unwrap_or(0);
    reanalyze(app);
    keep_visible(app, Focus::Ir);
}

/// Reloads the open program from disk keeping cursors, tab and tuning.
fn reload(app: &mut App, from_watch: bool) {
    let Some(i) = app.current else {
        return error(app, "no program open");
    };
    let path = app.entries[i].path.clone();
    match Document::load(&path) {
        Ok(doc) => {
            app.entries[i].status = EntryStatus::of(&doc.validation);
            app.doc = Some(doc);
            app.doc_error = None;
            let (ir, ptx) = (app.ir, app.ptx);
            reanalyze(app);
            // Keep the reader's place: same lines, clamped to the new lengths.
            app.ir = ir;
            app.ptx = ptx;
            for f in [Focus::Ir, Focus::Ptx] {
                keep_visible(app, f);
            }
            info(
                app,
                format!(
                    "{} {}",
                    if from_watch {
                        "changed on disk, reloaded"
                    } else {
                        "reloaded"
                    },
                    path.display()
                ),
            );
        }
        Err(e) => {
            app.entries[i].status = EntryStatus::Failed(e.clone());
            // Keep showing the last good version; the error says what to fix.
            error(app, e.lines().next().unwrap_or("reload failed").to_string());
        }
    }
}

fn enter(app: &mut App) {
    match app.focus {
        Focus::List => open_selected(app),
        Focus::Detail if app.tab == Tab::Diagnostics => {
            let node = app
                .diagnostics()
                .get(app.detail.cursor)
                .and_then(|d| d.node.clone());
            let line = node
                .as_deref()
                .and_then(|n| app.doc.as_ref()?.ir_line_of(n));
            match (node, line) {
                (Some(_), Some(l)) => {
                    app.focus = Focus::Ir;
                    app.zoom = false;
                    app.expand = false;
                    set_cursor(app, Focus::Ir, l as isize);
                }
                (Some(n), None) => error(app, format!("node {n} is not in the IR text")),
                (None, _) => info(app, "this diagnostic is about the whole program"),
            }
        }
        _ => {}
    }
}

fn export_view(app: &mut App, to: Option<std::path::PathBuf>) {
    match export::export(app, to) {
        Ok(p) => info(app, format!("exported {}", p.display())),
        Err(e) => error(app, e.to_string()),
    }
}

fn click(app: &mut App, x: u16, y: u16) {
    if app.overlay.is_some() {
        app.overlay = None;
        return;
    }
    let a = layout(app);
    let Some(f) = a.hit(x, y) else { return };
    app.focus = f;
    let r = a.of(f);
    if f == Focus::Detail {
        if y == r.y + 1 {
            if let Some(i) = tabs::tab_at(r, x) {
                switch_tab(app, i);
            }
            return;
        }
        // A click on a list's row selects it (headers and text are not rows).
        let hit = tab_rows::current(app).into_iter().find_map(|l| {
            let rows = l.rows();
            if !l.select || !rows.contains(Position::new(x, y)) {
                return None;
            }
            let row = l.scroll(app) + usize::from(y - rows.y);
            (row < l.len).then_some(l.first + row)
        });
        if let Some(i) = hit {
            set_cursor(app, f, i as isize);
        }
        return;
    }
    if y > r.y && y + 1 < r.y + r.height {
        let line = app.pane(f).scroll + (y - r.y - 1) as usize;
        if line < app.pane_len(f) {
            set_cursor(app, f, line as isize);
            if f == Focus::List {
                open_selected(app);
            }
        }
    }
}

fn wheel(app: &mut App, x: u16, y: u16, delta: i32) {
    let Some(f) = layout(app).hit(x, y) else {
        return;
    };
    app.focus = f;
    move_cursor(app, delta as isize * 3);
}

fn reply(app: &mut App, r: Reply) {
    match r {
        Reply::Started(label, total) => {
            app.busy = Some(Busy {
                label,
                done: 0,
                total,
            });
            return;
        }
        Reply::Progress(done, total) => {
            if let Some(b) = &mut app.busy {
                b.done = done;
                b.total = total;
            }
            return;
        }
        Reply::Analyzed(generation, e) => {
            if generation == app.generation {
                app.emission = Some(*e);
                after_emission(app);
            }
        }
        Reply::Resources(key, r) => {
            app.resources.insert(key, r);
            refresh_estimate(app);
        }
        Reply::Probed(Ok(caps)) => {
            info(app, format!("live device: {}", caps.name));
            if !app.sm_pinned {
                app.sm = (caps.cc_major * 10 + caps.cc_minor).min(90);
            }
            app.devices.live = Some(caps);
            reanalyze(app);
        }
        Reply::Probed(Err(e)) => {
            // The live tabs say why they are empty: the probe's own one-line reason.
            let first = e.lines().next().unwrap_or("").to_string();
            app.session.cache = Err(format!("{first} - press r on a machine with a GPU"));
            app.session.telemetry = app.session.cache.clone();
            app.devices.live_error = e;
        }
        Reply::Dispatched(r, stats) => {
            match r {
                Ok(run) => {
                    let ok = run.parity.as_ref().is_none_or(|p| p.ok);
                    info(
                        app,
                        format!(
                            "dispatched: {:.3} ms, parity {}",
                            run.device_ms,
                            if ok { "ok" } else { "FAILED" }
                        ),
                    );
                    app.session.runs.push(run);
                    app.session.run_error = None;
                    if app.tab == Tab::Run {
                        // Select the new dispatch (the history's rows come first).
                        app.detail.cursor = app.session.runs.len() - 1;
                    }
                }
                Err(e) => {
                    error(
                        app,
                        e.lines().next().unwrap_or("dispatch failed").to_string(),
                    );
                    app.session.run_error = Some(e);
                }
            }
            app.session.cache = stats.cache;
            app.session.telemetry = stats.telemetry;
            keep_visible(app, Focus::Detail);
        }
        Reply::Tuned(r, stats) => {
            if let Err(e) = &r {
                error(app, e.lines().next().unwrap_or("tune failed").to_string());
            } else {
                info(app, "tune sweep done");
            }
            app.session.tune = Some(r);
            app.session.cache = stats.cache;
            app.session.telemetry = stats.telemetry;
            // A re-run keeps the cursor and the tables' offsets (clamped to the new rows).
            keep_visible(app, Focus::Detail);
        }
    }
    // A final reply: one job fewer in flight.
    app.pending = app.pending.saturating_sub(1);
    if app.pending == 0 {
        app.busy = None;
    }
}
