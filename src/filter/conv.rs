//! Convolution presets: box blur, Gaussian blur, sharpen 3×3 and 5×5, and a
//! kernel read from a file.
//!
//! `out = scale · Σ w(k)·in(p + k)`, a correlation (no flip, like OpenCV's
//! `filter2D`). Presets with integer weights keep them integer and put the
//! normalisation in `scale`, so integer inputs sum exactly in any order and
//! the host, the fast path and the device agree bit for bit; only Gaussian
//! and file kernels with fractional weights accumulate rounding.

use super::pixel::{Pixel, Plane};
use super::{par_rows, par_strips, per_band};
use crate::bail;
use crate::error::{Error, Result};
use std::path::Path;

/// A convolution kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Conv {
    /// Side (odd).
    pub size: usize,
    /// `size²` weights, row-major.
    pub weights: Vec<f32>,
    /// Multiplies the weighted sum.
    pub scale: f32,
    /// `(row, column)` vectors when the kernel is their outer product.
    pub separable: Option<(Vec<f32>, Vec<f32>)>,
}

impl Conv {
    fn from_separable(row: Vec<f32>, col: Vec<f32>, scale: f32) -> Self {
        let size = row.len();
        let weights = col
            .iter()
            .flat_map(|&c| row.iter().map(move |&r| c * r))
            .collect();
        Conv {
            size,
            weights,
            scale,
            separable: Some((row, col)),
        }
    }

    /// Mean of an `n`×`n` window (OpenCV `blur`).
    pub fn boxed(n: usize) -> Result<Self> {
        check_size(n, "box")?;
        Ok(Self::from_separable(
            vec![1.0; n],
            vec![1.0; n],
            1.0 / (n * n) as f32,
        ))
    }

    /// Gaussian of standard deviation `sigma`; side `size`, by default
    /// OpenCV's choice for 8-bit images: `round(6σ + 1)` made odd.
    pub fn gaussian(sigma: f64, size: Option<usize>) -> Result<Self> {
        if !(sigma > 0.0 && sigma.is_finite()) {
            bail!(
                format!("gaussian sigma must be positive, got {sigma}"),
                hint = "write e.g. gaussian:1.5"
            );
        }
        let n = size.unwrap_or(((sigma * 6.0 + 1.0).round() as usize) | 1);
        check_size(n, "gaussian")?;
        let r = (n / 2) as f64;
        let g: Vec<f64> = (0..n)
            .map(|i| (-((i as f64 - r).powi(2)) / (2.0 * sigma * sigma)).exp())
            .collect();
        let sum: f64 = g.iter().sum();
        let g: Vec<f32> = g.iter().map(|v| (v / sum) as f32).collect();
        Ok(Self::from_separable(g.clone(), g, 1.0))
    }

    /// Sharpening kernels: 3×3 `[0 −1 0; −1 5 −1; 0 −1 0]`; 5×5: −1 on the
    /// outer ring, 2 on the inner ring, 8 in the centre, all over 8.
    pub fn sharpen(n: usize) -> Result<Self> {
        let (weights, scale) = match n {
            3 => (vec![0., -1., 0., -1., 5., -1., 0., -1., 0.], 1.0),
            5 => {
                let w = (0..25i32)
                    .map(|i| {
                        let (x, y) = ((i % 5) - 2, (i / 5) - 2);
                        match x.abs().max(y.abs()) {
                            2 => -1.0,
                            1 => 2.0,
                            _ => 8.0,
                        }
                    })
                    .collect();
                (w, 1.0 / 8.0)
            }
            _ => bail!(
                format!("sharpen:{n}: only 3 and 5 exist"),
                hint = "write sharpen:3 or sharpen:5"
            ),
        };
        Ok(Conv {
            size: n,
            weights,
            scale,
            separable: None,
        })
    }

    /// A square matrix from a text file (whitespace/CSV, `#` comments), used as is.
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::new(format!("cannot read kernel file {}: {e}", path.display()))
                .hint("kernel:PATH needs a readable text file holding a square matrix")
        })?;
        let (n, weights) = crate::kernel::parse_square(&text)
            .map_err(|e| e.context(format!("kernel file {}", path.display())))?;
        check_size(n, "kernel")?;
        Ok(Conv {
            size: n,
            weights: weights.iter().map(|&w| w as f32).collect(),
            scale: 1.0,
            separable: None,
        })
    }

    pub fn radius(&self) -> usize {
        self.size / 2
    }

    /// The plain per-pixel reference: `scale · Σ w·v` in window order.
    pub fn reference<T: Pixel>(&self, input: &[Plane<T>], nd: Option<T>) -> Vec<Plane<T>> {
        per_band(input, self.radius(), nd, |win| {
            let s = win
                .iter()
                .zip(&self.weights)
                .fold(0.0, |acc, (v, w)| acc + v * w);
            s * self.scale
        })
    }

    /// The fast host path (no nodata): two 1-D passes for separable
    /// kernels, row accumulation of the non-zero taps otherwise.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<T>> {
        input.iter().map(|p| self.fast_plane(p)).collect()
    }

    fn fast_plane<T: Pixel>(&self, p: &Plane<T>) -> Plane<T> {
        let (n, r) = (self.size, self.radius());
        let (w, h) = (p.width - 2 * r, p.height - 2 * r);
        match &self.separable {
            Some((row, col)) => par_strips(w, h, |y0, out: &mut [T]| {
                // Horizontal pass of the strip's rows plus halo into a small
                // buffer (stays in cache), then the vertical pass.
                let rows = out.len() / w;
                let mut tmp = vec![0f32; (rows + 2 * r) * w];
                for (i, t) in tmp.chunks_exact_mut(w).enumerate() {
                    let src = p.row(y0 + i);
                    for (k, &wk) in row.iter().enumerate() {
                        for (o, &v) in t.iter_mut().zip(&src[k..k + w]) {
                            *o += wk * v.to_f32();
                        }
                    }
                }
                let mut acc = vec![0f32; w];
                for (y, o) in out.chunks_exact_mut(w).enumerate() {
                    acc.fill(0.0);
                    for (k, &wk) in col.iter().enumerate() {
                        for (a, &v) in acc.iter_mut().zip(&tmp[(y + k) * w..(y + k + 1) * w]) {
                            *a += wk * v;
                        }
                    }
                    for (o, a) in o.iter_mut().zip(&acc) {
                        *o = T::from_f32(a * self.scale);
                    }
                }
            }),
            None => par_rows(w, h, |y, out: &mut [T]| {
                let mut acc = vec![0f32; w];
                for ky in 0..n {
                    let src = p.row(y + ky);
                    for kx in 0..n {
                        let wk = self.weights[ky * n + kx];
                        if wk == 0.0 {
                            continue;
                        }
                        for (a, &v) in acc.iter_mut().zip(&src[kx..kx + w]) {
                            *a += wk * v.to_f32();
                        }
                    }
                }
                for (o, a) in out.iter_mut().zip(&acc) {
                    *o = T::from_f32(a * self.scale);
                }
            }),
        }
    }
}

fn check_size(n: usize, what: &str) -> Result<()> {
    if n == 0 || n.is_multiple_of(2) || n > 255 {
        bail!(
            format!("{what} kernel side must be odd and between 1 and 255, got {n}"),
            hint = "use an odd size such as 3 or 5"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::op::tests::{noise_planes, padded};

    #[test]
    fn box_blur_by_hand() {
        // 3x3 mean of 1..9 around the centre: 45/9 = 5; corner with replicate-free padding.
        let p = Plane::new(3, 3, (1..=9u8).collect());
        let out = Conv::boxed(3)
            .unwrap()
            .reference(std::slice::from_ref(&p), None);
        assert_eq!(out[0].data, vec![5]);
        assert_eq!(Conv::boxed(3).unwrap().fast(&[p])[0].data, vec![5]);
    }

    #[test]
    fn sharpen5_sums_to_one() {
        let k = Conv::sharpen(5).unwrap();
        assert_eq!(k.weights.iter().sum::<f32>() * k.scale, 1.0);
        let flat = Plane::new(5, 5, vec![77u8; 25]);
        assert_eq!(k.reference(&[flat], None)[0].data, vec![77]);
    }

    #[test]
    fn fast_path_matches_reference() {
        for conv in [
            Conv::boxed(3).unwrap(),
            Conv::boxed(5).unwrap(),
            Conv::sharpen(3).unwrap(),
            Conv::sharpen(5).unwrap(),
        ] {
            let input = padded(noise_planes::<u8>(37, 23, 2, 1), conv.radius());
            assert_eq!(conv.fast(&input), conv.reference(&input, None));
            let input = padded(noise_planes::<i16>(19, 29, 1, 2), conv.radius());
            assert_eq!(conv.fast(&input), conv.reference(&input, None));
        }
        // Gaussian: sums in another order may round differently, by at most one unit.
        let g = Conv::gaussian(1.2, None).unwrap();
        let input = padded(noise_planes::<u16>(31, 17, 1, 3), g.radius());
        let (a, b) = (g.fast(&input), g.reference(&input, None));
        let worst = a[0]
            .data
            .iter()
            .zip(&b[0].data)
            .map(|(x, y)| x.abs_diff(*y))
            .max();
        assert!(worst <= Some(1), "worst {worst:?}");
    }

    #[test]
    fn gaussian_size_follows_opencv() {
        assert_eq!(Conv::gaussian(1.0, None).unwrap().size, 7);
        assert_eq!(Conv::gaussian(2.0, None).unwrap().size, 13);
        assert_eq!(Conv::gaussian(1.0, Some(5)).unwrap().size, 5);
        assert!(Conv::gaussian(0.0, None).is_err());
        assert!(Conv::boxed(4).is_err());
        assert!(Conv::sharpen(7).is_err());
    }
}
