//! Bilateral filter: `h(x) = Σ f(ξ)·c(ξ,x)·s(f(ξ),f(x)) / Σ c·s` over a disc
//! of radius R = round(2σ_d), with closeness `c = exp(−½(d/σ_d)²)` and
//! similarity `s = exp(−½(δ/σ_r)²)`.
//!
//! δ, the difference between a neighbour and the centre, is taken per band
//! (`gray`), on the intensity 0.3R+0.59G+0.11B (`luma`, bands 1-3 weigh
//! every band alike), or as the colour distance Σ|δ_b| (`color`, the L1
//! distance OpenCV's `bilateralFilter` uses). Weights are `f32` computed
//! from `f64` once: the closeness per tap (the table the device keeps in
//! constant memory), the similarity per integer δ where δ is an integer.

use super::{par_band_rows, par_rows, per_pixel};
use crate::bail;
use crate::error::Result;
use crate::pixel::{Pixel, Plane, SampleType};

/// How the similarity term measures the difference to the centre.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distance {
    Gray,
    Luma,
    Color,
}

/// Bilateral filter parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Bilateral {
    pub sigma_d: f64,
    pub sigma_r: f64,
    pub distance: Distance,
    pub radius: usize,
}

/// One tap of the disc window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tap {
    pub dx: i32,
    pub dy: i32,
    pub closeness: f32,
}

impl Bilateral {
    pub fn new(sigma_d: f64, sigma_r: f64, distance: Distance) -> Result<Self> {
        if !(sigma_d > 0.0 && sigma_r > 0.0 && sigma_d.is_finite() && sigma_r.is_finite()) {
            bail!(
                usage,
                format!("bilateral sigmas must be positive, got {sigma_d} and {sigma_r}"),
                hint = "write bilateral:SIGMA_D:SIGMA_R, e.g. bilateral:2:30"
            );
        }
        let radius = ((2.0 * sigma_d).round() as usize).max(1);
        if radius > 50 {
            bail!(
                usage,
                format!("bilateral radius {radius} (2σ_d) is too large"),
                hint = "use σ_d ≤ 25"
            );
        }
        Ok(Bilateral {
            sigma_d,
            sigma_r,
            distance,
            radius,
        })
    }

    /// The disc's taps, row-major, with their closeness.
    pub fn taps(&self) -> Vec<Tap> {
        let r = self.radius as i32;
        let mut taps = Vec::new();
        for dy in -r..=r {
            for dx in -r..=r {
                let d2 = (dx * dx + dy * dy) as f64;
                if d2 <= (r * r) as f64 {
                    let closeness = (-0.5 * d2 / (self.sigma_d * self.sigma_d)).exp() as f32;
                    taps.push(Tap { dx, dy, closeness });
                }
            }
        }
        taps
    }

    /// Similarity of a difference `delta`.
    #[inline]
    pub fn similarity(&self, delta: f32) -> f32 {
        let d = delta as f64;
        (-0.5 * d * d / (self.sigma_r * self.sigma_r)).exp() as f32
    }

    /// Similarity per integer difference 0..len, when differences are integers.
    pub fn similarity_table(&self, t: SampleType, bands: usize) -> Option<Vec<f32>> {
        let (lo, hi) = t.range()?;
        let span = (hi - lo) as usize + 1;
        let len = match self.distance {
            Distance::Gray => span,
            Distance::Color => span * bands,
            Distance::Luma => return None,
        };
        Some((0..len).map(|i| self.similarity(i as f32)).collect())
    }

    pub fn check(&self, bands: usize) -> Result<()> {
        if self.distance == Distance::Luma && bands < 3 {
            bail!(
                usage,
                format!("bilateral luma needs 3 bands (R, G, B), the input has {bands}"),
                hint = "use the gray or color distance"
            );
        }
        Ok(())
    }

    /// The plain per-pixel reference.
    pub fn reference<T: Pixel>(&self, input: &[Plane<T>], nd: Option<T>) -> Vec<Plane<T>> {
        let table = self.similarity_table(T::TYPE, input.len());
        self.reference_with(input, nd, |delta: f32| match &table {
            Some(t) => t[delta as usize],
            None => self.similarity(delta),
        })
    }

    /// [`Bilateral::reference`] with the similarity of a difference given by `sim`.
    pub fn reference_with<T: Pixel>(
        &self,
        input: &[Plane<T>],
        nd: Option<T>,
        sim: impl Fn(f32) -> f32 + Sync,
    ) -> Vec<Plane<T>> {
        let n = 2 * self.radius + 1;
        let nn = n * n;
        let bands = input.len();
        let taps: Vec<(usize, f32)> = self
            .taps()
            .iter()
            .map(|t| {
                let k =
                    (t.dy + self.radius as i32) as usize * n + (t.dx + self.radius as i32) as usize;
                (k, t.closeness)
            })
            .collect();
        let centre = self.radius * n + self.radius;
        let joint = self.distance != Distance::Gray;
        per_pixel(
            input,
            self.radius,
            bands,
            nd,
            nd,
            joint,
            |win, out| match self.distance {
                Distance::Gray => {
                    for (b, o) in out.iter_mut().enumerate() {
                        let w = &win[b * nn..(b + 1) * nn];
                        let c = w[centre];
                        let (mut sum, mut wsum) = (0f32, 0f32);
                        for &(k, close) in &taps {
                            let wt = close * sim((w[k] - c).abs());
                            sum += w[k] * wt;
                            wsum += wt;
                        }
                        *o = sum / wsum;
                    }
                }
                Distance::Luma | Distance::Color => {
                    let luma =
                        |k: usize| 0.3 * win[k] + 0.59 * win[nn + k] + 0.11 * win[2 * nn + k];
                    let (mut sums, mut wsum) = ([0f32; 16], 0f32);
                    let lc = if self.distance == Distance::Luma {
                        luma(centre)
                    } else {
                        0.0
                    };
                    for &(k, close) in &taps {
                        let delta = if self.distance == Distance::Luma {
                            (luma(k) - lc).abs()
                        } else {
                            (0..bands)
                                .map(|b| (win[b * nn + k] - win[b * nn + centre]).abs())
                                .sum()
                        };
                        let wt = close * sim(delta);
                        for (b, s) in sums.iter_mut().enumerate().take(bands) {
                            *s += win[b * nn + k] * wt;
                        }
                        wsum += wt;
                    }
                    for (o, s) in out.iter_mut().zip(sums) {
                        *o = s / wsum;
                    }
                }
            },
        )
    }
}

impl Bilateral {
    /// The fast host path (no nodata) for integer samples by gray or colour
    /// distance: row by row, tap after tap over the whole row, the
    /// similarity from the table, the sums in the reference's order (so the
    /// result is the same to the bit). Float32 and luma take the reference.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<T>> {
        let bands = input.len();
        let Some(table) = self.similarity_table(T::TYPE, bands) else {
            return self.reference(input, None);
        };
        let r = self.radius;
        let taps = self.taps();
        let (w, h) = (input[0].width - 2 * r, input[0].height - 2 * r);
        fn at<'a, T: Pixel>(p: &'a Plane<T>, y: usize, r: usize, w: usize, t: &Tap) -> &'a [T] {
            let (ty, tx) = ((y + r) as i32 + t.dy, (r as i32 + t.dx) as usize);
            &p.row(ty as usize)[tx..tx + w]
        }
        let ints = |s: &[T]| -> Vec<i32> { s.iter().map(|v| v.to_i32()).collect() };
        if self.distance == Distance::Gray {
            return input
                .iter()
                .map(|p| {
                    par_rows(w, h, |y, out: &mut [T]| {
                        let c = ints(&p.row(y + r)[r..r + w]);
                        let (mut sum, mut wsum, mut wt) =
                            (vec![0f32; w], vec![0f32; w], vec![0f32; w]);
                        for t in &taps {
                            let v = at(p, y, r, w, t);
                            for ((wt, &v), &c) in wt.iter_mut().zip(v).zip(&c) {
                                *wt = t.closeness * table[(v.to_i32() - c).unsigned_abs() as usize];
                            }
                            for (((s, ws), &wt), &v) in
                                sum.iter_mut().zip(&mut wsum).zip(&wt).zip(v)
                            {
                                *s += v.to_f32() * wt;
                                *ws += wt;
                            }
                        }
                        for ((o, s), ws) in out.iter_mut().zip(&sum).zip(&wsum) {
                            *o = T::from_f32(s / ws);
                        }
                    })
                })
                .collect();
        }
        par_band_rows(w, h, bands, |y, out: &mut [T]| {
            let c: Vec<Vec<i32>> = input
                .iter()
                .map(|p| ints(&p.row(y + r)[r..r + w]))
                .collect();
            let mut sum = vec![0f32; w * bands];
            let (mut wsum, mut wt, mut delta) = (vec![0f32; w], vec![0f32; w], vec![0u32; w]);
            for t in &taps {
                delta.fill(0);
                for (p, c) in input.iter().zip(&c) {
                    for ((d, &v), &c) in delta.iter_mut().zip(at(p, y, r, w, t)).zip(c) {
                        *d += (v.to_i32() - c).unsigned_abs();
                    }
                }
                for (wt, &d) in wt.iter_mut().zip(&delta) {
                    *wt = t.closeness * table[d as usize];
                }
                for (p, s) in input.iter().zip(sum.chunks_exact_mut(w)) {
                    for ((s, &wt), &v) in s.iter_mut().zip(&wt).zip(at(p, y, r, w, t)) {
                        *s += v.to_f32() * wt;
                    }
                }
                wsum.iter_mut().zip(&wt).for_each(|(ws, &wt)| *ws += wt);
            }
            for (o, s) in out.chunks_exact_mut(w).zip(sum.chunks_exact(w)) {
                for ((o, s), ws) in o.iter_mut().zip(s).zip(&wsum) {
                    *o = T::from_f32(s / ws);
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_form_a_disc() {
        let b = Bilateral::new(2.0, 30.0, Distance::Gray).unwrap();
        assert_eq!(b.radius, 4);
        // Lattice points with x² + y² ≤ 16: 49.
        assert_eq!(b.taps().len(), 49);
        assert_eq!(b.taps()[24].closeness, 1.0);
    }

    #[test]
    fn flat_stays_flat_and_edges_survive() {
        let b = Bilateral::new(1.0, 10.0, Distance::Gray).unwrap();
        // A step 0 | 200 with a small sigma_r: the step is kept.
        let p = Plane::new(
            8,
            5,
            (0..40).map(|i| if i % 8 < 4 { 0u8 } else { 200 }).collect(),
        );
        let out = b.reference(std::slice::from_ref(&p), None);
        assert_eq!(b.fast(&[p]), out);
        assert_eq!(out[0].data, vec![0, 0, 200, 200]);
    }

    #[test]
    fn fast_path_matches_reference() {
        use crate::filter::op::tests::{noise_planes, padded};
        for d in [Distance::Gray, Distance::Color] {
            let b = Bilateral::new(1.5, 40.0, d).unwrap();
            let input = padded(noise_planes::<u8>(29, 13, 3, 2), b.radius);
            assert_eq!(b.fast(&input), b.reference(&input, None));
            let input = padded(noise_planes::<u16>(17, 11, 2, 3), b.radius);
            assert_eq!(b.fast(&input), b.reference(&input, None));
        }
    }

    #[test]
    fn luma_needs_three_bands() {
        let b = Bilateral::new(1.0, 10.0, Distance::Luma).unwrap();
        assert!(b.check(1).is_err());
        assert!(b.check(3).is_ok());
        assert!(Bilateral::new(0.0, 1.0, Distance::Gray).is_err());
    }
}
