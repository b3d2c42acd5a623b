//! Full unrolling of loops with a small constant trip count.
//!
//! A `loop i from A to B` whose bounds fold to constants (literals, constant `let`s, the
//! counters of enclosing unrolled loops, `len` of a workgroup buffer) is emitted as
//! `B - A` straight-line copies of its body, with `i` bound to the constant of each copy.
//! The constant then folds through the body (`shr(128, s)` -> `64`, see `fold.rs`), the
//! range analysis sees exact strides (so `tile[l + stride]` under `if l < stride` needs no
//! check), and addresses take constant offsets (`[%r6+256]`). There is no counter, no
//! compare and no back-edge.
//!
//! Limits (both must hold):
//! - at most [`MAX_TRIPS`] iterations;
//! - at most [`MAX_UNROLLED_NODES`] IR nodes after unrolling: trip count x [`body_size`]
//!   (statements plus expression nodes of the body, nested loops with literal bounds counted
//!   with their own trip count), times the trip counts of the unrolled loops around it: the
//!   budget is one for a whole nest, so nested loops whose bounds fold to constants only
//!   while unrolling cannot multiply it.
//!
//! The copies are exactly the iterations the loop would run, in order, so the semantics are
//! unchanged: a `return` in a copy ends the thread as it would in the loop, and barriers stay
//! uniform (every thread runs the same copies). A loop with zero iterations leaves only
//! comments. Labels written inside a copy carry the copy's tag (`$L_body4_body1_end_u3`).
//! Unrolled copies map back to the same IR nodes: a body statement owns one line range per
//! copy, each starting with its comment. `EmitOptions::unroll = false` (`emit
//! --no-unroll`) keeps every loop rolled, for comparison.

use super::writer::{VarInfo, Writer};
use super::EmitError;
use crate::ir::{Expr, Literal, Scalar, Stmt, StmtKind};

/// Most iterations a loop may have to be unrolled.
pub const MAX_TRIPS: u32 = 16;

/// Most IR nodes (trip count x body size) an unrolled loop may expand to.
pub const MAX_UNROLLED_NODES: usize = 320;

/// True when `loop from a to b { body }` is unrolled inside unrolled loops whose trip counts
/// multiply to `factor` (1 outside any): the loop's copies count once per enclosing copy,
/// so nested loops whose bounds only fold to constants while unrolling (`let n = 4; loop i
/// from 0 to n`, invisible to [`body_size`]) share one budget instead of each having its
/// own (12 such levels of 4 would otherwise write 4^12 copies).
pub fn should_unroll(a: u32, b: u32, body: &[Stmt], factor: usize) -> bool {
    let trips = b.saturating_sub(a);
    trips <= MAX_TRIPS
        && factor
            .saturating_mul(trips as usize)
            .saturating_mul(body_size(body))
            <= MAX_UNROLLED_NODES
}

/// Statements plus expression nodes of `list`; a nested loop with literal bounds counts
/// its body once per iteration (it may be unrolled too). Saturates: nested loops with large
/// literal trip counts multiply past `usize` (found by the fuzz test), and any size above
/// [`MAX_UNROLLED_NODES`] means the same.
pub fn body_size(list: &[Stmt]) -> usize {
    let mut n = 0usize;
    for s in list {
        n = n.saturating_add(1);
        let mut exprs = |e: &Expr| e.visit(&mut |_| n = n.saturating_add(1));
        match &s.kind {
            StmtKind::Let { value, .. } | StmtKind::Assign { value, .. } => exprs(value),
            StmtKind::Store { index, value, .. } => {
                exprs(index);
                exprs(value);
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                exprs(cond);
                n = n
                    .saturating_add(body_size(then))
                    .saturating_add(body_size(otherwise));
            }
            StmtKind::Loop { from, to, body, .. } => {
                exprs(from);
                exprs(to);
                let trips = match (literal(from), literal(to)) {
                    (Some(a), Some(b)) => b.saturating_sub(a).max(1) as usize,
                    _ => 1,
                };
                n = n.saturating_add(trips.saturating_mul(body_size(body)));
            }
            StmtKind::Block(b) => n = n.saturating_add(body_size(b)),
            StmtKind::Barrier(_) | StmtKind::Return | StmtKind::Sync(_) => {}
        }
    }
    n
}

/// The value of a `u32` literal.
fn literal(e: &Expr) -> Option<u32> {
    match e {
        Expr::Lit(Literal::Typed(Scalar::U32(v))) => Some(*v),
        Expr::Lit(Literal::Int(v)) => u32::try_from(*v).ok(),
        _ => None,
    }
}

impl Writer<'_> {
    /// Emits `loop var from a to b { body }` as `b - a` copies of the body.
    pub(super) fn unrolled(
        &mut self,
        var: &str,
        a: u32,
        b: u32,
        body: &[Stmt],
    ) -> Result<(), EmitError> {
        self.out.stats.loops_unrolled += 1;
        let trips = b.saturating_sub(a);
        if trips == 0 {
            self.comment("no iterations (constant bounds)");
            self.not_emitted(body, "the loop runs 0 times");
            return Ok(());
        }
        let node = self.owners.names[self.owner].clone();
        self.comment(format!("unrolled: {trips} copies"));
        let factor = self.at.unroll_factor;
        self.at.unroll_factor = factor.saturating_mul(trips as usize);
        for k in a..b {
            self.comment(format!("{node}: {var} = {k}"));
            let saved = self.at.copy_tag.clone();
            self.at.copy_tag.push_str(&format!("_u{k}"));
            let r = self.scoped_vars(|w| {
                w.declare(var, VarInfo::constant(Scalar::U32(k)));
                w.stmts(body)
            });
            self.at.copy_tag = saved;
            if let Err(e) = r {
                self.at.unroll_factor = factor;
                return Err(e);
            }
        }
        self.at.unroll_factor = factor;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse_program;

    fn body(json: &str) -> Vec<Stmt> {
        let text = format!(
            r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1],
                "buffers": [{{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}}],
                "body": {json}}}"#
        );
        parse_program(&text, "t.json")
            .unwrap_or_else(|e| panic!("{e}"))
            .body
    }

    #[test]
    fn sizes_count_statements_expressions_and_nested_trips() {
        // store a[k] = k: 1 statement + 2 expression nodes.
        let b = body(r#"[{"store": "a", "index": "k", "value": "k"}]"#);
        assert_eq!(body_size(&b), 3);
        // A nested literal loop of 4 multiplies its body (3) by 4: 1 + 2 (bounds) + 12.
        let b = body(
            r#"[{"loop": "j", "from": 0, "to": 4, "body": [
                 {"store": "a", "index": "j", "value": "j"}]}]"#,
        );
        assert_eq!(body_size(&b), 15);
    }

    #[test]
    fn limits() {
        let b = body(r#"[{"store": "a", "index": "k", "value": "k"}]"#);
        assert!(should_unroll(0, 8, &b, 1));
        assert!(should_unroll(5, 5, &b, 1), "zero trips");
        assert!(should_unroll(9, 3, &b, 1), "from > to: zero trips");
        assert!(should_unroll(0, MAX_TRIPS, &b, 1));
        assert!(!should_unroll(0, MAX_TRIPS + 1, &b, 1), "too many trips");
        // Inside unrolled loops of 16 x 4 copies, 8 more copies of 3 nodes exceed 320.
        assert!(should_unroll(0, 4, &b, 16));
        assert!(!should_unroll(0, 8, &b, 64), "the enclosing copies count");
        // 16 trips of a body of 21+ nodes exceed 320.
        let big = body(
            r#"[{"store": "a", "index": "k", "value":
                 {"add": [{"mul": ["k", "k"]}, {"add": [{"mul": ["k", 3]}, {"xor": [{"load": "a", "index": "k"},
                   {"shl": ["k", {"add": [1, {"add": [2, {"add": [3, 4]}]}]}]}]}]}]}}]"#,
        );
        assert!(body_size(&big) * 16 > MAX_UNROLLED_NODES);
        assert!(!should_unroll(0, 16, &big, 1));
        assert!(should_unroll(0, 4, &big, 1));
    }
}

#[cfg(test)]
mod saturation_tests {
    use super::*;
    use crate::ir::parse_program;

    #[test]
    fn nested_huge_literal_loops_saturate_instead_of_overflowing() {
        // Three nested loops of 2^32 - 1 trips around a store, and a statement before them:
        // the size product passes usize::MAX (the fuzz test's overflow).
        let loop_ = |body: &str| {
            format!(r#"{{"loop": "k", "from": 0, "to": 4294967295, "body": [{body}]}}"#)
        };
        let store = r#"{"store": "out", "index": 0, "value": 1}"#;
        let body = loop_(&loop_(&loop_(store)));
        let json = format!(
            r#"{{"format": 1, "name": "n", "workgroup_size": [1,1,1],
                "buffers": [{{"name": "out", "binding": 0, "access": "write", "type": "u32"}}],
                "body": [{{"let": "a", "value": 1}}, {body}]}}"#
        );
        let p = parse_program(&json, "n.json").expect("parses");
        assert_eq!(body_size(&p.body), usize::MAX);
        assert!(!should_unroll(0, 4, &p.body, 1));
    }
}
