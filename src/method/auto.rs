//! `--method auto`: picks naive, svd or dct5 per tile by a cost model, and
//! says why (`smooth --explain`).
//!
//! The model counts the inner-loop operations per output pixel for the
//! tile's extent and class count C (tile-local compaction: a tile pays only
//! for the classes present in it and its halo) and weighs them by
//! per-device costs:
//!
//! - naive: one histogram update per non-zero tap, then C for the argmax;
//! - svd: per class and rank, pass 1 of N taps over the tile's columns
//!   *with* the halo (`(w + N − 1)/w` of the output), pass 2 of N taps, plus
//!   the ranking;
//! - dct5 (Gaussian and box kernels only), per class, its two passes as the
//!   device runs them ([`Dct5Passes`]), pass 1 also over the halo columns:
//!   - host (f64, second order): `3·(K+1)` operations per step plus the
//!     segment seeds `2·(K+1)·N / segment` (segments of `max(64, 4·N)`);
//!   - OpenCL (f32 rotating phasors, `kernels/dct5.cl`): `9·K + 2`
//!     operations per step, and each segment warms up over N steps, so a
//!     pass costs `1 + N / segment` steps per output, where the segment is
//!     what [`dct5_rot::segment`] picks for this tile on this device (at
//!     least `4·N` on large tiles, down to 32 outputs where a GPU needs the
//!     parallelism).
//!
//! With `--exact` the fast candidates are their certified forms, which also
//! pay the naive cost on the pixels they recompute; that share is not known
//! before the run, so the model guesses it from the error bound ε (the share
//! of pixels whose margin falls under 2ε grows with ε·C) and says so.
//! The per-operation costs are relative weights fitted by hand to the host
//! measurements in BENCHMARKS.md; they rank methods, they do not predict times.

use super::bounds::Bounds;
use super::dct5::rot as dct5_rot;
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
        passes: Dct5Passes,
    },
}

/// How a dct5 candidate runs its two passes, which fixes its segment lengths.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dct5Passes {
    /// The host's f64 recursion: segments of `segment` outputs, each seeded
    /// by two direct sums of N samples.
    Host { segment: usize },
    /// The OpenCL kernels: segments from [`dct5_rot::segment`] for the tile
    /// with `target` work-items ([`dct5_rot::target_items`] of the device),
    /// each warmed up over N steps.
    Device { target: usize },
}

/// The extent of one tile as the model sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileExtent {
    /// Output width and height.
    pub width: usize,
    pub height: usize,
    /// Classes present in the tile and its halo.
    pub classes: usize,
}

impl TileExtent {
    /// A `side`×`side` output tile holding `classes` classes.
    pub fn square(side: usize, classes: usize) -> Self {
        TileExtent {
            width: side,
            height: side,
            classes,
        }
    }

    /// Pass 1 runs over the output columns and the halo's: its cost per
    /// output pixel, relative to pass 2, for a kernel of side `n`.
    fn halo_factor(&self, n: usize) -> f64 {
        let w = self.width.max(1);
        (w + n - 1) as f64 / w as f64
    }
}

/// Per output pixel and class, the steps (and a description) of a dct5
/// candidate's two passes on `tile`, pass 1 over the halo columns included.
fn dct5_steps(size: usize, terms: usize, passes: Dct5Passes, tile: &TileExtent) -> (f64, String) {
    let n = size as f64;
    let k1 = terms as f64 + 1.0;
    let halo = tile.halo_factor(size);
    match passes {
        Dct5Passes::Host { segment } => {
            let seeds = 2.0 * k1 * n / segment as f64;
            let per_pass = 3.0 * k1 + seeds;
            (
                (halo + 1.0) * per_pass,
                format!("segments of {segment} seeded by 2 sums of {size}"),
            )
        }
        Dct5Passes::Device { target } => {
            let r = size / 2;
            let (ow, oh, c) = (tile.width.max(1), tile.height.max(1), tile.classes.max(1));
            let seg1 = dct5_rot::segment(r, oh, (ow + size - 1) * c, target);
            let seg2 = dct5_rot::segment(r, ow, oh * c, target);
            let ops = 9.0 * terms as f64 + 2.0;
            let warm = |seg: usize| 1.0 + n / seg as f64;
            (
                (halo * warm(seg1) + warm(seg2)) * ops,
                format!("device segments {seg1}/{seg2} after {size} warm-up steps each"),
            )
        }
    }
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

    /// Relative cost per output pixel of `tile`.
    pub fn cost(&self, tile: &TileExtent, costs: &DeviceCosts, naive_taps: usize) -> f64 {
        let classes = tile.classes.max(1) as f64;
        let naive = naive_taps as f64 * costs.histogram + classes * costs.rank;
        let own = match self.shape {
            Shape::Naive { .. } => return naive,
            Shape::Svd { size, rank } => {
                let taps = (tile.halo_factor(size) + 1.0) * size as f64;
                classes * (rank as f64 * taps * costs.stream + costs.rank)
            }
            Shape::Dct5 {
                size,
                terms,
                passes,
            } => {
                let (steps, _) = dct5_steps(size, terms, passes, tile);
                classes * (steps * costs.stream + costs.rank)
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

    /// Index of the cheapest candidate for `tile`.
    pub fn choose(&self, tile: &TileExtent) -> usize {
        let mut best = 0;
        for (i, cand) in self.candidates.iter().enumerate() {
            if cand.cost(tile, &self.costs, self.naive_taps)
                < self.candidates[best].cost(tile, &self.costs, self.naive_taps)
            {
                best = i;
            }
        }
        best
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
            let detail = match &cand.shape {
                Shape::Naive { taps } => format!("{taps} histogram updates + {classes} to rank"),
                Shape::Svd { size, rank } => format!(
                    "{classes} classes × rank {rank} × 2 passes × {size} taps, pass 1 over {} columns",
                    side + size - 1
                ),
                Shape::Dct5 {
                    size,
                    terms,
                    passes,
                } => {
                    let (_, how) = dct5_steps(*size, *terms, *passes, &tile);
                    format!(
                        "{classes} classes × 2 passes × {} terms, pass 1 over {} columns, {how}",
                        terms + 1,
                        side + size - 1
                    )
                }
            };
            let mut line = format!(
                "{mark} {:<28} cost {:>10.1}  ({detail}",
                cand.smoother.name(),
                cand.cost(&tile, &self.costs, self.naive_taps)
            );
            if let Some(b) = cand.bounds {
                line += &format!("; score error ≤ {:.2e}", b.total());
            }
            if cand.certified {
                line += &format!(
                    "; guessing {:.1} % recomputed exactly",
                    100.0 * cand.recompute_guess(classes.max(1) as f64)
                );
            }
            text += &line;
            text += ")\n";
        }
        text += "tiles of other sizes or holding fewer classes may choose differently (the choice is made per tile)";
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

    fn weighs_votes(&self) -> bool {
        self.candidates.iter().all(|c| c.smoother.weighs_votes())
    }

    fn host_parallel(&self) -> bool {
        self.candidates.iter().all(|c| c.smoother.host_parallel())
    }

    fn runs_on(&self) -> Option<crate::device::DeviceKind> {
        self.candidates.iter().find_map(|c| c.smoother.runs_on())
    }

    fn smooth(&self, tile: &ClassTile, params: &SmoothParams, out: &mut [u16]) -> Result<()> {
        let extent = TileExtent {
            width: tile.output_width(),
            height: tile.output_height(),
            classes: tile.n_classes,
        };
        self.candidates[self.choose(&extent)]
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceKind;
    use crate::kernel::KernelSpec;
    use crate::method::dct5::default_segment;
    use crate::method::naive::NaiveHost;

    fn candidate(shape: Shape) -> Candidate {
        Candidate {
            smoother: Box::new(NaiveHost),
            shape,
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
                candidate(Shape::Naive { taps }),
                candidate(Shape::Svd { size, rank: 1 }),
                candidate(Shape::Dct5 {
                    size,
                    terms,
                    passes,
                }),
            ],
            costs,
            &kernel,
        )
    }

    const HOST: Dct5Passes = Dct5Passes::Host { segment: 1540 };
    const GPU: Dct5Passes = Dct5Passes::Device {
        target: dct5_rot::TARGET_ITEMS,
    };

    fn cpu() -> Dct5Passes {
        Dct5Passes::Device {
            target: dct5_rot::target_items(DeviceKind::Cpu, 2),
        }
    }

    /// The device estimate follows the kernels' segments (warm-up N per
    /// segment), the host's its seeded segments: at 2048², 4 classes,
    /// N = 385 a GPU shortens the segments to 64 and 32 outputs, a
    /// 2-core CPU device keeps 1568.
    #[test]
    fn dct5_estimates_follow_each_devices_segments() {
        assert_eq!(default_segment(192), 1540);
        let tile = TileExtent::square(2048, 4);
        let halo = (2048.0 + 384.0) / 2048.0;
        let ops = 9.0 * 3.0 + 2.0;
        let steps =
            |seg1: f64, seg2: f64| (halo * (1.0 + 385.0 / seg1) + (1.0 + 385.0 / seg2)) * ops;
        let cost = |passes| {
            let a = auto(3, passes, DeviceCosts::HOST);
            a.candidates[2].cost(&tile, &a.costs, a.naive_taps)
        };
        let per_class = |steps: f64| 4.0 * (steps * 0.35 + 2.0);
        assert!((cost(GPU) - per_class(steps(64.0, 32.0))).abs() < 1e-9);
        assert!((cost(cpu()) - per_class(steps(1568.0, 1568.0))).abs() < 1e-9);
        let host = (halo + 1.0) * (3.0 * 4.0 + 2.0 * 4.0 * 385.0 / 1540.0);
        assert!((cost(HOST) - per_class(host)).abs() < 1e-9);
        assert!(cost(GPU) > 2.0 * cost(cpu()) && cost(cpu()) > cost(HOST));
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
        assert_eq!(auto(5, cpu(), DeviceCosts::HOST).choose(&small), 2);
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
