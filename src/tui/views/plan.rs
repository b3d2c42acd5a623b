//! Plan tab (pipelines only): the megakernel plan as a wave diagram. One row of boxes per
//! fused group (a box per step, waves left to right, the barrier kind between waves), colour
//! per group, the selected boundary's barrier with its reason, then fusion breaks,
//! co-residency and shared memory.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};

use crate::megakernel::plan::{GroupKind, Plan};
use crate::megakernel::DepKind;
use crate::tui::app::App;

use super::tab_rows::{Offset, RowList};

/// One boundary of the plan: between two waves of a group, or between two groups (a new
/// launch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boundary {
    /// Group it is in (the earlier group for a launch boundary).
    pub group: usize,
    /// Step after which it sits.
    pub after_step: usize,
    /// `none`, `workgroup`, `GRID` or `launch`.
    pub kind: String,
    /// Why.
    pub reason: String,
    /// The dataflow label and waits, worded as `plan` prints them (empty between launches).
    pub dataflow: String,
}

/// The plan's boundaries in execution order (the tab's selectable rows).
pub fn boundaries(plan: &Plan) -> Vec<Boundary> {
    let mut v = Vec::new();
    for (g, group) in plan.groups.iter().enumerate() {
        for (i, b) in group.barriers.iter().enumerate() {
            v.push(Boundary {
                group: g,
                after_step: b.after_step,
                kind: kind_name(b.kind).into(),
                reason: b.reason.clone(),
                dataflow: group
                    .dataflow
                    .boundaries
                    .get(i)
                    .map_or_else(String::new, |d| d.describe()),
            });
        }
        if let (Some(next), Some(&last)) = (plan.groups.get(g + 1), group.steps.last()) {
            let first = next.steps.first().copied().unwrap_or(last + 1);
            let reason = plan
                .fusion_breaks
                .iter()
                .find(|f| f.step == first)
                .map_or_else(|| "separate launch".to_string(), |f| f.reason.clone());
            v.push(Boundary {
                group: g,
                after_step: last,
                kind: "launch".into(),
                reason,
                dataflow: String::new(),
            });
        }
    }
    v
}

fn kind_name(k: DepKind) -> &'static str {
    match k {
        // `invocation` needs no barrier: program order of one thread suffices.
        DepKind::None | DepKind::Invocation => "none",
        DepKind::Workgroup => "workgroup",
        DepKind::Grid => "GRID",
    }
}

fn plan_of(app: &App) -> Option<Result<&Plan, &str>> {
    let pv = app.programs.doc.as_ref()?.pipeline.as_ref()?;
    Some(pv.plan.as_deref().map_err(String::as_str))
}

/// The tab's one list: the boundaries (the cursor selects one).
pub fn list(app: &App, area: Rect) -> Option<RowList> {
    let plan = plan_of(app)?.ok()?;
    Some(RowList::rows_in(
        area,
        false,
        boundaries(plan).len(),
        Offset::Main,
    ))
}

/// Draws the tab into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let plan = match plan_of(app) {
        None => {
            return super::empty_note(
                buf,
                area,
                t.dim,
                "no pipeline open - plans are for pipeline files (marked ⇶ in the list)",
            )
        }
        Some(Err(e)) => return super::empty_note(buf, area, t.error, e),
        Some(Ok(p)) => p,
    };
    let step = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .map_or(0, |p| p.step);
    let names: Vec<String> = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .map(|p| {
            p.file
                .pipeline
                .steps
                .iter()
                .map(|s| s.program.name.clone())
                .collect()
        })
        .unwrap_or_default();
    let colours = [t.ok, t.info, t.warning, t.key, t.title];
    let bounds = boundaries(plan);
    let selected = bounds.get(app.detail.pane.cursor);
    let mut lines = vec![Line::from(vec![
        Span::styled(format!("{} ", plan.pipeline), t.title),
        Span::styled(
            format!(
                "on {}: {} group{}, {} launch{}, {} grid barrier{}",
                plan.device,
                plan.groups.len(),
                plural(plan.groups.len()),
                plan.launches,
                if plan.launches == 1 { "" } else { "es" },
                plan.grid_barriers,
                plural(plan.grid_barriers)
            ),
            t.text,
        ),
    ])];
    for (g, group) in plan.groups.iter().enumerate() {
        let colour = colours[g % colours.len()];
        lines.push(Line::from(Span::styled(
            format!(
                "group {g}: {} wg {}x{}x{}, {} regs, {} B shared, {} co-resident blocks, {:.0}% occupancy",
                match group.kind {
                    GroupKind::Megakernel => "megakernel (cooperative)",
                    GroupKind::Launch => "one launch",
                },
                group.workgroup_size[0],
                group.workgroup_size[1],
                group.workgroup_size[2],
                group.registers,
                group.shared_bytes,
                group.coresident_blocks,
                group.occupancy_pct
            ),
            colour,
        )));
        // Three rows of boxes: top edges, names with the barriers between waves, bottoms.
        let mut rows: [Vec<Span>; 3] = [vec![], vec![], vec![]];
        for (w, wave) in group.waves.iter().enumerate() {
            for (i, &s) in wave.iter().enumerate() {
                if i > 0 {
                    for r in &mut rows {
                        r.push(Span::raw(" "));
                    }
                }
                let label = format!(" {s} {} ", names.get(s).map_or("?", String::as_str));
                let width = label.chars().count();
                let mut style = colour;
                if s == step {
                    style = style.add_modifier(Modifier::BOLD | Modifier::REVERSED);
                }
                rows[0].push(Span::styled(format!("┌{}┐", "─".repeat(width)), colour));
                rows[1].push(Span::styled("│", colour));
                rows[1].push(Span::styled(label, style));
                rows[1].push(Span::styled("│", colour));
                rows[2].push(Span::styled(format!("└{}┘", "─".repeat(width)), colour));
            }
            if let Some(b) = group.barriers.get(w) {
                let kind = kind_name(b.kind);
                let sel = selected.is_some_and(|x| x.group == g && x.after_step == b.after_step);
                let text = format!(" ─{kind}─▶ ");
                let pad = " ".repeat(text.chars().count());
                let style = if sel {
                    app.theme.cursor
                } else if b.kind == DepKind::Grid {
                    t.error
                } else {
                    t.dim
                };
                rows[0].push(Span::raw(pad.clone()));
                rows[1].push(Span::styled(text, style));
                rows[2].push(Span::raw(pad));
            }
        }
        lines.extend(rows.into_iter().map(Line::from));
    }
    match selected {
        Some(b) => lines.push(Line::from(vec![
            Span::styled(
                format!("boundary after step {}: {} - ", b.after_step, b.kind),
                t.key,
            ),
            Span::styled(b.reason.clone(), t.text),
        ])),
        None => lines.push(Line::from(Span::styled("one wave: no boundaries", t.dim))),
    }
    if let Some(b) = selected.filter(|b| !b.dataflow.is_empty()) {
        lines.push(Line::from(vec![
            Span::styled("dataflow: ", t.key),
            Span::styled(b.dataflow.clone(), t.text),
        ]));
    }
    if plan.fusion_breaks.is_empty() {
        lines.push(Line::from(Span::styled("fusion breaks: none", t.dim)));
    } else {
        lines.push(Line::from(Span::styled("fusion breaks:", t.warning)));
        for f in &plan.fusion_breaks {
            lines.push(Line::from(vec![
                Span::styled(format!("  step {}: ", f.step), t.warning),
                Span::styled(f.reason.clone(), t.text),
            ]));
        }
    }
    lines.push(Line::from(Span::styled(
        format!(
            "co-resident blocks {}, largest shared memory {} B/block, min occupancy {:.0}%",
            plan.coresident_blocks, plan.shared_bytes, plan.min_occupancy_pct
        ),
        t.dim,
    )));
    Paragraph::new(lines)
        .style(Style::new())
        .wrap(Wrap { trim: false })
        .render(area, buf);
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
