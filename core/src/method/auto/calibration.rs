//! What `auto --exact` learns on the host it runs on: each candidate's
//! seconds per unit of the cost model, measured on the tiles it ran, and
//! the choice those measurements make among candidates.
//!
//! The model's per-operation costs were fitted on two machines (a 2-core
//! VM and a 16-core host); on another CPU, or on maps unlike the fitting
//! grid, its ranking of two close candidates can be wrong by 1.3–2.6×
//! (naive against dct5 `--exact` on 64-class maps at σ = 1–3). Every
//! candidate of `auto --exact` is exact, so which one runs a tile never
//! changes a byte, and the run can measure instead of trusting the fit:
//! each candidate's model cost is scaled by its measured seconds per unit,
//! and a candidate the model ranks close enough to the best is tried on
//! half a tile, where enough tiles remain that the try costs at most a few
//! per cent of them ([`TRY_SHARE`], [`TRY_WITHIN`]). A candidate
//! not measured yet is scaled by the measured candidates' pooled rate, so
//! until two are measured the model alone ranks them.
//!
//! Without `--exact` the candidates' bytes differ, and a choice that
//! followed the clock would make the output depend on the machine's load:
//! `auto` then keeps to the model alone.

use std::sync::Mutex;

/// A candidate not measured yet is tried on half a tile where what the
/// try may lose, its cost over the best's on that half, is at most this
/// share of the tiles still to be chosen (a candidate 1.5× the best on
/// half a tile of at least 5, 2× of at least 10)...
pub const TRY_SHARE: f64 = 0.05;

/// ... and never beyond this factor of the best, however many tiles
/// remain: the model, fitted on two machines, has not been off by more
/// (2.4× at worst: naive against dct5 `--exact` on a 64-class random map
/// at σ = 2, 2 cores).
pub const TRY_WITHIN: f64 = 3.0;

/// What one candidate ran: the model's units it was predicted to cost
/// and the wall time it took, over its tiles.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    units: f64,
    seconds: f64,
    tiles: u64,
    /// A tile is running on it as a try, not measured yet.
    trying: bool,
}

impl Tally {
    fn rate(&self) -> Option<f64> {
        (self.tiles > 0 && self.units > 0.0).then(|| self.seconds / self.units)
    }
}

/// The measurements of one run's candidates (shared by its tiles).
#[derive(Debug)]
pub struct Calibration {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    tallies: Vec<Tally>,
    /// Tiles the engine announced and tiles chosen so far.
    announced: u64,
    chosen: u64,
}

/// Which candidates run a tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// The cheapest by the model scaled by the measurements, alone.
    Cheapest(usize),
    /// `tried`, to be measured, on half of the tile, and the cheapest on
    /// the other half: both measured on windows of the same shape, at
    /// half the cost of trying a whole tile.
    Try { tried: usize, best: usize },
}

impl Calibration {
    pub fn new(candidates: usize) -> Self {
        Calibration {
            state: Mutex::new(State {
                tallies: vec![Tally::default(); candidates],
                announced: 0,
                chosen: 0,
            }),
        }
    }

    /// The engine is about to smooth `tiles` more tiles.
    pub fn announce(&self, tiles: usize) {
        self.lock().announced += tiles as u64;
    }

    /// Picks among candidates whose model costs for this tile are `costs`.
    pub fn pick(&self, costs: &[f64]) -> Pick {
        let mut state = self.lock();
        let scaled = state.scaled(costs);
        let best = argmin(&scaled);
        // This tile included.
        let remaining = state.announced.saturating_sub(state.chosen) as f64;
        state.chosen += 1;
        let worth_a_try = |i: usize| {
            let t = &state.tallies[i];
            let over = scaled[i] / scaled[best];
            i != best
                && t.tiles == 0
                && !t.trying
                && over <= TRY_WITHIN
                && (over - 1.0) / 2.0 <= TRY_SHARE * remaining
        };
        let tried = (0..costs.len())
            .filter(|&i| worth_a_try(i))
            .min_by(|&a, &b| scaled[a].total_cmp(&scaled[b]));
        if let Some(i) = tried {
            state.tallies[i].trying = true;
            return Pick::Try { tried: i, best };
        }
        Pick::Cheapest(best)
    }

    /// Candidate `i` ran a tile (or part) the model costed `units` in
    /// `seconds`.
    pub fn record(&self, i: usize, units: f64, seconds: f64) {
        let mut state = self.lock();
        let t = &mut state.tallies[i];
        t.units += units;
        t.seconds += seconds;
        t.tiles += 1;
        t.trying = false;
    }

    /// Each measured candidate's seconds per model unit and tiles, for the
    /// run's summary.
    pub fn rates(&self) -> Vec<Option<(f64, u64)>> {
        self.lock()
            .tallies
            .iter()
            .map(|t| t.rate().map(|r| (r, t.tiles)))
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// The model's costs in seconds: each measured candidate's by its own
    /// rate, the others by the pooled rate of those measured (or left in
    /// model units while none is).
    fn scaled(&self, costs: &[f64]) -> Vec<f64> {
        let (units, seconds) = self
            .tallies
            .iter()
            .fold((0.0, 0.0), |(u, s), t| (u + t.units, s + t.seconds));
        let pooled = if units > 0.0 { seconds / units } else { 1.0 };
        costs
            .iter()
            .zip(&self.tallies)
            .map(|(&c, t)| c * t.rate().unwrap_or(pooled))
            .collect()
    }
}

fn argmin(values: &[f64]) -> usize {
    (0..values.len()).fold(0, |best, i| if values[i] < values[best] { i } else { best })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without enough tiles ahead nothing is tried: the model's cheapest
    /// runs, and a measurement of it alone changes no ranking.
    #[test]
    fn few_tiles_keep_to_the_model() {
        let c = Calibration::new(2);
        c.announce(1);
        assert_eq!(c.pick(&[100.0, 120.0]), Pick::Cheapest(0), "0.2 / 2 > 0.05 · 1");
        c.record(0, 100.0, 5.0);
        assert_eq!(c.pick(&[100.0, 120.0]), Pick::Cheapest(0));
        let d = Calibration::new(2);
        d.announce(2);
        let tried = Pick::Try { tried: 1, best: 0 };
        assert_eq!(d.pick(&[100.0, 120.0]), tried, "0.2 / 2 ≤ 0.05 · 2");
    }

    /// With many tiles ahead a close runner-up is tried once, one over
    /// [`TRY_WITHIN`] never; once measured, each candidate is costed by its own
    /// rate, so a model that ranked them wrongly is overruled.
    #[test]
    fn a_close_runner_up_is_tried_once_then_measurements_rank() {
        let c = Calibration::new(3);
        c.announce(1000);
        let costs = [100.0, 130.0, 301.0];
        assert_eq!(c.pick(&costs), Pick::Try { tried: 1, best: 0 });
        assert_eq!(c.pick(&costs), Pick::Cheapest(0), "one try at a time");
        c.record(0, 100.0, 0.020);
        assert_eq!(c.pick(&costs), Pick::Cheapest(0), "1 is still being tried");
        c.record(1, 130.0, 0.010);
        // Measured: 0 costs 0.020 s, 1 costs 0.010 s; 2 (never measured)
        // is scaled by the pooled rate, far behind.
        assert_eq!(c.pick(&costs), Pick::Cheapest(1));
        assert_eq!(c.pick(&costs), Pick::Cheapest(1));
        let rates = c.rates();
        assert!((rates[0].unwrap().0 - 2e-4).abs() < 1e-12);
        assert_eq!(rates[2], None);
    }

    /// Until a second candidate is measured the model's ratio stands,
    /// whatever the first measured: its rate is everyone's.
    #[test]
    fn one_measurement_alone_keeps_the_models_ratio() {
        let c = Calibration::new(2);
        c.announce(5);
        let costs = [100.0, 180.0];
        assert_eq!(c.pick(&costs), Pick::Cheapest(0), "0.8 over, 5 tiles: not tried");
        c.record(0, 100.0, 0.5);
        assert_eq!(c.pick(&costs), Pick::Cheapest(0));
        let d = Calibration::new(2);
        d.announce(5);
        d.record(0, 100.0, 0.5);
        let tried = Pick::Try { tried: 1, best: 0 };
        assert_eq!(d.pick(&[100.0, 140.0]), tried, "0.4 over, 5 tiles");
    }
}
