//! How finely the host's parallel loops over a tile are cut into jobs for
//! the rayon pool.
//!
//! Host tiles already run as whole jobs on the pool, many at once, so a
//! loop inside a tile gains little from pieces smaller than a few tens of
//! thousands of pixels, and every piece that an idle thread steals costs a
//! trip through the pool's shared queues. Cut per row or per 8-row strip,
//! a 512² tile's loops made hundreds of pieces each: at 64 threads the
//! stealing (crossbeam's epoch bookkeeping, futex wake-ups) took most of
//! the run, and the host ran slower than on 16 threads (issue 39).

/// The fewest pixels a piece of a host loop covers.
pub const MIN_PIXELS: usize = 1 << 15;

/// The fewest items of `pixels` pixels each that a piece takes, so that a
/// piece covers at least [`MIN_PIXELS`] (rows of `width` pixels: pass the
/// width; strips of 8 rows: 8 × width).
pub fn min_items(pixels: usize) -> usize {
    MIN_PIXELS.div_ceil(pixels.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_enough_pixels() {
        assert_eq!(min_items(512), 64);
        assert_eq!(min_items(8 * 512), 8);
        assert_eq!(min_items(1 << 20), 1);
        assert_eq!(min_items(0), MIN_PIXELS);
    }
}
