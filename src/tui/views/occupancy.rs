//! Occupancy tab: occupancy versus block size (the current size marked), the limiter and the
//! headroom of the other resources.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Widget};
use ratatui::Frame;

use super::tab_rows::RowList;
use super::wrap::wrap;
use crate::tui::app::App;

/// Draws the chart and the explanation beside it.
pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let t = &app.theme;
    let buf = frame.buffer_mut();
    let occ = match app.code.emission.as_ref().map(|e| &e.occupancy) {
        Some(Ok(o)) => o,
        Some(Err(e)) => {
            let wg = app.workgroup();
            let msg = format!(
                "no occupancy estimate: {e}. Block {} threads ({},{},{}); device {}.",
                wg.iter().product::<u32>(),
                wg[0],
                wg[1],
                wg[2],
                app.jobs.devices.label()
            );
            return super::empty_note(buf, area, t.dim, &msg);
        }
        None => return super::empty_note(buf, area, t.dim, "no program open"),
    };
    let [chart_area, text_area] = split(area);
    let points: Vec<(f64, f64)> = occ
        .rows
        .iter()
        .map(|r| (r.block_size as f64, r.occupancy_pct))
        .collect();
    let marker: Vec<(f64, f64)> = occ
        .current_row
        .iter()
        .map(|r| (r.block_size as f64, r.occupancy_pct))
        .collect();
    let max_x = occ
        .rows
        .iter()
        .map(|r| r.block_size)
        .max()
        .unwrap_or(1024)
        .max(32) as f64;
    let chart = Chart::new(vec![
        Dataset::default()
            .name("occupancy %")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(t.chart)
            .data(&points),
        Dataset::default()
            .name(format!("block {}", occ.current))
            .marker(Marker::Block)
            .graph_type(GraphType::Scatter)
            .style(t.marker)
            .data(&marker),
    ])
    .x_axis(Axis::default().style(t.dim).bounds([0.0, max_x]).labels([
        "0".to_string(),
        format!("{}", max_x as u32 / 2),
        format!("{}", max_x as u32),
    ]))
    .legend_position(None)
    .y_axis(
        Axis::default()
            .style(t.dim)
            .bounds([0.0, 100.0])
            .labels(["0", "50", "100"]),
    );
    chart.render(chart_area, buf);
    let lines = text(app, text_area);
    let list = RowList::text_in(text_area, lines.len());
    let shown: Vec<Line> = lines.into_iter().skip(list.scroll(app)).collect();
    Paragraph::new(shown).render(list.body(), buf);
    list.draw_scrollbar(buf, app);
}

/// The chart's area and the explanation's beside it, two columns apart (the x axis' last
/// label ends at the chart's right edge and must not run into the text).
pub fn split(area: Rect) -> [Rect; 2] {
    let [chart, _, text] = Layout::horizontal([
        Constraint::Percentage(60),
        Constraint::Length(2),
        Constraint::Fill(1),
    ])
    .areas(area);
    [chart, text]
}

/// The explanation (current size, limiter, headroom, device and basis) wrapped for `area`;
/// empty without an estimate.
pub fn text(app: &App, area: Rect) -> Vec<Line<'static>> {
    let t = &app.theme;
    let Some(Ok(occ)) = app.code.emission.as_ref().map(|e| &e.occupancy) else {
        return Vec::new();
    };
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("block {}: ", occ.current), t.title),
        Span::raw(match &occ.current_row {
            Some(r) => format!(
                "{:.1}% ({} block{}/SM, {} warp{})",
                r.occupancy_pct,
                r.blocks_per_sm,
                if r.blocks_per_sm == 1 { "" } else { "s" },
                r.active_warps_per_sm,
                if r.active_warps_per_sm == 1 { "" } else { "s" },
            ),
            None => "not launchable".into(),
        }),
    ])];
    if let Some(r) = &occ.current_row {
        lines.push(Line::from(vec![
            Span::styled("limiter: ", t.key),
            Span::raw(r.limiter.clone()),
        ]));
    }
    for h in &occ.headroom {
        lines.push(Line::styled(format!("· {h}"), t.text));
    }
    lines.push(Line::styled(
        format!("{} · {}", occ.device, occ.basis),
        t.dim,
    ));
    // When the text does not fit, the scroll bar takes the last column.
    let full = wrap(&lines, area.width as usize);
    if full.len() <= area.height as usize {
        full
    } else {
        wrap(&lines, (area.width as usize).saturating_sub(1))
    }
}

/// The explanation as a text list the detail cursor scrolls, when there is an estimate.
pub fn text_list(app: &App, area: Rect) -> Option<RowList> {
    let [_, text_area] = split(area);
    let n = text(app, text_area).len();
    (n > 0).then(|| RowList::text_in(text_area, n))
}
