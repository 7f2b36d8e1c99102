//! Which pixels a stratified random sample takes, reproducibly from a seed
//! and in bounded memory: given each stratum's pixel count (a first pass
//! over the raster), the ranks of the chosen pixels within their stratum
//! are drawn up front (Floyd's algorithm: distinct, uniform, O(n) memory),
//! then a second pass in raster order takes the pixel whose running count
//! in its stratum is the next chosen rank. Memory is the sample, not the
//! raster.
//!
//! The generator is SplitMix64 (Steele, Lea & Flood 2014), written here so
//! that a seed draws the same points on every platform and with every
//! version of the dependencies.

use std::collections::HashSet;

/// SplitMix64: 64-bit state, one multiply-xorshift output per step.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..m` (`m > 0`), without modulo bias (rejection).
    pub fn below(&mut self, m: u64) -> u64 {
        assert!(m > 0);
        let zone = u64::MAX - u64::MAX % m;
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % m;
            }
        }
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` distinct ranks out of `0..population`, ascending (Floyd's algorithm).
pub fn ranks(rng: &mut SplitMix64, n: u64, population: u64) -> Vec<u64> {
    let n = n.min(population);
    let mut chosen = HashSet::with_capacity(n as usize);
    for j in population - n..population {
        let t = rng.below(j + 1);
        if !chosen.insert(t) {
            chosen.insert(j);
        }
    }
    let mut v: Vec<u64> = chosen.into_iter().collect();
    v.sort_unstable();
    v
}

/// The second pass: told each pixel's stratum in raster order, says
/// whether the sample takes it.
pub struct Selector {
    /// Per stratum index: chosen ranks ascending, the next one's position,
    /// and the pixels of the stratum seen so far.
    ranks: Vec<Vec<u64>>,
    next: Vec<usize>,
    seen: Vec<u64>,
}

impl Selector {
    /// Draws `counts[h]` of `pixels[h]` per stratum, strata in order, from `seed`.
    pub fn new(seed: u64, pixels: &[u64], counts: &[u64]) -> Self {
        let mut rng = SplitMix64::new(seed);
        let ranks: Vec<Vec<u64>> = pixels
            .iter()
            .zip(counts)
            .map(|(&p, &n)| ranks(&mut rng, n, p))
            .collect();
        Selector {
            next: vec![0; ranks.len()],
            seen: vec![0; ranks.len()],
            ranks,
        }
    }

    /// Whether the next pixel of stratum `h` (by index) is taken.
    pub fn take(&mut self, h: usize) -> bool {
        let rank = self.seen[h];
        self.seen[h] += 1;
        let hit = self.ranks[h].get(self.next[h]) == Some(&rank);
        if hit {
            self.next[h] += 1;
        }
        hit
    }

    /// Points still to be taken (0 once a pass has seen every pixel).
    pub fn missing(&self) -> usize {
        self.ranks
            .iter()
            .zip(&self.next)
            .map(|(r, &n)| r.len() - n)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_are_distinct_sorted_and_reproducible() {
        let a = ranks(&mut SplitMix64::new(7), 50, 1000);
        assert_eq!(a.len(), 50);
        assert!(a.windows(2).all(|w| w[0] < w[1]));
        assert!(a.iter().all(|&r| r < 1000));
        assert_eq!(a, ranks(&mut SplitMix64::new(7), 50, 1000));
        assert_ne!(a, ranks(&mut SplitMix64::new(8), 50, 1000));
        assert_eq!(ranks(&mut SplitMix64::new(1), 5, 3), [0, 1, 2]);
    }

    /// Every pixel equally likely: over many seeds each of 10 pixels is
    /// taken about 3/10 of the time.
    #[test]
    fn selection_is_uniform() {
        let mut hits = [0u32; 10];
        for seed in 0..20_000 {
            let mut s = Selector::new(seed, &[10], &[3]);
            for hit in &mut hits {
                if s.take(0) {
                    *hit += 1;
                }
            }
            assert_eq!(s.missing(), 0);
        }
        for h in hits {
            let share = f64::from(h) / 20_000.0;
            assert!((share - 0.3).abs() < 0.015, "{hits:?}");
        }
    }

    #[test]
    fn splitmix_matches_its_reference_sequence() {
        // The first outputs of SplitMix64 seeded with 0 (as in the
        // reference C implementation).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
