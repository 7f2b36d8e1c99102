//! The exact baseline ("naive", the thesis' Phase 1) on the host: for every
//! pixel, accumulate the integer kernel weights of each class present in its
//! window and pick the winner. O(N²) per pixel; rows run in parallel (rayon).
//!
//! Two shortcuts keep the result byte-identical to that definition:
//! - *Uniform windows*: where every pixel of the N×N window holds the same
//!   class, only that class scores, so it wins without a histogram. Real maps
//!   are largely such windows (sea, large fields); one pass over the tile
//!   finds them (runs of equal pixels along rows, then down columns).
//! - *Runs*: in the other windows, a window row of one class adds its row's
//!   weight sum at once, and a row of a few runs of equal pixels adds each
//!   run's span of weights (prefix sums). Integer sums are exact and
//!   order-free, so the scores are the same. Noise-like tiles, where runs are
//!   short, keep the plain loop over every tap.
//!
//! Its descriptor [`NaiveFamily`] (in this folder's [`FAMILIES`]) builds it
//! on the host or as its OpenCL twin ([`cl`]), with the device variants and
//! its cost for `--method auto`.

use super::cost::{Candidate, CostShape, DeviceCosts, TileExtent};
use super::family::{Accepts, Family, FastOptions, Settings};
use super::select::on_members;
use super::{ClassSmoother, ClassTile, SmoothParams, pick_winner};
use crate::classes::NO_CLASS;
use crate::device::{DeviceChoice, Member};
use crate::error::{Result, Setting};
use crate::kernel::{Kernel, PER_TAP_MAX_SIZE};
use cl::{NaiveCl, Variant};
use rayon::prelude::*;

pub use bins::Bins;
pub use exact::{ExactPixels, RUN_STEP_TAPS, TABLE_PASSES_PER_TAP, exact_pixel};
use exact::weighted_pixel;

mod bins;
mod exact;
pub mod cl;
pub mod cl_runs;
pub mod tuning;

/// The descriptor of `--method naive`: the exact method, built without a
/// kernel, with its device variants and its cost for `--method auto`.
pub struct NaiveFamily;

/// This folder's methods in [`crate::method::registry`] (build.rs finds
/// this line).
pub const FAMILIES: &[&dyn Family] = &[&NaiveFamily];

impl Family for NaiveFamily {
    fn name(&self) -> &'static str {
        "naive"
    }

    fn help(&self) -> &'static str {
        "exact"
    }

    fn accepts(&self) -> Accepts {
        Accepts::default()
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn list_position(&self) -> u8 {
        0
    }

    fn variants(&self) -> &'static [Variant] {
        &[
            Variant::Fast,
            Variant::Buffer,
            Variant::Image,
            Variant::Local,
        ]
    }

    fn build(
        &self,
        settings: &Settings,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        if member.is_some() {
            crate::kernel::refuse_wide(kernel, "naive on an OpenCL device")?;
        } else if kernel.size() > PER_TAP_MAX_SIZE {
            let n = kernel.size();
            log::warn!(
                "naive on a {n}x{n} kernel walks up to {n} taps per window row and pixel \
                 (a tile it would take over a CPU minute on is refused); \
                 {} gives the same bytes at a cost independent of the kernel",
                Setting::Method.is("fft")
            );
        }
        naive_on(member, settings.variant)
    }

    fn candidate(
        &self,
        member: &Member,
        variant: Option<Variant>,
        kernel: &Kernel,
        _fast: &FastOptions,
    ) -> Result<Option<Candidate>> {
        if member.is_some() && kernel.size() > crate::kernel::PER_TAP_MAX_SIZE {
            return Ok(None);
        }
        let taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
        Ok(Some(Candidate {
            smoother: naive_on(member.clone(), variant)?,
            shape: Box::new(NaiveCost {
                taps,
                size: kernel.size(),
                by_runs: member.is_none(),
            }),
            bounds: None,
            certified: false,
        }))
    }
}

/// Naive on `device` (`variant`: `None` for the default), the one method
/// built without a kernel. `host` (or `auto` without OpenCL) gives the plain
/// Rust implementation; several devices share the tiles.
pub fn class_smoother(
    device: &DeviceChoice,
    variant: Option<Variant>,
) -> Result<Box<dyn ClassSmoother>> {
    on_members(device, |member| naive_on(member, variant))
}

/// Naive on one device (the host ignores the variant).
fn naive_on(member: Member, variant: Option<Variant>) -> Result<Box<dyn ClassSmoother>> {
    match member {
        None => Ok(Box::new(NaiveHost)),
        Some(dev) => Ok(Box::new(NaiveCl::new(dev, variant.unwrap_or_default())?)),
    }
}

/// naive's cost: one histogram update per non-zero tap, then C to rank; on
/// the host (`by_runs`), where the tile's runs are measured, one update per
/// run of each window row in the windows that hold more than one value, as
/// [`NaiveHost`] scores them.
pub struct NaiveCost {
    pub taps: usize,
    /// The kernel's side N.
    pub size: usize,
    pub by_runs: bool,
}

/// A run walked costs `1 + N / STEP_ROWS` times more on an N-wide window:
/// its rows and prefix sums leave the nearest cache (the fits' residuals
/// grew from 1.2 at N = 31 to 1.5–2.1 at N = 121–211 on both hosts).
const STEP_ROWS: f64 = 200.0;

/// What a class of a mixed window costs where the bins are not banked
/// (tiles of 64 classes or more), as a share of the banked cost the fits
/// measured: one bin cleared and ranked instead of four cleared and
/// summed. Without it the model ran dct5 `--exact` on 64-class random
/// maps at σ = 1–3, where naive is 1.2–2.3× faster (2 cores).
const UNBANKED_CLASS_SHARE: f64 = 0.3;

impl NaiveCost {
    /// How the host scores `tile`'s windows, as [`NaiveHost`] chooses: the
    /// share of windows holding several values, and the runs walked per
    /// output pixel, or `None` where it adds every tap (rows averaging more
    /// than N/2 runs, or runs not measured).
    fn walk(&self, tile: &TileExtent) -> (f64, Option<f64>) {
        let n = self.size as f64;
        match tile.runs.filter(|_| self.by_runs) {
            // A uniform window's rows are one run each, and are not walked.
            Some(runs) if runs.row_runs <= n / 2.0 => (
                runs.mixed,
                Some(n * (runs.row_runs - (1.0 - runs.mixed)).max(0.0)),
            ),
            Some(runs) => (runs.mixed, None),
            None => (1.0, None),
        }
    }
}

impl CostShape for NaiveCost {
    fn cost(&self, tile: &TileExtent, costs: &DeviceCosts) -> f64 {
        let (n, classes) = (self.size as f64, tile.classes.max(1) as f64);
        let (mixed, runs) = self.walk(tile);
        // The host's bins (`by_runs`: naive on the host), banked or not.
        let class = match self.by_runs && !Bins::banked(tile.classes) {
            true => costs.naive_class * UNBANKED_CLASS_SHARE,
            false => costs.naive_class,
        };
        let window = class * classes + costs.naive_row * n;
        costs.naive_pixel
            + match runs {
                Some(steps) => mixed * window + steps * costs.run_step * (1.0 + n / STEP_ROWS),
                None => mixed * (window + self.taps as f64 * costs.histogram),
            }
    }

    fn explain(&self, tile: &TileExtent) -> String {
        match self.walk(tile) {
            (mixed, Some(steps)) => format!(
                "{steps:.0} runs walked ({:.0} % of windows mixed) + {} classes to rank",
                100.0 * mixed,
                tile.classes
            ),
            (_, None) => format!("{} histogram updates + {} to rank", self.taps, tile.classes),
        }
    }

    fn follows_runs(&self) -> bool {
        self.by_runs
    }
}

/// How `tile`'s N×N windows (`n` = N) break into runs, as [`NaiveHost`]
/// finds them: the share of windows holding more than one value and the
/// mean runs per window row, counted over the whole tile: what `auto`'s
/// sample estimates, kept to test it against.
#[cfg(test)]
pub fn window_runs(tile: &ClassTile, n: usize) -> super::cost::WindowRuns {
    if tile.output_width() == 0 || tile.output_height() == 0 {
        return super::cost::WindowRuns {
            mixed: 0.0,
            row_runs: 1.0,
        };
    }
    let runs = Runs::without_lengths(tile, n);
    let uniform = runs.uniform.iter().filter(|&&u| u).count();
    let total: u64 = runs.count.iter().map(|&c| c as u64).sum();
    super::cost::WindowRuns {
        mixed: 1.0 - uniform as f64 / runs.uniform.len() as f64,
        row_runs: total as f64 / runs.count.len() as f64,
    }
}

/// The non-zero quantised kernel weights as (offset in the tile from the
/// window's top-left pixel, weight).
pub fn taps(tile: &ClassTile, params: &SmoothParams) -> Vec<(usize, u32)> {
    flat_taps(params.kernel.quantised(), params.kernel.size(), tile.width)
}

/// [`taps`] of an `n`×`n` quantised kernel in a tile `tile_width` wide,
/// allocated once at their count: built through the rows' lists and an
/// unsized collect, the taps of a 361² kernel took 4.4 ms (2 cores), as
/// long as `auto`'s whole sample of near-ties at σ = 60.
fn flat_taps(quantised: &[u32], n: usize, tile_width: usize) -> Vec<(usize, u32)> {
    let mut flat = Vec::with_capacity(quantised.iter().filter(|&&q| q > 0).count());
    for (dy, row) in quantised.chunks_exact(n).enumerate() {
        let at = dy * tile_width;
        flat.extend(
            row.iter()
                .enumerate()
                .filter(|&(_, &q)| q > 0)
                .map(|(dx, &q)| (at + dx, q)),
        );
    }
    flat
}


/// The direct histogram method on the host.
#[derive(Clone, Copy, Debug, Default)]
pub struct NaiveHost;

impl ClassSmoother for NaiveHost {
    fn name(&self) -> String {
        "naive/host".into()
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

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        let out_w = tile.output_width();
        if out_w == 0 {
            return Ok(());
        }
        if tile.decided_by_centres(params) {
            // Before the kernel's tables and the tile's runs are built.
            tile.decide_by_centres(out);
            return Ok(());
        }
        let n = params.kernel.size();
        let kernel = KernelTaps::new(params.kernel.quantised(), n, tile.width, params.confidence.is_some());
        if let Some(confidence) = params.confidence {
            // Weighted votes: no shortcut (a run's weights are no longer
            // its span of the kernel), every tap.
            out.par_chunks_mut(out_w).enumerate().for_each(|(y, row)| {
                let mut acc = vec![0u64; tile.n_classes + 1];
                for (x, slot) in row.iter_mut().enumerate() {
                    *slot = weighted_pixel(tile, params, confidence, &kernel.flat, x, y, &mut acc);
                }
            });
            return Ok(());
        }
        let runs = Runs::new(tile, n);
        // Walking runs pays where window rows are mostly long runs (maps);
        // on noise-like tiles visiting every tap is faster (measured).
        let mean_runs = runs.count.iter().map(|&c| c as usize).sum::<usize>() / runs.count.len();
        let by_runs = mean_runs <= n / 2;
        check_affordable(tile, &runs, n, if by_runs { mean_runs } else { n })?;
        let nodata = tile.nodata();
        let halo = tile.halo;
        out.par_chunks_mut(out_w).enumerate().for_each(|(y, row)| {
            let mut bins = Bins::new(tile.n_classes);
            for (x, slot) in row.iter_mut().enumerate() {
                let origin = y * tile.width + x;
                let centre = tile.classes[origin + halo * tile.width + halo];
                if centre == nodata && !params.fill_nodata {
                    *slot = NO_CLASS;
                    continue;
                }
                if runs.uniform[y * out_w + x] {
                    // Only the centre's class scores (the kernel has a positive
                    // weight): it wins if its class weight is positive.
                    *slot = if centre != nodata && params.class_weights[centre as usize] > 0 {
                        centre
                    } else {
                        NO_CLASS
                    };
                    continue;
                }
                bins.clear();
                if by_runs {
                    kernel.add_by_runs(tile, &runs, x, y, &mut bins);
                } else {
                    kernel.add_window(&tile.classes[origin..], tile.width, &mut bins);
                }
                *slot = pick_winner(
                    &bins.totals()[..tile.n_classes],
                    params.class_weights,
                    centre,
                    params.ties,
                );
            }
        });
        Ok(())
    }
}

/// Most window-row steps (a run's span or a tap) naive takes on in one
/// tile of a kernel wider than [`PER_TAP_MAX_SIZE`]: about a minute of
/// one core at 0.3 ns a step. Past it the tile would take long enough
/// that a user is better told of fft.
const MAX_TILE_STEPS: f64 = 2e11;

/// Refuses a tile whose windows would cost naive more than
/// [`MAX_TILE_STEPS`] (kernels wider than [`PER_TAP_MAX_SIZE`] only: the
/// others keep their cost), estimated from its mixed windows and the
/// `per_row` steps of each window row.
fn check_affordable(tile: &ClassTile, runs: &Runs, n: usize, per_row: usize) -> Result<()> {
    if n <= PER_TAP_MAX_SIZE {
        return Ok(());
    }
    let mixed = runs.uniform.iter().filter(|&&u| !u).count();
    let steps = mixed as f64 * n as f64 * per_row.max(1) as f64;
    if steps > MAX_TILE_STEPS {
        let minutes = steps * 0.3e-9 / 60.0;
        crate::bail!(
            resource,
            format!(
                "naive would take about {minutes:.0} CPU minutes on one {}x{} tile of a {n}x{n} kernel",
                tile.output_width(),
                tile.output_height()
            ),
            hint = format!(
                "use {} (exact, the same bytes, any kernel size)",
                Setting::Method.is("fft")
            )
        );
    }
    Ok(())
}

/// The quantised kernel laid out for the two ways of scoring a window.
/// A large kernel's taps are many (811,801 at σ = 150, 16 bytes each), so
/// only what a tile's run needs is built: at σ = 150 the lists of every
/// tap took 26 MB per tile, paid in page faults on each of four tiles.
struct KernelTaps {
    n: usize,
    /// Whether the kernel's rows mirror about its middle one (Gaussians,
    /// boxes, discs): the tables then hold its first N/2 + 1 rows, and
    /// row `dy` reads row `min(dy, N − 1 − dy)`. Half the prefix sums fit
    /// in a core's L2 at σ = 150 (1.6 MB), where the certified mode's
    /// recomputation reads them at random.
    mirrored: bool,
    /// Non-zero taps as (offset in the tile from the window's corner,
    /// weight); built for confidence-weighted votes only (else empty).
    flat: Vec<(usize, u32)>,
    /// Per kernel row: (column, weight) of its non-zero taps where the row
    /// holds a zero weight; empty where it holds none (`dense` serves it).
    rows: Vec<Vec<(usize, u32)>>,
    /// Per kernel row, how many of its weights are not zero.
    row_taps: Vec<usize>,
    /// The quantised weights, row-major (zeros included).
    dense: Vec<u32>,
    /// Per kernel row, its n+1 prefix sums of weights (the last is the row sum).
    /// Quantised weights sum to at most 2³¹, so every partial sum fits.
    prefix: Vec<u32>,
}

impl KernelTaps {
    /// The kernel for a tile `tile_width` wide; with `weighted` votes,
    /// its flat list of taps too.
    fn new(quantised: &[u32], n: usize, tile_width: usize, weighted: bool) -> Self {
        let row = |dy: usize| &quantised[dy * n..][..n];
        let mirrored = (0..n / 2).all(|dy| row(dy) == row(n - 1 - dy));
        let stored = &quantised[..if mirrored { n / 2 + 1 } else { n } * n];
        let row_taps: Vec<usize> = stored
            .chunks_exact(n)
            .map(|row| row.iter().filter(|&&q| q > 0).count())
            .collect();
        let rows = (stored.chunks_exact(n).zip(&row_taps))
            .map(|(row, &taps)| match taps == n {
                true => Vec::new(),
                false => row.iter().copied().enumerate().filter(|&(_, q)| q > 0).collect(),
            })
            .collect();
        KernelTaps {
            n,
            mirrored,
            flat: match weighted {
                true => flat_taps(quantised, n, tile_width),
                false => Vec::new(),
            },
            rows,
            row_taps,
            dense: stored.to_vec(),
            prefix: row_prefix_sums(stored, n),
        }
    }

    /// The stored row that kernel row `dy` reads.
    #[inline]
    fn row(&self, dy: usize) -> usize {
        match self.mirrored {
            true => dy.min(self.n - 1 - dy),
            false => dy,
        }
    }

    /// Kernel row `dy`'s n+1 prefix sums.
    #[inline]
    fn prefix_row(&self, dy: usize) -> &[u32] {
        let n = self.n;
        &self.prefix[self.row(dy) * (n + 1)..][..n + 1]
    }

    /// How many of kernel row `dy`'s weights are not zero.
    #[inline]
    fn taps_in_row(&self, dy: usize) -> usize {
        self.row_taps[self.row(dy)]
    }

    /// Every tap of kernel row `dy` into its class's bin; `line` is the
    /// window's row. A row without zero taps goes without tap offsets.
    #[inline]
    fn add_row(&self, dy: usize, line: &[u16], bins: &mut Bins) {
        let (n, row) = (self.n, self.row(dy));
        if self.row_taps[row] == n {
            bins.add_row(line, &self.dense[row * n..][..n]);
        } else {
            bins.add_taps(&self.rows[row], line);
        }
    }

    /// Every tap of the window into its class's bin; `window` starts at
    /// the window's corner, in a tile `width` wide.
    #[inline]
    fn add_window(&self, window: &[u16], width: usize, bins: &mut Bins) {
        for dy in 0..self.n {
            self.add_row(dy, &window[dy * width..][..self.n], bins);
        }
    }

    /// Row by row: a row of one class adds its weight sum, a row of a few
    /// runs adds each run's span of weights, other rows visit their taps.
    #[inline]
    fn add_by_runs(&self, tile: &ClassTile, runs: &Runs, x: usize, y: usize, bins: &mut Bins) {
        let n = self.n;
        let few = (n / 4).max(1) as u16;
        let out_w = tile.output_width();
        for dy in 0..n {
            let start = (y + dy) * tile.width + x;
            let line = &tile.classes[start..][..n];
            let pre = self.prefix_row(dy);
            let count = runs.count[(y + dy) * out_w + x];
            if count == 1 {
                bins.add(line[0], pre[n]);
            } else if count <= few {
                let lens = &runs.len[start..][..n];
                let mut dx = 0;
                while dx < n {
                    let end = (dx + lens[dx] as usize).min(n);
                    bins.add(line[dx], pre[end] - pre[dx]);
                    dx = end;
                }
            } else {
                self.add_row(dy, line, bins);
            }
        }
    }
}

/// Where a tile holds runs of one value as long as the kernel.
struct Runs {
    /// `count[r·out_w + x]`: how many runs of equal pixels the N pixels of
    /// tile row r from column x on hold (1: all equal; up to N, so u16).
    count: Vec<u16>,
    /// `len[r·w + x]`: length of the run of equal pixels from tile pixel
    /// (x, r) rightwards, capped at 255 (a longer run is walked in pieces:
    /// the piece from column x + 255 on has its own length).
    len: Vec<u8>,
    /// `uniform[y·out_w + x]`: all N×N pixels of output pixel (x, y)'s window
    /// (which starts at tile pixel (x, y)) hold the same value.
    uniform: Vec<bool>,
}

/// Columns of a tile per parallel block of [`Runs`]' uniform windows.
const UNIFORM_COLUMNS: usize = 64;

impl Runs {
    fn new(tile: &ClassTile, n: usize) -> Self {
        Runs {
            len: run_lengths(tile),
            ..Self::without_lengths(tile, n)
        }
    }

    /// [`Runs::new`] but `len` left empty: what `auto`'s cost model reads
    /// of a tile, one pass fewer.
    fn without_lengths(tile: &ClassTile, n: usize) -> Self {
        let (w, out_w, out_h) = (tile.width, tile.output_width(), tile.output_height());
        let cells = tile.classes;
        // count[r·out_w + x]: runs in the n pixels of tile row r from column x.
        let mut count = vec![0u16; tile.height * out_w];
        count
            .par_chunks_mut(out_w)
            .enumerate()
            .with_min_len(crate::grain::min_items(w))
            .for_each(|(r, counts)| {
                let line = &cells[r * w..][..w];
                // Run starts in line[x+1..x+n], slid along the row.
                let starts = |x: usize| (x > 0 && line[x] != line[x - 1]) as u16;
                let mut inside: u16 = (1..n).map(starts).sum();
                for (x, c) in counts.iter_mut().enumerate() {
                    *c = 1 + inside;
                    if x + 1 < out_w {
                        inside = inside + starts(x + n) - starts(x + 1);
                    }
                }
            });
        // down[x]: how many rows from the current one down hold such a run of
        // the same value at column x (capped at n); uniform when it reaches n.
        // Columns do not depend on each other: blocks of them run in
        // parallel, each into rows of its own, copied into place after (in
        // one pass over the tile, this was `auto`'s count of runs on a
        // 512² tile at σ = 85: 1–3 ms on any number of threads).
        let blocks: Vec<(usize, usize, Vec<bool>)> = (0..out_w.div_ceil(UNIFORM_COLUMNS))
            .into_par_iter()
            .map(|b| {
                let x0 = b * UNIFORM_COLUMNS;
                let bw = UNIFORM_COLUMNS.min(out_w - x0);
                let mut down = vec![0usize; bw];
                let mut uniform = vec![false; out_h * bw];
                for r in (0..tile.height).rev() {
                    let line = &cells[r * w + x0..][..bw];
                    let below = (r + 1 < tile.height).then(|| &cells[(r + 1) * w + x0..][..bw]);
                    let counts = &count[r * out_w + x0..][..bw];
                    for x in 0..bw {
                        down[x] = if counts[x] != 1 {
                            0
                        } else if below.is_some_and(|b| b[x] == line[x]) && down[x] > 0 {
                            (down[x] + 1).min(n)
                        } else {
                            1
                        };
                    }
                    if r < out_h {
                        for (u, &d) in uniform[r * bw..][..bw].iter_mut().zip(&down) {
                            *u = d >= n;
                        }
                    }
                }
                (x0, bw, uniform)
            })
            .collect();
        let mut uniform = vec![false; out_h * out_w];
        for (x0, bw, part) in &blocks {
            for r in 0..out_h {
                uniform[r * out_w + x0..][..*bw].copy_from_slice(&part[r * bw..][..*bw]);
            }
        }
        Runs {
            count,
            len: Vec::new(),
            uniform,
        }
    }
}

/// Per row of an `n`×`n` quantised kernel, its n+1 prefix sums of weights
/// (the last is the row sum): what [`ExactPixels`] and the device's
/// `naive_flagged` add a run's span with. Quantised weights sum to at most
/// 2³¹, so every partial sum fits.
pub fn row_prefix_sums(quantised: &[u32], n: usize) -> Vec<u32> {
    let mut prefix = Vec::with_capacity(quantised.len() / n.max(1) * (n + 1));
    for row in quantised.chunks_exact(n) {
        let mut sum = 0u32;
        prefix.push(0);
        prefix.extend(row.iter().map(|&q| {
            sum += q;
            sum
        }));
    }
    prefix
}


/// `len` of [`Runs`]: per tile pixel, the length of the run of equal
/// pixels from it rightwards, capped at 255.
fn run_lengths(tile: &ClassTile) -> Vec<u8> {
    let (w, cells) = (tile.width, tile.classes);
    let mut len = vec![0u8; tile.height * w];
    len.par_chunks_mut(w)
        .enumerate()
        .with_min_len(crate::grain::min_items(w))
        .for_each(|(r, lens)| {
            let line = &cells[r * w..][..w];
            let mut run = 0usize;
            for x in (0..w).rev() {
                run = if x + 1 < w && line[x] == line[x + 1] {
                    run + 1
                } else {
                    1
                };
                lens[x] = run.min(255) as u8;
            }
        });
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{Kernel, KernelSpec};

    /// The definition, written plainly: every tap into its class's bin.
    fn plain(tile: &ClassTile, params: &SmoothParams) -> Vec<u16> {
        let n = params.kernel.size();
        let q = params.kernel.quantised();
        let (out_w, out_h) = (tile.output_width(), tile.output_height());
        let mut out = vec![0u16; out_w * out_h];
        for y in 0..out_h {
            for x in 0..out_w {
                let at = |dx: usize, dy: usize| tile.classes[(y + dy) * tile.width + x + dx];
                let centre = at(tile.halo, tile.halo);
                out[y * out_w + x] = if centre == tile.nodata() && !params.fill_nodata {
                    NO_CLASS
                } else {
                    let mut acc = vec![0u32; tile.n_classes + 1];
                    for dy in 0..n {
                        for dx in 0..n {
                            acc[at(dx, dy) as usize] += q[dy * n + dx];
                        }
                    }
                    pick_winner(
                        &acc[..tile.n_classes],
                        params.class_weights,
                        centre,
                        params.ties,
                    )
                };
            }
        }
        out
    }

    /// Blobs of `classes` values (a few pixels wide, so both uniform and mixed
    /// windows occur) with some nodata; deterministic.
    fn blobs(width: usize, height: usize, classes: u16, block: usize, seed: u64) -> Vec<u16> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u16
        };
        let bw = width.div_ceil(block);
        let cells: Vec<u16> = (0..bw * height.div_ceil(block))
            .map(|_| next() % (classes + 1)) // `classes` itself is nodata
            .collect();
        (0..width * height)
            .map(|i| {
                let (x, y) = (i % width, i / width);
                // An occasional stray pixel inside a block.
                if next() % 41 == 0 {
                    next() % classes
                } else {
                    cells[(y / block) * bw + x / block]
                }
            })
            .collect()
    }

    fn check(kernel: &Kernel, weights: &[u32], fill_nodata: bool, block: usize) {
        let halo = kernel.radius();
        let (width, height, classes) = (40 + 2 * halo, 31 + 2 * halo, weights.len());
        let data = blobs(
            width,
            height,
            classes as u16,
            block,
            block as u64 + halo as u64,
        );
        let tile = ClassTile {
            width,
            height,
            halo,
            n_classes: classes,
            classes: &data,
        };
        let params = SmoothParams {
            kernel,
            class_weights: weights,
            fill_nodata,
            ties: Default::default(),
            confidence: None,
        };
        let mut out = vec![0u16; tile.output_len()];
        NaiveHost.smooth(&tile, &params, &mut out).unwrap();
        let want = plain(&tile, &params);
        assert_eq!(out, want, "{kernel:?} fill={fill_nodata} block={block}");
        // The certified modes' one-pixel recomputation, run by run.
        let exact = ExactPixels::new(&tile, &params);
        let mut bins = Bins::new(classes);
        let mut one_by_one = Vec::with_capacity(want.len());
        for y in 0..tile.output_height() {
            for x in 0..tile.output_width() {
                one_by_one.push(exact.at(&tile, &params, x, y, &mut bins));
            }
        }
        assert_eq!(
            one_by_one, want,
            "ExactPixels: {kernel:?} fill={fill_nodata} block={block}"
        );
        // Without the tables, each window row read for its runs.
        let reading = ExactPixels::for_pixels(&tile, &params, 1);
        assert!(reading.bounds.is_empty());
        let read: Vec<u16> = (0..tile.output_height())
            .flat_map(|y| (0..tile.output_width()).map(move |x| (x, y)))
            .map(|(x, y)| reading.at(&tile, &params, x, y, &mut bins))
            .collect();
        assert_eq!(read, want, "rows read: {kernel:?} fill={fill_nodata} block={block}");
        // Many pixels at once, swept down the tile in groups (both ways of
        // finding runs), given out of order: every third pixel, backwards,
        // then the rest, one of them twice.
        let ow = tile.output_width();
        let mut pixels: Vec<(u32, u32)> = (0..want.len()).rev().step_by(3).collect::<Vec<_>>().into_iter()
            .chain((0..want.len()).filter(|i| !(want.len() - 1 - i).is_multiple_of(3)))
            .chain([want.len() / 2])
            .map(|i| ((i % ow) as u32, (i / ow) as u32))
            .collect();
        let third = pixels.len() / 3;
        pixels.rotate_left(third);
        let expected: Vec<u16> = pixels.iter().map(|&(x, y)| want[y as usize * ow + x as usize]).collect();
        let scanning = ExactPixels::for_pixels(&tile, &params, usize::MAX);
        assert!(scanning.scan_rows && scanning.bounds.is_empty());
        for (how, exact) in [("tables", &exact), ("rows read", &reading), ("rows scanned", &scanning)] {
            assert_eq!(
                exact.at_all(&tile, &params, &pixels),
                expected,
                "at_all, {how}: {kernel:?} fill={fill_nodata} block={block}"
            );
        }
    }

    #[test]
    fn shortcuts_match_the_plain_definition() {
        let kernels = [
            KernelSpec::Gaussian {
                sigma: 1.5,
                size: None,
            },
            KernelSpec::Box { size: 5 },
            KernelSpec::Disc { radius: 3 },
            KernelSpec::Box { size: 1 },
        ];
        // And a kernel whose rows do not mirror (its tables keep every row).
        let lopsided = Kernel::new(5, (0..25).map(|i| f64::from(i % 7 + i / 5)).collect()).unwrap();
        assert!(!KernelTaps::new(lopsided.quantised(), 5, 9, false).mirrored);
        let built: Vec<Kernel> = kernels.iter().map(|spec| spec.build().unwrap()).collect();
        for kernel in built.iter().chain([&lopsided]) {
            assert_eq!(
                KernelTaps::new(kernel.quantised(), kernel.size(), 9, false).mirrored,
                kernel != &lopsided
            );
            for block in [1, 4, 9, 30] {
                for fill in [false, true] {
                    check(kernel, &[1, 1, 1, 1], fill, block);
                    check(kernel, &[3, 1, 2], fill, block);
                    // Tiles of one class and nodata, decided by centres
                    // (a weight of 0 is not).
                    check(kernel, &[2], fill, block);
                    check(kernel, &[0], fill, block);
                }
            }
        }
    }

    /// Kernels over 255: a window row holds up to N runs (more than a u8
    /// counts) and runs longer than the 255 cap of `len`.
    #[test]
    fn shortcuts_match_the_plain_definition_over_255() {
        let gauss = KernelSpec::Gaussian {
            sigma: 64.0,
            size: None,
        }
        .build()
        .unwrap();
        let wide = KernelSpec::Box { size: 301 }.build().unwrap();
        for kernel in [&gauss, &wide] {
            // 16 classes of single pixels: about 280 to 360 runs per window row.
            check(kernel, &[1; 16], false, 1);
            check(kernel, &[1, 1, 1], true, 300);
        }
    }

    /// Wide window rows, of few and of many runs, for the one-pixel
    /// recomputation's run walk (and naive's shortcuts).
    #[test]
    fn exact_pixels_on_wide_rows() {
        for size in [63, 65, 67, 129, 131] {
            let kernel = KernelSpec::Box { size }.build().unwrap();
            for block in [1, 3, 30] {
                check(&kernel, &[1, 2, 1, 1], false, block);
            }
        }
    }

    #[test]
    fn uniform_windows_are_found_exactly() {
        // 3×3 windows on a 6×5 tile (halo 1): only windows wholly of one value count.
        #[rustfmt::skip]
        let data = [
            1, 1, 1, 1, 2, 2,
            1, 1, 1, 1, 2, 2,
            1, 1, 1, 2, 2, 2,
            1, 1, 1, 2, 2, 2,
            0, 0, 0, 2, 2, 2,
        ];
        let tile = ClassTile {
            width: 6,
            height: 5,
            halo: 1,
            n_classes: 3,
            classes: &data,
        };
        let flags = Runs::new(&tile, 3).uniform;
        #[rustfmt::skip]
        let expected = [
            true, false, false, false,
            true, false, false, false,
            false, false, false, true,
        ];
        assert_eq!(flags, expected);
    }
}
