//! The Timeline tab: one lane per SM over time (each column shows what the SM's blocks
//! mostly did then: a step in its plan group's colour, its number where a run of it begins;
//! waits shaded `░`; idle blank), busy and waiting share per SM in the gutter, a time axis,
//! the slice under the cursor, and below the summary: kernel time, the bubble fraction,
//! per step its span, busy and waiting time and the slice that ended it (the critical path),
//! the waits, a Program's block waves and the consistency check. Without a timeline it says
//! how to get one.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use crate::timeline::trace::slice_name;
use crate::tui::app::App;
use crate::tui::timeline::{cells, Cell, TimelineData, TimelineState};

/// Columns of the lane gutter (`  SM busy wait │`).
pub const GUTTER: u16 = 16;

/// Lanes shown in a content area `height` rows high with `lanes` lanes and a summary of
/// `summary` lines: at least half the rows (the rest for the header, axis, cursor line and
/// the summary's first lines), more when the whole summary fits below.
pub fn lane_rows(height: u16, lanes: usize, summary: usize) -> usize {
    let h = height.saturating_sub(3) as usize;
    lanes
        .min((h / 2).max(h.saturating_sub(summary)).max(2))
        .min(h)
}

/// The Timeline tab's state (its component keeps it among the panel's tab states).
pub fn state(app: &App) -> Option<&TimelineState> {
    app.detail.states.get::<TimelineState>()
}

/// Lanes shown now (the detail panel's content at the current size).
pub fn lane_page(app: &App) -> usize {
    let a = crate::tui::layout::areas(app.screen.size.0, app.screen.size.1, app);
    let content = crate::tui::layout::detail_content(a.detail);
    state(app).and_then(TimelineState::current).map_or(1, |d| {
        lane_rows(content.height, d.lanes.len(), summary(app, d).len())
    })
}

/// How to get a timeline, shown while there is none.
pub const HOW_TO: &str = "No timeline yet. On a machine with a GPU press r: after the timed, verified run the inspector records one more, instrumented round (thread 0 of every block stamps %globaltimer; the timed figures stay those of the plain kernel) and draws every SM's lane here. Without a GPU, open the bundled recording (an H200's): `vyrescope fixtures/pipelines/reduce_total_normalize.json --timeline tests/data/reduce_total_normalize.h200.rec.json`; or record your own on a GPU with `vyrescope run FILE --backend cuda --timeline --timeline-out rec.json` and open it here with `vyrescope FILE --timeline rec.json`.";

/// Draws the tab into `area`.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let fallback;
    let st = match state(app) {
        Some(s) => s,
        None => {
            fallback = TimelineState::default();
            &fallback
        }
    };
    let Some(d) = st.current() else {
        let msg = match &st.error {
            Some(e) => format!("The last recording failed: {e}\n\n{HOW_TO}"),
            None => HOW_TO.to_string(),
        };
        return super::empty_note(buf, area, t.dim, &msg);
    };
    let (start, len) = st.window();
    let width = area.width.saturating_sub(GUTTER) as usize;
    if width == 0 {
        return super::empty_note(buf, area, t.dim, "too narrow for the lanes: press e");
    }
    let mut lines = vec![header(app, d, st), axis(app, start, len, width)];
    let below = summary(app, d);
    let rows = lane_rows(area.height, d.lanes.len(), below.len());
    let colours = [t.ok, t.info, t.warning, t.key, t.title];
    for lane in st.lane_scroll..(st.lane_scroll + rows).min(d.lanes.len()) {
        let l = &d.lanes[lane];
        let pct = |ns: u64| (ns as f64 * 100.0 / d.span as f64).round() as u64;
        let here = lane == st.lane;
        let mut spans = vec![Span::styled(
            format!(
                "{}{:>3} {:>3}% {:>3}% ",
                if here { '▶' } else { ' ' },
                l.sm,
                pct(l.busy_ns),
                pct(l.wait_ns)
            ),
            if here { t.cursor } else { t.dim },
        )];
        spans.push(Span::styled("│", t.border));
        // The cursor slice's columns, on its own lane.
        let marked = st.cursor().filter(|_| here).map(|s| {
            let col =
                |x: u64| (x.saturating_sub(start) as u128 * width as u128 / len as u128) as usize;
            let (a, b) = (d.rel(s.start_ns), d.rel(s.end_ns));
            (a < start + len && b >= start).then(|| (col(a), col(b.max(a + 1) - 1).min(width - 1)))
        });
        for (c, cell) in cells(d, lane, start, len, width).into_iter().enumerate() {
            let (glyph, style) = match cell {
                Cell::Idle => (' ', t.text),
                Cell::Wait => ('░', t.dim),
                Cell::Step {
                    launch,
                    step,
                    first,
                    ..
                } => {
                    let g = match (first, step) {
                        (true, Some(k)) => char::from_digit(k % 10, 10).unwrap_or('█'),
                        _ => '█',
                    };
                    (g, colours[launch as usize % colours.len()])
                }
            };
            let on = marked.flatten().is_some_and(|(a, b)| c >= a && c <= b);
            let glyph = if on && glyph == ' ' { '▒' } else { glyph };
            spans.push(Span::styled(
                glyph.to_string(),
                if on { t.cursor } else { style },
            ));
        }
        lines.push(Line::from(spans));
    }
    lines.push(cursor_line(app, d, st));
    lines.extend(below);
    Paragraph::new(lines).render(area, buf);
}

/// `1.50` in the unit a window of `len` ns reads best in.
fn time_label(ns: u64, len: u64) -> String {
    let us = ns as f64 / 1e3;
    match len {
        0..=9_999 => format!("{us:.3}"),
        10_000..=99_999 => format!("{us:.2}"),
        100_000..=999_999 => format!("{us:.1}"),
        _ => format!("{us:.0}"),
    }
}

fn header(app: &App, d: &TimelineData, st: &TimelineState) -> Line<'static> {
    let t = &app.theme;
    let (start, len) = st.window();
    let form = if d.label.is_empty() {
        "kernel".to_string()
    } else {
        format!("{} form", d.label)
    };
    let forms = match (
        st.forms.len(),
        app.keymap
            .first_key(crate::tui::action::Command::TimelineForm),
    ) {
        (n, Some(k)) if n > 1 => format!(" · form {}/{n}, {k}: next", st.form + 1),
        _ => String::new(),
    };
    let view = if len >= d.span {
        "fit".to_string()
    } else {
        format!("x{:.0}", d.span as f64 / len as f64)
    };
    Line::from(vec![
        Span::styled(format!("{form} "), t.title),
        Span::styled(
            format!(
                "· {} · {}..{} us ({view}){forms}",
                d.origin,
                time_label(start, len),
                time_label(start + len, len)
            ),
            t.text,
        ),
    ])
}

fn axis(app: &App, start: u64, len: u64, width: usize) -> Line<'static> {
    let t = &app.theme;
    let mut row = vec![' '; width];
    let mut c = 0;
    while c < width {
        let at = start + (c as u128 * len as u128 / width.max(1) as u128) as u64;
        let label = format!("▏{}", time_label(at, len));
        let n = label.chars().count();
        if c + n + 3 > width {
            break;
        }
        for (k, ch) in label.chars().enumerate() {
            row[c + k] = ch;
        }
        c += n.max(12) + 2;
    }
    let end = "us";
    for (k, ch) in end.chars().enumerate() {
        if let Some(cell) = row.get_mut(width.saturating_sub(end.len()) + k) {
            *cell = ch;
        }
    }
    Line::from(vec![
        Span::styled("  SM busy wait ", t.dim),
        Span::styled("│", t.border),
        Span::styled(row.into_iter().collect::<String>(), t.dim),
    ])
}

fn cursor_line(app: &App, d: &TimelineData, st: &TimelineState) -> Line<'static> {
    let t = &app.theme;
    let Some(s) = st.cursor() else {
        return Line::from(Span::styled("no slice on this lane", t.dim));
    };
    let kernel = d
        .capture
        .launches
        .get(s.launch as usize)
        .map_or("", |l| l.kernel.as_str());
    Line::from(vec![
        Span::styled("▶ ", t.key),
        Span::styled(slice_name(s), t.title),
        Span::styled(
            format!(
                " · SM {} (block {}) · start {:.3} us · {:.3} us · {kernel}",
                s.sm,
                s.block,
                d.rel(s.start_ns) as f64 / 1e3,
                s.dur_ns() as f64 / 1e3
            ),
            t.text,
        ),
    ])
}

fn summary(app: &App, d: &TimelineData) -> Vec<Line<'static>> {
    let t = &app.theme;
    let s = &d.summary;
    let mut out = Vec::new();
    let events: f64 = d.capture.launches.iter().filter_map(|l| l.device_ms).sum();
    let counted = s.sms_counted.max(1) as f64 * d.span as f64;
    let busy: u64 = d.lanes.iter().map(|l| l.busy_ns).sum();
    let wait: u64 = d.lanes.iter().map(|l| l.wait_ns).sum();
    out.push(Line::from(Span::styled(
        format!(
            "kernel {:.2} us on {}/{} SMs · bubble {:.1}% · SM time: busy {:.1}% wait {:.1}% idle {:.1}% · CUDA events {:.2} us",
            s.kernel_ms * 1e3,
            s.sms,
            s.sms_counted,
            s.bubble_pct,
            busy as f64 * 100.0 / counted,
            wait as f64 * 100.0 / counted,
            (100.0 - (busy + wait) as f64 * 100.0 / counted).max(0.0),
            events * 1e3
        ),
        t.text,
    )));
    if s.steps.len() > 1 {
        let path: Vec<String> = s
            .steps
            .iter()
            .map(|st| {
                format!(
                    "{} wg {} (SM {}, {:.2} us)",
                    st.step.map_or("kernel".into(), |k| format!("step {k}")),
                    st.critical.workgroup,
                    st.critical.sm,
                    st.end_us
                )
            })
            .collect();
        out.push(Line::from(Span::styled(
            format!("critical path: {}", path.join(" → ")),
            t.info,
        )));
    }
    out.push(Line::from(Span::styled(
        "step        span us          busy Σus    wait Σus  slices  ended by (critical path)",
        t.dim,
    )));
    for st in &s.steps {
        let name = st.step.map_or("kernel".into(), |k| format!("{k}"));
        out.push(Line::from(Span::styled(
            format!(
                "{name:<7} {:>8.2} .. {:>8.2}  {:>10.2}  {:>10.2}  {:>6}  wg {} on SM {}: {:.2} us (longest {:.2} us)",
                st.start_us,
                st.end_us,
                st.busy_us,
                st.wait_us,
                st.slices,
                st.critical.workgroup,
                st.critical.sm,
                st.critical.dur_us,
                st.critical.longest_us
            ),
            t.text,
        )));
    }
    for w in &s.waits {
        out.push(Line::from(Span::styled(
            format!(
                "{} at {} (launch {}): {} blocks, mean {:.2} us, max {:.2} us",
                w.kind, w.node, w.launch, w.blocks, w.mean_us, w.max_us
            ),
            t.dim,
        )));
    }
    if let Some(w) = &s.waves {
        out.push(Line::from(Span::styled(
            format!(
                "waves: {} blocks, at most {} resident: {} wave{}, the last {:.0}% full",
                w.blocks,
                w.resident,
                w.waves,
                if w.waves == 1 { "" } else { "s" },
                w.last_wave_occupancy * 100.0
            ),
            t.info,
        )));
    }
    let check = if d.problems.is_empty() {
        Span::styled(
            format!(
                "check: ok ({} slices, every (step, workgroup) once, waits inside their kernel)",
                d.decoded.slices.len()
            ),
            t.ok,
        )
    } else {
        Span::styled(format!("check FAILED: {}", d.problems.join("; ")), t.error)
    };
    out.push(Line::from(check));
    out
}
