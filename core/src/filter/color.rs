//! Colour conversions of the first three bands, read as R, G, B (GDAL's
//! band order of an RGB raster), as OpenCV's `cvtColor` with the `RGB2…`
//! codes computes them (OpenCV's images are usually B, G, R: our band 1 is
//! its channel 2 there, so `COLOR_BGR2…` on a `cv2.imread` image equals
//! these on the same file read band by band).
//!
//! - `gray`: one band, Y = 0.299 R + 0.587 G + 0.114 B.
//! - `ycbcr`: three bands **Y, Cb, Cr** (the order the name says, and the
//!   order of JPEG and of GDAL's YCbCr photometric); OpenCV's
//!   `COLOR_RGB2YCrCb` gives the same values as Y, Cr, Cb.
//!   Cr = (R − Y)·0.713 + δ, Cb = (B − Y)·0.564 + δ, δ = 128, 32768 or 0.5.
//! - `hsv`: three bands H, S, V; Byte as OpenCV's 8-bit (H in 0..180, S and
//!   V in 0..255, through its division tables), Float32 as OpenCV's float
//!   conversion (H in degrees 0..360, S in 0..1, V as given).
//!
//! Byte and UInt16 use OpenCV's fixed-point coefficients (gray 15 bits,
//! YCbCr 14 bits, rounded half up), so they are identical to it. Float32
//! sums use fused multiply-adds in the order OpenCV's vector code uses on
//! CPUs with FMA (its scalar code for row ends rounds differently, so
//! there Float32 may differ from it in the last bit). Int16 (which `cvtColor` does not take) is refused, as is
//! UInt16 for `hsv`. Bands after the third are ignored; a pixel is nodata
//! where any of its first three bands is.

use super::{par_band_rows, per_pixel};
use crate::bail;
use crate::error::Result;
use crate::pixel::{Pixel, Plane, SampleType};

/// A colour conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    Gray = 0,
    YCbCr = 1,
    Hsv = 2,
}

/// Gray of 8- and 16-bit samples: coefficients of 2¹⁵.
pub const GRAY15: [i64; 3] = [9798, 19235, 3735];
/// Y of YCbCr: coefficients of 2¹⁴, then the Cr and Cb factors.
pub const Y14: [i64; 3] = [4899, 9617, 1868];
pub const CR14: i64 = 11682;
pub const CB14: i64 = 9241;
/// Float32 coefficients: R, G, B of Y, then Cr, Cb.
pub const YF: [f32; 5] = [0.299, 0.587, 0.114, 0.713, 0.564];
/// Fixed-point bits of OpenCV's 8-bit HSV division tables.
const HSV_SHIFT: i64 = 12;

impl Color {
    pub fn out_bands(self) -> usize {
        match self {
            Color::Gray => 1,
            Color::YCbCr | Color::Hsv => 3,
        }
    }

    /// Refuses band counts and sample types the conversion does not take.
    pub fn check(self, bands: usize, t: SampleType) -> Result<()> {
        let name = self.name();
        if bands < 3 {
            bail!(
                usage,
                format!("{name} needs three bands (R, G, B), the input has {bands}"),
                hint = "give an RGB raster"
            );
        }
        let ok = match self {
            Color::Gray | Color::YCbCr => t != SampleType::I16,
            Color::Hsv => matches!(t, SampleType::U8 | SampleType::F32),
        };
        if !ok {
            bail!(
                input,
                format!("{name} does not take {} samples", t.name()),
                hint = match self {
                    Color::Hsv => "convert to Byte or Float32 with gdal_translate -ot",
                    _ => "convert to Byte, UInt16 or Float32 with gdal_translate -ot",
                }
            );
        }
        Ok(())
    }

    pub fn name(self) -> &'static str {
        match self {
            Color::Gray => "gray",
            Color::YCbCr => "ycbcr",
            Color::Hsv => "hsv",
        }
    }

    /// OpenCV's 8-bit HSV tables: ⌊255·2¹²/i⌉ (S) and ⌊180·2¹²/(6i)⌉ (H),
    /// rounded half to even, 0 at i = 0.
    pub fn hsv_tables() -> ([i32; 256], [i32; 256]) {
        let (mut s, mut h) = ([0i32; 256], [0i32; 256]);
        for i in 1..256 {
            s[i] = (((255 << HSV_SHIFT) as f64) / i as f64).round_ties_even() as i32;
            h[i] = (((180 << HSV_SHIFT) as f64) / (6.0 * i as f64)).round_ties_even() as i32;
        }
        (s, h)
    }

    /// The plain reference (every pixel on its own; `input` unpadded).
    pub fn reference<T: Pixel>(self, input: &[Plane<T>], nd: Option<T>) -> Vec<Plane<T>> {
        let conv = Converter::new::<T>(self);
        per_pixel(input, 0, self.out_bands(), nd, nd, true, |px, out| {
            conv.pixel(px[0], px[1], px[2], out)
        })
    }

    /// The row loop without nodata (the reference's arithmetic, pixel by
    /// pixel along each row, no windows).
    pub fn fast<T: Pixel>(self, input: &[Plane<T>]) -> Vec<Plane<T>> {
        let conv = Converter::new::<T>(self);
        let (w, h) = (input[0].width, input[0].height);
        let n = self.out_bands();
        par_band_rows(w, h, n, |y, out| {
            let (r, g, b) = (input[0].row(y), input[1].row(y), input[2].row(y));
            let mut px = [0f32; 3];
            for x in 0..w {
                conv.pixel(r[x].to_f32(), g[x].to_f32(), b[x].to_f32(), &mut px[..n]);
                for (j, &v) in px[..n].iter().enumerate() {
                    out[j * w + x] = T::from_f32(v);
                }
            }
        })
    }
}

/// One conversion for one sample type, its constants worked out once.
struct Converter {
    color: Color,
    float: bool,
    delta: i64,
    sdiv: [i32; 256],
    hdiv: [i32; 256],
}

impl Converter {
    fn new<T: Pixel>(color: Color) -> Self {
        let (sdiv, hdiv) = Color::hsv_tables();
        Converter {
            color,
            float: T::TYPE == SampleType::F32,
            delta: if T::TYPE == SampleType::U16 {
                32768
            } else {
                128
            },
            sdiv,
            hdiv,
        }
    }

    /// The output samples of one pixel (R, G, B in), as `f32`.
    #[inline(always)]
    fn pixel(&self, r: f32, g: f32, b: f32, out: &mut [f32]) {
        let (delta, sdiv, hdiv) = (self.delta, &self.sdiv, &self.hdiv);
        {
            if self.float {
                float(self.color, r, g, b, out);
                return;
            }
            let (r, g, b) = (r as i64, g as i64, b as i64);
            match self.color {
                Color::Gray => {
                    out[0] =
                        ((r * GRAY15[0] + g * GRAY15[1] + b * GRAY15[2] + (1 << 14)) >> 15) as f32
                }
                Color::YCbCr => {
                    let y = (r * Y14[0] + g * Y14[1] + b * Y14[2] + (1 << 13)) >> 14;
                    let cr = ((r - y) * CR14 + (delta << 14) + (1 << 13)) >> 14;
                    let cb = ((b - y) * CB14 + (delta << 14) + (1 << 13)) >> 14;
                    // Saturated on the way out (T::from_f32).
                    out.copy_from_slice(&[y as f32, cb as f32, cr as f32]);
                }
                Color::Hsv => {
                    let v = r.max(g).max(b);
                    let diff = v - r.min(g).min(b);
                    let s = (diff * sdiv[v as usize] as i64 + (1 << (HSV_SHIFT - 1))) >> HSV_SHIFT;
                    let h = if v == r {
                        g - b
                    } else if v == g {
                        b - r + 2 * diff
                    } else {
                        r - g + 4 * diff
                    };
                    let h = (h * hdiv[diff as usize] as i64 + (1 << (HSV_SHIFT - 1))) >> HSV_SHIFT;
                    let h = if h < 0 { h + 180 } else { h };
                    out.copy_from_slice(&[h as f32, s as f32, v as f32]);
                }
            }
        }
    }
}

/// The Float32 conversions.
fn float(c: Color, r: f32, g: f32, b: f32, out: &mut [f32]) {
    let luma = || b.mul_add(YF[2], g.mul_add(YF[1], r * YF[0]));
    match c {
        Color::Gray => out[0] = luma(),
        Color::YCbCr => {
            let y = luma();
            out[0] = y;
            out[1] = (b - y).mul_add(YF[4], 0.5);
            out[2] = (r - y).mul_add(YF[3], 0.5);
        }
        Color::Hsv => {
            let v = r.max(g).max(b);
            let vmin = r.min(g).min(b);
            let diff = v - vmin;
            let s = diff / (v.abs() + f32::EPSILON);
            // OpenCV divides in double; one correctly rounded f32
            // division (as on the device) differs from that at most in
            // rare double-rounding cases.
            let k = 60.0 / (diff + f32::EPSILON);
            let mut h = if v == r {
                (g - b) * k
            } else if v == g {
                (b - r) * k + 120.0
            } else {
                (r - g) * k + 240.0
            };
            if h < 0.0 {
                h += 360.0;
            }
            out.copy_from_slice(&[h, s, v]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one<T: Pixel>(c: Color, rgb: [T; 3]) -> Vec<T> {
        let planes: Vec<Plane<T>> = rgb.iter().map(|&v| Plane::new(1, 1, vec![v])).collect();
        c.reference(&planes, None)
            .iter()
            .map(|p| p.data[0])
            .collect()
    }

    #[test]
    fn byte_conversions_match_opencv() {
        // cv2.cvtColor(np.uint8([[[r, g, b]]]), cv2.COLOR_RGB2…) of these colours.
        assert_eq!(one(Color::Gray, [0u8, 1, 250]), vec![29]);
        assert_eq!(one(Color::Gray, [255u8, 255, 255]), vec![255]);
        assert_eq!(one(Color::YCbCr, [200u8, 30, 90]), vec![88, 129, 208]);
        assert_eq!(one(Color::Hsv, [200u8, 30, 90]), vec![169, 217, 200]);
        assert_eq!(one(Color::Hsv, [10u8, 250, 40]), vec![64, 245, 250]);
        assert_eq!(one(Color::Hsv, [7u8, 7, 7]), vec![0, 0, 7]);
    }

    #[test]
    fn refuses_what_opencv_does_not_take() {
        assert!(Color::Gray.check(1, SampleType::U8).is_err());
        assert!(Color::Gray.check(3, SampleType::I16).is_err());
        assert!(Color::Hsv.check(3, SampleType::U16).is_err());
        assert!(Color::YCbCr.check(4, SampleType::U16).is_ok());
    }
}
