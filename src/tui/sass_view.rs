//! The SASS pane's model: a correlated listing ([`crate::sass::SassListing`]) laid out as
//! rows (labels on rows of their own), with the node and PTX line of every row, and the
//! pane's mode (hidden, beside the PTX pane, instead of it).

use std::sync::Arc;

use crate::sass::control::NOTATION_WIDTH;
use crate::sass::SassListing;

/// Narrowest pane interior that shows the control-bit and live-register columns.
pub const ANNOTATED_MIN_WIDTH: u16 = 64;

/// Where the SASS pane goes (`s` cycles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SassMode {
    /// Not shown.
    #[default]
    Off,
    /// IR | PTX | SASS side by side (on terminals narrower than [`THREE_WAY_MIN_WIDTH`] the
    /// SASS pane takes the PTX pane's place instead).
    Beside,
    /// IR | SASS: the SASS pane instead of the PTX pane.
    Replace,
}

/// Narrowest terminal that shows IR, PTX and SASS side by side.
pub const THREE_WAY_MIN_WIDTH: u16 = 140;

impl SassMode {
    /// The next mode in the `s` cycle.
    pub fn next(self) -> SassMode {
        match self {
            SassMode::Off => SassMode::Beside,
            SassMode::Beside => SassMode::Replace,
            SassMode::Replace => SassMode::Off,
        }
    }
}

/// One row of the pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SassRow {
    /// `0070  ULDC UR4, c[0x0][0x218]`, or `.L_x_0:` for a label.
    pub text: String,
    /// The same with the control bits and the live registers after the address
    /// (`0070  B------:R-:W-:-:S01   4  ULDC UR4, c[0x0][0x218]`), for wide panes.
    pub annotated: String,
    /// PTX line (1-based) of the instruction.
    pub ptx_line: Option<u32>,
    /// Owning node.
    pub node: Option<String>,
}

/// A listing as pane rows.
#[derive(Debug, Clone, PartialEq)]
pub struct SassView {
    /// The listing.
    pub listing: SassListing,
    /// Rows.
    pub rows: Vec<SassRow>,
}

impl SassView {
    /// Lays `listing` out as rows.
    pub fn new(listing: SassListing) -> Self {
        let mut rows = Vec::with_capacity(listing.instructions.len() + listing.labels.len());
        let mut labels = listing.labels.iter().peekable();
        for i in &listing.instructions {
            while let Some(l) = labels.next_if(|l| l.address <= i.address) {
                let text = format!("{}:", l.name);
                rows.push(SassRow {
                    annotated: text.clone(),
                    text,
                    ptx_line: None,
                    node: None,
                });
            }
            let control = i.control.map_or("?".to_string(), |c| c.notation());
            let live = i.live.map_or("?".to_string(), |l| l.gpr.to_string());
            rows.push(SassRow {
                text: format!("{:04x}  {}", i.address, i.text),
                annotated: format!(
                    "{:04x}  {control:<w$}  {live:>3}  {}",
                    i.address,
                    i.text,
                    w = NOTATION_WIDTH
                ),
                ptx_line: i.ptx_line,
                node: i.node.clone(),
            });
        }
        SassView { listing, rows }
    }

    /// Rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True without rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Text of row `i`.
    pub fn line(&self, i: usize) -> &str {
        self.rows.get(i).map_or("", |r| r.text.as_str())
    }

    /// Text of row `i` with the control and live-register columns.
    pub fn annotated_line(&self, i: usize) -> &str {
        self.rows.get(i).map_or("", |r| r.annotated.as_str())
    }

    /// Node of row `i`.
    pub fn node_at(&self, i: usize) -> Option<&str> {
        self.rows.get(i)?.node.as_deref()
    }

    /// First and last row of `node`.
    pub fn span_of(&self, node: &str) -> Option<(usize, usize)> {
        span_of(&self.rows, node, |r| r.node.as_deref())
    }

    /// First row of PTX line `line` (1-based).
    pub fn row_of_ptx_line(&self, line: u32) -> Option<usize> {
        self.rows.iter().position(|r| r.ptx_line == Some(line))
    }
}

/// What the pane has for the current emission.
#[derive(Debug, Clone, PartialEq)]
pub enum SassState {
    /// Asked the worker; not back yet.
    Pending,
    /// The listing.
    Ready(Arc<SassView>),
    /// Why there is none (a missing tool says what to install).
    Failed(String),
}

/// First and last of `rows` whose statement (`node_of`) is `node`: the span the panes
/// reveal and mark for a selected statement.
pub fn span_of<T>(
    rows: &[T],
    node: &str,
    node_of: impl Fn(&T) -> Option<&str>,
) -> Option<(usize, usize)> {
    let first = rows.iter().position(|r| node_of(r) == Some(node))?;
    let last = rows.iter().rposition(|r| node_of(r) == Some(node))?;
    Some((first, last))
}
