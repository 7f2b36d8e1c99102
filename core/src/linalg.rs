//! Dense linear algebra the methods need: a one-sided Jacobi SVD (Hestenes)
//! written on nalgebra, used to factor a kernel into separable rank-1 terms.
//!
//! One-sided Jacobi orthogonalises the columns of `A` by plane rotations
//! applied from the right, `A·V = U·Σ`; at convergence the column norms are
//! the singular values. It is slow for big matrices but exact to a few ulps
//! and simple; kernels are at most 511×511. Column norms are carried through
//! the rotations and columns below ε·‖A‖_F are left alone, so low-rank
//! kernels are quick (docs/decisions/0013-svd-jacobi-negligible-columns.md).
//! Checked against `nalgebra::SVD` in the tests.

use nalgebra::{DMatrix, DVector};

/// `A = U·diag(s)·Vᵀ`, singular values descending, `U` m×n and `V` n×n
/// (thin form for m ≥ n; kernels are square).
#[derive(Clone, Debug)]
pub struct Svd {
    pub u: DMatrix<f64>,
    pub s: DVector<f64>,
    pub v: DMatrix<f64>,
}

impl Svd {
    /// `Σ_{r<rank} s_r·u_r·v_rᵀ`.
    pub fn reconstruct(&self, rank: usize) -> DMatrix<f64> {
        let mut m = DMatrix::zeros(self.u.nrows(), self.v.nrows());
        for r in 0..rank.min(self.s.len()) {
            m += self.s[r] * self.u.column(r) * self.v.column(r).transpose();
        }
        m
    }

    /// Numerical rank: singular values above `max(m, n)·ε·s₀` (LAPACK's default).
    pub fn numerical_rank(&self) -> usize {
        let s0 = self.s.get(0).copied().unwrap_or(0.0);
        let tol = self.u.nrows().max(self.v.nrows()) as f64 * f64::EPSILON * s0;
        self.s.iter().filter(|&&s| s > tol).count()
    }

    /// Smallest rank whose singular values hold at least `energy` (0..=1) of
    /// `Σ s²`, never above the numerical rank.
    pub fn energy_rank(&self, energy: f64) -> usize {
        let total: f64 = self.s.iter().map(|s| s * s).sum();
        let mut acc = 0.0;
        for (r, s) in self.s.iter().enumerate() {
            acc += s * s;
            if acc >= energy * total {
                return (r + 1).min(self.numerical_rank().max(1));
            }
        }
        self.numerical_rank()
    }
}

/// One-sided Jacobi SVD of an m×n matrix with m ≥ n.
pub fn jacobi_svd(a: &DMatrix<f64>) -> Svd {
    assert!(a.nrows() >= a.ncols(), "jacobi_svd needs m ≥ n");
    let n = a.ncols();
    let mut w = a.clone();
    let mut v = DMatrix::<f64>::identity(n, n);
    let tol = f64::EPSILON;
    let m = w.nrows();
    for _sweep in 0..60 {
        let mut rotated = false;
        // Squared column norms, fresh each sweep, then kept up to date by
        // the rotations (α' = α − tγ, β' = β + tγ): one dot product per pair.
        let mut sq: Vec<f64> = (0..n).map(|j| w.column(j).norm_squared()).collect();
        // Columns below ε·‖A‖_F are rounding residue (under the numerical
        // rank's tolerance `max(m, n)·ε·s₀`): rotating them changes no
        // singular value that counts, and costs most of the time on
        // low-rank kernels (docs/decisions/0013).
        let negligible = f64::EPSILON * f64::EPSILON * sq.iter().sum::<f64>();
        for i in 0..n {
            for j in i + 1..n {
                let (alpha, beta) = (sq[i], sq[j]);
                if alpha <= negligible || beta <= negligible {
                    continue;
                }
                let (ci, cj) = columns(w.as_slice(), m, i, j);
                let gamma: f64 = ci.iter().zip(cj).map(|(x, y)| x * y).sum();
                if gamma == 0.0 || gamma.abs() <= tol * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                // The rotation that zeroes the (i, j) entry of WᵀW.
                let zeta = (beta - alpha) / (2.0 * gamma);
                let t = zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt());
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                rotate(&mut w, i, j, c, s);
                rotate(&mut v, i, j, c, s);
                sq[i] = (alpha - t * gamma).max(0.0);
                sq[j] = beta + t * gamma;
            }
        }
        if !rotated {
            break;
        }
    }
    let norms: Vec<f64> = (0..n).map(|j| w.column(j).norm()).collect();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&x, &y| norms[y].total_cmp(&norms[x]));
    let mut u = DMatrix::zeros(a.nrows(), n);
    let mut vs = DMatrix::zeros(n, n);
    let mut s = DVector::zeros(n);
    for (k, &j) in order.iter().enumerate() {
        s[k] = norms[j];
        if norms[j] > 0.0 {
            u.set_column(k, &(w.column(j) / norms[j]));
        }
        vs.set_column(k, &v.column(j));
    }
    Svd { u, s, v: vs }
}

/// Columns `i < j` of a column-major matrix with `m` rows.
fn columns(data: &[f64], m: usize, i: usize, j: usize) -> (&[f64], &[f64]) {
    (&data[i * m..(i + 1) * m], &data[j * m..(j + 1) * m])
}

/// Applies the rotation `[c s; −s c]` to columns `i < j` of `m`.
fn rotate(m: &mut DMatrix<f64>, i: usize, j: usize, c: f64, s: f64) {
    let rows = m.nrows();
    let (left, right) = m.as_mut_slice().split_at_mut(j * rows);
    let (ci, cj) = (&mut left[i * rows..(i + 1) * rows], &mut right[..rows]);
    for (x, y) in ci.iter_mut().zip(cj) {
        let (a, b) = (*x, *y);
        *x = c * a - s * b;
        *y = s * a + c * b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::KernelSpec;

    fn matrix(spec: &str) -> DMatrix<f64> {
        let k = spec.parse::<KernelSpec>().unwrap().build().unwrap();
        DMatrix::from_row_slice(k.size(), k.size(), k.weights())
    }

    fn check_against_nalgebra(a: &DMatrix<f64>) {
        let ours = jacobi_svd(a);
        let theirs = a.clone().svd(false, false);
        let mut expected: Vec<f64> = theirs.singular_values.iter().copied().collect();
        expected.sort_by(|x, y| y.total_cmp(x));
        let scale = expected[0].max(1.0);
        for (o, e) in ours.s.iter().zip(&expected) {
            assert!((o - e).abs() <= 1e-10 * scale, "singular value {o} vs {e}");
        }
        let back = ours.reconstruct(a.ncols());
        assert!((back - a).abs().max() <= 1e-12 * scale);
        // U and V have orthonormal columns (where s > 0).
        let rank = ours.numerical_rank();
        let utu = ours.u.columns(0, rank).transpose() * ours.u.columns(0, rank);
        assert!((utu - DMatrix::identity(rank, rank)).abs().max() < 1e-10);
        let vtv = ours.v.transpose() * &ours.v;
        assert!((vtv - DMatrix::identity(a.ncols(), a.ncols())).abs().max() < 1e-10);
    }

    #[test]
    fn matches_nalgebra_on_kernels() {
        for spec in ["gaussian:2.5", "box:5", "disc:3", "disc:7", "gaussian:1"] {
            check_against_nalgebra(&matrix(spec));
        }
    }

    #[test]
    fn matches_nalgebra_on_random_matrices() {
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        for n in [1, 2, 3, 8, 17] {
            let a = DMatrix::from_fn(n, n, |_, _| next());
            check_against_nalgebra(&a);
        }
    }

    #[test]
    fn ranks() {
        // A Gaussian is separable: numerical rank 1. A box likewise.
        assert_eq!(jacobi_svd(&matrix("gaussian:3")).numerical_rank(), 1);
        assert_eq!(jacobi_svd(&matrix("box:7")).numerical_rank(), 1);
        // A disc is not: rank > 1, and the energy rule truncates it.
        let disc = jacobi_svd(&matrix("disc:5"));
        let full = disc.numerical_rank();
        assert!(full > 2, "{full}");
        let r = disc.energy_rank(0.9);
        assert!(r >= 1 && r < full);
        assert_eq!(disc.energy_rank(1.0), full);
    }
}
