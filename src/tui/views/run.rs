//! Run tab: last dispatches (grid, workgroup, device ms, JIT ms, parity with first
//! mismatches), a sparkline of device times, and the last tune sweep's candidates.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Sparkline, Table, Widget, Wrap};
use ratatui::Frame;

use crate::tui::app::{App, Focus};

fn dims(v: [u32; 3]) -> String {
    format!("{},{},{}", v[0], v[1], v[2])
}

fn opt_ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.4}"))
}

/// Draws dispatch history, sparkline and tune table.
pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let s = &app.session;
    let buf = frame.buffer_mut();
    if s.runs.is_empty() && s.tune.is_none() {
        let msg = match (&s.run_error, &app.devices.live) {
            (Some(e), _) => format!("no dispatches: {e}"),
            (None, Some(d)) => format!(
                "no dispatches yet - press r to dispatch on {} (verified against the reference interpreter), t to tune",
                d.name
            ),
            (None, None) => format!(
                "no dispatches: {} - press r on a machine with a GPU (estimates use {})",
                app.devices.live_error.lines().next().unwrap_or(""),
                app.devices.label()
            ),
        };
        return super::empty_note(buf, area, t.dim, &msg);
    }
    let (hist, tune) = if s.tune.is_some() && !s.runs.is_empty() {
        let [a, b] =
            Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
        (a, Some(b))
    } else if s.tune.is_some() {
        (Rect::default(), Some(area))
    } else {
        (area, None)
    };
    if !hist.is_empty() {
        let [table_area, side] =
            Layout::horizontal([Constraint::Fill(3), Constraint::Fill(1)]).areas(hist);
        let rows: Vec<Row> = s
            .runs
            .iter()
            .enumerate()
            .skip(app.detail.scroll)
            .map(|(i, r)| {
                let parity = match &r.parity {
                    None => Span::styled("not checked", t.dim),
                    Some(p) if p.ok => Span::styled("ok", t.ok),
                    Some(p) => Span::styled(format!("{} mismatches", p.mismatches), t.error),
                };
                let row = Row::new(vec![
                    Line::raw(format!("{}", i + 1)),
                    Line::raw(dims(r.grid)),
                    Line::raw(dims(r.workgroup)),
                    Line::raw(format!("{:.4}", r.device_ms)),
                    Line::raw(format!("{:.2}", r.jit_ms)),
                    Line::from(parity),
                ]);
                if i == app.detail.cursor && app.focus == Focus::Detail {
                    row.style(t.cursor)
                } else {
                    row
                }
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
        .render(table_area, buf);
        // Sparkline of device times in microseconds (it takes integers).
        let data: Vec<u64> = s
            .runs
            .iter()
            .map(|r| (r.device_ms * 1000.0).round() as u64)
            .collect();
        let [label, spark, mism] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(2),
            Constraint::Fill(1),
        ])
        .areas(side);
        Paragraph::new(Line::styled("device µs", t.dim)).render(label, buf);
        Sparkline::default()
            .data(&data)
            .style(t.chart)
            .render(spark, buf);
        if let Some(p) = s
            .runs
            .get(app.detail.cursor)
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
    if let (Some(area), Some(tune)) = (tune, &s.tune) {
        match tune {
            Err(e) => super::empty_note(buf, area, t.dim, &format!("tune sweep: {e}")),
            Ok(rows) => {
                let rows: Vec<Row> = rows
                    .iter()
                    .map(|r| {
                        Row::new(vec![
                            dims(r.workgroup),
                            opt_ms(r.median_ms),
                            r.occupancy_pct.map_or("-".into(), |o| format!("{o:.0}%")),
                            r.speedup.map_or("-".into(), |v| format!("{v:.2}x")),
                            r.note.clone(),
                        ])
                        .style(if r.note == "best" {
                            t.ok
                        } else {
                            t.text
                        })
                    })
                    .collect();
                Table::new(
                    rows,
                    [
                        Constraint::Length(12),
                        Constraint::Length(10),
                        Constraint::Length(6),
                        Constraint::Length(8),
                        Constraint::Fill(1),
                    ],
                )
                .header(
                    Row::new(vec!["tune wg", "median ms", "occ", "speedup", "note"]).style(t.title),
                )
                .render(area, buf);
            }
        }
    }
}
