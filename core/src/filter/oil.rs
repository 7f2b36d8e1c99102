//! Oil paint: in each (2R+1)² window, the pixels are put into `levels`
//! intensity bins; the most populated bin wins (ties: the darker bin) and
//! the output is the mean colour of the pixels in it.
//!
//! Intensity is the band value (one band) or 0.3R+0.59G+0.11B (three or
//! more bands; two bands use the first). For integer types the bins split
//! the type's whole range, computed in integers: bin = (100·I − 100·min)·L /
//! (100·span), and the mean is rounded half to even exactly, so host and
//! device agree bit for bit. Float32 needs an explicit range.

use super::LUMA_PERCENT;
use super::{par_band_rows, per_pixel};
use crate::bail;
use crate::error::Result;
use crate::pixel::{Pixel, Plane, SampleType};
use rayon::prelude::*;

/// Oil-paint parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Oil {
    pub radius: usize,
    pub levels: usize,
    /// Intensity range binned (Float32 only; integer types use their type's range).
    pub range: Option<(f64, f64)>,
}

impl Oil {
    pub fn new(radius: usize, levels: usize, range: Option<(f64, f64)>) -> Result<Self> {
        if radius == 0 || radius > 50 {
            bail!(
                usage,
                format!("oil radius must be 1..50, got {radius}"),
                hint = "write oil:4:20"
            );
        }
        if !(2..=256).contains(&levels) {
            bail!(
                usage,
                format!("oil levels must be 2..256, got {levels}"),
                hint = "write oil:4:20"
            );
        }
        if let Some((lo, hi)) = range
            && hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater)
        {
            bail!(
                usage,
                format!("oil range {lo}:{hi} is empty"),
                hint = "write oil:R:L:MIN:MAX with MIN < MAX"
            );
        }
        Ok(Oil {
            radius,
            levels,
            range,
        })
    }

    pub fn check(&self, t: SampleType) -> Result<()> {
        if t == SampleType::F32 && self.range.is_none() {
            bail!(
                usage,
                "oil paint on Float32 needs the intensity range to bin",
                hint = "write oil:RADIUS:LEVELS:MIN:MAX"
            );
        }
        Ok(())
    }

    /// The plain per-pixel reference.
    pub fn reference<T: Pixel>(&self, input: &[Plane<T>], nd: Option<T>) -> Vec<Plane<T>> {
        let n = 2 * self.radius + 1;
        let nn = n * n;
        let bands = input.len();
        let levels = self.levels;
        let integer = T::TYPE.range();
        let (flo, fhi) = self.range.unwrap_or((0.0, 1.0));
        let bin_of = |win: &[f32], k: usize| -> usize {
            match integer {
                Some((lo, hi)) => {
                    let i100: i64 = if bands >= 3 {
                        (0..3)
                            .map(|b| LUMA_PERCENT[b] * win[b * nn + k] as i64)
                            .sum()
                    } else {
                        100 * win[k] as i64
                    };
                    let span = (hi - lo) as i64 + 1;
                    ((i100 - 100 * lo as i64) * levels as i64 / (100 * span)) as usize
                }
                None => {
                    let i = if bands >= 3 {
                        0.3 * win[k] + 0.59 * win[nn + k] + 0.11 * win[2 * nn + k]
                    } else {
                        win[k]
                    };
                    let f = ((i - flo as f32) / (fhi - flo) as f32 * levels as f32).floor();
                    f.clamp(0.0, (levels - 1) as f32) as usize
                }
            }
        };
        per_pixel(input, self.radius, bands, nd, nd, true, |win, out| {
            let mut count = vec![0u32; levels];
            let bins: Vec<usize> = (0..nn).map(|k| bin_of(win, k)).collect();
            bins.iter().for_each(|&b| count[b] += 1);
            let mut best = 0;
            for (b, &c) in count.iter().enumerate() {
                if c > count[best] {
                    best = b;
                }
            }
            for (b, o) in out.iter_mut().enumerate() {
                let vals = win[b * nn..(b + 1) * nn].iter().zip(&bins);
                let members = vals.filter(|(_, bin)| **bin == best).map(|(v, _)| *v);
                let cnt = count[best];
                *o = if integer.is_some() {
                    let sum: i64 = members.map(|v| v as i64).sum();
                    round_div(sum, cnt as i64) as f32
                } else {
                    members.sum::<f32>() / cnt as f32
                };
            }
        })
    }
}

impl Oil {
    /// The fast host path (no nodata): integer types keep a histogram of
    /// bins (counts and per-band sums) that slides along each row, one
    /// column in and one out per pixel; Float32 takes the reference.
    pub fn fast<T: Pixel>(&self, input: &[Plane<T>]) -> Vec<Plane<T>> {
        let Some((lo, hi)) = T::TYPE.range() else {
            return self.reference(input, None);
        };
        let (n, r, levels, bands) = (2 * self.radius + 1, self.radius, self.levels, input.len());
        let (pw, ph) = (input[0].width, input[0].height);
        let (w, h) = (pw - 2 * r, ph - 2 * r);
        // Every input pixel's bin, once.
        let span = (hi - lo) as i64 + 1;
        let bins: Vec<u8> = (0..pw * ph)
            .into_par_iter()
            .map(|i| {
                let i100: i64 = if bands >= 3 {
                    (0..3)
                        .map(|b| LUMA_PERCENT[b] * input[b].data[i].to_i32() as i64)
                        .sum()
                } else {
                    100 * input[0].data[i].to_i32() as i64
                };
                ((i100 - 100 * lo as i64) * levels as i64 / (100 * span)) as u8
            })
            .collect();
        par_band_rows(w, h, bands, |y, row: &mut [T]| {
            let mut count = vec![0u32; levels];
            let mut sums = vec![0i64; levels * bands];
            let column = |count: &mut [u32], sums: &mut [i64], x: usize, sign: i64| {
                for ky in y..y + n {
                    let i = ky * pw + x;
                    let bin = bins[i] as usize;
                    count[bin] = (count[bin] as i64 + sign) as u32;
                    for (b, plane) in input.iter().enumerate() {
                        sums[bin * bands + b] += sign * plane.data[i].to_i32() as i64;
                    }
                }
            };
            (0..n - 1).for_each(|x| column(&mut count, &mut sums, x, 1));
            for x in 0..w {
                column(&mut count, &mut sums, x + n - 1, 1);
                let mut best = 0;
                for (b, &c) in count.iter().enumerate() {
                    if c > count[best] {
                        best = b;
                    }
                }
                let cnt = count[best] as i64;
                for b in 0..bands {
                    row[b * w + x] = T::from_f32(round_div(sums[best * bands + b], cnt) as f32);
                }
                column(&mut count, &mut sums, x, -1);
            }
        })
    }
}

/// `sum / count` rounded half to even, exactly.
pub fn round_div(sum: i64, count: i64) -> i64 {
    let (q, r) = (sum.div_euclid(count), sum.rem_euclid(count));
    match (2 * r).cmp(&count) {
        std::cmp::Ordering::Less => q,
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q & 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_half_to_even() {
        assert_eq!(round_div(5, 2), 2);
        assert_eq!(round_div(7, 2), 4);
        assert_eq!(round_div(-5, 2), -2);
        assert_eq!(round_div(10, 3), 3);
        assert_eq!(round_div(11, 3), 4);
    }

    #[test]
    fn fast_path_matches_reference() {
        use crate::filter::op::tests::{noise_planes, padded};
        for (bands, levels) in [(3, 20), (1, 7), (2, 256)] {
            let oil = Oil::new(2, levels, None).unwrap();
            let input = padded(noise_planes::<u8>(33, 17, bands, 8), 2);
            assert_eq!(oil.fast(&input), oil.reference(&input, None));
            let input = padded(noise_planes::<i16>(21, 12, bands, 9), 2);
            assert_eq!(oil.fast(&input), oil.reference(&input, None));
        }
    }

    #[test]
    fn picks_the_fullest_bin() {
        // 3x3 window, 2 levels (0..127, 128..255): five dark (10,20,..), four bright.
        let vals = vec![10u8, 200, 20, 210, 30, 220, 40, 230, 50];
        let p = Plane::new(3, 3, vals);
        let oil = Oil::new(1, 2, None).unwrap();
        assert_eq!(oil.reference(&[p], None)[0].data, vec![30]);
        assert!(oil.check(SampleType::F32).is_err());
    }
}
