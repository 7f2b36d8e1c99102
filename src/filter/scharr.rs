//! Scharr derivatives ∂x and ∂y from one read of the window.
//!
//! Size 3 is the classic `[−3 0 3; −10 0 10; −3 0 3]` (∂x; ∂y its transpose,
//! OpenCV's `Scharr` with dx=1 or dy=1); sizes 5, 7 and 9 are the same taps
//! dilated to a spacing of d = (size − 1)/2. Every input band gives two
//! Float32 output bands, ∂x then ∂y. Integer inputs give exact integers.

use super::per_pixel;
use super::pixel::{Pixel, Plane};
use crate::bail;
use crate::error::Result;
use rayon::prelude::*;

/// Scharr derivatives of side `size` (3, 5, 7 or 9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scharr {
    pub size: usize,
}

/// Weights across the derivative direction (rows −d, 0, +d).
pub const CROSS: [f32; 3] = [3.0, 10.0, 3.0];

impl Scharr {
    pub fn new(size: usize) -> Result<Self> {
        if ![3, 5, 7, 9].contains(&size) {
            bail!(
                format!("scharr:{size}: sizes are 3, 5, 7 and 9"),
                hint = "write scharr:3"
            );
        }
        Ok(Scharr { size })
    }

    /// Tap spacing, which is also the radius.
    pub fn radius(&self) -> usize {
        self.size / 2
    }

    /// The plain reference.
    pub fn reference<T: Pixel>(&self, input: &[Plane<T>], nd: Option<T>) -> Vec<Plane<f32>> {
        let (n, d) = (self.size, self.radius());
        let nn = n * n;
        let out_nd = nd.map(|_| f32::NAN);
        per_pixel(input, d, 2 * input.len(), nd, out_nd, false, |win, out| {
            for b in 0..input.len() {
                let at = |x: usize, y: usize| win[b * nn + y * n + x];
                let (mut dx, mut dy) = (0f32, 0f32);
                for (i, &w) in CROSS.iter().enumerate() {
                    let o = i * d;
                    dx += w * (at(2 * d, o) - at(0, o));
                    dy += w * (at(o, 2 * d) - at(o, 0));
                }
                out[2 * b] = dx;
                out[2 * b + 1] = dy;
            }
        })
    }

    /// The fast host path (no nodata): whole rows at a time.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<f32>> {
        let d = self.radius();
        let mut out = Vec::with_capacity(2 * input.len());
        for p in input {
            let (w, h) = (p.width - 2 * d, p.height - 2 * d);
            // Both derivatives from one read of each row triple.
            let mut dx = Plane::zeros(w, h);
            let mut dy = Plane::zeros(w, h);
            if w > 0 {
                dx.data
                    .par_chunks_mut(w)
                    .zip(dy.data.par_chunks_mut(w))
                    .enumerate()
                    .for_each(|(y, (ox, oy))| scharr_row(p, y, d, ox, oy));
            }
            out.push(dx);
            out.push(dy);
        }
        out
    }
}

/// One output row of ∂x and ∂y in one pass: the same sums, in the same
/// order, as the reference.
fn scharr_row<T: Pixel>(p: &Plane<T>, y: usize, d: usize, ox: &mut [f32], oy: &mut [f32]) {
    let w = ox.len();
    let [k0, k1, k2] = CROSS;
    let rows = [p.row(y), p.row(y + d), p.row(y + 2 * d)];
    let [l0, l1, l2] = rows.map(|r| &r[..w]);
    let [m0, _, m2] = rows.map(|r| &r[d..d + w]);
    let [r0, r1, r2] = rows.map(|r| &r[2 * d..2 * d + w]);
    let f = |s: &[T], x: usize| s[x].to_f32();
    for x in 0..w {
        ox[x] = ((0.0 + k0 * (f(r0, x) - f(l0, x))) + k1 * (f(r1, x) - f(l1, x)))
            + k2 * (f(r2, x) - f(l2, x));
        oy[x] = ((0.0 + k0 * (f(l2, x) - f(l0, x))) + k1 * (f(m2, x) - f(m0, x)))
            + k2 * (f(r2, x) - f(r0, x));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::op::tests::{noise_planes, padded};

    #[test]
    fn ramp_has_constant_derivative() {
        // f(x, y) = 2x + 5y: ∂x = 2·2d·16 = 64d, ∂y = 5·2d·16 = 160d.
        for size in [3, 5, 7, 9] {
            let s = Scharr::new(size).unwrap();
            let d = s.radius();
            let n = 2 * d + 3;
            let p = Plane::new(
                n,
                n,
                (0..n * n)
                    .map(|i| (2 * (i % n) + 5 * (i / n)) as u16)
                    .collect(),
            );
            let out = s.reference(std::slice::from_ref(&p), None);
            assert!(out[0].data.iter().all(|&v| v == 64.0 * d as f32));
            assert!(out[1].data.iter().all(|&v| v == 160.0 * d as f32));
            assert_eq!(s.fast(&[p]), out);
        }
    }

    #[test]
    fn fast_path_matches_reference() {
        for size in [3, 5, 9] {
            let s = Scharr::new(size).unwrap();
            let input = padded(noise_planes::<u8>(41, 19, 3, 7), s.radius());
            assert_eq!(s.fast(&input), s.reference(&input, None));
        }
        assert!(Scharr::new(4).is_err());
    }
}
