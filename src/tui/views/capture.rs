//! Capture tab: the open capture's summary (dispatches, distinct Programs, time by
//! Program), the open dispatch's replay verdict, and the dispatch list (index, Program and
//! op, backend, workgroup and grid, bytes in and out, host and device time) in the order `S`
//! picks. Enter opens the dispatch under the cursor.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};
use serde_json::{json, Value};

use super::tab_rows::{Offset, RowList};
use crate::tui::action::{Cmd, Command};
use crate::tui::app::App;
use crate::tui::capture::{bytes_text, dims, time_text, CaptureView, Opens, ReplayState, Row};

/// Programs listed under "time by Program" (the rest are summed in one line).
const TOP_PROGRAMS: usize = 5;

/// The replay of the open dispatch, when a capture is open and a dispatch is.
fn open_row(app: &App) -> Option<&Row> {
    app.capture.as_ref()?.row_of(app.programs.current_path()?)
}

/// What a row's last column says: why it does not open as our Program (a refusal's codes),
/// then its replay's verdict; and whether that is bad news.
fn status(cap: &CaptureView, r: &Row) -> (String, bool) {
    let mut parts = Vec::new();
    let mut bad = false;
    if let Some(e) = &r.call_error {
        parts.push(format!("call failed ({e})"));
        bad = true;
    }
    match &r.opens {
        Opens::Yes => {}
        Opens::Refused { codes, .. } => parts.push(format!("refused {}", codes.join(","))),
        Opens::No(why) => {
            parts.push(why.lines().next().unwrap_or("").to_string());
            bad = true;
        }
    }
    match cap.replays.get(&r.index) {
        Some(ReplayState::Done(v)) => {
            parts.push(v.line.clone());
            bad |= !v.passed;
        }
        Some(ReplayState::Running) => parts.push("replaying...".into()),
        Some(ReplayState::Failed(e)) => {
            parts.push(format!("replay failed: {}", e.lines().next().unwrap_or("")));
            bad = true;
        }
        None => {}
    }
    (parts.join(" · "), bad)
}

/// The summary above the list.
fn summary(app: &App, cap: &CaptureView) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut v = vec![Line::from(vec![
        Span::styled("capture ", t.title),
        Span::raw(format!(
            "{} · recorded on {} · {} dispatches · {} distinct Programs · host time {}",
            cap.dir.display(),
            cap.recorded_on,
            cap.rows.len(),
            cap.distinct_programs,
            time_text(cap.host_total())
        )),
    ])];
    if cap.state != "full" {
        v.push(Line::styled(format!("state: {}", cap.state), t.warning));
    }
    for u in &cap.unreadable {
        let (m, f) = u
            .message
            .split_once("\n  Fix: ")
            .unwrap_or((&u.message, ""));
        v.push(Line::styled(format!("record {}: {m}", u.index), t.error));
        if !f.is_empty() {
            v.push(Line::styled(format!("  Fix: {f}"), t.error));
        }
    }
    v.extend(verdict_lines(app, cap));
    v.push(Line::styled("time by Program", t.title));
    for p in cap.by_program.iter().take(TOP_PROGRAMS) {
        v.push(Line::raw(format!(
            "  {:<24} {:>4}x  host {:>10}  device {:>10}  {}",
            p.name,
            p.dispatches,
            time_text(p.host_ns),
            p.device_ns.map_or("-".to_string(), time_text),
            p.op.as_deref().unwrap_or("")
        )));
    }
    if cap.by_program.len() > TOP_PROGRAMS {
        v.push(Line::styled(
            format!("  ... {} more", cap.by_program.len() - TOP_PROGRAMS),
            t.dim,
        ));
    }
    v
}

/// The open dispatch's replay, or how to start one.
fn verdict_lines(app: &App, cap: &CaptureView) -> Vec<Line<'static>> {
    let t = &app.theme;
    let Some(r) = open_row(app) else {
        return vec![Line::styled(
            "open a dispatch (Enter), then r replays it against the captured outputs",
            t.dim,
        )];
    };
    let head = format!("dispatch #{} ({}): ", r.index, r.name);
    match cap.replays.get(&r.index) {
        None => vec![Line::from(vec![
            Span::styled(head, t.key),
            Span::styled(
                "r replays it and compares every output with the captured bytes",
                t.dim,
            ),
        ])],
        Some(ReplayState::Running) => vec![Line::from(vec![
            Span::styled(head, t.key),
            Span::styled("replaying...", t.dim),
        ])],
        Some(ReplayState::Failed(e)) => vec![Line::from(vec![
            Span::styled(head, t.key),
            Span::styled(format!("replay failed: {e}"), t.error),
        ])],
        Some(ReplayState::Done(d)) => {
            let mut v = vec![Line::from(vec![
                Span::styled(head, t.key),
                Span::raw(format!(
                    "replayed on {}: ",
                    d.replayed_on.as_deref().unwrap_or("-")
                )),
                Span::styled(d.line.clone(), if d.passed { t.ok } else { t.error }),
            ])];
            if !d.detail.is_empty() {
                v.push(Line::styled(format!("  {}", d.detail), t.dim));
            }
            v
        }
    }
}

/// The dispatch list's header.
fn header() -> String {
    format!(
        "{:>5}  {:<20} {:<30} {:<20} {:<10} {:<12} {:>9} {:>9} {:>9} {:>9}  {}",
        "#", "Program", "op", "backend", "workgroup", "grid", "in", "out", "host", "device", ""
    )
}

fn row_text(cap: &CaptureView, r: &Row) -> (String, bool) {
    let (st, bad) = status(cap, r);
    let text = format!(
        "{:>5}  {:<20} {:<30} {:<20} {:<10} {:<12} {:>9} {:>9} {:>9} {:>9}  {}",
        r.index,
        r.name,
        r.op.as_deref().unwrap_or("-"),
        r.backend,
        dims(r.workgroup),
        r.grid.map_or("auto".to_string(), dims),
        bytes_text(r.bytes_in),
        bytes_text(r.bytes_out),
        time_text(r.host_ns),
        r.device_ns.map_or("-".to_string(), time_text),
        st
    );
    (crate::util::terminal_safe(&text).to_string(), bad)
}

/// The dispatch list in `area` (below the summary), when a capture is open.
pub fn list(app: &App, area: Rect) -> Option<RowList> {
    let cap = app.capture.as_ref()?;
    let top = (summary(app, cap).len() as u16).min(area.height / 2);
    let at = Rect::new(
        area.x,
        area.y + top,
        area.width,
        area.height.saturating_sub(top),
    );
    Some(RowList::rows_in(at, true, cap.rows.len(), Offset::Main))
}

/// Draws the summary and the dispatch list.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let Some(cap) = app.capture.as_ref() else {
        return super::empty_note(buf, area, t.dim, "no capture open");
    };
    let Some(list) = list(app, area) else {
        return;
    };
    let top = Rect::new(area.x, area.y, area.width, list.area.y - area.y);
    Paragraph::new(summary(app, cap)).render(top, buf);
    let head_at = Rect::new(list.area.x, list.area.y, list.area.width, 1);
    Paragraph::new(Line::styled(
        format!(
            "{} · sorted by {} ({})",
            header(),
            cap.sort.label(),
            app.keymap.key_text(Command::CaptureSort)
        ),
        t.title,
    ))
    .render(head_at, buf);
    let rows = cap.sorted();
    let open = app.programs.current_path();
    let lines: Vec<Line> = list
        .visible(app)
        .filter_map(|i| {
            let r = rows.get(i)?;
            let (text, bad) = row_text(cap, r);
            let mark = if Some(&r.path) == open { "▸" } else { " " };
            let base = if bad { t.error } else { Style::new() };
            let line = Line::from(vec![Span::raw(mark), Span::raw(text)]);
            Some(line.style(list.row_style(app, i, base)))
        })
        .collect();
    let rows_at = Rect {
        width: list.body().width,
        ..list.rows()
    };
    Paragraph::new(lines).render(rows_at, buf);
    list.draw_scrollbar(buf, app);
}

/// Enter on the tab: opens the dispatch under the cursor (false: nothing there).
pub fn open_under_cursor(app: &mut App, out: &mut Vec<Cmd>) -> bool {
    let Some(path) = app.capture.as_ref().and_then(|c| {
        c.sorted()
            .get(app.detail.pane.cursor)
            .map(|r| r.path.clone())
    }) else {
        return false;
    };
    let Some(i) = app.programs.entries.iter().position(|e| e.path == path) else {
        return false;
    };
    app.panes.list.cursor = i;
    crate::tui::update::program::open_selected(app, out);
    true
}

/// What `x` exports on the tab: the summary and every row.
pub fn data(app: &App) -> Value {
    let Some(cap) = app.capture.as_ref() else {
        return Value::Null;
    };
    let rows: Vec<Value> = cap
        .sorted()
        .iter()
        .map(|r| {
            let (st, _) = status(cap, r);
            json!({
                "index": r.index, "call": r.call, "program": r.name, "op": r.op,
                "backend": r.backend, "workgroup": r.workgroup, "grid": r.grid,
                "bytes_in": r.bytes_in, "bytes_out": r.bytes_out,
                "host_ns": r.host_ns, "device_ns": r.device_ns,
                "refused": match &r.opens { Opens::Refused { codes, .. } => json!(codes), _ => Value::Null },
                "status": st,
            })
        })
        .collect();
    let by: Vec<Value> = cap
        .by_program
        .iter()
        .map(|p| json!({"program": p.name, "op": p.op, "dispatches": p.dispatches, "host_ns": p.host_ns, "device_ns": p.device_ns}))
        .collect();
    json!({
        "capture": cap.dir.display().to_string(),
        "recorded_on": cap.recorded_on,
        "state": cap.state,
        "dispatches": cap.rows.len(),
        "distinct_programs": cap.distinct_programs,
        "time_by_program": by,
        "rows": rows,
        "unreadable": cap.unreadable.iter().map(|u| json!({"index": u.index, "error": u.message})).collect::<Vec<_>>(),
    })
}

/// The help overlay's lines about the tab's keys (none while no capture is open).
pub fn help(app: &App) -> Vec<Line<'static>> {
    if app.capture.is_none() {
        return Vec::new();
    }
    let k = |c: Command| app.keymap.key_text(c);
    vec![
        Line::raw(""),
        Line::styled("Capture tab (a capture folder open)".to_string(), app.theme.title),
        Line::raw(format!(
            "  Enter opens the dispatch under the cursor as a Program (every view works on it); {} replays the open dispatch and compares its outputs with the captured bytes; {} sorts by call order, host time, device time",
            k(Command::Dispatch),
            k(Command::CaptureSort)
        )),
    ]
}
