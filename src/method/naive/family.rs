//! naive's descriptor ([`NAIVE`]): the exact method, built without a
//! kernel, with its device variants and its cost for `--method auto`.

use super::NaiveHost;
use super::cl::{NaiveCl, Variant};
use crate::device::{DeviceChoice, Member};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::method::ClassSmoother;
use crate::method::cost::{Candidate, CostShape, DeviceCosts, TileExtent, baseline};
use crate::method::family::{Accepts, Family};
use crate::method::select::on_members;
use crate::method::spec::{FastOptions, MethodSpec};

/// The descriptor of `--method naive`.
pub struct NaiveFamily;

/// `naive` in [`crate::method::registry`].
pub static NAIVE: NaiveFamily = NaiveFamily;

impl Family for NaiveFamily {
    fn name(&self) -> &'static str {
        "naive"
    }

    fn help(&self) -> &'static str {
        "exact"
    }

    fn accepts(&self) -> Accepts {
        Accepts::default()
    }

    fn is_exact(&self) -> bool {
        true
    }

    fn variants(&self) -> &'static [Variant] {
        &[
            Variant::Fast,
            Variant::Buffer,
            Variant::Image,
            Variant::Local,
        ]
    }

    fn build(
        &self,
        spec: &MethodSpec,
        member: Member,
        _kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>> {
        naive_on(member, spec.variant())
    }

    fn candidate(
        &self,
        member: &Member,
        variant: Option<Variant>,
        kernel: &Kernel,
        _fast: &FastOptions,
    ) -> Result<Option<Candidate>> {
        let taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
        Ok(Some(Candidate {
            smoother: naive_on(member.clone(), variant)?,
            shape: Box::new(NaiveCost { taps }),
            bounds: None,
            certified: false,
        }))
    }
}

/// Naive on `device` (`variant`: `None` for the default), the one method
/// built without a kernel. `host` (or `auto` without OpenCL) gives the plain
/// Rust implementation; several devices share the tiles.
pub fn class_smoother(
    device: &DeviceChoice,
    variant: Option<Variant>,
) -> Result<Box<dyn ClassSmoother>> {
    on_members(device, |member| naive_on(member, variant))
}

/// Naive on one device (the host ignores the variant).
fn naive_on(member: Member, variant: Option<Variant>) -> Result<Box<dyn ClassSmoother>> {
    match member {
        None => Ok(Box::new(NaiveHost)),
        Some(dev) => Ok(Box::new(NaiveCl::new(dev, variant.unwrap_or_default())?)),
    }
}

/// naive's cost: one histogram update per non-zero tap, then C to rank.
pub struct NaiveCost {
    pub taps: usize,
}

impl CostShape for NaiveCost {
    fn cost(&self, tile: &TileExtent, costs: &DeviceCosts) -> f64 {
        baseline(self.taps, tile.classes.max(1) as f64, costs)
    }

    fn explain(&self, tile: &TileExtent) -> String {
        format!("{} histogram updates + {} to rank", self.taps, tile.classes)
    }
}
