//! Bayer demosaicing: one mosaic band (Byte or UInt16) to three bands R, G, B.
//!
//! Patterns are named by the first two rows' colours from the raster's top
//! left: `RGGB` is R G / G B. OpenCV names a pattern by the second row's
//! second and third pixels instead, so `RGGB` is its `BayerBG`, `BGGR` its
//! `BayerRG`, `GRBG` its `BayerGB` and `GBRG` its `BayerGR`; its `…2RGB`
//! codes give our band order (`…2BGR` the reverse).
//!
//! - `bilinear`: OpenCV's `COLOR_Bayer??2RGB`: the missing colours are the
//!   means of the 2 or 4 nearest samples of that colour, rounded half up.
//! - `ea`: OpenCV's edge-aware `COLOR_Bayer??2RGB_EA`: as bilinear, but
//!   green at a red or blue site is the mean of the pair (left/right or
//!   up/down) across which the mosaic changes least.
//!
//!   Both follow OpenCV at the edges: the outermost rows and columns copy
//!   their inner neighbours (output (x, y) is the interior result at
//!   (clamp(x, 1, w−2), clamp(y, 1, h−2))), and rasters under 3 × 3 give 0.
//! - `mhc`: Malvar, He and Cutler's 5 × 5 gradient-corrected linear filters
//!   ("High-quality linear interpolation for demosaicing of Bayer-patterned
//!   color images", ICASSP 2004), in integers (sixteenths, rounded half up,
//!   saturated), over a reflect101 border (which keeps the pattern's phase).
//!
//! The `--border` mode does not apply: each method has its own edge rule.
//! Nodata: where the centre sample is nodata, all three bands are; missing
//! neighbours take the centre's value.

use super::border::{BorderMode, Win};
use super::par_band_rows;
use crate::bail;
use crate::error::Result;
use crate::pixel::{Pixel, Plane, SampleType};

/// A Bayer layout: the colour (0 R, 1 G, 2 B) at `[y % 2][x % 2]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bayer(pub [[u8; 2]; 2]);

impl Bayer {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(Bayer(match s.to_ascii_uppercase().as_str() {
            "RGGB" => [[0, 1], [1, 2]],
            "BGGR" => [[2, 1], [1, 0]],
            "GRBG" => [[1, 0], [2, 1]],
            "GBRG" => [[1, 2], [0, 1]],
            _ => bail!(
                usage,
                format!("Bayer pattern '{s}' is unknown"),
                hint = "use RGGB, BGGR, GRBG or GBRG (the first two rows from the top left)"
            ),
        }))
    }

    /// The colour at image position (x, y).
    #[inline]
    pub fn at(&self, x: i64, y: i64) -> u8 {
        self.0[(y & 1) as usize][(x & 1) as usize]
    }
}

/// How missing colours are interpolated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Bilinear = 0,
    EdgeAware = 1,
    Mhc = 2,
}

/// A demosaicing op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demosaic {
    pub pattern: Bayer,
    pub method: Method,
}

impl Demosaic {
    pub fn new(pattern: &str, method: Option<&str>) -> Result<Self> {
        let method = match method {
            None | Some("bilinear") => Method::Bilinear,
            Some("ea") => Method::EdgeAware,
            Some("mhc") => Method::Mhc,
            Some(m) => bail!(
                usage,
                format!("demosaic method '{m}' is unknown"),
                hint = "use bilinear, ea or mhc"
            ),
        };
        Ok(Demosaic {
            pattern: Bayer::parse(pattern)?,
            method,
        })
    }

    /// The reach around an output pixel.
    pub fn radius(&self) -> usize {
        2
    }

    /// Refuses inputs other than one Byte or UInt16 band.
    pub fn check(&self, bands: usize, t: SampleType) -> Result<()> {
        if bands != 1 {
            bail!(
                input,
                format!("demosaic takes one mosaic band, the input has {bands}"),
                hint = "select the band with gdal_translate -b N"
            );
        }
        if !matches!(t, SampleType::U8 | SampleType::U16) {
            bail!(
                input,
                format!("demosaic takes Byte or UInt16 mosaics, not {}", t.name()),
                hint = "convert with gdal_translate -ot UInt16"
            );
        }
        Ok(())
    }

    /// Demosaics `planes[0]` (window `have` of an `image`-sized raster,
    /// holding every in-raster pixel `target` reads) into R, G, B planes of
    /// window `target`; `nd` is the input's nodata value.
    pub fn apply<T: Pixel>(
        &self,
        planes: &[Plane<T>],
        have: Win,
        image: (usize, usize),
        target: Win,
        nd: Option<f64>,
    ) -> Vec<Plane<T>> {
        let plane = &planes[0];
        let nd = nd.and_then(T::from_f64_exact);
        let (w, h) = (image.0 as i64, image.1 as i64);
        let edge_copy = self.method != Method::Mhc;
        let tiny = edge_copy && (w < 3 || h < 3);
        // The centre an output coordinate reads, and the local indices of
        // the five samples around it (reflect101), worked out once per
        // column and per row. Bilinear and edge-aware read only ±1 (their
        // ±2 entries repeat ±1: the window need not hold ±2 around a
        // centre clamped inside).
        let centre = |c: i64, len: i64| {
            if edge_copy {
                c.clamp(1, (len - 2).max(1))
            } else {
                c
            }
        };
        let around = |c: i64, len: i64, origin: i64| -> [usize; 5] {
            let m = BorderMode::Reflect101;
            let reach = if edge_copy { 1 } else { 2 };
            std::array::from_fn(|k| {
                (m.map(c + (k as i64 - 2).clamp(-reach, reach), len)
                    .expect("reflect101 maps inside")
                    - origin) as usize
            })
        };
        let cols: Vec<(i64, [usize; 5])> = (0..target.width as i64)
            .map(|dx| {
                let cx = centre(target.x + dx, w);
                (cx, around(cx, w, have.x))
            })
            .collect();
        par_band_rows(target.width, target.height, 3, |dy, out| {
            let cy = centre(target.y + dy as i64, h);
            let rows = around(cy, h, have.y).map(|r| r * plane.width);
            for (dx, &(cx, cols)) in cols.iter().enumerate() {
                let set = |out: &mut [T], rgb: [T; 3]| {
                    for (b, v) in rgb.into_iter().enumerate() {
                        out[b * target.width + dx] = v;
                    }
                };
                if tiny {
                    set(out, [T::default(); 3]);
                    continue;
                }
                let get = |ox: i64, oy: i64| -> T {
                    plane.data[rows[(oy + 2) as usize] + cols[(ox + 2) as usize]]
                };
                let c = get(0, 0);
                if nd.is_some_and(|nd| c.same(nd)) {
                    set(out, [c; 3]);
                    continue;
                }
                let s = |ox: i64, oy: i64| -> i64 {
                    let v = get(ox, oy);
                    if nd.is_some_and(|nd| v.same(nd)) {
                        c.to_i32() as i64
                    } else {
                        v.to_i32() as i64
                    }
                };
                let rgb = interpolate(self.method, self.pattern, cx, cy, s);
                set(out, rgb.map(|v| T::from_f32(v as f32)));
            }
        })
    }
}

/// R, G, B at mosaic position (x, y), from samples `s(dx, dy)` around it.
/// Shared, operation for operation, with `kernels/filter_demosaic.cl`.
#[inline(always)]
pub fn interpolate(
    method: Method,
    pattern: Bayer,
    x: i64,
    y: i64,
    s: impl Fn(i64, i64) -> i64,
) -> [i64; 3] {
    let c = pattern.at(x, y) as usize;
    let (n, so, we, ea) = (s(0, -1), s(0, 1), s(-1, 0), s(1, 0));
    let diag = s(-1, -1) + s(1, -1) + s(-1, 1) + s(1, 1);
    let mut rgb = [0i64; 3];
    rgb[c] = s(0, 0);
    if method == Method::Mhc {
        let c0 = s(0, 0);
        let (n2, s2, w2, e2) = (s(0, -2), s(0, 2), s(-2, 0), s(2, 0));
        let r = |v: i64| (v + 8) >> 4;
        if c == 1 {
            let hc = pattern.at(x + 1, y) as usize;
            rgb[hc] = r(10 * c0 + 8 * (we + ea) - 2 * (w2 + e2) - 2 * diag + (n2 + s2));
            rgb[2 - hc] = r(10 * c0 + 8 * (n + so) - 2 * (n2 + s2) - 2 * diag + (w2 + e2));
        } else {
            rgb[1] = r(8 * c0 + 4 * (n + so + we + ea) - 2 * (n2 + s2 + w2 + e2));
            rgb[2 - c] = r(12 * c0 + 4 * diag - 3 * (n2 + s2 + w2 + e2));
        }
        return rgb;
    }
    if c == 1 {
        let hc = pattern.at(x + 1, y) as usize;
        rgb[hc] = (we + ea + 1) >> 1;
        rgb[2 - hc] = (n + so + 1) >> 1;
    } else {
        rgb[1] = if method == Method::EdgeAware {
            if (we - ea).abs() > (so - n).abs() {
                (n + so + 1) >> 1
            } else {
                (we + ea + 1) >> 1
            }
        } else {
            (n + so + we + ea + 2) >> 2
        };
        rgb[2 - c] = (diag + 2) >> 2;
    }
    rgb
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(d: Demosaic, p: Plane<u8>) -> Vec<Plane<u8>> {
        let (w, h) = (p.width, p.height);
        let all = Win::new(0, 0, w, h);
        d.apply(&[p], all, (w, h), all, None)
    }

    #[test]
    fn parses_patterns_and_methods() {
        assert_eq!(Bayer::parse("rggb").unwrap().at(1, 1), 2);
        assert!(Bayer::parse("RGBG").is_err());
        assert!(Demosaic::new("RGGB", Some("vng")).is_err());
        assert_eq!(
            Demosaic::new("GBRG", Some("mhc")).unwrap().method,
            Method::Mhc
        );
    }

    #[test]
    fn flat_colours_come_back() {
        // An RGGB mosaic of one colour gives that colour everywhere, by every method.
        let (r, g, b) = (200u8, 90u8, 30u8);
        let data = (0..7 * 6)
            .map(|i| match ((i / 7) % 2, (i % 7) % 2) {
                (0, 0) => r,
                (1, 1) => b,
                _ => g,
            })
            .collect();
        let p = Plane::new(7, 6, data);
        for m in ["bilinear", "ea", "mhc"] {
            let out = whole(Demosaic::new("RGGB", Some(m)).unwrap(), p.clone());
            for (band, want) in out.iter().zip([r, g, b]) {
                assert!(band.data.iter().all(|&v| v == want), "{m}");
            }
        }
    }

    #[test]
    fn matches_opencv_on_a_small_case() {
        // cv2.cvtColor(s, cv2.COLOR_BayerBG2RGB) and …_EA of this 4×3 RGGB mosaic.
        let s = Plane::new(
            4,
            3,
            vec![10u8, 200, 30, 180, 90, 5, 250, 40, 60, 120, 70, 15],
        );
        let bil = whole(Demosaic::new("RGGB", None).unwrap(), s.clone());
        let ea = whole(Demosaic::new("RGGB", Some("ea")).unwrap(), s);
        let flat = |p: &[Plane<u8>]| p.iter().map(|b| b.data.clone()).collect::<Vec<_>>();
        assert_eq!(
            flat(&bil),
            BILINEAR.iter().map(|b| b.to_vec()).collect::<Vec<_>>()
        );
        assert_eq!(flat(&ea), EA.iter().map(|b| b.to_vec()).collect::<Vec<_>>());
    }

    const BILINEAR: [[u8; 12]; 3] = [
        [43, 43, 50, 50, 43, 43, 50, 50, 43, 43, 50, 50],
        [165, 165, 250, 250, 165, 165, 250, 250, 165, 165, 250, 250],
        [5, 5, 23, 23, 5, 5, 23, 23, 5, 5, 23, 23],
    ];
    const EA: [[u8; 12]; 3] = [
        [43, 43, 50, 50, 43, 43, 50, 50, 43, 43, 50, 50],
        [160, 160, 250, 250, 160, 160, 250, 250, 160, 160, 250, 250],
        [5, 5, 23, 23, 5, 5, 23, 23, 5, 5, 23, 23],
    ];
}
