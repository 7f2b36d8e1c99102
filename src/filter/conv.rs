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
use rayon::prelude::*;
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

    /// The fast host path (no nodata): exact integer sums where the weights
    /// and samples are integers ([`Self::fast_int`]), 16-bit fixed point for
    /// separable kernels on Byte ([`Self::fast_fixed`]), two 1-D `f32`
    /// passes for other separable kernels, row accumulation otherwise.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<T>> {
        input
            .par_iter()
            .map(|p| {
                if let Some(w) = self.int_weights::<T>() {
                    self.fast_int(p, &w)
                } else if let Some(out) = self.fast_fixed(p) {
                    out
                } else {
                    self.fast_f32(p)
                }
            })
            .collect()
    }

    /// The weights as integers when all are whole and every sum of samples
    /// of `T` stays below 2²⁴, so it is exact in `f32` (as the reference's).
    fn int_weights<T: Pixel>(&self) -> Option<Vec<i32>> {
        let (lo, hi) = T::TYPE.range()?;
        if self.weights.iter().any(|w| w.fract() != 0.0) {
            return None;
        }
        let bound = self.weights.iter().map(|w| w.abs() as f64).sum::<f64>() * lo.abs().max(hi);
        (bound < (1 << 24) as f64).then(|| self.weights.iter().map(|&w| w as i32).collect())
    }

    /// Integer weights: the exact sum in `i32` (in any order it equals the
    /// reference's exact `f32` sum), then `scale` and rounding as there.
    /// Separable kernels sum rows then columns; others add up the taps of
    /// each weight, then multiply once per distinct weight.
    fn fast_int<T: Pixel>(&self, p: &Plane<T>, weights: &[i32]) -> Plane<T> {
        let (n, r) = (self.size, self.radius());
        let (w, h) = (p.width - 2 * r, p.height - 2 * r);
        let pw = p.width;
        let ints = |v: &[f32]| -> Vec<i32> { v.iter().map(|&x| x as i32).collect() };
        let sep = self
            .separable
            .as_ref()
            .filter(|(row, col)| row.iter().chain(col).all(|v| v.fract() == 0.0))
            .map(|(row, col)| (ints(row), ints(col)));
        let mut groups: Vec<(i32, Vec<usize>)> = Vec::new();
        for (k, &wk) in weights.iter().enumerate().filter(|(_, w)| **w != 0) {
            match groups.iter_mut().find(|(g, _)| *g == wk) {
                Some((_, taps)) => taps.push(k),
                None => groups.push((wk, vec![k])),
            }
        }
        par_strips(w, h, |y0, out: &mut [T]| {
            let rows = out.len() / w;
            let src = &p.data[y0 * pw..(y0 + rows + 2 * r) * pw];
            let mut acc = vec![0i32; w];
            let finish = |o: &mut [T], acc: &[i32]| {
                for (o, &a) in o.iter_mut().zip(acc) {
                    *o = T::from_f32(a as f32 * self.scale);
                }
            };
            if let Some((row, col)) = &sep {
                let mut tmp = vec![0i32; (rows + 2 * r) * w];
                for (t, s) in tmp.chunks_exact_mut(w).zip(src.chunks_exact(pw)) {
                    for (k, &wk) in row.iter().enumerate() {
                        add_scaled(t, wk, &s[k..k + w], T::to_i32);
                    }
                }
                for (y, o) in out.chunks_exact_mut(w).enumerate() {
                    acc.fill(0);
                    for (k, &wk) in col.iter().enumerate() {
                        add_scaled(&mut acc, wk, &tmp[(y + k) * w..(y + k + 1) * w], |v| v);
                    }
                    finish(o, &acc);
                }
                return;
            }
            let mut sum = vec![0i32; w];
            for (y, o) in out.chunks_exact_mut(w).enumerate() {
                acc.fill(0);
                for (wk, taps) in &groups {
                    sum.fill(0);
                    for &k in taps {
                        let at = (y + k / n) * pw + k % n;
                        add_scaled(&mut sum, 1, &src[at..at + w], T::to_i32);
                    }
                    add_scaled(&mut acc, *wk, &sum, |v| v);
                }
                finish(o, &acc);
            }
        })
    }

    /// Separable kernels on Byte in 16-bit fixed point, as OpenCV's
    /// `GaussianBlur` does: each 1-D kernel rounded to eighths of a unit
    /// summing to 256, rows into exact `u16` sums, columns into `u32`,
    /// then rounded half up. `None` for other kernels and types.
    fn fast_fixed<T: Pixel>(&self, p: &Plane<T>) -> Option<Plane<T>> {
        let bytes = (p as &dyn std::any::Any).downcast_ref::<Plane<u8>>()?;
        let (row, col) = self.separable.as_ref()?;
        let (row, col) = (fixed_256(row, self.scale)?, fixed_256(col, 1.0)?);
        let r = self.radius();
        let (w, h) = (p.width - 2 * r, p.height - 2 * r);
        let out = par_strips(w, h, |y0, out: &mut [u8]| {
            let rows = out.len() / w;
            let mut tmp = vec![0u16; (rows + 2 * r) * w];
            for (i, t) in tmp.chunks_exact_mut(w).enumerate() {
                let s = bytes.row(y0 + i);
                for (k, &wk) in row.iter().enumerate() {
                    for (a, &v) in t.iter_mut().zip(&s[k..k + w]) {
                        *a += wk * v as u16;
                    }
                }
            }
            let mut acc = vec![0u32; w];
            for (y, o) in out.chunks_exact_mut(w).enumerate() {
                acc.fill(1 << 15);
                for (k, &wk) in col.iter().enumerate() {
                    for (a, &v) in acc.iter_mut().zip(&tmp[(y + k) * w..(y + k + 1) * w]) {
                        *a += wk as u32 * v as u32;
                    }
                }
                for (o, &a) in o.iter_mut().zip(&acc) {
                    *o = (a >> 16) as u8;
                }
            }
        });
        (Box::new(out) as Box<dyn std::any::Any>)
            .downcast::<Plane<T>>()
            .ok()
            .map(|b| *b)
    }

    fn fast_f32<T: Pixel>(&self, p: &Plane<T>) -> Plane<T> {
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

/// `acc += w · src`, lane by lane (adds alone for ±1, which vectorise best).
#[inline(always)]
fn add_scaled<S: Copy>(acc: &mut [i32], w: i32, src: &[S], v: impl Fn(S) -> i32) {
    match w {
        1 => acc.iter_mut().zip(src).for_each(|(a, &s)| *a += v(s)),
        -1 => acc.iter_mut().zip(src).for_each(|(a, &s)| *a -= v(s)),
        _ => acc.iter_mut().zip(src).for_each(|(a, &s)| *a += w * v(s)),
    }
}

/// A 1-D kernel (times `scale`) in units of 1/256 summing to exactly 256:
/// rounded, the rounding surplus taken from the largest weight. `None`
/// where a weight is negative.
fn fixed_256(k: &[f32], scale: f32) -> Option<Vec<u16>> {
    if k.iter().any(|&v| v < 0.0) || (k.iter().sum::<f32>() * scale - 1.0).abs() > 1e-3 {
        return None;
    }
    let mut q: Vec<i32> = k
        .iter()
        .map(|&v| (v * scale * 256.0).round() as i32)
        .collect();
    let surplus = q.iter().sum::<i32>() - 256;
    let big = (0..q.len()).max_by_key(|&i| q[i])?;
    q[big] -= surplus;
    q.iter().map(|&v| u16::try_from(v).ok()).collect()
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
        let worst = worst_diff(&a[0].data, &b[0].data);
        assert!(worst <= Some(1.0), "worst {worst:?}");
    }

    /// The largest difference between two planes' samples.
    fn worst_diff<T: Pixel>(a: &[T], b: &[T]) -> Option<f32> {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x.to_f32() - y.to_f32()).abs())
            .reduce(f32::max)
    }

    #[test]
    fn byte_gaussian_in_fixed_point_stays_within_one() {
        for sigma in [0.8, 1.0, 2.0] {
            let g = Conv::gaussian(sigma, None).unwrap();
            let input = padded(noise_planes::<u8>(40, 30, 1, 4), g.radius());
            let (a, b) = (g.fast(&input), g.reference(&input, None));
            let worst = worst_diff(&a[0].data, &b[0].data);
            assert!(worst <= Some(1.0), "sigma {sigma}: worst {worst:?}");
        }
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
