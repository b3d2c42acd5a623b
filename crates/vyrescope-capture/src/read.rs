//! Reading a capture folder: the manifest, the list of records, one record with its Program
//! and buffers. Every malformed case is a [`ReadError`] naming the file, with a `Fix:`.

use std::path::{Path, PathBuf};

use vyre_foundation::ir::Program;

use crate::format::{
    record_file_name, record_index, BufferRef, DataState, Event, Manifest, ProgramRef, Record,
    ResourceRef, BLOBS_DIR, FORMAT_NAME, FORMAT_VERSION, MANIFEST_FILE, PROGRAMS_DIR, RECORDS_DIR,
    RECORD_FORMAT_NAME,
};

/// Largest file the reader loads (a manifest or record is far smaller; a buffer may be large).
const MAX_FILE_BYTES: u64 = 8 << 30;

/// What is wrong with a capture.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The folder has no manifest.
    #[error("{dir} is not a capture (no {MANIFEST_FILE}).\n  Fix: pass a folder written by vyrescope-capture (`capture(backend, dir)` or VYRESCOPE_CAPTURE=dir)")]
    NotACapture {
        /// The folder.
        dir: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}.\n  Fix: check that the capture folder is complete and readable")]
    Io {
        /// The file.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
    /// A file the capture refers to is missing.
    #[error("{path} is missing ({what}).\n  Fix: the capture is incomplete: copy the whole folder, or record again")]
    MissingFile {
        /// The file.
        path: String,
        /// What it should hold.
        what: String,
    },
    /// A manifest or record is not valid JSON of the format.
    #[error("{path} is malformed: {detail}.\n  Fix: {fix}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        detail: String,
        /// What to do.
        fix: String,
    },
    /// A manifest or record of another format.
    #[error("{path} is a `{found}` file, not a `{expected}` file.\n  Fix: pass a folder written by vyrescope-capture")]
    WrongFormat {
        /// The file.
        path: String,
        /// Its `format`.
        found: String,
        /// The expected `format`.
        expected: String,
    },
    /// A manifest or record of another format version.
    #[error("{path} has capture format version {found}; this reader reads version {FORMAT_VERSION}.\n  Fix: replay it with a vyrescope that reads version {found}, or record the application again with this one")]
    WrongVersion {
        /// The file.
        path: String,
        /// Its version.
        found: u32,
    },
    /// A stored file's content does not match its hash or size.
    #[error("{path} is corrupt: {detail}.\n  Fix: the file was changed after recording; record again (content files are named by their blake3 hash)")]
    Corrupt {
        /// The file.
        path: String,
        /// What differs.
        detail: String,
    },
    /// The record has no data (past the capture's limit, or not capturable).
    #[error("{path}: record {index} carries {state} only, no data to replay.\n  Fix: {fix}")]
    NoData {
        /// The record file.
        path: String,
        /// The record.
        index: u64,
        /// `metadata` or `call names`.
        state: &'static str,
        /// What to do.
        fix: String,
    },
    /// No record with that index.
    #[error("{path} does not exist: the capture has {count} record(s).\n  Fix: pick one of the listed indices (`vyrescope replay DIR` lists them)")]
    NoRecord {
        /// The record file that would hold it.
        path: String,
        /// Records in the capture.
        count: usize,
    },
    /// vyre's decoder refused a stored Program.
    #[error("{path}: vyre's decoder refused the Program: {detail}.\n  Fix: the capture was written by another vyre version, or the file was changed; record again")]
    BadProgram {
        /// The file.
        path: String,
        /// vyre's message.
        detail: String,
    },
}

/// An open capture folder.
#[derive(Debug, Clone)]
pub struct Capture {
    dir: PathBuf,
    manifest: Manifest,
}

/// A dispatch record with its data loaded.
#[derive(Debug, Clone)]
pub struct LoadedRecord {
    /// The record.
    pub record: Record,
    /// The Program's wire bytes (checked against their hash).
    pub program_wire: Vec<u8>,
    /// Inputs in vyre's order (for a resident dispatch: one per resource, its bytes when
    /// borrowed and empty when resident).
    pub inputs: Vec<Vec<u8>>,
    /// Outputs in vyre's order.
    pub outputs: Vec<Vec<u8>>,
}

impl LoadedRecord {
    /// The Program, decoded with vyre's wire decoder (a panic in vyre is an error too).
    pub fn program(&self, capture: &Capture) -> Result<Program, ReadError> {
        let path = match &self.record.event {
            Event::Dispatch { program, .. } | Event::ResidentDispatch { program, .. } => {
                capture.program_path(program)
            }
            _ => capture.record_path(self.record.index),
        };
        decode_program(&self.program_wire, &path)
    }
}

/// Decodes vyre wire bytes read from `path`.
pub fn decode_program(wire: &[u8], path: &Path) -> Result<Program, ReadError> {
    let bad = |detail: String| ReadError::BadProgram {
        path: path.display().to_string(),
        detail,
    };
    match std::panic::catch_unwind(|| Program::from_wire(wire)) {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(e)) => Err(bad(e.to_string())),
        Err(_) => Err(bad("the decoder panicked".into())),
    }
}

/// True when `dir` has a capture manifest (it may still be unreadable).
pub fn is_capture(dir: &Path) -> bool {
    dir.join(MANIFEST_FILE).is_file()
}

fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, ReadError> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReadError::MissingFile {
                path: path.display().to_string(),
                what: what.to_string(),
            })
        }
        Err(e) => {
            return Err(ReadError::Io {
                path: path.display().to_string(),
                source: e,
            })
        }
        Ok(m) if m.len() > MAX_FILE_BYTES => {
            return Err(ReadError::Corrupt {
                path: path.display().to_string(),
                detail: format!("{} bytes, more than a capture file may hold", m.len()),
            })
        }
        Ok(_) => {}
    }
    std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// Parses JSON of type `T` from `path`, telling a cut-short file from another error.
fn parse_json<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    path: &Path,
    kind: &str,
) -> Result<T, ReadError> {
    serde_json::from_slice(bytes).map_err(|e| {
        let (detail, fix) = if e.is_eof() {
            (
                format!("the {kind} ends early ({e})"),
                format!(
                    "the file was cut short after recording (records are written whole); restore {} from a complete copy or record again",
                    path.display()
                ),
            )
        } else {
            (
                format!("not a {kind} of capture format {FORMAT_VERSION} ({e})"),
                format!("restore {} from a complete copy or record again", path.display()),
            )
        };
        ReadError::Malformed {
            path: path.display().to_string(),
            detail,
            fix,
        }
    })
}

/// Checks `format` and `version` fields before the full parse, so that a file of another
/// version is reported as such rather than as malformed.
fn check_header(bytes: &[u8], path: &Path, expected: &str) -> Result<(), ReadError> {
    #[derive(serde::Deserialize)]
    struct Header {
        format: Option<String>,
        version: Option<u32>,
    }
    let Ok(h) = serde_json::from_slice::<Header>(bytes) else {
        return Ok(()); // the full parse reports it
    };
    if let Some(f) = h.format.filter(|f| f != expected) {
        return Err(ReadError::WrongFormat {
            path: path.display().to_string(),
            found: f,
            expected: expected.to_string(),
        });
    }
    match h.version {
        Some(v) if v != FORMAT_VERSION => Err(ReadError::WrongVersion {
            path: path.display().to_string(),
            found: v,
        }),
        _ => Ok(()),
    }
}

impl Capture {
    /// Opens `dir`: the manifest must be there, of this format and version.
    pub fn open(dir: impl AsRef<Path>) -> Result<Capture, ReadError> {
        let dir = dir.as_ref().to_path_buf();
        let path = dir.join(MANIFEST_FILE);
        if !path.exists() {
            return Err(ReadError::NotACapture {
                dir: dir.display().to_string(),
            });
        }
        let bytes = read_file(&path, "the capture's manifest")?;
        check_header(&bytes, &path, FORMAT_NAME)?;
        let manifest: Manifest = parse_json(&bytes, &path, "manifest")?;
        Ok(Capture { dir, manifest })
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The path of record `index`.
    pub fn record_path(&self, index: u64) -> PathBuf {
        self.dir.join(RECORDS_DIR).join(record_file_name(index))
    }

    /// The path of a stored Program.
    pub fn program_path(&self, p: &ProgramRef) -> PathBuf {
        let hash = p.hash.as_deref().unwrap_or("(not stored)");
        self.dir.join(PROGRAMS_DIR).join(format!("{hash}.vyre"))
    }

    /// The path of a stored buffer.
    pub fn blob_path(&self, b: &BufferRef) -> PathBuf {
        let hash = b.hash.as_deref().unwrap_or("(not stored)");
        self.dir.join(BLOBS_DIR).join(format!("{hash}.bin"))
    }

    /// Indices of the records present, ascending (temporary files of unfinished writes are
    /// not records).
    pub fn indices(&self) -> Result<Vec<u64>, ReadError> {
        let dir = self.dir.join(RECORDS_DIR);
        let entries = std::fs::read_dir(&dir).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ReadError::MissingFile {
                    path: dir.display().to_string(),
                    what: "the records folder".into(),
                }
            } else {
                ReadError::Io {
                    path: dir.display().to_string(),
                    source: e,
                }
            }
        })?;
        let mut out = Vec::new();
        for e in entries {
            let e = e.map_err(|source| ReadError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            if let Some(i) = e.file_name().to_str().and_then(record_index) {
                out.push(i);
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// Record `index`, parsed and checked (format, version, its own index).
    pub fn record(&self, index: u64) -> Result<Record, ReadError> {
        let path = self.record_path(index);
        if !path.exists() {
            return Err(ReadError::NoRecord {
                path: path.display().to_string(),
                count: self.indices().map(|v| v.len()).unwrap_or(0),
            });
        }
        let bytes = read_file(&path, "a record")?;
        check_header(&bytes, &path, RECORD_FORMAT_NAME)?;
        let r: Record = parse_json(&bytes, &path, "record")?;
        if r.index != index {
            return Err(ReadError::Malformed {
                path: path.display().to_string(),
                detail: format!("it says it is record {}", r.index),
                fix: "restore the file under its own name, or record again".into(),
            });
        }
        Ok(r)
    }

    /// The bytes of a stored Program, checked against its hash.
    pub fn program_wire(&self, p: &ProgramRef) -> Result<Vec<u8>, ReadError> {
        self.content(
            p.hash.as_deref(),
            p.bytes,
            &self.program_path(p),
            "a Program",
        )
    }

    /// The bytes of a stored buffer, checked against its hash and size.
    pub fn blob(&self, b: &BufferRef) -> Result<Vec<u8>, ReadError> {
        self.content(b.hash.as_deref(), b.bytes, &self.blob_path(b), "a buffer")
    }

    fn content(
        &self,
        hash: Option<&str>,
        len: u64,
        path: &Path,
        what: &str,
    ) -> Result<Vec<u8>, ReadError> {
        let Some(hash) = hash else {
            return Err(ReadError::MissingFile {
                path: path.display().to_string(),
                what: format!("{what} the record says was not stored"),
            });
        };
        let bytes = read_file(path, what)?;
        let corrupt = |detail: String| ReadError::Corrupt {
            path: path.display().to_string(),
            detail,
        };
        if bytes.len() as u64 != len {
            return Err(corrupt(format!(
                "{} bytes, the record says {len}",
                bytes.len()
            )));
        }
        let got = crate::format::content_hash(&bytes);
        if got != hash {
            return Err(corrupt(format!("its blake3 hash is {got}")));
        }
        Ok(bytes)
    }

    /// Record `index` with its Program and buffers: a dispatch or a resident dispatch whose
    /// data was stored.
    pub fn load(&self, index: u64) -> Result<LoadedRecord, ReadError> {
        let record = self.record(index)?;
        let path = self.record_path(index).display().to_string();
        match record.data {
            DataState::Full => {}
            DataState::MetadataOnly => {
                return Err(ReadError::NoData {
                    path,
                    index,
                    state: "metadata",
                    fix: format!(
                        "the capture reached its limit of {} bytes before this record; record again with a larger VYRESCOPE_CAPTURE_LIMIT",
                        self.manifest.limit_bytes
                    ),
                })
            }
            DataState::NotCaptured => {
                return Err(ReadError::NoData {
                    path,
                    index,
                    state: "call names",
                    fix: "the application dispatched on opaque device buffers (`dispatch_with_device_buffers`), which are not recorded; use host or resident buffers to capture this dispatch".into(),
                })
            }
        }
        let (program, inputs, outputs) = match &record.event {
            Event::Dispatch {
                program,
                inputs,
                outputs,
                ..
            } => (
                program,
                inputs
                    .iter()
                    .map(|b| self.blob(b))
                    .collect::<Result<_, _>>()?,
                outputs,
            ),
            Event::ResidentDispatch {
                program,
                resources,
                outputs,
                ..
            } => (
                program,
                resources
                    .iter()
                    .map(|r| match r {
                        ResourceRef::Borrowed { data } => self.blob(data),
                        ResourceRef::Resident { .. } => Ok(Vec::new()),
                    })
                    .collect::<Result<_, _>>()?,
                outputs,
            ),
            other => {
                return Err(ReadError::Malformed {
                    path,
                    detail: format!(
                        "record {index} is a `{}`, not a dispatch",
                        event_kind(other)
                    ),
                    fix: "load dispatch records only (`Record::event`)".into(),
                })
            }
        };
        let program_wire = self.program_wire(program)?;
        let outputs = outputs
            .iter()
            .map(|b| self.blob(b))
            .collect::<Result<_, _>>()?;
        Ok(LoadedRecord {
            record,
            program_wire,
            inputs,
            outputs,
        })
    }
}

/// The `kind` tag of an event.
pub fn event_kind<P, B>(e: &Event<P, B>) -> &'static str {
    match e {
        Event::Dispatch { .. } => "dispatch",
        Event::ResidentDispatch { .. } => "resident_dispatch",
        Event::Allocate { .. } => "allocate",
        Event::Free { .. } => "free",
        Event::Upload { .. } => "upload",
        Event::Download { .. } => "download",
        Event::Sequence { .. } => "sequence",
        Event::DeviceBufferDispatch { .. } => "device_buffer_dispatch",
    }
}
