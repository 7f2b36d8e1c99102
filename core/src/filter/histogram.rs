//! Per-band histograms: 256 value bins for Byte, N equal bins over a range
//! (given, or the band's min..max) otherwise. Nodata pixels are counted
//! apart, not binned.
//!
//! The bin of `v` is `floor((v − lo)·scale)` with `scale = bins / (hi − lo)`
//! as `f32`, clamped to the last bin: one subtraction and one multiplication,
//! both correctly rounded in IEEE and OpenCL alike, so the device agrees
//! with the host exactly.

use crate::bail;
use crate::classes::byte_counts;
use crate::error::{Result, Setting};
use crate::pixel::{Pixel, Plane, SampleType};
use rayon::prelude::*;
use serde::Serialize;

/// How values map to bins.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Binning {
    pub bins: usize,
    pub lo: f64,
    pub hi: f64,
}

impl Binning {
    /// Bytes: one bin per value (unless `bins` says otherwise).
    pub fn for_type(
        t: SampleType,
        bins: Option<usize>,
        range: Option<(f64, f64)>,
    ) -> Result<Option<Self>> {
        let bins_n = bins.unwrap_or(256);
        if bins_n == 0 || bins_n > 1 << 20 {
            bail!(
                usage,
                format!("{} is out of range", Setting::Bins.is(bins_n)),
                hint = "use 1 to 1048576 bins"
            );
        }
        if let Some((lo, hi)) = range {
            if hi.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) {
                bail!(
                    usage,
                    format!("histogram range {lo}:{hi} is empty"),
                    hint = "give MIN:MAX with MIN < MAX"
                );
            }
            return Ok(Some(Binning {
                bins: bins_n,
                lo,
                hi,
            }));
        }
        Ok((t == SampleType::U8).then_some(Binning {
            bins: bins_n,
            lo: 0.0,
            hi: 256.0,
        }))
    }

    /// Equal bins over the observed `min..=max`.
    pub fn over(bins: usize, min: f64, max: f64) -> Self {
        let hi = if max > min { max } else { min + 1.0 };
        Binning { bins, lo: min, hi }
    }

    pub fn scale(&self) -> f32 {
        (self.bins as f64 / (self.hi - self.lo)) as f32
    }

    #[inline]
    pub fn bin(&self, v: f32, lo: f32, scale: f32) -> Option<usize> {
        let f = ((v - lo) * scale).floor();
        if f.is_nan() || f < 0.0 {
            return None;
        }
        Some((f as usize).min(self.bins - 1))
    }
}

/// Counts of one band.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BandHistogram {
    pub band: usize,
    pub lo: f64,
    pub hi: f64,
    pub counts: Vec<u64>,
    /// Nodata pixels (not in `counts`).
    pub nodata: u64,
    /// Pixels outside lo..hi (with a given range).
    pub outside: u64,
}

impl BandHistogram {
    pub fn new(band: usize, b: &Binning) -> Self {
        BandHistogram {
            band,
            lo: b.lo,
            hi: b.hi,
            counts: vec![0; b.bins],
            nodata: 0,
            outside: 0,
        }
    }

    /// Adds the pixels of `plane`: Byte planes by [`byte_counts`] (then
    /// each of the 256 values binned once), others by [`Self::add_reference`].
    pub fn add<T: Pixel>(&mut self, plane: &Plane<T>, b: &Binning, nd: Option<T>) {
        let Some(bytes) = (&plane.data as &dyn std::any::Any).downcast_ref::<Vec<u8>>() else {
            return self.add_reference(plane, b, nd);
        };
        let (lo, scale, hi) = (b.lo as f32, b.scale(), b.hi as f32);
        for (v, &c) in byte_counts(bytes).iter().enumerate() {
            let f = v as f32;
            if nd.is_some_and(|nd| nd.to_f32() == f) {
                self.nodata += c;
                continue;
            }
            match b.bin(f, lo, scale) {
                Some(i) if f <= hi => self.counts[i] += c,
                _ => self.outside += c,
            }
        }
    }

    /// Adds the pixels of `plane`, each binned on its own (the plain
    /// reference; rayon over rows).
    pub fn add_reference<T: Pixel>(&mut self, plane: &Plane<T>, b: &Binning, nd: Option<T>) {
        let (lo, scale) = (b.lo as f32, b.scale());
        let hi = b.hi as f32;
        let w = plane.width.max(1);
        let part = plane
            .data
            .par_chunks(w * 64)
            .map(|rows| {
                let mut h = BandHistogram::new(self.band, b);
                for &v in rows {
                    if nd.is_some_and(|nd| v.same(nd)) {
                        h.nodata += 1;
                        continue;
                    }
                    let f = v.to_f32();
                    match b.bin(f, lo, scale) {
                        Some(i) if f <= hi => h.counts[i] += 1,
                        _ => h.outside += 1,
                    }
                }
                h
            })
            .reduce(
                || BandHistogram::new(self.band, b),
                |mut a, c| {
                    a.merge(&c);
                    a
                },
            );
        self.merge(&part);
    }

    pub fn merge(&mut self, other: &BandHistogram) {
        self.counts
            .iter_mut()
            .zip(&other.counts)
            .for_each(|(a, b)| *a += b);
        self.nodata += other.nodata;
        self.outside += other.outside;
    }
}

/// Smallest and largest valid value of a plane (`None` when all are nodata).
pub fn min_max<T: Pixel>(plane: &Plane<T>, nd: Option<T>) -> Option<(f64, f64)> {
    plane
        .data
        .par_iter()
        .filter(|v| !nd.is_some_and(|nd| v.same(nd)) && !v.to_f32().is_nan())
        .map(|v| (v.to_f32(), v.to_f32()))
        .reduce_with(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        .map(|(a, b)| (a as f64, b as f64))
}

/// Writes histograms as CSV: `band,bin,lo,hi,count`.
pub fn to_csv(hists: &[BandHistogram]) -> Result<String> {
    let rows = hists.iter().flat_map(|h| {
        let width = (h.hi - h.lo) / h.counts.len() as f64;
        h.counts.iter().enumerate().map(move |(i, c)| {
            let a = h.lo + i as f64 * width;
            [
                h.band.to_string(),
                i.to_string(),
                a.to_string(),
                (a + width).to_string(),
                c.to_string(),
            ]
        })
    });
    crate::output::csv::table(&["band", "bin", "lo", "hi", "count"], rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_bins_are_values() {
        let b = Binning::for_type(SampleType::U8, None, None)
            .unwrap()
            .unwrap();
        let p = Plane::new(4, 1, vec![0u8, 255, 7, 7]);
        let mut h = BandHistogram::new(1, &b);
        h.add(&p, &b, Some(255));
        assert_eq!(h.counts[7], 2);
        assert_eq!(h.counts[0], 1);
        assert_eq!(h.counts.iter().sum::<u64>(), 3);
        assert_eq!(h.nodata, 1);
    }

    #[test]
    fn byte_path_matches_reference() {
        let p = &crate::pixel::noise_planes::<u8>(301, 67, 1, 9)[0];
        for (bins, range) in [(None, None), (Some(7), Some((10.0, 200.0)))] {
            let b = Binning::for_type(SampleType::U8, bins, range)
                .unwrap()
                .unwrap();
            for nd in [None, Some(13u8)] {
                let (mut fast, mut plain) = (BandHistogram::new(1, &b), BandHistogram::new(1, &b));
                fast.add(p, &b, nd);
                plain.add_reference(p, &b, nd);
                assert_eq!(fast, plain);
            }
        }
    }

    #[test]
    fn range_bins_include_the_maximum() {
        let p = Plane::new(5, 1, vec![-10i16, 0, 10, 20, 30]);
        let (lo, hi) = min_max(&p, None).unwrap();
        assert_eq!((lo, hi), (-10.0, 30.0));
        let b = Binning::over(4, lo, hi);
        let mut h = BandHistogram::new(1, &b);
        h.add(&p, &b, None);
        assert_eq!(h.counts, vec![1, 1, 1, 2]);
        assert!(to_csv(&[h]).unwrap().contains("1,0,-10,0,1"));
        assert!(
            Binning::for_type(SampleType::U16, None, None)
                .unwrap()
                .is_none()
        );
        assert!(Binning::for_type(SampleType::U16, Some(0), None).is_err());
    }
}
