//! Per-tile helper data for the naive kernel's run path on CPU devices
//! (`-D RUNS` in `kernels/naive.cl`), computed on the host while a tile is
//! staged, and [`score`], the plain Rust twin of that path.
//!
//! A window is cut into *blocks*: maximal sets of consecutive window rows
//! whose N pixels are equal, pixel for pixel. Inside a block every run of
//! equal pixels is a rectangle of one class, whose weight comes from the
//! kernel's summed-area table. So a window costs one step per run per block
//! instead of one per tap: a uniform window is one block of one run, a
//! window crossed by a vertical border a few runs in one block. Integer sums
//! are exact and order-free, so the scores are those of the definition.
//! Rows of many runs (noise) fall back to their taps.
//!
//! The runs of each row are listed once per tile (start and class), and each
//! pixel knows the index of its run, so the runs of a window row are a slice
//! of the list found with two look-ups: the walk has no chain of dependent
//! loads. Building the helper data is O(1) per pixel.

use crate::classes::NO_CLASS;
use crate::method::{ClassTile, SmoothParams, pick_winner};
use rayon::prelude::*;

/// A tile's classes as the host holds them while staging: local indices,
/// or global indices as bytes with the table to local ones (a tile that the
/// device compacts). Both give the same runs and alike rows, since the
/// table is one to one on the values a tile holds.
#[derive(Clone, Copy)]
pub enum Cells<'a> {
    Local(&'a [u16]),
    Staged {
        globals: &'a [u8],
        table: &'a [u8; 256],
    },
}

impl Cells<'_> {
    /// How many pixels equal their right-hand neighbour (rows joined end
    /// to end, as the tile lies in memory).
    pub fn equal_neighbours(&self) -> usize {
        fn count<T: PartialEq>(c: &[T]) -> usize {
            c.windows(2).filter(|p| p[0] == p[1]).count()
        }
        match self {
            Cells::Local(c) => count(c),
            Cells::Staged { globals, .. } => count(globals),
        }
    }
}

/// Helper data of one tile; every plane is indexed like the tile (`r · width + x`).
#[derive(Default)]
pub struct TileRuns {
    width: usize,
    /// Three planes, as the kernel reads them: [`Self::idx`], [`Self::start`], [`Self::class`].
    pub lists: Vec<u16>,
    /// For window starts `x < output width`: how many tile rows from r down
    /// hold, in their N pixels from x, exactly row r's pixels (at least 1),
    /// capped at [`Self::MAX_DOWN`] (above any kernel side, so a uniform
    /// window of any N is found).
    pub down: Vec<u16>,
}

impl TileRuns {
    /// The widest tile the u16 run indices can describe.
    pub const MAX_WIDTH: usize = 1 << 16;

    /// Cap of [`Self::down`].
    pub const MAX_DOWN: u16 = u16::MAX;

    /// Helper data of `tile` (at most [`Self::MAX_WIDTH`] wide) for kernel size `n`.
    pub fn new(tile: &ClassTile, n: usize) -> Self {
        let mut runs = TileRuns::default();
        runs.rebuild(tile, n);
        runs
    }

    /// [`Self::new`] in place, reusing the allocations (fresh pages cost
    /// more than filling them: a few ms per megapixel).
    pub fn rebuild(&mut self, tile: &ClassTile, n: usize) {
        self.rebuild_cells(Cells::Local(tile.classes), tile, n);
    }

    /// [`Self::rebuild`] from `cells`, the classes of a tile shaped as
    /// `tile` (whose own classes are not read).
    pub fn rebuild_cells(&mut self, cells: Cells, tile: &ClassTile, n: usize) {
        match cells {
            Cells::Local(c) => self.build(c, tile, n, |v| v),
            Cells::Staged { globals, table } => {
                self.build(globals, tile, n, |g| table[g as usize] as u16)
            }
        }
    }

    /// The planes from `cells`, whose values `class` maps to the local
    /// indices the kernel bins by: runs and alike rows compare the values
    /// themselves, so only the class plane needs the map.
    fn build<T: Copy + Eq + Sync>(
        &mut self,
        cells: &[T],
        tile: &ClassTile,
        n: usize,
        class_of: impl Fn(T) -> u16 + Sync,
    ) {
        let (w, h) = (tile.width, tile.height);
        assert!(w <= Self::MAX_WIDTH, "tile too wide for u16 run indices");
        assert_eq!(cells.len(), w * h, "cells of the tile");
        let ow = tile.output_width();
        self.width = w;
        // Every entry the kernel reads is written below; others may be stale.
        self.lists.resize(3 * w * h, 0);
        self.down.resize(w * h, 0);
        let (idx, rest) = self.lists.split_at_mut(w * h);
        let (start, class) = rest.split_at_mut(w * h);
        idx.par_chunks_mut(w)
            .zip(start.par_chunks_mut(w))
            .zip(class.par_chunks_mut(w))
            .zip(self.down.par_chunks_mut(w))
            .enumerate()
            .for_each(|(r, (((idx, start), class), marks))| {
                let line = &cells[r * w..][..w];
                let mut i = 0;
                start[0] = 0;
                class[0] = class_of(line[0]);
                idx[0] = 0;
                for x in 1..w {
                    if line[x] != line[x - 1] {
                        i += 1;
                        start[i] = x as u16;
                        class[i] = class_of(line[x]);
                    }
                    idx[x] = i as u16;
                }
                // Mark 1 where row r differs from row r - 1 somewhere in its
                // N pixels from x (or r = 0), else 0.
                if ow == 0 {
                    return;
                }
                if r == 0 {
                    marks[..ow].fill(1);
                    return;
                }
                let above = &cells[(r - 1) * w..][..w];
                let differs = |i: usize| (above[i] != line[i]) as u32;
                let mut inside: u32 = (0..n).map(differs).sum();
                for (x, mark) in marks[..ow].iter_mut().enumerate() {
                    *mark = (inside > 0) as u16;
                    if x + 1 < ow {
                        inside = inside + differs(x + n) - differs(x);
                    }
                }
            });
        // Bottom up, the marks become the lengths of the streaks of alike rows.
        let mut streak = vec![0u32; ow];
        for r in (0..h).rev() {
            for (d, s) in self.down[r * w..][..ow].iter_mut().zip(&mut streak) {
                // `s` is down(r + 1, x) if row r + 1 is alike row r, else 0.
                let v = *s + 1;
                let alike_above = *d == 0;
                *d = v.min(Self::MAX_DOWN as u32) as u16;
                *s = if alike_above { v } else { 0 };
            }
        }
    }

    /// Index of each pixel's run in its row.
    pub fn idx(&self) -> &[u16] {
        &self.lists[..self.down.len()]
    }

    /// Per row, from its first pixel's slot on: the start column of each run.
    pub fn start(&self) -> &[u16] {
        &self.lists[self.down.len()..2 * self.down.len()]
    }

    /// Per row, from its first pixel's slot on: the class of each run.
    pub fn class(&self) -> &[u16] {
        &self.lists[2 * self.down.len()..]
    }

    /// The runs met by the N pixels of tile row r from column x: the indices
    /// of the first and the last in the row's list.
    fn runs_from(&self, r: usize, x: usize, n: usize) -> (usize, usize) {
        let a = r * self.width + x;
        let idx = self.idx();
        (idx[a] as usize, idx[a + n - 1] as usize)
    }
}

/// The kernel's summed-area table: `(n+1)²` entries, entry `(i, j)` the sum
/// of the quantised weights of rows `< i` and columns `< j`. Quantised
/// weights sum to at most 2³¹, so every entry fits in a u32.
pub fn kernel_sat(quantised: &[u32], n: usize) -> Vec<u32> {
    let mut sat = vec![0u32; (n + 1) * (n + 1)];
    for i in 0..n {
        let mut row = 0u32;
        for j in 0..n {
            row += quantised[i * n + j];
            sat[(i + 1) * (n + 1) + j + 1] = sat[i * (n + 1) + j + 1] + row;
        }
    }
    sat
}

/// Window rows with more runs than this visit their taps instead.
pub fn many_runs(n: usize) -> usize {
    n / 2
}

/// The result at output pixel `(x, y)` by blocks and runs, as the `RUNS`
/// path of `naive_fast` computes it; `acc` is scratch of `n_classes + 1`
/// zeroed bins (left zeroed).
pub fn score(
    tile: &ClassTile,
    params: &SmoothParams,
    runs: &TileRuns,
    sat: &[u32],
    x: usize,
    y: usize,
    acc: &mut [u32],
) -> u16 {
    let n = params.kernel.size();
    let q = params.kernel.quantised();
    let w = tile.width;
    let a0 = y * w + x;
    let centre = tile.classes[a0 + tile.halo * w + tile.halo];
    if centre == tile.nodata() && !params.fill_nodata {
        return NO_CLASS;
    }
    let (i0, i1) = runs.runs_from(y, x, n);
    if runs.down[a0] as usize >= n && i0 == i1 {
        // Uniform window: only the centre's class scores.
        return if centre != tile.nodata() && params.class_weights[centre as usize] > 0 {
            centre
        } else {
            NO_CLASS
        };
    }
    let mut dy = 0;
    while dy < n {
        let a = a0 + dy * w;
        let b = (runs.down[a] as usize).min(n - dy);
        let (i0, i1) = runs.runs_from(y + dy, x, n);
        if b == 1 && i1 - i0 + 1 > many_runs(n) {
            for dx in 0..n {
                acc[tile.classes[a + dx] as usize] += q[dy * n + dx];
            }
        } else {
            // Run i covers columns [s, e) of the block's rows: V(e) − V(s).
            let v = |j: usize| sat[(dy + b) * (n + 1) + j] - sat[dy * (n + 1) + j];
            let list = (y + dy) * w;
            let (start, class) = (&runs.start()[list..], &runs.class()[list..]);
            for i in i0..=i1 {
                let s = if i == i0 { 0 } else { start[i] as usize - x };
                let e = if i == i1 {
                    n
                } else {
                    start[i + 1] as usize - x
                };
                acc[class[i] as usize] += v(e) - v(s);
            }
        }
        dy += b;
    }
    let r = pick_winner(
        &acc[..tile.n_classes],
        params.class_weights,
        centre,
        params.ties,
    );
    acc.iter_mut().for_each(|a| *a = 0);
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::naive::exact_pixel;
    use crate::method::naive::taps;

    /// Deterministic blobs of `classes` values, `block` pixels wide, with stray
    /// pixels; value `classes` is nodata.
    fn blobs(w: usize, h: usize, classes: u16, block: usize, seed: u64) -> Vec<u16> {
        let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 20) as u16
        };
        let bw = w.div_ceil(block);
        let cells: Vec<u16> = (0..bw * h.div_ceil(block))
            .map(|_| next() % (classes + 1))
            .collect();
        (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if next() % 29 == 0 {
                    next() % (classes + 1)
                } else {
                    cells[(y / block) * bw + x / block]
                }
            })
            .collect()
    }

    #[test]
    fn planes_match_their_definitions() {
        for (w, h, n, block) in [
            (23, 17, 5, 3),
            (9, 9, 9, 4),
            (40, 12, 3, 1),
            (30, 30, 7, 30),
        ] {
            let data = blobs(w, h, 3, block, (w * n) as u64);
            let tile = ClassTile {
                width: w,
                height: h,
                halo: n / 2,
                n_classes: 3,
                classes: &data,
            };
            let runs = TileRuns::new(&tile, n);
            let at = |x: usize, r: usize| data[r * w + x];
            for r in 0..h {
                for x in 0..w {
                    // Run index: the run starts left of and at x; the list
                    // holds each run's start and class.
                    let i = (1..=x).filter(|&i| at(i, r) != at(i - 1, r)).count();
                    assert_eq!(runs.idx()[r * w + x] as usize, i, "idx {x},{r}");
                    if x == 0 || at(x, r) != at(x - 1, r) {
                        assert_eq!(runs.start()[r * w + i] as usize, x, "start {x},{r}");
                        assert_eq!(runs.class()[r * w + i], at(x, r), "class {x},{r}");
                    }
                    if x >= tile.output_width() {
                        continue;
                    }
                    let down = (r..h)
                        .take_while(|&rr| (x..x + n).all(|i| at(i, rr) == at(i, r)))
                        .count();
                    assert_eq!(runs.down[r * w + x] as usize, down, "down {x},{r}");
                }
            }
        }
    }

    /// Planes built from a tile staged as global bytes (mapped through its
    /// device table) equal those built from its compacted local indices.
    #[test]
    fn staged_planes_equal_the_compacted_tiles() {
        use crate::classes::{CodeLut, NO_CLASS, TileCompaction, stage_globals};
        let mut lut: Box<CodeLut> = Box::new([NO_CLASS; 1 << 16]);
        for (g, code) in [4u16, 9, 17, 30, 31].into_iter().enumerate() {
            lut[code as usize] = 3 * g as u16 + 1;
        }
        let (w, h, n) = (47, 33, 5);
        let codes = [4u16, 9, 17, 30, 31, 0];
        let blob = blobs(w, h, 5, 6, 3);
        let source: Vec<u16> = blob.iter().map(|&v| codes[v as usize]).collect();
        let mut raster = crate::io::MemRaster::new(w, h, source);
        let grid = tiles::TileGrid::new(w, h, n / 2, tiles::Border::Same, 20).unwrap();
        for t in grid.tiles() {
            let mut window = vec![0; t.source.area() as usize];
            crate::io::ClassSource::read(&mut raster, t.source, &mut window).unwrap();
            let mut padded = Vec::new();
            let local = TileCompaction::pad_and_compact(&window, &lut, &t, &mut padded);
            let tile = ClassTile {
                width: t.padded_width,
                height: t.padded_height,
                halo: n / 2,
                n_classes: local.len(),
                classes: &padded,
            };
            let mut staged = vec![0u8; t.padded_len()];
            let present = stage_globals(&window, t.source.width, &lut, &t, &mut staged);
            let table = TileCompaction::from_presence(&present).device_table();
            let cells = Cells::Staged {
                globals: &staged,
                table: &table,
            };
            let want = TileRuns::new(&tile, n);
            let mut got = TileRuns::default();
            got.rebuild_cells(cells, &tile, n);
            assert_eq!(got.lists, want.lists, "{:?}", t.source);
            assert_eq!(got.down, want.down, "{:?}", t.source);
            let local_cells = Cells::Local(&padded);
            assert_eq!(cells.equal_neighbours(), local_cells.equal_neighbours());
        }
    }

    #[test]
    fn tall_alike_streaks_are_counted() {
        // 300 alike rows: down counts past 255 (kernels up to 511 need it).
        let data = vec![2u16; 5 * 300];
        let tile = ClassTile {
            width: 5,
            height: 300,
            halo: 1,
            n_classes: 3,
            classes: &data,
        };
        let runs = TileRuns::new(&tile, 3);
        assert_eq!(runs.down[0], 300);
        assert_eq!(runs.down[100 * 5 + 2], 200);
        assert_eq!(runs.down[299 * 5], 1);
        assert_eq!(runs.idx()[299 * 5 + 4], 0);
    }

    #[test]
    fn sat_sums_rectangles() {
        let kernel = KernelSpec::Disc { radius: 3 }.build().unwrap();
        let (n, q) = (kernel.size(), kernel.quantised());
        let sat = kernel_sat(q, n);
        let rect = |a: usize, b: usize, s: usize, e: usize| {
            (a..b)
                .flat_map(|i| (s..e).map(move |j| (i, j)))
                .map(|(i, j)| q[i * n + j])
                .sum::<u32>()
        };
        for (a, b, s, e) in [(0, n, 0, n), (1, 3, 2, 6), (4, 5, 0, 1), (2, 2, 1, 4)] {
            let got = sat[b * (n + 1) + e] - sat[a * (n + 1) + e] - sat[b * (n + 1) + s]
                + sat[a * (n + 1) + s];
            assert_eq!(got, rect(a, b, s, e));
        }
    }

    /// The run path against the plain definition on blobs (uniform windows,
    /// alike rows, borders), noise (the tap fallback) and nodata.
    #[test]
    fn scores_match_the_definition() {
        let kernels = [
            KernelSpec::Gaussian {
                sigma: 1.5,
                size: None,
            },
            KernelSpec::Box { size: 7 },
            KernelSpec::Disc { radius: 4 },
            KernelSpec::Box { size: 1 },
        ];
        for spec in &kernels {
            let kernel = spec.build().unwrap();
            let n = kernel.size();
            for block in [1, 3, 8, 40] {
                for (weights, fill) in [(&[1u32, 1, 1, 1][..], false), (&[3, 1, 2][..], true)] {
                    let classes = weights.len();
                    let (w, h) = (37 + n - 1, 29 + n - 1);
                    let data = blobs(w, h, classes as u16, block, (block * 7 + n) as u64);
                    let tile = ClassTile {
                        width: w,
                        height: h,
                        halo: n / 2,
                        n_classes: classes,
                        classes: &data,
                    };
                    let params = SmoothParams {
                        kernel: &kernel,
                        class_weights: weights,
                        fill_nodata: fill,
                        ties: Default::default(),
                        confidence: None,
                    };
                    let runs = TileRuns::new(&tile, n);
                    let sat = kernel_sat(kernel.quantised(), n);
                    let taps = taps(&tile, &params);
                    let mut acc = vec![0u32; classes + 1];
                    let mut scratch = crate::method::naive::Bins::new(classes);
                    for y in 0..tile.output_height() {
                        for x in 0..tile.output_width() {
                            let want = exact_pixel(&tile, &params, &taps, x, y, &mut scratch);
                            let got = score(&tile, &params, &runs, &sat, x, y, &mut acc);
                            assert_eq!(got, want, "{spec:?} block {block} at {x},{y}");
                        }
                    }
                }
            }
        }
    }
}
