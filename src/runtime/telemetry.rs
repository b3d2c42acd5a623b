//! Telemetry counters since the runtime opened, printable as JSON and Prometheus text.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// Counters since [`super::Runtime::open`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Telemetry {
    /// Kernel launches (cooperative ones included).
    pub launches: u64,
    /// Cooperative launches (grid barriers).
    pub cooperative_launches: u64,
    /// Bytes copied host -> device.
    pub h2d_bytes: u64,
    /// Bytes copied device -> host.
    pub d2h_bytes: u64,
    /// Device allocations made (pool reuse does not count).
    pub allocations: u64,
    /// Bytes allocated on the device.
    pub allocated_bytes: u64,
    /// Host waits on the device (stream/event synchronizations).
    pub sync_points: u64,
    /// Modules JIT-compiled.
    pub jit_count: u64,
    /// Total JIT wall time (ms).
    pub jit_ms_total: f64,
    /// Total device time of launches (ms, CUDA events).
    pub device_ms_total: f64,
    /// Longest single launch (ms).
    pub device_ms_max: f64,
    /// Host time spent enqueueing launches (ms).
    pub enqueue_ms_total: f64,
    /// Host time spent waiting for launches (ms).
    pub wait_ms_total: f64,
    /// Thread slots launched (grid x block).
    pub thread_slots_launched: u64,
    /// Launched slots beyond the useful invocations.
    pub thread_slots_wasted: u64,
    /// Parity checks that matched the reference.
    pub parity_passed: u64,
    /// Parity checks that did not.
    pub parity_failed: u64,
    /// Kernel faults and timeouts.
    pub faults: u64,
    /// CUDA contexts created (1 + recoveries).
    pub contexts_created: u64,
    /// Megakernel plans read from the plan cache.
    #[serde(default)]
    pub plan_cache_hits: u64,
    /// Megakernel plans computed (not in the cache).
    #[serde(default)]
    pub plan_cache_misses: u64,
    /// Plan-cache entries evicted to stay within its limit.
    #[serde(default)]
    pub plan_cache_evictions: u64,
}

impl super::Runtime {
    /// Counts one comparison with the reference interpreter (passed or failed) in the
    /// telemetry; every GPU result a caller verifies is counted here.
    pub fn record_parity(&mut self, passed: bool) {
        if passed {
            self.telemetry.parity_passed += 1;
        } else {
            self.telemetry.parity_failed += 1;
        }
    }

    /// Counts one planning of a pipeline through the plan cache in the telemetry.
    pub fn record_plan(&mut self, c: &crate::megakernel::cache::Cached) {
        self.telemetry.record_plan(c);
    }
}

impl Telemetry {
    /// Records one launch.
    pub(super) fn record_launch(
        &mut self,
        cooperative: bool,
        slots: u64,
        useful: u64,
        device_ms: Option<f64>,
    ) {
        self.launches += 1;
        if cooperative {
            self.cooperative_launches += 1;
        }
        self.thread_slots_launched += slots;
        self.thread_slots_wasted += slots.saturating_sub(useful);
        // Untimed launches add nothing to the device-time counters.
        if let Some(ms) = device_ms {
            self.device_ms_total += ms;
            self.device_ms_max = self.device_ms_max.max(ms);
        }
    }

    /// Records one planning through the plan cache.
    pub fn record_plan(&mut self, c: &crate::megakernel::cache::Cached) {
        let mut n = crate::megakernel::cache::PlanCacheCounts::default();
        n.record(c);
        self.plan_cache_hits += n.hits;
        self.plan_cache_misses += n.misses;
        self.plan_cache_evictions += n.evictions;
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Prometheus text exposition format (0.0.4): counters end in `_total`, times in seconds.
    pub fn to_prometheus(&self) -> String {
        let mut out = String::new();
        let mut put = |name: &str, kind: &str, help: &str, v: f64| {
            let _ = writeln!(out, "# HELP vyrescope_{name} {help}");
            let _ = writeln!(out, "# TYPE vyrescope_{name} {kind}");
            let _ = writeln!(out, "vyrescope_{name} {v}");
        };
        put(
            "launches_total",
            "counter",
            "Kernel launches.",
            self.launches as f64,
        );
        put(
            "cooperative_launches_total",
            "counter",
            "Cooperative kernel launches.",
            self.cooperative_launches as f64,
        );
        put(
            "h2d_bytes_total",
            "counter",
            "Bytes copied host to device.",
            self.h2d_bytes as f64,
        );
        put(
            "d2h_bytes_total",
            "counter",
            "Bytes copied device to host.",
            self.d2h_bytes as f64,
        );
        put(
            "allocations_total",
            "counter",
            "Device allocations.",
            self.allocations as f64,
        );
        put(
            "allocated_bytes_total",
            "counter",
            "Bytes allocated on the device.",
            self.allocated_bytes as f64,
        );
        put(
            "sync_points_total",
            "counter",
            "Host waits on the device.",
            self.sync_points as f64,
        );
        put(
            "plan_cache_hits_total",
            "counter",
            "Megakernel plans read from the plan cache.",
            self.plan_cache_hits as f64,
        );
        put(
            "plan_cache_misses_total",
            "counter",
            "Megakernel plans computed.",
            self.plan_cache_misses as f64,
        );
        put(
            "plan_cache_evictions_total",
            "counter",
            "Plan-cache entries evicted.",
            self.plan_cache_evictions as f64,
        );
        put(
            "jit_total",
            "counter",
            "Modules JIT-compiled.",
            self.jit_count as f64,
        );
        put(
            "jit_seconds_total",
            "counter",
            "JIT wall time.",
            self.jit_ms_total / 1e3,
        );
        put(
            "device_seconds_total",
            "counter",
            "Device time of launches.",
            self.device_ms_total / 1e3,
        );
        put(
            "device_seconds_max",
            "gauge",
            "Longest launch.",
            self.device_ms_max / 1e3,
        );
        put(
            "enqueue_seconds_total",
            "counter",
            "Host time enqueueing launches.",
            self.enqueue_ms_total / 1e3,
        );
        put(
            "wait_seconds_total",
            "counter",
            "Host time waiting for launches.",
            self.wait_ms_total / 1e3,
        );
        put(
            "thread_slots_launched_total",
            "counter",
            "Thread slots launched (grid x block).",
            self.thread_slots_launched as f64,
        );
        put(
            "thread_slots_wasted_total",
            "counter",
            "Launched thread slots beyond the useful invocations.",
            self.thread_slots_wasted as f64,
        );
        put(
            "parity_passed_total",
            "counter",
            "Parity checks that matched the reference.",
            self.parity_passed as f64,
        );
        put(
            "parity_failed_total",
            "counter",
            "Parity checks that did not match.",
            self.parity_failed as f64,
        );
        put(
            "faults_total",
            "counter",
            "Kernel faults and timeouts.",
            self.faults as f64,
        );
        put(
            "contexts_created_total",
            "counter",
            "CUDA contexts created.",
            self.contexts_created as f64,
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_accumulate_and_waste_is_counted() {
        let mut t = Telemetry::default();
        t.record_launch(false, 1024, 1000, Some(0.5));
        t.record_launch(false, 0, 0, None);
        t.record_launch(true, 256, 256, Some(2.0));
        assert_eq!((t.launches, t.cooperative_launches), (3, 1));
        assert_eq!((t.thread_slots_launched, t.thread_slots_wasted), (1280, 24));
        assert!((t.device_ms_total - 2.5).abs() < 1e-12);
        assert!((t.device_ms_max - 2.0).abs() < 1e-12);
    }

    #[test]
    fn prometheus_text_is_well_formed() {
        let mut t = Telemetry::default();
        t.record_launch(false, 64, 10, Some(1.5));
        t.h2d_bytes = 4096;
        t.plan_cache_evictions = 3;
        let text = t.to_prometheus();
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(samples.len(), 22);
        assert!(text.contains("vyrescope_plan_cache_evictions_total 3\n"));
        for s in &samples {
            let mut parts = s.split(' ');
            let name = parts.next().unwrap_or_default();
            assert!(
                name.starts_with("vyrescope_")
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            );
            let v: f64 = parts.next().unwrap_or("x").parse().expect("numeric sample");
            assert!(v.is_finite());
        }
        assert!(text.contains("vyrescope_h2d_bytes_total 4096\n"));
        assert!(text.contains("vyrescope_thread_slots_wasted_total 54\n"));
        assert!(text.contains("vyrescope_device_seconds_total 0.0015\n"));
        let json: serde_json::Value = serde_json::from_str(&t.to_json()).expect("json");
        assert_eq!(json["launches"], 1);
    }
}
