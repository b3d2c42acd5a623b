//! The timeline record file (`run --timeline --timeline-out REC.json`, read by
//! `vyrescope FILE --timeline REC.json`): every written record of every launch, with the
//! spec and grid it was recorded from, so a capture made on a GPU machine is decoded,
//! checked and summarised anywhere else exactly as it was there.
//!
//! Only written records are stored (`start` 0 means never written), each with its block and
//! `seq`; reading puts record `seq` of a block back into slot `seq & (slots - 1)`, where the
//! kernel wrote it, so the ring (and a dropped-record count) survives the round trip. The
//! Chrome trace (`--trace`) is for Perfetto and loses the spec; it is refused here with the
//! command that writes this file.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Capture, HostPhase, LaunchRecords};
use crate::emit::timeline::{TimelineSpec, MAX_SLOTS, RECORD_BYTES};

/// `format` of a record file.
pub const FORMAT: &str = "vyrescope-timeline";
/// The version this build writes and reads.
pub const VERSION: u32 = 1;
/// Largest record file read (64 MiB: about 600 000 records).
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// Largest record buffer rebuilt for all launches of a file together (blocks x slots x 32).
pub const MAX_BUFFER_BYTES: u64 = 256 << 20;

/// One recorded form: `""` for a Program, `separate` or `fused` for a pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedForm {
    /// Form label.
    pub label: String,
    /// The capture.
    pub capture: Capture,
}

/// A record file's contents.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordFile {
    /// Device it was recorded on, when known.
    pub device: Option<String>,
    /// Program or pipeline it was recorded from.
    pub source: String,
    /// FNV-1a of the recorded file's bytes, when the record names a file (records written
    /// before this field have none).
    pub source_hash: Option<u64>,
    /// Forms in the order recorded.
    pub forms: Vec<RecordedForm>,
}

impl RecordFile {
    /// Whether this record was made from the file `path`: the same bytes when the record
    /// holds their hash, else (an older record) the same file name.
    pub fn recorded_from(&self, path: &Path) -> bool {
        match self.source_hash {
            Some(h) => std::fs::read(path).is_ok_and(|b| crate::util::hash::fnv1a(&b) == h),
            None => {
                let name = |p: &Path| p.file_name().map(|n| n.to_os_string());
                name(Path::new(&self.source)).is_some_and(|n| Some(n) == name(path))
            }
        }
    }
}

/// A record file that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct FileError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc {
    format: String,
    version: u32,
    #[serde(default)]
    device: Option<String>,
    #[serde(default)]
    source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source_hash: Option<String>,
    forms: Vec<FormDoc>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FormDoc {
    form: String,
    #[serde(default)]
    device_sms: Option<u32>,
    #[serde(default)]
    host: Vec<HostPhase>,
    launches: Vec<LaunchDoc>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchDoc {
    kernel: String,
    spec: TimelineSpec,
    grid: [u32; 3],
    #[serde(default)]
    device_ms: Option<f64>,
    records: Vec<Record>,
}

/// One written record: the eight words of the device's record plus its block.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Record {
    block: u32,
    unit: u32,
    workgroup: u32,
    sm: u32,
    seq: u32,
    start_ns: u64,
    end_ns: u64,
}

fn word(b: &[u8], i: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[i * 4..i * 4 + 4]);
    u32::from_le_bytes(w)
}

fn records_of(l: &LaunchRecords) -> Vec<Record> {
    let per_block = (l.spec.slots_per_block.max(1) * RECORD_BYTES) as usize;
    let mut out = Vec::new();
    for (block, region) in l.bytes.chunks_exact(per_block).enumerate() {
        for rec in region.chunks_exact(RECORD_BYTES as usize) {
            let start_ns = word(rec, 0) as u64 | (word(rec, 1) as u64) << 32;
            if start_ns == 0 {
                continue;
            }
            out.push(Record {
                block: block as u32,
                start_ns,
                end_ns: word(rec, 2) as u64 | (word(rec, 3) as u64) << 32,
                unit: word(rec, 4),
                workgroup: word(rec, 5),
                sm: word(rec, 6),
                seq: word(rec, 7),
            });
        }
    }
    out
}

/// The record file of `forms` (label, capture) recorded from `source` on `device`;
/// `source_bytes`, the recorded file's contents when there is one, is kept as its hash so
/// that a reader can tell whether the record belongs to the file it has open.
pub fn to_json(
    device: Option<&str>,
    source: &str,
    source_bytes: Option<&[u8]>,
    forms: &[(&str, &Capture)],
) -> serde_json::Result<String> {
    let doc = Doc {
        format: FORMAT.into(),
        version: VERSION,
        device: device.map(str::to_string),
        source: source.to_string(),
        source_hash: source_bytes.map(|b| format!("{:016x}", crate::util::hash::fnv1a(b))),
        forms: forms
            .iter()
            .map(|(label, c)| FormDoc {
                form: label.to_string(),
                device_sms: c.device_sms,
                host: c.host.clone(),
                launches: c
                    .launches
                    .iter()
                    .map(|l| LaunchDoc {
                        kernel: l.kernel.clone(),
                        spec: l.spec.clone(),
                        grid: l.grid,
                        device_ms: l.device_ms,
                        records: records_of(l),
                    })
                    .collect(),
            })
            .collect(),
    };
    serde_json::to_string(&doc)
}

/// Reads a record file (a regular file of at most [`MAX_FILE_BYTES`]).
pub fn read(path: &Path) -> Result<RecordFile, FileError> {
    let shown = path.display().to_string();
    let bytes =
        crate::util::read_limited(path, MAX_FILE_BYTES, "timeline record file").map_err(|e| {
            FileError {
                path: shown.clone(),
                message: e.message,
                fix: e.fix,
            }
        })?;
    let text = String::from_utf8(bytes).map_err(|_| FileError {
        path: shown.clone(),
        message: "not UTF-8 text".into(),
        fix: WRITE_ONE.into(),
    })?;
    parse(&text, &shown)
}

const WRITE_ONE: &str = "write a record file with `vyrescope run FILE --backend cuda --timeline --timeline-out REC.json` and pass that";

/// Parses a record file's text; `path` names it in errors.
pub fn parse(text: &str, path: &str) -> Result<RecordFile, FileError> {
    let err = |message: String, fix: &str| FileError {
        path: path.to_string(),
        message,
        fix: fix.to_string(),
    };
    if let Some(d) = crate::util::find_duplicate_key(text) {
        return Err(err(
            format!("{} at {}:{}", d.message(), d.line, d.column),
            &d.fix(),
        ));
    }
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| err(format!("not JSON: {e}"), WRITE_ONE))?;
    if value.get("traceEvents").is_some() {
        return Err(err(
            "a Chrome trace (for Perfetto), not a timeline record file: it lacks what each launch recorded".into(),
            "write the records too: `vyrescope run FILE --backend cuda --timeline --trace t.json --timeline-out REC.json`, and pass REC.json",
        ));
    }
    if value.get("format").and_then(|f| f.as_str()) != Some(FORMAT) {
        return Err(err(
            format!("not a timeline record file (no `\"format\": \"{FORMAT}\"`)"),
            WRITE_ONE,
        ));
    }
    let doc: Doc = serde_path_to_error::deserialize(value).map_err(|e| {
        err(
            format!("at `{}`: {}", e.path(), e.inner()),
            "pass the file `run --timeline-out` wrote, unchanged",
        )
    })?;
    if doc.version != VERSION {
        return Err(err(
            format!(
                "version {} (this build reads version {VERSION})",
                doc.version
            ),
            "record it again with this build's `run --timeline-out`",
        ));
    }
    let mut total: u64 = 0;
    let mut forms = Vec::new();
    for (fi, f) in doc.forms.into_iter().enumerate() {
        let mut launches = Vec::new();
        for (li, l) in f.launches.into_iter().enumerate() {
            let here = format!("forms[{fi}].launches[{li}]");
            let slots = l.spec.slots_per_block;
            if !slots.is_power_of_two() || slots > MAX_SLOTS {
                return Err(err(
                    format!("{here}: {slots} slots per block (a power of two up to {MAX_SLOTS})"),
                    "pass the file `run --timeline-out` wrote, unchanged",
                ));
            }
            let blocks = l
                .grid
                .iter()
                .try_fold(1u64, |a, &g| a.checked_mul(g as u64));
            // Checked: a grid from the file must not overflow the size computation.
            let bytes = blocks
                .and_then(|b| b.checked_mul(slots as u64 * RECORD_BYTES as u64))
                .unwrap_or(u64::MAX);
            let blocks = blocks.unwrap_or(u64::MAX);
            total = total.saturating_add(bytes);
            if total > MAX_BUFFER_BYTES {
                return Err(err(
                    format!("{here}: the records need {total} bytes of buffers, more than {MAX_BUFFER_BYTES}"),
                    "record fewer workgroups (a smaller grid) with --timeline",
                ));
            }
            let mut buf = vec![0u8; bytes as usize];
            for (ri, r) in l.records.iter().enumerate() {
                if r.block as u64 >= blocks || r.start_ns == 0 {
                    return Err(err(
                        format!(
                            "{here}.records[{ri}]: block {} of {blocks}, start {} ns (blocks count from 0, starts from 1)",
                            r.block, r.start_ns
                        ),
                        "pass the file `run --timeline-out` wrote, unchanged",
                    ));
                }
                let slot = r.seq & (slots - 1);
                let at =
                    ((r.block as u64 * slots as u64 + slot as u64) * RECORD_BYTES as u64) as usize;
                let words = [
                    r.start_ns as u32,
                    (r.start_ns >> 32) as u32,
                    r.end_ns as u32,
                    (r.end_ns >> 32) as u32,
                    r.unit,
                    r.workgroup,
                    r.sm,
                    r.seq,
                ];
                for (i, w) in words.iter().enumerate() {
                    buf[at + i * 4..at + i * 4 + 4].copy_from_slice(&w.to_le_bytes());
                }
            }
            launches.push(LaunchRecords {
                kernel: l.kernel,
                spec: l.spec,
                grid: l.grid,
                device_ms: l.device_ms,
                program: None,
                bytes: buf,
            });
        }
        forms.push(RecordedForm {
            label: f.form,
            capture: Capture {
                launches,
                host: f.host,
                device_sms: f.device_sms,
            },
        });
    }
    if forms.is_empty() {
        return Err(err("no recorded forms".into(), WRITE_ONE));
    }
    Ok(RecordFile {
        device: doc.device,
        source: doc.source,
        source_hash: doc
            .source_hash
            .as_deref()
            .and_then(|h| u64::from_str_radix(h, 16).ok()),
        forms,
    })
}

impl crate::util::HasFix for FileError {
    fn message(&self) -> String {
        format!("{}: {}", self.path, self.message)
    }

    fn fix(&self) -> String {
        self.fix.clone()
    }
}

crate::util::problem::into_problem!(FileError);
