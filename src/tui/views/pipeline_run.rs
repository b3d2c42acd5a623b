//! Run tab for an open pipeline: every pipeline run, newest last, as bars side by side -
//! separate launches against the fused plan on a GPU (device time, median), or the
//! reference interpreter's wall time where there is no GPU - with whether the results
//! matched the reference interpreter.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use super::tab_rows::{Offset, RowList};
use crate::tui::app::App;
use crate::tui::pipeline::PipelineRun;

/// True when the Run tab shows pipeline runs (a pipeline is open).
pub fn active(app: &App) -> bool {
    app.programs
        .doc
        .as_ref()
        .is_some_and(|d| d.pipeline.is_some())
}

/// Lines each run takes in the chart.
const PER_RUN: usize = 3;

/// The tab's one list: the runs (text that scrolls).
pub fn list(app: &App, area: Rect) -> Vec<RowList> {
    let n = app.jobs.session.pipeline_runs.len();
    if n == 0 {
        return Vec::new();
    }
    vec![RowList::rows_in(area, false, n, Offset::Main)]
}

fn bar(ms: f64, max: f64, width: usize) -> String {
    let fill = if max > 0.0 {
        ((ms / max) * width as f64).round() as usize
    } else {
        0
    };
    let fill = fill.clamp(1, width.max(1));
    format!(
        "{}{}",
        "█".repeat(fill),
        "·".repeat(width.saturating_sub(fill))
    )
}

fn run_lines<'a>(app: &App, r: &'a PipelineRun, width: usize, selected: bool) -> Vec<Line<'a>> {
    let t = &app.theme;
    let head_style = if selected { t.cursor } else { t.title };
    let reference_only = r.separate_ms.is_none() && r.fused_ms.is_none();
    let mut v = vec![if reference_only {
        // The interpreter alone (no GPU): one clause, not the backend, a verdict and a note
        // that all say the same.
        Line::from(vec![
            Span::styled(format!("{}: ", r.pipeline), head_style),
            Span::styled(
                "reference interpreter only (no GPU), nothing to verify it against",
                t.dim,
            ),
        ])
    } else {
        let verdict = if r.verified {
            Span::styled("verified", t.ok)
        } else {
            Span::styled("MISMATCH", t.error)
        };
        let mut head = vec![
            Span::styled(format!("{} on {}: ", r.pipeline, r.backend), head_style),
            verdict,
        ];
        if !r.note.is_empty() {
            head.push(Span::styled(format!("; {}", r.note), t.dim));
        }
        Line::from(head)
    }];
    // Label (26 columns) and figures (about 20) beside the bars.
    let bars = width.saturating_sub(50).max(10);
    match (r.separate_ms, r.fused_ms, r.reference_ms) {
        (Some(s), Some(f), _) => {
            let max = s.max(f);
            let speedup = if f > 0.0 { s / f } else { 0.0 };
            v.push(Line::from(vec![
                Span::styled(format!("  separate ({:>2} launches) ", r.launches.0), t.dim),
                Span::styled(bar(s, max, bars), t.chart),
                Span::raw(format!(" {s:.4} ms")),
            ]));
            // The fused form is the one `--sync` chose (fixed for the session).
            let fused = app.programs.sync.fused_label();
            v.push(Line::from(vec![
                Span::styled(
                    format!("  {fused:<8} ({:>2} launches) ", r.launches.1),
                    t.dim,
                ),
                Span::styled(bar(f, max, bars), t.ok),
                Span::raw(format!(" {f:.4} ms  x{speedup:.2}")),
            ]));
        }
        (_, _, Some(ms)) => {
            v.push(Line::from(vec![
                Span::styled(format!("  reference ({} steps) ", r.launches.0), t.dim),
                Span::styled(bar(ms, ms, bars), t.chart),
                Span::raw(format!(" {ms:.2} ms wall")),
            ]));
            v.push(Line::from(Span::styled(
                "  separate vs fused device times need a GPU (r on a machine with one)",
                t.dim,
            )));
        }
        _ => {}
    }
    v
}

/// Draws the pipeline runs into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let s = &app.jobs.session;
    if s.pipeline_runs.is_empty() {
        let msg = match (&s.run_error, &app.jobs.devices.live) {
            (Some(e), _) => format!("no pipeline runs: {e}"),
            (None, Some(d)) => format!(
                "no pipeline runs yet - press r to run separate and fused forms on {} (each verified against the reference interpreter)",
                d.name
            ),
            (None, None) => "no pipeline runs yet - press r (no GPU: the reference interpreter runs the steps in order)".to_string(),
        };
        return super::empty_note(buf, area, t.dim, &msg);
    }
    // Newest last; show as many of the latest as fit, the selected one included.
    let fit = (area.height as usize / PER_RUN).max(1);
    let cursor = app.detail.pane.cursor.min(s.pipeline_runs.len() - 1);
    let first = (cursor + 1).saturating_sub(fit);
    let lines: Vec<Line> = s
        .pipeline_runs
        .iter()
        .enumerate()
        .skip(first)
        .take(fit)
        .flat_map(|(i, r)| run_lines(app, r, area.width as usize, i == cursor))
        .collect();
    Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .render(area, buf);
}
