//! The capture folder format, version 1 (`docs/capture-format.md` is its specification).
//!
//! ```text
//! CAPTURE_DIR/
//!   manifest.json            marks the folder as a capture: format name, version, state
//!   records/00000000.json    one record per backend call, numbered in call order
//!   programs/<blake3>.vyre   each distinct Program once, in vyre's wire format
//!   blobs/<blake3>.bin       each distinct buffer content once (inputs, outputs, uploads, reads)
//! ```
//!
//! The record types are generic over how a Program (`P`) and a buffer (`B`) are held: the
//! capturing side fills them with the live values and the writer thread replaces them by
//! their content-hash references ([`ProgramRef`], [`BufferRef`]) before serialising, so the
//! calling thread never hashes or encodes.

use serde::{Deserialize, Serialize};
use vyre_driver::backend::{BackendError, DispatchConfig};
use vyre_driver::persistent::PersistentThreadMode;
use vyre_driver::speculate::SpeculationMode;

/// `format` of every manifest.
pub const FORMAT_NAME: &str = "vyrescope-capture";
/// `format` of every record.
pub const RECORD_FORMAT_NAME: &str = "vyrescope-capture-record";
/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// The file that marks a folder as a capture.
pub const MANIFEST_FILE: &str = "manifest.json";
/// Folder of the records.
pub const RECORDS_DIR: &str = "records";
/// Folder of the Programs (vyre wire bytes).
pub const PROGRAMS_DIR: &str = "programs";
/// Folder of the buffer contents.
pub const BLOBS_DIR: &str = "blobs";
/// Environment variable naming the capture folder for backends that honour it.
pub const CAPTURE_ENV: &str = "VYRESCOPE_CAPTURE";
/// Environment variable with the data limit in bytes (suffixes `k`, `m`, `g` accepted).
pub const LIMIT_ENV: &str = "VYRESCOPE_CAPTURE_LIMIT";
/// Default data limit: 1 GiB of Programs and buffer contents; past it records carry
/// metadata only.
pub const DEFAULT_LIMIT_BYTES: u64 = 1 << 30;

/// The manifest (`manifest.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// The writing crate and its version, e.g. `vyrescope-capture 0.1.0`.
    pub writer: String,
    /// The wrapped backend.
    pub backend: BackendInfo,
    /// Data limit in bytes (Programs plus buffer contents).
    pub limit_bytes: u64,
    /// When recording started (milliseconds since the Unix epoch).
    pub started_unix_ms: u64,
    /// Whether every record carries its data.
    pub state: CaptureState,
}

/// The wrapped backend's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendInfo {
    /// `VyreBackend::id`.
    pub id: String,
    /// `VyreBackend::version`.
    pub version: String,
}

/// Whether the capture holds every record's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CaptureState {
    /// Every record so far carries its data.
    Full,
    /// The data limit was reached: records from `first_metadata_only` on carry sizes only.
    LimitReached {
        /// Index of the first record without data.
        first_metadata_only: u64,
    },
    /// Writing failed and recording stopped; records after `last_written` were not written.
    Stopped {
        /// The last record written before the failure, if any.
        last_written: Option<u64>,
        /// The failure.
        reason: String,
    },
}

/// Whether a record's buffers and Program were stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataState {
    /// Every Program and buffer of the record is in the folder.
    Full,
    /// Past the data limit: sizes only.
    MetadataOnly,
    /// The call's data cannot be captured (opaque device buffers): what was called only.
    NotCaptured,
}

/// A Program stored in `programs/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramRef {
    /// blake3 of the wire bytes (hex); the file is `programs/<hash>.vyre`. `None` when the
    /// record carries metadata only.
    pub hash: Option<String>,
    /// Size of the wire bytes (0 when the Program could not be encoded).
    pub bytes: u64,
    /// `Program::entry_op_id`, when set.
    pub entry_op_id: Option<String>,
    /// `Program::workgroup_size`.
    pub workgroup_size: [u32; 3],
    /// Number of buffer declarations.
    pub buffers: u32,
    /// Why the Program has no wire form (vyre's encoder refused it), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encode_error: Option<String>,
}

/// A buffer content stored in `blobs/`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferRef {
    /// blake3 of the bytes (hex); the file is `blobs/<hash>.bin`. `None` when the record
    /// carries metadata only.
    pub hash: Option<String>,
    /// Length in bytes.
    pub bytes: u64,
}

/// A resource passed to a resident call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResourceRef<B> {
    /// A backend-resident buffer: the handle as the backend minted it.
    Resident {
        /// `ResidentHandle::id`.
        handle: u64,
        /// `ResidentOwner::get` of the handle.
        owner: u64,
    },
    /// Host bytes passed for this call only.
    Borrowed {
        /// The bytes.
        data: B,
    },
}

/// One write into a resident buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRef<B> {
    /// The buffer written.
    pub resource: ResourceRef<B>,
    /// Byte offset of the write.
    pub offset: u64,
    /// The bytes written.
    pub data: B,
}

/// One read of a resident buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadRef<B> {
    /// The buffer read.
    pub resource: ResourceRef<B>,
    /// Byte offset of the read.
    pub offset: u64,
    /// Bytes asked for (`None`: the whole buffer).
    pub len: Option<u64>,
    /// The bytes the backend returned (absent when the call failed).
    pub data: Option<B>,
}

/// One step of a resident sequence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepRef<P, B> {
    /// The Program.
    pub program: P,
    /// Its resources in binding order.
    pub resources: Vec<ResourceRef<B>>,
    /// `ResidentDispatchStep::grid_override`.
    pub grid_override: Option<[u32; 3]>,
    /// `ResidentDispatchStep::workgroup_override`.
    pub workgroup_override: Option<[u32; 3]>,
}

/// What a call did, by kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event<P, B> {
    /// A host-buffer dispatch (`dispatch`, `dispatch_borrowed*`, `dispatch*_async`).
    Dispatch {
        /// The Program.
        program: P,
        /// The configuration.
        config: ConfigRecord,
        /// Inputs in vyre's input order.
        inputs: Vec<B>,
        /// Outputs in vyre's output order (empty when the call failed).
        outputs: Vec<B>,
    },
    /// A dispatch on resident resources (`dispatch_resident_timed`, `_async`).
    ResidentDispatch {
        /// The Program.
        program: P,
        /// The configuration.
        config: ConfigRecord,
        /// Resources in binding order.
        resources: Vec<ResourceRef<B>>,
        /// Outputs the backend returned.
        outputs: Vec<B>,
    },
    /// `allocate_resident`.
    Allocate {
        /// Bytes asked for.
        byte_len: u64,
        /// The handle minted (absent when the call failed or returned host bytes).
        resource: Option<ResourceRef<B>>,
    },
    /// `free_resident`.
    Free {
        /// The buffer freed.
        resource: ResourceRef<B>,
    },
    /// `upload_resident*`: one or more writes.
    Upload {
        /// The writes in call order.
        writes: Vec<UploadRef<B>>,
    },
    /// `download_resident*`: one or more reads.
    Download {
        /// The reads in call order.
        reads: Vec<ReadRef<B>>,
    },
    /// `dispatch_resident_*sequence*`: steps (a prefix, then `repeated` run
    /// `repeat_count` times) and the reads after them.
    Sequence {
        /// Steps run once.
        prefix: Vec<StepRef<P, B>>,
        /// Steps run `repeat_count` times after the prefix.
        repeated: Vec<StepRef<P, B>>,
        /// Repetitions of `repeated`.
        repeat_count: u32,
        /// Reads after the steps.
        reads: Vec<ReadRef<B>>,
    },
    /// `dispatch_with_device_buffers`: the buffers are the backend's own objects and are not
    /// read (reading them would change what the application runs).
    DeviceBufferDispatch {
        /// The Program.
        program: P,
        /// The configuration.
        config: ConfigRecord,
        /// Number of input buffers.
        inputs: u32,
        /// Number of output buffers.
        outputs: u32,
    },
}

/// How long a call took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// Host time of the call measured by the capturing backend around the wrapped call.
    pub host_ns: u64,
    /// The backend's own wall time, when it reports one.
    pub backend_wall_ns: Option<u64>,
    /// Device time, when the backend reports one.
    pub device_ns: Option<u64>,
    /// Enqueue time, when the backend reports one.
    pub enqueue_ns: Option<u64>,
    /// Wait time, when the backend reports one.
    pub wait_ns: Option<u64>,
}

/// How the call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallResult {
    /// It returned `Ok`.
    Ok,
    /// It returned a `BackendError`.
    Error {
        /// `ErrorCode::stable_id` (1001..1999).
        code: u32,
        /// The error's text (with its `Fix:`).
        message: String,
    },
}

impl CallResult {
    /// The result of a call that returned `r`.
    pub fn of<T>(r: &Result<T, BackendError>) -> Self {
        match r {
            Ok(_) => CallResult::Ok,
            Err(e) => CallResult::error(e),
        }
    }

    /// The result of a call that failed with `e`.
    pub fn error(e: &BackendError) -> Self {
        CallResult::Error {
            code: e.code().stable_id(),
            message: e.to_string(),
        }
    }
}

/// One record file (`records/<index>.json`), as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// Always [`RECORD_FORMAT_NAME`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub version: u32,
    /// Call order, from 0; also the file name.
    pub index: u64,
    /// The `VyreBackend` method called, e.g. `dispatch_borrowed_timed`.
    pub call: String,
    /// `VyreBackend::id` of the wrapped backend.
    pub backend: String,
    /// When the call started (milliseconds since the Unix epoch).
    pub unix_ms: u64,
    /// Whether the data is in the folder.
    pub data: DataState,
    /// What the call did.
    pub event: Event<ProgramRef, BufferRef>,
    /// Timing.
    pub timing: Timing,
    /// How it ended.
    pub result: CallResult,
}

/// A `DispatchConfig` as stored: every public field of vyre-driver 0.7.2.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigRecord {
    /// `profile`.
    pub profile: Option<String>,
    /// `ulp_budget`.
    pub ulp_budget: Option<u8>,
    /// `timeout` in nanoseconds.
    pub timeout_ns: Option<u64>,
    /// `label`.
    pub label: Option<String>,
    /// `max_output_bytes`.
    pub max_output_bytes: Option<u64>,
    /// `workgroup_override`.
    pub workgroup_override: Option<[u32; 3]>,
    /// `grid_override`.
    pub grid_override: Option<[u32; 3]>,
    /// `dispatch_elements`.
    pub dispatch_elements: Option<u32>,
    /// `dispatch_grid`.
    pub dispatch_grid: Option<[u32; 3]>,
    /// `fixpoint_iterations`.
    pub fixpoint_iterations: Option<u32>,
    /// `speculation`: `auto`, `force` or `disable`.
    pub speculation: Option<String>,
    /// `persistent_thread`: `auto`, `force` or `disable`.
    pub persistent_thread: Option<String>,
    /// `cooperative`.
    pub cooperative: bool,
}

impl ConfigRecord {
    /// The stored form of `c`.
    pub fn from_config(c: &DispatchConfig) -> Self {
        ConfigRecord {
            profile: c.profile.clone(),
            ulp_budget: c.ulp_budget,
            timeout_ns: c
                .timeout
                .map(|t| u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)),
            label: c.label.clone(),
            max_output_bytes: c.max_output_bytes.map(|n| n as u64),
            workgroup_override: c.workgroup_override,
            grid_override: c.grid_override,
            dispatch_elements: c.dispatch_elements,
            dispatch_grid: c.dispatch_grid,
            fixpoint_iterations: c.fixpoint_iterations,
            speculation: c.speculation.map(|m| {
                match m {
                    SpeculationMode::Auto => "auto",
                    SpeculationMode::Force => "force",
                    SpeculationMode::Disable => "disable",
                }
                .to_string()
            }),
            persistent_thread: c.persistent_thread.map(|m| {
                match m {
                    PersistentThreadMode::Auto => "auto",
                    PersistentThreadMode::Force => "force",
                    PersistentThreadMode::Disable => "disable",
                }
                .to_string()
            }),
            cooperative: c.cooperative,
        }
    }

    /// The `DispatchConfig` this record describes; `Err` names a field whose stored value
    /// vyre-driver 0.7.2 has no meaning for.
    pub fn to_config(&self) -> Result<DispatchConfig, String> {
        let mut c = DispatchConfig::default();
        c.profile = self.profile.clone();
        c.ulp_budget = self.ulp_budget;
        c.timeout = self.timeout_ns.map(std::time::Duration::from_nanos);
        c.label = self.label.clone();
        c.max_output_bytes = match self.max_output_bytes {
            Some(n) => Some(
                usize::try_from(n)
                    .map_err(|_| format!("max_output_bytes {n} does not fit this machine"))?,
            ),
            None => None,
        };
        c.workgroup_override = self.workgroup_override;
        c.grid_override = self.grid_override;
        c.dispatch_elements = self.dispatch_elements;
        c.dispatch_grid = self.dispatch_grid;
        c.fixpoint_iterations = self.fixpoint_iterations;
        c.speculation = match self.speculation.as_deref() {
            None => None,
            Some("auto") => Some(SpeculationMode::Auto),
            Some("force") => Some(SpeculationMode::Force),
            Some("disable") => Some(SpeculationMode::Disable),
            Some(o) => return Err(format!("speculation `{o}` is not auto, force or disable")),
        };
        c.persistent_thread = match self.persistent_thread.as_deref() {
            None => None,
            Some("auto") => Some(PersistentThreadMode::Auto),
            Some("force") => Some(PersistentThreadMode::Force),
            Some("disable") => Some(PersistentThreadMode::Disable),
            Some(o) => {
                return Err(format!(
                    "persistent_thread `{o}` is not auto, force or disable"
                ))
            }
        };
        c.cooperative = self.cooperative;
        Ok(c)
    }
}

/// The content hash naming a stored file: lowercase hex blake3 of its bytes.
pub fn content_hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// The record file name of record `index` (`00000042.json`).
pub fn record_file_name(index: u64) -> String {
    format!("{index:08}.json")
}

/// The index of a record file name, if it is one.
pub fn record_index(file_name: &str) -> Option<u64> {
    let stem = file_name.strip_suffix(".json")?;
    if stem.len() < 8 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Parses a limit: a number of bytes with an optional `k`, `m` or `g` suffix (powers of 1024).
pub fn parse_limit(text: &str) -> Option<u64> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, shift) = match t.as_bytes().last()? {
        b'k' => (&t[..t.len() - 1], 10),
        b'm' => (&t[..t.len() - 1], 20),
        b'g' => (&t[..t.len() - 1], 30),
        _ => (t.as_str(), 0),
    };
    let n: u64 = digits.trim().parse().ok()?;
    n.checked_mul(1u64 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_round_trips_every_field() {
        let mut c = DispatchConfig::default();
        c.profile = Some("stress".into());
        c.ulp_budget = Some(3);
        c.timeout = Some(std::time::Duration::from_millis(1500));
        c.label = Some("step 7".into());
        c.max_output_bytes = Some(4096);
        c.workgroup_override = Some([64, 2, 1]);
        c.grid_override = Some([9, 1, 1]);
        c.dispatch_elements = Some(1000);
        c.dispatch_grid = Some([3, 4, 5]);
        c.fixpoint_iterations = Some(6);
        c.speculation = Some(SpeculationMode::Force);
        c.persistent_thread = Some(PersistentThreadMode::Disable);
        c.cooperative = true;
        let r = ConfigRecord::from_config(&c);
        let text = serde_json::to_string(&r).unwrap();
        let back: ConfigRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.to_config().unwrap(), c);
    }

    #[test]
    fn unknown_mode_is_an_error() {
        let r = ConfigRecord {
            speculation: Some("sometimes".into()),
            ..ConfigRecord::default()
        };
        assert!(r.to_config().unwrap_err().contains("sometimes"));
    }

    #[test]
    fn record_names_round_trip() {
        assert_eq!(record_file_name(42), "00000042.json");
        assert_eq!(record_index("00000042.json"), Some(42));
        assert_eq!(record_index("123456789.json"), Some(123_456_789));
        assert_eq!(record_index("42.json"), None);
        assert_eq!(record_index("0000004x.json"), None);
        assert_eq!(record_index("00000042.json.tmp"), None);
    }

    #[test]
    fn limits_parse_with_suffixes() {
        assert_eq!(parse_limit("4096"), Some(4096));
        assert_eq!(parse_limit("64k"), Some(64 << 10));
        assert_eq!(parse_limit("2M"), Some(2 << 20));
        assert_eq!(parse_limit(" 1g "), Some(1 << 30));
        assert_eq!(parse_limit("lots"), None);
        assert_eq!(parse_limit(""), None);
        assert_eq!(parse_limit("99999999999999999999g"), None);
    }
}
