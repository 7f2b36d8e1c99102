//! The svd method (the thesis' Phase 2): the kernel factored as
//! `k = Σ_r s_r·u_r·v_rᵀ` by the one-sided Jacobi SVD of [`crate::linalg`],
//! each pair scaled by `√s_r`, then per class a vertical pass with `√s_r·u_r`
//! and a horizontal pass with `√s_r·v_r`, summed over ranks, and argmax.
//! O(N·R·C) per pixel. Ranks are fused per class (no round trip per rank).
//!
//! Rank: the numerical rank by default (singular values above
//! `N·ε·s₀`: a Gaussian or box has rank 1, a disc of radius r about r),
//! `--rank R` or `--energy E` (the smallest rank holding E of `Σ s²`) to truncate.
//!
//! Its descriptor, [`SvdFamily`], is in the separable folder's `FAMILIES`.

use super::{Filter, SeparablePlan, Term, separable_candidate};
use crate::bail;
use crate::device::{Device, Member};
use crate::error::{Result, Setting};
use crate::kernel::Kernel;
use crate::linalg::{Svd, jacobi_svd};
use crate::method::ClassSmoother;
use crate::method::cost::{Candidate, CostShape, DeviceCosts, TileExtent};
use crate::method::family::{Accepts, Family, FastOptions, Settings};
use crate::method::naive::cl::Variant;
use nalgebra::DMatrix;

/// How many singular triplets to keep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum RankChoice {
    /// All above the numerical tolerance.
    #[default]
    Numerical,
    /// Exactly this many (at most the numerical rank).
    Fixed(usize),
    /// The fewest holding this share of the energy `Σ s²` (0 < E ≤ 1).
    Energy(f64),
}

impl RankChoice {
    /// From the CLI's `--rank` / `--energy`.
    pub fn from_options(rank: Option<usize>, energy: Option<f64>) -> Result<Self> {
        match (rank, energy) {
            (Some(_), Some(_)) => bail!(
                usage,
                format!("{} and {} both given", Setting::Rank, Setting::Energy),
                hint = "truncate by one of them"
            ),
            (Some(0), None) => bail!(usage, format!("{} must be ≥ 1", Setting::Rank)),
            (Some(r), None) => Ok(RankChoice::Fixed(r)),
            (None, Some(e)) if !(e > 0.0 && e <= 1.0) => {
                bail!(
                    usage,
                    format!("{} must lie in (0, 1], got {e}", Setting::Energy),
                    hint = format!("e.g. {}", Setting::Energy.is(0.9999))
                )
            }
            (None, Some(e)) => Ok(RankChoice::Energy(e)),
            (None, None) => Ok(RankChoice::Numerical),
        }
    }

    pub fn rank_of(&self, svd: &Svd) -> usize {
        let full = svd.numerical_rank().max(1);
        match *self {
            RankChoice::Numerical => full,
            RankChoice::Fixed(r) => r.min(full),
            RankChoice::Energy(e) => svd.energy_rank(e).max(1),
        }
    }
}

/// The SVD of the kernel normalised to sum 1.
pub fn factor(kernel: &Kernel) -> Svd {
    let n = kernel.size();
    let total: f64 = kernel.weights().iter().sum();
    let m = DMatrix::from_row_slice(n, n, kernel.weights()) / total;
    jacobi_svd(&m)
}

/// The svd plan of `kernel`: one separable term per kept rank.
pub fn plan(kernel: &Kernel, choice: RankChoice) -> SeparablePlan {
    let svd = factor(kernel);
    let rank = choice.rank_of(&svd);
    let terms = (0..rank)
        .map(|r| {
            let root = svd.s[r].sqrt();
            Term {
                column: Filter::Taps(svd.u.column(r).iter().map(|v| v * root).collect()),
                row: Filter::Taps(svd.v.column(r).iter().map(|v| v * root).collect()),
            }
        })
        .collect();
    SeparablePlan {
        size: kernel.size(),
        terms,
        contenders: None,
    }
}

/// The descriptor of `--method svd`: its plan, built on the host
/// (certified with `--exact`) or a device, and its cost for `--method auto`.
pub struct SvdFamily;

impl Family for SvdFamily {
    fn name(&self) -> &'static str {
        "svd"
    }

    fn help(&self) -> &'static str {
        "separable factors"
    }

    fn accepts(&self) -> Accepts {
        Accepts {
            rank: true,
            terms: false,
            certifiable: true,
        }
    }

    fn is_exact(&self) -> bool {
        false
    }

    fn list_position(&self) -> u8 {
        10
    }

    fn build(
        &self,
        settings: &Settings,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        Ok(svd_candidate(member.as_ref(), kernel, &settings.options)?.smoother)
    }

    fn candidate(
        &self,
        member: &Member,
        _variant: Option<Variant>,
        kernel: &Kernel,
        fast: &FastOptions,
    ) -> Result<Option<Candidate>> {
        if kernel.size() > crate::kernel::PER_TAP_MAX_SIZE {
            return Ok(None);
        }
        svd_candidate(member.as_ref(), kernel, fast).map(Some)
    }
}

/// svd with `fast.rank`/`fast.energy` (certified when `fast.exact`).
fn svd_candidate(
    device: Option<&Device>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    // Its factorisation of the N×N matrix costs O(N³): minutes past 511.
    crate::kernel::refuse_wide(kernel, "svd")?;
    let plan = plan(kernel, RankChoice::from_options(fast.rank, fast.energy)?);
    let shape = SvdCost {
        size: kernel.size(),
        rank: plan.terms.len(),
    };
    let name = format!("svd/host (rank {})", plan.terms.len());
    separable_candidate(device, "svd", name, plan, Box::new(shape), kernel, fast)
}

/// svd's cost per class: rank × (pass 1 of N taps over the tile's columns
/// with the halo, pass 2 of N taps), plus the ranking.
pub struct SvdCost {
    pub size: usize,
    pub rank: usize,
}

impl CostShape for SvdCost {
    fn cost(&self, tile: &TileExtent, costs: &DeviceCosts) -> f64 {
        let classes = tile.classes.max(1) as f64;
        let taps = (tile.halo_factor(self.size) + 1.0) * self.size as f64;
        classes * (self.rank as f64 * taps * costs.tap_stream + costs.rank + costs.svd_plane)
            + costs.separable_setup
    }

    fn explain(&self, tile: &TileExtent) -> String {
        let (size, rank) = (self.size, self.rank);
        format!(
            "{} classes × rank {rank} × 2 passes × {size} taps, pass 1 over {} columns",
            tile.classes,
            tile.width + size - 1
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::separable::HOST_UNIT_ROUNDOFF;

    fn build(spec: &str) -> Kernel {
        spec.parse::<KernelSpec>().unwrap().build().unwrap()
    }

    #[test]
    fn full_rank_reproduces_the_kernel() {
        for spec in ["gaussian:2.5", "disc:4", "box:5"] {
            let k = build(spec);
            let p = plan(&k, RankChoice::Numerical);
            let b = p.bounds(&k, HOST_UNIT_ROUNDOFF);
            // Only quantisation (2⁻³¹ per weight) and rounding remain.
            assert!(b.approx < 1e-7, "{spec}: {b:?}");
            assert!(b.rounding < 1e-12, "{spec}: {b:?}");
        }
        assert_eq!(
            plan(&build("gaussian:3"), RankChoice::Numerical)
                .terms
                .len(),
            1
        );
    }

    #[test]
    fn truncation_costs_accuracy() {
        let k = build("disc:6");
        let full = plan(&k, RankChoice::Numerical);
        let two = plan(&k, RankChoice::Fixed(2));
        assert_eq!(two.terms.len(), 2);
        let (bf, b2) = (
            full.bounds(&k, HOST_UNIT_ROUNDOFF),
            two.bounds(&k, HOST_UNIT_ROUNDOFF),
        );
        assert!(b2.approx > 100.0 * bf.approx, "{bf:?} {b2:?}");
        let e = plan(&k, RankChoice::Energy(0.5));
        assert!(e.terms.len() < full.terms.len());
    }

    #[test]
    fn rank_options() {
        assert_eq!(
            RankChoice::from_options(None, None).unwrap(),
            RankChoice::Numerical
        );
        assert_eq!(
            RankChoice::from_options(Some(2), None).unwrap(),
            RankChoice::Fixed(2)
        );
        assert!(RankChoice::from_options(Some(0), None).is_err());
        assert!(RankChoice::from_options(Some(1), Some(0.5)).is_err());
        assert!(RankChoice::from_options(None, Some(1.5)).is_err());
    }
}
