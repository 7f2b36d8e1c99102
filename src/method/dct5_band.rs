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

/// Terms (K + 1) the lane kernel keeps in registers; plans with more take
/// the generic path.
pub(crate) const MAX_TERMS: usize = 8;

/// [`LANES`] values, one per lane.
type V = [f64; LANES];

/// The input of one recursion: [`LANES`] independent lines read in step.
trait Lanes {
    /// Element `t` of every lane.
    fn load(&self, t: usize) -> V;
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

impl Lanes for ClassColumns<'_> {
    #[inline(always)]
    fn load(&self, t: usize) -> V {
        let at = self.base + t * self.stride;
        if self.width >= LANES {
            let c: &[u16; LANES] = self.codes[at..at + LANES].try_into().unwrap();
            std::array::from_fn(|j| f64::from(u8::from(c[j] == self.class)))
        } else {
            std::array::from_fn(|j| {
                f64::from(u8::from(j < self.width && self.codes[at + j] == self.class))
            })
        }
    }
}

/// A column-major block whose lane `j` at element `t` is `data[t·stride + j]`.
struct Strip<'a> {
    data: &'a [f64],
    stride: usize,
}

impl Lanes for Strip<'_> {
    #[inline(always)]
    fn load(&self, t: usize) -> V {
        self.data[t * self.stride..t * self.stride + LANES]
            .try_into()
            .unwrap()
    }
}

/// One explicitly seeded segment on [`LANES`] lines at once, its state in
/// registers: output `i` (`i < rows`) is the filter applied to elements
/// `i..=i + 2R`; `emit(i, out)` receives each output.
#[inline(always)]
fn segment<L: Lanes>(tab: &Tables, src: &L, rows: usize, mut emit: impl FnMut(usize, &V)) {
    let (r, terms) = (tab.r, tab.g.len());
    debug_assert!(terms <= MAX_TERMS);
    if rows == 0 {
        return;
    }
    let mut cur = [[0.0; LANES]; MAX_TERMS];
    let mut prev = [[0.0; LANES]; MAX_TERMS];
    seed(tab, src, 0, &mut cur);
    emit(0, &output(tab, &cur));
    if rows == 1 {
        return;
    }
    prev[..terms].copy_from_slice(&cur[..terms]);
    seed(tab, src, 1, &mut cur);
    emit(1, &output(tab, &cur));
    for y in 1..rows - 1 {
        let (lead, lead_in) = (src.load(y + 2 * r + 1), src.load(y + 2 * r));
        let (trail, trail_out) = (src.load(y), src.load(y - 1));
        let mut b = [0.0; LANES];
        for j in 0..LANES {
            let d = lead[j] - trail[j];
            // k = 0: first order, a box sliding by one.
            cur[0][j] += d;
            b[j] = d + (trail_out[j] - lead_in[j]);
        }
        for k in 1..terms {
            let (ak, dk) = (tab.a[k], tab.d[k]);
            for j in 0..LANES {
                let next = ak * cur[k][j] - prev[k][j] + dk * b[j];
                prev[k][j] = cur[k][j];
                cur[k][j] = next;
            }
        }
        emit(y + 1, &output(tab, &cur));
    }
}

/// `F_k` at output `y` by direct sums.
#[inline(always)]
fn seed<L: Lanes>(tab: &Tables, src: &L, y: usize, f: &mut [V; MAX_TERMS]) {
    let terms = tab.g.len();
    *f = [[0.0; LANES]; MAX_TERMS];
    for (t, coeffs) in tab.seed.chunks_exact(terms).enumerate() {
        let v = src.load(y + t);
        for (k, &c) in coeffs.iter().enumerate() {
            for j in 0..LANES {
                f[k][j] += c * v[j];
            }
        }
    }
}

/// One output: `Σ_k G_k·F_k`, summed in ascending k.
#[inline(always)]
fn output(tab: &Tables, f: &[V; MAX_TERMS]) -> V {
    let mut o = [0.0; LANES];
    for (k, g) in tab.g.iter().enumerate() {
        for j in 0..LANES {
            o[j] += g * f[k][j];
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
#[derive(Default)]
struct Scratch {
    extents: Vec<Option<Extent>>,
    pass1: Vec<f64>,
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
    let wmax = params.max_class_weight();
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
        // Pass 1 down the box's columns into `pass1`, column-major: span
        // columns xa..xb + 2R, rows of the strips that hold ya..yb; zero
        // outside the box, so those rows' scores come out exactly 0.
        let pw = xb - xa + 2 * r;
        let (sa, sb) = (ya / LANES, yb.div_ceil(LANES));
        let ph = (sb - sa) * LANES;
        let wc = e.cols.1 + 1 - e.cols.0;
        scratch.pass1.clear();
        scratch.pass1.resize(pw * ph, 0.0);
        let pass1 = &mut scratch.pass1;
        for c0 in (0..wc).step_by(LANES) {
            let lanes = ClassColumns {
                codes: tile.classes,
                stride: tw,
                base: base + ya * tw + e.cols.0 + c0,
                width: wc - c0,
                class: c as u16,
            };
            let col = e.cols.0 + c0 - xa;
            let n = LANES.min(wc - c0);
            let at = ya - sa * LANES;
            segment(
                &job.tab,
                &lanes,
                yb - ya,
                #[inline(always)]
                |i, o| {
                    for (j, &v) in o[..n].iter().enumerate() {
                        pass1[(col + j) * ph + at + i] = v;
                    }
                },
            );
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
                        let scores: V = std::array::from_fn(|j| weight * o[j]);
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
