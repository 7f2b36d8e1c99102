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
use super::naive::ExactPixels;
use super::{ClassSmoother, ClassTile, SmoothParams};
use crate::error::Result;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fast host method that certification can wrap: one that ranks a tile's
/// classes per pixel with a known bound on every score's error. Certified
/// takes this trait rather than a method type, so the fast methods depend
/// on certification and not the other way round.
pub trait Certifiable: ClassSmoother {
    /// The bounds on every score's error, in units where the largest class
    /// weight is 1.
    fn score_bounds(&self) -> Bounds;

    /// Writes every output pixel's fast winner into `out` (as the plain
    /// mode does) and returns the pixels `(x, y)` whose winner does not
    /// lead the runner-up (or "no class") by more than `margin`.
    fn decide_certified(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        margin: f64,
        out: &mut [u16],
    ) -> Vec<(u32, u32)>;
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

    fn preferred_tile(&self) -> Option<usize> {
        self.fast.preferred_tile()
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
        let margin = self.bounds.certify_margin();
        // Every fast winner in bulk, as the plain mode writes them (a
        // per-pixel decision here cost a third of `--exact`'s engine on a
        // map recomputing 0.04 %), then the uncertain pixels redone.
        let uncertain = self.fast.decide_certified(tile, params, margin, out);
        let recomputed = uncertain.len() as u64;
        if !uncertain.is_empty() {
            let exact = ExactPixels::for_pixels(tile, params, uncertain.len());
            let redone = exact.at_all(tile, params, &uncertain);
            for (&(x, y), v) in uncertain.iter().zip(redone) {
                out[y as usize * ow + x as usize] = v;
            }
        }
        self.recomputed.fetch_add(recomputed, Ordering::Relaxed);
        self.pixels.fetch_add((ow * oh) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn recompute_counts(&self) -> Option<(u64, u64)> {
        Some(self.counts())
    }

    fn kept_share(&self, tile: &ClassTile, params: &SmoothParams) -> Option<f64> {
        self.fast.kept_share(tile, params)
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
