//! Staging slots: page-locked buffers for host<->device copies, each paired with the event
//! that marks its last copy done. The slot is the completion guard: the host can touch the
//! pinned bytes only through [`StagingSlot::upload`] (which first waits for the previous copy)
//! and [`StagingSlot::read`] (which waits for the download), so no host access ever overlaps
//! an asynchronous copy. This is what makes the async copies sound without `unsafe` callers.

use super::{range_error, DeviceBuffer, DriverError, Event, PinnedBuffer, Stream};

/// One pinned staging buffer and the event recorded after its latest copy.
#[derive(Debug)]
pub(crate) struct StagingSlot {
    pinned: PinnedBuffer,
    done: Event,
    /// A copy was queued and not yet waited for.
    in_flight: bool,
    /// The stream of that copy (device-side ordering makes a later copy on the same stream
    /// wait for it without a host synchronisation).
    stream: usize,
}

impl StagingSlot {
    /// A slot of `bytes` page-locked bytes.
    pub(crate) fn new(bytes: usize) -> Result<StagingSlot, DriverError> {
        Ok(StagingSlot {
            pinned: PinnedBuffer::alloc(bytes)?,
            done: Event::create(false)?,
            in_flight: false,
            stream: 0,
        })
    }

    /// Blocks until the slot's latest copy is done; returns whether there was one to wait for.
    pub(crate) fn wait(&mut self) -> Result<bool, DriverError> {
        if !self.in_flight {
            return Ok(false);
        }
        self.done.synchronize()?;
        self.in_flight = false;
        Ok(true)
    }

    /// Waits for the slot's previous copy, lets `fill` write the first `len` bytes and queues
    /// their copy to `dst[offset..offset + len]` on `stream`. Returns whether it had to wait.
    pub(crate) fn upload(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]),
        dst: &DeviceBuffer,
        offset: usize,
        stream: &Stream,
    ) -> Result<bool, DriverError> {
        if len > self.pinned.bytes {
            return Err(range_error("cuMemcpyHtoDAsync"));
        }
        let waited = self.wait()?;
        fill(&mut self.pinned.as_mut_slice()[..len]);
        // Safety: the pinned bytes are owned by this slot, which the host reaches only through
        // `upload`/`read`, both of which wait on `done` first; `done` is recorded right after
        // the copy, so the bytes stay alive and untouched until the copy completes.
        unsafe { dst.upload_async(offset, &self.pinned, len, stream)? };
        self.mark(stream)?;
        Ok(waited)
    }

    /// Queues a copy of `src[offset..offset + len]` into the slot on `stream`. The host reads
    /// it with [`StagingSlot::read`]. Returns whether it had to wait for the host (a previous
    /// copy on another stream).
    pub(crate) fn download(
        &mut self,
        src: &DeviceBuffer,
        offset: usize,
        len: usize,
        stream: &Stream,
    ) -> Result<bool, DriverError> {
        if len > self.pinned.bytes {
            return Err(range_error("cuMemcpyDtoHAsync"));
        }
        // A copy still in flight on the same stream finishes first by stream order; on
        // another stream the host must wait for it.
        let waited = if self.in_flight && self.stream != stream_key(stream) {
            self.wait()?
        } else {
            false
        };
        // Safety: as in `upload`: the host cannot read or write the pinned bytes until `read`
        // has waited on `done`, which is recorded after this copy.
        unsafe { src.download_async(offset, &self.pinned, len, stream)? };
        self.mark(stream)?;
        Ok(waited)
    }

    /// Waits for the slot's latest copy and gives its first `len` bytes.
    pub(crate) fn read(&mut self, len: usize) -> Result<&[u8], DriverError> {
        self.wait()?;
        self.pinned
            .as_slice()
            .get(..len)
            .ok_or_else(|| range_error("cuMemcpyDtoHAsync"))
    }

    fn mark(&mut self, stream: &Stream) -> Result<(), DriverError> {
        self.done.record(stream)?;
        self.in_flight = true;
        self.stream = stream_key(stream);
        Ok(())
    }
}

/// A stream's identity (its raw handle) for the same-stream check.
fn stream_key(stream: &Stream) -> usize {
    stream.0 as usize
}
