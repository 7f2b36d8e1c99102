//! Which classes can still be among an output's best two scores: lower and
//! upper bounds on every class's exact score per block of outputs, from the
//! class counts of blocks of input and an envelope of the kernel, so that
//! the host band scorer runs a class's passes only where it may matter.
//!
//! Why: a large kernel's window holds many classes that never come near
//! the top two. On a 4096² MODIS map at σ = 150 a strip of outputs meets
//! 13.5 classes on average and only 2.2 of them ever score within the
//! second best there; the passes cost the same per class and pixel
//! whatever its score, so the band scorer spent most of its time on
//! classes that could not win (issue 35: `--exact` at σ = 150 was 5.1× the
//! time of σ = 5).
//!
//! The bounds. With `q` the quantised kernel (sum `T`), `u` and `v` its
//! column and row marginals (`u(dx) = Σ_dy q/T`), and
//! `E = Σ |q/T − v⊗u|` how far it is from their product (quantisation
//! only, for a Gaussian), a class's exact score at output `p` is
//! `s(p) = Σ_d q(d)/T·1[class at p + d]`, within `E` of
//! `Σ_d v(dy)·u(dx)·1[…]`. For the outputs of a `b`×`b` block `I` and the
//! input pixels of a `b`×`b` block `J`, the offsets `d` lie in a box of
//! `2b − 1` per axis around `b·(J − I)`, so with `N_c(J)` the class's count
//! in `J` and the least and most of `u` and `v` over those offsets,
//! `Σ_J vmin·umin·N_c(J) − E ≤ s(p) ≤ Σ_J vmax·umax·N_c(J) + E` for every
//! `p` in `I`: two separable passes over a grid `b²` times smaller than the
//! tile. A class whose upper bound (plus twice the method's score error
//! and the tie tolerance) stays under the second-largest lower bound is
//! scored below two other classes by the method itself, so it changes
//! neither the winner, nor the runner-up, nor the centre rule, and the
//! scorer may leave it out: the output is the same, bit for bit.

use super::masks::MASK_CLASSES;
use crate::io::ON_POOL_MAX_TILE;
use crate::kernel::Kernel;
use crate::method::ranking::LANES;
use crate::method::{ClassTile, SmoothParams};
use rayon::prelude::*;

/// Kernels narrower than this are not pruned: their windows hold few
/// classes, and at σ = 12 on the MODIS map the bounds still left 75 % of
/// the classes' columns.
pub const MIN_SIZE: usize = 64;

/// The most the bounds may cost per output pixel and class, in
/// multiply-adds (both passes, lower and upper): about 5 % of what the
/// band scorer's two passes cost there. The block side is the smallest
/// multiple of [`LANES`] within it (16 at σ = 85 and 150, 8 at σ = 35).
const MAX_BOUND_OPS: f64 = 1.75;

/// Kernels further than this from the product of their marginals
/// (`E` above; a disc's is about 0.3) are not pruned: their bounds
/// would be too loose to leave a class out.
const MAX_SEPARABLE_ERROR: f64 = 0.05;

/// Absolute slack for the bounds' own float sums (a few thousand terms
/// of at most 1 each in f64, far below this).
const FLOAT_SLACK: f64 = 1e-9;

/// The first `classes` class weights relative to the heaviest, as the
/// scores and their bounds weigh votes.
pub(crate) fn relative_weights(params: &SmoothParams, classes: usize) -> Vec<f64> {
    let wmax = params.max_class_weight();
    params.class_weights[..classes]
        .iter()
        .map(|&w| w as f64 / wmax)
        .collect()
}

/// A kernel's envelope for [`ContenderKernel::masks`].
#[derive(Clone, Debug)]
pub struct ContenderKernel {
    /// Side of the blocks of outputs and of input.
    block: usize,
    /// Kernel radius (outputs' windows start at their own column and row
    /// of the tile's input, past any extra halo).
    radius: usize,
    /// Per block offset `D` (index `D`, from 0): the least and most of the
    /// column marginal `u` over `b·D − (b − 1) ..= b·D + (b − 1)`.
    cols: Envelope,
    /// The same of the row marginal `v`.
    rows: Envelope,
    /// `E`: `Σ |q/T − v⊗u|`.
    separable_error: f64,
    /// Twice the method's bound on a score's error.
    score_slack: f64,
}

/// Least and most of a marginal per block offset.
#[derive(Clone, Debug)]
struct Envelope {
    lo: Vec<f64>,
    hi: Vec<f64>,
}

impl Envelope {
    /// Of the marginal `w` (zero outside `0..w.len()`) for blocks of `b`.
    fn new(w: &[f64], b: usize) -> Envelope {
        let n = w.len() as isize;
        let offsets = (w.len() + b - 2) / b + 1;
        let (mut lo, mut hi) = (Vec::with_capacity(offsets), Vec::with_capacity(offsets));
        for d in 0..offsets as isize {
            let (first, last) = (
                d * b as isize - (b as isize - 1),
                d * b as isize + (b as isize - 1),
            );
            let at = |i: isize| {
                if (0..n).contains(&i) {
                    w[i as usize]
                } else {
                    0.0
                }
            };
            let values = (first..=last).map(at);
            lo.push(values.clone().fold(f64::INFINITY, f64::min));
            hi.push(values.fold(0.0, f64::max));
        }
        Envelope { lo, hi }
    }
}

impl ContenderKernel {
    /// The envelope of `kernel` for a method whose scores are each within
    /// `score_error` of the exact ones (`Bounds::total`); `None` where
    /// pruning cannot pay (a small or far from separable kernel).
    pub fn new(kernel: &Kernel, score_error: f64) -> Option<ContenderKernel> {
        let n = kernel.size();
        if n < MIN_SIZE || !score_error.is_finite() {
            return None;
        }
        let q = kernel.quantised();
        let total: f64 = q.iter().map(|&w| w as f64).sum();
        let (mut u, mut v) = (vec![0.0; n], vec![0.0; n]);
        for (dy, row) in q.chunks_exact(n).enumerate() {
            for (dx, &w) in row.iter().enumerate() {
                let w = w as f64 / total;
                u[dx] += w;
                v[dy] += w;
            }
        }
        let separable_error: f64 = q
            .chunks_exact(n)
            .zip(&v)
            .map(|(row, &vy)| {
                row.iter()
                    .zip(&u)
                    .map(|(&w, &ux)| (w as f64 / total - vy * ux).abs())
                    .sum::<f64>()
            })
            .sum();
        if separable_error > MAX_SEPARABLE_ERROR {
            return None;
        }
        let ops = |b: usize| 4.0 * ((n / b) as f64 + 2.0) / (b * b) as f64;
        let block = (1..)
            .map(|k| k * LANES)
            .find(|&b| ops(b) <= MAX_BOUND_OPS)
            .expect("the cost falls with the block");
        Some(ContenderKernel {
            block,
            radius: n / 2,
            cols: Envelope::new(&u, block),
            rows: Envelope::new(&v, block),
            // The separable error is a tenth of a per cent of a score or
            // less; a rounding of its own sum is far below the slack.
            separable_error: separable_error * (1.0 + 1e-9),
            score_slack: 2.0 * score_error,
        })
    }

    /// The side of the blocks of outputs the masks are per.
    pub fn block(&self) -> usize {
        self.block
    }

    /// The mean share of `tile`'s classes the masks keep per block (no tie
    /// tolerance: a cost estimate for `auto`); `None` where no masks are
    /// built ([`ContenderKernel::masks`]).
    pub fn kept_share(&self, tile: &ClassTile, params: &SmoothParams, skip: usize) -> Option<f64> {
        let weights = relative_weights(params, tile.n_classes);
        Some(self.masks(tile, skip, &weights, 0.0)?.kept_share())
    }

    /// Per block of `tile`'s outputs, the classes that may be among the
    /// best two scores there; `weights`: the classes' weights (relative to
    /// the heaviest, as the scores are); `tau`: the tie tolerance; `skip`:
    /// tile rows and columns before the kernel's reach. `None` where the
    /// tile has more classes than the masks tell apart, or fewer than
    /// three (two always contend).
    pub fn masks(
        &self,
        tile: &ClassTile,
        skip: usize,
        weights: &[f64],
        tau: f64,
    ) -> Option<ContenderMasks> {
        let n = tile.n_classes;
        if !(3..=MASK_CLASSES).contains(&n) {
            return None;
        }
        let bounds = self.bounds(tile, skip, weights);
        let (b, ow, oh) = (self.block, tile.output_width(), tile.output_height());
        let (ix, iy) = (ow.div_ceil(b), oh.div_ceil(b));
        let slack = self.score_slack + tau + FLOAT_SLACK;
        let masks = (0..ix * iy)
            .into_par_iter()
            .with_min_len(self.grain(tile))
            .map(|i| {
                let (mut first, mut second) = (0.0f64, 0.0f64);
                for (_, lo, _) in &bounds {
                    let lo = lo[i];
                    if lo > first {
                        (first, second) = (lo, first);
                    } else if lo > second {
                        second = lo;
                    }
                }
                let mut mask = u64::MAX;
                for (c, _, hi) in &bounds {
                    if hi[i] + slack < second {
                        mask &= !(1u64 << c);
                    }
                }
                mask
            })
            .collect();
        Some(ContenderMasks {
            block: b,
            columns: ix,
            masks,
            present: bounds.iter().fold(0, |m, (c, _, _)| m | 1u64 << c),
        })
    }

    /// The least items of a parallel loop over `tile` per thread: none
    /// apart past [`ON_POOL_MAX_TILE`] a side (where the engine runs the
    /// tile alone, or on few threads among few), else all on this thread. The other
    /// threads hold tiles of their own there, and a thread waiting for
    /// its part of the bounds took up another tile meanwhile: on 16
    /// threads dct5 `--exact` at σ = 20–85 ran 6–38 % slower than without
    /// the contenders, and 10–29 % faster with the bounds on one thread.
    fn grain(&self, tile: &ClassTile) -> usize {
        match tile.output_width().max(tile.output_height()) > ON_POOL_MAX_TILE {
            true => 1,
            false => usize::MAX,
        }
    }

    /// Per class present in the tile, its lower and upper bounds per
    /// block of outputs (row-major, weighted).
    fn bounds(
        &self,
        tile: &ClassTile,
        skip: usize,
        weights: &[f64],
    ) -> Vec<(usize, Vec<f64>, Vec<f64>)> {
        let (b, r, n) = (self.block, self.radius, tile.n_classes);
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let (span_w, span_h) = (ow + 2 * r, oh + 2 * r);
        let (jx, jy) = (span_w.div_ceil(b), span_h.div_ceil(b));
        let (ix, iy) = (ow.div_ceil(b), oh.div_ceil(b));
        // Counts per block row, class and block column, a block row at a
        // time in parallel.
        let mut counts = vec![0u32; jy * n * jx];
        counts
            .par_chunks_mut(n * jx)
            .with_min_len(self.grain(tile))
            .enumerate()
            .for_each(|(by, counts)| {
                // Written before the first `+=` reads them (see `correlate`).
                counts.fill(0);
                for i in by * b..span_h.min((by + 1) * b) {
                    let line = &tile.classes[(skip + i) * tile.width + skip..][..span_w];
                    for (bx, block) in line.chunks(b).enumerate() {
                        for &v in block {
                            if (v as usize) < n {
                                counts[v as usize * jx + bx] += 1;
                            }
                        }
                    }
                }
            });
        let present: Vec<usize> = (0..n)
            .filter(|&c| (0..jy).any(|by| counts[(by * n + c) * jx..][..jx].iter().any(|&k| k > 0)))
            .collect();
        let e = self.separable_error;
        present
            .into_par_iter()
            .with_min_len(self.grain(tile))
            .map(|c| {
                // Along the rows (per input block row), then down the
                // columns: one multiply-add per block offset and element.
                let class_counts: Vec<f64> = (0..jy)
                    .flat_map(|by| counts[(by * n + c) * jx..][..jx].iter().map(|&k| k as f64))
                    .collect();
                let pass = |cols: &[f64], down: &[f64]| {
                    let mut along = Vec::with_capacity(jy * ix);
                    for row in class_counts.chunks_exact(jx) {
                        correlate(cols, row, 1, ix, &mut along);
                    }
                    let mut out = Vec::with_capacity(iy * ix);
                    correlate(down, &along, ix, iy, &mut out);
                    out
                };
                let w = weights[c];
                let lo = pass(&self.cols.lo, &self.rows.lo)
                    .into_iter()
                    .map(|s| w * (s - e).max(0.0))
                    .collect();
                let hi = pass(&self.cols.hi, &self.rows.hi)
                    .into_iter()
                    .map(|s| w * (s + e))
                    .collect();
                (c, lo, hi)
            })
            .collect()
    }
}

/// Appends `outs` elements of `width` values to `out`, element `i` being
/// `Σ_d env[d]·src[i + d]` (`src` holds whole elements; past its end
/// counts as 0): per offset one multiply-add over contiguous values, which
/// vectorises. The first offset's products are appended, the others added
/// (the same sums as from zeros): a zeroed buffer's pages, first read by a
/// `+=`, map the kernel's zero page and are then copied on the write, each
/// copy flushing the other threads' TLBs (4 % of a 2-core run of dct5
/// `--exact` at σ = 150, `perf`).
fn correlate(env: &[f64], src: &[f64], width: usize, outs: usize, out: &mut Vec<f64>) {
    let (start, ins) = (out.len(), src.len() / width);
    let first = env.first().copied().unwrap_or(0.0);
    let m = outs.min(ins) * width;
    out.extend(src[..m].iter().map(|&v| 0.0 + first * v));
    out.resize(start + outs * width, 0.0);
    let out = &mut out[start..];
    for (d, &w) in env.iter().enumerate().take(ins).skip(1) {
        let m = outs.min(ins - d) * width;
        for (o, &v) in out[..m].iter_mut().zip(&src[d * width..][..m]) {
            *o += w * v;
        }
    }
}

/// Per block of a tile's outputs, the classes that may be among its best
/// two (bit `c` for class `c`; every class past the first 64 and every
/// class absent from the tile keeps its bit).
#[derive(Clone, Debug)]
pub struct ContenderMasks {
    block: usize,
    columns: usize,
    masks: Vec<u64>,
    /// The classes the tile holds (bit `c` for class `c`).
    present: u64,
}

impl ContenderMasks {
    /// The masks of the blocks of output row `y`, one per `block()` columns.
    pub fn row(&self, y: usize) -> &[u64] {
        &self.masks[y / self.block * self.columns..][..self.columns]
    }

    pub fn block(&self) -> usize {
        self.block
    }

    /// The mean share of the tile's classes a block keeps.
    fn kept_share(&self) -> f64 {
        let held = self.present.count_ones() as usize * self.masks.len();
        let kept: u64 = self
            .masks
            .iter()
            .map(|m| (m & self.present).count_ones() as u64)
            .sum();
        match held {
            0 => 1.0,
            _ => kept as f64 / held as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::dct5::CERTIFIED_TERMS;
    use crate::method::dct5::band::{Target, rank_tile};
    use crate::method::ranking::Ranking;
    use crate::method::separable::{Filter, HOST_UNIT_ROUNDOFF, dct5_plan_certified};
    use crate::method::{ClassTile, SmoothParams};

    /// `correlate` appends the plain definition's sums, bit for bit (from
    /// zeros, each offset added in turn), for elements of one and of
    /// several values, a source shorter than the outputs and no offsets.
    #[test]
    fn correlate_appends_the_plain_sums() {
        let plain = |env: &[f64], src: &[f64], width: usize, outs: usize| {
            let ins = src.len() / width;
            (0..outs * width)
                .map(|k| {
                    let (i, j) = (k / width, k % width);
                    let mut sum = 0.0;
                    for (d, &w) in env.iter().enumerate() {
                        if i + d < ins {
                            sum += w * src[(i + d) * width + j];
                        }
                    }
                    sum
                })
                .collect::<Vec<f64>>()
        };
        let src: Vec<f64> = (0..36).map(|i| ((i * 7) % 11) as f64).collect();
        let env = [0.1, 0.7, 0.3, 1e-3];
        for (env, width, outs) in [
            (&env[..], 1, 30),
            (&env[..], 3, 10),
            (&env[..], 1, 40),
            (&env[..], 4, 12),
            (&[][..], 2, 5),
        ] {
            let mut out = vec![-1.0];
            correlate(env, &src, width, outs, &mut out);
            let want = plain(env, &src, width, outs);
            assert_eq!(out[0], -1.0);
            assert_eq!(out.len(), 1 + want.len());
            for (got, want) in out[1..].iter().zip(&want) {
                assert_eq!(got.to_bits(), want.to_bits());
            }
        }
    }

    /// A tile of `n` classes in patches of many sizes (so that a σ = 11
    /// window holds several, few of them close to the top), with a nodata
    /// patch (index `n`), `ow`×`oh` outputs around a halo of `halo`.
    struct Patches {
        width: usize,
        height: usize,
        halo: usize,
        n: usize,
        classes: Vec<u16>,
    }

    impl Patches {
        fn new(n: usize, halo: usize, (ow, oh): (usize, usize)) -> Self {
            let (w, h) = (ow + 2 * halo, oh + 2 * halo);
            let classes = (0..w * h)
                .map(|i| {
                    let (x, y) = (i % w, i / w);
                    if (40..52).contains(&x) && (30..41).contains(&y) {
                        n as u16
                    } else if (x * 7 + y * 13) % 97 < 3 {
                        (n - 1) as u16
                    } else {
                        ((x / 23 + 2 * (y / 17) + x * y / 1500) % (n - 1)) as u16
                    }
                })
                .collect();
            Patches {
                width: w,
                height: h,
                halo,
                n,
                classes,
            }
        }

        fn tile(&self) -> ClassTile<'_> {
            ClassTile {
                width: self.width,
                height: self.height,
                halo: self.halo,
                n_classes: self.n,
                classes: &self.classes,
            }
        }
    }

    fn gaussian(sigma: f64) -> Kernel {
        KernelSpec::Gaussian { sigma, size: None }.build().unwrap()
    }

    /// Every class's exact score (integer sums over the quantised kernel,
    /// weighted as the scorer weighs them) lies within its block's bounds,
    /// and no block's mask leaves out a class among the exact best two.
    #[test]
    fn bounds_hold_every_exact_score() {
        let kernel = gaussian(11.0);
        let (n, halo, (ow, oh)) = (7, kernel.radius(), (40, 36));
        let patches = Patches::new(n, halo, (ow, oh));
        let (w, classes, tile) = (patches.width, &patches.classes, patches.tile());
        let weights = [1.0, 0.5, 1.0, 0.75, 1.0, 0.25, 1.0];
        let prune = ContenderKernel::new(&kernel, 0.0).expect("σ = 11 is pruned");
        let bounds = prune.bounds(&tile, 0, &weights);
        let masks = prune.masks(&tile, 0, &weights, 0.0).unwrap();
        let (q, k) = (kernel.quantised(), kernel.size());
        let total: u64 = q.iter().map(|&v| v as u64).sum();
        let b = prune.block();
        let mut pruned = 0;
        for y in 0..oh {
            for x in 0..ow {
                let mut sums = vec![0u64; n + 1];
                for dy in 0..k {
                    for dx in 0..k {
                        sums[classes[(y + dy) * w + x + dx] as usize] += q[dy * k + dx] as u64;
                    }
                }
                let scores: Vec<f64> = (0..n)
                    .map(|c| weights[c] * sums[c] as f64 / total as f64)
                    .collect();
                let block = y / b * ow.div_ceil(b) + x / b;
                for (c, lo, hi) in &bounds {
                    let s = scores[*c];
                    assert!(
                        lo[block] <= s && s <= hi[block],
                        "({x}, {y}) class {c}: {s}"
                    );
                }
                let mut order: Vec<usize> = (0..n).collect();
                order.sort_by(|&a, &c| scores[c].total_cmp(&scores[a]));
                let mask = masks.row(y)[x / b];
                for &c in &order[..2] {
                    assert!(
                        mask >> c & 1 == 1,
                        "({x}, {y}): class {c} among the best two"
                    );
                }
                pruned += (0..n)
                    .filter(|&c| sums[c] > 0 && mask >> c & 1 == 0)
                    .count();
            }
        }
        assert!(pruned > ow * oh / 10, "only {pruned} classes left out");
        // The share kept: of the classes present, per block, on average.
        let rows = (0..oh).step_by(b).map(|y| masks.row(y));
        let kept: usize = rows
            .flatten()
            .map(|m| (0..n).filter(|&c| m >> c & 1 == 1).count())
            .sum();
        let blocks = ow.div_ceil(b) * oh.div_ceil(b);
        let share = kept as f64 / (n * blocks) as f64;
        assert_eq!(masks.kept_share(), share);
        assert!(share < 1.0, "{share}");
    }

    /// The band scorer with the masks gives the bits it gives without
    /// them: every ranking slot, decision and uncertain pixel, with uneven
    /// class weights, nodata and a certified margin.
    #[test]
    fn pruned_bands_match_unpruned() {
        let kernel = gaussian(11.0);
        let plan = dct5_plan_certified(&kernel, CERTIFIED_TERMS).unwrap();
        let Filter::Dct5(f) = &plan.terms[0].row else {
            unreachable!("a dct5 plan")
        };
        let bounds = plan.bounds(&kernel, HOST_UNIT_ROUNDOFF);
        let prune = ContenderKernel::new(&kernel, bounds.total()).unwrap();
        let (n, halo, (ow, oh)) = (7, kernel.radius(), (90, 70));
        let patches = Patches::new(n, halo, (ow, oh));
        let tile = patches.tile();
        let weights = [3, 1, 2, 2, 1, 4, 2];
        let tau = bounds.tie_tolerance(HOST_UNIT_ROUNDOFF);
        let relative: Vec<f64> = weights.iter().map(|&w| w as f64 / 4.0).collect();
        let masks = prune.masks(&tile, 0, &relative, tau).unwrap();
        assert!(
            masks.masks.iter().any(|&m| m & 0x7f != 0x7f),
            "nothing pruned"
        );
        for fill_nodata in [false, true] {
            let params = SmoothParams {
                kernel: &kernel,
                class_weights: &weights,
                fill_nodata,
                ties: Default::default(),
                confidence: None,
            };
            let run = |prune: Option<&ContenderKernel>, margin: Option<f64>| {
                let mut ranking = Ranking::default();
                ranking.reset(ow, oh, tau, |x, y| tile.centre(x, y));
                rank_tile(
                    f,
                    &tile,
                    &params,
                    (0, tau),
                    prune,
                    Target::Ranking(&mut ranking),
                );
                let mut out = vec![0; ow * oh];
                let target = Target::Decisions {
                    out: &mut out,
                    fill_nodata,
                    margin,
                };
                let mut uncertain = rank_tile(f, &tile, &params, (0, tau), prune, target);
                uncertain.sort();
                let slots: Vec<(u64, u64)> = (0..oh)
                    .flat_map(|y| (0..ow).map(move |x| (x, y)))
                    .map(|(x, y)| {
                        let (a, b) = ranking.best_two(x, y);
                        (a.to_bits(), b.to_bits())
                    })
                    .collect();
                (slots, out, uncertain)
            };
            for margin in [None, Some(bounds.certify_margin()), Some(0.05)] {
                let (slots, out, uncertain) = run(None, margin);
                let pruned = run(Some(&prune), margin);
                assert!(slots == pruned.0, "slots, fill {fill_nodata}");
                assert_eq!(out, pruned.1, "decisions, fill {fill_nodata}, {margin:?}");
                assert_eq!(
                    uncertain, pruned.2,
                    "uncertain, fill {fill_nodata}, {margin:?}"
                );
            }
        }
    }
}
