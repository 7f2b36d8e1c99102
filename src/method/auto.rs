//! `--method auto`: picks naive, svd or dct5 per tile by a cost model, and
//! says why (`smooth --explain`).
//!
//! The model counts the inner-loop operations per output pixel for the
//! tile's class count C (tile-local compaction: a tile pays only for the
//! classes present in it and its halo) and weighs them by per-device costs:
//!
//! - naive: one histogram update per non-zero tap, then C for the argmax;
//! - svd: per class and rank, two passes of N taps, plus the ranking;
//! - dct5 (Gaussian and box kernels only): per class, two passes of
//!   `~3·(K+1)` operations plus the segment seeds `2·(K+1)·N / segment`,
//!   plus the ranking; independent of N otherwise.
//!
//! With `--exact` the fast candidates are their certified forms, which also
//! pay the naive cost on the pixels they recompute; that share is not known
//! before the run, so the model guesses it from the error bound ε (the share
//! of pixels whose margin falls under 2ε grows with ε·C) and says so.
//! The per-operation costs are relative weights fitted by hand to the host
//! measurements in BENCHMARKS.md; they rank methods, they do not predict times.

use super::separable::Bounds;
use super::{ClassSmoother, ClassTile, SmoothParams};
use crate::device::DeviceKind;
use crate::error::Result;
use crate::kernel::Kernel;

/// What each candidate costs per operation on one kind of device (relative).
#[derive(Clone, Copy, Debug)]
pub struct DeviceCosts {
    /// One histogram update (a gather and an add, poorly vectorised).
    pub histogram: f64,
    /// One multiply-add of a separable pass (streams, vectorises).
    pub stream: f64,
    /// One ranking update per class and pixel.
    pub rank: f64,
}

impl DeviceCosts {
    /// Host (rayon): histogram updates are scattered loads; passes run at
    /// SIMD width over whole rows.
    pub const HOST: DeviceCosts = DeviceCosts {
        histogram: 1.0,
        stream: 0.35,
        rank: 2.0,
    };
    /// GPU: the separable passes are bandwidth-bound and cheap per operation;
    /// naive's per-pixel histograms sit in local memory.
    pub const GPU: DeviceCosts = DeviceCosts {
        histogram: 1.0,
        stream: 0.1,
        rank: 1.0,
    };
    /// OpenCL CPU devices behave like the host.
    pub fn of(kind: Option<DeviceKind>) -> DeviceCosts {
        match kind {
            Some(DeviceKind::Gpu) | Some(DeviceKind::Accelerator) => Self::GPU,
            _ => Self::HOST,
        }
    }
}

/// The shape of one candidate: what the model needs to cost it.
#[derive(Clone, Debug)]
pub enum Shape {
    Naive {
        taps: usize,
    },
    Svd {
        size: usize,
        rank: usize,
    },
    Dct5 {
        size: usize,
        terms: usize,
        segment: usize,
    },
}

/// One candidate method with its cost parameters.
pub struct Candidate {
    pub smoother: Box<dyn ClassSmoother>,
    pub shape: Shape,
    /// Error bounds of a fast method (`None` for naive).
    pub bounds: Option<Bounds>,
    /// Whether the candidate is a certified (exact) fast method.
    pub certified: bool,
}

impl Candidate {
    /// Guessed share of pixels a certified method recomputes with `classes` classes.
    fn recompute_guess(&self, classes: f64) -> f64 {
        match (&self.bounds, self.certified) {
            (Some(b), true) => (10.0 * b.total() * classes).min(1.0),
            _ => 0.0,
        }
    }

    /// Relative cost per output pixel with `classes` classes in the tile.
    pub fn cost(&self, classes: f64, costs: &DeviceCosts, naive_taps: usize) -> f64 {
        let naive = naive_taps as f64 * costs.histogram + classes * costs.rank;
        let own = match self.shape {
            Shape::Naive { .. } => return naive,
            Shape::Svd { size, rank } => {
                classes * (rank as f64 * 2.0 * size as f64 * costs.stream + costs.rank)
            }
            Shape::Dct5 {
                size,
                terms,
                segment,
            } => {
                let k1 = terms as f64 + 1.0;
                let seeds = 2.0 * k1 * size as f64 / segment as f64;
                classes * (2.0 * (3.0 * k1 + seeds) * costs.stream + costs.rank)
            }
        };
        own + self.recompute_guess(classes) * naive
    }
}

/// Chooses among candidates per tile by the cost model.
pub struct Auto {
    candidates: Vec<Candidate>,
    costs: DeviceCosts,
    naive_taps: usize,
}

impl Auto {
    /// `candidates` must include a naive one; `kernel` gives its tap count.
    pub fn new(candidates: Vec<Candidate>, costs: DeviceCosts, kernel: &Kernel) -> Self {
        let naive_taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
        Auto {
            candidates,
            costs,
            naive_taps,
        }
    }

    /// Index of the cheapest candidate for `classes` classes.
    pub fn choose(&self, classes: usize) -> usize {
        let c = classes.max(1) as f64;
        let mut best = 0;
        for (i, cand) in self.candidates.iter().enumerate() {
            if cand.cost(c, &self.costs, self.naive_taps)
                < self.candidates[best].cost(c, &self.costs, self.naive_taps)
            {
                best = i;
            }
        }
        best
    }

    /// Why: every candidate's cost for `classes` classes, the chosen one marked.
    pub fn explain(&self, classes: usize) -> String {
        let chosen = self.choose(classes);
        let c = classes.max(1) as f64;
        let mut text = format!(
            "auto: cost model per output pixel with {classes} classes in a tile, {} kernel taps:\n",
            self.naive_taps
        );
        for (i, cand) in self.candidates.iter().enumerate() {
            let mark = if i == chosen { "=>" } else { "  " };
            let detail = match &cand.shape {
                Shape::Naive { taps } => format!("{taps} histogram updates + {classes} to rank"),
                Shape::Svd { size, rank } => {
                    format!("{classes} classes × rank {rank} × 2 passes × {size} taps")
                }
                Shape::Dct5 { terms, .. } => {
                    format!(
                        "{classes} classes × 2 passes × {} terms, independent of N",
                        terms + 1
                    )
                }
            };
            let mut line = format!(
                "{mark} {:<28} cost {:>10.1}  ({detail}",
                cand.smoother.name(),
                cand.cost(c, &self.costs, self.naive_taps)
            );
            if let Some(b) = cand.bounds {
                line += &format!("; score error ≤ {:.2e}", b.total());
            }
            if cand.certified {
                line += &format!(
                    "; guessing {:.1} % recomputed exactly",
                    100.0 * cand.recompute_guess(c)
                );
            }
            text += &line;
            text += ")\n";
        }
        text += "tiles holding fewer classes may choose differently (the choice is made per tile)";
        text
    }
}

impl ClassSmoother for Auto {
    fn name(&self) -> String {
        let names: Vec<String> = self.candidates.iter().map(|c| c.smoother.name()).collect();
        format!("auto[{}]", names.join("|"))
    }

    fn is_exact(&self) -> bool {
        self.candidates.iter().all(|c| c.smoother.is_exact())
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        self.candidates[self.choose(tile.n_classes)]
            .smoother
            .smooth(tile, params, out)
    }

    fn summary(&self) -> Option<String> {
        let lines: Vec<String> = self
            .candidates
            .iter()
            .filter_map(|c| c.smoother.summary())
            .collect();
        (!lines.is_empty()).then(|| lines.join("; "))
    }
}
