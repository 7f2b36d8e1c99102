//! Turns `--method`, `--device` and `--variant` into a class smoother.
//!
//! One place decides which implementation runs where; other methods add an
//! arm to [`class_smoother`] (and their variants to [`variants_of`]). A
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
use crate::bail;
use crate::device::{Device, DeviceChoice, Member};
use crate::error::Result;
use crate::kernel::Kernel;

/// Methods this build knows, for help texts and errors.
pub const METHODS: &[&str] = &["naive", "svd", "dct5", "auto"];

/// The variants `method` accepts on a device (the first is the default).
pub fn variants_of(method: &str) -> &'static [&'static str] {
    match method {
        "naive" => &["fast", "buffer", "image", "local"],
        _ => &[],
    }
}

/// The smoother for `method` on `device` (`variant`: `None` for the default).
/// `host` (or `auto` without OpenCL) gives the plain Rust implementation;
/// several devices share the tiles (see [`on_members`]).
pub fn class_smoother(
    method: &str,
    device: &DeviceChoice,
    variant: Option<&str>,
) -> Result<Box<dyn ClassSmoother>> {
    on_members(device, |member| naive_on(method, member, variant))
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

/// Naive (the only method not built for a kernel) on one device.
fn naive_on(method: &str, member: Member, variant: Option<&str>) -> Result<Box<dyn ClassSmoother>> {
    match method {
        "naive" => match member {
            None => {
                if let Some(v) = variant {
                    v.parse::<Variant>()?; // still reject nonsense
                }
                Ok(Box::new(NaiveHost))
            }
            Some(dev) => {
                let v = variant.map_or(Ok(Variant::default()), str::parse)?;
                Ok(Box::new(NaiveCl::new(dev, v)?))
            }
        },
        "svd" | "dct5" | "auto" => bail!(
            format!("method '{method}' is built for a kernel"),
            hint = "call select::smoother_for"
        ),
        other => bail!(
            format!("unknown method '{other}'"),
            hint = format!("methods: {}", METHODS.join(", "))
        ),
    }
}

/// Options of the fast methods: `--rank`, `--energy`, `--terms`, `--exact`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FastOptions {
    pub rank: Option<usize>,
    pub energy: Option<f64>,
    pub terms: Option<usize>,
    /// Certify fast results and recompute the rest exactly (byte-identical to naive).
    pub exact: bool,
}

/// The smoother for `method` on `device`, built for `kernel`: naive (via
/// [`class_smoother`]), svd, dct5, or auto (which also returns the model's
/// explanation for a tile holding `explain_classes` classes).
pub fn smoother_for(
    method: &str,
    device: &DeviceChoice,
    variant: Option<&str>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Box<dyn ClassSmoother>> {
    if !matches!(method, "svd" | "dct5" | "auto")
        && (fast.rank.is_some() || fast.energy.is_some() || fast.terms.is_some())
    {
        bail!(
            "--rank, --energy and --terms apply to --method svd, dct5 or auto",
            hint = "drop them, or choose a fast method"
        );
    }
    on_members(device, |member| {
        Ok(match method {
            "svd" | "dct5" => fast_smoother(method, member.as_ref(), kernel, fast)?.smoother,
            "auto" => Box::new(auto_on(member, variant, kernel, fast)?),
            _ => naive_on(method, member, variant)?,
        })
    })
}

/// svd or dct5 (certified when `fast.exact`), with its cost shape.
fn fast_smoother(
    method: &str,
    device: Option<&Device>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Candidate> {
    let (name, plan, shape) = match method {
        "svd" => {
            if fast.terms.is_some() {
                bail!(
                    "--terms applies to dct5",
                    hint = "svd truncates with --rank or --energy"
                );
            }
            let plan = svd::plan(kernel, RankChoice::from_options(fast.rank, fast.energy)?);
            let shape = Shape::Svd {
                size: kernel.size(),
                rank: plan.terms.len(),
            };
            (format!("svd/host (rank {})", plan.terms.len()), plan, shape)
        }
        _ => {
            if fast.rank.is_some() || fast.energy.is_some() {
                bail!(
                    "--rank and --energy apply to svd",
                    hint = "dct5 takes --terms K"
                );
            }
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
        let cl = SeparableCl::new(dev.clone(), method, &plan, kernel, fast.exact)?;
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
    variant: Option<&str>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Auto> {
    auto_on(first_member(device)?, variant, kernel, fast)
}

/// [`auto`] on one device.
fn auto_on(
    device: Member,
    variant: Option<&str>,
    kernel: &Kernel,
    fast: &FastOptions,
) -> Result<Auto> {
    let kind = device.as_ref().map(|d| d.info().kind);
    let taps = kernel.quantised().iter().filter(|&&q| q > 0).count();
    let mut candidates = vec![Candidate {
        smoother: naive_on("naive", device.clone(), variant)?,
        shape: Shape::Naive { taps },
        bounds: None,
        certified: false,
    }];
    let svd_opts = FastOptions {
        terms: None,
        ..*fast
    };
    candidates.push(fast_smoother("svd", device.as_ref(), kernel, &svd_opts)?);
    let dct_opts = FastOptions {
        rank: None,
        energy: None,
        ..*fast
    };
    if let Ok(c) = fast_smoother("dct5", device.as_ref(), kernel, &dct_opts) {
        candidates.push(c);
    }
    Ok(Auto::new(candidates, DeviceCosts::of(kind), kernel))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_errors() {
        let m = class_smoother("naive", &DeviceChoice::Host, None).unwrap();
        assert_eq!(m.name(), "naive/host");
        assert!(class_smoother("nope", &DeviceChoice::Host, None).is_err());
        let e = class_smoother("naive", &DeviceChoice::Host, Some("warp"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown naive variant 'warp'"), "{e}");
        assert_eq!(variants_of("naive")[0], "fast");
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
        let m = smoother_for("dct5", &DeviceChoice::Host, None, &gauss, &opts).unwrap();
        assert_eq!(m.name(), "dct5/host (K=3)");
        assert!(!m.is_exact());
        let exact = FastOptions {
            exact: true,
            ..opts
        };
        let m = smoother_for("svd", &DeviceChoice::Host, None, &disc, &exact).unwrap();
        assert!(m.is_exact() && m.name().starts_with("exact(svd/host"));
        assert!(smoother_for("dct5", &DeviceChoice::Host, None, &disc, &opts).is_err());
        let bad = FastOptions {
            rank: Some(2),
            ..opts
        };
        assert!(smoother_for("dct5", &DeviceChoice::Host, None, &gauss, &bad).is_err());
        assert!(smoother_for("naive", &DeviceChoice::Host, None, &gauss, &bad).is_err());
        // A 31×31 Gaussian over 17 classes: dct5 beats 961 histogram updates;
        // a 3×3 box over 17 classes: naive's 9 taps win.
        let a = auto(&DeviceChoice::Host, None, &gauss, &opts).unwrap();
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
        let a = auto(&DeviceChoice::Host, None, &small, &opts).unwrap();
        assert!(
            a.explain_tile(17, 512).contains("=> naive"),
            "{}",
            a.explain_tile(17, 512)
        );
        // Certified candidates with a loose bound pay for their recomputation.
        let a = auto(&DeviceChoice::Host, None, &gauss, &exact).unwrap();
        assert!(a.is_exact());
    }
}
