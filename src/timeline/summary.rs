//! The timeline summary: kernel time, SMs, the bubble fraction, per step its span, busy and
//! waiting time and the slice that ended it (the critical path through the plan), per wait
//! its spread, and for a single Program its block waves.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::{Capture, Decoded, Slice};
use crate::emit::timeline::UnitKind;

/// One step of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepSummary {
    /// Pipeline step (None: a plain Program).
    pub step: Option<u32>,
    /// First start, us after the first record.
    pub start_us: f64,
    /// Last end, us after the first record.
    pub end_us: f64,
    /// Sum of its slices' durations less the waits inside them (us).
    pub busy_us: f64,
    /// Time blocks spent in the waits inside the step or right after it, summed (us).
    pub wait_us: f64,
    /// Slices (workgroups run).
    pub slices: u64,
    /// The slice that ended last: the step's end waited on it (critical path).
    pub critical: CriticalSlice,
}

/// The last slice of a step.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CriticalSlice {
    /// Workgroup.
    pub workgroup: u32,
    /// SM.
    pub sm: u32,
    /// Its duration (us).
    pub dur_us: f64,
    /// Longest slice of the step (us), for comparison.
    pub longest_us: f64,
}

/// One wait unit of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WaitSummary {
    /// Launch index.
    pub launch: u32,
    /// Node id of the wait.
    pub node: String,
    /// What waits.
    pub kind: String,
    /// Step it follows or sits in.
    pub step: Option<u32>,
    /// Blocks that waited.
    pub blocks: u64,
    /// Mean and longest wait (us).
    pub mean_us: f64,
    /// Longest wait (us).
    pub max_us: f64,
}

/// Block waves of a single Program.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Waves {
    /// Blocks launched.
    pub blocks: u64,
    /// Most blocks seen running at once.
    pub resident: u64,
    /// `ceil(blocks / resident)`.
    pub waves: u64,
    /// Blocks of the last wave over `resident` (1.0: a full last wave).
    pub last_wave_occupancy: f64,
}

/// The summary (`run --timeline --json` prints it as `timeline`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// First record start to last record end (ms).
    pub kernel_ms: f64,
    /// SMs that ran a block.
    pub sms: u32,
    /// SMs the bubble fraction counts (the device's, else `sms`).
    pub sms_counted: u32,
    /// Percent of SM time, up to the last end, spent waiting or idle.
    pub bubble_pct: f64,
    /// Per step, in order.
    pub steps: Vec<StepSummary>,
    /// Per wait.
    pub waits: Vec<WaitSummary>,
    /// Block waves (single Program launches only).
    pub waves: Option<Waves>,
    /// Records lost to ring overflow.
    pub dropped: u64,
    /// Smallest positive difference between any two recorded stamps (ns): an upper bound of
    /// the `%globaltimer` tick on this card.
    pub timer_step_ns: Option<u64>,
}

/// Total length of the union of `iv` (sorted in place).
fn union_len(iv: &mut [(u64, u64)]) -> u64 {
    iv.sort_unstable();
    let mut total = 0;
    let mut cur: Option<(u64, u64)> = None;
    for &(a, b) in iv.iter() {
        match cur {
            Some((ca, cb)) if a <= cb => cur = Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                total += cb - ca;
                cur = Some((a, b));
            }
            None => cur = Some((a, b)),
        }
    }
    total + cur.map_or(0, |(a, b)| b - a)
}

/// `work` minus `waits` (both of one block, or of one SM). The waits are merged into
/// disjoint sorted intervals first, so each work interval walks only the waits it overlaps:
/// near-linear in the records, where cutting every piece by every wait was quadratic.
fn subtract(work: &[(u64, u64)], waits: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut sorted = waits.to_vec();
    sorted.sort_unstable();
    let mut cut: Vec<(u64, u64)> = Vec::with_capacity(sorted.len());
    for (a, b) in sorted.into_iter().filter(|(a, b)| a < b) {
        match cut.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => cut.push((a, b)),
        }
    }
    let mut out = Vec::new();
    for &(a, b) in work {
        let mut from = a;
        // The first merged wait ending after `a`; those before it cannot overlap.
        let first = cut.partition_point(|&(_, wb)| wb <= a);
        for &(wa, wb) in &cut[first..] {
            if wa >= b {
                break;
            }
            if wa > from {
                out.push((from, wa));
            }
            from = from.max(wb);
        }
        if from < b {
            out.push((from, b));
        }
    }
    out
}

const US: f64 = 1e3;

/// One block's SM, work intervals and wait intervals (ns).
type BlockTimes = (u32, Vec<(u64, u64)>, Vec<(u64, u64)>);

/// Summarises a decoded capture.
pub fn summarize(capture: &Capture, d: &Decoded) -> Summary {
    let t0 = d.slices.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let t1 = d.slices.iter().map(|s| s.end_ns).max().unwrap_or(t0);
    let span = t1 - t0;
    let rel = |t: u64| (t - t0) as f64 / US;

    // Per block: its work and wait intervals; per SM: the union of working time.
    let mut per_block: BTreeMap<(u32, u32), BlockTimes> = BTreeMap::new();
    for s in &d.slices {
        let e = per_block
            .entry((s.launch, s.block))
            .or_insert((s.sm, vec![], vec![]));
        if s.is_wait() {
            e.2.push((s.start_ns, s.end_ns));
        } else {
            e.1.push((s.start_ns, s.end_ns));
        }
    }
    let mut per_sm: HashMap<u32, Vec<(u64, u64)>> = HashMap::new();
    for (sm, work, waits) in per_block.values() {
        per_sm.entry(*sm).or_default().extend(subtract(work, waits));
    }
    let sms = per_sm.len() as u32;
    let counted = capture.device_sms.unwrap_or(sms).max(sms);
    let busy: u64 = per_sm.values_mut().map(|v| union_len(v)).sum();
    let bubble_pct = if span == 0 || counted == 0 {
        0.0
    } else {
        100.0 * (1.0 - busy as f64 / (span as f64 * counted as f64))
    };

    let mut steps: BTreeMap<Option<u32>, Vec<&Slice>> = BTreeMap::new();
    for s in d.slices.iter().filter(|s| !s.is_wait()) {
        steps.entry(s.step).or_default().push(s);
    }
    // Waits nested in a step slice of the same block (a wait inside a step's body): per
    // block, work intervals sorted by start with the running latest end, so each wait is
    // one binary search (a block holds up to 65,536 records).
    let mut work_of: HashMap<(u32, u32), Vec<(u64, u64)>> = HashMap::new();
    for s in d.slices.iter().filter(|s| !s.is_wait()) {
        work_of
            .entry((s.launch, s.block))
            .or_default()
            .push((s.start_ns, s.end_ns));
    }
    for v in work_of.values_mut() {
        v.sort_unstable();
        let mut reach = 0;
        for iv in v.iter_mut() {
            reach = reach.max(iv.1);
            iv.1 = reach;
        }
    }
    let nested = |w: &Slice| {
        work_of.get(&(w.launch, w.block)).is_some_and(|v| {
            let k = v.partition_point(|&(a, _)| a <= w.start_ns);
            k > 0 && v[k - 1].1 >= w.end_ns
        })
    };
    let mut waits_of: HashMap<Option<u32>, Vec<&Slice>> = HashMap::new();
    for w in d.slices.iter().filter(|w| w.is_wait()) {
        waits_of.entry(w.step).or_default().push(w);
    }
    let steps = steps
        .into_iter()
        .map(|(step, v)| {
            let (mut waits_in, mut waits_all) = (0u64, 0u64);
            for w in waits_of.get(&step).map_or(&[][..], Vec::as_slice) {
                waits_all += w.dur_ns();
                if nested(w) {
                    waits_in += w.dur_ns();
                }
            }
            let last = v.iter().max_by_key(|s| (s.end_ns, s.workgroup)).copied();
            let longest = v.iter().map(|s| s.dur_ns()).max().unwrap_or(0);
            let total: u64 = v.iter().map(|s| s.dur_ns()).sum();
            StepSummary {
                step,
                start_us: rel(v.iter().map(|s| s.start_ns).min().unwrap_or(t0)),
                end_us: rel(v.iter().map(|s| s.end_ns).max().unwrap_or(t0)),
                busy_us: total.saturating_sub(waits_in) as f64 / US,
                wait_us: waits_all as f64 / US,
                slices: v.len() as u64,
                critical: CriticalSlice {
                    workgroup: last.map_or(0, |s| s.workgroup),
                    sm: last.map_or(0, |s| s.sm),
                    dur_us: last.map_or(0.0, |s| s.dur_ns() as f64 / US),
                    longest_us: longest as f64 / US,
                },
            }
        })
        .collect();

    let mut waits: BTreeMap<(u32, u32), Vec<&Slice>> = BTreeMap::new();
    for s in d.slices.iter().filter(|s| s.is_wait()) {
        waits.entry((s.launch, s.unit)).or_default().push(s);
    }
    let waits = waits
        .into_iter()
        .map(|((launch, unit), v)| {
            let spec_unit = capture
                .launches
                .get(launch as usize)
                .and_then(|l| l.spec.units.get(unit as usize));
            let kind = match spec_unit.map(|u| u.kind) {
                Some(UnitKind::Wait(w)) => w.name().to_string(),
                _ => "wait".into(),
            };
            let total: u64 = v.iter().map(|s| s.dur_ns()).sum();
            WaitSummary {
                launch,
                node: spec_unit.map_or(String::new(), |u| u.node.clone()),
                kind,
                step: v.first().and_then(|s| s.step),
                blocks: v.len() as u64,
                mean_us: total as f64 / v.len().max(1) as f64 / US,
                max_us: v.iter().map(|s| s.dur_ns()).max().unwrap_or(0) as f64 / US,
            }
        })
        .collect();

    let single = capture.launches.len() == 1
        && capture.launches[0]
            .spec
            .units
            .iter()
            .all(|u| u.kind == UnitKind::Kernel);
    let waves = single.then(|| waves_of(capture.launches[0].blocks(), &d.slices));
    Summary {
        kernel_ms: span as f64 / 1e6,
        sms,
        sms_counted: counted,
        bubble_pct,
        steps,
        waits,
        waves,
        dropped: d.dropped,
        timer_step_ns: timer_step(&d.slices),
    }
}

fn timer_step(slices: &[Slice]) -> Option<u64> {
    let mut t: Vec<u64> = slices.iter().flat_map(|s| [s.start_ns, s.end_ns]).collect();
    t.sort_unstable();
    t.dedup();
    t.windows(2).map(|w| w[1] - w[0]).min()
}

/// Waves of a single Program: the most blocks running at once is the resident count.
fn waves_of(blocks: u64, slices: &[Slice]) -> Waves {
    let mut ev: Vec<(u64, i64)> = Vec::with_capacity(slices.len() * 2);
    for s in slices {
        ev.push((s.start_ns, 1));
        ev.push((s.end_ns, -1));
    }
    // Ends before starts at the same instant: a block that left frees its slot.
    ev.sort_unstable();
    let (mut cur, mut most) = (0i64, 0i64);
    for (_, d) in ev {
        cur += d;
        most = most.max(cur);
    }
    let resident = (most.max(1) as u64).min(blocks.max(1));
    let waves = blocks.div_ceil(resident);
    let last = blocks - (waves.saturating_sub(1)) * resident;
    Waves {
        blocks,
        resident,
        waves,
        last_wave_occupancy: last as f64 / resident as f64,
    }
}

/// Time one SM spent working and waiting (ns), for the per-SM lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct SmTimes {
    /// Union over its blocks of step time, less the waits inside it.
    pub busy_ns: u64,
    /// Union over its blocks of wait time, less the time another of its blocks worked.
    pub wait_ns: u64,
}

/// Busy and waiting time of every SM that ran a block, by SM id (the bubble fraction's
/// figures, per SM).
pub fn sm_times(d: &Decoded) -> BTreeMap<u32, SmTimes> {
    let mut per_block: BTreeMap<(u32, u32), BlockTimes> = BTreeMap::new();
    for s in &d.slices {
        let e = per_block
            .entry((s.launch, s.block))
            .or_insert((s.sm, vec![], vec![]));
        if s.is_wait() {
            e.2.push((s.start_ns, s.end_ns));
        } else {
            e.1.push((s.start_ns, s.end_ns));
        }
    }
    // Per SM: work intervals (less its blocks' own waits) and wait intervals.
    type Intervals = Vec<(u64, u64)>;
    let mut per_sm: BTreeMap<u32, (Intervals, Intervals)> = BTreeMap::new();
    for (sm, work, waits) in per_block.values() {
        let e = per_sm.entry(*sm).or_default();
        e.0.extend(subtract(work, waits));
        e.1.extend(waits.iter().copied());
    }
    per_sm
        .into_iter()
        .map(|(sm, (mut busy, waits))| {
            let busy_ns = union_len(&mut busy);
            // Waiting counts only where no block of the SM worked.
            let mut only_wait = subtract(&waits, &busy);
            (
                sm,
                SmTimes {
                    busy_ns,
                    wait_ns: union_len(&mut only_wait),
                },
            )
        })
        .collect()
}

impl Summary {
    /// A few lines for `run --timeline` in text mode.
    pub fn to_text(&self) -> String {
        let mut s = format!(
            "timeline: {:.4} ms on {} SMs, bubble {:.1}% of SM time (of {} SMs)\n",
            self.kernel_ms, self.sms, self.bubble_pct, self.sms_counted
        );
        for st in &self.steps {
            let name = st
                .step
                .map_or("kernel".to_string(), |k| format!("step {k}"));
            s.push_str(&format!(
                "  {name:<8} {:>10.2} .. {:>10.2} us  busy {:>10.2} us  wait {:>8.2} us  {} workgroups; last: wg {} on SM {} ({:.2} us, longest {:.2} us)\n",
                st.start_us, st.end_us, st.busy_us, st.wait_us, st.slices,
                st.critical.workgroup, st.critical.sm, st.critical.dur_us, st.critical.longest_us
            ));
        }
        for w in &self.waits {
            s.push_str(&format!(
                "  {} at {} (launch {}): {} blocks, mean {:.2} us, max {:.2} us\n",
                w.kind, w.node, w.launch, w.blocks, w.mean_us, w.max_us
            ));
        }
        if let Some(w) = &self.waves {
            s.push_str(&format!(
                "  {} blocks, {} resident at most: {} waves, last wave {:.0}% full\n",
                w.blocks,
                w.resident,
                w.waves,
                w.last_wave_occupancy * 100.0
            ));
        }
        if let Some(t) = self.timer_step_ns {
            s.push_str(&format!("  smallest step between stamps: {t} ns\n"));
        }
        if self.dropped > 0 {
            s.push_str(&format!(
                "  {} records dropped (more units per block than slots)\n",
                self.dropped
            ));
        }
        s
    }
}
