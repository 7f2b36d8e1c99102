//! The host dct5 scorer, band by band and class by class over only the
//! pixels a class can reach (the fast path of
//! [`SeparablePlan::rank`](super::separable::SeparablePlan::rank) for dct5
//! plans).
//!
//! The output is cut into bands of at most one segment of rows (a multiple
//! of [`LANES`]); bands run in parallel, each with its thread's scratch
//! (kept across bands and tiles). One scan of a band's input rows finds
//! every class's bounding box and, per block of [`LANES`] rows and per
//! column, the set of classes there. A class absent from the band costs
//! nothing; a present one runs pass 1 down the columns of its box that hold
//! it, per group of [`WIDE`] columns only over the rows whose windows reach
//! its blocks there (everything else stays exactly 0), straight from the
//! class codes into a strip-major plane on whole cache lines. Pass 2 then
//! goes strip by strip ([`LANES`] output rows), every class in turn, so
//! that the strip's ranking slots stay in cache (cleared there, just before
//! the first class folds in): along the rows, over the runs of outputs
//! whose windows (in that strip) hold the class, folding each score into
//! the ranking at once.
//! Outside those runs the exact score is zero, and a zero score never
//! changes a ranking slot (see `SlotsMut::update`).
//!
//! An output whose windows in the strip hold one class only is decided
//! without scores (`SlotsMut::single`): with the centre not nodata, that
//! class holds the centre, whose kernel weight is positive, so it is the one
//! class with a positive exact score — the exact answer, certified with the
//! widest margin. (With `--fill-nodata` a window may hold no class at all,
//! so the shortcut is off there.)
//!
//! The recursion runs [`WIDE`] lines in step on one [`F64x4`], its state
//! in registers (one copy of the code per number of terms; on AVX2 vectors
//! where the CPU has them, element for element the same arithmetic). The
//! arithmetic is that of [`Dct5::segment_pass`] (same seeds, same
//! recursion, same order of sums) on segments no longer than
//! [`Dct5::segment`], so
//! [`Dct5::rounding_bound`] holds unchanged; a score skipped where it is
//! exactly zero is within any bound too. Plans of more than [`MAX_TERMS`]
//! terms take the generic path.

use super::{Dct5, cos_index, cos_table};
use crate::method::ranking::{LANES, Ranking, Slots, SlotsMut, fill_strip_centres, write_strip};
use crate::method::simd4::F64x4;
use crate::method::{ClassTile, SmoothParams};
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

/// Lines one recursion carries in step: one AVX2 vector of f64
/// ([`F64x4`]), so that its state (`2·T` vectors for `T` terms) stays in
/// the 16 vector registers (eight lines spilled it to the stack). Pass 2
/// runs a strip of [`LANES`] rows as `LANES / WIDE` recursions; pass 1
/// takes the columns of a box `WIDE` at a time.
const WIDE: usize = 4;

/// The input of one recursion: [`WIDE`] independent lines read in step.
trait Lanes {
    /// Whether elements `0..n` of every lane lie inside the data.
    fn readable(&self, n: usize) -> bool;

    /// Element `t` of every lane.
    ///
    /// # Safety
    /// `self.readable(n)` for some `n > t`.
    unsafe fn load<S: F64x4>(&self, t: usize) -> S;
}

/// [`WIDE`] neighbouring columns of class codes, read as the indicator of one
/// class; columns at or beyond `width` read as 0. `FULL`: `width ≥ WIDE`
/// (every lane inside), known where the loop is compiled.
struct ClassColumns<'a, const FULL: bool> {
    codes: &'a [u16],
    stride: usize,
    /// Index of element 0 of lane 0.
    base: usize,
    width: usize,
    class: u16,
}

impl<'a, const FULL: bool> ClassColumns<'a, FULL> {
    /// The columns of `tile`'s codes from index `base` on, `width` of them
    /// inside, read as the indicator of class `class`.
    fn of(tile: &'a ClassTile, base: usize, width: usize, class: usize) -> Self {
        ClassColumns {
            codes: tile.classes,
            stride: tile.width,
            base,
            width,
            class: class as u16,
        }
    }
}

impl<const FULL: bool> Lanes for ClassColumns<'_, FULL> {
    fn readable(&self, n: usize) -> bool {
        debug_assert!(!FULL || self.width >= WIDE);
        n == 0 || self.base + (n - 1) * self.stride + self.width.min(WIDE) <= self.codes.len()
    }

    #[inline(always)]
    unsafe fn load<S: F64x4>(&self, t: usize) -> S {
        let at = self.base + t * self.stride;
        // SAFETY: `at + min(width, WIDE)` is in bounds (the caller's `readable`).
        unsafe {
            if FULL {
                S::indicator(
                    &*self.codes.as_ptr().add(at).cast::<[u16; WIDE]>(),
                    self.class,
                )
            } else {
                S::from_array(std::array::from_fn(|j| {
                    f64::from(u8::from(
                        j < self.width && *self.codes.get_unchecked(at + j) == self.class,
                    ))
                }))
            }
        }
    }
}

/// A block whose lane `j` at element `t` is `data[t·stride + j]`.
struct Strip<'a> {
    data: &'a [f64],
    stride: usize,
}

impl Lanes for Strip<'_> {
    fn readable(&self, n: usize) -> bool {
        n == 0 || (n - 1) * self.stride + WIDE <= self.data.len()
    }

    #[inline(always)]
    unsafe fn load<S: F64x4>(&self, t: usize) -> S {
        let at = t * self.stride;
        // SAFETY: in bounds by the caller's `readable`.
        S::load(unsafe { &*self.data.as_ptr().add(at).cast::<[f64; WIDE]>() })
    }
}

/// One explicitly seeded segment on [`WIDE`] lines at once, its state in
/// registers: output `i` (`i < rows`) is the filter applied to elements
/// `i..=i + 2R`; `emit(i, out)` receives each output.
#[inline(always)]
fn segment<L: Lanes, S: F64x4, const T: usize>(
    tab: &Tables,
    src: &L,
    rows: usize,
    mut emit: impl FnMut(usize, S),
) {
    let r = tab.r;
    debug_assert_eq!(tab.g.len(), T);
    if rows == 0 {
        return;
    }
    // Outputs 0..rows read elements 0..rows + 2R.
    assert!(src.readable(rows + 2 * r), "segment reads past its lanes");
    if rows == 1 {
        emit(0, output(tab, &seed::<L, S, T>(tab, src)));
        return;
    }
    let (mut prev, mut cur) = seeds::<L, S, T>(tab, src);
    emit(0, output(tab, &prev));
    emit(1, output(tab, &cur));
    // SAFETY (every load below): t < rows + 2R, checked above.
    let (mut lead_in, mut trail_out): (S, S) = unsafe { (src.load(2 * r + 1), src.load(0)) };
    // Two steps per turn, `prev` and `cur` trading places, so that no
    // state is copied from register to register between steps.
    let mut y = 1;
    while y + 2 < rows {
        let (lead, trail): (S, S) = unsafe { (src.load(y + 2 * r + 1), src.load(y)) };
        step(tab, &cur, &mut prev, lead, trail, trail_out.sub(lead_in));
        emit(y + 1, output(tab, &prev));
        let (lead2, trail2): (S, S) = unsafe { (src.load(y + 2 * r + 2), src.load(y + 1)) };
        step(tab, &prev, &mut cur, lead2, trail2, trail.sub(lead));
        emit(y + 2, output(tab, &cur));
        (lead_in, trail_out) = (lead2, trail2);
        y += 2;
    }
    if y + 1 < rows {
        let (lead, trail): (S, S) = unsafe { (src.load(y + 2 * r + 1), src.load(y)) };
        step(tab, &cur, &mut prev, lead, trail, trail_out.sub(lead_in));
        emit(y + 1, output(tab, &prev));
    }
}

/// One step of the recursion from `cur` (`F_k` at `y`) and `prev` (at
/// `y − 1`) to `F_k` at `y + 1`, written over `prev`: `lead` and `trail`
/// are the elements entering and leaving the window, `back` the previous
/// step's `trail − lead`.
#[inline(always)]
fn step<S: F64x4, const T: usize>(
    tab: &Tables,
    cur: &[S; T],
    prev: &mut [S; T],
    lead: S,
    trail: S,
    back: S,
) {
    let d = lead.sub(trail);
    // k = 0: first order, a box sliding by one.
    prev[0] = cur[0].add(d);
    let b = d.add(back);
    let (ta, td) = (terms::<T>(&tab.a), terms::<T>(&tab.d));
    for k in 1..T {
        let (ak, dk) = (S::splat(ta[k]), S::splat(td[k]));
        prev[k] = ak.mul(cur[k]).sub(prev[k]).add(dk.mul(b));
    }
}

/// `F_k` at output 0 by direct sums.
#[inline(always)]
fn seed<L: Lanes, S: F64x4, const T: usize>(tab: &Tables, src: &L) -> [S; T] {
    let mut f = [S::splat(0.0); T];
    for (t, coeffs) in tab.seed.chunks_exact(T).enumerate() {
        // SAFETY: t ≤ 2R < rows + 2R, checked by `segment`.
        let v: S = unsafe { src.load(t) };
        fold(&mut f, coeffs, v);
    }
    f
}

/// `F_k` at outputs 0 and 1 by direct sums, each element loaded once for
/// both (the same sums, in the same order, as two calls of [`seed`]).
#[inline(always)]
fn seeds<L: Lanes, S: F64x4, const T: usize>(tab: &Tables, src: &L) -> ([S; T], [S; T]) {
    let (mut f0, mut f1) = ([S::splat(0.0); T], [S::splat(0.0); T]);
    let mut coeffs = tab.seed.chunks_exact(T);
    let Some(mut before) = coeffs.next() else {
        return (f0, f1);
    };
    // SAFETY (every load): t ≤ 2R + 1 < rows + 2R, as `segment` checked
    // for rows ≥ 2.
    fold(&mut f0, before, unsafe { src.load(0) });
    let mut t = 1;
    for c in coeffs {
        let v: S = unsafe { src.load(t) };
        fold(&mut f0, c, v);
        fold(&mut f1, before, v);
        (before, t) = (c, t + 1);
    }
    fold(&mut f1, before, unsafe { src.load(t) });
    (f0, f1)
}

/// `f_k += c_k·v` for every term.
#[inline(always)]
fn fold<S: F64x4, const T: usize>(f: &mut [S; T], coeffs: &[f64], v: S) {
    for (fk, &c) in f.iter_mut().zip(coeffs) {
        *fk = fk.add(S::splat(c).mul(v));
    }
}

/// One output: `Σ_k G_k·F_k`, summed in ascending k.
#[inline(always)]
fn output<S: F64x4, const T: usize>(tab: &Tables, f: &[S; T]) -> S {
    let mut o = S::splat(0.0);
    for (fk, &g) in f.iter().zip(terms::<T>(&tab.g)) {
        o = o.add(S::splat(g).mul(*fk));
    }
    o
}

/// The first `T` constants of a table (one per term), as an array: no
/// bounds checks where the recursion reads them.
#[inline(always)]
fn terms<const T: usize>(v: &[f64]) -> &[f64; T] {
    v[..T].try_into().expect("one constant per term")
}

/// Where one class lies in a band's input: rows and columns, inclusive.
#[derive(Clone, Copy)]
struct Extent {
    rows: (usize, usize),
    cols: (usize, usize),
}

/// Where one class's pass-1 plane lies: output columns `xa..xb` (plane
/// columns `0..xb − xa + 2R`), strips `sa..sb` (plane rows
/// `0..(sb − sa)·LANES`), strip-major: strip after strip, and within a
/// strip column after column, each column's [`LANES`] rows on one cache
/// line. Pass 2, which walks a strip along its columns, then reads memory
/// in order; column-major, a strip's lines were a whole column apart, and
/// at large σ (a plane of 13 MB per class at σ = 64) every load missed
/// the caches.
#[derive(Clone, Copy, Default)]
struct PlaneAt {
    xa: usize,
    xb: usize,
    sa: usize,
    sb: usize,
}

impl PlaneAt {
    /// Values in one strip of the plane (its columns' lines) for radius `r`.
    fn strip_len(&self, r: usize) -> usize {
        (self.xb - self.xa + 2 * r) * LANES
    }
}

/// Per-thread scratch of a band.
#[derive(Default)]
struct Scratch {
    extents: Vec<Option<Extent>>,
    /// Per block of [`LANES`] input rows and input column of the band (row
    /// block major): bit `c` set where class `c` occurs there (all bits set
    /// when there are more than [`MASK_CLASSES`] classes).
    blocks: Vec<u64>,
    /// Per input column: the union of its blocks (where [`find_extents`]
    /// finds the boxes' columns).
    columns: Vec<u64>,
    /// Per input column: the classes in the windows of the current strip.
    strip_columns: Vec<u64>,
    /// Per output column: the classes in the windows of the current strip.
    outputs: Vec<u64>,
    /// Running unions of [`Scratch::strip_columns`] (see [`window_unions`]).
    prefix: Vec<u64>,
    suffix: Vec<u64>,
    /// One strip's decisions in slot order.
    decisions: Vec<u16>,
    /// Per class, its runs of outputs in the current strip, `(first, end)`.
    runs: Vec<Vec<(usize, usize)>>,
    /// A band's ranking slots, when the tile's winners go straight to the output.
    slots: Slots,
    /// Per class: its pass-1 plane and where it lies.
    planes: Vec<Plane>,
    at: Vec<PlaneAt>,
}

/// [`LANES`] values on one cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([f64; LANES]);

/// A pass-1 plane (laid out as [`PlaneAt`] says) on whole cache lines:
/// the [`LANES`] values of one strip of one column lie on one line instead
/// of straddling two.
#[derive(Default)]
struct Plane {
    /// Never shrinks, so that a band needing more of it than the last one
    /// does not fill it again.
    lines: Vec<Line>,
    /// Values in use (at most `lines.len() · LANES`).
    len: usize,
}

impl Plane {
    /// Makes room for `len` values (a multiple of [`LANES`]); what an
    /// earlier band left there stays.
    fn resize(&mut self, len: usize) {
        debug_assert_eq!(len % LANES, 0);
        if self.lines.len() < len / LANES {
            self.lines.resize(len / LANES, Line::default());
        }
        self.len = len;
        // Debug builds (the tests') poison the plane, so that a value pass 2
        // read without pass 1 having written it in this band would show as
        // NaN scores.
        if cfg!(debug_assertions) {
            self.values_mut().fill(f64::NAN);
        }
    }

    fn values(&self) -> &[f64] {
        // SAFETY: a `Line` is exactly `LANES` f64s (repr(C), 64 bytes, no
        // padding), and `len` values lie in `lines` (`resize`).
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }

    fn values_mut(&mut self) -> &mut [f64] {
        // SAFETY: as in `values`, and the borrow is unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}

thread_local! {
    /// Each worker thread's scratch, kept from band to band and tile to tile
    /// so that its buffers are allocated (and faulted in) once.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Classes the per-column presence masks can tell apart.
const MASK_CLASSES: usize = 64;

/// Whether class `c` occurs in a column with presence mask `mask`.
#[inline(always)]
fn holds(mask: u64, c: usize) -> bool {
    c >= MASK_CLASSES || mask >> c & 1 == 1
}

/// `out[o] = masks[o] | … | masks[o + width − 1]` for every `o` with a
/// full window (van Herk / Gil-Werman: a prefix and a suffix union per
/// block of `width`, three operations per output whatever the width).
fn window_unions(
    masks: &[u64],
    width: usize,
    out: &mut Vec<u64>,
    prefix: &mut Vec<u64>,
    suffix: &mut Vec<u64>,
) {
    let n = masks.len();
    out.clear();
    if n < width {
        return;
    }
    prefix.clear();
    prefix.extend_from_slice(masks);
    suffix.clear();
    suffix.extend_from_slice(masks);
    for i in 1..n {
        if i % width != 0 {
            prefix[i] |= prefix[i - 1];
        }
    }
    for i in (0..n - 1).rev() {
        if (i + 1) % width != 0 {
            suffix[i] |= suffix[i + 1];
        }
    }
    out.extend((0..=n - width).map(|o| {
        if o % width == 0 {
            suffix[o]
        } else {
            suffix[o] | prefix[o + width - 1]
        }
    }));
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
    /// Whether an output whose windows hold one class only may take it
    /// without scoring (see [`SlotsMut::single`]).
    single_class: bool,
    /// The vectors the bands run on.
    isa: Isa,
}

/// The vector instructions a band runs on: the same arithmetic, element
/// for element, on either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    /// Plain arrays ([`F64x4`] for `[f64; 4]`).
    Portable,
    /// AVX2 registers.
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Isa {
    /// The fastest this CPU has and may run ([`crate::cpu::avx2`]).
    fn best() -> Isa {
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::avx2() {
            return Isa::Avx2;
        }
        Isa::Portable
    }
}

/// The most output rows of a band for radius `r`: two windows' height, at
/// least 64. Short bands keep a band's planes (per class, its rows plus
/// 2R) small enough for the caches and give the threads more bands to
/// share, while the seeds of a band (two sums of 2R + 1 rows per group of
/// columns) stay no more than its rows
/// (docs/decisions/0003-host-dct5-bands-and-segments.md).
fn band_rows(r: usize) -> usize {
    (2 * (2 * r + 1)).max(64)
}

/// Output rows per band for a tile of `oh` rows: bands run in parallel and
/// each pass-1 segment stays within one, so a band is at most `segment`
/// rows; within that, the tile is cut into a multiple of `threads` bands of
/// (nearly) equal height, a multiple of [`LANES`], so that no thread waits
/// for a last odd band.
fn band_height(segment: usize, oh: usize, threads: usize) -> usize {
    let (most, threads) = ((segment / LANES).max(1) * LANES, threads.max(1));
    let bands = oh.div_ceil(most).div_ceil(threads) * threads;
    oh.div_ceil(bands).div_ceil(LANES) * LANES
}

/// Where [`rank_tile`] puts its results.
pub(crate) enum Target<'a> {
    /// Every pixel's ranking, margins included (for certification).
    Ranking(&'a mut Ranking),
    /// Only the winners, straight into the tile's output (row-major),
    /// decided strip by strip while the strip's slots are in cache.
    Decisions {
        out: &'a mut [u16],
        fill_nodata: bool,
    },
}

/// Scores every class of `tile` with the dct5 filter `f` (used down the
/// columns and along the rows) into `target` (a [`Target::Ranking`] is
/// already reset). `skip`: tile rows/columns outside the kernel's reach on
/// every side.
pub(crate) fn rank_tile(
    f: &Dct5,
    tile: &ClassTile,
    params: &SmoothParams,
    skip: usize,
    tau: f64,
    target: Target,
) {
    rank_tile_on(Isa::best(), f, tile, params, skip, tau, target);
}

/// [`rank_tile`] on the vectors of `isa` (which the CPU must have).
fn rank_tile_on(
    isa: Isa,
    f: &Dct5,
    tile: &ClassTile,
    params: &SmoothParams,
    skip: usize,
    tau: f64,
    target: Target,
) {
    let (ow, oh) = (tile.output_width(), tile.output_height());
    if ow == 0 || oh == 0 {
        return;
    }
    let wmax = params.max_class_weight();
    let q = params.kernel.quantised();
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
        band: band_height(
            f.segment().min(band_rows(f.radius())),
            oh,
            rayon::current_num_threads(),
        ),
        segment: f.segment(),
        tau,
        // Exactly one class has a positive exact score where it is alone in
        // the window and holds the centre: the centre's weight is > 0.
        single_class: !params.fill_nodata
            && q[q.len() / 2] > 0
            && params.class_weights[..tile.n_classes]
                .iter()
                .all(|&w| w > 0),
        isa,
    };
    match target {
        Target::Ranking(ranking) => {
            ranking
                .runs_mut(job.band)
                .enumerate()
                .for_each(|(b, mut slots)| {
                    SCRATCH.with_borrow_mut(|scratch| {
                        run_band::<true>(&job, b * job.band, &mut slots, scratch, None)
                    })
                })
        }
        Target::Decisions { out, fill_nodata } => {
            out.par_chunks_mut(job.band * ow)
                .enumerate()
                .for_each(|(b, out)| {
                    SCRATCH.with_borrow_mut(|scratch| {
                        let y0 = b * job.band;
                        let bh = job.band.min(oh - y0);
                        let mut slots = std::mem::take(&mut scratch.slots);
                        // Cleared strip by strip in `band`, while in cache.
                        slots.size_uncleared(bh.div_ceil(LANES) * LANES * ow);
                        for (s, strip) in slots.centres_mut().chunks_mut(LANES * ow).enumerate() {
                            fill_strip_centres(strip, ow, s * LANES, bh, |x, y| {
                                tile.centre(x, y0 + y)
                            });
                        }
                        let decide = Decide { out, fill_nodata };
                        run_band::<false>(&job, y0, &mut slots.all_mut(), scratch, Some(decide));
                        scratch.slots = slots;
                    })
                });
        }
    }
}

/// A band's output rows, to be decided strip by strip.
struct Decide<'a> {
    out: &'a mut [u16],
    fill_nodata: bool,
}

fn run_band<const M: bool>(
    job: &Job,
    y0: usize,
    slots: &mut SlotsMut,
    scratch: &mut Scratch,
    decide: Option<Decide>,
) {
    // One copy per number of terms, so the recursion state stays in registers.
    macro_rules! by_terms {
        ($($t:literal)*) => {
            match job.tab.g.len() {
                $($t => run_band_with::<$t, M>(job, y0, slots, scratch, decide),)*
                _ => unreachable!("dct5 plans of more than MAX_TERMS terms take the generic path"),
            }
        };
    }
    by_terms!(1 2 3 4 5 6 7 8);
}

fn run_band_with<const T: usize, const M: bool>(
    job: &Job,
    y0: usize,
    slots: &mut SlotsMut,
    scratch: &mut Scratch,
    decide: Option<Decide>,
) {
    match job.isa {
        // SAFETY: `Isa::Avx2` is only chosen where the CPU has AVX2 (`Isa::best`,
        // and the test that names it checks the CPU first).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { band_avx2::<T, M>(job, y0, slots, scratch, decide) },
        Isa::Portable => band::<T, M, [f64; WIDE]>(job, y0, slots, scratch, decide),
    }
}

/// [`band`] compiled for AVX2, on AVX2 vectors (the same arithmetic).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn band_avx2<const T: usize, const M: bool>(
    job: &Job,
    y0: usize,
    slots: &mut SlotsMut,
    scratch: &mut Scratch,
    decide: Option<Decide>,
) {
    band::<T, M, std::arch::x86_64::__m256d>(job, y0, slots, scratch, decide)
}

/// Output rows `y0..y0 + band` (fewer at the bottom) into their ranking
/// slots: pass 1 of every class present, then strip by strip pass 2 of
/// every class that reaches the strip, so a strip's slots stay in cache.
#[inline(always)]
fn band<const T: usize, const M: bool, S: F64x4>(
    job: &Job,
    y0: usize,
    slots: &mut SlotsMut,
    scratch: &mut Scratch,
    mut decide: Option<Decide>,
) {
    let tile = job.tile;
    let (r, ow, skip) = (job.tab.r, job.ow, job.skip);
    let bh = job.band.min(job.oh - y0);
    let span = ow + 2 * r;
    let base = (skip + y0) * tile.width + skip;
    find_extents(tile, base, bh + 2 * r, span, scratch);
    scratch.planes.resize_with(tile.n_classes, Plane::default);
    scratch.at.resize(tile.n_classes, PlaneAt::default());
    for c in 0..tile.n_classes {
        scratch.at[c] = PlaneAt::default();
        if let Some(e) = scratch.extents[c] {
            pass1::<T, S>(job, c, e, bh, base, scratch);
        }
    }
    let blocks = (bh + 2 * r).div_ceil(LANES);
    for s in 0..bh.div_ceil(LANES) {
        if decide.is_some() {
            // Decisions: the band's slots come uncleared (`size_uncleared`).
            slots.clear(s * ow * LANES, ow * LANES);
        }
        // The strip's outputs read input rows s·LANES .. s·LANES + LANES + 2R.
        let (first, last) = (s, ((s + 1) * LANES + 2 * r - 1) / LANES);
        let strip_columns = &mut scratch.strip_columns;
        strip_columns.clear();
        strip_columns.extend_from_slice(&scratch.blocks[first * span..(first + 1) * span]);
        for b in first + 1..=last.min(blocks - 1) {
            let row = &scratch.blocks[b * span..(b + 1) * span];
            strip_columns
                .iter_mut()
                .zip(row)
                .for_each(|(m, &v)| *m |= v);
        }
        window_unions(
            &scratch.strip_columns,
            2 * r + 1,
            &mut scratch.outputs,
            &mut scratch.prefix,
            &mut scratch.suffix,
        );
        let outputs = &scratch.outputs;
        let shortcut = job.single_class && tile.n_classes <= MASK_CLASSES;
        let single = |m: u64| shortcut && m.is_power_of_two();
        // Per class, the runs of outputs that it reaches (within its plane)
        // and that are not decided alone; outputs in short gaps between runs
        // score (about) 0. Re-seeding costs about 2(2R+1) steps: shorter
        // gaps are run through.
        let gap = 2 * (2 * r + 1);
        let (places, runs) = (&scratch.at, &mut scratch.runs);
        runs.resize_with(tile.n_classes, Vec::new);
        runs.iter_mut().for_each(Vec::clear);
        let mut reach = |c: usize, x: usize| {
            let at = places[c];
            if (at.sa..at.sb).contains(&s) && (at.xa..at.xb).contains(&x) {
                match runs[c].last_mut() {
                    Some((_, end)) if x < *end + gap => *end = x + 1,
                    _ => runs[c].push((x, x + 1)),
                }
            }
        };
        if tile.n_classes <= MASK_CLASSES {
            // The classes each output's windows hold, from its mask.
            for (x, &m) in outputs.iter().enumerate() {
                if !single(m) {
                    for_each_class(m, |c| reach(c, x));
                }
            }
        } else {
            // Masks all set: every class may be anywhere.
            for c in 0..tile.n_classes {
                (0..outputs.len()).for_each(|x| reach(c, x));
            }
        }
        for c in 0..tile.n_classes {
            let at = scratch.at[c];
            let runs = &scratch.runs[c];
            if runs.is_empty() {
                continue;
            }
            let plane = scratch.planes[c].values();
            let strip = &plane[(s - at.sa) * at.strip_len(r)..][..at.strip_len(r)];
            let weight = job.weights[c];
            for &(a, b) in runs.iter() {
                for (a, h) in (a..b)
                    .step_by(job.segment)
                    .flat_map(|a| (0..LANES).step_by(WIDE).map(move |h| (a, h)))
                {
                    let lanes = Strip {
                        data: &strip[(a - at.xa) * LANES + h..],
                        stride: LANES,
                    };
                    segment::<_, S, T>(
                        &job.tab,
                        &lanes,
                        job.segment.min(b - a),
                        #[inline(always)]
                        |i, o| {
                            let scores = S::splat(weight).mul(o);
                            let at = (s * ow + a + i) * LANES + h;
                            if M {
                                slots.update(at, c as u16, scores, job.tau);
                            } else {
                                slots.update_winner(at, c as u16, scores, job.tau);
                            }
                        },
                    );
                }
            }
        }
        // Last, so that no score folded in a run-through gap stays.
        if shortcut {
            for (x, &m) in outputs.iter().enumerate() {
                if single(m) {
                    slots.single::<M>((s * ow + x) * LANES, m.trailing_zeros() as u16);
                }
            }
        }
        if let Some(d) = decide.as_mut() {
            let rows = LANES.min(bh - s * LANES);
            let decisions = &mut scratch.decisions;
            decisions.resize(ow * LANES, 0);
            let at = s * ow * LANES;
            slots.decide_run::<S>(at, job.tau, tile.nodata(), d.fill_nodata, decisions);
            write_strip(&mut d.out[s * LANES * ow..][..rows * ow], ow, |i| {
                decisions[i]
            });
        }
    }
}

/// Pass 1 of class `c` (box `e` in the band's input) down its columns into
/// its plane (see [`PlaneAt`]): span columns `xa..xb + 2R`, the rows of the
/// strips that hold the outputs `ya..yb` whose windows meet the box. What
/// pass 2 may read and pass 1 does not write (columns and rows without the
/// class) is set to exactly 0.
#[inline(always)]
fn pass1<const T: usize, S: F64x4>(
    job: &Job,
    c: usize,
    e: Extent,
    bh: usize,
    base: usize,
    scratch: &mut Scratch,
) {
    let (r, ow) = (job.tab.r, job.ow);
    let (ya, yb) = (e.rows.0.saturating_sub(2 * r), bh.min(e.rows.1 + 1));
    let (xa, xb) = (e.cols.0.saturating_sub(2 * r), ow.min(e.cols.1 + 1));
    if ya >= yb || xa >= xb {
        return;
    }
    let at = PlaneAt {
        xa,
        xb,
        sa: ya / LANES,
        sb: yb.div_ceil(LANES),
    };
    scratch.at[c] = at;
    let (strip_len, strips) = (at.strip_len(r), at.sb - at.sa);
    // Every element is written below; the values left from an earlier band
    // need no clearing.
    scratch.planes[c].resize(strip_len * strips);
    let plane = scratch.planes[c].values_mut();
    let (box_first, box_end) = (e.cols.0 - xa, e.cols.1 + 1 - xa);
    for strip in plane.chunks_exact_mut(strip_len) {
        strip[..box_first * LANES].fill(0.0);
        strip[box_end * LANES..].fill(0.0);
    }
    // The lines of columns `c0..c0 + n` in strips `range` (of the plane).
    let clear = |plane: &mut [f64], c0: usize, n: usize, range: std::ops::Range<usize>| {
        for strip in plane
            .chunks_exact_mut(strip_len)
            .take(range.end)
            .skip(range.start)
        {
            strip[c0 * LANES..(c0 + n) * LANES].fill(0.0);
        }
    };
    let span = job.ow + 2 * r;
    // The blocks of the box's rows: no other block holds the class.
    let boxed = e.rows.0 / LANES..e.rows.1 / LANES + 1;
    // With the masks on, each column's union of its blocks tells a group
    // without the class at once.
    let masked = job.tile.n_classes <= MASK_CLASSES;
    for c0 in (box_first..box_end).step_by(WIDE) {
        let n = WIDE.min(box_end - c0);
        let group = xa + c0..xa + c0 + n;
        let absent = masked && !scratch.columns[group.clone()].iter().any(|&m| holds(m, c));
        // The blocks of input rows where the class occurs in these columns:
        // outputs whose windows miss them are exactly 0.
        let in_block = |b: &usize| {
            scratch.blocks[b * span..][group.clone()]
                .iter()
                .any(|&m| holds(m, c))
        };
        // Searched only where the masks have not ruled the group out.
        let first = if absent {
            None
        } else {
            boxed.clone().find(in_block)
        };
        let Some(first) = first else {
            clear(plane, c0, n, 0..strips); // no pixel of the class: exactly 0
            continue;
        };
        // Block `first` holds the class, so the search from the end stops
        // there at the latest.
        let last = boxed.clone().rfind(in_block).unwrap_or(first);
        let gya = ya.max((first * LANES).saturating_sub(2 * r));
        let gyb = yb.min((last + 1) * LANES);
        if gya >= gyb {
            clear(plane, c0, n, 0..strips);
            continue;
        }
        let (top, rows) = (gya - at.sa * LANES, gyb - gya);
        // Every output goes straight to its column's line in the plane
        // (below), so the strips not wholly inside top..top + rows are
        // cleared first: those wholly outside it, and the partly covered
        // first and last. (Gathering a line's rows in a buffer and copying
        // whole lines cost pass 1 more cycles: each copy read back values
        // just stored lane by lane.)
        clear(plane, c0, n, 0..top.div_ceil(LANES));
        clear(plane, c0, n, (top + rows) / LANES..strips);
        let lines = Lines { strip_len, c0, top };
        let (base, width) = (base + gya * job.tile.width + xa + c0, box_end - c0);
        if n == WIDE {
            let lanes = ClassColumns::<true>::of(job.tile, base, width, c);
            lines.fill::<T, S, _>(&job.tab, &lanes, rows, plane, |o, line| {
                o.store_strided(line, 0, LANES)
            });
        } else {
            let lanes = ClassColumns::<false>::of(job.tile, base, width, c);
            lines.fill::<T, S, _>(&job.tab, &lanes, rows, plane, |o, line| {
                for (j, v) in o.to_array().into_iter().take(n).enumerate() {
                    line[j * LANES] = v;
                }
            });
        }
    }
}

/// Where pass 1 puts a group of columns' outputs in a plane laid out as
/// [`PlaneAt`] says: the group's first column `c0` and first row `top`
/// (both counted from the plane's first), and a strip's length.
struct Lines {
    strip_len: usize,
    c0: usize,
    top: usize,
}

impl Lines {
    /// Runs a segment of `rows` outputs on `lanes` into `plane`: `store(o,
    /// line)` puts the lanes of output `o` at `line[0]`, `line[LANES]`, ...
    /// (one row of the group's lines). The place moves on row by row, and
    /// to the next strip after the last row of one, instead of being
    /// worked out again for every output.
    #[inline(always)]
    fn fill<const T: usize, S: F64x4, L: Lanes>(
        &self,
        tab: &Tables,
        lanes: &L,
        rows: usize,
        plane: &mut [f64],
        store: impl Fn(S, &mut [f64]),
    ) {
        let mut at = self.top / LANES * self.strip_len + self.c0 * LANES + self.top % LANES;
        let mut row_in_line = self.top % LANES;
        segment::<_, S, T>(
            tab,
            lanes,
            rows,
            #[inline(always)]
            |i, o: S| {
                debug_assert_eq!(row_in_line, (self.top + i) % LANES);
                store(o, &mut plane[at..]);
                (at, row_in_line) = (at + 1, row_in_line + 1);
                if row_in_line == LANES {
                    (at, row_in_line) = (at + self.strip_len - LANES, 0);
                }
            },
        );
    }
}

/// The bounding box of every class in `rows` lines of `span` codes starting
/// at `base` (lines `tile.width` apart), `None` for an absent class; and
/// per block of [`LANES`] rows and per column, the mask of the classes
/// there ([`Scratch::blocks`]). With the masks on
/// (at most [`MASK_CLASSES`] classes) the boxes come from the masks, so
/// their rows are whole blocks (a box may reach up to `LANES − 1` rows
/// past the class, where pass 1 then computes exact zeros); otherwise from
/// a scan of every row.
#[inline(always)]
fn find_extents(tile: &ClassTile, base: usize, rows: usize, span: usize, scratch: &mut Scratch) {
    let n = tile.n_classes;
    let masked = n <= MASK_CLASSES;
    let blocks = &mut scratch.blocks;
    blocks.clear();
    blocks.resize(
        rows.div_ceil(LANES) * span,
        if masked { 0 } else { u64::MAX },
    );
    let out = &mut scratch.extents;
    out.clear();
    out.resize(n, None);
    if !masked {
        scan_extents(tile, base, rows, span, out);
        return;
    }
    // The mask bit of each local index; no class (index n, nodata) sets
    // none. Written without a table so that the loop vectorises.
    let bit = |v: u16| (1u64 << (v & 63)) & u64::from(usize::from(v) < n).wrapping_neg();
    for i in 0..rows {
        let line = &tile.classes[base + i * tile.width..][..span];
        let block = &mut blocks[i / LANES * span..][..span];
        for (m, &v) in block.iter_mut().zip(line) {
            *m |= bit(v);
        }
    }
    let columns = &mut scratch.columns;
    columns.clear();
    columns.resize(span, 0);
    for (b, block) in blocks.chunks_exact(span).enumerate() {
        let mut union = 0;
        for (m, &v) in columns.iter_mut().zip(block) {
            *m |= v;
            union |= v;
        }
        let last_row = ((b + 1) * LANES).min(rows) - 1;
        for_each_class(union, |c| {
            let e = out[c].get_or_insert(Extent {
                rows: (b * LANES, last_row),
                cols: (0, 0),
            });
            e.rows.1 = last_row;
        });
    }
    let (mut lo, mut hi) = ([usize::MAX; MASK_CLASSES], [0; MASK_CLASSES]);
    for (x, &m) in columns.iter().enumerate() {
        for_each_class(m, |c| {
            lo[c] = lo[c].min(x);
            hi[c] = x;
        });
    }
    for (c, e) in out.iter_mut().enumerate() {
        if let Some(e) = e {
            e.cols = (lo[c], hi[c]);
        }
    }
}

/// Calls `f` with every class whose bit is set in `mask`.
#[inline(always)]
fn for_each_class(mut mask: u64, mut f: impl FnMut(usize)) {
    while mask != 0 {
        f(mask.trailing_zeros() as usize);
        mask &= mask - 1;
    }
}

/// [`find_extents`]'s boxes by a scan of every row (exact rows and columns).
fn scan_extents(
    tile: &ClassTile,
    base: usize,
    rows: usize,
    span: usize,
    out: &mut [Option<Extent>],
) {
    let n = tile.n_classes;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;

    /// The AVX2 bands give the same bits as the plain ones: every ranking
    /// slot and every decision, with uneven weights, nodata, a class past
    /// the tile's right edge and a width that is no multiple of the lanes.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_bands_match_plain_bands() {
        if !std::is_x86_feature_detected!("avx2") {
            return;
        }
        let kernel = KernelSpec::Gaussian {
            sigma: 1.7,
            size: None,
        }
        .build()
        .unwrap();
        let (g, terms) = crate::method::dct5::one_d_kernel(&kernel, 3).unwrap();
        let f = Dct5::new(&g, terms).unwrap();
        let (halo, n) = (kernel.radius(), 6);
        let (w, h) = (97 + 2 * halo, 75 + 2 * halo);
        // Blocky classes with speckle, a nodata patch (index n).
        let classes: Vec<u16> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                if (30..36).contains(&x) && (10..19).contains(&y) {
                    n as u16
                } else if (x * 31 + y * 17) % 23 == 0 {
                    5
                } else {
                    ((x / 9 + y / 7 + x * y / 97) % 5) as u16
                }
            })
            .collect();
        let tile = ClassTile {
            width: w,
            height: h,
            halo,
            n_classes: n,
            classes: &classes,
        };
        let weights = [3, 1, 2, 2, 1, 4];
        let (ow, oh, nodata, tau) = (
            tile.output_width(),
            tile.output_height(),
            tile.nodata(),
            1e-12,
        );
        for fill_nodata in [false, true] {
            let params = SmoothParams {
                kernel: &kernel,
                class_weights: &weights,
                fill_nodata,
                ties: Default::default(),
                confidence: None,
            };
            let rank = |isa| {
                let mut ranking = Ranking::default();
                ranking.reset(ow, oh, tau, |x, y| tile.centre(x, y));
                let target = Target::Ranking(&mut ranking);
                rank_tile_on(isa, &f, &tile, &params, 0, tau, target);
                let mut out = vec![0; ow * oh];
                let target = Target::Decisions {
                    out: &mut out,
                    fill_nodata,
                };
                rank_tile_on(isa, &f, &tile, &params, 0, tau, target);
                (ranking, out)
            };
            let ((plain, plain_out), (avx2, avx2_out)) = (rank(Isa::Portable), rank(Isa::Avx2));
            assert_eq!(plain_out, avx2_out, "decisions, fill {fill_nodata}");
            for y in 0..oh {
                for x in 0..ow {
                    let ((a, b), (c, d)) = (plain.best_two(x, y), avx2.best_two(x, y));
                    assert_eq!(
                        (a.to_bits(), b.to_bits()),
                        (c.to_bits(), d.to_bits()),
                        "({x}, {y}), fill {fill_nodata}"
                    );
                    assert_eq!(
                        plain.decide(x, y, nodata, fill_nodata),
                        avx2.decide(x, y, nodata, fill_nodata),
                    );
                }
            }
            let decided = plain_out
                .iter()
                .filter(|&&c| c != crate::classes::NO_CLASS)
                .count();
            assert!(decided > ow * oh / 2, "only {decided} decided");
        }
    }

    #[test]
    fn window_unions_match_the_definition() {
        let masks: Vec<u64> = (0..37u64).map(|i| 1 << (i * 7 % 13)).collect();
        let (mut out, mut p, mut q) = (Vec::new(), Vec::new(), Vec::new());
        for width in [1, 2, 3, 5, 8, 36, 37] {
            window_unions(&masks, width, &mut out, &mut p, &mut q);
            assert_eq!(out.len(), masks.len() + 1 - width);
            for (o, &m) in out.iter().enumerate() {
                let want = masks[o..o + width].iter().fold(0, |a, &b| a | b);
                assert_eq!(m, want, "width {width} output {o}");
            }
        }
        window_unions(&masks, 38, &mut out, &mut p, &mut q);
        assert!(out.is_empty());
    }

    #[test]
    fn bands_split_a_tile_evenly_between_threads() {
        // 512 rows, at most 124 per band, 2 threads: 6 bands of 88 (the last
        // 72), not 4 of 120 and one of 32.
        assert_eq!(band_height(124, 512, 2), 88);
        for (segment, oh, threads) in [(124, 512, 2), (64, 1000, 3), (508, 512, 16), (9, 5, 1)] {
            let band = band_height(segment, oh, threads);
            assert!(band.is_multiple_of(LANES) && band > 0, "{band}");
            assert!(
                band <= (segment / LANES).max(1) * LANES,
                "{band} > {segment}"
            );
            assert_eq!(
                oh.div_ceil(band) % threads,
                0,
                "{oh} rows in bands of {band}"
            );
        }
    }

    /// The boxes taken from the masks hold every pixel of their class, and
    /// their rows reach past the exact box by less than a block.
    #[test]
    fn mask_boxes_hold_their_class() {
        let (w, h, n) = (37, 29, 5);
        let classes: Vec<u16> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                // Class 4 in a small patch only, class 3 nowhere, nodata (5) in a corner.
                if (20..24).contains(&x) && (9..12).contains(&y) {
                    4
                } else if x < 3 && y < 3 {
                    5
                } else {
                    ((x * 7 + y * 3) / 11 % 3) as u16
                }
            })
            .collect();
        let tile = ClassTile {
            width: w,
            height: h,
            halo: 0,
            n_classes: n,
            classes: &classes,
        };
        let (base, rows, span) = (w + 1, h - 2, w - 3);
        let mut exact = vec![None; n];
        scan_extents(&tile, base, rows, span, &mut exact);
        let mut scratch = Scratch::default();
        find_extents(&tile, base, rows, span, &mut scratch);
        assert!(exact[3].is_none() && scratch.extents[3].is_none());
        for (c, (&exact, &mask)) in exact.iter().zip(&scratch.extents).enumerate() {
            let (Some(e), Some(m)) = (exact, mask) else {
                assert!(exact.is_none() && mask.is_none(), "class {c}");
                continue;
            };
            assert_eq!(m.cols, e.cols, "class {c}");
            assert!(
                m.rows.0 <= e.rows.0 && e.rows.0 - m.rows.0 < LANES,
                "class {c}"
            );
            assert!(
                m.rows.1 >= e.rows.1 && m.rows.1 - e.rows.1 < LANES,
                "class {c}"
            );
            assert!(m.rows.1 < rows);
        }
        assert_eq!(exact[4].unwrap().rows, (8, 10));
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
