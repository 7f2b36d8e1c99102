//! The host dct5 scorer, band by band and class by class over only the
//! pixels a class can reach (the fast path of
//! [`SeparablePlan::rank`](super::separable::SeparablePlan::rank) for dct5
//! plans).
//!
//! The output is cut into bands of at least 120 rows (a multiple
//! of [`LANES`]); bands run in parallel, each with its own scratch. In a
//! band, one scan of its input rows finds every class's bounding box; a
//! class absent from the band costs nothing, and a present one is filtered
//! only over its box plus the kernel's reach: outside it the indicator is
//! zero, so the exact score is zero, and a zero score never changes a
//! ranking slot (see `SlotsMut::update`). Both passes run [`LANES`] lines
//! in step with the recursion state in registers: pass 1 down [`LANES`]
//! columns of the box straight from the class codes (no indicator plane),
//! writing a column-major block; pass 2 along [`LANES`] rows of that block
//! (contiguous there, so no transpose), folding each score into the ranking
//! at once. Plans of more than [`MAX_TERMS`] terms take the generic path.
//!
//! The arithmetic is that of [`Dct5::segment_pass`] (same seeds, same
//! recursion, same order of sums) on segments no longer than
//! [`Dct5::segment`], so [`Dct5::rounding_bound`] holds unchanged; a score
//! skipped outside a box is exact, so it is within any bound too.

use super::dct5::{Dct5, cos_index, cos_table};
use super::separable::{LANES, Ranking, SlotsMut};
use super::{ClassTile, SmoothParams};
use rayon::prelude::*;
use std::ops::{Add, AddAssign, Mul, Sub};

/// The lanes' float type: f64, or f32 (twice the lanes per AVX2 vector)
/// where the plan's bound was computed for f32 (see
/// [`SeparableHost`](super::separable::SeparableHost)).
trait Real:
    Copy + Default + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + AddAssign
{
    /// `v` rounded to nearest.
    fn of(v: f64) -> Self;
    fn wide(self) -> f64;
}

impl Real for f64 {
    #[inline(always)]
    fn of(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        self
    }
}

impl Real for f32 {
    #[inline(always)]
    fn of(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn wide(self) -> f64 {
        f64::from(self)
    }
}

/// The constants of one filter: `G_k`, the seeds' `cos(φk(t − R))` (at
/// `t·terms + k`), `2cos(φk)`, `cos(φkR)`.
/// Computed in f64, then rounded to `T`.
struct Tables<T> {
    r: usize,
    g: Vec<T>,
    seed: Vec<T>,
    a: Vec<T>,
    d: Vec<T>,
}

impl<T: Real> Tables<T> {
    fn new(f: &Dct5) -> Self {
        let r = f.radius();
        let n = 2 * r + 1;
        let cos = cos_table(n);
        let terms = f.coeffs().len();
        Tables {
            r,
            g: f.coeffs().iter().map(|&g| T::of(g)).collect(),
            a: (0..terms).map(|k| T::of(2.0 * cos[k % n])).collect(),
            d: (0..terms).map(|k| T::of(cos[(k * r) % n])).collect(),
            seed: (0..n)
                .flat_map(|t| (0..terms).map(move |k| (t, k)))
                .map(|(t, k)| T::of(cos[cos_index(k, t, r)]))
                .collect(),
        }
    }
}

/// Terms (K + 1) the lane kernel keeps in registers; plans with more take
/// the generic path.
pub(crate) const MAX_TERMS: usize = 8;

/// [`LANES`] values, one per lane.
type V<T> = [T; LANES];

/// The input of one recursion: [`LANES`] independent lines read in step.
trait Lanes<T> {
    /// Element `t` of every lane.
    fn load(&self, t: usize) -> V<T>;
}

/// [`LANES`] neighbouring columns of class codes, read as the indicator of one
/// class; columns at or beyond `width` read as 0.
struct ClassColumns<'a> {
    codes: &'a [u16],
    stride: usize,
    /// Index of element 0 of lane 0.
    base: usize,
    width: usize,
    class: u16,
}

impl<T: Real> Lanes<T> for ClassColumns<'_> {
    #[inline(always)]
    fn load(&self, t: usize) -> V<T> {
        let at = self.base + t * self.stride;
        if self.width >= LANES {
            let c: &[u16; LANES] = self.codes[at..at + LANES].try_into().unwrap();
            std::array::from_fn(|j| T::of(f64::from(u8::from(c[j] == self.class))))
        } else {
            std::array::from_fn(|j| {
                T::of(f64::from(u8::from(
                    j < self.width && self.codes[at + j] == self.class,
                )))
            })
        }
    }
}

/// A column-major block whose lane `j` at element `t` is `data[t·stride + j]`.
struct Strip<'a, T> {
    data: &'a [T],
    stride: usize,
}

impl<T: Real> Lanes<T> for Strip<'_, T> {
    #[inline(always)]
    fn load(&self, t: usize) -> V<T> {
        self.data[t * self.stride..t * self.stride + LANES]
            .try_into()
            .unwrap()
    }
}

/// One explicitly seeded segment on [`LANES`] lines at once, its state in
/// registers: output `i` (`i < rows`) is the filter applied to elements
/// `i..=i + 2R`; `emit(i, out)` receives each output.
#[inline(always)]
fn segment<T: Real, L: Lanes<T>>(
    tab: &Tables<T>,
    src: &L,
    rows: usize,
    emit: impl FnMut(usize, &V<T>),
) {
    // The term count as a constant, so that the loops over terms unroll and
    // the recursion state stays in registers.
    match tab.g.len() {
        1 => segment_k::<T, L, 1>(tab, src, rows, emit),
        2 => segment_k::<T, L, 2>(tab, src, rows, emit),
        3 => segment_k::<T, L, 3>(tab, src, rows, emit),
        4 => segment_k::<T, L, 4>(tab, src, rows, emit),
        5 => segment_k::<T, L, 5>(tab, src, rows, emit),
        6 => segment_k::<T, L, 6>(tab, src, rows, emit),
        7 => segment_k::<T, L, 7>(tab, src, rows, emit),
        _ => segment_k::<T, L, MAX_TERMS>(tab, src, rows, emit),
    }
}

/// [`segment`] for `K` terms (`K = tab.g.len()`).
#[inline(always)]
fn segment_k<T: Real, L: Lanes<T>, const K: usize>(
    tab: &Tables<T>,
    src: &L,
    rows: usize,
    mut emit: impl FnMut(usize, &V<T>),
) {
    debug_assert_eq!(tab.g.len(), K);
    let r = tab.r;
    if rows == 0 {
        return;
    }
    let g: [T; K] = std::array::from_fn(|k| tab.g[k]);
    let a: [T; K] = std::array::from_fn(|k| tab.a[k]);
    let d: [T; K] = std::array::from_fn(|k| tab.d[k]);
    let mut cur = seed::<T, L, K>(tab, src, 0);
    emit(0, &output(&g, &cur));
    if rows == 1 {
        return;
    }
    let mut prev = cur;
    cur = seed::<T, L, K>(tab, src, 1);
    emit(1, &output(&g, &cur));
    for y in 1..rows - 1 {
        let (lead, lead_in) = (src.load(y + 2 * r + 1), src.load(y + 2 * r));
        let (trail, trail_out) = (src.load(y), src.load(y - 1));
        let mut b = [T::default(); LANES];
        for j in 0..LANES {
            let dj = lead[j] - trail[j];
            // k = 0: first order, a box sliding by one.
            cur[0][j] += dj;
            b[j] = dj + (trail_out[j] - lead_in[j]);
        }
        for k in 1..K {
            for j in 0..LANES {
                let next = a[k] * cur[k][j] - prev[k][j] + d[k] * b[j];
                prev[k][j] = cur[k][j];
                cur[k][j] = next;
            }
        }
        emit(y + 1, &output(&g, &cur));
    }
}

/// `F_k` at output `y` by direct sums.
#[inline(always)]
fn seed<T: Real, L: Lanes<T>, const K: usize>(tab: &Tables<T>, src: &L, y: usize) -> [V<T>; K] {
    let mut f = [[T::default(); LANES]; K];
    for (t, coeffs) in tab.seed.chunks_exact(K).enumerate() {
        let v = src.load(y + t);
        for (k, &c) in coeffs.iter().enumerate() {
            for j in 0..LANES {
                f[k][j] += c * v[j];
            }
        }
    }
    f
}

/// One output: `Σ_k G_k·F_k`, summed in ascending k.
#[inline(always)]
fn output<T: Real, const K: usize>(g: &[T; K], f: &[V<T>; K]) -> V<T> {
    let mut o = [T::default(); LANES];
    for k in 0..K {
        for j in 0..LANES {
            o[j] += g[k] * f[k][j];
        }
    }
    o
}

/// Where one class lies in a band's input: rows and columns, inclusive.
#[derive(Clone, Copy)]
struct Extent {
    rows: (usize, usize),
    cols: (usize, usize),
}

/// Per-thread scratch of a band.
struct Scratch<T> {
    extents: Vec<Option<Extent>>,
    pass1: Vec<T>,
}

impl<T> Default for Scratch<T> {
    fn default() -> Self {
        Scratch {
            extents: Vec::new(),
            pass1: Vec::new(),
        }
    }
}

/// What every band shares.
struct Job<'a, T> {
    tab: Tables<T>,
    tile: &'a ClassTile<'a>,
    weights: Vec<f64>,
    /// Tile rows and columns skipped before the kernel's reach (extra halo).
    skip: usize,
    ow: usize,
    oh: usize,
    band: usize,
    segment: usize,
    tau: f64,
}

/// Scores every class of `tile` with the dct5 filter `f` (used down the
/// columns and along the rows) and folds the scores into `ranking`, in f32
/// lanes if `single` (the plan's bound must then be the f32 one), else f64.
/// `skip`: tile rows/columns outside the kernel's reach on every side.
pub(crate) fn rank_tile(
    f: &Dct5,
    tile: &ClassTile,
    params: &SmoothParams,
    skip: usize,
    tau: f64,
    single: bool,
    ranking: &mut Ranking,
) {
    if single {
        rank_in::<f32>(f, tile, params, skip, tau, ranking)
    } else {
        rank_in::<f64>(f, tile, params, skip, tau, ranking)
    }
}

fn rank_in<T: Real + Send + Sync>(
    f: &Dct5,
    tile: &ClassTile,
    params: &SmoothParams,
    skip: usize,
    tau: f64,
    ranking: &mut Ranking,
) {
    let (ow, oh) = (tile.output_width(), tile.output_height());
    let wmax = params
        .class_weights
        .iter()
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let job = Job {
        tab: Tables::<T>::new(f),
        tile,
        weights: params.class_weights[..tile.n_classes]
            .iter()
            .map(|&w| w as f64 / wmax)
            .collect(),
        skip,
        ow,
        oh,
        // Bands of at least 120 rows (pass 1 reads 2R more), segments
        // within them no longer than the bound's.
        band: (f.segment().max(120) / LANES).max(1) * LANES,
        segment: f.segment(),
        tau,
    };
    ranking
        .runs_mut(job.band)
        .enumerate()
        .for_each_init(Scratch::default, |scratch, (b, mut slots)| {
            run_band(&job, b * job.band, &mut slots, scratch)
        });
}

fn run_band<T: Real>(job: &Job<T>, y0: usize, slots: &mut SlotsMut, scratch: &mut Scratch<T>) {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports AVX2 (checked just above).
        return unsafe { band_avx2(job, y0, slots, scratch) };
    }
    band(job, y0, slots, scratch)
}

/// [`band`] compiled for AVX2 (the same arithmetic, wider vectors).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn band_avx2<T: Real>(
    job: &Job<T>,
    y0: usize,
    slots: &mut SlotsMut,
    scratch: &mut Scratch<T>,
) {
    band(job, y0, slots, scratch)
}

/// Output rows `y0..y0 + band` (fewer at the bottom) into their ranking slots.
#[inline(always)]
fn band<T: Real>(job: &Job<T>, y0: usize, slots: &mut SlotsMut, scratch: &mut Scratch<T>) {
    let tile = job.tile;
    let (r, ow, skip) = (job.tab.r, job.ow, job.skip);
    let bh = job.band.min(job.oh - y0);
    let span = ow + 2 * r;
    let tw = tile.width;
    let base = (skip + y0) * tw + skip;
    find_extents(tile, base, bh + 2 * r, span, &mut scratch.extents);
    for c in 0..tile.n_classes {
        let Some(e) = scratch.extents[c] else {
            continue;
        };
        // Outputs whose window meets the box (band-local rows, output columns).
        let (ya, yb) = (e.rows.0.saturating_sub(2 * r), bh.min(e.rows.1 + 1));
        let (xa, xb) = (e.cols.0.saturating_sub(2 * r), ow.min(e.cols.1 + 1));
        if ya >= yb || xa >= xb {
            continue;
        }
        // Pass 1 down the box's columns into `pass1`, column-major: span
        // columns xa..xb + 2R, rows of the strips that hold ya..yb; zero
        // outside the box, so those rows' scores come out exactly 0.
        let pw = xb - xa + 2 * r;
        let (sa, sb) = (ya / LANES, yb.div_ceil(LANES));
        let ph = (sb - sa) * LANES;
        let wc = e.cols.1 + 1 - e.cols.0;
        scratch.pass1.clear();
        scratch.pass1.resize(pw * ph, T::default());
        let pass1 = &mut scratch.pass1;
        let at = ya - sa * LANES;
        for c0 in (0..wc).step_by(LANES) {
            let col = e.cols.0 + c0 - xa;
            let n = LANES.min(wc - c0);
            // Segments of at most `job.segment` outputs (the bound's length).
            for y1 in (ya..yb).step_by(job.segment) {
                let rows = job.segment.min(yb - y1);
                let lanes = ClassColumns {
                    codes: tile.classes,
                    stride: tw,
                    base: base + y1 * tw + e.cols.0 + c0,
                    width: wc - c0,
                    class: c as u16,
                };
                let at = at + y1 - ya;
                // Outputs gathered [`LANES`] at a time and stored as runs
                // down each column, not one scattered value per column.
                let mut buf = [[T::default(); LANES]; LANES];
                segment(
                    &job.tab,
                    &lanes,
                    rows,
                    #[inline(always)]
                    |i, o| {
                        buf[i % LANES] = *o;
                        if i % LANES == LANES - 1 {
                            let i0 = at + i + 1 - LANES;
                            for j in 0..n {
                                let run: &mut [T; LANES] = (&mut pass1[(col + j) * ph + i0..]
                                    [..LANES])
                                    .try_into()
                                    .unwrap();
                                *run = std::array::from_fn(|q| buf[q][j]);
                            }
                        }
                    },
                );
                let done = rows / LANES * LANES;
                for q in done..rows {
                    for j in 0..n {
                        pass1[(col + j) * ph + at + q] = buf[q % LANES][j];
                    }
                }
            }
        }
        // Pass 2 along the rows, a strip at a time, scores folded into the ranking.
        let weight = job.weights[c];
        for s in sa..sb {
            for a in (0..xb - xa).step_by(job.segment) {
                let rows = job.segment.min(xb - xa - a);
                let lanes = Strip {
                    data: &scratch.pass1[a * ph + (s - sa) * LANES..],
                    stride: ph,
                };
                segment(
                    &job.tab,
                    &lanes,
                    rows,
                    #[inline(always)]
                    |i, o| {
                        let x = xa + a + i;
                        let scores: [f64; LANES] = std::array::from_fn(|j| weight * o[j].wide());
                        slots.update((s * ow + x) * LANES, c as u16, &scores, job.tau);
                    },
                );
            }
        }
    }
}

/// The bounding box of every class in `rows` lines of `span` codes starting
/// at `base` (lines `tile.width` apart); `None` for an absent class.
#[inline(always)]
fn find_extents(
    tile: &ClassTile,
    base: usize,
    rows: usize,
    span: usize,
    out: &mut Vec<Option<Extent>>,
) {
    let n = tile.n_classes;
    out.clear();
    out.resize(n, None);
    // Column bounds per class and row, folded into the boxes row by row.
    let mut lo = vec![usize::MAX; n + 1];
    let mut hi = vec![0usize; n + 1];
    for i in 0..rows {
        let line = &tile.classes[base + i * tile.width..][..span];
        for (x, &v) in line.iter().enumerate() {
            let v = (v as usize).min(n);
            lo[v] = lo[v].min(x);
            hi[v] = x;
        }
        for c in 0..n {
            if lo[c] != usize::MAX {
                let e = out[c].get_or_insert(Extent {
                    rows: (i, i),
                    cols: (lo[c], hi[c]),
                });
                e.rows.1 = i;
                e.cols = (e.cols.0.min(lo[c]), e.cols.1.max(hi[c]));
                lo[c] = usize::MAX;
                hi[c] = 0;
            }
        }
    }
}
