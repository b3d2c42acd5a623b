//! The IR pane: the printer's text with a node-id gutter; the cursor line, and the lines of
//! the statement selected in the PTX pane, are marked.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::code_view::{self, CodeView, Mark};
use crate::tui::app::{App, Focus};
use crate::tui::highlight::{Highlighter, Lang};
use crate::tui::profile::{self, Heat};

/// Columns of the cost column: ` 123/45m 12r` (SASS instructions, memory instructions, peak
/// of live registers).
const COST_WIDTH: usize = 12;
/// Columns of the change column against the pin: ` p+12 s-10`.
const PIN_WIDTH: usize = 10;

/// Draws the IR pane into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App, hl: &Highlighter) {
    let mut detail = match (&app.programs.doc, app.ir_node()) {
        (Some(_), Some(n)) => format!("{}/{} {n}", app.panes.ir.cursor + 1, app.ir_len()),
        (Some(_), None) => format!("{}/{}", app.panes.ir.cursor + 1, app.ir_len()),
        (None, _) => String::new(),
    };
    detail.push_str(&code_view::hscroll_note(app, Focus::Ir));
    let heat = Heat::of(app);
    detail.push_str(&heat_note(app, &heat));
    let name = app
        .programs
        .doc
        .as_ref()
        .map_or("IR".to_string(), |d| match &d.pipeline {
            Some(p) => format!(
                "IR step {}/{} {}",
                p.step + 1,
                p.steps(),
                p.file
                    .pipeline
                    .steps
                    .get(p.step)
                    .map_or("", |s| s.program.name.as_str())
            ),
            None => format!("IR {}", d.program.name),
        });
    let inner = super::framed(buf, area, app, Focus::Ir, super::title(app, &name, detail));
    let Some(doc) = app.programs.doc.as_ref() else {
        let msg = app
            .programs
            .doc_error
            .as_deref()
            .unwrap_or("no program open - select one in the list (Enter) or press o");
        return super::empty_note(buf, inner, app.theme.error, msg);
    };
    // The gutter shows node ids; long ids are cut from the left (the tail names the
    // statement) so the code keeps at least two thirds of the pane.
    let longest = doc
        .ir
        .iter()
        .filter_map(|l| l.node.as_ref().map(|n| n.len()))
        .max()
        .unwrap_or(0);
    // The per-statement cost column (SASS instructions, memory instructions) while the SASS
    // pane is shown, when the pane is wide enough to keep the code readable.
    let costs = app
        .sass_view()
        .filter(|_| app.pane_shown(Focus::Sass) && inner.width >= 40);
    // While the panes show the diff against the pin, the column shows each statement's change
    // instead: PTX lines (p) and SASS instructions (s), `=` when neither changed.
    let pin = app
        .code
        .pin_view
        .as_ref()
        .filter(|_| app.code.pin_diff && inner.width >= 36);
    let cost_w = match (pin, costs) {
        (Some(_), _) => PIN_WIDTH,
        (None, Some(_)) => COST_WIDTH,
        (None, None) => 0,
    };
    let gutter_width = longest.min(inner.width as usize / 3);
    // A statement's share goes on the line that opens it (the line `profile` names).
    let mut seen = std::collections::HashSet::new();
    let shares: Vec<Option<f64>> = doc
        .ir
        .iter()
        .map(|l| {
            let n = l.node.as_deref()?;
            seen.insert(n).then(|| heat.share(Some(n))).flatten()
        })
        .collect();
    let heat_of = |i: usize| shares.get(i).copied().flatten();
    let focused = app.screen.focus == Focus::Ir;
    let sel = if focused { None } else { app.selected_node() };
    let line = |i: usize| doc.ir.get(i).map_or("", |l| l.code.as_str());
    let gutter = |i: usize| {
        let n = doc.ir.get(i).and_then(|l| l.node.as_deref()).unwrap_or("");
        let id = if n.len() > gutter_width {
            let cut = n.len() - gutter_width.saturating_sub(1);
            format!("…{}", n.get(cut..).unwrap_or(""))
        } else {
            n.to_string()
        };
        if let Some(p) = pin {
            return format!("{id:>gutter_width$}{:>cost_w$}", p.gutter(n));
        }
        match costs {
            Some(v) => {
                let cost = v.listing.cost_of(n).map_or(String::new(), |c| {
                    let peak = c.peak_live.map_or(String::new(), |p| format!(" {p}r"));
                    format!("{}/{}m{peak}", c.total, c.mix.memory)
                });
                format!("{id:>gutter_width$}{cost:>cost_w$}")
            }
            None => id,
        }
    };
    let mark = |i: usize| {
        let node = doc.ir.get(i).and_then(|l| l.node.as_deref());
        let correlated = sel.is_some() && node == sel;
        Mark::of(
            i == app.panes.ir.cursor && (focused || sel.is_none() || correlated),
            correlated,
        )
    };
    code_view::draw(
        buf,
        inner,
        app,
        hl,
        &CodeView {
            pane: Focus::Ir,
            lang: Lang::Ir,
            generation: doc.id,
            len: doc.ir.len(),
            gutter_width: gutter_width + cost_w,
            line: &line,
            gutter: &gutter,
            mark: &mark,
            heat: (!heat.is_empty()).then_some(&heat_of as &dyn Fn(usize) -> Option<f64>),
        },
    );
}

/// The title's word on the profile: its source (the estimate loudly) and, on the selected
/// statement, its share and top stall reason (pc source); `stale` when the Program changed
/// since it was profiled.
fn heat_note(app: &App, heat: &Heat) -> String {
    let Some(source) = heat.source else {
        let stale = app.jobs.session.profile.as_ref().is_some_and(|v| {
            v.stale
                && app
                    .programs
                    .doc
                    .as_ref()
                    .is_some_and(|d| d.path == v.key.path)
        });
        return if stale {
            " · profile stale (p)".into()
        } else {
            String::new()
        };
    };
    // Short (narrow panes cut titles from the right); the estimate in capitals.
    let word = match source {
        crate::profile::Source::Estimate => "ESTIMATE",
        s => s.name(),
    };
    let mut s = format!(" · heat {word}");
    if let Some(n) = app.selected_node() {
        if let Some(share) = heat.share(Some(n)) {
            s.push_str(&format!(" · {:.1}%", 100.0 * share));
        }
        if let Some(stall) = profile::top_stall(app, n) {
            s.push_str(&format!(" · stall {stall}"));
        }
    }
    s
}
