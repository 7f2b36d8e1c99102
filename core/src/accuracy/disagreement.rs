//! Quantity and allocation disagreement (Pontius & Millones 2011, "Death to
//! Kappa", Int. J. Remote Sens. 32, 4407–4429): the total disagreement
//! `1 − Σ p_gg` of a matrix of area proportions split into the part due to
//! the classes' amounts differing and the part due to their placement.
//! They replace kappa, whose value has no such reading.

use serde::Serialize;

/// The two components; `quantity + allocation` is the total disagreement.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Disagreement {
    /// `½ Σ_g |p_g+ − p_+g|`.
    pub quantity: f64,
    /// `Σ_g min(p_g+ − p_gg, p_+g − p_gg)` (Pontius & Millones' `½ Σ 2 min`).
    pub allocation: f64,
}

impl Disagreement {
    /// Of a square matrix of proportions (`n × n` values, row-major, rows
    /// one classification and columns the other; either way round gives the
    /// same figures). The matrix need not sum to one: it is normalised, so
    /// pixel counts do as well. `None` for an empty or all-zero matrix.
    pub fn of(n: usize, matrix: &[f64]) -> Option<Self> {
        assert_eq!(matrix.len(), n * n, "a square matrix");
        let total: f64 = matrix.iter().sum();
        if total.is_nan() || total <= 0.0 {
            return None;
        }
        let (mut quantity, mut allocation) = (0.0, 0.0);
        for g in 0..n {
            let row: f64 = matrix[g * n..(g + 1) * n].iter().sum::<f64>() / total;
            let col: f64 = (0..n).map(|r| matrix[r * n + g]).sum::<f64>() / total;
            let diag = matrix[g * n + g] / total;
            quantity += (row - col).abs();
            allocation += (row - diag).min(col - diag);
        }
        Some(Disagreement {
            quantity: quantity / 2.0,
            // Rounding can leave −1e-17 where a class has no allocation error.
            allocation: allocation.max(0.0),
        })
    }

    /// Of a matrix of pixel counts.
    pub fn of_counts(n: usize, counts: &[u64]) -> Option<Self> {
        let m: Vec<f64> = counts.iter().map(|&c| c as f64).collect();
        Self::of(n, &m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    /// Two classes: the map puts 30 % in class 1 where the reference has
    /// 40 %, and swaps 10 % the other way: quantity 0.1, allocation 0.2
    /// (0.1 of each class's omission matched by commission), total 0.3.
    #[test]
    fn splits_total_disagreement_by_hand() {
        // rows map, columns reference, in percent of the area
        let m = [20.0, 10.0, 20.0, 50.0];
        let d = Disagreement::of(2, &m).unwrap();
        assert!(close(d.quantity, 0.1), "{d:?}");
        assert!(close(d.allocation, 0.2), "{d:?}");
        assert!(close(d.quantity + d.allocation, 1.0 - 0.7));
        // The transposed matrix gives the same.
        assert_eq!(Disagreement::of(2, &[20.0, 20.0, 10.0, 50.0]), Some(d));
    }

    #[test]
    fn pure_swap_is_allocation_and_pure_shift_is_quantity() {
        let swap = Disagreement::of_counts(2, &[0, 5, 5, 0]).unwrap();
        assert!(close(swap.quantity, 0.0) && close(swap.allocation, 1.0));
        let shift = Disagreement::of_counts(2, &[5, 5, 0, 0]).unwrap();
        assert!(close(shift.quantity, 0.5) && close(shift.allocation, 0.0));
        assert_eq!(Disagreement::of_counts(0, &[]), None);
    }
}
