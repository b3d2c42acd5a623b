//! vyre statements (`Node`) -> ours, and the facts `index < len(buffer)` that guards give.

use vyre_foundation::ir::{MemoryOrdering, Node as VNode};

use super::*;

/// One walk over vyre's nodes before the conversion: the variables some `Assign` changes,
/// whether there is a barrier (of any ordering), and whether there is an atomic or a subgroup
/// operation (both change how vyre's kernel bounds-checks and counts its dispatch).
pub(super) fn scan(
    nodes: &[VNode],
    assigned: &mut HashSet<String>,
    barrier: &mut bool,
    special: &mut bool,
) {
    for n in nodes {
        match n {
            VNode::Let { value, .. } => *special |= expr::has_special(value),
            VNode::Assign { name, value } => {
                assigned.insert(name.as_str().to_string());
                *special |= expr::has_special(value);
            }
            VNode::Store { index, value, .. } => {
                *special |= expr::has_special(index) || expr::has_special(value);
            }
            VNode::If {
                cond,
                then,
                otherwise,
            } => {
                *special |= expr::has_special(cond);
                scan(then, assigned, barrier, special);
                scan(otherwise, assigned, barrier, special);
            }
            VNode::Loop { from, to, body, .. } => {
                *special |= expr::has_special(from) || expr::has_special(to);
                scan(body, assigned, barrier, special);
            }
            VNode::Block(body) => scan(body, assigned, barrier, special),
            VNode::Region { body, .. } => scan(body, assigned, barrier, special),
            VNode::Barrier { .. } => *barrier = true,
            _ => {}
        }
    }
}

impl Cx {
    /// Converts the statement list `nodes` (vyre path `vpath`) into `out`, whose statements
    /// get the ids `{prefix}[i]`.
    pub(super) fn list(&mut self, nodes: &[VNode], vpath: &str, prefix: &str, out: &mut Vec<Stmt>) {
        let facts = self.facts.len();
        if prefix == "body" {
            // The early exit `if gid.x >= len(b) { return }` proves gid.x < len(b) below it.
            if let Some(StmtKind::If { cond, .. }) = out.first().map(|s| &s.kind) {
                let f = self.exit_facts(cond);
                self.facts.extend(f);
            }
        }
        self.items(nodes, vpath, prefix, out);
        self.facts.truncate(facts);
    }

    /// The loop of [`Cx::list`], without its scope of facts: the export's early-return
    /// wrapper continues the list it ends.
    fn items(&mut self, nodes: &[VNode], vpath: &str, prefix: &str, out: &mut Vec<Stmt>) {
        let mut skip = false;
        for (i, n) in nodes.iter().enumerate() {
            if std::mem::take(&mut skip) {
                continue;
            }
            let vp = format!("{vpath}[{i}]");
            let id = format!("{prefix}[{}]", out.len());
            if prefix == "body" && i + 1 == nodes.len() {
                if let Some(rest) = self.early_return(n, &vp, &id, out) {
                    self.items(rest, &format!("{vp}.then"), prefix, out);
                    continue;
                }
            }
            let (hoisted, diags, regions) =
                (self.hoisted.len(), self.diags.len(), self.regions.len());
            let converted = match (n, nodes.get(i + 1)) {
                // The export's guarded atomic in a `let`: `let x = 0; if len(b) > i { x =
                // atomic }` is `let x = atomic`.
                (VNode::Let { name, value }, Some(next))
                    if matches!(value, vyre_foundation::ir::Expr::LitU32(0))
                        && guards::guarded_atomic(self, next, false)
                            .is_some_and(|(x, _)| x == name.as_str()) =>
                {
                    skip = true;
                    let vnext = format!("{vpath}[{}]", i + 1);
                    guards::guarded_atomic(self, next, false).and_then(|(_, atomic)| {
                        let value = self.guarded_atomic_value(next, atomic, &vnext, &id)?;
                        let name = self.var(name.as_str());
                        self.var_types.insert(name.clone(), ScalarType::U32);
                        Some(Stmt {
                            id: NodeId::new(id.clone()),
                            kind: StmtKind::Let { name, value },
                        })
                    })
                }
                // The export's store of a value bound before its guard: `let v = x; if
                // len(b) > i { b[i] = v }` is `b[i] = x`.
                (_, Some(next)) if guards::bound_store(self, n, next).is_some() => {
                    skip = true;
                    let vnext = format!("{vpath}[{}]", i + 1);
                    guards::bound_store(self, n, next).and_then(|(b, index, value)| {
                        let kind = self.store_parts(
                            b,
                            (index, &format!("{vnext}.then[0].index")),
                            (value, &format!("{vp}.value")),
                            &id,
                            false,
                        )?;
                        Some(Stmt {
                            id: NodeId::new(id.clone()),
                            kind,
                        })
                    })
                }
                _ => self.node(n, &vp, &id),
            };
            let Some(mut s) = converted else {
                self.hoisted.truncate(hoisted);
                continue;
            };
            let lets = self.hoisted.split_off(hoisted);
            if !lets.is_empty() {
                // The `let`s go first, so the statement (and what was said about it) moves.
                let moved = format!("{prefix}[{}]", out.len() + lets.len());
                self.renumber(&id, &moved, diags, regions);
                s.id = NodeId::new(moved);
                out.extend(lets);
            }
            if let StmtKind::If {
                cond,
                then,
                otherwise,
                ..
            } = &s.kind
            {
                if otherwise.is_empty()
                    && then.len() == 1
                    && matches!(then[0].kind, StmtKind::Return)
                {
                    let f = self.exit_facts(cond);
                    self.facts.extend(f);
                }
            }
            out.push(s);
        }
    }

    /// The export's early-return wrapper: the last statement of the top-level body `if !c {
    /// rest }` is `if c { return }` followed by `rest` (nothing runs after it). Pushes the
    /// `if c { return }` and gives `rest`, unless `rest` declares a name the body already
    /// has (the two would then share one scope).
    fn early_return<'a>(
        &mut self,
        n: &'a VNode,
        vp: &str,
        id: &str,
        out: &mut Vec<Stmt>,
    ) -> Option<&'a [VNode]> {
        let VNode::If {
            cond,
            then,
            otherwise,
        } = n
        else {
            return None;
        };
        let c = guards::negated(cond)?;
        let declared: HashSet<&str> = out
            .iter()
            .filter_map(|s| match &s.kind {
                StmtKind::Let { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect();
        let clash = then.iter().any(|t| match t {
            VNode::Let { name, .. } => self
                .var_names
                .get(name.as_str())
                .is_some_and(|ours| declared.contains(ours.as_str())),
            _ => false,
        });
        if !otherwise.is_empty() || clash {
            return None;
        }
        let hoisted = self.hoisted.len();
        let cond = self.expr(c, &format!("{vp}.cond.operand"), id)?;
        out.extend(self.hoisted.split_off(hoisted));
        let f = self.exit_facts(&cond);
        self.facts.extend(f);
        out.push(super::return_if(cond, format!("body[{}]", out.len())));
        Some(then)
    }

    fn node(&mut self, n: &VNode, vp: &str, id: &str) -> Option<Stmt> {
        let kind = match n {
            VNode::Let { name, value } => {
                let value = self.expr(value, &format!("{vp}.value"), id)?;
                let ty = self.type_of(&value);
                let name = self.var(name.as_str());
                if let Some(t) = ty {
                    self.var_types.insert(name.clone(), t);
                }
                StmtKind::Let { name, value }
            }
            VNode::Assign { name, value } => {
                let value = self.expr(value, &format!("{vp}.value"), id)?;
                StmtKind::Assign {
                    name: self.var(name.as_str()),
                    value,
                }
            }
            VNode::Store {
                buffer,
                index,
                value,
            } => self.store(buffer.as_str(), index, value, vp, id, true)?,
            VNode::If {
                cond,
                then,
                otherwise,
            } if guards::guarded_store(self, cond, then, otherwise).is_some() => {
                let (b, index, value) = guards::guarded_store(self, cond, then, otherwise)?;
                self.store(b, index, value, &format!("{vp}.then[0]"), id, false)?
            }
            VNode::If {
                then, otherwise, ..
            } if guards::guarded_atomic(self, n, true).is_some() => {
                let (name, atomic) = guards::guarded_atomic(self, n, true)?;
                let _ = (then, otherwise);
                let value = self.guarded_atomic_value(n, atomic, vp, id)?;
                StmtKind::Assign {
                    name: self.var(name),
                    value,
                }
            }
            VNode::If {
                cond,
                then,
                otherwise,
            } => {
                let cond = self.expr(cond, &format!("{vp}.cond"), id)?;
                let facts = self.facts.len();
                let f = self.guard_facts(&cond);
                self.facts.extend(f);
                let mut t = Vec::new();
                self.list(then, &format!("{vp}.then"), &format!("{id}.then"), &mut t);
                self.facts.truncate(facts);
                let mut o = Vec::new();
                self.list(
                    otherwise,
                    &format!("{vp}.otherwise"),
                    &format!("{id}.else"),
                    &mut o,
                );
                let has_else = !o.is_empty();
                StmtKind::If {
                    cond,
                    then: t,
                    otherwise: o,
                    has_else,
                }
            }
            VNode::Loop {
                var,
                from,
                to,
                body,
            } => {
                let from = self.expr(from, &format!("{vp}.from"), id)?;
                let to = self.expr(to, &format!("{vp}.to"), id)?;
                let var = self.var(var.as_str());
                self.var_types.insert(var.clone(), ScalarType::U32);
                let mut b = Vec::new();
                self.list(body, &format!("{vp}.body"), &format!("{id}.body"), &mut b);
                StmtKind::Loop {
                    var,
                    from,
                    to,
                    body: b,
                }
            }
            VNode::Return => StmtKind::Return,
            VNode::Block(body) => {
                let mut b = Vec::new();
                self.list(body, &format!("{vp}.block"), &format!("{id}.block"), &mut b);
                StmtKind::Block(b)
            }
            VNode::Region {
                generator, body, ..
            } => {
                self.regions.push((
                    id.to_string(),
                    generator.as_str().to_string(),
                    vp.to_string(),
                ));
                let mut b = Vec::new();
                self.list(body, &format!("{vp}.body"), &format!("{id}.block"), &mut b);
                StmtKind::Block(b)
            }
            VNode::Barrier { ordering } => {
                if *ordering == MemoryOrdering::GridSync {
                    StmtKind::Barrier(BarrierScope::Grid)
                } else {
                    // vyre's PTX emits `bar.sync 0` whatever the ordering.
                    StmtKind::Barrier(BarrierScope::Workgroup)
                }
            }
            other => {
                let (what, why, fix) = unsupported(other);
                self.error(
                    "VY001",
                    None,
                    format!("vyre {vp} ({what}) cannot be imported: {why}; left out"),
                    fix,
                );
                return None;
            }
        };
        Some(Stmt {
            id: NodeId::new(id.to_string()),
            kind,
        })
    }

    /// The atomic `atomic` of the export's guarded form `guard` (at vyre path `vp`), converted knowing that the guard's bound holds (no warning about an
    /// unchecked index).
    fn guarded_atomic_value(
        &mut self,
        guard: &VNode,
        atomic: &vyre_foundation::ir::Expr,
        vp: &str,
        id: &str,
    ) -> Option<Expr> {
        let VNode::If { cond, .. } = guard else {
            return None;
        };
        let cond = self.expr(cond, &format!("{vp}.cond"), id)?;
        let facts = self.facts.len();
        let f = self.guard_facts(&cond);
        self.facts.extend(f);
        let value = self.expr(atomic, &format!("{vp}.then[0].value"), id);
        self.facts.truncate(facts);
        value
    }

    /// Our store for vyre's `store(buffer, index, value)` at vyre path `vp`; `clamp` false
    /// where the store is known to run in range only (under the export's guard).
    fn store(
        &mut self,
        buffer: &str,
        index: &vyre_foundation::ir::Expr,
        value: &vyre_foundation::ir::Expr,
        vp: &str,
        id: &str,
        clamp: bool,
    ) -> Option<StmtKind> {
        self.store_parts(
            buffer,
            (index, &format!("{vp}.index")),
            (value, &format!("{vp}.value")),
            id,
            clamp,
        )
    }

    /// [`Cx::store`] with the index and the value at vyre paths of their own.
    fn store_parts(
        &mut self,
        buffer: &str,
        (index, ip): (&vyre_foundation::ir::Expr, &str),
        (value, vp): (&vyre_foundation::ir::Expr, &str),
        id: &str,
        clamp: bool,
    ) -> Option<StmtKind> {
        let index = self.expr(index, ip, id)?;
        // vyre stores into an f16 (or 8/16-bit integer) buffer a value cast to that
        // type; the format stores the f32 (u32/i32) value and converts it on the way
        // (round to nearest even; the low bits), which is what vyre's cast does, so the
        // cast is dropped rather than refused.
        let buffer = self.buffer_name(buffer);
        let elem = self
            .scratch
            .buffers
            .iter()
            .find(|b| b.name == buffer)
            .map(|b| b.elem);
        let (value, vpath) = match value {
            vyre_foundation::ir::Expr::Cast {
                target:
                    target @ (DataType::F16
                    | DataType::U8
                    | DataType::I8
                    | DataType::U16
                    | DataType::I16),
                value: inner,
            } if elem.is_some() && elem_type(target) == elem => (&**inner, format!("{vp}.value")),
            v => (v, vp.to_string()),
        };
        let value = self.expr(value, &vpath, id)?;
        // With every lane kept alive vyre predicates the store (an out-of-range one
        // does nothing, as here); otherwise it clamps the index to element 0.
        let index = if self.full_workgroup || !clamp {
            index
        } else {
            match self.clamped(&buffer, index, &format!("{vp}.index"))? {
                (i, true) => {
                    self.clamped_stores += 1;
                    i
                }
                (i, false) => i,
            }
        };
        Some(StmtKind::Store {
            buffer,
            index,
            value,
        })
    }

    /// Our name of a vyre buffer (a name vyre's validator would refuse is kept, made an
    /// identifier, so that our validator reports it as an unknown buffer).
    pub(super) fn buffer_name(&self, vyre_name: &str) -> String {
        self.buffer_names
            .get(vyre_name)
            .cloned()
            .unwrap_or_else(|| identifier(vyre_name))
    }

    /// True for an expression whose value cannot change between two places in one
    /// invocation: a builtin id, or a variable no `assign` changes.
    fn stable(&self, e: &Expr) -> bool {
        match e {
            Expr::Builtin(_) => true,
            Expr::Var(n) => !self
                .var_names
                .iter()
                .any(|(v, ours)| ours == n && self.assigned.contains(v)),
            _ => false,
        }
    }

    /// Facts that hold where `cond` is true: `x < len(b)` (also `len(b) > x`, and conjunctions).
    fn guard_facts(&self, cond: &Expr) -> Vec<(Expr, String)> {
        match cond {
            Expr::Binary(BinOp::Lt, x, l) | Expr::Binary(BinOp::Gt, l, x) => match &**l {
                Expr::Len(b) if self.stable(x) => vec![((**x).clone(), b.clone())],
                _ => Vec::new(),
            },
            Expr::Binary(BinOp::LAnd, a, b) => {
                let mut v = self.guard_facts(a);
                v.extend(self.guard_facts(b));
                v
            }
            Expr::Unary(crate::ir::UnOp::LNot, c) => self.exit_facts(c),
            _ => Vec::new(),
        }
    }

    /// Facts that hold where `cond` is false (after `if cond { return }`): from `x >= len(b)`,
    /// `len(b) <= x`, and disjunctions of them.
    fn exit_facts(&self, cond: &Expr) -> Vec<(Expr, String)> {
        match cond {
            Expr::Binary(BinOp::Ge, x, l) | Expr::Binary(BinOp::Le, l, x) => match &**l {
                Expr::Len(b) if self.stable(x) => vec![((**x).clone(), b.clone())],
                _ => Vec::new(),
            },
            Expr::Binary(BinOp::LOr, a, b) => {
                let mut v = self.exit_facts(a);
                v.extend(self.exit_facts(b));
                v
            }
            Expr::Unary(crate::ir::UnOp::LNot, c) => self.guard_facts(c),
            _ => Vec::new(),
        }
    }

    /// `index` as vyre's kernel uses it on host buffer `buffer`: `select(index < len, index,
    /// 0)` unless the index is a literal (vyre does not check those) or proven in range. The
    /// flag says whether the clamp was written. `None` (with an error) when the index has an
    /// atomic, which the clamp would run twice.
    pub(super) fn clamped(&mut self, buffer: &str, index: Expr, vp: &str) -> Option<(Expr, bool)> {
        let host = self
            .scratch
            .buffer(buffer)
            .is_some_and(|b| b.access.is_host());
        if !host || matches!(index, Expr::Lit(_)) || self.proven(&index, buffer) {
            return Some((index, false));
        }
        if !expr::pure(&index) {
            self.error(
                "VY002",
                None,
                format!(
                    "vyre {vp}: an index computed by an atomic cannot keep vyre's index clamp \
                     (it would run twice); left out"
                ),
                "bind the atomic's result with `let` in the vyre Program and index with it",
            );
            return None;
        }
        let index = self.bind_once(index);
        let cond = Expr::Binary(
            BinOp::Lt,
            Box::new(index.clone()),
            Box::new(Expr::Len(buffer.to_string())),
        );
        Some((
            Expr::Select(
                Box::new(cond),
                Box::new(index),
                Box::new(Expr::Lit(Literal::Typed(Scalar::U32(0)))),
            ),
            true,
        ))
    }

    /// `e` where a guard needs it twice: `e` itself when it is small (see
    /// [`size::MAX_COPIED_NODES`]), else a fresh variable bound to `e` by a `let` placed before
    /// the statement being converted. `e` must be pure; within one statement nothing changes
    /// a variable, loads do not fault, so evaluating it first gives the same value.
    pub(super) fn bind_once(&mut self, e: Expr) -> Expr {
        if size::expr_nodes(&e) <= size::MAX_COPIED_NODES {
            return e;
        }
        let name = loop {
            let n = format!("_vy{}", self.bound);
            self.bound += 1;
            if self.used_vars.insert(n.clone()) {
                break n;
            }
        };
        if let Some(t) = self.type_of(&e) {
            self.var_types.insert(name.clone(), t);
        }
        self.hoisted.push(Stmt {
            id: NodeId::new(String::new()),
            kind: StmtKind::Let {
                name: name.clone(),
                value: e,
            },
        });
        Expr::Var(name)
    }

    /// Node ids `from` (and below it) said since diagnostic `diags` and region `regions`
    /// become `to`.
    fn renumber(&mut self, from: &str, to: &str, diags: usize, regions: usize) {
        let moved = |id: &str| -> Option<String> {
            let rest = id.strip_prefix(from)?;
            (rest.is_empty() || rest.starts_with('.')).then(|| format!("{to}{rest}"))
        };
        for d in &mut self.diags[diags..] {
            if let Some(m) = d.node.as_ref().and_then(|n| moved(n.as_str())) {
                d.node = Some(NodeId::new(m));
            }
        }
        for r in &mut self.regions[regions..] {
            if let Some(m) = moved(&r.0) {
                r.0 = m;
            }
        }
    }

    /// True when a fact says `index < len(buffer)` here.
    pub(super) fn proven(&self, index: &Expr, buffer: &str) -> bool {
        self.facts.iter().any(|(x, b)| b == buffer && x == index)
    }
}

/// What an unsupported vyre statement is, why it has no equivalent, and the fix.
fn unsupported(n: &VNode) -> (String, &'static str, &'static str) {
    match n {
        VNode::IndirectDispatch { .. } => (
            "vyre.node.indirect_dispatch".into(),
            "the dispatch size would come from a buffer; a vyrescope Program has a fixed dispatch \
             (vyre's PTX backend refuses it too)",
            "dispatch with a fixed size, or split the Program in two",
        ),
        VNode::AsyncLoad { .. } | VNode::AsyncStore { .. } | VNode::AsyncWait { .. } => (
            format!("vyre.node.{}", async_name(n)),
            "the format has no asynchronous copies",
            "write the copy as a loop of loads and stores followed by a workgroup barrier",
        ),
        VNode::Trap { .. } | VNode::Resume { .. } => (
            "vyre.node.trap/resume".into(),
            "vyrescope has no trap and resume mechanism",
            "report the condition through an output buffer instead",
        ),
        VNode::AllReduce { .. }
        | VNode::AllGather { .. }
        | VNode::ReduceScatter { .. }
        | VNode::Broadcast { .. } => (
            "vyre collective".into(),
            "collectives span several devices; a vyrescope Program runs on one GPU",
            "lower the collective to its single-device form in vyre first",
        ),
        VNode::Opaque(ext) => (
            format!("opaque extension `{}`", ext.extension_kind()),
            "vyrescope cannot know what an extension node does",
            "lower the extension to core vyre nodes before writing the file",
        ),
        _ => (
            "unknown vyre node".into(),
            "this vyre node kind is newer than the import",
            "lower it to core vyre nodes before writing the file",
        ),
    }
}

fn async_name(n: &VNode) -> &'static str {
    match n {
        VNode::AsyncLoad { .. } => "async_load",
        VNode::AsyncStore { .. } => "async_store",
        _ => "async_wait",
    }
}
