//! Sieve thresholds as the user gives them: a pixel count (`25`) or an area
//! (`25ha`, `1acre`, `0.5km2`, `2500m2`) turned into pixels with the size
//! of a pixel on the ground. Projected rasters use the geotransform in the
//! coordinate system's linear unit; geographic ones measure a pixel on the
//! ellipsoid at the raster's centre latitude.

use crate::bail;
use crate::error::{Error, Result, Setting};
use std::str::FromStr;

/// A threshold before the raster is known.
#[derive(Clone, Debug, PartialEq)]
pub enum Threshold {
    Pixels(u64),
    /// An area in square metres, with the text it came from.
    Area {
        square_metres: f64,
        text: String,
    },
}

/// Units of area and their size in square metres.
/// Longer names first: the first unit the text ends with is taken.
const UNITS: [(&str, f64); 9] = [
    ("km2", 1_000_000.0),
    ("km²", 1_000_000.0),
    ("m2", 1.0),
    ("m²", 1.0),
    ("ha", 10_000.0),
    ("acres", 4_046.856_422_4),
    ("acre", 4_046.856_422_4),
    ("ac", 4_046.856_422_4),
    ("px", 0.0),
];

const HINT: &str = "give a pixel count (e.g. 25) or an area: 25ha, 1acre, 0.5km2, 2500m2";

impl FromStr for Threshold {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let t = text.trim();
        let bad = |why: &str| Error::usage(format!("threshold '{text}': {why}")).hint(HINT);
        let lower = t.to_ascii_lowercase();
        let (number, unit) = match UNITS.iter().find(|(u, _)| lower.ends_with(u)) {
            Some(&(u, m2)) => (lower[..lower.len() - u.len()].trim(), Some(m2)),
            None => (lower.as_str(), None),
        };
        match unit {
            None | Some(0.0) => {
                let n: u64 = number
                    .parse()
                    .map_err(|_| bad("not a whole number of pixels nor an area"))?;
                if n == 0 {
                    return Err(bad("0 pixels removes nothing"));
                }
                Ok(Threshold::Pixels(n))
            }
            Some(m2) => {
                let v: f64 = number
                    .parse()
                    .map_err(|_| bad("not a number before the unit"))?;
                if !(v.is_finite() && v > 0.0) {
                    return Err(bad("the area must be positive"));
                }
                Ok(Threshold::Area {
                    square_metres: v * m2,
                    text: t.to_string(),
                })
            }
        }
    }
}

impl Threshold {
    /// The threshold in pixels: polygons of fewer pixels are removed. An
    /// area A over pixels of area a removes polygons of area below A, that
    /// is of fewer than ⌈A / a⌉ pixels (A / a itself when it is whole, up
    /// to rounding). `pixel_area` gives the pixel's area in m², or why the
    /// raster has none; it is only asked for an area.
    ///
    /// An area of at most one pixel removes nothing (every polygon has a
    /// pixel at least): it is refused with the area converted, or, with
    /// `allow_subpixel`, rounded up to 2 pixels (single pixels go) with a
    /// warning.
    pub fn pixels(
        &self,
        pixel_area: impl FnOnce() -> Result<f64>,
        allow_subpixel: bool,
    ) -> Result<u64> {
        match self {
            Threshold::Pixels(n) => Ok(*n),
            Threshold::Area {
                square_metres,
                text,
            } => {
                let a = pixel_area().map_err(|e| e.context(format!("threshold '{text}'")))?;
                let q = square_metres / a;
                let near = q.round();
                let n = if (q - near).abs() <= 1e-9 * q.max(1.0) {
                    near
                } else {
                    q.ceil()
                };
                if !(n.is_finite() && n < 1e18) {
                    bail!(
                        usage,
                        format!("threshold '{text}' is {q:e} pixels of {a} m²"),
                        hint = "give a smaller area"
                    );
                }
                if n >= 2.0 {
                    return Ok(n as u64);
                }
                let said = format!(
                    "threshold '{text}' is {q:.4} pixels of {a:.1} m² ({:.4} ha)",
                    a / 1e4
                );
                if allow_subpixel {
                    log::warn!(
                        "{said}: rounded up to 2 pixels (single pixels go) as {} asks",
                        Setting::AllowSubpixel
                    );
                    return Ok(2);
                }
                bail!(
                    usage,
                    format!("{said}: at most one pixel, so it removes nothing"),
                    hint = format!(
                        "give more than one pixel's area (over {:.1} m², {:.4} ha), or add {} to round it up to 2 pixels",
                        a,
                        a / 1e4,
                        Setting::AllowSubpixel
                    )
                )
            }
        }
    }
}

/// Area in m² of a pixel of a projected raster: `geo_transform` in a linear
/// unit of `metres_per_unit` metres.
pub fn projected_pixel_area(geo_transform: &[f64; 6], metres_per_unit: f64) -> f64 {
    let g = geo_transform;
    (g[1] * g[5] - g[2] * g[4]).abs() * metres_per_unit * metres_per_unit
}

/// Area in m² of a pixel of a geographic raster (`geo_transform` in
/// angular units of `radians_per_unit` radians) on the ellipsoid of
/// semi-axes `semi_major`, `semi_minor` at latitude `latitude` (in the same
/// angular unit): `M(φ) · N(φ) · cos φ · Δλ · Δφ` with the meridional and
/// prime-vertical radii of curvature.
pub fn geographic_pixel_area(
    geo_transform: &[f64; 6],
    radians_per_unit: f64,
    (semi_major, semi_minor): (f64, f64),
    latitude: f64,
) -> f64 {
    let phi = latitude * radians_per_unit;
    let e2 = 1.0 - (semi_minor / semi_major).powi(2);
    let w = (1.0 - e2 * phi.sin().powi(2)).sqrt();
    let m = semi_major * (1.0 - e2) / (w * w * w);
    let n = semi_major / w;
    let g = geo_transform;
    let cell = (g[1] * g[5] - g[2] * g[4]).abs() * radians_per_unit * radians_per_unit;
    m * n * phi.cos() * cell
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pixels_and_areas() {
        assert_eq!("25".parse::<Threshold>().unwrap(), Threshold::Pixels(25));
        assert_eq!("7px".parse::<Threshold>().unwrap(), Threshold::Pixels(7));
        let m2 = |s: &str| match s.parse::<Threshold>().unwrap() {
            Threshold::Area { square_metres, .. } => square_metres,
            other => panic!("{other:?}"),
        };
        assert_eq!(m2("25ha"), 250_000.0);
        assert_eq!(m2("0.5km2"), 500_000.0);
        assert_eq!(m2("2500m2"), 2500.0);
        assert_eq!(m2("1 acre"), 4_046.856_422_4);
        assert_eq!(m2("2acres"), 2.0 * 4_046.856_422_4);
    }

    #[test]
    fn bad_thresholds_are_one_line_errors() {
        for bad in [
            "",
            "abc",
            "-5",
            "0",
            "1.5",
            "10parsecs",
            "0ha",
            "-1ha",
            "nanha",
            "infha",
            "ha",
        ] {
            let e = bad.parse::<Threshold>().unwrap_err().to_string();
            assert!(
                e.contains("threshold") && e.contains("hint") && !e.contains('\n'),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn areas_become_the_pixels_of_that_area() {
        let a = |s: &str, px: f64| {
            s.parse::<Threshold>()
                .unwrap()
                .pixels(|| Ok(px), false)
                .unwrap()
        };
        // 30 m pixels: 25 ha is 277.8 pixels, so polygons up to 277 go.
        assert_eq!(a("25ha", 900.0), 278);
        // Whole quotients are kept as they are, despite rounding.
        assert_eq!(a("2500m2", 100.0), 25);
        assert_eq!(a("0.18ha", 900.0), 2);
        let none = || Err(Error::input("no size"));
        assert!(
            "1ha"
                .parse::<Threshold>()
                .unwrap()
                .pixels(none, false)
                .is_err()
        );
        assert_eq!(Threshold::Pixels(3).pixels(none, false).unwrap(), 3);
    }

    #[test]
    fn an_area_of_at_most_a_pixel_is_refused_or_rounded_up() {
        // 500 m pixels (25 ha): 1 ha removes nothing.
        for small in ["1ha", "25ha", "0.09ha"] {
            let t: Threshold = small.parse().unwrap();
            let e = t.pixels(|| Ok(250_000.0), false).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
            assert!(
                e.contains(&format!("threshold '{small}' is"))
                    && e.contains("pixels of 250000.0 m² (25.0000 ha)")
                    && e.contains("removes nothing")
                    && e.contains("add allow-subpixel"),
                "{e}"
            );
            assert_eq!(t.pixels(|| Ok(250_000.0), true).unwrap(), 2, "{small}");
        }
        // Just over a pixel: single pixels go.
        assert_eq!(
            "26ha"
                .parse::<Threshold>()
                .unwrap()
                .pixels(|| Ok(250_000.0), false)
                .unwrap(),
            2
        );
    }

    #[test]
    fn geographic_pixels_shrink_towards_the_poles() {
        let gt = [0.0, 1.0 / 120.0, 0.0, 0.0, 0.0, -1.0 / 120.0];
        let deg = std::f64::consts::PI / 180.0;
        let wgs84 = (6_378_137.0, 6_356_752.314_245);
        let equator = geographic_pixel_area(&gt, deg, wgs84, 0.0);
        let sixty = geographic_pixel_area(&gt, deg, wgs84, 60.0);
        // About 927 m by 921 m at the equator (30 arc-seconds).
        assert!(
            (equator - 927.6 * 921.7).abs() / equator < 2e-3,
            "{equator}"
        );
        assert!((sixty / equator - 0.5).abs() < 0.01, "{sixty}");
    }
}
