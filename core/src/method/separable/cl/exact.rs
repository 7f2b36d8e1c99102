//! The certified mode's recomputation for [`SeparableCl`]: on the device
//! (`naive_flagged` in `kernels/naive.cl`, enqueued right
//! after the ranking, so the flagged pixels never leave it) where it can,
//! else on the host ([`ExactPixels`]) once the tile is back; and the counts
//! of both.

use super::{Args, BuildOptions, CL_MEM_READ_ONLY, CL_MEM_READ_WRITE, Flight, SeparableCl, Shape, Slot};
use crate::error::Result;
use crate::method::naive::{ExactPixels, cl::bins};
use crate::method::policy::Ties;
use crate::method::{ClassTile, SmoothParams};
use std::sync::atomic::Ordering;

impl SeparableCl {
    /// Recomputes exactly the pixels flagged in `uncertain` (certified mode).
    pub(super) fn recompute(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        out: &mut [u16],
        uncertain: &[u8],
    ) {
        // No flag, no recomputation: the run lengths' pass over the tile
        // is not made (nor where a few windows' rows are cheaper to read).
        let flagged = uncertain.iter().filter(|&&f| f != 0).count();
        if flagged == 0 {
            return;
        }
        let ow = tile.output_width();
        let exact = ExactPixels::for_pixels(tile, params, flagged);
        let pixels: Vec<(u32, u32)> = (uncertain.iter().enumerate())
            .filter(|&(_, &f)| f != 0)
            .map(|(i, _)| ((i % ow) as u32, (i / ow) as u32))
            .collect();
        for (&(x, y), v) in pixels.iter().zip(exact.at_all(tile, params, &pixels)) {
            out[y as usize * ow + x as usize] = v;
        }
        let redone = pixels.len() as u64;
        self.recomputed.fetch_add(redone, Ordering::Relaxed);
    }

    /// Counts the pixels `naive_flagged` recomputed (its count came down).
    pub(super) fn count_device_recomputed(&self, redone: &[u32]) {
        let n: u64 = redone.iter().map(|&n| n as u64).sum();
        self.recomputed.fetch_add(n, Ordering::Relaxed);
        self.recomputed_on_device.fetch_add(n, Ordering::Relaxed);
    }

    /// Pixels the certified mode recomputed on the device so far (the
    /// others of [`ClassSmoother::recompute_counts`] on the host).
    pub fn recomputed_on_device(&self) -> u64 {
        self.recomputed_on_device.load(Ordering::Relaxed)
    }

    /// Whether the certified recomputation of a tile of `n_classes` runs on
    /// the device: not with weighted votes (their sums are 64-bit), nor
    /// with `--ties undecided` where the winners come down as bytes (no
    /// byte is free for UNDECIDED), nor for a kernel of another size than
    /// the one whose prefix sums were uploaded.
    pub(super) fn recomputes_on_device(&self, n_classes: usize, params: &SmoothParams) -> bool {
        let byte_winners = matches!(self.shape, Shape::Dct5(_)) && n_classes < 255;
        self.prefix.is_some()
            && params.confidence.is_none()
            && params.kernel.size() == self.size
            && !(byte_winners && matches!(params.ties, Ties::Undecided(_)))
    }

    /// Uploads the tile's quantised class weights for `naive_flagged`
    /// (before the tile's `flush_uploads`), where it recomputes on the device.
    pub(super) fn upload_exact_weights(
        &self,
        flight: &mut Flight,
        bufs: &mut Slot,
        tile: &ClassTile,
        params: &SmoothParams,
    ) -> Result<()> {
        if !self.recomputes_on_device(tile.n_classes, params) {
            return Ok(());
        }
        bufs.qweights_host.clear();
        bufs.qweights_host.extend_from_slice(params.class_weights);
        bufs.qweights_host.push(0);
        let dev = self.device();
        let b = bufs
            .qweights
            .get(dev, bufs.qweights_host.len(), CL_MEM_READ_ONLY)?;
        // SAFETY: the weights lie in the slot, which the pending tile keeps
        // until its flight is waited for.
        unsafe { self.stream.write(flight, b, &bufs.qweights_host)? };
        // The count of recomputed pixels starts at 0 (a static: it outlives
        // every flight).
        static ZERO: [u32; 1] = [0];
        let redone = bufs.redone.get(dev, 1, CL_MEM_READ_WRITE)?;
        // SAFETY: as above; ZERO lives for the program.
        unsafe { self.stream.write(flight, redone, &ZERO) }
    }

    /// The certified recomputation on the device, enqueued after the
    /// ranking where it runs there: `naive_flagged` writes the exact winner
    /// of every flagged pixel over the ranking's (finding the runs of its
    /// window rows itself) and counts them. `narrow`: codes and winners
    /// are bytes. Returns whether it was enqueued (else the host recomputes).
    pub(super) fn enqueue_flagged(
        &self,
        flight: &mut Flight,
        bufs: &mut Slot,
        tile: &ClassTile,
        params: &SmoothParams,
        narrow: bool,
    ) -> Result<bool> {
        if !self.exact || !self.recomputes_on_device(tile.n_classes, params) {
            return Ok(false);
        }
        let dev = self.device();
        let (ow, oh, w) = (tile.output_width(), tile.output_height(), tile.width);
        let nc = tile.n_classes;
        let mut opts = BuildOptions::new()
            .define("CLS_T", if narrow { "uchar" } else { "ushort" })
            .define("NB", bins(nc));
        if narrow {
            opts = opts.define("OUT_T", "uchar");
        }
        if params.ties != Ties::Centre {
            opts = opts.define("TIES", params.ties.cl_code());
        }
        let flagged = dev.kernel("naive", &opts, "naive_flagged")?;
        let a = match narrow {
            true => Args::new(&flagged).mem(bufs.codes8.buf()),
            false => Args::new(&flagged).mem(bufs.codes16.buf()),
        };
        let a = a
            .scalar(w as u32)
            .mem(self.prefix.as_ref().expect("checked above"))
            .scalar(self.size as u32)
            .mem(bufs.qweights.buf())
            .scalar(nc as u32)
            .scalar(ow as u32)
            .scalar(oh as u32)
            .scalar(tile.halo as u32)
            .scalar(params.fill_nodata as u32)
            .mem(bufs.flags.buf())
            .mem(bufs.redone.buf());
        match narrow {
            true => a.mem(bufs.winners8.buf()),
            false => a.mem(bufs.winners16.buf()),
        }
        .done()?;
        self.stream.launch_bounded(flight, &flagged, &[ow, oh])?;
        flight.keep(flagged);
        Ok(true)
    }
}
