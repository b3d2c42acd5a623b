//! `L012`: a workgroup size that makes an unguarded store or atomic index past the end of a
//! workgroup buffer (`tile[lid.x]` with `tile` of 256 elements, launched with 512 threads).
//! On the GPU such a write lands in whatever shared memory follows (or faults), and the
//! result silently changes; the interpreter refuses it only at run time.
//!
//! The proof uses the affine index analysis ([`crate::analysis::affine`]): an index that is a known
//! linear form of `lid`/`lane` plus a known constant takes its largest value at the largest
//! ids the workgroup size allows. Only writes in statements every thread reaches are judged
//! (not under an `if`, not after an `if` that may `return`): a guard such as
//! `if lid.x < 256` makes the access safe, and this analysis does not read conditions.

use std::collections::HashSet;

use super::Diagnostic;
use crate::analysis::affine::{accesses, Coef, Index};
use crate::ir::{Access as BufAccess, NodeId, Program, Stmt, StmtKind};

/// Index of `lid.x` in [`Index::Affine`]'s coefficients (`gid.x gid.y gid.z lid.x lid.y
/// lid.z lane`).
const LID0: usize = 3;
const LANE: usize = 6;
const AXES: [&str; 3] = ["x", "y", "z"];

/// `L012` errors for every unguarded write to a workgroup buffer whose index exceeds the
/// buffer's `count` at `workgroup`.
pub fn workgroup_overruns(program: &Program, workgroup: [u32; 3]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if workgroup.contains(&0) {
        return out;
    }
    let reached = unconditional(program);
    let threads = workgroup.iter().map(|&d| u64::from(d)).product::<u64>();
    let mut seen = HashSet::new();
    for a in accesses(program) {
        if !a.write || !reached.contains(&a.node) {
            continue;
        }
        let Some(decl) = program.buffer(&a.buffer) else {
            continue;
        };
        let (BufAccess::Workgroup, Some(count)) = (decl.access, decl.count) else {
            continue;
        };
        let Index::Affine {
            coef,
            wgid,
            constant: Some(c),
        } = a.index
        else {
            continue;
        };
        let known = |k: Coef| match k {
            Coef::Known(v) => Some(v),
            Coef::Unknown => None,
        };
        // Only `lid`/`lane` forms: a `gid` or `wgid` term is not bounded by the workgroup.
        let (Some(lid), Some(lane)) = (
            (0..3)
                .map(|i| known(coef[LID0 + i]))
                .collect::<Option<Vec<i64>>>(),
            known(coef[LANE]),
        ) else {
            continue;
        };
        if (0..3).any(|i| known(coef[i]) != Some(0) || known(wgid[i]) != Some(0)) {
            continue;
        }
        let lane_max = (threads.min(32) - 1) as i128;
        let mut max = c as i128 + (lane as i128).max(0) * lane_max;
        for i in 0..3 {
            max += (lid[i] as i128).max(0) * (i128::from(workgroup[i]) - 1);
        }
        if max < i128::from(count) || !seen.insert((a.node.clone(), a.buffer.clone())) {
            continue;
        }
        out.push(Diagnostic::error(
            "L012",
            Some(a.node.clone()),
            format!(
                "with workgroup size {}x{}x{} this write to `{}` reaches index {max}, but `{}` has {count} elements (count)",
                workgroup[0], workgroup[1], workgroup[2], a.buffer, a.buffer
            ),
            fix_hint(&a.buffer, count, max, &lid, workgroup),
        ));
    }
    out
}

/// The largest size along one axis that drives the index (the outermost that can fit,
/// others unchanged), or a larger `count`.
fn fix_hint(buffer: &str, count: u32, max: i128, lid: &[i64], wg: [u32; 3]) -> String {
    let grow = format!("or give `{buffer}` a count of at least {}", max + 1);
    for i in (0..3).rev().filter(|&i| lid[i] > 0 && wg[i] > 1) {
        let rest = max - i128::from(lid[i]) * (i128::from(wg[i]) - 1);
        let room = i128::from(count) - 1 - rest;
        if room >= 0 {
            let fit = room / i128::from(lid[i]) + 1;
            let mut w = wg;
            w[i] = fit.min(i128::from(u32::MAX)) as u32;
            return format!(
                "use a workgroup size of at most {fit} along {} (e.g. --workgroup {},{},{}), {grow}",
                AXES[i], w[0], w[1], w[2]
            );
        }
    }
    format!("use a smaller workgroup size, {grow}")
}

/// Statements every thread reaches: not under an `if`, not after a statement that contains
/// a `return` (which may end some threads early); loop and block bodies count.
fn unconditional(program: &Program) -> HashSet<NodeId> {
    let mut out = HashSet::new();
    list(&program.body, &mut out);
    out
}

/// Adds the reached statements of `stmts`; false once a later statement may be skipped.
fn list(stmts: &[Stmt], out: &mut HashSet<NodeId>) -> bool {
    for s in stmts {
        match &s.kind {
            StmtKind::If { .. } => {
                if contains_return(s) {
                    return false;
                }
            }
            StmtKind::Loop { body, .. } => {
                if !list(body, out) {
                    return false;
                }
            }
            StmtKind::Block(b) => {
                out.insert(s.id.clone());
                if !list(b, out) {
                    return false;
                }
            }
            StmtKind::Return => return false,
            _ => {
                out.insert(s.id.clone());
            }
        }
    }
    true
}

fn contains_return(s: &Stmt) -> bool {
    match &s.kind {
        StmtKind::Return => true,
        StmtKind::If {
            then, otherwise, ..
        } => then.iter().chain(otherwise).any(contains_return),
        StmtKind::Loop { body, .. } | StmtKind::Block(body) => body.iter().any(contains_return),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(body: &str, count: u32) -> Program {
        crate::ir::parse_program(
            &format!(
                r#"{{"format":1,"name":"k","workgroup_size":[256,1,1],
                "buffers":[{{"name":"o","binding":0,"access":"read_write","type":"f32"}},
                           {{"name":"tile","access":"workgroup","type":"f32","count":{count}}}],
                "body":{body}}}"#
            ),
            "k.json",
        )
        .unwrap()
    }

    const STORE_LID: &str = r#"[{"let":"l","value":{"lid":"x"}},
        {"store":"tile","index":"l","value":1.0}]"#;

    #[test]
    fn store_at_lid_overruns_only_beyond_the_count() {
        let p = program(STORE_LID, 256);
        assert!(workgroup_overruns(&p, [256, 1, 1]).is_empty());
        let d = workgroup_overruns(&p, [512, 1, 1]);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(d[0].code, "L012");
        assert_eq!(d[0].node.as_ref().unwrap().to_string(), "body[1]");
        assert!(
            d[0].message.contains("reaches index 511"),
            "{}",
            d[0].message
        );
        assert!(d[0].fix.contains("at most 256 along x"), "{}", d[0].fix);
        assert!(d[0].fix.contains("count of at least 512"), "{}", d[0].fix);
    }

    #[test]
    fn offsets_and_2d_forms_use_every_axis() {
        // tile[lid.y * 16 + lid.x + 3] with count 259: 16x16 fits exactly, 16x17 does not.
        let body = r#"[{"store":"tile","index":{"add":[{"add":[{"mul":[{"lid":"y"},16]},{"lid":"x"}]},3]},"value":1.0}]"#;
        let p = program(body, 259);
        assert!(workgroup_overruns(&p, [16, 16, 1]).is_empty());
        let d = workgroup_overruns(&p, [16, 17, 1]);
        assert_eq!(d.len(), 1);
        assert!(
            d[0].message.contains("reaches index 274"),
            "{}",
            d[0].message
        );
        assert!(d[0].fix.contains("at most 16 along y"), "{}", d[0].fix);
    }

    #[test]
    fn guarded_or_after_return_writes_are_not_judged() {
        let guarded = r#"[{"let":"l","value":{"lid":"x"}},
            {"if":{"lt":["l",256]},"then":[{"store":"tile","index":"l","value":1.0}]}]"#;
        assert!(workgroup_overruns(&program(guarded, 256), [1024, 1, 1]).is_empty());
        let early = r#"[{"let":"l","value":{"lid":"x"}},
            {"if":{"ge":["l",256]},"then":[{"return":{}}]},
            {"store":"tile","index":"l","value":1.0}]"#;
        assert!(workgroup_overruns(&program(early, 256), [1024, 1, 1]).is_empty());
        // A loop body is reached.
        let looped = r#"[{"loop":"i","from":0,"to":2,"body":[{"store":"tile","index":{"lid":"x"},"value":1.0}]}]"#;
        assert_eq!(
            workgroup_overruns(&program(looped, 64), [128, 1, 1]).len(),
            1
        );
    }

    #[test]
    fn host_buffers_and_gid_indices_are_not_judged() {
        let host = r#"[{"store":"o","index":{"lid":"x"},"value":1.0},
            {"store":"tile","index":{"gid":"x"},"value":1.0}]"#;
        assert!(workgroup_overruns(&program(host, 4), [1024, 1, 1]).is_empty());
    }
}
