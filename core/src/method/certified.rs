//! The certified exact mode (`--exact`): a fast method plus a bound ε on the
//! error of every score; where the two best scores differ by more than a
//! margin below 2ε the fast winner is provably the exact one, elsewhere the pixel is
//! recomputed exactly with the naive method's integer arithmetic. The result
//! is byte-identical to [`NaiveHost`](super::naive::NaiveHost).
//!
//! ε is [`Bounds::total`](super::bounds::Bounds::total): the L1 norm of the
//! difference between the kernel the fast method applies and the exact
//! quantised kernel (normalised), plus the float rounding bound of its
//! passes, in units where the largest class weight is 1. Since every class
//! weight is at most 1 in those units, ε bounds every weighted score error.
//! The two best scores must differ by the margin
//! [`Bounds::certify_margin`](super::bounds::Bounds::certify_margin), less
//! than 2ε: the kernel's error is shared by the two scores, their roundings
//! are not. The third competitor, "no class", has the exact score 0, so a
//! pixel whose best score does not clear the margin is recomputed too.

use super::bounds::Bounds;
use super::naive::{Bins, ExactPixels};
use super::ranking::Ranking;
use super::{ClassSmoother, ClassTile, SmoothParams};
use crate::error::Result;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fast host method that certification can wrap: one that ranks a tile's
/// classes per pixel with a known bound on every score's error. Certified
/// takes this trait rather than a method type, so the fast methods depend
/// on certification and not the other way round.
pub trait Certifiable: ClassSmoother {
    /// The bounds on every score's error, in units where the largest class
    /// weight is 1.
    fn score_bounds(&self) -> Bounds;

    /// Scores and ranks one tile and hands the ranking to `use_it`.
    fn with_ranking<R>(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        use_it: impl FnOnce(&Ranking) -> R,
    ) -> R;
}

/// A fast host method made exact by certification.
#[derive(Debug)]
pub struct Certified<F> {
    fast: F,
    bounds: Bounds,
    pixels: AtomicU64,
    recomputed: AtomicU64,
}

impl<F: Certifiable> Certified<F> {
    pub fn new(fast: F) -> Self {
        let bounds = fast.score_bounds();
        Certified {
            fast,
            bounds,
            pixels: AtomicU64::new(0),
            recomputed: AtomicU64::new(0),
        }
    }

    /// The bound ε on every score's error.
    pub fn eps(&self) -> f64 {
        self.bounds.total()
    }

    /// Pixels recomputed exactly, and pixels smoothed, so far.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.recomputed.load(Ordering::Relaxed),
            self.pixels.load(Ordering::Relaxed),
        )
    }

    /// Share of pixels recomputed exactly so far.
    pub fn recomputed_fraction(&self) -> f64 {
        let (r, p) = self.counts();
        r as f64 / p.max(1) as f64
    }
}

impl<F: Certifiable + std::fmt::Debug> ClassSmoother for Certified<F> {
    fn name(&self) -> String {
        format!("exact({})", self.fast.name())
    }

    fn host_parallel(&self) -> bool {
        true
    }

    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        self.fast.runs_on()
    }

    fn gpus(&self) -> usize {
        self.fast.gpus()
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn weighs_votes(&self) -> bool {
        true
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        let (ow, oh) = (tile.output_width(), tile.output_height());
        if ow == 0 || oh == 0 {
            return Ok(());
        }
        let exact = ExactPixels::new(tile, params);
        let (nodata, fill) = (tile.nodata(), params.fill_nodata);
        let margin = self.bounds.certify_margin();
        let recomputed: u64 = self.fast.with_ranking(tile, params, |ranking| {
            // Every fast winner in bulk, as the plain mode writes them (a
            // per-pixel decision here cost a third of `--exact`'s engine on
            // a map recomputing 0.04 %), then the uncertain pixels redone.
            ranking.write(out, nodata, fill);
            out.par_chunks_mut(ow)
                .enumerate()
                .with_min_len(crate::grain::min_items(ow))
                .map(|(y, row)| {
                    let mut bins: Option<Bins> = None;
                    let mut redone = 0;
                    for (x, v) in row.iter_mut().enumerate() {
                        if !ranking.certified(x, y, margin, nodata, fill) {
                            let bins = bins.get_or_insert_with(|| Bins::new(tile.n_classes));
                            *v = exact.at(tile, params, x, y, bins);
                            redone += 1;
                        }
                    }
                    redone
                })
                .sum()
        });
        self.recomputed.fetch_add(recomputed, Ordering::Relaxed);
        self.pixels.fetch_add((ow * oh) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn recompute_counts(&self) -> Option<(u64, u64)> {
        Some(self.counts())
    }

    fn summary(&self) -> Option<String> {
        let (r, p) = self.counts();
        Some(format!(
            "certified {} of {p} pixels, recomputed {r} exactly ({:.3} %), ε = {:.3e}",
            p - r,
            100.0 * r as f64 / p.max(1) as f64,
            self.eps()
        ))
    }
}
