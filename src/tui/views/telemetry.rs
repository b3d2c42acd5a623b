//! Telemetry tab: the runtime's counters since start.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::tui::app::App;

/// Draws the telemetry counters (or why there are none).
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    super::tabs::counters(
        buf,
        area,
        app,
        &app.jobs.session.telemetry_rows(),
        "telemetry",
    );
}
