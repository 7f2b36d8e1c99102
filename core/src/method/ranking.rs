//! The per-pixel ranking of the float (fast) methods: class scores arrive
//! one class at a time, and each pixel keeps its winner under the tie rule
//! of docs/semantics.md#the-winner-and-ties (centre class first, else the smallest index), the
//! centre class's own score and, for the certified mode, the two best
//! scores (their margin is what certification tests).
//!
//! Slots are stored strip by strip ([`LANES`] output rows per strip,
//! pixel-major inside a strip), one array per field, so that folding the
//! scores of [`LANES`] vertically neighbouring pixels vectorises.

use super::simd::{F64Lanes, lanes, lanes_mut};
use crate::classes::NO_CLASS;
use rayon::prelude::*;

/// Output rows ranked together.
pub const LANES: usize = 8;

/// What the ranking keeps per pixel, one array per field.
#[derive(Clone, Debug, Default)]
pub(crate) struct Slots {
    /// The largest and second largest score (0 stands for "no class");
    /// empty where margins are not tracked.
    top: Vec<f64>,
    second: Vec<f64>,
    /// The winner by the tie rule, with its score.
    winner_score: Vec<f64>,
    centre_score: Vec<f64>,
    winner: Vec<u16>,
    centre: Vec<u16>,
}

impl Slots {
    /// Sizes the slots to `len` pixels and clears them, keeping their
    /// memory; `margins`: whether the two best scores are tracked. The
    /// centre classes are left to the caller ([`Slots::centres_mut`]).
    pub(crate) fn reset(&mut self, len: usize, margins: bool) {
        self.size_uncleared(len);
        if margins {
            // Emptied by `size_uncleared`, so these are fresh zeros.
            self.top.resize(len, 0.0);
            self.second.resize(len, 0.0);
        }
        self.centre.fill(NO_CLASS);
        self.all_mut().clear(0, len);
    }

    /// Sizes the slots to `len` pixels without margins, keeping their
    /// memory but not clearing them: the caller clears each run of slots
    /// ([`SlotsMut::clear`]) right before folding scores into it, while it
    /// is in cache. The centre classes are left to the caller.
    pub(crate) fn size_uncleared(&mut self, len: usize) {
        self.top.clear();
        self.second.clear();
        for v in [&mut self.winner_score, &mut self.centre_score] {
            v.resize(len, 0.0);
        }
        for v in [&mut self.winner, &mut self.centre] {
            v.resize(len, NO_CLASS);
        }
    }

    /// [`Slots::size_uncleared`] with margins: the caller clears each run
    /// of slots ([`SlotsMut::clear`]) right before folding scores into it.
    pub(crate) fn size_with_margins_uncleared(&mut self, len: usize) {
        for v in [
            &mut self.top,
            &mut self.second,
            &mut self.winner_score,
            &mut self.centre_score,
        ] {
            v.resize(len, 0.0);
        }
        for v in [&mut self.winner, &mut self.centre] {
            v.resize(len, NO_CLASS);
        }
    }

    pub(crate) fn centres_mut(&mut self) -> &mut [u16] {
        &mut self.centre
    }

    /// All slots, mutably.
    pub(crate) fn all_mut(&mut self) -> SlotsMut<'_> {
        SlotsMut {
            top: &mut self.top,
            second: &mut self.second,
            winner_score: &mut self.winner_score,
            centre_score: &mut self.centre_score,
            winner: &mut self.winner,
            centre: &mut self.centre,
        }
    }

    /// The class of slot `i` by the winner rule on float scores: the best
    /// score (ties within `tau` go to the centre class, else the smallest
    /// index); no score above `tau`, or a nodata centre unless
    /// `fill_nodata`, gives [`NO_CLASS`].
    #[inline(always)]
    fn decide(&self, i: usize, tau: f64, nodata: u16, fill_nodata: bool) -> u16 {
        let (centre, winner) = (self.centre[i], self.winner[i]);
        if centre == nodata && !fill_nodata {
            return NO_CLASS;
        }
        if winner != NO_CLASS
            && centre != nodata
            && self.centre_score[i] >= self.winner_score[i] - tau
        {
            return centre;
        }
        winner
    }
}

/// A mutable run of [`Slots`] (one strip or band).
pub(crate) struct SlotsMut<'a> {
    top: &'a mut [f64],
    second: &'a mut [f64],
    winner_score: &'a mut [f64],
    centre_score: &'a mut [f64],
    winner: &'a mut [u16],
    centre: &'a mut [u16],
}

/// The slots (indices into `top`, `second` and `centre`) whose winner does
/// not lead the runner-up by more than `margin`, where a winner is wanted
/// (see [`Ranking::certified`]).
fn undecided<'s>(
    top: &'s [f64],
    second: &'s [f64],
    centre: &'s [u16],
    margin: f64,
    nodata: u16,
    fill_nodata: bool,
) -> impl Iterator<Item = usize> + 's {
    top.iter()
        .zip(second)
        .zip(centre)
        .enumerate()
        .filter(move |&(_, ((&top, &second), &c))| {
            !decided(top, second, c, margin, nodata, fill_nodata)
        })
        .map(|(i, _)| i)
}

/// Whether a slot's winner is provably the exact one, or none is wanted (a
/// nodata centre left unfilled): its lead over the runner-up (or over "no
/// class", score 0) exceeds `margin`.
#[inline]
fn decided(
    top: f64,
    second: f64,
    centre: u16,
    margin: f64,
    nodata: u16,
    fill_nodata: bool,
) -> bool {
    (centre == nodata && !fill_nodata) || top - second > margin
}

impl SlotsMut<'_> {
    /// [`undecided`] among the `len` slots from `at` on (indices from `at`).
    pub(crate) fn undecided(
        &self,
        at: usize,
        len: usize,
        margin: f64,
        nodata: u16,
        fill_nodata: bool,
    ) -> impl Iterator<Item = usize> + '_ {
        let slots = at..at + len;
        undecided(
            &self.top[slots.clone()],
            &self.second[slots.clone()],
            &self.centre[slots],
            margin,
            nodata,
            fill_nodata,
        )
    }

    /// Clears the winner, its score and the centre's score of the `len`
    /// slots from `at` on (the state before any class is folded in), and
    /// the two best scores where margins are tracked.
    /// The centre classes of slots `at..at + len`, to fill.
    pub(crate) fn centres_mut(&mut self, at: usize, len: usize) -> &mut [u16] {
        &mut self.centre[at..at + len]
    }

    pub(crate) fn clear(&mut self, at: usize, len: usize) {
        if !self.top.is_empty() {
            self.top[at..at + len].fill(0.0);
            self.second[at..at + len].fill(0.0);
        }
        self.winner_score[at..at + len].fill(0.0);
        self.centre_score[at..at + len].fill(f64::NEG_INFINITY);
        self.winner[at..at + len].fill(NO_CLASS);
    }

    /// Folds class `c`'s weighted scores `s` into the slots from `at` on.
    /// Classes arrive in ascending order, so keeping the earlier winner
    /// unless beaten by more than `tau` is the smallest-index tie rule.
    /// A score of exactly 0 changes nothing that is ever read: `top` and
    /// `second` start at 0, a winner needs a score above `tau`, and a centre
    /// score of 0 never reaches a winner's score minus `tau`.
    #[inline(always)]
    pub(crate) fn update<S: F64Lanes>(&mut self, at: usize, c: u16, s: S, tau: f64) {
        let top = S::load(lanes::<S, _>(self.top, at));
        let second = S::load(lanes::<S, _>(self.second, at));
        second
            .max(top.min(s))
            .store(lanes_mut::<S, _>(self.second, at));
        top.max(s).store(lanes_mut::<S, _>(self.top, at));
        self.update_winner(at, c, s, tau);
    }

    /// [`SlotsMut::update`] over `s.len()` slots from 0 on (a multiple of four).
    pub(crate) fn update_all(&mut self, c: u16, s: &[f64], tau: f64) {
        for (i, s) in s.chunks_exact(4).enumerate() {
            let s: [f64; 4] = s.try_into().expect("four lanes");
            self.update(4 * i, c, s, tau);
        }
    }

    /// [`SlotsMut::update`] without the two best scores, which only the
    /// certified mode reads ([`Ranking::certified`]).
    #[inline(always)]
    pub(crate) fn update_winner<S: F64Lanes>(&mut self, at: usize, c: u16, s: S, tau: f64) {
        let ws = lanes_mut::<S, _>(self.winner_score, at);
        let old = S::load(ws);
        let better = s.gt(old.add(S::splat(tau)));
        S::select(better, s, old).store(ws);
        S::put_code(better, c, lanes_mut::<S, _>(self.winner, at));
        let cs = lanes_mut::<S, _>(self.centre_score, at);
        let own = S::eq_code(lanes::<S, _>(self.centre, at), c);
        S::select(own, s, S::load(cs)).store(cs);
    }

    /// Decides the [`LANES`] pixels from `at` on for class `c` without
    /// scores: the caller knows that no other class occurs in their windows
    /// and that `c`'s exact score is positive wherever their centre is not
    /// nodata, so `c` wins with the widest possible margin (score 1 over 0).
    /// `margins`: whether the two best scores are tracked.
    #[inline(always)]
    pub(crate) fn single<const MARGINS: bool>(&mut self, at: usize, c: u16) {
        // Field by field over whole slices, so that each is a few vector
        // stores rather than a loop of scalar ones.
        let slots = at..at + LANES;
        if MARGINS {
            self.top[slots.clone()].fill(1.0);
            self.second[slots.clone()].fill(0.0);
        }
        self.winner_score[slots.clone()].fill(1.0);
        self.winner[slots.clone()].fill(c);
        for (score, &centre) in self.centre_score[slots.clone()]
            .iter_mut()
            .zip(&self.centre[slots])
        {
            *score = if centre == c { 1.0 } else { *score };
        }
    }

    /// The classes of the `out.len()` slots from `at` on (a multiple of
    /// `S::N`) by the winner rule (see [`Ranking::decide`]), into `out` in
    /// slot order, `S::N` at a time.
    #[inline(always)]
    pub(crate) fn decide_run<S: F64Lanes>(
        &self,
        at: usize,
        tau: f64,
        nodata: u16,
        fill_nodata: bool,
        out: &mut [u16],
    ) {
        let n = out.len();
        let (centre, winner) = (&self.centre[at..at + n], &self.winner[at..at + n]);
        let (cs, ws) = (&self.centre_score[at..], &self.winner_score[at..]);
        for i in (0..n).step_by(S::N) {
            // Where the centre scores within tau of the winner, the centre...
            let own =
                S::load(lanes::<S, _>(cs, i)).ge(S::load(lanes::<S, _>(ws, i)).sub(S::splat(tau)));
            S::select_codes(
                own,
                lanes::<S, _>(centre, i),
                lanes::<S, _>(winner, i),
                lanes_mut::<S, _>(out, i),
            );
        }
        // ...unless nothing won or the centre is nodata (see `decide`).
        for ((o, &c), &w) in out.iter_mut().zip(centre).zip(winner) {
            *o = if c == nodata {
                if fill_nodata { w } else { NO_CLASS }
            } else if w == NO_CLASS {
                w
            } else {
                *o
            };
        }
    }
}

/// Per-pixel ranking of float scores over one tile's output, stored strip by
/// strip.
#[derive(Clone, Debug, Default)]
pub struct Ranking {
    pub ow: usize,
    pub oh: usize,
    tau: f64,
    slots: Slots,
}

impl Ranking {
    /// Sizes the ranking for an `ow × oh` output and clears it, keeping its
    /// memory (a ranking is reused tile after tile, so its pages are not
    /// faulted in afresh each time); `centre(x, y)` gives each pixel's own
    /// class. Margins are tracked.
    pub(crate) fn reset(
        &mut self,
        ow: usize,
        oh: usize,
        tau: f64,
        centre: impl Fn(usize, usize) -> u16 + Sync,
    ) {
        (self.ow, self.oh, self.tau) = (ow, oh, tau);
        self.slots.reset(oh.div_ceil(LANES) * LANES * ow, true);
        self.slots
            .centres_mut()
            .par_chunks_mut(LANES * ow.max(1))
            .enumerate()
            .with_min_len(crate::grain::min_items(LANES * ow))
            .for_each(|(s, strip)| fill_strip_centres(strip, 0..ow, s * LANES, oh, &centre));
    }

    /// The tolerance under which two scores count as equal.
    pub fn tau(&self) -> f64 {
        self.tau
    }

    /// The slots in runs of `rows` output rows (a multiple of [`LANES`]), in parallel.
    pub(crate) fn runs_mut(
        &mut self,
        rows: usize,
    ) -> impl IndexedParallelIterator<Item = SlotsMut<'_>> {
        debug_assert_eq!(rows % LANES, 0);
        let n = (rows * self.ow).max(1);
        let s = &mut self.slots;
        s.top
            .par_chunks_mut(n)
            .zip(s.second.par_chunks_mut(n))
            .zip(s.winner_score.par_chunks_mut(n))
            .zip(s.centre_score.par_chunks_mut(n))
            .zip(s.winner.par_chunks_mut(n))
            .zip(s.centre.par_chunks_mut(n))
            .map(
                |(((((top, second), winner_score), centre_score), winner), centre)| SlotsMut {
                    top,
                    second,
                    winner_score,
                    centre_score,
                    winner,
                    centre,
                },
            )
    }

    #[inline]
    fn index(ow: usize, x: usize, y: usize) -> usize {
        (y / LANES) * ow * LANES + x * LANES + y % LANES
    }

    /// The class at output pixel `(x, y)` by the winner rule on float
    /// scores: the best score (ties within `tau` go to the centre class, else
    /// the smallest index); no score above `tau`, or a nodata centre unless
    /// `fill_nodata`, gives [`NO_CLASS`].
    pub fn decide(&self, x: usize, y: usize, nodata: u16, fill_nodata: bool) -> u16 {
        self.slots
            .decide(Self::index(self.ow, x, y), self.tau, nodata, fill_nodata)
    }

    /// Whether the winner at `(x, y)` is provably the exact one: its lead
    /// over the runner-up (or over "no class", score 0) exceeds `margin`
    /// ([`Bounds::certify_margin`](super::bounds::Bounds::certify_margin)).
    pub fn certified(
        &self,
        x: usize,
        y: usize,
        margin: f64,
        nodata: u16,
        fill_nodata: bool,
    ) -> bool {
        let (s, i) = (&self.slots, Self::index(self.ow, x, y));
        decided(
            s.top[i],
            s.second[i],
            s.centre[i],
            margin,
            nodata,
            fill_nodata,
        )
    }

    /// The output pixels `(x, y)` whose winner is not [`Ranking::certified`]
    /// under `margin`, in strip order. The slots are scanned in their own
    /// order, strip by strip in parallel: asking pixel by pixel in row
    /// order strode through eight rows' slots at once and was 7 % of a
    /// whole `--exact` command on a MODIS map recomputing 0.09 %.
    pub fn uncertain(&self, margin: f64, nodata: u16, fill_nodata: bool) -> Vec<(u32, u32)> {
        let (ow, oh, s) = (self.ow, self.oh, &self.slots);
        let n = (LANES * ow).max(1);
        s.top
            .par_chunks(n)
            .zip(s.second.par_chunks(n))
            .zip(s.centre.par_chunks(n))
            .enumerate()
            .with_min_len(crate::grain::min_items(n))
            .flat_map_iter(|(strip, ((top, second), centre))| {
                undecided(top, second, centre, margin, nodata, fill_nodata)
                    .map(move |i| ((i / LANES) as u32, (strip * LANES + i % LANES) as u32))
                    .filter(|&(_, y)| (y as usize) < oh)
            })
            .collect()
    }

    /// The two best scores at `(x, y)`.
    #[cfg(test)]
    pub(crate) fn best_two(&self, x: usize, y: usize) -> (f64, f64) {
        let i = Self::index(self.ow, x, y);
        (self.slots.top[i], self.slots.second[i])
    }

    /// Writes the decisions in row-major output order.
    pub fn write(&self, out: &mut [u16], nodata: u16, fill_nodata: bool) {
        if self.ow == 0 {
            return;
        }
        out.par_chunks_mut(self.ow * LANES)
            .enumerate()
            .with_min_len(crate::grain::min_items(self.ow * LANES))
            .for_each(|(s, rows)| {
                let at = s * self.ow * LANES;
                write_strip(rows, self.ow, |i| {
                    self.slots.decide(at + i, self.tau, nodata, fill_nodata)
                })
            });
    }
}

/// Fills the centre classes of output columns `columns` of one strip
/// (output rows `y0..y0 + LANES`, fewer below `oh`) in slot order, into
/// `strip`, the slots from the first of those columns on.
pub(crate) fn fill_strip_centres(
    strip: &mut [u16],
    columns: std::ops::Range<usize>,
    y0: usize,
    oh: usize,
    centre: impl Fn(usize, usize) -> u16,
) {
    let first = columns.start;
    for j in 0..LANES.min(oh.saturating_sub(y0)) {
        for x in columns.clone() {
            strip[(x - first) * LANES + j] = centre(x, y0 + j);
        }
    }
}

/// Writes one strip's decisions into its output rows (`rows`: up to
/// [`LANES`] rows of `ow`, row-major); `decision(i)` decides slot `i` of
/// the strip.
#[inline(always)]
pub(crate) fn write_strip(rows: &mut [u16], ow: usize, decision: impl Fn(usize) -> u16) {
    for (j, row) in rows.chunks_exact_mut(ow).enumerate() {
        for (x, v) in row.iter_mut().enumerate() {
            *v = decision(x * LANES + j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The four-at-a-time decisions are the scalar winner rule's, on both
    /// kinds of lanes: ties within tau, a centre that lost, no winner,
    /// nodata centres with and without filling.
    #[test]
    fn runs_decide_like_single_slots() {
        let (tau, nodata) = (1e-9, 7);
        let cases: [(u16, u16, f64, f64); 12] = [
            // (centre, winner, centre score, winner score)
            (1, 2, 0.5, 0.5 + 0.5e-9),
            (1, 2, 0.4, 0.6),
            (2, 2, 0.6, 0.6),
            (3, NO_CLASS, f64::NEG_INFINITY, 0.0),
            (nodata, 2, f64::NEG_INFINITY, 0.7),
            (nodata, NO_CLASS, f64::NEG_INFINITY, 0.0),
            (4, 1, f64::NEG_INFINITY, 0.9),
            (1, 0, 0.3, 0.3 + 2e-9),
            (0, 5, 0.25, 0.25),
            (5, 0, 0.1, 0.8),
            (nodata, 0, f64::NEG_INFINITY, 1.0),
            (2, 3, 0.45, 0.45 - 1e-3),
        ];
        let mut slots = Slots::default();
        slots.size_uncleared(cases.len());
        for (i, &(c, w, cs, ws)) in cases.iter().enumerate() {
            slots.centre[i] = c;
            slots.winner[i] = w;
            slots.centre_score[i] = cs;
            slots.winner_score[i] = ws;
        }
        for fill_nodata in [false, true] {
            let want: Vec<u16> = (0..cases.len())
                .map(|i| slots.decide(i, tau, nodata, fill_nodata))
                .collect();
            let mut plain = vec![0; cases.len()];
            slots
                .all_mut()
                .decide_run::<[f64; 4]>(0, tau, nodata, fill_nodata, &mut plain);
            assert_eq!(plain, want, "fill {fill_nodata}");
            #[cfg(target_arch = "x86_64")]
            if std::is_x86_feature_detected!("avx2") {
                let mut avx2 = vec![0; cases.len()];
                slots.all_mut().decide_run::<std::arch::x86_64::__m256d>(
                    0,
                    tau,
                    nodata,
                    fill_nodata,
                    &mut avx2,
                );
                assert_eq!(avx2, want, "fill {fill_nodata}");
            }
        }
        assert_eq!(
            slots.decide(0, tau, nodata, false),
            1,
            "a tie goes to the centre"
        );
    }
}
