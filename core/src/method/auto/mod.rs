//! `--method auto`: picks among the other methods' candidates per tile by a
//! cost model, and says why (`smooth --explain`). Every family in
//! [`super::registry`] may offer a candidate ([`Family::candidate`]) with
//! the [`CostShape`](super::cost::CostShape) of its inner loops; this module only compares them.
//!
//! The model counts the inner-loop operations per output pixel for the
//! tile's extent and class count C (tile-local compaction: a tile pays only
//! for the classes present in it and its halo) and weighs them by
//! per-device costs ([`DeviceCosts`]); the families' shapes count:
//!
//! - naive: a set-up per pixel; per window holding several values, a cost
//!   per class (the histogram cleared and ranked) and per window row, plus
//!   one histogram update per non-zero tap, or on the host, where a tile's
//!   rows hold few runs, a step per run walked;
//! - svd: per class and rank, pass 1 of N taps over the tile's columns
//!   *with* the halo (`(w + N − 1)/w` of the output), pass 2 of N taps, plus
//!   the ranking;
//! - dct5 (Gaussian and box kernels only), per class, its two passes as the
//!   device runs them ([`Dct5Passes`](super::separable::Dct5Passes)), pass 1 also over the halo columns:
//!   - host (f64, second order): `3·(K+1)` operations per step plus the
//!     segment seeds `2·(K+1)·N / segment` (segments of `max(64, 4·N)`);
//!   - OpenCL (f32 rotating phasors, `kernels/dct5.cl`): `9·K + 2`
//!     operations per step, and each segment warms up over N steps, so a
//!     pass costs `1 + N / segment` steps per output, where the segment is
//!     what [`segment`](super::dct5::rot::segment) picks for this tile on this device (at
//!     least `4·N` on large tiles, down to 32 outputs where a GPU needs the
//!     parallelism).
//!
//! With `--exact` the fast candidates are their certified forms, which also
//! pay the naive cost on the pixels they recompute. That share depends on
//! the data far more than on the error bound ε: at σ = 5 dct5 recomputes
//! 0.15 % of a MODIS crop and 5.8 % of a 17-class simplex map, at σ = 30
//! 0.46 % and 30 % (BENCHMARKS.md, "auto --exact"), so no formula in ε and
//! C predicts it. The model measures it instead: each certified candidate
//! counts what it recomputed ([`ClassSmoother::recompute_counts`]) and is
//! costed with its share so far. Before it has run, its share on a tile is
//! estimated from the tile itself ([`NearTies`]): a lattice of up to 256
//! pixels scored exactly, the share of them whose best two scores lie
//! within the candidate's certified margin. So one tile of a raster never
//! runs whole on a method whose share makes it the slowest, at the cost of
//! a few million taps in parallel; a candidate whose margin makes even a
//! high guess of its share negligible (svd's rank-1 Gaussian, a margin of
//! float roundings) is not sampled for, nor is any on a GPU, where svd
//! was the fastest in every case measured and the sample's host time
//! weighed on small tiles (its share is guessed from the margin there).
//! (An earlier probe, the candidate
//! run on the tile's centre window, cost as much as the tile on a host of
//! 16 threads and a synchronous round trip on a GPU.) The host's naive method
//! walks runs of equal pixels, so its cost is counted from the tile's
//! runs, sampled ([`window_sample`]), not its taps. Every candidate of
//! `auto --exact` is exact, so which one runs a tile never changes a byte;
//! without `--exact` nothing is measured and the choice depends on the
//! tile alone.
//!
//! The host's per-operation costs are fitted to engine times on grids of
//! σ × classes × maps ([`DeviceCosts::HOST_FEW`], [`DeviceCosts::HOST_WIDE`], BENCHMARKS.md, "auto
//! --exact"), the GPU's are set by hand; they rank methods, they do not
//! predict times.

use super::cost::{Candidate, DeviceCosts, Recompute, TileExtent};
use super::family::{Accepts, Family, FastOptions, Settings};
use super::naive::cl::Variant;
use super::select::first_member;
use super::spec::Method;
use super::{ClassSmoother, ClassTile, SmoothParams};
use crate::device::{DeviceChoice, Member};
use crate::error::Result;
use crate::kernel::Kernel;
use std::sync::atomic::{AtomicU64, Ordering};

mod near_ties;
mod window_sample;
pub use near_ties::NearTies;
use window_sample::sample_window_runs;

/// Classes a tile is taken to hold where the tile is not known yet
/// ([`Auto::preferred_tile`]): every candidate's cost grows with them
/// alike, so the count ranks little.
const NOMINAL_CLASSES: usize = 8;

/// The descriptor of `--method auto`.
pub struct AutoFamily;

/// This folder's method in [`super::registry`] (build.rs finds this line).
pub const FAMILIES: &[&dyn Family] = &[&AutoFamily];

impl Family for AutoFamily {
    fn name(&self) -> &'static str {
        "auto"
    }

    fn help(&self) -> &'static str {
        "cost model per tile"
    }

    fn accepts(&self) -> Accepts {
        Accepts {
            rank: true,
            terms: true,
            certifiable: true,
        }
    }

    fn is_exact(&self) -> bool {
        false
    }

    fn list_position(&self) -> u8 {
        255
    }

    fn build(
        &self,
        settings: &Settings,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        Ok(Box::new(auto_on(
            member,
            settings.variant,
            kernel,
            &settings.options,
        )?))
    }

    fn explain(
        &self,
        settings: &Settings,
        device: &DeviceChoice,
        kernel: &Kernel,
        classes: usize,
        tile: usize,
    ) -> Result<Option<String>> {
        let auto = auto(device, settings.variant, kernel, &settings.options)?;
        Ok(Some(auto.explain_tile(classes, tile)))
    }
}

/// `--method auto`: every other method's candidate (those that take the
/// kernel), chosen per tile; on several devices, auto on the first.
pub fn auto(
    device: &DeviceChoice,
    variant: Option<Variant>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Auto> {
    auto_on(first_member(device)?, variant, kernel, fast)
}

/// [`auto`] on one device: each family's candidate, given the options
/// that fit it, in the registry's order (the exact baseline first).
fn auto_on(
    device: Member,
    variant: Option<Variant>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Auto> {
    let kind = device.as_ref().map(|d| d.info().kind);
    let mut candidates = Vec::new();
    for method in Method::all() {
        let accepts = method.family().accepts();
        let fits = FastOptions {
            rank: fast.rank.filter(|_| accepts.rank),
            energy: fast.energy.filter(|_| accepts.rank),
            terms: fast.terms.filter(|_| accepts.terms),
            exact: fast.exact && accepts.certifiable,
        };
        if let Some(c) = method.family().candidate(&device, variant, kernel, &fits)? {
            candidates.push(c);
        }
    }
    let mut auto = Auto::new(candidates, DeviceCosts::of(kind), kernel);
    // On a GPU the sample is not worth its time: svd was the fastest exact
    // method in all 42 cases of the H200's grid (dct5 never), and a
    // sample cost 1–12 ms of the host's beside 7–60 ms engines there.
    auto.samples_near_ties = kind != Some(crate::device::DeviceKind::Gpu);
    Ok(auto)
}

/// Chooses among candidates per tile by the cost model.
pub struct Auto {
    candidates: Vec<Candidate>,
    costs: DeviceCosts,
    naive_taps: usize,
    /// Tiles run by each candidate, for the run's summary.
    tiles: Vec<AtomicU64>,
    /// Whether a certified candidate not measured yet is costed with its
    /// share estimated from each tile ([`NearTies`]), else guessed from
    /// its margin.
    samples_near_ties: bool,
}

impl Auto {
    /// `candidates` start with the exact baseline; `kernel` gives its tap
    /// count (certified candidates pay it on recomputed pixels).
    pub fn new(candidates: Vec<Candidate>, costs: DeviceCosts, kernel: &Kernel) -> Self {
        let naive_taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
        let tiles = candidates.iter().map(|_| AtomicU64::new(0)).collect();
        Auto {
            candidates,
            costs,
            naive_taps,
            samples_near_ties: true,
            tiles,
        }
    }

    /// The candidate for `tile`: the cheapest by the model, each certified
    /// candidate not measured yet costed with its share estimated from the
    /// tile's near-ties.
    fn choose_measured(&self, tile: &ClassTile, params: &SmoothParams) -> Result<usize> {
        let started = std::time::Instant::now();
        let follows_runs = self.candidates.iter().any(|c| c.shape.follows_runs());
        let middle = middle_rows(tile);
        let mut extent = TileExtent {
            width: tile.output_width(),
            height: tile.output_height(),
            classes: tile.n_classes,
            // Weighted votes are scored tap by tap, runs or not.
            runs: (follows_runs && params.confidence.is_none())
                .then(|| sample_window_runs(tile, params.kernel.size())),
            contenders: None,
        };
        let counted = std::time::Instant::now();
        let unsure = |c: &Candidate| {
            c.certified
                && c.recompute() == Recompute::Unmeasured
                && c.bounds.is_some()
                && !c.recomputation_negligible(&extent, &self.costs, self.naive_taps)
        };
        let near_ties = match self.samples_near_ties && self.candidates.iter().any(unsure) {
            true => self.sample_near_ties(tile, params, &extent),
            false => None,
        };
        let sampled = self.shares(near_ties.as_ref(), 0.0);
        let sampled_at = std::time::Instant::now();
        // The contenders cost about 3 % of dct5's own time on the middle
        // rows at σ = 150: counted only where the choice turns on them.
        let keeping = |share| TileExtent {
            contenders: Some(share),
            ..extent
        };
        if self.choose_with(&keeping(0.0), &sampled) != self.choose_with(&keeping(1.0), &sampled) {
            extent.contenders = self
                .candidates
                .iter()
                .find_map(|c| c.smoother.kept_share(&middle, params));
        }
        let ms = |from: std::time::Instant, to: std::time::Instant| {
            to.duration_since(from).as_secs_f64() * 1e3
        };
        log::debug!(
            "auto: runs counted in {:.2} ms, near-ties sampled ({} pixels) in {:.2} ms, contenders {} in {:.2} ms",
            ms(started, counted),
            near_ties.as_ref().map_or(0, NearTies::pixels),
            ms(counted, sampled_at),
            extent
                .contenders
                .map_or("not counted".into(), |s| format!("keeping {s:.3} of {} classes", extent.classes)),
            ms(sampled_at, std::time::Instant::now()),
        );
        if log::log_enabled!(log::Level::Debug) {
            for (i, c) in self.candidates.iter().enumerate() {
                let counts: Vec<String> = DeviceCosts::units()
                    .iter()
                    .map(|unit| format!("{:.6e}", c.cost(&extent, unit, self.naive_taps, sampled[i])))
                    .collect();
                log::debug!("auto: operations of {}: {}", c.smoother.name(), counts.join(" "));
            }
        }
        Ok(self.choose_with(&extent, &sampled))
    }

    /// The tile's near-ties ([`NearTies`]): a first lattice of
    /// [`near_ties::MIN_SAMPLES`] pixels where the choice stands with
    /// [`SAMPLE_SLACK`] near-ties more than it saw for the chosen candidate
    /// and as many fewer for every other, else the budget's. The budget's
    /// 40 pixels at σ = 85 took 2–3 ms on 16 threads, where dct5 ran in
    /// 8 ms on a 2-class map (auto missed its time by 25 %).
    fn sample_near_ties(&self, tile: &ClassTile, params: &SmoothParams, extent: &TileExtent) -> Option<NearTies> {
        let row_runs = extent.runs.map(|r| r.row_runs);
        // Where even a first sample that saw no near-ties could not be
        // sure (wide kernels: a recomputed pixel costs its whole window),
        // it would be time lost.
        let none: Vec<Option<f64>> = self.shares_of(|_| 0.0);
        let seen_none = SAMPLE_SLACK / near_ties::MIN_SAMPLES as f64;
        let most: Vec<Option<f64>> = none.iter().map(|s| s.map(|_| seen_none)).collect();
        if !self.stands(extent, &none, &most, &none) {
            return NearTies::sample(tile, params, row_runs, usize::MAX);
        }
        let first = NearTies::sample(tile, params, row_runs, near_ties::MIN_SAMPLES)?;
        let (seen, fewer, more) = (
            self.shares(Some(&first), 0.0),
            self.shares(Some(&first), -SAMPLE_SLACK),
            self.shares(Some(&first), SAMPLE_SLACK),
        );
        match self.stands(extent, &seen, &more, &fewer) {
            true => Some(first),
            false => NearTies::sample(tile, params, row_runs, usize::MAX),
        }
    }

    /// Whether the choice at the shares `seen` still costs less, at its
    /// share in `high`, than every other candidate at its share in `low`.
    fn stands(&self, tile: &TileExtent, seen: &[Option<f64>], high: &[Option<f64>], low: &[Option<f64>]) -> bool {
        let chosen = self.choose_with(tile, seen);
        let top = self.cost(chosen, tile, high[chosen]);
        (0..self.candidates.len()).all(|i| i == chosen || top < self.cost(i, tile, low[i]))
    }

    /// Each certified candidate's share of `near_ties` within its margin,
    /// with `slack` near-ties more ([`NearTies::share_with`]).
    fn shares(&self, near_ties: Option<&NearTies>, slack: f64) -> Vec<Option<f64>> {
        match near_ties {
            Some(ties) => self.shares_of(|margin| ties.share_with(margin, slack)),
            None => vec![None; self.candidates.len()],
        }
    }

    /// `share` of each certified candidate's margin (`None` for the others).
    fn shares_of(&self, share: impl Fn(f64) -> f64) -> Vec<Option<f64>> {
        self.candidates
            .iter()
            .map(|c| match c.bounds {
                Some(b) if c.certified => Some(share(b.certify_margin())),
                _ => None,
            })
            .collect()
    }

    /// Index of the cheapest candidate for `tile`, shares not measured yet
    /// guessed from the margins.
    pub fn choose(&self, tile: &TileExtent) -> usize {
        self.choose_with(tile, &vec![None; self.candidates.len()])
    }

    /// Index of the cheapest candidate for `tile`, with each candidate's
    /// sampled share where given.
    fn choose_with(&self, tile: &TileExtent, sampled: &[Option<f64>]) -> usize {
        let cost = |i: usize| self.cost(i, tile, sampled[i]);
        (0..self.candidates.len())
            .fold(0, |best, i| if cost(i) < cost(best) { i } else { best })
    }

    /// Candidate `i`'s cost per output pixel of `tile`.
    fn cost(&self, i: usize, tile: &TileExtent, sampled: Option<f64>) -> f64 {
        self.candidates[i].cost(tile, &self.costs, self.naive_taps, sampled)
    }

    /// Why: every candidate's cost for a `side`×`side` tile holding
    /// `classes` classes, the chosen one marked.
    pub fn explain_tile(&self, classes: usize, side: usize) -> String {
        let tile = TileExtent::square(side, classes);
        let chosen = self.choose(&tile);
        let mut text = format!(
            "auto: cost model per output pixel of a {side}x{side} tile with {classes} classes, {} kernel taps:\n",
            self.naive_taps
        );
        for (i, cand) in self.candidates.iter().enumerate() {
            let mark = if i == chosen { "=>" } else { "  " };
            let detail = cand.shape.explain(&tile);
            let mut line = format!(
                "{mark} {:<28} cost {:>10.1}  ({detail}",
                cand.smoother.name(),
                self.cost(i, &tile, None)
            );
            if let Some(b) = cand.bounds {
                line += &format!("; score error ≤ {:.2e}", b.total());
            }
            match cand.recompute() {
                Recompute::Nothing => {}
                Recompute::Unmeasured => {
                    let guess = 100.0 * cand.recompute_share(classes.max(1) as f64, None);
                    line += &match self.samples_near_ties {
                        true => format!(
                            "; recomputed share not measured yet: estimated on each tile from its sampled near-ties (without a tile, guessing {guess:.1} % from the margin)"
                        ),
                        false => format!(
                            "; recomputed share not measured yet: guessing {guess:.1} % from the margin"
                        ),
                    };
                }
                Recompute::Measured { share, pixels } => {
                    line += &format!(
                        "; recomputes {:.3} % exactly (measured over {pixels} pixels)",
                        100.0 * share
                    );
                }
            }
            text += &line;
            text += ")\n";
        }
        if let Some(turn) = self.turning_share(&tile, chosen) {
            text += &turn;
        }
        text += "tiles of other sizes or holding fewer classes may choose differently (the choice is made per tile)";
        text
    }

    /// Where the choice on `tile` turns on a certified candidate's share
    /// not measured yet, which each tile samples: the share under which
    /// that candidate runs instead of `chosen`. Without this line
    /// `--dry-run` at σ = 150 named fft (dct5 `--exact` guessed at 1.2 %
    /// from its margin), where every tile of the MODIS map then sampled
    /// about 0.03 % and ran dct5.
    fn turning_share(&self, tile: &TileExtent, chosen: usize) -> Option<String> {
        if !self.samples_near_ties {
            return None;
        }
        let rival = self.cost(chosen, tile, None);
        let (i, none, all) = (0..self.candidates.len())
            .filter(|&i| i != chosen)
            .filter(|&i| {
                let c = &self.candidates[i];
                c.certified && c.bounds.is_some() && c.recompute() == Recompute::Unmeasured
            })
            .map(|i| (i, self.cost(i, tile, Some(0.0)), self.cost(i, tile, Some(1.0))))
            .filter(|&(_, none, _)| none < rival)
            .min_by(|a, b| a.1.total_cmp(&b.1))?;
        let share = (rival - none) / (all - none);
        Some(format!(
            "per tile, {} runs instead where it recomputes under {:.3} % of the pixels, as each tile's sampled near-ties tell\n",
            self.candidates[i].smoother.name(),
            100.0 * share
        ))
    }
}

/// The tile's middle band of output rows, a quarter of them (at least
/// [`RUNS_ROWS`]), with their halo: where the contenders the model reads
/// are counted. A whole tile's count cost a quarter of dct5's own time on
/// a 2-class 512² tile at σ = 5 (2 cores), and the model needs their mean.
fn middle_rows<'t>(tile: &ClassTile<'t>) -> ClassTile<'t> {
    let oh = tile.output_height();
    let rows = (oh / 4).max(RUNS_ROWS).min(oh);
    let y0 = (oh - rows) / 2;
    let height = rows + 2 * tile.halo;
    ClassTile {
        height,
        classes: &tile.classes[y0 * tile.width..(y0 + height) * tile.width],
        ..*tile
    }
}

/// Near-ties a first sample of few pixels may have seen too many or too
/// few ([`Auto::sample_near_ties`]): about a 95 % interval on counts of a
/// few.
const SAMPLE_SLACK: f64 = 3.0;

/// The fewest output rows [`middle_rows`] keeps.
const RUNS_ROWS: usize = 64;

impl ClassSmoother for Auto {
    fn name(&self) -> String {
        let names: Vec<String> = self.candidates.iter().map(|c| c.smoother.name()).collect();
        format!("auto[{}]", names.join("|"))
    }

    fn is_exact(&self) -> bool {
        self.candidates.iter().all(|c| c.smoother.is_exact())
    }

    fn weighs_votes(&self) -> bool {
        self.candidates.iter().all(|c| c.smoother.weighs_votes())
    }

    fn host_parallel(&self) -> bool {
        self.candidates.iter().all(|c| c.smoother.host_parallel())
    }

    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        self.candidates.iter().find_map(|c| c.smoother.runs_on())
    }

    /// The tile of the candidate that the model finds cheapest on a tile
    /// of its own preferred size, recomputing nothing: the tile is fixed
    /// before any tile is sampled, and a recomputed share guessed from the
    /// margin (1.2 % for dct5 `--exact` at σ = 150, actually 0.03 %) made
    /// the widest preference win. That was fft's 4096² at σ = 150, where
    /// dct5 `--exact` ran 1.95 s on it against 1.43 s on its own 2048²
    /// (2 cores).
    fn preferred_tile(&self) -> Option<usize> {
        self.candidates
            .iter()
            .filter_map(|c| c.smoother.preferred_tile().map(|side| (c, side)))
            .map(|(c, side)| {
                let tile = TileExtent::square(side, NOMINAL_CLASSES);
                (c.cost(&tile, &self.costs, self.naive_taps, Some(0.0)), side)
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, side)| side)
    }

    fn gpus(&self) -> usize {
        self.candidates
            .iter()
            .map(|c| c.smoother.gpus())
            .max()
            .unwrap_or(0)
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        let pick = self.choose_measured(tile, params)?;
        self.tiles[pick].fetch_add(1, Ordering::Relaxed);
        self.candidates[pick].smoother.smooth(tile, params, out)
    }

    fn summary(&self) -> Option<String> {
        let chosen: Vec<String> = self
            .candidates
            .iter()
            .zip(&self.tiles)
            .map(|(c, n)| format!("{} {}", c.smoother.name(), n.load(Ordering::Relaxed)))
            .collect();
        let mut lines = vec![format!("auto ran tiles: {}", chosen.join(", "))];
        // The figures of the candidates that ran tiles only ("certified 0 of
        // 0 pixels" says nothing).
        let ran = self.candidates.iter().zip(&self.tiles);
        lines.extend(ran.filter(|(_, n)| n.load(Ordering::Relaxed) > 0).filter_map(|(c, _)| {
            c.smoother
                .summary()
                .map(|s| format!("{}: {s}", c.smoother.name()))
        }));
        Some(lines.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceKind;
    use crate::kernel::KernelSpec;
    use crate::method::cost::CostShape;
    use crate::method::dct5::{default_segment, rot as dct5_rot};
    use crate::method::naive::NaiveHost;
    use crate::method::naive::NaiveCost;
    use crate::method::separable::svd::SvdCost;
    use crate::method::separable::{Dct5Cost, Dct5Passes};

    fn candidate(shape: impl CostShape + 'static) -> Candidate {
        Candidate {
            smoother: Box::new(NaiveHost),
            shape: Box::new(shape),
            bounds: None,
            certified: false,
        }
    }

    /// naive, svd (rank 1) and dct5 with `passes` for a σ = 64 Gaussian (N = 385).
    fn auto(terms: usize, passes: Dct5Passes, costs: DeviceCosts) -> Auto {
        let kernel = KernelSpec::Gaussian {
            sigma: 64.0,
            size: None,
        }
        .build()
        .unwrap();
        let size = kernel.size();
        let taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
        Auto::new(
            vec![
                candidate(NaiveCost {
                    taps,
                    size: kernel.size(),
                    by_runs: false,
                }),
                candidate(SvdCost { size, rank: 1 }),
                candidate(Dct5Cost {
                    size,
                    terms,
                    harmonic: true,
                    passes,
                }),
            ],
            costs,
            &kernel,
        )
    }

    /// Every candidate's cost is the sum of its operation counts (its cost
    /// under each of `DeviceCosts::units`) times the fields, as
    /// `benches/auto/refit.py` takes it to be: with and without the tile's
    /// runs and contenders, recomputed shares included, on every device.
    #[test]
    fn costs_are_linear_in_the_device_costs() {
        let runs = crate::method::cost::WindowRuns {
            mixed: 0.4,
            row_runs: 3.5,
        };
        for (runs, contenders) in [(None, None), (Some(runs), Some(0.3))] {
            let tile = TileExtent {
                contenders,
                runs,
                ..TileExtent::square(1024, 17)
            };
            for costs in [DeviceCosts::HOST_FEW, DeviceCosts::HOST_WIDE, DeviceCosts::GPU] {
                let auto = auto(3, HOST, costs);
                for c in &auto.candidates {
                    for sampled in [None, Some(0.02)] {
                        let cost = |d: &DeviceCosts| c.cost(&tile, d, auto.naive_taps, sampled);
                        let sum: f64 = (DeviceCosts::units().iter().zip(costs.fields()))
                            .map(|(unit, field)| cost(unit) * field)
                            .sum();
                        assert!((sum - cost(&costs)).abs() <= 1e-9 * cost(&costs), "{sum} against {}", cost(&costs));
                    }
                }
            }
        }
    }

    const HOST: Dct5Passes = Dct5Passes::Host {
        segment: 1540,
        wide: false,
    };
    const GPU: Dct5Passes = Dct5Passes::Device {
        target: dct5_rot::TARGET_ITEMS,
    };

    fn cpu() -> Dct5Passes {
        Dct5Passes::Device {
            target: dct5_rot::target_items(DeviceKind::Cpu, 2),
        }
    }

    /// The device estimate follows the kernels' segments (warm-up N per
    /// segment), the host's its seeded segments and the size of its
    /// band's plane per class: at 2048², 4 classes, N = 385 a GPU shortens
    /// the segments to 64 and 32 outputs, a 2-core CPU device keeps 1568,
    /// the host's planes hold 770 + 384 rows of 2432 columns (every class
    /// contending).
    #[test]
    fn dct5_estimates_follow_each_devices_segments() {
        assert_eq!(default_segment(192), 1540);
        let tile = TileExtent {
            contenders: Some(1.0),
            ..TileExtent::square(2048, 4)
        };
        let halo = (2048.0 + 384.0) / 2048.0;
        let ops = 9.0 * 3.0 + 2.0;
        let steps =
            |seg1: f64, seg2: f64| (halo * (1.0 + 385.0 / seg1) + (1.0 + 385.0 / seg2)) * ops;
        let cost = |passes| {
            let a = auto(3, passes, DeviceCosts::HOST_FEW);
            a.candidates[2].cost(&tile, &a.costs, a.naive_taps, None)
        };
        let setup = DeviceCosts::HOST_FEW.separable_setup;
        let per_class = |steps: f64| 4.0 * (steps * 0.2 + 2.0) + setup;
        assert!((cost(GPU) - per_class(steps(64.0, 32.0))).abs() < 1e-9);
        assert!((cost(cpu()) - per_class(steps(1568.0, 1568.0))).abs() < 1e-9);
        let memory = 1.0 + (770.0 + 384.0) * 2432.0 * 8.0 / 1e6 / 25.0;
        let host = (halo + 1.0) * (3.0 * 4.0 + 2.0 * 4.0 * 385.0 / 1540.0) * memory;
        assert!((cost(HOST) - per_class(host)).abs() < 1e-9);
        assert!(cost(GPU) - setup > 2.0 * (cost(cpu()) - setup) && cost(cpu()) > cost(HOST));
    }

    /// The host's band scorer runs a class's passes only where a run of
    /// mixed windows reads it, so dct5's host cost follows the tile's mixed
    /// share (down to a floor); a device runs every pass. A 512² tile of 17
    /// classes at σ = 2 with 15 % of its windows mixed (a MODIS tile with
    /// sea, 2 cores) then costs dct5 below naive, as measured there, and
    /// the same tile of mixed windows only costs it above.
    #[test]
    fn dct5_on_the_host_follows_the_mixed_windows() {
        let kernel = KernelSpec::Gaussian {
            sigma: 2.0,
            size: None,
        }
        .build()
        .unwrap();
        let size = kernel.size();
        let dct5 = |passes| Dct5Cost {
            size,
            terms: 4,
            harmonic: false,
            passes,
        };
        let naive = NaiveCost {
            taps: kernel.quantised().iter().filter(|&&q| q > 0).count(),
            size,
            by_runs: true,
        };
        let tile = |mixed: f64| TileExtent {
            runs: Some(crate::method::cost::WindowRuns {
                mixed,
                row_runs: 1.0 + mixed,
            }),
            ..TileExtent::square(512, 17)
        };
        let costs = DeviceCosts::HOST_FEW;
        let (sea, land) = (tile(0.15), tile(1.0));
        let host = dct5(Dct5Passes::Host {
            segment: 64,
            wide: false,
        });
        assert!(host.cost(&sea, &costs) < naive.cost(&sea, &costs));
        assert!(naive.cost(&sea, &costs) < host.cost(&land, &costs));
        let unmeasured = TileExtent::square(512, 17);
        assert_eq!(host.cost(&land, &costs), host.cost(&unmeasured, &costs));
        let device = dct5(GPU);
        assert_eq!(device.cost(&sea, &costs), device.cost(&land, &costs));
    }

    /// dct5's host passes run only for the classes its contenders keep:
    /// the cost of the passes follows the share measured on the tile, and
    /// counts every class where nothing is measured (the tile's size is
    /// chosen so) or on a device (which runs every pass).
    #[test]
    fn dct5_on_the_host_scores_only_the_contenders() {
        let dct5 = |passes| Dct5Cost {
            size: 901,
            terms: 4,
            harmonic: false,
            passes,
        };
        let costs = DeviceCosts::HOST_WIDE;
        let keeping = |share| TileExtent {
            contenders: share,
            ..TileExtent::square(2048, 17)
        };
        let wide = dct5(Dct5Passes::Host {
            segment: 3604,
            wide: false,
        });
        let passes = |tile: &TileExtent| wide.cost(tile, &costs) - costs.separable_setup;
        let all = passes(&keeping(Some(1.0)));
        assert!((passes(&keeping(Some(0.2))) - 0.2 * all).abs() < 1e-9 * all);
        assert_eq!(passes(&keeping(None)), all, "unmeasured: every class");
        assert!(wide.explain(&keeping(Some(0.2))).contains("(20 % of them contend)"));
        assert!(!wide.explain(&keeping(None)).contains("contend"));
        let device = dct5(GPU);
        assert_eq!(device.cost(&keeping(Some(0.2)), &costs), device.cost(&keeping(None), &costs));
    }

    /// How often a [`KeepsTenth`] was asked for its contenders, and how
    /// many tiles it smoothed.
    #[derive(Default)]
    struct Keeps {
        asked: AtomicU64,
        smoothed: AtomicU64,
    }
    /// A stand-in whose contenders keep a tenth of the classes.
    struct KeepsTenth(std::sync::Arc<Keeps>);
    impl ClassSmoother for KeepsTenth {
        fn name(&self) -> String {
            "keeps a tenth".into()
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn smooth(&self, _: &ClassTile, _: &SmoothParams, out: &mut [u16]) -> Result<()> {
            self.0.smoothed.fetch_add(1, Ordering::Relaxed);
            out.fill(0);
            Ok(())
        }
        fn kept_share(&self, _: &ClassTile, _: &SmoothParams) -> Option<f64> {
            self.0.asked.fetch_add(1, Ordering::Relaxed);
            Some(0.1)
        }
    }

    /// `auto` counts a tile's contenders only where the choice turns on
    /// them (they cost about 3 % of dct5's own time at σ = 150): against a
    /// rival dearer than dct5 scoring every class it does not ask; against
    /// one between dct5 scoring none and all it asks, and runs whichever a
    /// tenth then makes cheaper.
    #[test]
    fn contenders_are_counted_only_where_the_choice_turns_on_them() {
        let shape = Dct5Cost {
            size: 901,
            terms: 4,
            harmonic: false,
            passes: Dct5Passes::Host {
                segment: 3604,
                wide: false,
            },
        };
        let tile = TileExtent {
            contenders: Some(1.0),
            ..TileExtent::square(600, 3)
        };
        let all = shape.cost(&tile, &DeviceCosts::HOST_FEW);
        for (rival, asked, dct5_runs) in [(2.0, 0, true), (0.5, 1, true), (0.05, 1, false)] {
            let keeps = std::sync::Arc::new(Keeps::default());
            let dct5 = Candidate {
                smoother: Box::new(KeepsTenth(keeps.clone())),
                shape: Box::new(Dct5Cost { ..shape }),
                bounds: None,
                certified: false,
            };
            let kernel = KernelSpec::Gaussian {
                sigma: 2.0,
                size: None,
            }
            .build()
            .unwrap();
            let auto = Auto::new(
                vec![candidate(Costs(rival * all)), dct5],
                DeviceCosts::HOST_FEW,
                &kernel,
            );
            run_tile(&auto, 600, 6);
            assert_eq!(keeps.asked.load(Ordering::Relaxed), asked, "rival {rival}");
            assert_eq!(keeps.smoothed.load(Ordering::Relaxed) == 1, dct5_runs, "rival {rival}");
        }
    }

    /// A certified stand-in that recomputes `share` of what it smooths and
    /// keeps the windows it was given.
    struct Recomputing {
        share: f64,
        seen: std::sync::Mutex<Vec<Vec<u16>>>,
        counts: std::sync::Mutex<(u64, u64)>,
    }

    impl Recomputing {
        fn new(share: f64) -> Self {
            Recomputing {
                share,
                seen: Default::default(),
                counts: Default::default(),
            }
        }
    }

    /// The candidate's handle on a [`Recomputing`] the test keeps too.
    struct Shared(std::sync::Arc<Recomputing>);

    impl ClassSmoother for Shared {
        fn name(&self) -> String {
            self.0.name()
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn smooth(&self, tile: &ClassTile, p: &SmoothParams, out: &mut [u16]) -> Result<()> {
            self.0.smooth(tile, p, out)
        }
        fn recompute_counts(&self) -> Option<(u64, u64)> {
            self.0.recompute_counts()
        }
        fn summary(&self) -> Option<String> {
            Some(format!("{} tiles seen", self.0.seen.lock().unwrap().len()))
        }
    }

    impl ClassSmoother for Recomputing {
        fn name(&self) -> String {
            format!("recomputing {}", self.share)
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn smooth(&self, tile: &ClassTile, _: &SmoothParams, out: &mut [u16]) -> Result<()> {
            out.fill(0);
            self.seen.lock().unwrap().push(tile.classes.to_vec());
            let mut c = self.counts.lock().unwrap();
            c.0 += (self.share * out.len() as f64).round() as u64;
            c.1 += out.len() as u64;
            Ok(())
        }
        fn recompute_counts(&self) -> Option<(u64, u64)> {
            Some(*self.counts.lock().unwrap())
        }
    }

    /// A method that prefers tiles of a side, costing a flat amount per
    /// pixel plus a recomputed share guessed high from a wide margin.
    struct Prefers(usize);
    impl ClassSmoother for Prefers {
        fn name(&self) -> String {
            format!("prefers {}", self.0)
        }
        fn is_exact(&self) -> bool {
            true
        }
        fn preferred_tile(&self) -> Option<usize> {
            Some(self.0)
        }
        fn smooth(&self, _: &ClassTile, _: &SmoothParams, out: &mut [u16]) -> Result<()> {
            out.fill(0);
            Ok(())
        }
    }

    /// The tile is the one of the candidate cheapest on its own preferred
    /// tile as if it recomputed nothing, not the widest preference: a
    /// certified candidate preferring 2048² (cost 100 a pixel, a margin
    /// that guesses a large share) over one preferring 4096² (cost 150).
    #[test]
    fn the_tile_is_the_cheapest_candidates_not_the_widest() {
        let kernel = KernelSpec::Gaussian {
            sigma: 2.0,
            size: None,
        }
        .build()
        .unwrap();
        let with = |smoother: Prefers, cost: f64, certified: bool| Candidate {
            smoother: Box::new(smoother),
            shape: Box::new(Costs(cost)),
            bounds: certified.then_some(crate::method::bounds::Bounds {
                rounding: 0.0,
                approx: 0.3,
            }),
            certified,
        };
        let auto = Auto::new(
            vec![
                candidate(Costs(1e6)),
                with(Prefers(2048), 100.0, true),
                with(Prefers(4096), 150.0, false),
            ],
            DeviceCosts::HOST_FEW,
            &kernel,
        );
        let tile = TileExtent::square(2048, NOMINAL_CLASSES);
        assert!(auto.cost(1, &tile, None) > auto.cost(2, &tile, None), "the guess costs more");
        assert_eq!(auto.preferred_tile(), Some(2048));
    }

    /// A shape of a fixed cost per pixel.
    struct Costs(f64);
    impl CostShape for Costs {
        fn cost(&self, _: &TileExtent, _: &DeviceCosts) -> f64 {
            self.0
        }
        fn explain(&self, _: &TileExtent) -> String {
            "fixed".into()
        }
    }

    /// Costs 100 per pixel whatever the tile: cheaper than the baseline
    /// at σ = 2 (about 175) unless it recomputes more than 43 %.
    struct Flat;
    impl CostShape for Flat {
        fn cost(&self, _: &TileExtent, _: &DeviceCosts) -> f64 {
            150.0
        }
        fn explain(&self, _: &TileExtent) -> String {
            "flat".into()
        }
    }

    /// The exact baseline (σ = 2, 169 taps) and a cheap certified
    /// candidate recomputing `share` of its pixels.
    fn learning(share: f64) -> (Auto, std::sync::Arc<Recomputing>) {
        let kernel = KernelSpec::Gaussian {
            sigma: 2.0,
            size: None,
        }
        .build()
        .unwrap();
        let taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
        let fake = std::sync::Arc::new(Recomputing::new(share));
        let auto = Auto::new(
            vec![
                candidate(NaiveCost {
                    taps,
                    size: kernel.size(),
                    by_runs: false,
                }),
                Candidate {
                    smoother: Box::new(Shared(fake.clone())),
                    shape: Box::new(Flat),
                    bounds: None,
                    certified: true,
                },
            ],
            DeviceCosts::HOST_FEW,
            &kernel,
        );
        (auto, fake)
    }

    fn run_tile(auto: &Auto, side: usize, halo: usize) -> Vec<u16> {
        with_tile(side, halo, |tile, params| {
            let mut out = vec![0; tile.output_len()];
            auto.smooth(tile, params, &mut out).unwrap();
            tile.classes.to_vec()
        })
    }

    /// `f` of a tile of three classes in a repeating pattern and the
    /// parameters of a σ = 2 Gaussian.
    fn with_tile<R>(side: usize, halo: usize, f: impl FnOnce(&ClassTile, &SmoothParams) -> R) -> R {
        let w = side + 2 * halo;
        let classes: Vec<u16> = (0..w * w).map(|i| (i % 7) as u16 % 3).collect();
        let kernel = KernelSpec::Gaussian {
            sigma: 2.0,
            size: None,
        }
        .build()
        .unwrap();
        let tile = ClassTile {
            width: w,
            height: w,
            halo,
            n_classes: 3,
            classes: &classes,
        };
        let params = SmoothParams {
            kernel: &kernel,
            class_weights: &[1, 1, 1],
            fill_nodata: false,
            ties: Default::default(),
            confidence: None,
        };
        f(&tile, &params)
    }

    fn bounded(auto: &mut Auto, margin: f64) {
        // certify_margin = approx + 2·rounding = margin.
        auto.candidates[1].bounds = Some(crate::method::bounds::Bounds {
            rounding: margin / 4.0,
            approx: margin / 2.0,
        });
    }

    /// Before its first tile a certified candidate is costed with its share
    /// estimated from the tile's near-ties: under a margin every gap falls
    /// in (each sampled pixel would be recomputed) it is dearer than the
    /// baseline and never runs. Without bounds to sample against it counts
    /// as recomputing nothing, runs the tile whole and is measured: 75 %
    /// then makes it dearer, 0.1 % keeps it.
    #[test]
    fn a_certified_candidate_is_costed_by_the_tiles_near_ties_then_its_measured_share() {
        let tile = TileExtent::square(600, 3);
        let (mut wide, wide_fake) = learning(0.001);
        bounded(&mut wide, 2.0);
        run_tile(&wide, 600, 6);
        assert!(wide_fake.seen.lock().unwrap().is_empty());
        assert!(wide.summary().unwrap().starts_with("auto ran tiles: naive"));
        // Only the candidates that ran tiles give their figures.
        assert!(!wide.summary().unwrap().contains("tiles seen"));
        assert_eq!(wide.candidates[1].recompute(), Recompute::Unmeasured);

        let (dear, dear_fake) = learning(0.75);
        assert_eq!(dear.choose(&tile), 1, "unmeasured counts as no recomputation");
        assert!(dear.explain_tile(3, 600).contains("not measured yet"));
        // A guess from a wide margin would run the baseline; a tile's
        // sample decides, and --explain says at which share.
        let (mut guessing, _) = learning(0.75);
        bounded(&mut guessing, 0.3);
        assert_eq!(guessing.choose(&tile), 0);
        let text = guessing.explain_tile(3, 600);
        let (none, all) = (
            guessing.cost(1, &tile, Some(0.0)),
            guessing.cost(1, &tile, Some(1.0)),
        );
        let share = 100.0 * (guessing.cost(0, &tile, None) - none) / (all - none);
        let said = format!("per tile, recomputing 0.75 runs instead where it recomputes under {share:.3} %");
        assert!(text.contains(&said), "{text}");
        assert!(!dear.explain_tile(3, 600).contains("per tile,"));
        run_tile(&dear, 600, 6);
        assert_eq!(dear_fake.seen.lock().unwrap().len(), 1, "the whole tile, once");
        assert_eq!(dear.choose(&tile), 0);
        assert!(dear.explain_tile(3, 600).contains("recomputes 75.000 % exactly"));
        assert!(dear.summary().unwrap().contains("recomputing 0.75 1"));
        assert!(dear.summary().unwrap().ends_with("recomputing 0.75: 1 tiles seen"));

        let (cheap, cheap_fake) = learning(0.001);
        run_tile(&cheap, 600, 6);
        assert_eq!(cheap_fake.seen.lock().unwrap().len(), 1);
        assert_eq!(cheap.choose(&tile), 1);
    }

    /// A first sample of 16 pixels decides where the choice stands with 3
    /// near-ties more for the chosen candidate and 3 fewer for the other;
    /// else the budget's sample (256 pixels at σ = 2) follows, and where no
    /// first sample could be sure it alone is taken. The baseline costs
    /// 165 + its set-up, the certified candidate 150 + 165 per share
    /// recomputed: with a set-up of 130, every pixel near (a margin of 2)
    /// runs the baseline, but 13 of 16 would not; with none, 3 of 16 near
    /// would already tip the choice.
    #[test]
    fn a_first_sample_of_few_pixels_decides_where_it_is_sure() {
        let side = 600;
        let extent = TileExtent::square(side, 3);
        for (set_up, margin, pixels) in [(55.0, 1e-9, 16), (130.0, 1e-9, 16), (130.0, 2.0, 256), (0.0, 1e-9, 256)] {
            let (mut auto, _) = learning(0.001);
            auto.costs = DeviceCosts {
                histogram: 0.0,
                naive_pixel: set_up,
                ..DeviceCosts::HOST_FEW
            };
            bounded(&mut auto, margin);
            let sample = with_tile(side, 6, |tile, params| auto.sample_near_ties(tile, params, &extent));
            assert_eq!(sample.unwrap().pixels(), pixels, "set-up {set_up}, margin {margin}");
        }
    }

    /// A certified candidate whose bounds leave its recomputation
    /// negligible even as guessed high needs no estimate from the tile; one
    /// with a wide margin does. Both run this tile of few near-ties whole.
    #[test]
    fn a_candidate_of_negligible_recomputation_needs_no_estimate() {
        for (margin, negligible) in [(1e-7, true), (1e-2, false)] {
            let (mut auto, fake) = learning(0.001);
            bounded(&mut auto, margin);
            let tile = TileExtent::square(600, 3);
            let said = auto.candidates[1].recomputation_negligible(
                &tile,
                &auto.costs,
                auto.naive_taps,
            );
            assert_eq!(said, negligible, "margin {margin}");
            run_tile(&auto, 600, 6);
            assert_eq!(fake.seen.lock().unwrap().len(), 1, "margin {margin}");
        }
    }

    /// The contenders are counted on the tile's middle quarter of output
    /// rows (with their halo), cut exactly; a tile of fewer rows whole.
    #[test]
    fn contenders_are_counted_on_the_middle_rows() {
        let (side, halo) = (600, 6);
        let w = side + 2 * halo;
        let classes: Vec<u16> = (0..w * w).map(|i| ((i / w) % 5) as u16).collect();
        let tile = ClassTile {
            width: w,
            height: w,
            halo,
            n_classes: 5,
            classes: &classes,
        };
        let band = middle_rows(&tile);
        assert_eq!((band.output_width(), band.output_height()), (side, side / 4));
        let y0 = (side - side / 4) / 2;
        assert_eq!(band.classes, &classes[y0 * w..(y0 + side / 4 + 2 * halo) * w]);
        let small = ClassTile {
            height: 40 + 2 * halo,
            classes: &classes[..(40 + 2 * halo) * w],
            ..tile
        };
        assert_eq!(middle_rows(&small).classes.len(), small.classes.len());
    }

    /// Where the segment rules differ the choice flips: a 512² tile of one
    /// class, σ = 64, K = 5. The host and a CPU device keep long segments
    /// and run dct5; a GPU cuts them to 32 outputs for parallelism, so each
    /// output pays 13 steps and the rank-1 svd is cheaper there. A big GPU
    /// tile has long segments again and goes back to dct5.
    #[test]
    fn choice_flips_with_the_device_segments() {
        let small = TileExtent::square(512, 1);
        assert_eq!(auto(5, HOST, DeviceCosts::GPU).choose(&small), 2);
        assert_eq!(auto(5, cpu(), DeviceCosts::HOST_FEW).choose(&small), 2);
        let gpu = auto(5, GPU, DeviceCosts::GPU);
        assert_eq!(gpu.choose(&small), 1, "{}", gpu.explain_tile(1, 512));
        assert_eq!(gpu.choose(&TileExtent::square(4096, 17)), 2);
        // --explain says which segments it assumed.
        let text = gpu.explain_tile(1, 512);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("512x512 tile with 1 classes"), "{text}");
        assert!(
            lines[2].starts_with("=>") && lines[3].starts_with("  "),
            "{text}"
        );
        assert!(
            lines[3].contains("device segments 32/32 after 385 warm-up steps each"),
            "{text}"
        );
    }
}
