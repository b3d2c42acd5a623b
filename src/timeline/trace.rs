//! Chrome trace-event JSON (opens in Perfetto and `chrome://tracing`): process 1 holds the
//! GPU, one thread (track) per SM and resident block slot; process 2 the host's dispatch
//! phases. The two use different clocks (`%globaltimer` and the host's monotonic clock), so
//! each starts at 0 and they are not aligned to each other.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{Capture, Decoded, Slice};
use crate::emit::timeline::UnitKind;

/// Tracks per SM before the slot number no longer fits the track id.
const SLOTS_PER_SM: u32 = 1000;

/// Resident slot of each slice's block on its SM: blocks are given the lowest slot free at
/// their first start (interval colouring), so concurrent blocks of one SM get separate
/// tracks. Returns the slot per (launch, block).
pub fn block_slots(d: &Decoded) -> BTreeMap<(u32, u32), u32> {
    // (launch, block) -> (sm, first start, last end)
    let mut span: BTreeMap<(u32, u32), (u32, u64, u64)> = BTreeMap::new();
    for s in &d.slices {
        let e = span
            .entry((s.launch, s.block))
            .or_insert((s.sm, s.start_ns, s.end_ns));
        e.1 = e.1.min(s.start_ns);
        e.2 = e.2.max(s.end_ns);
    }
    let mut order: Vec<_> = span.iter().collect();
    order.sort_by_key(|(k, (sm, a, _))| (*sm, *a, **k));
    let mut busy_until: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    let mut slots = BTreeMap::new();
    for (k, (sm, a, b)) in order {
        let lanes = busy_until.entry(*sm).or_default();
        let slot = match lanes.iter().position(|&end| end <= *a) {
            Some(i) => i,
            None => {
                lanes.push(0);
                lanes.len() - 1
            }
        };
        lanes[slot] = *b;
        slots.insert(*k, slot as u32);
    }
    slots
}

/// Display name of a slice: `step 2 wg 17`, `grid barrier`, `block 3`.
pub fn slice_name(s: &Slice) -> String {
    match s.kind {
        UnitKind::Wait(w) => match s.step {
            Some(k) => format!("{} (after step {k})", w.name()),
            None => w.name().to_string(),
        },
        UnitKind::Step | UnitKind::Kernel => match s.step {
            Some(k) => format!("step {k} wg {}", s.workgroup),
            None => format!("block {}", s.workgroup),
        },
    }
}

/// The trace of `capture` as Chrome trace-event JSON.
pub fn chrome_trace(capture: &Capture, d: &Decoded) -> Value {
    chrome_trace_parts(&[("", capture, d)])
}

/// One trace of several captures (the separate and fused forms of a pipeline): part `i`
/// (labelled `label`) gets processes `2i + 1` (GPU) and `2i + 2` (host).
pub fn chrome_trace_parts(parts: &[(&str, &Capture, &Decoded)]) -> Value {
    let mut events = Vec::new();
    let mut launches = Vec::new();
    let mut dropped = 0;
    for (i, (label, capture, d)) in parts.iter().enumerate() {
        let base = 2 * i as u32;
        events.extend(part_events(label, capture, d, base));
        launches.extend(capture.launches.iter().map(|l| json!({"form": label, "kernel": l.kernel, "grid": l.grid, "device_ms": l.device_ms})));
        dropped += d.dropped;
    }
    json!({
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "generator": "vyrescope",
            "launches": launches,
            "dropped_records": dropped,
        },
    })
}

fn part_events(label: &str, capture: &Capture, d: &Decoded, base: u32) -> Vec<Value> {
    let (gpu, host) = (base + 1, base + 2);
    let prefix = if label.is_empty() {
        String::new()
    } else {
        format!("{label}: ")
    };
    let t0 = d.slices.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let slots = block_slots(d);
    let mut events = vec![
        json!({"ph": "M", "pid": gpu, "name": "process_name", "args": {"name": format!("{prefix}GPU (%globaltimer)")}}),
        json!({"ph": "M", "pid": host, "name": "process_name", "args": {"name": format!("{prefix}host (dispatch phases)")}}),
    ];
    let mut tracks: BTreeMap<u32, String> = BTreeMap::new();
    for s in &d.slices {
        let slot = slots
            .get(&(s.launch, s.block))
            .copied()
            .unwrap_or(0)
            .min(SLOTS_PER_SM - 1);
        let tid = s.sm * SLOTS_PER_SM + slot;
        tracks
            .entry(tid)
            .or_insert_with(|| format!("SM {} slot {slot}", s.sm));
        let kernel = capture
            .launches
            .get(s.launch as usize)
            .map_or("", |l| l.kernel.as_str());
        let cat = match s.kind {
            UnitKind::Wait(_) => "wait",
            UnitKind::Step => "step",
            UnitKind::Kernel => "kernel",
        };
        let mut ev = json!({
            "ph": "X",
            "pid": gpu,
            "tid": tid,
            "name": slice_name(s),
            "cat": cat,
            "ts": (s.start_ns - t0) as f64 / 1e3,
            "dur": s.dur_ns() as f64 / 1e3,
            "args": {
                "kernel": kernel,
                "launch": s.launch,
                "step": s.step,
                "workgroup": s.workgroup,
                "block": s.block,
                "sm": s.sm,
            },
        });
        if s.is_wait() {
            // A fixed grey for waits in chrome://tracing.
            ev["cname"] = json!("grey");
        }
        events.push(ev);
    }
    for (tid, name) in tracks {
        events.push(json!({"ph": "M", "pid": gpu, "tid": tid, "name": "thread_name", "args": {"name": name}}));
        events.push(json!({"ph": "M", "pid": gpu, "tid": tid, "name": "thread_sort_index", "args": {"sort_index": tid}}));
    }
    events.push(json!({"ph": "M", "pid": host, "tid": 0, "name": "thread_name", "args": {"name": "dispatch"}}));
    for h in &capture.host {
        events.push(json!({
            "ph": "X", "pid": host, "tid": 0, "name": h.name, "cat": "host",
            "ts": h.start_ms * 1e3, "dur": h.dur_ms * 1e3,
        }));
    }
    events
}
