//! Turns a [`MethodSpec`] and a `--device` choice into a class smoother.
//!
//! Each method builds itself through its descriptor ([`Family::build`]);
//! this module only spreads that over the devices of a choice: a choice
//! naming several devices builds the method once per device, sharing the
//! tiles ([`Shared`]). It names no method.
//!
//! [`Family::build`]: super::family::Family::build

use super::ClassSmoother;
use super::multi::Shared;
pub use super::spec::{FastOptions, Method, MethodSpec};
use crate::device::{DeviceChoice, Member};
use crate::error::Result;
use crate::kernel::Kernel;

/// `build` for the device of `device`, or for each of its devices sharing
/// the tiles ([`Shared`]) when it names several.
pub fn on_members(
    device: &DeviceChoice,
    build: impl Fn(Member) -> Result<Box<dyn ClassSmoother>> + Sync,
) -> Result<Box<dyn ClassSmoother>> {
    if !device.is_several() {
        return build(device.resolve()?);
    }
    shared(build_each(device.members()?, &build)?)
}

/// `build` for each of `members`, each on a thread of its own: a device's
/// context and programs take tens to hundreds of milliseconds to make (on
/// NVIDIA's driver), so four GPUs opened one after the other would add up.
fn build_each(
    members: Vec<Member>,
    build: &(impl Fn(Member) -> Result<Box<dyn ClassSmoother>> + Sync),
) -> Result<Vec<Box<dyn ClassSmoother>>> {
    std::thread::scope(|scope| {
        let started: Vec<_> = members
            .into_iter()
            .map(|member| scope.spawn(move || build(member)))
            .collect();
        started
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

/// One smoother per device of `device` (a single one for a choice naming
/// one device), each computing alone: for work that gives every device
/// jobs of its own (a batch's tasks) instead of sharing one job's tiles.
pub fn per_member(
    spec: &MethodSpec,
    device: &DeviceChoice,
    kernel: &Kernel,
) -> Result<Vec<Box<dyn ClassSmoother>>> {
    let family = spec.method().family();
    if !device.is_several() {
        return Ok(vec![family.build(
            spec.settings(),
            device.resolve()?,
            kernel,
        )?]);
    }
    build_each(device.members()?, &|member| {
        family.build(spec.settings(), member, kernel)
    })
}

/// `members` (at least one) as one smoother: several share the tiles
/// ([`Shared`]).
pub fn shared(mut members: Vec<Box<dyn ClassSmoother>>) -> Result<Box<dyn ClassSmoother>> {
    if members.len() == 1 {
        return Ok(members.pop().expect("one member"));
    }
    Ok(Box::new(Shared::new(members)?))
}

/// The first device of `device` (the one `--explain` describes).
pub fn first_member(device: &DeviceChoice) -> Result<Member> {
    if !device.is_several() {
        return device.resolve();
    }
    Ok(device.members()?.into_iter().next().flatten())
}

/// The smoother `spec` names on `device`, built for `kernel` by the
/// method's descriptor.
pub fn smoother_for(
    spec: &MethodSpec,
    device: &DeviceChoice,
    kernel: &Kernel,
) -> Result<Box<dyn ClassSmoother>> {
    let family = spec.method().family();
    on_members(device, |member| {
        family.build(spec.settings(), member, kernel)
    })
}

/// What `smooth --explain` adds for `spec` on `device` (auto: its cost
/// model for a `tile`-sided tile holding `classes` classes), if anything.
pub fn explain(
    spec: &MethodSpec,
    device: &DeviceChoice,
    kernel: &Kernel,
    classes: usize,
    tile: usize,
) -> Result<Option<String>> {
    spec.method()
        .family()
        .explain(spec.settings(), device, kernel, classes, tile)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::auto::auto;
    use crate::method::naive::cl::Variant;
    use crate::method::naive::class_smoother;

    fn spec(method: &str, options: FastOptions) -> MethodSpec {
        MethodSpec::new(method.parse().unwrap(), None, options).unwrap()
    }

    fn naive() -> Method {
        "naive".parse().unwrap()
    }

    #[test]
    fn host_and_variants() {
        let m = class_smoother(&DeviceChoice::Host, None).unwrap();
        assert_eq!(m.name(), "naive/host");
        let m = class_smoother(&DeviceChoice::Host, Some(Variant::Local)).unwrap();
        assert_eq!(m.name(), "naive/host");
        assert_eq!(naive().variants()[0], Variant::default());
        assert!("svd".parse::<Method>().unwrap().variants().is_empty());
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
        let m = smoother_for(&spec("dct5", opts), &host, &gauss).unwrap();
        assert_eq!(m.name(), "dct5/host (K=3)");
        assert!(!m.is_exact());
        let exact = FastOptions {
            exact: true,
            ..opts
        };
        let m = smoother_for(&spec("svd", exact), &host, &disc).unwrap();
        assert!(m.is_exact() && m.name().starts_with("exact(svd/host"));
        assert!(smoother_for(&spec("dct5", opts), &host, &disc).is_err());
        let m = smoother_for(&spec("naive", exact), &host, &disc).unwrap();
        assert_eq!(m.name(), "naive/host");
        // A 31×31 Gaussian over 17 classes: dct5 beats 961 histogram updates;
        // a 3×3 box over 17 classes: not svd, whose score planes cost more
        // than naive's 9 taps or dct5's box (1024² maps of 17 classes, 2
        // cores: naive 40–50 ms, dct5 31–48 ms, svd 124–142 ms).
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
            !a.explain_tile(17, 512).contains("=> svd"),
            "{}",
            a.explain_tile(17, 512)
        );
        // Certified candidates with a loose bound pay for their recomputation.
        let a = auto(&host, None, &gauss, &exact).unwrap();
        assert!(a.is_exact());
        // Only auto explains more; on a disc auto has no dct5 candidate.
        let text = explain(&spec("auto", opts), &host, &disc, 3, 256).unwrap();
        let text = text.expect("auto explains its choice");
        assert!(
            text.contains("svd/host") && !text.contains("dct5"),
            "{text}"
        );
        assert!(
            explain(&spec("svd", opts), &host, &disc, 3, 256)
                .unwrap()
                .is_none()
        );
    }
}
