//! The SASS pane: the machine code ptxas makes of the PTX (disassembled by nvdisasm), with
//! the PTX line of every instruction in the gutter; the instructions of the statement
//! selected in the IR or PTX pane are marked (or, when this pane has focus, the cursor row
//! and the rest of its statement's instructions).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::code_view::{self, CodeView, Mark};
use crate::tui::app::{App, Focus};
use crate::tui::highlight::{Highlighter, Lang};
use crate::tui::sass_view::{SassState, ANNOTATED_MIN_WIDTH};

/// Draws the SASS pane into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App, hl: &Highlighter) {
    let node = app.selected_node();
    let view = app.sass_view();
    let mut detail = format!("sm_{}", app.code.sm);
    if let Some(v) = view {
        let l = &v.listing;
        // The selected statement's share first: it is what changes as the cursor moves, and
        // narrow panes cut the title from the right.
        detail = match node.and_then(|n| l.cost_of(n)) {
            Some(c) => format!(
                "{}: {} of {} instr, {} mem{} · ",
                c.node,
                c.total,
                l.instructions.len(),
                c.mix.memory,
                c.peak_live.map_or(String::new(), |p| format!(", {p} live"))
            ),
            None => format!("{} instr · ", l.instructions.len()),
        };
        // sm_70 is assembled as sm_75 (no sm_70 in the pinned ptxas): the title says so.
        let asked = if l.arch == format!("sm_{}", l.sm) {
            String::new()
        } else {
            format!(" (for sm_{}: no sm_{} in ptxas)", l.sm, l.sm)
        };
        detail.push_str(&format!(
            "{}{asked} · {} regs",
            l.arch, l.resources.registers
        ));
        if let Some(peak) = l.peak_live {
            // Short: the statement's own live count comes first and wide titles still fit.
            detail.push_str(&format!(" · peak {peak} live"));
        }
        if l.resources.spill_stores + l.resources.spill_loads > 0 {
            detail.push_str(&format!(
                " · spills {}B/{}B",
                l.resources.spill_stores, l.resources.spill_loads
            ));
        }
    }
    if let Some(d) = app.code.pin_sass() {
        // The diff's title leads with its changes; the kernel figures follow.
        let title = super::pin_diff::title(app, d);
        let inner = super::framed(
            buf,
            area,
            app,
            Focus::Sass,
            super::title(app, "SASS", title),
        );
        return super::pin_diff::draw(buf, inner, app, hl, Focus::Sass, d);
    }
    if app.code.pin_diff && app.code.pin.is_some() {
        detail.push_str(" · diff when the pin is assembled");
    }
    let inner = super::framed(
        buf,
        area,
        app,
        Focus::Sass,
        super::title(app, "SASS", detail),
    );
    let view = match (app.code.sass_state(), view) {
        (_, Some(v)) => v,
        (Some(SassState::Failed(e)), _) => {
            return super::empty_note(buf, inner, app.theme.error, &format!("no SASS: {e}"))
        }
        (Some(SassState::Pending), _) => {
            return super::empty_note(
                buf,
                inner,
                app.theme.dim,
                "assembling with ptxas and disassembling with nvdisasm...",
            )
        }
        _ if app.code.emission.is_none() && app.programs.doc.is_some() => {
            return super::empty_note(buf, inner, app.theme.dim, "emitting...")
        }
        _ => return super::empty_note(buf, inner, app.theme.dim, "no program open"),
    };
    let focused = app.screen.focus == Focus::Sass;
    // With the PTX pane focused, the instructions of its cursor line stand out.
    let ptx_line = (app.screen.focus == Focus::Ptx).then_some(app.panes.ptx.cursor as u32 + 1);
    // Wide panes show the control bits and live registers after the address.
    let annotated = inner.width >= ANNOTATED_MIN_WIDTH;
    let line = |i: usize| match annotated {
        true => view.annotated_line(i),
        false => view.line(i),
    };
    let gutter = |i: usize| {
        view.rows
            .get(i)
            .and_then(|r| r.ptx_line)
            .map_or(String::new(), |l| l.to_string())
    };
    let mark = |i: usize| {
        let row = view.rows.get(i);
        let of_node = node.is_some() && row.and_then(|r| r.node.as_deref()) == node;
        let of_line = ptx_line.is_some() && row.and_then(|r| r.ptx_line) == ptx_line;
        Mark::of(focused && i == app.panes.sass.cursor, of_node || of_line)
    };
    let ptx_len = app.ptx_len().max(1);
    // Each instruction shows the share of the statement that owns it.
    let heat = crate::tui::profile::Heat::of(app);
    let heat_of = |i: usize| heat.share(view.rows.get(i).and_then(|r| r.node.as_deref()));
    code_view::draw(
        buf,
        inner,
        app,
        hl,
        &CodeView {
            pane: Focus::Sass,
            lang: Lang::Sass,
            generation: app.code.generation,
            len: view.len(),
            gutter_width: code_view::digits(ptx_len),
            line: &line,
            gutter: &gutter,
            mark: &mark,
            heat: (!heat.is_empty()).then_some(&heat_of as &dyn Fn(usize) -> Option<f64>),
        },
    );
}
