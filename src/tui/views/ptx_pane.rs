//! The PTX pane: emitted PTX with line numbers; the lines produced by the IR statement
//! under the IR cursor are marked (or, when this pane has focus, the cursor line and the
//! rest of its statement's lines).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::code_view::{self, CodeView, Mark};
use crate::tui::app::{App, Focus};
use crate::tui::highlight::{Highlighter, Lang};
use crate::tui::vyre_view::{VyreMode, VyreState};

/// Draws the PTX pane into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App, hl: &Highlighter) {
    if app.code.vyre_mode != VyreMode::Off && app.code.pin_ptx().is_none() {
        return draw_vyre(buf, area, app, hl);
    }
    let opts = app.emit_options();
    let node = app.selected_node();
    let mut detail = format!(
        "sm_{} wg {}",
        opts.sm,
        opts.workgroup_size
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    detail.push_str(&code_view::hscroll_note(app, Focus::Ptx));
    if let (Some(v), Some(n)) = (app.ptx_view(), node) {
        let lines: u32 = v
            .corr
            .lines_of(n)
            .iter()
            .map(|r| r[1].saturating_sub(r[0]) + 1)
            .sum();
        let word = if lines == 1 { "line" } else { "lines" };
        detail.push_str(&format!(" · {n}: {lines} {word}"));
    }
    if let Some(d) = app.code.pin_ptx() {
        let detail = super::pin_diff::title(app, d);
        let inner = super::framed(buf, area, app, Focus::Ptx, super::title(app, "PTX", detail));
        return super::pin_diff::draw(buf, inner, app, hl, Focus::Ptx, d);
    }
    let inner = super::framed(buf, area, app, Focus::Ptx, super::title(app, "PTX", detail));
    let view = match app.code.emission.as_ref().map(|e| &e.ptx) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return super::empty_note(buf, inner, app.theme.error, &format!("no PTX: {e}"))
        }
        None if app.programs.doc.is_some() => {
            return super::empty_note(buf, inner, app.theme.dim, pending_note(app))
        }
        None => return super::empty_note(buf, inner, app.theme.dim, "no program open"),
    };
    let focused = app.screen.focus == Focus::Ptx;
    let line = |i: usize| view.line(i);
    let gutter = |i: usize| (i + 1).to_string();
    // Each line shows the share of the statement that owns it (the selection's map).
    let heat = crate::tui::profile::Heat::of(app);
    let heat_of = |i: usize| heat.share(view.corr.node_at(i));
    // With the SASS pane focused, the PTX line of its cursor instruction is marked too
    // (prologue instructions have a line but no statement).
    let sass_line = (app.screen.focus == Focus::Sass)
        .then(|| app.sass_view()?.rows.get(app.panes.sass.cursor)?.ptx_line)
        .flatten();
    let mark = |i: usize| {
        Mark::of(
            focused && i == app.panes.ptx.cursor,
            node.is_some_and(|n| view.corr.is_line_of(i, n))
                || sass_line.is_some_and(|l| l as usize == i + 1),
        )
    };
    code_view::draw(
        buf,
        inner,
        app,
        hl,
        &CodeView {
            pane: Focus::Ptx,
            lang: Lang::Ptx,
            generation: app.code.generation,
            len: view.len(),
            gutter_width: code_view::digits(view.len()),
            line: &line,
            gutter: &gutter,
            mark: &mark,
            heat: (!heat.is_empty()).then_some(&heat_of as &dyn Fn(usize) -> Option<f64>),
        },
    );
}

/// The PTX pane in a vyre mode: vyre's PTX, or the comparison (no source map: vyre's PTX
/// has none, so nothing is marked but the cursor line).
fn draw_vyre(buf: &mut Buffer, area: Rect, app: &App, hl: &Highlighter) {
    let mode = app.code.vyre_mode;
    let mut detail = format!("sm_{}", app.emit_options().sm);
    detail.push_str(&code_view::hscroll_note(app, Focus::Ptx));
    let name = format!("PTX · {}", mode.title());
    let title = super::title(app, &name, detail);
    let inner = super::framed(buf, area, app, Focus::Ptx, title);
    let lines = match app.code.vyre_state() {
        Some(VyreState::Ready(t)) => t.lines(mode),
        Some(VyreState::Failed(e)) => {
            return super::empty_note(buf, inner, app.theme.error, &format!("no vyre PTX: {e}"))
        }
        Some(VyreState::Pending) => {
            return super::empty_note(buf, inner, app.theme.dim, "making vyre's PTX...")
        }
        None if app.programs.doc.is_some() => {
            return super::empty_note(buf, inner, app.theme.dim, pending_note(app))
        }
        None => return super::empty_note(buf, inner, app.theme.dim, "no program open"),
    };
    let focused = app.screen.focus == Focus::Ptx;
    let line = |i: usize| lines.get(i).map_or("", String::as_str);
    let gutter = |i: usize| (i + 1).to_string();
    let mark = |i: usize| Mark::of(focused && i == app.panes.ptx.cursor, false);
    code_view::draw(
        buf,
        inner,
        app,
        hl,
        &CodeView {
            pane: Focus::Ptx,
            // The comparison is a table and a diff, not PTX: left unhighlighted.
            lang: if mode == VyreMode::Ptx {
                Lang::Ptx
            } else {
                Lang::Sass
            },
            // Another text than ours: its own highlight-cache generation.
            generation: app.code.generation ^ (1 << 62) ^ (mode as u64) << 60,
            len: lines.len(),
            gutter_width: code_view::digits(lines.len()),
            line: &line,
            gutter: &gutter,
            mark: &mark,
            heat: None,
        },
    );
}

/// What the PTX pane says while its kernel is being made: a pipeline's plan and fused kernel
/// come from the worker, a large Program's emission too.
fn pending_note(app: &App) -> &'static str {
    let planning = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .is_some_and(|p| matches!(&p.fused, Err(e) if e.message == crate::tui::pipeline::PLANNING));
    if planning {
        crate::tui::pipeline::PLANNING
    } else {
        "emitting..."
    }
}
