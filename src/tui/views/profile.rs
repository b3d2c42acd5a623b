//! Profile tab: the hot statements of the last profile (`p`), hottest first, with their own
//! and total shares, node, IR line and text; the cursor row selects its statement in the
//! code panes. Above the list: what the numbers are (an instruction-count ESTIMATE offline,
//! loudly) and their total.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};
use serde_json::{json, Value};

use super::tab_rows::{Offset, RowList};
use crate::profile::{Profile, Source};
use crate::tui::app::App;
use crate::tui::profile::current;

/// Rows above the list: what the numbers are, and their total.
const HEAD_ROWS: u16 = 2;

/// The hot list in `area` (below the two lines that say what it is), when there is one.
pub fn list(app: &App, area: Rect) -> Option<RowList> {
    let (p, _) = current(app)?;
    if p.statements.is_empty() || area.height <= HEAD_ROWS {
        return None;
    }
    let at = Rect {
        y: area.y + HEAD_ROWS,
        height: area.height - HEAD_ROWS,
        ..area
    };
    Some(RowList::rows_in(at, true, p.statements.len(), Offset::Main))
}

/// Why there is no list to show: no profile, a failed one, a stale one.
fn note(app: &App) -> (String, bool) {
    let view = app.jobs.session.profile.as_ref();
    let same_file = view.is_some_and(|v| {
        app.programs
            .doc
            .as_ref()
            .is_some_and(|d| d.path == v.key.path)
    });
    match view {
        Some(v) if same_file && v.stale => (
            "stale: the Program changed since it was profiled (reloaded), so its heat is hidden - press p to profile it again".into(),
            false,
        ),
        Some(v) if same_file => match &v.result {
            Err(e) => (format!("profile failed: {e}"), true),
            Ok(_) => ("the profile has no statement that ran".into(), false),
        },
        _ => (
            "no profile yet - press p (with a GPU: the instrumented build in the GPU worker; without one: an instruction-count ESTIMATE on the reference interpreter)".into(),
            false,
        ),
    }
}

/// The first two lines: what the numbers are, then the total, sampling and overhead.
fn head(app: &App, p: &Profile) -> Vec<Line<'static>> {
    let t = &app.theme;
    let style = if p.source == Source::Estimate {
        t.warning
    } else {
        t.title
    };
    let step = app
        .programs
        .doc
        .as_ref()
        .and_then(|d| d.pipeline.as_ref())
        .map_or(String::new(), |pv| {
            format!("step {}/{} ", pv.step + 1, pv.steps())
        });
    let mut total = format!("{step}`{}` total: {} {}", p.kernel, p.total, p.unit);
    if let Some(s) = p.stride.filter(|&s| s > 1) {
        total += &format!(" · every {s}th workgroup sampled");
    }
    if let Some(o) = p.overhead {
        total += &format!(" · overhead {:.2}x", o.ratio());
    }
    if p.source == Source::Pc {
        total += &format!(" · {} unmapped", p.unmapped);
    }
    vec![
        Line::styled(p.source.describe().to_string(), style),
        Line::styled(total, t.dim),
    ]
}

/// Draws the tab.
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let t = &app.theme;
    let Some((p, _)) = current(app) else {
        let (msg, error) = note(app);
        let style = if error { t.error } else { t.dim };
        return Paragraph::new(msg)
            .style(style)
            .wrap(Wrap { trim: true })
            .render(area, buf);
    };
    let head_area = Rect {
        height: HEAD_ROWS.min(area.height),
        ..area
    };
    Paragraph::new(head(app, p)).render(head_area, buf);
    let Some(list) = list(app, area) else {
        return;
    };
    let body = list.body();
    let header = Line::styled(
        format!(
            "{:>6} {:>7}  {:<24} {:>5}  statement",
            "self%", "total%", "node", "line"
        ),
        t.title,
    );
    let mut lines = vec![header];
    for i in list.visible(app) {
        let Some(s) = p.statements.get(i) else {
            continue;
        };
        let mut spans = vec![
            Span::styled(
                format!("{:>6.1}", 100.0 * s.self_share),
                t.heat(s.self_share),
            ),
            Span::raw(format!(
                " {:>7.1}  {:<24} {:>5}  ",
                100.0 * s.total_share,
                s.node,
                s.ir_line.map_or("-".into(), |l| l.to_string())
            )),
            Span::raw(s.text.clone()),
        ];
        if let Some((reason, n)) = s.stalls.first() {
            spans.push(Span::styled(
                format!("  stall {} ({n})", crate::profile::pc::short_reason(reason)),
                t.warning,
            ));
        }
        lines.push(Line::from(spans).style(list.row_style(app, i, Style::new())));
    }
    Paragraph::new(lines).render(body, buf);
    list.draw_scrollbar(buf, app);
}

/// What `x` exports on the tab: the profiles as `vyrescope profile --json` prints them,
/// whether they are stale, or why there are none.
pub fn data(app: &App) -> Value {
    match app.jobs.session.profile.as_ref() {
        None => Value::Null,
        Some(v) => match &v.result {
            Ok(p) => json!({
                "file": v.key.path,
                "stale": v.stale,
                "profiles": **p,
            }),
            Err(e) => json!({ "file": v.key.path, "error": e.to_string() }),
        },
    }
}
