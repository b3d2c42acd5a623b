//! The writer thread: turns captured calls into files.
//!
//! The calling thread only copies bytes and sends a [`Pending`] call down a bounded channel;
//! this thread encodes Programs, hashes contents, decides whether the record still fits the
//! data limit, and writes every file atomically (a temporary file in the same folder, then a
//! rename), so that a record file is either absent or complete. A write failure stops
//! recording for good: it is reported once on stderr, the manifest says so when it still can,
//! and the application's results are never touched (the calling side does not wait for, or
//! look at, anything this thread does).

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use vyre_foundation::ir::Program;

use crate::format::{
    content_hash, record_file_name, BufferRef, CallResult, CaptureState, DataState, Event,
    Manifest, ProgramRef, ReadRef, Record, ResourceRef, StepRef, Timing, UploadRef, BLOBS_DIR,
    FORMAT_VERSION, MANIFEST_FILE, PROGRAMS_DIR, RECORDS_DIR, RECORD_FORMAT_NAME,
};

/// Calls queued before the calling thread waits for the writer (back-pressure instead of
/// unbounded memory when the disk is slower than the application).
const QUEUE_DEPTH: usize = 256;

/// A buffer as the calling thread hands it over.
pub(crate) enum Payload {
    /// The bytes (copied).
    Data(Vec<u8>),
    /// Only the length: the capture is past its limit.
    Size(u64),
}

/// One captured call on its way to the writer.
pub(crate) struct Pending {
    pub index: u64,
    pub call: &'static str,
    pub unix_ms: u64,
    pub not_captured: bool,
    pub event: Event<Program, Payload>,
    pub timing: Timing,
    pub result: CallResult,
}

/// Flags both sides read.
#[derive(Default)]
pub(crate) struct Shared {
    /// Recording stopped after a failure.
    pub stopped: AtomicBool,
    /// The data limit was reached: send sizes only.
    pub metadata_only: AtomicBool,
}

enum Job {
    Call(Box<Pending>),
    Flush(mpsc::Sender<()>),
}

/// The calling side's end of the writer.
pub(crate) struct Writer {
    tx: Option<mpsc::SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    pub shared: Arc<Shared>,
}

impl Writer {
    /// Starts the thread for a folder whose manifest is already written.
    pub fn start(dir: PathBuf, manifest: Manifest) -> std::io::Result<Writer> {
        let shared = Arc::new(Shared::default());
        let (tx, rx) = mpsc::sync_channel(QUEUE_DEPTH);
        let mut worker = Worker {
            limit: manifest.limit_bytes,
            dir,
            manifest,
            written: 0,
            known: HashSet::new(),
            last_written: None,
            shared: shared.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("vyrescope-capture".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Call(p) => worker.handle(*p),
                        Job::Flush(done) => {
                            let _ = done.send(());
                        }
                    }
                }
            })?;
        Ok(Writer {
            tx: Some(tx),
            thread: Some(thread),
            shared,
        })
    }

    /// Queues a call; a writer that has gone away stops recording.
    pub fn send(&self, p: Pending) {
        let gone = match &self.tx {
            Some(tx) => tx.send(Job::Call(Box::new(p))).is_err(),
            None => true,
        };
        if gone {
            self.shared.stopped.store(true, Ordering::SeqCst);
        }
    }

    /// Waits until every call queued so far is written (or dropped after a failure).
    pub fn flush(&self) {
        let Some(tx) = &self.tx else { return };
        let (done_tx, done_rx) = mpsc::channel();
        if tx.send(Job::Flush(done_tx)).is_ok() {
            let _ = done_rx.recv();
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop once the queue is written.
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file to write if its hash is new: (folder, hash, bytes).
type NewFile<'a> = (&'static str, String, &'a [u8]);

struct Worker {
    dir: PathBuf,
    manifest: Manifest,
    limit: u64,
    /// Data bytes written (Programs and buffers).
    written: u64,
    /// Hashes already in `programs/` or `blobs/`, prefixed by the folder.
    known: HashSet<String>,
    last_written: Option<u64>,
    shared: Arc<Shared>,
}

/// Encodes and hashes everything of one call, collecting the files it needs.
struct Converter<'a> {
    files: Vec<NewFile<'a>>,
    /// Programs encoded for this record, kept alive until written.
    wires: &'a [(Vec<u8>, String)],
    next_wire: usize,
}

impl<'a> Converter<'a> {
    fn buffer(&mut self, p: &'a Payload) -> BufferRef {
        match p {
            Payload::Data(d) => {
                let hash = content_hash(d);
                self.files.push((BLOBS_DIR, hash.clone(), d));
                BufferRef {
                    hash: Some(hash),
                    bytes: d.len() as u64,
                }
            }
            Payload::Size(n) => BufferRef {
                hash: None,
                bytes: *n,
            },
        }
    }

    fn program(&mut self, p: &Program) -> ProgramRef {
        let (wire, err) = &self.wires[self.next_wire];
        self.next_wire += 1;
        let encoded = err.is_empty();
        let hash = encoded.then(|| content_hash(wire));
        if let Some(h) = &hash {
            self.files.push((PROGRAMS_DIR, h.clone(), wire));
        }
        ProgramRef {
            hash,
            bytes: wire.len() as u64,
            entry_op_id: p.entry_op_id().map(str::to_string),
            workgroup_size: p.workgroup_size(),
            buffers: u32::try_from(p.buffers().len()).unwrap_or(u32::MAX),
            encode_error: (!encoded).then(|| err.clone()),
        }
    }

    fn resource(&mut self, r: &'a ResourceRef<Payload>) -> ResourceRef<BufferRef> {
        match r {
            ResourceRef::Resident { handle, owner } => ResourceRef::Resident {
                handle: *handle,
                owner: *owner,
            },
            ResourceRef::Borrowed { data } => ResourceRef::Borrowed {
                data: self.buffer(data),
            },
        }
    }

    fn resources(&mut self, rs: &'a [ResourceRef<Payload>]) -> Vec<ResourceRef<BufferRef>> {
        rs.iter().map(|r| self.resource(r)).collect()
    }

    fn buffers(&mut self, bs: &'a [Payload]) -> Vec<BufferRef> {
        bs.iter().map(|b| self.buffer(b)).collect()
    }

    fn reads(&mut self, rs: &'a [ReadRef<Payload>]) -> Vec<ReadRef<BufferRef>> {
        rs.iter()
            .map(|r| ReadRef {
                resource: self.resource(&r.resource),
                offset: r.offset,
                len: r.len,
                data: r.data.as_ref().map(|d| self.buffer(d)),
            })
            .collect()
    }

    fn steps(
        &mut self,
        ss: &'a [StepRef<Program, Payload>],
    ) -> Vec<StepRef<ProgramRef, BufferRef>> {
        ss.iter()
            .map(|s| StepRef {
                program: self.program(&s.program),
                resources: self.resources(&s.resources),
                grid_override: s.grid_override,
                workgroup_override: s.workgroup_override,
            })
            .collect()
    }

    fn event(&mut self, e: &'a Event<Program, Payload>) -> Event<ProgramRef, BufferRef> {
        match e {
            Event::Dispatch {
                program,
                config,
                inputs,
                outputs,
            } => Event::Dispatch {
                program: self.program(program),
                config: config.clone(),
                inputs: self.buffers(inputs),
                outputs: self.buffers(outputs),
            },
            Event::ResidentDispatch {
                program,
                config,
                resources,
                outputs,
            } => Event::ResidentDispatch {
                program: self.program(program),
                config: config.clone(),
                resources: self.resources(resources),
                outputs: self.buffers(outputs),
            },
            Event::Allocate { byte_len, resource } => Event::Allocate {
                byte_len: *byte_len,
                resource: resource.as_ref().map(|r| self.resource(r)),
            },
            Event::Free { resource } => Event::Free {
                resource: self.resource(resource),
            },
            Event::Upload { writes } => Event::Upload {
                writes: writes
                    .iter()
                    .map(|w| UploadRef {
                        resource: self.resource(&w.resource),
                        offset: w.offset,
                        data: self.buffer(&w.data),
                    })
                    .collect(),
            },
            Event::Download { reads } => Event::Download {
                reads: self.reads(reads),
            },
            Event::Sequence {
                prefix,
                repeated,
                repeat_count,
                reads,
            } => Event::Sequence {
                prefix: self.steps(prefix),
                repeated: self.steps(repeated),
                repeat_count: *repeat_count,
                reads: self.reads(reads),
            },
            Event::DeviceBufferDispatch {
                program,
                config,
                inputs,
                outputs,
            } => Event::DeviceBufferDispatch {
                program: self.program(program),
                config: config.clone(),
                inputs: *inputs,
                outputs: *outputs,
            },
        }
    }
}

/// Every Program of an event, in the order [`Converter`] visits them.
fn programs_of(e: &Event<Program, Payload>) -> Vec<&Program> {
    match e {
        Event::Dispatch { program, .. }
        | Event::ResidentDispatch { program, .. }
        | Event::DeviceBufferDispatch { program, .. } => vec![program],
        Event::Sequence {
            prefix, repeated, ..
        } => prefix.iter().chain(repeated).map(|s| &s.program).collect(),
        _ => Vec::new(),
    }
}

/// vyre's wire bytes of `p`, or (empty, why not). vyre's encoder is guarded: a panic in it
/// must not end the writer thread.
fn encode(p: &Program) -> (Vec<u8>, String) {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.to_wire())) {
        Ok(Ok(w)) => (w, String::new()),
        Ok(Err(e)) => (
            Vec::new(),
            format!("vyre's encoder refused the Program: {e}"),
        ),
        Err(_) => (Vec::new(), "vyre's encoder panicked".to_string()),
    }
}

impl Worker {
    fn handle(&mut self, p: Pending) {
        if self.shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let wires: Vec<(Vec<u8>, String)> = programs_of(&p.event).into_iter().map(encode).collect();
        let mut conv = Converter {
            files: Vec::new(),
            wires: &wires,
            next_wire: 0,
        };
        let mut event = conv.event(&p.event);
        // Only files not yet in the folder count against the limit (and are written).
        let mut fresh: Vec<&NewFile> = Vec::new();
        let mut seen = HashSet::new();
        for f in &conv.files {
            let key = format!("{}/{}", f.0, f.1);
            if !self.known.contains(&key) && seen.insert(key) {
                fresh.push(f);
            }
        }
        let new_bytes: u64 = fresh.iter().map(|f| f.2.len() as u64).sum();
        let sent_sizes_only = has_sizes_only(&p.event);
        let mut data = if p.not_captured {
            DataState::NotCaptured
        } else {
            DataState::Full
        };
        // Once one record went without data, every later one does too ("past the limit").
        let past_limit = self.shared.metadata_only.load(Ordering::SeqCst);
        if past_limit || sent_sizes_only || self.written.saturating_add(new_bytes) > self.limit {
            data = DataState::MetadataOnly;
            strip_hashes(&mut event);
            if !self.shared.metadata_only.swap(true, Ordering::SeqCst) {
                self.manifest.state = CaptureState::LimitReached {
                    first_metadata_only: p.index,
                };
                if let Err(e) = self.write_manifest() {
                    return self.stop(e);
                }
            }
        } else {
            for (folder, hash, bytes) in fresh {
                let ext = if *folder == PROGRAMS_DIR {
                    "vyre"
                } else {
                    "bin"
                };
                let path = self.dir.join(folder).join(format!("{hash}.{ext}"));
                if let Err(e) = write_atomic(&path, bytes) {
                    return self.stop(e);
                }
                self.known.insert(format!("{folder}/{hash}"));
                self.written += bytes.len() as u64;
            }
        }
        let record = Record {
            format: RECORD_FORMAT_NAME.to_string(),
            version: FORMAT_VERSION,
            index: p.index,
            call: p.call.to_string(),
            backend: self.manifest.backend.id.clone(),
            unix_ms: p.unix_ms,
            data,
            event,
            timing: p.timing,
            result: p.result,
        };
        let text = match serde_json::to_vec_pretty(&record) {
            Ok(t) => t,
            Err(e) => return self.stop(std::io::Error::other(e)),
        };
        let path = self.dir.join(RECORDS_DIR).join(record_file_name(p.index));
        if let Err(e) = write_atomic(&path, &text) {
            return self.stop(e);
        }
        self.last_written = Some(self.last_written.map_or(p.index, |l| l.max(p.index)));
    }

    fn write_manifest(&self) -> std::io::Result<()> {
        write_manifest(&self.dir, &self.manifest)
    }

    /// Stops recording after `e`: said once on stderr, and in the manifest if it can be.
    fn stop(&mut self, e: std::io::Error) {
        if self.shared.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let reason = e.to_string();
        eprintln!(
            "vyrescope-capture: cannot write the capture in {}: {reason}; capture stopped (the application's results are not affected).\n  Fix: free disk space or choose a writable folder, then record again",
            self.dir.display()
        );
        self.manifest.state = CaptureState::Stopped {
            last_written: self.last_written,
            reason,
        };
        let _ = self.write_manifest();
    }
}

/// True when the calling side already sent sizes only (it saw the limit reached).
fn has_sizes_only(e: &Event<Program, Payload>) -> bool {
    let mut sizes = false;
    visit_payloads(e, &mut |p| sizes |= matches!(p, Payload::Size(_)));
    sizes
}

fn visit_payloads(e: &Event<Program, Payload>, f: &mut dyn FnMut(&Payload)) {
    let res = |r: &ResourceRef<Payload>, f: &mut dyn FnMut(&Payload)| {
        if let ResourceRef::Borrowed { data } = r {
            f(data)
        }
    };
    match e {
        Event::Dispatch {
            inputs, outputs, ..
        } => inputs.iter().chain(outputs).for_each(&mut *f),
        Event::ResidentDispatch {
            resources, outputs, ..
        } => {
            resources.iter().for_each(|r| res(r, f));
            outputs.iter().for_each(&mut *f);
        }
        Event::Allocate { resource, .. } => resource.iter().for_each(|r| res(r, f)),
        Event::Free { resource } => res(resource, f),
        Event::Upload { writes } => writes.iter().for_each(|w| {
            res(&w.resource, f);
            f(&w.data);
        }),
        Event::Download { reads } => reads.iter().for_each(|r| {
            res(&r.resource, f);
            r.data.iter().for_each(&mut *f);
        }),
        Event::Sequence {
            prefix,
            repeated,
            reads,
            ..
        } => {
            prefix
                .iter()
                .chain(repeated)
                .flat_map(|s| &s.resources)
                .for_each(|r| res(r, f));
            reads.iter().for_each(|r| {
                res(&r.resource, f);
                r.data.iter().for_each(&mut *f);
            });
        }
        Event::DeviceBufferDispatch { .. } => {}
    }
}

/// Removes every content hash of a record that carries metadata only (its files were not
/// written).
fn strip_hashes(e: &mut Event<ProgramRef, BufferRef>) {
    fn b(x: &mut BufferRef) {
        x.hash = None;
    }
    fn r(x: &mut ResourceRef<BufferRef>) {
        if let ResourceRef::Borrowed { data } = x {
            b(data)
        }
    }
    fn reads(rs: &mut [ReadRef<BufferRef>]) {
        for x in rs {
            r(&mut x.resource);
            if let Some(d) = &mut x.data {
                b(d)
            }
        }
    }
    match e {
        Event::Dispatch {
            program,
            inputs,
            outputs,
            ..
        } => {
            program.hash = None;
            inputs.iter_mut().chain(outputs.iter_mut()).for_each(b);
        }
        Event::ResidentDispatch {
            program,
            resources,
            outputs,
            ..
        } => {
            program.hash = None;
            resources.iter_mut().for_each(r);
            outputs.iter_mut().for_each(b);
        }
        Event::Allocate { resource, .. } => resource.iter_mut().for_each(r),
        Event::Free { resource } => r(resource),
        Event::Upload { writes } => writes.iter_mut().for_each(|w| {
            r(&mut w.resource);
            b(&mut w.data);
        }),
        Event::Download { reads: rs } => reads(rs),
        Event::Sequence {
            prefix,
            repeated,
            reads: rs,
            ..
        } => {
            for s in prefix.iter_mut().chain(repeated.iter_mut()) {
                s.program.hash = None;
                s.resources.iter_mut().for_each(r);
            }
            reads(rs);
        }
        Event::DeviceBufferDispatch { program, .. } => program.hash = None,
    }
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, then a rename, so that
/// `path` is either absent or complete, never partial.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.flush()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Writes the manifest atomically.
pub(crate) fn write_manifest(dir: &Path, m: &Manifest) -> std::io::Result<()> {
    let text = serde_json::to_vec_pretty(m).map_err(std::io::Error::other)?;
    write_atomic(&dir.join(MANIFEST_FILE), &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{BackendInfo, UploadRef};

    fn upload(index: u64, bytes: Vec<u8>) -> Pending {
        Pending {
            index,
            call: "upload_resident",
            unix_ms: 0,
            not_captured: false,
            event: Event::Upload {
                writes: vec![UploadRef {
                    resource: ResourceRef::Resident {
                        handle: 1,
                        owner: 1,
                    },
                    offset: 0,
                    data: Payload::Data(bytes),
                }],
            },
            timing: Timing::default(),
            result: CallResult::Ok,
        }
    }

    fn record(dir: &Path, i: u64) -> Record {
        let text = std::fs::read(dir.join(RECORDS_DIR).join(record_file_name(i))).unwrap();
        serde_json::from_slice(&text).unwrap()
    }

    /// The writer alone decides, in order: once a record went without data, a later one that
    /// would fit (sent with its bytes before the calling side saw the limit) goes without too.
    #[test]
    fn past_the_limit_is_for_good_whatever_the_calling_side_sent() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        for sub in [RECORDS_DIR, PROGRAMS_DIR, BLOBS_DIR] {
            std::fs::create_dir(dir.join(sub)).unwrap();
        }
        let manifest = Manifest {
            format: crate::format::FORMAT_NAME.into(),
            version: FORMAT_VERSION,
            writer: "test".into(),
            backend: BackendInfo {
                id: "t".into(),
                version: "0".into(),
            },
            limit_bytes: 100,
            started_unix_ms: 0,
            state: CaptureState::Full,
        };
        let w = Writer::start(dir.clone(), manifest).unwrap();
        w.send(upload(0, vec![1; 60]));
        w.send(upload(1, vec![2; 60]));
        w.send(upload(2, vec![3; 10]));
        w.flush();
        assert_eq!(record(&dir, 0).data, DataState::Full);
        assert_eq!(record(&dir, 1).data, DataState::MetadataOnly);
        assert_eq!(record(&dir, 2).data, DataState::MetadataOnly);
        assert_eq!(std::fs::read_dir(dir.join(BLOBS_DIR)).unwrap().count(), 1);
    }
}
