//! Cache tab: PTX and module cache entries, hits, misses, bytes, JIT time saved.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::tui::app::App;

/// Draws the cache statistics (or why there are none).
pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    super::tabs::counters(
        buf,
        area,
        app,
        &app.jobs.session.cache_rows(),
        "cache statistics",
    );
}
