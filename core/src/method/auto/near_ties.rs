//! What a certified candidate would recompute on a tile before it has run:
//! the share of the tile's pixels whose exact best two scores lie within
//! its certified margin, estimated from a lattice of sampled pixels scored
//! exactly (naive's integer sums, tap by tap).
//!
//! The share is a property of the map far more than of the bound: at
//! σ = 20 dct5 K = 3 recomputes 0.14 % of a 512² MODIS crop, 7.2 % of a
//! 17-class simplex map and 76 % of a 17-class random one, where a guess
//! from the margin alone said 18 % for all three. A few hundred pixels
//! tell these apart, in parallel and at a fixed budget of taps, where a
//! probe (the candidate run on a window of the tile) cost as much as the
//! tile on a host of many threads (its window a band or two of them).

use crate::method::naive::{Bins, ExactPixels, RUN_STEP_TAPS, TABLE_PASSES_PER_TAP};
use crate::method::{ClassTile, SmoothParams};
use rayon::prelude::*;

/// Taps the sample may add per tile (about 5 ms of one core; 40 pixels at
/// σ = 85, whose share decides between dct5 and svd there at a few %).
pub const SAMPLE_TAPS: usize = 1 << 23;

/// Kernels of at least this side (past the exact baseline's 511, where
/// fft is a candidate) sample run by run where the tile's runs are known.
pub const RUN_WALKED_SIZE: usize = 512;

/// The smallest sampled gaps whose density [`NearTies::share`] carries
/// down to a margin that none of them is under.
const UNSEEN_FROM: usize = 4;

/// The most near-ties [`NearTies::share`] counts where the sample saw
/// none: half a sampled pixel.
const UNSEEN_AT_MOST: f64 = 0.5;

/// Pixels sampled per tile: as many as the budget allows, within these.
pub const MIN_SAMPLES: usize = 16;
const MAX_SAMPLES: usize = 256;

/// The sampled pixels' gaps between their best two exact scores, in units
/// of a whole window's vote for the heaviest class (the units of the
/// certified margin), sorted.
#[derive(Clone, Debug, PartialEq)]
pub struct NearTies {
    gaps: Vec<f64>,
}

impl NearTies {
    /// Samples `tile` on a square lattice of its output pixels; `None`
    /// with weighted votes (their sums are scored otherwise) or where no
    /// sampled pixel has a class to score.
    ///
    /// `row_runs`: the tile's mean runs per window row, where measured.
    /// Kernels of [`RUN_WALKED_SIZE`] and more then score each sampled
    /// window run by run (naive's run tables): a row of few runs costs a
    /// few steps, not N taps, so the same budget samples many more pixels
    /// (at σ = 150 on a MODIS crop, 16 pixels tap by tap saw none of the
    /// 1 % dct5 recomputes, and auto ran it where fft was 1.7–2.9× faster).
    /// Smaller kernels walk runs where that and the tables cost less than
    /// the taps: on a 512² MODIS crop at σ = 5–35 on 16 threads the taps
    /// took 2–6 ms of auto's 8–38 ms, and auto missed the fastest method's
    /// time by 19–28 % in running it.
    ///
    /// `most`: the most pixels to sample, under what the budget allows.
    pub fn sample(
        tile: &ClassTile,
        params: &SmoothParams,
        row_runs: Option<f64>,
        most: usize,
    ) -> Option<NearTies> {
        if params.confidence.is_some() {
            return None;
        }
        let (ow, oh) = (tile.output_width(), tile.output_height());
        // The kernel's rows read in place: a list of the taps' offsets
        // (16 bytes a tap) cost more to build at σ = 85 than the sample.
        let weights = params.kernel.quantised();
        let taps = weights.iter().filter(|&&q| q > 0).count();
        if ow == 0 || oh == 0 || taps == 0 {
            return None;
        }
        let n = params.kernel.size();
        // A sampled window costs its taps, or walked run by run (a row
        // walks its runs or adds its taps, whichever is cheaper) its steps
        // plus the tile's run tables once.
        let samples = |per_sample: usize| {
            (SAMPLE_TAPS / per_sample.max(1))
                .clamp(MIN_SAMPLES, MAX_SAMPLES)
                .min(most)
        };
        let by_taps = samples(taps) * taps;
        let walk = row_runs.map(|runs| n * ((runs * RUN_STEP_TAPS as f64).ceil() as usize).min(n));
        let walks = walk.is_some_and(|per_sample| {
            let tables = TABLE_PASSES_PER_TAP * tile.width * tile.height;
            n >= RUN_WALKED_SIZE || samples(per_sample) * per_sample + tables < by_taps
        });
        let walked = walks.then(|| ExactPixels::new(tile, params));
        let per_sample = match (&walked, walk) {
            (Some(_), Some(per_sample)) => per_sample,
            _ => taps,
        };
        let wanted = samples(per_sample);
        let side = (wanted as f64).sqrt().floor().max(1.0) as usize;
        let (sx, sy) = (side.min(ow), side.min(oh));
        let total: u64 = weights.iter().map(|&q| q as u64).sum();
        let top_weight = params.class_weights.iter().copied().max().unwrap_or(1).max(1);
        let unit = (total * top_weight as u64) as f64;
        let nodata = tile.nodata() as usize;
        let mut gaps: Vec<f64> = (0..sx * sy)
            .into_par_iter()
            .filter_map(|i| {
                let x = (2 * (i % sx) + 1) * ow / (2 * sx);
                let y = (2 * (i / sx) + 1) * oh / (2 * sy);
                let origin = y * tile.width + x;
                let centre = tile.classes[origin + tile.halo * tile.width + tile.halo] as usize;
                if centre == nodata && !params.fill_nodata {
                    return None;
                }
                let mut bins = Bins::new(tile.n_classes);
                match &walked {
                    Some(exact) => exact.add_window(tile, origin, &mut bins),
                    // Every weight of each row, zeros too: naive's banked
                    // adds by position, a third of the time of a sum per
                    // tap through a bounds-checked index.
                    None => {
                        for (dy, row) in weights.chunks_exact(n).enumerate() {
                            bins.add_row(&tile.classes[origin + dy * tile.width..][..n], row);
                        }
                    }
                }
                let sums: Vec<u64> = bins.totals().iter().map(|&t| t as u64).collect();
                let (mut top, mut second) = (0u64, 0u64);
                for (c, &sum) in sums[..tile.n_classes].iter().enumerate() {
                    let score = sum * params.class_weights[c] as u64;
                    if score > top {
                        (top, second) = (score, top);
                    } else if score > second {
                        second = score;
                    }
                }
                Some((top - second) as f64 / unit)
            })
            .collect();
        if gaps.is_empty() {
            return None;
        }
        gaps.sort_by(f64::total_cmp);
        Some(NearTies { gaps })
    }

    /// How many pixels were sampled.
    pub fn pixels(&self) -> usize {
        self.gaps.len()
    }

    /// The share of the sampled pixels whose gap is at most `margin`.
    /// Where none is, a share the sample is too small to see does not
    /// count as none: the density of the [`UNSEEN_FROM`] smallest gaps
    /// carried down to the margin, at most [`UNSEEN_AT_MOST`] pixel.
    /// Wide kernels sample few pixels and pay hundreds of thousands of
    /// taps for each one recomputed: dct5 on a longer period recomputed
    /// 0.03 % at σ = 150 on a MODIS crop (31 pixels sampled, half a pixel
    /// would say 1.6 %), and about 1 % of a 2-class noise map at σ = 85
    /// (32 sampled, none seen: counted as none, auto ran it at 1.6× svd).
    pub fn share(&self, margin: f64) -> f64 {
        let near = self.gaps.partition_point(|&g| g <= margin);
        let len = self.gaps.len() as f64;
        if near > 0 {
            return near as f64 / len;
        }
        let k = UNSEEN_FROM.min(self.gaps.len());
        let carried = match self.gaps[k - 1] {
            0.0 => UNSEEN_AT_MOST,
            gap => k as f64 * margin / gap,
        };
        carried.min(UNSEEN_AT_MOST) / len
    }

    /// The share [`NearTies::share`] gives, with `slack` sampled pixels
    /// more counted near (fewer where negative), within 0 and 1: the
    /// shares a sample of few pixels may be off by.
    pub fn share_with(&self, margin: f64, slack: f64) -> f64 {
        let (near, len) = (self.gaps.partition_point(|&g| g <= margin) as f64, self.gaps.len() as f64);
        let shifted = ((near + slack) / len).clamp(0.0, 1.0);
        match slack {
            0.0 => self.share(margin),
            more if more > 0.0 => shifted.max(self.share(margin)),
            _ => shifted.min(self.share(margin)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;

    /// Unweighted votes of two classes under `kernel`.
    fn two_classes(kernel: &crate::kernel::Kernel) -> SmoothParams<'_> {
        SmoothParams {
            kernel,
            class_weights: &[1, 1],
            fill_nodata: false,
            ties: Default::default(),
            confidence: None,
        }
    }

    fn tile_of(classes: &[u16], side: usize, halo: usize, n: usize) -> ClassTile<'_> {
        ClassTile {
            width: side,
            height: side,
            halo,
            n_classes: n,
            classes,
        }
    }

    /// One class: every gap is a whole window's vote, nothing is near a
    /// tie (at most half a pixel counted, as where none is seen). Two
    /// classes in exact halves (columns alternating, a box kernel of odd
    /// side): the gap is one column's share of the votes, under a margin
    /// of two columns and over a margin of half of one.
    #[test]
    fn gaps_are_the_exact_score_differences() {
        let kernel = KernelSpec::Box { size: 5 }.build().unwrap();
        let params = two_classes(&kernel);
        let side = 64 + 4;
        let uniform = vec![0u16; side * side];
        let ties = NearTies::sample(&tile_of(&uniform, side, 2, 2), &params, None, usize::MAX).unwrap();
        assert!(ties.gaps.len() >= MIN_SAMPLES);
        let unseen = UNSEEN_AT_MOST / ties.gaps.len() as f64;
        assert_eq!(ties.share(0.99), unseen);
        assert!((ties.share(0.01) - 0.08 * unseen).abs() < 1e-15);
        assert_eq!(ties.share(1.0), 1.0);
        // With slack: none seen is at most 3 pixels more, and at least none.
        let len = ties.gaps.len() as f64;
        assert_eq!(ties.share_with(0.99, 0.0), ties.share(0.99));
        assert_eq!(ties.share_with(0.99, 3.0), 3.0 / len);
        assert_eq!(ties.share_with(0.99, -3.0), 0.0);
        assert_eq!(ties.share_with(1.0, 3.0), 1.0);
        assert_eq!(ties.share_with(1.0, -3.0), (len - 3.0) / len);
        let stripes: Vec<u16> = (0..side * side).map(|i| (i % side % 2) as u16).collect();
        let ties = NearTies::sample(&tile_of(&stripes, side, 2, 2), &params, None, usize::MAX).unwrap();
        // 3 columns against 2 of 5: a gap of 1/5 of the window.
        assert_eq!(ties.share(0.1), UNSEEN_AT_MOST / ties.gaps.len() as f64);
        assert_eq!(ties.share(0.4), 1.0);
        // Weighted against: class 1 weighs 3/2 of class 0, so 2 columns of
        // it (3) tie 3 columns of class 0 (3) where class 0 has three.
        let params = SmoothParams {
            class_weights: &[2, 3],
            ..params
        };
        let ties = NearTies::sample(&tile_of(&stripes, side, 2, 2), &params, None, usize::MAX).unwrap();
        assert!(ties.share(1e-9) > 0.3, "{ties:?}");
    }

    /// Pixels whose centre is nodata are not sampled unless filled, and
    /// weighted votes are not sampled at all.
    #[test]
    fn nodata_centres_and_weighted_votes_are_left_out() {
        let kernel = KernelSpec::Box { size: 3 }.build().unwrap();
        let params = SmoothParams {
            kernel: &kernel,
            class_weights: &[1],
            fill_nodata: false,
            ties: Default::default(),
            confidence: None,
        };
        let side = 34;
        let nodata = vec![1u16; side * side];
        assert_eq!(NearTies::sample(&tile_of(&nodata, side, 1, 1), &params, None, usize::MAX), None);
        let filled = SmoothParams {
            fill_nodata: true,
            ..params
        };
        assert!(NearTies::sample(&tile_of(&nodata, side, 1, 1), &filled, None, usize::MAX).is_some());
        let votes = vec![1u16; side * side];
        let weighted = SmoothParams {
            confidence: Some(&votes),
            ..params
        };
        let zeros = vec![0u16; side * side];
        assert_eq!(NearTies::sample(&tile_of(&zeros, side, 1, 1), &weighted, None, usize::MAX), None);
    }

    /// A kernel past 511 on a tile of known runs samples run by run: the
    /// same gaps as tap by tap (every window of rows striped by class
    /// holds 257 rows of one class and 256 of the other), for many more
    /// pixels on the same budget.
    #[test]
    fn wide_kernels_sample_run_by_run_with_the_same_gaps() {
        let kernel = KernelSpec::Box { size: 513 }.build().unwrap();
        let params = two_classes(&kernel);
        let side = 48 + 512;
        let rows: Vec<u16> = (0..side * side).map(|i| (i / side % 2) as u16).collect();
        let tile = tile_of(&rows, side, 256, 2);
        let by_taps = NearTies::sample(&tile, &params, None, usize::MAX).unwrap();
        let by_runs = NearTies::sample(&tile, &params, Some(1.0), usize::MAX).unwrap();
        assert!(by_runs.gaps.len() > 4 * by_taps.gaps.len(), "{}", by_taps.gaps.len());
        for ties in [&by_taps, &by_runs] {
            // None near: at most half of one counted; a tenth of the way
            // to the smallest gaps (all 1/513 here), a tenth of the four.
            let len = ties.gaps.len() as f64;
            assert_eq!(ties.share(0.99 / 513.0), 0.5 / len);
            assert!((ties.share(0.1 / 513.0) - 0.4 / len).abs() < 1e-12);
            assert!((ties.share(0.025 / 513.0) - 0.1 / len).abs() < 1e-12);
            assert_eq!(ties.share(1.01 / 513.0), 1.0);
        }
    }
}
