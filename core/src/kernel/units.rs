//! Kernel lengths in map units: `gaussian:250m`, `disc:1km`, `box:90m` are
//! turned into the pixel spec they stand for with the raster's pixel width
//! ([`PixelWidth`]: metres per pixel along a row; for a geographic CRS,
//! along the parallel at the raster's centre latitude, on its ellipsoid).
//!
//! σ becomes σ/width pixels (not rounded); a disc's radius is rounded to
//! whole pixels, a box's side to the nearest odd number of pixels (halves
//! up). Lengths without a unit (or with `px`) are pixels, as before.

use super::KernelSpec;
use crate::bail;
use crate::error::{Error, Result, Setting};
use std::str::FromStr;

/// A kernel as `smooth --kernel` takes it.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelArg {
    /// Lengths in pixels (any kernel, files included).
    Pixels(KernelSpec),
    /// A Gaussian σ, a box side or a disc radius: `length` metres, or
    /// kilometres where `km` (kept as given, so it is written back so).
    Metres {
        kind: MetricKind,
        length: f64,
        km: bool,
    },
}

/// The kernels whose length may be given in metres.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    Gaussian,
    Box,
    Disc,
}

/// A raster's pixel width in metres, and how it was found (for `--explain`).
#[derive(Clone, Debug, PartialEq)]
pub struct PixelWidth {
    pub metres: f64,
    pub how: String,
}

impl PixelWidth {
    /// A projected raster's: `dx` (the geotransform's pixel width) in a
    /// linear unit of `metres_per_unit` metres named `unit`.
    pub fn projected(dx: f64, metres_per_unit: f64, unit: &str) -> Self {
        let metres = dx.abs() * metres_per_unit;
        PixelWidth {
            metres,
            how: format!("pixel width {} {unit}", dx.abs()),
        }
    }

    /// A geographic raster's: `dlon` degrees of longitude at `latitude`
    /// (degrees) on the ellipsoid of semi-axes `a`, `b`: the parallel's
    /// radius N(φ)·cos φ times the angle.
    pub fn geographic(dlon: f64, latitude: f64, (a, b): (f64, f64), ellipsoid: &str) -> Self {
        let phi = latitude.to_radians();
        let e2 = 1.0 - (b / a).powi(2);
        let n = a / (1.0 - e2 * phi.sin().powi(2)).sqrt();
        let metres = n * phi.cos() * dlon.abs().to_radians();
        PixelWidth {
            metres,
            how: format!(
                "pixel width {}° = {metres:.1} m along the parallel at the centre latitude {latitude:.4}° on the {ellipsoid} ellipsoid",
                dlon.abs()
            ),
        }
    }
}

/// `250m` → (250, false), `1.5km` → (1.5, true); `None` when the text
/// has no metric unit.
fn metres(text: &str) -> Option<Result<(f64, bool)>> {
    let t = text.trim().to_ascii_lowercase();
    let (number, scale) = if let Some(n) = t.strip_suffix("km") {
        (n, 1000.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 1.0)
    } else {
        return None;
    };
    Some(match number.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v * scale > 0.0 && (v * scale).is_finite() => {
            Ok((v, scale > 1.0))
        }
        _ => Err(Error::usage(format!("'{text}' is not a length > 0"))
            .hint("lengths are pixels (2.5), metres (250m) or kilometres (1km)")),
    })
}

impl FromStr for KernelArg {
    type Err = Error;

    fn from_str(spec: &str) -> Result<Self> {
        let Some((kind, arg)) = spec.split_once(':') else {
            return spec.parse().map(KernelArg::Pixels);
        };
        let kind_name = kind.trim().to_ascii_lowercase();
        let metric = match kind_name.as_str() {
            "gaussian" | "gauss" => Some(MetricKind::Gaussian),
            "box" => Some(MetricKind::Box),
            "disc" | "disk" => Some(MetricKind::Disc),
            _ => None,
        };
        if let Some(kind) = metric {
            if let Some(m) = metres(arg) {
                let (length, km) = m.map_err(|e| e.context(format!("kernel spec '{spec}'")))?;
                return Ok(KernelArg::Metres { kind, length, km });
            }
            if let Some(px) = arg.trim().strip_suffix("px") {
                return format!("{kind_name}:{px}").parse().map(KernelArg::Pixels);
            }
        }
        spec.parse().map(KernelArg::Pixels)
    }
}

impl std::fmt::Display for KernelArg {
    /// As `--kernel` takes it, in the unit it was given.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelArg::Pixels(spec) => spec.fmt(f),
            KernelArg::Metres { kind, length, km } => {
                let kind = match kind {
                    MetricKind::Gaussian => "gaussian",
                    MetricKind::Box => "box",
                    MetricKind::Disc => "disc",
                };
                let unit = if *km { "km" } else { "m" };
                write!(f, "{kind}:{length}{unit}")
            }
        }
    }
}

impl KernelArg {
    /// Whether the pixel width is needed to build it.
    pub fn needs_pixel_width(&self) -> bool {
        matches!(self, KernelArg::Metres { .. })
    }

    /// The spec in pixels, with the conversion said in words for a length
    /// in metres (`pixel` is the raster's width; only asked for then).
    pub fn in_pixels(
        &self,
        pixel: impl FnOnce() -> Result<PixelWidth>,
    ) -> Result<(KernelSpec, Option<String>)> {
        let (kind, metres) = match self {
            KernelArg::Pixels(spec) => return Ok((spec.clone(), None)),
            KernelArg::Metres { kind, length, km } => {
                (*kind, if *km { length * 1000.0 } else { *length })
            }
        };
        let pixel = pixel()?;
        let p = pixel.metres;
        if !(p.is_finite() && p > 0.0) {
            bail!(
                usage,
                "the raster's pixel width is not a length",
                hint = "give the kernel in pixels (e.g. gaussian:2.5)"
            );
        }
        let n = metres / p;
        let (spec, said) = match kind {
            MetricKind::Gaussian => (
                KernelSpec::Gaussian {
                    sigma: n,
                    size: None,
                },
                format!("σ = {metres} m / {p:.4} m = {n:.4} px"),
            ),
            MetricKind::Box => {
                let side = 2 * ((n - 1.0) / 2.0).round().max(0.0) as usize + 1;
                (
                    KernelSpec::Box { size: side },
                    format!(
                        "side = {metres} m / {p:.4} m = {n:.4} px, to the nearest odd: {side} px"
                    ),
                )
            }
            MetricKind::Disc => {
                let r = n.round() as usize;
                (
                    KernelSpec::Disc { radius: r },
                    format!("radius = {metres} m / {p:.4} m = {n:.4} px, rounded: {r} px"),
                )
            }
        };
        let said = format!("kernel in metres: {said} ({})", pixel.how);
        Ok((spec, Some(said)))
    }

    /// The kernel a user asked for, in pixels, with the side `size` of a
    /// Gaussian (`--kernel-size`) applied. A kernel that comes out 1x1
    /// smooths nothing (the output would be a copy), so it is refused with
    /// the length as converted; with `allow_subpixel` it is rounded up to
    /// the smallest kernel that smooths (σ = 1 px, a 3x3 box, a disc of
    /// radius 1) and `warning` says so.
    pub fn resolve(
        &self,
        size: Option<usize>,
        pixel: impl FnOnce() -> Result<PixelWidth>,
        allow_subpixel: bool,
    ) -> Result<Resolved> {
        let mut width = None;
        let (spec, conversion) = self.in_pixels(|| {
            let w = pixel()?;
            width = Some(w.metres);
            Ok(w)
        })?;
        let spec = spec.with_size(size)?;
        let side = match &spec {
            // A σ that is no length is refused by the kernel's own checks.
            KernelSpec::Gaussian { sigma, .. } if !(sigma.is_finite() && *sigma > 0.0) => 0,
            KernelSpec::Gaussian { sigma, size } => {
                size.unwrap_or(2 * (3.0 * sigma).floor().min(1e6) as usize + 1)
            }
            KernelSpec::Box { size } => *size,
            KernelSpec::Disc { radius } => 2 * radius + 1,
            KernelSpec::File { .. } => spec.build()?.size(),
        };
        if side != 1 {
            return Ok(Resolved {
                spec,
                conversion,
                warning: None,
            });
        }
        let what = conversion
            .clone()
            .unwrap_or_else(|| format!("kernel {spec}"));
        // Rounded up to the smallest kernel that changes pixels: a σ of
        // one pixel (a 3x3 Gaussian of σ = 1/3 px gives its centre 98 % of
        // the weight and changes none), a 3x3 box, a disc of radius 1.
        let smallest = match &spec {
            KernelSpec::Gaussian { sigma, size } => KernelSpec::Gaussian {
                sigma: sigma.max(1.0),
                size: size.map(|n| n.max(3)),
            },
            KernelSpec::Disc { .. } => KernelSpec::Disc { radius: 1 },
            _ => KernelSpec::Box { size: 3 },
        };
        if allow_subpixel {
            let n = smallest.build()?.size();
            return Ok(Resolved {
                warning: Some(format!(
                    "{what}: a 1x1 kernel, rounded up to {smallest} ({n}x{n}) as {} asks",
                    Setting::AllowSubpixel
                )),
                spec: smallest,
                conversion,
            });
        }
        let least = match (&spec, width) {
            (KernelSpec::Gaussian { .. }, Some(p)) => format!("σ ≥ 1/3 px ({:.1} m)", p / 3.0),
            (KernelSpec::Gaussian { .. }, None) => "σ ≥ 1/3 px".to_string(),
            (KernelSpec::Disc { .. }, Some(p)) => format!("a radius ≥ 0.5 px ({:.1} m)", p / 2.0),
            (KernelSpec::Disc { .. }, None) => "a radius ≥ 1 px".to_string(),
            (_, Some(p)) => format!("a side ≥ 2 px ({:.1} m)", 2.0 * p),
            (_, None) => "a side ≥ 3 px".to_string(),
        };
        bail!(
            usage,
            format!("{what}: a 1x1 kernel, which smooths nothing (the output would be a copy)"),
            hint = format!(
                "give {least}, or add {} to round it up to the smallest kernel that smooths",
                Setting::AllowSubpixel
            )
        )
    }
}

/// A user's kernel in pixels ([`KernelArg::resolve`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub spec: KernelSpec,
    /// How a length in metres became pixels.
    pub conversion: Option<String>,
    /// Set when a sub-pixel kernel was rounded up.
    pub warning: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn width(m: f64) -> impl FnOnce() -> Result<PixelWidth> {
        move || Ok(PixelWidth::projected(m, 1.0, "metre"))
    }

    fn in_pixels(spec: &str, m: f64) -> KernelSpec {
        spec.parse::<KernelArg>()
            .unwrap()
            .in_pixels(width(m))
            .unwrap()
            .0
    }

    #[test]
    fn metres_become_the_pixel_equivalent() {
        assert_eq!(
            in_pixels("gaussian:250m", 100.0),
            "gaussian:2.5".parse().unwrap()
        );
        assert_eq!(in_pixels("box:90m", 30.0), KernelSpec::Box { size: 3 });
        assert_eq!(in_pixels("box:100m", 30.0), KernelSpec::Box { size: 3 });
        assert_eq!(in_pixels("box:120m", 30.0), KernelSpec::Box { size: 5 });
        assert_eq!(in_pixels("box:60m", 30.0), KernelSpec::Box { size: 3 });
        assert_eq!(in_pixels("disc:1km", 30.0), KernelSpec::Disc { radius: 33 });
        assert_eq!(
            in_pixels("disc:0.09KM", 30.0),
            KernelSpec::Disc { radius: 3 }
        );
        // Pixels stay pixels, with or without `px`; the width is not asked for.
        let no_width = || -> Result<PixelWidth> { panic!("asked") };
        let arg: KernelArg = "gaussian:2.5px".parse().unwrap();
        assert!(!arg.needs_pixel_width());
        assert_eq!(
            arg.in_pixels(no_width).unwrap().0,
            "gaussian:2.5".parse().unwrap()
        );
        assert_eq!(in_pixels("disc:3", 30.0), KernelSpec::Disc { radius: 3 });
    }

    /// What a plan stores (`Display`) parses back to the same kernel.
    #[test]
    fn kernels_write_as_they_parse() {
        for (given, written) in [
            ("gaussian:1.5km", "gaussian:1.5km"),
            ("box:90m", "box:90m"),
            ("disc:0.09KM", "disc:0.09km"),
            ("gaussian:0.25 km", "gaussian:0.25km"),
            ("gaussian:2500m", "gaussian:2500m"),
            ("gaussian:2.5", "gaussian:2.5"),
            ("gaussian:2.5px", "gaussian:2.5"),
            ("disc:3", "disc:3"),
        ] {
            let arg: KernelArg = given.parse().unwrap();
            assert_eq!(arg.to_string(), written, "{given}");
            assert_eq!(written.parse::<KernelArg>().unwrap(), arg, "{given}");
        }
    }

    #[test]
    fn bad_lengths_are_one_line_errors() {
        for bad in ["gaussian:-3m", "box:km", "disc:0m", "gaussian:xm"] {
            let e = bad.parse::<KernelArg>().unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("hint"), "{e}");
        }
        let missing = "gaussian:250m"
            .parse::<KernelArg>()
            .unwrap()
            .in_pixels(|| Err(Error::input("no georeferencing")));
        assert!(missing.is_err());
        // Below a pixel: no smoothing, refused with the length converted.
        for (tiny, least) in [
            ("box:40m", "a side ≥ 2 px (60.0 m)"),
            ("disc:14m", "a radius ≥ 0.5 px (15.0 m)"),
            ("gaussian:9m", "σ ≥ 1/3 px (10.0 m)"),
        ] {
            let arg = tiny.parse::<KernelArg>().unwrap();
            let e = arg.resolve(None, width(30.0), false).unwrap_err();
            let e = e.to_string();
            assert!(!e.contains('\n'), "{e}");
            assert!(
                e.contains("1x1") && e.contains("/ 30.0000 m") && e.contains(least),
                "{e}"
            );
            assert!(e.contains("add allow-subpixel"), "{e}");
        }
        for tiny in ["gaussian:0.2", "box:1", "disc:0"] {
            let arg = tiny.parse::<KernelArg>().unwrap();
            let e = arg.resolve(None, width(30.0), false).unwrap_err();
            assert!(
                e.to_string().contains(&format!("kernel {tiny}: a 1x1")),
                "{e}"
            );
        }
        let sized = "gaussian:2".parse::<KernelArg>().unwrap();
        assert!(sized.resolve(Some(1), width(30.0), false).is_err());
        // Not a sub-pixel length: the kernel's own message.
        let zero = "gaussian:0".parse::<KernelArg>().unwrap();
        assert_eq!(
            zero.resolve(None, width(30.0), false).unwrap().spec,
            KernelSpec::Gaussian {
                sigma: 0.0,
                size: None
            }
        );
    }

    #[test]
    fn allow_subpixel_rounds_up_to_the_smallest_kernel_that_smooths() {
        let cases = [
            ("gaussian:100m", 500.0, "gaussian:1", 7),
            ("gaussian:0.2", 1.0, "gaussian:1", 7),
            ("disc:14m", 30.0, "disc:1", 3),
            ("box:40m", 30.0, "box:3", 3),
        ];
        for (given, w, want, side) in cases {
            let arg = given.parse::<KernelArg>().unwrap();
            let r = arg.resolve(None, width(w), true).unwrap();
            assert_eq!(r.spec.to_string(), want, "{given}");
            assert_eq!(r.spec.build().unwrap().size(), side, "{given}");
            let warning = r.warning.expect("a warning");
            let said = format!("rounded up to {want} ({side}x{side})");
            assert!(warning.contains(&said), "{warning}");
        }
        let sized = "gaussian:2".parse::<KernelArg>().unwrap();
        let r = sized.resolve(Some(1), width(30.0), true).unwrap();
        assert_eq!(r.spec.to_string(), "gaussian:2 size 3");
        // A kernel that smooths has no warning.
        let r = "gaussian:250m".parse::<KernelArg>().unwrap();
        assert!(
            r.resolve(None, width(100.0), true)
                .unwrap()
                .warning
                .is_none()
        );
    }

    #[test]
    fn geographic_width_follows_the_parallel() {
        let wgs84 = (6_378_137.0, 6_356_752.314_245_179);
        // 1° of longitude: 111 319.49 m at the equator, 78 846.8 m at 45°,
        // 0 at the pole.
        let eq = PixelWidth::geographic(1.0, 0.0, wgs84, "WGS 84");
        assert!((eq.metres - 111_319.49).abs() < 0.01, "{}", eq.metres);
        let mid = PixelWidth::geographic(1.0, 45.0, wgs84, "WGS 84");
        assert!((mid.metres - 78_846.8).abs() < 0.1, "{}", mid.metres);
        assert!(PixelWidth::geographic(1.0, 90.0, wgs84, "WGS 84").metres < 1e-6);
        assert!(mid.how.contains("45.0000°"));
    }
}
