//! The exact result of single output pixels, for the certified modes'
//! recomputation and `auto`'s sample of near-ties: [`exact_pixel`] by the
//! plain definition, and [`ExactPixels`], which adds each window row run by
//! run from tables of where the tile's rows change class.

use super::{Bins, KernelTaps};
use crate::classes::NO_CLASS;
use crate::method::{ClassTile, SmoothParams, pick_winner, pick_winner_wide};
use rayon::prelude::*;

/// The exact result at output pixel `(x, y)` by the plain definition (the
/// one-pixel form the certified mode recomputes with); `bins` is scratch
/// ([`Bins::new`] of the tile's classes).
#[inline]
pub fn exact_pixel(
    tile: &ClassTile,
    params: &SmoothParams,
    taps: &[(usize, u32)],
    x: usize,
    y: usize,
    bins: &mut Bins,
) -> u16 {
    let origin = y * tile.width + x;
    let centre = tile.classes[origin + tile.halo * tile.width + tile.halo];
    if centre == tile.nodata() && !params.fill_nodata {
        return NO_CLASS;
    }
    if let Some(confidence) = params.confidence {
        let mut wide = vec![0u64; tile.n_classes + 1];
        return weighted_pixel(tile, params, confidence, taps, x, y, &mut wide);
    }
    bins.clear();
    bins.add_taps(taps, &tile.classes[origin..]);
    pick_winner(
        &bins.totals()[..tile.n_classes],
        params.class_weights,
        centre,
        params.ties,
    )
}

/// The exact results of single output pixels of one tile, for the certified
/// modes' recomputation of the pixels their bound cannot decide: the same
/// scores as [`exact_pixel`] (integer sums are order-free), but each window
/// row adds run by run — a run of equal pixels adds its span of the kernel
/// row's prefix sums, found from the tile's run lengths (one pass over the
/// tile). Those pixels lie on class boundaries, where a window row holds a
/// few runs: a few steps per row instead of a bin update per tap (the tap
/// walk was 43 % of `--exact`'s host time on a 17-class map, 70 % of its
/// host time beside a GPU: issue 39). But a step of the walk waits for the
/// last (its run's length decides where the next starts), and a tap does
/// not: a window row of many short runs (noise, small patches) adds its
/// taps instead, chosen row by row from the count of runs it crosses
/// ([`RUN_STEP_TAPS`]). On a 2-core machine, `--exact` at σ = 5 on a map of
/// 6-pixel patches took 5.56 s with runs only and 2.68 s with taps only;
/// on the 17-class simplex map runs won, 1.75 s against 2.01 s.
///
/// Where the runs start comes from the tile's rows in one of three ways:
/// tables of every row's changes ([`ExactPixels::new`], for callers that
/// ask one window at a time); for many windows at once
/// ([`ExactPixels::at_all`] after [`ExactPixels::for_pixels`]), each tile
/// row scanned once for all the windows that cover it; and where few
/// pixels are recomputed (a MODIS map at σ = 5: 0.09 %, 225 of a 512²
/// tile), each window row read for its own N pixels, which costs less than
/// one pass over the tile. As on the device (decision 0022), the sums do
/// not depend on where a run is cut.
pub struct ExactPixels {
    kernel: KernelTaps,
    /// The first table of [`run_changes`]; empty with confidence-weighted votes
    /// and where rows are read instead.
    pub(super) bounds: Vec<u16>,
    /// Its second, where the rows change class (empty likewise).
    changes: Vec<u16>,
    /// [`ExactPixels::at_all`] finds each tile row's changes as it sweeps
    /// down the tile, for every window at once, instead of from the tables
    /// (which are then not built) or from each window's own reading.
    pub(super) scan_rows: bool,
}

/// A window tap read to find runs costs about this share of a tile pixel's
/// two table passes: [`ExactPixels::for_pixels`] builds the tables where
/// the recomputed windows' taps outnumber the tile's pixels by more.
pub const TABLE_PASSES_PER_TAP: usize = 4;

pub use crate::method::cost::RUN_STEP_TAPS;

impl ExactPixels {
    pub fn new(tile: &ClassTile, params: &SmoothParams) -> Self {
        let n = params.kernel.size();
        // A row's change positions are u16, and so are the counts of its
        // changes up to a pixel, which index them.
        let tables = params.confidence.is_none() && tile.width <= usize::from(u16::MAX);
        let (bounds, changes) = match tables {
            true => run_changes(tile),
            false => Default::default(),
        };
        ExactPixels {
            kernel: KernelTaps::new(params.kernel.quantised(), n, tile.width, params.confidence.is_some()),
            bounds,
            changes,
            scan_rows: false,
        }
    }

    /// For recomputing about `pixels` of `tile`'s output pixels with
    /// [`at_all`](Self::at_all): scanning each tile row once for all the
    /// windows that cover it, where that many windows' taps would cost more
    /// than a pass over the tile, else reading each window row
    /// ([`TABLE_PASSES_PER_TAP`]).
    pub fn for_pixels(tile: &ClassTile, params: &SmoothParams, pixels: usize) -> Self {
        let n = params.kernel.size();
        let many = pixels.saturating_mul(n * n) > TABLE_PASSES_PER_TAP * tile.width * tile.height;
        ExactPixels {
            kernel: KernelTaps::new(params.kernel.quantised(), n, tile.width, params.confidence.is_some()),
            bounds: Vec::new(),
            changes: Vec::new(),
            scan_rows: many && params.confidence.is_none() && tile.width <= usize::from(u16::MAX),
        }
    }

    /// The exact result at output pixel `(x, y)`, as [`exact_pixel`] gives
    /// it; `bins` is scratch ([`Bins::new`] of the tile's classes).
    #[inline]
    pub fn at(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        x: usize,
        y: usize,
        bins: &mut Bins,
    ) -> u16 {
        if params.confidence.is_some() {
            // Weighted votes: a run's weights are no longer its span of
            // the kernel, every tap.
            return exact_pixel(tile, params, &self.kernel.flat, x, y, bins);
        }
        if centre(tile, x, y) == tile.nodata() && !params.fill_nodata {
            return NO_CLASS;
        }
        bins.clear();
        self.add_window(tile, y * tile.width + x, bins);
        winner(tile, params, bins.totals(), x, y)
    }

    /// The exact results at `pixels` (output pixels `(x, y)`), in their
    /// order, as [`ExactPixels::at`] gives them one by one.
    ///
    /// Groups of `SWEEP_PIXELS` pixels nearest in `y` are summed together,
    /// tile row by tile row: each row is read for every window of the group
    /// that covers it while its pixels, run tables and change lists are in
    /// cache. One window at a time walked 901 rows of a 2048-wide tile per
    /// pixel at σ = 150, three or four cache misses a row (the tables, the
    /// changes, the run's class), which made the walk 32 % of dct5
    /// `--exact`'s samples on the 4096² MODIS map. Integer sums do not
    /// depend on their order, so the results are those of [`at`](Self::at).
    pub fn at_all(&self, tile: &ClassTile, params: &SmoothParams, pixels: &[(u32, u32)]) -> Vec<u16> {
        if params.confidence.is_some() {
            return pixels
                .par_iter()
                .with_min_len(SWEEP_PIXELS)
                .map_init(
                    || Bins::new(tile.n_classes),
                    |bins, &(x, y)| self.at(tile, params, x as usize, y as usize, bins),
                )
                .collect();
        }
        let mut order: Vec<u32> = (0..pixels.len() as u32).collect();
        order.sort_unstable_by_key(|&i| (pixels[i as usize].1, pixels[i as usize].0));
        let decided: Vec<(u32, u16)> = match self.scan_rows {
            true => self.sweep_rows(tile, params, pixels, &order),
            false => order
                .par_chunks(SWEEP_PIXELS)
                .flat_map_iter(|group| self.sweep(tile, params, pixels, group))
                .collect(),
        };
        let mut out = vec![NO_CLASS; pixels.len()];
        for (i, v) in decided {
            out[i as usize] = v;
        }
        out
    }

    /// [`at_all`](Self::at_all) of one group: `group` indexes `pixels`,
    /// sorted by row. Returns (index, result) of each.
    fn sweep(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        pixels: &[(u32, u32)],
        group: &[u32],
    ) -> Vec<(u32, u16)> {
        let (w, n) = (tile.width, self.kernel.n);
        let (mut decided, live) = live_windows(tile, params, pixels, group);
        let Some(&(_, _, last_y)) = live.last() else {
            return decided;
        };
        let mut bins: Vec<Bins> = live.iter().map(|_| Bins::new(tile.n_classes)).collect();
        let mut covering = Covering::from(0);
        for r in live[0].2..last_y + n {
            let windows = covering.row(&live, n, r);
            for (&(_, x, y), bins) in live[windows.clone()].iter().zip(&mut bins[windows]) {
                self.add_window_row(tile, r * w + x, r - y, bins);
            }
        }
        for ((i, x, y), mut bins) in live.into_iter().zip(bins) {
            decided.push((i, winner(tile, params, bins.totals(), x, y)));
        }
        decided
    }

    /// [`at_all`](Self::at_all) scanning rows: `order` indexes `pixels`,
    /// sorted by row. The tile's rows are cut into a few blocks per thread,
    /// and each block into strips of [`STRIP_ROWS`] rows. A strip finds its
    /// rows' changes once, into buffers that stay in cache, then adds the
    /// strip to each window that covers it in turn, window by window: one
    /// window's bins stay in L1 over its rows of the strip. (Row by row,
    /// every window's bins were touched once per row: at σ = 35 on a
    /// 17-class noise map, 13 thousand windows' bins per row went through
    /// memory, and the recomputation ran 2–2.6× the cost per pixel of
    /// naive's own on 16 threads.) The tables of the whole tile's changes
    /// that the strips replace were 4 bytes a tile pixel (35 MB a 2948²
    /// tile at σ = 150), written once and read back from memory. Each
    /// block keeps one row of sums per window it meets; integer sums add
    /// up across blocks in any order, and the blocks' rows are added in
    /// parallel by window.
    fn sweep_rows(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        pixels: &[(u32, u32)],
        order: &[u32],
    ) -> Vec<(u32, u16)> {
        let (w, n) = (tile.width, self.kernel.n);
        let (mut decided, live) = live_windows(tile, params, pixels, order);
        let Some(&(_, _, last_y)) = live.last() else {
            return decided;
        };
        let sums = tile.n_classes + 1;
        let rows = live[0].2..last_y + n;
        let blocks = (2 * rayon::current_num_threads()).min(rows.len()).max(1);
        let block = rows.len().div_ceil(blocks);
        let starts: Vec<usize> = rows.clone().step_by(block).collect();
        let parts: Vec<(usize, Vec<u32>)> = starts
            .par_iter()
            .map(|&r0| {
                let r1 = (r0 + block).min(rows.end);
                // The windows that meet rows r0..r1: live[a..b].
                let a = live.partition_point(|&(_, _, y)| y + n <= r0);
                let b = live.partition_point(|&(_, _, y)| y < r1);
                let mut totals = vec![0u32; (b - a) * sums];
                let mut bins = Bins::new(tile.n_classes);
                let (mut bounds, mut at) = (vec![0u16; STRIP_ROWS * w], vec![0u16; STRIP_ROWS * w]);
                for s0 in (r0..r1).step_by(STRIP_ROWS) {
                    let s1 = (s0 + STRIP_ROWS).min(r1);
                    for (r, (bounds, at)) in (s0..s1).zip(bounds.chunks_exact_mut(w).zip(at.chunks_exact_mut(w))) {
                        row_changes(&tile.classes[r * w..][..w], bounds, at);
                    }
                    // The windows that meet the strip, live[sa..sb].
                    let sa = a + live[a..b].partition_point(|&(_, _, y)| y + n <= s0);
                    let sb = a + live[a..b].partition_point(|&(_, _, y)| y < s1);
                    for (k, &(_, x, y)) in live.iter().enumerate().take(sb).skip(sa) {
                        bins.clear();
                        for r in s0.max(y)..s1.min(y + n) {
                            let at_row = (r - s0) * w;
                            let changes = RowChanges {
                                bounds: &bounds[at_row..][..w],
                                at: &at[at_row..][..w],
                            };
                            self.add_row_by_changes(&tile.classes[r * w..][..w], x, r - y, changes, &mut bins);
                        }
                        let into = &mut totals[(k - a) * sums..][..sums];
                        into.iter_mut().zip(bins.totals()).for_each(|(t, &v)| *t += v);
                    }
                }
                (a, totals)
            })
            .collect();
        // Each window's sums from the blocks that met it, windows in parallel.
        let mut totals = vec![0u32; live.len() * sums];
        totals
            .par_chunks_mut(MERGED_WINDOWS * sums)
            .enumerate()
            .for_each(|(chunk, into)| {
                let (c0, c1) = (chunk * MERGED_WINDOWS, chunk * MERGED_WINDOWS + into.len() / sums);
                for (a, part) in &parts {
                    let (from, to) = (c0.max(*a), c1.min(a + part.len() / sums));
                    if from >= to {
                        continue;
                    }
                    let add = &part[(from - a) * sums..(to - a) * sums];
                    let dst = &mut into[(from - c0) * sums..(to - c0) * sums];
                    dst.iter_mut().zip(add).for_each(|(t, &v)| *t += v);
                }
            });
        decided.par_extend(
            live.par_iter()
                .zip(totals.par_chunks(sums))
                .map(|(&(i, x, y), sums)| (i, winner(tile, params, sums, x, y))),
        );
        decided
    }

    /// Adds the votes of the window whose top-left tile pixel is `origin`
    /// into `bins` (unweighted votes; the bins cleared by the caller).
    pub fn add_window(&self, tile: &ClassTile, origin: usize, bins: &mut Bins) {
        for dy in 0..self.kernel.n {
            self.add_window_row(tile, origin + dy * tile.width, dy, bins);
        }
    }

    /// Adds the votes of kernel row `dy` of a window, whose row starts at
    /// tile pixel `start`, into `bins`.
    #[inline]
    fn add_window_row(&self, tile: &ClassTile, start: usize, dy: usize, bins: &mut Bins) {
        let n = self.kernel.n;
        let line = &tile.classes[start..][..n];
        let pre = self.kernel.prefix_row(dy);
        if self.bounds.is_empty() {
            let mut dx = 0;
            while dx < n {
                let class = line[dx];
                let end = dx + line[dx..].iter().take_while(|&&c| c == class).count();
                bins.add(class, pre[end] - pre[dx]);
                dx = end;
            }
            return;
        }
        let x = start % tile.width;
        let row = start - x;
        let changes = RowChanges {
            bounds: &self.bounds[row..][..tile.width],
            at: &self.changes[row..][..tile.width],
        };
        self.add_row_by_changes(&tile.classes[row..][..tile.width], x, dy, changes, bins);
    }

    /// Adds the votes of kernel row `dy` of the window from column `x` of
    /// the tile row `line`, whose class changes are `changes`.
    #[inline]
    fn add_row_by_changes(&self, line: &[u16], x: usize, dy: usize, changes: RowChanges, bins: &mut Bins) {
        let n = self.kernel.n;
        let (line, pre) = (&line[x..][..n], self.kernel.prefix_row(dy));
        // The row's changes up to the window row's first pixel and last
        // (no wrap: a row holds fewer than 2^16 changes).
        let (before, last) = (changes.bounds[x] as usize, changes.bounds[x + n - 1] as usize);
        if (1 + last - before) * RUN_STEP_TAPS >= self.kernel.taps_in_row(dy) {
            self.kernel.add_row(dy, line, bins);
            return;
        }
        // Each run adds its span of the kernel row's prefix sums; the next
        // run's start is the next change, read, not computed from this run,
        // so the steps do not wait on each other.
        let mut from = 0;
        for &at in &changes.at[before..last] {
            let to = at as usize - x;
            bins.add(line[from], pre[to] - pre[from]);
            from = to;
        }
        bins.add(line[from], pre[n] - pre[from]);
    }
}

/// Where one tile row's class changes ([`row_changes`]).
#[derive(Clone, Copy)]
struct RowChanges<'a> {
    /// Per column, how many changes the row holds up to it.
    bounds: &'a [u16],
    /// The columns where the row's class changes, in order.
    at: &'a [u16],
}

/// A window to sum: its pixel's index in the caller's list, and its output
/// pixel (x, y).
type Window = (u32, usize, usize);

/// Which of a list of windows sorted by row cover each tile row, for rows
/// taken in increasing order: `live[first..end]`.
struct Covering {
    first: usize,
    end: usize,
}

impl Covering {
    /// From window `first` of the list on.
    fn from(first: usize) -> Self {
        Covering { first, end: first }
    }

    /// The windows of `live` (N rows high) that cover tile row `r`, no
    /// row before the last one asked for.
    fn row(&mut self, live: &[Window], n: usize, r: usize) -> std::ops::Range<usize> {
        while self.end < live.len() && live[self.end].2 <= r {
            self.end += 1;
        }
        while self.first < self.end && live[self.first].2 + n <= r {
            self.first += 1;
        }
        self.first..self.end
    }
}

/// The windows of `group` (indices into `pixels`, sorted by row) to sum,
/// as (index, x, y); and the results of those of a nodata centre, which
/// are not summed (unless filled).
fn live_windows(
    tile: &ClassTile,
    params: &SmoothParams,
    pixels: &[(u32, u32)],
    group: &[u32],
) -> (Vec<(u32, u16)>, Vec<Window>) {
    let (mut decided, mut live) = (Vec::new(), Vec::with_capacity(group.len()));
    for &i in group {
        let (x, y) = (pixels[i as usize].0 as usize, pixels[i as usize].1 as usize);
        match centre(tile, x, y) == tile.nodata() && !params.fill_nodata {
            true => decided.push((i, NO_CLASS)),
            false => live.push((i, x, y)),
        }
    }
    (decided, live)
}

/// The class under output pixel `(x, y)`'s centre.
fn centre(tile: &ClassTile, x: usize, y: usize) -> u16 {
    tile.classes[(y + tile.halo) * tile.width + x + tile.halo]
}

/// The winner of output pixel `(x, y)` from its window's `totals`.
fn winner(tile: &ClassTile, params: &SmoothParams, totals: &[u32], x: usize, y: usize) -> u16 {
    pick_winner(&totals[..tile.n_classes], params.class_weights, centre(tile, x, y), params.ties)
}

/// Pixels [`ExactPixels::at_all`] sums in one sweep down the tile: enough
/// that a tile row is read for many windows at once, few enough that a
/// group's bins stay in cache and a tile's groups still spread over the
/// threads.
const SWEEP_PIXELS: usize = 128;

/// Rows of a strip of [`ExactPixels::at_all`]'s sweep by rows: their
/// changes stay in L2 (4 bytes a pixel: 377 KB at a 2948-wide tile) while
/// each window that covers them adds them.
const STRIP_ROWS: usize = 32;

/// Windows whose sums from the row blocks one task adds together.
const MERGED_WINDOWS: usize = 256;

/// The exact result at output pixel `(x, y)` with confidence-weighted
/// votes (docs/semantics.md#confidence): each tap adds its kernel weight
/// times its pixel's quantised confidence, summed in 64 bits (below 2⁴⁷);
/// `acc` is scratch of `n_classes + 1` bins.
#[inline]
pub(super) fn weighted_pixel(
    tile: &ClassTile,
    params: &SmoothParams,
    confidence: &[u16],
    taps: &[(usize, u32)],
    x: usize,
    y: usize,
    acc: &mut [u64],
) -> u16 {
    let origin = y * tile.width + x;
    let centre = tile.classes[origin + tile.halo * tile.width + tile.halo];
    if centre == tile.nodata() && !params.fill_nodata {
        return NO_CLASS;
    }
    acc.iter_mut().for_each(|a| *a = 0);
    let (classes, weights) = (&tile.classes[origin..], &confidence[origin..]);
    for &(offset, q) in taps {
        acc[classes[offset] as usize] += q as u64 * weights[offset] as u64;
    }
    pick_winner_wide(
        &acc[..tile.n_classes],
        params.class_weights,
        centre,
        params.ties,
    )
}

/// Per pixel of a tile of at most 2^16 columns, how many times its row's
/// class changes from the row's start up to it; and where each row's class
/// changes: row r's part of the second table (its columns
/// `r·w..`) lists the columns x > 0 whose pixel differs from the one
/// before, as many as the row's last bound counts. A run walk reads its
/// next run's start from there, instead of from the run before it
/// ([`ExactPixels::add_window`]).
fn run_changes(tile: &ClassTile) -> (Vec<u16>, Vec<u16>) {
    let (w, cells) = (tile.width, tile.classes);
    let (mut bounds, mut changes) = (vec![0u16; tile.height * w], vec![0u16; tile.height * w]);
    bounds
        .par_chunks_mut(w.max(1))
        .zip(changes.par_chunks_mut(w.max(1)))
        .enumerate()
        .with_min_len(crate::grain::min_items(w))
        .for_each(|(r, (bounds, at))| row_changes(&cells[r * w..][..w], bounds, at));
    (bounds, changes)
}

/// One row's part of [`run_changes`]: `bounds[x]` counts the changes of
/// `line` up to column x, and `at` lists the columns x > 0 whose pixel
/// differs from the one before (as many as the last bound counts; the
/// rest of it is scratch).
fn row_changes(line: &[u16], bounds: &mut [u16], at: &mut [u16]) {
    let mut count = 0usize;
    bounds[0] = 0;
    for x in 1..line.len() {
        // Written at every column, kept where the class changes.
        at[count] = x as u16;
        count += usize::from(line[x] != line[x - 1]);
        bounds[x] = count as u16;
    }
}
