//! One captured record's replay as `replay --json` reports it (the verdict, the first
//! divergence, the times): plain data, also without feature `vyre`, because the GPU worker
//! sends it back to the inspector (a replay on `vyrescope-cuda` runs in the worker process).

use serde::{Deserialize, Serialize};

/// How one record's replay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every output equal to the captured bytes.
    Verified,
    /// Ran, with nothing to compare (a resident allocation, upload or free).
    Replayed,
    /// Some output differs (see the divergence).
    Diverged,
    /// The record could not be read, or the replay failed.
    Failed,
    /// Not compared (see the detail).
    Skipped,
}

/// The first element where a replayed output differs from the captured one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Divergence {
    /// Output index, in vyre's output order.
    pub output: usize,
    /// The output buffer's name.
    pub buffer: String,
    /// Element index within the output.
    pub element: u64,
    /// Element type (`bytes` when ours has none: then elements are bytes).
    pub elem_type: String,
    /// The captured value.
    pub captured: String,
    /// The replayed value.
    pub replayed: String,
    /// Distance in ULPs, for floats that are not NaN.
    pub ulps: Option<u64>,
}

/// One record's replay.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordReplay {
    /// The record's index.
    pub index: u64,
    /// The `VyreBackend` method that was captured.
    pub call: String,
    /// The record's event kind (`dispatch`, `upload`, ...).
    pub kind: String,
    /// The Program: its op id, or its first buffer names.
    pub program: String,
    /// The backend the replay ran on (absent when it did not run).
    pub replayed_on: Option<String>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why it was skipped or failed, or a note (the fallback), in one line.
    pub detail: String,
    /// The first divergence.
    pub divergence: Option<Divergence>,
    /// Captured host time of the call (ns).
    pub captured_host_ns: u64,
    /// Captured device time, when the backend reported one (ns).
    pub captured_device_ns: Option<u64>,
    /// Host time of the replay (ns).
    pub replay_ns: Option<u64>,
}

/// A record's verdict in words, as `replay` prints it: `verified`, or `DIVERGED:` with the
/// output, buffer, element, both values and the ulp distance of the first divergence.
pub fn verdict_text(x: &RecordReplay) -> String {
    match x.verdict {
        Verdict::Verified => "verified".to_string(),
        Verdict::Replayed => "replayed".to_string(),
        Verdict::Diverged => match &x.divergence {
            Some(d) => format!(
                "DIVERGED: output {} `{}` element {} ({}): captured {}, replayed {}{}",
                d.output,
                d.buffer,
                d.element,
                d.elem_type,
                d.captured,
                d.replayed,
                d.ulps.map_or(String::new(), |u| format!(", {u} ulp"))
            ),
            None => "DIVERGED".to_string(),
        },
        Verdict::Failed => "FAILED".to_string(),
        Verdict::Skipped => "skipped".to_string(),
    }
}
