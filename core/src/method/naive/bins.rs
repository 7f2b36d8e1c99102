//! The class histogram of one window, as the exact methods fill it tap by
//! tap: integer bins, one per class plus one that absorbs nodata (so the
//! walk has no branch on it).
//!
//! Why banks: a tap adds to its class's bin in memory, and on a map the
//! next tap is mostly of the same class, so every add waits for the last
//! one's store to forward. With [`BANKS`] interleaved copies of the bins,
//! consecutive taps add to different copies and the chains run side by
//! side; the copies are summed once per window. Integer sums are
//! order-free, so the totals are the same bits. Once rows are added by
//! position ([`Bins::add_row`], no tap offsets to load), the banks took
//! naive σ = 5 on a 17-class random map from 341–402 ms to 303–313 ms
//! (2 cores); with the offsets still loaded they changed nothing.

/// Interleaved copies of the bins.
const BANKS: usize = 4;

/// Most bins (classes + 1) kept in [`BANKS`] copies: beyond, clearing and
/// summing the copies for every window would cost more than the taps gain.
const MAX_BANKED_BINS: usize = 64;

/// A window's class histogram, in banks (see the module doc).
#[derive(Clone, Debug)]
pub struct Bins {
    bins: usize,
    banked: bool,
    acc: Vec<u32>,
}

impl Bins {
    /// Bins for `n_classes` classes and nodata.
    pub fn new(n_classes: usize) -> Self {
        let bins = n_classes + 1;
        let banked = Self::banked(n_classes);
        Bins {
            bins,
            banked,
            acc: vec![0; if banked { bins * BANKS } else { bins }],
        }
    }

    /// Whether bins for `n_classes` classes are kept in banks: clearing
    /// and summing them then costs [`BANKS`] times as much per class.
    pub fn banked(n_classes: usize) -> bool {
        n_classes < MAX_BANKED_BINS
    }

    /// Empties every bin, for the next window.
    #[inline]
    pub fn clear(&mut self) {
        self.acc.fill(0);
    }

    /// Adds `weight` to `class`'s bin.
    #[inline]
    pub fn add(&mut self, class: u16, weight: u32) {
        self.acc[class as usize] += weight;
    }

    /// Adds every tap's weight to the bin of the class under it: `taps` are
    /// (offset into `window`, weight).
    #[inline]
    pub fn add_taps(&mut self, taps: &[(usize, u32)], window: &[u16]) {
        if !self.banked {
            for &(offset, q) in taps {
                self.acc[window[offset] as usize] += q;
            }
            return;
        }
        let (acc, b) = (&mut self.acc, self.bins);
        let mut quads = taps.chunks_exact(BANKS);
        for quad in &mut quads {
            acc[window[quad[0].0] as usize] += quad[0].1;
            acc[b + window[quad[1].0] as usize] += quad[1].1;
            acc[2 * b + window[quad[2].0] as usize] += quad[2].1;
            acc[3 * b + window[quad[3].0] as usize] += quad[3].1;
        }
        for &(offset, q) in quads.remainder() {
            acc[window[offset] as usize] += q;
        }
    }

    /// Adds `weights[i]` to the bin of `line[i]`'s class, for every `i`: a
    /// window row whose taps are all non-zero, without tap offsets to load.
    #[inline]
    pub fn add_row(&mut self, line: &[u16], weights: &[u32]) {
        if !self.banked {
            for (&c, &q) in line.iter().zip(weights) {
                self.acc[c as usize] += q;
            }
            return;
        }
        let (acc, b) = (&mut self.acc, self.bins);
        let (mut lines, mut quads) = (line.chunks_exact(BANKS), weights.chunks_exact(BANKS));
        for (c, q) in (&mut lines).zip(&mut quads) {
            acc[c[0] as usize] += q[0];
            acc[b + c[1] as usize] += q[1];
            acc[2 * b + c[2] as usize] += q[2];
            acc[3 * b + c[3] as usize] += q[3];
        }
        for (&c, &q) in lines.remainder().iter().zip(quads.remainder()) {
            acc[c as usize] += q;
        }
    }

    /// The window's total per class (nodata's bin last): the banks summed.
    /// Quantised weights sum to at most 2³¹, so no total overflows.
    #[inline]
    pub fn totals(&mut self) -> &[u32] {
        let b = self.bins;
        if self.banked {
            let (first, rest) = self.acc.split_at_mut(b);
            for bank in rest.chunks_exact(b) {
                first.iter_mut().zip(bank).for_each(|(a, &v)| *a += v);
            }
        }
        &self.acc[..b]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tap count (whole quads and remainders), few classes (banked)
    /// and many (one bank), against one plain histogram.
    #[test]
    fn banked_totals_are_the_plain_histogram() {
        for classes in [1usize, 3, 17, 63, 64, 200] {
            for taps_len in [0usize, 1, 3, 4, 5, 31, 961] {
                let window: Vec<u16> = (0..taps_len)
                    .map(|i| ((i * 7 + i / 5) % (classes + 1)) as u16)
                    .collect();
                let taps: Vec<(usize, u32)> =
                    (0..taps_len).map(|i| ((i * 13) % taps_len, 1 + i as u32 * 3)).collect();
                let mut plain = vec![0u32; classes + 1];
                for &(o, q) in &taps {
                    plain[window[o] as usize] += q;
                }
                let mut bins = Bins::new(classes);
                bins.add(0, 5);
                bins.clear();
                bins.add_taps(&taps, &window);
                assert_eq!(bins.totals(), &plain[..], "{classes} classes, {taps_len} taps");
            }
        }
    }
}
