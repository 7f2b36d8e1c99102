//! The row-major plane of scores a 1-D pass of the fast methods reads and
//! writes (svd's taps and dct5's recursion alike).

use rayon::prelude::*;

/// A row-major plane of scores.
#[derive(Clone, Debug, Default)]
pub struct ScorePlane {
    pub width: usize,
    pub height: usize,
    pub data: Vec<f64>,
}

impl ScorePlane {
    pub fn new(width: usize, height: usize) -> Self {
        ScorePlane {
            width,
            height,
            data: vec![0.0; width * height],
        }
    }
}

impl ScorePlane {
    /// Row `r`.
    #[inline]
    pub fn row(&self, r: usize) -> &[f64] {
        &self.data[r * self.width..(r + 1) * self.width]
    }

    /// Fills the plane with the indicator of `class` in `classes` (same
    /// shape): 1 where a pixel holds the class, 0 elsewhere.
    pub fn indicator(&mut self, classes: &[u16], class: u16) {
        self.data
            .par_chunks_mut(4096)
            .zip(classes.par_chunks(4096))
            .for_each(|(d, c)| {
                d.iter_mut()
                    .zip(c)
                    .for_each(|(v, &k)| *v = f64::from(u8::from(k == class)))
            });
    }

    /// Fills the plane with the confidence-weighted indicator of `class`
    /// (`--confidence`): `votes[i] · scale` where a pixel holds the class,
    /// 0 elsewhere. With `scale` at most 1 / the largest vote, every value
    /// lies in 0..=1 like a plain indicator's, so the fast methods' error
    /// bounds hold unchanged.
    pub fn weighted_indicator(&mut self, classes: &[u16], votes: &[u16], class: u16, scale: f64) {
        self.data
            .par_chunks_mut(4096)
            .zip(classes.par_chunks(4096).zip(votes.par_chunks(4096)))
            .for_each(|(d, (c, v))| {
                d.iter_mut().zip(c.iter().zip(v)).for_each(|(d, (&k, &q))| {
                    *d = if k == class {
                        f64::from(q) * scale
                    } else {
                        0.0
                    }
                })
            });
    }
}
