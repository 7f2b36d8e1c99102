//! dct5 as the OpenCL kernels run it (`kernels/dct5.cl`): the rotating-phasor
//! form of the DCT-5 recursion in f32, its segment lengths, and the error
//! bound that the certified mode uses on a device. Plain Rust twin of the
//! kernels; the host method ([`super`], the `dct5` module) stays the f64 reference.
//!
//! Per term k ≥ 1 the kernels carry the complex window sum
//! `Z_k(y) = Σ_{t=0..2R} f(y+t)·e^{iφk(t−R)}`, whose real part is the
//! `F_k(y)` of docs/semantics.md#methods. Sliding the window by one is a first-order step,
//! `Z_k(y+1) = ρ_k·(Z_k(y) + d_k·(f(y+2R+1) − f(y)))`, ρ_k = e^{−iφk},
//! d_k = e^{−iφkR} (e^{iφk(R+1)} = d_k because φN = 2π). The step is a
//! rotation, so an error made once is carried along unamplified; the
//! second-order recursion of the host amplifies it up to `1/sin φk` ≈ N/2πk
//! times. That lets a segment run `4·N` outputs in f32 with an error bound
//! below the old one at `2·N`.
//!
//! Seeding without sums: a segment starting at output `y0` begins with
//! `Z = 0` and runs N warm-up steps that add the samples `y0..y0+2R` with no
//! trailing sample (the window it leaves holds rows before the segment,
//! counted as zero). After them `Z = Z(y0)` exactly. Warm-up costs N steps
//! per segment and segments are `≥ 4·N` long, so the cost per output is
//! `(1 + N/L)` steps, at most 1.25, whatever σ.

use super::Dct5;
use crate::device::DeviceKind;
use crate::method::bounds::{Bounds, gamma};
use std::f64::consts::PI;

/// Outputs per segment: at least this many window lengths (warm-up share ≤ 1/4).
pub const WINDOWS_PER_SEGMENT: usize = 4;
/// Shortest segment when parallelism allows (multiple of 32: pass 1 writes runs of 32).
pub const MIN_SEGMENT: usize = 64;
/// Work-items per pass worth having on a GPU before segments are shortened
/// for parallelism. 2¹⁹ rather than 2¹⁷: with fewer, the longest kernels
/// (σ = 64) ran too few segments per line to fill a GPU and broke the ±20 %
/// over σ = 1…64; shorter kernels already had plenty and are unchanged
/// (docs/decisions/0004-device-dct5-segments.md).
pub const TARGET_ITEMS: usize = 1 << 19;
/// The same per compute unit of a CPU device (PoCL): there a work-group of 32
/// items runs as one loop on one core, so 4 groups per core balance the
/// load, and shortening further only adds warm-up (σ = 64 at 2048², 4
/// classes: 160-output segments, 3.4 steps per output instead of 1.2).
pub const CPU_ITEMS_PER_UNIT: usize = 4 * 32;

/// The work-items worth having per pass on a device of `kind` with
/// `compute_units` units.
pub fn target_items(kind: DeviceKind, compute_units: u32) -> usize {
    match kind {
        DeviceKind::Cpu => CPU_ITEMS_PER_UNIT * compute_units.max(1) as usize,
        _ => TARGET_ITEMS,
    }
}

/// The longest segment for radius `r`: `4·(2R+1)`, at least 64, a multiple of 32.
pub fn max_segment(r: usize) -> usize {
    (WINDOWS_PER_SEGMENT * (2 * r + 1))
        .max(MIN_SEGMENT)
        .next_multiple_of(32)
}

/// Segment length for a pass over `lines` lines (times classes) of `len`
/// outputs: [`max_segment`], shortened (to no less than 32) when the pass
/// would otherwise have fewer than `target` work-items (small tiles; see
/// [`target_items`]).
pub fn segment(r: usize, len: usize, lines: usize, target: usize) -> usize {
    let per_line = target.div_ceil(lines.max(1));
    let wanted = len.div_ceil(per_line).next_multiple_of(32).max(32);
    wanted.min(max_segment(r))
}

/// The f32 constants of one DCT-5 filter as the kernels read them.
#[derive(Clone, Debug, PartialEq)]
pub struct Rot {
    radius: usize,
    /// `G_k` rounded to f32.
    g: Vec<f32>,
    /// `ρ_k = e^{−iφk}` and `d_k = e^{−iφkR}` as (re, im), rounded to f32.
    rho: Vec<(f32, f32)>,
    d: Vec<(f32, f32)>,
}

impl Rot {
    pub fn new(filter: &Dct5) -> Self {
        let r = filter.radius();
        let n = (2 * r + 1) as f64;
        let phase = |a: f64| ((a.cos()) as f32, (a.sin()) as f32);
        let terms = filter.coeffs().len();
        Rot {
            radius: r,
            g: filter.coeffs().iter().map(|&g| g as f32).collect(),
            rho: (0..terms)
                .map(|k| phase(-2.0 * PI * k as f64 / n))
                .collect(),
            // k·R reduced mod N first, so the angle stays small and exact.
            d: (0..terms)
                .map(|k| phase(-2.0 * PI * ((k * r) % (2 * r + 1)) as f64 / n))
                .collect(),
        }
    }

    pub fn radius(&self) -> usize {
        self.radius
    }

    /// Terms K + 1.
    pub fn terms(&self) -> usize {
        self.g.len()
    }

    /// The kernels' constant buffer: per k, `G_k, ρ_re, ρ_im, d_re, d_im`.
    pub fn constants(&self) -> Vec<f32> {
        (0..self.terms())
            .flat_map(|k| {
                [
                    self.g[k],
                    self.rho[k].0,
                    self.rho[k].1,
                    self.d[k].0,
                    self.d[k].1,
                ]
            })
            .collect()
    }

    /// One segment, as a work-item of the kernels runs it: outputs `y0..y1`
    /// of a line whose input sample `i` is `f(i)` (output y reads samples
    /// `y..=y+2R`), each handed to `emit(y, value)`.
    pub fn segment(
        &self,
        f: impl Fn(usize) -> f32,
        y0: usize,
        y1: usize,
        mut emit: impl FnMut(usize, f32),
    ) {
        let n = 2 * self.radius + 1;
        let mut z = vec![(0.0f32, 0.0f32); self.terms()];
        for t in 0..n {
            self.step(&mut z, f(y0 + t));
        }
        for y in y0..y1 {
            if y > y0 {
                let b = f(y + 2 * self.radius) - f(y - 1);
                self.step(&mut z, b);
            }
            let mut o = self.g[0] * z[0].0;
            for (g, zk) in self.g.iter().zip(&z).skip(1) {
                o += g * zk.0;
            }
            emit(y, o);
        }
    }

    /// One step: add `b` (leading minus trailing sample), slide the window.
    fn step(&self, z: &mut [(f32, f32)], b: f32) {
        z[0].0 += b;
        for ((zk, &(pr, pi)), &(dr, di)) in z.iter_mut().zip(&self.rho).zip(&self.d).skip(1) {
            let ar = zk.0 + b * dr;
            let ai = zk.1 + b * di;
            *zk = (pr * ar - pi * ai, pr * ai + pi * ar);
        }
    }
}

/// Bound on the rounding error of one output of a pass: `steps` steps
/// (warm-up included), inputs `|f| ≤ m`, unit roundoff `u`, run with the
/// f32 constants of `filter` (their rounding included).
///
/// Per step, for k ≥ 1, with `Z ≤ N·m` (the exact window sum) and `|b| ≤ 2m`:
/// the rounded `ρ̃, d̃` are within u of ρ, d; `a = z + d̃·b̃` costs
/// `γ₂·(|z| + |b|)` (unfused), the rotation `√2·γ₂·|a|`, `b̃ = fl(lead − trail)`
/// `2m·u`. So each step adds at most `η ≤ 6.1·u·(Z̄ + 3m)`, and old errors are
/// only rotated (`|ρ̃| ≤ 1 + u`): after S steps `|e_k| ≤ S·η·(1+u)^S`. k = 0
/// is a running sum: `|e_0| ≤ S·u·(Z̄ + 4m)`. The output sum
/// `Σ G̃_k·Re Z_k` adds `γ_{K+3}·Σ|G_k|·(N·m + e_k)`. A 1.25 factor covers
/// the second-order terms dropped.
pub fn pass_bound(filter: &Dct5, steps: usize, m: f64, u: f64) -> f64 {
    let n = (2 * filter.radius() + 1) as f64;
    let s = steps as f64;
    let zmax = n * m;
    let grow = (1.0 + u).powf(s);
    // Z̄: the window sum plus its own error (a second pass of the estimate).
    let mut zbar = zmax;
    let mut total = 0.0;
    for _ in 0..2 {
        let e_rot = s * 6.1 * u * (zbar + 3.0 * m) * grow;
        let e_box = s * u * (zbar + 4.0 * m);
        let terms = filter.coeffs().len();
        let sum_g = gamma(terms + 2, u);
        total = filter
            .coeffs()
            .iter()
            .enumerate()
            .map(|(k, g)| {
                let e = if k == 0 { e_box } else { e_rot };
                g.abs() * (e + sum_g * (zmax + e))
            })
            .sum::<f64>();
        zbar = zmax + e_rot.max(e_box);
    }
    1.25 * total
}

/// Error bounds of a dct5 plan (one term, `filter` both ways) on a device
/// with unit roundoff `u` and segments of at most [`max_segment`]: the
/// approximation part `approx` is the plan's (its bounds' `approx`), the
/// rounding part composes [`pass_bound`] over the two passes as the
/// separable plans' bounds do.
pub fn device_bounds(approx: f64, filter: &Dct5, u: f64) -> Bounds {
    let n = 2 * filter.radius() + 1;
    let steps = n + max_segment(filter.radius()) - 1;
    let l1: f64 = filter.effective().iter().map(|w| w.abs()).sum();
    let e1 = pass_bound(filter, steps, 1.0, u);
    let mut rounding = l1 * e1 + pass_bound(filter, steps, l1 + e1, u);
    let a_max = l1 * l1;
    // Class weight (rounded, then multiplied), margin subtraction.
    rounding += gamma(1, u) * a_max;
    rounding += 4.0 * u * (a_max + rounding);
    Bounds {
        rounding: rounding * 1.01,
        approx,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;
    use crate::method::dct5::one_d_kernel;

    const U32: f64 = f32::EPSILON as f64 / 2.0;

    fn filter(sigma: f64, terms: usize) -> Dct5 {
        let k = KernelSpec::Gaussian { sigma, size: None }.build().unwrap();
        let (g, terms) = one_d_kernel(&k, terms).unwrap();
        Dct5::new(&g, terms).unwrap()
    }

    fn noise(len: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s.wrapping_mul(1664525).wrapping_add(1013904223);
                (s >> 31) as f32
            })
            .collect()
    }

    /// The f32 segment equals the direct f64 correlation with the effective
    /// taps within `pass_bound`, over several segments of a line, and the
    /// bound is far below the second-order recursion's at the same length.
    #[test]
    fn segment_matches_direct_sums_within_the_bound() {
        for (sigma, terms, seg) in [(1.0, 3, 64), (2.5, 3, 96), (5.0, 3, 128), (8.0, 5, 200)] {
            let d = filter(sigma, terms);
            let rot = Rot::new(&d);
            let r = d.radius();
            let n = 2 * r + 1;
            let len = 2 * seg + 37;
            let f = noise(len + 2 * r, 5);
            let eff = d.effective();
            let bound = pass_bound(&d, n + seg - 1, 1.0, U32);
            let mut worst = 0.0f64;
            for y0 in (0..len).step_by(seg) {
                rot.segment(
                    |i| f[i],
                    y0,
                    (y0 + seg).min(len),
                    |y, v| {
                        let direct: f64 = (0..n).map(|t| eff[t] * f[y + t] as f64).sum();
                        worst = worst.max((v as f64 - direct).abs());
                    },
                );
            }
            assert!(
                worst <= bound,
                "σ={sigma}: error {worst} over bound {bound}"
            );
            assert!(worst > 0.0, "σ={sigma}: f32 should round somewhere");
            let old = d.clone().with_segment(seg).rounding_bound(1.0, U32);
            assert!(bound < old, "σ={sigma}: {bound} vs second order {old}");
        }
    }

    /// Weighted votes (`--confidence`, `WEIGHTED` in the kernels): the
    /// segment fed with [`Votes`] samples equals the f64 correlation of the
    /// votes over the tile's largest within `pass_bound` plus the weighing's
    /// own rounding.
    ///
    /// [`Votes`]: crate::method::separable::cl::Votes
    #[test]
    fn weighted_segment_matches_direct_sums_within_the_bound() {
        use crate::method::separable::cl::Votes;
        let d = filter(2.5, 3);
        let rot = Rot::new(&d);
        let (r, seg) = (d.radius(), 96);
        let n = 2 * r + 1;
        let len = 2 * seg + 11;
        let holds = noise(len + 2 * r, 9);
        let q: Vec<u16> = (0..len + 2 * r)
            .map(|i| ((i * 7919) % 60001) as u16)
            .collect();
        let votes = Votes::new(&q);
        let top = *q.iter().max().unwrap() as f64;
        let eff = d.effective();
        let l1: f64 = eff.iter().map(|w| w.abs()).sum();
        let bound = pass_bound(&d, n + seg - 1, 1.0, U32) + Votes::rounding(l1, U32);
        let mut worst = 0.0f64;
        for y0 in (0..len).step_by(seg) {
            rot.segment(
                |i| votes.sample(i, holds[i] > 0.0),
                y0,
                (y0 + seg).min(len),
                |y, v| {
                    let direct: f64 = (0..n)
                        .filter(|&t| holds[y + t] > 0.0)
                        .map(|t| eff[t] * q[y + t] as f64 / top)
                        .sum();
                    worst = worst.max((v as f64 - direct).abs());
                },
            );
        }
        assert!(worst <= bound && worst > 0.0, "{worst} against {bound}");
    }

    /// A box (K = 0) is the running sum alone.
    #[test]
    fn box_is_the_running_sum() {
        let k = KernelSpec::Box { size: 5 }.build().unwrap();
        let (g, terms) = one_d_kernel(&k, 3).unwrap();
        let d = Dct5::new(&g, terms).unwrap();
        let rot = Rot::new(&d);
        assert_eq!(rot.terms(), 1);
        let f = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0];
        let mut got = vec![];
        rot.segment(|i| f[i], 0, 5, |_, v| got.push(v * 5.0));
        for (a, b) in got.iter().zip([3.0, 3.0, 4.0, 4.0, 3.0]) {
            assert!((a - b).abs() < 1e-5, "{got:?}");
        }
    }

    #[test]
    fn segments_amortise_the_warm_up_and_shrink_for_parallelism() {
        for r in [1, 3, 15, 63, 126, 192, 255] {
            let m = max_segment(r);
            assert!(m.is_multiple_of(32) && m >= 4 * (2 * r + 1) && m >= MIN_SEGMENT);
            // Plenty of lines: the longest segment.
            assert_eq!(segment(r, 4096, 1 << 20, TARGET_ITEMS), m);
        }
        // Few lines: shorter segments, at least 32.
        assert_eq!(segment(63, 256, 300, TARGET_ITEMS), 32);
        assert!(segment(63, 2048, 400, TARGET_ITEMS) < max_segment(63));
        // A 2-core CPU device is filled by far fewer lines: a 2048² tile of
        // 4 classes at σ = 64 keeps the longest segment there (a GPU
        // shortens it to 64 outputs, so 385 warm-up steps per 64).
        let cpu = target_items(DeviceKind::Cpu, 2);
        assert_eq!(cpu, 256);
        assert_eq!(segment(192, 2048, (2048 + 384) * 4, cpu), max_segment(192));
        assert_eq!(segment(192, 2048, (2048 + 384) * 4, TARGET_ITEMS), 64);
        // The GPU's σ = 64 target shape: 4096² tile, 17 classes.
        assert_eq!(segment(192, 4096, (4096 + 384) * 17, TARGET_ITEMS), 608);
        assert_eq!(target_items(DeviceKind::Gpu, 132), TARGET_ITEMS);
    }
}
