//! Synthetic class rasters: the thesis' two test data sets, computed per
//! pixel so any window can be produced alone (no whole raster in memory):
//! simplex noise cut by evenly spaced thresholds, and uniformly random classes.

use crate::error::Result;
use crate::io::ClassSource;
use noise::{NoiseFn, Simplex};
use rayon::prelude::*;
use tiles::Rect;

/// Which data set to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Smooth blobs: simplex noise cut into `classes` bands of equal width.
    Simplex,
    /// Every pixel an independent, uniformly drawn class.
    Random,
}

/// A deterministic synthetic class raster of any size; codes are `0..classes`.
#[derive(Clone)]
pub struct SynthRaster {
    pub width: usize,
    pub height: usize,
    pub classes: u16,
    pub pattern: Pattern,
    pub seed: u64,
    /// Feature size of the simplex pattern in pixels.
    pub scale: f64,
    noise: Simplex,
}

impl SynthRaster {
    pub fn new(width: usize, height: usize, classes: u16, pattern: Pattern, seed: u64) -> Self {
        SynthRaster {
            width,
            height,
            classes: classes.max(1),
            pattern,
            seed,
            scale: 64.0,
            noise: Simplex::new(seed as u32),
        }
    }

    pub fn with_scale(mut self, scale: f64) -> Self {
        self.scale = scale.max(1e-3);
        self
    }

    /// The class code at `(x, y)`.
    pub fn code(&self, x: usize, y: usize) -> u16 {
        let c = self.classes as u64;
        match self.pattern {
            Pattern::Random => {
                let h = splitmix64(self.seed ^ splitmix64(((y as u64) << 32) | x as u64));
                (((h >> 32) * c) >> 32) as u16
            }
            Pattern::Simplex => {
                let v = self
                    .noise
                    .get([x as f64 / self.scale, y as f64 / self.scale]);
                // Simplex values lie in [-1, 1]; evenly spaced thresholds cut them.
                let t = ((v + 1.0) / 2.0 * c as f64).floor();
                t.clamp(0.0, (c - 1) as f64) as u16
            }
        }
    }

    /// Materialises the whole raster (tests and benches on small sizes).
    pub fn to_vec(&self) -> Vec<u16> {
        let mut buf = vec![0; self.width * self.height];
        self.fill(Rect::new(0, 0, self.width, self.height), &mut buf);
        buf
    }

    fn fill(&self, w: Rect, buf: &mut [u16]) {
        buf.par_chunks_exact_mut(w.width.max(1))
            .enumerate()
            .for_each(|(row, dst)| {
                for (col, v) in dst.iter_mut().enumerate() {
                    *v = self.code(w.x + col, w.y + row);
                }
            });
    }
}

impl ClassSource for SynthRaster {
    fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    fn read(&mut self, window: Rect, buf: &mut [u16]) -> Result<()> {
        self.fill(window, buf);
        Ok(())
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_is_uniform_and_window_independent() {
        let mut r = SynthRaster::new(200, 100, 4, Pattern::Random, 7);
        let all = r.to_vec();
        let mut counts = [0usize; 4];
        all.iter().for_each(|&c| counts[c as usize] += 1);
        assert!(
            counts.iter().all(|&n| (4500..5500).contains(&n)),
            "{counts:?}"
        );
        let mut part = vec![0; 30 * 20];
        r.read(Rect::new(50, 40, 30, 20), &mut part).unwrap();
        assert_eq!(part[0], all[40 * 200 + 50]);
    }

    #[test]
    fn simplex_uses_every_class_in_smooth_blobs() {
        let r = SynthRaster::new(256, 256, 5, Pattern::Simplex, 1).with_scale(32.0);
        let all = r.to_vec();
        let mut seen = [false; 5];
        all.iter().for_each(|&c| seen[c as usize] = true);
        assert!(seen.iter().all(|&s| s));
        // Blobs: most horizontal neighbours agree.
        let same = all.windows(2).filter(|p| p[0] == p[1]).count();
        assert!(same as f64 > 0.8 * all.len() as f64, "{same}");
    }
}
