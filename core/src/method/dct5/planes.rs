//! The pass-1 planes of the host band scorer: where a class's plane lies
//! ([`PlaneAt`]) and its values on whole cache lines ([`LanePlane`]).

use crate::method::ranking::LANES;

/// Where one class's pass-1 plane lies: output columns `xa..xb` (plane
/// columns `0..xb − xa + 2R`), strips `sa..sb` (plane rows
/// `0..(sb − sa)·LANES`), strip-major: strip after strip, and within a
/// strip column after column, each column's [`LANES`] rows on one cache
/// line. Pass 2, which walks a strip along its columns, then reads memory
/// in order; column-major, a strip's lines were a whole column apart, and
/// at large σ (a plane of 13 MB per class at σ = 64) every load missed
/// the caches.
#[derive(Clone, Copy, Default)]
pub(super) struct PlaneAt {
    pub(super) xa: usize,
    pub(super) xb: usize,
    pub(super) sa: usize,
    pub(super) sb: usize,
}

impl PlaneAt {
    /// Values in one strip of the plane (its columns' lines) for radius `r`.
    pub(super) fn strip_len(&self, r: usize) -> usize {
        (self.xb - self.xa + 2 * r) * LANES
    }
}

/// [`LANES`] values on one cache line.
#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Line([f64; LANES]);

/// A pass-1 plane (laid out as [`PlaneAt`] says) on whole cache lines:
/// the [`LANES`] values of one strip of one column lie on one line instead
/// of straddling two.
#[derive(Default)]
pub(super) struct LanePlane {
    /// Never shrinks, so that a band needing more of it than the last one
    /// does not fill it again.
    lines: Vec<Line>,
    /// Values in use (at most `lines.len() · LANES`).
    len: usize,
}

impl LanePlane {
    /// Makes room for `len` values (a multiple of [`LANES`]); what an
    /// earlier band left there stays.
    pub(super) fn resize(&mut self, len: usize) {
        debug_assert_eq!(len % LANES, 0);
        if self.lines.len() < len / LANES {
            self.lines.resize(len / LANES, Line::default());
        }
        self.len = len;
        // Debug builds (the tests') poison the plane, so that a value pass 2
        // read without pass 1 having written it in this band would show as
        // NaN scores.
        if cfg!(debug_assertions) {
            self.values_mut().fill(f64::NAN);
        }
    }

    pub(super) fn values(&self) -> &[f64] {
        // SAFETY: a `Line` is exactly `LANES` f64s (repr(C), 64 bytes, no
        // padding), and `len` values lie in `lines` (`resize`).
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }

    pub(super) fn values_mut(&mut self) -> &mut [f64] {
        // SAFETY: as in `values`, and the borrow is unique.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}
