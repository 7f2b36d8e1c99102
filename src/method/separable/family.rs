//! The descriptors of the two separable methods, [`SVD`] and [`DCT5`]:
//! their plans, how each is built on the host (certified with `--exact`)
//! or a device, and their costs for `--method auto`.

use super::cl::SeparableCl;
use super::svd::{self, RankChoice};
use super::{Filter, SeparableHost, SeparablePlan, dct5_plan};
use crate::device::{Device, Member};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::method::ClassSmoother;
use crate::method::certified::Certified;
use crate::method::cost::{Candidate, CostShape, DeviceCosts, TileExtent};
use crate::method::dct5::{self, rot as dct5_rot};
use crate::method::family::{Accepts, Family};
use crate::method::naive::cl::Variant;
use crate::method::spec::{FastOptions, MethodSpec};

/// The descriptor of `--method svd`.
pub struct SvdFamily;

/// `svd` in [`crate::method::registry`].
pub static SVD: SvdFamily = SvdFamily;

/// The descriptor of `--method dct5`.
pub struct Dct5Family;

/// `dct5` in [`crate::method::registry`].
pub static DCT5: Dct5Family = Dct5Family;

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

    fn build(
        &self,
        spec: &MethodSpec,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        Ok(svd_candidate(member.as_ref(), kernel, spec.options())?.smoother)
    }

    fn candidate(
        &self,
        member: &Member,
        _variant: Option<Variant>,
        kernel: &Kernel,
        fast: &FastOptions,
    ) -> Result<Option<Candidate>> {
        svd_candidate(member.as_ref(), kernel, fast).map(Some)
    }
}

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

    fn build(
        &self,
        spec: &MethodSpec,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        Ok(dct5_candidate(member.as_ref(), kernel, spec.options())?.smoother)
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

/// svd with `fast.rank`/`fast.energy` (certified when `fast.exact`).
fn svd_candidate(
    device: Option<&Device>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    let plan = svd::plan(kernel, RankChoice::from_options(fast.rank, fast.energy)?);
    let shape = SvdCost {
        size: kernel.size(),
        rank: plan.terms.len(),
    };
    let name = format!("svd/host (rank {})", plan.terms.len());
    separable(device, "svd", name, plan, Box::new(shape), kernel, fast)
}

/// dct5 with `fast.terms` (certified when `fast.exact`); an error for
/// kernels other than Gaussian and box.
fn dct5_candidate(
    device: Option<&Device>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    let plan = dct5_plan(kernel, fast.terms.unwrap_or(dct5::DEFAULT_TERMS))?;
    let (terms, segment) = match &plan.terms[0].row {
        Filter::Dct5(d) => (d.terms(), d.segment()),
        Filter::Taps(_) => unreachable!("dct5 plans hold DCT-5 filters"),
    };
    // On a device dct5 runs the OpenCL kernels' segments, not the host's.
    let passes = match device {
        Some(dev) => Dct5Passes::Device {
            target: dct5_rot::target_items(dev.info().kind, dev.info().compute_units),
        },
        None => Dct5Passes::Host { segment },
    };
    let shape = Dct5Cost {
        size: kernel.size(),
        terms,
        passes,
    };
    let name = format!("dct5/host (K={terms})");
    separable(device, "dct5", name, plan, Box::new(shape), kernel, fast)
}

/// A separable `plan` on `device` (OpenCL, `method` naming its programs)
/// or on the host (`host_name`), certified when `fast.exact`.
fn separable(
    device: Option<&Device>,
    method: &str,
    host_name: String,
    plan: SeparablePlan,
    shape: Box<dyn CostShape>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    if let Some(dev) = device {
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
        classes * (self.rank as f64 * taps * costs.stream + costs.rank)
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

/// dct5's cost per class: its two passes as the device runs them
/// ([`Dct5Passes`]), pass 1 also over the halo columns, plus the ranking.
pub struct Dct5Cost {
    pub size: usize,
    pub terms: usize,
    pub passes: Dct5Passes,
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

impl Dct5Cost {
    /// Per output pixel and class, the steps (and a description) of the two
    /// passes on `tile`, pass 1 over the halo columns included.
    fn steps(&self, tile: &TileExtent) -> (f64, String) {
        let size = self.size;
        let n = size as f64;
        let k1 = self.terms as f64 + 1.0;
        let halo = tile.halo_factor(size);
        match self.passes {
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
        let classes = tile.classes.max(1) as f64;
        let (steps, _) = self.steps(tile);
        classes * (steps * costs.stream + costs.rank)
    }

    fn explain(&self, tile: &TileExtent) -> String {
        let (_, how) = self.steps(tile);
        format!(
            "{} classes × 2 passes × {} terms, pass 1 over {} columns, {how}",
            tile.classes,
            self.terms + 1,
            tile.width + self.size - 1
        )
    }
}
