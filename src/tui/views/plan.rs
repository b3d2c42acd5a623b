//! Plan tab (pipelines only): the megakernel plan as a wave diagram. One row of boxes per
//! fused group (a box per step, waves left to right, the barrier kind between waves), colour
//! per group, the selected boundary's barrier with its reason, then fusion breaks,
//! co-residency and shared memory.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::megakernel::plan::{GroupKind, Plan};
use crate::megakernel::DepKind;
use crate::tui::app::App;
use crate::util::Problem;

use super::tab_rows::{Offset, RowList};
use super::wrap::wrap;

/// One boundary of the plan: between two waves of a group, or between two groups (a new
/// launch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Boundary {
    /// Group it is in (the earlier group for a launch boundary).
    pub group: usize,
    /// Step after which it sits.
    pub after_step: usize,
    /// `none`, `invocation`, `workgroup`, `grid` (as `plan --json` says) or `launch`.
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
                kind: b.kind.name().into(),
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

fn plan_of(app: &App) -> Option<Result<&Plan, &Problem>> {
    let pv = app.programs.doc.as_ref()?.pipeline.as_ref()?;
    Some(pv.plan.as_deref())
}

/// The Plan tab's own state: whether it shows vyre-megakernel's plan (`V`) and that text.
#[derive(Debug, Default)]
pub struct PlanState {
    /// Show vyre's plan and the differences instead of ours.
    pub vyre: bool,
    /// The text (or why there is none), and the plan it was computed beside (its address:
    /// a reload plans again, and the text is then stale).
    pub text: Option<(Result<String, Problem>, usize)>,
}

/// Address of the open pipeline's plan, when there is one.
fn plan_key(app: &App) -> Option<usize> {
    let pv = app.programs.doc.as_ref()?.pipeline.as_ref()?;
    pv.plan
        .as_ref()
        .ok()
        .map(|p| std::sync::Arc::as_ptr(p) as usize)
}

/// `V`: switches the tab between our plan and vyre's, computing vyre's (in-process, on the
/// CPU) when the pipeline's plan changed since.
pub fn toggle_vyre(app: &mut App) {
    let key = plan_key(app);
    let text = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .map(|pv| vyre_text(&pv.file.path, &pv.file.pipeline, pv.plan.as_deref()));
    let Some(state) = app.detail.states.get_mut::<PlanState>() else {
        return;
    };
    state.vyre = !state.vyre;
    let fresh = state.text.as_ref().is_some_and(|(_, k)| Some(*k) == key);
    if state.vyre && !fresh {
        state.text = text.map(|t| (t, key.unwrap_or(0)));
    }
}

/// vyre's plan of the pipeline at `path` and the differences from `ours`, as `plan` prints
/// them.
#[cfg(feature = "vyre")]
fn vyre_text(
    path: &std::path::Path,
    pipeline: &crate::ir::Pipeline,
    ours: Result<&Plan, &Problem>,
) -> Result<String, Problem> {
    use crate::megakernel::against_vyre::{beside, render_vyre, Ask};
    let ours = ours.map_err(Problem::clone)?;
    let ask = Ask {
        pipeline: true,
        ..Ask::default()
    };
    match beside(path, pipeline, ours, ask) {
        Ok(Some(b)) => Ok(format!(
            "{}\n{}",
            render_vyre(&b.vyre),
            b.differences_text()
        )),
        Ok(None) => Err(Problem::new("no vyre plan for this file", "")),
        Err(e) => Err(e),
    }
}

#[cfg(not(feature = "vyre"))]
fn vyre_text(
    _path: &std::path::Path,
    _pipeline: &crate::ir::Pipeline,
    _ours: Result<&Plan, &Problem>,
) -> Result<String, Problem> {
    Err(Problem::new(
        "vyre's plan needs vyre-megakernel: this vyrescope was built without vyre support",
        "rebuild with `cargo build --release --features vyre` (see docs/vyre.md)",
    ))
}

/// The vyre view's lines wrapped to `width`, when the tab shows it.
fn vyre_lines(app: &App, width: usize) -> Option<Vec<Line<'static>>> {
    let t = &app.theme;
    let state = app.detail.states.get::<PlanState>()?;
    if !state.vyre {
        return None;
    }
    let mut lines = vec![Line::from(Span::styled(
        "vyre-megakernel's plan (V: ours again)",
        t.title,
    ))];
    match &state.text {
        Some((_, k)) if Some(*k) != plan_key(app) => lines.push(Line::from(Span::styled(
            "the plan changed since: press V twice to plan with vyre again",
            t.warning,
        ))),
        Some((Ok(text), _)) => {
            for l in text.lines() {
                let style = if l.starts_with("differences") {
                    t.warning
                } else if l.starts_with("    vyre:") {
                    t.info
                } else if l.starts_with("    vyrescope:") {
                    t.ok
                } else {
                    t.text
                };
                lines.push(Line::from(Span::styled(l.to_string(), style)));
            }
        }
        Some((Err(e), _)) => {
            for l in e.to_string().lines() {
                lines.push(Line::from(Span::styled(l.to_string(), t.error)));
            }
        }
        None => lines.push(Line::from(Span::styled("no pipeline open", t.dim))),
    }
    Some(wrap(&lines, width.saturating_sub(1)))
}

/// The tab's one list: the boundaries (the cursor selects one), or vyre's plan's lines
/// (the cursor scrolls them).
pub fn list(app: &App, area: Rect) -> Option<RowList> {
    if let Some(lines) = vyre_lines(app, area.width as usize) {
        return Some(RowList::text_in(area, lines.len()));
    }
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
        Some(Err(e)) => return super::empty_note(buf, area, t.error, &e.to_string()),
        Some(Ok(p)) => p,
    };
    if let Some(lines) = vyre_lines(app, area.width as usize) {
        let list = RowList::text_in(area, lines.len());
        let shown: Vec<Line> = lines.into_iter().skip(list.scroll(app)).collect();
        Paragraph::new(shown).render(list.body(), buf);
        list.draw_scrollbar(buf, app);
        return;
    }
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
    let width = area.width as usize;
    // Text wraps at the panel edge; the diagram rows never do (a wrapped box row breaks the
    // picture): they scroll sideways to keep the selected step or boundary in view, with
    // `‹`/`›` where they go on.
    let mut out = wrap(
        &[Line::from(vec![
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
        ])],
        width,
    );
    for (g, group) in plan.groups.iter().enumerate() {
        let colour = colours[g % colours.len()];
        let wg = group.workgroup_size;
        // Each group's kernel's own registers (the figure the Occupancy tab shows for it),
        // or the planner's assumption where the kernel could not be assembled.
        let figures = match &group.registers_source {
            Some(src) => format!(
                "{} regs, {:.0}% occupancy ({src})",
                group.registers, group.occupancy_pct
            ),
            None => format!(
                "{} regs assumed, {:.0}% occupancy planned",
                group.registers, group.occupancy_pct
            ),
        };
        out.extend(wrap(
            &[Line::from(Span::styled(
                format!(
                    "group {g}: {} wg {}x{}x{}, {} B shared, {} co-resident blocks, {figures}",
                    kind_of(group.kind),
                    wg[0],
                    wg[1],
                    wg[2],
                    group.shared_bytes,
                    group.coresident_blocks,
                ),
                colour,
            ))],
            width,
        ));
        // A recomputed pass: its tile, the halo of each step, k and the recomputed share.
        if let Some(h) = &group.halo {
            for line in [h.describe(), format!("  why: {}", h.reason)] {
                out.extend(wrap(
                    &[Line::from(Span::styled(format!("  {line}"), colour))],
                    width,
                ));
            }
        }
        // A smaller step of a mixed-size group: packed several to a block, or masked.
        for (s, l) in group.steps.iter().zip(&group.step_layouts) {
            if *l != crate::megakernel::mixed::StepLayout::Whole {
                out.extend(wrap(
                    &[Line::from(Span::styled(
                        format!("  step {s}: {}", l.describe(wg[0])),
                        colour,
                    ))],
                    width,
                ));
            }
        }
        // Three rows of boxes: top edges, names with the barriers between waves, bottoms.
        let mut rows: [Vec<Span>; 3] = [vec![], vec![], vec![]];
        let mut col = 0usize;
        let mut focus = 0..0;
        for (w, wave) in group.waves.iter().enumerate() {
            for (i, &s) in wave.iter().enumerate() {
                if i > 0 {
                    for r in &mut rows {
                        r.push(Span::raw(" "));
                    }
                    col += 1;
                }
                let label = format!(" {s} {} ", names.get(s).map_or("?", String::as_str));
                let width = label.chars().count();
                let mut style = colour;
                if s == step {
                    style = style.add_modifier(Modifier::BOLD | Modifier::REVERSED);
                    if focus.is_empty() {
                        focus = col..col + width + 2;
                    }
                }
                rows[0].push(Span::styled(format!("┌{}┐", "─".repeat(width)), colour));
                rows[1].push(Span::styled("│", colour));
                rows[1].push(Span::styled(label, style));
                rows[1].push(Span::styled("│", colour));
                rows[2].push(Span::styled(format!("└{}┘", "─".repeat(width)), colour));
                col += width + 2;
            }
            if let Some(b) = group.barriers.get(w) {
                let sel = selected.is_some_and(|x| x.group == g && x.after_step == b.after_step);
                // The arrow names the barrier (in `plan --json`'s words) and the buffer
                // that needs it.
                let text = match buffer_of(&b.reason) {
                    Some(buf) => format!(" ─{} {buf}─▶ ", b.kind.name()),
                    None => format!(" ─{}─▶ ", b.kind.name()),
                };
                let n = text.chars().count();
                if sel {
                    focus = col..col + n;
                }
                let pad = " ".repeat(n);
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
                col += n;
            }
        }
        let from = window(col, width, &focus);
        out.extend(
            rows.into_iter()
                .map(|r| scrolled(r, from, width, col, t.key)),
        );
    }
    let mut text = Vec::new();
    match selected {
        Some(b) => text.push(Line::from(vec![
            Span::styled(
                format!("boundary after step {}: {} - ", b.after_step, b.kind),
                t.key,
            ),
            Span::styled(b.reason.clone(), t.text),
        ])),
        None => text.push(Line::from(Span::styled("one wave: no boundaries", t.dim))),
    }
    if let Some(b) = selected.filter(|b| !b.dataflow.is_empty()) {
        text.push(Line::from(vec![
            Span::styled("dataflow: ", t.key),
            Span::styled(b.dataflow.clone(), t.text),
        ]));
        // Which form runs it (`--sync`, like `run`'s): dataflow waits by default; the
        // dataflow form's persistent grid and why are what `plan` prints.
        if let Some(group) = plan.groups.get(b.group).filter(|g| g.runs_dataflow()) {
            let how = if app.programs.sync == crate::megakernel::plan::SyncMode::Dataflow {
                format!(
                    "runs with dataflow waits (the default) on {} blocks: {}",
                    group.dataflow.blocks, group.dataflow.blocks_reason
                )
            } else {
                format!(
                    "runs with grid barriers (--sync barrier); the dataflow form runs {} blocks: {}",
                    group.dataflow.blocks, group.dataflow.blocks_reason
                )
            };
            text.push(Line::from(vec![
                Span::styled("sync: ", t.key),
                Span::styled(how, t.text),
            ]));
        }
    }
    if plan.fusion_breaks.is_empty() {
        text.push(Line::from(Span::styled("fusion breaks: none", t.dim)));
    } else {
        text.push(Line::from(Span::styled("fusion breaks:", t.warning)));
        for f in &plan.fusion_breaks {
            text.push(Line::from(vec![
                Span::styled(format!("  before step {}: ", f.step), t.warning),
                Span::styled(f.reason.clone(), t.text),
            ]));
        }
    }
    text.push(Line::from(Span::styled(
        format!(
            // The planner's threshold, not an occupancy reached: said as a rule so it does
            // not read as contradicting a group's "100% occupancy" above.
            "co-resident blocks {}, largest shared memory {} B/block; fusion keeps occupancy at least {:.0}% (threshold)",
            plan.coresident_blocks, plan.shared_bytes, plan.min_occupancy_pct
        ),
        t.dim,
    )));
    // Which decided each run of fusable steps and why: the model's predicted times, the
    // medians a `--decide measure` run recorded for this device, or forced fusion, in the
    // words of every other front end.
    let decision = crate::megakernel::decision::DecisionReport::of(plan);
    for (i, l) in decision.lines().into_iter().enumerate() {
        let style = if i == 0 { t.key } else { t.text };
        text.push(Line::from(Span::styled(l, style)));
    }
    out.extend(wrap(&text, width));
    // Below the fold: the last row says how much more there is and how to see it.
    let rows = area.height as usize;
    if out.len() > rows && rows > 0 {
        let more = out.len() - (rows - 1);
        out.truncate(rows - 1);
        out.push(Line::from(Span::styled(
            format!(
                "↓ {more} more line{} below (e expands the panel)",
                plural(more)
            ),
            t.key,
        )));
    }
    Paragraph::new(out).style(Style::new()).render(area, buf);
}

/// A group's kind in `plan --json`'s words.
fn kind_of(k: GroupKind) -> &'static str {
    match k {
        GroupKind::Megakernel => "megakernel",
        GroupKind::Launch => "launch",
    }
}

/// The buffer a separation's reason names first (`` `y` ``), if any.
fn buffer_of(reason: &str) -> Option<&str> {
    let start = reason.find('`')? + 1;
    let len = reason[start..].find('`')?;
    Some(&reason[start..start + len]).filter(|b| !b.is_empty() && !b.contains(' '))
}

/// First column to show of a `total`-column row in `width` columns, keeping `focus` in
/// view.
fn window(total: usize, width: usize, focus: &std::ops::Range<usize>) -> usize {
    if total <= width || width < 3 {
        return 0;
    }
    // One column each side is taken by the scroll marks.
    let inner = width - 2;
    let max = total - inner;
    let want = focus.end.saturating_sub(inner);
    want.min(focus.start).min(max)
}

/// Columns `from..from + width` of the row `spans` (`total` columns), with `‹`/`›` in the
/// first/last column where the row goes on.
fn scrolled(
    spans: Vec<Span<'static>>,
    from: usize,
    width: usize,
    total: usize,
    mark: Style,
) -> Line<'static> {
    if total <= width {
        return Line::from(spans);
    }
    let (left, right) = (from > 0, from + width.saturating_sub(2) < total);
    let inner = width.saturating_sub(2);
    let mut cells: Vec<Span<'static>> = Vec::new();
    let mut at = 0usize;
    for s in spans {
        for c in s.content.chars() {
            if at >= from && at < from + inner {
                cells.push(Span::styled(c.to_string(), s.style));
            }
            at += 1;
        }
    }
    let mut out = vec![Span::styled(if left { "‹" } else { " " }, mark)];
    out.extend(cells);
    if right {
        out.push(Span::styled("›", mark));
    }
    Line::from(out)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
