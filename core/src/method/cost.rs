//! The pieces of `--method auto`'s cost model every family shares: the
//! per-device operation costs, a tile's extent, and a candidate with its
//! [`CostShape`] (each family costs its own inner loops; see
//! [`super::auto`] for the model and its choice).

use super::ClassSmoother;
use super::bounds::Bounds;
use crate::device::DeviceKind;

/// Threads from which the host is costed as [`DeviceCosts::HOST_WIDE`]: the
/// two fits come from a 2-core and a 16-core machine, and the per-tile
/// set-up that does not spread over threads weighs more the more there are.
pub const WIDE_HOST_THREADS: usize = 8;

/// What each candidate costs per operation on one kind of device (relative).
#[derive(Clone, Copy, Debug)]
pub struct DeviceCosts {
    /// One histogram update (a gather and an add, poorly vectorised).
    pub histogram: f64,
    /// One step of a dct5 pass (streams, vectorises).
    pub stream: f64,
    /// One tap of an svd pass (a multiply-add over a row of taps).
    pub tap_stream: f64,
    /// What svd pays per class and pixel whatever the kernel: the score
    /// planes its passes write and read.
    pub svd_plane: f64,
    /// One ranking update per class and pixel.
    pub rank: f64,
    /// What a separable method (svd, dct5) pays per pixel beyond naive's
    /// set-up whatever the kernel: its score planes and passes' start.
    pub separable_setup: f64,
    /// What naive pays per output pixel whatever its windows hold (the
    /// run tables, the test for a window of one value, the output).
    pub naive_pixel: f64,
    /// What naive pays per window holding several values: per class (the
    /// histogram cleared and ranked) and per window row (finding its runs).
    pub naive_class: f64,
    pub naive_row: f64,
    /// One run of a window row, walked (naive on the host).
    pub run_step: f64,
}

impl DeviceCosts {
    /// Host (rayon) with few threads: histogram updates are scattered
    /// loads; passes run at SIMD width over whole rows.
    /// The unit is one tap of naive's walk (0.61 ns of one core of the
    /// 2-core machine). naive's terms are fitted (relative least squares)
    /// to its engine times on 1024² rasters over σ = 1…12 × the MODIS crop,
    /// simplex and random maps of 2, 17 and 64 classes, with each tile's
    /// measured runs: a run walked costs 2 taps, and every row and class
    /// of a mixed window about 10 (the walk's branches, the histogram's
    /// clearing and ranking), which a model of one unit per run missed by
    /// 3–5× (auto ran naive where dct5 --exact was 2–5× faster). svd's
    /// taps ran 2.4× dearer per unit than dct5's steps on the same grid,
    /// plus about 12 units per class and pixel whatever the kernel (8.5 +
    /// 0.6·N ns per class and pixel on a 64-class random map).
    /// The ranking is the earlier fit to a 16-core host (BENCHMARKS.md,
    /// "auto --exact"). The separable set-up is nothing beyond naive's
    /// since the certified band pass stopped clearing and scanning a whole
    /// tile's ranking (decision 0024): refitted by the choices it gives on
    /// the grid's measured times (36 → 39 of 42 within 15 %, each tile
    /// costed as the model costs it).
    pub const HOST_FEW: DeviceCosts = DeviceCosts {
        histogram: 1.0,
        stream: 0.2,
        tap_stream: 0.5,
        svd_plane: 12.0,
        rank: 2.0,
        separable_setup: 0.0,
        naive_pixel: 55.0,
        naive_class: 9.4,
        naive_row: 10.5,
        run_step: 2.0,
    };
    /// Host with many threads ([`WIDE_HOST_THREADS`] or more), fitted the
    /// same way to engine times of one 512² tile on the 16-core `nvidia-h200`
    /// host over σ = 1…35 × the same maps. The unit is again a tap of
    /// naive's walk (0.096 ns of wall time there); what differs is what
    /// does not spread over 16 threads: a pixel's share of the tile's
    /// set-up is 320 taps for naive (runs tables, the serial test for
    /// windows of one value) and was 545 for svd and dct5, against 55 and
    /// 80 on two cores, while a class or a window row costs about one tap.
    /// The separable set-up, refitted as on two cores after decision 0024,
    /// is 100 (57 → 67 of 70 within 15 %). After decision 0032 a histogram
    /// update, a dct5 step and a ranking update were refitted by
    /// `benches/auto/refit.py` to a grid call of `d5b30a3`: the choices'
    /// own times came within 15 % of the fastest in 67 cases of 70, not 63
    /// (naive where dct5 ran at σ = 1–2 on 17 classes and σ = 5 on 64; dct5
    /// where svd ran on random-2 at σ = 35).
    pub const HOST_WIDE: DeviceCosts = DeviceCosts {
        histogram: 0.7,
        stream: 0.53,
        tap_stream: 0.59,
        svd_plane: 11.0,
        rank: 4.0,
        separable_setup: 100.0,
        naive_pixel: 320.0,
        naive_class: 1.2,
        naive_row: 1.2,
        run_step: 2.5,
    };
    /// GPU: the separable passes are bandwidth-bound and cheap per operation;
    /// naive's per-pixel histograms sit in local memory.
    pub const GPU: DeviceCosts = DeviceCosts {
        histogram: 1.0,
        stream: 0.1,
        tap_stream: 0.1,
        svd_plane: 0.0,
        rank: 1.0,
        separable_setup: 0.0,
        naive_pixel: 0.0,
        naive_class: 1.0,
        naive_row: 0.0,
        run_step: 1.0,
    };
    /// The fields' names, in the order of [`DeviceCosts::units`].
    pub const FIELDS: [&'static str; 10] = [
        "histogram",
        "stream",
        "tap_stream",
        "svd_plane",
        "rank",
        "separable_setup",
        "naive_pixel",
        "naive_class",
        "naive_row",
        "run_step",
    ];

    /// Each field alone at 1, the others at 0. Every candidate's cost is
    /// linear in the fields, so its cost under these is how many of each
    /// operation it counts on a tile: `auto` logs them (`-vv`), and
    /// `benches/auto/refit.py` fits the fields to measured times with them.
    pub fn units() -> [DeviceCosts; 10] {
        std::array::from_fn(|i| {
            let mut unit = Self::GPU;
            (0..10).for_each(|j| *unit.field_mut(j) = 0.0);
            *unit.field_mut(i) = 1.0;
            unit
        })
    }

    /// The fields' values, in the order of [`DeviceCosts::FIELDS`].
    pub fn fields(&self) -> [f64; 10] {
        let mut costs = *self;
        std::array::from_fn(|i| *costs.field_mut(i))
    }

    /// Field `i` of [`DeviceCosts::FIELDS`].
    fn field_mut(&mut self, i: usize) -> &mut f64 {
        match i {
            0 => &mut self.histogram,
            1 => &mut self.stream,
            2 => &mut self.tap_stream,
            3 => &mut self.svd_plane,
            4 => &mut self.rank,
            5 => &mut self.separable_setup,
            6 => &mut self.naive_pixel,
            7 => &mut self.naive_class,
            8 => &mut self.naive_row,
            _ => &mut self.run_step,
        }
    }

    /// The host's costs with `threads` threads.
    pub fn host(threads: usize) -> DeviceCosts {
        if threads >= WIDE_HOST_THREADS {
            Self::HOST_WIDE
        } else {
            Self::HOST_FEW
        }
    }

    /// OpenCL CPU devices behave like the host (with the engine's threads).
    pub fn of(kind: Option<DeviceKind>) -> DeviceCosts {
        match kind {
            Some(DeviceKind::Gpu) | Some(DeviceKind::Accelerator) => Self::GPU,
            _ => Self::host(rayon::current_num_threads()),
        }
    }
}

/// The extent of one tile as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileExtent {
    /// Output width and height.
    pub width: usize,
    pub height: usize,
    /// Classes present in the tile and its halo.
    pub classes: usize,
    /// How the tile's windows break into runs, where measured (the host's
    /// naive method walks runs, so its cost follows them, not the taps).
    pub runs: Option<WindowRuns>,
    /// The mean share of the tile's classes a method that scores only an
    /// output's contenders keeps there, where measured
    /// ([`ClassSmoother::kept_share`]).
    pub contenders: Option<f64>,
}

/// How a tile's kernel windows break into runs of equal pixels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowRuns {
    /// Share of output pixels whose window holds more than one value.
    pub mixed: f64,
    /// Mean number of runs in a window row (1 to N).
    pub row_runs: f64,
}

impl TileExtent {
    /// A `side`×`side` output tile holding `classes` classes.
    pub fn square(side: usize, classes: usize) -> Self {
        TileExtent {
            width: side,
            height: side,
            classes,
            runs: None,
            contenders: None,
        }
    }

    /// Pass 1 runs over the output columns and the halo's: its cost per
    /// output pixel, relative to pass 2, for a kernel of side `n`.
    pub fn halo_factor(&self, n: usize) -> f64 {
        let w = self.width.max(1);
        (w + n - 1) as f64 / w as f64
    }
}

/// What the model needs to cost one candidate: its family's inner loops.
pub trait CostShape: Send + Sync {
    /// Relative cost per output pixel of `tile` (recomputation of a
    /// certified candidate not included).
    fn cost(&self, tile: &TileExtent, costs: &DeviceCosts) -> f64;

    /// The operations behind [`CostShape::cost`] on `tile`, for `--explain`.
    fn explain(&self, tile: &TileExtent) -> String;

    /// Whether the cost follows the tile's runs ([`TileExtent::runs`]),
    /// which `auto` then measures on each tile.
    fn follows_runs(&self) -> bool {
        false
    }
}

/// What a step of the run walk costs in taps: a window row crossing `r`
/// runs walks them where `r * RUN_STEP_TAPS` is under its taps.
pub const RUN_STEP_TAPS: usize = 4;

/// The exact baseline's cost per recomputed pixel (a window holding
/// several values): per window row (√taps rows) its taps, or its runs
/// where the tile's are measured and walking them is cheaper
/// ([`RUN_STEP_TAPS`]; the certified modes' recomputation does, as
/// `naive::ExactPixels`), one histogram update each; and naive's costs
/// per class and per window row. Certified candidates pay it on the
/// pixels they recompute. Without the runs, a recomputed pixel at
/// σ = 150 cost 811,801 updates in the model where its rows hold a few
/// runs each, and `auto` ran fft at 3× dct5 `--exact`'s time.
pub fn baseline(taps: usize, classes: f64, costs: &DeviceCosts, runs: Option<WindowRuns>) -> f64 {
    let rows = (taps as f64).sqrt();
    let per_row = runs.map_or(rows, |r| (r.row_runs * RUN_STEP_TAPS as f64).min(rows));
    rows * per_row * costs.histogram + classes * costs.naive_class + rows * costs.naive_row
}

/// One candidate method with its cost parameters.
pub struct Candidate {
    pub smoother: Box<dyn ClassSmoother>,
    pub shape: Box<dyn CostShape>,
    /// Error bounds of a fast method (`None` for an exact one).
    pub bounds: Option<Bounds>,
    /// Whether the candidate is a certified (exact) fast method.
    pub certified: bool,
}

/// The share of a certified candidate's cost under which `auto` does not
/// estimate its recomputation from the tile ([`Candidate::recomputation_negligible`]).
pub const NEGLIGIBLE_RECOMPUTATION: f64 = 0.05;

/// What `auto` knows of the share of pixels a candidate recomputes exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Recompute {
    /// Not a certified candidate: it recomputes nothing.
    Nothing,
    /// Certified, not run yet: estimated from the tile's sampled near-ties
    /// where a tile is at hand, else guessed from its margin
    /// ([`Candidate::recompute_share`]).
    Unmeasured,
    /// Certified, measured over `pixels` pixels so far.
    Measured { share: f64, pixels: u64 },
}

impl Candidate {
    /// The recomputed share measured so far (the candidate's own counts).
    pub fn recompute(&self) -> Recompute {
        if !self.certified {
            return Recompute::Nothing;
        }
        match self.smoother.recompute_counts() {
            Some((redone, pixels)) if pixels > 0 => Recompute::Measured {
                share: redone as f64 / pixels as f64,
                pixels,
            },
            _ => Recompute::Unmeasured,
        }
    }

    /// The share of pixels the model counts as recomputed: the measured
    /// share; before a measurement `sampled` (the tile's near-ties within
    /// the candidate's margin, [`super::auto::NearTies`]) where given, else
    /// a guess from the certified margin m
    /// ([`Bounds::certify_margin`](super::bounds::Bounds::certify_margin),
    /// about ε): 5·m·C, which errs high (measured shares ran from 0.05 to
    /// 3.5 times m·C when the margin was 2ε).
    pub fn recompute_share(&self, classes: f64, sampled: Option<f64>) -> f64 {
        match (self.recompute(), &self.bounds, sampled) {
            (Recompute::Measured { share, .. }, _, _) => share,
            (Recompute::Unmeasured, _, Some(share)) => share,
            (Recompute::Unmeasured, Some(b), None) => (5.0 * b.certify_margin() * classes).min(1.0),
            _ => 0.0,
        }
    }

    /// Whether, unmeasured, even the high guess of its recomputed share
    /// from its bounds ([`Candidate::recompute_share`]) adds at most
    /// [`NEGLIGIBLE_RECOMPUTATION`] to its cost on `tile`: its share then
    /// need not be estimated from the tile. svd's rank-1 Gaussian is there
    /// (a margin of float roundings), dct5 K = 3 is not (ε ≈ 2·10⁻³).
    pub fn recomputation_negligible(
        &self,
        tile: &TileExtent,
        costs: &DeviceCosts,
        naive_taps: usize,
    ) -> bool {
        self.bounds.is_some()
            && self.cost(tile, costs, naive_taps, None)
                <= (1.0 + NEGLIGIBLE_RECOMPUTATION) * self.cost(tile, costs, naive_taps, Some(0.0))
    }

    /// Relative cost per output pixel of `tile`; `naive_taps`: the exact
    /// baseline's taps, paid on every recomputed pixel (the certified mode
    /// recomputes a pixel tap by tap); `sampled`: as for
    /// [`Candidate::recompute_share`].
    pub fn cost(
        &self,
        tile: &TileExtent,
        costs: &DeviceCosts,
        naive_taps: usize,
        sampled: Option<f64>,
    ) -> f64 {
        let classes = tile.classes.max(1) as f64;
        let own = self.shape.cost(tile, costs);
        match self.recompute_share(classes, sampled) {
            0.0 => own,
            share => own + share * baseline(naive_taps, classes, costs, tile.runs),
        }
    }
}
