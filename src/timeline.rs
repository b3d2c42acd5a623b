//! Timeline records read back from instrumented kernels (see `emit::timeline`): decoding
//! into slices, the consistency check `selftest` runs, the summary (`summary`) and the
//! Chrome trace-event export (`trace`), and the record file that carries a capture to
//! another machine (`file`).
//!
//! Pure host code: it takes the raw record buffers and what was launched, so it is tested on
//! recorded buffers without a GPU.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::emit::timeline::{TimelineSpec, UnitKind, NO_WORKGROUP, RECORD_BYTES};

pub mod file;
pub mod summary;
pub mod trace;

pub use summary::{sm_times, summarize, SmTimes, Summary};

/// The record buffer of one launch and what it was recorded from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchRecords {
    /// Kernel name.
    pub kernel: String,
    /// What the kernel recorded.
    pub spec: TimelineSpec,
    /// Launch grid.
    pub grid: [u32; 3],
    /// Device time of the launch (CUDA events), when measured.
    pub device_ms: Option<f64>,
    /// [`crate::ir::Program::fingerprint`] of the plain Program the kernel was instrumented
    /// from (a run's launched kernel is the recorded one exactly when they are equal); not
    /// kept in record files.
    #[serde(skip)]
    pub program: Option<u64>,
    /// The raw buffer: `blocks * slots * 32` bytes.
    #[serde(skip)]
    pub bytes: Vec<u8>,
}

impl LaunchRecords {
    /// Blocks of the launch.
    pub fn blocks(&self) -> u64 {
        self.grid.iter().map(|&g| g as u64).product()
    }
}

/// A host-side phase of the dispatch (upload, JIT, launch, readback), in host time from the
/// start of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostPhase {
    /// Phase name.
    pub name: String,
    /// Start (ms after the run began).
    pub start_ms: f64,
    /// Duration (ms).
    pub dur_ms: f64,
}

/// Everything one timeline run captured.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Capture {
    /// Launches in order (one for a Program, one per step or fused group for a pipeline).
    pub launches: Vec<LaunchRecords>,
    /// Host phases.
    pub host: Vec<HostPhase>,
    /// Streaming multiprocessors of the device (for the bubble fraction), when known.
    pub device_sms: Option<u32>,
}

/// One recorded unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Slice {
    /// Index of the launch in [`Capture::launches`].
    pub launch: u32,
    /// Linear block index.
    pub block: u32,
    /// SM the block ran on.
    pub sm: u32,
    /// Unit index in the launch's spec.
    pub unit: u32,
    /// What the unit is.
    pub kind: UnitKind,
    /// Pipeline step, if any.
    pub step: Option<u32>,
    /// (Virtual) workgroup: the block itself unless it ran virtual workgroups.
    pub workgroup: u32,
    /// Start, ns of `%globaltimer`.
    pub start_ns: u64,
    /// End, ns of `%globaltimer`.
    pub end_ns: u64,
}

impl Slice {
    /// Duration in ns (0 for a malformed slice).
    pub fn dur_ns(&self) -> u64 {
        self.end_ns.saturating_sub(self.start_ns)
    }

    /// Whether the slice is a wait.
    pub fn is_wait(&self) -> bool {
        matches!(self.kind, UnitKind::Wait(_))
    }
}

/// Decoded records of a capture.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Decoded {
    /// Slices ordered by start (then launch, block).
    pub slices: Vec<Slice>,
    /// Records lost because a block wrote more than its slots (the ring kept the latest).
    pub dropped: u64,
    /// Records that name no unit of the spec or end before they start (not in `slices`).
    pub malformed: u64,
    /// Slices whose end precedes their start (counted in `malformed`).
    pub reversed: u64,
}

/// A record buffer that does not fit its launch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TimelineError {
    /// Launch index.
    pub launch: usize,
    /// Kernel name.
    pub kernel: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

fn word(b: &[u8], i: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[i * 4..i * 4 + 4]);
    u32::from_le_bytes(w)
}

/// Decodes every launch's records; records may sit in any order in a block's ring.
pub fn decode(capture: &Capture) -> Result<Decoded, TimelineError> {
    let mut out = Decoded::default();
    for (li, l) in capture.launches.iter().enumerate() {
        let slots = l.spec.slots_per_block as u64;
        let want = l.spec.buffer_bytes(l.blocks());
        if l.bytes.len() as u64 != want {
            return Err(TimelineError {
                launch: li,
                kernel: l.kernel.clone(),
                message: format!(
                    "{} bytes, but {} blocks x {slots} slots x {RECORD_BYTES} bytes = {want}",
                    l.bytes.len(),
                    l.blocks()
                ),
                fix: "pass the buffer read back from this launch, unchanged".into(),
            });
        }
        for (block, region) in l
            .bytes
            .chunks_exact((slots * RECORD_BYTES as u64) as usize)
            .enumerate()
        {
            let mut top_seq: Option<u32> = None;
            for rec in region.chunks_exact(RECORD_BYTES as usize) {
                let start = word(rec, 0) as u64 | (word(rec, 1) as u64) << 32;
                if start == 0 {
                    continue;
                }
                let end = word(rec, 2) as u64 | (word(rec, 3) as u64) << 32;
                let (unit, wg, sm, seq) = (word(rec, 4), word(rec, 5), word(rec, 6), word(rec, 7));
                top_seq = Some(top_seq.map_or(seq, |t| t.max(seq)));
                let Some(u) = l.spec.units.get(unit as usize) else {
                    out.malformed += 1;
                    continue;
                };
                if end < start {
                    out.malformed += 1;
                    out.reversed += 1;
                    continue;
                }
                let workgroup = if wg == NO_WORKGROUP { block as u32 } else { wg };
                // A virtual workgroup past the step's count ran no work (its guard was false).
                if u.workgroup_var.is_some() && u.workgroups.is_some_and(|g| workgroup >= g) {
                    continue;
                }
                out.slices.push(Slice {
                    launch: li as u32,
                    block: block as u32,
                    sm,
                    unit,
                    kind: u.kind,
                    step: u.step,
                    workgroup,
                    start_ns: start,
                    end_ns: end,
                });
            }
            if let Some(t) = top_seq {
                out.dropped += (t as u64 + 1).saturating_sub(slots);
            }
        }
    }
    out.slices
        .sort_by_key(|s| (s.start_ns, s.launch, s.block, s.unit, s.workgroup));
    Ok(out)
}

/// Checks a decoded capture: every (step, workgroup) of every launch present exactly once,
/// no record lost or malformed, every wait ending inside its launch's span. Returns the problems
/// (empty: consistent).
///
/// Time and memory grow with the slices, never with the counts a spec declares: a record
/// file may claim 2^32 workgroups for a unit while holding a handful of records, so the
/// workgroups seen are sorted and counted rather than marked in a table of the claimed size.
pub fn check(capture: &Capture, d: &Decoded) -> Vec<String> {
    let mut problems = Vec::new();
    if d.dropped > 0 {
        problems.push(format!("{} records dropped (ring overflow)", d.dropped));
    }
    if d.reversed > 0 {
        problems.push(format!("{} slices end before they start", d.reversed));
    }
    if d.malformed > d.reversed {
        problems.push(format!("{} records name no unit", d.malformed - d.reversed));
    }
    // One pass over the slices: each launch's work span, each (launch, unit)'s slices.
    let mut span: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut of_unit: HashMap<(u32, u32), Vec<&Slice>> = HashMap::new();
    for s in &d.slices {
        if !s.is_wait() {
            let e = span.entry(s.launch).or_insert((u64::MAX, 0));
            *e = (e.0.min(s.start_ns), e.1.max(s.end_ns));
        }
        of_unit.entry((s.launch, s.unit)).or_default().push(s);
    }
    for (li, l) in capture.launches.iter().enumerate() {
        // The kernel's span is that of its work: a span taken over the waits too would hold
        // every wait by definition.
        let (lo, hi) = span.get(&(li as u32)).copied().unwrap_or((0, u64::MAX));
        for (ui, u) in l.spec.units.iter().enumerate() {
            let mine = of_unit
                .get(&(li as u32, ui as u32))
                .map_or(&[][..], Vec::as_slice);
            if matches!(u.kind, UnitKind::Wait(_)) {
                // A wait ends inside the work's span: not before any work began (it waits for
                // some), not after all of it ended. It may start before the first work slice:
                // a block with nothing to do before its wait can be scheduled ahead of the
                // block that runs the producer (seen on an H100: a one-workgroup step's
                // consumers waiting before its block stamped its start).
                let outside = mine
                    .iter()
                    .filter(|s| s.end_ns < lo || s.end_ns > hi)
                    .count();
                if outside > 0 {
                    problems.push(format!(
                        "launch {li} `{}`: {outside} waits at {} outside the kernel's span",
                        l.kernel, u.node
                    ));
                }
                continue;
            }
            let expected = match (&u.workgroup_var, u.workgroups) {
                (Some(_), Some(g)) => g as u64,
                _ => l.blocks(),
            };
            let mut seen: Vec<u32> = mine.iter().map(|s| s.workgroup).collect();
            seen.sort_unstable();
            let stray = seen.iter().filter(|&&w| w as u64 >= expected).count();
            seen.truncate(seen.len() - stray);
            let (mut distinct, mut twice) = (0u64, 0u64);
            for run in seen.chunk_by(|a, b| a == b) {
                distinct += 1;
                twice += u64::from(run.len() > 1);
            }
            let missing = expected - distinct;
            if missing + twice > 0 || stray > 0 {
                let what = match u.step {
                    Some(k) => format!("step {k}"),
                    None => "the kernel".into(),
                };
                problems.push(format!(
                    "launch {li} `{}`: {what}: {missing} of {expected} workgroups missing, {twice} recorded more than once, {stray} out of range",
                    l.kernel
                ));
            }
        }
    }
    problems
}

impl crate::util::HasFix for TimelineError {
    fn message(&self) -> String {
        format!(
            "timeline records of launch {} (`{}`): {}",
            self.launch, self.kernel, self.message
        )
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(TimelineError);
