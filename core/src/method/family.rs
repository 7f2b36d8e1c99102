//! The per-method descriptor: what one class-smoothing method declares
//! about itself (name, help, which options fit, exactness, how it is built
//! on a device, its candidate for `--method auto`). Each method keeps its
//! descriptor in its folder `src/method/<m>/`, listed in the `FAMILIES` of
//! that folder's `mod.rs`; [`super::registry`] gathers them (build.rs finds
//! the folders), and spec parsing, select, auto, the CLI help and sweep
//! names iterate that list instead of naming methods.

use super::ClassSmoother;
use super::cost::Candidate;
use super::naive::cl::Variant;
use crate::device::{DeviceChoice, Member};
use crate::error::Result;
use crate::kernel::Kernel;

/// Which of the shared method options a family takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accepts {
    /// `--rank` and `--energy` (truncation of a separable plan).
    pub rank: bool,
    /// `--terms` (cosine terms of a DCT-5 plan).
    pub terms: bool,
    /// `--exact` and the sweep variant `exact`: a certified form exists.
    pub certifiable: bool,
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

/// What a checked `MethodSpec` hands its family to build from: the device
/// variant and the fast options. The family gets its settings, not the spec
/// that names it, so a descriptor does not depend on the spec type that
/// holds descriptors.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Settings {
    /// The device variant (naive's, also auto's naive candidate; the
    /// others ignore it).
    pub variant: Option<Variant>,
    pub options: FastOptions,
}

/// One class-smoothing method: everything the layers above need to know.
pub trait Family: Sync {
    /// The name users type (`--method`, sweeps, batch plans' `"method"`).
    fn name(&self) -> &'static str;

    /// What `--method`'s help says of it, e.g. `exact`.
    fn help(&self) -> &'static str;

    /// Which options fit.
    fn accepts(&self) -> Accepts;

    /// Whether its results are byte-identical to the exact baseline without
    /// `--exact`.
    fn is_exact(&self) -> bool;

    /// Where it stands in the lists users see (`--method`'s help, errors,
    /// sweeps), lowest first, a tie by name. The lowest is the default
    /// `--method` and the exact baseline: naive, 0. `auto`, which picks
    /// among the others, is 255.
    fn list_position(&self) -> u8 {
        100
    }

    /// The device variants it takes (the first is the default).
    fn variants(&self) -> &'static [Variant] {
        &[]
    }

    /// The smoother for `settings` on one device (`None`: the host).
    fn build(
        &self,
        settings: &Settings,
        member: Member,
        kernel: &Kernel,
    ) -> Result<Box<dyn ClassSmoother>>;

    /// Its candidate for `--method auto` on one device, with the options
    /// that fit it (`fast` filtered by [`Family::accepts`]); `None` where it
    /// is no candidate (auto itself, or a kernel it does not take).
    fn candidate(
        &self,
        _member: &Member,
        _variant: Option<Variant>,
        _kernel: &Kernel,
        _fast: &FastOptions,
    ) -> Result<Option<Candidate>> {
        Ok(None)
    }

    /// More lines for `smooth --explain` about `settings` on `device` for a
    /// `tile`-sided tile holding `classes` classes (auto: its cost model).
    fn explain(
        &self,
        _settings: &Settings,
        _device: &DeviceChoice,
        _kernel: &Kernel,
        _classes: usize,
        _tile: usize,
    ) -> Result<Option<String>> {
        Ok(None)
    }
}

/// `names` as prose: `a`, `a or b`, `a, b or c`.
pub fn either(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceChoice;
    use crate::method::select::smoother_for;
    use crate::method::{ClassTile, SmoothParams, policy};

    /// A new method is a smoother and its descriptor (docs/adding-a-method.md):
    /// this one keeps each centre class, on the host only.
    struct Centre;

    impl ClassSmoother for Centre {
        fn name(&self) -> String {
            "centre/host".into()
        }

        fn smooth(&self, tile: &ClassTile, _: &SmoothParams, out: &mut [u16]) -> Result<()> {
            let w = tile.output_width();
            for (i, o) in out.iter_mut().enumerate() {
                let c = tile.centre(i % w, i / w);
                *o = if c == tile.nodata() {
                    crate::classes::NO_CLASS
                } else {
                    c
                };
            }
            Ok(())
        }

        fn is_exact(&self) -> bool {
            false
        }
    }

    struct CentreFamily;

    static CENTRE: CentreFamily = CentreFamily;

    impl Family for CentreFamily {
        fn name(&self) -> &'static str {
            "centre"
        }

        fn help(&self) -> &'static str {
            "keeps the centre class"
        }

        fn accepts(&self) -> Accepts {
            Accepts::default()
        }

        fn is_exact(&self) -> bool {
            false
        }

        fn build(
            &self,
            _: &Settings,
            member: Member,
            _: &Kernel,
        ) -> Result<Box<dyn ClassSmoother>> {
            match member {
                None => Ok(Box::new(Centre)),
                Some(_) => crate::bail!(usage, "centre runs on the host", hint = "--device host"),
            }
        }
    }

    #[test]
    fn a_descriptor_is_all_the_layers_need() {
        use crate::method::spec::{Method, MethodSpec};
        let centre = Method::of(&CENTRE);
        assert_eq!(centre.to_string(), "centre");
        assert!(!centre.is_certifiable() && centre.variants().is_empty());
        // Unregistered, it is no name users can type.
        assert!("centre".parse::<Method>().is_err());
        // Its options are checked from its descriptor.
        let rank = FastOptions {
            rank: Some(1),
            ..FastOptions::default()
        };
        let e = MethodSpec::new(centre, None, rank).unwrap_err().to_string();
        assert!(e.starts_with("rank, energy and terms apply to"), "{e}");
        // select builds it through the descriptor.
        let kernel = crate::kernel::KernelSpec::Box { size: 3 }.build().unwrap();
        let spec = MethodSpec::plain(centre);
        let m = smoother_for(&spec, &DeviceChoice::Host, &kernel).unwrap();
        assert_eq!(m.name(), "centre/host");
        let classes = [0, 1, 2, 1, 0, 2, 2, 3, 1];
        let tile = ClassTile {
            width: 3,
            height: 3,
            halo: 1,
            n_classes: 3,
            classes: &classes,
        };
        let params = SmoothParams {
            kernel: &kernel,
            class_weights: &[1, 1, 1],
            fill_nodata: false,
            ties: policy::Ties::Centre,
            confidence: None,
        };
        let mut out = [9];
        m.smooth(&tile, &params, &mut out).unwrap();
        assert_eq!(out, [0]);
        // Nothing else has to learn its name: no explanation, no auto candidate.
        let member = None;
        let fast = FastOptions::default();
        assert!(
            CENTRE
                .candidate(&member, None, &kernel, &fast)
                .unwrap()
                .is_none()
        );
        let all = DeviceChoice::Host;
        assert!(
            CENTRE
                .explain(spec.settings(), &all, &kernel, 3, 64)
                .unwrap()
                .is_none()
        );
    }

    #[test]
    fn prose_lists() {
        assert_eq!(either(&[]), "");
        assert_eq!(either(&["svd"]), "svd");
        assert_eq!(either(&["svd", "dct5", "auto"]), "svd, dct5 or auto");
    }
}
