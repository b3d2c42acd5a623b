//! Whether vyre's early exit may be left out of an imported Program. vyre's kernels without
//! shared memory or barriers end every invocation whose global x id is at least the dispatch
//! count, `max(len(B))` over the counted buffers `B`; the import writes that exit as
//! `body[0]`. When no invocation at or past the count can change anything, the exit only
//! repeats what the Program already does, and an import after an export then gives back the
//! exported Program itself.
//!
//! The proof is syntactic and conservative. Past the count (`gid.x >= max(len(B))`, so
//! `gid.x >= len(B)` for every counted `B`), an invocation has no effect when:
//! - it runs no subgroup operation (its lane would join the others' shuffles and reductions);
//! - each of its stores and atomics is dead: it indexes a counted buffer with `gid.x` itself
//!   (out of range: a store is dropped, an atomic does nothing and gives 0), or it sits under
//!   a fact `gid.x < len(B)` for a counted `B`: an enclosing `if` whose condition has that
//!   conjunct, or an earlier `if gid.x >= len(B) { return }` in the same or an enclosing list.
//!
//! `gid.x` may also be a variable bound once by `let v = gid.x` and never assigned.

use std::collections::{BTreeSet, HashMap};

use crate::analysis::ranges::range_of;
use crate::ir::{Axis, BinOp, Builtin, Expr, Program, ScalarType, Stmt, StmtKind};
use crate::vyre::export::proof::Env;

/// True when `body` (the imported body after the exit) has no effect in any invocation at or
/// past the dispatch count over the buffers `counted`; `scratch` holds the Program's buffers
/// and `wg` its workgroup size (for the range analysis).
pub(super) fn redundant(
    scratch: &Program,
    wg: [u32; 3],
    body: &[Stmt],
    counted: &[String],
) -> bool {
    let mut lets: HashMap<String, (usize, bool)> = HashMap::new();
    names(body, &mut lets);
    let once: BTreeSet<String> = lets
        .iter()
        .filter(|(_, (declared, _))| *declared == 1)
        .map(|(n, _)| n.clone())
        .collect();
    let gid_vars: BTreeSet<String> = lets
        .into_iter()
        .filter(|(_, (declared, gid))| *declared == 1 && *gid)
        .map(|(n, _)| n)
        .collect();
    let snapshot = Program {
        body: body.to_vec(),
        workgroup_size: wg,
        ..scratch.clone()
    };
    let mut p = Proof {
        counted,
        gid_vars: &gid_vars,
        once: &once,
        at_least_gid: BTreeSet::new(),
        env: Env::new(&snapshot),
    };
    p.list(body, false)
}
/// How often each name is declared (`let`, loop variable, assignment counts as a second
/// declaration so the name is never taken for `gid.x`), and whether its one `let` is `gid.x`.
fn names(list: &[Stmt], out: &mut HashMap<String, (usize, bool)>) {
    for s in list {
        match &s.kind {
            StmtKind::Let { name, value } => {
                let e = out.entry(name.clone()).or_insert((0, false));
                e.0 += 1;
                e.1 = matches!(value, Expr::Builtin(Builtin::GlobalId(Axis::X)));
            }
            StmtKind::Assign { name, .. } => out.entry(name.clone()).or_insert((0, false)).0 += 2,
            StmtKind::Loop { var, body, .. } => {
                out.entry(var.clone()).or_insert((0, false)).0 += 2;
                names(body, out);
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                names(then, out);
                names(otherwise, out);
            }
            StmtKind::Block(b) => names(b, out),
            _ => {}
        }
    }
}

struct Proof<'a> {
    counted: &'a [String],
    gid_vars: &'a BTreeSet<String>,
    /// Names declared once and never assigned (their value is fixed once bound).
    once: &'a BTreeSet<String>,
    /// Of those, the ones bound to a value proven at least `gid.x` (see [`Proof::at_least_gid`]).
    at_least_gid: BTreeSet<String>,
    /// The export's scoped range analysis over the imported Program.
    env: Env<'a>,
}

impl Proof<'_> {
    fn is_gid(&self, e: &Expr) -> bool {
        match e {
            Expr::Builtin(Builtin::GlobalId(Axis::X)) => true,
            Expr::Var(n) => self.gid_vars.contains(n),
            _ => false,
        }
    }

    /// True when `u32` expression `e` is at least `gid.x` in every invocation: `gid.x`
    /// itself, a variable bound to such a value, or a sum or product with such an operand
    /// (the other factor at least 1) that range analysis proves never wraps. An index like
    /// that is at least the dispatch count past it, so out of range of every counted buffer.
    fn at_least_gid(&self, e: &Expr) -> bool {
        let range = |x: &Expr| range_of(x, &self.env);
        match e {
            Expr::Var(n) if self.at_least_gid.contains(n) => true,
            _ if self.is_gid(e) => true,
            Expr::Binary(BinOp::Add, a, b) => {
                let no_wrap = match (range(a), range(b)) {
                    (Some(x), Some(y)) => x.hi + y.hi <= u64::from(u32::MAX),
                    _ => false,
                };
                no_wrap && (self.at_least_gid(a) || self.at_least_gid(b))
            }
            Expr::Binary(BinOp::Mul, a, b) => {
                let (Some(x), Some(y)) = (range(a), range(b)) else {
                    return false;
                };
                let no_wrap =
                    x.hi.checked_mul(y.hi)
                        .is_some_and(|p| p <= u64::from(u32::MAX));
                no_wrap
                    && ((self.at_least_gid(a) && y.lo >= 1) || (self.at_least_gid(b) && x.lo >= 1))
            }
            _ => false,
        }
    }

    fn counted(&self, b: &str) -> bool {
        self.counted.iter().any(|c| c == b)
    }

    /// True when a store or atomic on `buffer` at `index` is dead past the count.
    fn dead(&self, buffer: &str, index: &Expr, bounded: bool) -> bool {
        bounded || (self.counted(buffer) && self.at_least_gid(index))
    }

    /// True when `cond` holding implies `gid.x < len(B)` for a counted `B`.
    fn bounds(&self, cond: &Expr) -> bool {
        match cond {
            Expr::Binary(BinOp::Lt, a, b) => {
                self.is_gid(a) && matches!(&**b, Expr::Len(x) if self.counted(x))
            }
            Expr::Binary(BinOp::Gt, a, b) => {
                self.is_gid(b) && matches!(&**a, Expr::Len(x) if self.counted(x))
            }
            Expr::Binary(BinOp::LAnd, a, b) => self.bounds(a) || self.bounds(b),
            _ => false,
        }
    }

    /// True when `cond` being false implies `gid.x < len(B)` for a counted `B`.
    fn bounds_when_false(&self, cond: &Expr) -> bool {
        match cond {
            Expr::Binary(BinOp::Ge, a, b) => {
                self.is_gid(a) && matches!(&**b, Expr::Len(x) if self.counted(x))
            }
            Expr::Binary(BinOp::Le, a, b) => {
                self.is_gid(b) && matches!(&**a, Expr::Len(x) if self.counted(x))
            }
            Expr::Binary(BinOp::LOr, a, b) => {
                self.bounds_when_false(a) || self.bounds_when_false(b)
            }
            _ => false,
        }
    }

    /// True when every effect in `e` is dead past the count (`bounded`: a fact holds here).
    fn expr(&self, e: &Expr, bounded: bool) -> bool {
        let mut ok = true;
        e.visit(&mut |x| match x {
            Expr::Shuffle { .. } | Expr::SubgroupReduce(..) | Expr::Ballot(..) | Expr::Clock => {
                ok = false
            }
            Expr::Atomic { buffer, index, .. } => ok &= self.dead(buffer, index, bounded),
            _ => {}
        });
        ok
    }

    /// A nested list, in a scope of its own.
    fn scoped(&mut self, list: &[Stmt], bounded: bool) -> bool {
        self.env.push();
        let ok = self.list(list, bounded);
        self.env.pop();
        ok
    }

    fn list(&mut self, list: &[Stmt], bounded: bool) -> bool {
        let mut bounded = bounded;
        for s in list {
            if !self.stmt(s, bounded) {
                return false;
            }
            if let StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } = &s.kind
            {
                let returns = matches!(then.as_slice(), [t] if matches!(t.kind, StmtKind::Return));
                if returns && otherwise.is_empty() {
                    // `if c { return }`: the rest of the list runs where `c` is false, and
                    // with `c` = `gid.x >= len(B)`, below the count.
                    bounded |= self.bounds_when_false(cond);
                    self.env.assume(cond, false);
                }
            }
        }
        true
    }

    fn stmt(&mut self, s: &Stmt, bounded: bool) -> bool {
        match &s.kind {
            StmtKind::Let { name, value } => {
                if !self.expr(value, bounded) {
                    return false;
                }
                if self.once.contains(name) && self.at_least_gid(value) {
                    self.at_least_gid.insert(name.clone());
                }
                if let Some(ty) = self.env.ty(value) {
                    self.env.declare(name, ty, Some(value));
                }
                true
            }
            StmtKind::Assign { value, .. } => self.expr(value, bounded),
            StmtKind::Store {
                buffer,
                index,
                value,
            } => {
                self.dead(buffer, index, bounded)
                    && self.expr(index, bounded)
                    && self.expr(value, bounded)
            }
            StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } => {
                if !self.expr(cond, bounded) {
                    return false;
                }
                self.env.push();
                self.env.assume(cond, true);
                let t = self.list(then, bounded || self.bounds(cond));
                self.env.pop();
                self.env.push();
                self.env.assume(cond, false);
                let o = t && self.list(otherwise, bounded || self.bounds_when_false(cond));
                self.env.pop();
                o
            }
            StmtKind::Loop {
                var,
                from,
                to,
                body,
            } => {
                if !(self.expr(from, bounded) && self.expr(to, bounded)) {
                    return false;
                }
                self.env.push();
                self.env.declare(var, ScalarType::U32, None);
                self.env.assume_loop(var, from, to);
                let ok = self.list(body, bounded);
                self.env.pop();
                ok
            }
            StmtKind::Block(b) => self.scoped(b, bounded),
            StmtKind::Return => true,
            // Not in a kernel that has the exit; refuse anything else to stay sound.
            StmtKind::Barrier(_) | StmtKind::Sync(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse_program;

    fn program(json: &str) -> Program {
        let text = format!(
            r#"{{"format": 1, "name": "t", "workgroup_size": [64, 1, 1], "buffers": [
                {{"name": "a", "binding": 0, "access": "read_write", "type": "u32"}},
                {{"name": "out", "binding": 1, "access": "read_write", "type": "u32"}}],
                "body": {json}}}"#
        );
        parse_program(&text, "t.json").expect("parses")
    }

    fn proves(json: &str) -> bool {
        let p = program(json);
        redundant(&p, [64, 1, 1], &p.body, &["out".to_string()])
    }

    #[test]
    fn dead_stores_and_atomics_prove_the_exit_redundant() {
        // Guarded by the counted buffer's length, directly or through `let i = gid.x`.
        assert!(proves(
            r#"[{"let": "i", "value": {"gid": "x"}},
                {"if": {"lt": ["i", {"len": "out"}]}, "then": [
                  {"store": "out", "index": "i", "value": {"load": "a", "index": "i"}}]}]"#
        ));
        // Indexed by gid.x itself: out of range past the count.
        assert!(proves(
            r#"[{"store": "out", "index": {"gid": "x"}, "value": 1}]"#
        ));
        // An early return on the counted length covers the rest of the list.
        assert!(proves(
            r#"[{"let": "i", "value": {"gid": "x"}},
                {"if": {"ge": ["i", {"len": "out"}]}, "then": [{"return": {}}]},
                {"store": "a", "index": 0, "value": {"atomic": "add", "buffer": "out", "index": 0, "value": 1}}]"#
        ));
    }

    #[test]
    fn indices_at_or_above_gid_without_wrap_prove_the_exit_redundant() {
        // `t < 256` keeps `t * 32 + 5` below 2^32, so it is at least gid.x.
        assert!(proves(
            r#"[{"let": "t", "value": {"gid": "x"}},
                {"if": {"ge": ["t", 256]}, "then": [{"return": {}}]},
                {"let": "base", "value": {"mul": ["t", 32]}},
                {"store": "out", "index": {"add": ["base", 5]}, "value": 1}]"#
        ));
        // Unbounded, `gid.x * 2` wraps (gid.x = 2^31 stores to element 0).
        assert!(!proves(
            r#"[{"store": "out", "index": {"mul": [{"gid": "x"}, 2]}, "value": 1}]"#
        ));
        // Below 256 but on a buffer vyre does not count.
        assert!(!proves(
            r#"[{"let": "t", "value": {"gid": "x"}},
                {"if": {"ge": ["t", 256]}, "then": [{"return": {}}]},
                {"store": "a", "index": {"mul": ["t", 2]}, "value": 1}]"#
        ));
    }

    #[test]
    fn live_effects_keep_the_exit() {
        // A store of an uncounted buffer, or at a fixed index: it would run past the count.
        assert!(!proves(
            r#"[{"store": "a", "index": {"gid": "x"}, "value": 1}]"#
        ));
        assert!(!proves(r#"[{"store": "out", "index": 0, "value": 1}]"#));
        // vyre's clamped store writes element 0 past the count.
        assert!(!proves(
            r#"[{"let": "i", "value": {"gid": "x"}},
                {"store": "out", "index": {"select": [{"lt": ["i", {"len": "out"}]}, "i", 0]}, "value": 1}]"#
        ));
        // An atomic outside the guard, in a let.
        assert!(!proves(
            r#"[{"let": "o", "value": {"atomic": "add", "buffer": "out", "index": 0, "value": 1}}]"#
        ));
        // A variable that is assigned is no longer gid.x.
        assert!(!proves(
            r#"[{"let": "i", "value": {"gid": "x"}}, {"assign": "i", "value": 0},
                {"if": {"lt": ["i", {"len": "out"}]}, "then": [
                  {"store": "out", "index": "i", "value": 1}]}]"#
        ));
        // A subgroup operation: the lane would take part in it.
        assert!(!proves(
            r#"[{"let": "i", "value": {"gid": "x"}},
                {"if": {"lt": ["i", {"len": "out"}]}, "then": [
                  {"store": "out", "index": "i", "value": {"subgroup_reduce": "add", "value": "i"}}]}]"#
        ));
        // The guard's conjunct must be the counted buffer's length.
        assert!(!proves(
            r#"[{"let": "i", "value": {"gid": "x"}},
                {"if": {"lt": ["i", {"len": "a"}]}, "then": [
                  {"store": "out", "index": 0, "value": 1}]}]"#
        ));
    }
}
