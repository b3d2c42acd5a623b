//! Plan tab (pipelines only): the megakernel plan as a wave diagram. One row of boxes per
//! fused group (a box per step, waves left to right, the barrier kind between waves), colour
//! per group, the selected boundary's barrier with its reason, then fusion breaks,
//! co-residency and shared memory.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::megakernel::plan::{Group, GroupKind, Plan};
use crate::megakernel::{DepKind, Separation};
use crate::tui::app::App;
use crate::tui::theme::Theme;
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

/// Draws the tab into `area`: the plan's headline, each group with its wave diagram, then
/// the selected boundary, the fusion breaks, the planner's limits and its decision.
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
    let bounds = boundaries(plan);
    let selected = bounds.get(app.detail.pane.cursor);
    let width = area.width as usize;
    let diagram = Diagram::of(app, selected, width);
    // Text wraps at the panel edge; the diagram rows never do (a wrapped box row breaks the
    // picture): they scroll sideways to keep the selected step or boundary in view, with
    // `‹`/`›` where they go on.
    let mut out = wrap(&[headline(plan, t)], width);
    for (g, group) in plan.groups.iter().enumerate() {
        out.extend(wrap(&group_lines(g, group, diagram.colour(g)), width));
        out.extend(diagram.rows(g, group));
    }
    let mut text = boundary_lines(app, plan, selected);
    text.extend(plan_notes(plan, t));
    out.extend(wrap(&text, width));
    fold(&mut out, area.height as usize, t);
    Paragraph::new(out).style(Style::new()).render(area, buf);
}

/// The plan's first line: pipeline, device, groups, launches and grid barriers.
fn headline(plan: &Plan, t: &Theme) -> Line<'static> {
    Line::from(vec![
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
    ])
}

/// Group `g`'s description above its diagram: kind, workgroup, shared memory, registers and
/// occupancy; a recomputed pass's tile and halo; how smaller steps of a mixed group run.
fn group_lines(g: usize, group: &Group, colour: Style) -> Vec<Line<'static>> {
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
    let line = |text: String| Line::from(Span::styled(text, colour));
    let mut lines = vec![line(format!(
        "group {g}: {} wg {}x{}x{}, {} B shared, {} co-resident blocks, {figures}",
        kind_of(group.kind),
        wg[0],
        wg[1],
        wg[2],
        group.shared_bytes,
        group.coresident_blocks,
    ))];
    // A recomputed pass: its tile, the halo of each step, k and the recomputed share.
    if let Some(h) = &group.halo {
        for l in [h.describe(), format!("  why: {}", h.reason)] {
            lines.push(line(format!("  {l}")));
        }
    }
    // A smaller step of a mixed-size group: packed several to a block, or masked.
    for (s, l) in group.steps.iter().zip(&group.step_layouts) {
        if *l != crate::megakernel::mixed::StepLayout::Whole {
            lines.push(line(format!("  step {s}: {}", l.describe(wg[0]))));
        }
    }
    lines
}

/// What every group's wave diagram needs to know: step names, the selected step and
/// boundary, the panel width and the colours.
struct Diagram<'a> {
    app: &'a App,
    names: Vec<String>,
    step: usize,
    selected: Option<&'a Boundary>,
    width: usize,
}

impl<'a> Diagram<'a> {
    fn of(app: &'a App, selected: Option<&'a Boundary>, width: usize) -> Self {
        let pv = app.programs.doc.as_ref().and_then(|d| d.pipeline.as_ref());
        Diagram {
            app,
            names: pv.map_or_else(Vec::new, |p| {
                p.file
                    .pipeline
                    .steps
                    .iter()
                    .map(|s| s.program.name.clone())
                    .collect()
            }),
            step: pv.map_or(0, |p| p.step),
            selected,
            width,
        }
    }

    /// Group `g`'s colour.
    fn colour(&self, g: usize) -> Style {
        let t = &self.app.theme;
        let colours = [t.ok, t.info, t.warning, t.key, t.title];
        colours[g % colours.len()]
    }

    /// Three rows of boxes for group `g`: top edges, names with the barriers between waves,
    /// bottoms; scrolled sideways to keep the selected step or boundary in view.
    fn rows(&self, g: usize, group: &Group) -> Vec<Line<'static>> {
        let colour = self.colour(g);
        let mut rows: [Vec<Span<'static>>; 3] = [vec![], vec![], vec![]];
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
                let label = format!(" {s} {} ", self.names.get(s).map_or("?", String::as_str));
                let width = label.chars().count();
                let mut style = colour;
                if s == self.step {
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
                let sel = self
                    .selected
                    .is_some_and(|x| x.group == g && x.after_step == b.after_step);
                let [top, arrow, bottom] = self.barrier(b, sel);
                let n = arrow.content.chars().count();
                if sel {
                    focus = col..col + n;
                }
                rows[0].push(top);
                rows[1].push(arrow);
                rows[2].push(bottom);
                col += n;
            }
        }
        let from = window(col, self.width, &focus);
        let key = self.app.theme.key;
        rows.into_iter()
            .map(|r| scrolled(r, from, self.width, col, key))
            .collect()
    }

    /// The three row pieces of a barrier between waves (`sel`: the selected boundary): the
    /// arrow names the barrier (in `plan --json`'s words) and the buffer that needs it.
    fn barrier(&self, b: &Separation, sel: bool) -> [Span<'static>; 3] {
        let t = &self.app.theme;
        let text = match buffer_of(&b.reason) {
            Some(buf) => format!(" ─{} {buf}─▶ ", b.kind.name()),
            None => format!(" ─{}─▶ ", b.kind.name()),
        };
        let pad = " ".repeat(text.chars().count());
        let style = if sel {
            t.cursor
        } else if b.kind == DepKind::Grid {
            t.error
        } else {
            t.dim
        };
        [
            Span::raw(pad.clone()),
            Span::styled(text, style),
            Span::raw(pad),
        ]
    }
}

/// The selected boundary and why; for a dataflow boundary its waits and which sync form
/// runs it.
fn boundary_lines(app: &App, plan: &Plan, selected: Option<&Boundary>) -> Vec<Line<'static>> {
    let t = &app.theme;
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
    let Some(b) = selected.filter(|b| !b.dataflow.is_empty()) else {
        return text;
    };
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
    text
}

/// The plan's fusion breaks, the planner's limits and its decision, below the diagrams.
fn plan_notes(plan: &Plan, t: &Theme) -> Vec<Line<'static>> {
    let mut text = Vec::new();
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
    text
}

/// Cuts `out` to `rows` lines; below the fold, the last row says how much more there is
/// and how to see it.
fn fold(out: &mut Vec<Line<'static>>, rows: usize, t: &Theme) {
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
