//! Does a Program's result depend on its workgroup size? The patterns that tie a Program to
//! the size it was written for, each found at a statement:
//!
//! - a workgroup buffer sized to the workgroup (`tile[256]` for 256 threads) indexed by
//!   `lid` (one slot per thread: other sizes leave slots unwritten or write past the end);
//! - a `lid`/`wgid`/`nwg` value combined with an integer literal that is the workgroup's size
//!   along an axis, its thread count, or half of either (`l < 128 >> s`, a tree that starts at
//!   half the workgroup; `ty * 16` for 16 x 16 tiles; `nwg.x * 8` for the threads along x);
//! - one host-buffer element per workgroup (`partial[wgid.x]`, an atomic into `sums[wgid.x]`):
//!   how many elements there are, and what each sums, follow the workgroup size.
//!
//! Unlike the other analyses here this one is a detector, not a proof: a finding says why the
//! size *may* matter, and no finding does not prove that it does not. Whether a given size
//! really changes the outputs is decided by running the reference interpreter at both sizes
//! (`harness::preserve`), which every workgroup-size suggestion asks; this analysis names the
//! statements to look at (the `L013` diagnostic).

use std::collections::HashMap;

use super::affine::{accesses, Coef, Index};
use crate::ir::{Access as BufAccess, BinOp, Builtin, Expr, Literal, NodeId, Program, Scalar};

/// Why one statement ties the Program to its workgroup size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tie {
    /// The statement.
    pub node: NodeId,
    /// What ties it, in a few words (`` `tile` has 256 elements, one per thread, indexed by
    /// lid``).
    pub why: String,
}

/// Value classes followed through variables: derived from a thread-structure id (`lid`,
/// `wgid`, `nwg`), and holding a size-tied literal (its value).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Taint {
    id: Option<&'static str>,
    size: Option<u64>,
}

impl Taint {
    fn join(self, o: Taint) -> Taint {
        Taint {
            id: self.id.or(o.id),
            size: self.size.or(o.size),
        }
    }
}

/// Every statement that ties `program` to its own workgroup size, in program order, at most
/// one per statement.
pub fn workgroup_ties(program: &Program) -> Vec<Tie> {
    let wg = program.workgroup_size;
    let sized = size_literals(wg);
    let vars = variable_taints(program, &sized);
    let mut out: Vec<Tie> = Vec::new();
    let mut push = |node: &NodeId, why: String| {
        if !out.iter().any(|t| &t.node == node) {
            out.push(Tie {
                node: node.clone(),
                why,
            });
        }
    };
    let total: u64 = wg.iter().map(|&d| u64::from(d)).product();
    // One finding per workgroup-sized buffer: its first lid-indexed access.
    let mut tiles_seen: Vec<String> = Vec::new();
    for a in accesses(program) {
        let Some(decl) = program.buffer(&a.buffer) else {
            continue;
        };
        let lid_indexed = matches!(a.index, Index::Affine { coef, .. }
            if coef[3..6].iter().any(|c| *c != Coef::Known(0)));
        match (decl.access, decl.count) {
            (BufAccess::Workgroup, Some(count))
                if lid_indexed
                    && (u64::from(count) == total || count == wg[0])
                    && total > 1
                    && !tiles_seen.contains(&a.buffer) =>
            {
                tiles_seen.push(a.buffer.clone());
                push(
                    &a.node,
                    format!(
                        "`{}` has {count} elements, one per thread of the {}-thread workgroup, indexed by lid",
                        a.buffer,
                        if u64::from(count) == total { total } else { u64::from(wg[0]) }
                    ),
                );
            }
            (access, _) if access.is_host() && a.write => {
                if let Index::Affine { coef, wgid, .. } = a.index {
                    let uniform = coef.iter().all(|c| *c == Coef::Known(0));
                    let per_wg = wgid.iter().any(|c| *c != Coef::Known(0));
                    if uniform && per_wg {
                        push(
                            &a.node,
                            format!(
                                "one `{}` element per workgroup (indexed by wgid): the number of workgroups follows the workgroup size",
                                a.buffer
                            ),
                        );
                    }
                }
            }
            _ => {}
        }
    }
    program.walk_stmts(&mut |s| {
        for e in s.exprs() {
            e.visit(&mut |x| {
                if let Expr::Binary(op, a, b) = x {
                    let (ta, tb) = (taint(a, &sized, &vars), taint(b, &sized, &vars));
                    let hit = match (ta.id, tb.size, tb.id, ta.size) {
                        (Some(id), Some(lit), _, _) | (_, _, Some(id), Some(lit)) => {
                            Some((id, lit))
                        }
                        _ => None,
                    };
                    if let Some((id, lit)) = hit {
                        push(
                            &s.id,
                            format!(
                                "a {id}-derived value meets the literal {lit} ({}) in `{}`",
                                describe(lit, wg),
                                op_name(*op)
                            ),
                        );
                    }
                }
            });
        }
    });
    // Program order: the order statements are visited in, whichever rule found them.
    let mut order = HashMap::new();
    let mut n = 0usize;
    program.walk_stmts(&mut |s| {
        order.insert(s.id.clone(), n);
        n += 1;
    });
    out.sort_by_key(|t| order.get(&t.node).copied().unwrap_or(usize::MAX));
    out
}

/// The literals that name the workgroup's size: each axis of more than one thread, the
/// thread count, and half of each (where a tree reduction starts).
fn size_literals(wg: [u32; 3]) -> Vec<u64> {
    let total: u64 = wg.iter().map(|&d| u64::from(d)).product();
    let mut v = Vec::new();
    for d in wg.iter().map(|&d| u64::from(d)).chain([total]) {
        for x in [d, d / 2] {
            // 1 and 2 are everywhere (offsets, halves); they say nothing about the size.
            if x > 2 && !v.contains(&x) {
                v.push(x);
            }
        }
    }
    v
}

fn describe(lit: u64, wg: [u32; 3]) -> String {
    let total: u64 = wg.iter().map(|&d| u64::from(d)).product();
    let axes = ["x", "y", "z"];
    if lit == total {
        return format!("the workgroup's {total} threads");
    }
    if let Some(i) = (0..3).find(|&i| u64::from(wg[i]) == lit && wg[i] > 1) {
        return format!("the workgroup size along {}", axes[i]);
    }
    if lit * 2 == total {
        return "half the workgroup's threads".into();
    }
    match (0..3).find(|&i| u64::from(wg[i]) == lit * 2) {
        Some(i) => format!("half the workgroup size along {}", axes[i]),
        None => "tied to the workgroup size".into(),
    }
}

fn op_name(op: BinOp) -> String {
    format!("{op:?}").to_lowercase()
}

fn int_literal(l: &Literal) -> Option<u64> {
    match l {
        Literal::Int(v) => u64::try_from(*v).ok(),
        Literal::Typed(Scalar::U32(v)) => Some(u64::from(*v)),
        Literal::Typed(Scalar::I32(v)) => u64::try_from(*v).ok(),
        Literal::Typed(Scalar::U64(v)) => Some(*v),
        Literal::Typed(Scalar::I64(v)) => u64::try_from(*v).ok(),
        _ => None,
    }
}

fn taint(e: &Expr, sized: &[u64], vars: &HashMap<String, Taint>) -> Taint {
    match e {
        Expr::Lit(l) => Taint {
            id: None,
            size: int_literal(l).filter(|v| sized.contains(v)),
        },
        Expr::Var(v) => vars.get(v).copied().unwrap_or_default(),
        Expr::Builtin(b) => Taint {
            id: match b {
                Builtin::LocalId(_) => Some("lid"),
                Builtin::WorkgroupId(_) => Some("wgid"),
                Builtin::NumWorkgroups(_) => Some("nwg"),
                // gid is the size-independent global index; lanes and the warp width are
                // about warps, not the workgroup.
                _ => None,
            },
            size: None,
        },
        // A loaded value is data, whatever its index.
        Expr::Load { .. } | Expr::Len(_) | Expr::Atomic { .. } | Expr::Clock => Taint::default(),
        Expr::Binary(_, a, b) => taint(a, sized, vars).join(taint(b, sized, vars)),
        Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Bitcast(_, a) => taint(a, sized, vars),
        Expr::Select(a, b, c) | Expr::Fma(a, b, c) => taint(a, sized, vars)
            .join(taint(b, sized, vars))
            .join(taint(c, sized, vars)),
        Expr::Shuffle { .. } | Expr::SubgroupReduce(..) | Expr::Ballot(_) => Taint::default(),
    }
}

/// Each variable's taint, flow-insensitively (every `let`/`assign` of a name, to a fixed
/// point): a name bound to a `lid`-derived value anywhere counts as `lid`-derived everywhere.
fn variable_taints(program: &Program, sized: &[u64]) -> HashMap<String, Taint> {
    let mut vars: HashMap<String, Taint> = HashMap::new();
    loop {
        let mut changed = false;
        program.walk_stmts(&mut |s| {
            if let crate::ir::StmtKind::Let { name, value }
            | crate::ir::StmtKind::Assign { name, value } = &s.kind
            {
                let t = taint(value, sized, &vars);
                let old = vars.get(name).copied().unwrap_or_default();
                let new = old.join(t);
                if new != old {
                    vars.insert(name.clone(), new);
                    changed = true;
                }
            }
        });
        // Each pass only adds (two classes per name), so this ends.
        if !changed {
            return vars;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(wg: &str, buffers: &str, body: &str) -> Program {
        crate::ir::parse_program(
            &format!(
                r#"{{"format":1,"name":"k","workgroup_size":{wg},
                "buffers":[{{"name":"o","binding":0,"access":"read_write","type":"u32"}}{buffers}],
                "body":{body}}}"#
            ),
            "k.json",
        )
        .unwrap()
    }

    #[test]
    fn tree_strides_shared_tiles_and_per_workgroup_outputs_are_found() {
        let p = program(
            "[256,1,1]",
            r#",{"name":"t","access":"workgroup","type":"u32","count":256}"#,
            r#"[{"let":"l","value":{"lid":"x"}},
                {"store":"t","index":"l","value":1},
                {"let":"s","value":{"shr":[128,1]}},
                {"if":{"lt":["l","s"]},"then":[]},
                {"store":"o","index":{"wgid":"x"},"value":1}]"#,
        );
        let t = workgroup_ties(&p);
        let nodes: Vec<String> = t.iter().map(|t| t.node.to_string()).collect();
        assert_eq!(nodes, ["body[1]", "body[3]", "body[4]"], "{t:?}");
        assert!(t[0].why.contains("256 elements"), "{}", t[0].why);
        assert!(t[1].why.contains("literal 128"), "{}", t[1].why);
        assert!(t[1].why.contains("half"), "{}", t[1].why);
        assert!(t[2].why.contains("per workgroup"), "{}", t[2].why);
    }

    #[test]
    fn gid_programs_and_unrelated_literals_are_not_found() {
        // gid with the size as a literal, lid with a literal unrelated to the size, a
        // workgroup buffer sized otherwise: nothing.
        let p = program(
            "[256,1,1]",
            r#",{"name":"t","access":"workgroup","type":"u32","count":100}"#,
            r#"[{"let":"i","value":{"gid":"x"}},
                {"store":"o","index":{"add":["i",256]},"value":{"mul":["i",128]}},
                {"if":{"lt":[{"lid":"x"},3]},"then":[{"store":"t","index":{"lid":"x"},"value":1}]}]"#,
        );
        assert_eq!(workgroup_ties(&p), vec![]);
    }

    #[test]
    fn two_d_tiles_use_each_axis() {
        let p = program(
            "[16,16,1]",
            "",
            r#"[{"let":"ty","value":{"lid":"y"}},
                {"store":"o","index":{"mul":["ty",16]},"value":1}]"#,
        );
        let t = workgroup_ties(&p);
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(t[0].why.contains("along x"), "{}", t[0].why);
    }
}
