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
//! ranking slot (see `SlotsMut::update`). Inside the box, per-column class
//! masks skip the columns without the class in pass 1 (they stay exactly 0)
//! and, in pass 2, the outputs whose window holds none of its columns. Both passes run [`LANES`] lines
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
    /// Per input column of the band: bit `c` set where class `c` occurs in
    /// that column (all bits set when there are more than [`MASK_CLASSES`]).
    columns: Vec<u64>,
    /// Active output intervals of one class, `(first, end)` pass-1 columns.
    intervals: Vec<(usize, usize)>,

    pass1: Vec<f64>,
}

/// Classes the per-column presence masks can tell apart.
const MASK_CLASSES: usize = 64;

/// Whether class `c` occurs in a column with presence mask `mask`.
#[inline(always)]
fn holds(mask: u64, c: usize) -> bool {
    c >= MASK_CLASSES || mask >> c & 1 == 1
}

/// The maximal runs of outputs `0..outputs` whose window (pass-1 columns
/// `o..=o + 2R`) meets an active column; every other output scores
/// exactly 0 and is skipped.
fn active_outputs(
    active: impl Iterator<Item = usize>,
    r: usize,
    outputs: usize,
    out: &mut Vec<(usize, usize)>,
) {
    out.clear();
    for q in active {
        let (a, b) = (q.saturating_sub(2 * r), (q + 1).min(outputs));
        if a >= b {
            continue;
        }
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
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
    find_extents(
        tile,
        base,
        bh + 2 * r,
        span,
        &mut scratch.extents,
        &mut scratch.columns,
    );
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
            let first = e.cols.0 + c0;
            let n = LANES.min(wc - c0);
            if !scratch.columns[first..first + n]
                .iter()
                .any(|&m| holds(m, c))
            {
                continue; // no pixel of the class: the columns stay exactly 0
            }
            let lanes = ClassColumns {
                codes: tile.classes,
                stride: tw,
                base: base + ya * tw + e.cols.0 + c0,
                width: wc - c0,
                class: c as u16,
            };
            let col = first - xa;
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
        // Pass 2 along the rows, a strip at a time, over the outputs whose
        // window meets a column of the class; scores folded into the ranking.
        let columns = &scratch.columns;
        active_outputs(
            (e.cols.0..=e.cols.1)
                .filter(|&x| holds(columns[x], c))
                .map(|x| x - xa),
            r,
            xb - xa,
            &mut scratch.intervals,
        );
        let weight = job.weights[c];
        let chunks = scratch.intervals.iter().flat_map(|&(a, b)| {
            (a..b)
                .step_by(job.segment)
                .map(move |at| (at, job.segment.min(b - at)))
        });
        for s in sa..sb {
            for (a, rows) in chunks.clone() {
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
/// at `base` (lines `tile.width` apart), `None` for an absent class; and
/// per column, the mask of the classes in it (see [`Scratch::columns`]).
#[inline(always)]
fn find_extents(
    tile: &ClassTile,
    base: usize,
    rows: usize,
    span: usize,
    out: &mut Vec<Option<Extent>>,
    columns: &mut Vec<u64>,
) {
    let n = tile.n_classes;
    out.clear();
    out.resize(n, None);
    columns.clear();
    columns.resize(span, if n > MASK_CLASSES { u64::MAX } else { 0 });
    // Column bounds per class and row, folded into the boxes row by row.
    let mut lo = vec![usize::MAX; n + 1];
    let mut hi = vec![0usize; n + 1];
    for i in 0..rows {
        let line = &tile.classes[base + i * tile.width..][..span];
        for (x, &v) in line.iter().enumerate() {
            let v = (v as usize).min(n);
            lo[v] = lo[v].min(x);
            hi[v] = x;
            // Codes ≥ 64 (only with masks off, or nodata) set no bit.
            columns[x] |= 1u64.checked_shl(v as u32).unwrap_or(0);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_outputs_cover_every_window_that_meets_an_active_column() {
        // r = 1: output o reads columns o..=o+2; 8 outputs, 10 columns.
        let mut got = Vec::new();
        active_outputs([0, 5, 6].into_iter(), 1, 8, &mut got);
        assert_eq!(got, vec![(0, 1), (3, 7)]);
        active_outputs([9].into_iter(), 1, 8, &mut got);
        assert_eq!(got, vec![(7, 8)]);
        active_outputs(std::iter::empty(), 1, 8, &mut got);
        assert!(got.is_empty());
        // Brute force against the definition on a scattered set.
        let cols = [2usize, 3, 11, 30, 31, 47];
        let (r, outputs) = (3, 45);
        active_outputs(cols.iter().copied(), r, outputs, &mut got);
        for o in 0..outputs {
            let meets = cols.iter().any(|&q| (o..=o + 2 * r).contains(&q));
            let inside = got.iter().any(|&(a, b)| (a..b).contains(&o));
            assert_eq!(meets, inside, "output {o}");
        }
    }

    #[test]
    fn presence_masks_stop_at_64_classes() {
        assert!(holds(0b100, 2) && !holds(0b100, 1));
        assert!(
            holds(0, MASK_CLASSES),
            "classes past the mask are always present"
        );
    }
}
