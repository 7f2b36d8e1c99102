//! The memory of one tile in flight for [`super::DeviceRunner`], as a slot of
//! the device layer's [`SlotPool`](crate::device::SlotPool): pinned staging
//! both ways ([`PinnedHost`]) and the two device buffers ([`Grow`]) that the
//! ops of a chain ping-pong between. A slot is out while its tile is in
//! flight and reused by a later tile, so buffers are grown, never allocated
//! per tile, and never zero-filled (every byte read back was written by a
//! kernel).
//!
//! The host's copies into and out of pinned memory run in parallel
//! (rayon, in 128 KiB pieces) while the device works on other tiles.

use crate::device::{Buffer, CL_MEM_READ_WRITE, Device, Flight, Grow, PinnedHost, TileStream};
use crate::error::Result;
use rayon::prelude::*;

/// Bytes per piece of the parallel host copies.
const PIECE: usize = 128 << 10;

/// One tile's memory: pinned staging both ways, two device buffers.
#[derive(Default)]
pub struct Slot {
    up: Option<PinnedHost<u8>>,
    down: Option<PinnedHost<u8>>,
    bufs: [Grow<u8>; 2],
}

impl Slot {
    /// Device buffer `i` (0 or 1), grown to at least `len` bytes.
    pub fn buffer(&mut self, dev: &Device, i: usize, len: usize) -> Result<&mut Buffer<u8>> {
        self.bufs[i].get(dev, len, CL_MEM_READ_WRITE)
    }

    /// Device buffer `i` as it is (after [`Slot::buffer`] sized it).
    pub fn get(&self, i: usize) -> &Buffer<u8> {
        self.bufs[i].buf()
    }

    /// Copies bands `src` (equal lengths) one after another into pinned
    /// memory, in parallel, and enqueues their upload into device buffer 0
    /// on `flight`.
    ///
    /// # Safety
    /// The slot must outlive `flight`'s wait (finished or dropped) untouched.
    pub unsafe fn stage_in(
        &mut self,
        stream: &TileStream,
        flight: &mut Flight,
        src: &[&[u8]],
    ) -> Result<()> {
        let plane = src.first().map_or(0, |b| b.len());
        let total = plane * src.len();
        let dev = stream.device();
        self.buffer(dev, 0, total)?;
        let pinned = PinnedHost::ensure(&mut self.up, dev, total)?;
        let staged = &mut pinned.as_mut_slice()[..total];
        par_copy(src.iter().copied().zip(staged.chunks_mut(plane.max(1))));
        let staged = &self.up.as_ref().expect("ensured above").as_slice()[..total];
        // SAFETY: the caller keeps the slot until the flight is waited for.
        unsafe { stream.write(flight, self.bufs[0].buf_mut(), staged) }
    }

    /// Enqueues on `flight` the download of the first `len` bytes of device
    /// buffer `from` into pinned memory, after the tile's last kernel.
    ///
    /// # Safety
    /// As [`Slot::stage_in`].
    pub unsafe fn stage_out(
        &mut self,
        stream: &TileStream,
        flight: &mut Flight,
        from: usize,
        len: usize,
    ) -> Result<()> {
        let pinned = PinnedHost::ensure(&mut self.down, stream.device(), len)?;
        let staged = &mut pinned.as_mut_slice()[..len];
        // SAFETY: the caller keeps the slot until the flight is waited for.
        unsafe { stream.read(flight, self.bufs[from].buf(), staged) }
    }

    /// Copies what [`Slot::stage_out`] downloaded (its flight finished) into
    /// `dst`, band after band, in parallel.
    pub fn copy_out(&self, dst: &mut [&mut [u8]]) {
        let Some(down) = self.down.as_ref() else {
            return;
        };
        let plane = dst.first().map_or(0, |b| b.len());
        let staged = down.as_slice();
        par_copy(
            staged
                .chunks(plane.max(1))
                .zip(dst.iter_mut().map(|d| &mut **d)),
        );
    }
}

/// Copies every `(from, to)` pair (`to` as long as `from`, or shorter: the
/// rest of `from` is not copied) in parallel pieces.
fn par_copy<'a>(pairs: impl Iterator<Item = (&'a [u8], &'a mut [u8])>) {
    let pieces: Vec<(&[u8], &mut [u8])> = pairs
        .flat_map(|(from, to)| from.chunks(PIECE).zip(to.chunks_mut(PIECE)))
        .collect();
    pieces
        .into_par_iter()
        .for_each(|(from, to)| to.copy_from_slice(&from[..to.len()]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_copy_copies_every_piece() {
        let a: Vec<u8> = (0..300_000).map(|i| (i % 251) as u8).collect();
        let b: Vec<u8> = (0..1000).map(|i| (i % 7) as u8).collect();
        let (mut x, mut y) = (vec![0u8; a.len()], vec![0u8; b.len()]);
        par_copy([(&a[..], &mut x[..]), (&b[..], &mut y[..])].into_iter());
        assert_eq!((x, y), (a, b));
    }
}
