//! Turns a [`MethodSpec`] and a `--device` choice into a class smoother.
//!
//! One place decides which implementation runs where; other methods add a
//! [`Method`] and its arm to [`smoother_for`] (and their variants to
//! [`variants_of`]). A
//! device choice naming several devices builds the method once per device,
//! sharing the tiles ([`Shared`]).

use super::ClassSmoother;
use super::auto::{Auto, Candidate, Dct5Passes, DeviceCosts, Shape};
use super::certified::Certified;
use super::dct5::{self, rot as dct5_rot};
use super::multi::Shared;
use super::naive::NaiveHost;
use super::naive::cl::{NaiveCl, Variant};
use super::separable::cl::SeparableCl;
use super::separable::svd::{self, RankChoice};
use super::separable::{Filter, SeparableHost, dct5_plan};
pub use super::spec::{FastOptions, Method, MethodSpec};
use crate::device::{Device, DeviceChoice, Member};
use crate::error::Result;
use crate::kernel::Kernel;

/// The device variants `method` takes (the first is the default).
pub fn variants_of(method: Method) -> &'static [Variant] {
    match method {
        Method::Naive => &[
            Variant::Fast,
            Variant::Buffer,
            Variant::Image,
            Variant::Local,
        ],
        Method::Svd | Method::Dct5 | Method::Auto => &[],
    }
}

/// Naive on `device` (`variant`: `None` for the default), the one method
/// built without a kernel. `host` (or `auto` without OpenCL) gives the plain
/// Rust implementation; several devices share the tiles (see [`on_members`]).
pub fn class_smoother(
    device: &DeviceChoice,
    variant: Option<Variant>,
) -> Result<Box<dyn ClassSmoother>> {
    on_members(device, |member| naive_on(member, variant))
}

/// `build` for the device of `device`, or for each of its devices sharing
/// the tiles ([`Shared`]) when it names several.
fn on_members(
    device: &DeviceChoice,
    build: impl Fn(Member) -> Result<Box<dyn ClassSmoother>>,
) -> Result<Box<dyn ClassSmoother>> {
    if !device.is_several() {
        return build(device.resolve()?);
    }
    let mut members = device.members()?;
    if members.len() == 1 {
        return build(members.pop().expect("one member"));
    }
    let built = members.into_iter().map(build).collect::<Result<Vec<_>>>()?;
    Ok(Box::new(Shared::new(built)?))
}

/// The first device of `device` (the one `--explain` describes).
fn first_member(device: &DeviceChoice) -> Result<Member> {
    if !device.is_several() {
        return device.resolve();
    }
    Ok(device.members()?.into_iter().next().flatten())
}

/// Naive on one device (the host ignores the variant).
fn naive_on(member: Member, variant: Option<Variant>) -> Result<Box<dyn ClassSmoother>> {
    match member {
        None => Ok(Box::new(NaiveHost)),
        Some(dev) => Ok(Box::new(NaiveCl::new(dev, variant.unwrap_or_default())?)),
    }
}

/// The smoother `spec` names on `device`, built for `kernel`: naive, svd,
/// dct5, or auto (the cost model choosing among them per tile).
pub fn smoother_for(
    spec: &MethodSpec,
    device: &DeviceChoice,
    kernel: &Kernel,
) -> Result<Box<dyn ClassSmoother>> {
    let fast = spec.options();
    on_members(device, |member| {
        Ok(match spec.method() {
            Method::Naive => naive_on(member, spec.variant())?,
            Method::Svd => fast_smoother(FastMethod::Svd, member.as_ref(), kernel, fast)?.smoother,
            Method::Dct5 => {
                fast_smoother(FastMethod::Dct5, member.as_ref(), kernel, fast)?.smoother
            }
            Method::Auto => Box::new(auto_on(member, spec.variant(), kernel, fast)?),
        })
    })
}

/// The separable methods [`fast_smoother`] builds.
#[derive(Clone, Copy)]
enum FastMethod {
    Svd,
    Dct5,
}

/// svd or dct5 (certified when `fast.exact`), with its cost shape.
fn fast_smoother(
    method: FastMethod,
    device: Option<&Device>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    let (name, plan, shape) = match method {
        FastMethod::Svd => {
            let plan = svd::plan(kernel, RankChoice::from_options(fast.rank, fast.energy)?);
            let shape = Shape::Svd {
                size: kernel.size(),
                rank: plan.terms.len(),
            };
            (format!("svd/host (rank {})", plan.terms.len()), plan, shape)
        }
        FastMethod::Dct5 => {
            let plan = dct5_plan(kernel, fast.terms.unwrap_or(dct5::DEFAULT_TERMS))?;
            let (terms, segment) = match &plan.terms[0].row {
                Filter::Dct5(d) => (d.terms(), d.segment()),
                Filter::Taps(_) => unreachable!("dct5 plans hold DCT-5 filters"),
            };
            let shape = Shape::Dct5 {
                size: kernel.size(),
                terms,
                passes: Dct5Passes::Host { segment },
            };
            (format!("dct5/host (K={terms})"), plan, shape)
        }
    };
    if let Some(dev) = device {
        // On a device dct5 runs the OpenCL kernels' segments, not the host's.
        let shape = match shape {
            Shape::Dct5 { size, terms, .. } => Shape::Dct5 {
                size,
                terms,
                passes: Dct5Passes::Device {
                    target: dct5_rot::target_items(dev.info().kind, dev.info().compute_units),
                },
            },
            other => other,
        };
        let name = match method {
            FastMethod::Svd => "svd",
            FastMethod::Dct5 => "dct5",
        };
        let cl = SeparableCl::new(dev.clone(), name, &plan, kernel, fast.exact)?;
        return Ok(Candidate {
            bounds: Some(cl.bounds()),
            smoother: Box::new(cl),
            shape,
            certified: fast.exact,
        });
    }
    let host = SeparableHost::new(name, plan, kernel);
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

/// `--method auto`: naive, svd and (for Gaussian and box kernels) dct5,
/// chosen per tile; on several devices, auto on the first.
pub fn auto(
    device: &DeviceChoice,
    variant: Option<Variant>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Auto> {
    auto_on(first_member(device)?, variant, kernel, fast)
}

/// [`auto`] on one device.
fn auto_on(
    device: Member,
    variant: Option<Variant>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Auto> {
    let kind = device.as_ref().map(|d| d.info().kind);
    let taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
    let mut candidates = vec![Candidate {
        smoother: naive_on(device.clone(), variant)?,
        shape: Shape::Naive { taps },
        bounds: None,
        certified: false,
    }];
    let svd_opts = FastOptions {
        terms: None,
        ..*fast
    };
    candidates.push(fast_smoother(
        FastMethod::Svd,
        device.as_ref(),
        kernel,
        &svd_opts,
    )?);
    let dct_opts = FastOptions {
        rank: None,
        energy: None,
        ..*fast
    };
    if let Ok(c) = fast_smoother(FastMethod::Dct5, device.as_ref(), kernel, &dct_opts) {
        candidates.push(c);
    }
    Ok(Auto::new(candidates, DeviceCosts::of(kind), kernel))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(method: Method, options: FastOptions) -> MethodSpec {
        MethodSpec::new(method, None, options).unwrap()
    }

    #[test]
    fn host_and_variants() {
        let m = class_smoother(&DeviceChoice::Host, None).unwrap();
        assert_eq!(m.name(), "naive/host");
        let m = class_smoother(&DeviceChoice::Host, Some(Variant::Local)).unwrap();
        assert_eq!(m.name(), "naive/host");
        assert_eq!(variants_of(Method::Naive)[0], Variant::default());
        assert!(variants_of(Method::Svd).is_empty());
    }

    #[test]
    fn fast_methods_and_auto() {
        let gauss: Kernel = "gaussian:5"
            .parse::<crate::kernel::KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        let disc: Kernel = "disc:4"
            .parse::<crate::kernel::KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        let opts = FastOptions::default();
        let host = DeviceChoice::Host;
        let m = smoother_for(&spec(Method::Dct5, opts), &host, &gauss).unwrap();
        assert_eq!(m.name(), "dct5/host (K=3)");
        assert!(!m.is_exact());
        let exact = FastOptions {
            exact: true,
            ..opts
        };
        let m = smoother_for(&spec(Method::Svd, exact), &host, &disc).unwrap();
        assert!(m.is_exact() && m.name().starts_with("exact(svd/host"));
        assert!(smoother_for(&spec(Method::Dct5, opts), &host, &disc).is_err());
        let m = smoother_for(&spec(Method::Naive, exact), &host, &disc).unwrap();
        assert_eq!(m.name(), "naive/host");
        // A 31×31 Gaussian over 17 classes: dct5 beats 961 histogram updates;
        // a 3×3 box over 17 classes: naive's 9 taps win.
        let a = auto(&host, None, &gauss, &opts).unwrap();
        assert!(
            a.explain_tile(17, 512).contains("=> dct5"),
            "{}",
            a.explain_tile(17, 512)
        );
        let small: Kernel = "box:3"
            .parse::<crate::kernel::KernelSpec>()
            .unwrap()
            .build()
            .unwrap();
        let a = auto(&host, None, &small, &opts).unwrap();
        assert!(
            a.explain_tile(17, 512).contains("=> naive"),
            "{}",
            a.explain_tile(17, 512)
        );
        // Certified candidates with a loose bound pay for their recomputation.
        let a = auto(&host, None, &gauss, &exact).unwrap();
        assert!(a.is_exact());
    }
}
