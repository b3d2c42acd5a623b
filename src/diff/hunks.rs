//! The unified line diff of two lowerings at one level, with statement headers: each line
//! carries the statement it belongs to, and a hunk line whose statement differs from the
//! line before it is preceded by a `// -- node --` header in the text form.

use serde::Serialize;
use similar::{capture_diff_slices, Algorithm, ChangeTag};

use super::{Level, Side};

/// One line of a lowering, with its statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The text (SASS without its address).
    pub text: String,
    /// The owning statement, if any.
    pub node: Option<String>,
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HunkLine {
    /// `" "` (both), `"-"` (old only) or `"+"` (new only).
    pub tag: &'static str,
    /// The text.
    pub text: String,
    /// The statement it belongs to (the new side's for `" "` and `"+"`).
    pub node: Option<String>,
}

/// A group of changes with up to three lines of context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// First old line (1-based).
    pub old_start: usize,
    /// Old lines in the hunk.
    pub old_len: usize,
    /// First new line (1-based).
    pub new_start: usize,
    /// New lines in the hunk.
    pub new_len: usize,
    /// The lines.
    pub lines: Vec<HunkLine>,
}

/// Context lines around each change.
const CONTEXT: usize = 3;

/// The lines of `side` at `level`.
pub fn lines(side: &Side, level: Level) -> Vec<Line> {
    match level {
        Level::Ir => side
            .printed
            .lines
            .iter()
            .map(|l| Line {
                text: l.code.clone(),
                node: l.node.as_ref().map(|n| n.to_string()),
            })
            .collect(),
        Level::Ptx => {
            let owners = side.kernel.source_map.owners();
            side.kernel
                .ptx
                .lines()
                .enumerate()
                .map(|(i, t)| Line {
                    text: t.to_string(),
                    node: owners.get(i).copied().flatten().map(str::to_string),
                })
                .collect()
        }
        Level::Sass => side.sass.as_ref().map_or_else(Vec::new, |l| {
            l.instructions
                .iter()
                .map(|i| Line {
                    text: i.text.clone(),
                    node: i.node.clone(),
                })
                .collect()
        }),
    }
}

/// The hunks of the diff from `old` to `new` (compared by text).
pub fn of(old: &[Line], new: &[Line]) -> Vec<Hunk> {
    let a: Vec<&str> = old.iter().map(|l| l.text.as_str()).collect();
    let b: Vec<&str> = new.iter().map(|l| l.text.as_str()).collect();
    let ops = capture_diff_slices(Algorithm::Myers, &a, &b);
    let mut out = Vec::new();
    for group in similar::group_diff_ops(ops, CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (o0, n0) = (first.old_range().start, first.new_range().start);
        let (o1, n1) = (last.old_range().end, last.new_range().end);
        let mut lines = Vec::new();
        for op in &group {
            for (tag, old_range, new_range) in op
                .iter_changes(&a, &b)
                .map(|c| (c.tag(), c.old_index(), c.new_index()))
            {
                let (t, line) = match tag {
                    ChangeTag::Equal => (" ", new_range.map(|j| &new[j])),
                    ChangeTag::Delete => ("-", old_range.map(|i| &old[i])),
                    ChangeTag::Insert => ("+", new_range.map(|j| &new[j])),
                };
                if let Some(l) = line {
                    lines.push(HunkLine {
                        tag: t,
                        text: l.text.clone(),
                        node: l.node.clone(),
                    });
                }
            }
        }
        out.push(Hunk {
            old_start: o0 + 1,
            old_len: o1 - o0,
            new_start: n0 + 1,
            new_len: n1 - n0,
            lines,
        });
    }
    out
}

/// The hunks as unified-diff text with `// -- node --` headers where the statement changes.
pub fn text(hunks: &[Hunk]) -> String {
    let mut s = String::new();
    for h in hunks {
        s.push_str(&format!(
            "@@ -{},{} +{},{} @@\n",
            h.old_start, h.old_len, h.new_start, h.new_len
        ));
        let mut node: Option<&str> = None;
        for l in &h.lines {
            let here = l.node.as_deref();
            if here.is_some() && here != node {
                s.push_str(&format!("   // -- {} --\n", here.unwrap_or_default()));
            }
            node = here.or(node);
            s.push_str(l.tag);
            s.push(' ');
            s.push_str(&l.text);
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(texts: &[(&str, Option<&str>)]) -> Vec<Line> {
        texts
            .iter()
            .map(|(t, n)| Line {
                text: t.to_string(),
                node: n.map(str::to_string),
            })
            .collect()
    }

    #[test]
    fn one_changed_line_gives_one_hunk_with_context_and_headers() {
        let mut old: Vec<(String, Option<&str>)> = (0..20)
            .map(|i| (format!("l{i}"), Some("body[0]")))
            .collect();
        old[10].1 = Some("body[1]");
        let mut new = old.clone();
        new[10].0 = "changed".into();
        let o: Vec<(&str, Option<&str>)> = old.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        let n: Vec<(&str, Option<&str>)> = new.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        let h = of(&lines(&o), &lines(&n));
        assert_eq!(h.len(), 1);
        assert_eq!(
            (h[0].old_start, h[0].old_len, h[0].new_start, h[0].new_len),
            (8, 7, 8, 7)
        );
        let tags: String = h[0].lines.iter().map(|l| l.tag).collect();
        assert_eq!(tags, "   -+   ");
        let t = text(&h);
        assert!(
            t.starts_with("@@ -8,7 +8,7 @@\n   // -- body[0] --\n  l7\n"),
            "{t}"
        );
        assert!(
            t.contains("   // -- body[1] --\n- l10\n+ changed\n   // -- body[0] --\n"),
            "{t}"
        );
        assert!(of(&lines(&o), &lines(&o)).is_empty());
    }
}
