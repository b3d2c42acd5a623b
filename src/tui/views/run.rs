//! Run tab: last dispatches (grid, workgroup, device ms, JIT ms, parity with first
//! mismatches), a sparkline of device times, and the last tune sweep's candidates.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Sparkline, Table, Widget, Wrap};
use ratatui::Frame;

use super::tab_rows::{Offset, RowList};
use crate::tui::app::App;
use crate::tui::component::state::TabState;

/// The Run tab's own view state: the tune table scrolls apart from the history (whose
/// offset is the panel's, `app.detail.pane.scroll`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunState {
    /// First visible row of the tune table.
    pub tune_scroll: usize,
}

impl TabState for RunState {
    fn switched(&mut self) {
        self.tune_scroll = 0;
    }
}

fn dims(v: [u32; 3]) -> String {
    format!("{},{},{}", v[0], v[1], v[2])
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.4}"))
}

/// Where the Run tab's parts go; an absent part has an empty rect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunAreas {
    /// Dispatch history table (header included).
    pub history: Rect,
    /// Beside it: the sparkline and the selected dispatch's first mismatches.
    pub side: Rect,
    /// Tune table (header included), or the tune sweep's error.
    pub tune: Rect,
}

/// Splits `area`: the history above the tune table when both are there. The history takes
/// the rows it needs (at least 3: its header, a run, and a mismatch line beside them) up to
/// half; the tune table the rest.
pub fn split(app: &App, area: Rect) -> RunAreas {
    let s = &app.jobs.session;
    let (hist, tune) = match (s.runs.is_empty(), s.tune.is_some()) {
        (false, true) => {
            let want = u16::try_from(s.runs.len() + 1).unwrap_or(u16::MAX).max(3);
            let [a, b] = Layout::vertical([
                Constraint::Length(want.min(area.height / 2)),
                Constraint::Fill(1),
            ])
            .areas(area);
            (a, b)
        }
        (true, true) => (Rect::default(), area),
        (false, false) => (area, Rect::default()),
        (true, false) => (Rect::default(), Rect::default()),
    };
    let [history, side] = if hist.is_empty() {
        [Rect::default(); 2]
    } else {
        Layout::horizontal([Constraint::Fill(3), Constraint::Fill(1)]).areas(hist)
    };
    RunAreas {
        history,
        side,
        tune,
    }
}

/// The tab's lists in cursor order: the dispatch history, then the tune table's candidates
/// (numbered by [`crate::tui::component::tabs::lists`]).
pub fn row_lists(app: &App, area: Rect) -> Vec<RowList> {
    if super::pipeline_run::active(app) {
        return super::pipeline_run::list(app, area);
    }
    let a = split(app, area);
    let s = &app.jobs.session;
    let mut v = Vec::new();
    if !a.history.is_empty() {
        v.push(RowList::rows_in(
            a.history,
            true,
            s.runs.len(),
            Offset::Main,
        ));
    }
    if let Some(Ok(rows)) = &s.tune {
        v.push(RowList::rows_in(a.tune, true, rows.len(), Offset::Tune));
    }
    v
}

/// Draws dispatch history, sparkline and tune table.
pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let s = &app.jobs.session;
    let buf = frame.buffer_mut();
    if super::pipeline_run::active(app) {
        return super::pipeline_run::draw(buf, area, app);
    }
    if s.runs.is_empty() && s.tune.is_none() {
        let msg = match (&s.run_error, &app.jobs.devices.live) {
            (Some(e), _) => format!("no dispatches: {e}"),
            (None, Some(d)) => format!(
                "no dispatches yet - press r to dispatch on {} (verified against the reference interpreter), t to tune",
                d.name
            ),
            (None, None) => format!(
                "no dispatches: {} - r runs the reference interpreter here (a GPU machine dispatches and verifies; estimates use {})",
                app.jobs.devices.live_error.lines().next().unwrap_or(""),
                app.jobs.devices.label()
            ),
        };
        return super::empty_note(buf, area, t.dim, &msg);
    }
    let parts = split(app, area);
    let lists = crate::tui::component::tabs::lists(app, area);
    if let Some(list) = lists.iter().find(|l| l.offset == Offset::Main) {
        let rows: Vec<Row> = list
            .visible(app)
            .filter_map(|i| Some((i, s.runs.get(i)?)))
            .map(|(i, r)| {
                let reference = r.backend != crate::tui::gpu::GPU_BACKEND;
                let parity = match &r.parity {
                    // The interpreter's wall time is no device time: said here, not in the
                    // device column or the sparkline.
                    None if reference => Span::styled(
                        format!("interpreter (no GPU), {:.1} ms CPU", r.device_ms),
                        t.info,
                    ),
                    None => Span::styled("not checked", t.dim),
                    Some(p) if p.ok => Span::styled("ok", t.ok),
                    Some(p) => Span::styled(format!("{} mismatches", p.mismatches), t.error),
                };
                let row = Row::new(vec![
                    Line::raw(format!("{}", i + 1)),
                    Line::raw(dims(r.grid)),
                    Line::raw(dims(r.workgroup)),
                    Line::raw(if reference {
                        "-".to_string()
                    } else {
                        format!("{:.4}", r.device_ms)
                    }),
                    Line::raw(if reference {
                        "-".to_string()
                    } else {
                        format!("{:.2}", r.jit_ms)
                    }),
                    Line::from(parity),
                ]);
                row.style(list.row_style(app, i, Style::new()))
            })
            .collect();
        Table::new(
            rows,
            [
                Constraint::Length(3),
                Constraint::Length(12),
                Constraint::Length(10),
                Constraint::Length(10),
                Constraint::Length(8),
                Constraint::Fill(1),
            ],
        )
        .header(
            Row::new(vec![
                "#",
                "grid",
                "workgroup",
                "device ms",
                "JIT ms",
                "parity",
            ])
            .style(t.title),
        )
        .render(list.body(), buf);
        list.draw_scrollbar(buf, app);
        // Sparkline of device times in microseconds (it takes integers).
        let data: Vec<u64> = s
            .runs
            .iter()
            .filter(|r| r.backend == crate::tui::gpu::GPU_BACKEND)
            .map(|r| (r.device_ms * 1000.0).round() as u64)
            .collect();
        // A one-row sparkline when the side is short, so a mismatch line still fits.
        let spark_h = if parts.side.height >= 4 { 2 } else { 1 };
        let [label, spark, mism] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(spark_h),
            Constraint::Fill(1),
        ])
        .areas(parts.side);
        let spark_label = if data.is_empty() {
            "device µs: no GPU runs"
        } else {
            "device µs"
        };
        Paragraph::new(Line::styled(spark_label, t.dim)).render(label, buf);
        Sparkline::default()
            .data(&data)
            .style(t.chart)
            .render(spark, buf);
        if let Some(p) = s
            .runs
            .get(app.detail.pane.cursor)
            .and_then(|r| r.parity.as_ref())
        {
            let lines: Vec<Line> = p
                .first
                .iter()
                .map(|m| Line::styled(m.clone(), t.error))
                .collect();
            Paragraph::new(lines)
                .wrap(Wrap { trim: true })
                .render(mism, buf);
        }
    }
    match (&s.tune, lists.iter().find(|l| l.offset == Offset::Tune)) {
        (Some(Err(e)), _) => super::empty_note(buf, parts.tune, t.dim, &format!("tune sweep: {e}")),
        (Some(Ok(rows)), Some(list)) => {
            // No time in any row: the offline sweep's estimates (no GPU).
            let offline = rows.iter().all(|r| r.median_ms.is_none());
            let table: Vec<Row> = list
                .visible(app)
                .filter_map(|i| Some((i, rows.get(i)?)))
                .map(|(i, r)| {
                    // The best candidate keeps its color, also under the cursor.
                    let base = if r.note == "best" { t.ok } else { t.text };
                    Row::new(vec![
                        dims(r.workgroup),
                        opt_ms(r.median_ms),
                        r.occupancy_pct.map_or("-".into(), |o| format!("{o:.0}%")),
                        r.speedup.map_or("-".into(), |v| format!("{v:.2}x")),
                        r.note.clone(),
                    ])
                    .style(list.row_style(app, i, base))
                })
                .collect();
            Table::new(
                table,
                [
                    Constraint::Length(12),
                    Constraint::Length(10),
                    Constraint::Length(6),
                    Constraint::Length(8),
                    Constraint::Fill(1),
                ],
            )
            .header(
                Row::new(vec![
                    "tune wg",
                    if offline { "no GPU" } else { "median ms" },
                    if offline { "est occ" } else { "occ" },
                    "speedup",
                    if offline {
                        "note (estimate, nothing timed)"
                    } else {
                        "note"
                    },
                ])
                .style(t.title),
            )
            .render(list.body(), buf);
            list.draw_scrollbar(buf, app);
        }
        _ => {}
    }
}
