//! The host dct5 scorer, band by band and class by class over only the
//! pixels a class can reach (the fast path of
//! [`SeparablePlan::rank`](super::separable::SeparablePlan::rank) for dct5
//! plans).
//!
//! The output is cut into bands of at most one segment of rows (a multiple
//! of [`LANES`]); bands run in parallel, each with its own scratch. In a
//! band, one scan of its input rows finds every class's bounding box; a
//! class absent from the band costs nothing, and a present one is filtered
//! only over its box plus the kernel's reach: outside it the indicator is
//! zero, so the exact score is zero, and a zero score never changes a
//! ranking slot (see `Slot::update`). Pass 1 runs the recursion down the
//! box's columns straight from the class codes (no indicator plane); pass 2
//! runs along the rows, [`LANES`] rows at a time, from an `x × LANES`
//! transposed strip, and folds each score into the ranking at once.
//!
//! The arithmetic is that of [`Dct5::segment_pass`] (same seeds, same
//! recursion, same order of sums) on segments no longer than
//! [`Dct5::segment`], so [`Dct5::rounding_bound`] holds unchanged; a score
//! skipped outside a box is exact, so it is within any bound too.

use super::dct5::{Dct5, cos_index, cos_table};
use super::separable::{LANES, Ranking, SlotsMut};
use super::{ClassTile, SmoothParams};
use rayon::prelude::*;

/// The constants of one filter: `G_k`, the seeds' `cos(φk(t − R))` (at
/// `t·terms + k`), `2cos(φk)`, `cos(φkR)`.
struct Tables {
    r: usize,
    g: Vec<f64>,
    seed: Vec<f64>,
    a: Vec<f64>,
    d: Vec<f64>,
}

impl Tables {
    fn new(f: &Dct5) -> Self {
        let r = f.radius();
        let n = 2 * r + 1;
        let cos = cos_table(n);
        let terms = f.coeffs().len();
        Tables {
            r,
            g: f.coeffs().to_vec(),
            a: (0..terms).map(|k| 2.0 * cos[k % n]).collect(),
            d: (0..terms).map(|k| cos[(k * r) % n]).collect(),
            seed: (0..n)
                .flat_map(|t| (0..terms).map(move |k| (t, k)))
                .map(|(t, k)| cos[cos_index(k, t, r)])
                .collect(),
        }
    }
}

/// The input lines of one recursion, each `width()` values wide.
trait Lines {
    fn width(&self) -> usize;
    /// `acc[x] += c · line(t)[x]`.
    fn axpy(&self, t: usize, c: f64, acc: &mut [f64]);
    /// With `lead = y + 2R + 1`: `b0 = line(lead) − line(y)` and
    /// `b = b0 + (line(y − 1) − line(lead − 1))`.
    fn diffs(&self, y: usize, r: usize, b0: &mut [f64], b: &mut [f64]);
}

/// Rows of class codes read as the indicator of one class.
struct ClassLines<'a> {
    codes: &'a [u16],
    stride: usize,
    /// Index of line 0's first value.
    base: usize,
    width: usize,
    class: u16,
}

impl ClassLines<'_> {
    #[inline(always)]
    fn line(&self, t: usize) -> &[u16] {
        &self.codes[self.base + t * self.stride..][..self.width]
    }
}

#[inline(always)]
fn ind(v: u16, c: u16) -> f64 {
    f64::from(u8::from(v == c))
}

impl Lines for ClassLines<'_> {
    #[inline(always)]
    fn width(&self) -> usize {
        self.width
    }

    #[inline(always)]
    fn axpy(&self, t: usize, c: f64, acc: &mut [f64]) {
        let cls = self.class;
        for (a, &v) in acc.iter_mut().zip(self.line(t)) {
            *a += c * ind(v, cls);
        }
    }

    #[inline(always)]
    fn diffs(&self, y: usize, r: usize, b0: &mut [f64], b: &mut [f64]) {
        let cls = self.class;
        let (lead, lead_in) = (self.line(y + 2 * r + 1), self.line(y + 2 * r));
        let (trail, trail_out) = (self.line(y), self.line(y - 1));
        for (((((z, o), &l), &li), &t), &to) in b0
            .iter_mut()
            .zip(b.iter_mut())
            .zip(lead)
            .zip(lead_in)
            .zip(trail)
            .zip(trail_out)
        {
            let d = ind(l, cls) - ind(t, cls);
            *z = d;
            *o = d + (ind(to, cls) - ind(li, cls));
        }
    }
}

/// A transposed strip: line `t` is `data[t·LANES..(t+1)·LANES]`.
struct StripLines<'a> {
    data: &'a [f64],
}

impl StripLines<'_> {
    #[inline(always)]
    fn line(&self, t: usize) -> &[f64; LANES] {
        self.data[t * LANES..(t + 1) * LANES].try_into().unwrap()
    }
}

impl Lines for StripLines<'_> {
    #[inline(always)]
    fn width(&self) -> usize {
        LANES
    }

    #[inline(always)]
    fn axpy(&self, t: usize, c: f64, acc: &mut [f64]) {
        for (a, &v) in acc.iter_mut().zip(self.line(t)) {
            *a += c * v;
        }
    }

    #[inline(always)]
    fn diffs(&self, y: usize, r: usize, b0: &mut [f64], b: &mut [f64]) {
        let (lead, lead_in) = (self.line(y + 2 * r + 1), self.line(y + 2 * r));
        let (trail, trail_out) = (self.line(y), self.line(y - 1));
        for j in 0..LANES {
            let d = lead[j] - trail[j];
            b0[j] = d;
            b[j] = d + (trail_out[j] - lead_in[j]);
        }
    }
}

/// Recursion state, reused across segments.
#[derive(Default)]
struct State {
    cur: Vec<f64>,
    prev: Vec<f64>,
    b0: Vec<f64>,
    b: Vec<f64>,
    out: Vec<f64>,
}

/// One explicitly seeded segment: output `i` (`i < rows`) is the filter
/// applied to lines `i..=i + 2R`; `emit(i, out)` receives each output line.
#[inline(always)]
fn segment<L: Lines>(
    tab: &Tables,
    src: &L,
    rows: usize,
    st: &mut State,
    mut emit: impl FnMut(usize, &[f64]),
) {
    let (r, w, terms) = (tab.r, src.width(), tab.g.len());
    if rows == 0 || w == 0 {
        return;
    }
    for v in [&mut st.cur, &mut st.prev] {
        v.clear();
        v.resize(terms * w, 0.0);
    }
    for v in [&mut st.b0, &mut st.b, &mut st.out] {
        v.clear();
        v.resize(w, 0.0);
    }
    seed(tab, src, 0, &mut st.cur);
    emit_line(tab, &st.cur, &mut st.out);
    emit(0, &st.out);
    if rows == 1 {
        return;
    }
    std::mem::swap(&mut st.cur, &mut st.prev);
    seed(tab, src, 1, &mut st.cur);
    emit_line(tab, &st.cur, &mut st.out);
    emit(1, &st.out);
    for y in 1..rows - 1 {
        src.diffs(y, r, &mut st.b0, &mut st.b);
        // k = 0: first order, a box sliding by one.
        st.cur[..w]
            .iter_mut()
            .zip(&st.b0)
            .for_each(|(f, b)| *f += b);
        for k in 1..terms {
            let (ak, dk) = (tab.a[k], tab.d[k]);
            let range = k * w..(k + 1) * w;
            for ((p, &c), &b) in st.prev[range.clone()]
                .iter_mut()
                .zip(&st.cur[range])
                .zip(&st.b)
            {
                *p = ak * c - *p + dk * b;
            }
        }
        // prev now holds F(y + 1) for k ≥ 1; cur still F(y).
        if terms > 1 {
            let (cur, prev) = (&mut st.cur[w..], &mut st.prev[w..]);
            cur.swap_with_slice(prev);
        }
        emit_line(tab, &st.cur, &mut st.out);
        emit(y + 1, &st.out);
    }
}

/// `F_k` at output `y` by direct sums (`terms × w`).
#[inline(always)]
fn seed<L: Lines>(tab: &Tables, src: &L, y: usize, f: &mut [f64]) {
    let (w, terms) = (src.width(), tab.g.len());
    f.iter_mut().for_each(|v| *v = 0.0);
    for (t, coeffs) in tab.seed.chunks_exact(terms).enumerate() {
        for (k, &c) in coeffs.iter().enumerate() {
            src.axpy(y + t, c, &mut f[k * w..(k + 1) * w]);
        }
    }
}

/// One output line: `Σ_k G_k·F_k`.
#[inline(always)]
fn emit_line(tab: &Tables, f: &[f64], o: &mut [f64]) {
    let w = o.len();
    o.iter_mut().for_each(|v| *v = 0.0);
    for (k, g) in tab.g.iter().enumerate() {
        o.iter_mut()
            .zip(&f[k * w..(k + 1) * w])
            .for_each(|(v, x)| *v += g * x);
    }
}

/// Where one class lies in a band's input: rows and columns, inclusive.
#[derive(Clone, Copy)]
struct Extent {
    rows: (usize, usize),
    cols: (usize, usize),
}

/// Per-thread scratch of a band.
#[derive(Default)]
struct Scratch {
    extents: Vec<Option<Extent>>,
    pass1: Vec<f64>,
    strip: Vec<f64>,
    state: State,
}

/// What every band shares.
struct Job<'a> {
    tab: Tables,
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
/// columns and along the rows) and folds the scores into `ranking`.
/// `skip`: tile rows/columns outside the kernel's reach on every side.
pub(crate) fn rank_tile(
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
        tab: Tables::new(f),
        tile,
        weights: params.class_weights[..tile.n_classes]
            .iter()
            .map(|&w| w as f64 / wmax)
            .collect(),
        skip,
        ow,
        oh,
        band: (f.segment() / LANES).max(1) * LANES,
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

fn run_band(job: &Job, y0: usize, slots: &mut SlotsMut, scratch: &mut Scratch) {
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
unsafe fn band_avx2(job: &Job, y0: usize, slots: &mut SlotsMut, scratch: &mut Scratch) {
    band(job, y0, slots, scratch)
}

/// Output rows `y0..y0 + band` (fewer at the bottom) into their ranking slots.
#[inline(always)]
fn band(job: &Job, y0: usize, slots: &mut SlotsMut, scratch: &mut Scratch) {
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
        // Pass 1 over the box's columns into pass1 (rows ya..yb, span
        // columns xa..xb + 2R, zero outside the box).
        let pw = xb - xa + 2 * r;
        let off = e.cols.0 - xa;
        let wc = e.cols.1 + 1 - e.cols.0;
        scratch.pass1.clear();
        scratch.pass1.resize((yb - ya) * pw, 0.0);
        let lines = ClassLines {
            codes: tile.classes,
            stride: tw,
            base: base + ya * tw + e.cols.0,
            width: wc,
            class: c as u16,
        };
        let pass1 = &mut scratch.pass1;
        segment(
            &job.tab,
            &lines,
            yb - ya,
            &mut scratch.state,
            #[inline(always)]
            |i, o| pass1[i * pw + off..][..wc].copy_from_slice(o),
        );
        // Pass 2 strip by strip, scores folded into the ranking.
        let weight = job.weights[c];
        for s in ya / LANES..yb.div_ceil(LANES) {
            // Rows outside ya..yb stay zero: their scores come out exactly 0.
            scratch.strip.clear();
            scratch.strip.resize(pw * LANES, 0.0);
            for j in (0..LANES).filter(|j| (ya..yb).contains(&(s * LANES + j))) {
                let row = &scratch.pass1[(s * LANES + j - ya) * pw..][..pw];
                for (x, &v) in row.iter().enumerate() {
                    scratch.strip[x * LANES + j] = v;
                }
            }
            for a in (0..xb - xa).step_by(job.segment) {
                let rows = job.segment.min(xb - xa - a);
                let lines = StripLines {
                    data: &scratch.strip[a * LANES..],
                };
                segment(
                    &job.tab,
                    &lines,
                    rows,
                    &mut scratch.state,
                    #[inline(always)]
                    |i, o| {
                        let x = xa + a + i;
                        let s8: [f64; LANES] = std::array::from_fn(|j| weight * o[j]);
                        slots.update((s * ow + x) * LANES, c as u16, &s8, job.tau);
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
