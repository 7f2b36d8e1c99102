//! The fft method: the exact scores of any kernel, up to
//! [`MAX_SIZE`](crate::kernel::MAX_SIZE), at a cost that does not grow
//! with the kernel's area (docs/semantics.md#large-kernels).
//!
//! Each class's score plane is the correlation of the class's indicator
//! with the *quantised* kernel, so it is computed as a product of spectra:
//! two classes at a time (one as the real, one as the imaginary part of a
//! complex plane; the kernel is real, so the two never mix), through
//! f64 FFTs of the tile with its halo ([`transform`]). The exact scores are
//! integers below 2³¹; [`transform::error_per_norm`] bounds the error of
//! every computed one, `β = bound·‖indicators‖₂`. Where `β < ½` the
//! rounded value *is* the exact integer score (box and disc kernels, whose
//! weights sum to N²), and the winner is [`pick_winner`]'s on them, as
//! naive's. Otherwise (Gaussians, whose weights sum to 2³¹: β is a few
//! units, 10⁻⁹ of a score) a pixel whose best class clears every other by
//! the margin is certain, and the others (near-exact ties, a few per
//! million pixels) are recomputed by naive's [`ExactPixels`]. Either way
//! the bytes are naive's.
//!
//! Cost per tile: two 2-D FFTs of the `(T + N − 1)²` plane per pair of
//! classes present, O(P² log P), whatever N; the tile side grows with the
//! kernel ([`FftHost::preferred_tile`]) so that the halo stays a fraction
//! of the plane. On the host only; votes weighed by `--confidence` (sums
//! up to 2⁴⁷, beyond what the rounding certifies) are summed by naive.

use super::cost::{Candidate, CostShape, DeviceCosts, TileExtent};
use super::family::{Accepts, Family, FastOptions, Settings};
use super::naive::{Bins, ExactPixels};
use super::naive::cl::Variant;
use super::{ClassSmoother, ClassTile, SmoothParams, pick_winner};
use crate::bail;
use crate::classes::NO_CLASS;
use crate::device::Member;
use crate::error::{Result, Setting};
use crate::kernel::Kernel;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use transform::{Buffers, C64, Convolution, Grid, error_per_norm, fast_len};

mod transform;

/// The descriptor of `--method fft`.
pub struct FftFamily;

/// This folder's methods in [`crate::method::registry`] (build.rs finds
/// this line).
pub const FAMILIES: &[&dyn Family] = &[&FftFamily];

/// Kernels from this side on (past the per-tap limit) are `auto`'s to run
/// through fft: up to it the other candidates take them, on the tiles
/// `auto` has always used (fft's would be ten times wider).
pub const AUTO_FROM_SIZE: usize = crate::kernel::PER_TAP_MAX_SIZE + 2;

impl Family for FftFamily {
    fn name(&self) -> &'static str {
        "fft"
    }

    fn help(&self) -> &'static str {
        "exact, any kernel size, host"
    }

    fn accepts(&self) -> Accepts {
        Accepts::default()
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn list_position(&self) -> u8 {
        40
    }

    fn build(
        &self,
        _settings: &Settings,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        if member.is_some() {
            bail!(
                usage,
                "fft runs on the host only",
                hint = format!(
                    "use {} with {}",
                    Setting::Device.is("host"),
                    Setting::Method.is("fft")
                )
            );
        }
        Ok(Box::new(FftHost::new(kernel)))
    }

    fn candidate(
        &self,
        member: &Member,
        _variant: Option<Variant>,
        kernel: &Kernel,
        _fast: &FastOptions,
    ) -> Result<Option<Candidate>> {
        if member.is_some() || kernel.size() < AUTO_FROM_SIZE {
            return Ok(None);
        }
        Ok(Some(Candidate {
            smoother: Box::new(FftHost::new(kernel)),
            shape: Box::new(FftCost {
                size: kernel.size(),
            }),
            bounds: None,
            certified: false,
        }))
    }
}

/// fft's cost per output pixel: per class, two transforms of the plane
/// (the tile with its halo, `(T + N − 1)²`) of `log₂` of its size stages
/// each, spread over the tile's pixels, plus the ranking.
pub struct FftCost {
    pub size: usize,
}

/// Cost of one complex value through one FFT stage, in histogram updates
/// (0.28 ns on the host: about 1 ns a value and stage, pairs of classes
/// sharing a plane).
const STAGE_COST: f64 = 2.0;

impl FftCost {
    fn plane(&self, tile: &TileExtent) -> (usize, usize) {
        (
            fast_len(tile.width + self.size - 1),
            fast_len(tile.height + self.size - 1),
        )
    }
}

impl CostShape for FftCost {
    fn cost(&self, tile: &TileExtent, costs: &DeviceCosts) -> f64 {
        let (w, h) = self.plane(tile);
        let share = (w * h) as f64 / (tile.width * tile.height).max(1) as f64;
        let stages = ((w * h) as f64).log2() + 4.0;
        let classes = tile.classes.max(1) as f64;
        classes * (share * stages * STAGE_COST + costs.rank)
    }

    fn explain(&self, tile: &TileExtent) -> String {
        let (w, h) = self.plane(tile);
        format!(
            "{} classes × 2 FFTs of a {w}x{h} plane (the tile and its halo), halved by pairing classes",
            tile.classes
        )
    }
}

/// The side of the plane a default tile and its halo fill (2¹¹·3): at
/// N = 901 a 5244² tile (a 4096² map is one tile, its plane 5184²), at
/// N = 1537 a 4608² one. Memory: a complex plane of 16 bytes a value
/// (0.6 GB at 6144²), the kernel's spectrum (8 bytes a value; twice that
/// while it is computed) and 4 bytes per output pixel and class present.
pub const PLANE: usize = 6144;

/// The plane past N = 1537 (2⁵·3⁵): at N = 3001 a 4776² tile (a 4096² map
/// is one tile, its plane 7776²: 0.6 times the work of four tiles in
/// 6144² planes, 2.6 GB in all with 17 classes).
pub const WIDE_PLANE: usize = 7776;

/// fft on the host for one kernel.
pub struct FftHost {
    kernel: Kernel,
    /// The kernel's weight sum and ℓ2 norm (integer units).
    q_sum: f64,
    q_l2: f64,
    /// The scaled kernel spectrum of the last plane size (edge tiles have
    /// others), with its plans.
    spectra: Mutex<Option<Arc<Spectrum>>>,
    pixels: AtomicU64,
    recomputed: AtomicU64,
}

impl std::fmt::Debug for FftHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FftHost({}x{0})", self.kernel.size())
    }
}

/// A plane size's plans and the kernel's spectrum divided by the plane's
/// size (so the inverse needs no scaling).
struct Spectrum {
    grid: Grid,
    values: Values,
}

/// A kernel spectrum: real where the kernel is point-symmetric (its
/// weight at `(dx, dy)` that at `(−dx, −dy)`: Gaussians, boxes, discs),
/// which halves what each convolution reads; else complex.
enum Values {
    Real(Vec<f64>),
    Complex(Vec<C64>),
}

impl FftHost {
    pub fn new(kernel: &Kernel) -> Self {
        let q = kernel.quantised();
        FftHost {
            kernel: kernel.clone(),
            q_sum: q.iter().map(|&v| v as f64).sum(),
            q_l2: q.iter().map(|&v| v as f64 * v as f64).sum::<f64>().sqrt(),
            spectra: Mutex::new(None),
            pixels: AtomicU64::new(0),
            recomputed: AtomicU64::new(0),
        }
    }

    /// The tile side for a kernel of side `n`: the plane (tile and halo)
    /// [`PLANE`] wide, [`WIDE_PLANE`] past N = 1537, so that the halo is
    /// at most about half the plane's side.
    pub fn preferred_tile(n: usize) -> usize {
        let plane = if n <= 1537 { PLANE } else { WIDE_PLANE };
        (plane - (n - 1)).max(crate::io::DEFAULT_TILE)
    }

    /// The spectrum for a `w`×`h` plane, computed once per size.
    fn spectrum(&self, w: usize, h: usize) -> Arc<Spectrum> {
        let cached = |slot: &Option<Arc<Spectrum>>| {
            slot.as_ref()
                .filter(|s| s.grid.w == w && s.grid.h == h)
                .cloned()
        };
        // Not computed under the lock: the transforms run on the pool, whose
        // threads may take another tile's smooth and wait on the lock.
        if let Some(s) = cached(&self.spectra.lock().unwrap_or_else(|e| e.into_inner())) {
            return s;
        }
        let grid = Grid::new(w, h);
        // Correlation as a convolution: weight (dx, dy) of the centred
        // kernel at plane index (−dx, −dy) mod the plane.
        let n = self.kernel.size();
        let r = n / 2;
        let mut plane = vec![C64::default(); w * h];
        for (i, &q) in self.kernel.quantised().iter().enumerate() {
            let (dy, dx) = (i / n, i % n);
            let y = (h + r - dy) % h;
            let x = (w + r - dx) % w;
            plane[y * w + x].re = q as f64;
        }
        let mut values = vec![C64::default(); w * h];
        grid.forward(&mut plane, &mut values);
        let scale = 1.0 / (w * h) as f64;
        values.par_iter_mut().for_each(|v| *v *= scale);
        let q = self.kernel.quantised();
        // The exact spectrum of a point-symmetric kernel is real: the
        // imaginary parts computed are rounding errors, dropped.
        let values = if q.iter().eq(q.iter().rev()) {
            Values::Real(values.par_iter().map(|v| v.re).collect())
        } else {
            Values::Complex(values)
        };
        let s = Arc::new(Spectrum { grid, values });
        *self.spectra.lock().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
        s
    }
}

/// The rounded scores of one tile: a plane of the output's size per
/// value present (classes, and nodata where it is needed), and the integer
/// margin around each (0: exact).
struct Scores {
    /// Per local class (and nodata, last): its plane, or `None` (absent:
    /// score 0).
    slot: Vec<Option<usize>>,
    planes: Vec<u32>,
    margin: Vec<u32>,
    len: usize,
}

impl Scores {
    #[inline]
    fn get(&self, c: usize, i: usize) -> (u32, u32) {
        match self.slot[c] {
            Some(s) => (self.planes[s * self.len + i], self.margin[c]),
            None => (0, 0),
        }
    }
}

/// The memory a tile's scores take (a `u32` plane per class of the
/// output, and the complex plane of the region its windows cover), refused
/// past what the machine has `available` rather than allocated.
fn check_memory(tile: &ClassTile, n: usize, available: u64) -> Result<()> {
    let (ow, oh) = (tile.output_width() as u64, tile.output_height() as u64);
    let region = (ow + n as u64 - 1) * (oh + n as u64 - 1);
    let need = (tile.n_classes as u64 + 2) * ow * oh * 4 + region * 16;
    if need > available {
        bail!(
            resource,
            format!(
                "fft needs {} for a {ow}x{oh} tile of {} classes, over the {} available",
                crate::limits::gib(need.into()),
                tile.n_classes,
                crate::limits::gib(available.into())
            ),
            hint = format!(
                "give a smaller {} (the memory grows with it and with the classes)",
                Setting::Tile
            )
        );
    }
    Ok(())
}

impl FftHost {
    /// Every present class's scores over the tile's output, rounded. The
    /// class with the most pixels is not transformed: every window's
    /// weights sum to the kernel's, so its score is that sum less the
    /// others' (nodata's included, transformed where present).
    fn scores(&self, tile: &ClassTile, params: &SmoothParams) -> Scores {
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let n = params.kernel.size();
        let r = n / 2;
        let skip = tile.halo - r;
        // The region the output's windows cover.
        let (lw, lh) = (ow + n - 1, oh + n - 1);
        let counts = region_counts(tile, skip, lw, lh);
        let nodata = tile.n_classes;
        let present: Vec<usize> = (0..nodata).filter(|&c| counts[c] > 0).collect();
        let derived = present.iter().copied().max_by_key(|&c| counts[c]);
        // Transformed in pairs, in this order; the derived class last.
        let mut order: Vec<usize> = present.iter().copied().filter(|&c| Some(c) != derived).collect();
        if counts[nodata] > 0 && derived.is_some() {
            order.push(nodata);
        }
        let transformed = order.len();
        order.extend(derived);
        let mut slot = vec![None; nodata + 1];
        for (s, &c) in order.iter().enumerate() {
            slot[c] = Some(s);
        }
        let len = ow * oh;
        let mut planes = vec![0u32; order.len() * len];
        let mut margin = vec![0u32; nodata + 1];
        let mut total = vec![0u32; len];
        if transformed > 0 {
            let (pw, ph) = (fast_len(lw), fast_len(lh));
            let spectrum = self.spectrum(pw, ph);
            let per_norm = error_per_norm(pw, ph, self.q_sum, self.q_l2);
            let mut bufs = Buffers::new(&spectrum.grid);
            let (done, _) = planes.split_at_mut(transformed * len);
            for (pair, out) in order[..transformed].chunks(2).zip(done.chunks_mut(2 * len)) {
                let norm = pair.iter().map(|&c| counts[c]).sum::<u64>() as f64;
                let beta = per_norm * norm.sqrt();
                let m = if beta < 0.5 {
                    0
                } else {
                    (beta + 0.5).ceil().min(u32::MAX as f64) as u32
                };
                pair.iter().for_each(|&c| margin[c] = m);
                let (a, b) = (pair[0] as u16, pair.get(1).map_or(u16::MAX, |&b| b as u16));
                let input = |y: usize, row: &mut [C64]| {
                    let line = &tile.classes[(skip + y) * tile.width + skip..][..lw];
                    for (v, &c) in row.iter_mut().zip(line) {
                        *v = C64::new((c == a) as u8 as f64, (c == b) as u8 as f64);
                    }
                    row[lw..].fill(C64::default());
                };
                let out = out.split_at_mut(len);
                let grid = &spectrum.grid;
                match &spectrum.values {
                    Values::Real(k) => grid.convolve(
                        &Convolution { input, rows_in: lh, kernel: k, r, ow, q_sum: self.q_sum },
                        &mut bufs,
                        out,
                        &mut total,
                    ),
                    Values::Complex(k) => grid.convolve(
                        &Convolution { input, rows_in: lh, kernel: k, r, ow, q_sum: self.q_sum },
                        &mut bufs,
                        out,
                        &mut total,
                    ),
                }
            }
        }
        if let Some(d) = derived {
            // Each transformed value is within its margin of the exact one.
            margin[d] = order[..transformed].iter().map(|&c| margin[c]).fold(0, u32::saturating_add);
            let q = self.q_sum as u32;
            planes[transformed * len..]
                .par_iter_mut()
                .zip(&total)
                .for_each(|(v, t)| *v = q.saturating_sub(*t));
        }
        Scores {
            slot,
            planes,
            margin,
            len,
        }
    }
}

/// Pixels of each value (classes, then nodata) in the `lw`×`lh` region
/// from `(skip, skip)`.
fn region_counts(tile: &ClassTile, skip: usize, lw: usize, lh: usize) -> Vec<u64> {
    (0..lh)
        .into_par_iter()
        .fold(
            || vec![0u64; tile.n_classes + 1],
            |mut counts, y| {
                let line = &tile.classes[(skip + y) * tile.width + skip..][..lw];
                for &c in line {
                    counts[c as usize] += 1;
                }
                counts
            },
        )
        .reduce(
            || vec![0u64; tile.n_classes + 1],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        )
}

impl ClassSmoother for FftHost {
    fn name(&self) -> String {
        "fft/host".into()
    }

    fn host_parallel(&self) -> bool {
        true
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn weighs_votes(&self) -> bool {
        true
    }

    fn preferred_tile(&self) -> Option<usize> {
        Some(Self::preferred_tile(self.kernel.size()))
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        let (ow, oh) = (tile.output_width(), tile.output_height());
        if ow == 0 || oh == 0 {
            return Ok(());
        }
        if params.kernel != &self.kernel {
            bail!(internal, "fft was built for another kernel");
        }
        if params.confidence.is_some() {
            // Weighted sums reach 2⁴⁷: past what the rounding certifies.
            return super::naive::NaiveHost.smooth(tile, params, out);
        }
        check_memory(tile, params.kernel.size(), crate::limits::available_memory())?;
        let scores = self.scores(tile, params);
        let exact = ExactPixels::new(tile, params);
        let nodata = tile.nodata();
        let weights = &params.class_weights[..tile.n_classes];
        let equal = weights.first().is_some_and(|&w| w > 0 && weights.iter().all(|&v| v == w));
        let recomputed: u64 = out
            .par_chunks_mut(ow)
            .enumerate()
            .map(|(y, row)| {
                let mut acc = vec![0u32; tile.n_classes + 1];
                let mut bins = Bins::new(tile.n_classes);
                let mut redone = 0;
                for (x, v) in row.iter_mut().enumerate() {
                    let centre = tile.centre(x, y);
                    if centre == nodata && !params.fill_nodata {
                        *v = NO_CLASS;
                        continue;
                    }
                    *v = match decide(&scores, params, (centre, y * ow + x), equal, &mut acc) {
                        Some(c) => c,
                        None => {
                            redone += 1;
                            exact.at(tile, params, x, y, &mut bins)
                        }
                    };
                }
                redone
            })
            .sum();
        self.recomputed.fetch_add(recomputed, Ordering::Relaxed);
        self.pixels.fetch_add((ow * oh) as u64, Ordering::Relaxed);
        Ok(())
    }

    fn recompute_counts(&self) -> Option<(u64, u64)> {
        Some((
            self.recomputed.load(Ordering::Relaxed),
            self.pixels.load(Ordering::Relaxed),
        ))
    }

    fn summary(&self) -> Option<String> {
        let (r, p) = self.recompute_counts()?;
        Some(format!(
            "fft: {} of {p} pixels from rounded FFT scores, {r} near-ties recomputed exactly ({:.4} %)",
            p - r,
            100.0 * r as f64 / p.max(1) as f64
        ))
    }
}

/// The winner of output pixel `i` from the rounded scores, or `None` where
/// they cannot decide it. With every margin 0 the scores are the exact
/// integers, and [`pick_winner`] decides as naive does (`acc`: scratch of
/// `n_classes + 1` bins). Otherwise the best class must beat every other
/// by its margins: its least possible weighted score above every other's
/// largest, and above 0 (no class), so that no tie rule is involved.
/// `equal`: every class weight is the same and positive, so the scores
/// compare without them.
#[inline]
fn decide(
    scores: &Scores,
    params: &SmoothParams,
    (centre, i): (u16, usize),
    equal: bool,
    acc: &mut [u32],
) -> Option<u16> {
    let n = acc.len() - 1;
    let mut exact = true;
    for (c, a) in acc[..n].iter_mut().enumerate() {
        let (s, m) = scores.get(c, i);
        *a = s;
        exact &= m == 0;
    }
    if exact {
        return Some(pick_winner(&acc[..n], params.class_weights, centre, params.ties));
    }
    let margin = |c: usize| scores.get(c, i).1;
    if equal {
        let best = (0..n).max_by_key(|&c| acc[c])?;
        let low = acc[best].saturating_sub(margin(best)) as u64;
        let beaten = (0..n)
            .filter(|&c| c != best)
            .all(|c| acc[c] as u64 + (margin(c) as u64) < low);
        return (low > 0 && beaten).then_some(best as u16);
    }
    let w = |c: usize| params.class_weights[c] as u128;
    let best = (0..n).max_by_key(|&c| acc[c] as u128 * w(c))?;
    let low = acc[best].saturating_sub(margin(best)) as u128 * w(best);
    let beaten = (0..n)
        .filter(|&c| c != best)
        .all(|c| (acc[c] as u128 + margin(c) as u128) * w(c) < low);
    (low > 0 && beaten).then_some(best as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tile_whose_scores_do_not_fit_is_refused_in_one_line() {
        let classes = vec![0u16; 300 * 300];
        let tile = ClassTile {
            width: 300,
            height: 300,
            halo: 50,
            n_classes: 64,
            classes: &classes,
        };
        // 66 planes of 200² u32 and a 300² complex plane: about 12 MB.
        assert!(check_memory(&tile, 101, 1 << 30).is_ok());
        let e = check_memory(&tile, 101, 1 << 20).unwrap_err().to_string();
        assert!(e.starts_with("fft needs 0.0 GiB for a 200x200 tile of 64 classes"), "{e}");
        assert!(e.contains("a smaller tile (") && !e.contains('\n'), "{e}");
    }
    use crate::kernel::KernelSpec;
    use crate::method::naive::NaiveHost;
    use crate::method::policy::Ties;

    /// Patches of `classes` values, `block` pixels wide, with some nodata.
    fn patches(w: usize, h: usize, classes: u16, block: usize, seed: u64) -> Vec<u16> {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let cells: Vec<u16> = (0..w.div_ceil(block) * h.div_ceil(block))
            .map(|_| (next() % (classes as u64 + 1)) as u16)
            .collect();
        (0..w * h)
            .map(|i| cells[(i / w / block) * w.div_ceil(block) + (i % w) / block])
            .collect()
    }

    fn run(m: &dyn ClassSmoother, tile: &ClassTile, params: &SmoothParams) -> Vec<u16> {
        let mut out = vec![0u16; tile.output_len()];
        m.smooth(tile, params, &mut out).unwrap();
        out
    }

    /// fft gives naive's bytes for every kind of kernel, with class
    /// weights, every tie rule, nodata kept or filled.
    #[test]
    fn fft_equals_naive() {
        let specs = ["gaussian:1.5", "gaussian:7", "box:9", "disc:6", "box:4"];
        for (k, spec) in specs.iter().enumerate() {
            let Ok(kernel) = spec.parse::<KernelSpec>().unwrap().build() else {
                continue;
            };
            let r = kernel.radius();
            for (halo, classes, block) in [(r, 3u16, 3), (r, 5, 5), (r, 2, 1)] {
                let (ow, oh) = (37, 29);
                let (w, h) = (ow + 2 * halo, oh + 2 * halo);
                let cells = patches(w, h, classes, block, 7 + k as u64);
                let tile = ClassTile {
                    width: w,
                    height: h,
                    halo,
                    n_classes: classes as usize,
                    classes: &cells,
                };
                let weights: Vec<u32> = (0..classes as u32).map(|c| 1 + c % 2).collect();
                let ones = vec![1u32; classes as usize];
                let fft = FftHost::new(&kernel);
                for ties in [Ties::Centre, Ties::Smallest, Ties::Largest, Ties::Undecided(9)] {
                    for (cw, fill_nodata) in [(&ones, false), (&weights, true)] {
                        let params = SmoothParams {
                            kernel: &kernel,
                            class_weights: cw,
                            fill_nodata,
                            ties,
                            confidence: None,
                        };
                        assert_eq!(
                            run(&fft, &tile, &params),
                            run(&NaiveHost, &tile, &params),
                            "{spec} halo {halo} classes {classes} {ties:?} fill {fill_nodata}"
                        );
                    }
                }
            }
        }
    }

    /// The rounding bound certifies exact integers for box kernels up to
    /// the largest, and stays a few units (10⁻⁹ of a score) for Gaussians.
    #[test]
    fn bound_rounds_boxes_exactly() {
        let n = crate::kernel::MAX_SIZE;
        let plane = fast_len(FftHost::preferred_tile(n) + n - 1);
        let box_sum = (n * n) as f64;
        let b = error_per_norm(plane, plane, box_sum, n as f64) * plane as f64;
        assert!(b < 0.5, "box {n}: {b}");
        let g = KernelSpec::Gaussian {
            sigma: 150.0,
            size: None,
        }
        .build()
        .unwrap();
        let host = FftHost::new(&g);
        let plane = fast_len(FftHost::preferred_tile(901) + 900);
        let b = error_per_norm(plane, plane, host.q_sum, host.q_l2) * plane as f64;
        assert!((0.5..64.0).contains(&b), "gaussian:150 {b}");
    }
}
