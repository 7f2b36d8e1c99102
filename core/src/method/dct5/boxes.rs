//! Outputs decided by a box of one class around them, for the host band
//! scorer: the radius `T` of the smallest square box about an output that,
//! where it holds one class `c` and no nodata, makes `c` the output's exact
//! and fast winner, certified, without scoring any class.
//!
//! With the kernel normalised (weights `k = q/Σq`, summing to 1) and the
//! class weights relative to the heaviest (at most 1, at least `w_min`),
//! let `m(T)` be the kernel's weight inside the box of radius `T`. Where
//! every pixel of that box holds `c`, `c`'s exact score is at least
//! `w_min·m(T)` and every other class's at most `1 − m(T)` (all the weight
//! outside the box; nodata scores for no class). So the exact lead of `c`
//! is at least `w_min·m(T) − (1 − m(T))`, and the fast scores, each within
//! the plan's `total` error bound of the exact one ([`Bounds::total`]),
//! lead by at least that less `2·total`. Where this exceeds the margin a
//! decision needs (the tie tolerance, or certification's margin), the fast
//! winner is `c`, it is no tie, and it is certified: the exact answer,
//! whatever the rest of the window holds.
//!
//! An output whose whole window holds one class needs no box (the band
//! scorer decides it alone). The box decides outputs within about `T` of
//! their patch's edge rather than `R`: at σ = 5 (R = 15) with the DCT-5 of
//! K = 3, T = 5 (in the band scorer's strips of eight rows: 5 columns and
//! 7–8 rows either side), which takes the outputs decided without scores
//! on the MODIS crop from 35 % to 45 % and on the issue 39 node's
//! compressible set (the crop ×20) from 52 % to 70 % (numpy).
//!
//! [`Bounds::total`]: crate::method::bounds::Bounds::total

use crate::kernel::Kernel;

/// Absolute slack for the float sums of the masses (a few thousand terms of
/// at most 1 each in f64, far below this).
const FLOAT_SLACK: f64 = 1e-9;

/// A kernel's box masses with a plan's error bound.
#[derive(Clone, Debug, PartialEq)]
pub struct OneClassBoxes {
    /// `mass[t]`: the normalised kernel's weight within `t` rows and columns
    /// of its centre, `t` = 0..R (the whole kernel at R is not kept: a
    /// window of one class needs no box).
    mass: Vec<f64>,
    /// The plan's bound on any score's total error.
    total: f64,
}

impl OneClassBoxes {
    /// The boxes of `kernel` (quantised weights) for a plan whose scores lie
    /// within `total` of the exact ones; `None` for a kernel of no weight.
    pub fn new(kernel: &Kernel, total: f64) -> Option<Self> {
        let (n, r) = (kernel.size(), kernel.radius());
        let q = kernel.quantised();
        let all: f64 = q.iter().map(|&w| f64::from(w)).sum();
        if all <= 0.0 || !total.is_finite() {
            return None;
        }
        // The ring at distance t (Chebyshev) from the centre, summed ring by
        // ring outwards.
        let mut rings = vec![0.0; r + 1];
        for (i, &w) in q.iter().enumerate() {
            let (dx, dy) = ((i % n).abs_diff(r), (i / n).abs_diff(r));
            rings[dx.max(dy)] += f64::from(w);
        }
        let mass = rings[..r]
            .iter()
            .scan(0.0, |inside, &ring| {
                *inside += ring;
                Some(*inside / all)
            })
            .collect();
        Some(OneClassBoxes { mass, total })
    }

    /// The smallest box radius that decides its centre where class weights
    /// are at least `w_min` of the heaviest and a decision must lead by more
    /// than `margin`; `None` where no box short of the kernel's radius does.
    pub fn radius(&self, w_min: f64, margin: f64) -> Option<usize> {
        self.mass
            .iter()
            .position(|&m| w_min * m - (1.0 - m) - 2.0 * self.total > margin + FLOAT_SLACK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;

    fn kernel(spec: &str) -> Kernel {
        spec.parse::<KernelSpec>().unwrap().build().unwrap()
    }

    /// The masses follow their definition, and the radius is the first
    /// whose box's weight beats the weight outside it by the margin.
    #[test]
    fn a_box_decides_where_its_weight_beats_the_rest() {
        let k = kernel("gaussian:5");
        let boxes = OneClassBoxes::new(&k, 1e-3).unwrap();
        let (n, r, q) = (k.size(), k.radius(), k.quantised());
        let all: f64 = q.iter().map(|&w| f64::from(w)).sum();
        for t in 0..r {
            let inside: f64 = (r - t..=r + t)
                .flat_map(|y| (r - t..=r + t).map(move |x| (x, y)))
                .map(|(x, y)| f64::from(q[y * n + x]))
                .sum();
            assert!((boxes.mass[t] - inside / all).abs() < 1e-12, "t = {t}");
        }
        let t = boxes.radius(1.0, 0.0).unwrap();
        let lead = |t: usize| 2.0 * boxes.mass[t] - 1.0 - 2e-3;
        assert!(lead(t) > 0.0 && lead(t - 1) <= 0.0);
        assert_eq!(t, 5, "σ = 5");
        // A wider margin, lighter classes or a larger error need larger boxes.
        assert!(boxes.radius(1.0, 0.3).unwrap() > t);
        assert!(boxes.radius(0.5, 0.0).unwrap() > t);
        assert!(
            OneClassBoxes::new(&k, 0.05)
                .unwrap()
                .radius(1.0, 0.0)
                .unwrap()
                > t
        );
        // None where even the box next to the kernel's edge is not enough.
        assert_eq!(boxes.radius(0.001, 0.0), None);
        assert_eq!(boxes.radius(1.0, 0.999), None);
    }
}
