//! The 2-D discrete Fourier transforms of the fft method and the bound on
//! their rounding error.
//!
//! A plane is `h` rows of `w` complex values, row-major. The kernel's
//! spectrum is computed once per plane size by [`Grid::forward`] (rows,
//! a transpose, rows) and kept transposed (`w` rows of `h`: a column's
//! spectrum contiguous). A convolution ([`Grid::convolve`]) transforms the
//! rows, then gathers blocks of columns, transforms, multiplies and
//! transforms them back in cache, then transforms the output rows back:
//! the plane goes through memory about four times. Both sides are
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

/// Columns of the plane handled together by a transpose (four cache
/// lines of reads per row).
const BLOCK: usize = 16;

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
}

/// One convolution through a [`Grid`]'s plane: what goes in, the
/// kernel's spectrum, and where the result goes.
pub(super) struct Convolution<'a, F, K> {
    /// Writes plane row `y` (`y < rows_in`, `w` values); later rows are 0.
    pub input: F,
    pub rows_in: usize,
    /// The kernel's spectrum, transposed (`w` rows of `h`), divided by the
    /// plane's size: real (`f64`) for a point-symmetric kernel, else `C64`.
    pub kernel: &'a [K],
    /// Output row `y` is plane row `y + r`, its pixel `x` plane column `x + r`.
    pub r: usize,
    pub ow: usize,
    pub q_sum: f64,
}

/// The plane of one grid, reused across convolutions.
pub(super) struct Buffers {
    plane: Vec<C64>,
}

impl Buffers {
    pub fn new(grid: &Grid) -> Self {
        Buffers {
            plane: vec![C64::default(); grid.w * grid.h],
        }
    }
}

/// Columns of the plane a task of the column phase gathers, transforms and
/// scatters back: 8 (two cache lines of each row; 8·h values of scratch,
/// 660 kB at h = 5184, in the core's L2).
const COLUMNS: usize = 8;

/// The plane shared by the tasks of the column phase. Each task reads and
/// writes only its own columns (`x0..x0 + COLUMNS`) of each row, so the
/// row pieces it borrows never overlap another task's.
struct SharedPlane {
    ptr: *mut C64,
    w: usize,
}

// SAFETY: the tasks access disjoint columns (see `SharedPlane`), and the
// plane outlives the parallel loop that uses the pointer.
unsafe impl Sync for SharedPlane {}

impl SharedPlane {
    /// Columns `x0..x0 + n` of row `y`.
    ///
    /// SAFETY: the caller is the only task touching these columns, within
    /// the plane (`x0 + n ≤ w`, `y` < its rows).
    #[allow(clippy::mut_from_ref)]
    unsafe fn piece(&self, y: usize, x0: usize, n: usize) -> &mut [C64] {
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(y * self.w + x0), n) }
    }
}

impl Grid {
    /// Runs `conv` and writes the rounded real parts of the output rows to
    /// `re` and the imaginary parts to `im` (each `oh` rows of `ow`; `im`
    /// may be empty), each clamped to `0..=q_sum`, and adds both to
    /// `total` (saturating). Three phases, each reading and writing the
    /// plane once at most: the input rows filled and transformed; blocks of
    /// [`COLUMNS`] columns gathered, transformed, multiplied by the
    /// kernel's spectrum, transformed back and the output rows scattered
    /// back (to the plane's first rows); those rows transformed back and
    /// rounded.
    pub fn convolve<F: Fn(usize, &mut [C64]) + Sync, K: Copy + Sync>(
        &self,
        conv: &Convolution<'_, F, K>,
        bufs: &mut Buffers,
        (re, im): (&mut [u32], &mut [u32]),
        total: &mut [u32],
    ) where
        C64: std::ops::MulAssign<K>,
    {
        let w = self.w;
        let oh = re.len() / conv.ow;
        let plane = &mut bufs.plane;
        for_rows(&mut plane[..conv.rows_in * w], w, &self.row_fwd, |y, row| {
            (conv.input)(y, row)
        });
        self.columns(plane, conv, oh);
        let scratch_len = self.row_inv.get_inplace_scratch_len();
        let round = |v: f64| v.round().clamp(0.0, conv.q_sum) as u32;
        let (r, ow) = (conv.r, conv.ow);
        let pairs = !im.is_empty();
        // A single class: its imaginary part is 0, written nowhere.
        let mut unused = Vec::new();
        let im: &mut [u32] = if pairs {
            im
        } else {
            unused.resize(re.len(), 0);
            &mut unused
        };
        plane[..oh * w]
            .par_chunks_mut(w)
            .zip(re.par_chunks_mut(ow))
            .zip(im.par_chunks_mut(ow))
            .zip(total.par_chunks_mut(ow))
            .for_each_init(
                || vec![C64::default(); scratch_len],
                |scratch, (((row, re), im), total)| {
                    self.row_inv.process_with_scratch(row, scratch);
                    let src = &row[r..][..ow];
                    for ((o, t), v) in re.iter_mut().zip(total.iter_mut()).zip(src) {
                        *o = round(v.re);
                        *t = t.saturating_add(*o);
                    }
                    if pairs {
                        for ((o, t), v) in im.iter_mut().zip(total.iter_mut()).zip(src) {
                            *o = round(v.im);
                            *t = t.saturating_add(*o);
                        }
                    }
                },
            );
    }

    /// The column phase of [`Grid::convolve`]: plane rows `r..r + oh` of
    /// the convolved columns land in rows `0..oh`.
    fn columns<F, K: Copy + Sync>(&self, plane: &mut [C64], conv: &Convolution<'_, F, K>, oh: usize)
    where
        C64: std::ops::MulAssign<K>,
    {
        let (w, h, rows_in, r) = (self.w, self.h, conv.rows_in, conv.r);
        let scratch_len = self
            .col_fwd
            .get_inplace_scratch_len()
            .max(self.col_inv.get_inplace_scratch_len());
        let shared = SharedPlane {
            ptr: plane.as_mut_ptr(),
            w,
        };
        let shared = &shared;
        (0..w.div_ceil(COLUMNS)).into_par_iter().for_each_init(
            || {
                (
                    vec![C64::default(); COLUMNS * h],
                    vec![C64::default(); scratch_len],
                )
            },
            |(buf, scratch), block| {
                let x0 = block * COLUMNS;
                let n = COLUMNS.min(w - x0);
                for y in 0..rows_in {
                    // SAFETY: this task alone touches columns x0..x0 + n.
                    let piece = unsafe { shared.piece(y, x0, n) };
                    for (k, &v) in piece.iter().enumerate() {
                        buf[k * h + y] = v;
                    }
                }
                for (k, col) in buf.chunks_mut(h).take(n).enumerate() {
                    col[rows_in..].fill(C64::default());
                    self.col_fwd.process_with_scratch(col, scratch);
                    let kernel = &conv.kernel[(x0 + k) * h..][..h];
                    col.iter_mut().zip(kernel).for_each(|(v, k)| *v *= *k);
                    self.col_inv.process_with_scratch(col, scratch);
                }
                for y in 0..oh {
                    // SAFETY: as above; rows r.. were all read before.
                    let piece = unsafe { shared.piece(y, x0, n) };
                    for (k, v) in piece.iter_mut().enumerate() {
                        *v = buf[k * h + r + y];
                    }
                }
            },
        );
    }
}

/// `input(y, row)` then the 1-D transform `fft` of every row (of `len`)
/// of `data`, in parallel, each row while it is in cache.
fn for_rows(
    data: &mut [C64],
    len: usize,
    fft: &Arc<dyn Fft<f64>>,
    input: impl Fn(usize, &mut [C64]) + Sync,
) {
    let scratch_len = fft.get_inplace_scratch_len();
    data.par_chunks_mut(len)
        .enumerate()
        .with_min_len((16384 / len).max(1))
        .for_each_init(
            || vec![C64::default(); scratch_len],
            |scratch, (y, row)| {
                input(y, row);
                fft.process_with_scratch(row, scratch);
            },
        );
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
            while m.is_multiple_of(2) {
                m /= 2;
            }
            while m.is_multiple_of(3) {
                m /= 3;
            }
            assert!(p >= n && m == 1, "{n} -> {p}");
            assert!((n..p).all(|k| fast_len(k) == p));
        }
    }

    /// The forward transform's DC term is the sum, and a convolution with
    /// the unit impulse gives both parts of the plane back, rounded.
    #[test]
    fn impulse_convolution_restores_the_plane() {
        let (w, h) = (24, 18);
        let grid = Grid::new(w, h);
        let value = |x: usize, y: usize| C64::new(((x + 3 * y) % 7) as f64, ((x * y) % 3) as f64);
        let mut plane: Vec<C64> = (0..w * h).map(|i| value(i % w, i / w)).collect();
        let sum: C64 = plane.iter().sum();
        let mut spec = vec![C64::default(); w * h];
        grid.forward(&mut plane, &mut spec);
        assert!((spec[0] - sum).norm() < 1e-9);
        let n = (w * h) as f64;
        let kernel = vec![1.0 / n; w * h];
        let (ow, oh) = (w - 4, h - 6);
        let conv = Convolution {
            input: |y: usize, row: &mut [C64]| {
                row.iter_mut().enumerate().for_each(|(x, v)| *v = value(x, y))
            },
            rows_in: h - 1,
            kernel: &kernel,
            r: 2,
            ow,
            q_sum: 10.0,
        };
        let (mut re, mut im, mut total) = (vec![0; ow * oh], vec![0; ow * oh], vec![0; ow * oh]);
        grid.convolve(&conv, &mut Buffers::new(&grid), (&mut re, &mut im), &mut total);
        for i in 0..ow * oh {
            let v = value(i % ow + 2, i / ow + 2);
            assert_eq!((re[i], im[i]), (v.re as u32, v.im as u32), "{i}");
            assert_eq!(total[i], re[i] + im[i]);
        }
    }
}
