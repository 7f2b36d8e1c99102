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
//! Layout: pass 1 runs down the columns of the tile, vectorised across a
//! whole row. Pass 2 runs along the rows in strips of [`LANES`] rows: a strip
//! is transposed into an `x × LANES` buffer (in cache) and filtered down its
//! columns, so both passes stream contiguous memory and pass 2 never needs a
//! full transposed plane. The ranking is updated strip by strip, so the score
//! of a class never exists as a plane either.
//!
//! This folder's [`FAMILIES`] are the two methods' descriptors,
//! [`svd::SvdFamily`] and [`Dct5Family`]: each builds its plan on the host
//! (certified with `--exact`) or as the OpenCL twin ([`cl`]), with its cost
//! for `--method auto`.
//!
//! [`svd`]: svd
//! [`dct5`]: super::dct5
//! [`exact`]: super::certified

use super::certified::{Certifiable, Certified};
use super::cost::{Candidate, CostShape, DeviceCosts, TileExtent};
use super::dct5::band::Target;
use super::dct5::contenders::ContenderKernel;
use super::dct5::{self, Dct5, rot as dct5_rot};
use super::family::{Accepts, Family, FastOptions, Settings};
use super::naive::cl::Variant;
use super::ranking::{LANES, Ranking};
use super::{ClassSmoother, ClassTile, SmoothParams};
use crate::device::{Device, Member};
use crate::error::Result;
use crate::kernel::Kernel;
use cl::SeparableCl;
use rayon::prelude::*;

pub mod cl;
pub mod svd;

pub use super::bounds::{Bounds, HOST_UNIT_ROUNDOFF, gamma};
pub use super::plane::ScorePlane;

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

    /// Output rows computed together: one row for taps, one explicitly
    /// seeded segment for DCT-5.
    fn block(&self) -> usize {
        match self {
            Filter::Taps(_) => 16,
            Filter::Dct5(d) => d.segment(),
        }
    }

    /// Runs the filter down the columns of `src` into `out` (`out.height`
    /// output rows, `src` has `out.height + len − 1` rows of `out.width`),
    /// blocks of rows in parallel.
    pub fn apply(&self, src: &ScorePlane, out: &mut ScorePlane) {
        debug_assert_eq!(src.width, out.width);
        let w = out.width;
        if w == 0 {
            return;
        }
        out.data
            .par_chunks_mut(self.block() * w)
            .enumerate()
            .for_each(|(b, o)| self.apply_rows(src, b * self.block(), o, w));
    }

    /// As [`Filter::apply`], on the calling thread.
    pub fn apply_serial(&self, src: &ScorePlane, out: &mut ScorePlane) {
        let w = out.width;
        if w == 0 {
            return;
        }
        for (b, o) in out.data.chunks_mut(self.block() * w).enumerate() {
            self.apply_rows(src, b * self.block(), o, w);
        }
    }

    /// Output rows `y0..y0 + o.len()/w` into `o`.
    fn apply_rows(&self, src: &ScorePlane, y0: usize, o: &mut [f64], w: usize) {
        match self {
            Filter::Taps(taps) => {
                for (i, row) in o.chunks_mut(w).enumerate() {
                    row.iter_mut().for_each(|v| *v = 0.0);
                    for (t, &a) in taps.iter().enumerate() {
                        if a != 0.0 {
                            for (v, &s) in row.iter_mut().zip(src.row(y0 + i + t)) {
                                *v += a * s;
                            }
                        }
                    }
                }
            }
            Filter::Dct5(d) => d.segment_pass(src, y0, o, w),
        }
    }
}

/// One separable term: `column` runs along y (kernel rows), `row` along x.
#[derive(Clone, Debug)]
pub struct Term {
    pub column: Filter,
    pub row: Filter,
}

/// The dct5 plan of `kernel` with `terms` (K) cosine terms: one term, the
/// same DCT-5 filter down the columns and along the rows.
pub fn dct5_plan(kernel: &Kernel, terms: usize) -> Result<SeparablePlan> {
    let (g, terms) = super::dct5::one_d_kernel(kernel, terms)?;
    Ok(SeparablePlan::both_ways(kernel, Filter::Dct5(Dct5::new(&g, terms)?)))
}

/// The plan `--exact` runs dct5 by on the host: the Gaussian on `terms`
/// cosines of a longer period ([`Dct5::extended_best`]), whose error is
/// far below the DCT-5's, so that few pixels are left to recompute; a
/// box stays the DCT-5's K = 0 (exact).
pub fn dct5_plan_certified(kernel: &Kernel, terms: usize) -> Result<SeparablePlan> {
    let (g, terms) = super::dct5::one_d_kernel(kernel, terms)?;
    let d = if terms == 0 {
        Dct5::new(&g, 0)?
    } else {
        Dct5::extended_best(&g, terms)?
    };
    Ok(SeparablePlan::both_ways(kernel, Filter::Dct5(d)))
}

/// A kernel as a sum of separable terms, ready to run.
#[derive(Clone, Debug)]
pub struct SeparablePlan {
    pub size: usize,
    pub terms: Vec<Term>,
    /// The kernel's envelope, with which the host's dct5 band scorer
    /// leaves out the classes that cannot be among an output's best two
    /// ([`SeparablePlan::with_contenders`]).
    pub contenders: Option<ContenderKernel>,
}

impl SeparablePlan {
    /// One term, the same filter down the columns and along the rows.
    fn both_ways(kernel: &Kernel, f: Filter) -> Self {
        SeparablePlan {
            size: kernel.size(),
            terms: vec![Term {
                column: f.clone(),
                row: f,
            }],
            contenders: None,
        }
    }

    /// The plan, pruned on the host with the envelope of `kernel` where it
    /// is a dct5 plan and pruning pays ([`ContenderKernel::new`]), for
    /// scores within `bounds` of the exact ones.
    pub fn with_contenders(mut self, kernel: &Kernel, bounds: &Bounds) -> Self {
        if let [Term {
            column: Filter::Dct5(_),
            ..
        }] = self.terms.as_slice()
        {
            self.contenders = ContenderKernel::new(kernel, bounds.total());
        }
        self
    }

    /// The N×N kernel the plan applies in exact arithmetic (row-major):
    /// each weight the sum over the terms in order, rows in parallel. At
    /// N = 901 this was a fifth of a run's single-threaded set-up, most of
    /// it faulting in a zeroed 6.5 MB matrix that every term added into.
    pub fn effective_kernel(&self) -> Vec<f64> {
        let n = self.size;
        let terms: Vec<(Vec<f64>, Vec<f64>)> = self
            .terms
            .iter()
            .map(|t| (t.column.effective(), t.row.effective()))
            .collect();
        let mut k = vec![0.0; n * n];
        k.par_chunks_mut(n).enumerate().for_each(|(dy, row)| {
            for (dx, k) in row.iter_mut().enumerate() {
                *k = terms.iter().fold(0.0, |k, (c, r)| k + c[dy] * r[dx]);
            }
        });
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

    /// Scores every class of the tile and ranks them per pixel into
    /// `ranking` (cleared first), margins included. `tau` is the float
    /// tolerance under which two scores count as equal.
    pub fn rank(&self, tile: &ClassTile, params: &SmoothParams, tau: f64, ranking: &mut Ranking) {
        let (ow, oh) = (tile.output_width(), tile.output_height());
        ranking.reset(ow, oh, tau, |x, y| tile.centre(x, y));
        if let Some(d) = self.band_filter(params) {
            let skip = tile.halo - self.size / 2;
            let prune = self.contenders.as_ref();
            super::dct5::band::rank_tile(d, tile, params, (skip, tau), prune, Target::Ranking(ranking));
            return;
        }
        self.rank_generic(tile, params, ranking);
    }

    /// The winner of every output pixel of the tile into `out` (row-major),
    /// [`NO_CLASS`](crate::classes::NO_CLASS) where none; `ranking` is scratch.
    pub fn decide_into(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        tau: f64,
        ranking: &mut Ranking,
        out: &mut [u16],
    ) {
        self.decide_certified(tile, params, tau, None, ranking, out);
    }

    /// [`SeparablePlan::decide_into`], and with `margin` the output pixels
    /// `(x, y)` whose winner does not lead the runner-up by more than it
    /// ([`Ranking::uncertain`]). dct5's band pass finds them strip by strip
    /// while the strip's slots are in cache: ranking the whole tile first
    /// and scanning it after (its slots cleared up front, 34 bytes a
    /// pixel) cost `--exact` 60 % over plain dct5 on a MODIS map.
    pub fn decide_certified(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        tau: f64,
        margin: Option<f64>,
        ranking: &mut Ranking,
        out: &mut [u16],
    ) -> Vec<(u32, u32)> {
        if let Some(d) = self.band_filter(params) {
            let skip = tile.halo - self.size / 2;
            let target = Target::Decisions {
                out,
                fill_nodata: params.fill_nodata,
                margin,
            };
            let prune = self.contenders.as_ref();
            return super::dct5::band::rank_tile(d, tile, params, (skip, tau), prune, target);
        }
        self.rank(tile, params, tau, ranking);
        let (nodata, fill) = (tile.nodata(), params.fill_nodata);
        ranking.write(out, nodata, fill);
        margin.map_or_else(Vec::new, |m| ranking.uncertain(m, nodata, fill))
    }

    /// The mean share of `tile`'s classes the band scorer's contenders
    /// keep ([`ContenderKernel::kept_share`]); `None` where it does not prune.
    pub fn kept_share(&self, tile: &ClassTile, params: &SmoothParams) -> Option<f64> {
        self.band_filter(params)?;
        let skip = tile.halo - self.size / 2;
        self.contenders.as_ref()?.kept_share(tile, params, skip)
    }

    /// The DCT-5 filter of a plan the band scorer runs (one term, the same
    /// filter both ways, at most [`MAX_TERMS`](super::dct5::band::MAX_TERMS)
    /// terms) and unweighted votes: its shortcuts (class boxes, runs, the
    /// one-class window) count pixels, not confidences, so weighted votes
    /// take the whole-plane path.
    fn band_filter(&self, params: &SmoothParams) -> Option<&Dct5> {
        if params.confidence.is_some() {
            return None;
        }
        match self.terms.as_slice() {
            [
                Term {
                    column: Filter::Dct5(d),
                    row: Filter::Dct5(e),
                },
            ] if d == e && super::dct5::band::runs(d) => Some(d),
            _ => None,
        }
    }

    /// [`SeparablePlan::rank`] by whole planes, for any plan, into a
    /// ranking already reset for the tile.
    fn rank_generic(&self, tile: &ClassTile, params: &SmoothParams, ranking: &mut Ranking) {
        let (ow, oh) = (tile.output_width(), tile.output_height());
        let (h, tau) = (tile.halo, ranking.tau());
        if ow == 0 || oh == 0 {
            return;
        }
        let wmax = params.max_class_weight();
        // The tile may carry a wider halo than the kernel needs.
        let skip = h - self.size / 2;
        let rows = &tile.classes[skip * tile.width..(tile.height - skip) * tile.width];
        let span = ow + self.size - 1;
        let mut planes: Vec<ScorePlane> = self
            .terms
            .iter()
            .map(|_| ScorePlane::new(tile.width, oh))
            .collect();
        let mut indicator = ScorePlane::new(tile.width, rows.len() / tile.width);
        // Weighted votes: the indicator times the confidence, over the
        // tile's largest confidence (scores stay within the bounds' range;
        // one positive factor per tile leaves every winner as it is).
        let votes = params.confidence.map(|v| {
            let v = &v[skip * tile.width..(tile.height - skip) * tile.width];
            (v, vote_scale(v))
        });
        for c in 0..tile.n_classes {
            match votes {
                Some((v, scale)) => indicator.weighted_indicator(rows, v, c as u16, scale),
                None => indicator.indicator(rows, c as u16),
            }
            for (term, plane) in self.terms.iter().zip(&mut planes) {
                term.column.apply(&indicator, plane);
            }
            let weight = params.class_weights[c] as f64 / wmax;
            let planes = &planes;
            ranking.runs_mut(LANES).enumerate().for_each_init(
                || {
                    (
                        ScorePlane::new(LANES, span),
                        ScorePlane::new(LANES, ow),
                        vec![0.0; ow * LANES],
                    )
                },
                |(strip, out, acc), (s, mut slots)| {
                    let y0 = s * LANES;
                    let lanes = LANES.min(oh - y0);
                    acc.iter_mut().for_each(|a| *a = 0.0);
                    for (term, plane) in self.terms.iter().zip(planes) {
                        for j in 0..lanes {
                            let row = &plane.row(y0 + j)[skip..skip + span];
                            for (x, &v) in row.iter().enumerate() {
                                strip.data[x * LANES + j] = v;
                            }
                        }
                        term.row.apply_serial(strip, out);
                        acc.iter_mut().zip(&out.data).for_each(|(a, o)| *a += o);
                    }
                    acc.iter_mut().for_each(|a| *a *= weight);
                    slots.update_all(c as u16, acc, tau);
                },
            );
        }
    }
}

/// The factor that brings a tile's quantised confidences `votes` into
/// 0..=1 for the fast methods (`--confidence`): 1 / the largest of them
/// (1 where all are 0). One positive factor per tile scales every class's
/// score alike, so it changes no winner; the device rounds it to f32.
pub fn vote_scale(votes: &[u16]) -> f64 {
    let top = votes.par_iter().copied().max().unwrap_or(0).max(1);
    1.0 / f64::from(top)
}

/// Threads up to which a wide kernel's tiles grow past 1024
/// ([`SeparableHost`]'s preferred tile).
const FEW_THREADS: usize = 4;

/// A fast method on the host: a plan, its bounds, and the float winner rule.
#[derive(Clone, Debug)]
pub struct SeparableHost {
    name: String,
    plan: SeparablePlan,
    bounds: Bounds,
    rankings: RankingPool,
}

/// Rankings kept between tiles (one per tile in flight), so that their
/// memory is not allocated and faulted in again for every tile. A clone
/// starts empty.
#[derive(Debug, Default)]
struct RankingPool(std::sync::Mutex<Vec<Ranking>>);

impl Clone for RankingPool {
    fn clone(&self) -> Self {
        RankingPool::default()
    }
}

impl RankingPool {
    fn take(&self) -> Ranking {
        self.0
            .lock()
            .map(|mut p| p.pop())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn give(&self, ranking: Ranking) {
        if let Ok(mut pool) = self.0.lock() {
            pool.push(ranking);
        }
    }
}

impl SeparableHost {
    /// Wraps `plan` (built for `kernel`) under `name`.
    pub fn new(name: impl Into<String>, plan: SeparablePlan, kernel: &Kernel) -> Self {
        let bounds = plan.bounds(kernel, HOST_UNIT_ROUNDOFF);
        SeparableHost {
            name: name.into(),
            plan: plan.with_contenders(kernel, &bounds),
            bounds,
            rankings: RankingPool::default(),
        }
    }

    pub fn plan(&self) -> &SeparablePlan {
        &self.plan
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    fn tau(&self) -> f64 {
        self.bounds.tie_tolerance(HOST_UNIT_ROUNDOFF)
    }

}

impl Certifiable for SeparableHost {
    /// The plan's kernel error and its rounding bound.
    fn score_bounds(&self) -> Bounds {
        self.bounds
    }

    /// See [`SeparablePlan::decide_certified`].
    fn decide_certified(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        margin: f64,
        out: &mut [u16],
    ) -> Vec<(u32, u32)> {
        let mut ranking = self.rankings.take();
        let uncertain =
            self.plan
                .decide_certified(tile, params, self.tau(), Some(margin), &mut ranking, out);
        self.rankings.give(ranking);
        uncertain
    }
}

impl super::ClassSmoother for SeparableHost {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn host_parallel(&self) -> bool {
        true
    }

    fn is_exact(&self) -> bool {
        false
    }

    fn weighs_votes(&self) -> bool {
        true
    }

    /// Past the default tile's reach, a tile of at least twice the
    /// kernel's width: each pass also runs over the halo, `N − 1` more
    /// rows and columns, which at N = 901 on 512² tiles was 7.6× the
    /// outputs' area (64 tiles of a 4096² map: 3.6 s against 2.0 s in 4
    /// tiles of 2048², dct5 `--exact`, σ = 150, 2 cores). But a tile over
    /// 1024 runs alone (the engine's pool takes several tiles at once up
    /// to that side) with its few bands of 2N rows in parallel: on 16
    /// threads, 1024² tiles (one band each, many at once) went faster, so
    /// more than [`FEW_THREADS`] threads keep to 1024.
    fn preferred_tile(&self) -> Option<usize> {
        let reach = 2 * (self.plan.size - 1);
        let most = match rayon::current_num_threads() > FEW_THREADS {
            true => 1024,
            false => 4096,
        };
        (reach > crate::io::DEFAULT_TILE)
            .then(|| reach.next_multiple_of(crate::io::DEFAULT_TILE).min(most))
    }

    fn kept_share(&self, tile: &ClassTile, params: &SmoothParams) -> Option<f64> {
        self.plan.kept_share(tile, params)
    }

    fn smooth(
        &self,
        tile: &ClassTile,
        params: &SmoothParams,
        out: &mut [u16],
    ) -> crate::error::Result<()> {
        let mut ranking = self.rankings.take();
        self.plan
            .decide_into(tile, params, self.tau(), &mut ranking, out);
        self.rankings.give(ranking);
        Ok(())
    }
}

/// This folder's methods in [`crate::method::registry`] (build.rs finds
/// this line).
pub const FAMILIES: &[&dyn Family] = &[&svd::SvdFamily, &Dct5Family];

/// The descriptor of `--method dct5`: its plan, built on the host
/// (certified with `--exact`) or a device, and its cost for `--method auto`.
pub struct Dct5Family;

impl Family for Dct5Family {
    fn name(&self) -> &'static str {
        "dct5"
    }

    fn help(&self) -> &'static str {
        "constant-time Gaussian"
    }

    fn accepts(&self) -> Accepts {
        Accepts {
            rank: false,
            terms: true,
            certifiable: true,
        }
    }

    fn is_exact(&self) -> bool {
        false
    }

    fn list_position(&self) -> u8 {
        20
    }

    fn build(
        &self,
        settings: &Settings,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        Ok(dct5_candidate(member.as_ref(), kernel, &settings.options)?.smoother)
    }

    /// No candidate for kernels dct5 does not take (only Gaussian and box).
    fn candidate(
        &self,
        member: &Member,
        _variant: Option<Variant>,
        kernel: &Kernel,
        fast: &FastOptions,
    ) -> Result<Option<Candidate>> {
        Ok(dct5_candidate(member.as_ref(), kernel, fast).ok())
    }
}

/// dct5 with `fast.terms` (certified when `fast.exact`); an error for
/// kernels other than Gaussian and box.
fn dct5_candidate(
    device: Option<&Device>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    let plan = match (device, fast.exact, fast.terms) {
        (None, true, None) => dct5_plan_certified(kernel, dct5::CERTIFIED_TERMS)?,
        _ => dct5_plan(kernel, fast.terms.unwrap_or(dct5::DEFAULT_TERMS))?,
    };
    let (terms, segment, harmonic) = match &plan.terms[0].row {
        Filter::Dct5(d) => (d.terms(), d.segment(), d.is_harmonic()),
        Filter::Taps(_) => unreachable!("dct5 plans hold DCT-5 filters"),
    };
    // On a device dct5 runs the OpenCL kernels' segments, not the host's.
    let passes = match device {
        Some(dev) => Dct5Passes::Device {
            target: dct5_rot::target_items(dev.info().kind, dev.info().compute_units),
        },
        None => Dct5Passes::Host {
            segment,
            wide: crate::cpu::avx512(),
        },
    };
    let shape = Dct5Cost {
        size: kernel.size(),
        terms,
        harmonic,
        passes,
    };
    let name = match harmonic {
        true => format!("dct5/host (K={terms})"),
        false => format!("dct5/host (K={terms}, longer period)"),
    };
    separable_candidate(device, "dct5", name, plan, Box::new(shape), kernel, fast)
}

/// A separable `plan` on `device` (OpenCL, `method` naming its programs)
/// or on the host (`host_name`), certified when `fast.exact`.
pub(crate) fn separable_candidate(
    device: Option<&Device>,
    method: &str,
    host_name: String,
    plan: SeparablePlan,
    shape: Box<dyn CostShape>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    if let Some(dev) = device {
        // The device kernels' windows and tables are sized for the per-tap range.
        crate::kernel::refuse_wide(kernel, &format!("{method} on an OpenCL device"))?;
        let cl = SeparableCl::new(dev.clone(), method, &plan, kernel, fast.exact)?;
        return Ok(Candidate {
            bounds: Some(cl.bounds()),
            smoother: Box::new(cl),
            shape,
            certified: fast.exact,
        });
    }
    let host = SeparableHost::new(host_name, plan, kernel);
    let bounds = Some(host.bounds());
    let smoother: Box<dyn ClassSmoother> = if fast.exact {
        Box::new(Certified::new(host))
    } else {
        Box::new(host)
    };
    Ok(Candidate {
        smoother,
        shape,
        bounds,
        certified: fast.exact,
    })
}

/// dct5's cost per class: its two passes as the device runs them
/// ([`Dct5Passes`]), pass 1 also over the halo columns, plus the ranking.
pub struct Dct5Cost {
    pub size: usize,
    pub terms: usize,
    /// The DCT-5's own period; a longer one weighs the window's two ends
    /// apart (two more products and sums per term and step).
    pub harmonic: bool,
    pub passes: Dct5Passes,
}

/// The size of a host dct5 band's plane per class (MB) that doubles the
/// model's cost of its passes: fitted when σ = 150 on a 4096² map took
/// dct5 `--exact` 2.3 s against fft's 5.5 s on 2 cores and σ = 300 20 s
/// against 8.3 s, so that both went the faster way. Since the contenders
/// (decision 0028) σ = 300 there takes dct5 `--exact` 4.2–5.7 s against
/// fft's 9 s; the model finds it through the contenders' measured share
/// ([`Dct5Cost::kept_share`], decision 0031).
const PLANE_MB_DOUBLING: f64 = 25.0;

/// How a dct5 candidate runs its two passes, which fixes its segment lengths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dct5Passes {
    /// The host's f64 recursion: segments of `segment` outputs, each seeded
    /// by two direct sums of N samples; `wide`: pass 2 and its ranking on
    /// AVX-512 vectors of eight ([`PASS2_WIDE`]).
    Host { segment: usize, wide: bool },
    /// The OpenCL kernels: segments from [`dct5_rot::segment`] for the tile
    /// with `target` work-items ([`dct5_rot::target_items`] of the device),
    /// each warmed up over N steps.
    Device { target: usize },
}

/// What the host band scorer pays for a tile whose windows all hold one
/// class, as a share of a tile of mixed windows: the scan for classes,
/// the runs, the outputs decided alone and pass 1's reach past the mixed
/// ones. Without the tile's mixed share the model ran naive on 3 of the
/// 16 tiles of the bundled MODIS map at σ = 1–3 (2 cores), each 2× slower
/// there than dct5 `--exact`; with it every tile runs dct5, and no other
/// choice of the 2-core grid moved (decision 0028).
const SINGLE_CLASS_FLOOR: f64 = 0.3;

/// What pass 2's steps and ranking updates cost on AVX-512 vectors of
/// eight, as a share of four (decision 0035): a microbenchmark of the loop
/// gave 0.55, and on 2 cores the band scorer took 0.70 of its time on the
/// 17-class simplex map, where pass 2 was 54 % of it and pass 1 36 %.
const PASS2_WIDE: f64 = 0.5;

impl Dct5Cost {
    /// The share of the tile's classes whose passes the host band scorer
    /// runs: the share its contenders keep where measured on the tile
    /// ([`TileExtent::contenders`]; 0.13–0.59 of 15–17 classes on the
    /// tiles of the 4096² MODIS map at σ = 150 and 300, 0.3 and 0.45–0.5 on
    /// 17-class simplex maps of 512- and 64-pixel features), else all.
    /// Without it, `auto --exact` at σ = 300 on the MODIS map ran fft
    /// (9 s on 2 cores) where dct5 `--exact` took 5.2 s on the same tile.
    /// The tile's size is fixed before any tile is measured, so a nominal
    /// share there would choose it: at 0.3, σ = 300 on 16 threads took
    /// dct5's 1024² tiles, and fft ran on them (a plane 8× their area)
    /// at 1.4–2.5× its time on its own tile on simplex maps. Only a host
    /// scorer that prunes measures a share; a device runs every pass.
    fn kept_share(&self, tile: &TileExtent) -> f64 {
        match self.passes {
            Dct5Passes::Host { .. } => tile.contenders.unwrap_or(1.0),
            Dct5Passes::Device { .. } => 1.0,
        }
    }

    /// The share of its classes' passes the host band scorer runs on
    /// `tile`: an output whose windows hold one class is decided without
    /// scores, and a class costs nothing where no run of mixed outputs
    /// reads it, so the passes follow the tile's mixed windows (1 on a
    /// device, or where the runs are not measured).
    fn scored_share(&self, tile: &TileExtent) -> f64 {
        match (self.passes, tile.runs) {
            (Dct5Passes::Host { .. }, Some(runs)) => {
                SINGLE_CLASS_FLOOR + (1.0 - SINGLE_CLASS_FLOOR) * runs.mixed
            }
            _ => 1.0,
        }
    }

    /// What pass 2 and the ranking cost as a share of four lanes'.
    fn pass2_share(&self) -> f64 {
        match self.passes {
            Dct5Passes::Host { wide: true, .. } => PASS2_WIDE,
            _ => 1.0,
        }
    }

    /// Per output pixel and class, the steps (and a description) of the two
    /// passes on `tile`, pass 1 over the halo columns included.
    fn steps(&self, tile: &TileExtent) -> (f64, String) {
        let size = self.size;
        let n = size as f64;
        let k1 = self.terms as f64 + 1.0;
        let halo = tile.halo_factor(size);
        match self.passes {
            Dct5Passes::Host { segment, .. } => {
                let seeds = 2.0 * k1 * n / segment as f64;
                // A band's pass-1 plane per class, its rows and halo by the
                // tile's columns and halo: past the caches every class's
                // plane streams through memory (σ = 300 on a 4096² map:
                // 255 MB a class, 3.3× the time of σ = 150's 64 MB where
                // the steps grew 1.2×; fft ran at 0.4× dct5 `--exact`
                // there, and auto ran dct5 without this term).
                let rows = (segment.min(2 * size).min(tile.height) + size - 1) as f64;
                let plane_mb = rows * (tile.width + size - 1) as f64 * 8.0 / 1e6;
                let memory = 1.0 + plane_mb / PLANE_MB_DOUBLING;
                // A longer period's two ends: about 16 % more per term
                // than the DCT-5 of as many (measured on the simplex map).
                let per_term = if self.harmonic { 3.0 } else { 3.5 };
                let per_pass = per_term * k1 + seeds;
                (
                    (halo + self.pass2_share()) * per_pass * memory,
                    format!(
                        "segments of {segment} seeded by 2 sums of {size}, planes of {plane_mb:.0} MB a class"
                    ),
                )
            }
            Dct5Passes::Device { target } => {
                let r = size / 2;
                let (ow, oh, c) = (tile.width.max(1), tile.height.max(1), tile.classes.max(1));
                let seg1 = dct5_rot::segment(r, oh, (ow + size - 1) * c, target);
                let seg2 = dct5_rot::segment(r, ow, oh * c, target);
                let ops = 9.0 * self.terms as f64 + 2.0;
                let warm = |seg: usize| 1.0 + n / seg as f64;
                (
                    (halo * warm(seg1) + warm(seg2)) * ops,
                    format!("device segments {seg1}/{seg2} after {size} warm-up steps each"),
                )
            }
        }
    }
}

impl CostShape for Dct5Cost {
    fn cost(&self, tile: &TileExtent, costs: &DeviceCosts) -> f64 {
        let classes = tile.classes.max(1) as f64 * self.kept_share(tile);
        let (steps, _) = self.steps(tile);
        let rank = costs.rank * self.pass2_share();
        classes * (steps * costs.stream + rank) * self.scored_share(tile) + costs.separable_setup
    }

    fn explain(&self, tile: &TileExtent) -> String {
        let (_, mut how) = self.steps(tile);
        if self.pass2_share() < 1.0 {
            how.push_str(", pass 2 on eight lanes");
        }
        let kept = match self.kept_share(tile) {
            share if share < 1.0 => format!(" ({:.0} % of them contend)", 100.0 * share),
            _ => String::new(),
        };
        format!(
            "{} classes{kept} × 2 passes × {} terms, pass 1 over {} columns, {how}",
            tile.classes,
            self.terms + 1,
            tile.width + self.size - 1
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::dct5::rot::device_bounds;

    /// The band scorer (class boxes, per-column row ranges, runs, the
    /// one-class shortcut) against the plain whole-plane path, on a tile
    /// with classes in small patches far apart down the same columns, at
    /// the tile's edges, and nodata. Without the shortcut (`--fill-nodata`)
    /// every score matches to rounding; with it, every winner that either
    /// ranking is sure of by a wide margin.
    #[test]
    fn band_scorer_ranks_like_whole_planes() {
        let kernel = KernelSpec::Gaussian {
            sigma: 2.0,
            size: None,
        }
        .build()
        .unwrap();
        let plan = dct5_plan(&kernel, 3).unwrap();
        let (halo, n) = (kernel.radius(), 5);
        let (w, h) = (150 + 2 * halo, 140 + 2 * halo);
        let classes: Vec<u16> = (0..w * h)
            .map(|i| {
                let (x, y) = (i % w, i / w);
                let patch = |x0: usize, y0: usize, s: usize| {
                    (x0..x0 + s).contains(&x) && (y0..y0 + s).contains(&y)
                };
                if patch(40, 8, 3) || patch(42, 120, 4) || patch(0, 60, 5) {
                    3
                } else if patch(w - 2, h - 2, 2) || patch(90, 70, 1) {
                    4
                } else if patch(100, 20, 9) {
                    n as u16 // nodata
                } else {
                    ((x / 13 + y / 17) % 3) as u16
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
        let weights = vec![1; n];
        let (ow, oh, nodata, tau) = (
            tile.output_width(),
            tile.output_height(),
            tile.nodata(),
            1e-12,
        );
        for fill_nodata in [true, false] {
            let params = SmoothParams {
                kernel: &kernel,
                class_weights: &weights,
                fill_nodata,
                ties: Default::default(),
                confidence: None,
            };
            let (mut banded, mut whole) = (Ranking::default(), Ranking::default());
            plan.rank(&tile, &params, tau, &mut banded);
            whole.reset(ow, oh, tau, |x, y| tile.centre(x, y));
            plan.rank_generic(&tile, &params, &mut whole);
            let eps = 1e-9;
            let mut compared = 0;
            for y in 0..oh {
                for x in 0..ow {
                    let at = format!("output ({x}, {y}), fill {fill_nodata}");
                    if fill_nodata {
                        let ((a, b), (c, d)) = (banded.best_two(x, y), whole.best_two(x, y));
                        assert!((a - c).abs() < eps && (b - d).abs() < eps, "{at}");
                    }
                    if banded.certified(x, y, eps, nodata, fill_nodata)
                        || whole.certified(x, y, eps, nodata, fill_nodata)
                    {
                        compared += 1;
                        assert_eq!(
                            banded.decide(x, y, nodata, fill_nodata),
                            whole.decide(x, y, nodata, fill_nodata),
                            "{at}"
                        );
                    }
                }
            }
            assert!(compared > ow * oh * 9 / 10, "{compared} of {}", ow * oh);
        }
    }

    /// On eight lanes pass 2 and the ranking cost [`PASS2_WIDE`] of four's,
    /// pass 1 as much.
    #[test]
    fn pass_two_on_eight_lanes_costs_less() {
        let tile = TileExtent::square(512, 17);
        let costs = DeviceCosts::HOST_FEW;
        let cost = |wide| {
            Dct5Cost {
                size: 31,
                terms: 3,
                harmonic: true,
                passes: Dct5Passes::Host { segment: 124, wide },
            }
            .cost(&tile, &costs)
        };
        let (four, eight) = (cost(false), cost(true));
        let halo = tile.halo_factor(31);
        let share = (halo + PASS2_WIDE) / (halo + 1.0);
        assert!(
            eight <= share * four * (1.0 + 1e-12) && eight >= PASS2_WIDE * four,
            "{eight} of {four}"
        );
    }

    #[test]
    fn dct5_plans_take_only_gaussians_and_boxes() {
        let gauss = |sigma| KernelSpec::Gaussian { sigma, size: None }.build().unwrap();
        assert!(dct5_plan(&gauss(3.0), 3).is_ok());
        let b = KernelSpec::Box { size: 9 }.build().unwrap();
        let p = dct5_plan(&b, 3).unwrap();
        match &p.terms[0].row {
            Filter::Dct5(d) => assert_eq!(d.terms(), 0),
            _ => unreachable!(),
        }
        let disc = KernelSpec::Disc { radius: 3 }.build().unwrap();
        assert!(dct5_plan(&disc, 3).is_err());
        assert!(dct5_plan(&gauss(1.0), 4).is_err());
    }

    /// The certified margin ([`Bounds::certify_margin`]) is `approx`, not
    /// `2·approx`, because the kernel's error is shared by the two scores;
    /// and no less, because a window can reach it: class 0 on every tap
    /// where the plan's kernel exceeds the exact one, class 1 elsewhere,
    /// puts the whole `Σ|k̃ − q/Σq|` into the fast lead of class 0.
    #[test]
    fn certified_margin_is_the_shared_kernel_error() {
        let (kernel, plan, _) = dct5_filter(5.0, 3);
        let n = kernel.size();
        let q = kernel.quantised();
        let q_sum: f64 = q.iter().map(|&v| f64::from(v)).sum();
        let excess: Vec<f64> = (plan.effective_kernel().iter().zip(q))
            .map(|(k, &q)| k - f64::from(q) / q_sum)
            .collect();
        let classes: Vec<u16> = excess.iter().map(|&r| u16::from(r <= 0.0)).collect();
        let tile = ClassTile {
            width: n,
            height: n,
            halo: n / 2,
            n_classes: 2,
            classes: &classes,
        };
        let weights = [1, 1];
        let params = SmoothParams {
            kernel: &kernel,
            class_weights: &weights,
            fill_nodata: false,
            ties: Default::default(),
            confidence: None,
        };
        let mut ranking = Ranking::default();
        plan.rank(&tile, &params, 1e-12, &mut ranking);
        let (top, second) = ranking.best_two(0, 0);
        let exact = |c: u16| -> f64 {
            (classes.iter().zip(q))
                .filter(|&(&k, _)| k == c)
                .map(|(_, &q)| f64::from(q) / q_sum)
                .sum()
        };
        let winner = ranking.decide(0, 0, 2, false);
        let fast_lead = if winner == 0 { top - second } else { second - top };
        let shared: f64 = excess.iter().map(|r| r.abs()).sum();
        let off = fast_lead - (exact(0) - exact(1));
        let bounds = plan.bounds(&kernel, HOST_UNIT_ROUNDOFF);
        assert!((off - shared).abs() < 1e-9, "{off} against {shared}");
        assert!(off <= bounds.certify_margin(), "{off} over {bounds:?}");
        assert!(bounds.certify_margin() < 0.6 * 2.0 * bounds.total());
    }

    /// f32's unit roundoff (the OpenCL devices').
    const F32_UNIT_ROUNDOFF: f64 = f32::EPSILON as f64 / 2.0;

    /// A Gaussian's kernel, dct5 plan and its DCT-5 filter.
    fn dct5_filter(sigma: f64, terms: usize) -> (Kernel, SeparablePlan, Dct5) {
        let k = KernelSpec::Gaussian { sigma, size: None }.build().unwrap();
        let p = dct5_plan(&k, terms).unwrap();
        let Filter::Dct5(d) = p.terms[0].row.clone() else {
            unreachable!()
        };
        (k, p, d)
    }

    /// The device bound grows with N but stays within a small multiple of the
    /// approximation error for the σ the GPU target uses.
    #[test]
    fn device_bound_is_modest() {
        // Up to the largest kernels the f32 rounding (which grows as N²:
        // segments of 4·N steps over window sums of N) stays of the order of
        // the approximation error, so certification still pays: σ = 64
        // (N = 385) 2.8e-3 against 2.6e-3.
        for sigma in [64.0, 85.0] {
            let (k, p, d) = dct5_filter(sigma, 3);
            let b = device_bounds(
                p.bounds(&k, F32_UNIT_ROUNDOFF).approx,
                &d,
                F32_UNIT_ROUNDOFF,
            );
            assert!(
                b.rounding < 2.0 * b.approx && b.total() < 1e-2,
                "σ={sigma}: {b:?}"
            );
        }
        let (k, p, d) = dct5_filter(21.0, 3);
        let b = device_bounds(
            p.bounds(&k, F32_UNIT_ROUNDOFF).approx,
            &d,
            F32_UNIT_ROUNDOFF,
        );
        assert!(b.rounding < b.approx, "{b:?}");
        let host = p.bounds(&k, F32_UNIT_ROUNDOFF);
        let old = SeparablePlan {
            size: p.size,
            terms: vec![Term {
                column: Filter::Dct5(d.clone().with_segment(256)),
                row: Filter::Dct5(d.clone().with_segment(256)),
            }],
            contenders: None,
        }
        .bounds(&k, F32_UNIT_ROUNDOFF);
        assert!(b.rounding < old.rounding / 4.0, "{b:?} vs {old:?}");
        assert_eq!(b.approx, host.approx);
    }
}
