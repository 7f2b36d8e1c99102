//! Blending two rasters of one grid, sample by sample: a weighted sum
//! (`α·a + β·b + γ`, OpenCV's `addWeighted`) or alpha blending
//! (`a·w + b·(1 − w)` with w from an alpha band, scaled to 0..1).
//!
//! The weighted sum is computed as OpenCV's vector code does on a machine
//! with FMA, `fma(a, α, fma(b, β, γ))` in `f32`, then rounded half to even
//! and saturated to the type: for 8-bit it is identical to `cv2.addWeighted`
//! (α, β, γ as `f32`). Alpha blending takes `w = alpha / MAX` for integer
//! alpha bands (MAX: 255, 65535, 32767) and the value itself, clamped to
//! 0..1, for Float32, and computes `fma(a − b, w, b)`.
//!
//! Nodata: where either input is its raster's nodata (or the alpha is the
//! alpha band's), the output is the first raster's nodata value.

use crate::pixel::{Pixel, Plane};
use rayon::prelude::*;

/// How two samples are combined.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Blend {
    Weighted { alpha: f32, beta: f32, gamma: f32 },
    Alpha,
}

/// Nodata values of the inputs: first, second, alpha.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BlendNodata {
    pub a: Option<f64>,
    pub b: Option<f64>,
    pub alpha: Option<f64>,
}

impl Blend {
    /// One output sample from `a`, `b` and the alpha weight `w` (0..1).
    #[inline]
    pub fn combine(self, a: f32, b: f32, w: f32) -> f32 {
        match self {
            Blend::Weighted { alpha, beta, gamma } => a.mul_add(alpha, b.mul_add(beta, gamma)),
            Blend::Alpha => (a - b).mul_add(w, b),
        }
    }

    /// The weight an alpha sample stands for.
    pub fn weight<A: Pixel>(v: A) -> f32 {
        match A::TYPE.range() {
            Some((_, hi)) => (v.to_f32() / hi as f32).clamp(0.0, 1.0),
            None => v.to_f32().clamp(0.0, 1.0),
        }
    }

    /// Blends bands `a` and `b` (equal sizes and counts) with the alpha
    /// plane `alpha` (for [`Blend::Alpha`]), rows in parallel.
    pub fn apply<T: Pixel, A: Pixel>(
        self,
        a: &[Plane<T>],
        b: &[Plane<T>],
        alpha: Option<&Plane<A>>,
        nd: BlendNodata,
    ) -> Vec<Plane<T>> {
        let (nda, ndb) = (
            nd.a.and_then(T::from_f64_exact),
            nd.b.and_then(T::from_f64_exact),
        );
        let ndw = nd.alpha.and_then(A::from_f64_exact);
        let out_nd = nda.unwrap_or_default();
        a.iter()
            .zip(b)
            .map(|(pa, pb)| {
                let mut data = vec![T::default(); pa.data.len()];
                let w = pa.width.max(1);
                data.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
                    let (ra, rb) = (pa.row(y), pb.row(y));
                    for (x, o) in row.iter_mut().enumerate() {
                        let (va, vb) = (ra[x], rb[x]);
                        let wv = alpha.map(|p| p.row(y)[x]);
                        let missing = nda.is_some_and(|n| va.same(n))
                            || ndb.is_some_and(|n| vb.same(n))
                            || matches!((wv, ndw), (Some(v), Some(n)) if v.same(n));
                        *o = if missing {
                            out_nd
                        } else {
                            let w = wv.map_or(0.0, Self::weight);
                            T::from_f32(self.combine(va.to_f32(), vb.to_f32(), w))
                        };
                    }
                });
                Plane::new(pa.width, pa.height, data)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weighted_sums_round_and_saturate_and_alpha_mixes() {
        let a = vec![Plane::new(4, 1, vec![0u8, 100, 255, 7])];
        let b = vec![Plane::new(4, 1, vec![255u8, 50, 255, 9])];
        let w = Blend::Weighted {
            alpha: 0.5,
            beta: 0.5,
            gamma: 0.0,
        };
        let out = w.apply::<u8, u8>(&a, &b, None, BlendNodata::default());
        // 127.5 → 128 (half to even), 75, 255, 8.
        assert_eq!(out[0].data, vec![128, 75, 255, 8]);
        let sat = Blend::Weighted {
            alpha: 1.0,
            beta: 1.0,
            gamma: -10.0,
        };
        let out = sat.apply::<u8, u8>(&a, &b, None, BlendNodata::default());
        assert_eq!(out[0].data, vec![245, 140, 255, 6]);
        let alpha = Plane::new(4, 1, vec![255u8, 0, 51, 0]);
        let nd = BlendNodata {
            a: Some(7.0),
            ..Default::default()
        };
        let out = Blend::Alpha.apply(&a, &b, Some(&alpha), nd);
        assert_eq!(out[0].data, vec![0, 50, 255, 7]);
    }
}
