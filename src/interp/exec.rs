//! The SIMT executor: runs a unit (one or more whole workgroups) statement by statement over
//! all of its threads with an active-lane set.
//!
//! Because every statement finishes on every active lane before the next one starts, a
//! barrier's ordering guarantee holds by construction; the executor still checks that every
//! live thread of each workgroup (or of the grid) arrived, so a divergent barrier is reported
//! instead of silently "working". `if` splits the lane set, loops run while any lane is
//! active, `return` clears lanes for good.

use std::sync::atomic::{AtomicU64, Ordering};

use super::compile::{BufRef, Code, ExprCode, Instr, SCode, SKind, Special};
use super::memory::{decode, encode, Memory};
use super::InterpError;
use crate::inputs::LaunchShape;
use crate::ir::NodeId;
use crate::ir::{AtomicOp, BarrierScope, BinOp, Builtin, ElemType, ReduceOp, ScalarType};
use crate::semantics::{self as ops, Lanes};

/// The shared step budget of a dispatch.
pub(crate) struct Fuel {
    /// Steps allowed (node evaluations plus the fixed dispatch charges).
    pub(crate) limit: u64,
    /// Steps spent so far (units add theirs in batches).
    pub(crate) used: AtomicU64,
    /// Node evaluations done so far, the statistic reported as `node_evals`.
    pub(crate) evals: AtomicU64,
}

/// What every unit of a dispatch shares.
pub(crate) struct Ctx<'a> {
    pub(crate) code: &'a Code,
    pub(crate) globals: &'a [Memory],
    pub(crate) shape: LaunchShape,
    pub(crate) fuel: &'a Fuel,
}

/// Executor state for units of up to `wgs` workgroups (reused from unit to unit).
pub(crate) struct Unit {
    regs: Vec<Vec<u64>>,
    alive: Vec<bool>,
    shared: Vec<Memory>,
    /// Threads per workgroup.
    threads: usize,
    /// Per lane: workgroup index within the unit.
    wg_slot: Vec<u32>,
    /// Per lane: lane within its warp.
    lane_id: Vec<u32>,
    /// Per lane: unit index of lane 0 of its warp.
    warp_base: Vec<u32>,
    /// Per lane: number of threads in its warp (the last warp of a workgroup may be short).
    warp_len: Vec<u32>,
    /// Scratch: active flags for shuffles under divergence.
    active: Vec<bool>,
    /// Steps not yet added to the fuel counter.
    pending: u64,
    /// Node evaluations of this unit not yet added to [`Fuel::evals`].
    evals: u64,
    /// Lanes of the unit now running.
    n: usize,
    /// Local id components of each linear local id (x, y, z).
    local: [Vec<u32>; 3],
    /// Arrivals so far per dataflow arrival counter (this run of the unit).
    arrivals: std::collections::HashMap<u32, u64>,
}

impl Unit {
    /// State for units of up to `wgs` workgroups.
    pub(crate) fn new(cx: &Ctx, wgs: usize) -> Unit {
        let threads = cx.shape.threads_per_workgroup() as usize;
        let n = wgs * threads;
        let mut regs = vec![Vec::new(); cx.code.n_regs];
        for r in regs.iter_mut() {
            r.resize(n, 0);
        }
        for &(r, v) in &cx.code.consts {
            regs[r as usize].fill(v);
        }
        let shared = cx
            .code
            .shared
            .iter()
            .map(|s| Memory::zeroed(s.elem, s.count as usize * wgs))
            .collect();
        let mut u = Unit {
            regs,
            alive: vec![true; n],
            shared,
            threads,
            wg_slot: Vec::with_capacity(n),
            lane_id: Vec::with_capacity(n),
            warp_base: Vec::with_capacity(n),
            warp_len: Vec::with_capacity(n),
            active: vec![false; n],
            pending: 0,
            evals: 0,
            n,
            arrivals: std::collections::HashMap::new(),
            local: [0, 1, 2].map(|a| {
                let [wx, wy, _] = cx.shape.workgroup_size.map(|v| v as usize);
                (0..threads)
                    .map(|l| local_axis(l, wx, wy, a) as u32)
                    .collect()
            }),
        };
        u.fill_fixed_specials(cx, n);
        for x in 0..n {
            let l = x % threads;
            let first = l - l % 32;
            u.wg_slot.push((x / threads) as u32);
            u.lane_id.push((l % 32) as u32);
            u.warp_base.push((x - l % 32) as u32);
            u.warp_len.push((threads - first).min(32) as u32);
        }
        u
    }

    /// Runs workgroups `first .. first + count` (linear workgroup ids).
    pub(crate) fn run(&mut self, cx: &Ctx, first: u64, count: usize) -> Result<(), InterpError> {
        let n = count * self.threads;
        self.n = n;
        self.fill_specials(cx, first, count);
        self.alive[..n].fill(true);
        if let Some(clock) = cx.code.clock {
            self.regs[clock as usize][..n].fill(0);
        }
        self.arrivals.clear();
        self.shared.iter().for_each(Memory::clear);
        // Every invocation costs at least one step, charged in bulk before the unit runs, so a
        // huge grid of loop-free threads ends at the budget like a runaway loop does.
        self.pending += n as u64 + super::UNIT_OVERHEAD;
        let blame = cx.code.body.first().map_or("body", |s| s.id.as_str());
        self.charge(cx, blame, "before running this grid's next workgroups")?;
        let r = self.list(cx, &cx.code.body, &Lanes::All(n));
        let done = self.charge(cx, blame, "in this unit of workgroups");
        cx.fuel.evals.fetch_add(self.evals, Ordering::Relaxed);
        self.evals = 0;
        r.and(done)
    }

    /// Fills the registers of builtins that are the same for every unit (local ids, lane,
    /// grid size, buffer lengths) for all `n` lanes.
    fn fill_fixed_specials(&mut self, cx: &Ctx, n: usize) {
        let [wx, wy, _] = cx.shape.workgroup_size.map(|v| v as usize);
        let t = self.threads;
        for &(r, s) in &cx.code.specials {
            let reg = &mut self.regs[r as usize];
            let value = |l: usize| -> Option<u64> {
                Some(match s {
                    Special::Len(i) => cx.globals[i as usize].len as u64,
                    Special::Builtin(Builtin::LocalId(a)) => local_axis(l, wx, wy, a.index()),
                    Special::Builtin(Builtin::NumWorkgroups(a)) => cx.shape.grid[a.index()] as u64,
                    Special::Builtin(Builtin::Lane) => (l % 32) as u64,
                    Special::Builtin(Builtin::SubgroupSize) => 32,
                    Special::Builtin(Builtin::GlobalId(_) | Builtin::WorkgroupId(_)) => {
                        return None
                    }
                })
            };
            for (x, slot) in reg[..n].iter_mut().enumerate() {
                match value(x % t) {
                    Some(v) => *slot = v,
                    None => break,
                }
            }
        }
    }

    /// Fills the registers of builtins that depend on the unit's workgroups (`gid`, `wgid`).
    fn fill_specials(&mut self, cx: &Ctx, first: u64, count: usize) {
        let [gx, gy, _] = cx.shape.grid.map(|v| v as u64);
        let t = self.threads;
        for &(r, s) in &cx.code.specials {
            let Special::Builtin(b @ (Builtin::GlobalId(a) | Builtin::WorkgroupId(a))) = s else {
                continue;
            };
            let i = a.index();
            let reg = &mut self.regs[r as usize];
            for k in 0..count {
                let wg = first + k as u64;
                let w = match i {
                    0 => wg % gx,
                    1 => (wg / gx) % gy,
                    _ => wg / (gx * gy),
                } as u32;
                let lanes = &mut reg[k * t..(k + 1) * t];
                if matches!(b, Builtin::WorkgroupId(_)) {
                    lanes.fill(w as u64);
                } else {
                    let base = w.wrapping_mul(cx.shape.workgroup_size[i]);
                    for (slot, &l) in lanes.iter_mut().zip(&self.local[i]) {
                        *slot = base.wrapping_add(l) as u64;
                    }
                }
            }
        }
    }

    fn list(&mut self, cx: &Ctx, list: &[SCode], lanes: &Lanes) -> Result<(), InterpError> {
        let mut filtered: Option<Lanes> = None;
        for s in list {
            let cur = filtered.as_ref().unwrap_or(lanes);
            if cur.is_empty() {
                break;
            }
            self.stmt(cx, s, cur)?;
            if s.may_return {
                let alive = &self.alive;
                let next = cur.filter(|l| alive[l]);
                filtered = Some(next);
            }
        }
        Ok(())
    }

    fn stmt(&mut self, cx: &Ctx, s: &SCode, lanes: &Lanes) -> Result<(), InterpError> {
        let evals = s.cost * lanes.len() as u64;
        self.evals += evals;
        // The fixed charge covers dispatching a statement on few lanes, where it dominates.
        self.pending += evals + super::STATEMENT_OVERHEAD;
        if let (Some(clock), true) = (cx.code.clock, s.ticks) {
            let ticks = &mut self.regs[clock as usize];
            lanes.for_each(|l| ticks[l] += 1);
        }
        match &s.kind {
            SKind::Set { dst, value } => {
                self.eval(cx, value, lanes);
                if value.result != *dst {
                    self.copy(value.result, *dst, lanes);
                }
            }
            SKind::Store { buf, index, value } => {
                self.eval(cx, index, lanes);
                self.eval(cx, value, lanes);
                let (idx, val) = (
                    &self.regs[index.result as usize],
                    &self.regs[value.result as usize],
                );
                let (mem, bound, per_wg) = self.mem(cx, *buf);
                let elem = mem.elem;
                lanes.for_each(|l| {
                    let i = idx[l] as u32 as usize;
                    if i < bound {
                        let at = if per_wg {
                            self.wg_slot[l] as usize * bound + i
                        } else {
                            i
                        };
                        mem.set_raw(at, encode(elem, val[l]));
                    }
                });
            }
            SKind::If {
                cond,
                then,
                otherwise,
            } => {
                self.eval(cx, cond, lanes);
                let (t, f) = split(lanes, &self.regs[cond.result as usize]);
                if !t.is_empty() {
                    self.list(cx, then, &t)?;
                }
                if !f.is_empty() {
                    self.list(cx, otherwise, &f)?;
                }
            }
            SKind::Loop {
                counter,
                end,
                from,
                to,
                body,
            } => {
                self.eval(cx, from, lanes);
                self.eval(cx, to, lanes);
                self.copy(from.result, *counter, lanes);
                self.copy(to.result, *end, lanes);
                let (c, e) = (*counter as usize, *end as usize);
                let mut active = {
                    let (cr, er) = (&self.regs[c], &self.regs[e]);
                    lanes.filter(|l| (cr[l] as u32) < er[l] as u32)
                };
                while !active.is_empty() {
                    // An iteration costs its active lanes plus a fixed dispatch overhead even
                    // when the body is empty, so every loop is bounded by the budget.
                    self.pending += active.len() as u64 + super::ITERATION_OVERHEAD;
                    self.charge(cx, &s.id, "in this loop")?;
                    self.list(cx, body, &active)?;
                    let mut cr = std::mem::take(&mut self.regs[c]);
                    active.for_each(|l| cr[l] = (cr[l] as u32).wrapping_add(1) as u64);
                    let (er, alive) = (&self.regs[e], &self.alive);
                    active = active.filter(|l| alive[l] && (cr[l] as u32) < er[l] as u32);
                    self.regs[c] = cr;
                }
            }
            SKind::Barrier(scope) => self.barrier(*scope, &s.id, lanes)?,
            SKind::Return => lanes.for_each(|l| self.alive[l] = false),
            SKind::Block(b) => self.list(cx, b, lanes)?,
            SKind::Arrive {
                last,
                counter,
                total,
            } => {
                // Workgroups arrive in slot order; lanes are in slot order too.
                let mut slots: Vec<u32> = Vec::new();
                lanes.for_each(|l| {
                    if slots.last() != Some(&self.wg_slot[l]) {
                        slots.push(self.wg_slot[l]);
                    }
                });
                let count = self.arrivals.entry(*counter).or_insert(0);
                let mut winner = None;
                for s in slots {
                    *count += 1;
                    if *count == u64::from(*total) {
                        winner = Some(s);
                    }
                }
                if let Some(w) = winner {
                    let mut r = std::mem::take(&mut self.regs[*last as usize]);
                    lanes.for_each(|l| {
                        if self.wg_slot[l] == w {
                            r[l] = 1;
                        }
                    });
                    self.regs[*last as usize] = r;
                }
            }
        }
        Ok(())
    }

    /// Adds the pending node evaluations to the shared budget; fails when it is spent.
    /// `node` is the statement to blame and `place` says where the budget ran out.
    fn charge(&mut self, cx: &Ctx, node: &str, place: &str) -> Result<(), InterpError> {
        let used = cx
            .fuel
            .used
            .fetch_add(self.pending, Ordering::Relaxed)
            .saturating_add(self.pending);
        self.pending = 0;
        if used > cx.fuel.limit {
            return Err(InterpError {
                code: "I003",
                node: Some(NodeId::from(node)),
                message: format!(
                    "the step budget of {} steps (`--fuel`) ran out {place}",
                    cx.fuel.limit
                ),
                fix: "check the loop bounds and the launch size (a loop may never end for some \
                      threads, or the grid may be far larger than meant); if the work is really \
                      that large, raise the budget (`vyrescope run --fuel N`)"
                    .into(),
            });
        }
        Ok(())
    }

    /// Checks that every live thread of the barrier's scope is here.
    fn barrier(&self, scope: BarrierScope, node: &str, lanes: &Lanes) -> Result<(), InterpError> {
        if matches!(lanes, Lanes::All(_)) {
            return Ok(());
        }
        let t = self.threads;
        let mut here = vec![0usize; self.alive.len().div_ceil(t.max(1))];
        lanes.for_each(|l| here[l / t] += 1);
        let live = |w: usize| {
            self.alive[w * t..(w + 1) * t]
                .iter()
                .filter(|&&a| a)
                .count()
        };
        let fail = |what: String| InterpError {
            code: "I004",
            node: Some(NodeId::from(node)),
            message: format!(
                "{what}; the other threads did not reach this barrier (a divergent \
                 barrier hangs or misbehaves on a GPU)"
            ),
            fix: "move the barrier out of any `if` or loop whose condition differs between \
                  threads (`vyrescope check` reports where)"
                .into(),
        };
        match scope {
            BarrierScope::Workgroup => {
                for (w, &h) in here.iter().enumerate() {
                    if h > 0 && h != live(w) {
                        return Err(fail(format!(
                            "workgroup barrier reached by {h} of the {} live threads of workgroup slot {w}",
                            live(w)
                        )));
                    }
                }
            }
            BarrierScope::Subtask { threads } => {
                // Lanes are numbered workgroup by workgroup and the workgroup is
                // one-dimensional (V073), so lane / threads is (slot, sub-task); statements
                // run in lockstep, so only a divergent arrival is left to catch.
                let s = (threads as usize).max(1);
                let mut here = vec![0usize; self.alive.len().div_ceil(s)];
                lanes.for_each(|l| here[l / s] += 1);
                for (g, &h) in here.iter().enumerate() {
                    let live = self.alive[g * s..((g + 1) * s).min(self.alive.len())]
                        .iter()
                        .filter(|&&a| a)
                        .count();
                    if h > 0 && h != live {
                        return Err(InterpError {
                            code: "I005",
                            node: Some(NodeId::from(node)),
                            message: format!(
                                "sub-task barrier reached by {h} of the {live} live threads of \
                                 sub-task {} of workgroup slot {}; the other threads of the \
                                 sub-task did not reach it (a divergent barrier hangs or \
                                 misbehaves on a GPU)",
                                (g * s % t.max(1)) / s,
                                g * s / t.max(1)
                            ),
                            fix: "move the barrier out of any `if` or loop whose condition \
                                  differs between threads of one sub-task (`vyrescope check` \
                                  reports where)"
                                .into(),
                        });
                    }
                }
            }
            BarrierScope::Grid => {
                let total_live = self.alive[..self.n].iter().filter(|&&a| a).count();
                if lanes.len() != total_live {
                    return Err(fail(format!(
                        "grid barrier reached by {} of the {total_live} live threads",
                        lanes.len()
                    )));
                }
            }
        }
        Ok(())
    }

    fn copy(&mut self, src: u32, dst: u32, lanes: &Lanes) {
        let mut d = std::mem::take(&mut self.regs[dst as usize]);
        ops::map1(&mut d, &self.regs[src as usize], lanes, |x| x);
        self.regs[dst as usize] = d;
    }

    /// A buffer's memory, its bound and whether indices are per workgroup.
    fn mem<'m>(&'m self, cx: &'m Ctx, b: BufRef) -> (&'m Memory, usize, bool) {
        match b {
            BufRef::Global(i) => {
                let m = &cx.globals[i as usize];
                (m, m.len, false)
            }
            BufRef::Shared(i) => (
                &self.shared[i as usize],
                cx.code.shared[i as usize].count as usize,
                true,
            ),
        }
    }

    fn eval(&mut self, cx: &Ctx, e: &ExprCode, lanes: &Lanes) {
        for ins in &e.instrs {
            self.instr(cx, ins, lanes);
        }
    }

    fn instr(&mut self, cx: &Ctx, ins: &Instr, lanes: &Lanes) {
        let dst = match ins {
            Instr::Bin { dst, .. }
            | Instr::Un { dst, .. }
            | Instr::Select { dst, .. }
            | Instr::Cast { dst, .. }
            | Instr::Fma { dst, .. }
            | Instr::Load { dst, .. }
            | Instr::Atomic { dst, .. }
            | Instr::Shuffle { dst, .. }
            | Instr::Reduce { dst, .. }
            | Instr::Ballot { dst, .. } => *dst as usize,
        };
        let mut out = std::mem::take(&mut self.regs[dst]);
        let r = |x: &u32| &self.regs[*x as usize];
        match ins {
            Instr::Bin { op, ty, a, b, .. } => ops::bin(*op, *ty, &mut out, r(a), r(b), lanes),
            Instr::Un { op, ty, a, .. } => ops::un(*op, *ty, &mut out, r(a), lanes),
            Instr::Select { c, a, b, .. } => ops::select(&mut out, r(c), r(a), r(b), lanes),
            Instr::Cast { from, to, a, .. } => ops::cast(*from, *to, &mut out, r(a), lanes),
            Instr::Fma { ty, a, b, c, .. } => ops::fma(*ty, &mut out, r(a), r(b), r(c), lanes),
            Instr::Load { buf, idx, .. } => {
                let (mem, bound, per_wg) = self.mem(cx, *buf);
                let idx = r(idx);
                let elem = mem.elem;
                let direct32 = matches!(elem, ElemType::U32 | ElemType::I32 | ElemType::F32);
                let direct64 = elem.size_bytes() == 8;
                if !per_wg && direct32 {
                    // Hot path: 32-bit words whose raw bits are the register value.
                    let w = mem.words32();
                    load_loop(&mut out, lanes, |l| {
                        w.get(idx[l] as u32 as usize)
                            .map_or(0, |x| x.load(Ordering::Relaxed) as u64)
                    });
                } else if !per_wg && direct64 {
                    let w = mem.words64();
                    load_loop(&mut out, lanes, |l| {
                        w.get(idx[l] as u32 as usize)
                            .map_or(0, |x| x.load(Ordering::Relaxed))
                    });
                } else {
                    load_loop(&mut out, lanes, |l| {
                        let i = idx[l] as u32 as usize;
                        if i >= bound {
                            0
                        } else if per_wg {
                            decode(elem, mem.raw(self.wg_slot[l] as usize * bound + i))
                        } else {
                            decode(elem, mem.raw(i))
                        }
                    });
                }
            }
            Instr::Atomic {
                op,
                ty,
                buf,
                idx,
                val,
                expected,
                ..
            } => {
                let (mem, bound, per_wg) = self.mem(cx, *buf);
                let (idx, val) = (r(idx), r(val));
                let exp = expected.map(|x| r(&x));
                let elem = mem.elem;
                lanes.for_each(|l| {
                    let i = idx[l] as u32 as usize;
                    out[l] = if i >= bound {
                        0
                    } else {
                        let at = if per_wg {
                            self.wg_slot[l] as usize * bound + i
                        } else {
                            i
                        };
                        let (v, x) = (val[l], exp.map_or(0, |e| e[l]));
                        let old = mem.rmw(at, |raw| {
                            encode(elem, atomic_op(*op, *ty, decode(elem, raw), v, x))
                        });
                        if let Some(log) = &mem.float_log {
                            log.add(at, float_magnitude(*ty, v));
                        }
                        decode(elem, old)
                    };
                });
            }
            Instr::Shuffle { val, lane, .. } => {
                let (val, src) = (r(val), r(lane));
                let all = matches!(lanes, Lanes::All(_));
                let mut active = std::mem::take(&mut self.active);
                if !all {
                    lanes.for_each(|l| active[l] = true);
                }
                lanes.for_each(|l| {
                    let s = src[l] as u32 & 31;
                    let from = self.warp_base[l] as usize + s as usize;
                    out[l] = if s < self.warp_len[l] && (all || active[from]) {
                        val[from]
                    } else {
                        val[l]
                    };
                });
                if !all {
                    lanes.for_each(|l| active[l] = false);
                }
                self.active = active;
            }
            Instr::Reduce { op, ty, val, .. } => {
                let val = r(val);
                let (bop, identity) = reduce_op(*op, *ty);
                self.per_warp(lanes, |group| {
                    let mut slots = [identity; 32];
                    for &l in group {
                        slots[self.lane_id[l as usize] as usize] = val[l as usize];
                    }
                    // Butterfly (xor 16, 8, 4, 2, 1): each step combines lane pairs with a
                    // commutative op, so every lane ends with the same bits.
                    let mut off = 16;
                    while off > 0 {
                        for i in 0..32 {
                            if i & off == 0 {
                                let v = ops::bin_scalar(bop, *ty, slots[i], slots[i | off]);
                                slots[i] = v;
                                slots[i | off] = v;
                            }
                        }
                        off >>= 1;
                    }
                    for &l in group {
                        out[l as usize] = slots[0];
                    }
                });
            }
            Instr::Ballot { val, .. } => {
                let val = r(val);
                self.per_warp(lanes, |group| {
                    let mask = group
                        .iter()
                        .filter(|&&l| val[l as usize] != 0)
                        .fold(0u32, |m, &l| m | 1 << self.lane_id[l as usize]);
                    for &l in group {
                        out[l as usize] = mask as u64;
                    }
                });
            }
        }
        self.regs[dst] = out;
    }

    /// Calls `f` with the active lanes of each warp (ascending, grouped by warp).
    fn per_warp(&self, lanes: &Lanes, mut f: impl FnMut(&[u32])) {
        let owned;
        let list: &[u32] = match lanes {
            Lanes::All(n) => {
                owned = (0..*n as u32).collect::<Vec<_>>();
                &owned
            }
            Lanes::List(v) => v,
        };
        let mut i = 0;
        while i < list.len() {
            let base = self.warp_base[list[i] as usize];
            let mut j = i + 1;
            while j < list.len() && self.warp_base[list[j] as usize] == base {
                j += 1;
            }
            f(&list[i..j]);
            i = j;
        }
    }
}

/// `out[l] = get(l)` on the active lanes.
#[inline(always)]
fn load_loop(out: &mut [u64], lanes: &Lanes, get: impl Fn(usize) -> u64) {
    match lanes {
        Lanes::All(n) => out[..*n]
            .iter_mut()
            .enumerate()
            .for_each(|(l, o)| *o = get(l)),
        Lanes::List(v) => v.iter().for_each(|&l| out[l as usize] = get(l as usize)),
    }
}

/// Component `axis` of the local id of linear local id `l` in an `X x Y x Z` workgroup.
fn local_axis(l: usize, x: usize, y: usize, axis: usize) -> u64 {
    (match axis {
        0 => l % x,
        1 => (l / x) % y,
        _ => l / (x * y),
    }) as u64
}

/// Splits `lanes` by the bool register `c` into (true, false) lane sets.
fn split(lanes: &Lanes, c: &[u64]) -> (Lanes, Lanes) {
    let (mut t, mut f) = (Vec::new(), Vec::new());
    lanes.for_each(|l| {
        if c[l] != 0 {
            t.push(l as u32)
        } else {
            f.push(l as u32)
        }
    });
    if let Lanes::All(n) = lanes {
        if f.is_empty() {
            return (Lanes::All(*n), Lanes::List(f));
        }
        if t.is_empty() {
            return (Lanes::List(t), Lanes::All(*n));
        }
    }
    (Lanes::List(t), Lanes::List(f))
}

/// `|v|` of a float register value (0 for other types).
fn float_magnitude(ty: ScalarType, v: u64) -> f64 {
    match ty {
        ScalarType::F32 => (f32::from_bits(v as u32) as f64).abs(),
        ScalarType::F64 => f64::from_bits(v).abs(),
        _ => 0.0,
    }
}

/// An `f32` in register form with a subnormal value replaced by a zero of its sign.
fn ftz_f32(bits: u64) -> u64 {
    let x = bits as u32;
    if x & 0x7f80_0000 == 0 {
        (x & 0x8000_0000) as u64
    } else {
        bits
    }
}

/// The new value of an atomic element (register form) from its `old` value.
pub(crate) fn atomic_op(op: AtomicOp, ty: ScalarType, old: u64, v: u64, expected: u64) -> u64 {
    let b = |o| ops::bin_scalar(o, ty, old, v);
    match op {
        // PTX's `atom.add.f32`/`red.add.f32` flush subnormal inputs and results to a zero
        // of the same sign (there is no `.noftz` form for f32), so the oracle does too.
        AtomicOp::Add if ty == ScalarType::F32 => {
            ftz_f32(ops::bin_scalar(BinOp::Add, ty, ftz_f32(old), ftz_f32(v)))
        }
        AtomicOp::Add => b(BinOp::Add),
        AtomicOp::Min => b(BinOp::Min),
        AtomicOp::Max => b(BinOp::Max),
        AtomicOp::And => b(BinOp::And),
        AtomicOp::Or => b(BinOp::Or),
        AtomicOp::Xor => b(BinOp::Xor),
        AtomicOp::Exchange => v,
        // Compares bit patterns: for floats this is the bitwise compare-and-swap PTX does.
        AtomicOp::Cas => {
            if old == expected {
                v
            } else {
                old
            }
        }
    }
}

/// The binary operator of a reduction and its identity (register form) for `ty`; inactive
/// lanes hold the identity in the butterfly.
pub(crate) fn reduce_op(op: ReduceOp, ty: ScalarType) -> (BinOp, u64) {
    let all_ones = if ty.bits() == 64 {
        u64::MAX
    } else {
        u32::MAX as u64
    };
    let (min_val, max_val) = match ty {
        ScalarType::I32 => (i32::MIN as u32 as u64, i32::MAX as u64),
        ScalarType::I64 => (i64::MIN as u64, i64::MAX as u64),
        _ => (0, all_ones),
    };
    let nan = match ty {
        ScalarType::F32 => 0x7fff_ffff,
        _ => 0x7fff_ffff_ffff_ffff,
    };
    let float = ty.is_float();
    match op {
        // -0.0 is the float identity of addition (x + -0.0 == x for every x, -0.0 included).
        ReduceOp::Add => (
            BinOp::Add,
            match ty {
                ScalarType::F32 => (-0.0f32).to_bits() as u64,
                ScalarType::F64 => (-0.0f64).to_bits(),
                _ => 0,
            },
        ),
        ReduceOp::Mul => (
            BinOp::Mul,
            match ty {
                ScalarType::F32 => 1.0f32.to_bits() as u64,
                ScalarType::F64 => 1.0f64.to_bits(),
                _ => 1,
            },
        ),
        // min/max ignore a NaN operand, so NaN is their float identity.
        ReduceOp::Min => (BinOp::Min, if float { nan } else { max_val }),
        ReduceOp::Max => (BinOp::Max, if float { nan } else { min_val }),
        ReduceOp::And => (BinOp::And, all_ones),
        ReduceOp::Or => (BinOp::Or, 0),
        ReduceOp::Xor => (BinOp::Xor, 0),
    }
}
