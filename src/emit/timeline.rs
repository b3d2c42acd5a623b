//! Timeline instrumentation: thread 0 of every block stamps `%globaltimer` at the start and end
//! of each unit of work and stores one record per unit in a device buffer passed as one more
//! kernel parameter (`param_timeline`, after every other parameter).
//!
//! Units (a [`TimelineSpec`] lists them by node id):
//! - [`UnitKind::Kernel`]: a plain Program's block lifetime, from the first body instruction
//!   to each `ret` thread 0 reaches;
//! - [`UnitKind::Step`]: one statement of a fused kernel that runs one pipeline step for one
//!   (virtual) workgroup: the step's block, or the guarded body of one iteration of its loop
//!   over virtual workgroups (the record then carries the virtual workgroup id);
//! - [`UnitKind::Wait`]: a statement for which [`wait_kind`] says that blocks wait there.
//!
//! Each block owns `slots_per_block` records (a power of two) at `block * slots * 32` bytes
//! and counts its records in a register, so the hot path has no atomics: record `n` goes to
//! slot `n & (slots - 1)` (a ring, should a block run more units than the plan said; the
//! host sees the overwritten ones as dropped). A record is eight `u32` words:
//! `start` (u64 ns), `end` (u64 ns), `unit`, `workgroup` ([`NO_WORKGROUP`] = the block's
//! own), `smid`, `seq` (the block's record counter). The buffer starts zeroed: a record
//! whose start is 0 was never written.
//!
//! Without a spec nothing here runs and the PTX is byte for byte the plain one.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::regs::{Reg, RegClass};
use super::writer::Writer;
use crate::ir::{BarrierScope, ScalarType, StmtKind, SyncOp, WaitOn};

/// `.param` name of the record buffer pointer.
pub const TIMELINE_PARAM: &str = "param_timeline";
/// Bytes per record.
pub const RECORD_BYTES: u32 = 32;
/// The `workgroup` word of a record that ran as the block's own workgroup.
pub const NO_WORKGROUP: u32 = u32::MAX;
/// Most record slots one block may own (the buffer is `blocks * slots * 32` bytes).
pub const MAX_SLOTS: u32 = 1 << 16;

/// A kind of wait a block can spend time in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    /// `barrier(grid)`: every block of the launch arrives before any leaves.
    GridBarrier,
    /// A dataflow task waiting for the completion flags of its producer workgroups.
    FlagWait,
    /// A dataflow task waiting for a producer step's counter to count all its tasks.
    CounterWait,
}

impl WaitKind {
    /// Short name for traces and summaries.
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::GridBarrier => "grid barrier",
            WaitKind::FlagWait => "flag wait",
            WaitKind::CounterWait => "counter wait",
        }
    }
}

/// Whether blocks wait at a statement of this kind, and how: the one place that knows which
/// statements are waits (a new waiting statement kind is added here and nowhere else).
pub fn wait_kind(kind: &StmtKind) -> Option<WaitKind> {
    match kind {
        StmtKind::Barrier(BarrierScope::Grid) => Some(WaitKind::GridBarrier),
        StmtKind::Sync(SyncOp::Wait { on, .. }) => Some(match on {
            WaitOn::Count { .. } => WaitKind::CounterWait,
            WaitOn::Window { .. } | WaitOn::Range { .. } => WaitKind::FlagWait,
        }),
        _ => None,
    }
}

/// What one unit of a timeline is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "wait")]
pub enum UnitKind {
    /// A whole block of a plain Program.
    Kernel,
    /// One pipeline step for one (virtual) workgroup.
    Step,
    /// A wait.
    Wait(WaitKind),
}

/// One instrumented statement.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimelineUnit {
    /// Node id of the statement (`body[2]`, `body[1].body[1]`); empty for [`UnitKind::Kernel`].
    pub node: String,
    /// What it is.
    pub kind: UnitKind,
    /// Pipeline step it belongs to (a wait: the step it follows or sits in).
    pub step: Option<u32>,
    /// Variable holding the virtual workgroup id (a loop over virtual workgroups), if any.
    pub workgroup_var: Option<String>,
    /// Workgroups of the step: records of a virtual workgroup at or past it did no work
    /// (the guard was false) and are dropped when decoding.
    pub workgroups: Option<u32>,
    /// Sub-tasks per block of a packed step (`P` workgroups side by side, ids `v..v + P`
    /// where `v` is thread 0's): thread 0 writes one record per sub-task, all with its own
    /// start and end stamps (the block's sub-tasks start together; thread 0 sees its own
    /// end only). `None`: one record.
    #[serde(default)]
    pub packed: Option<u32>,
}

/// What to record: the units and the record slots each block owns.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TimelineSpec {
    /// Units; a record's `unit` word indexes this list.
    pub units: Vec<TimelineUnit>,
    /// Record slots per block (a power of two, at most [`MAX_SLOTS`]).
    pub slots_per_block: u32,
}

impl TimelineSpec {
    /// A plain Program: one record per block, its lifetime; `step` names the pipeline step
    /// when the Program is one (the separate form of a pipeline).
    pub fn kernel(step: Option<u32>) -> Self {
        TimelineSpec {
            units: vec![TimelineUnit {
                node: String::new(),
                kind: UnitKind::Kernel,
                step,
                workgroup_var: None,
                workgroups: None,
                packed: None,
            }],
            slots_per_block: 1,
        }
    }

    /// Slots for `records` records per block: the next power of two, capped.
    pub fn slots_for(records: u64) -> u32 {
        records
            .clamp(1, MAX_SLOTS as u64)
            .next_power_of_two()
            .min(MAX_SLOTS as u64) as u32
    }

    /// Bytes of the record buffer for a launch of `blocks` blocks.
    pub fn buffer_bytes(&self, blocks: u64) -> u64 {
        blocks * self.slots_per_block as u64 * RECORD_BYTES as u64
    }
}

/// Registers of the instrumentation, set up once in the prologue.
pub(super) struct State {
    spec: TimelineSpec,
    by_node: HashMap<String, u32>,
    /// Thread 0 of the block.
    pred: Reg,
    /// This block's first record.
    base: Reg,
    /// Records written so far.
    count: Reg,
    smid: Reg,
    /// The kernel unit's start stamp (plain Programs).
    kernel_start: Option<Reg>,
}

/// An open unit: its index and start-stamp register.
pub(super) struct Open {
    unit: u32,
    start: Reg,
}

impl State {
    /// State for `spec` (registers are filled in by [`Writer::timeline_setup`]).
    pub(super) fn new(spec: TimelineSpec) -> Self {
        let by_node = spec
            .units
            .iter()
            .enumerate()
            .filter(|(_, u)| u.kind != UnitKind::Kernel)
            .map(|(i, u)| (u.node.clone(), i as u32))
            .collect();
        State {
            spec,
            by_node,
            pred: Reg::default(),
            base: Reg::default(),
            count: Reg::default(),
            smid: Reg::default(),
            kernel_start: None,
        }
    }

    /// The spec.
    pub(super) fn spec(&self) -> &TimelineSpec {
        &self.spec
    }
}

impl Writer<'_> {
    /// Prologue of an instrumented kernel: thread-0 predicate, the block's record base, the
    /// record counter and `%smid`; a plain Program also stamps its start here.
    pub(super) fn timeline_setup(&mut self) {
        let Some(slots) = self.timeline.as_ref().map(|s| s.spec.slots_per_block) else {
            return;
        };
        let r = |w: &mut Self| w.reg_class(RegClass::B32);
        let (tx, ty, tz, any) = (r(self), r(self), r(self), r(self));
        self.pro(format!("mov.u32 {tx}, %tid.x"));
        self.pro(format!("mov.u32 {ty}, %tid.y"));
        self.pro(format!("mov.u32 {tz}, %tid.z"));
        self.pro(format!("or.b32 {any}, {tx}, {ty}"));
        self.pro(format!("or.b32 {any}, {any}, {tz}"));
        let pred = self.reg_class(RegClass::Pred);
        self.pro(format!("setp.eq.u32 {pred}, {any}, 0"));
        let (bx, by, bz, nx, ny, lin) = (r(self), r(self), r(self), r(self), r(self), r(self));
        self.pro(format!("mov.u32 {bx}, %ctaid.x"));
        self.pro(format!("mov.u32 {by}, %ctaid.y"));
        self.pro(format!("mov.u32 {bz}, %ctaid.z"));
        self.pro(format!("mov.u32 {nx}, %nctaid.x"));
        self.pro(format!("mov.u32 {ny}, %nctaid.y"));
        self.pro(format!("mad.lo.s32 {lin}, {bz}, {ny}, {by}"));
        self.pro(format!("mad.lo.s32 {lin}, {lin}, {nx}, {bx}"));
        let (raw, base, off) = (
            self.reg_class(RegClass::B64),
            self.reg_class(RegClass::B64),
            self.reg_class(RegClass::B64),
        );
        self.pro(format!("ld.param.u64 {raw}, [{TIMELINE_PARAM}]"));
        self.pro(format!("cvta.to.global.u64 {base}, {raw}"));
        self.pro(format!(
            "mul.wide.u32 {off}, {lin}, {}",
            slots as u64 * RECORD_BYTES as u64
        ));
        self.pro(format!("add.s64 {base}, {base}, {off}"));
        let (count, smid) = (r(self), r(self));
        self.pro(format!("mov.u32 {count}, 0"));
        self.pro(format!("mov.u32 {smid}, %smid"));
        let kernel = self
            .timeline
            .as_ref()
            .is_some_and(|s| s.spec.units.iter().any(|u| u.kind == UnitKind::Kernel));
        let kernel_start = kernel.then(|| {
            let t = self.reg_class(RegClass::B64);
            self.pro(format!("@{pred} mov.u64 {t}, %globaltimer"));
            t
        });
        if let Some(s) = self.timeline.as_mut() {
            s.pred = pred;
            s.base = base;
            s.count = count;
            s.smid = smid;
            s.kernel_start = kernel_start;
        }
    }

    /// Opens the unit of statement `node`, if it is one: stamps its start.
    pub(super) fn timeline_open(&mut self, node: &str) -> Option<Open> {
        let (unit, pred) = {
            let s = self.timeline.as_ref()?;
            (*s.by_node.get(node)?, s.pred.clone())
        };
        let start = self.reg_class(RegClass::B64);
        self.ins(format!("@{pred} mov.u64 {start}, %globaltimer"));
        Some(Open { unit, start })
    }

    /// Closes an open unit: stamps its end and stores its record.
    pub(super) fn timeline_close(&mut self, open: Option<Open>) {
        let Some(open) = open else { return };
        let unit = self
            .timeline
            .as_ref()
            .and_then(|s| s.spec.units.get(open.unit as usize));
        let (wg, packed) = (
            unit.and_then(|u| u.workgroup_var.clone()),
            unit.and_then(|u| u.packed).unwrap_or(1),
        );
        let wg = match wg.as_deref().map(|v| self.var(v).cloned()) {
            Some(Ok(info)) => match info.konst {
                Some(k) => super::writer::imm_text(k),
                None if info.ty == ScalarType::U32 => info.reg.to_string(),
                None => NO_WORKGROUP.to_string(),
            },
            _ => NO_WORKGROUP.to_string(),
        };
        self.timeline_record(None, open.unit, &open.start, &wg, true);
        // The block's other sub-tasks of a packed step: ids `wg + 1 ..`, same stamps.
        if wg != NO_WORKGROUP.to_string() {
            for j in 1..packed {
                let next = match wg.parse::<u64>() {
                    Ok(k) => (k + u64::from(j)).to_string(),
                    Err(_) => {
                        let r = self.reg_class(RegClass::B32);
                        self.ins(format!("add.u32 {r}, {wg}, {j}"));
                        r.to_string()
                    }
                };
                self.timeline_record(None, open.unit, &open.start, &next, true);
            }
        }
    }

    /// Before a `ret` (under `guard`) and at the epilogue: the block-lifetime record of a
    /// plain Program.
    pub(super) fn timeline_kernel_end(&mut self, guard: Option<&str>) {
        let Some(start) = self.timeline.as_ref().and_then(|s| s.kernel_start.clone()) else {
            return;
        };
        // One record per block, always slot 0: several `ret`s (one per path) never count up.
        self.timeline_record(guard, 0, &start, &NO_WORKGROUP.to_string(), false);
    }

    fn timeline_record(
        &mut self,
        guard: Option<&str>,
        unit: u32,
        start: &str,
        wg: &str,
        count_up: bool,
    ) {
        let Some(s) = self.timeline.as_ref() else {
            return;
        };
        let (pred, base, count, smid, slots) = (
            s.pred.clone(),
            s.base.clone(),
            s.count.clone(),
            s.smid.clone(),
            s.spec.slots_per_block,
        );
        let p = match guard {
            Some(g) => {
                let both = self.reg_class(RegClass::Pred);
                match g.strip_prefix('!') {
                    Some(g) => self.ins(format!("and.pred {both}, {pred}, !{g}")),
                    None => self.ins(format!("and.pred {both}, {pred}, {g}")),
                }
                both
            }
            None => pred,
        };
        let end = self.reg_class(RegClass::B64);
        self.ins(format!("@{p} mov.u64 {end}, %globaltimer"));
        let slot = self.reg_class(RegClass::B32);
        self.ins(format!("and.b32 {slot}, {count}, {}", slots - 1));
        let (off, addr) = (self.reg_class(RegClass::B64), self.reg_class(RegClass::B64));
        self.ins(format!("mul.wide.u32 {off}, {slot}, {RECORD_BYTES}"));
        self.ins(format!("add.s64 {addr}, {base}, {off}"));
        self.ins(format!(
            "@{p} st.global.v2.u64 [{addr}], {{{start}, {end}}}"
        ));
        // Vector stores take registers only.
        let (u, w) = (self.reg_class(RegClass::B32), self.reg_class(RegClass::B32));
        self.ins(format!("mov.u32 {u}, {unit}"));
        self.ins(format!("mov.u32 {w}, {wg}"));
        self.ins(format!(
            "@{p} st.global.v4.u32 [{addr}+16], {{{u}, {w}, {smid}, {count}}}"
        ));
        if count_up {
            self.ins(format!("add.s32 {count}, {count}, 1"));
        }
    }

    /// The spec this kernel records, if any.
    pub(super) fn timeline_spec(&self) -> Option<&TimelineSpec> {
        self.timeline.as_ref().map(|s| s.spec())
    }
}
