//! What the fast methods share: a kernel approximated by a sum of separable
//! terms `k̃ = Σ_r y_r ⊗ x_r` (a column filter times a row filter), applied
//! per class as two 1-D passes, then ranked per pixel with the winner rule.
//!
//! The two fast methods differ only in how a 1-D pass is computed: [`svd`]
//! applies taps directly (O(N) per pixel, several terms), [`dct5`] runs the
//! constant-time DCT-5 recursion (O(K), one term). Both are linear, so each
//! has an *effective* 1-D kernel, and `Σ|k̃ − q/Σq|` over the N×N window
//! (q the quantised kernel of the exact methods) bounds the score error that
//! approximation causes; each pass also bounds its own float rounding. The
//! certified mode ([`exact`]) builds on those two bounds.
//!
//! Layout: pass 1 runs down the columns of the tile (vectorised across a
//! row), the result is transposed, and pass 2 runs down the columns of the
//! transpose, so both passes stream whole rows. Scores and the ranking live in
//! the transposed layout (index `x·oh + y`); only the winners are turned back.
//!
//! [`svd`]: super::svd
//! [`dct5`]: super::dct5
//! [`exact`]: super::exact

use super::dct5::Dct5;
use super::{ClassTile, SmoothParams};
use crate::classes::NO_CLASS;
use crate::kernel::Kernel;
use rayon::prelude::*;

/// Unit roundoff of the host's working precision (f64).
pub const HOST_UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// A row-major plane of scores.
#[derive(Clone, Debug, Default)]
pub struct Plane {
    pub width: usize,
    pub height: usize,
    pub data: Vec<f64>,
}

impl Plane {
    pub fn new(width: usize, height: usize) -> Self {
        Plane {
            width,
            height,
            data: vec![0.0; width * height],
        }
    }

    /// The transpose (`height × width`).
    pub fn transposed(&self) -> Plane {
        const B: usize = 32;
        let mut t = Plane::new(self.height, self.width);
        let (w, h) = (self.width, self.height);
        if w == 0 || h == 0 {
            return t;
        }
        // Blocks of B output rows in parallel; B×B blocks inside stay in cache.
        t.data
            .par_chunks_mut(B * h)
            .enumerate()
            .for_each(|(bi, chunk)| {
                let x0 = bi * B;
                let rows = chunk.len() / h;
                for y0 in (0..h).step_by(B) {
                    for dx in 0..rows {
                        for y in y0..(y0 + B).min(h) {
                            chunk[dx * h + y] = self.data[y * w + x0 + dx];
                        }
                    }
                }
            });
        t
    }
}

/// Rows a 1-D pass reads: the class indicator of a tile, or a plane.
pub trait Rows: Sync {
    type T: Copy + Sync;
    fn width(&self) -> usize;
    fn row(&self, r: usize) -> &[Self::T];
    fn value(&self, v: Self::T) -> f64;
}

/// `1` where a tile pixel holds `class`, `0` elsewhere (nodata and outside included).
pub struct Indicator<'a> {
    pub classes: &'a [u16],
    pub width: usize,
    pub class: u16,
}

impl Rows for Indicator<'_> {
    type T = u16;
    fn width(&self) -> usize {
        self.width
    }
    #[inline]
    fn row(&self, r: usize) -> &[u16] {
        &self.classes[r * self.width..(r + 1) * self.width]
    }
    #[inline]
    fn value(&self, v: u16) -> f64 {
        (v == self.class) as u8 as f64
    }
}

impl Rows for Plane {
    type T = f64;
    fn width(&self) -> usize {
        self.width
    }
    #[inline]
    fn row(&self, r: usize) -> &[f64] {
        &self.data[r * self.width..(r + 1) * self.width]
    }
    #[inline]
    fn value(&self, v: f64) -> f64 {
        v
    }
}

/// A 1-D filter of odd length `2R+1` run down the columns of its input:
/// `out[y] = Σ_t w_t · in[y + t]`, `t = 0..=2R` (correlation, centre at `t = R`).
#[derive(Clone, Debug)]
pub enum Filter {
    /// Direct taps (svd's factors).
    Taps(Vec<f64>),
    /// The DCT-5 recursion (constant time in R).
    Dct5(Dct5),
}

impl Filter {
    pub fn len(&self) -> usize {
        match self {
            Filter::Taps(t) => t.len(),
            Filter::Dct5(d) => 2 * d.radius() + 1,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The weights this filter applies in exact arithmetic.
    pub fn effective(&self) -> Vec<f64> {
        match self {
            Filter::Taps(t) => t.clone(),
            Filter::Dct5(d) => d.effective(),
        }
    }

    /// L1 norm of the effective weights: bounds how input errors propagate.
    pub fn l1(&self) -> f64 {
        self.effective().iter().map(|w| w.abs()).sum()
    }

    /// Bound on the float rounding error of one output of this pass, for
    /// inputs bounded by `m` in magnitude and unit roundoff `u` (input errors
    /// excluded: they propagate through [`Filter::l1`]).
    pub fn rounding_bound(&self, m: f64, u: f64) -> f64 {
        match self {
            Filter::Taps(t) => {
                let l1: f64 = t.iter().map(|w| w.abs()).sum();
                gamma(t.len(), u) * l1 * m
            }
            Filter::Dct5(d) => d.rounding_bound(m, u),
        }
    }

    /// Runs the filter down the columns of `src` into `out` (`out.height`
    /// output rows, `src` has `out.height + len − 1` rows of `out.width`).
    pub fn apply<S: Rows>(&self, src: &S, out: &mut Plane) {
        debug_assert_eq!(src.width(), out.width);
        match self {
            Filter::Taps(t) => apply_taps(t, src, out),
            Filter::Dct5(d) => d.apply(src, out),
        }
    }
}

fn apply_taps<S: Rows>(taps: &[f64], src: &S, out: &mut Plane) {
    let w = out.width;
    if w == 0 {
        return;
    }
    out.data.par_chunks_mut(w).enumerate().for_each(|(y, o)| {
        o.iter_mut().for_each(|v| *v = 0.0);
        for (t, &a) in taps.iter().enumerate() {
            if a != 0.0 {
                for (v, &s) in o.iter_mut().zip(src.row(y + t)) {
                    *v += a * src.value(s);
                }
            }
        }
    });
}

/// `γ_n = n·u / (1 − n·u)`, the classic bound of an n-term float sum.
pub fn gamma(n: usize, u: f64) -> f64 {
    let nu = n as f64 * u;
    if nu >= 0.5 {
        f64::INFINITY
    } else {
        nu / (1.0 - nu)
    }
}

/// One separable term: `column` runs along y (kernel rows), `row` along x.
#[derive(Clone, Debug)]
pub struct Term {
    pub column: Filter,
    pub row: Filter,
}

/// Error bounds of a plan, in units of a normalised kernel (weights summing
/// to 1) and a class weight of 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Float rounding of the passes, the sum over terms and the class weighting.
    pub rounding: f64,
    /// `Σ|k̃ − q/Σq|`: approximation plus quantisation of the exact kernel.
    pub approx: f64,
}

impl Bounds {
    /// Bound on any score's total error.
    pub fn total(&self) -> f64 {
        self.rounding + self.approx
    }
}

/// A kernel as a sum of separable terms, ready to run.
#[derive(Clone, Debug)]
pub struct SeparablePlan {
    pub size: usize,
    pub terms: Vec<Term>,
}

impl SeparablePlan {
    /// The N×N kernel the plan applies in exact arithmetic (row-major).
    pub fn effective_kernel(&self) -> Vec<f64> {
        let n = self.size;
        let mut k = vec![0.0; n * n];
        for term in &self.terms {
            let (c, r) = (term.column.effective(), term.row.effective());
            for dy in 0..n {
                for dx in 0..n {
                    k[dy * n + dx] += c[dy] * r[dx];
                }
            }
        }
        k
    }

    /// Error bounds against the exact method's quantised `kernel`, for unit roundoff `u`.
    pub fn bounds(&self, kernel: &Kernel, u: f64) -> Bounds {
        let q = kernel.quantised();
        let q_sum: f64 = q.iter().map(|&v| v as f64).sum();
        let eff = self.effective_kernel();
        let mut approx: f64 = eff
            .iter()
            .zip(q)
            .map(|(k, &q)| (k - q as f64 / q_sum).abs())
            .sum();
        // The f64 evaluation of that sum itself is accurate to far better than this slack.
        let a_max: f64 = self.terms.iter().map(|t| t.column.l1() * t.row.l1()).sum();
        approx += 8.0 * (eff.len() as f64) * HOST_UNIT_ROUNDOFF * (a_max + 1.0);
        let mut rounding = 0.0;
        for t in &self.terms {
            let e1 = t.column.rounding_bound(1.0, u);
            let m2 = t.column.l1() + e1;
            rounding += t.row.l1() * e1 + t.row.rounding_bound(m2, u);
        }
        // Sum over terms, class weight (rounded, then multiplied), margin subtraction.
        rounding += gamma(self.terms.len(), u) * a_max;
        rounding += 4.0 * u * (a_max + rounding);
        Bounds {
            rounding: rounding * 1.01,
            approx,
        }
    }

    /// Scores every class of the tile and ranks them per pixel.
    /// `tau` is the float tolerance under which two scores count as equal.
    pub fn rank(&self, tile: &ClassTile, params: &SmoothParams, tau: f64) -> Ranking {
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let mut ranking = Ranking::new(ow, oh, tau);
        if ow == 0 || oh == 0 {
            return ranking;
        }
        let h = tile.halo;
        let centres: Vec<u16> = (0..ow * oh)
            .map(|i| tile.classes[(i % oh + h) * tile.width + i / oh + h])
            .collect();
        let wmax = params
            .class_weights
            .iter()
            .copied()
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let r = self.size / 2;
        // The tile may carry a wider halo than the kernel needs.
        let skip = h - r;
        let rows = &tile.classes[skip * tile.width..(tile.height - skip) * tile.width];
        let mut pass1 = Plane::new(tile.width, oh);
        let mut pass2 = Plane::new(oh, ow);
        let mut score = Plane::new(oh, ow);
        for c in 0..tile.n_classes {
            let indicator = Indicator {
                classes: rows,
                width: tile.width,
                class: c as u16,
            };
            for (i, term) in self.terms.iter().enumerate() {
                term.column.apply(&indicator, &mut pass1);
                let mut cols = pass1.transposed();
                if skip > 0 {
                    // Drop the extra halo columns: rows of the transpose are tile columns.
                    cols.data.drain(..skip * oh);
                    cols.height -= 2 * skip;
                    cols.data.truncate(cols.height * oh);
                }
                let target = if i == 0 { &mut score } else { &mut pass2 };
                term.row.apply(&cols, target);
                if i > 0 {
                    score
                        .data
                        .par_iter_mut()
                        .zip(&pass2.data)
                        .for_each(|(s, p)| *s += p);
                }
            }
            let w = params.class_weights[c] as f64 / wmax;
            ranking.update(c as u16, w, &score.data, &centres);
        }
        ranking.centres = centres;
        ranking
    }
}

/// Per-pixel ranking of float scores, in the transposed layout `x·oh + y`.
#[derive(Clone, Debug, Default)]
pub struct Ranking {
    pub ow: usize,
    pub oh: usize,
    tau: f64,
    /// The largest and second largest score (0 stands for "no class").
    pub top: Vec<f64>,
    pub second: Vec<f64>,
    /// The winner by the tie rule, with its score.
    pub winner: Vec<u16>,
    winner_score: Vec<f64>,
    centre_score: Vec<f64>,
    centres: Vec<u16>,
}

impl Ranking {
    fn new(ow: usize, oh: usize, tau: f64) -> Self {
        let n = ow * oh;
        Ranking {
            ow,
            oh,
            tau,
            top: vec![0.0; n],
            second: vec![0.0; n],
            winner: vec![NO_CLASS; n],
            winner_score: vec![0.0; n],
            centre_score: vec![f64::NEG_INFINITY; n],
            centres: Vec::new(),
        }
    }

    /// Folds in class `c`'s unweighted scores with class weight `w`.
    /// Classes arrive in ascending order, so keeping the earlier winner unless
    /// beaten by more than `tau` is the smallest-index tie rule.
    fn update(&mut self, c: u16, w: f64, scores: &[f64], centres: &[u16]) {
        let tau = self.tau;
        (
            &mut self.top,
            &mut self.second,
            &mut self.winner,
            &mut self.winner_score,
            &mut self.centre_score,
        )
            .into_par_iter()
            .zip(scores.par_iter().zip(centres))
            .for_each(|((top, second, winner, ws, cs), (&raw, &centre))| {
                let s = w * raw;
                if s > *top {
                    *second = *top;
                    *top = s;
                } else if s > *second {
                    *second = s;
                }
                if s > *ws + tau {
                    *ws = s;
                    *winner = c;
                }
                if centre == c {
                    *cs = s;
                }
            });
    }

    /// The class at transposed index `i` by the winner rule on float scores:
    /// the best score (ties within `tau` go to the centre class, else the
    /// smallest index); no score above `tau`, or a nodata centre unless
    /// `fill_nodata`, gives [`NO_CLASS`].
    pub fn decide(&self, i: usize, nodata: u16, fill_nodata: bool) -> u16 {
        let centre = self.centres[i];
        if centre == nodata && !fill_nodata {
            return NO_CLASS;
        }
        let w = self.winner[i];
        if w != NO_CLASS
            && centre != nodata
            && self.centre_score[i] >= self.winner_score[i] - self.tau
        {
            return centre;
        }
        w
    }

    /// Whether the winner at `i` is provably the exact one given a bound
    /// `eps` on every score's error: the margin exceeds `2·eps`.
    pub fn certified(&self, i: usize, eps: f64, nodata: u16, fill_nodata: bool) -> bool {
        (self.centres[i] == nodata && !fill_nodata) || self.top[i] - self.second[i] > 2.0 * eps
    }

    /// Writes the decisions in row-major output order.
    pub fn write(&self, out: &mut [u16], nodata: u16, fill_nodata: bool) {
        let (ow, oh) = (self.ow, self.oh);
        if ow == 0 {
            return;
        }
        out.par_chunks_mut(ow).enumerate().for_each(|(y, row)| {
            for (x, v) in row.iter_mut().enumerate() {
                *v = self.decide(x * oh + y, nodata, fill_nodata);
            }
        });
    }
}

/// A fast method on the host: a plan, its bounds, and the float winner rule.
#[derive(Clone, Debug)]
pub struct SeparableHost {
    name: String,
    plan: SeparablePlan,
    bounds: Bounds,
}

impl SeparableHost {
    /// Wraps `plan` (built for `kernel`) under `name`.
    pub fn new(name: impl Into<String>, plan: SeparablePlan, kernel: &Kernel) -> Self {
        let bounds = plan.bounds(kernel, HOST_UNIT_ROUNDOFF);
        SeparableHost {
            name: name.into(),
            plan,
            bounds,
        }
    }

    pub fn plan(&self) -> &SeparablePlan {
        &self.plan
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Scores and ranks one tile (see [`SeparablePlan::rank`]).
    pub fn rank(&self, tile: &ClassTile, params: &SmoothParams) -> Ranking {
        self.plan.rank(tile, params, self.bounds.rounding)
    }
}

impl super::ClassSmoother for SeparableHost {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn is_exact(&self) -> bool {
        false
    }

    fn smooth(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        out: &mut [u16],
    ) -> crate::error::Result<()> {
        self.rank(tile, params)
            .write(out, tile.nodata(), params.fill_nodata);
        Ok(())
    }
}
