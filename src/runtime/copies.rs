//! Host<->device copies of dispatch buffers through the pinned staging ring: chunks go through
//! [`StagingSlot`]s (the completion guards of `runtime::driver::staging`), spread over all
//! cores when large; all-zero buffers are cleared on the device instead of copied.

use rayon::prelude::*;

use super::dispatch::{Counters, STAGING_CHUNK, STAGING_SLOTS};
use super::driver::staging::StagingSlot;
use super::driver::{DeviceBuffer, DriverError};
use crate::inputs::{HostBuffer, Staged};

/// The pinned staging ring.
#[derive(Default)]
pub(super) struct Staging {
    pub(super) slots: Vec<StagingSlot>,
}

impl Staging {
    pub(super) fn ensure(&mut self) -> std::result::Result<(), DriverError> {
        while self.slots.len() < STAGING_SLOTS {
            self.slots.push(StagingSlot::new(STAGING_CHUNK)?);
        }
        Ok(())
    }
}

pub(super) use crate::util::par_copy;

/// Writable buffers smaller than this are left to fault their pages in as results arrive.
const PREFAULT_MIN: usize = 1 << 20;

/// Maps the pages of the writable buffers now, on the thread pool, so that the copy of the
/// results finds them ready instead of faulting each one in (a fresh output's pages are
/// untouched: at 256 MB that is 65536 faults on the copy's critical path). Called while the
/// device works. Large buffers are first offered transparent huge pages, one fault per
/// 2 MiB where the kernel allows it. The bytes do not change.
pub(super) fn prefault_outputs(buffers: &mut [HostBuffer]) {
    const PAGE: usize = 4096;
    for b in buffers.iter_mut().filter(|b| worth_prefaulting(b)) {
        crate::util::os::advise_huge_pages(&mut b.data);
        b.data.par_chunks_mut(1 << 20).for_each(|c| {
            for i in (0..c.len()).step_by(PAGE) {
                // Storing back what is there forces a private page and changes nothing;
                // black_box keeps the store from being optimised away.
                c[i] = std::hint::black_box(c[i]);
            }
        });
    }
}

/// Whether [`prefault_outputs`] has anything to do for `b`: a writable buffer large enough
/// that mapping its pages ahead pays for handing the work to the thread pool.
pub(super) fn worth_prefaulting(b: &HostBuffer) -> bool {
    b.access.is_writable() && b.data.len() >= PREFAULT_MIN
}

pub(super) fn all_zero(data: &[u8]) -> bool {
    data.par_chunks(1 << 20).all(|c| c.iter().all(|&b| b == 0))
}

/// Uploads each buffer's bytes as `sources[i]` says (the buffer's own `data` when absent):
/// the caller's own slice is staged without an intermediate copy, and zeros (known, or
/// found by a scan) are cleared on the device.
pub(super) fn upload_into(
    sess: &mut super::Session,
    buffers: &[HostBuffer],
    sources: &[Staged<'_>],
    devs: &mut Vec<DeviceBuffer>,
    c: &mut Counters,
) -> std::result::Result<(), DriverError> {
    sess.staging.ensure()?;
    let mut k = 0usize;
    for (i, b) in buffers.iter().enumerate() {
        let source = sources.get(i).copied().unwrap_or_default();
        let data: &[u8] = source.slice().unwrap_or(&b.data);
        let bytes = data.len();
        let d = match sess.pool.take(bytes) {
            Some(d) => d,
            None => {
                c.allocs += 1;
                c.alloc_bytes += bytes as u64;
                DeviceBuffer::alloc(bytes)?
            }
        };
        // A known-zero buffer is not scanned: reading its untouched pages would fault each
        // one in only to have the results fault it again.
        if source == Staged::Zeros || all_zero(data) {
            d.memset_async(0, &sess.stream)?;
        } else {
            for (ci, piece) in data.chunks(STAGING_CHUNK).enumerate() {
                let s = k % STAGING_SLOTS;
                k += 1;
                // The slot waits for its previous copy before its bytes are replaced.
                let waited = sess.staging.slots[s].upload(
                    piece.len(),
                    |dst| par_copy(dst, piece),
                    &d,
                    ci * STAGING_CHUNK,
                    &sess.stream,
                )?;
                c.syncs += u64::from(waited);
                c.h2d += piece.len() as u64;
            }
        }
        devs.push(d);
    }
    Ok(())
}

pub(super) fn download_from(
    sess: &mut super::Session,
    id: u64,
    buffers: &mut [HostBuffer],
    c: &mut Counters,
) -> std::result::Result<(), DriverError> {
    sess.staging.ensure()?;
    let Some(devs) = sess.pool.resident.get(&id) else {
        return Ok(());
    };
    // Chunks of every writable buffer: (buffer index, byte offset, length).
    let mut chunks = Vec::new();
    for (i, b) in buffers.iter().enumerate() {
        if !b.access.is_writable() || i >= devs.len() {
            continue;
        }
        let n = b.data.len();
        let mut off = 0;
        while off < n {
            let len = STAGING_CHUNK.min(n - off);
            chunks.push((i, off, len));
            off += len;
        }
    }
    let staging = &mut sess.staging;
    let stream = &sess.stream;
    let issue = |staging: &mut Staging, j: usize| -> std::result::Result<u64, DriverError> {
        let (i, off, len) = chunks[j];
        let waited = staging.slots[j % STAGING_SLOTS].download(&devs[i], off, len, stream)?;
        Ok(u64::from(waited))
    };
    // Slots may still hold an upload in flight from this same stream; stream order makes
    // the downloads wait for it, and the host reads a slot only after its event.
    for j in 0..chunks.len().min(STAGING_SLOTS) {
        c.syncs += issue(staging, j)?;
    }
    for j in 0..chunks.len() {
        let (i, off, len) = chunks[j];
        par_copy(
            &mut buffers[i].data[off..off + len],
            staging.slots[j % STAGING_SLOTS].read(len)?,
        );
        c.syncs += 1;
        c.d2h += len as u64;
        if j + STAGING_SLOTS < chunks.len() {
            c.syncs += issue(staging, j + STAGING_SLOTS)?;
        }
    }
    Ok(())
}

/// Copies `src` into `dst[offset..offset + src.len()]` through the staging ring (queued on
/// the session's stream; later work on that stream sees the bytes).
pub(super) fn upload_at(
    sess: &mut super::Session,
    dst: &DeviceBuffer,
    offset: usize,
    src: &[u8],
    c: &mut Counters,
) -> std::result::Result<(), DriverError> {
    sess.staging.ensure()?;
    for (k, piece) in src.chunks(STAGING_CHUNK).enumerate() {
        let waited = sess.staging.slots[k % STAGING_SLOTS].upload(
            piece.len(),
            |d| par_copy(d, piece),
            dst,
            offset + k * STAGING_CHUNK,
            &sess.stream,
        )?;
        c.syncs += u64::from(waited);
        c.h2d += piece.len() as u64;
    }
    Ok(())
}

/// Copies `src[offset..offset + out.len()]` into `out` through the staging ring, keeping up
/// to [`STAGING_SLOTS`] chunks in flight.
pub(super) fn download_at(
    sess: &mut super::Session,
    src: &DeviceBuffer,
    offset: usize,
    out: &mut [u8],
    c: &mut Counters,
) -> std::result::Result<(), DriverError> {
    sess.staging.ensure()?;
    let total = out.len();
    let n = total.div_ceil(STAGING_CHUNK);
    let piece = |j: usize| {
        (
            j * STAGING_CHUNK,
            STAGING_CHUNK.min(total - j * STAGING_CHUNK),
        )
    };
    for j in 0..n.min(STAGING_SLOTS) {
        let (off, len) = piece(j);
        c.syncs += u64::from(sess.staging.slots[j % STAGING_SLOTS].download(
            src,
            offset + off,
            len,
            &sess.stream,
        )?);
    }
    for j in 0..n {
        let (off, len) = piece(j);
        par_copy(
            &mut out[off..off + len],
            sess.staging.slots[j % STAGING_SLOTS].read(len)?,
        );
        c.syncs += 1;
        c.d2h += len as u64;
        if j + STAGING_SLOTS < n {
            let (off, len) = piece(j + STAGING_SLOTS);
            c.syncs += u64::from(
                sess.staging.slots[(j + STAGING_SLOTS) % STAGING_SLOTS].download(
                    src,
                    offset + off,
                    len,
                    &sess.stream,
                )?,
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_zero_sees_one_set_byte() {
        assert!(all_zero(&vec![0u8; 5 << 20]));
        let mut z = vec![0u8; 5 << 20];
        z[(4 << 20) + 3] = 1;
        assert!(!all_zero(&z));
    }
}
