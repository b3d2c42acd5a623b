//! A pinned lowering: `m` keeps the current kernel (its emit options, its PTX and, once
//! assembled, its SASS) so that after changing the workgroup size, the target sm or the
//! unrolling, the PTX and SASS panes can show their line diff against it (`D`) and the IR
//! gutter the change of each statement's PTX lines and SASS instructions. `P` swaps back to
//! the pinned options and pins the ones left, so it flips between two lowerings.
//!
//! The diff is computed in the update step whenever either side changes (a new emission, a
//! SASS listing arriving, pinning), never while drawing.

use std::collections::BTreeMap;
use std::sync::Arc;

use similar::{capture_diff_slices, Algorithm, DiffOp};

use super::analysis::PtxView;
use super::background::ResKey;
use super::sass_view::SassView;

/// The pinned lowering.
#[derive(Debug, Clone)]
pub struct Pin {
    /// Document and emit options it was made for (its SASS listing's key).
    pub key: ResKey,
    /// The Program's name.
    pub name: String,
    /// The workgroup override in effect when pinned (None: the Program's own).
    pub workgroup: Option<[u32; 3]>,
    /// Its PTX.
    pub ptx: Arc<PtxView>,
    /// Its SASS, once assembled.
    pub sass: Option<Arc<SassView>>,
}

impl Pin {
    /// `vadd_f32 sm_90 wg 256,1,1` (and `rolled` when built without unrolling).
    pub fn label(&self) -> String {
        format!("{} {}", self.name, label(&self.key))
    }
}

/// The label of a lowering's options.
pub fn label(key: &ResKey) -> String {
    let o = &key.1;
    let [x, y, z] = o.workgroup_size;
    let mut s = format!("sm_{} wg {x},{y},{z}", o.sm);
    if !o.unroll {
        s.push_str(" rolled");
    }
    s
}

/// Which side a diff row comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// In both.
    Same,
    /// Only in the pinned lowering.
    Removed,
    /// Only in the current one.
    Added,
}

/// One row of a line diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Side.
    pub tag: Tag,
    /// The line (SASS without its address, which shifts with every change).
    pub text: String,
    /// The statement it belongs to (the pinned side's for removed rows).
    pub node: Option<String>,
    /// Its 0-based line in its side (the pinned one for removed rows, else the current one).
    pub line: usize,
}

/// A whole-listing line diff (every line, not hunks: the pane scrolls through it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineDiff {
    /// Rows in order.
    pub rows: Vec<Row>,
    /// Rows only in the current lowering.
    pub added: usize,
    /// Rows only in the pinned one.
    pub removed: usize,
}

impl LineDiff {
    /// The diff from `old` to `new` (each a line with its statement).
    pub fn of(old: &[(String, Option<String>)], new: &[(String, Option<String>)]) -> Self {
        let a: Vec<&str> = old.iter().map(|l| l.0.as_str()).collect();
        let b: Vec<&str> = new.iter().map(|l| l.0.as_str()).collect();
        let mut d = LineDiff::default();
        let row = |tag, (line, l): (usize, &(String, Option<String>))| Row {
            tag,
            text: l.0.clone(),
            node: l.1.clone(),
            line,
        };
        for op in capture_diff_slices(Algorithm::Myers, &a, &b) {
            match op {
                DiffOp::Equal { new_index, len, .. } => {
                    d.rows.extend(
                        new.iter()
                            .enumerate()
                            .skip(new_index)
                            .take(len)
                            .map(|l| row(Tag::Same, l)),
                    );
                }
                DiffOp::Delete {
                    old_index, old_len, ..
                } => {
                    d.removed += old_len;
                    d.rows.extend(
                        old.iter()
                            .enumerate()
                            .skip(old_index)
                            .take(old_len)
                            .map(|l| row(Tag::Removed, l)),
                    );
                }
                DiffOp::Insert {
                    new_index, new_len, ..
                } => {
                    d.added += new_len;
                    d.rows.extend(
                        new.iter()
                            .enumerate()
                            .skip(new_index)
                            .take(new_len)
                            .map(|l| row(Tag::Added, l)),
                    );
                }
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => {
                    d.removed += old_len;
                    d.added += new_len;
                    d.rows.extend(
                        old.iter()
                            .enumerate()
                            .skip(old_index)
                            .take(old_len)
                            .map(|l| row(Tag::Removed, l)),
                    );
                    d.rows.extend(
                        new.iter()
                            .enumerate()
                            .skip(new_index)
                            .take(new_len)
                            .map(|l| row(Tag::Added, l)),
                    );
                }
            }
        }
        d
    }

    /// The first and last row of `node`, if it has any.
    pub fn span_of(&self, node: &str) -> Option<(usize, usize)> {
        super::sass_view::span_of(&self.rows, node, |r| r.node.as_deref())
    }
}

/// A statement's count in the pinned and the current lowering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delta {
    /// In the pinned lowering.
    pub pinned: u32,
    /// In the current one.
    pub now: u32,
}

impl Delta {
    /// `+3`, `-2` or `=`.
    pub fn short(self) -> String {
        match i64::from(self.now) - i64::from(self.pinned) {
            0 => "=".to_string(),
            d => format!("{d:+}"),
        }
    }
}

/// The diff of the current lowering against the pin, as the panes show it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PinView {
    /// The pin's label.
    pub label: String,
    /// PTX line diff.
    pub ptx: LineDiff,
    /// SASS line diff (None until both sides are assembled).
    pub sass: Option<LineDiff>,
    /// Per statement: PTX lines.
    pub ptx_lines: BTreeMap<String, Delta>,
    /// Per statement: SASS instructions (empty until both sides are assembled).
    pub sass_instr: BTreeMap<String, Delta>,
}

impl PinView {
    /// The diff of (`ptx`, `sass`) against `pin`.
    pub fn new(pin: &Pin, ptx: &PtxView, sass: Option<&SassView>) -> Self {
        let (old_ptx, new_ptx) = (ptx_lines(&pin.ptx), ptx_lines(ptx));
        let both_sass = pin.sass.as_deref().zip(sass);
        let sass_lines = both_sass.map(|(o, n)| (sass_lines(o), sass_lines(n)));
        PinView {
            label: pin.label(),
            ptx: LineDiff::of(&old_ptx, &new_ptx),
            sass: sass_lines.as_ref().map(|(o, n)| LineDiff::of(o, n)),
            ptx_lines: deltas(&old_ptx, &new_ptx),
            sass_instr: sass_lines
                .as_ref()
                .map_or_else(BTreeMap::new, |(o, n)| deltas(o, n)),
        }
    }

    /// The IR gutter's note for `node`: `p+2 s-1` (PTX lines, SASS instructions), `=` when
    /// neither changed, empty when the statement produced nothing on either side.
    pub fn gutter(&self, node: &str) -> String {
        let p = self.ptx_lines.get(node);
        let s = self.sass_instr.get(node);
        let changed = |d: Option<Delta>| d.filter(|d| d.pinned != d.now);
        let (p, s) = (p.copied(), s.copied());
        match (changed(p), changed(s)) {
            (None, None) if p.is_some() || s.is_some() => "=".to_string(),
            (None, None) => String::new(),
            (Some(p), None) => format!("p{}", p.short()),
            (None, Some(s)) => format!("s{}", s.short()),
            (Some(p), Some(s)) => format!("p{} s{}", p.short(), s.short()),
        }
    }
}

/// Each line of `v` with its statement.
fn ptx_lines(v: &PtxView) -> Vec<(String, Option<String>)> {
    (0..v.len())
        .map(|i| (v.line(i).to_string(), v.corr.node_at(i).map(str::to_string)))
        .collect()
}

/// Each row of `v` without its address (`0070  `), with its statement.
fn sass_lines(v: &SassView) -> Vec<(String, Option<String>)> {
    v.rows
        .iter()
        .map(|r| (strip_address(&r.text).to_string(), r.node.clone()))
        .collect()
}

/// `0070  ULDC UR4, ...` -> `ULDC UR4, ...`; labels stay as they are.
fn strip_address(text: &str) -> &str {
    match text.split_once("  ") {
        Some((a, rest)) if !a.is_empty() && a.chars().all(|c| c.is_ascii_hexdigit()) => rest,
        _ => text,
    }
}

/// Lines per statement on each side.
fn deltas(
    old: &[(String, Option<String>)],
    new: &[(String, Option<String>)],
) -> BTreeMap<String, Delta> {
    let mut m: BTreeMap<String, Delta> = BTreeMap::new();
    for n in old.iter().filter_map(|l| l.1.as_ref()) {
        m.entry(n.clone()).or_default().pinned += 1;
    }
    for n in new.iter().filter_map(|l| l.1.as_ref()) {
        m.entry(n.clone()).or_default().now += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        v.iter()
            .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
            .collect()
    }

    #[test]
    fn the_diff_keeps_every_line_and_counts_both_sides() {
        let old = lines(&[
            ("a", None),
            ("mul x", Some("body[0]")),
            ("st y", Some("body[1]")),
        ]);
        let new = lines(&[
            ("a", None),
            ("shl x", Some("body[0]")),
            ("add x", Some("body[0]")),
            ("st y", Some("body[1]")),
        ]);
        let d = LineDiff::of(&old, &new);
        let tags: Vec<Tag> = d.rows.iter().map(|r| r.tag).collect();
        assert_eq!(
            tags,
            [Tag::Same, Tag::Removed, Tag::Added, Tag::Added, Tag::Same]
        );
        assert_eq!((d.added, d.removed), (2, 1));
        assert_eq!(d.rows[1].text, "mul x");
        let lines: Vec<usize> = d.rows.iter().map(|r| r.line).collect();
        assert_eq!(lines, [0, 1, 1, 2, 3]);
        assert_eq!(d.span_of("body[0]"), Some((1, 3)));
        assert_eq!(d.span_of("body[9]"), None);
        let m = deltas(&old, &new);
        assert_eq!(m["body[0]"], Delta { pinned: 1, now: 2 });
        assert_eq!(m["body[0]"].short(), "+1");
        assert_eq!(m["body[1]"].short(), "=");
    }

    #[test]
    fn identical_listings_have_no_changes() {
        let l = lines(&[("x", Some("body[0]")), ("y", None)]);
        let d = LineDiff::of(&l, &l);
        assert_eq!((d.added, d.removed, d.rows.len()), (0, 0, 2));
        assert!(d.rows.iter().all(|r| r.tag == Tag::Same));
    }

    #[test]
    fn sass_addresses_are_not_compared() {
        assert_eq!(
            strip_address("0070  ULDC UR4, c[0x0][0x218]"),
            "ULDC UR4, c[0x0][0x218]"
        );
        assert_eq!(strip_address(".L_x_0:"), ".L_x_0:");
        assert_eq!(strip_address("not  hex"), "not  hex");
    }
}
