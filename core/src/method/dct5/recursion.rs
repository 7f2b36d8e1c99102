//! The DCT-5 recursion of the host band scorer on [`WIDE`] lines at once:
//! a filter's constants ([`Tables`]), the lines it reads ([`Lanes`]: class
//! indicator columns for pass 1, strips of a plane for pass 2) and one
//! explicitly seeded segment ([`segment`]), its state in registers.

use crate::method::ClassTile;
use crate::method::dct5::{Dct5, cos_index, cos_table};
use crate::method::simd::F64Lanes;

/// The constants of one filter: `G_k`, the seeds' `cos(φk(t − R))` (at
/// `t·terms + k`), `2cos(φk)`, `cos(φkR)` and `cos(φk(R + 1))` (the
/// same as `cos(φkR)` for the DCT-5's own period, where the recursion
/// weighs both ends of the window alike: `harmonic`).
pub(super) struct Tables {
    pub(super) r: usize,
    pub(super) g: Vec<f64>,
    pub(super) seed: Vec<f64>,
    pub(super) a: Vec<f64>,
    pub(super) d: Vec<f64>,
    pub(super) d2: Vec<f64>,
    pub(super) harmonic: bool,
}

impl Tables {
    pub(super) fn new(f: &Dct5) -> Self {
        let (r, p) = (f.radius(), f.period());
        let n = 2 * r + 1;
        let cos = cos_table(p);
        let terms = f.coeffs().len();
        Tables {
            r,
            g: f.coeffs().to_vec(),
            a: (0..terms).map(|k| 2.0 * cos[k % p]).collect(),
            d: (0..terms).map(|k| cos[(k * r) % p]).collect(),
            d2: (0..terms).map(|k| cos[(k * (r + 1)) % p]).collect(),
            harmonic: f.is_harmonic(),
            seed: (0..n)
                .flat_map(|t| (0..terms).map(move |k| (t, k)))
                .map(|(t, k)| cos[cos_index(k, t, r, p)])
                .collect(),
        }
    }
}

/// Terms (K + 1) the lane kernel keeps in registers; plans with more take
/// the generic path.
pub(crate) const MAX_TERMS: usize = 8;

/// Lines pass 1 carries in step: one AVX2 vector of f64 ([`F64Lanes`]),
/// so that its state (`2·T` vectors for `T` terms) stays in the 16 vector
/// registers (eight lines spilled it to the stack); it takes the columns
/// of a box `WIDE` at a time, or two groups of them that share a segment
/// on AVX-512 (32 registers). Pass 2 runs a strip of [`LANES`] rows as
/// `LANES / N` recursions of `N` lines, eight on AVX-512.
pub(super) const WIDE: usize = 4;

/// The input of one recursion: `S::N` independent lines read in step.
pub(super) trait Lanes {
    /// Whether elements `0..n` of every lane lie inside the data.
    fn readable(&self, n: usize, lanes: usize) -> bool;

    /// Element `t` of every lane.
    ///
    /// # Safety
    /// `self.readable(n, S::N)` for some `n > t`.
    unsafe fn load<S: F64Lanes>(&self, t: usize) -> S;

    /// Elements that may be nonzero: every lane reads exactly 0 outside
    /// them. The seeds' direct sums skip the rest (a term `c·0` is ±0,
    /// which leaves any sum's bits as they are), so a segment starting
    /// where its window first reaches a class sums only the rows that
    /// hold it: at σ = 150 a seed is 2R + 1 = 901 rows, most of them empty
    /// where a patch is small.
    fn nonzero(&self) -> std::ops::Range<usize> {
        0..usize::MAX
    }

    /// Hints that element `t` is read soon (nothing where it is not
    /// readable): lines that lie far apart, as a column of codes does, are
    /// not fetched ahead by the hardware.
    #[inline(always)]
    fn prefetch(&self, _t: usize) {}
}

/// Elements ahead of the one read that a recursion asks for
/// ([`Lanes::prefetch`]).
const AHEAD: usize = 16;

/// [`WIDE`] neighbouring columns of class codes, read as the indicator of one
/// class; columns at or beyond `width` read as 0. `FULL`: `width ≥ WIDE`
/// (every lane inside), known where the loop is compiled.
pub(super) struct ClassColumns<'a, const FULL: bool> {
    codes: &'a [u16],
    stride: usize,
    /// Index of element 0 of lane 0.
    base: usize,
    width: usize,
    class: u16,
    /// The elements that may hold the class ([`Lanes::nonzero`]).
    held: std::ops::Range<usize>,
}

impl<'a, const FULL: bool> ClassColumns<'a, FULL> {
    /// The columns of `tile`'s codes from index `base` on, `width` of them
    /// inside, read as the indicator of class `class`, which none of their
    /// elements outside `held` holds.
    pub(super) fn of(
        tile: &'a ClassTile,
        (base, width): (usize, usize),
        class: usize,
        held: std::ops::Range<usize>,
    ) -> Self {
        ClassColumns {
            codes: tile.classes,
            stride: tile.width,
            base,
            width,
            class: class as u16,
            held,
        }
    }
}

impl<const FULL: bool> Lanes for ClassColumns<'_, FULL> {
    fn readable(&self, n: usize, lanes: usize) -> bool {
        debug_assert!(!FULL || self.width >= WIDE);
        // Whole columns read as many lanes as the vector has (two groups of
        // pass 1 at once), all inside; a box's narrower last group four.
        let fits = match FULL {
            true => lanes <= self.width,
            false => lanes == WIDE,
        };
        fits && (n == 0
            || self.base + (n - 1) * self.stride + self.width.min(lanes) <= self.codes.len())
    }

    #[inline(always)]
    unsafe fn load<S: F64Lanes>(&self, t: usize) -> S {
        let at = self.base + t * self.stride;
        // SAFETY: `at + min(width, S::N)` is in bounds, and `S::N` is at
        // most `width` (whole columns) or `WIDE` (the caller's `readable`).
        unsafe {
            if FULL {
                S::indicator(
                    std::slice::from_raw_parts(self.codes.as_ptr().add(at), S::N),
                    self.class,
                )
            } else {
                let lanes: [f64; WIDE] = std::array::from_fn(|j| {
                    f64::from(u8::from(
                        j < self.width && *self.codes.get_unchecked(at + j) == self.class,
                    ))
                });
                S::load(&lanes)
            }
        }
    }

    fn nonzero(&self) -> std::ops::Range<usize> {
        self.held.clone()
    }

    #[inline(always)]
    fn prefetch(&self, t: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let at = self
                .codes
                .as_ptr()
                .wrapping_add(self.base + t * self.stride);
            // SAFETY: a prefetch reads nothing into the program and faults
            // on no address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(at.cast()) }
        }
    }
}

/// A block whose lane `j` at element `t` is `data[t·stride + j]`, exactly
/// 0 outside elements `nonzero`.
pub(super) struct Strip<'a> {
    pub(super) data: &'a [f64],
    pub(super) stride: usize,
    pub(super) nonzero: std::ops::Range<usize>,
}

impl Lanes for Strip<'_> {
    fn readable(&self, n: usize, lanes: usize) -> bool {
        n == 0 || (n - 1) * self.stride + lanes <= self.data.len()
    }

    #[inline(always)]
    unsafe fn load<S: F64Lanes>(&self, t: usize) -> S {
        let at = t * self.stride;
        // SAFETY: in bounds by the caller's `readable`.
        S::load(unsafe { std::slice::from_raw_parts(self.data.as_ptr().add(at), S::N) })
    }

    fn nonzero(&self) -> std::ops::Range<usize> {
        self.nonzero.clone()
    }
}

/// One explicitly seeded segment on `S::N` lines at once, its state in
/// registers: output `i` (`i < rows`) is the filter applied to elements
/// `i..=i + 2R`; `emit(i, out)` receives each output. `H`: the tables are
/// harmonic ([`Tables::harmonic`]; one copy of the loop for each, so
/// that the DCT-5's step keeps its few operations).
#[inline(always)]
pub(super) fn segment<L: Lanes, S: F64Lanes, const T: usize, const H: bool>(
    tab: &Tables,
    src: &L,
    rows: usize,
    emit: impl FnMut(usize, S),
) {
    debug_assert_eq!(tab.g.len(), T);
    debug_assert_eq!(tab.harmonic, H);
    resume::<L, S, T, H>(tab, src, rows, rows, &mut Carry::start(), emit);
}

/// Where a segment run in pieces ([`resume`]) stands: its next output
/// `next`, the recursion's state at it (`cur`, not emitted yet) and at the
/// output before (`prev`), and the elements that entered and left the
/// window at the step to it. Kept as plain values between pieces
/// ([`Carry::save`]), so that a band's scratch holds one per group of
/// columns whatever the vectors.
#[derive(Clone, Copy)]
pub(super) struct Carry<S, const T: usize> {
    prev: [S; T],
    cur: [S; T],
    lead_in: S,
    trail_out: S,
    pub(super) next: usize,
}

/// The f64 values one [`Carry`] saves: `2·T + 2` vectors of up to two
/// groups of [`WIDE`] (pass 1's, the one pass run in pieces).
pub(super) const CARRY_VALUES: usize = (2 * MAX_TERMS + 2) * 2 * WIDE;

impl<S: F64Lanes, const T: usize> Carry<S, T> {
    /// Before a segment's first output.
    pub(super) fn start() -> Self {
        Carry {
            prev: [S::splat(0.0); T],
            cur: [S::splat(0.0); T],
            lead_in: S::splat(0.0),
            trail_out: S::splat(0.0),
            next: 0,
        }
    }

    /// The carry [`Carry::save`] wrote into `v` (at `next`).
    #[inline(always)]
    pub(super) fn load(v: &[f64; CARRY_VALUES], next: usize) -> Self {
        let at = |i: usize| S::load(&v[i * S::N..][..S::N]);
        Carry {
            prev: std::array::from_fn(at),
            cur: std::array::from_fn(|k| at(T + k)),
            lead_in: at(2 * T),
            trail_out: at(2 * T + 1),
            next,
        }
    }

    /// Writes the state into `v`; returns `next`.
    #[inline(always)]
    pub(super) fn save(&self, v: &mut [f64; CARRY_VALUES]) -> usize {
        let vectors = self
            .prev
            .iter()
            .chain(&self.cur)
            .chain([&self.lead_in, &self.trail_out]);
        for (i, x) in vectors.enumerate() {
            x.store(&mut v[i * S::N..][..S::N]);
        }
        self.next
    }
}

/// Outputs `carry.next..upto` of the segment of `rows` outputs on `src`
/// that [`segment`] computes in one go: the same seeds and the same steps
/// in the same order, so the same values bit for bit, whatever the pieces
/// (pass 1 runs a band's columns a few strips at a time, so that its plane
/// per class holds a few strips, not the band's: at σ = 150 the planes of
/// 17 classes took 1.5 GB and most of the run's time went to faulting
/// them in and streaming them through memory). `emit` as in [`segment`].
#[inline(always)]
pub(super) fn resume<L: Lanes, S: F64Lanes, const T: usize, const H: bool>(
    tab: &Tables,
    src: &L,
    rows: usize,
    upto: usize,
    carry: &mut Carry<S, T>,
    mut emit: impl FnMut(usize, S),
) {
    let r = tab.r;
    let upto = upto.min(rows);
    if carry.next >= upto {
        return;
    }
    assert!(
        src.readable(rows + 2 * r, S::N),
        "segment reads past its lanes"
    );
    if carry.next == 0 {
        if rows == 1 {
            emit(0, output(tab, &seed::<L, S, T>(tab, src)));
            carry.next = 1;
            return;
        }
        let (prev, cur) = seeds::<L, S, T>(tab, src);
        emit(0, output(tab, &prev));
        // SAFETY: rows ≥ 2, so 2R + 1 < rows + 2R (checked above).
        let (lead_in, trail_out) = unsafe { (src.load(2 * r + 1), src.load(0)) };
        *carry = Carry {
            prev,
            cur,
            lead_in,
            trail_out,
            next: 1,
        };
        if upto == 1 {
            return;
        }
    }
    let Carry {
        mut prev,
        mut cur,
        mut lead_in,
        mut trail_out,
        next: mut y,
    } = *carry;
    emit(y, output(tab, &cur));
    // SAFETY (every load below): the step to output t loads elements up to
    // t + 2R < rows + 2R, and t < rows (checked above).
    while y + 2 < upto {
        src.prefetch(y + 2 * r + 1 + AHEAD);
        let (lead, trail): (S, S) = unsafe { (src.load(y + 2 * r + 1), src.load(y)) };
        step::<S, T, H>(tab, &cur, &mut prev, [lead, trail, lead_in, trail_out]);
        emit(y + 1, output(tab, &prev));
        let (lead2, trail2): (S, S) = unsafe { (src.load(y + 2 * r + 2), src.load(y + 1)) };
        step::<S, T, H>(tab, &prev, &mut cur, [lead2, trail2, lead, trail]);
        emit(y + 2, output(tab, &cur));
        (lead_in, trail_out) = (lead2, trail2);
        y += 2;
    }
    // One step from output y to y + 1, `cur` taking its state.
    macro_rules! step_on {
        () => {
            let (lead, trail): (S, S) = unsafe { (src.load(y + 2 * r + 1), src.load(y)) };
            step::<S, T, H>(tab, &cur, &mut prev, [lead, trail, lead_in, trail_out]);
            std::mem::swap(&mut prev, &mut cur);
            (lead_in, trail_out) = (lead, trail);
        };
    }
    // Output y is emitted: the last of this piece, if one is left.
    if y + 1 < upto {
        step_on!();
        y += 1;
        emit(y, output(tab, &cur));
    }
    // The state at `upto`, where the segment goes on (not emitted).
    if upto < rows {
        step_on!();
    }
    *carry = Carry {
        prev,
        cur,
        lead_in,
        trail_out,
        next: upto,
    };
}

/// One step of the recursion from `cur` (`F_k` at `y`) and `prev` (at
/// `y − 1`) to `F_k` at `y + 1`, written over `prev`: `ends` are the
/// elements entering and leaving the window, then those that entered and
/// left it the step before (`[lead, trail, lead_in, trail_out]`).
#[inline(always)]
fn step<S: F64Lanes, const T: usize, const H: bool>(
    tab: &Tables,
    cur: &[S; T],
    prev: &mut [S; T],
    ends: [S; 4],
) {
    let [lead, trail, lead_in, trail_out] = ends;
    let d = lead.sub(trail);
    // k = 0: first order, a box sliding by one.
    prev[0] = cur[0].add(d);
    let (ta, td, td2) = (terms::<T>(&tab.a), terms::<T>(&tab.d), terms::<T>(&tab.d2));
    if H {
        // Both ends weighted by cos(φkR): one sum of the four.
        let b = d.add(trail_out.sub(lead_in));
        for k in 1..T {
            let (ak, dk) = (S::splat(ta[k]), S::splat(td[k]));
            prev[k] = ak.mul(cur[k]).sub(prev[k]).add(dk.mul(b));
        }
    } else {
        // `cos(φkR)·(entering pair) − cos(φk(R + 1))·(leaving pair)`.
        let (near, far) = (lead.add(trail_out), trail.add(lead_in));
        for k in 1..T {
            let (ak, dk, d2k) = (S::splat(ta[k]), S::splat(td[k]), S::splat(td2[k]));
            prev[k] = ak
                .mul(cur[k])
                .sub(prev[k])
                .add(dk.mul(near).sub(d2k.mul(far)));
        }
    }
}

/// `F_k` at output 0 by direct sums (of the elements that may be nonzero:
/// [`Lanes::nonzero`]).
#[inline(always)]
fn seed<L: Lanes, S: F64Lanes, const T: usize>(tab: &Tables, src: &L) -> [S; T] {
    let mut f = [S::splat(0.0); T];
    let n = tab.seed.len() / T;
    skipped_are_zero::<L, S>(src, n);
    let nonzero = src.nonzero();
    for t in nonzero.start..nonzero.end.min(n) {
        // SAFETY: t ≤ 2R < rows + 2R, checked by `segment`.
        let v: S = unsafe { src.load(t) };
        fold(&mut f, &tab.seed[t * T..][..T], v);
    }
    f
}

/// `F_k` at outputs 0 and 1 by direct sums, each element loaded once for
/// both (the same sums, in the same order, as two calls of [`seed`]):
/// element `t` adds into `F_k(0)` with the coefficients of `t` (t ≤ 2R)
/// and into `F_k(1)` with those of `t − 1` (t ≥ 1). Only the elements that
/// may be nonzero ([`Lanes::nonzero`]) are read.
#[inline(always)]
fn seeds<L: Lanes, S: F64Lanes, const T: usize>(tab: &Tables, src: &L) -> ([S; T], [S; T]) {
    let (mut f0, mut f1) = ([S::splat(0.0); T], [S::splat(0.0); T]);
    let n = tab.seed.len() / T;
    let nonzero = src.nonzero();
    let (mut t, to) = (nonzero.start, nonzero.end.min(n + 1));
    skipped_are_zero::<L, S>(src, n + 1);
    // SAFETY (every load): t ≤ 2R + 1 < rows + 2R, as `segment` checked
    // for rows ≥ 2.
    if t == 0 && to > 0 {
        fold(&mut f0, &tab.seed[..T], unsafe { src.load(0) });
        t = 1;
    }
    // Elements 1..n add into both, without a test per element.
    let both = t..to.min(n);
    if !both.is_empty() {
        let now = tab.seed[both.start * T..both.end * T].chunks_exact(T);
        let before = tab.seed[(both.start - 1) * T..(both.end - 1) * T].chunks_exact(T);
        for (t, (c, b)) in both.clone().zip(now.zip(before)) {
            src.prefetch(t + AHEAD);
            let v: S = unsafe { src.load(t) };
            fold(&mut f0, c, v);
            fold(&mut f1, b, v);
        }
    }
    if to == n + 1 && t <= n {
        fold(&mut f1, &tab.seed[(n - 1) * T..], unsafe { src.load(n) });
    }
    (f0, f1)
}

/// Checks (in debug builds) that elements `0..n` outside `src.nonzero()`
/// read 0 in every lane, as the seeds take them to.
#[inline(always)]
fn skipped_are_zero<L: Lanes, S: F64Lanes>(src: &L, n: usize) {
    if cfg!(debug_assertions) {
        let nonzero = src.nonzero();
        for t in (0..n).filter(|t| !nonzero.contains(t)) {
            // SAFETY: the seeds read elements up to `n − 1` (`segment` checked).
            let mut v = vec![0.0; S::N];
            unsafe { src.load::<S>(t) }.store(&mut v);
            assert!(v.iter().all(|&x| x == 0.0), "element {t} skipped: {v:?}");
        }
    }
}

/// `f_k += c_k·v` for every term.
#[inline(always)]
fn fold<S: F64Lanes, const T: usize>(f: &mut [S; T], coeffs: &[f64], v: S) {
    for (fk, &c) in f.iter_mut().zip(coeffs) {
        *fk = fk.add(S::splat(c).mul(v));
    }
}

/// One output: `Σ_k G_k·F_k`, summed in ascending k.
#[inline(always)]
fn output<S: F64Lanes, const T: usize>(tab: &Tables, f: &[S; T]) -> S {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;

    /// A segment's outputs, in the order emitted.
    type Outputs = Vec<(usize, [f64; 4])>;

    /// The outputs of a segment of `rows` on `lanes` in one go, then in
    /// pieces of `cut` outputs (the carry saved and loaded between pieces
    /// where `save`).
    fn both<const T: usize, const H: bool>(
        tab: &Tables,
        lanes: &Strip,
        (rows, cut, save): (usize, usize, bool),
    ) -> (Outputs, Outputs) {
        let (mut whole, mut pieces) = (Vec::new(), Vec::new());
        segment::<_, [f64; 4], T, H>(tab, lanes, rows, |i, o| whole.push((i, o)));
        let mut carry = Carry::<[f64; 4], T>::start();
        for upto in (cut..rows + cut).step_by(cut) {
            resume::<_, _, T, H>(tab, lanes, rows, upto, &mut carry, |i, o| {
                pieces.push((i, o))
            });
            if save {
                let mut saved = [0.0; CARRY_VALUES];
                let next = carry.save(&mut saved);
                carry = Carry::load(&saved, next);
            }
        }
        (whole, pieces)
    }

    /// The tables of a σ = 2.3 Gaussian's DCT-5 and of a longer period.
    fn both_kinds() -> [Tables; 2] {
        let kernel = KernelSpec::Gaussian {
            sigma: 2.3,
            size: None,
        }
        .build()
        .unwrap();
        let (g, terms) = crate::method::dct5::one_d_kernel(&kernel, 3).unwrap();
        [
            Tables::new(&Dct5::new(&g, terms).unwrap()),
            Tables::new(&Dct5::extended(&g, 4, 17).unwrap()),
        ]
    }

    /// A segment run in pieces of any lengths emits what it emits in one
    /// go, bit for bit, for the DCT-5 and a longer period.
    #[test]
    fn a_segment_in_pieces_is_the_segment() {
        for tab in both_kinds() {
            let r = tab.r;
            let data: Vec<f64> = (0..4 * 160).map(|i| ((i * 37 % 11) as f64).sin()).collect();
            let lanes = Strip {
                data: &data,
                stride: WIDE,
                nonzero: 0..usize::MAX,
            };
            for rows in [1, 2, 3, 7, 160 - 2 * r] {
                for cut in [1, 2, 3, 5] {
                    // Saved and loaded between pieces (as pass 1 does) for
                    // the DCT-5, kept in registers for the longer period.
                    let (whole, pieces) = match tab.harmonic {
                        true => both::<4, true>(&tab, &lanes, (rows, cut, true)),
                        false => both::<5, false>(&tab, &lanes, (rows, cut, false)),
                    };
                    let bits = |v: &[(usize, [f64; 4])]| -> Vec<(usize, [u64; 4])> {
                        v.iter().map(|(i, o)| (*i, o.map(f64::to_bits))).collect()
                    };
                    assert_eq!(bits(&pieces), bits(&whole), "rows {rows}, pieces of {cut}");
                }
            }
        }
    }

    /// Seeds that skip the elements outside `nonzero` (all exactly 0,
    /// some of them −0) give the bits of seeds that sum them all, on
    /// segments of one and of several outputs, for both kinds of tables.
    #[test]
    fn seeds_skip_zeros_to_the_bit() {
        for tab in both_kinds() {
            let n = 2 * tab.r + 2;
            for held in [0..0, 0..n, 3..5, 2..n - 1, n - 1..n, 1..usize::MAX] {
                let data: Vec<f64> = (0..4 * 40)
                    .map(|i| match held.contains(&(i / WIDE)) {
                        true => ((i * 37 % 11) as f64).sin(),
                        false if i % 3 == 0 => -0.0,
                        false => 0.0,
                    })
                    .collect();
                let strip = |nonzero| Strip {
                    data: &data,
                    stride: WIDE,
                    nonzero,
                };
                for rows in [1, 2, 9] {
                    let run = |lanes: &Strip| {
                        let mut out = Vec::new();
                        match tab.harmonic {
                            true => segment::<_, [f64; 4], 4, true>(&tab, lanes, rows, |_, o| {
                                out.push(o.map(f64::to_bits))
                            }),
                            false => segment::<_, [f64; 4], 5, false>(&tab, lanes, rows, |_, o| {
                                out.push(o.map(f64::to_bits))
                            }),
                        }
                        out
                    };
                    let all = run(&strip(0..usize::MAX));
                    assert_eq!(run(&strip(held.clone())), all, "held {held:?}, rows {rows}");
                }
            }
        }
    }
}
