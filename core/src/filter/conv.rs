//! Convolution presets: box blur, Gaussian blur, sharpen 3×3 and 5×5, and a
//! kernel read from a file.
//!
//! `out = scale · Σ w(k)·in(p + k)`, a correlation (no flip, like OpenCV's
//! `filter2D`). Presets with integer weights keep them integer and put the
//! normalisation in `scale`, so integer inputs sum exactly in any order and
//! the host, the fast path and the device agree bit for bit; only Gaussian
//! and file kernels with fractional weights accumulate rounding.

use super::per_band;
use super::strip::{self, RowKernel, Rows, Source};
use crate::bail;
use crate::error::{Error, Result};
use crate::pixel::{Acc, Pixel, Plane, SampleType};
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
                usage,
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
                usage,
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
        let text = crate::limits::read_text_file(path, "kernel file")?;
        let (n, weights) = crate::kernel::parse_square(&text)
            .map_err(|e| e.context(format!("kernel file {}", path.display())))?;
        check_size(n, "kernel")?;
        if let Some(w) = weights.iter().find(|&&w| !(w as f32).is_finite()) {
            return Err(Error::input(format!(
                "kernel file {}: weight {w} is not a finite 32-bit number",
                path.display()
            ))
            .hint("image filters take weights within ±3.4e38"));
        }
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

    /// The fast host path (no nodata) on bands padded by the radius.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<T>> {
        self.fast_on(Source::Padded(input))
    }

    /// The fast host path (no nodata), through [`strip::run`]: exact integer
    /// sums where the weights and samples are integers ([`IntSep`],
    /// [`IntTaps`]; `i16` lanes where the sums fit), 16-bit fixed point for
    /// separable kernels on Byte ([`Fixed256`]), two 1-D `f32` passes for
    /// other separable kernels ([`F32Sep`]), row accumulation otherwise ([`F32Taps`]).
    pub fn fast_on<T: Pixel>(&self, src: Source<'_, T>) -> Vec<Plane<T>> {
        if let Some(out) = self.fast_int::<T, i16>(src) {
            return out;
        }
        if let Some(out) = self.fast_int::<T, i32>(src) {
            return out;
        }
        if T::TYPE == SampleType::U8
            && let Some((row, col)) = self.fixed_256()
        {
            let col = col.iter().map(|&v| v as u32).collect();
            return strip::run(&Fixed256 { row, col }, src);
        }
        let r = self.radius();
        match &self.separable {
            Some((row, col)) => strip::run(
                &F32Sep {
                    r,
                    row: row.clone(),
                    col: col.clone(),
                    scale: self.scale,
                },
                src,
            ),
            None => strip::run(
                &F32Taps {
                    n: self.size,
                    weights: self.weights.clone(),
                    scale: self.scale,
                },
                src,
            ),
        }
    }

    /// The 1-D kernels (row times `scale`, column) in units of 1/256, where
    /// a separable kernel has them: Byte's fast path ([`Fixed256`]).
    pub fn fixed_256(&self) -> Option<(Vec<u16>, Vec<u16>)> {
        let (row, col) = self.separable.as_ref()?;
        Some((fixed_256(row, self.scale)?, fixed_256(col, 1.0)?))
    }

    /// The exact integer path with accumulator `A`, if the weights are whole
    /// and every partial sum of samples of `T` stays within `A::LIMIT`
    /// (`i32`'s is 2²⁴, so the sum is also exact in the reference's `f32`).
    fn fast_int<T: Pixel, A: Acc>(&self, src: Source<'_, T>) -> Option<Vec<Plane<T>>> {
        let (lo, hi) = T::TYPE.range()?;
        let top = lo.abs().max(hi);
        let whole = |v: &[f32]| v.iter().all(|w| w.fract() == 0.0);
        let bound = |v: &[f32]| v.iter().map(|w| w.abs() as f64).sum::<f64>();
        let ints = |v: &[f32]| -> Vec<A> { v.iter().map(|&x| A::of(x as i32)).collect() };
        if !whole(&self.weights) || bound(&self.weights) * top >= A::LIMIT {
            return None;
        }
        let r = self.radius();
        if let Some((row, col)) = &self.separable
            && whole(row)
            && whole(col)
            && bound(row) * top < A::LIMIT
            && bound(row) * bound(col) * top < A::LIMIT
        {
            let k = IntSep {
                r,
                row: ints(row),
                col: ints(col),
                scale: self.scale,
            };
            return Some(strip::run(&k, src));
        }
        let mut groups: Vec<(A, Vec<(usize, usize)>)> = Vec::new();
        let mut weights: Vec<i32> = Vec::new();
        for (k, &wk) in self.weights.iter().enumerate().filter(|(_, w)| **w != 0.0) {
            let tap = (k / self.size, k % self.size);
            match weights.iter().position(|&g| g == wk as i32) {
                Some(i) => groups[i].1.push(tap),
                None => {
                    weights.push(wk as i32);
                    groups.push((A::of(wk as i32), vec![tap]));
                }
            }
        }
        let k = IntTaps {
            r,
            groups,
            scale: self.scale,
        };
        Some(strip::run(&k, src))
    }
}

/// `acc += w · src`, lane by lane (adds alone for ±1, which vectorise best).
#[inline(always)]
fn add_scaled<A: Acc, S: Copy>(acc: &mut [A], w: A, src: &[S], v: impl Fn(S) -> A) {
    if w.to_f32() == 1.0 {
        acc.iter_mut().zip(src).for_each(|(a, &s)| *a = *a + v(s));
    } else if w.to_f32() == -1.0 {
        acc.iter_mut().zip(src).for_each(|(a, &s)| *a = *a - v(s));
    } else {
        acc.iter_mut()
            .zip(src)
            .for_each(|(a, &s)| *a = *a + w * v(s));
    }
}

/// `out = T(acc · scale)`, rounded as the reference.
#[inline(always)]
fn finish<T: Pixel, A: Acc>(out: &mut [T], acc: &[A], scale: f32) {
    for (o, &a) in out.iter_mut().zip(acc) {
        *o = T::from_f32(a.to_f32() * scale);
    }
}

/// The sample as an accumulator.
#[inline(always)]
fn acc_of<T: Pixel, A: Acc>(v: T) -> A {
    A::of(v.to_i32())
}

/// Output columns a weighted sum works on at a time, its sums held in registers.
const BLOCK: usize = 32;

/// `out[x] = narrow(init + Σₖ weights[k] · widen(tap(k)[x]))` for `x < w`,
/// the terms added in `k` order, over blocks of [`BLOCK`] columns whose
/// sums stay in registers (the last block overlaps the one before it).
#[inline(always)]
fn sum_blocks<'a, S: Copy + 'a, A, O>(
    w: usize,
    weights: &[A],
    tap: impl Fn(usize) -> &'a [S],
    init: A,
    widen: impl Fn(S) -> A,
    out: &mut [O],
    narrow: impl Fn(A) -> O,
) where
    A: Copy + std::ops::Add<Output = A> + std::ops::Mul<Output = A>,
{
    if w < BLOCK {
        for (x, o) in out[..w].iter_mut().enumerate() {
            let mut a = init;
            for (k, &wk) in weights.iter().enumerate() {
                a = a + wk * widen(tap(k)[x]);
            }
            *o = narrow(a);
        }
        return;
    }
    let mut x0 = 0;
    loop {
        let x = x0.min(w - BLOCK);
        let mut acc = [init; BLOCK];
        for (k, &wk) in weights.iter().enumerate() {
            let s: &[S; BLOCK] = tap(k)[x..x + BLOCK].try_into().expect("block");
            for (a, &v) in acc.iter_mut().zip(s) {
                *a = *a + wk * widen(v);
            }
        }
        let o: &mut [O; BLOCK] = (&mut out[x..x + BLOCK]).try_into().expect("block");
        for (o, &a) in o.iter_mut().zip(&acc) {
            *o = narrow(a);
        }
        if x + BLOCK == w {
            break;
        }
        x0 += BLOCK;
    }
}

/// The two passes of a separable kernel in its own arithmetic: the row taps
/// and how a sample enters a row sum (`R`), the column taps and how a row
/// sum enters a column sum (`C`), the column sums' start, and how a column
/// sum becomes a sample.
struct Passes<'k, R, C, ToR, ToC, Narrow> {
    row: &'k [R],
    to_r: ToR,
    col: &'k [C],
    to_c: ToC,
    init: C,
    narrow: Narrow,
}

/// A separable kernel's rows: the row pass of each input row into a ring
/// of `n` rows (`R` sums), and once the ring holds an output row's `n`
/// rows, the column pass over them (`C` sums, starting from `init`).
#[inline(always)]
fn separable<T: Pixel, R, C>(
    src: Rows<'_, T>,
    w: usize,
    out: &mut [T],
    ring: &mut Vec<R>,
    passes: Passes<
        '_,
        R,
        C,
        impl Fn(T) -> R + Copy,
        impl Fn(R) -> C + Copy,
        impl Fn(C) -> T + Copy,
    >,
) where
    R: Copy + Default + std::ops::Add<Output = R> + std::ops::Mul<Output = R>,
    C: Copy + std::ops::Add<Output = C> + std::ops::Mul<Output = C>,
{
    let Passes {
        row,
        to_r,
        col,
        to_c,
        init,
        narrow,
    } = passes;
    let n = row.len();
    ring.resize(n * w, R::default());
    let rows = out.len() / w;
    for i in 0..rows + n - 1 {
        let v = src.row(i);
        let slot = (i % n) * w;
        sum_blocks(
            w,
            row,
            |k| &v[k..],
            R::default(),
            to_r,
            &mut ring[slot..slot + w],
            |a| a,
        );
        if let Some(y) = (i + 1).checked_sub(n) {
            let (ring, base) = (&ring[..], y % n);
            let tap = |k: usize| {
                let s = if base + k >= n {
                    base + k - n
                } else {
                    base + k
                } * w;
                &ring[s..s + w]
            };
            sum_blocks(
                w,
                col,
                tap,
                init,
                to_c,
                &mut out[y * w..(y + 1) * w],
                narrow,
            );
        }
    }
}

/// Separable integer weights: exact row sums into a ring of rows, then
/// exact column sums, then `scale` and rounding as the reference.
pub struct IntSep<A> {
    r: usize,
    row: Vec<A>,
    col: Vec<A>,
    scale: f32,
}

impl<T: Pixel, A: Acc> RowKernel<T> for IntSep<A> {
    type Out = T;
    type Scratch = (Vec<A>, Vec<A>);

    fn radius(&self) -> usize {
        self.r
    }

    /// Whole-row passes over the ring (these vectorise better for `i16`
    /// than [`sum_blocks`]' register blocks).
    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [T]], s: &mut Self::Scratch) {
        let n = 2 * self.r + 1;
        let (ring, acc) = s;
        ring.resize(n * w, A::default());
        acc.resize(w, A::default());
        let rows = out[0].len() / w;
        for i in 0..rows + n - 1 {
            let v = src.row(i);
            let t = &mut ring[(i % n) * w..(i % n + 1) * w];
            t.fill(A::default());
            for (k, &wk) in self.row.iter().enumerate() {
                add_scaled(t, wk, &v[k..k + w], acc_of);
            }
            if let Some(y) = (i + 1).checked_sub(n) {
                acc.fill(A::default());
                for (k, &wk) in self.col.iter().enumerate() {
                    let s = (y + k) % n;
                    add_scaled(acc, wk, &ring[s * w..(s + 1) * w], |v| v);
                }
                finish(&mut out[0][y * w..(y + 1) * w], acc, self.scale);
            }
        }
    }
}

/// Other integer weights: the taps of each distinct weight added up, then
/// multiplied once per weight; exact, then `scale` and rounding.
pub struct IntTaps<A> {
    r: usize,
    /// Weight, then its taps `(row, column)`.
    groups: Vec<(A, Vec<(usize, usize)>)>,
    scale: f32,
}

impl<T: Pixel, A: Acc> RowKernel<T> for IntTaps<A> {
    type Out = T;
    type Scratch = (Vec<A>, Vec<A>);

    fn radius(&self) -> usize {
        self.r
    }

    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [T]], s: &mut Self::Scratch) {
        let (acc, sum) = s;
        acc.resize(w, A::default());
        sum.resize(w, A::default());
        for (y, o) in out[0].chunks_exact_mut(w).enumerate() {
            acc.fill(A::default());
            for (wk, taps) in &self.groups {
                sum.fill(A::default());
                for &(ky, kx) in taps {
                    add_scaled(sum, A::of(1), &src.row(y + ky)[kx..kx + w], acc_of);
                }
                add_scaled(acc, *wk, sum, |v| v);
            }
            finish(o, acc, self.scale);
        }
    }
}

/// Separable kernels on Byte in 16-bit fixed point, as OpenCV's
/// `GaussianBlur` does: each 1-D kernel rounded to 1/256 summing to 256
/// ([`fixed_256`]), rows into exact `u16` sums, columns into exact `u32`
/// sums, then rounded half up. Sums are exact, so any order gives the same.
pub struct Fixed256 {
    row: Vec<u16>,
    col: Vec<u32>,
}

impl<T: Pixel> RowKernel<T> for Fixed256 {
    type Out = T;
    type Scratch = Vec<u16>;

    fn radius(&self) -> usize {
        self.row.len() / 2
    }

    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [T]], ring: &mut Vec<u16>) {
        // Only Byte samples come here: every row sum fits in `u16`.
        let passes = Passes {
            row: &self.row,
            to_r: |v: T| v.to_i32() as u16,
            col: &self.col,
            to_c: |v: u16| v as u32,
            init: 1 << 15,
            narrow: |a: u32| T::from_i32((a >> 16) as i32),
        };
        separable(src, w, out[0], ring, passes);
    }
}

/// Separable kernels in `f32`: the row pass into a ring of rows, then the
/// column pass, each tap added in kernel order.
pub struct F32Sep {
    r: usize,
    row: Vec<f32>,
    col: Vec<f32>,
    scale: f32,
}

impl<T: Pixel> RowKernel<T> for F32Sep {
    type Out = T;
    type Scratch = (Vec<f32>, Vec<f32>);

    fn radius(&self) -> usize {
        self.r
    }

    /// Whole-row passes over the ring (these vectorise better for `f32`
    /// than [`sum_blocks`]' register blocks).
    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [T]], s: &mut Self::Scratch) {
        let n = 2 * self.r + 1;
        let (ring, acc) = s;
        ring.resize(n * w, 0.0);
        acc.resize(w, 0.0);
        let rows = out[0].len() / w;
        for i in 0..rows + n - 1 {
            let v = src.row(i);
            let t = &mut ring[(i % n) * w..(i % n + 1) * w];
            t.fill(0.0);
            for (k, &wk) in self.row.iter().enumerate() {
                t.iter_mut()
                    .zip(&v[k..k + w])
                    .for_each(|(t, &x)| *t += wk * x.to_f32());
            }
            if let Some(y) = (i + 1).checked_sub(n) {
                acc.fill(0.0);
                for (k, &wk) in self.col.iter().enumerate() {
                    let s = (y + k) % n;
                    acc.iter_mut()
                        .zip(&ring[s * w..(s + 1) * w])
                        .for_each(|(a, &v)| *a += wk * v);
                }
                for (o, &a) in out[0][y * w..(y + 1) * w].iter_mut().zip(acc.iter()) {
                    *o = T::from_f32(a * self.scale);
                }
            }
        }
    }
}

/// Other kernels in `f32`: every non-zero tap added over whole rows.
pub struct F32Taps {
    n: usize,
    weights: Vec<f32>,
    scale: f32,
}

impl<T: Pixel> RowKernel<T> for F32Taps {
    type Out = T;
    type Scratch = Vec<f32>;

    fn radius(&self) -> usize {
        self.n / 2
    }

    #[inline(always)]
    fn rows(&self, src: Rows<'_, T>, w: usize, out: &mut [&mut [T]], acc: &mut Vec<f32>) {
        let n = self.n;
        acc.resize(w, 0.0);
        for (y, o) in out[0].chunks_exact_mut(w).enumerate() {
            acc.fill(0.0);
            for ky in 0..n {
                let v = src.row(y + ky);
                for kx in 0..n {
                    let wk = self.weights[ky * n + kx];
                    if wk == 0.0 {
                        continue;
                    }
                    acc.iter_mut()
                        .zip(&v[kx..kx + w])
                        .for_each(|(a, &x)| *a += wk * x.to_f32());
                }
            }
            for (o, &a) in o.iter_mut().zip(acc.iter()) {
                *o = T::from_f32(a * self.scale);
            }
        }
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
            usage,
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
            for w in [20, 40, 77] {
                let input = padded(noise_planes::<u8>(w, 30, 1, 4), g.radius());
                let (a, b) = (g.fast(&input), g.reference(&input, None));
                let worst = worst_diff(&a[0].data, &b[0].data);
                assert!(worst <= Some(1.0), "sigma {sigma} w {w}: worst {worst:?}");
            }
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
