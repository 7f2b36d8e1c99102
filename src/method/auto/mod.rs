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
//! - naive: one histogram update per non-zero tap, then C for the argmax;
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
//! pay the naive cost on the pixels they recompute; that share is not known
//! before the run, so the model guesses it from the error bound ε (the share
//! of pixels whose margin falls under 2ε grows with ε·C) and says so.
//! The per-operation costs are relative weights fitted by hand to the host
//! measurements in BENCHMARKS.md; they rank methods, they do not predict times.

use super::cost::{Candidate, DeviceCosts, TileExtent};
use super::family::{Accepts, Family, FastOptions, Settings};
use super::naive::cl::Variant;
use super::select::first_member;
use super::spec::Method;
use super::{ClassSmoother, ClassTile, SmoothParams};
use crate::device::{DeviceChoice, Member};
use crate::error::Result;
use crate::kernel::Kernel;

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
    Ok(Auto::new(candidates, DeviceCosts::of(kind), kernel))
}

/// Chooses among candidates per tile by the cost model.
pub struct Auto {
    candidates: Vec<Candidate>,
    costs: DeviceCosts,
    naive_taps: usize,
}

impl Auto {
    /// `candidates` start with the exact baseline; `kernel` gives its tap
    /// count (certified candidates pay it on recomputed pixels).
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
            let detail = cand.shape.explain(&tile);
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

    fn gpus(&self) -> usize {
        self.candidates
            .iter()
            .map(|c| c.smoother.gpus())
            .max()
            .unwrap_or(0)
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
                candidate(NaiveCost { taps }),
                candidate(SvdCost { size, rank: 1 }),
                candidate(Dct5Cost {
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
