//! The float-error arithmetic the fast methods share: the host's unit
//! roundoff, the bound `γ_n` of an n-term sum, and a plan's [`Bounds`]
//! (rounding and approximation), which the certified mode builds on.

/// Unit roundoff of the host's working precision (f64).
pub const HOST_UNIT_ROUNDOFF: f64 = f64::EPSILON / 2.0;

/// `γ_n = n·u / (1 − n·u)`, the classic bound of an n-term float sum.
pub fn gamma(n: usize, u: f64) -> f64 {
    let nu = n as f64 * u;
    if nu >= 0.5 {
        f64::INFINITY
    } else {
        nu / (1.0 - nu)
    }
}

/// Error bounds of a plan, in units of a normalised kernel (weights summing
/// to 1) and a class weight of 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Float rounding of the passes, the sum over terms and the class weighting.
    pub rounding: f64,
    /// `Σ|k̃ − q/Σq|`: approximation plus quantisation of the exact kernel.
    pub approx: f64,
}

impl Bounds {
    /// The tolerance under which two float scores count as equal (a tie) in
    /// the approximate modes: rounding noise of a few operations, at most the
    /// rounding bound. Kept far below the a-priori bound, which is loose, so
    /// that real score differences are not mistaken for ties. Any value up
    /// to [`Bounds::total`] keeps the certified mode correct.
    pub fn tie_tolerance(&self, u: f64) -> f64 {
        self.rounding.min(32.0 * u)
    }

    /// Bound on any score's total error.
    pub fn total(&self) -> f64 {
        self.rounding + self.approx
    }

    /// The margin by which the best fast score must beat the second for the
    /// certified mode to keep the fast winner: `approx + 2·rounding`, not
    /// `2·total`. The kernel's error is shared by the two scores: with
    /// `r = k̃ − q/Σq` and `x_c(t)` what tap `t` gives class `c` (its class
    /// weight times its vote, at most 1, and non-zero for one class only),
    /// the exact difference of classes `a` and `b` is off from the fast one
    /// by `|Σ_t r(t)·(x_a(t) − x_b(t))| ≤ Σ_t |r(t)| = approx`, since at
    /// each tap at most one of the two terms is non-zero. Rounding is not
    /// shared, so each score brings its own. The same argument holds for
    /// every other class `c`, whose fast score is at most the second's, and
    /// for "no class" (exact score 0 against a best score of at least
    /// `approx + rounding`).
    pub fn certify_margin(&self) -> f64 {
        self.approx + 2.0 * self.rounding
    }
}
