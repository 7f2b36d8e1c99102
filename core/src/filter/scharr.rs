//! Scharr derivatives ∂x and ∂y from one read of the window.
//!
//! Size 3 is the classic `[−3 0 3; −10 0 10; −3 0 3]` (∂x; ∂y its transpose,
//! OpenCV's `Scharr` with dx=1 or dy=1); sizes 5, 7 and 9 are the same taps
//! dilated to a spacing of d = (size − 1)/2. Every input band gives two
//! Float32 output bands, ∂x then ∂y. Integer inputs give exact integers.

use super::per_pixel;
use super::strip::{self, RowKernel, Rows, Source};
use crate::bail;
use crate::error::Result;
use crate::pixel::{Acc, Pixel, Plane};

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
                usage,
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

    /// The fast host path (no nodata) on bands padded by the radius.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<f32>> {
        self.fast_on(Source::Padded(input))
    }

    /// The fast host path (no nodata), through [`strip::run`]: both
    /// derivatives from one read of each row triple, in exact integers
    /// (`i16` lanes for Byte) where the samples are integers, else in the
    /// reference's `f32` order.
    pub fn fast_on<T: Pixel>(&self, src: Source<'_, T>) -> Vec<Plane<f32>> {
        let d = self.radius();
        match T::TYPE.range() {
            Some((lo, hi)) if 16.0 * (hi - lo) < <i16 as Acc>::LIMIT => {
                strip::run(&IntRows::<i16>::new(d), src)
            }
            Some(_) => strip::run(&IntRows::<i32>::new(d), src),
            None => strip::run(&F32Rows(d), src),
        }
    }
}

/// ∂x and ∂y of integer samples in exact integer sums of accumulator `A`
/// (every sum is a whole number below 2²⁴, so it equals the reference's `f32`).
pub struct IntRows<A>(usize, std::marker::PhantomData<A>);

impl<A> IntRows<A> {
    fn new(d: usize) -> Self {
        IntRows(d, std::marker::PhantomData)
    }
}

impl<T: Pixel, A: Acc> RowKernel<T> for IntRows<A> {
    type Out = f32;
    type Scratch = ();
    const OUTS: usize = 2;

    fn radius(&self) -> usize {
        self.0
    }

    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [f32]], _: &mut ()) {
        let d = self.0;
        let [k0, k1, k2] = CROSS.map(|k| A::of(k as i32));
        let (ox, oy) = out.split_at_mut(1);
        for (y, (ox, oy)) in ox[0]
            .chunks_exact_mut(w)
            .zip(oy[0].chunks_exact_mut(w))
            .enumerate()
        {
            let rows = [src.row(y), src.row(y + d), src.row(y + 2 * d)];
            let [l0, l1, l2] = rows.map(|r| &r[..w]);
            let [m0, _, m2] = rows.map(|r| &r[d..d + w]);
            let [r0, r1, r2] = rows.map(|r| &r[2 * d..2 * d + w]);
            let f = |s: &[T], x: usize| A::of(s[x].to_i32());
            for x in 0..w {
                let dx = k0 * (f(r0, x) - f(l0, x))
                    + k1 * (f(r1, x) - f(l1, x))
                    + k2 * (f(r2, x) - f(l2, x));
                let dy = k0 * (f(l2, x) - f(l0, x))
                    + k1 * (f(m2, x) - f(m0, x))
                    + k2 * (f(r2, x) - f(r0, x));
                ox[x] = dx.to_f32();
                oy[x] = dy.to_f32();
            }
        }
    }
}

/// ∂x and ∂y of Float32 samples: the same sums, in the same order, as the reference.
pub struct F32Rows(usize);

impl<T: Pixel> RowKernel<T> for F32Rows {
    type Out = f32;
    type Scratch = ();
    const OUTS: usize = 2;

    fn radius(&self) -> usize {
        self.0
    }

    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [f32]], _: &mut ()) {
        let d = self.0;
        let [k0, k1, k2] = CROSS;
        let (ox, oy) = out.split_at_mut(1);
        for (y, (ox, oy)) in ox[0]
            .chunks_exact_mut(w)
            .zip(oy[0].chunks_exact_mut(w))
            .enumerate()
        {
            let rows = [src.row(y), src.row(y + d), src.row(y + 2 * d)];
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
