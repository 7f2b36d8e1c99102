//! Border modes: what a neighbourhood sees beyond the raster's edge, and the
//! padding of a tile window to the halo an op needs.
//!
//! Windows are in image coordinates and may reach outside the raster; the
//! source window is the part inside it. Padding maps every outside pixel to
//! an inside one (replicate, reflect101) or to a fill value (constant,
//! nodata), exactly as OpenCV's `borderInterpolate` does, so a chain of ops
//! run tile by tile equals the same chain run on the whole raster.

use crate::bail;
use crate::error::{Error, Result};
use crate::pixel::{Pixel, Plane};
use std::str::FromStr;

/// What lies beyond the raster's edge.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BorderMode {
    /// The edge pixel repeated (`aaa|abcd`, OpenCV BORDER_REPLICATE).
    Replicate,
    /// Mirrored without repeating the edge (`dcb|abcd`, OpenCV BORDER_REFLECT_101, its default).
    Reflect101,
    /// A constant value (OpenCV BORDER_CONSTANT).
    Constant(f64),
    /// Nodata: outside pixels are missing, like the raster's own nodata pixels.
    Nodata,
}

impl FromStr for BorderMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let hint = "use replicate, reflect101, constant:VALUE or nodata";
        Ok(match s {
            "replicate" => BorderMode::Replicate,
            "reflect101" | "reflect" => BorderMode::Reflect101,
            "nodata" => BorderMode::Nodata,
            _ => match s.strip_prefix("constant:") {
                Some(v) => BorderMode::Constant(v.parse().map_err(|_| {
                    Error::usage(format!("border constant '{v}' is not a number")).hint(hint)
                })?),
                None if s == "constant" => BorderMode::Constant(0.0),
                None => bail!(usage, format!("unknown border mode '{s}'"), hint = hint),
            },
        })
    }
}

impl std::fmt::Display for BorderMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BorderMode::Replicate => f.write_str("replicate"),
            BorderMode::Reflect101 => f.write_str("reflect101"),
            BorderMode::Constant(v) => write!(f, "constant:{v}"),
            BorderMode::Nodata => f.write_str("nodata"),
        }
    }
}

impl BorderMode {
    /// The in-raster coordinate that `c` stands for on an axis of `len`
    /// pixels, or `None` where the fill value applies.
    #[inline]
    pub fn map(self, c: i64, len: i64) -> Option<i64> {
        if (0..len).contains(&c) {
            return Some(c);
        }
        match self {
            BorderMode::Replicate => Some(c.clamp(0, len - 1)),
            BorderMode::Reflect101 => {
                if len == 1 {
                    return Some(0);
                }
                let mut c = c;
                while !(0..len).contains(&c) {
                    c = if c < 0 { -c } else { 2 * len - 2 - c };
                }
                Some(c)
            }
            BorderMode::Constant(_) | BorderMode::Nodata => None,
        }
    }

    /// The value of pixels that map outside the raster (constant or nodata
    /// borders; `nd` is the input's nodata value), as `T`.
    pub fn fill<T: Pixel>(self, nd: Option<f64>) -> T {
        match self {
            BorderMode::Constant(v) => T::from_f32(v as f32),
            BorderMode::Nodata => nd.and_then(T::from_f64_exact).unwrap_or_default(),
            _ => T::default(),
        }
    }

    /// OpenCL code of the mode, for the kernels' `-D BORDER=` option.
    pub fn cl_code(self) -> u32 {
        match self {
            BorderMode::Replicate => 0,
            BorderMode::Reflect101 => 1,
            BorderMode::Constant(_) | BorderMode::Nodata => 2,
        }
    }
}

/// A window in image coordinates; it may reach outside the raster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Win {
    pub x: i64,
    pub y: i64,
    pub width: usize,
    pub height: usize,
}

impl Win {
    pub fn new(x: i64, y: i64, width: usize, height: usize) -> Self {
        Win {
            x,
            y,
            width,
            height,
        }
    }

    /// Grown by `r` on every side.
    pub fn grow(self, r: usize) -> Self {
        Win::new(
            self.x - r as i64,
            self.y - r as i64,
            self.width + 2 * r,
            self.height + 2 * r,
        )
    }

    /// The part inside a `width`×`height` raster.
    pub fn clamp(self, width: usize, height: usize) -> Self {
        let x0 = self.x.clamp(0, width as i64);
        let y0 = self.y.clamp(0, height as i64);
        let x1 = (self.x + self.width as i64).clamp(0, width as i64);
        let y1 = (self.y + self.height as i64).clamp(0, height as i64);
        Win::new(x0, y0, (x1 - x0) as usize, (y1 - y0) as usize)
    }
}

/// The pixels of `want` (image coordinates), taken from `src` (which holds
/// window `have`, inside a raster of `image` size) where they lie in the
/// raster and from `mode` (with `fill` for constant and nodata) elsewhere.
///
/// `have` must hold every in-raster pixel that `want` maps to.
pub fn pad<T: Pixel>(
    src: &Plane<T>,
    have: Win,
    image: (usize, usize),
    want: Win,
    mode: BorderMode,
    fill: T,
) -> Plane<T> {
    let rows = RowPad::new(have, image, want, mode, fill);
    let mut data = vec![fill; want.width * want.height];
    for (dy, row) in data.chunks_exact_mut(want.width.max(1)).enumerate() {
        rows.row_into(src, dy, row);
    }
    Plane::new(want.width, want.height, data)
}

/// Row by row [`pad`]: the column mapping worked out once, then any row of
/// `want` written into a caller's buffer (the per-strip buffers of
/// [`super::strip`] take their rows this way instead of a padded copy of
/// the whole tile).
#[derive(Clone, Debug)]
pub struct RowPad<T> {
    have: Win,
    image_h: i64,
    want: Win,
    mode: BorderMode,
    fill: T,
    /// Output columns `a..b` are the copied span; source column of `a`.
    a: usize,
    b: usize,
    span_src: usize,
    /// Source column of every margin column (`0..a`, then `b..width`), or
    /// `None` for the fill value.
    margin: Vec<Option<usize>>,
}

impl<T: Pixel> RowPad<T> {
    /// See [`pad`] for the arguments.
    pub fn new(have: Win, image: (usize, usize), want: Win, mode: BorderMode, fill: T) -> Self {
        let (iw, ih) = (image.0 as i64, image.1 as i64);
        let in_lo = want.x.clamp(0, iw);
        let in_hi = (want.x + want.width as i64).clamp(in_lo, iw);
        let (a, b) = (
            ((in_lo - want.x) as usize).min(want.width),
            ((in_hi - want.x) as usize).min(want.width),
        );
        let col = |dx: usize| {
            mode.map(want.x + dx as i64, iw).map(|c| {
                let local = c - have.x;
                debug_assert!(
                    (0..have.width as i64).contains(&local),
                    "pad: column outside source"
                );
                local as usize
            })
        };
        RowPad {
            have,
            image_h: ih,
            want,
            mode,
            fill,
            a,
            b,
            span_src: (in_lo - have.x).max(0) as usize,
            margin: (0..a).chain(b..want.width).map(col).collect(),
        }
    }

    /// Writes row `dy` of `want` (`want.width` values) into `dst`.
    #[inline]
    pub fn row_into(&self, src: &Plane<T>, dy: usize, dst: &mut [T]) {
        let dst = &mut dst[..self.want.width];
        let Some(sy) = self.mode.map(self.want.y + dy as i64, self.image_h) else {
            dst.fill(self.fill);
            return;
        };
        let src_row = src.row((sy - self.have.y) as usize);
        let (a, b) = (self.a, self.b);
        let (left, right) = self.margin.split_at(a);
        for (d, m) in dst[..a].iter_mut().zip(left) {
            *d = m.map_or(self.fill, |c| src_row[c]);
        }
        if b > a {
            dst[a..b].copy_from_slice(&src_row[self.span_src..self.span_src + (b - a)]);
        }
        for (d, m) in dst[b..].iter_mut().zip(right) {
            *d = m.map_or(self.fill, |c| src_row[c]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_map_like_opencv() {
        // OpenCV's borderInterpolate on a 5-pixel axis.
        let r = BorderMode::Replicate;
        let m = BorderMode::Reflect101;
        assert_eq!(r.map(-2, 5), Some(0));
        assert_eq!(r.map(6, 5), Some(4));
        assert_eq!(m.map(-1, 5), Some(1));
        assert_eq!(m.map(-2, 5), Some(2));
        assert_eq!(m.map(5, 5), Some(3));
        assert_eq!(m.map(6, 5), Some(2));
        assert_eq!(m.map(-3, 2), Some(1));
        assert_eq!(m.map(4, 1), Some(0));
        assert_eq!(BorderMode::Constant(7.0).map(-1, 5), None);
        assert_eq!(BorderMode::Constant(7.0).map(3, 5), Some(3));
    }

    #[test]
    fn parses_modes() {
        assert_eq!(
            "reflect101".parse::<BorderMode>().unwrap(),
            BorderMode::Reflect101
        );
        assert_eq!(
            "constant:-5".parse::<BorderMode>().unwrap(),
            BorderMode::Constant(-5.0)
        );
        assert!("mirror".parse::<BorderMode>().is_err());
        assert!("constant:x".parse::<BorderMode>().is_err());
    }

    #[test]
    fn pads_a_corner_window() {
        // A 3x2 raster 1..6; the window one pixel up-left of it, 3x3.
        let src = Plane::new(3, 2, vec![1u8, 2, 3, 4, 5, 6]);
        let have = Win::new(0, 0, 3, 2);
        let want = Win::new(-1, -1, 3, 3);
        let p = pad(&src, have, (3, 2), want, BorderMode::Reflect101, 0);
        assert_eq!(p.data, vec![5, 4, 5, 2, 1, 2, 5, 4, 5]);
        let p = pad(&src, have, (3, 2), want, BorderMode::Constant(9.0), 9);
        assert_eq!(p.data, vec![9, 9, 9, 9, 1, 2, 9, 4, 5]);
        let p = pad(&src, have, (3, 2), want, BorderMode::Replicate, 0);
        assert_eq!(p.data, vec![1, 1, 2, 1, 1, 2, 4, 4, 5]);
    }
}
