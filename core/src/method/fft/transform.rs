//! The 2-D discrete Fourier transforms of the fft method and the bound on
//! their rounding error.
//!
//! A plane is `h` rows of `w` complex values, row-major. The forward
//! transform runs the rows, transposes into a second plane (`w` rows of
//! `h`) and runs its rows: the spectrum stays transposed, and the kernel's
//! spectrum is kept in the same layout, so the product needs no transpose
//! back; the inverse undoes the steps in the other order. Both sides are
//! `2^a·3^b` ([`fast_len`]): rustfft runs them as Cooley–Tukey steps of
//! radix 2, 3, 4, … butterflies, the structure the error model of
//! [`error_per_norm`] assumes (no Rader or Bluestein steps for large
//! primes).

use crate::method::bounds::{HOST_UNIT_ROUNDOFF, gamma};
use rayon::prelude::*;
use rustfft::num_complex::Complex;
use rustfft::{Fft, FftDirection, FftPlanner};
use std::sync::Arc;

pub(super) type C64 = Complex<f64>;

/// Columns of the plane handled together by a transpose (one cache line of
/// reads per row).
const BLOCK: usize = 8;

/// The smallest `2^a·3^b` that is at least `n`.
pub(super) fn fast_len(n: usize) -> usize {
    let n = n.max(1);
    let mut best = usize::MAX;
    let mut p3 = 1usize;
    loop {
        let mut p = p3;
        while p < n {
            p *= 2;
        }
        best = best.min(p);
        if p3 >= n {
            return best;
        }
        p3 *= 3;
    }
}

/// Plans of the four 1-D transforms a `w`×`h` plane needs.
pub(super) struct Grid {
    pub w: usize,
    pub h: usize,
    row_fwd: Arc<dyn Fft<f64>>,
    row_inv: Arc<dyn Fft<f64>>,
    col_fwd: Arc<dyn Fft<f64>>,
    col_inv: Arc<dyn Fft<f64>>,
}

impl Grid {
    pub fn new(w: usize, h: usize) -> Self {
        let mut planner = FftPlanner::new();
        Grid {
            w,
            h,
            row_fwd: planner.plan_fft(w, FftDirection::Forward),
            row_inv: planner.plan_fft(w, FftDirection::Inverse),
            col_fwd: planner.plan_fft(h, FftDirection::Forward),
            col_inv: planner.plan_fft(h, FftDirection::Inverse),
        }
    }

    /// The unnormalised forward transform of `plane` (`h`×`w`) into
    /// `spectrum` (`w`×`h`, transposed); `plane` is left transformed along
    /// its rows.
    pub fn forward(&self, plane: &mut [C64], spectrum: &mut [C64]) {
        rows(plane, self.w, &self.row_fwd);
        transpose(plane, self.w, self.h, spectrum);
        rows(spectrum, self.h, &self.col_fwd);
    }

    /// The unnormalised inverse of [`Grid::forward`]: `spectrum` (`w`×`h`,
    /// transposed) back into `plane` (`h`×`w`); `spectrum` is overwritten.
    pub fn inverse(&self, spectrum: &mut [C64], plane: &mut [C64]) {
        rows(spectrum, self.h, &self.col_inv);
        transpose(spectrum, self.h, self.w, plane);
        rows(plane, self.w, &self.row_inv);
    }
}

/// The 1-D transform `fft` over every row (of `len`) of `data`, in parallel.
fn rows(data: &mut [C64], len: usize, fft: &Arc<dyn Fft<f64>>) {
    let scratch_len = fft.get_inplace_scratch_len();
    // Several rows per task: one row is a few microseconds.
    let per_task = (16384 / len).max(1) * len;
    data.par_chunks_mut(per_task).for_each_init(
        || vec![C64::default(); scratch_len],
        |scratch, chunk| fft.process_with_scratch(chunk, scratch),
    );
}

/// `dst` (`w` rows of `h`) = the transpose of `src` (`h` rows of `w`).
fn transpose(src: &[C64], w: usize, h: usize, dst: &mut [C64]) {
    dst.par_chunks_mut(BLOCK * h)
        .enumerate()
        .for_each(|(block, out)| {
            let x0 = block * BLOCK;
            let cols = out.len() / h;
            for y in 0..h {
                let line = &src[y * w + x0..][..cols];
                for (k, &v) in line.iter().enumerate() {
                    out[k * h + y] = v;
                }
            }
        });
}

/// Safety factor over the first-order bound of [`error_per_norm`]: for the
/// butterflies of radix above 2 (more operations per stage than the model's
/// radix-2 step) and the twiddles' accuracy, which rustfft does not state.
const SAFETY: f64 = 4.0;

/// A bound on the error of every output of one convolution through a
/// `w`×`h` plane, per unit ℓ2 norm of the input plane, for a kernel of
/// weight sum `q_sum` and ℓ2 norm `q_l2` (integer units).
///
/// With `c` the relative ℓ2 error of a computed 2-D DFT (Higham, *Accuracy
/// and Stability of Numerical Algorithms*, Thm. 24.2: `c = Lη/(1 − Lη)`
/// over `L = ⌈log₂ w⌉ + ⌈log₂ h⌉` stages, `η = μ + γ₄(√2 + μ)`, twiddle
/// error `μ`), `n = w·h`, input `x` and kernel spectrum `K = F k / n`
/// (`|K| ≤ q_sum/n`): the forward transform errs by `c·√n·‖x‖`, the
/// kernel's spectrum by `(c·√n·‖k‖ + u·q_sum)/n` per entry, the complex
/// product by `√2·γ₂`, and the inverse adds `c` of its result, so
/// `‖ẑ − z‖₂ ≤ ‖x‖·(2c·q_sum + c·√n·‖k‖ + (u + √2γ₂)·q_sum)` to first
/// order; every output's error is at most that ℓ2 norm.
pub(super) fn error_per_norm(w: usize, h: usize, q_sum: f64, q_l2: f64) -> f64 {
    let u = HOST_UNIT_ROUNDOFF;
    let stages = (w as f64).log2().ceil() + (h as f64).log2().ceil();
    // Twiddles from sin/cos of an angle below 2π: a few ulps.
    let mu = 16.0 * u;
    let eta = mu + gamma(4, u) * (std::f64::consts::SQRT_2 + mu);
    let le = stages * eta;
    let c = le / (1.0 - le);
    let n = (w * h) as f64;
    let first = 2.0 * c * q_sum
        + c * n.sqrt() * q_l2
        + (u + std::f64::consts::SQRT_2 * gamma(2, u)) * q_sum;
    SAFETY * first * (1.0 + c) * (1.0 + c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_lengths_are_smooth_and_tight() {
        assert_eq!(fast_len(0), 1);
        assert_eq!(fast_len(1), 1);
        assert_eq!(fast_len(5), 6);
        assert_eq!(fast_len(7), 8);
        assert_eq!(fast_len(2948), 3072);
        assert_eq!(fast_len(4097), 4374);
        for n in 1..2000 {
            let p = fast_len(n);
            let mut m = p;
            while m % 2 == 0 {
                m /= 2;
            }
            while m % 3 == 0 {
                m /= 3;
            }
            assert!(p >= n && m == 1, "{n} -> {p}");
            assert!((n..p).all(|k| fast_len(k) == p));
        }
    }

    /// Forward then inverse gives `n` times the plane back, within the bound.
    #[test]
    fn round_trip_restores_the_plane() {
        let (w, h) = (24, 18);
        let grid = Grid::new(w, h);
        let orig: Vec<C64> = (0..w * h)
            .map(|i| C64::new((i % 7) as f64, (i % 3 == 0) as u8 as f64))
            .collect();
        let mut plane = orig.clone();
        let mut spec = vec![C64::default(); w * h];
        grid.forward(&mut plane, &mut spec);
        // The DC term is the sum.
        let sum: C64 = orig.iter().sum();
        assert!((spec[0] - sum).norm() < 1e-9);
        grid.inverse(&mut spec, &mut plane);
        let n = (w * h) as f64;
        for (a, b) in plane.iter().zip(&orig) {
            assert!((a / n - b).norm() < 1e-12, "{a} vs {b}");
        }
    }
}
