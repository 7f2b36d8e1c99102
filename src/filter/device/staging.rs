//! Host↔device staging of one tile for [`super::DeviceRunner`]: memory that
//! lives across calls (the device layer's [`Grow`] buffers and
//! [`PinnedHost`] staging), and the strip schedule that overlaps the host's
//! copies, the transfers and the kernels.
//!
//! The runner walks a tile strip by strip: it copies a strip's input rows
//! (rayon, in 128 KiB pieces) into mapped pinned memory and enqueues their
//! writes ([`Staging::stage_in`]), launches the first op on the strip's
//! output rows behind those writes, and, for one-op chains, enqueues the
//! strip's reads behind that kernel ([`Staging::stage_out`]); every queue is
//! flushed at once, so the DMA up of strip s, its kernel and its DMA down
//! run while the host copies strip s+1. It then copies each strip out of
//! pinned memory as its reads land ([`Staging::copy_out`]). Device buffers and pinned memory
//! are allocated once and grown, never per call, and never zero-filled
//! (every byte read back was written by a kernel).

use crate::device::{Buffer, CL_MEM_READ_WRITE, Device, Event, Grow, PinnedHost, Queue, cl_error};
use crate::error::Result;
use opencl3::types::{CL_NON_BLOCKING, cl_event};
use rayon::prelude::*;
use std::ops::Range;

/// Bytes per piece of the parallel host copies.
const PIECE: usize = 128 << 10;

/// Memory kept between calls: pinned staging both ways, two device buffers
/// that the ops of a chain ping-pong between.
#[derive(Default)]
pub struct Staging {
    up: Option<PinnedHost<u8>>,
    down: Option<PinnedHost<u8>>,
    bufs: [Grow<u8>; 2],
}

/// Output rows `rows` (of the tile's output window) and the input rows
/// `have[..need]` that the first op reads for them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strip {
    pub rows: Range<usize>,
    pub need: usize,
}

/// The strips of an output of `out_h` rows, `per` rows each (the last may
/// be shorter), for an op of radius `r` whose input window starts
/// `out_y - have_y` rows above the output and has `have_h` rows.
pub fn strips(out_h: usize, per: usize, lead: usize, have_h: usize, r: usize) -> Vec<Strip> {
    let per = per.max(1);
    (0..out_h.div_ceil(per))
        .map(|i| {
            let rows = i * per..((i + 1) * per).min(out_h);
            let need = if rows.end == out_h {
                have_h
            } else {
                (lead + rows.end + r).min(have_h)
            };
            Strip { rows, need }
        })
        .collect()
}

/// Rows per strip: about `bytes` of input per strip, a multiple of `align`.
pub fn rows_per_strip(row_bytes: usize, bytes: usize, align: usize) -> usize {
    (bytes / row_bytes.max(1)).max(1).div_ceil(align) * align
}

impl Staging {
    /// Device buffer `i` (0 or 1), grown to at least `len` bytes.
    pub fn buffer(&mut self, dev: &Device, i: usize, len: usize) -> Result<&mut Buffer<u8>> {
        self.bufs[i].get(dev, len, CL_MEM_READ_WRITE)
    }

    /// Device buffer `i` as it is (after [`Staging::buffer`] sized it).
    pub fn get(&self, i: usize) -> &Buffer<u8> {
        self.bufs[i].buf()
    }

    /// Copies rows `range` of bands `src` (each `rows` rows of `row` bytes)
    /// into pinned memory, in parallel, and enqueues their writes into device
    /// buffer 0 (bands one after another), submitted at once. Returns the
    /// writes' events (the last one ends after the others: one in-order queue).
    pub fn stage_in(
        &mut self,
        dev: &Device,
        src: &[&[u8]],
        row: usize,
        rows: usize,
        range: Range<usize>,
    ) -> Result<Vec<Event>> {
        let plane = row * rows;
        let total = plane * src.len();
        self.buffer(dev, 0, total)?;
        let pinned = PinnedHost::ensure(&mut self.up, dev, total)?;
        let buf = self.bufs[0].buf_mut();
        let staged = &mut pinned.as_mut_slice()[..total];
        let bytes = range.start * row..range.end * row;
        let pairs = src
            .iter()
            .zip(staged.chunks_mut(plane.max(1)))
            .map(|(band, to)| (&band[bytes.clone()], &mut to[bytes.clone()]))
            .collect();
        par_copy(pairs);
        let queue = dev.queue(Queue::Upload);
        let mut events = Vec::with_capacity(src.len());
        for b in 0..src.len() {
            let at = b * plane + bytes.start;
            // SAFETY: non-blocking write from pinned memory that is not
            // written again before the run's final waits.
            let e = unsafe {
                queue.enqueue_write_buffer(
                    buf,
                    CL_NON_BLOCKING,
                    at,
                    &staged[at..at + bytes.len()],
                    &[],
                )
            }
            .map_err(cl_error("uploading to the device"))?;
            events.push(e);
        }
        queue.flush().map_err(cl_error("uploading to the device"))?;
        Ok(events)
    }

    /// Enqueues, after `ready`, the reads of rows `range` of `bands` bands
    /// (each `rows` rows of `row` bytes) of device buffer `from` into pinned
    /// memory, submitted at once. Returns their events (the last ends last).
    #[allow(clippy::too_many_arguments)]
    pub fn stage_out(
        &mut self,
        dev: &Device,
        from: usize,
        bands: usize,
        row: usize,
        rows: usize,
        range: Range<usize>,
        ready: &Event,
    ) -> Result<Vec<Event>> {
        let plane = row * rows;
        let pinned = PinnedHost::ensure(&mut self.down, dev, plane * bands)?;
        let buf = self.bufs[from].buf();
        let staged = pinned.as_mut_slice();
        let queue = dev.queue(Queue::Download);
        let wait: [cl_event; 1] = [ready.get()];
        let mut events = Vec::with_capacity(bands);
        for b in 0..bands {
            let at = b * plane + range.start * row;
            let len = range.len() * row;
            // SAFETY: non-blocking read into pinned memory that is only read
            // (by `copy_out`) after this read's event completes.
            let e = unsafe {
                queue.enqueue_read_buffer(
                    buf,
                    CL_NON_BLOCKING,
                    at,
                    &mut staged[at..at + len],
                    &wait,
                )
            }
            .map_err(cl_error("downloading from the device"))?;
            events.push(e);
        }
        queue
            .flush()
            .map_err(cl_error("downloading from the device"))?;
        Ok(events)
    }

    /// Copies rows `range` of every band read by [`Staging::stage_out`]
    /// (its reads complete) into `dst`, in parallel.
    pub fn copy_out(&self, dst: &mut [&mut [u8]], row: usize, rows: usize, range: Range<usize>) {
        let plane = row * rows;
        let staged = self.down.as_ref().expect("staged out").as_slice();
        let bytes = range.start * row..range.end * row;
        let pairs = dst
            .iter_mut()
            .zip(staged.chunks(plane.max(1)))
            .map(|(d, from)| (&from[bytes.clone()], &mut d[bytes.clone()]))
            .collect();
        par_copy(pairs);
    }
}

/// Copies every `(from, to)` pair (equal lengths) in parallel pieces.
fn par_copy(pairs: Vec<(&[u8], &mut [u8])>) {
    let pieces: Vec<(&[u8], &mut [u8])> = pairs
        .into_iter()
        .flat_map(|(from, to)| from.chunks(PIECE).zip(to.chunks_mut(PIECE)))
        .collect();
    pieces
        .into_par_iter()
        .for_each(|(from, to)| to.copy_from_slice(from));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_cover_the_output_and_need_the_rows_below() {
        // Output rows 0..40 start 3 rows into the input (r = 3 halo above),
        // input has 46 rows (3 above, 3 below).
        let s = strips(40, 16, 3, 46, 3);
        let rows: Vec<_> = s.iter().map(|s| s.rows.clone()).collect();
        assert_eq!(rows, vec![0..16, 16..32, 32..40]);
        // Output row 15 is input row 18 and needs rows up to 21: 22 rows.
        assert_eq!(s[0].need, 22);
        assert_eq!(s[1].need, 38);
        assert_eq!(s[2].need, 46);
        // At the raster's bottom edge (no halo below) the need is clamped.
        let s = strips(40, 16, 0, 40, 5);
        assert_eq!(s.iter().map(|s| s.need).collect::<Vec<_>>(), [21, 37, 40]);
        assert_eq!(strips(0, 16, 0, 0, 1), vec![]);
        assert_eq!(rows_per_strip(12288, 2 << 20, 16), 176);
        assert_eq!(rows_per_strip(1 << 30, 2 << 20, 16), 16);
    }

    #[test]
    fn par_copy_copies_every_piece() {
        let a: Vec<u8> = (0..300_000).map(|i| (i % 251) as u8).collect();
        let b: Vec<u8> = (0..1000).map(|i| (i % 7) as u8).collect();
        let (mut x, mut y) = (vec![0u8; a.len()], vec![0u8; b.len()]);
        par_copy(vec![(&a[..], &mut x[..]), (&b[..], &mut y[..])]);
        assert_eq!((x, y), (a, b));
    }
}
