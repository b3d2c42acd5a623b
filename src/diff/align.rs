//! Which statement of the old side is which of the new side.
//!
//! Two variants of one Program (the same printed IR) pair statements by node id. Two
//! different Programs (two versions of a file) pair them through a line diff of the printed
//! IR: the statements whose opening lines are equal or replaced one for one are the same
//! statement; the others were added or removed.

use similar::{capture_diff_slices, Algorithm, DiffOp};

use crate::ir::print::Printed;

/// Pairs of (old node, new node); `None` on the side where a statement is absent. In the
/// new side's order, removed statements where they were.
pub type Pairs = Vec<(Option<String>, Option<String>)>;

/// Statements of `p` in printed order (each node once, at its opening line).
fn openings(p: &Printed) -> Vec<(usize, String)> {
    let mut seen = std::collections::HashSet::new();
    p.lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.node.as_ref().map(|n| (i, n.to_string())))
        .filter(|(_, n)| seen.insert(n.clone()))
        .collect()
}

/// What a statement's opening line is about: the text before ` = ` (`y[i]`, `let c: f32`),
/// else its first word (`if`, `loop`, `barrier`).
fn head(line: &str) -> &str {
    match line.split_once(" = ") {
        Some((h, _)) => h,
        None => line.split_whitespace().next().unwrap_or(""),
    }
}

/// The pairs and how they were made (`node_id` or `ir_diff`).
pub fn statements(old: &Printed, new: &Printed) -> (Pairs, &'static str) {
    let (o, n) = (openings(old), openings(new));
    if old.text() == new.text() {
        return (
            n.into_iter()
                .map(|(_, id)| (Some(id.clone()), Some(id)))
                .collect(),
            "node_id",
        );
    }
    let text = |p: &Printed, (i, _): &(usize, String)| p.lines[*i].code.trim().to_string();
    let a: Vec<String> = o.iter().map(|x| text(old, x)).collect();
    let b: Vec<String> = n.iter().map(|x| text(new, x)).collect();
    let mut pairs = Pairs::new();
    for op in capture_diff_slices(Algorithm::Myers, &a, &b) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    pairs.push((
                        Some(o[old_index + k].1.clone()),
                        Some(n[new_index + k].1.clone()),
                    ));
                }
            }
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                for x in &o[old_index..old_index + old_len] {
                    pairs.push((Some(x.1.clone()), None));
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                for x in &n[new_index..new_index + new_len] {
                    pairs.push((None, Some(x.1.clone())));
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                // Edited statements: pair those of the same kind and target (`y[i]`,
                // `let c`, `if`), in order; the others were removed or added.
                let ha: Vec<&str> = a[old_index..old_index + old_len]
                    .iter()
                    .map(|t| head(t))
                    .collect();
                let hb: Vec<&str> = b[new_index..new_index + new_len]
                    .iter()
                    .map(|t| head(t))
                    .collect();
                for inner in capture_diff_slices(Algorithm::Myers, &ha, &hb) {
                    let (oi, ol) = (inner.old_range().start, inner.old_range().len());
                    let (ni, nl) = (inner.new_range().start, inner.new_range().len());
                    let paired = matches!(inner, DiffOp::Equal { .. });
                    if paired {
                        for k in 0..ol {
                            pairs.push((
                                Some(o[old_index + oi + k].1.clone()),
                                Some(n[new_index + ni + k].1.clone()),
                            ));
                        }
                        continue;
                    }
                    for k in 0..ol {
                        pairs.push((Some(o[old_index + oi + k].1.clone()), None));
                    }
                    for k in 0..nl {
                        pairs.push((None, Some(n[new_index + ni + k].1.clone())));
                    }
                }
            }
        }
    }
    (pairs, "ir_diff")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse::parse_program;
    use crate::ir::print::print_program;

    fn printed(body: &str) -> Printed {
        let text = format!(
            r#"{{"format": 1, "name": "k", "workgroup_size": [64, 1, 1],
              "buffers": [{{"name": "y", "binding": 0, "access": "read_write", "type": "f32"}}],
              "body": {body}}}"#
        );
        print_program(&parse_program(&text, "k.json").expect("valid"))
    }

    #[test]
    fn an_inserted_statement_does_not_shift_the_pairs_after_it() {
        let old = printed(
            r#"[{"let": "i", "value": {"gid": "x"}},
                              {"store": "y", "index": "i", "value": 1.0}]"#,
        );
        let new = printed(
            r#"[{"let": "i", "value": {"gid": "x"}},
                              {"let": "c", "value": 2.0},
                              {"store": "y", "index": "i", "value": "c"}]"#,
        );
        let (pairs, by) = statements(&old, &new);
        assert_eq!(by, "ir_diff");
        let s = |x: &str| Some(x.to_string());
        assert_eq!(
            pairs,
            vec![
                (s("body[0]"), s("body[0]")),
                (None, s("body[1]")),
                (s("body[1]"), s("body[2]")),
            ]
        );
        let (same, by) = statements(&old, &old);
        assert_eq!(by, "node_id");
        assert!(same.iter().all(|(a, b)| a == b && a.is_some()));
    }
}
